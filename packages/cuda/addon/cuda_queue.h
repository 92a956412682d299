// A CUDA device: devexit's standard queue service whose vendor calls are the driver API, on the
// device's retained primary context (current on the service thread) and the queue's own stream.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "builtins.h"
#include "cuda_api.h"
#include "devexit_queue.hpp"

namespace devexit_cuda {

class CudaQueue : public devexit::QueueService {
 public:
  CudaQueue(devexit_device_id id, const CudaApi *api, std::string arch)
      : QueueService(id, "queue"), api_(api), arch_(std::move(arch)), label_("cuda:" + std::to_string(id.index) + "/queue") {}

  // Why the last start failed, in libcuda's words (CUDA_ERROR_...), if libcuda said.
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
  // Loads a module (PTX, cubin or fatbin in c.data, NUL-terminated) and answers with the id of
  // its function c.text.
  void VendorCustom(devexit::QueueCommand &c) override;
  void VendorRelease() override;

 private:
  // true for CUDA_SUCCESS; else records the failure (the next read or flush reports it).
  bool Ok(CUresult r, const char *call);
  bool EnsureBuiltins();

  const CudaApi *api_;
  const std::string arch_;   // the target the built-ins were compiled for (sm_90, compute_90)
  const std::string label_;  // cuda:<index>/queue
  std::string start_error_name_;

  // Service thread only.
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  bool gone_ = false;   // libcuda answered CUDA_ERROR_DEINITIALIZED: call it no more
  bool dirty_ = false;  // work submitted to the stream since its last synchronize
  std::vector<std::vector<uint8_t>> staging_;  // host data of copies the stream may still read
  uint64_t staged_bytes_ = 0;
  std::vector<CUmodule> modules_;
  CUfunction builtins_[devexit::kBuiltinCount] = {};
  std::unordered_map<int32_t, CUfunction> kernels_;
  int32_t next_kernel_ = 1;
  std::vector<uint64_t> values_;
  std::vector<void *> params_;
};

// The process-wide device for `index`: a new one when there is none, or the last one closed or
// failed to start.
devexit::ServiceRef<CudaQueue> OpenDevice(const CudaApi *api, uint32_t index, const std::string &arch,
                                          std::string *error);

}  // namespace devexit_cuda
