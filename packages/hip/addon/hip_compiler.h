// The hiprtc compiler service: one process-wide thread, registered as hip-host:0/compiler (a
// pseudo-device: compiling needs no GPU), that compiles HIP C++ in submission order.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "devexit_service.hpp"
#include "devexit_sink.hpp"
#include "hip_api.h"

namespace devexit_hip {

struct CompileJob {
  std::string source, name;
  std::vector<std::string> options;
  int device = -1;  // >= 0: made current first (hiprtc's default target is the current device)
  double completion = 0;
  std::shared_ptr<devexit::CompletionSink> sink;
};

class HipCompiler : public devexit::ServiceThread<CompileJob> {
 public:
  // idle_poll_us >= 0 is the diagnostic keepalive: while idle, call hipGetDeviceCount that often.
  HipCompiler(devexit_device_id id, const HipApi *api, int64_t idle_poll_us)
      : id_(id), api_(api), idle_poll_us_(idle_poll_us) {}

  devexit_device_id id() const { return id_; }

  // Registers the exit close, then starts the thread. devexit::kOk, kClosed, kExiting, or
  // kStartFailed with *error.
  int Open(std::string *error);
  // The one close (exit layers, closeServices(), stopCompiler()): drops queued compiles, lets
  // the running one finish, joins; bounded by ctx.deadline_ns.
  int Close(const devexit::CloseContext &ctx, std::string *error);
  bool closed() { return close_.started(); }
  int Enqueue(CompileJob &&job);

  struct State {
    hipError_t init_status = 0, count_status = 0;
    int count = 0;
    uint64_t polls = 0;
  };
  // What the thread's own HIP initialisation returned, and idle polls so far.
  State state() const;

 protected:
  bool OnStart(std::string *error) override;
  void Execute(CompileJob &job) override;
  void OnExecuteFailed(CompileJob &job, const char *what) override;
  void OnDropped(CompileJob &job, const devexit::CloseContext &ctx) override;
  int64_t IdleIntervalUs() override { return idle_poll_us_; }
  void OnIdle() override;

 private:
  const devexit_device_id id_;
  const HipApi *api_;
  const int64_t idle_poll_us_;
  std::mutex open_mu_;
  bool opened_ = false;
  devexit::CloseOnce close_;
  mutable std::mutex state_mu_;
  State started_;  // by OnStart
  std::atomic<uint64_t> polls_{0};
};

// The process-wide compiler: the current one, or (create) a new one when there is none or the
// last one closed. nullptr with *error when the registry is missing.
HipCompiler *TheCompiler(const HipApi *api, int64_t idle_poll_us, bool create, std::string *error);

}  // namespace devexit_hip
