// The JS surface of @devexit/cpu. Argument checking and typed errors live in src/ (TS); this
// layer trusts types but still checks ids and bounds, so a bad call cannot touch freed memory.
#include <napi.h>

#include <cstring>
#include <thread>

#include "device.h"

namespace devexit_cpu {
namespace {

enum { kBadArgs = 6 };

// One realm's view of a process-wide device.
struct Handle {
  Device *dev = nullptr;
  std::shared_ptr<Sink> sink;
};

Handle *H(const Napi::Value &v) { return v.As<Napi::External<Handle>>().Data(); }

void CallJs(napi_env env, napi_value, void *context, void *data) {
  auto *c = static_cast<Completion *>(data);
  if (!env) {  // the TSFN is being torn down with results still queued
    delete c;
    return;
  }
  auto &sink = *static_cast<std::shared_ptr<Sink> *>(context);
  // Every call may fail while a worker is being terminated (JS can no longer run): then the
  // promise is left alone, and only native memory is cleaned up.
  napi_value value = nullptr;
  bool ok = true;
  if (c->status == Done::kOk) {
    if (c->is_read) {
      void *bytes = nullptr;
      napi_value ab;
      ok = napi_create_arraybuffer(env, c->data.size(), &bytes, &ab) == napi_ok &&
           (c->data.empty() || bytes != nullptr);
      if (ok && !c->data.empty()) memcpy(bytes, c->data.data(), c->data.size());
      ok = ok && napi_create_typedarray(env, napi_uint8_array, c->data.size(), ab, 0, &value) == napi_ok;
    } else {
      ok = napi_get_undefined(env, &value) == napi_ok;
    }
    if (ok) napi_resolve_deferred(env, c->deferred, value);
  } else {
    napi_value msg, code;
    ok = napi_create_string_utf8(env, "devexit: the device closed before this command ran", NAPI_AUTO_LENGTH, &msg) ==
             napi_ok &&
         napi_create_error(env, nullptr, msg, &value) == napi_ok &&
         napi_create_string_utf8(env, "ERR_DEVEXIT_DEVICE_CLOSED", NAPI_AUTO_LENGTH, &code) == napi_ok;
    if (ok) {
      napi_set_named_property(env, value, "code", code);
      napi_reject_deferred(env, c->deferred, value);
    }
  }
  if (--sink->pending == 0) napi_unref_threadsafe_function(env, sink->tsfn);
  delete c;
}

void FinalizeSink(napi_env, void *data, void *) {
  auto *holder = static_cast<std::shared_ptr<Sink> *>(data);
  {
    std::lock_guard<std::mutex> lock((*holder)->mu);
    (*holder)->alive = false;
  }
  delete holder;
}

// Added after the TSFN is created, so it runs before Node's own TSFN cleanup (LIFO): from here
// on the queue thread never touches this env's TSFN again (a worker that ended).
void EnvGone(void *arg) {
  auto *holder = static_cast<std::shared_ptr<Sink> *>(arg);
  {
    std::lock_guard<std::mutex> lock((*holder)->mu);
    (*holder)->alive = false;
  }
  delete holder;
}

void EnsureSink(Napi::Env env, Handle *h) {
  if (h->sink) return;
  auto sink = std::make_shared<Sink>();
  auto *ctx = new std::shared_ptr<Sink>(sink);
  napi_value name = Napi::String::New(env, "devexit-cpu-queue");
  napi_status st = napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, ctx, FinalizeSink, ctx, CallJs,
                                                   &sink->tsfn);
  if (st != napi_ok) {
    delete ctx;
    throw Napi::Error::New(env, "devexit: cannot create the completion thread-safe function");
  }
  napi_unref_threadsafe_function(env, sink->tsfn);
  sink->alive = true;
  napi_add_env_cleanup_hook(env, EnvGone, new std::shared_ptr<Sink>(sink));
  h->sink = sink;
  h->dev->AddSink(sink);
}

// A pending promise whose completion goes to this realm's sink.
Completion *NewCompletion(Napi::Env env, Handle *h, bool is_read, napi_value *promise) {
  auto *c = new Completion();
  c->sink = h->sink;
  c->is_read = is_read;
  napi_create_promise(env, &c->deferred, promise);
  return c;
}

void Pending(Napi::Env env, Handle *h) {
  if (h->sink->pending++ == 0) napi_ref_threadsafe_function(env, h->sink->tsfn);
}

Napi::Value Status(Napi::Env env, int s) { return Napi::Number::New(env, s); }

// Enqueues a read or flush with a promise settled from the queue thread; a refused command
// settles its promise at once and returns the status instead.
Napi::Value EnqueueWithCompletion(Napi::Env env, Handle *h, Command &&c, bool is_read) {
  napi_value promise;
  c.done = NewCompletion(env, h, is_read, &promise);
  Completion *done = c.done;
  int s = h->dev->Enqueue(std::move(c));
  if (s != kOk) {
    napi_value undef;
    napi_get_undefined(env, &undef);
    napi_resolve_deferred(env, done->deferred, undef);
    delete done;
    return Status(env, s);
  }
  Pending(env, h);
  return Napi::Value(env, promise);
}

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
  out["registry"] = Napi::Boolean::New(env, Registry(&error) != nullptr);
  if (!error.empty()) out["registryError"] = error;
  return out;
}

