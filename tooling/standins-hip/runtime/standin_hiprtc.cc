// The stand-in hiprtc (test double, CI only): "compiles" HIP C++ by finding its __global__
// functions and accepting those the stand-in runtime has a host implementation for; the "code
// object" is a text blob the stand-in's hipModuleLoadData reads (standin_hip.cc).
#include <cctype>
#include <cstring>
#include <string>

#include "standin_hip.h"

namespace {
struct Program {
  std::string source;
  std::string log;
  std::string code;
};
}  // namespace

typedef int hiprtcResult;

EXPORT const char *hiprtcGetErrorString(hiprtcResult r) {
  switch (r) {
    case 0: return "HIPRTC_SUCCESS";
    case 3: return "HIPRTC_ERROR_INVALID_INPUT";
    case 4: return "HIPRTC_ERROR_INVALID_PROGRAM";
    case 6: return "HIPRTC_ERROR_COMPILATION";
    default: return "HIPRTC_ERROR_INTERNAL_ERROR";
  }
}

EXPORT hiprtcResult hiprtcVersion(int *major, int *minor) {
  if (!major || !minor) return 3;
  *major = 9;
  *minor = 0;
  return 0;
}

EXPORT hiprtcResult hiprtcCreateProgram(void **prog, const char *src, const char *name, int num_headers,
                                        const char **headers, const char **include_names) {
  (void)name, (void)headers, (void)include_names;
  if (!prog || !src || num_headers < 0) return 3;
  auto *p = new Program();
  p->source = src;
  *prog = p;
  return 0;
}

// "Compiles" by finding the __global__ functions and keeping those with a host implementation.
EXPORT hiprtcResult hiprtcCompileProgram(void *prog, int num_options, const char **options) {
  if (!prog) return 4;
  auto *p = static_cast<Program *>(prog);
  std::string arch = "default";
  for (int i = 0; i < num_options; i++) {
    std::string o = options[i] ? options[i] : "";
    if (o.rfind("--offload-arch=", 0) == 0) arch = o.substr(15);
  }
  const std::string &src = p->source;
  size_t err = src.find("#error");
  if (err != std::string::npos) {
    size_t eol = src.find('\n', err);
    p->log = "program.hip: error: " + src.substr(err + 7, eol == std::string::npos ? std::string::npos : eol - err - 7);
    return 6;
  }
  std::string code = std::string(standin_hip::kCodeMagic) + "arch " + arch + "\n";
  int found = 0;
  for (size_t at = src.find("__global__"); at != std::string::npos; at = src.find("__global__", at + 1)) {
    size_t open = src.find('(', at);
    if (open == std::string::npos) break;
    size_t end = open;
    while (end > at && (src[end - 1] == ' ' || src[end - 1] == '\n')) end--;
    size_t begin = end;
    while (begin > at && (isalnum(static_cast<unsigned char>(src[begin - 1])) || src[begin - 1] == '_')) begin--;
    std::string name = src.substr(begin, end - begin);
    if (!standin_hip::HasHostKernel(name)) {
      p->log = "stand-in hiprtc: no host implementation for kernel '" + name +
               "' (the stand-in runs fill_u32, copy, saxpy_f32, sum_f32, add_u32, sleep_us)";
      return 6;
    }
    code += "kernel " + name + "\n";
    found++;
  }
  if (!found) {
    p->log = "stand-in hiprtc: no __global__ function in the program";
    return 6;
  }
  p->code = code;
  p->log.clear();
  return 0;
}

EXPORT hiprtcResult hiprtcGetCodeSize(void *prog, size_t *size) {
  if (!prog || !size) return 3;
  *size = static_cast<Program *>(prog)->code.size() + 1;
  return 0;
}
EXPORT hiprtcResult hiprtcGetCode(void *prog, char *code) {
  if (!prog || !code) return 3;
  const std::string &c = static_cast<Program *>(prog)->code;
  memcpy(code, c.c_str(), c.size() + 1);
  return 0;
}
EXPORT hiprtcResult hiprtcGetProgramLogSize(void *prog, size_t *size) {
  if (!prog || !size) return 3;
  *size = static_cast<Program *>(prog)->log.size() + 1;
  return 0;
}
EXPORT hiprtcResult hiprtcGetProgramLog(void *prog, char *log) {
  if (!prog || !log) return 3;
  const std::string &l = static_cast<Program *>(prog)->log;
  memcpy(log, l.c_str(), l.size() + 1);
  return 0;
}
EXPORT hiprtcResult hiprtcDestroyProgram(void **prog) {
  if (!prog || !*prog) return 3;
  delete static_cast<Program *>(*prog);
  *prog = nullptr;
  return 0;
}
