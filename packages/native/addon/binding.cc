// The JS surface of the registry. Thin: option handling and validation live in @devexit/core and
// src/ (TS). Every call goes through the host table of the registry's owner, which may be another
// copy of this package, of another version: fields added after host ABI 1 are used only when the
// owner has them.
#include <napi.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "devexit_external_word.hpp"
#include "internal.h"

namespace devexit {
namespace {

bool HostV2() {
  const devexit_host_v1 *h = Host();
  return h->abi_version >= 2 && h->struct_size >= offsetof(devexit_host_v1, take_warnings) + sizeof h->take_warnings;
}

bool HostV3() {
  const devexit_host_v1 *h = Host();
  return h->abi_version >= 3 && h->struct_size >= offsetof(devexit_host_v1, hurry_shutdown) + sizeof h->hurry_shutdown;
}

bool HostV4() {
  const devexit_host_v1 *h = Host();
  return h->abi_version >= 4 && h->struct_size >= offsetof(devexit_host_v1, end_process) + sizeof h->end_process;
}

// Reads one of the registry's texts (report_json, state_json, take_warnings): length, then text.
std::string ReadText(size_t (*fn)(char *, size_t)) {
  std::string out(fn(nullptr, 0), '\0');
  while (!out.empty()) {
    const size_t need = fn(&out[0], out.size() + 1);
    if (need <= out.size()) {
      out.resize(need);
      break;
    }
    out.assign(need, '\0');  // it grew between the calls
  }
  return out;
}

std::string StringArg(const Napi::CallbackInfo &info, size_t i, const char *fallback) {
  return info.Length() > i && info[i].IsString() ? info[i].As<Napi::String>().Utf8Value() : fallback;
}

int32_t IntArg(const Napi::CallbackInfo &info, size_t i, int32_t fallback) {
  return info.Length() > i && info[i].IsNumber() ? info[i].As<Napi::Number>().Int32Value() : fallback;
}

// The exiting word, as the view reads it: shutdown() counts (no new work), not only the exit.
Napi::Value IsExiting(const Napi::CallbackInfo &info) {
  return Napi::Boolean::New(info.Env(), *Host()->exiting_flag != 0);
}

// shutdown(), step 1: refuse new work process-wide, JS still reachable. false: the registry's
// owner is an older copy without it.
Napi::Value BindBeginShutdown(const Napi::CallbackInfo &info) {
  if (!HostV3()) return Napi::Boolean::New(info.Env(), false);
  Host()->begin_shutdown();
  return Napi::Boolean::New(info.Env(), true);
}

// Where close_async's answer goes: a thread-safe function that holds the event loop open while
// the closes run (shutdown() is awaited). A Worker may end first: its environment's cleanup
// deletes the function, so a cleanup hook (added after it, so it runs first) marks it gone.
struct AsyncClose {
  std::mutex mu;
  bool alive = true;
  Napi::ThreadSafeFunction tsfn;
};

struct AsyncResult {
  int failures;
  std::string report;
};

void AsyncCloseEnvGone(void *arg) {
  auto *holder = static_cast<std::shared_ptr<AsyncClose> *>(arg);
  {
    std::lock_guard<std::mutex> lock((*holder)->mu);
    (*holder)->alive = false;
  }
  delete holder;
}

void AsyncCloseDone(void *ctx, int failures, const char *report_json) {
  std::unique_ptr<std::shared_ptr<AsyncClose>> holder(static_cast<std::shared_ptr<AsyncClose> *>(ctx));
  AsyncClose &pending = **holder;
  std::lock_guard<std::mutex> lock(pending.mu);
  if (!pending.alive) return;
  pending.alive = false;  // answered: the cleanup hook has nothing left to do
  auto *result = new AsyncResult{failures, report_json ? report_json : ""};
  const napi_status st = pending.tsfn.NonBlockingCall(result, [](Napi::Env env, Napi::Function fn, AsyncResult *r) {
    std::unique_ptr<AsyncResult> owned(r);
    if (env == nullptr || fn.IsEmpty()) return;
    fn.Call({Napi::Number::New(env, r->failures), Napi::String::New(env, r->report)});
  });
  if (st != napi_ok) delete result;
  pending.tsfn.Release();
}

// closeAsync(layer, drainMs, done(failures, reportJson)): shutdown(), step 2 — every native
// close on a helper thread; services finish their queues for up to drainMs. false: the owner is
// an older copy without it (use closeAll).
Napi::Value BindCloseAsync(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!HostV3()) return Napi::Boolean::New(env, false);
  const std::string layer = StringArg(info, 0, DEVEXIT_LAYER_SHUTDOWN);
  const double drain_ms = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : 0;
  if (info.Length() < 3 || !info[2].IsFunction()) throw Napi::TypeError::New(env, "devexit: closeAsync takes a callback");
  auto pending = std::make_shared<AsyncClose>();
  pending->tsfn = Napi::ThreadSafeFunction::New(env, info[2].As<Napi::Function>(), "devexit-shutdown", 0, 1);
  napi_add_env_cleanup_hook(env, AsyncCloseEnvGone, new std::shared_ptr<AsyncClose>(pending));
  const double ms = drain_ms > 0 ? (drain_ms < 9.0e12 ? drain_ms : 9.0e12) : 0;
  const int64_t deadline = NowNs() + static_cast<int64_t>(ms * 1e6);
  auto *ctx = new std::shared_ptr<AsyncClose>(pending);
  if (Host()->close_async(layer.c_str(), deadline, AsyncCloseDone, ctx) != DEVEXIT_OK) {
    delete ctx;
    {
      std::lock_guard<std::mutex> lock(pending->mu);
      pending->alive = false;
    }
    pending->tsfn.Release();
    throw Napi::Error::New(env, "devexit: cannot start a thread to run the closes");
  }
  return Napi::Boolean::New(env, true);
}

// Ends the drains in progress: what is left is dropped and closed.
Napi::Value BindHurryShutdown(const Napi::CallbackInfo &info) {
  if (HostV3()) Host()->hurry_shutdown();
  return info.Env().Undefined();
}

// A 4-byte view of the native flag, so that JS reads it without a call. Undefined where the
// runtime refuses external buffers (then JS falls back to isExiting()).
Napi::Value ExitingFlagBuffer(const Napi::CallbackInfo &info) {
  napi_value buffer = ExternalWordBuffer(info.Env(), Host()->exiting_flag);
  return buffer ? Napi::Value(info.Env(), buffer) : info.Env().Undefined();
}

Napi::Value DeviceType(const Napi::CallbackInfo &info) {
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(info.Env(), "devexit: name must be a string");
  const std::string name = info[0].As<Napi::String>();
  const int id = Registry()->device_type(name.c_str());
  if (id <= 0) throw Napi::Error::New(info.Env(), "devexit: cannot assign a device type (status " + std::to_string(id) + ")");
  return Napi::Number::New(info.Env(), id);
}

Napi::Value Forget(const Napi::CallbackInfo &info) {
  devexit_device_id id;
  id.type = static_cast<uint16_t>(IntArg(info, 0, 0));
  id.index = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().Uint32Value() : 0;
  const std::string service = StringArg(info, 2, "");
  return Napi::Number::New(info.Env(), Registry()->forget(id, service.c_str()));
}

// closeAll(layer, markExiting, exitCode?): from a JS thread. exitCode given (the exit's) means a
// deadline may end the process with it, per the onTimeout policy in force.
Napi::Value CloseAll(const Napi::CallbackInfo &info) {
  const std::string layer = StringArg(info, 0, "explicit");
  const bool mark = info.Length() > 1 && info[1].ToBoolean().Value();
  const bool has_code = info.Length() > 2 && info[2].IsNumber();
  const int code = IntArg(info, 2, -1);
  int failures;
  if (HostV2()) {
    const uint32_t flags = (mark ? DEVEXIT_CLOSE_MARK_EXITING : 0u) | (has_code ? DEVEXIT_CLOSE_EXIT_CODE : 0u);
    failures = Host()->close_from_js(layer.c_str(), flags, code);
  } else {
    if (has_code) Host()->set_exit_code(code);
    failures = Host()->close_all(layer.c_str(), mark ? 1 : 0);
  }
  return Napi::Number::New(info.Env(), failures);
}

// applySettings({ origin, timeoutMs, onTimeout, layers, report, timeoutSource, onTimeoutSource }):
// numbers as in devexit_host.h, absent = unchanged. Returns the status.
Napi::Value BindApplySettings(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(env, "devexit: settings must be an object");
  Napi::Object o = info[0].As<Napi::Object>();
  auto number = [&](const char *key) -> int64_t {
    Napi::Value v = o.Get(key);
    return v.IsNumber() ? v.As<Napi::Number>().Int64Value() : -1;
  };
  auto text = [&](const char *key) -> std::string {
    Napi::Value v = o.Get(key);
    return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string();
  };
  const std::string timeout_source = text("timeoutSource"), on_timeout_source = text("onTimeoutSource");
  devexit_settings_v1 s{};
  s.struct_size = sizeof s;
  s.origin = text("origin") == "api" ? DEVEXIT_SETTINGS_FROM_API : DEVEXIT_SETTINGS_FROM_ENV;
  s.timeout_ms = number("timeoutMs");
  s.on_timeout = static_cast<int32_t>(number("onTimeout"));
  s.layers = static_cast<int32_t>(number("layers"));
  s.report = static_cast<int32_t>(number("report"));
  s.timeout_source = timeout_source.empty() ? nullptr : timeout_source.c_str();
  s.on_timeout_source = on_timeout_source.empty() ? nullptr : on_timeout_source.c_str();
  if (HostV2()) return Napi::Number::New(env, Host()->apply_settings(&s));
  // An older owner knows only the deadline and the policy.
  Host()->configure(s.timeout_ms, s.on_timeout);
  return Napi::Number::New(env, DEVEXIT_OK);
}

// jsCloseBegin(layer, exitCode, type, index, service): exitCode < 0 for an explicit close.
Napi::Value BindJsCloseBegin(const Napi::CallbackInfo &info) {
  if (!HostV2()) return info.Env().Undefined();
  const std::string layer = StringArg(info, 0, "js-exit"), service = StringArg(info, 4, "");
  devexit_device_id id;
  id.type = static_cast<uint16_t>(IntArg(info, 2, 0));
  id.index = info.Length() > 3 && info[3].IsNumber() ? info[3].As<Napi::Number>().Uint32Value() : 0;
  Host()->js_close_begin(layer.c_str(), IntArg(info, 1, -1), id, service.c_str());
  return info.Env().Undefined();
}

Napi::Value BindJsCloseEnd(const Napi::CallbackInfo &info) {
  return Napi::Boolean::New(info.Env(), HostV2() && Host()->js_close_end() != 0);
}

// watch({ layer, exitCode, signal, type, index, service, what, queue?, started? }, deadlineMs): what runs now on this
// JS thread; false where the owner is older (then jsCloseBegin for closes).
Napi::Value BindWatch(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!HostV4()) return Napi::Boolean::New(env, false);
  if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(env, "devexit: watch takes an object");
  Napi::Object o = info[0].As<Napi::Object>();
  auto text = [&](const char *key) {
    Napi::Value v = o.Get(key);
    return v.IsString() ? v.As<Napi::String>().Utf8Value() : std::string();
  };
  auto number = [&](const char *key, double fallback) {
    Napi::Value v = o.Get(key);
    return v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : fallback;
  };
  const std::string layer = text("layer"), service = text("service"), what = text("what");
  const bool has_queue = o.Get("queue").IsString();
  const std::string queue = text("queue");
  const double ms = info.Length() > 1 && info[1].IsNumber() ? info[1].As<Napi::Number>().DoubleValue() : -1;
  devexit_watch_v1 w{};
  w.struct_size = sizeof w;
  w.layer = layer.c_str();
  w.exit_code = static_cast<int32_t>(number("exitCode", -1));
  w.signal = static_cast<int32_t>(number("signal", 0));
  w.device.type = static_cast<uint16_t>(number("type", 0));
  w.device.index = static_cast<uint32_t>(number("index", 0));
  w.service = service.c_str();
  w.what = what.c_str();
  w.queue = has_queue ? queue.c_str() : nullptr;
  w.started = static_cast<int32_t>(number("started", -1));
  // Not a finite, sane span (Infinity: no deadline): as far as the clock goes.
  w.deadline_ns = ms >= 0 && ms < 9.0e12 ? Host()->now_ns() + static_cast<int64_t>(ms * 1e6) : INT64_MAX;
  Host()->watch(&w);
  return Napi::Boolean::New(env, true);
}

