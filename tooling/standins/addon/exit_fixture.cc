// Test addon: device services whose threads call the crash-reproducing stand-in runtime in a
// loop, registered with the registry through devexit.h exactly as a backend does.
#include <dlfcn.h>
#include <napi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "devexit.h"
#include "devexit_host.h"

namespace {

const devexit_registry_v1 *Reg(Napi::Env env) {
  static const devexit_registry_v1 *reg = nullptr;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (!reg) {
    char err[512];
    if (devexit_find_registry(DEVEXIT_ABI_VERSION, &reg, err, sizeof err) < 0) throw Napi::Error::New(env, err);
  }
  return reg;
}

// The stand-in runtime, dlopen'ed like a vendor library and never dlclosed.
struct Runtime {
  int (*init)() = nullptr;
  uint64_t (*call)(uint32_t) = nullptr;
};

const Runtime *LoadRuntime(std::string *error) {
  static Runtime *rt = nullptr;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (rt) return rt;
  std::string path;
  if (const char *env = getenv("DEVEXIT_STANDIN_LIBRARY")) {
    path = env;
  } else {
    Dl_info info;
    dladdr(reinterpret_cast<void *>(&LoadRuntime), &info);
    path = info.dli_fname;
    path = path.substr(0, path.rfind('/') + 1) + "libdevexit_crash_rt.so";
  }
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *error = std::string("cannot load the stand-in runtime: ") + dlerror();
    return nullptr;
  }
  auto *r = new Runtime();
  r->init = reinterpret_cast<int (*)()>(dlsym(h, "standin_rt_init"));
  r->call = reinterpret_cast<uint64_t (*)(uint32_t)>(dlsym(h, "standin_rt_call"));
  if (!r->init || !r->call) {
    *error = "the stand-in runtime lacks standin_rt_init/standin_rt_call";
    return nullptr;
  }
  rt = r;
  return rt;
}

// A device service: a heap-held thread calling the runtime every ~100 us.
struct Service {
  devexit_device_id id;
  std::string name;
  std::thread thread;
  std::atomic<bool> stop{false};
  std::atomic<bool> closed{false};
  std::mutex close_mu;
  int close_delay_ms = 0;
  bool fail_close = false;
  int exit_in_close = -1;  // >= 0: the close calls exit(code) before stopping its thread
  std::atomic<uint64_t> calls{0};
};

int CloseService(void *ctx, const devexit_close_call_v1 *call) {
  auto *s = static_cast<Service *>(ctx);
  std::lock_guard<std::mutex> lock(s->close_mu);  // idempotent: an explicit close may race exit
  if (s->closed.exchange(true)) return 0;
  if (s->thread.joinable() && s->thread.get_id() == std::this_thread::get_id()) {
    snprintf(call->error, call->error_size, "close called on the service's own thread");
    return 1;
  }
  if (s->close_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(s->close_delay_ms));
  if (s->exit_in_close >= 0) {
    if (getenv("DEVEXIT_FIXTURE_TRACE")) fprintf(stderr, "fixture: %s calls exit(%d)\n", s->name.c_str(), s->exit_in_close);
    exit(s->exit_in_close);  // with its service thread still calling the runtime
  }
  s->stop.store(true);
  if (s->thread.joinable()) s->thread.join();
  if (getenv("DEVEXIT_FIXTURE_TRACE")) fprintf(stderr, "fixture: closed %s after %llu calls\n", s->name.c_str(),
                                               static_cast<unsigned long long>(s->calls.load()));
  if (s->fail_close) {
    snprintf(call->error, call->error_size, "fixture close failure on purpose");
    return 1;
  }
  return 0;
}

int TypeOf(Napi::Env env, const std::string &name) {
  int type = Reg(env)->device_type(name.c_str());
  if (type <= 0) throw Napi::Error::New(env, "device_type failed");
  return type;
}

