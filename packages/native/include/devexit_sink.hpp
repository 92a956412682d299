// devexit_sink.hpp — completions from service threads to the JS realm that asked (C++17,
// header-only, raw N-API: no node-addon-api needed).
//
// One sink per realm (the main thread and each Worker) per addon: a thread-safe function that
// calls the realm's JS dispatcher. Service threads only ever call it non-blocking; it is silent
// once the process is exiting (V8 and libuv may be going away) and once its environment is gone
// (an env cleanup hook clears its alive flag first). No C++ exception crosses into JS from here.
#pragma once

#include <node_api.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "devexit_service.hpp"

namespace devexit {

// One answer to a pending JS promise, or a notice (id 0).
struct Completion {
  double id = 0;           // the JS layer's pending id; 0: "closed" notice for device `value`
  int status = kOk;        // a devexit::Status
  std::string error;       // why, when status != kOk
  std::string error_name;  // the vendor's name for it: CUDA_ERROR_..., hipError..., NVRTC_ERROR_...
  bool has_data = false;
  std::vector<uint8_t> data;
  double value = 0;
};

class CompletionSink {
 public:
  // JS thread. dispatcher(id, status, error | null, errorName | undefined, data | undefined,
  // value) is called on this realm's JS thread for each completion. The sink does not keep the
  // event loop alive until SetRef(env, true).
  static std::shared_ptr<CompletionSink> Create(napi_env env, napi_value dispatcher, std::string *error) {
    auto sink = std::shared_ptr<CompletionSink>(new CompletionSink());
    auto *holder = new std::shared_ptr<CompletionSink>(sink);
    napi_value name;
    if (napi_create_string_utf8(env, "devexit-completions", NAPI_AUTO_LENGTH, &name) != napi_ok ||
        napi_create_threadsafe_function(env, dispatcher, nullptr, name, 0, 1, holder, Finalize, holder, CallJs,
                                        &sink->tsfn_) != napi_ok) {
      delete holder;
      if (error) *error = "cannot create the completion thread-safe function";
      return nullptr;
    }
    napi_unref_threadsafe_function(env, sink->tsfn_);
    sink->alive_ = true;
    // Added after the function's own cleanup, so it runs first (hooks run last-in-first-out):
    // from then on no service thread touches this environment.
    napi_add_env_cleanup_hook(env, EnvGone, new std::shared_ptr<CompletionSink>(sink));
    return sink;
  }

  // Any thread, never blocking. Takes the completion; it is dropped when the realm is gone, when
  // the process is exiting (unless `js_alive`: a close run by closeServices() or device.close()
  // on a live JS thread), or when the function's queue refuses it.
  void Deliver(Completion *c, bool js_alive = false) {
    std::unique_ptr<Completion> owned(c);
    std::lock_guard<std::mutex> lock(mu_);
    if (!alive_ || (!js_alive && ProcessExiting())) return;
    if (napi_call_threadsafe_function(tsfn_, c, napi_tsfn_nonblocking) == napi_ok) owned.release();
  }

  // JS thread: keep the event loop alive while this realm waits for completions.
  void SetRef(napi_env env, bool ref) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!alive_) return;
    if (ref) napi_ref_threadsafe_function(env, tsfn_);
    else napi_unref_threadsafe_function(env, tsfn_);
  }

  bool alive() {
    std::lock_guard<std::mutex> lock(mu_);
    return alive_;
  }

 private:
  CompletionSink() = default;

  static void CallJs(napi_env env, napi_value fn, void *, void *data) {
    std::unique_ptr<Completion> c(static_cast<Completion *>(data));
    if (!env || !fn) return;  // the function is being torn down with completions still queued
    // Every call may fail while a Worker is being terminated: then nothing is delivered.
    napi_value args[6], undefined, result;
    if (napi_get_undefined(env, &undefined) != napi_ok) return;
    if (napi_create_double(env, c->id, &args[0]) != napi_ok) return;
    if (napi_create_int32(env, c->status, &args[1]) != napi_ok) return;
    if (c->status == kOk ? napi_get_null(env, &args[2]) != napi_ok
                         : napi_create_string_utf8(env, c->error.data(), c->error.size(), &args[2]) != napi_ok)
      return;
    args[3] = undefined;
    if (!c->error_name.empty() &&
        napi_create_string_utf8(env, c->error_name.data(), c->error_name.size(), &args[3]) != napi_ok)
      return;
    args[4] = undefined;
    if (c->has_data) {
      void *bytes = nullptr;
      napi_value ab;
      if (napi_create_arraybuffer(env, c->data.size(), &bytes, &ab) != napi_ok) return;
      if (!c->data.empty()) {
        if (!bytes) return;
        std::memcpy(bytes, c->data.data(), c->data.size());
      }
      if (napi_create_typedarray(env, napi_uint8_array, c->data.size(), ab, 0, &args[4]) != napi_ok) return;
    }
    if (napi_create_double(env, c->value, &args[5]) != napi_ok) return;
    // A throw from the dispatcher stays pending: Node reports it as uncaught, as for any callback.
    napi_call_function(env, undefined, fn, 6, args, &result);
  }

  static void Finalize(napi_env, void *data, void *) {
    auto *holder = static_cast<std::shared_ptr<CompletionSink> *>(data);
    {
      std::lock_guard<std::mutex> lock((*holder)->mu_);
      (*holder)->alive_ = false;
    }
    delete holder;
  }

  static void EnvGone(void *arg) {
    auto *holder = static_cast<std::shared_ptr<CompletionSink> *>(arg);
    {
      CompletionSink &sink = **holder;
      std::lock_guard<std::mutex> lock(sink.mu_);
      if (sink.alive_) {
        sink.alive_ = false;
        napi_release_threadsafe_function(sink.tsfn_, napi_tsfn_abort);
      }
    }
    delete holder;
  }

  std::mutex mu_;
  bool alive_ = false;
  napi_threadsafe_function tsfn_ = nullptr;
};

// The realms of one addon that asked for completions, so that a close run with JS alive can tell
// each of them that a device closed (their pending promises on it are then rejected in JS).
class Realms {
 public:
  static Realms &Get() {
    static Realms &realms = *new Realms();  // never destroyed
    return realms;
  }

  void Add(const std::shared_ptr<CompletionSink> &sink) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = sinks_.begin(); it != sinks_.end();) {
      if (it->expired()) it = sinks_.erase(it);
      else ++it;
    }
    sinks_.push_back(sink);
  }

  // A "closed" notice (id 0) for device index `index` of service `service`, to every live realm.
  void NotifyClosed(uint32_t index, const std::string &service, bool js_alive) {
    std::vector<std::shared_ptr<CompletionSink>> live;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto &w : sinks_)
        if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (auto &s : live) {
      auto *c = new Completion();
      c->status = kClosed;
      c->value = index;
      c->error = service;
      s->Deliver(c, js_alive);
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<CompletionSink>> sinks_;
};

}  // namespace devexit
