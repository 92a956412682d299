#include "kernels.h"

#include <dlfcn.h>

#include <cstring>
#include <mutex>

namespace devexit_cpu {
namespace {

struct Table {
  std::mutex mu;
  std::vector<KernelEntry *> entries;
};

// Heap-held and never destroyed: device threads may still launch while static destructors run.
Table &T() {
  static Table *t = new Table();
  return *t;
}

inline uint64_t Elements(const devexit_cpu_arg_v1 &a) { return a.v.buffer.size / 4; }
inline uint64_t Limit(uint64_t end, uint64_t n, uint64_t cap) {
  uint64_t m = n < cap ? n : cap;
  return end < m ? end : m;
}

void FillU32(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *a, uint32_t) {
  auto *out = static_cast<uint32_t *>(a[0].v.buffer.data);
  const uint32_t value = a[1].v.u32;
  for (uint64_t i = begin, e = Limit(end, a[2].v.u32, Elements(a[0])); i < e; i++) out[i] = value;
}

void CopyU32(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *a, uint32_t) {
  auto *src = static_cast<const uint32_t *>(a[0].v.buffer.data);
  auto *dst = static_cast<uint32_t *>(a[1].v.buffer.data);
  uint64_t e = Limit(Limit(end, a[2].v.u32, Elements(a[0])), UINT64_MAX, Elements(a[1]));
  if (begin < e) memmove(dst + begin, src + begin, (e - begin) * 4);
}

void SaxpyF32(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *a, uint32_t) {
  auto *x = static_cast<const float *>(a[0].v.buffer.data);
  auto *y = static_cast<float *>(a[1].v.buffer.data);
  const float s = a[2].v.f32;
  uint64_t e = Limit(Limit(end, a[3].v.u32, Elements(a[0])), UINT64_MAX, Elements(a[1]));
  for (uint64_t i = begin; i < e; i++) y[i] = s * x[i] + y[i];
}

void SumPrologue(const devexit_cpu_arg_v1 *a, uint32_t) {
  if (a[1].v.buffer.size >= 4) *static_cast<float *>(a[1].v.buffer.data) = 0.0f;
}

// Each chunk adds its partial sum into out[0] with a compare-and-swap on the float's bits.
void SumF32(uint64_t begin, uint64_t end, const devexit_cpu_arg_v1 *a, uint32_t) {
  if (a[1].v.buffer.size < 4) return;
  auto *x = static_cast<const float *>(a[0].v.buffer.data);
  double partial = 0;
  for (uint64_t i = begin, e = Limit(end, a[2].v.u32, Elements(a[0])); i < e; i++) partial += x[i];
  auto *bits = static_cast<uint32_t *>(a[1].v.buffer.data);
  uint32_t seen = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float now;
    memcpy(&now, &seen, 4);
    float next = static_cast<float>(now + partial);
    uint32_t want;
    memcpy(&want, &next, 4);
    if (__atomic_compare_exchange_n(bits, &seen, want, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) break;
  }
}

constexpr uint32_t B = DEVEXIT_CPU_ARG_BUFFER, U = DEVEXIT_CPU_ARG_U32, F = DEVEXIT_CPU_ARG_F32;

void AddBuiltins(Table &t) {
  // In @devexit/core's BUILTIN_KERNELS order: JS launches built-in i as kernel -1 - i.
  t.entries.push_back(new KernelEntry{"fill_u32", FillU32, nullptr, {B, U, U}, true});
  t.entries.push_back(new KernelEntry{"copy", CopyU32, nullptr, {B, B, U}, true});
  t.entries.push_back(new KernelEntry{"saxpy_f32", SaxpyF32, nullptr, {B, B, F, U}, true});
  t.entries.push_back(new KernelEntry{"sum_f32", SumF32, SumPrologue, {B, B, U}, true});
}

std::once_flag builtins_once;
Table &Ready() {
  Table &t = T();
  std::call_once(builtins_once, [&] {
    std::lock_guard<std::mutex> lock(t.mu);
    AddBuiltins(t);
  });
  return t;
}

}  // namespace

uint32_t RegisterKernel(KernelEntry *entry) {
  Table &t = Ready();
  std::lock_guard<std::mutex> lock(t.mu);
  t.entries.push_back(entry);
  return static_cast<uint32_t>(t.entries.size() - 1);
}

const KernelEntry *KernelById(uint32_t id) {
  Table &t = Ready();
  std::lock_guard<std::mutex> lock(t.mu);
  return id < t.entries.size() ? t.entries[id] : nullptr;
}

int LoadUserKernel(const std::string &path, const std::string &entry, std::string *error) {
  // RTLD_LOCAL: kernels from different objects may share symbol names.
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    *error = e ? e : "dlopen failed";
    return -1;
  }
  dlerror();
  void *sym = dlsym(h, entry.c_str());
  if (!sym) {
    const char *e = dlerror();
    *error = e ? e : ("no symbol " + entry);
    return -1;
  }
  auto *k = new KernelEntry();
  k->name = entry;
  k->fn = reinterpret_cast<devexit_cpu_kernel_fn_v1>(sym);
  return static_cast<int>(RegisterKernel(k));
}

}  // namespace devexit_cpu
