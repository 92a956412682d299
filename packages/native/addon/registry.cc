// The registry proper: registrations keyed by (device, service), device types, the exiting flag,
// and the two C tables (devexit.h for backends, devexit_host.h for @devexit/native's binding).
#include <atomic>
#include <cstring>
#include <mutex>
#include <string_view>

#include "internal.h"
#include "key_table.h"

namespace devexit {
namespace {

// The exiting word (host exiting_flag): bit 0 exiting, bit 1 shutdown() began. Any bit refuses
// registrations; JS reads "exiting" as non-zero.
constexpr uint32_t kExitingBit = 1;
constexpr uint32_t kShutdownBit = 2;

// Never destroyed: exit layers run after static destructors may have started.
struct Registrations {
  std::mutex mu;
  KeyTable entries;
  bool registered = false;  // a first registration happened
  std::atomic<uint32_t> exiting{0};

  std::mutex types_mu;
  std::vector<std::string> type_names;  // index = type id
};
Registrations &Reg() {
  static Registrations &r = *new Registrations();
  return r;
}

// The name's length, or 0 when it is not a valid name.
size_t NameLength(const char *s) {
  if (!s) return 0;
  size_t n = 0;
  while (n <= DEVEXIT_MAX_NAME && s[n]) n++;
  return n <= DEVEXIT_MAX_NAME ? n : 0;
}
bool ValidName(const char *s) { return NameLength(s) > 0; }

int AbiRegister(devexit_device_id device, const char *service, devexit_close_fn close, void *ctx) {
  const size_t len = NameLength(service);
  if (!close || len == 0) return DEVEXIT_ERR_INVALID;
  const std::string_view name(service, len);
  // Hashed, and its filter block and index slot fetched (key_table.h), before the lock: inside it
  // the insert reads the filter block at once, and the slot line when the key is placed.
  const uint64_t hash = KeyTable::Hash(device.type, device.index, name);
  Registrations &r = Reg();
  r.entries.Prefetch(hash);
  bool first;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.exiting.load()) return DEVEXIT_ERR_EXITING;
    try {
      if (!r.entries.Insert(hash, device.type, device.index, name, close, ctx)) return DEVEXIT_ALREADY_REGISTERED;
    } catch (const std::bad_alloc &) {
      return DEVEXIT_ERR_NOMEM;
    }
    first = !r.registered;
    r.registered = true;
  }
  if (first) StartParkedManager();
  return DEVEXIT_OK;
}

int AbiForget(devexit_device_id device, const char *service) {
  const size_t len = NameLength(service);
  if (len == 0) return DEVEXIT_ERR_INVALID;
  const std::string_view name(service, len);
  const uint64_t hash = KeyTable::Hash(device.type, device.index, name);
  Registrations &r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.entries.Erase(hash, device.type, device.index, name) ? DEVEXIT_OK : DEVEXIT_NOT_FOUND;
}

// Bit 0 only: bit 1 (shutdown() draining) refuses registrations but keeps JS reachable.
int AbiIsExiting() { return (Reg().exiting.load() & kExitingBit) ? 1 : 0; }

int AbiDeviceType(const char *name) {
  if (!ValidName(name)) return DEVEXIT_ERR_INVALID;
  Registrations &r = Reg();
  std::lock_guard<std::mutex> lock(r.types_mu);
  for (size_t i = 1; i < r.type_names.size(); i++)
    if (r.type_names[i] == name) return static_cast<int>(i);
  if (r.type_names.size() > 0xFFFF) return DEVEXIT_ERR_NOMEM;
  r.type_names.emplace_back(name);
  return static_cast<int>(r.type_names.size() - 1);
}

int64_t AbiCloseDeadlineNs() { return DeadlineFromNow(); }

int HostCloseAll(const char *layer, int mark_exiting) {
  CloseRequest req;
  req.layer = layer && layer[0] ? layer : "explicit";
  req.mark_exiting = mark_exiting != 0;
  return RunClose(req);
}

