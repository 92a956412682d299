// The built-in kernels (semantics in @devexit/core's backend.ts), compiled with hiprtc for the
// device's target the first time a queue launches one.
#pragma once

#include <cstdint>

namespace devexit_hip {

constexpr unsigned kBlock = 64;      // threads per block for element-wise kernels
constexpr unsigned kSumBlock = 256;  // sum_f32 reduces in one block of this many threads

// What the queue thread needs to launch a built-in safely even if JS validation was bypassed: the
// argument kinds (devexit::ArgKind: buffer 1, u32 2, f32 4) and which buffers hold n elements (n
// is the last argument; the others hold one). In core's BUILTIN_KERNELS order (kernel id -1 - i).
struct BuiltinKernel {
  const char *name;
  uint32_t nargs;
  uint32_t kinds[4];
  bool holds_n[4];
  bool one_block;  // reduces in a single block of kSumBlock threads
};

constexpr BuiltinKernel kBuiltins[] = {
    {"fill_u32", 3, {1, 2, 2, 0}, {true, false, false, false}, false},
    {"copy", 3, {1, 1, 2, 0}, {true, true, false, false}, false},
    {"saxpy_f32", 4, {1, 1, 4, 2}, {true, true, false, false}, false},
    {"sum_f32", 3, {1, 1, 2, 0}, {true, false, false, false}, true},
};
constexpr uint32_t kBuiltinCount = sizeof kBuiltins / sizeof kBuiltins[0];

constexpr const char *kBuiltinSource = R"HIP(
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
)HIP";

}  // namespace devexit_hip