// open(index, threads) -> handle
Napi::Value Open(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  uint32_t index = info[0].As<Napi::Number>().Uint32Value();
  uint32_t threads = info[1].As<Napi::Number>().Uint32Value();
  std::string error;
  Device *dev = OpenDevice(index, threads ? threads : DefaultThreads(), &error);
  if (!dev) throw Napi::Error::New(env, error);
  auto *h = new Handle();
  h->dev = dev;
  return Napi::External<Handle>::New(env, h, [](Napi::Env, Handle *p) { delete p; });
}

Napi::Value Closed(const Napi::CallbackInfo &info) { return Napi::Boolean::New(info.Env(), H(info[0])->dev->closed()); }
Napi::Value Threads(const Napi::CallbackInfo &info) { return Napi::Number::New(info.Env(), H(info[0])->dev->threads()); }

// start(handle) -> status; throws when the thread cannot start
Napi::Value Start(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Handle *h = H(info[0]);
  std::string error;
  int s = h->dev->Start(&error);
  if (s == kStartFailed) throw Napi::Error::New(env, "devexit: cpu queue: " + error);
  if (s == kOk) EnsureSink(env, h);
  return Status(env, s);
}

// alloc(handle, bytes) -> id (> 0) or -status
Napi::Value Alloc(const Napi::CallbackInfo &info) {
  uint64_t id = 0;
  int s = H(info[0])->dev->Alloc(static_cast<uint64_t>(info[1].As<Napi::Number>().DoubleValue()), &id);
  return Napi::Number::New(info.Env(), s == kOk ? static_cast<double>(id) : -s);
}

Napi::Value Free(const Napi::CallbackInfo &info) {
  return Status(info.Env(), H(info[0])->dev->Free(static_cast<uint64_t>(info[1].As<Napi::Number>().DoubleValue())));
}

uint64_t U64(const Napi::Value &v) { return static_cast<uint64_t>(v.As<Napi::Number>().DoubleValue()); }

bool InRange(const Buffer *b, uint64_t offset, uint64_t bytes) {
  return offset <= b->size && bytes <= b->size - offset;
}

// write(handle, id, offset, Uint8Array) -> status
Napi::Value Write(const Napi::CallbackInfo &info) {
  Handle *h = H(info[0]);
  Command c;
  c.op = Op::kWrite;
  c.dst = h->dev->Find(U64(info[1]));
  if (!c.dst) return Status(info.Env(), h->dev->closed() ? kClosed : kBadBuffer);
  c.offset = U64(info[2]);
  auto data = info[3].As<Napi::Uint8Array>();
  if (!InRange(c.dst, c.offset, data.ByteLength())) return Status(info.Env(), kOutOfRange);
  c.data.assign(data.Data(), data.Data() + data.ByteLength());
  return Status(info.Env(), h->dev->Enqueue(std::move(c)));
}

