#include "registry.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace devexit {
namespace {

constexpr size_t kMaxCloseThreads = 64;
constexpr int64_t kGrowPollNs = 500000;  // 0.5 ms
constexpr int64_t kDefaultTimeoutMs = 3000;

struct Key {
  uint16_t type;
  uint32_t index;
  std::string service;
  bool operator==(const Key &o) const { return type == o.type && index == o.index && service == o.service; }
};

struct KeyHash {
  size_t operator()(const Key &k) const {
    size_t h = std::hash<std::string>()(k.service);
    return h ^ ((static_cast<size_t>(k.type) << 32 | k.index) * 0x9E3779B97F4A7C15ull);
  }
};

struct Entry {
  devexit_close_fn close;
  void *ctx;
  uint64_t seq;
};

struct ReportLine {
  uint16_t type;
  uint32_t index;
  std::string service;
  std::string layer;
  double ms;
  const char *outcome;  // "ok" | "error" | "timeout"
  std::string error;
};

enum ReportMode { kReportOff, kReportText, kReportJson };

// Never destroyed: exit layers run after static destructors may have started.
struct State {
  std::mutex mu;
  std::unordered_map<Key, Entry, KeyHash> entries;
  uint64_t seq = 0;
  std::atomic<uint32_t> exiting{0};
  std::atomic<int64_t> timeout_ms{kDefaultTimeoutMs};
  std::atomic<int> on_timeout{kTimeoutExit};
  std::atomic<int> exit_code{-1};
  uint32_t layers = kLayerAll;
  ReportMode report_mode = kReportOff;

  std::mutex types_mu;
  std::vector<std::string> type_names;  // index = type id

  std::mutex report_mu;
  std::vector<ReportLine> report;

