// Shared by the stand-in libamdhip64's two halves: the runtime (standin_hip.cc) and hiprtc
// (standin_hiprtc.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace standin_hip {

// hipError_t values as ROCm numbers them.
enum : int {
  kSuccess = 0,
  kInvalidValue = 1,
  kOutOfMemory = 2,
  kNotInitialized = 3,
  kNoDevice = 100,
  kInvalidDevice = 101,
  kInvalidImage = 200,
  kInvalidHandle = 400,
  kNotFound = 500,
  kNotReady = 600,
  kIllegalAddress = 700,
  kLaunchFailure = 719,
};

struct Dim3 {
  unsigned x, y, z;
};

struct LaunchDims {
  Dim3 grid, block;
  uint64_t threads() const {
    return uint64_t(grid.x) * block.x * uint64_t(grid.y) * block.y * uint64_t(grid.z) * block.z;
  }
};

// Argument kinds of a host kernel: 'p' device pointer, 'u' u32, 'f' f32.
using KernelFn = int (*)(const std::vector<uint64_t> &args, const LaunchDims &dims);

// Checks that [p, p + bytes) lies in one live allocation: kSuccess or kIllegalAddress.
int StandinCheckPtr(uint64_t p, size_t bytes);

struct HostKernel {
  const char *name;
  const char *sig;
  KernelFn fn;
};
const HostKernel *FindKernel(const std::string &name);

// The first line of a stand-in code object.
extern const char kCodeMagic[];
// True when the stand-in runs kernel `name` (as a host function).
bool HasHostKernel(const std::string &name);
}  // namespace standin_hip
