// The HIP runtime and hiprtc, loaded with dlopen by soname and never dlclosed.
#pragma once

#include <cstddef>
#include <string>

namespace devexit_hip {

using hipError_t = int;
using hiprtcResult = int;
using hipStream_t = void *;
using hipModule_t = void *;
using hipFunction_t = void *;
using hiprtcProgram = void *;

struct HipApi {
  std::string path;           // what was loaded
  std::string rtc_path;       // where hiprtc came from (libamdhip64 on 5.x, libhiprtc on 6.x)
  std::string standin;        // non-empty when the library is devexit's stand-in
  int runtime_version = 0;    // hipRuntimeGetVersion: major * 10000000 + minor * 100000 + patch
  int driver_version = 0;

  hipError_t (*hipInit)(unsigned) = nullptr;
  hipError_t (*hipGetDeviceCount)(int *) = nullptr;
  hipError_t (*hipSetDevice)(int) = nullptr;
  hipError_t (*hipDeviceGetName)(char *, int, int) = nullptr;
  hipError_t (*hipGetDeviceProperties)(void *, int) = nullptr;  // optional: only scanned for the arch name
  hipError_t (*hipRuntimeGetVersion)(int *) = nullptr;
  hipError_t (*hipDriverGetVersion)(int *) = nullptr;
  hipError_t (*hipStreamCreate)(hipStream_t *) = nullptr;
  hipError_t (*hipStreamDestroy)(hipStream_t) = nullptr;
  hipError_t (*hipStreamSynchronize)(hipStream_t) = nullptr;
  hipError_t (*hipStreamQuery)(hipStream_t) = nullptr;
  hipError_t (*hipMalloc)(void **, size_t) = nullptr;
  hipError_t (*hipFree)(void *) = nullptr;
  hipError_t (*hipMemcpyHtoDAsync)(void *, void *, size_t, hipStream_t) = nullptr;
  hipError_t (*hipMemcpyDtoHAsync)(void *, void *, size_t, hipStream_t) = nullptr;
  hipError_t (*hipMemcpyDtoDAsync)(void *, void *, size_t, hipStream_t) = nullptr;
  hipError_t (*hipMemsetD32Async)(void *, int, size_t, hipStream_t) = nullptr;
  hipError_t (*hipModuleLoadData)(hipModule_t *, const void *) = nullptr;
  hipError_t (*hipModuleUnload)(hipModule_t) = nullptr;
  hipError_t (*hipModuleGetFunction)(hipFunction_t *, hipModule_t, const char *) = nullptr;
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      unsigned, hipStream_t, void **, void **) = nullptr;
  const char *(*hipGetErrorName)(hipError_t) = nullptr;

  hiprtcResult (*hiprtcVersion)(int *, int *) = nullptr;
  hiprtcResult (*hiprtcCreateProgram)(hiprtcProgram *, const char *, const char *, int, const char **,
                                      const char **) = nullptr;
  hiprtcResult (*hiprtcCompileProgram)(hiprtcProgram, int, const char **) = nullptr;
  hiprtcResult (*hiprtcGetCodeSize)(hiprtcProgram, size_t *) = nullptr;
  hiprtcResult (*hiprtcGetCode)(hiprtcProgram, char *) = nullptr;
  hiprtcResult (*hiprtcGetProgramLogSize)(hiprtcProgram, size_t *) = nullptr;
  hiprtcResult (*hiprtcGetProgramLog)(hiprtcProgram, char *) = nullptr;
  hiprtcResult (*hiprtcDestroyProgram)(hiprtcProgram *) = nullptr;

  bool has_rtc() const { return hiprtcCompileProgram != nullptr; }
};

// Loads once per process (DEVEXIT_HIP_LIBRARY, else libamdhip64.so, .so.6, .so.5; hiprtc from it
// or DEVEXIT_HIPRTC_LIBRARY, else libhiprtc.so*). These two settings are read here and nowhere
// else. Returns null and sets *error (every attempt, with dlerror) when nothing loads or a
// required symbol is missing.
const HipApi *LoadHip(std::string *error);

// The runtime's name for an error ("hipErrorNoDevice"), as JS errors carry it, and the same with
// its number ("hipErrorNoDevice (100)") for messages.
std::string HipErrorName(const HipApi *api, hipError_t e);
std::string HipErrorText(const HipApi *api, hipError_t e);
std::string HiprtcErrorName(hiprtcResult r);
std::string HiprtcErrorText(hiprtcResult r);

// A refusal message when hiprtc of this runtime is known to abort the process for the target
// (ROCm 5.x comgr aborts on targets newer than it knows), else empty.
std::string RefuseArch(const HipApi *api, const std::string &arch);

}  // namespace devexit_hip