  std::mutex flight_mu;
  std::condition_variable flight_cv;
  int in_flight = 0;
};

State &S() {
  static State *s = new State();
  return *s;
}

bool OnMainThread() { return syscall(SYS_gettid) == getpid(); }

bool ValidName(const char *s) {
  if (!s) return false;
  size_t n = strnlen(s, DEVEXIT_MAX_NAME + 1);
  return n > 0 && n <= DEVEXIT_MAX_NAME;
}

std::string TypeName(uint16_t type) {
  State &s = S();
  std::lock_guard<std::mutex> lock(s.types_mu);
  if (type < s.type_names.size() && !s.type_names[type].empty()) return s.type_names[type];
  return "type" + std::to_string(type);
}

void WriteAll(int fd, const std::string &text) {
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::string LineJson(const ReportLine &r) {
  char ms[32];
  snprintf(ms, sizeof ms, "%.3f", r.ms);
  std::string out = "{\"device\":{\"type\":\"" + JsonEscape(TypeName(r.type)) + "\",\"typeId\":" +
                    std::to_string(r.type) + ",\"index\":" + std::to_string(r.index) + "},\"service\":\"" +
                    JsonEscape(r.service) + "\",\"layer\":\"" + JsonEscape(r.layer) + "\",\"ms\":" + ms +
                    ",\"outcome\":\"" + r.outcome + "\",\"pid\":" + std::to_string(getpid());
  if (!r.error.empty()) out += ",\"error\":\"" + JsonEscape(r.error) + "\"";
  return out + "}";
}

// ---- the close engine ----

struct Task {
  Key key;
  Entry entry;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int rc = 0;
  bool started = false;
  bool done = false;
  std::string error;  // only when the close failed
};

struct Job {
  std::vector<std::vector<Task>> groups;  // one per device, last-registered-first
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  size_t groups_done = 0;
  size_t pullers = 0;  // threads taking groups (the caller counts when it runs inline); under mu
  int64_t deadline_ns = 0;
  std::string layer;
  // Inline runs: the caller is inside a close (only the manager can act at the deadline), the
  // caller has returned, and who handles the deadline (first to flip it).
  std::atomic<bool> caller_in_close{false};
  std::atomic<bool> caller_returned{false};
  std::atomic<bool> timeout_claimed{false};
  bool exit_on_timeout = false;
  int exit_code = -1;
};

void RunGroups(const std::shared_ptr<Job> &job, bool caller) {
  for (;;) {
    if (caller && NowNs() >= job->deadline_ns) return;  // past the deadline: take nothing new
    size_t g = job->next.fetch_add(1);
    if (g >= job->groups.size()) return;
    for (Task &t : job->groups[g]) {
      {
        std::lock_guard<std::mutex> lock(job->mu);
        t.started = true;
        t.start_ns = NowNs();
      }
      devexit_close_call_v1 call;
      call.device.type = t.key.type;
      call.device.index = t.key.index;
      call.service = t.key.service.c_str();
      call.deadline_ns = job->deadline_ns;
      char error[256] = {0};
      call.error = error;
      call.error_size = sizeof error;
      call.layer = job->layer.c_str();
      if (caller) job->caller_in_close.store(true);
      int rc = t.entry.close(t.entry.ctx, &call);
      if (caller) job->caller_in_close.store(false);
      std::lock_guard<std::mutex> lock(job->mu);
      t.rc = rc;
      t.end_ns = NowNs();
      t.done = true;
      if (rc != 0) t.error.assign(error, strnlen(error, sizeof error));
    }
    std::lock_guard<std::mutex> lock(job->mu);
    // Wake the waiting thread only when everything is done: a wake per device would cost a
    // context switch each (the waiter's poll interval handles growing the thread count).
    if (++job->groups_done == job->groups.size()) job->cv.notify_all();
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
// many groups claimed as pullers, so none is merely slow to start) and no device finished for a
// whole poll interval while others wait. Doubling: a few slow devices do not cost 64 starts.
void MaybeGrow(const std::shared_ptr<Job> &job, std::unique_lock<std::mutex> &lock, bool quiet,
               size_t done_before) {
  size_t claimed = std::min(job->next.load(), job->groups.size());
  if (!quiet || job->groups_done != done_before || claimed < job->pullers || claimed >= job->groups.size()) return;
  size_t want = std::min({job->groups.size() - claimed, job->pullers, kMaxCloseThreads - std::min(job->pullers, kMaxCloseThreads)});
  lock.unlock();
  size_t started = StartPullers(job, want);
  lock.lock();
  job->pullers += started;
}

// `type:index/service` of every close not finished, with job->mu held.
std::string PendingList(Job &job) {
  std::string pending;
  for (auto &group : job.groups)
    for (Task &t : group)
      if (!t.done) {
        if (!pending.empty()) pending += ", ";
        pending += TypeName(t.key.type) + ":" + std::to_string(t.key.index) + "/" + t.key.service;
      }
  return pending;
}

void FastExitHook(int status, void *) {
  fflush(nullptr);
  _exit(status);
}

// Records and prints what a run did; past the deadline, warns and (per onTimeout) ends the
// process with its exit code. late_is_timeout: the manager already warned, so closes that
// finished after the deadline count as timed out. Returns the number of closes not ok.
int Conclude(Job &job, bool timed_out, bool late_is_timeout, TimeoutAction on_deadline, int exit_code) {
  State &s = S();
  std::vector<ReportLine> lines;
  std::string pending;
  int failures = 0;
  {
    std::lock_guard<std::mutex> lock(job.mu);
    const int64_t now = NowNs();
    pending = PendingList(job);
    for (auto &group : job.groups) {
      for (Task &t : group) {
        ReportLine r;
        r.type = t.key.type;
        r.index = t.key.index;
        r.service = t.key.service;
        r.layer = job.layer;
        if (t.done && !(late_is_timeout && t.end_ns > job.deadline_ns)) {
          r.ms = (t.end_ns - t.start_ns) / 1e6;
          r.outcome = t.rc == 0 ? "ok" : "error";
          if (t.rc != 0) r.error = !t.error.empty() ? t.error : "close returned " + std::to_string(t.rc);
        } else if (t.done) {
          r.ms = (t.end_ns - t.start_ns) / 1e6;
          r.outcome = "timeout";
          r.error = "finished after the deadline";
        } else {
          r.ms = t.started ? (now - t.start_ns) / 1e6 : 0;
          r.outcome = "timeout";
          r.error = t.started ? "still running at the deadline" : "not started before the deadline";
        }
        if (strcmp(r.outcome, "ok") != 0) failures++;
        lines.push_back(std::move(r));
      }
    }
  }

  // Native teardown reports on stderr itself; the explicit JS call reports through warnings.
  const bool explicit_call = on_deadline == TimeoutAction::kNone;
  std::string out;
  for (const ReportLine &r : lines) {
    if (!explicit_call && strcmp(r.outcome, "error") == 0)
      out += "devexit: close of " + TypeName(r.type) + ":" + std::to_string(r.index) + "/" + r.service +
             " failed: " + r.error + "\n";
    if (s.report_mode == kReportJson) {
      out += "devexit:report " + LineJson(r) + "\n";
    } else if (s.report_mode == kReportText) {
      char ms[32];
      snprintf(ms, sizeof ms, "%.2f", r.ms);
      out += "devexit: " + std::string(r.outcome) + " " + TypeName(r.type) + ":" + std::to_string(r.index) + "/" +
             r.service + " in " + ms + " ms (" + r.layer + ")\n";
    }
  }
  {
    std::lock_guard<std::mutex> lock(s.report_mu);
    for (auto &r : lines) s.report.push_back(std::move(r));
  }

  if (timed_out) {
    int code = exit_code >= 0 ? exit_code : s.exit_code.load();
    bool do_exit = s.on_timeout.load() == kTimeoutExit && on_deadline != TimeoutAction::kNone;
    out += "devexit: closing services took longer than " + std::to_string(s.timeout_ms.load()) +
           " ms; still running: " + pending + "; " +
           (do_exit ? "skipping library teardown (exit code kept)" : "continuing (DEVEXIT_ON_TIMEOUT=warn)") + "\n";
    WriteAll(2, out);
    if (do_exit) {
      if (on_deadline == TimeoutAction::kExitNow && code >= 0) {
        fflush(nullptr);
        _exit(code);
      }
      // The exit status is not known here (main-thread TLS destructor): an on_exit hook
      // registered now runs before every other exit handler and sees it.
      on_exit(FastExitHook, nullptr);
    }
  } else if (!out.empty()) {
    WriteAll(2, out);
  }
  return failures;
}

// Inline runs only: grows the pullers while the caller is busy in a close, and acts at the
// deadline if the caller is stuck inside one (the caller handles it whenever it is waiting).
void Manage(std::shared_ptr<Job> job) {
  State &s = S();
  std::unique_lock<std::mutex> lock(job->mu);
  while (!job->caller_returned.load() && job->groups_done < job->groups.size()) {
    int64_t left = job->deadline_ns - NowNs();
    if (left <= 0) {
      if (!job->caller_in_close.load() || job->timeout_claimed.exchange(true)) return;
      bool do_exit = job->exit_on_timeout && s.on_timeout.load() == kTimeoutExit && job->exit_code >= 0;
      if (do_exit) {
        lock.unlock();
        Conclude(*job, true, false, TimeoutAction::kExitNow, job->exit_code);  // ends the process
        return;
      }
      std::string pending = PendingList(*job);
      lock.unlock();
      WriteAll(2, "devexit: closing services took longer than " + std::to_string(s.timeout_ms.load()) +
                      " ms; still running: " + pending + "; continuing (DEVEXIT_ON_TIMEOUT=warn)\n");
      return;
    }
    size_t done_before = job->groups_done;
    bool quiet = job->cv.wait_for(lock, std::chrono::nanoseconds(std::min<int64_t>(left, kGrowPollNs))) ==
                 std::cv_status::timeout;
    MaybeGrow(job, lock, quiet, done_before);
  }
}

// A manager thread started with the first registration and parked until an exit needs it, so
// that starting one is not on the exit path. A second job while it is busy gets a fresh thread.
struct Managers {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<Job> job;
  bool parked_thread = false;  // started and idle
};
Managers &M() {
  static Managers *m = new Managers();
  return *m;
}

void ParkedManager() {
  Managers &m = M();
  std::unique_lock<std::mutex> lock(m.mu);
  for (;;) {
    m.cv.wait(lock, [&] { return m.job != nullptr; });
    std::shared_ptr<Job> job = std::move(m.job);
    m.job = nullptr;
    m.parked_thread = false;
    lock.unlock();
    Manage(std::move(job));
    lock.lock();
    m.parked_thread = true;
  }
}

void StartParkedManager() {
  Managers &m = M();
  std::lock_guard<std::mutex> lock(m.mu);
  static bool started = false;
  if (started) return;
  try {
    std::thread(ParkedManager).detach();
    started = m.parked_thread = true;
  } catch (...) {
    // No parked manager: exits start one when needed.
  }
}

void HandToManager(const std::shared_ptr<Job> &job) {
  Managers &m = M();
  {
    std::lock_guard<std::mutex> lock(m.mu);
    if (m.parked_thread && m.job == nullptr) {
      m.job = job;
      m.cv.notify_one();
      return;
    }
  }
  try {
    std::thread(Manage, job).detach();
  } catch (...) {
    // No manager: the caller still runs every close, only without a watchdog.
  }
}

// Waits for a close that another layer is running, so that this layer does not let the
// runtimes tear down under it.
void WaitInFlight(int64_t deadline_ns) {
  State &s = S();
  std::unique_lock<std::mutex> lock(s.flight_mu);
  while (s.in_flight > 0) {
    int64_t left = deadline_ns - NowNs();
    if (left <= 0) return;
    s.flight_cv.wait_for(lock, std::chrono::nanoseconds(left));
  }
}


}  // namespace

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string JsonEscape(const std::string &in) {
  std::string out;
  out.reserve(in.size());
  for (unsigned char c : in) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char b[8];
          snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

size_t CopyOut(const std::string &s, char *buf, size_t size) {
  if (buf && size > 0) {
    size_t n = std::min(s.size(), size - 1);
    memcpy(buf, s.data(), n);
    buf[n] = 0;
  }
  return s.size();
}

uint32_t EnabledLayers() { return S().layers; }

int RunClose(const char *layer, bool mark_exiting, TimeoutAction on_deadline, int exit_code) {
  State &s = S();
  const int64_t start = NowNs();
  const int64_t deadline = start + s.timeout_ms.load() * 1000000;
  std::vector<std::pair<Key, Entry>> taken;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (mark_exiting) s.exiting.store(1);
    taken.reserve(s.entries.size());
    for (auto &kv : s.entries) taken.emplace_back(kv.first, kv.second);
    s.entries.clear();
    if (!taken.empty()) {
      std::lock_guard<std::mutex> flight(s.flight_mu);
      s.in_flight++;
    }
  }
  if (taken.empty()) {
    WaitInFlight(deadline);
    return 0;
  }

  // Group by device; inside a device, last registered closes first.
  std::sort(taken.begin(), taken.end(), [](const auto &a, const auto &b) {
    if (a.first.type != b.first.type) return a.first.type < b.first.type;
    if (a.first.index != b.first.index) return a.first.index < b.first.index;
    return a.second.seq > b.second.seq;
  });
  auto job = std::make_shared<Job>();
  job->deadline_ns = deadline;
  job->layer = layer;
  for (size_t i = 0; i < taken.size(); i++) {
    bool same = i > 0 && taken[i].first.type == taken[i - 1].first.type &&
                taken[i].first.index == taken[i - 1].first.index;
    if (!same) job->groups.emplace_back();
    Task t;
    t.key = std::move(taken[i].first);
    t.entry = taken[i].second;
    job->groups.back().push_back(std::move(t));
  }

  // Where the closes run. The caller is the main thread in the JS 'exit' layer and in
  // closeServices(): no service runs there, so it takes groups itself (a new thread can take a
  // millisecond to be scheduled) while a manager thread adds pullers for slow devices and acts at
  // the deadline if the caller is stuck in a close. Anywhere else (the TLS layer, whose exit code
  // is unknown, and exit() called on any thread, perhaps a service's own) closes never run on
  // the calling thread: it waits, and grows the pullers itself.
  const bool inline_run = on_deadline == TimeoutAction::kNone ||
                          (on_deadline == TimeoutAction::kExitNow && exit_code >= 0 && OnMainThread());
  job->exit_on_timeout = on_deadline == TimeoutAction::kExitNow;
  job->exit_code = exit_code >= 0 ? exit_code : s.exit_code.load();
  if (inline_run) {
    job->pullers = 1;
    HandToManager(job);
    RunGroups(job, true);
  } else {
    job->pullers = StartPullers(job, 1);
    if (job->pullers == 0) RunGroups(job, false);  // last resort
  }

  bool timed_out = false;
  {
    std::unique_lock<std::mutex> lock(job->mu);
    while (job->groups_done < job->groups.size()) {
      int64_t left = deadline - NowNs();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      size_t done_before = job->groups_done;
      bool quiet = job->cv.wait_for(lock, std::chrono::nanoseconds(std::min<int64_t>(left, kGrowPollNs))) ==
                   std::cv_status::timeout;
      if (!inline_run) MaybeGrow(job, lock, quiet, done_before);
    }
    job->caller_returned.store(true);
    job->cv.notify_all();  // lets the manager go
  }
  // A close that ran past the deadline while the manager already warned counts as timed out.
  bool warned_by_manager = job->timeout_claimed.load();
  if (timed_out && job->timeout_claimed.exchange(true)) timed_out = false;  // the manager spoke

  int failures = Conclude(*job, timed_out, warned_by_manager, on_deadline, exit_code);
  {
    std::lock_guard<std::mutex> flight(s.flight_mu);
    s.in_flight--;
    s.flight_cv.notify_all();
  }
  return failures;
}

void InitOwnerState() {
  State &s = S();
  s.type_names = {"", "cpu", "cuda", "hip", "wgpu"};
  s.type_names.resize(16);  // 5..15 reserved for future built-in backends

  const char *guard = getenv("DEVEXIT_GUARD");
  if (guard && (!strcmp(guard, "0") || !strcmp(guard, "off") || !strcmp(guard, "false"))) {
    s.layers = 0;
  } else if (const char *layers = getenv("DEVEXIT_LAYERS")) {
    uint32_t mask = 0;
    if (strstr(layers, "js")) mask |= kLayerJs;
    if (strstr(layers, "tls")) mask |= kLayerTls;
    if (strstr(layers, "atexit")) mask |= kLayerAtexit;
    if (strstr(layers, "all")) mask = kLayerAll;
    s.layers = mask;
  }
  if (const char *t = getenv("DEVEXIT_TIMEOUT_MS")) {
    char *end = nullptr;
    long long v = strtoll(t, &end, 10);
    if (end && *end == 0 && v > 0) s.timeout_ms = v;
    else fprintf(stderr, "devexit: ignoring DEVEXIT_TIMEOUT_MS=%s (expected a positive integer)\n", t);
  }
  if (const char *o = getenv("DEVEXIT_ON_TIMEOUT")) {
    if (!strcmp(o, "warn")) s.on_timeout = kTimeoutWarn;
    else if (!strcmp(o, "exit")) s.on_timeout = kTimeoutExit;
    else fprintf(stderr, "devexit: ignoring DEVEXIT_ON_TIMEOUT=%s (expected exit or warn)\n", o);
  }
  if (const char *r = getenv("DEVEXIT_REPORT")) {
    if (!strcmp(r, "json")) s.report_mode = kReportJson;
    else if (r[0] && strcmp(r, "0") != 0) s.report_mode = kReportText;
  }
}

// ---- the C ABI table ----
namespace {

int AbiRegister(devexit_device_id device, const char *service, devexit_close_fn close, void *ctx) {
  if (!close || !ValidName(service)) return DEVEXIT_ERR_INVALID;
  State &s = S();
  bool first;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.exiting.load()) return DEVEXIT_ERR_EXITING;
    try {
      auto res = s.entries.try_emplace(Key{device.type, device.index, service}, Entry{close, ctx, s.seq + 1});
      if (!res.second) return DEVEXIT_ALREADY_REGISTERED;
    } catch (const std::bad_alloc &) {
      return DEVEXIT_ERR_NOMEM;
    }
    first = ++s.seq == 1;
  }
  if (first) StartParkedManager();
  return DEVEXIT_OK;
}

int AbiForget(devexit_device_id device, const char *service) {
  if (!ValidName(service)) return DEVEXIT_ERR_INVALID;
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.entries.erase(Key{device.type, device.index, service}) ? DEVEXIT_OK : DEVEXIT_NOT_FOUND;
}

int AbiIsExiting() { return S().exiting.load() ? 1 : 0; }


int AbiDeviceType(const char *name) {
  if (!ValidName(name)) return DEVEXIT_ERR_INVALID;
  State &s = S();
  std::lock_guard<std::mutex> lock(s.types_mu);
  for (size_t i = 1; i < s.type_names.size(); i++)
    if (s.type_names[i] == name) return static_cast<int>(i);
  if (s.type_names.size() > 0xFFFF) return DEVEXIT_ERR_NOMEM;
  s.type_names.emplace_back(name);
  return static_cast<int>(s.type_names.size() - 1);
}

int AbiCloseAll(const char *layer, int mark_exiting) {
  return RunClose(layer && layer[0] ? layer : "explicit", mark_exiting != 0, TimeoutAction::kNone, -1);
}

void AbiConfigure(int64_t timeout_ms, int on_timeout) {
  State &s = S();
  if (timeout_ms > 0) s.timeout_ms = timeout_ms;
  if (on_timeout == kTimeoutExit || on_timeout == kTimeoutWarn) s.on_timeout = on_timeout;
}

size_t AbiReportJson(char *buf, size_t size) {
  State &s = S();
  std::string out;
  {
    std::lock_guard<std::mutex> lock(s.report_mu);
    for (const ReportLine &r : s.report) out += LineJson(r) + "\n";
  }
  return CopyOut(out, buf, size);
}

void AbiSetExitCode(int code) { S().exit_code = code; }

int64_t AbiCloseDeadlineNs() { return NowNs() + S().timeout_ms.load() * 1000000; }

}  // namespace

// Defined in guard.cc.
void RuntimeInitialised(const char *runtime);

const devexit_registry_v1 *OwnTable() {
  static devexit_registry_v1 *table = [] {
    auto *t = new devexit_registry_v1();
    t->abi_version = DEVEXIT_ABI_VERSION;
    t->struct_size = sizeof(devexit_registry_v1);
    t->implementation = "@devexit/native " DEVEXIT_VERSION;
    t->register_close = AbiRegister;
    t->forget = AbiForget;
    t->is_exiting = AbiIsExiting;
    t->runtime_initialised = RuntimeInitialised;
    t->device_type = AbiDeviceType;
    t->close_deadline_ns = AbiCloseDeadlineNs;
    return t;
  }();
  return table;
}

const devexit_host_v1 *OwnHostTable() {
  static devexit_host_v1 *table = [] {
    auto *t = new devexit_host_v1();
    t->abi_version = DEVEXIT_HOST_ABI_VERSION;
    t->struct_size = sizeof(devexit_host_v1);
    t->close_all = AbiCloseAll;
    t->configure = AbiConfigure;
    t->report_json = AbiReportJson;
    t->arm_main_thread = ArmMainThread;
    t->state_json = StateJson;
    t->exiting_flag = reinterpret_cast<const volatile uint32_t *>(&S().exiting);
    t->set_exit_code = AbiSetExitCode;
    return t;
  }();
  return table;
}

// Timeout / mode accessors for the state JSON.
std::string ConfigJson() {
  State &s = S();
  return "\"timeoutMs\":" + std::to_string(s.timeout_ms.load()) + ",\"onTimeout\":\"" +
         (s.on_timeout.load() == kTimeoutExit ? "exit" : "warn") + "\"";
}

}  // namespace devexit
