// A close job: the closes one exit layer took, grouped by device, and the threads that run them.
// Shared by close_job.cc (running, reporting, the manager) and close_engine.cc (layers, nested
// exits).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "internal.h"

namespace devexit {

constexpr int64_t kGrowPollNs = 500000;  // 0.5 ms: how often a waiter checks for stalled devices

struct Task {
  Taken key;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int rc = 0;
  bool started = false;
  bool done = false;
  int exit_status = -2;  // >= -1: the close called exit() (-1: with a status this layer cannot see)
  std::string error;     // only when the close failed
  std::string note;      // what a successful "shutdown" close said its drain did
};

struct Job : std::enable_shared_from_this<Job> {
  std::vector<std::vector<Task>> groups;  // one per device, last-registered-first
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  size_t groups_done = 0;
  size_t closes_done = 0;  // progress, for growing the pullers: a close finished
  size_t pullers = 0;  // threads taking groups (the caller counts when it runs inline); under mu
  int64_t deadline_ns = 0;
  int64_t call_deadline_ns = 0;  // what each close is told, when not deadline_ns (shutdown's drain)
  std::string layer;
  size_t tasks = 0;               // closes in all groups
  bool keep_lines = false;        // the caller wants the report lines (lines, once concluded)
  std::vector<ReportLine> lines;
  bool inline_run = false;  // the caller takes groups too (a JS thread or an explicit close)
  std::thread::id caller;
  TimeoutAction on_deadline = TimeoutAction::kNone;
  int exit_code = -1;
  // Inline runs: the caller is inside a close (only the manager can act at the deadline), the
  // caller has returned, and who handles the deadline (first to flip it).
  std::atomic<bool> caller_in_close{false};
  std::atomic<bool> caller_returned{false};
  std::atomic<bool> timeout_claimed{false};
  // Nested exits (under mu): a close called exit(); the caller ends the process once concluded.
  bool nested = false;
  int nested_code = -1;
  bool concluded = false;
};

// The close this thread is running, so that an exit() called from inside it is recognised.
extern thread_local Job *t_job;
extern thread_local size_t t_group;
extern thread_local size_t t_index;

// The code the process ends with: a nested exit's (the last asked, as in Node and libc), else the
// code of the exit being closed for, else what JS last told. Under job.mu.
int EndCode(const Job &job);
void FinishGroup(Job &job, size_t g, size_t from, bool caller);
void RunGroups(const std::shared_ptr<Job> &job, bool caller);
size_t StartPullers(const std::shared_ptr<Job> &job, size_t want);
// Adds pullers when no close finished for a whole poll interval (done_before: closes_done then).
void MaybeGrow(const std::shared_ptr<Job> &job, std::unique_lock<std::mutex> &lock, bool quiet, size_t done_before);
// Records and prints what a job did; past the deadline, warns and (per onTimeout) ends the
// process. Returns the number of closes not ok.
int Conclude(Job &job, bool timed_out, bool late_is_timeout);
// Inline runs: a manager thread grows the pullers and acts at the deadline if the caller is stuck.
void HandToManager(const std::shared_ptr<Job> &job);
// An explicit close is done: its manager stops watching now (it is parked again for the next one).
void LetManagerGo();

}  // namespace devexit
