#include "compiler.h"

#include <chrono>
#include <thread>

#include "builtins.h"

namespace devexit_cuda {

namespace {
const char kLabel[] = "cuda-host:0/compiler";
// What the NVRTC keepalive compiles: NVRTC reads its built-in headers out of libnvrtc-builtins at
// the start of every compile, then this source stops it (NVRTC_ERROR_COMPILATION, ignored). Every
// keepalive compile is that part of a compile, over and over.
const char kKeepaliveSource[] = "#error devexit keepalive: stop after the built-in headers\n";

devexit::CompileJob PollJob() {
  devexit::CompileJob job;
  job.kind = devexit::CompileJob::Kind::kPoll;
  return job;
}
}  // namespace

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

void Compiler::OnOpened() {
  if (keepalive_ != Keepalive::kNone) Submit(PollJob());
}

devexit::CompileOutput Compiler::Compile(devexit::CompileJob &job) {
  devexit::CompileOutput out;
  if (!nvrtc_) nvrtc_ = LoadNvrtc(&out.error);
  if (!nvrtc_) return out;
  CompileResult r = CompileToPtx(nvrtc_, job.source, job.name, job.options);
  Compiled();
  if (!job.builtin_arch.empty()) {
    BuiltinPtx b;
    b.ok = r.ok;
    b.ptx = r.ptx;
    b.error = r.error;
    b.name = r.name;
    StoreBuiltins(job.builtin_arch, b);
  }
  out.ok = r.ok;
  out.code = std::move(r.ptx);
  out.error = std::move(r.error);
  out.error_name = std::move(r.name);
  return out;
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
  Submit(PollJob());  // refused once the service stops accepting: the keepalive ends
}

devexit::ServiceRef<Compiler> OpenCompiler(Keepalive keepalive, uint32_t interval_us, int *status, std::string *error) {
  devexit::ServiceRef<Compiler> c = devexit::ServiceSlots<Compiler>::Get().Open(
      "cuda-host", 0, error, [&](devexit_device_id id) { return new Compiler(id, keepalive, interval_us); });
  if (!c) {
    *status = devexit::kStartFailed;
    return c;
  }
  *status = c->Open(error);
  if (*status != devexit::kOk) return {};
  return c;
}

devexit::ServiceRef<Compiler> RunningCompiler() { return devexit::ServiceSlots<Compiler>::Get().Current(0); }

}  // namespace devexit_cuda
