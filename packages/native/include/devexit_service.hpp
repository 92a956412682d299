// devexit_service.hpp — the shared runtime of every native devexit backend (C++17, header-only).
//
// A device service is a thread that owns a command queue and runs the backend's Execute() on each
// command, in order. This header gives every backend (ours and third-party addons) the same
// service thread, the same close-once, and the same finish-or-drop rules, so that a backend is
// its vendor calls plus Execute():
//
//   class MyQueue : public devexit::ServiceThread<MyCommand> {
//     bool OnStart(std::string *error) override;   // on the thread: init the runtime, a stream
//     void Execute(MyCommand &c) override;         // on the thread: one command
//     void OnStop() override;                      // on the thread: sync, free, release
//   };
//
// The invariant: nothing that a running or queued command may touch is released until the
// service thread has stopped running commands. Dropping discards queued commands without
// executing them (frees included); what they referred to is released by OnStop(), after the last
// command and on the service thread, and the dropped commands themselves are destroyed after the
// join. A stop that misses its deadline releases nothing.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "devexit.h"
#include "devexit_protocol.hpp"

namespace devexit {

// CLOCK_MONOTONIC nanoseconds, the clock of every deadline in devexit.h.
inline int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The process-wide registry, looked up once per addon. nullptr (and *error, when given) if
// @devexit/native is not loaded or is older than this header's ABI.
inline const devexit_registry_v1 *Registry(std::string *error = nullptr) {
  struct Lookup {
    std::mutex mu;
    const devexit_registry_v1 *reg = nullptr;
    std::string error;
  };
  static Lookup &lookup = *new Lookup();  // never destroyed: exit layers may call in late
  std::lock_guard<std::mutex> lock(lookup.mu);
  if (!lookup.reg) {
    char err[512] = {0};
    const devexit_registry_v1 *reg = nullptr;
    if (devexit_find_registry(DEVEXIT_ABI_VERSION, &reg, err, sizeof err) >= 0 && reg) {
      lookup.reg = reg;
    } else {
      lookup.error = err;
    }
  }
  if (!lookup.reg && error) *error = lookup.error;
  return lookup.reg;
}

inline bool ProcessExiting() {
  const devexit_registry_v1 *reg = Registry();
  return reg && reg->is_exiting();
}

// What a close is told: by the registry at exit or for closeServices(), or by the backend itself
// for an explicit device.close().
struct CloseContext {
  int64_t deadline_ns = 0;
  // closeServices(), device.close() or shutdown(), with the JS thread alive: dropped work may be
  // settled (its promises rejected) through completion sinks. At exit nothing may call into JS.
  bool js_alive = false;
  const char *layer = "explicit";
  // shutdown() (the "shutdown" layer): finish queued work until drain_deadline_ns, then drop
  // what is left and close by deadline_ns. What the drain did goes to *note ("drained",
  // "dropped 37"), for the report.
  bool finish = false;
  int64_t drain_deadline_ns = 0;
  std::string *note = nullptr;

  static CloseContext FromCall(const devexit_close_call_v1 *call) {
    CloseContext ctx;
    ctx.deadline_ns = call->deadline_ns;
    ctx.layer = call->layer ? call->layer : "unknown";
    ctx.js_alive = call->layer && std::strcmp(call->layer, "explicit") == 0;
    if (call->layer && std::strcmp(call->layer, DEVEXIT_LAYER_SHUTDOWN) == 0) {
      ctx.js_alive = true;
      ctx.finish = true;
      ctx.drain_deadline_ns = call->deadline_ns;
      // What is left at the drain's end is closed as at exit: within the timeout from then.
      const devexit_registry_v1 *reg = Registry();
      const int64_t timeout_ns = reg ? reg->close_deadline_ns() - MonotonicNs() : int64_t{3000} * 1000000;
      ctx.deadline_ns = call->deadline_ns > INT64_MAX - timeout_ns ? INT64_MAX : call->deadline_ns + timeout_ns;
    }
    return ctx;
  }