// startService(index, { service, closeDelayMs, failClose, runtime }) -> registration status
Napi::Value StartService(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const devexit_registry_v1 *reg = Reg(env);
  uint32_t index = info[0].As<Napi::Number>().Uint32Value();
  Napi::Object opts = info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
  auto *s = new Service();  // lives for the process: exit closes reach it late
  s->id.type = static_cast<uint16_t>(TypeOf(env, "standin"));
  s->id.index = index;
  s->name = opts.Has("service") ? opts.Get("service").As<Napi::String>().Utf8Value() : "loop";
  if (opts.Has("closeDelayMs")) s->close_delay_ms = opts.Get("closeDelayMs").As<Napi::Number>().Int32Value();
  if (opts.Has("failClose")) s->fail_close = opts.Get("failClose").As<Napi::Boolean>();
  if (opts.Has("exitInClose")) s->exit_in_close = opts.Get("exitInClose").As<Napi::Number>().Int32Value();
  bool use_runtime = !opts.Has("runtime") || opts.Get("runtime").As<Napi::Boolean>();

  if (reg->is_exiting()) throw Napi::Error::New(env, "ERR_DEVEXIT_EXITING: the process is exiting");
  const Runtime *rt = nullptr;
  if (use_runtime) {
    std::string error;
    rt = LoadRuntime(&error);
    if (!rt) throw Napi::Error::New(env, error);
  }
  std::atomic<bool> ready{false};
  s->thread = std::thread([s, rt, reg, &ready] {
    if (rt) {
      rt->init();  // the runtime's first use registers its teardown now: lazily
      reg->runtime_initialised("standin");
    }
    ready.store(true);
    uint32_t x = 0;
    while (!s->stop.load(std::memory_order_relaxed)) {
      if (rt) rt->call(x++);
      s->calls.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  while (!ready.load()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  int rc = reg->register_close(s->id, s->name.c_str(), CloseService, s);
  if (rc != DEVEXIT_OK) {
    // One service per (device, service type), as a backend keeps it: a duplicate stops again.
    s->stop = true;
    s->thread.join();
    if (rc < 0) throw Napi::Error::New(env, "register_close refused: " + std::to_string(rc));
  }
  return Napi::Number::New(env, rc);
}

// registerIdle(type, index, service, closeDelayMs): a close with no thread behind it.
struct Idle {
  int delay_ms;
};
int CloseIdle(void *ctx, const devexit_close_call_v1 *) {
  auto *idle = static_cast<Idle *>(ctx);
  if (idle->delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(idle->delay_ms));
  return 0;
}
Napi::Value RegisterIdle(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  devexit_device_id id;
  id.type = static_cast<uint16_t>(TypeOf(env, info[0].As<Napi::String>()));
  id.index = info[1].As<Napi::Number>().Uint32Value();
  std::string service = info[2].As<Napi::String>();
  auto *idle = new Idle{info.Length() > 3 ? info[3].As<Napi::Number>().Int32Value() : 0};
  return Napi::Number::New(env, Reg(env)->register_close(id, service.c_str(), CloseIdle, idle));
}

// exitFromThread(code): native exit() on a new, non-main thread.
Napi::Value ExitFromThread(const Napi::CallbackInfo &info) {
  int code = info[0].As<Napi::Number>().Int32Value();
  std::thread([code] { exit(code); }).detach();
  return info.Env().Undefined();
}

// exitNow(code): native exit() on the calling thread (the main thread): no 'exit' event, no JS.
Napi::Value ExitNow(const Napi::CallbackInfo &info) {
  exit(info[0].As<Napi::Number>().Int32Value());
}

// stress(threads, keysPerThread, closeAfterMs, duplicates): threads register keys while another
// thread runs the close. Returns counts that must hold: every accepted key closed exactly once;
// refused keys never. With `duplicates`, each thread also registers again, under another context,
// the key it just registered (still pending in a large table) and the one it registered 1000
// keys before (in the index by then): none may be accepted.
struct StressKey {
  std::atomic<int> closes{0};
};
int CloseStress(void *ctx, const devexit_close_call_v1 *) {
  static_cast<StressKey *>(ctx)->closes.fetch_add(1);
  return 0;
}
Napi::Value Stress(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const devexit_registry_v1 *reg = Reg(env);
  int nthreads = info[0].As<Napi::Number>().Int32Value();
  int per = info[1].As<Napi::Number>().Int32Value();
  uint16_t type = static_cast<uint16_t>(TypeOf(env, "stress"));
  std::vector<StressKey> keys(static_cast<size_t>(nthreads) * per);
  std::vector<int> status(keys.size(), 0);
  const bool dups = info.Length() > 3 && info[3].ToBoolean().Value();
  StressKey dup_ctx;  // a duplicate accepted would close it
  std::atomic<int> dup_accepted{0}, dup_other{0};
  std::atomic<int> started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; t++) {
    threads.emplace_back([&, t] {
      started.fetch_add(1);
      for (int i = 0; i < per; i++) {
        size_t k = static_cast<size_t>(t) * per + i;
        devexit_device_id id;
        id.type = type;
        id.index = static_cast<uint32_t>(k % 64);  // 64 devices, many services each
        std::string service = "s" + std::to_string(k);
        status[k] = reg->register_close(id, service.c_str(), CloseStress, &keys[k]);
        if (!dups) continue;
        for (size_t back : {size_t{0}, size_t{1000}}) {
          if (static_cast<size_t>(i) < back || status[k - back] != DEVEXIT_OK) continue;
          devexit_device_id again;
          again.type = type;
          again.index = static_cast<uint32_t>((k - back) % 64);
          const std::string name = "s" + std::to_string(k - back);
          const int st = reg->register_close(again, name.c_str(), CloseStress, &dup_ctx);
          if (st == DEVEXIT_OK) dup_accepted++;
          else if (st != DEVEXIT_ALREADY_REGISTERED && st != DEVEXIT_ERR_EXITING) dup_other++;
        }
      }
    });
  }
  while (started.load() < nthreads) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(info.Length() > 2 ? info[2].As<Napi::Number>().Int32Value() : 5));
  // The registry's own close-all (the host table, not part of the backend contract).
  const devexit_host_v1 *host = nullptr;
  Dl_info self;
  dladdr(reinterpret_cast<const void *>(reg->register_close), &self);
  void *h = dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  auto get_host = h ? reinterpret_cast<devexit_get_host_fn>(dlsym(h, DEVEXIT_GET_HOST_SYMBOL)) : nullptr;
  if (!get_host || get_host(DEVEXIT_HOST_ABI_VERSION, &host) != DEVEXIT_OK) throw Napi::Error::New(env, "no host table");
  std::thread closer([host] { host->close_all("stress", 1); });
  for (auto &t : threads) t.join();
  closer.join();
  int accepted = 0, refused = 0, other = 0, once = 0, never = 0, twice = 0, refused_but_closed = 0,
      accepted_not_closed = 0;
  for (size_t k = 0; k < keys.size(); k++) {
    int c = keys[k].closes.load();
    if (c == 1) once++;
    if (c == 0) never++;
    if (c > 1) twice++;
    if (status[k] == DEVEXIT_OK) {
      accepted++;
      if (c != 1) accepted_not_closed++;
    } else if (status[k] == DEVEXIT_ERR_EXITING) {
      refused++;
      if (c != 0) refused_but_closed++;
    } else {
      other++;
    }
  }
  Napi::Object out = Napi::Object::New(env);
  out["total"] = static_cast<double>(keys.size());
  out["accepted"] = accepted;
  out["refused"] = refused;
  out["otherStatus"] = other;
  out["closedOnce"] = once;
  out["neverClosed"] = never;
  out["closedTwiceOrMore"] = twice;
  out["acceptedNotClosedOnce"] = accepted_not_closed;
  out["refusedButClosed"] = refused_but_closed;
  if (dups) {
    out["duplicatesAccepted"] = dup_accepted.load();
    out["duplicatesOtherStatus"] = dup_other.load();
    out["duplicatesClosed"] = dup_ctx.closes.load();
  }
  // Registration after the close: must be refused, not silently accepted.
  devexit_device_id late;
  late.type = type;
  late.index = 0;
  out["lateStatus"] = reg->register_close(late, "late", CloseStress, &keys[0]);
  return out;
}

// registerMany(backend, n): registers n idle closes on 64 devices; returns the ns it took.
Napi::Value RegisterMany(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const devexit_registry_v1 *reg = Reg(env);
  uint16_t type = static_cast<uint16_t>(TypeOf(env, info[0].As<Napi::String>()));
  uint32_t n = info[1].As<Napi::Number>().Uint32Value();
  static Idle idle{0};
  std::vector<std::string> names(n);
  for (uint32_t i = 0; i < n; i++) names[i] = "s" + std::to_string(i);
  auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < n; i++) {
    devexit_device_id id;
    id.type = type;
    id.index = i % 64;
    reg->register_close(id, names[i].c_str(), CloseIdle, &idle);
  }
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  return Napi::Number::New(env, static_cast<double>(ns));
}

Napi::Value AbiMismatch(const Napi::CallbackInfo &info) {
  const devexit_registry_v1 *r = nullptr;
  char err[512] = {0};
  int rc = devexit_find_registry(DEVEXIT_ABI_VERSION + 1, &r, err, sizeof err);
  Napi::Object out = Napi::Object::New(info.Env());
  out["status"] = rc;
  out["message"] = std::string(err);
  return out;
}

Napi::Value RegistryAddress(const Napi::CallbackInfo &info) {
  return Napi::BigInt::New(info.Env(), static_cast<uint64_t>(reinterpret_cast<uintptr_t>(Reg(info.Env()))));
}

Napi::Value Forget(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  devexit_device_id id;
  id.type = static_cast<uint16_t>(TypeOf(env, "standin"));
  id.index = info[0].As<Napi::Number>().Uint32Value();
  std::string service = info.Length() > 1 ? info[1].As<Napi::String>().Utf8Value() : "loop";
  return Napi::Number::New(env, Reg(env)->forget(id, service.c_str()));
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports["startService"] = Napi::Function::New(env, StartService);
  exports["registerIdle"] = Napi::Function::New(env, RegisterIdle);
  exports["exitFromThread"] = Napi::Function::New(env, ExitFromThread);
  exports["exitNow"] = Napi::Function::New(env, ExitNow);
  exports["stress"] = Napi::Function::New(env, Stress);
  exports["registerMany"] = Napi::Function::New(env, RegisterMany);
  exports["abiMismatch"] = Napi::Function::New(env, AbiMismatch);
  exports["registryAddress"] = Napi::Function::New(env, RegistryAddress);
  exports["forget"] = Napi::Function::New(env, Forget);
  return exports;
}

}  // namespace

NODE_API_MODULE(exit_fixture, Init)
