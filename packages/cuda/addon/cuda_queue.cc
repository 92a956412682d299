#include "cuda_queue.h"

#include <mutex>

#include "nvrtc_api.h"

namespace devexit_cuda {

namespace {
constexpr uint64_t kMaxStagedBytes = uint64_t{64} << 20;  // then synchronize, so host copies go

CUdeviceptr Dptr(const void *p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }
}  // namespace

bool CudaQueue::Ok(CUresult r, const char *call) {
  if (r == CUDA_SUCCESS) return true;
  if (RuntimeGone(r, label_, call)) {
    gone_ = true;
    Fail(devexit::kVendorError, std::string(call) + " failed: libcuda was deinitialised (the process is exiting)",
         "CUDA_ERROR_DEINITIALIZED");
    return false;
  }
  Fail(devexit::kVendorError, std::string(call) + " failed: " + DescribeCuda(api_, r), CudaErrorName(api_, r));
  return false;
}

bool CudaQueue::OnStart(std::string *error) {
  start_error_name_.clear();
  auto failed = [&](const char *call, CUresult r) {
    start_error_name_ = CudaErrorName(api_, r);
    *error = std::string(call) + " failed: " + DescribeCuda(api_, r);
    return false;
  };
  CUresult r = InitCuda(api_);
  if (r != CUDA_SUCCESS) return failed("cuInit", r);
  if ((r = api_->cuDeviceGet(&device_, static_cast<int>(id().index))) != CUDA_SUCCESS) return failed("cuDeviceGet", r);
  if ((r = api_->cuDevicePrimaryCtxRetain(&context_, device_)) != CUDA_SUCCESS)
    return failed("cuDevicePrimaryCtxRetain", r);
  // The context is current on this thread for its whole life: every later call runs here.
  const char *call = "cuCtxSetCurrent";
  if ((r = api_->cuCtxSetCurrent(context_)) == CUDA_SUCCESS) {
    call = "cuStreamCreate";
    r = api_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING);
  }
  if (r != CUDA_SUCCESS) {
    failed(call, r);
    api_->cuDevicePrimaryCtxRelease(device_);
    context_ = nullptr;
    return false;
  }
  return true;
}

bool CudaQueue::VendorAlloc(uint64_t bytes, void **ptr) {
  *ptr = nullptr;
  if (gone_) return false;
  // Whole words, at least one: cuMemAlloc refuses 0 bytes, and the clearing fill writes words.
  const uint64_t size = bytes < 4 ? 4 : (bytes + 3) & ~uint64_t{3};
  CUdeviceptr p = 0;
  if (!Ok(api_->cuMemAlloc(&p, size), "cuMemAlloc")) return false;
  // Fresh buffers read as zeros, as on the other backends.
  if (!Ok(api_->cuMemsetD32Async(p, 0, size / 4, stream_), "cuMemsetD32Async")) {
    api_->cuMemFree(p);
    return false;
  }
  dirty_ = true;
  *ptr = reinterpret_cast<void *>(static_cast<uintptr_t>(p));
  return true;
}

void CudaQueue::VendorFree(void *ptr) {
  if (gone_) return;
  // cuMemFree does not wait for the stream: work still reading the buffer finishes first.
  if (dirty_) VendorSync();
  if (!gone_) Ok(api_->cuMemFree(Dptr(ptr)), "cuMemFree");
}

bool CudaQueue::VendorWrite(void *dst, std::vector<uint8_t> &data) {
  if (gone_) return false;
  if (data.empty()) return true;
  if (!Ok(api_->cuMemcpyHtoDAsync(Dptr(dst), data.data(), data.size(), stream_), "cuMemcpyHtoDAsync")) return false;
  dirty_ = true;
  staged_bytes_ += data.size();
  staging_.push_back(std::move(data));  // the copy may read it until the stream synchronizes
  if (staged_bytes_ > kMaxStagedBytes) return VendorSync();
  return true;
}

bool CudaQueue::VendorRead(uint8_t *dst, const void *src, uint64_t bytes) {
  if (gone_) return false;
  if (!Ok(api_->cuMemcpyDtoHAsync(dst, Dptr(src), bytes, stream_), "cuMemcpyDtoHAsync")) return false;
  dirty_ = true;
  return true;  // Execute synchronizes before it answers with `dst`
}

bool CudaQueue::VendorFill(void *dst, uint32_t value, uint64_t bytes) {
  if (gone_) return false;
  if (!Ok(api_->cuMemsetD32Async(Dptr(dst), value, bytes / 4, stream_), "cuMemsetD32Async")) return false;
  dirty_ = true;
  return true;
}

bool CudaQueue::VendorCopy(void *dst, const void *src, uint64_t bytes) {
  if (gone_) return false;
  if (!Ok(api_->cuMemcpyDtoDAsync(Dptr(dst), Dptr(src), bytes, stream_), "cuMemcpyDtoDAsync")) return false;
  dirty_ = true;
  return true;
}

