#include "hip_api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace devexit_hip {

namespace {

template <typename F>
bool Sym(void *lib, const char *name, F *out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

struct Loaded {
  std::mutex mu;
  const HipApi *api = nullptr;
  std::string error;
};
Loaded &TheLoaded() {
  static Loaded &loaded = *new Loaded();  // never destroyed: exit layers may still ask
  return loaded;
}

std::string Setting(const char *name) {
  const char *v = getenv(name);
  return v ? v : "";
}

const HipApi *LoadOnce(std::string *error) {
  const std::string library = Setting("DEVEXIT_HIP_LIBRARY");
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates.push_back(library);
  } else {
    candidates = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
  }
  void *lib = nullptr;
  std::string tried;
  std::string path;
  for (const auto &c : candidates) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      path = c;
      break;
    }
    const char *why = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(why ? why : c + ": cannot be loaded");
  }
  if (!lib) {
    *error = "libamdhip64 not found (" + tried + ")" +
             (library.empty() ? "; install ROCm's HIP runtime or set DEVEXIT_HIP_LIBRARY" : "");
    return nullptr;
  }
  auto *api = new HipApi();  // lives for the process, like the library
  api->path = path;
  std::string missing;
#define DEVEXIT_REQUIRE(n) \
  if (!Sym(lib, #n, &api->n)) missing += std::string(missing.empty() ? "" : ", ") + #n;
  DEVEXIT_REQUIRE(hipInit)
  DEVEXIT_REQUIRE(hipGetDeviceCount)
  DEVEXIT_REQUIRE(hipSetDevice)
  DEVEXIT_REQUIRE(hipDeviceGetName)
  DEVEXIT_REQUIRE(hipRuntimeGetVersion)
  DEVEXIT_REQUIRE(hipDriverGetVersion)
  DEVEXIT_REQUIRE(hipStreamCreate)
  DEVEXIT_REQUIRE(hipStreamDestroy)
  DEVEXIT_REQUIRE(hipStreamSynchronize)
  DEVEXIT_REQUIRE(hipStreamQuery)
  DEVEXIT_REQUIRE(hipMalloc)
  DEVEXIT_REQUIRE(hipFree)
  DEVEXIT_REQUIRE(hipMemcpyHtoDAsync)
  DEVEXIT_REQUIRE(hipMemcpyDtoHAsync)
  DEVEXIT_REQUIRE(hipMemcpyDtoDAsync)
  DEVEXIT_REQUIRE(hipMemsetD32Async)
  DEVEXIT_REQUIRE(hipModuleLoadData)
  DEVEXIT_REQUIRE(hipModuleUnload)
  DEVEXIT_REQUIRE(hipModuleGetFunction)
  DEVEXIT_REQUIRE(hipModuleLaunchKernel)
  DEVEXIT_REQUIRE(hipGetErrorName)
#undef DEVEXIT_REQUIRE
  if (!missing.empty()) {
    *error = path + " lacks " + missing + " (not a HIP runtime this backend supports)";
    return nullptr;
  }
  // ROCm 6 keeps the old struct layout under the old name; either is only scanned for "gfx".
  if (!Sym(lib, "hipGetDevicePropertiesR0600", &api->hipGetDeviceProperties))
    Sym(lib, "hipGetDeviceProperties", &api->hipGetDeviceProperties);
  const char *(*info)() = nullptr;
  if (Sym(lib, "devexit_standin_hip_info", &info)) api->standin = info();
  api->hipRuntimeGetVersion(&api->runtime_version);
  api->hipDriverGetVersion(&api->driver_version);

  // hiprtc: inside libamdhip64 on ROCm 5.x, its own library on 6.x. Optional.
  void *rtc = lib;
  api->rtc_path = path;
  if (!dlsym(lib, "hiprtcCompileProgram")) {
    rtc = nullptr;
    std::vector<std::string> rtc_names;
    const std::string rtc_library = Setting("DEVEXIT_HIPRTC_LIBRARY");
    if (!rtc_library.empty()) rtc_names.push_back(rtc_library);
    rtc_names.insert(rtc_names.end(), {"libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5"});
    for (const auto &n : rtc_names) {
      rtc = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (rtc) {
        api->rtc_path = n;
        break;
      }
    }
  }
  if (rtc) {
    bool ok = Sym(rtc, "hiprtcVersion", &api->hiprtcVersion) &&
              Sym(rtc, "hiprtcCreateProgram", &api->hiprtcCreateProgram) &&
              Sym(rtc, "hiprtcCompileProgram", &api->hiprtcCompileProgram) &&
              Sym(rtc, "hiprtcGetCodeSize", &api->hiprtcGetCodeSize) && Sym(rtc, "hiprtcGetCode", &api->hiprtcGetCode) &&
              Sym(rtc, "hiprtcGetProgramLogSize", &api->hiprtcGetProgramLogSize) &&
              Sym(rtc, "hiprtcGetProgramLog", &api->hiprtcGetProgramLog) &&
              Sym(rtc, "hiprtcDestroyProgram", &api->hiprtcDestroyProgram);
    if (!ok) api->hiprtcCompileProgram = nullptr;
  }
  if (!api->has_rtc()) api->rtc_path.clear();
  return api;
}

}  // namespace

