// The stand-in's kernels: host functions that run every thread of a launch, by name.
#include <unistd.h>

#include <algorithm>

#include "standin_hip.h"

namespace standin_hip {
namespace {

template <typename T>
T *Ptr(uint64_t v) {
  return reinterpret_cast<T *>(static_cast<uintptr_t>(v));
}
float F32(uint64_t v) {
  uint32_t u = static_cast<uint32_t>(v);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// Each host kernel runs every thread of the grid, as a GPU would: the bounds check is the kernel's.
int KFill(const std::vector<uint64_t> &a, const LaunchDims &d) {
  uint32_t value = static_cast<uint32_t>(a[1]), n = static_cast<uint32_t>(a[2]);
  if (int e = StandinCheckPtr(a[0], std::min<uint64_t>(n, d.threads()) * 4)) return e;
  auto *out = Ptr<uint32_t>(a[0]);
  for (uint64_t i = 0; i < d.threads(); i++)
    if (i < n) out[i] = value;
  return kSuccess;
}
int KCopy(const std::vector<uint64_t> &a, const LaunchDims &d) {
  uint32_t n = static_cast<uint32_t>(a[2]);
  uint64_t m = std::min<uint64_t>(n, d.threads()) * 4;
  if (int e = StandinCheckPtr(a[0], m)) return e;
  if (int e = StandinCheckPtr(a[1], m)) return e;
  auto *src = Ptr<uint32_t>(a[0]);
  auto *dst = Ptr<uint32_t>(a[1]);
  for (uint64_t i = 0; i < d.threads(); i++)
    if (i < n) dst[i] = src[i];
  return kSuccess;
}
int KSaxpy(const std::vector<uint64_t> &a, const LaunchDims &d) {
  float alpha = F32(a[2]);
  uint32_t n = static_cast<uint32_t>(a[3]);
  uint64_t m = std::min<uint64_t>(n, d.threads()) * 4;
  if (int e = StandinCheckPtr(a[0], m)) return e;
  if (int e = StandinCheckPtr(a[1], m)) return e;
  auto *x = Ptr<float>(a[0]);
  auto *y = Ptr<float>(a[1]);
  for (uint64_t i = 0; i < d.threads(); i++)
    if (i < n) y[i] = alpha * x[i] + y[i];
  return kSuccess;
}
// The real kernel reduces in one block; a launch of several blocks would race on out[0].
int KSum(const std::vector<uint64_t> &a, const LaunchDims &d) {
  uint32_t n = static_cast<uint32_t>(a[2]);
  if (d.grid.x != 1 || d.grid.y != 1 || d.grid.z != 1) return kLaunchFailure;
  if (int e = StandinCheckPtr(a[0], uint64_t(n) * 4)) return e;
  if (int e = StandinCheckPtr(a[1], 4)) return e;
  auto *x = Ptr<float>(a[0]);
  double acc = 0;
  for (uint32_t i = 0; i < n; i++) acc += x[i];
  *Ptr<float>(a[1]) = static_cast<float>(acc);
  return kSuccess;
}
// For tests: a user kernel (add_u32) and a slow one (sleep_us) to keep work in flight.
int KAdd(const std::vector<uint64_t> &a, const LaunchDims &d) {
  uint32_t v = static_cast<uint32_t>(a[1]), n = static_cast<uint32_t>(a[2]);
  if (int e = StandinCheckPtr(a[0], std::min<uint64_t>(n, d.threads()) * 4)) return e;
  auto *buf = Ptr<uint32_t>(a[0]);
  for (uint64_t i = 0; i < d.threads(); i++)
    if (i < n) buf[i] += v;
  return kSuccess;
}
int KSleep(const std::vector<uint64_t> &a, const LaunchDims &) {
  usleep(static_cast<useconds_t>(static_cast<uint32_t>(a[0])));
  return kSuccess;
}

}  // namespace

static const HostKernel kKernels[] = {
    {"fill_u32", "puu", KFill},   {"copy", "ppu", KCopy},       {"saxpy_f32", "ppfu", KSaxpy},
    {"sum_f32", "ppu", KSum},     {"add_u32", "puu", KAdd},     {"sleep_us", "u", KSleep},
};
const HostKernel *FindKernel(const std::string &name) {
  for (const auto &k : kKernels)
    if (name == k.name) return &k;
  return nullptr;
}


}  // namespace standin_hip