  // An explicit close by the service's owner (device.close(), stopCompiler()), bounded by the
  // registry's one deadline setting. The stop rule of every service: an explicit close finishes
  // what is queued (until the deadline: what still waits then is dropped, rejected as closed);
  // an exit drops it; shutdown() finishes it until its drain deadline.
  static CloseContext Explicit() {
    CloseContext ctx;
    const devexit_registry_v1 *reg = Registry();
    ctx.deadline_ns = reg ? reg->close_deadline_ns() : MonotonicNs() + int64_t{3000} * 1000000;
    ctx.js_alive = true;
    ctx.layer = "explicit";
    ctx.finish = true;
    ctx.drain_deadline_ns = ctx.deadline_ns;
    return ctx;
  }
};

// Runs a close exactly once, whoever asks first: an explicit close and the exit close may race
// from two threads. A second caller waits for the first (up to its own deadline) and gets its
// result; later callers get it at once.
class CloseOnce {
 public:
  // fn() returns 0 on success; anything else is a failure described in *error.
  template <typename Fn>
  int Run(int64_t deadline_ns, std::string *error, Fn &&fn) {
    std::unique_lock<std::mutex> lock(mu_);
    if (state_ == kOpen) {
      state_ = kClosing;
      lock.unlock();
      std::string why;
      int rc = fn(&why);
      lock.lock();
      rc_ = rc;
      error_ = why;
      state_ = kClosed;
      cv_.notify_all();
    } else if (state_ == kClosing) {
      auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
      if (!cv_.wait_until(lock, deadline, [this] { return state_ == kClosed; })) {
        if (error) *error = "the other close of this service was still running at the deadline";
        return 1;
      }
    }
    if (rc_ != 0 && error) *error = error_;
    return rc_;
  }

  bool started() {
    std::lock_guard<std::mutex> lock(mu_);
    return state_ != kOpen;
  }

  // Runs fn() only while no close has begun, and no close begins while it runs. For undoing a
  // registration after a failed start: once a close began, the registry took that registration
  // and its key may already be the next service's.
  template <typename Fn>
  bool IfNotStarted(Fn &&fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != kOpen) return false;
    fn();
    return true;
  }

 private:
  enum State { kOpen, kClosing, kClosed };
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = kOpen;
  int rc_ = 0;
  std::string error_;
};

enum class StopMode {
  kFinish,  // run every queued command, then stop
  kDrop,    // stop after the running command; queued ones are never executed
};

// A thread that owns a command queue. Heap-hold it for the life of the process (the registry
// keeps a pointer for the exit close); it is never destroyed while its thread may run.
template <typename Command>
class ServiceThread {
 public:
  ServiceThread() = default;
  ServiceThread(const ServiceThread &) = delete;
  ServiceThread &operator=(const ServiceThread &) = delete;
  virtual ~ServiceThread() = default;

  // Starts the thread and waits until OnStart() returned on it. false (and *error) if no thread
  // could start or OnStart failed; the thread has then ended and been joined. Idempotent.
  bool Start(std::string *error) {
    std::unique_lock<std::mutex> lock(mu_);
    if (phase_ == kRunning) return true;
    if (phase_ != kIdle) {
      if (error) *error = start_error_.empty() ? "the service is closed" : start_error_;
      return false;
    }
    phase_ = kStarting;
    try {
      thread_.reset(new std::thread([this] { Main(); }));
    } catch (const std::exception &e) {
      phase_ = kStopped;
      start_error_ = std::string("cannot start the service thread: ") + e.what();
      if (error) *error = start_error_;
      return false;
    }
    done_cv_.wait(lock, [this] { return phase_ != kStarting; });
    if (phase_ == kRunning) return true;
    lock.unlock();
    Join();
    if (error) *error = start_error_;
    return false;
  }

