#include "hip_queue.h"

#include <algorithm>
#include <mutex>

#include "builtin_kernels.h"
#include "hip_rtc.h"

namespace devexit_hip {

namespace {
// Past this many bytes of pending host-to-device copies, the queue waits for them.
constexpr uint64_t kMaxStagedBytes = uint64_t{64} << 20;
}  // namespace

bool HipQueue::Check(hipError_t e, const char *what) {
  if (e == 0) return true;
  Fail(devexit::kVendorError, std::string(what) + " failed: " + HipErrorText(api_, e), HipErrorName(api_, e));
  return false;
}

bool HipQueue::OnStart(std::string *error) {
  hipError_t e = api_->hipInit(0);
  // ROCm registers more of its teardown at hipInit: the registry arms its late handler after it.
  if (const devexit_registry_v1 *reg = devexit::Registry()) reg->runtime_initialised("hip");
  const char *step = "hipInit";
  if (e == 0) {
    step = "hipSetDevice";
    e = api_->hipSetDevice(static_cast<int>(id().index));
  }
  if (e == 0) {
    step = "hipStreamCreate";
    e = api_->hipStreamCreate(&stream_);
  }
  if (e == 0) return true;
  start_error_name_ = HipErrorName(api_, e);
  *error = std::string(step) + " returned " + HipErrorText(api_, e);
  return false;
}

bool HipQueue::VendorAlloc(uint64_t bytes, void **ptr) {
  // hipMalloc(0) gives no pointer; a zero-byte buffer still needs one to be a live buffer.
  hipError_t e = api_->hipMalloc(ptr, bytes ? bytes : 4);
  if (e == 0) return true;
  *ptr = nullptr;
  return Check(e, ("hipMalloc(" + std::to_string(bytes) + ")").c_str());
}

void HipQueue::VendorFree(void *ptr) {
  VendorSync();  // work still using it completes first
  Check(api_->hipFree(ptr), "hipFree");
}

bool HipQueue::VendorWrite(void *dst, std::vector<uint8_t> &data) {
  if (data.empty()) return true;
  if (!Check(api_->hipMemcpyHtoDAsync(dst, data.data(), data.size(), stream_), "hipMemcpyHtoDAsync")) return false;
  staged_bytes_ += data.size();
  staging_.push_back(std::move(data));
  if (staged_bytes_ > kMaxStagedBytes) return VendorSync();
  return true;
}

bool HipQueue::VendorRead(uint8_t *dst, const void *src, uint64_t bytes) {
  // The queue synchronises right after a read, before it answers.
  return Check(api_->hipMemcpyDtoHAsync(dst, const_cast<void *>(src), bytes, stream_), "hipMemcpyDtoHAsync");
}

bool HipQueue::VendorFill(void *dst, uint32_t value, uint64_t bytes) {
  return Check(api_->hipMemsetD32Async(dst, static_cast<int>(value), bytes / 4, stream_), "hipMemsetD32Async");
}

bool HipQueue::VendorCopy(void *dst, const void *src, uint64_t bytes) {
  return Check(api_->hipMemcpyDtoDAsync(dst, const_cast<void *>(src), bytes, stream_), "hipMemcpyDtoDAsync");
}

bool HipQueue::VendorSync() {
  bool ok = Check(api_->hipStreamSynchronize(stream_), "hipStreamSynchronize");
  staging_.clear();
  staged_bytes_ = 0;
  return ok;
}

bool HipQueue::EnsureBuiltins() {
  if (!builtins_.empty()) return true;
  const CompileResult &code = BuiltinCode(api_, arch_);
  if (!code.ok) {
    Fail(devexit::kVendorError, "compiling the built-in kernels failed: " + code.error, code.name);
    return false;
  }
  hipModule_t mod = nullptr;
  if (!Check(api_->hipModuleLoadData(&mod, code.code.data()), "hipModuleLoadData(built-in kernels)")) return false;
  modules_.push_back(mod);
  std::vector<hipFunction_t> functions(devexit::kBuiltinCount, nullptr);
  for (uint32_t i = 0; i < devexit::kBuiltinCount; i++) {
    const char *name = devexit::kBuiltins[i].name;
    std::string what = std::string("hipModuleGetFunction(") + name + ")";
    if (!Check(api_->hipModuleGetFunction(&functions[i], mod, name), what.c_str())) return false;
  }
  builtins_ = std::move(functions);
  return true;
}

bool HipQueue::VendorLaunch(int32_t kernel, const uint32_t grid[3], std::vector<devexit::ResolvedArg> &args) {
  // The shared queue checked a built-in's arguments and buffers before this call.
  hipFunction_t f = nullptr;
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
  arg_values_.resize(args.size());
  arg_pointers_.resize(args.size());
  for (size_t i = 0; i < args.size(); i++) {
    // Scalars are 32 bits: the low half of the slot, little-endian.
    arg_values_[i] = args[i].kind == devexit::kArgBuffer ? reinterpret_cast<uintptr_t>(args[i].ptr) : args[i].bits;
    arg_pointers_[i] = &arg_values_[i];
  }
  const devexit::GpuLaunchShape shape = devexit::LaunchShape(kernel, grid, kBlock);
  hipError_t e = api_->hipModuleLaunchKernel(f, shape.blocks[0], shape.blocks[1], shape.blocks[2], shape.threads, 1, 1, 0,
                                             stream_, arg_pointers_.empty() ? nullptr : arg_pointers_.data(), nullptr);
  return Check(e, "hipModuleLaunchKernel");
}

void HipQueue::VendorCustom(devexit::QueueCommand &c) {
  auto *out = new devexit::Completion();
  auto fail = [&](hipError_t e, const std::string &what) {
    out->status = devexit::kVendorError;
    out->error = what + " failed: " + HipErrorText(api_, e);
    out->error_name = HipErrorName(api_, e);
  };
  // Text code objects (the stand-in's) are read up to a NUL: the image always ends with one.
  c.data.push_back(0);
  hipModule_t mod = nullptr;
  hipError_t e = api_->hipModuleLoadData(&mod, c.data.data());
  if (e != 0) {
    fail(e, "hipModuleLoadData");
  } else {
    modules_.push_back(mod);
    hipFunction_t f = nullptr;
    e = api_->hipModuleGetFunction(&f, mod, c.text.c_str());
    if (e != 0) {
      fail(e, "hipModuleGetFunction(\"" + c.text + "\")");
    } else {
      kernels_[next_kernel_] = f;
      out->value = next_kernel_++;
    }
  }
  Answer(c, out, false);
}

void HipQueue::VendorRelease() {
  for (hipModule_t m : modules_) api_->hipModuleUnload(m);
  modules_.clear();
  kernels_.clear();
  builtins_.clear();
  if (stream_) api_->hipStreamDestroy(stream_);
  stream_ = nullptr;
}

devexit::ServiceRef<HipQueue> OpenDevice(const HipApi *api, uint32_t index, std::string *error) {
  return devexit::ServiceSlots<HipQueue>::Get().Open("hip", index, error, [&](devexit_device_id id) {
    return new HipQueue(id, api, DeviceArch(api, static_cast<int>(index)));
  });
}

}  // namespace devexit_hip
