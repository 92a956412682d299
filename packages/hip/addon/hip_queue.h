// A HIP device: devexit's standard queue service whose vendor calls are HIP, on one stream that
// the service thread creates and owns.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "devexit_queue.hpp"
#include "hip_api.h"

namespace devexit_hip {

// The custom command that loads a code object: data = the image, text = the entry point; its
// completion's value is the new kernel's id (> 0).
class HipQueue : public devexit::QueueService {
 public:
  HipQueue(devexit_device_id id, const HipApi *api, std::string arch)
      : QueueService(id, "queue"), api_(api), arch_(std::move(arch)) {}

  const std::string &arch() const { return arch_; }
  // The HIP error name of a failed start ("hipErrorNoDevice"); valid once Open() returned.
  const std::string &start_error_name() const { return start_error_name_; }

 protected:
  bool OnStart(std::string *error) override;
  bool VendorAlloc(uint64_t bytes, void **ptr) override;
  void VendorFree(void *ptr) override;
  bool VendorWrite(void *dst, std::vector<uint8_t> &data) override;
  bool VendorRead(uint8_t *dst, const void *src, uint64_t bytes) override;
  bool VendorFill(void *dst, uint32_t value, uint64_t bytes) override;
  bool VendorCopy(void *dst, const void *src, uint64_t bytes) override;
  bool VendorLaunch(int32_t kernel, const uint32_t grid[3], std::vector<devexit::ResolvedArg> &args) override;
  bool VendorSync() override;
  // Launches return before the GPU ran them: at most ~2 ms of them wait on the stream, so that an
  // exit drops the rest of a long batch instead of waiting for it (QueueService::Pace).
  int64_t InFlightBudgetNs() override { return 2000000; }
  void VendorCustom(devexit::QueueCommand &c) override;
  void VendorRelease() override;

 private:
  // false, with the failure kept for the next read or flush, when e is not hipSuccess.
  bool Check(hipError_t e, const char *what);
  bool EnsureBuiltins();

  const HipApi *api_;
  const std::string arch_;
  std::string start_error_name_;
  // Service thread only.
  hipStream_t stream_ = nullptr;
  std::vector<hipModule_t> modules_;
  std::unordered_map<int32_t, hipFunction_t> kernels_;
  int32_t next_kernel_ = 1;
  std::vector<hipFunction_t> builtins_;
  // Host bytes of asynchronous copies: HIP may read them until the stream is synchronised.
  std::vector<std::vector<uint8_t>> staging_;
  uint64_t staged_bytes_ = 0;
  std::vector<uint64_t> arg_values_;
  std::vector<void *> arg_pointers_;
};

// The process-wide queue of device `index`: a new one when there is none, or the last one closed
// or failed to start.
devexit::ServiceRef<HipQueue> OpenDevice(const HipApi *api, uint32_t index, std::string *error);

}  // namespace devexit_hip
