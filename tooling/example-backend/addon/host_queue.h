// An example device: devexit's standard queue service (devexit_queue.hpp) whose "vendor" is host
// memory and a loop per built-in kernel. A real backend puts its runtime's calls in these slots.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "devexit_queue.hpp"

namespace devexit_example {

class HostQueue : public devexit::QueueService {
 public:
  explicit HostQueue(devexit_device_id id) : QueueService(id, "queue") {}

 protected:
  bool VendorAlloc(uint64_t bytes, void **ptr) override;
  void VendorFree(void *ptr) override;
  bool VendorWrite(void *dst, std::vector<uint8_t> &data) override;
  bool VendorRead(uint8_t *dst, const void *src, uint64_t bytes) override;
  bool VendorFill(void *dst, uint32_t value, uint64_t bytes) override;
  bool VendorCopy(void *dst, const void *src, uint64_t bytes) override;
  // Built-ins only (the shared queue checked their arguments and buffers before this call).
  bool VendorLaunch(int32_t kernel, const uint32_t grid[3], std::vector<devexit::ResolvedArg> &args) override;
  bool VendorSync() override { return true; }  // every command is done when it returns
};

// The process-wide device `index`: a new one when there is none, or the last one closed.
devexit::ServiceRef<HostQueue> OpenDevice(uint32_t index, std::string *error);

}  // namespace devexit_example
