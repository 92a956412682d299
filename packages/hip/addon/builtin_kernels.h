// The built-in kernels (devexit_gpu_builtins.hpp's source), compiled with hiprtc for the device's
// target the first time a queue launches one.
#pragma once

#include "devexit_gpu_builtins.hpp"

namespace devexit_hip {

constexpr unsigned kBlock = 64;  // threads per block for element-wise kernels

}  // namespace devexit_hip