  // Enqueues one command: kOk, or kClosed when the service does not accept work (not started,
  // stopping, stopped). Any thread.
  int Submit(Command &&c) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!accepting_) return kClosed;
      queue_.push_back(std::move(c));
      wake = idle_;
    }
    if (wake) work_cv_.notify_one();
    return kOk;
  }

  // Enqueues several commands at once, in order, all or none.
  int SubmitAll(std::vector<Command> &batch) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!accepting_) return kClosed;
      for (Command &c : batch) queue_.push_back(std::move(c));
      wake = idle_;
    }
    batch.clear();
    if (wake) work_cv_.notify_one();
    return kOk;
  }

  // Stops accepting work and enqueues `last` after everything queued (a drain marker whose
  // completion tells JS that the queue finished). false if the service was not accepting.
  bool StopAccepting(Command &&last) {
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!accepting_) return false;
      accepting_ = false;
      queue_.push_back(std::move(last));
      wake = idle_;
    }
    if (wake) work_cv_.notify_one();
    return true;
  }

  // Stops the service: finish or drop what is queued, then OnStop() on the service thread, then
  // join. Never call it on the service thread. Returns true once the thread has been joined (or
  // never started); false, with *error, when it was still running a command at ctx.deadline_ns:
  // then nothing was released and the thread runs on (a later Stop may join it).
  bool Stop(StopMode mode, const CloseContext &ctx, std::string *error, size_t *dropped_count = nullptr) {
    std::vector<Command> dropped;
    if (ctx.js_alive) closing_with_js_.store(true, std::memory_order_release);
    {
      std::unique_lock<std::mutex> lock(mu_);
      accepting_ = false;
      if (phase_ == kIdle) phase_ = kStopped;  // never started: nothing runs, nothing to release
      if (phase_ == kStopped && !thread_) return true;
      if (mode == StopMode::kDrop) {
        drop_.store(true, std::memory_order_release);
        for (Command &c : queue_) dropped.push_back(std::move(c));
        queue_.clear();
      }
      stop_ = true;
      // Woken with the lock released, the thread runs at once instead of waking into a held
      // lock and sleeping again: one wake-up of an idle service, not two.
      lock.unlock();
      work_cv_.notify_all();
      lock.lock();
      auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ctx.deadline_ns));
      if (!done_cv_.wait_until(lock, deadline, [this] { return phase_ == kStopped; })) {
        // Keep the dropped commands for the caller that finally joins: they may refer to what
        // the running command uses.
        for (Command &c : dropped) dropped_.push_back(std::move(c));
        if (error) *error = "the service thread was still running a command at the deadline";
        return false;
      }
      for (Command &c : dropped_) dropped.push_back(std::move(c));
      dropped_.clear();
      for (Command &c : running_rest_) dropped.push_back(std::move(c));
      running_rest_.clear();
    }
    Join();
    if (dropped_count) {
      // In commands as the application made them: a queued batch counts what it holds, and the
      // one the thread was running when the drop came counts what it did not reach.
      size_t n = cut_short_.exchange(0, std::memory_order_acq_rel);
      for (const Command &c : dropped) n += CommandsIn(c);
      *dropped_count = n;
    }
    for (Command &c : dropped) OnDropped(c, ctx);
    return true;  // `dropped` is destroyed here, after the join
  }

  // The graceful stop of shutdown() (ctx.finish): runs what is queued until
  // ctx.drain_deadline_ns, or until the process begins exiting for real (is_exiting(): an exit,
  // a second signal, shutdown({ drain: false })), then stops as Stop(kDrop, ctx) does.
  // *dropped_count: the queued commands dropped then (0: everything ran). Never call it on the
  // service thread.
  bool Finish(const CloseContext &ctx, std::string *error, size_t *dropped_count) {
    if (ctx.js_alive) closing_with_js_.store(true, std::memory_order_release);
    {
      std::unique_lock<std::mutex> lock(mu_);
      accepting_ = false;
      if (phase_ != kIdle && phase_ != kStopped) {
        stop_ = true;  // not a drop: the thread runs the queue empty, then stops
        work_cv_.notify_all();
        // Polls is_exiting(): the registry cannot reach this object to cut the drain short.
        constexpr int64_t kPollNs = 2000000;
        while (phase_ != kStopped && !ProcessExiting()) {
          const int64_t left = ctx.drain_deadline_ns - MonotonicNs();
          if (left <= 0) break;
          done_cv_.wait_for(lock, std::chrono::nanoseconds(left < kPollNs ? left : kPollNs));
        }
      }
    }
    return Stop(StopMode::kDrop, ctx, error, dropped_count);
  }

  bool accepting() {
    std::lock_guard<std::mutex> lock(mu_);
    return accepting_;
  }

  // True when no thread runs and none will: never started, or stopped and joined. Only then may
  // the object be freed.
  bool Joined() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (phase_ != kIdle && phase_ != kStopped) return false;
    }
    std::lock_guard<std::mutex> lock(join_mu_);
    return !thread_ || !thread_->joinable();
  }

  // True on the service thread itself (a close must never run there).
  bool OnServiceThread() const { return thread_ && std::this_thread::get_id() == thread_->get_id(); }

 protected:
  // On the service thread, before the first command. false (and *error) refuses the start;
  // OnStop() is then not called, so release what a failed start acquired before returning.
  virtual bool OnStart(std::string *error) { return true; }
  // On the service thread: one command, in submission order.
  virtual void Execute(Command &c) = 0;
  // On the service thread after the last command ran (finish) or the running one ended (drop):
  // synchronize the device and release what the commands used.
  virtual void OnStop() {}
  // On the closing thread, after the join: a command that was never executed. Settle its
  // promise if ctx.js_alive; its memory goes with it.
  virtual void OnDropped(Command &c, const CloseContext &ctx) {}

  // How many of the application's commands `c` holds (a batch: several), for a drop's count.
  virtual size_t CommandsIn(const Command &c) const { return 1; }
  // On the service thread: a command that stopped early for a drop (dropping()) says how many of
  // the commands it holds it did not run; the close's dropped count includes them.
  void CutShort(size_t commands) { cut_short_.fetch_add(commands, std::memory_order_acq_rel); }

  // On the service thread: Execute threw (out of memory, most likely). The queue goes on.
  virtual void OnExecuteFailed(Command &c, const char *what) {}

  // Work while idle (a keepalive, a watchdog): when IdleIntervalUs() >= 0, the thread calls
  // OnIdle() each time it waited that long with nothing queued. Never while a stop is pending.
  virtual int64_t IdleIntervalUs() { return -1; }
  virtual void OnIdle() {}

  // True once a drop was asked for: a long command may check it to end early.
  bool dropping() const { return drop_.load(std::memory_order_acquire); }

  // True once a close with JS alive (explicit, shutdown) began: completions of the commands it
  // still runs or drops go to JS even if the process began exiting meanwhile, since the closing
  // JS thread waits for this close (pass it to CompletionSink::Deliver).
  bool closing_with_js() const { return closing_with_js_.load(std::memory_order_acquire); }

 private:
  enum Phase { kIdle, kStarting, kRunning, kStopped };

  // Start (after a failed OnStart) and Stop may both want to join: joining twice is undefined.
  void Join() {
    std::lock_guard<std::mutex> lock(join_mu_);
    if (thread_ && thread_->joinable()) thread_->join();
  }

  void Main() {
    std::string error;
    bool ok = false;
    try {
      ok = OnStart(&error);
    } catch (const std::exception &e) {
      error = e.what();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ok) {
        phase_ = kRunning;
        accepting_ = !stop_;
      } else {
        start_error_ = error.empty() ? "the service failed to start" : error;
        phase_ = kStopped;
      }
    }
    done_cv_.notify_all();
    if (!ok) return;

    std::vector<Command> batch;
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t idle_us = IdleIntervalUs();
    for (;;) {
      idle_ = true;
      auto ready = [this] { return stop_ || !queue_.empty(); };
      if (idle_us < 0) {
        work_cv_.wait(lock, ready);
      } else if (!work_cv_.wait_for(lock, std::chrono::microseconds(idle_us), ready)) {
        idle_ = false;
        lock.unlock();
        try {
          OnIdle();
        } catch (const std::exception &) {
          // the idle task's own failure: the service goes on
        }
        lock.lock();
        continue;
      }
      idle_ = false;
      if (queue_.empty() || drop_.load(std::memory_order_relaxed)) break;  // stop: finished or dropping
      batch.swap(queue_);
      lock.unlock();
      size_t i = 0;
      for (; i < batch.size(); i++) {
        if (drop_.load(std::memory_order_acquire)) break;
        try {
          Execute(batch[i]);
        } catch (const std::exception &e) {
          OnExecuteFailed(batch[i], e.what());
        }
      }
      lock.lock();
      // A drop that arrived mid-batch: the rest of the batch is dropped, never executed.
      for (; i < batch.size(); i++) running_rest_.push_back(std::move(batch[i]));
      batch.clear();
    }
    lock.unlock();
    OnStop();
    lock.lock();
    phase_ = kStopped;
    lock.unlock();
    done_cv_.notify_all();
  }

  std::mutex mu_;
  std::mutex join_mu_;
  std::condition_variable work_cv_;  // work or stop, for the service thread
  std::condition_variable done_cv_;  // started or stopped, for Start and Stop
  std::vector<Command> queue_;
  std::vector<Command> dropped_;       // dropped by a Stop that missed its deadline
  std::vector<Command> running_rest_;  // the rest of the batch the thread held when a drop came
  Phase phase_ = kIdle;
  bool accepting_ = false;
  bool stop_ = false;
  bool idle_ = false;
  std::atomic<bool> drop_{false};
  std::atomic<size_t> cut_short_{0};
  std::atomic<bool> closing_with_js_{false};
  std::string start_error_;
  std::unique_ptr<std::thread> thread_;
};

