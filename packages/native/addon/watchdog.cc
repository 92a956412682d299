// A deadline around the JS layer. JS closes run on the JS thread, which cannot watch itself: a
// native thread does. Past the deadline it warns, naming the JS close still running, and applies
// the onTimeout policy: by default stdio is flushed and the process ends with the program's exit
// code, so an endless JS close cannot hang the exit.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "internal.h"

namespace devexit {
namespace {

// The JS layer in progress (one at a time: @devexit/core watches the main thread's only).
struct Watch {
  std::mutex mu;
  std::condition_variable cv;
  bool thread_tried = false;
  bool session = false;  // a JS layer began and its native closes have not yet taken its deadline
  std::thread::id owner;
  int64_t deadline_ns = 0;
  int exit_code = -1;  // < 0: an explicit close (warn only)
  bool running = false;
  ReportLine current;
  int64_t start_ns = 0;
  bool warned = false;
};
Watch &W() {
  static Watch &w = *new Watch();
  return w;
}

std::string DeadlineText(const Watch &w, int64_t now) {
  ReportLine line = w.current;
  line.ms = (now - w.start_ns) / 1e6;
  line.outcome = "timeout";
  line.error = "a JS close still running at the deadline";
  std::string out = ReportText({line}, true);
  out += "devexit: closing services took longer than " + TimeoutText() + "; still running: " +
         ServiceName(line.type, line.index, line.service) + " (a JS close)";
  const size_t native = PendingCount();
  if (native > 0) out += ", and " + std::to_string(native) + " native close(s) not started";
  if (w.exit_code < 0) return out + "; continuing: an explicit close never ends the process\n";
  if (OnTimeoutPolicy() != kTimeoutExit) return out + "; continuing (" + PolicyText() + ")\n";
  return out + "; skipping library teardown: exiting with code " + std::to_string(w.exit_code) + " (" +
         PolicyText() + ")\n";
}

void WatchLoop() {
  Watch &w = W();
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
    const std::string text = DeadlineText(w, now);
    const bool end = w.exit_code >= 0 && OnTimeoutPolicy() == kTimeoutExit;
    const int code = w.exit_code;
    lock.unlock();
    WriteStderr(text);
    if (end) EndProcess(code);
    lock.lock();
  }
}

}  // namespace

void JsCloseBegin(const char *layer, int exit_code, devexit_device_id device, const char *service) {
  Watch &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  if (!w.session || w.owner != std::this_thread::get_id()) {
    w.session = true;
    w.owner = std::this_thread::get_id();
    w.deadline_ns = DeadlineFromNow();
    w.warned = false;
  }
  w.exit_code = exit_code;  // a nested process.exit() changes it: the last asked wins
  w.current.type = device.type;
  w.current.index = device.index;
  w.current.service = service ? service : "";
  w.current.layer = layer ? layer : "js-exit";
  w.start_ns = NowNs();
  w.running = true;
  if (!w.thread_tried) {
    w.thread_tried = true;
    try {
      std::thread(WatchLoop).detach();
    } catch (...) {
      WriteStderr("devexit: cannot start the watchdog thread: JS closes are not bounded by the deadline\n");
    }
  }
  w.cv.notify_all();
}

int JsCloseEnd() {
  Watch &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  w.running = false;
  return w.session && NowNs() > w.deadline_ns ? 1 : 0;
}

int64_t TakeJsSessionDeadline() {
  Watch &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  if (!w.session || w.owner != std::this_thread::get_id()) return 0;
  w.session = false;
  w.running = false;
  return w.deadline_ns;
}

}  // namespace devexit
