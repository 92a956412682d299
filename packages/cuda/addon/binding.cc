// The JS surface of @devexit/cuda: the standard queue binding of @devexit/native's runtime, plus
// what is CUDA's own (probing libcuda and NVRTC, opening a device, loading modules, the compiler
// service). Argument checking lives in JS (@devexit/backend); the service threads still check
// ids and ranges.
#include <napi.h>

#include "builtins.h"
#include "compiler.h"
#include "cuda_api.h"
#include "cuda_queue.h"
#include "devexit_compiler_binding.hpp"
#include "devexit_queue_binding.hpp"
#include "nvrtc_api.h"

namespace devexit_cuda {
namespace {

using devexit::queue_binding::Index;
using devexit::queue_binding::Number;
using devexit::queue_binding::U32;

using devexit::compiler_binding::Str;
using devexit::queue_binding::Failure;

// probe(): loads libcuda and NVRTC, runs cuInit once per process and counts devices. Never throws
// for CUDA's sake: what failed is in the answer.
Napi::Value Probe(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  std::string registry_error;
  out["registry"] = devexit::Registry(&registry_error) != nullptr;
  if (!registry_error.empty()) out["registryError"] = registry_error;

  Napi::Object cuda = Napi::Object::New(env);
  std::string error;
  const CudaApi *api = LoadCuda(&error);
  cuda["loaded"] = api != nullptr;
  if (!api) {
    cuda["error"] = error;
  } else {
    cuda["path"] = api->path;
    cuda["driverVersion"] = api->driver_version;
    if (!api->standin.empty()) cuda["standin"] = api->standin;
    CUresult init = InitCuda(api);
    cuda["init"] = init;
    cuda["initName"] = CudaErrorName(api, init);
    int count = 0;
    CUresult cs = init == CUDA_SUCCESS ? api->cuDeviceGetCount(&count) : init;
    cuda["countStatus"] = cs;
    cuda["countName"] = CudaErrorName(api, cs);
    cuda["count"] = cs == CUDA_SUCCESS ? count : 0;
  }
  out["cuda"] = cuda;

  Napi::Object nvrtc = Napi::Object::New(env);
  error.clear();
  const NvrtcApi *rtc = LoadNvrtc(&error);
  nvrtc["loaded"] = rtc != nullptr;
  if (!rtc) {
    nvrtc["error"] = error;
  } else {
    nvrtc["path"] = rtc->path;
    nvrtc["version"] = std::to_string(rtc->major) + "." + std::to_string(rtc->minor);
    Napi::Array archs = Napi::Array::New(env, rtc->archs.size());
    for (size_t i = 0; i < rtc->archs.size(); i++) archs.Set(static_cast<uint32_t>(i), rtc->archs[i]);
    nvrtc["archs"] = archs;
  }
  out["nvrtc"] = nvrtc;
  return out;
}

// deviceInfo(index) -> { name, major, minor, totalMem } | { error, errorName }
Napi::Value DeviceInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const int index = static_cast<int>(U32(info, 0));
  std::string error;
  const CudaApi *api = LoadCuda(&error);
  if (!api) return Failure(env, devexit::kStartFailed, error, "", true);
  auto fail = [&](const char *call, CUresult r) {
    return Failure(env, devexit::kVendorError, std::string(call) + " failed: " + DescribeCuda(api, r), CudaErrorName(api, r));
  };
  CUresult r = InitCuda(api);
  if (r != CUDA_SUCCESS) return fail("cuInit", r);
  CUdevice dev = 0;
  if ((r = api->cuDeviceGet(&dev, index)) != CUDA_SUCCESS) return fail("cuDeviceGet", r);
  char name[256] = {0};
  if ((r = api->cuDeviceGetName(name, sizeof name - 1, dev)) != CUDA_SUCCESS) return fail("cuDeviceGetName", r);
  int major = 0, minor = 0;
  if ((r = api->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) != CUDA_SUCCESS ||
      (r = api->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) != CUDA_SUCCESS)
    return fail("cuDeviceGetAttribute", r);
  size_t total = 0;
  if (api->cuDeviceTotalMem) api->cuDeviceTotalMem(&total, dev);
  Napi::Object out = Napi::Object::New(env);
  out["name"] = name;
  out["major"] = major;
  out["minor"] = minor;
  out["totalMem"] = static_cast<double>(total);
  return out;
}

// open(index, arch) -> the device's queue service, started; or { status, error, errorName }.
// `arch` is the target its built-in kernels were compiled for (compiler service, same process).
Napi::Value Open(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const uint32_t index = U32(info, 0);
  const std::string arch = Str(info, 1);
  std::string error;
  const CudaApi *api = LoadCuda(&error);
  if (!api) return Failure(env, devexit::kStartFailed, error, "", true);
  return devexit::queue_binding::OpenDevice(env, OpenDevice(api, index, arch, &error), &error, &CudaQueue::start_error_name);
}

// loadModule(handle, image, entry, id) -> status; id settles with the new kernel's id (value).
Napi::Value LoadModule(const Napi::CallbackInfo &info) {
  devexit::QueueService *q = devexit::queue_binding::Service(info[0]);
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(info.Env(), "devexit: loadModule takes a Uint8Array");
  auto image = info[1].As<Napi::Uint8Array>();
  devexit::QueueCommand c;
  c.op = devexit::QueueOp::kCustom;
  c.data.assign(image.Data(), image.Data() + image.ByteLength());
  c.text = Str(info, 2);
  c.completion = Number(info, 3);
  c.sink = devexit::queue_binding::Sink(info.Env());
  return Napi::Number::New(info.Env(), q->Enqueue(std::move(c)));
}

// startCompiler(keepalive, intervalUs) -> { status, error? }: the compiler service, started once.
Napi::Value StartCompiler(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const uint32_t keepalive = U32(info, 0);
  const uint32_t interval = U32(info, 1);
  if (keepalive > 2) throw Napi::RangeError::New(env, "devexit: keepalive must be 0, 1 or 2");
  int status = devexit::kOk;
  std::string error;
  OpenCompiler(static_cast<Keepalive>(keepalive), interval, &status, &error);
  Napi::Object out = Napi::Object::New(env);
  out["status"] = status;
  if (status != devexit::kOk) out["error"] = error;
  return out;
}

// compile(source, name, options, builtinArch, id) -> status; id settles with the PTX (data) and
// the compile's milliseconds (value).
Napi::Value Compile(const Napi::CallbackInfo &info) {
  devexit::CompileJob job = devexit::compiler_binding::Job(info, 4);
  job.builtin_arch = Str(info, 3);
  return devexit::compiler_binding::Submit(info.Env(), RunningCompiler().get(), std::move(job));
}

Napi::Value CompilerState(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  devexit::ServiceRef<Compiler> c = RunningCompiler();
  if (!c) return env.Null();
  Napi::Object out = Napi::Object::New(env);
  out["keepalive"] = static_cast<int>(c->keepalive());
  out["compiles"] = static_cast<double>(c->compiles());
  out["polls"] = static_cast<double>(c->polls());
  if (c->keepalive() == Keepalive::kCuda) {
    out["lastPoll"] = c->last_poll();
    std::string ignored;
    out["lastPollName"] = CudaErrorName(LoadCuda(&ignored), c->last_poll());
  }
  return out;
}

Napi::Value CompilerDrain(const Napi::CallbackInfo &info) {
  return devexit::compiler_binding::Drain(info, RunningCompiler().get());
}

Napi::Value CompilerClose(const Napi::CallbackInfo &info) {
  return devexit::compiler_binding::Close(info.Env(), RunningCompiler().get());
}

Napi::Value BuiltinSource(const Napi::CallbackInfo &info) { return Napi::String::New(info.Env(), devexit::kGpuBuiltinSource); }

Napi::Value BuiltinsCompiled(const Napi::CallbackInfo &info) {
  BuiltinPtx b;
  return Napi::Boolean::New(info.Env(), FindBuiltins(Str(info, 0), &b) && b.ok);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  devexit::queue_binding::Export(env, exports);
  exports["probe"] = Napi::Function::New(env, Probe, "probe");
  exports["deviceInfo"] = Napi::Function::New(env, DeviceInfo, "deviceInfo");
  exports["open"] = Napi::Function::New(env, Open, "open");
  exports["loadModule"] = Napi::Function::New(env, LoadModule, "loadModule");
  exports["startCompiler"] = Napi::Function::New(env, StartCompiler, "startCompiler");
  exports["compile"] = Napi::Function::New(env, Compile, "compile");
  exports["compilerState"] = Napi::Function::New(env, CompilerState, "compilerState");
  exports["compilerDrain"] = Napi::Function::New(env, CompilerDrain, "compilerDrain");
  exports["compilerClose"] = Napi::Function::New(env, CompilerClose, "compilerClose");
  exports["builtinSource"] = Napi::Function::New(env, BuiltinSource, "builtinSource");
  exports["builtinsCompiled"] = Napi::Function::New(env, BuiltinsCompiled, "builtinsCompiled");
  return exports;
}

}  // namespace
}  // namespace devexit_cuda

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return devexit_cuda::Init(env, exports); }

NODE_API_MODULE(devexit_cuda, InitModule)
