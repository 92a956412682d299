// The NVRTC compiler service: devexit's shared compiler service (devexit_compiler.hpp) whose
// compiles are NVRTC's, registered as cuda-host:0/compiler, so that no compile is still running
// when NVRTC's exit handlers unload its builtins. Needs no device.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "cuda_api.h"
#include "devexit_compiler.hpp"
#include "nvrtc_api.h"

namespace devexit_cuda {

// A diagnostic keepalive for exit tests, off by default: while running, the thread keeps calling
// the runtime (a small NVRTC compile, or cuDeviceGetCount) so that a call is in flight whenever
// the process exits. It never holds the event loop open.
enum class Keepalive : int { kNone = 0, kNvrtc = 1, kCuda = 2 };

class Compiler : public devexit::CompilerService {
 public:
  Compiler(devexit_device_id id, Keepalive keepalive, uint32_t interval_us)
      : CompilerService(id), keepalive_(keepalive), interval_us_(interval_us) {}

  Keepalive keepalive() const { return keepalive_; }
  uint64_t compiles() const { return compiles_.load(std::memory_order_relaxed); }
  uint64_t polls() const { return polls_.load(std::memory_order_relaxed); }
  CUresult last_poll() const { return last_poll_.load(std::memory_order_relaxed); }

 protected:
  bool OnStart(std::string *error) override;
  void OnOpened() override;
  devexit::CompileOutput Compile(devexit::CompileJob &job) override;
  void Poll() override;

 private:
  void Compiled();  // counts a compile; the first one tells the registry

  const Keepalive keepalive_;
  const uint32_t interval_us_;
  const NvrtcApi *nvrtc_ = nullptr;  // set in OnStart when NVRTC loads
  const CudaApi *cuda_ = nullptr;    // set in OnStart for the cuda keepalive
  bool first_compile_ = true;
  bool cuda_gone_ = false;
  std::atomic<uint64_t> compiles_{0}, polls_{0};
  std::atomic<CUresult> last_poll_{CUDA_SUCCESS};
};

// The running compiler, or a new one (started, its close registered) when there is none or the
// last one closed. Empty with *status and *error when it cannot start.
devexit::ServiceRef<Compiler> OpenCompiler(Keepalive keepalive, uint32_t interval_us, int *status, std::string *error);
// The compiler if one was started and has not closed, else empty.
devexit::ServiceRef<Compiler> RunningCompiler();

}  // namespace devexit_cuda
