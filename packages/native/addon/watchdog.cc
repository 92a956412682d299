// A deadline around the JS layer. JS closes, the application's observers and the wait for
// critical sections run on a JS thread, which cannot watch itself: a native thread does. Past
// the deadline it reports what still runs and applies the onTimeout policy: by default stdio is
// flushed and the process ends with the program's exit code (or, for a shutdown a signal began,
// by that signal), so neither an endless close nor an endless observer can hang the end.
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
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
  bool quiet = false;         // the current watch passed the deadline after the session's warning
  // The JS closes of the session's run (when its core said), and how many of them started.
  std::vector<ReportLine> queue;
  size_t started = 0;
};
WatchState &W() {
  static WatchState &w = *new WatchState();
  return w;
}

// The closes that have not started: the run's JS closes after the current one, then the native
// closes still registered (they run after the JS ones).
std::vector<ReportLine> NotStarted(const WatchState &w) {
  std::vector<ReportLine> out;
  for (size_t i = w.started; i < w.queue.size(); i++) {
    out.push_back(w.queue[i]);
    out.back().layer = w.current.layer;
  }
  for (ReportLine &line : PendingLines(w.current.layer)) out.push_back(std::move(line));
  for (ReportLine &line : out) {
    line.outcome = "timeout";
    line.error = "not started before the deadline";
  }
  return out;
}

// The deadline's warning. ending: the process ends now, so the closes that have not started get
// their report lines here (each close has one), recorded and printed before the warning.
std::string DeadlineText(const WatchState &w, int64_t now, bool ending) {
  std::vector<ReportLine> lines;
  if (w.current.has_line) {
    ReportLine line = w.current.line;
    line.ms = (now - w.start_ns) / 1e6;
    line.outcome = "timeout";
    line.error = w.current.what + " still running at the deadline";
    lines.push_back(std::move(line));
  }
  const std::vector<ReportLine> waiting = NotStarted(w);
  if (ending) lines.insert(lines.end(), waiting.begin(), waiting.end());
  std::string out = ReportText(lines, true);
  if (ending) RecordReport(lines);
  out += "devexit: closing services took longer than " + TimeoutText() + "; still running: ";
  if (w.current.has_line) out += ServiceName(w.current.line.type, w.current.line.index, w.current.line.service) + " (";
  out += w.current.what;
  if (w.current.has_line) out += ")";
  if (!waiting.empty()) {
    constexpr size_t kNamed = 8;
    out += "; not started: ";
    for (size_t i = 0; i < waiting.size() && i < kNamed; i++)
      out += (i ? ", " : "") + ServiceName(waiting[i].type, waiting[i].index, waiting[i].service);
    if (waiting.size() > kNamed) out += " and " + std::to_string(waiting.size() - kNamed) + " more";
  }
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
    const bool exit_policy = OnTimeoutPolicy() == kTimeoutExit;
    const int signal = exit_policy ? w.current.signal : 0;
    const bool end = exit_policy && (signal > 0 || w.current.exit_code >= 0);
    const int code = w.current.exit_code;
    // Going on past the deadline ('warn', closeServices()), each later close starts late: the
    // session's one warning said so, and each close's report line says it timed out.
    if (!end && w.warned_since) {
      w.quiet = true;
      continue;
    }
    w.warned_since = true;
    const std::string text = DeadlineText(w, now, signal > 0 || end);
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
    w.queue.clear();
    w.started = 0;
    w.session = true;
    w.owner = std::this_thread::get_id();
    w.warned_since = false;
    w.deadline_ns = deadline_ns > 0 ? deadline_ns : DeadlineFromNow();
  } else if (deadline_ns > 0) {
    w.deadline_ns = deadline_ns;
  }
  w.warned = false;
  w.quiet = false;
  w.start_ns = NowNs();
  w.running = true;
  StartThread(w);
  w.cv.notify_all();
}

// A watch's queue: lines "<type>\t<index>\t<service>\n" (see devexit_watch_v1).
std::vector<ReportLine> ParseQueue(const char *text) {
  std::vector<ReportLine> out;
  const char *p = text;
  while (*p) {
    const char *end = strchr(p, '\n');
    if (!end) end = p + strlen(p);
    const std::string line(p, end);
    p = *end ? end + 1 : end;
    const size_t a = line.find('\t'), b = a == std::string::npos ? a : line.find('\t', a + 1);
    if (b == std::string::npos) continue;
    ReportLine r;
    r.type = static_cast<uint16_t>(strtoul(line.c_str(), nullptr, 10));
    r.index = static_cast<uint32_t>(strtoul(line.c_str() + a + 1, nullptr, 10));
    r.service = line.substr(b + 1);
    out.push_back(std::move(r));
  }
  return out;
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
  if (watch->struct_size < offsetof(devexit_watch_v1, started) + sizeof watch->started) return;
  if (watch->queue) w.queue = ParseQueue(watch->queue);
  if (watch->started >= 0) w.started = static_cast<size_t>(watch->started);
}

int Unwatch() {
  WatchState &w = W();
  std::lock_guard<std::mutex> lock(w.mu);
  w.running = false;
  if (w.warned && !w.quiet) return 2;
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
