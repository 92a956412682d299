// NVRTC, CUDA's runtime compiler (CUDA C++ -> PTX), declared here and loaded with dlopen when
// present; never dlclosed. No device is needed to compile.
#pragma once

#include <string>
#include <vector>

namespace devexit_cuda {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;

struct NvrtcApi {
  std::string path;        // what was loaded
  int major = 0, minor = 0;
  std::vector<int> archs;  // the sm_XY it can target (XY), ascending; empty if it does not say

  nvrtcResult (*nvrtcVersion)(int *, int *) = nullptr;
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int *) = nullptr;  // optional (NVRTC >= 11.2)
  nvrtcResult (*nvrtcGetSupportedArchs)(int *) = nullptr;     // optional
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                    const char *const *) = nullptr;
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char *const *) = nullptr;
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t *) = nullptr;
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char *) = nullptr;
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *) = nullptr;
  const char *(*nvrtcGetErrorString)(nvrtcResult) = nullptr;
};

// Loads NVRTC once per process: DEVEXIT_NVRTC_LIBRARY, else libnvrtc.so.13, .so.12, .so.11.2,
// .so. Tells the registry right after the load (NVRTC registers its exit handlers as it loads).
// nullptr, with every attempt in *error, when none loads.
const NvrtcApi *LoadNvrtc(std::string *error);

// "NVRTC_ERROR_COMPILATION"; "NVRTC_ERROR_UNKNOWN_<n>" for a value NVRTC has no name for.
std::string NvrtcErrorName(const NvrtcApi *api, nvrtcResult r);

struct CompileResult {
  bool ok = false;
  std::string ptx;
  std::string log;    // the compiler's log (warnings on success, errors on failure)
  std::string error;  // why it failed, the log included
  std::string name;   // NVRTC_ERROR_...
};

// One compile to PTX. Call it from the compiler service's thread only.
CompileResult CompileToPtx(const NvrtcApi *api, const std::string &source, const std::string &name,
                           const std::vector<std::string> &options);

}  // namespace devexit_cuda
