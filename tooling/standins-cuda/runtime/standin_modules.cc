// Modules and kernels of the stand-in libcuda (test double): PTX images are read for three
// directives, and each entry runs as a host function of the same name.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "standin_cuda.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace standin_cuda {
namespace {

struct Dims {
  unsigned grid[3], block[3];
  uint64_t threads() const {
    return uint64_t{grid[0]} * block[0] * uint64_t{grid[1]} * block[1] * uint64_t{grid[2]} * block[2];
  }
};

using Args = std::vector<uint64_t>;
template <typename T>
T *Ptr(uint64_t v) {
  return reinterpret_cast<T *>(static_cast<uintptr_t>(v));
}
float F32(uint64_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint32_t U32(uint64_t v) { return static_cast<uint32_t>(v); }

// Each host kernel runs every thread of the grid, as the device would: bounds checks are its own.
CUresult KFill(const Args &a, const Dims &d) {
  const uint64_t m = std::min<uint64_t>(U32(a[2]), d.threads());
  if (CUresult e = CheckPtr(a[0], m * 4)) return e;
  for (uint64_t i = 0; i < m; i++) Ptr<uint32_t>(a[0])[i] = U32(a[1]);
  return CUDA_SUCCESS;
}
CUresult KCopy(const Args &a, const Dims &d) {
  const uint64_t m = std::min<uint64_t>(U32(a[2]), d.threads());
  if (CUresult e = CheckPtr(a[0], m * 4)) return e;
  if (CUresult e = CheckPtr(a[1], m * 4)) return e;
  for (uint64_t i = 0; i < m; i++) Ptr<uint32_t>(a[1])[i] = Ptr<uint32_t>(a[0])[i];
  return CUDA_SUCCESS;
}
CUresult KSaxpy(const Args &a, const Dims &d) {
  const uint64_t m = std::min<uint64_t>(U32(a[3]), d.threads());
  if (CUresult e = CheckPtr(a[0], m * 4)) return e;
  if (CUresult e = CheckPtr(a[1], m * 4)) return e;
  const float alpha = F32(a[2]);
  for (uint64_t i = 0; i < m; i++) Ptr<float>(a[1])[i] = alpha * Ptr<float>(a[0])[i] + Ptr<float>(a[1])[i];
  return CUDA_SUCCESS;
}
// The real kernel reduces in one block; a launch of several blocks would race on out[0].
CUresult KSum(const Args &a, const Dims &d) {
  if (d.grid[0] != 1 || d.grid[1] != 1 || d.grid[2] != 1) return CUDA_ERROR_LAUNCH_FAILED;
  const uint32_t n = U32(a[2]);
  if (CUresult e = CheckPtr(a[0], uint64_t{n} * 4)) return e;
  if (CUresult e = CheckPtr(a[1], 4)) return e;
  double acc = 0;
  for (uint32_t i = 0; i < n; i++) acc += Ptr<float>(a[0])[i];
  *Ptr<float>(a[1]) = static_cast<float>(acc);
  return CUDA_SUCCESS;
}
// For tests: a user kernel, and one that keeps the device busy for `us` microseconds.
CUresult KAdd(const Args &a, const Dims &d) {
  const uint64_t m = std::min<uint64_t>(U32(a[2]), d.threads());
  if (CUresult e = CheckPtr(a[0], m * 4)) return e;
  for (uint64_t i = 0; i < m; i++) Ptr<uint32_t>(a[0])[i] += U32(a[1]);
  return CUDA_SUCCESS;
}
CUresult KSpin(const Args &a, const Dims &) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(U32(a[0]));
  // Sleeps in short slices (the CI machine has 2 cores) and ends early at teardown.
  while (std::chrono::steady_clock::now() < end && !Stopping()) usleep(200);
  return CUDA_SUCCESS;
}

struct HostKernel {
  const char *name;
  const char *params;  // one letter per parameter: p device pointer (8 bytes), u u32, f f32
  CUresult (*run)(const Args &, const Dims &);
};
const HostKernel kKernels[] = {
    {"fill_u32", "puu", KFill}, {"copy", "ppu", KCopy}, {"saxpy_f32", "ppfu", KSaxpy},
    {"sum_f32", "ppu", KSum},   {"add_u32", "puu", KAdd}, {"spin", "u", KSpin},
};

const HostKernel *FindKernel(const std::string &name) {
  for (const HostKernel &k : kKernels)
    if (name == k.name) return &k;
  return nullptr;
}

struct Module {
  std::vector<std::string> entries;
};

// The token after `directive` on a line of PTX, or "" (comments and other lines are skipped).
std::string After(const std::string &line, const char *directive) {
  size_t at = line.find(directive);
  size_t comment = line.find("//");
  if (at == std::string::npos || (comment != std::string::npos && comment < at)) return "";
  at += strlen(directive);
  if (at < line.size() && line[at] != ' ' && line[at] != '\t') return "";
  while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) at++;
  size_t end = at;
  while (end < line.size() && (isalnum(static_cast<unsigned char>(line[end])) || line[end] == '_' || line[end] == '.'))
    end++;
  return line.substr(at, end - at);
}

}  // namespace
}  // namespace standin_cuda

