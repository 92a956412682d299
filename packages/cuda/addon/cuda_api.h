// The CUDA driver API subset this backend calls, declared here so that no CUDA header or toolkit
// is needed to build. libcuda is loaded with dlopen and never dlclosed: nothing links against it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace devexit_cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUstream = struct CUstream_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;

// The CUresult values this backend branches on (cuGetErrorName names every other one).
enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
};

// CUdevice_attribute values.
enum : int {
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
};

constexpr unsigned CU_STREAM_NON_BLOCKING = 1;

struct CudaApi {
  std::string path;        // what was loaded
  std::string standin;     // non-empty when the library is devexit's stand-in
  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor

  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int *) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t *, CUdevice) = nullptr;  // optional
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuStreamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t, CUstream) = nullptr;
  CUresult (*cuModuleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
};

// Loads libcuda once per process (DEVEXIT_CUDA_LIBRARY, else libcuda.so.1). nullptr, with every
// attempt and dlerror's words in *error, when nothing loads or a required symbol is missing.
const CudaApi *LoadCuda(std::string *error);

// cuInit(0), called once per process and its result kept: each call costs 50-80 ms without a GPU.
// Tells the registry that CUDA is initialised (libcuda registers its teardown at the first cuInit).
CUresult InitCuda(const CudaApi *api);

// "CUDA_ERROR_NO_DEVICE"; "CUDA_ERROR_UNKNOWN_<n>" for a value libcuda has no name for.
std::string CudaErrorName(const CudaApi *api, CUresult r);
// "CUDA_ERROR_NO_DEVICE (100)"
std::string DescribeCuda(const CudaApi *api, CUresult r);

// True for CUDA_ERROR_DEINITIALIZED: libcuda has torn itself down (the process is exiting), so the
// caller stops calling it. With DEVEXIT_CUDA_TRACE=1 the first sighting per service is written to
// stderr: when devexit's close ran in time there is none.
bool RuntimeGone(CUresult r, const std::string &service, const char *call);

}  // namespace devexit_cuda
