#include "cpu_queue.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace devexit_cpu {

bool CpuQueue::OnStart(std::string *error) {
  try {
    pool_.reset(new Pool(threads_ > 1 ? threads_ - 1 : 0));
  } catch (const std::exception &e) {
    *error = std::string("cannot start the kernel threads: ") + e.what();
    return false;
  }
  return true;
}

bool CpuQueue::VendorAlloc(uint64_t bytes, void **ptr) {
  // calloc: fresh buffers read as zeros, like the other backends' cleared allocations.
  *ptr = calloc(bytes ? bytes : 1, 1);
  if (!*ptr) Fail(devexit::kOutOfRange, "cannot allocate " + std::to_string(bytes) + " bytes: out of memory");
  return *ptr != nullptr;
}

void CpuQueue::VendorFree(void *ptr) { free(ptr); }

bool CpuQueue::VendorWrite(void *dst, std::vector<uint8_t> &data) {
  memcpy(dst, data.data(), data.size());
  return true;
}

bool CpuQueue::VendorRead(uint8_t *dst, const void *src, uint64_t bytes) {
  memcpy(dst, src, bytes);
  return true;
}

bool CpuQueue::VendorFill(void *dst, uint32_t value, uint64_t bytes) {
  auto *p = static_cast<uint32_t *>(dst);
  std::fill(p, p + bytes / 4, value);
  return true;
}

bool CpuQueue::VendorCopy(void *dst, const void *src, uint64_t bytes) {
  memmove(dst, src, bytes);
  return true;
}

bool CpuQueue::VendorLaunch(int32_t kernel, const uint32_t grid[3], std::vector<devexit::ResolvedArg> &args) {
  // The kernel table is append-only and never frees an entry: the last launch's lookup stays
  // valid, and a loop of launches of one kernel skips the table's lock.
  const KernelEntry *k = kernel == last_kernel_id_ && last_kernel_ ? last_kernel_
                         : KernelById(kernel < 0 ? static_cast<uint32_t>(-1 - kernel) : static_cast<uint32_t>(kernel));
  last_kernel_id_ = kernel;
  last_kernel_ = k;
  if (!k || (kernel >= 0 && k->builtin) || (kernel < 0 && !k->builtin)) {
    Fail(devexit::kBadArgs, "launch: kernel " + std::to_string(kernel) + " is not loaded");
    return false;
  }
  if (!k->signature.empty()) {
    bool ok = args.size() == k->signature.size();
    for (size_t i = 0; ok && i < args.size(); i++) ok = args[i].kind == k->signature[i];
    if (!ok) {
      Fail(devexit::kBadArgs, "launch " + k->name + ": arguments do not match its signature");
      return false;
    }
  }
  args_.resize(args.size());
  for (size_t i = 0; i < args.size(); i++) {
    devexit_cpu_arg_v1 &a = args_[i];
    memset(&a, 0, sizeof a);
    a.kind = args[i].kind;
    if (a.kind == DEVEXIT_CPU_ARG_BUFFER) {
      a.v.buffer.data = args[i].ptr;
      a.v.buffer.size = args[i].size;
    } else {
      memcpy(&a.v.u32, &args[i].bits, 4);
    }
  }
  const uint64_t total = static_cast<uint64_t>(grid[0]) * grid[1] * grid[2];
  const auto n = static_cast<uint32_t>(args_.size());
  if (k->prologue) k->prologue(args_.data(), n);
  pool_->Run(k, total, args_.data(), n);
  return true;
}

void CpuQueue::VendorRelease() {
  if (pool_) pool_->Stop();
}

devexit::ServiceRef<CpuQueue> OpenDevice(uint32_t index, unsigned threads, std::string *error) {
  return devexit::ServiceSlots<CpuQueue>::Get().Open("cpu", index, error, [&](devexit_device_id id) {
    return new CpuQueue(id, threads);
  });
}

}  // namespace devexit_cpu