// read(handle, id, offset, bytes) -> promise or status
Napi::Value Read(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Handle *h = H(info[0]);
  Command c;
  c.op = Op::kRead;
  c.dst = h->dev->Find(U64(info[1]));
  if (!c.dst) return Status(env, h->dev->closed() ? kClosed : kBadBuffer);
  c.offset = U64(info[2]);
  c.bytes = U64(info[3]);
  if (!InRange(c.dst, c.offset, c.bytes)) return Status(env, kOutOfRange);
  if (!h->sink) return Status(env, kClosed);
  return EnqueueWithCompletion(env, h, std::move(c), true);
}

// fill(handle, id, value, offset, bytes) -> status
Napi::Value Fill(const Napi::CallbackInfo &info) {
  Handle *h = H(info[0]);
  Command c;
  c.op = Op::kFill;
  c.dst = h->dev->Find(U64(info[1]));
  if (!c.dst) return Status(info.Env(), h->dev->closed() ? kClosed : kBadBuffer);
  c.value = info[2].As<Napi::Number>().Uint32Value();
  c.offset = U64(info[3]);
  c.bytes = U64(info[4]);
  if (!InRange(c.dst, c.offset, c.bytes) || c.offset % 4 || c.bytes % 4) return Status(info.Env(), kOutOfRange);
  return Status(info.Env(), h->dev->Enqueue(std::move(c)));
}

// copy(handle, srcId, dstId, bytes, srcOffset, dstOffset) -> status
Napi::Value Copy(const Napi::CallbackInfo &info) {
  Handle *h = H(info[0]);
  Command c;
  c.op = Op::kCopy;
  c.src = h->dev->Find(U64(info[1]));
  c.dst = h->dev->Find(U64(info[2]));
  if (!c.src || !c.dst) return Status(info.Env(), h->dev->closed() ? kClosed : kBadBuffer);
  c.bytes = U64(info[3]);
  c.src_offset = U64(info[4]);
  c.offset = U64(info[5]);
  if (!InRange(c.src, c.src_offset, c.bytes) || !InRange(c.dst, c.offset, c.bytes)) return Status(info.Env(), kOutOfRange);
  return Status(info.Env(), h->dev->Enqueue(std::move(c)));
}

// launch(handle, kernelId, grid, kinds: Uint32Array, values: Float64Array) -> status
Napi::Value Launch(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Handle *h = H(info[0]);
  Command c;
  c.op = Op::kLaunch;
  c.kernel = KernelById(info[1].As<Napi::Number>().Uint32Value());
  if (!c.kernel) return Status(env, kBadArgs);
  c.grid = U64(info[2]);
  auto kinds = info[3].As<Napi::Uint32Array>();
  auto values = info[4].As<Napi::Float64Array>();
  if (kinds.ElementLength() != values.ElementLength()) return Status(env, kBadArgs);
  const size_t n = kinds.ElementLength();
  if (!c.kernel->signature.empty()) {
    if (n != c.kernel->signature.size()) return Status(env, kBadArgs);
    for (size_t i = 0; i < n; i++)
      if (kinds[i] != c.kernel->signature[i]) return Status(env, kBadArgs);
  }
  c.args.resize(n);
  for (size_t i = 0; i < n; i++) {
    devexit_cpu_arg_v1 &a = c.args[i];
    memset(&a, 0, sizeof a);
    a.kind = kinds[i];
    switch (kinds[i]) {
      case DEVEXIT_CPU_ARG_BUFFER: {
        Buffer *b = h->dev->Find(static_cast<uint64_t>(values[i]));
        if (!b) return Status(env, h->dev->closed() ? kClosed : kBadBuffer);
        a.v.buffer.data = b->data;
        a.v.buffer.size = b->size;
        break;
      }
      case DEVEXIT_CPU_ARG_U32: a.v.u32 = static_cast<uint32_t>(values[i]); break;
      case DEVEXIT_CPU_ARG_I32: a.v.i32 = static_cast<int32_t>(values[i]); break;
      case DEVEXIT_CPU_ARG_F32: a.v.f32 = static_cast<float>(values[i]); break;
      default: return Status(env, kBadArgs);
    }
  }
  return Status(env, h->dev->Enqueue(std::move(c)));
}