const HipApi *LoadHip(std::string *error) {
  Loaded &l = TheLoaded();
  std::lock_guard<std::mutex> lock(l.mu);
  if (!l.api && l.error.empty()) l.api = LoadOnce(&l.error);
  if (!l.api && error) *error = l.error;
  return l.api;
}

std::string HipErrorName(const HipApi *api, hipError_t e) {
  const char *name = api && api->hipGetErrorName ? api->hipGetErrorName(e) : nullptr;
  return name && *name ? name : "hipErrorUnknown";
}

std::string HipErrorText(const HipApi *api, hipError_t e) {
  return HipErrorName(api, e) + " (" + std::to_string(e) + ")";
}

std::string HiprtcErrorText(hiprtcResult r) { return HiprtcErrorName(r) + " (" + std::to_string(r) + ")"; }

std::string HiprtcErrorName(hiprtcResult r) {
  static const char *const names[] = {"HIPRTC_SUCCESS",
                                      "HIPRTC_ERROR_OUT_OF_MEMORY",
                                      "HIPRTC_ERROR_PROGRAM_CREATION_FAILURE",
                                      "HIPRTC_ERROR_INVALID_INPUT",
                                      "HIPRTC_ERROR_INVALID_PROGRAM",
                                      "HIPRTC_ERROR_INVALID_OPTION",
                                      "HIPRTC_ERROR_COMPILATION",
                                      "HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE",
                                      "HIPRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
                                      "HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
                                      "HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
                                      "HIPRTC_ERROR_INTERNAL_ERROR"};
  return r >= 0 && r < 12 ? names[r] : r == 100 ? "HIPRTC_ERROR_LINKING" : "HIPRTC_ERROR_UNKNOWN";
}

std::string RefuseArch(const HipApi *api, const std::string &arch) {
  if (!api || !api->standin.empty() || api->runtime_version >= 60000000 || arch.empty()) return "";
  // Measured with Debian 12's ROCm 5.2.3 comgr: these compile; gfx940+, gfx11xx abort the process.
  static const char *const known[] = {"gfx700",  "gfx701",  "gfx702",  "gfx703",  "gfx704",  "gfx705",  "gfx801",
                                      "gfx802",  "gfx803",  "gfx805",  "gfx810",  "gfx900",  "gfx902",  "gfx904",
                                      "gfx906",  "gfx908",  "gfx909",  "gfx90a",  "gfx90c",  "gfx1010", "gfx1011",
                                      "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034",
                                      "gfx1035", "gfx1036"};
  std::string base = arch.substr(0, arch.find(':'));
  for (const char *k : known)
    if (base == k) return "";
  int v = api->runtime_version;
  return "hiprtc of HIP runtime " + std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100) +
         " cannot compile for " + arch +
         ": its code-object compiler (comgr) aborts the process on targets it does not know (it knows gfx700-gfx90c "
         "and gfx1010-gfx1036); use a newer ROCm for this target";
}

}  // namespace devexit_hip
