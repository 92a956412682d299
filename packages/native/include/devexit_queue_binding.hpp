// devexit_queue_binding.hpp — the JS surface of a devexit::QueueService (node-addon-api), shared
// by every native backend so that the JS layer (@devexit/backend's NativeQueue) is one.
//
//   Export(env, exports) adds, for handles made by the backend's own open():
//     setDispatcher(fn), setRef(bool)                 this realm's completion sink
//     submit(handle, words: Float64Array, count)      a batch (see DecodeBatch) -> status
//     alloc(handle, bytes)                            -> a buffer id (> 0), or -status
//     write(handle, buffer, offset, Uint8Array)       bytes copied now -> status
//     read(handle, buffer, offset, bytes, id)         -> status; id settles with the bytes
//     flush(handle, id)                               -> status; id settles when reached
//     drain(handle, id)                               stop accepting, id settles when empty
//     close(handle)                                   -> undefined | error message
//     closed(handle)                                  -> boolean
//     closedFlag(handle)                              -> ArrayBuffer (4 bytes, 1 once closed) | undefined
//   A handle is Handle(env, service): an External of the process-wide service, holding a
//   reference to it. Failure() is the one failure shape of open/start calls.
#pragma once

#include <napi.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "devexit_external_word.hpp"
#include "devexit_queue.hpp"

namespace devexit {
namespace queue_binding {

// This realm's state, stored as the env's instance data: deleted when the realm ends (a
// Worker's end, or the main thread's at a natural exit; not at process.exit()).
struct RealmData {
  std::shared_ptr<CompletionSink> sink;
  // Its buffers carry this tag; the services it allocated on, each held until it ends. A device is
  // the process's, not a realm's: a Worker that ended without freeing its buffers left them
  // allocated until the device closed (a pool's Worker allocating 4 MiB per task: main's RSS
  // 73 -> 455 MB over 100 Workers). When the realm ends, each of those services is asked to free
  // what the realm allocated, after every command it sent (the queue is in order); a closed one
  // refuses, and its close freed them already.
  const uint32_t tag = NextTag();
  std::vector<ServiceRef<QueueService>> allocated_on;

  ~RealmData() {
    for (auto &q : allocated_on) {
      QueueCommand c;
      c.op = QueueOp::kFreeRealm;
      c.realm = tag;
      q->Enqueue(std::move(c));
    }
  }

  // A service that began to close frees every buffer itself: let go of it here (a realm that
  // opens and closes devices in a loop would otherwise hold every one it used).
  void AllocatingOn(QueueService *q) {
    const auto closed = [q](const ServiceRef<QueueService> &s) { return s.get() != q && s->closed(); };
    allocated_on.erase(std::remove_if(allocated_on.begin(), allocated_on.end(), closed), allocated_on.end());
    const auto known = [q](const ServiceRef<QueueService> &s) { return s.get() == q; };
    if (std::none_of(allocated_on.begin(), allocated_on.end(), known)) allocated_on.emplace_back(q);
  }

  static uint32_t NextTag() {
    static std::atomic<uint32_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }
};

inline RealmData *Realm(Napi::Env env) {
  RealmData *data = env.GetInstanceData<RealmData>();
  if (!data) {
    data = new RealmData();
    env.SetInstanceData(data);
  }
  return data;
}

// A handle holds a reference to the service until it is collected.
inline Napi::Value Handle(Napi::Env env, QueueService *service) {
  service->Retain();
  return Napi::External<QueueService>::New(env, service, [](Napi::Env, QueueService *s) { s->Release(); });
}

// The one failure shape of every backend's calls that open or start something:
// { status, error, errorName?, unavailable? } (unavailable: the vendor library did not load).
inline Napi::Object Failure(Napi::Env env, int status, const std::string &error, const std::string &name = "",
                            bool unavailable = false) {
  Napi::Object out = Napi::Object::New(env);
  out["status"] = status;
  out["error"] = error;
  if (!name.empty()) out["errorName"] = name;
  if (unavailable) out["unavailable"] = true;
  return out;
}

// open()'s answer for every backend: the device's handle once its queue service started, or the
// failure (with the vendor's error name when the start failed).
template <typename T>
Napi::Value OpenDevice(Napi::Env env, const ServiceRef<T> &q, std::string *error,
                       const std::string &(T::*start_error_name)() const = nullptr) {
  if (!q) return Failure(env, kStartFailed, *error);
  const int status = q->Open(error);
  if (status == kOk) return Handle(env, q.get());
  const bool named = status == kStartFailed && start_error_name;
  return Failure(env, status, status == kStartFailed ? *error : "", named ? (q.get()->*start_error_name)() : "");
}

inline QueueService *Service(const Napi::Value &v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "devexit: not a device handle");
  return v.As<Napi::External<QueueService>>().Data();
}

inline double Number(const Napi::CallbackInfo &info, size_t i) {
  if (!info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), "devexit: argument " + std::to_string(i) + " must be a number");
  return info[i].As<Napi::Number>().DoubleValue();
}

