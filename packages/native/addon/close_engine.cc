// The close engine: runs every registered close once, devices in parallel, services of one device
// last-registered-first, bounded by the deadline; and a close that itself exits never waits for
// itself (nested exits).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "close_job.h"

namespace devexit {
namespace {

constexpr int64_t kNestedGraceNs = 1000000000;         // see NestedExit
constexpr auto kEndingWait = std::chrono::seconds(5);  // a second EndProcess waits for the first

struct Engine {
  std::atomic<int> exit_code{-1};  // from JS (set_exit_code): for layers that cannot see it
  std::atomic<bool> ending{false};
  std::atomic<bool> exit_began{false};  // an exit layer ran: shutdown() reports no more to JS
  std::mutex flight_mu;
  std::condition_variable flight_cv;
  int in_flight = 0;
};
Engine &E() {
  static Engine &e = *new Engine();
  return e;
}

// Waits for a close that another layer is running, so that this layer does not let the
// runtimes tear down under it.
void WaitInFlight(int64_t deadline_ns) {
  Engine &e = E();
  std::unique_lock<std::mutex> lock(e.flight_mu);
  while (e.in_flight > 0) {
    const int64_t left = deadline_ns - NowNs();
    if (left <= 0) return;
    e.flight_cv.wait_for(lock, std::chrono::nanoseconds(left));
  }
}

void FinishFlight() {
  Engine &e = E();
  std::lock_guard<std::mutex> lock(e.flight_mu);
  e.in_flight--;
  e.flight_cv.notify_all();
}

// The caller's side of a job: waits for every device (growing the pullers in non-inline runs),
// concludes, and ends the process if a close exited (when the code is known: end_if_nested).
int WaitAndConclude(const std::shared_ptr<Job> &job, bool end_if_nested) {
  bool timed_out = false;
  {
    std::unique_lock<std::mutex> lock(job->mu);
    while (job->groups_done < job->groups.size()) {
      const int64_t left = job->deadline_ns - NowNs();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      const size_t done_before = job->closes_done;
      const bool quiet = job->cv.wait_for(lock, std::chrono::nanoseconds(std::min<int64_t>(left, kGrowPollNs))) ==
                         std::cv_status::timeout;
      if (!job->inline_run) MaybeGrow(job, lock, quiet, done_before);
    }
    job->caller_returned.store(true);
  }
  // An explicit close: let the manager go now, so that it is parked for the next one. (At exit it
  // sleeps out its interval: waking it would cost a context switch for nothing.)
  if (job->inline_run && job->on_deadline == TimeoutAction::kNone) LetManagerGo();
  // A close that ran past the deadline while the manager already warned counts as timed out.
  const bool warned_by_manager = job->timeout_claimed.load();
  if (timed_out && job->timeout_claimed.exchange(true)) timed_out = false;  // the manager spoke
  const int failures = Conclude(*job, timed_out, warned_by_manager);
  bool nested;
  int code;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    job->concluded = true;
    nested = job->nested;
    code = EndCode(*job);
    job->cv.notify_all();
  }
  FinishFlight();
  if (nested && end_if_nested && code >= 0) EndProcess(code);
  return failures;
}

// exit() called from inside a close, on the thread that runs it. The close never returns, so
// this thread does what its frame would have done: the rest of the device's closes and any device
// not yet taken; then the caller's thread concludes and ends the process with the nested code
// (skipping teardown: the exiting close may have left its service running).
int NestedExit(const CloseRequest &req) {
  std::shared_ptr<Job> job = t_job->shared_from_this();
  const size_t g = t_group, i = t_index;
  t_job = nullptr;
  const bool caller = std::this_thread::get_id() == job->caller;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    Task &t = job->groups[g][i];
    if (!t.done) {
      t.done = true;
      t.end_ns = NowNs();
      t.exit_status = req.exit_code >= 0 ? req.exit_code : -1;
      job->closes_done++;
    }
    job->nested = true;
    if (req.exit_code >= 0) job->nested_code = req.exit_code;
  }
  if (caller) job->caller_in_close.store(false);
  FinishGroup(*job, g, i + 1, caller);
  RunGroups(job, caller);
  if (caller) {
    // In the glibc TLS destructor the status is not known yet: the hook registered below runs
    // first among the exit handlers and ends the process with it. Where handlers never see it
    // (atexit), the first exit's code is the best known: ending now beats running teardown
    // under the service the exiting close may have left running.
    const bool status_later = req.on_deadline == TimeoutAction::kExitFirstHook && DEVEXIT_HAVE_ON_EXIT;
    const int failures = WaitAndConclude(job, !status_later);
    if (status_later) AddFastExitHook();
    return failures;
  }
  // Another thread concludes the job. Returning now would run library teardown under closes
  // still running, concurrently with that thread: wait until it concludes.
  std::unique_lock<std::mutex> lock(job->mu);
  const int64_t until = job->deadline_ns > INT64_MAX - kNestedGraceNs ? INT64_MAX : job->deadline_ns + kNestedGraceNs;
  while (!job->concluded) {
    const int64_t left = until - NowNs();
    if (left <= 0) break;
    job->cv.wait_for(lock, std::chrono::nanoseconds(left));
  }
  const int code = EndCode(*job);
  if (job->concluded && code < 0) return 0;  // nobody knows a code: this exit goes on with its own
  lock.unlock();
  EndProcess(code >= 0 ? code : 1);  // the concluder ends it too; whichever is first
}

}  // namespace

