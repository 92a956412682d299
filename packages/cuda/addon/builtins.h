// The built-in kernels (semantics in @devexit/core's backend.ts) as CUDA C, compiled by NVRTC on
// the compiler service for a device's architecture, once per architecture and process.
#pragma once

#include <string>

namespace devexit_cuda {

constexpr unsigned kBlock = 256;     // threads per block of element-wise and user kernels
constexpr unsigned kSumBlock = 256;  // sum_f32 reduces in one block of this many threads
constexpr int kBuiltinCount = 4;

// In core's BUILTIN_KERNELS order: built-in i is launched as kernel id -1 - i.
constexpr const char *kBuiltinNames[kBuiltinCount] = {"fill_u32", "copy", "saxpy_f32", "sum_f32"};
// Argument kinds per built-in (devexit::ArgKind: 1 buffer, 2 u32, 4 f32), as in core's signatures.
constexpr const char *kBuiltinKinds[kBuiltinCount] = {"\1\2\2", "\1\1\2", "\1\1\4\2", "\1\1\2"};

constexpr const char *kBuiltinSource = R"CUDA(
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
)CUDA";

struct BuiltinPtx {
  bool ok = false;
  std::string ptx;
  std::string error, name;  // why not, and the NVRTC_ERROR_ name when NVRTC said so
};

// The process-wide cache, filled by the compiler service. false when `arch` was never compiled.
bool FindBuiltins(const std::string &arch, BuiltinPtx *out);
void StoreBuiltins(const std::string &arch, const BuiltinPtx &ptx);

}  // namespace devexit_cuda
