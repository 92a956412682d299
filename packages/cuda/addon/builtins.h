// The built-in kernels (devexit_gpu_builtins.hpp's source) as PTX, compiled by NVRTC on the
// compiler service for a device's architecture, once per architecture and process.
#pragma once

#include <string>

#include "devexit_gpu_builtins.hpp"

namespace devexit_cuda {

constexpr unsigned kBlock = 256;  // threads per block of element-wise and user kernels

struct BuiltinPtx {
  bool ok = false;
  std::string ptx;
  std::string error, name;  // why not, and the NVRTC_ERROR_ name when NVRTC said so
};

// The process-wide cache, filled by the compiler service. false when `arch` was never compiled.
bool FindBuiltins(const std::string &arch, BuiltinPtx *out);
void StoreBuiltins(const std::string &arch, const BuiltinPtx &ptx);

}  // namespace devexit_cuda
