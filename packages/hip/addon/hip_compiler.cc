#include "hip_compiler.h"

#include "hip_rtc.h"

namespace devexit_hip {

HipCompiler::State HipCompiler::state() const {
  State s;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    s = started_;
  }
  s.polls = polls_.load(std::memory_order_relaxed);
  return s;
}

bool HipCompiler::OnStart(std::string *) {
  // This thread may be the process's first HIP user: ROCm registers more teardown at hipInit.
  State s;
  s.init_status = api_->hipInit(0);
  if (const devexit_registry_v1 *reg = devexit::Registry()) reg->runtime_initialised("hip");
  s.count_status = api_->hipGetDeviceCount(&s.count);
  if (s.count_status != 0) s.count = 0;
  std::lock_guard<std::mutex> lock(state_mu_);
  started_ = s;
  return true;  // compiling for a named target needs no device
}

void HipCompiler::OnIdle() {
  int n = 0;
  api_->hipGetDeviceCount(&n);
  polls_.fetch_add(1, std::memory_order_relaxed);
}

devexit::CompileOutput HipCompiler::Compile(devexit::CompileJob &job) {
  if (job.device >= 0) api_->hipSetDevice(job.device);
  CompileResult r = devexit_hip::Compile(api_, job.source, job.name, job.options);
  devexit::CompileOutput out;
  out.ok = r.ok;
  out.code = std::move(r.code);
  out.error = std::move(r.error);
  out.error_name = std::move(r.name);
  return out;
}

devexit::ServiceRef<HipCompiler> TheCompiler(const HipApi *api, int64_t idle_poll_us, bool create, std::string *error) {
  auto &slots = devexit::ServiceSlots<HipCompiler>::Get();
  devexit::ServiceRef<HipCompiler> current = slots.Current(0);
  if (current || !create) return current;
  return slots.Open("hip-host", 0, error, [&](devexit_device_id id) { return new HipCompiler(id, api, idle_poll_us); });
}

}  // namespace devexit_hip