inline uint64_t Index(const Napi::CallbackInfo &info, size_t i) {
  double v = Number(info, i);
  if (!(v >= 0 && v <= 9007199254740991.0) || v != static_cast<double>(static_cast<uint64_t>(v)))
    throw Napi::RangeError::New(info.Env(), "devexit: argument " + std::to_string(i) + " must be a non-negative integer");
  return static_cast<uint64_t>(v);
}

inline uint32_t U32(const Napi::CallbackInfo &info, size_t i) {
  uint64_t v = Index(info, i);
  if (v > 0xffffffffu) throw Napi::RangeError::New(info.Env(), "devexit: argument " + std::to_string(i) + " must fit 32 bits");
  return static_cast<uint32_t>(v);
}

// The sink a completion of this call goes to; throws if setDispatcher was never called here.
inline std::shared_ptr<CompletionSink> Sink(Napi::Env env) {
  RealmData *realm = Realm(env);
  if (!realm->sink) throw Napi::Error::New(env, "devexit: setDispatcher() was not called in this realm");
  return realm->sink;
}

inline Napi::Value SetDispatcher(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  RealmData *realm = Realm(env);
  if (realm->sink) return env.Undefined();
  if (!info[0].IsFunction()) throw Napi::TypeError::New(env, "devexit: setDispatcher takes a function");
  std::string error;
  realm->sink = CompletionSink::Create(env, info[0], &error);
  if (!realm->sink) throw Napi::Error::New(env, "devexit: " + error);
  Realms::Get().Add(realm->sink);
  return env.Undefined();
}

inline Napi::Value SetRef(const Napi::CallbackInfo &info) {
  RealmData *realm = Realm(info.Env());
  if (realm->sink) realm->sink->SetRef(info.Env(), info[0].ToBoolean());
  return info.Env().Undefined();
}

inline Napi::Value Status(Napi::Env env, int status) { return Napi::Number::New(env, status); }

