// A deadline around the JS layer. JS closes, the application's observers and the wait for
// critical sections run on a JS thread, which cannot watch itself: a native thread does. Past
// the deadline it reports what still runs and applies the onTimeout policy: by default stdio is
// flushed and the process ends with the program's exit code (or, for a shutdown a signal began,
// by that signal), so neither an endless close nor an endless observer can hang the end.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "internal.h"

namespace devexit {
namespace {

// What runs now on the watched JS thread (one at a time: @devexit/core watches the main thread's only).
struct Watched {
  std::string layer = "js-exit";
  int exit_code = -1;  // < 0: warn only (closeServices())
  int signal = 0;      // > 0: end by it (a signal's shutdown)
  bool has_line = false;
  ReportLine line;
  std::string what = "a JS close";
};

struct WatchState {
  std::mutex mu;
  std::condition_variable cv;
  bool thread_tried = false;
  bool session = false;  // a JS layer began and its native closes have not yet taken its deadline
  std::thread::id owner;
  int64_t deadline_ns = 0;
  bool running = false;
  Watched current;
  int64_t start_ns = 0;
  bool warned = false;        // the watchdog spoke for the current watch
  bool warned_since = false;  // ... for this session
};
WatchState &W() {
  static WatchState &w = *new WatchState();
  return w;
}

std::string DeadlineText(const WatchState &w, int64_t now) {
  std::string out;
  if (w.current.has_line) {
    ReportLine line = w.current.line;
    line.ms = (now - w.start_ns) / 1e6;
    line.outcome = "timeout";
    line.error = w.current.what + " still running at the deadline";
    out = ReportText({line}, true);
  }
  out += "devexit: closing services took longer than " + TimeoutText() + "; still running: ";
  if (w.current.has_line) out += ServiceName(w.current.line.type, w.current.line.index, w.current.line.service) + " (";
  out += w.current.what;
  if (w.current.has_line) out += ")";
  const size_t native = PendingCount();
  if (native > 0) out += ", and " + std::to_string(native) + " native close(s) not started";
  if (w.current.exit_code < 0 && w.current.signal <= 0) return out + "; continuing: closeServices() never ends the process\n";
  if (OnTimeoutPolicy() != kTimeoutExit) return out + "; continuing (" + PolicyText() + ")\n";
  if (w.current.signal > 0)
    return out + "; ending the process by signal " + std::to_string(w.current.signal) + " (" + PolicyText() + ")\n";
  return out + "; skipping library teardown: exiting with code " + std::to_string(w.current.exit_code) + " (" +
         PolicyText() + ")\n";
}

void WatchLoop() {
  WatchState &w = W();
  std::unique_lock<std::mutex> lock(w.mu);
  for (;;) {
    if (!w.session || !w.running || w.warned) {
      w.cv.wait(lock);
      continue;
    }
    const int64_t now = NowNs();
    if (now < w.deadline_ns) {
      w.cv.wait_for(lock, std::chrono::nanoseconds(w.deadline_ns - now));
      continue;
    }
    w.warned = true;
    w.warned_since = true;
    const std::string text = DeadlineText(w, now);
    const bool exit_policy = OnTimeoutPolicy() == kTimeoutExit;
    const int signal = exit_policy ? w.current.signal : 0;
    const bool end = exit_policy && (signal > 0 || w.current.exit_code >= 0);
    const int code = w.current.exit_code;
    lock.unlock();
    WriteStderr(text);
    if (signal > 0) QuickExitBySignal(signal);
    if (end) EndProcess(code);
    lock.lock();
  }
}

void StartThread(WatchState &w) {
  if (w.thread_tried) return;
  w.thread_tried = true;
  try {
    std::thread(WatchLoop).detach();
  } catch (...) {
    WriteStderr("devexit: cannot start the watchdog thread: JS closes are not bounded by the deadline\n");
  }
}

// Starts (or goes on with) this thread's session; the deadline given, else the timeout from now.
void Begin(WatchState &w, int64_t deadline_ns) {
  if (!w.session || w.owner != std::this_thread::get_id()) {
    w.session = true;
    w.owner = std::this_thread::get_id();
    w.warned_since = false;
    w.deadline_ns = deadline_ns > 0 ? deadline_ns : DeadlineFromNow();
  } else if (deadline_ns > 0) {
    w.deadline_ns = deadline_ns;
  }
  w.warned = false;
  w.start_ns = NowNs();
  w.running = true;
  StartThread(w);
  w.cv.notify_all();
}

}  // namespace

void JsCloseBegin(const char *layer, int exit_code, devexit_device_id device, const char *service) {
  WatchState &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  w.current = Watched();
  w.current.layer = layer ? layer : "js-exit";
  w.current.exit_code = exit_code;  // a nested process.exit() changes it: the last asked wins
  w.current.has_line = true;
  w.current.line.type = device.type;
  w.current.line.index = device.index;
  w.current.line.service = service ? service : "";
  w.current.line.layer = w.current.layer;
  Begin(w, 0);
}

int JsCloseEnd() {
  WatchState &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  w.running = false;
  return w.session && NowNs() > w.deadline_ns ? 1 : 0;
}

void Watch(const devexit_watch_v1 *watch) {
  if (!watch) return;
  WatchState &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  w.current = Watched();
  w.current.layer = watch->layer ? watch->layer : "js-exit";
  w.current.exit_code = watch->exit_code;
  w.current.signal = watch->signal;
  w.current.has_line = watch->device.type > 0;
  w.current.line.type = watch->device.type;
  w.current.line.index = watch->device.index;
  w.current.line.service = watch->service ? watch->service : "";
  w.current.line.layer = w.current.layer;
  if (watch->what && watch->what[0]) w.current.what = watch->what;
  Begin(w, watch->deadline_ns > 0 ? watch->deadline_ns : INT64_MAX);
}

int Unwatch() {
  WatchState &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  w.running = false;
  if (w.warned) return 2;
  return w.session && NowNs() > w.deadline_ns ? 1 : 0;
}

void EndWatch() {
  WatchState &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  if (w.owner != std::this_thread::get_id()) return;
  w.session = false;
  w.running = false;
}

int64_t TakeJsSessionDeadline() {
  WatchState &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  if (!w.session || w.owner != std::this_thread::get_id()) return 0;
  w.session = false;
  w.running = false;
  return w.deadline_ns;
}

void HostEndProcess(int code, int signal, const char *text) {
  if (text && text[0]) WriteStderr(text);
  if (signal > 0) QuickExitBySignal(signal);
  EndProcess(code);
}

}  // namespace devexit