Napi::Value BindUnwatch(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), HostV4() ? Host()->unwatch() : 0);
}

Napi::Value BindEndWatch(const Napi::CallbackInfo &info) {
  if (HostV4()) Host()->end_watch();
  return info.Env().Undefined();
}

// endProcess(code, text, signal?): never returns where the owner can; false where it cannot.
Napi::Value BindEndProcess(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (!HostV4()) return Napi::Boolean::New(env, false);
  const int code = IntArg(info, 0, 1);
  const std::string text = StringArg(info, 1, "");
  const int signal = IntArg(info, 2, 0);
  Host()->end_process(code, signal, text.c_str());
  return Napi::Boolean::New(env, false);
}

Napi::Value BindTakeWarnings(const Napi::CallbackInfo &info) {
  return Napi::String::New(info.Env(), HostV2() ? ReadText(Host()->take_warnings) : std::string());
}

Napi::Value Report(const Napi::CallbackInfo &info) { return Napi::String::New(info.Env(), ReadText(Host()->report_json)); }
Napi::Value State(const Napi::CallbackInfo &info) { return Napi::String::New(info.Env(), ReadText(Host()->state_json)); }

Napi::Value JsArmMainThread(const Napi::CallbackInfo &info) {
  const std::string by = StringArg(info, 0, "module_init");
  return Napi::Boolean::New(info.Env(), Host()->arm_main_thread(by.c_str()) != 0);
}

