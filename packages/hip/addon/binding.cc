// The JS surface of @devexit/hip: the standard queue binding of @devexit/native's runtime, plus
// what is hip's own (probing the runtime, opening a device, loading code objects, the hiprtc
// compiler service). Argument checking lives in JS (@devexit/backend and src/); the native layer
// still checks ids and ranges on the service threads. Refusals are returned, not thrown.
#include <napi.h>

#include "builtin_kernels.h"
#include "devexit_compiler_binding.hpp"
#include "devexit_queue_binding.hpp"
#include "hip_api.h"
#include "hip_compiler.h"
#include "hip_queue.h"
#include "hip_rtc.h"

namespace devexit_hip {
namespace {

namespace qb = devexit::queue_binding;

using qb::Failure;

// libamdhip64 did not load: JS makes it ERR_DEVEXIT_UNAVAILABLE.
Napi::Object Unavailable(Napi::Env env, const std::string &error) {
  return Failure(env, devexit::kStartFailed, error, "", true);
}

Napi::Object Versions(Napi::Env env, const HipApi *api) {
  Napi::Object o = Napi::Object::New(env);
  o["path"] = api->path;
  o["runtimeVersion"] = api->runtime_version;
  o["driverVersion"] = api->driver_version;
  o["hiprtc"] = api->rtc_path;
  o["standin"] = api->standin;
  int major = 0, minor = 0;
  if (api->hiprtcVersion && api->hiprtcVersion(&major, &minor) == 0)
    o["hiprtcVersion"] = std::to_string(major) + "." + std::to_string(minor);
  return o;
}

// probe(): loads the library, initialises HIP on this thread, counts devices.
Napi::Value Probe(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  std::string error;
  out["registry"] = devexit::Registry(&error) != nullptr;
  if (!error.empty()) out["registryError"] = error;
  error.clear();
  const HipApi *api = LoadHip(&error);
  out["loaded"] = api != nullptr;
  if (!api) {
    out["error"] = error;
    return out;
  }
  out["versions"] = Versions(env, api);
  hipError_t init = api->hipInit(0);
  if (const devexit_registry_v1 *reg = devexit::Registry()) reg->runtime_initialised("hip");
  int count = 0;
  hipError_t counted = api->hipGetDeviceCount(&count);
  out["initStatus"] = init;
  out["initName"] = HipErrorText(api, init);
  out["countStatus"] = counted;
  out["countName"] = HipErrorText(api, counted);
  out["count"] = counted == 0 ? count : 0;
  return out;
}

// deviceInfo(index) -> { name, arch } | { error, errorName }
Napi::Value DeviceInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int index = static_cast<int>(qb::U32(info, 0));
  std::string error;
  const HipApi *api = LoadHip(&error);
  if (!api) return Unavailable(env, error);
  char name[256] = {0};
  hipError_t e = api->hipDeviceGetName(name, sizeof name, index);
  if (e != 0) return Failure(env, devexit::kVendorError, "hipDeviceGetName failed: " + HipErrorText(api, e), HipErrorName(api, e));
  Napi::Object out = Napi::Object::New(env);
  out["name"] = std::string(name);
  out["arch"] = DeviceArch(api, index);
  return out;
}

// open(index) -> the handle of the process-wide device, its queue service started (hipInit,
// hipSetDevice and hipStreamCreate run on its thread); or { status, error, errorName }.
Napi::Value Open(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  uint32_t index = qb::U32(info, 0);
  std::string error;
  const HipApi *api = LoadHip(&error);
  if (!api) return Unavailable(env, error);
  return qb::OpenDevice(env, OpenDevice(api, index, &error), &error, &HipQueue::start_error_name);
}

// loadModule(handle, image: Uint8Array, entry, id) -> status; id settles with the kernel's id.
Napi::Value LoadModule(const Napi::CallbackInfo &info) {
  devexit::QueueService *q = qb::Service(info[0]);
  if (!info[1].IsTypedArray() || !info[2].IsString())
    throw Napi::TypeError::New(info.Env(), "devexit: loadModule takes a Uint8Array and an entry name");
  devexit::QueueCommand c;
  c.op = devexit::QueueOp::kCustom;
  auto image = info[1].As<Napi::Uint8Array>();
  c.data.assign(image.Data(), image.Data() + image.ByteLength());
  c.text = info[2].As<Napi::String>().Utf8Value();
  c.completion = qb::Number(info, 3);
  c.sink = qb::Sink(info.Env());
  return Napi::Number::New(info.Env(), q->Enqueue(std::move(c)));
}

Napi::Value CompilerState(Napi::Env env, const HipApi *api, const HipCompiler::State &s) {
  Napi::Object o = Napi::Object::New(env);
  o["initStatus"] = s.init_status;
  o["initName"] = HipErrorText(api, s.init_status);
  o["countStatus"] = s.count_status;
  o["countName"] = HipErrorText(api, s.count_status);
  o["count"] = s.count;
  o["polls"] = static_cast<double>(s.polls);
  return o;
}

// The running compiler, started now if there is none: status kOk and *out, or a refusal.
// *api is null when the library did not load.
int RunningCompiler(int64_t idle_poll_us, const HipApi **api, devexit::ServiceRef<HipCompiler> *out, std::string *error) {
  *api = LoadHip(error);
  if (!*api) return devexit::kStartFailed;
  *out = TheCompiler(*api, idle_poll_us, true, error);
  if (!*out) return devexit::kStartFailed;
  return (*out)->Open(error);
}

// The running compiler, or empty (never started, closed, or no library).
devexit::ServiceRef<HipCompiler> CurrentCompiler() {
  const HipApi *api = LoadHip(nullptr);
  return api ? TheCompiler(api, -1, false, nullptr) : devexit::ServiceRef<HipCompiler>();
}

// startCompiler(idlePollUs) -> what its thread's HIP initialisation returned | { status, error }
Napi::Value StartCompiler(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  int64_t poll = info[0].IsNumber() ? static_cast<int64_t>(qb::Number(info, 0)) : -1;
  const HipApi *api = nullptr;
  devexit::ServiceRef<HipCompiler> c;
  std::string error;
  int status = RunningCompiler(poll, &api, &c, &error);
  if (!api) return Unavailable(env, error);
  if (status != devexit::kOk) return Failure(env, status, error);
  return CompilerState(env, api, c->state());
}

// compile(source, name, options: string[], device, id) -> status; id settles with the code object.
Napi::Value Compile(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  devexit::CompileJob job = devexit::compiler_binding::Job(info, 4);
  double device = qb::Number(info, 3);
  job.device = device >= 0 && device < 65536 ? static_cast<int>(device) : -1;
  const HipApi *api = nullptr;
  devexit::ServiceRef<HipCompiler> c;
  std::string error;
  int status = RunningCompiler(-1, &api, &c, &error);
  if (!api) return Unavailable(env, error);
  if (status != devexit::kOk) return Failure(env, status, error);
  return devexit::compiler_binding::Submit(env, c.get(), std::move(job));
}

// stopCompiler() -> undefined | why its close failed: compilerClose() (the stop rule: queued
// compiles finish first, bounded by the deadline).
Napi::Value StopCompiler(const Napi::CallbackInfo &info) {
  return devexit::compiler_binding::Close(info.Env(), CurrentCompiler().get());
}

Napi::Value CompilerDrain(const Napi::CallbackInfo &info) {
  return devexit::compiler_binding::Drain(info, CurrentCompiler().get());
}

// compilerState() -> the running compiler's state | null
Napi::Value CompilerStateJs(const Napi::CallbackInfo &info) {
  const HipApi *api = LoadHip(nullptr);
  devexit::ServiceRef<HipCompiler> c = CurrentCompiler();
  if (!c || !c->accepting()) return info.Env().Null();
  return CompilerState(info.Env(), api, c->state());
}

// refuseArch(arch) -> { refused?: why } | { unavailable: why }
Napi::Value RefuseArchJs(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  std::string error;
  const HipApi *api = LoadHip(&error);
  if (!api) {
    out["unavailable"] = error;
    return out;
  }
  std::string why = RefuseArch(api, info[0].ToString().Utf8Value());
  if (!why.empty()) out["refused"] = why;
  return out;
}

Napi::Value BuiltinSource(const Napi::CallbackInfo &info) { return Napi::String::New(info.Env(), devexit::kGpuBuiltinSource); }

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  qb::Export(env, exports);
  exports["probe"] = Napi::Function::New(env, Probe, "probe");
  exports["deviceInfo"] = Napi::Function::New(env, DeviceInfo, "deviceInfo");
  exports["open"] = Napi::Function::New(env, Open, "open");
  exports["loadModule"] = Napi::Function::New(env, LoadModule, "loadModule");
  exports["startCompiler"] = Napi::Function::New(env, StartCompiler, "startCompiler");
  exports["compile"] = Napi::Function::New(env, Compile, "compile");
  exports["stopCompiler"] = Napi::Function::New(env, StopCompiler, "stopCompiler");
  exports["compilerDrain"] = Napi::Function::New(env, CompilerDrain, "compilerDrain");
  exports["compilerClose"] = Napi::Function::New(env, StopCompiler, "compilerClose");
  exports["compilerState"] = Napi::Function::New(env, CompilerStateJs, "compilerState");
  exports["refuseArch"] = Napi::Function::New(env, RefuseArchJs, "refuseArch");
  exports["builtinSource"] = Napi::Function::New(env, BuiltinSource, "builtinSource");
  return exports;
}

}  // namespace
}  // namespace devexit_hip

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return devexit_hip::Init(env, exports); }

NODE_API_MODULE(devexit_hip, InitModule)