// Registers target->Close(ctx, &error) as the exit close of (device, service). T needs
// `int Close(const CloseContext &, std::string *error)` (0 on success); it must outlive the
// process. Returns the registry's status (DEVEXIT_OK, DEVEXIT_ALREADY_REGISTERED, < 0 refused).
template <typename T>
int RegisterClose(devexit_device_id device, const char *service, T *target) {
  const devexit_registry_v1 *reg = Registry();
  if (!reg) return DEVEXIT_ERR_NOT_LOADED;
  auto close = [](void *ctx, const devexit_close_call_v1 *call) -> int {
    std::string error, note;
    CloseContext c = CloseContext::FromCall(call);
    c.note = &note;
    int rc = static_cast<T *>(ctx)->Close(c, &error);
    const std::string &out = rc != 0 ? error : note;  // on success, what a drain did
    if (!out.empty() && call->error && call->error_size) std::snprintf(call->error, call->error_size, "%s", out.c_str());
    return rc;
  };
  return reg->register_close(device, service, close, target);
}

// An explicit close by the user: unregister (so exit skips it), then close now, bounded by the
// registry's deadline. If the exit close already took it, target->Close waits for that one.
template <typename T>
int CloseExplicitly(devexit_device_id device, const char *service, T *target, std::string *error) {
  if (const devexit_registry_v1 *reg = Registry()) reg->forget(device, service);
  return target->Close(CloseContext::Explicit(), error);
}

}  // namespace devexit
