// What the addon's files share. Everything below the binding is pure native code: it runs in
// exit layers where V8, libuv and the platform are gone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "devexit.h"
#include "devexit_host.h"
#include "platform.h"

namespace devexit {

// Exit layers, as bits of the layer mask (DEVEXIT_LAYERS, parsed in @devexit/core).
enum Layer : uint32_t {
  kLayerJs = DEVEXIT_LAYER_JS,          // the JS 'exit' hook and process.reallyExit (in @devexit/core)
  kLayerTls = DEVEXIT_LAYER_TLS,        // main-thread thread_local destructor (glibc)
  kLayerAtexit = DEVEXIT_LAYER_ATEXIT,  // exit handlers: at load and after each runtime's first use
  kLayerAll = kLayerJs | kLayerTls | kLayerAtexit,
};

enum OnTimeout : int { kTimeoutExit = DEVEXIT_ON_TIMEOUT_EXIT, kTimeoutWarn = DEVEXIT_ON_TIMEOUT_WARN };
enum ReportMode : int { kReportOff = DEVEXIT_REPORT_OFF, kReportText = DEVEXIT_REPORT_TEXT, kReportJson = DEVEXIT_REPORT_JSON };

int64_t NowNs();

// ---- settings.cc: the one policy per process, pushed by @devexit/native's JS ----
constexpr int64_t kDefaultTimeoutMs = 3000;
constexpr int64_t kMinTimeoutMs = 1;
constexpr int64_t kMaxTimeoutMs = 2147483647;  // same range as @devexit/core
int64_t TimeoutMs();
int OnTimeoutPolicy();
uint32_t EnabledLayers();
ReportMode CurrentReportMode();
// "500 ms (DEVEXIT_TIMEOUT_MS=500)": the deadline and the setting it came from.
std::string TimeoutText();
// "onTimeout 'exit' (the default)": the policy and the setting it came from.
std::string PolicyText();
int ApplySettings(const devexit_settings_v1 *update);
void ConfigureV1(int64_t timeout_ms, int on_timeout);
// Fields of the state JSON object (no braces).
std::string SettingsJson();
// now + the timeout, saturating.
int64_t DeadlineFromNow();

// ---- report.cc ----
struct ReportLine {
  uint16_t type = 0;
  uint32_t index = 0;
  std::string service;
  std::string layer;
  double ms = 0;
  const char *outcome = "ok";  // "ok" | "error" | "timeout"
  std::string error;
  // The "shutdown" layer, as the close said (DEVEXIT_NOTE_*): drained 1 (nothing dropped) or 0,
  // and how many queued commands it dropped; -1 when it did not say.
  int drained = -1;
  int64_t dropped = -1;
};
std::string JsonEscape(const std::string &s);
size_t CopyOut(const std::string &s, char *buf, size_t size);
std::string ServiceName(uint16_t type, uint32_t index, const std::string &service);  // cpu:0/queue
// The report line, as @devexit/core's formatReportLine writes it: text or `devexit:report {json}`.
std::string FormatReportLine(const ReportLine &r, ReportMode mode);
// What is printed for these closes: report lines per DEVEXIT_REPORT, and failures (exit layers:
// an explicit close reports them through JS warnings).
std::string ReportText(const std::vector<ReportLine> &lines, bool failures);
void RecordReport(std::vector<ReportLine> lines);
// The lines as JSON, one per line (the report_json format).
std::string ReportLinesJson(const std::vector<ReportLine> &lines);
size_t ReportJson(char *buf, size_t size);
// Warnings for @devexit/native's JS to emit once per process (a layer that could not be armed).
void AddWarning(const std::string &text);
size_t TakeWarnings(char *buf, size_t size);

// ---- registry.cc: keys, device types, the ABI tables ----
struct Entry {
  devexit_close_fn close;
  void *ctx;
  uint64_t seq;  // registration order among the closes taken together (younger: larger)
};
struct Taken {
  uint16_t type;
  uint32_t index;
  std::string service;
  Entry entry;
};
void InitOwnerState();
std::string TypeName(uint16_t type);
// Takes every registration (marking the process exiting first if asked).
std::vector<Taken> TakeAll(bool mark_exiting);
void MarkExiting();
// shutdown() began: registrations are refused (bit 1 of the exiting word), is_exiting() stays 0.
void BeginShutdown();
const volatile uint32_t *ExitingFlag();
size_t PendingCount();
// The registrations not yet taken, as report lines of `layer` (outcome and error left to the caller).
std::vector<ReportLine> PendingLines(const std::string &layer);
const devexit_registry_v1 *OwnTable();
const devexit_host_v1 *OwnHostTable();

// ---- close_engine.cc ----
// What the caller of RunClose may do when the deadline passes.
enum class TimeoutAction {
  kNone,          // explicit close: report only
  kExitNow,       // an exit whose code is known (or unknown: then warn and continue)
  kExitFirstHook  // main-thread TLS layer: an on_exit hook registered now sees the status
};
struct CloseRequest {
  const char *layer = "explicit";
  bool mark_exiting = false;
  TimeoutAction on_deadline = TimeoutAction::kNone;
  int exit_code = -1;       // the code of the exit being closed for; < 0: unknown
  bool on_js_thread = false;  // no service runs on the caller: it may run closes itself
  int64_t deadline_ns = 0;  // 0: now + the timeout
  int64_t call_deadline_ns = 0;  // what each close is told, when not the job's deadline (shutdown)
  std::vector<ReportLine> *lines_out = nullptr;  // receives this job's report lines
};
// Runs every registered close. Returns the number of closes not ok.
int RunClose(const CloseRequest &request);
// Host close_async: RunClose on a new thread for shutdown(); see devexit_host.h.
int CloseAsync(const char *layer, int64_t drain_deadline_ns, devexit_closes_done_fn done, void *ctx);
// True once an exit layer (not an explicit close, not shutdown()) began: JS may be going away.
bool ExitBegan();
void StartParkedManager();
void SetExitCode(int code);
int KnownExitCode();
// Flushes stdio and ends the process now, skipping exit handlers. Claims the end once: a second
// caller waits for the first.
[[noreturn]] void EndProcess(int code);

// ---- watchdog.cc: a deadline around the JS layer ----
void JsCloseBegin(const char *layer, int exit_code, devexit_device_id device, const char *service);
int JsCloseEnd();
void Watch(const devexit_watch_v1 *watch);
int Unwatch();
void EndWatch();
// Host end_process: text to stderr, then EndProcess(code), or the end by `signal` (> 0).
void HostEndProcess(int code, int signal, const char *text);
// The deadline of the JS layer in progress on this thread (then it ends), or 0.
int64_t TakeJsSessionDeadline();

// ---- guard.cc: exit layers ----
int ArmMainThread(const char *by);
size_t StateJson(char *buf, size_t size);
void RuntimeInitialised(const char *runtime);
// Registers a hook that ends the process with the exit status before any other exit handler runs,
// where handlers see the status (glibc on_exit); false elsewhere.
bool AddFastExitHook();
// TakeWarnings, plus the main-thread guard's (host take_warnings).
size_t TakeGuardWarnings(char *buf, size_t size);
// For the binding: the registry this copy uses (its own or the owner's), and why there is none.
const devexit_registry_v1 *Registry();
const devexit_host_v1 *Host();
bool IsOwner();
const char *LoadError();
const char *OtherCopyPath();

}  // namespace devexit
