// Running a close job: tasks, puller threads, the report of a job, and the manager thread that
// watches an inline job.
#include "close_job.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace devexit {

thread_local Job *t_job = nullptr;
thread_local size_t t_group = 0;
thread_local size_t t_index = 0;

namespace {

constexpr size_t kMaxCloseThreads = 64;

}  // namespace

int EndCode(const Job &job) {
  if (job.nested_code >= 0) return job.nested_code;
  if (job.exit_code >= 0) return job.exit_code;
  // The main-thread TLS destructor on glibc: a hook registered at the deadline sees the real one.
  if (job.on_deadline == TimeoutAction::kExitFirstHook && DEVEXIT_HAVE_ON_EXIT) return -1;
  return KnownExitCode();
}

namespace {

void RunTask(Job &job, size_t g, size_t i, bool caller) {
  Task &t = job.groups[g][i];
  {
    std::lock_guard<std::mutex> lock(job.mu);
    t.started = true;
    t.start_ns = NowNs();
  }
  devexit_close_call_v1 call;
  call.device.type = t.key.type;
  call.device.index = t.key.index;
  call.service = t.key.service.c_str();
  call.deadline_ns = job.call_deadline_ns > 0 ? job.call_deadline_ns : job.deadline_ns;
  char error[256] = {0};
  call.error = error;
  call.error_size = sizeof error;
  call.layer = job.layer.c_str();
  Job *const outer = t_job;
  const size_t outer_group = t_group, outer_index = t_index;
  t_job = &job;
  t_group = g;
  t_index = i;
  if (caller) job.caller_in_close.store(true);
  const int rc = t.key.entry.close(t.key.entry.ctx, &call);
  if (caller) job.caller_in_close.store(false);
  t_job = outer;
  t_group = outer_group;
  t_index = outer_index;
  std::lock_guard<std::mutex> lock(job.mu);
  if (t.done) return;  // a nested exit already accounted for it
  t.rc = rc;
  t.end_ns = NowNs();
  t.done = true;
  job.closes_done++;
  if (rc != 0) t.error.assign(error, strnlen(error, sizeof error));
  else t.note.assign(error, strnlen(error, sizeof error));
}

}  // namespace

void FinishGroup(Job &job, size_t g, size_t from, bool caller) {
  for (size_t i = from; i < job.groups[g].size(); i++) RunTask(job, g, i, caller);
  std::lock_guard<std::mutex> lock(job.mu);
  // Wake the waiting thread only when everything is done: a wake per device would cost a
  // context switch each (the waiter's poll interval handles growing the thread count).
  if (++job.groups_done == job.groups.size()) job.cv.notify_all();
}

void RunGroups(const std::shared_ptr<Job> &job, bool caller) {
  for (;;) {
    if (caller && NowNs() >= job->deadline_ns) return;  // past the deadline: take nothing new
    const size_t g = job->next.fetch_add(1);
    if (g >= job->groups.size()) return;
    FinishGroup(*job, g, 0, caller);
  }
}

// Starts up to `want` detached threads taking groups; returns how many started.
size_t StartPullers(const std::shared_ptr<Job> &job, size_t want) {
  size_t started = 0;
  for (; started < want; started++) {
    try {
      std::thread(RunGroups, job, false).detach();  // the job lives on in the thread's shared_ptr
    } catch (...) {
      break;  // out of threads: the ones started take the remaining groups
    }
  }
  return started;
}

// Called with job->mu held after a poll: adds pullers when every puller is inside a close (as
// many groups claimed as pullers, so none is merely slow to start) and no close finished for a
// whole poll interval while devices wait. (Closes that each take a few context switches, such as
// stopping idle service threads, keep finishing: more threads would only share the same cores.)
// Doubling: a few slow devices do not cost 64 starts.
void MaybeGrow(const std::shared_ptr<Job> &job, std::unique_lock<std::mutex> &lock, bool quiet,
               size_t done_before) {
  const size_t claimed = std::min(job->next.load(), job->groups.size());
  if (!quiet || job->closes_done != done_before || claimed < job->pullers || claimed >= job->groups.size()) return;
  const size_t want = std::min(
      {job->groups.size() - claimed, job->pullers, kMaxCloseThreads - std::min(job->pullers, kMaxCloseThreads)});
  lock.unlock();
  const size_t started = StartPullers(job, want);
  lock.lock();
  job->pullers += started;
}

