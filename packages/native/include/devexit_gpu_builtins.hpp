// devexit_gpu_builtins.hpp — the built-in kernels of devexit's GPU backends (C++17, header-only):
// one source for CUDA C and HIP C++ (the same dialect for these four), and the launch shape both
// use. Their names, argument kinds and buffer sizes are devexit_protocol.hpp's kBuiltins, which
// the shared queue checks before any launch.
#pragma once

#include <cstdint>

#include "devexit_protocol.hpp"

namespace devexit {

constexpr unsigned kSumBlock = 256;  // sum_f32 reduces in one block of this many threads

// Semantics in @devexit/core's backend.ts; every entry point is extern "C" and named as in
// kBuiltins.
constexpr const char *kGpuBuiltinSource = R"GPU(
extern "C" __global__ void fill_u32(unsigned int* out, unsigned int value, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value;
}
extern "C" __global__ void copy(const unsigned int* src, unsigned int* dst, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
extern "C" __global__ void saxpy_f32(const float* x, float* y, float a, unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void sum_f32(const float* x, float* out, unsigned int n) {
  __shared__ float part[256];
  float acc = 0.0f;
  for (unsigned int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = part[0];
}
)GPU";

// Blocks and threads per block of a launch over grid (x elements, then y and z): x is covered in
// blocks of `block` threads; a one-block built-in (sum_f32) runs as one block of kSumBlock.
struct GpuLaunchShape {
  unsigned blocks[3];
  unsigned threads;
};

inline GpuLaunchShape LaunchShape(int32_t kernel, const uint32_t grid[3], unsigned block) {
  const BuiltinKernel *k = FindBuiltin(kernel);
  if (k && k->one_block) return {{1, 1, 1}, kSumBlock};
  return {{static_cast<unsigned>((uint64_t{grid[0]} + block - 1) / block), grid[1], grid[2]}, block};
}

}  // namespace devexit
