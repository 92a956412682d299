// A CPU device: devexit's standard queue service whose vendor calls are the C library and a
// pool of kernel threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devexit_queue.hpp"
#include "kernels.h"
#include "pool.h"

namespace devexit_cpu {

class CpuQueue : public devexit::QueueService {
 public:
  CpuQueue(devexit_device_id id, unsigned threads) : QueueService(id, "queue"), threads_(threads) {}
  unsigned threads() const { return threads_; }

 protected:
  bool OnStart(std::string *error) override;
  bool VendorAlloc(uint64_t bytes, void **ptr) override;
  void VendorFree(void *ptr) override;
  bool VendorWrite(void *dst, std::vector<uint8_t> &data) override;
  bool VendorRead(uint8_t *dst, const void *src, uint64_t bytes) override;
  bool VendorFill(void *dst, uint32_t value, uint64_t bytes) override;
  bool VendorCopy(void *dst, const void *src, uint64_t bytes) override;
  bool VendorLaunch(int32_t kernel, const uint32_t grid[3], std::vector<devexit::ResolvedArg> &args) override;
  bool VendorSync() override { return true; }  // every command is done when Execute returns
  void VendorRelease() override;

 private:
  unsigned threads_;
  std::unique_ptr<Pool> pool_;  // service thread only
  std::vector<devexit_cpu_arg_v1> args_;
  int32_t last_kernel_id_ = 0;  // service thread only
  const KernelEntry *last_kernel_ = nullptr;
};

// The process-wide device for `index`: a new one when there is none, or the last one closed or
// failed to start.
devexit::ServiceRef<CpuQueue> OpenDevice(uint32_t index, unsigned threads, std::string *error);

}  // namespace devexit_cpu