// flush(handle) -> promise or status
Napi::Value Flush(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Handle *h = H(info[0]);
  if (!h->sink) return Status(env, kClosed);
  Command c;
  c.op = Op::kFlush;
  return EnqueueWithCompletion(env, h, std::move(c), false);
}

// drain(handle) -> promise once everything queued ran, or undefined if there is nothing to wait for
Napi::Value Drain(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Handle *h = H(info[0]);
  if (!h->sink) return env.Undefined();
  {
    std::lock_guard<std::mutex> lock(h->sink->mu);
    if (!h->sink->alive) return env.Undefined();
  }
  napi_value promise;
  Completion *done = NewCompletion(env, h, false, &promise);
  if (!h->dev->BeginDrain(done)) {
    napi_value undef;
    napi_get_undefined(env, &undef);
    napi_resolve_deferred(env, done->deferred, undef);
    delete done;
    return env.Undefined();
  }
  Pending(env, h);
  return Napi::Value(env, promise);
}

// finishClose(handle): the shared close once (finishing what is queued), unregister, release TSFNs.
Napi::Value FinishClose(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Handle *h = H(info[0]);
  std::string error;
  if (h->dev->registered()) {
    if (const devexit_registry_v1 *reg = Registry(&error)) reg->forget(h->dev->id(), "queue");
  }
  // NOT_FOUND from forget means the exit close took it; CloseOnce then waits for that one.
  h->dev->CloseOnce(true, 0, &error);
  h->dev->ReleaseSinks();
  return env.Undefined();
}

Napi::Value Builtin(const Napi::CallbackInfo &info) {
  return Napi::Number::New(info.Env(), BuiltinKernelId(info[0].As<Napi::String>()));
}

// loadKernel(path, entry) -> id; throws with dlerror's text
Napi::Value LoadKernel(const Napi::CallbackInfo &info) {
  std::string error;
  int id = LoadUserKernel(info[0].As<Napi::String>(), info[1].As<Napi::String>(), &error);
  if (id < 0) throw Napi::Error::New(info.Env(), error);
  return Napi::Number::New(info.Env(), id);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports["probe"] = Napi::Function::New(env, Probe, "probe");
  exports["open"] = Napi::Function::New(env, Open, "open");
  exports["closed"] = Napi::Function::New(env, Closed, "closed");
  exports["threads"] = Napi::Function::New(env, Threads, "threads");
  exports["start"] = Napi::Function::New(env, Start, "start");
  exports["alloc"] = Napi::Function::New(env, Alloc, "alloc");
  exports["free"] = Napi::Function::New(env, Free, "free");
  exports["write"] = Napi::Function::New(env, Write, "write");
  exports["read"] = Napi::Function::New(env, Read, "read");
  exports["fill"] = Napi::Function::New(env, Fill, "fill");
  exports["copy"] = Napi::Function::New(env, Copy, "copy");
  exports["launch"] = Napi::Function::New(env, Launch, "launch");
  exports["flush"] = Napi::Function::New(env, Flush, "flush");
  exports["drain"] = Napi::Function::New(env, Drain, "drain");
  exports["finishClose"] = Napi::Function::New(env, FinishClose, "finishClose");
  exports["builtin"] = Napi::Function::New(env, Builtin, "builtin");
  exports["loadKernel"] = Napi::Function::New(env, LoadKernel, "loadKernel");
  return exports;
}

}  // namespace
}  // namespace devexit_cpu

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return devexit_cpu::Init(env, exports); }

NODE_API_MODULE(devexit_cpu, InitModule)
