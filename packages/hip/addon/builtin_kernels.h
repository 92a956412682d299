// The built-in kernels (semantics in @devexit/core's backend.ts), compiled with hiprtc for the
// device's target the first time a queue launches one.
#pragma once

namespace devexit_hip {

constexpr unsigned kBlock = 64;      // threads per block for element-wise kernels
constexpr unsigned kSumBlock = 256;  // sum_f32 reduces in one block of this many threads

constexpr const char *kBuiltinNames[] = {"fill_u32", "copy", "saxpy_f32", "sum_f32"};

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
