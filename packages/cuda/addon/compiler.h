// The NVRTC compiler service: one process-wide thread, registered once as cuda-host:0/compiler,
// so that no compile is still running when NVRTC's exit handlers unload its builtins. Needs no
// device.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda_api.h"
#include "devexit_service.hpp"
#include "devexit_sink.hpp"
#include "nvrtc_api.h"

namespace devexit_cuda {

struct CompileCommand {
  enum class Kind : uint8_t { kCompile, kKeepalive, kDrained };
  Kind kind = Kind::kCompile;
  std::string source, name;
  std::vector<std::string> options;
  std::string builtin_arch;  // non-empty: these are the built-in kernels for it; the result is cached
  double completion = 0;
  std::shared_ptr<devexit::CompletionSink> sink;
};

// A diagnostic keepalive for exit tests, off by default: while running, the thread keeps calling
// the runtime (a small NVRTC compile, or cuDeviceGetCount) so that a call is in flight whenever
// the process exits. It never holds the event loop open.
enum class Keepalive : int { kNone = 0, kNvrtc = 1, kCuda = 2 };

class Compiler : public devexit::ServiceThread<CompileCommand> {
 public:
  Compiler(devexit_device_id id, Keepalive keepalive, uint32_t interval_us)
      : id_(id), keepalive_(keepalive), interval_us_(interval_us) {}

  // Registers the exit close, then starts the thread (and the keepalive). devexit::Status.
  int Open(std::string *error);
  // The one close of exit layers, closeServices() and stopCompiler(): drops what is queued.
  int Close(const devexit::CloseContext &ctx, std::string *error);
  bool closed() { return close_.started(); }
  devexit_device_id id() const { return id_; }

  // devexit::kOk, or kClosed / kExiting when it does not accept work.
  int Enqueue(CompileCommand &&c);

  Keepalive keepalive() const { return keepalive_; }
  uint64_t compiles() const { return compiles_.load(std::memory_order_relaxed); }
  uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }
  CUresult last_poll() const { return last_poll_.load(std::memory_order_relaxed); }

 protected:
  bool OnStart(std::string *error) override;
  void Execute(CompileCommand &c) override;
  void OnDropped(CompileCommand &c, const devexit::CloseContext &ctx) override;
  void OnExecuteFailed(CompileCommand &c, const char *what) override;

 private:
  void Compile(CompileCommand &c);
  void Poll();
  void Compiled();  // counts a compile; the first one tells the registry

  const devexit_device_id id_;
  const Keepalive keepalive_;
  const uint32_t interval_us_;
  devexit::CloseOnce close_;
  const NvrtcApi *nvrtc_ = nullptr;  // set in OnStart when NVRTC loads
  const CudaApi *cuda_ = nullptr;    // set in OnStart for the cuda keepalive
  bool first_compile_ = true;
  bool cuda_gone_ = false;
  std::atomic<uint64_t> compiles_{0}, polls_{0};
  std::atomic<CUresult> last_poll_{CUDA_SUCCESS};
};

// The running compiler, or a new one (started, its close registered) when there is none or the
// last one closed. Returns nullptr with *status and *error when it cannot start.
Compiler *OpenCompiler(Keepalive keepalive, uint32_t interval_us, int *status, std::string *error);
// The compiler if one was started and has not closed, else nullptr.
Compiler *RunningCompiler();

}  // namespace devexit_cuda
