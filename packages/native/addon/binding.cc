// The JS surface of the registry. Thin: option handling lives in src/ (TS).
#include <napi.h>

#include <string>

#include "registry.h"

namespace devexit {
const devexit_registry_v1 *Registry();
const devexit_host_v1 *Host();
bool IsOwner();
const char *LoadError();
const char *OtherCopyPath();

namespace {


// Reads one of the registry's JSON texts (report_json, state_json): length first, then the text.
std::string ReadJson(size_t (*fn)(char *, size_t)) {
  std::string out(fn(nullptr, 0), '\0');
  if (!out.empty()) fn(&out[0], out.size() + 1);
  return out;
}

Napi::Value IsExiting(const Napi::CallbackInfo &info) {
  return Napi::Boolean::New(info.Env(), Registry()->is_exiting() != 0);
}

// A 4-byte view of the native flag, so that JS reads it without a call. Undefined where the
// runtime refuses external buffers (then JS falls back to isExiting()).
Napi::Value ExitingFlagBuffer(const Napi::CallbackInfo &info) {
  napi_value ab;
  void *data = const_cast<uint32_t *>(Host()->exiting_flag);
  napi_status st = napi_create_external_arraybuffer(info.Env(), data, sizeof(uint32_t), nullptr, nullptr, &ab);
  if (st != napi_ok) {
    // Clear any pending exception left by the refusal.
    napi_value ignored;
    bool pending = false;
    napi_is_exception_pending(info.Env(), &pending);
    if (pending) napi_get_and_clear_last_exception(info.Env(), &ignored);
    return info.Env().Undefined();
  }
  return Napi::Value(info.Env(), ab);
}

Napi::Value DeviceType(const Napi::CallbackInfo &info) {
  std::string name = info[0].As<Napi::String>();
  int id = Registry()->device_type(name.c_str());
  if (id <= 0) throw Napi::Error::New(info.Env(), "devexit: cannot assign a device type to '" + name + "'");
  return Napi::Number::New(info.Env(), id);
}

Napi::Value Forget(const Napi::CallbackInfo &info) {
  devexit_device_id id;
  id.type = static_cast<uint16_t>(info[0].As<Napi::Number>().Uint32Value());
  id.index = info[1].As<Napi::Number>().Uint32Value();
  std::string service = info[2].As<Napi::String>();
  return Napi::Number::New(info.Env(), Registry()->forget(id, service.c_str()));
}

// closeAll(layer, markExiting, exitCode?): exitCode given (the 'exit' event's) means a deadline
// may end the process with it, per the configured onTimeout.
Napi::Value CloseAll(const Napi::CallbackInfo &info) {
  std::string layer = info[0].As<Napi::String>();
  bool mark = info[1].As<Napi::Boolean>();
  int failures;
  if (info.Length() > 2 && info[2].IsNumber() && IsOwner()) {
    failures = RunClose(layer.c_str(), mark, TimeoutAction::kExitNow, info[2].As<Napi::Number>().Int32Value());
  } else {
    if (info.Length() > 2 && info[2].IsNumber()) Host()->set_exit_code(info[2].As<Napi::Number>().Int32Value());
    failures = Host()->close_all(layer.c_str(), mark ? 1 : 0);
  }
  return Napi::Number::New(info.Env(), failures);
}

Napi::Value Configure(const Napi::CallbackInfo &info) {
  int64_t timeout = info[0].IsNumber() ? info[0].As<Napi::Number>().Int64Value() : -1;
  int on_timeout = info[1].IsNumber() ? info[1].As<Napi::Number>().Int32Value() : -1;
  Host()->configure(timeout, on_timeout);
  return info.Env().Undefined();
}

Napi::Value Report(const Napi::CallbackInfo &info) { return Napi::String::New(info.Env(), ReadJson(Host()->report_json)); }
Napi::Value State(const Napi::CallbackInfo &info) { return Napi::String::New(info.Env(), ReadJson(Host()->state_json)); }

Napi::Value JsArmMainThread(const Napi::CallbackInfo &info) {
  std::string by = info.Length() > 0 && info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : "module_init";
  return Napi::Boolean::New(info.Env(), Host()->arm_main_thread(by.c_str()) != 0);
}

Napi::Value SetExitCode(const Napi::CallbackInfo &info) {
  Host()->set_exit_code(info[0].As<Napi::Number>().Int32Value());
  return info.Env().Undefined();
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  if (const char *err = LoadError()) throw Napi::Error::New(env, std::string("devexit: ") + err);
  if (!Registry() || !Host()) throw Napi::Error::New(env, "devexit: the registry failed to initialise");
  // Loaded first in a Worker, the .init_array constructor could not arm the main-thread guard.
  Host()->arm_main_thread("module_init");

  exports["abiVersion"] = Napi::Number::New(env, DEVEXIT_ABI_VERSION);
  exports["isOwner"] = Napi::Boolean::New(env, IsOwner());
  exports["registryAddress"] =
      Napi::BigInt::New(env, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(Registry())));
  if (const char *p = OtherCopyPath()) exports["sharedWith"] = Napi::String::New(env, p);
  exports["isExiting"] = Napi::Function::New(env, IsExiting, "isExiting");
  exports["exitingFlagBuffer"] = Napi::Function::New(env, ExitingFlagBuffer, "exitingFlagBuffer");
  exports["deviceType"] = Napi::Function::New(env, DeviceType, "deviceType");
  exports["forget"] = Napi::Function::New(env, Forget, "forget");
  exports["closeAll"] = Napi::Function::New(env, CloseAll, "closeAll");
  exports["configure"] = Napi::Function::New(env, Configure, "configure");
  exports["report"] = Napi::Function::New(env, Report, "report");
  exports["state"] = Napi::Function::New(env, State, "state");
  exports["armMainThread"] = Napi::Function::New(env, JsArmMainThread, "armMainThread");
  exports["setExitCode"] = Napi::Function::New(env, SetExitCode, "setExitCode");
  return exports;
}

}  // namespace devexit

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return devexit::Init(env, exports); }

NODE_API_MODULE(devexit_native, InitModule)
