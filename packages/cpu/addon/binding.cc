// The JS surface of @devexit/cpu: the standard queue binding of @devexit/native's runtime, plus
// what is cpu's own (opening a device, user kernels). Argument checking lives in JS
// (@devexit/backend); the native layer still checks ids and ranges on the queue thread.
#include <napi.h>

#include <thread>

#include "cpu_queue.h"
#include "devexit_queue_binding.hpp"
#include "kernels.h"

namespace devexit_cpu {
namespace {

unsigned DefaultThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n > 8 ? 8 : n;
}

Napi::Value Probe(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  out["defaultThreads"] = DefaultThreads();
  out["compiler"] = Napi::String::New(env, __VERSION__);
  out["kernelAbi"] = DEVEXIT_CPU_KERNEL_ABI;
  std::string error;
  out["registry"] = Napi::Boolean::New(env, devexit::Registry(&error) != nullptr);
  if (!error.empty()) out["registryError"] = error;
  return out;
}

// open(index, threads) -> handle of the process-wide device, its queue service started; or
// { status, error } (the one failure shape, devexit_queue_binding.hpp) when it is refused.
Napi::Value Open(const Napi::CallbackInfo &info) {
  uint32_t index = devexit::queue_binding::U32(info, 0);
  uint32_t threads = devexit::queue_binding::U32(info, 1);
  std::string error;
  return devexit::queue_binding::OpenDevice(info.Env(), OpenDevice(index, threads ? threads : DefaultThreads(), &error), &error);
}

Napi::Value Threads(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), static_cast<CpuQueue *>(devexit::queue_binding::Service(info[0]))->threads());
}

// loadKernel(path, entry) -> id (> 0); throws with dlerror's text
Napi::Value LoadKernel(const Napi::CallbackInfo &info) {
  std::string error;
  int id = LoadUserKernel(info[0].As<Napi::String>(), info[1].As<Napi::String>(), &error);
  if (id < 0) throw Napi::Error::New(info.Env(), error);
  return Napi::Number::New(info.Env(), id);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  devexit::queue_binding::Export(env, exports);
  exports["probe"] = Napi::Function::New(env, Probe, "probe");
  exports["open"] = Napi::Function::New(env, Open, "open");
  exports["threads"] = Napi::Function::New(env, Threads, "threads");
  exports["loadKernel"] = Napi::Function::New(env, LoadKernel, "loadKernel");
  return exports;
}

}  // namespace
}  // namespace devexit_cpu

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return devexit_cpu::Init(env, exports); }

NODE_API_MODULE(devexit_cpu, InitModule)
