// The one backstop policy per process. The native code reads no environment: @devexit/core parses
// DEVEXIT_* once and @devexit/native's JS pushes the result here (apply_settings), so every copy
// of the addon and every realm uses what the registry's owner holds.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

#include "internal.h"

namespace devexit {
namespace {

enum Origin : int { kDefault = 0, kFromEnv = DEVEXIT_SETTINGS_FROM_ENV, kFromApi = DEVEXIT_SETTINGS_FROM_API };

// Never destroyed: exit layers read it after static destructors may have run.
struct Settings {
  std::mutex mu;  // writers, and the source strings
  std::atomic<int64_t> timeout_ms{kDefaultTimeoutMs};
  std::atomic<int> on_timeout{kTimeoutExit};
  std::atomic<uint32_t> layers{kLayerAll};
  std::atomic<int> report{kReportOff};
  int timeout_origin = kDefault, on_timeout_origin = kDefault, layers_origin = kDefault, report_origin = kDefault;
  std::string timeout_source = "the default";
  std::string on_timeout_source = "the default";
};
Settings &Current() {
  static Settings &s = *new Settings();
  return s;
}

int64_t Clamp(int64_t ms) { return std::min(std::max(ms, kMinTimeoutMs), kMaxTimeoutMs); }

// An update from the environment only fills what is still default: the first copy to load
// decides, and a later Worker's load cannot undo configure().
bool Takes(int origin, int current) { return origin == kFromApi || current == kDefault; }

}  // namespace

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t TimeoutMs() { return Current().timeout_ms.load(); }
int OnTimeoutPolicy() { return Current().on_timeout.load(); }
uint32_t EnabledLayers() { return Current().layers.load(); }
ReportMode CurrentReportMode() { return static_cast<ReportMode>(Current().report.load()); }

int64_t DeadlineFromNow() {
  const int64_t now = NowNs();
  const int64_t span = Clamp(TimeoutMs()) * 1000000;  // at most ~2.1e15 ns: no overflow
  return now > INT64_MAX - span ? INT64_MAX : now + span;
}

std::string TimeoutText() {
  Settings &s = Current();
  std::lock_guard<std::mutex> lock(s.mu);
  return std::to_string(s.timeout_ms.load()) + " ms (" + s.timeout_source + ")";
}

std::string PolicyText() {
  Settings &s = Current();
  std::lock_guard<std::mutex> lock(s.mu);
  const std::string policy = std::string("onTimeout '") + (s.on_timeout.load() == kTimeoutExit ? "exit" : "warn") + "'";
  return s.on_timeout_source == "the default" ? policy + ", the default" : policy + " from " + s.on_timeout_source;
}

int ApplySettings(const devexit_settings_v1 *u) {
  if (!u || u->struct_size < sizeof(devexit_settings_v1)) return DEVEXIT_ERR_INVALID;
  if (u->origin != kFromEnv && u->origin != kFromApi) return DEVEXIT_ERR_INVALID;
  if (u->on_timeout >= 0 && u->on_timeout != kTimeoutExit && u->on_timeout != kTimeoutWarn) return DEVEXIT_ERR_INVALID;
  if (u->report >= 0 && u->report > kReportJson) return DEVEXIT_ERR_INVALID;
  if (u->layers >= 0 && (static_cast<uint32_t>(u->layers) & ~static_cast<uint32_t>(kLayerAll)))
    return DEVEXIT_ERR_INVALID;
  Settings &s = Current();
  std::lock_guard<std::mutex> lock(s.mu);
  if (u->timeout_ms >= 0 && Takes(u->origin, s.timeout_origin)) {
    s.timeout_ms = Clamp(u->timeout_ms);
    s.timeout_origin = u->origin;
    if (u->timeout_source) s.timeout_source = u->timeout_source;
  }
  if (u->on_timeout >= 0 && Takes(u->origin, s.on_timeout_origin)) {
    s.on_timeout = u->on_timeout;
    s.on_timeout_origin = u->origin;
    if (u->on_timeout_source) s.on_timeout_source = u->on_timeout_source;
  }
  if (u->layers >= 0 && Takes(u->origin, s.layers_origin)) {
    s.layers = static_cast<uint32_t>(u->layers);
    s.layers_origin = u->origin;
  }
  if (u->report >= 0 && Takes(u->origin, s.report_origin)) {
    s.report = u->report;
    s.report_origin = u->origin;
  }
  return DEVEXIT_OK;
}

// Host ABI 1 (an older copy's configure()): an API update without a named source.
void ConfigureV1(int64_t timeout_ms, int on_timeout) {
  devexit_settings_v1 u{};
  u.struct_size = sizeof u;
  u.origin = kFromApi;
  u.timeout_ms = timeout_ms > 0 ? timeout_ms : -1;
  u.on_timeout = on_timeout == kTimeoutExit || on_timeout == kTimeoutWarn ? on_timeout : -1;
  u.layers = -1;
  u.report = -1;
  u.timeout_source = "configure() of another @devexit/native copy";
  u.on_timeout_source = u.timeout_source;
  ApplySettings(&u);
}

std::string SettingsJson() {
  Settings &s = Current();
  std::lock_guard<std::mutex> lock(s.mu);
  static const char *const kReport[] = {"off", "text", "json"};
  return "\"timeoutMs\":" + std::to_string(s.timeout_ms.load()) + ",\"onTimeout\":\"" +
         (s.on_timeout.load() == kTimeoutExit ? "exit" : "warn") + "\",\"report\":\"" + kReport[s.report.load()] +
         "\",\"sources\":{\"timeoutMs\":\"" + JsonEscape(s.timeout_source) + "\",\"onTimeout\":\"" +
         JsonEscape(s.on_timeout_source) + "\"}";
}

}  // namespace devexit