namespace {

// What a "shutdown" close said its drain did (devexit.h: DEVEXIT_NOTE_*).
void ReadNote(const std::string &note, ReportLine *r) {
  static const size_t kDroppedLen = std::strlen(DEVEXIT_NOTE_DROPPED);
  if (note == DEVEXIT_NOTE_DRAINED) {
    r->drained = 1;
    r->dropped = 0;
  } else if (note.compare(0, kDroppedLen, DEVEXIT_NOTE_DROPPED) == 0) {
    const long long n = std::strtoll(note.c_str() + kDroppedLen, nullptr, 10);
    r->drained = n > 0 ? 0 : 1;
    r->dropped = n > 0 ? n : 0;
  }
}

// `type:index/service` of every close not finished, with job.mu held.
std::string PendingList(Job &job) {
  std::string pending;
  for (auto &group : job.groups)
    for (Task &t : group)
      if (!t.done) pending += (pending.empty() ? "" : ", ") + ServiceName(t.key.type, t.key.index, t.key.service);
  return pending;
}

// The deadline warning: how long, what still runs, and what happens now, naming the settings in
// force (they may come from another copy of this package: the registry's owner holds them).
std::string DeadlineText(const std::string &pending, bool end, int code, TimeoutAction action) {
  std::string out = "devexit: closing services took longer than " + TimeoutText() + "; still running: " + pending + "; ";
  // An explicit run: closeServices(), or shutdown(), whose caller ends the process if a signal
  // started it (the sweep that found the old words saw SIGTERM end the process 0.6 s after them).
  if (action == TimeoutAction::kNone)
    return out + "continuing: this run does not end the process (after a signal, devexit ends it by that signal)\n";
  if (!end) {
    if (OnTimeoutPolicy() == kTimeoutExit)
      return out + "continuing: this exit layer cannot see the exit code (" + PolicyText() + ")\n";
    return out + "continuing with library teardown (" + PolicyText() + ")\n";
  }
  if (code >= 0)
    return out + "skipping library teardown: exiting with code " + std::to_string(code) + " (" + PolicyText() + ")\n";
  return out + "skipping library teardown, exit code kept (" + PolicyText() + ")\n";
}

}  // namespace

// Records and prints what a job did; past the deadline, warns and (per onTimeout) ends the
// process with its exit code. late_is_timeout: the manager already warned, so closes that
// finished after the deadline count as timed out. Returns the number of closes not ok.
int Conclude(Job &job, bool timed_out, bool late_is_timeout) {
  std::vector<ReportLine> lines;
  std::string pending;
  int failures = 0;
  int code;
  {
    std::lock_guard<std::mutex> lock(job.mu);
    const int64_t now = NowNs();
    if (timed_out) pending = PendingList(job);
    code = EndCode(job);
    lines.reserve(job.tasks);
    for (auto &group : job.groups) {
      for (Task &t : group) {
        ReportLine r;
        r.type = t.key.type;
        r.index = t.key.index;
        r.service = t.key.service;
        r.layer = job.layer;
        r.ms = t.started ? ((t.done ? t.end_ns : now) - t.start_ns) / 1e6 : 0;
        if (t.done && t.exit_status >= -1) {
          r.outcome = "error";
          r.error = t.exit_status >= 0 ? "the close called exit(" + std::to_string(t.exit_status) + ")"
                                       : "the close called exit()";
        } else if (t.done && !(late_is_timeout && t.end_ns > job.deadline_ns)) {
          r.outcome = t.rc == 0 ? "ok" : "error";
          if (t.rc != 0) r.error = !t.error.empty() ? t.error : "close returned " + std::to_string(t.rc);
          else ReadNote(t.note, &r);
        } else {
          r.outcome = "timeout";
          r.error = t.done ? "finished after the deadline"
                           : t.started ? "still running at the deadline" : "not started before the deadline";
        }
        if (strcmp(r.outcome, "ok") != 0) failures++;
        lines.push_back(std::move(r));
      }
    }
  }

  // Exit layers report failures on stderr themselves; the explicit JS call through warnings.
  const bool exit_layer = job.on_deadline != TimeoutAction::kNone;
  std::string out = ReportText(lines, exit_layer);
  if (job.keep_lines) {
    std::lock_guard<std::mutex> lock(job.mu);
    job.lines = lines;
  }
  RecordReport(std::move(lines));
  if (!timed_out) {
    if (!out.empty()) WriteStderr(out);
    return failures;
  }
  const bool policy_exit = OnTimeoutPolicy() == kTimeoutExit && exit_layer;
  const bool first_hook = job.on_deadline == TimeoutAction::kExitFirstHook && DEVEXIT_HAVE_ON_EXIT;
  const bool end = policy_exit && (code >= 0 || first_hook);
  WriteStderr(out + DeadlineText(pending, end, code, job.on_deadline));
  if (end && code >= 0) EndProcess(code);
  // The exit status is not known here (main-thread TLS destructor): an on_exit hook registered
  // now runs before every other exit handler and sees it.
  if (end) AddFastExitHook();
  return failures;
}