using namespace standin_cuda;

EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  const char *text = static_cast<const char *>(image);
  if (strncmp(text, "\x7f" "ELF", 4) == 0) return CUDA_ERROR_INVALID_IMAGE;  // a cubin: the stand-in runs PTX only
  auto m = new Module();
  bool version = false;
  int target = -1;
  for (const char *p = text; *p;) {
    const char *end = strchr(p, '\n');
    std::string line = end ? std::string(p, end) : std::string(p);
    if (!After(line, ".version").empty()) version = true;
    std::string t = After(line, ".target");
    if (t.rfind("sm_", 0) == 0) target = atoi(t.c_str() + 3);
    std::string entry = After(line, ".entry");
    if (!entry.empty()) m->entries.push_back(entry);
    if (!end) break;
    p = end + 1;
  }
  const int cc = CurrentContext() ? s->cc_major * 10 + s->cc_minor : 0;
  if (!version || target < 0 || target > cc) {
    delete m;
    return CUDA_ERROR_INVALID_PTX;
  }
  *module = reinterpret_cast<CUmodule>(m);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule module) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!module) return CUDA_ERROR_INVALID_HANDLE;
  delete reinterpret_cast<Module *>(module);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!function || !module || !name) return CUDA_ERROR_INVALID_VALUE;
  auto *m = reinterpret_cast<Module *>(module);
  if (std::find(m->entries.begin(), m->entries.end(), name) == m->entries.end()) return CUDA_ERROR_NOT_FOUND;
  const HostKernel *k = FindKernel(name);
  if (!k) return CUDA_ERROR_NOT_SUPPORTED;  // valid PTX, but no host version to run
  *function = reinterpret_cast<CUfunction>(const_cast<HostKernel *>(k));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared_bytes, CUstream stream, void **params, void **extra) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  (void)shared_bytes;
  if (!function || extra) return CUDA_ERROR_INVALID_VALUE;
  if (!gx || !gy || !gz || !bx || !by || !bz || gx > 0x7fffffffu || gy > 65535 || gz > 65535 ||
      uint64_t{bx} * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  const auto *k = reinterpret_cast<const HostKernel *>(function);
  const size_t n = strlen(k->params);
  if (n && !params) return CUDA_ERROR_INVALID_VALUE;
  Args args(n, 0);  // copied now, as the driver copies parameters at launch
  for (size_t i = 0; i < n; i++) memcpy(&args[i], params[i], k->params[i] == 'p' ? 8 : 4);
  Dims dims{{gx, gy, gz}, {bx, by, bz}};
  return Enqueue(s, stream, [k, args, dims] { return k->run(args, dims); });
}

namespace standin_cuda {
const char *ErrorName(CUresult e) {
  switch (e) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return nullptr;
  }
}
}  // namespace standin_cuda
