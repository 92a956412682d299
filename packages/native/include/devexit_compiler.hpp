// devexit_compiler.hpp — the compiler service of devexit's GPU backends (C++17, header-only, on
// devexit_service_base.hpp): one process-wide thread per backend, registered as
// "<type>-host:0/compiler" (compiling needs no device), that compiles in submission order. The
// backend supplies Compile() (its NVRTC or hiprtc calls) and, for a diagnostic keepalive, Poll().
// Its stop rule is every service's (devexit_service.hpp, CloseContext): an explicit stop
// finishes the queued compiles, an exit drops them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devexit_service_base.hpp"
#include "devexit_sink.hpp"

namespace devexit {

struct CompileJob {
  enum class Kind : uint8_t { kCompile, kPoll, kDrained };
  Kind kind = Kind::kCompile;
  std::string source, name;
  std::vector<std::string> options;
  int device = -1;           // >= 0: the device to compile for (made current first)
  std::string builtin_arch;  // non-empty: the built-in kernels for this target (the result is cached)
  double completion = 0;
  std::shared_ptr<CompletionSink> sink;
};

// What a compile gives back: the code (PTX, a code object) or why not.
struct CompileOutput {
  bool ok = false;
  std::string code;
  std::string error, error_name;
};

class CompilerService : public Service<CompileJob> {
 public:
  explicit CompilerService(devexit_device_id id) : Service(id, "compiler") {}

  // Stops accepting and queues a marker whose completion (id) settles once every compile queued
  // before it ran: JS awaits it before it closes, so that nothing waits on the JS thread.
  bool Drain(double completion, std::shared_ptr<CompletionSink> sink) {
    CompileJob marker;
    marker.kind = CompileJob::Kind::kDrained;
    marker.completion = completion;
    marker.sink = std::move(sink);
    return StopAccepting(std::move(marker));
  }

 protected:
  // On the service thread: one compile (its milliseconds go back with it, as the value).
  virtual CompileOutput Compile(CompileJob &job) = 0;
  // On the service thread: one keepalive poll (queue the next with Submit, or not).
  virtual void Poll() {}

  void Execute(CompileJob &job) override {
    switch (job.kind) {
      case CompileJob::Kind::kCompile: {
        auto *out = new Completion();
        out->id = job.completion;
        const int64_t start = MonotonicNs();
        CompileOutput r = Compile(job);
        out->value = static_cast<double>(MonotonicNs() - start) / 1e6;
        if (r.ok) {
          out->has_data = true;
          out->data.assign(r.code.begin(), r.code.end());
        } else {
          out->status = kVendorError;
          out->error = r.error;
          out->error_name = r.error_name;
        }
        Answer(job, out);
        break;
      }
      case CompileJob::Kind::kPoll:
        Poll();
        break;
      case CompileJob::Kind::kDrained:
        Answer(job, new Completion());
        break;
    }
  }

  void OnExecuteFailed(CompileJob &job, const char *what) override {
    auto *out = new Completion();
    out->status = kOutOfRange;
    out->error = std::string("out of memory: ") + what;
    Answer(job, out);
  }

  const char *DroppedMessage() const override { return "the compiler closed before this compile ran"; }

 private:
  void Answer(CompileJob &job, Completion *out) {
    out->id = job.completion;
    if (job.sink && job.completion != 0) job.sink->Deliver(out, closing_with_js());
    else delete out;
  }
};

}  // namespace devexit