Napi::Value BindSetExitCode(const Napi::CallbackInfo &info) {
  Host()->set_exit_code(IntArg(info, 0, -1));
  return info.Env().Undefined();
}

// true / false, or undefined where the platform cannot tell (JS then asks worker_threads).
Napi::Value IsMainThread(const Napi::CallbackInfo &info) {
  const int state = MainThreadState();
  if (state < 0) return info.Env().Undefined();
  return Napi::Boolean::New(info.Env(), state == 1);
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  if (const char *err = LoadError()) throw Napi::Error::New(env, std::string("devexit: ") + err);
  if (!Registry() || !Host()) throw Napi::Error::New(env, "devexit: the registry failed to initialise");
  // Loaded first in a Worker, the load-time constructor could not arm the main-thread guard.
  Host()->arm_main_thread("module_init");

  exports["abiVersion"] = Napi::Number::New(env, DEVEXIT_ABI_VERSION);
  exports["hostAbiVersion"] = Napi::Number::New(env, Host()->abi_version);
  exports["isOwner"] = Napi::Boolean::New(env, IsOwner());
  exports["registryAddress"] =
      Napi::BigInt::New(env, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(Registry())));
  if (const char *p = OtherCopyPath()) exports["sharedWith"] = Napi::String::New(env, p);
  exports["isExiting"] = Napi::Function::New(env, IsExiting, "isExiting");
  exports["exitingFlagBuffer"] = Napi::Function::New(env, ExitingFlagBuffer, "exitingFlagBuffer");
  exports["deviceType"] = Napi::Function::New(env, DeviceType, "deviceType");
  exports["forget"] = Napi::Function::New(env, Forget, "forget");
  exports["closeAll"] = Napi::Function::New(env, CloseAll, "closeAll");
  exports["applySettings"] = Napi::Function::New(env, BindApplySettings, "applySettings");
  exports["jsCloseBegin"] = Napi::Function::New(env, BindJsCloseBegin, "jsCloseBegin");
  exports["jsCloseEnd"] = Napi::Function::New(env, BindJsCloseEnd, "jsCloseEnd");
  exports["watch"] = Napi::Function::New(env, BindWatch, "watch");
  exports["unwatch"] = Napi::Function::New(env, BindUnwatch, "unwatch");
  exports["endWatch"] = Napi::Function::New(env, BindEndWatch, "endWatch");
  exports["endProcess"] = Napi::Function::New(env, BindEndProcess, "endProcess");
  exports["takeWarnings"] = Napi::Function::New(env, BindTakeWarnings, "takeWarnings");
  exports["report"] = Napi::Function::New(env, Report, "report");
  exports["state"] = Napi::Function::New(env, State, "state");
  exports["armMainThread"] = Napi::Function::New(env, JsArmMainThread, "armMainThread");
  exports["setExitCode"] = Napi::Function::New(env, BindSetExitCode, "setExitCode");
  exports["beginShutdown"] = Napi::Function::New(env, BindBeginShutdown, "beginShutdown");
  exports["closeAsync"] = Napi::Function::New(env, BindCloseAsync, "closeAsync");
  exports["hurryShutdown"] = Napi::Function::New(env, BindHurryShutdown, "hurryShutdown");
  exports["isMainThread"] = Napi::Function::New(env, IsMainThread, "isMainThread");
  return exports;
}

}  // namespace devexit

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return devexit::Init(env, exports); }

NODE_API_MODULE(devexit_native, InitModule)