void SetExitCode(int code) { E().exit_code = code; }
int KnownExitCode() { return E().exit_code.load(); }

void EndProcess(int code) {
  if (E().ending.exchange(true)) {
    // Another thread is ending the process; if it never gets there, end it from here.
    std::this_thread::sleep_for(kEndingWait);
  }
  QuickExit(code);
}

bool ExitBegan() { return E().exit_began.load(); }

int RunClose(const CloseRequest &req) {
  if (req.on_deadline != TimeoutAction::kNone) E().exit_began.store(true);
  if (t_job) {
    // An exit layer entered from inside a close: exit() was called there. Anything else (a close
    // asking for closeAll) finds the closes already taken by the job it is part of.
    if (req.on_deadline != TimeoutAction::kNone) return NestedExit(req);
    return 0;
  }
  // A native exit layer on the JS thread: a JS close in progress called exit() itself.
  if (req.on_deadline != TimeoutAction::kNone && !req.on_js_thread) TakeJsSessionDeadline();
  const int64_t now = NowNs();
  const int64_t deadline = req.deadline_ns > now ? req.deadline_ns : DeadlineFromNow();
  std::vector<Taken> taken;
  {
    // Taking and counting the job in flight under one lock: a layer that finds the list empty
    // waits for the one that took it.
    Engine &e = E();
    std::lock_guard<std::mutex> flight(e.flight_mu);
    taken = TakeAll(req.mark_exiting);
    if (!taken.empty()) e.in_flight++;
  }
  if (taken.empty()) {
    WaitInFlight(deadline);
    return 0;
  }

  // Group by device; inside a device, last registered closes first.
  std::sort(taken.begin(), taken.end(), [](const Taken &a, const Taken &b) {
    if (a.type != b.type) return a.type < b.type;
    if (a.index != b.index) return a.index < b.index;
    return a.entry.seq > b.entry.seq;
  });
  auto job = std::make_shared<Job>();
  job->deadline_ns = deadline;
  job->call_deadline_ns = req.call_deadline_ns;
  job->layer = req.layer;
  job->on_deadline = req.on_deadline;
  job->exit_code = req.exit_code >= 0 ? req.exit_code : -1;
  job->caller = std::this_thread::get_id();
  job->keep_lines = req.lines_out != nullptr;
  job->tasks = taken.size();
  const auto same_device = [&](size_t a, size_t b) {
    return taken[a].type == taken[b].type && taken[a].index == taken[b].index;
  };
  size_t devices = 0;
  for (size_t i = 0; i < taken.size(); i++) devices += i == 0 || !same_device(i, i - 1);
  job->groups.reserve(devices);
  for (size_t i = 0; i < taken.size();) {
    size_t end = i + 1;
    while (end < taken.size() && same_device(end, i)) end++;
    std::vector<Task> &group = job->groups.emplace_back(end - i);
    for (size_t k = i; k < end; k++) group[k - i].key = std::move(taken[k]);
    i = end;
  }

  // Where the closes run. A JS thread (the 'exit' layer, closeServices()) and an explicit caller
  // run no service, so they take groups themselves (a new thread can take a millisecond to be
  // scheduled) while a manager thread adds pullers for slow devices and acts at the deadline if
  // the caller is stuck in a close. Anywhere else (the TLS layer, exit() on any thread, perhaps a
  // service's own) closes never run on the calling thread: it waits, and grows the pullers.
  job->inline_run = req.on_js_thread || req.on_deadline == TimeoutAction::kNone;
  if (job->inline_run) {
    job->pullers = 1;
    HandToManager(job);
    RunGroups(job, true);
  } else {
    job->pullers = StartPullers(job, 1);
    if (job->pullers == 0) RunGroups(job, false);  // last resort
  }
  const int failures = WaitAndConclude(job, true);
  if (req.lines_out) {
    std::lock_guard<std::mutex> lock(job->mu);
    *req.lines_out = std::move(job->lines);
  }
  return failures;
}

int CloseAsync(const char *layer, int64_t drain_deadline_ns, devexit_closes_done_fn done, void *ctx) {
  std::string name = layer && layer[0] ? layer : DEVEXIT_LAYER_SHUTDOWN;
  try {
    std::thread([name, drain_deadline_ns, done, ctx] {
      CloseRequest req;
      req.layer = name.c_str();
      // Each close drains until drain_deadline_ns; what it drops then closes within the timeout.
      const int64_t now = NowNs();
      const int64_t drain = drain_deadline_ns > now ? drain_deadline_ns : now;
      const int64_t span = DeadlineFromNow() - now;
      req.call_deadline_ns = drain;
      req.deadline_ns = drain > INT64_MAX - span ? INT64_MAX : drain + span;
      std::vector<ReportLine> lines;
      req.lines_out = &lines;
      const int failures = RunClose(req);
      if (ExitBegan() || !done) return;  // JS may be going away: nobody to tell
      done(ctx, failures, ReportLinesJson(lines).c_str());
    }).detach();
  } catch (...) {
    return DEVEXIT_ERR_NOMEM;
  }
  return DEVEXIT_OK;
}

}  // namespace devexit
