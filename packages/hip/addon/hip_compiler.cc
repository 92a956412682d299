#include "hip_compiler.h"

#include "hip_rtc.h"

namespace devexit_hip {

int HipCompiler::Open(std::string *error) {
  std::lock_guard<std::mutex> lock(open_mu_);
  if (opened_) return accepting() ? devexit::kOk : devexit::kClosed;
  if (close_.started()) return devexit::kClosed;
  const devexit_registry_v1 *reg = devexit::Registry(error);
  if (!reg) return devexit::kStartFailed;
  if (reg->is_exiting()) return devexit::kExiting;
  // Registered before the thread starts: an exit from now on closes it.
  int rc = devexit::RegisterClose(id_, "compiler", this);
  if (rc == DEVEXIT_ERR_EXITING) return devexit::kExiting;
  if (rc < 0) {
    if (error) *error = "the registry refused the close (status " + std::to_string(rc) + ")";
    return devexit::kStartFailed;
  }
  if (!Start(error)) {
    // Not when a close took the registration meanwhile: the key may be the next compiler's.
    close_.IfNotStarted([&] { reg->forget(id_, "compiler"); });
    if (close_.started()) return reg->is_exiting() ? devexit::kExiting : devexit::kClosed;
    return devexit::kStartFailed;
  }
  opened_ = true;
  return devexit::kOk;
}

int HipCompiler::Close(const devexit::CloseContext &ctx, std::string *error) {
  return close_.Run(ctx.deadline_ns, error, [&](std::string *why) {
    size_t dropped = 0;
    // shutdown(): the compiles queued so far run first (bounded by its drain deadline).
    bool joined = ctx.finish ? Finish(ctx, why, &dropped) : Stop(devexit::StopMode::kDrop, ctx, why);
    if (joined && ctx.finish && ctx.note)
      *ctx.note = dropped ? DEVEXIT_NOTE_DROPPED + std::to_string(dropped) : DEVEXIT_NOTE_DRAINED;
    return joined ? 0 : 1;
  });
}

int HipCompiler::Enqueue(CompileJob &&job) {
  if (Submit(std::move(job)) == devexit::kOk) return devexit::kOk;
  return devexit::ProcessExiting() ? devexit::kExiting : devexit::kClosed;
}

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

void HipCompiler::Execute(CompileJob &job) {
  if (job.device >= 0) api_->hipSetDevice(job.device);
  CompileResult r = Compile(api_, job.source, job.name, job.options);
  auto *out = new devexit::Completion();
  out->id = job.completion;
  if (r.ok) {
    out->has_data = true;
    out->data.assign(r.code.begin(), r.code.end());
  } else {
    out->status = devexit::kVendorError;
    out->error = r.error;
    out->error_name = r.name;
  }
  if (job.sink) job.sink->Deliver(out, closing_with_js());
  else delete out;
}

void HipCompiler::OnExecuteFailed(CompileJob &job, const char *what) {
  if (!job.sink) return;
  auto *out = new devexit::Completion();
  out->id = job.completion;
  out->status = devexit::kOutOfRange;
  out->error = std::string("out of memory: ") + what;
  job.sink->Deliver(out);
}

void HipCompiler::OnDropped(CompileJob &job, const devexit::CloseContext &ctx) {
  if (!ctx.js_alive || !job.sink) return;
  auto *out = new devexit::Completion();
  out->id = job.completion;
  out->status = devexit::kClosed;
  out->error = "the hiprtc compiler closed before this compile ran";
  job.sink->Deliver(out, true);
}

namespace {
struct Slot {
  std::mutex mu;
  HipCompiler *compiler = nullptr;
};
Slot &TheSlot() {
  static Slot &slot = *new Slot();  // never destroyed: exit layers may still reach the compiler
  return slot;
}
}  // namespace

HipCompiler *TheCompiler(const HipApi *api, int64_t idle_poll_us, bool create, std::string *error) {
  Slot &slot = TheSlot();
  std::lock_guard<std::mutex> lock(slot.mu);
  if (!create || (slot.compiler && !slot.compiler->closed())) return slot.compiler;
  const devexit_registry_v1 *reg = devexit::Registry(error);
  if (!reg) return nullptr;
  int type = reg->device_type("hip-host");
  if (type <= 0) {
    if (error) *error = "device_type(\"hip-host\") failed with status " + std::to_string(type);
    return nullptr;
  }
  devexit_device_id id;
  id.type = static_cast<uint16_t>(type);
  id.index = 0;
  // A closed one stays allocated (never destroyed): the registry may still point to it.
  slot.compiler = new HipCompiler(id, api, idle_poll_us);
  return slot.compiler;
}

}  // namespace devexit_hip
