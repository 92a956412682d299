#include "cuda_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <set>

#include "devexit_service.hpp"

namespace devexit_cuda {

namespace {

template <typename F>
bool Sym(void *lib, const char *name, F *out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

struct Loaded {
  std::mutex mu;
  bool tried = false;
  const CudaApi *api = nullptr;
  std::string error;
  bool init_done = false;
  CUresult init = CUDA_SUCCESS;
  std::mutex trace_mu;
  std::set<std::string> traced;
  bool trace = false;
};

Loaded &State() {
  static Loaded &s = *new Loaded();  // never destroyed: service threads may call in during exit
  return s;
}

const CudaApi *LoadOnce(std::string *error) {
  const char *env = getenv("DEVEXIT_CUDA_LIBRARY");
  const bool overridden = env && *env;
  const std::string name = overridden ? env : "libcuda.so.1";
  // RTLD_LOCAL: libcuda's symbols stay out of the global namespace of the process.
  void *lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    *error = std::string(why ? why : name + ": cannot be loaded") +
             (overridden ? " (DEVEXIT_CUDA_LIBRARY)" : "; install the NVIDIA driver's libcuda or set DEVEXIT_CUDA_LIBRARY");
    return nullptr;
  }
  auto *api = new CudaApi();  // lives for the process, like the library
  api->path = name;
  std::string missing;
  auto need = [&](bool ok, const char *sym) {
    if (!ok) missing += std::string(missing.empty() ? "" : ", ") + sym;
  };
  need(Sym(lib, "cuInit", &api->cuInit), "cuInit");
  need(Sym(lib, "cuDriverGetVersion", &api->cuDriverGetVersion), "cuDriverGetVersion");
  need(Sym(lib, "cuDeviceGetCount", &api->cuDeviceGetCount), "cuDeviceGetCount");
  need(Sym(lib, "cuDeviceGet", &api->cuDeviceGet), "cuDeviceGet");
  need(Sym(lib, "cuDeviceGetName", &api->cuDeviceGetName), "cuDeviceGetName");
  need(Sym(lib, "cuDeviceGetAttribute", &api->cuDeviceGetAttribute), "cuDeviceGetAttribute");
  need(Sym(lib, "cuDevicePrimaryCtxRetain", &api->cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain");
  need(Sym(lib, "cuDevicePrimaryCtxRelease_v2", &api->cuDevicePrimaryCtxRelease) ||
           Sym(lib, "cuDevicePrimaryCtxRelease", &api->cuDevicePrimaryCtxRelease),
       "cuDevicePrimaryCtxRelease");
  need(Sym(lib, "cuCtxSetCurrent", &api->cuCtxSetCurrent), "cuCtxSetCurrent");
  need(Sym(lib, "cuStreamCreate", &api->cuStreamCreate), "cuStreamCreate");
  need(Sym(lib, "cuStreamDestroy_v2", &api->cuStreamDestroy) || Sym(lib, "cuStreamDestroy", &api->cuStreamDestroy),
       "cuStreamDestroy");
  need(Sym(lib, "cuStreamSynchronize", &api->cuStreamSynchronize), "cuStreamSynchronize");
  need(Sym(lib, "cuMemAlloc_v2", &api->cuMemAlloc), "cuMemAlloc_v2");
  need(Sym(lib, "cuMemFree_v2", &api->cuMemFree), "cuMemFree_v2");
  need(Sym(lib, "cuMemcpyHtoDAsync_v2", &api->cuMemcpyHtoDAsync), "cuMemcpyHtoDAsync_v2");
  need(Sym(lib, "cuMemcpyDtoHAsync_v2", &api->cuMemcpyDtoHAsync), "cuMemcpyDtoHAsync_v2");
  need(Sym(lib, "cuMemcpyDtoDAsync_v2", &api->cuMemcpyDtoDAsync), "cuMemcpyDtoDAsync_v2");
  need(Sym(lib, "cuMemsetD32Async", &api->cuMemsetD32Async), "cuMemsetD32Async");
  need(Sym(lib, "cuModuleLoadData", &api->cuModuleLoadData), "cuModuleLoadData");
  need(Sym(lib, "cuModuleUnload", &api->cuModuleUnload), "cuModuleUnload");
  need(Sym(lib, "cuModuleGetFunction", &api->cuModuleGetFunction), "cuModuleGetFunction");
  need(Sym(lib, "cuLaunchKernel", &api->cuLaunchKernel), "cuLaunchKernel");
  need(Sym(lib, "cuGetErrorName", &api->cuGetErrorName), "cuGetErrorName");
  if (!missing.empty()) {
    *error = name + " lacks " + missing + " (not a CUDA driver this backend supports)";
    return nullptr;  // the CudaApi and the library stay: never unloaded
  }
  Sym(lib, "cuDeviceTotalMem_v2", &api->cuDeviceTotalMem);
  const char *(*info)() = nullptr;
  if (Sym(lib, "devexit_standin_cuda_info", &info)) api->standin = info();
  // Needs no cuInit: the version of the installed driver, even without a GPU.
  api->cuDriverGetVersion(&api->driver_version);
  return api;
}

}  // namespace

const CudaApi *LoadCuda(std::string *error) {
  Loaded &s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.tried) {
    s.tried = true;
    s.api = LoadOnce(&s.error);
    const char *trace = getenv("DEVEXIT_CUDA_TRACE");
    s.trace = trace && *trace && *trace != '0';
  }
  if (!s.api && error) *error = s.error;
  return s.api;
}

CUresult InitCuda(const CudaApi *api) {
  Loaded &s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.init_done) {
    s.init = api->cuInit(0);
    s.init_done = true;
    // libcuda registers its exit teardown in its first cuInit, whatever it returned.
    if (const devexit_registry_v1 *reg = devexit::Registry()) reg->runtime_initialised("cuda");
  }
  return s.init;
}

std::string CudaErrorName(const CudaApi *api, CUresult r) {
  const char *name = nullptr;
  if (api && api->cuGetErrorName && api->cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "CUDA_ERROR_UNKNOWN_" + std::to_string(r);
}

std::string DescribeCuda(const CudaApi *api, CUresult r) {
  return CudaErrorName(api, r) + " (" + std::to_string(r) + ")";
}

bool RuntimeGone(CUresult r, const std::string &service, const char *call) {
  if (r != CUDA_ERROR_DEINITIALIZED) return false;
  Loaded &s = State();
  if (!s.trace) return true;
  {
    std::lock_guard<std::mutex> lock(s.trace_mu);
    if (!s.traced.insert(service).second) return true;
  }
  // write(2): no stdio locks, usable while the process is exiting.
  std::string line = "devexit-cuda: " + service + ": " + call + " returned CUDA_ERROR_DEINITIALIZED (4)\n";
  ssize_t ignored = write(2, line.data(), line.size());
  (void)ignored;
  return true;
}

}  // namespace devexit_cuda