namespace {

// A manager thread started with the first registration and parked until an exit needs it, so
// that starting one is not on the exit path. A second job while it is busy gets a fresh thread.
struct Managers {
  std::mutex mu;
  std::condition_variable cv;        // a job handed to the parked thread
  std::condition_variable watch_cv;  // an explicit close done: the manager may go (see Manage)
  std::weak_ptr<Job> job;      // handed over: the caller owns it (and frees it on its thread)
  bool handed = false;
  bool parked_thread = false;  // started and idle
  bool started = false;
};
Managers &M() {
  static Managers &m = *new Managers();
  return m;
}

// Inline runs only: grows the pullers while the caller is busy in a close, and acts at the
// deadline if the caller is stuck inside one (the caller handles it whenever it is waiting). It
// waits between checks on a condition variable of its own, takes the job's lock only to check, and
// holds the job only while checking: an exit layer whose closes are quick costs one wake-up (the
// hand-over) and no context switch on the caller, who neither wakes it again nor meets it on the
// job's lock, and whose thread frees the job (not this one, later, during the process's teardown).
// An explicit close wakes it when done, so that it is parked again for the next one.
void Manage(const std::weak_ptr<Job> &watched) {
  size_t done_before = 0;  // at the hand-over, about none
  for (;;) {
    int64_t left;
    {
      const std::shared_ptr<Job> job = watched.lock();
      if (!job) return;
      left = job->deadline_ns - NowNs();
    }
    if (left > 0) {
      Managers &m = M();
      std::unique_lock<std::mutex> idle(m.mu);
      m.watch_cv.wait_for(idle, std::chrono::nanoseconds(std::min<int64_t>(left, kGrowPollNs)), [&] {
        const std::shared_ptr<Job> job = watched.lock();
        return !job || job->caller_returned.load();
      });
    }
    const std::shared_ptr<Job> job = watched.lock();
    if (!job) return;
    std::unique_lock<std::mutex> lock(job->mu);
    if (job->caller_returned.load() || job->groups_done >= job->groups.size()) return;
    if (NowNs() >= job->deadline_ns) {
      if (!job->caller_in_close.load() || job->timeout_claimed.exchange(true)) return;
      const int code = EndCode(*job);
      const bool end = job->on_deadline != TimeoutAction::kNone && OnTimeoutPolicy() == kTimeoutExit && code >= 0;
      if (end) {
        lock.unlock();
        Conclude(*job, true, false);  // ends the process
        return;
      }
      const std::string pending = PendingList(*job);
      lock.unlock();
      WriteStderr(DeadlineText(pending, false, code, job->on_deadline));
      return;
    }
    // Quiet: no close finished during the last interval.
    MaybeGrow(job, lock, job->closes_done == done_before, done_before);
    done_before = job->closes_done;
  }
}

void ParkedManager() {
  Managers &m = M();
  std::unique_lock<std::mutex> lock(m.mu);
  for (;;) {
    m.cv.wait(lock, [&] { return m.handed; });
    const std::weak_ptr<Job> job = std::move(m.job);
    m.job.reset();
    m.handed = false;
    m.parked_thread = false;
    lock.unlock();
    Manage(job);
    lock.lock();
    m.parked_thread = true;
  }
}

}  // namespace

void HandToManager(const std::shared_ptr<Job> &job) {
  Managers &m = M();
  {
    std::unique_lock<std::mutex> lock(m.mu);
    if (m.parked_thread && !m.handed) {
      m.job = job;
      m.handed = true;
      lock.unlock();
      m.cv.notify_one();  // after unlocking: the manager does not wake into a held lock
      return;
    }
  }
  try {
    std::thread([watched = std::weak_ptr<Job>(job)] { Manage(watched); }).detach();
  } catch (...) {
    // No manager: the caller still runs every close, only without a watchdog.
  }
}

void LetManagerGo() {
  { std::lock_guard<std::mutex> lock(M().mu); }
  M().watch_cv.notify_all();
}

void StartParkedManager() {
  Managers &m = M();
  std::lock_guard<std::mutex> lock(m.mu);
  if (m.started) return;
  try {
    std::thread(ParkedManager).detach();
    m.started = m.parked_thread = true;
  } catch (...) {
    // No parked manager: exits start one when needed.
  }
}

}  // namespace devexit