int HostCloseFromJs(const char *layer, uint32_t flags, int exit_code) {
  CloseRequest req;
  req.layer = layer && layer[0] ? layer : "explicit";
  req.mark_exiting = (flags & DEVEXIT_CLOSE_MARK_EXITING) != 0;
  req.on_js_thread = true;
  req.deadline_ns = TakeJsSessionDeadline();
  if ((flags & DEVEXIT_CLOSE_EXIT_CODE) && exit_code >= 0) {
    req.on_deadline = TimeoutAction::kExitNow;
    req.exit_code = exit_code;
  }
  return RunClose(req);
}

}  // namespace

void InitOwnerState() {
  Registrations &r = Reg();
  std::lock_guard<std::mutex> lock(r.types_mu);
  r.type_names = {"", "cpu", "cuda", "hip", "wgpu"};
  r.type_names.resize(16);  // 5..15 reserved for future built-in backends
}

std::string TypeName(uint16_t type) {
  Registrations &r = Reg();
  std::lock_guard<std::mutex> lock(r.types_mu);
  if (type < r.type_names.size() && !r.type_names[type].empty()) return r.type_names[type];
  return "type" + std::to_string(type);
}

std::vector<Taken> TakeAll(bool mark_exiting) {
  Registrations &r = Reg();
  std::vector<Taken> out;
  std::lock_guard<std::mutex> lock(r.mu);
  if (mark_exiting) r.exiting.fetch_or(kExitingBit);
  out.reserve(r.entries.size());
  r.entries.ForEach([&](const KeyTable::Record &rec, std::string_view service, size_t order) {
    out.push_back(Taken{rec.type, rec.index, std::string(service), Entry{rec.close, rec.ctx, order}});
  });
  r.entries.Clear();
  return out;
}

void MarkExiting() {
  Registrations &r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.exiting.fetch_or(kExitingBit);
}

void BeginShutdown() {
  Registrations &r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.exiting.fetch_or(kShutdownBit);
}

size_t PendingCount() {
  Registrations &r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.entries.size();
}

std::vector<ReportLine> PendingLines(const std::string &layer) {
  Registrations &r = Reg();
  std::vector<ReportLine> out;
  std::lock_guard<std::mutex> lock(r.mu);
  out.reserve(r.entries.size());
  r.entries.ForEach([&](const KeyTable::Record &rec, std::string_view service, size_t) {
    ReportLine line;
    line.type = rec.type;
    line.index = rec.index;
    line.service = std::string(service);
    line.layer = layer;
    out.push_back(std::move(line));
  });
  return out;
}

const volatile uint32_t *ExitingFlag() { return reinterpret_cast<const volatile uint32_t *>(&Reg().exiting); }

const devexit_registry_v1 *OwnTable() {
  static const devexit_registry_v1 *table = [] {
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
  static const devexit_host_v1 *table = [] {
    auto *t = new devexit_host_v1();
    t->abi_version = DEVEXIT_HOST_ABI_VERSION;
    t->struct_size = sizeof(devexit_host_v1);
    t->close_all = HostCloseAll;
    t->configure = ConfigureV1;
    t->report_json = ReportJson;
    t->arm_main_thread = ArmMainThread;
    t->state_json = StateJson;
    t->exiting_flag = ExitingFlag();
    t->set_exit_code = SetExitCode;
    t->apply_settings = ApplySettings;
    t->close_from_js = HostCloseFromJs;
    t->js_close_begin = JsCloseBegin;
    t->js_close_end = JsCloseEnd;
    t->take_warnings = TakeGuardWarnings;
    t->begin_shutdown = BeginShutdown;
    t->close_async = CloseAsync;
    t->hurry_shutdown = MarkExiting;
    t->now_ns = NowNs;
    t->watch = Watch;
    t->unwatch = Unwatch;
    t->end_watch = EndWatch;
    t->end_process = HostEndProcess;
    return t;
  }();
  return table;
}

}  // namespace devexit
