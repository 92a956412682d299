#include "host_queue.h"

#include <cstdlib>
#include <cstring>

namespace devexit_example {

bool HostQueue::VendorAlloc(uint64_t bytes, void **ptr) {
  *ptr = calloc(bytes ? bytes : 1, 1);  // fresh buffers read as zeros on every backend
  if (!*ptr) Fail(devexit::kOutOfRange, "cannot allocate " + std::to_string(bytes) + " bytes");
  return *ptr != nullptr;
}

void HostQueue::VendorFree(void *ptr) { free(ptr); }

bool HostQueue::VendorWrite(void *dst, std::vector<uint8_t> &data) {
  memcpy(dst, data.data(), data.size());
  return true;
}

bool HostQueue::VendorRead(uint8_t *dst, const void *src, uint64_t bytes) {
  memcpy(dst, src, bytes);
  return true;
}

bool HostQueue::VendorFill(void *dst, uint32_t value, uint64_t bytes) {
  auto *p = static_cast<uint32_t *>(dst);
  for (uint64_t i = 0; i < bytes / 4; i++) p[i] = value;
  return true;
}

bool HostQueue::VendorCopy(void *dst, const void *src, uint64_t bytes) {
  memmove(dst, src, bytes);
  return true;
}

bool HostQueue::VendorLaunch(int32_t kernel, const uint32_t grid[3], std::vector<devexit::ResolvedArg> &args) {
  const devexit::BuiltinKernel *k = devexit::FindBuiltin(kernel);
  if (!k) {
    Fail(devexit::kBadArgs, "launch: this backend has built-in kernels only");
    return false;
  }
  const uint32_t n = args.back().bits;
  float a;
  memcpy(&a, &args[2].bits, 4);
  auto u32 = [&](size_t i) { return static_cast<uint32_t *>(args[i].ptr); };
  auto f32 = [&](size_t i) { return static_cast<float *>(args[i].ptr); };
  switch (-1 - kernel) {
    case 0:  // fill_u32(out, value, n)
      for (uint32_t i = 0; i < n; i++) u32(0)[i] = args[1].bits;
      break;
    case 1:  // copy(src, dst, n)
      memmove(u32(1), u32(0), uint64_t{n} * 4);
      break;
    case 2:  // saxpy_f32(x, y, a, n)
      for (uint32_t i = 0; i < n; i++) f32(1)[i] = a * f32(0)[i] + f32(1)[i];
      break;
    case 3: {  // sum_f32(x, out, n)
      double sum = 0;
      for (uint32_t i = 0; i < n; i++) sum += f32(0)[i];
      f32(1)[0] = static_cast<float>(sum);
      break;
    }
  }
  return true;
}

devexit::ServiceRef<HostQueue> OpenDevice(uint32_t index, std::string *error) {
  return devexit::ServiceSlots<HostQueue>::Get().Open("example", index, error,
                                                      [](devexit_device_id id) { return new HostQueue(id); });
}

}  // namespace devexit_example
