#include "compiler.h"

#include <chrono>
#include <mutex>
#include <thread>

#include "builtins.h"

namespace devexit_cuda {

namespace {
const char kLabel[] = "cuda-host:0/compiler";
// What the NVRTC keepalive compiles: NVRTC reads its built-in headers out of libnvrtc-builtins at
// the start of every compile, then this source stops it (NVRTC_ERROR_COMPILATION, ignored). Every
// keepalive compile is that part of a compile, over and over.
const char kKeepaliveSource[] = "#error devexit keepalive: stop after the built-in headers\n";
}  // namespace

int Compiler::Open(std::string *error) {
  const devexit_registry_v1 *reg = devexit::Registry(error);
  if (!reg) return devexit::kStartFailed;
  if (reg->is_exiting()) return devexit::kExiting;
  // Registered before the thread starts: an exit from now on closes it.
  int rc = devexit::RegisterClose(id_, "compiler", this);
  if (rc == DEVEXIT_ERR_EXITING) return devexit::kExiting;
  if (rc < 0) {
    *error = "the registry refused the close (status " + std::to_string(rc) + ")";
    return devexit::kStartFailed;
  }
  if (!Start(error)) {
    reg->forget(id_, "compiler");
    if (close_.started()) return reg->is_exiting() ? devexit::kExiting : devexit::kClosed;
    return devexit::kStartFailed;
  }
  if (keepalive_ != Keepalive::kNone) {
    CompileCommand c;
    c.kind = CompileCommand::Kind::kKeepalive;
    Submit(std::move(c));
  }
  return devexit::kOk;
}

int Compiler::Close(const devexit::CloseContext &ctx, std::string *error) {
  return close_.Run(ctx.deadline_ns, error, [&](std::string *why) {
    size_t dropped = 0;
    // shutdown(): the compiles queued so far run first (bounded by its drain deadline).
    bool joined = ctx.finish ? Finish(ctx, why, &dropped) : Stop(devexit::StopMode::kDrop, ctx, why);
    if (ctx.js_alive) devexit::Realms::Get().NotifyClosed(id_.index, "compiler", true);
    if (joined && ctx.finish && ctx.note)
      *ctx.note = dropped ? DEVEXIT_NOTE_DROPPED + std::to_string(dropped) : DEVEXIT_NOTE_DRAINED;
    return joined ? 0 : 1;
  });
}

int Compiler::Enqueue(CompileCommand &&c) {
  if (Submit(std::move(c)) == devexit::kOk) return devexit::kOk;
  return devexit::ProcessExiting() ? devexit::kExiting : devexit::kClosed;
}

bool Compiler::OnStart(std::string *error) {
  std::string why;
  nvrtc_ = LoadNvrtc(&why);
  if (keepalive_ == Keepalive::kNvrtc && !nvrtc_) {
    *error = why;
    return false;
  }
  if (keepalive_ == Keepalive::kCuda) {
    cuda_ = LoadCuda(&why);
    if (!cuda_) {
      *error = why;
      return false;
    }
    InitCuda(cuda_);  // this thread may be the process's first CUDA user
  }
  return true;
}

void Compiler::Execute(CompileCommand &c) {
  switch (c.kind) {
    case CompileCommand::Kind::kCompile:
      Compile(c);
      break;
    case CompileCommand::Kind::kKeepalive:
      Poll();
      break;
    case CompileCommand::Kind::kDrained: {
      auto *out = new devexit::Completion();
      out->id = c.completion;
      if (c.sink) c.sink->Deliver(out, closing_with_js());
      else delete out;
      break;
    }
  }
}

void Compiler::Compile(CompileCommand &c) {
  auto *out = new devexit::Completion();
  out->id = c.completion;
  std::string why;
  if (!nvrtc_) nvrtc_ = LoadNvrtc(&why);
  if (!nvrtc_) {
    out->status = devexit::kVendorError;
    out->error = why;
  } else {
    const int64_t start = devexit::MonotonicNs();
    CompileResult r = CompileToPtx(nvrtc_, c.source, c.name, c.options);
    Compiled();
    out->value = static_cast<double>(devexit::MonotonicNs() - start) / 1e6;
    if (!c.builtin_arch.empty()) {
      BuiltinPtx b;
      b.ok = r.ok;
      b.ptx = r.ptx;
      b.error = r.error;
      b.name = r.name;
      StoreBuiltins(c.builtin_arch, b);
    }
    if (r.ok) {
      out->has_data = true;
      out->data.assign(r.ptx.begin(), r.ptx.end());
    } else {
      out->status = devexit::kVendorError;
      out->error = r.error;
      out->error_name = r.name;
    }
  }
  if (c.sink) c.sink->Deliver(out, closing_with_js());
  else delete out;
}

void Compiler::Compiled() {
  compiles_.fetch_add(1, std::memory_order_relaxed);
  if (!first_compile_) return;
  first_compile_ = false;
  // NVRTC loads libnvrtc-builtins, and registers more exit handlers, at its first compile.
  if (const devexit_registry_v1 *reg = devexit::Registry()) reg->runtime_initialised("nvrtc-builtins");
}

void Compiler::Poll() {
  if (keepalive_ == Keepalive::kNvrtc) {
    CompileToPtx(nvrtc_, kKeepaliveSource, "devexit_keepalive.cu", {"--gpu-architecture=compute_52"});
    Compiled();
  } else if (!cuda_gone_) {
    int count = 0;
    CUresult r = cuda_->cuDeviceGetCount(&count);
    last_poll_.store(r, std::memory_order_relaxed);
    cuda_gone_ = RuntimeGone(r, kLabel, "cuDeviceGetCount");
  }
  polls_.fetch_add(1, std::memory_order_relaxed);
  if (cuda_gone_) return;  // libcuda is gone: nothing left to keep calling
  for (uint32_t slept = 0; slept < interval_us_ && !dropping(); slept += 1000)
    std::this_thread::sleep_for(std::chrono::microseconds(interval_us_ - slept < 1000 ? interval_us_ - slept : 1000));
  CompileCommand next;
  next.kind = CompileCommand::Kind::kKeepalive;
  Submit(std::move(next));  // refused once the service stops accepting: the keepalive ends
}

void Compiler::OnDropped(CompileCommand &c, const devexit::CloseContext &ctx) {
  if (!ctx.js_alive || !c.sink || c.completion == 0) return;
  auto *out = new devexit::Completion();
  out->id = c.completion;
  out->status = devexit::kClosed;
  out->error = "the compiler closed before this compile ran";
  c.sink->Deliver(out, true);
}

void Compiler::OnExecuteFailed(CompileCommand &c, const char *what) {
  if (!c.sink || c.completion == 0) return;
  auto *out = new devexit::Completion();
  out->id = c.completion;
  out->status = devexit::kOutOfRange;
  out->error = std::string("out of memory: ") + what;
  c.sink->Deliver(out);
}

namespace {
struct Slot {
  std::mutex mu;
  Compiler *compiler = nullptr;
};
Slot &TheSlot() {
  static Slot &s = *new Slot();  // never destroyed; a closed compiler stays allocated too
  return s;
}
}  // namespace

Compiler *OpenCompiler(Keepalive keepalive, uint32_t interval_us, int *status, std::string *error) {
  Slot &s = TheSlot();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.compiler && !s.compiler->closed()) {
    *status = devexit::kOk;
    return s.compiler;
  }
  const devexit_registry_v1 *reg = devexit::Registry(error);
  if (!reg) {
    *status = devexit::kStartFailed;
    return nullptr;
  }
  int type = reg->device_type("cuda-host");
  if (type <= 0) {
    *status = devexit::kStartFailed;
    *error = "device_type(\"cuda-host\") failed with status " + std::to_string(type);
    return nullptr;
  }
  devexit_device_id id;
  id.type = static_cast<uint16_t>(type);
  id.index = 0;
  auto *c = new Compiler(id, keepalive, interval_us);  // lives for the process
  *status = c->Open(error);
  // Not started: it stays allocated all the same (an exit close may have taken it meanwhile).
  if (*status != devexit::kOk) return nullptr;
  s.compiler = c;
  return c;
}

Compiler *RunningCompiler() {
  Slot &s = TheSlot();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.compiler && !s.compiler->closed() ? s.compiler : nullptr;
}

}  // namespace devexit_cuda
