// A stand-in for a third-party native binding (the way onnxruntime-node, better-sqlite3 or
// node-sqlite3 are built): node-addon-api with C++ exceptions, and none of devexit's safeguards.
// Each call works for `ms` milliseconds (sleeping: the 2-core CI machine is shared), then
// builds its result object in JS:
//   syncWork(ms)          on the calling JS thread, returns { ms, values }
//   asyncWork(ms)         on the libuv pool (Napi::AsyncWorker), returns a Promise of it
//   streamWork(ms, onChunk)  on a thread of its own, a chunk every 5 ms to onChunk through a
//                            ThreadSafeFunction, the last one with done: true
// Ended while a call is in flight, a Worker's environment refuses JS work: setting a property
// of the result fails, node-addon-api throws Napi::Error, rethrows it when it cannot throw it
// into JS, and std::terminate aborts the whole process. That is the crash this package proves.
#include <napi.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

namespace {

constexpr double kMaxMs = 60000;

// Validated before any work starts: a bad argument is a TypeError/RangeError, never a hang.
int64_t MsArgument(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber())
    throw Napi::TypeError::New(env, "ms must be a number of milliseconds");
  const double ms = info[0].As<Napi::Number>().DoubleValue();
  if (!(ms >= 0 && ms <= kMaxMs))
    throw Napi::RangeError::New(env, "ms must be between 0 and 60000");
  return static_cast<int64_t>(ms);
}

void Work(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// What every call returns: a few values computed "natively", as a real binding returns tensors
// or rows. Building it is where a terminating environment makes node-addon-api throw.
Napi::Object Result(Napi::Env env, int64_t ms) {
  Napi::Float64Array values = Napi::Float64Array::New(env, 4);
  for (size_t i = 0; i < values.ElementLength(); i++) values[i] = static_cast<double>(ms) * (i + 1);
  Napi::Object out = Napi::Object::New(env);
  out.Set("ms", Napi::Number::New(env, static_cast<double>(ms)));
  out.Set("values", values);
  return out;
}

Napi::Value SyncWork(const Napi::CallbackInfo& info) {
  const int64_t ms = MsArgument(info);
  Work(ms);
  return Result(info.Env(), ms);
}

class AsyncWork : public Napi::AsyncWorker {
 public:
  AsyncWork(Napi::Env env, int64_t ms)
      : Napi::AsyncWorker(env, "standinAsyncWork"), deferred_(Napi::Promise::Deferred::New(env)), ms_(ms) {}
  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override { Work(ms_); }
  void OnOK() override { deferred_.Resolve(Result(Env(), ms_)); }
  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  int64_t ms_;
};

Napi::Value AsyncWorkCall(const Napi::CallbackInfo& info) {
  const int64_t ms = MsArgument(info);
  auto* work = new AsyncWork(info.Env(), ms);  // deletes itself once complete
  Napi::Promise promise = work->Promise();
  work->Queue();
  return promise;
}

// The usual shape of a binding with a thread of its own that streams results (tokens, rows,
// progress): a chunk every kChunkMs through a ThreadSafeFunction, the last one with done: true;
// the thread is joined when the function is finalized.
constexpr int64_t kChunkMs = 5;

Napi::Value StreamWork(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int64_t ms = MsArgument(info);
  if (info.Length() < 2 || !info[1].IsFunction()) throw Napi::TypeError::New(env, "onChunk must be a function");
  auto thread = std::make_shared<std::thread>();
  Napi::ThreadSafeFunction tsfn = Napi::ThreadSafeFunction::New(
      env, info[1].As<Napi::Function>(), "standinStreamWork", 0, 1, [thread](Napi::Env) { thread->join(); });
  *thread = std::thread([tsfn, ms]() mutable {
    for (int64_t done = 0;;) {
      const int64_t step = std::min(kChunkMs, ms - done);
      Work(step);
      done += step;
      const bool last = done >= ms;
      napi_status s = tsfn.BlockingCall([done, last](Napi::Env env, Napi::Function onChunk) {
        Napi::Object chunk = Result(env, done);
        chunk.Set("done", Napi::Boolean::New(env, last));
        onChunk.Call({chunk});
      });
      if (last || s != napi_ok) break;  // not ok: the environment is closing, nobody listens
    }
    tsfn.Release();
  });
  return env.Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("syncWork", Napi::Function::New(env, SyncWork, "syncWork"));
  exports.Set("asyncWork", Napi::Function::New(env, AsyncWorkCall, "asyncWork"));
  exports.Set("streamWork", Napi::Function::New(env, StreamWork, "streamWork"));
  return exports;
}

}  // namespace

NODE_API_MODULE(standin_binding, Init)
