// The hiprtc compiler service: devexit's shared compiler service (devexit_compiler.hpp) whose
// compiles are hiprtc's, registered as hip-host:0/compiler (a pseudo-device: compiling needs no
// GPU).
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "devexit_compiler.hpp"
#include "hip_api.h"

namespace devexit_hip {

class HipCompiler : public devexit::CompilerService {
 public:
  // idle_poll_us >= 0 is the diagnostic keepalive: while idle, call hipGetDeviceCount that often.
  HipCompiler(devexit_device_id id, const HipApi *api, int64_t idle_poll_us)
      : CompilerService(id), api_(api), idle_poll_us_(idle_poll_us) {}

  struct State {
    hipError_t init_status = 0, count_status = 0;
    int count = 0;
    uint64_t polls = 0;
  };
  // What the thread's own HIP initialisation returned, and idle polls so far.
  State state() const;

 protected:
  bool OnStart(std::string *error) override;
  devexit::CompileOutput Compile(devexit::CompileJob &job) override;
  int64_t IdleIntervalUs() override { return idle_poll_us_; }
  void OnIdle() override;

 private:
  const HipApi *api_;
  const int64_t idle_poll_us_;
  mutable std::mutex state_mu_;
  State started_;  // by OnStart
  std::atomic<uint64_t> polls_{0};
};

// The process-wide compiler: the current one, or (create) a new one when there is none or the
// last one closed or failed to start. Empty with *error when the registry is missing.
devexit::ServiceRef<HipCompiler> TheCompiler(const HipApi *api, int64_t idle_poll_us, bool create, std::string *error);

}  // namespace devexit_hip