bool CudaQueue::EnsureBuiltins() {
  if (builtins_[0]) return true;
  BuiltinPtx b;
  if (!FindBuiltins(arch_, &b)) {
    std::string why;
    if (!LoadNvrtc(&why)) why = "they need NVRTC: " + why;
    else why = "they were not compiled when the device opened";
    Fail(devexit::kVendorError, "the built-in kernels for " + arch_ + " are unavailable: " + why);
    return false;
  }
  if (!b.ok) {
    Fail(devexit::kVendorError, "compiling the built-in kernels for " + arch_ + " failed: " + b.error, b.name);
    return false;
  }
  CUmodule mod = nullptr;
  if (!Ok(api_->cuModuleLoadData(&mod, b.ptx.c_str()), "cuModuleLoadData(built-in kernels)")) return false;
  modules_.push_back(mod);
  CUfunction found[devexit::kBuiltinCount] = {};
  for (uint32_t i = 0; i < devexit::kBuiltinCount; i++)
    if (!Ok(api_->cuModuleGetFunction(&found[i], mod, devexit::kBuiltins[i].name), "cuModuleGetFunction(built-in kernel)"))
      return false;
  for (uint32_t i = 0; i < devexit::kBuiltinCount; i++) builtins_[i] = found[i];
  return true;
}

bool CudaQueue::VendorLaunch(int32_t kernel, const uint32_t grid[3], std::vector<devexit::ResolvedArg> &args) {
  if (gone_) return false;
  // The shared queue checked a built-in's arguments and buffers before this call.
  CUfunction f = nullptr;
  if (kernel < 0) {
    if (!EnsureBuiltins()) return false;
    f = builtins_[-1 - kernel];
  } else {
    auto it = kernels_.find(kernel);
    if (it == kernels_.end()) {
      Fail(devexit::kBadArgs, "launch: kernel " + std::to_string(kernel) + " is not loaded on this device");
      return false;
    }
    f = it->second;
  }
  values_.resize(args.size());
  params_.resize(args.size());
  for (size_t i = 0; i < args.size(); i++) {
    // A device pointer is 8 bytes; a 32-bit scalar is the low half (little-endian).
    values_[i] = args[i].kind == devexit::kArgBuffer ? static_cast<uint64_t>(Dptr(args[i].ptr)) : args[i].bits;
    params_[i] = &values_[i];
  }
  const devexit::GpuLaunchShape shape = devexit::LaunchShape(kernel, grid, kBlock);
  if (!Ok(api_->cuLaunchKernel(f, shape.blocks[0], shape.blocks[1], shape.blocks[2], shape.threads, 1, 1, 0, stream_,
                               params_.empty() ? nullptr : params_.data(), nullptr),
          "cuLaunchKernel"))
    return false;
  dirty_ = true;
  return true;
}

bool CudaQueue::VendorSync() {
  if (gone_) return false;
  bool ok = Ok(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  // Done or failed, the stream no longer reads the staged host copies.
  staging_.clear();
  staged_bytes_ = 0;
  dirty_ = false;
  return ok;
}

void CudaQueue::VendorCustom(devexit::QueueCommand &c) {
  auto *out = new devexit::Completion();
  auto failed = [&](const std::string &call, CUresult r) {
    out->status = devexit::kVendorError;
    if (RuntimeGone(r, label_, call.c_str())) gone_ = true;
    out->error_name = CudaErrorName(api_, r);
    out->error = call + " failed: " + DescribeCuda(api_, r);
  };
  CUmodule mod = nullptr;
  CUfunction f = nullptr;
  CUresult r = CUDA_SUCCESS;
  if (gone_) {
    failed("cuModuleLoadData", CUDA_ERROR_DEINITIALIZED);
  } else if (c.data.empty() || c.data.back() != 0) {
    out->status = devexit::kBadArgs;
    out->error = "a module image must end with a NUL byte";
  } else if ((r = api_->cuModuleLoadData(&mod, c.data.data())) != CUDA_SUCCESS) {
    failed("cuModuleLoadData", r);
  } else {
    modules_.push_back(mod);  // unloaded with the queue
    if ((r = api_->cuModuleGetFunction(&f, mod, c.text.c_str())) != CUDA_SUCCESS) {
      failed("cuModuleGetFunction(\"" + c.text + "\")", r);
    } else {
      const int32_t id = next_kernel_++;
      kernels_[id] = f;
      out->value = id;
    }
  }
  Answer(c, out, false);
}

void CudaQueue::VendorRelease() {
  staging_.clear();
  kernels_.clear();
  for (CUfunction &f : builtins_) f = nullptr;
  // After CUDA_ERROR_DEINITIALIZED libcuda has released everything itself.
  if (!gone_) {
    for (CUmodule m : modules_)
      if (!Ok(api_->cuModuleUnload(m), "cuModuleUnload")) break;
    if (!gone_ && stream_) Ok(api_->cuStreamDestroy(stream_), "cuStreamDestroy");
    if (!gone_ && context_) Ok(api_->cuDevicePrimaryCtxRelease(device_), "cuDevicePrimaryCtxRelease");
  }
  modules_.clear();
  stream_ = nullptr;
  context_ = nullptr;
}

devexit::ServiceRef<CudaQueue> OpenDevice(const CudaApi *api, uint32_t index, const std::string &arch,
                                          std::string *error) {
  return devexit::ServiceSlots<CudaQueue>::Get().Open("cuda", index, error, [&](devexit_device_id id) {
    return new CudaQueue(id, api, arch);
  });
}

}  // namespace devexit_cuda
