// The JS surface of @devexit/example-backend: the standard queue binding, plus probe and open.
#include <napi.h>

#include "devexit_queue_binding.hpp"
#include "host_queue.h"

namespace devexit_example {
namespace {

namespace qb = devexit::queue_binding;

// probe() -> { registry, registryError? }: nothing else to find on host memory.
Napi::Value Probe(const Napi::CallbackInfo &info) {
  Napi::Object out = Napi::Object::New(info.Env());
  std::string error;
  out["registry"] = devexit::Registry(&error) != nullptr;
  if (!error.empty()) out["registryError"] = error;
  return out;
}

// open(index) -> the device's handle, its queue service started; or the failure shape.
Napi::Value Open(const Napi::CallbackInfo &info) {
  std::string error;
  return qb::OpenDevice(info.Env(), OpenDevice(qb::U32(info, 0), &error), &error);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  qb::Export(env, exports);
  exports["probe"] = Napi::Function::New(env, Probe, "probe");
  exports["open"] = Napi::Function::New(env, Open, "open");
  return exports;
}

}  // namespace
}  // namespace devexit_example

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return devexit_example::Init(env, exports); }

NODE_API_MODULE(devexit_example, InitModule)