inline Napi::Value Submit(const Napi::CallbackInfo &info) {
  QueueService *q = Service(info[0]);
  if (!info[1].IsTypedArray() || info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
    throw Napi::TypeError::New(info.Env(), "devexit: submit takes a Float64Array");
  auto words = info[1].As<Napi::Float64Array>();
  uint64_t count = Index(info, 2);
  if (count > words.ElementLength()) throw Napi::RangeError::New(info.Env(), "devexit: submit count past the array");
  return Status(info.Env(), q->EnqueueBatch(words.Data(), static_cast<size_t>(count)));
}

inline Napi::Value Alloc(const Napi::CallbackInfo &info) {
  QueueService *q = Service(info[0]);
  QueueCommand c;
  c.op = QueueOp::kAlloc;
  c.bytes = Index(info, 1);
  c.buffer = q->NewBufferId();
  RealmData *realm = Realm(info.Env());
  realm->AllocatingOn(q);
  c.realm = realm->tag;
  uint32_t id = c.buffer;
  int status = q->Enqueue(std::move(c));
  return Napi::Number::New(info.Env(), status == kOk ? static_cast<double>(id) : -status);
}

inline Napi::Value Write(const Napi::CallbackInfo &info) {
  QueueService *q = Service(info[0]);
  QueueCommand c;
  c.op = QueueOp::kWrite;
  c.buffer = U32(info, 1);
  c.offset = Index(info, 2);
  if (!info[3].IsTypedArray()) throw Napi::TypeError::New(info.Env(), "devexit: write takes a Uint8Array");
  auto bytes = info[3].As<Napi::Uint8Array>();
  c.data.assign(bytes.Data(), bytes.Data() + bytes.ByteLength());
  return Status(info.Env(), q->Enqueue(std::move(c)));
}

inline Napi::Value Read(const Napi::CallbackInfo &info) {
  QueueService *q = Service(info[0]);
  QueueCommand c;
  c.op = QueueOp::kRead;
  c.buffer = U32(info, 1);
  c.offset = Index(info, 2);
  c.bytes = Index(info, 3);
  c.completion = Number(info, 4);
  c.sink = Sink(info.Env());
  return Status(info.Env(), q->Enqueue(std::move(c)));
}

inline Napi::Value Flush(const Napi::CallbackInfo &info) {
  QueueService *q = Service(info[0]);
  QueueCommand c;
  c.op = QueueOp::kFlush;
  c.completion = Number(info, 1);
  c.sink = Sink(info.Env());
  return Status(info.Env(), q->Enqueue(std::move(c)));
}

// device.close(), step 1: stop accepting from every realm; `id` settles once the queue is empty.
inline Napi::Value Drain(const Napi::CallbackInfo &info) {
  QueueService *q = Service(info[0]);
  QueueCommand c;
  c.op = QueueOp::kFlush;
  c.completion = Number(info, 1);
  c.sink = Sink(info.Env());
  return Status(info.Env(), q->StopAccepting(std::move(c)) ? kOk : kClosed);
}

// device.close(), step 2: unregister and close now (the queue is empty after a drain).
inline Napi::Value Close(const Napi::CallbackInfo &info) {
  QueueService *q = Service(info[0]);
  std::string error;
  if (q->CloseExplicitly(&error) != 0) return Napi::String::New(info.Env(), error);
  return info.Env().Undefined();
}

inline Napi::Value Closed(const Napi::CallbackInfo &info) {
  return Napi::Boolean::New(info.Env(), Service(info[0])->closed());
}

// A view of the service's closed word (see QueueService::closed_word), or undefined where the
// runtime refuses external buffers (JS then calls closed()).
inline Napi::Value ClosedFlag(const Napi::CallbackInfo &info) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "the closed word is read as a plain u32");
  QueueService *q = Service(info[0]);
  q->Retain();  // the view's reference
  napi_value buffer = ExternalWordBuffer(info.Env(), q->closed_word(), [](napi_env, void *, void *hint) {
    static_cast<QueueService *>(hint)->Release();
  }, q);
  if (buffer) return Napi::Value(info.Env(), buffer);
  q->Release();
  return info.Env().Undefined();
}

inline void Export(Napi::Env env, Napi::Object exports) {
  exports["setDispatcher"] = Napi::Function::New(env, SetDispatcher, "setDispatcher");
  exports["setRef"] = Napi::Function::New(env, SetRef, "setRef");
  exports["submit"] = Napi::Function::New(env, Submit, "submit");
  exports["alloc"] = Napi::Function::New(env, Alloc, "alloc");
  exports["write"] = Napi::Function::New(env, Write, "write");
  exports["read"] = Napi::Function::New(env, Read, "read");
  exports["flush"] = Napi::Function::New(env, Flush, "flush");
  exports["drain"] = Napi::Function::New(env, Drain, "drain");
  exports["close"] = Napi::Function::New(env, Close, "close");
  exports["closed"] = Napi::Function::New(env, Closed, "closed");
  exports["closedFlag"] = Napi::Function::New(env, ClosedFlag, "closedFlag");
}

}  // namespace queue_binding
}  // namespace devexit
