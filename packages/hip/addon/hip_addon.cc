// @devexit/hip's addon: a queue service per HIP device (its own thread and hipStream_t) and one
// hiprtc compiler service, each registered once with devexit's native registry so that exit
// closes them before ROCm's teardown runs.
#include <napi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "builtin_kernels.h"
#include "devexit.h"
#include "hip_api.h"

namespace devexit_hip {
namespace {

const devexit_registry_v1 *g_reg = nullptr;

// ROCm registers its teardown when the library loads and when HIP first initialises; the
// registry arms a late exit handler after it (once per runtime name).
void MarkInitialised(const char *runtime) {
  if (g_reg) g_reg->runtime_initialised(runtime);
}

const HipApi *Api(Napi::Env env) {
  std::string error;
  const HipApi *api = LoadHip(&error);
  if (!api) {
    Napi::Error e = Napi::Error::New(env, "devexit: hip is unavailable: " + error);
    e.Set("code", Napi::String::New(env, "ERR_DEVEXIT_UNAVAILABLE"));
    throw e;
  }
  return api;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Newer registries say which layer runs a close; "explicit" means the JS environment is alive.
template <typename T, typename = void>
struct HasLayer : std::false_type {};
template <typename T>
struct HasLayer<T, std::void_t<decltype(std::declval<T>().layer)>> : std::true_type {};
template <typename T>
bool ExplicitLayer(const T *call) {
  if constexpr (HasLayer<T>::value) return call->layer && strcmp(call->layer, "explicit") == 0;
  return false;
}

int64_t ExplicitDeadlineNs();

// A close call for the JS thread's own closes (device.close(), stopCompiler()).
devexit_close_call_v1 ExplicitCall(devexit_device_id id, const char *service, char *error, size_t size) {
  devexit_close_call_v1 call;
  memset(&call, 0, sizeof call);
  call.device = id;
  call.service = service;
  call.deadline_ns = ExplicitDeadlineNs();
  call.error = error;
  call.error_size = size;
  return call;
}

int64_t ExplicitDeadlineNs() {
  const char *ms = getenv("DEVEXIT_TIMEOUT_MS");
  int64_t v = ms ? atoll(ms) : 0;
  return NowNs() + (v > 0 ? v : 5000) * 1000000;
}

// ---- completions: service threads -> the JS thread that asked, never blocking ----

struct Completion {
  double id = 0;
  std::string error;     // empty: success
  std::string hip_name;  // hipError... / HIPRTC_ERROR_... name when the failure came from HIP
  bool has_data = false;
  std::vector<uint8_t> data;
  double value = 0;
  bool dropped = false;  // the device closed before the command ran
};

// One per JS environment (main thread or worker). A dead sink swallows completions: a worker's
// environment may end while a device it used keeps running for others.
struct Sink {
  std::mutex mu;
  bool alive = false;
  Napi::ThreadSafeFunction tsfn;
};

// Raw N-API with every status checked: in a Worker being terminated each call may fail, and
// node-addon-api's wrappers turn some of those failures into a fatal error (seen as
// "FATAL ERROR: Error::Error napi_define_properties" when main exits during a busy Worker).
// A completion that cannot be delivered is dropped with its environment.
void CallJs(Napi::Env env, Napi::Function fn, Completion *c) {
  std::unique_ptr<Completion> owned(c);
  if (!env || !fn) return;
  napi_env e = env;
  napi_value args[6];
  napi_value undefined;
  if (napi_get_undefined(e, &undefined) != napi_ok) return;
  if (napi_create_double(e, static_cast<double>(c->id), &args[0]) != napi_ok) return;
  if (c->error.empty() ? napi_get_null(e, &args[1]) != napi_ok
                       : napi_create_string_utf8(e, c->error.data(), c->error.size(), &args[1]) != napi_ok)
    return;
  if (c->hip_name.empty()) {
    args[2] = undefined;
  } else if (napi_create_string_utf8(e, c->hip_name.data(), c->hip_name.size(), &args[2]) != napi_ok) {
    return;
  }
  args[3] = undefined;
  if (c->has_data) {
    void *bytes = nullptr;
    napi_value ab;
    if (napi_create_arraybuffer(e, c->data.size(), &bytes, &ab) != napi_ok || (!c->data.empty() && !bytes)) return;
    if (!c->data.empty()) memcpy(bytes, c->data.data(), c->data.size());
    if (napi_create_typedarray(e, napi_uint8_array, c->data.size(), ab, 0, &args[3]) != napi_ok) return;
  }
  if (napi_create_double(e, c->value, &args[4]) != napi_ok) return;
  if (napi_get_boolean(e, c->dropped, &args[5]) != napi_ok) return;
  napi_value result;
  // A throw from the dispatcher stays pending: Node reports it as uncaught, as for any callback.
  napi_call_function(e, undefined, fn, 6, args, &result);
}

void Deliver(const std::shared_ptr<Sink> &sink, Completion *c) {
  if (!sink) {
    delete c;
    return;
  }
  std::lock_guard<std::mutex> lock(sink->mu);
  if (!sink->alive || sink->tsfn.NonBlockingCall(c, CallJs) != napi_ok) delete c;
}

// ---- compiling HIP C++ with hiprtc ----

struct CompileResult {
  bool ok = false;
  std::string code;
  std::string error;
  std::string name;
};

CompileResult Compile(const HipApi *api, const std::string &source, const std::string &program_name,
                      const std::vector<std::string> &options) {
  CompileResult r;
  if (!api->has_rtc()) {
    r.error = "hiprtc is not available: " + api->path + " lacks hiprtc and no libhiprtc.so could be loaded";
    return r;
  }
  for (const auto &o : options) {
    if (o.rfind("--offload-arch=", 0) == 0) {
      r.error = RefuseArch(api, o.substr(15));
      if (!r.error.empty()) return r;
    }
  }
  std::vector<const char *> opts;
  for (const auto &o : options) opts.push_back(o.c_str());
  hiprtcProgram prog = nullptr;
  hiprtcResult rc = api->hiprtcCreateProgram(&prog, source.c_str(), program_name.c_str(), 0, nullptr, nullptr);
  if (rc != 0) {
    r.name = HiprtcErrorName(rc);
    r.error = "hiprtcCreateProgram failed: " + r.name;
    return r;
  }
  rc = api->hiprtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  MarkInitialised("hiprtc");  // hiprtc loads its code-object compiler on first compile
  std::string log;
  size_t log_size = 0;
  if (api->hiprtcGetProgramLogSize(prog, &log_size) == 0 && log_size > 1) {
    log.resize(log_size);
    if (api->hiprtcGetProgramLog(prog, &log[0]) == 0) log.resize(strlen(log.c_str()));
    else log.clear();
  }
  if (rc != 0) {
    r.name = HiprtcErrorName(rc);
    r.error = "hiprtcCompileProgram failed: " + r.name + (log.empty() ? "" : "\n" + log);
    api->hiprtcDestroyProgram(&prog);
    return r;
  }
  size_t size = 0;
  rc = api->hiprtcGetCodeSize(prog, &size);
  if (rc == 0) {
    r.code.resize(size);
    rc = api->hiprtcGetCode(prog, &r.code[0]);
  }
  api->hiprtcDestroyProgram(&prog);
  if (rc != 0) {
    r.name = HiprtcErrorName(rc);
    r.error = "hiprtcGetCode failed: " + r.name;
    return r;
  }
  r.ok = true;
  return r;
}

// Scans the device properties for the target name ("gfx90a:sramecc+:xnack-") instead of relying
// on a struct layout that changed between ROCm releases.
std::string DeviceArch(const HipApi *api, int index) {
  if (!api->hipGetDeviceProperties) return "";
  std::vector<char> buf(16384, 0);
  if (api->hipGetDeviceProperties(buf.data(), index) != 0) return "";
  for (size_t i = 256; i + 8 < buf.size(); i++) {
    if (buf[i - 1] == 0 && buf[i] == 'g' && buf[i + 1] == 'f' && buf[i + 2] == 'x' && isxdigit(buf[i + 3])) {
      size_t end = i;
      while (end < buf.size() && buf[end] && isprint(static_cast<unsigned char>(buf[end]))) end++;
      if (end < buf.size() && buf[end] == 0 && end - i < 64) return std::string(&buf[i], end - i);
    }
  }
  return "";
}

// Built-in code objects, per target: several devices of one kind compile once.
std::mutex g_builtin_mu;
std::map<std::string, CompileResult> g_builtin_code;

const CompileResult &BuiltinCode(const HipApi *api, const std::string &arch) {
  std::lock_guard<std::mutex> lock(g_builtin_mu);
  auto it = g_builtin_code.find(arch);
  if (it != g_builtin_code.end()) return it->second;
  std::vector<std::string> options;
  if (!arch.empty()) options.push_back("--offload-arch=" + arch);
  return g_builtin_code.emplace(arch, Compile(api, kBuiltinSource, "devexit_builtins.hip", options)).first->second;
}

// ---- the queue service ----

enum class Op { Alloc, Free, Write, Read, Fill, Copy, Launch, LoadModule, Flush };
enum ArgKind { kArgBuffer = 0, kArgU32 = 1, kArgI32 = 2, kArgF32 = 3 };

struct Arg {
  int kind;
  uint64_t raw;
};

struct Cmd {
  Op op;
  uint32_t a = 0, b = 0;  // buffer ids
  uint64_t off_a = 0, off_b = 0, bytes = 0;
  uint32_t value = 0;
  int kernel = 0;  // < 0: built-in -1 - index
  unsigned grid[3] = {1, 1, 1};
  std::vector<Arg> args;
  std::vector<uint8_t> data;
  std::string entry;
  double completion = 0;
  std::shared_ptr<Sink> sink;
};

struct Device {
  const HipApi *api = nullptr;
  int index = 0;
  devexit_device_id id{};
  std::string arch;

  std::mutex mu;
  std::condition_variable cv;       // work or stop
  std::condition_variable done_cv;  // ready / thread done
  std::deque<Cmd *> queue;
  bool stop = false;
  bool settle_dropped = false;  // the JS side is alive: tell it about dropped commands
  bool ready = false;
  bool thread_done = false;
  std::string start_error;
  std::thread *thread = nullptr;  // heap-held; joined by close

  std::mutex close_mu;  // an explicit close and the exit close may race: one waits for the other
  bool joined = false;
  std::atomic<uint32_t> next_buffer{1};

  // Service thread only.
  hipStream_t stream = nullptr;
  std::unordered_map<uint32_t, std::pair<void *, uint64_t>> buffers;
  std::vector<hipModule_t> modules;
  std::unordered_map<int, hipFunction_t> kernels;
  int next_kernel = 1;
  hipFunction_t builtins[4] = {nullptr, nullptr, nullptr, nullptr};
  std::vector<std::vector<uint8_t>> staging;  // host data of copies not yet synchronised
  uint64_t staged_bytes = 0;
  std::string sticky, sticky_name;  // first failure since the last read/flush
};

std::mutex g_devices_mu;
std::map<int, Device *> g_devices;  // open devices; a closed one is replaced on the next open

bool Fail(Device *d, hipError_t e, const std::string &what) {
  if (e == 0) return false;
  if (d->sticky.empty()) {
    d->sticky_name = HipErrorName(d->api, e);
    d->sticky = what + " failed: " + d->sticky_name;
  }
  return true;
}

void FailMsg(Device *d, const std::string &msg, const std::string &name = "") {
  if (d->sticky.empty()) {
    d->sticky = msg;
    d->sticky_name = name;
  }
}

void *BufferPtr(Device *d, uint32_t id) {
  auto it = d->buffers.find(id);
  if (it == d->buffers.end() || !it->second.first) {
    FailMsg(d, "buffer " + std::to_string(id) + " has no device memory (its allocation failed or it was freed)");
    return nullptr;
  }
  return it->second.first;
}

char *At(void *p, uint64_t off) { return static_cast<char *>(p) + off; }

bool Sync(Device *d) {
  bool ok = !Fail(d, d->api->hipStreamSynchronize(d->stream), "hipStreamSynchronize");
  d->staging.clear();
  d->staged_bytes = 0;
  return ok;
}

bool EnsureBuiltins(Device *d) {
  if (d->builtins[0]) return true;
  const CompileResult &code = BuiltinCode(d->api, d->arch);
  if (!code.ok) {
    FailMsg(d, "compiling the built-in kernels failed: " + code.error, code.name);
    return false;
  }
  hipModule_t mod = nullptr;
  if (Fail(d, d->api->hipModuleLoadData(&mod, code.code.data()), "hipModuleLoadData(built-in kernels)")) return false;
  d->modules.push_back(mod);
  for (int i = 0; i < 4; i++) {
    if (Fail(d, d->api->hipModuleGetFunction(&d->builtins[i], mod, kBuiltinNames[i]),
             std::string("hipModuleGetFunction(") + kBuiltinNames[i] + ")"))
      return false;
  }
  return true;
}

void Complete(Device *d, Cmd *c, bool with_error, Completion *out) {
  out->id = c->completion;
  if (with_error && !d->sticky.empty()) {
    out->error = d->sticky;
    out->hip_name = d->sticky_name;
    out->has_data = false;
    d->sticky.clear();
    d->sticky_name.clear();
  }
  Deliver(c->sink, out);
}

void Execute(Device *d, Cmd *c) {
  const HipApi *api = d->api;
  switch (c->op) {
    case Op::Alloc: {
      void *p = nullptr;
      hipError_t e = api->hipMalloc(&p, c->bytes);
      Fail(d, e, "hipMalloc(" + std::to_string(c->bytes) + ")");
      d->buffers[c->a] = {e == 0 ? p : nullptr, c->bytes};
      break;
    }
    case Op::Free: {
      auto it = d->buffers.find(c->a);
      if (it == d->buffers.end()) break;
      if (it->second.first) {
        Sync(d);  // work still using it completes first
        Fail(d, api->hipFree(it->second.first), "hipFree");
      }
      d->buffers.erase(it);
      break;
    }
    case Op::Write: {
      void *p = BufferPtr(d, c->a);
      if (!p || c->data.empty()) break;
      if (Fail(d, api->hipMemcpyHtoDAsync(At(p, c->off_a), c->data.data(), c->data.size(), d->stream),
               "hipMemcpyHtoDAsync"))
        break;
      d->staged_bytes += c->data.size();
      d->staging.push_back(std::move(c->data));  // the copy may read it until the stream syncs
      if (d->staged_bytes > (64u << 20)) Sync(d);
      break;
    }
    case Op::Read: {
      auto *out = new Completion();
      out->has_data = true;
      out->data.resize(c->bytes);
      void *p = BufferPtr(d, c->a);
      if (p && c->bytes)
        Fail(d, api->hipMemcpyDtoHAsync(out->data.data(), At(p, c->off_a), c->bytes, d->stream), "hipMemcpyDtoHAsync");
      Sync(d);
      Complete(d, c, true, out);
      break;
    }
    case Op::Fill: {
      void *p = BufferPtr(d, c->a);
      if (p && c->bytes)
        Fail(d, api->hipMemsetD32Async(At(p, c->off_a), static_cast<int>(c->value), c->bytes / 4, d->stream),
             "hipMemsetD32Async");
      break;
    }
    case Op::Copy: {
      void *src = BufferPtr(d, c->a);
      void *dst = BufferPtr(d, c->b);
      if (src && dst && c->bytes)
        Fail(d, api->hipMemcpyDtoDAsync(At(dst, c->off_b), At(src, c->off_a), c->bytes, d->stream),
             "hipMemcpyDtoDAsync");
      break;
    }
    case Op::Launch: {
      hipFunction_t f = nullptr;
      bool sum = false;
      if (c->kernel < 0) {
        if (!EnsureBuiltins(d)) break;
        int b = -1 - c->kernel;
        f = d->builtins[b];
        sum = b == 3;
      } else {
        auto it = d->kernels.find(c->kernel);
        if (it == d->kernels.end()) {
          FailMsg(d, "kernel " + std::to_string(c->kernel) + " is not loaded on this device");
          break;
        }
        f = it->second;
      }
      std::vector<uint64_t> storage(c->args.size());
      std::vector<void *> params(c->args.size());
      bool ok = true;
      for (size_t i = 0; i < c->args.size(); i++) {
        if (c->args[i].kind == kArgBuffer) {
          void *p = BufferPtr(d, static_cast<uint32_t>(c->args[i].raw));
          if (!p) ok = false;
          storage[i] = reinterpret_cast<uintptr_t>(p);
        } else {
          storage[i] = c->args[i].raw;  // 32-bit scalars: the low half, little-endian
        }
        params[i] = &storage[i];
      }
      if (!ok) break;
      unsigned gx = sum ? 1 : (c->grid[0] + kBlock - 1) / kBlock;
      unsigned gy = sum ? 1 : c->grid[1];
      unsigned gz = sum ? 1 : c->grid[2];
      unsigned bx = sum ? kSumBlock : kBlock;
      Fail(d,
           api->hipModuleLaunchKernel(f, gx, gy, gz, bx, 1, 1, 0, d->stream, params.empty() ? nullptr : params.data(),
                                      nullptr),
           "hipModuleLaunchKernel");
      break;
    }
    case Op::LoadModule: {
      auto *out = new Completion();
      hipModule_t mod = nullptr;
      hipFunction_t f = nullptr;
      hipError_t e = api->hipModuleLoadData(&mod, c->data.data());
      if (e != 0) {
        out->hip_name = HipErrorName(api, e);
        out->error = "hipModuleLoadData failed: " + out->hip_name;
      } else {
        d->modules.push_back(mod);
        e = api->hipModuleGetFunction(&f, mod, c->entry.c_str());
        if (e != 0) {
          out->hip_name = HipErrorName(api, e);
          out->error = "hipModuleGetFunction(\"" + c->entry + "\") failed: " + out->hip_name;
        } else {
          int id = d->next_kernel++;
          d->kernels[id] = f;
          out->value = id;
        }
      }
      out->id = c->completion;
      Deliver(c->sink, out);
      break;
    }
    case Op::Flush: {
      Sync(d);
      Complete(d, c, true, new Completion());
      break;
    }
  }
}

void QueueMain(Device *d) {
  const HipApi *api = d->api;
  hipError_t e = api->hipInit(0);
  MarkInitialised("hip");
  if (e == 0) e = api->hipSetDevice(d->index);
  if (e == 0) e = api->hipStreamCreate(&d->stream);
  {
    std::lock_guard<std::mutex> lock(d->mu);
    if (e != 0) d->start_error = "starting the queue of hip:" + std::to_string(d->index) + " failed: " + HipErrorName(api, e);
    d->ready = true;
    if (e != 0) d->thread_done = true;
  }
  d->done_cv.notify_all();
  if (e != 0) return;

  std::unique_lock<std::mutex> lock(d->mu);
  for (;;) {
    d->cv.wait(lock, [d] { return d->stop || !d->queue.empty(); });
    if (d->stop) break;  // at exit, queued work that has not started is dropped
    Cmd *c = d->queue.front();
    d->queue.pop_front();
    lock.unlock();
    Execute(d, c);
    delete c;
    lock.lock();
  }
  std::deque<Cmd *> dropped;
  dropped.swap(d->queue);
  bool settle = d->settle_dropped;
  lock.unlock();
  for (Cmd *c : dropped) {
    if (settle && c->sink && c->completion) {
      auto *out = new Completion();
      out->id = c->completion;
      out->dropped = true;
      out->error = "hip:" + std::to_string(d->index) + " closed before this command ran";
      Deliver(c->sink, out);
    }
    delete c;
  }

  // Release what the device holds: wait for the stream, then memory, modules, the stream.
  api->hipStreamSynchronize(d->stream);
  d->staging.clear();
  for (auto &b : d->buffers)
    if (b.second.first) api->hipFree(b.second.first);
  d->buffers.clear();
  for (hipModule_t m : d->modules) api->hipModuleUnload(m);
  d->modules.clear();
  d->kernels.clear();
  api->hipStreamDestroy(d->stream);
  d->stream = nullptr;

  lock.lock();
  d->thread_done = true;
  lock.unlock();
  d->done_cv.notify_all();
}

// Stop, drop what has not started, release vendor objects (on the service thread), join.
// Runs on a registry thread at exit or on the JS thread for device.close(); never on the
// service's own thread. Pure native: no N-API.
int CloseQueue(void *ctx, const devexit_close_call_v1 *call) {
  auto *d = static_cast<Device *>(ctx);
  std::lock_guard<std::mutex> close_lock(d->close_mu);
  if (d->joined) return 0;
  std::unique_lock<std::mutex> lock(d->mu);
  if (!d->stop && ExplicitLayer(call)) d->settle_dropped = true;
  d->stop = true;
  d->cv.notify_all();
  auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(call->deadline_ns));
  if (!d->done_cv.wait_until(lock, deadline, [d] { return d->thread_done; })) {
    snprintf(call->error, call->error_size, "hip:%d queue did not stop by the deadline (a HIP call did not return)",
             d->index);
    return 1;
  }
  lock.unlock();
  if (d->thread && d->thread->joinable()) d->thread->join();
  d->joined = true;
  return 0;
}

// ---- the compiler service ----

struct Job {
  std::string source, name;
  std::vector<std::string> options;
  int device = -1;
  double completion = 0;
  std::shared_ptr<Sink> sink;
};

struct Compiler {
  const HipApi *api = nullptr;
  devexit_device_id id{};
  int poll_us = -1;  // >= 0: while idle, call hipGetDeviceCount this often (diagnostic keepalive)

  std::mutex mu;
  std::condition_variable cv, done_cv;
  std::deque<Job *> jobs;
  bool stop = false, ready = false, thread_done = false;
  std::thread *thread = nullptr;
  std::mutex close_mu;
  bool joined = false;

  hipError_t init_status = 0, count_status = 0;
  int count = 0;
  std::atomic<uint64_t> polls{0};
};

std::mutex g_compiler_mu;
Compiler *g_compiler = nullptr;

void CompilerMain(Compiler *c) {
  const HipApi *api = c->api;
  c->init_status = api->hipInit(0);  // this thread may be the process's first HIP user
  MarkInitialised("hip");
  c->count_status = api->hipGetDeviceCount(&c->count);
  {
    std::lock_guard<std::mutex> lock(c->mu);
    c->ready = true;
  }
  c->done_cv.notify_all();
  std::unique_lock<std::mutex> lock(c->mu);
  for (;;) {
    auto has_work = [c] { return c->stop || !c->jobs.empty(); };
    if (c->poll_us >= 0) {
      c->cv.wait_for(lock, std::chrono::microseconds(c->poll_us), has_work);
    } else {
      c->cv.wait(lock, has_work);
    }
    if (c->stop) break;
    if (c->jobs.empty()) {
      lock.unlock();
      int n = 0;
      api->hipGetDeviceCount(&n);
      c->polls.fetch_add(1, std::memory_order_relaxed);
      lock.lock();
      continue;
    }
    Job *j = c->jobs.front();
    c->jobs.pop_front();
    lock.unlock();
    if (j->device >= 0) api->hipSetDevice(j->device);  // hiprtc's default target is the current device
    CompileResult r = Compile(api, j->source, j->name, j->options);
    auto *out = new Completion();
    out->id = j->completion;
    if (r.ok) {
      out->has_data = true;
      out->data.assign(r.code.begin(), r.code.end());
    } else {
      out->error = r.error;
      out->hip_name = r.name;
    }
    Deliver(j->sink, out);
    delete j;
    lock.lock();
  }
  for (Job *j : c->jobs) delete j;
  c->jobs.clear();
  c->thread_done = true;
  lock.unlock();
  c->done_cv.notify_all();
}

int CloseCompiler(void *ctx, const devexit_close_call_v1 *call) {
  auto *c = static_cast<Compiler *>(ctx);
  std::lock_guard<std::mutex> close_lock(c->close_mu);
  if (c->joined) return 0;
  std::unique_lock<std::mutex> lock(c->mu);
  c->stop = true;
  c->cv.notify_all();
  auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(call->deadline_ns));
  if (!c->done_cv.wait_until(lock, deadline, [c] { return c->thread_done; })) {
    snprintf(call->error, call->error_size, "the hiprtc compiler did not stop by the deadline (a compile still runs)");
    return 1;
  }
  lock.unlock();
  if (c->thread && c->thread->joinable()) c->thread->join();
  c->joined = true;
  return 0;
}

// ---- N-API ----

struct EnvData {
  std::shared_ptr<Sink> sink = std::make_shared<Sink>();
};

EnvData *Data(Napi::Env env) { return env.GetInstanceData<EnvData>(); }

void SinkCleanup(void *arg) {
  auto *holder = static_cast<std::shared_ptr<Sink> *>(arg);
  {
    std::lock_guard<std::mutex> lock((*holder)->mu);
    if ((*holder)->alive) {
      (*holder)->alive = false;
      (*holder)->tsfn.Abort();
    }
  }
  delete holder;
}

Napi::Value SetDispatcher(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  auto sink = Data(env)->sink;
  std::lock_guard<std::mutex> lock(sink->mu);
  if (sink->alive) return env.Undefined();
  sink->tsfn = Napi::ThreadSafeFunction::New(env, info[0].As<Napi::Function>(), "devexit-hip", 0, 1);
  sink->tsfn.Unref(env);
  sink->alive = true;
  // Registered after the TSFN's own hook, so it runs first (hooks run last-in-first-out).
  napi_add_env_cleanup_hook(env, SinkCleanup, new std::shared_ptr<Sink>(sink));
  return env.Undefined();
}

Napi::Value SetRef(const Napi::CallbackInfo &info) {
  auto sink = Data(info.Env())->sink;
  if (sink->alive) {
    if (info[0].As<Napi::Boolean>()) sink->tsfn.Ref(info.Env());
    else sink->tsfn.Unref(info.Env());
  }
  return info.Env().Undefined();
}

Napi::Object VersionsOf(Napi::Env env, const HipApi *api) {
  Napi::Object o = Napi::Object::New(env);
  o["path"] = api->path;
  o["runtimeVersion"] = api->runtime_version;
  o["driverVersion"] = api->driver_version;
  o["hiprtc"] = api->rtc_path;
  o["standin"] = api->standin;
  if (api->hiprtcVersion) {
    int ma = 0, mi = 0;
    if (api->hiprtcVersion(&ma, &mi) == 0) o["hiprtcVersion"] = std::to_string(ma) + "." + std::to_string(mi);
  }
  return o;
}

// probe(): loads the library, initialises HIP, counts devices. Never throws for HIP's sake.
Napi::Value Probe(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);
  std::string error;
  const HipApi *api = LoadHip(&error);
  out["loaded"] = api != nullptr;
  if (!api) {
    out["error"] = error;
    return out;
  }
  out["versions"] = VersionsOf(env, api);
  hipError_t init = api->hipInit(0);
  MarkInitialised("hip");
  int count = 0;
  hipError_t cs = api->hipGetDeviceCount(&count);
  out["initStatus"] = init;
  out["initName"] = HipErrorName(api, init);
  out["countStatus"] = cs;
  out["countName"] = HipErrorName(api, cs);
  out["count"] = cs == 0 ? count : 0;
  return out;
}

Napi::Value DeviceInfo(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const HipApi *api = Api(env);
  int index = info[0].As<Napi::Number>().Int32Value();
  char name[256] = {0};
  hipError_t e = api->hipDeviceGetName(name, sizeof name, index);
  Napi::Object out = Napi::Object::New(env);
  if (e != 0) {
    out["error"] = "hipDeviceGetName failed: " + HipErrorName(api, e);
    out["hipError"] = HipErrorName(api, e);
    return out;
  }
  out["name"] = std::string(name);
  out["arch"] = DeviceArch(api, index);
  return out;
}

Napi::Value ThrowExiting(Napi::Env env, const std::string &what) {
  Napi::Error e = Napi::Error::New(env, "devexit: cannot " + what + ": the process is exiting");
  e.Set("code", Napi::String::New(env, "ERR_DEVEXIT_EXITING"));
  throw e;
}

// openQueue(index, arch) -> External<Device>: starts the device's queue service and registers its close.
Napi::Value OpenQueue(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const HipApi *api = Api(env);
  int index = info[0].As<Napi::Number>().Int32Value();
  std::lock_guard<std::mutex> lock(g_devices_mu);
  auto it = g_devices.find(index);
  if (it != g_devices.end()) return Napi::External<Device>::New(env, it->second);
  if (g_reg->is_exiting()) return ThrowExiting(env, "start the queue of hip:" + std::to_string(index));
  int type = g_reg->device_type("hip");
  if (type <= 0) throw Napi::Error::New(env, "devexit: device_type(\"hip\") failed");
  auto *d = new Device();  // lives for the process: a late exit close may still reach it
  d->api = api;
  d->index = index;
  d->id.type = static_cast<uint16_t>(type);
  d->id.index = static_cast<uint32_t>(index);
  d->arch = info[1].IsString() ? info[1].As<Napi::String>().Utf8Value() : "";
  d->thread = new std::thread(QueueMain, d);
  {
    std::unique_lock<std::mutex> dl(d->mu);
    d->done_cv.wait(dl, [d] { return d->ready; });
  }
  if (!d->start_error.empty()) {
    d->thread->join();
    Napi::Error e = Napi::Error::New(env, "devexit: " + d->start_error);
    e.Set("code", Napi::String::New(env, "ERR_DEVEXIT_BACKEND"));
    throw e;
  }
  int rc = g_reg->register_close(d->id, "queue", CloseQueue, d);
  if (rc < 0) {
    char err[256];
    devexit_close_call_v1 call = ExplicitCall(d->id, "queue", err, sizeof err);
    CloseQueue(d, &call);
    if (rc == DEVEXIT_ERR_EXITING) return ThrowExiting(env, "start the queue of hip:" + std::to_string(index));
    throw Napi::Error::New(env, "devexit: register_close failed with status " + std::to_string(rc));
  }
  g_devices[index] = d;
  return Napi::External<Device>::New(env, d);
}

Device *Dev(const Napi::CallbackInfo &info) { return info[0].As<Napi::External<Device>>().Data(); }

uint64_t U64(const Napi::Value &v) { return static_cast<uint64_t>(v.As<Napi::Number>().DoubleValue()); }

void Push(Napi::Env env, Device *d, Cmd *c) {
  {
    std::lock_guard<std::mutex> lock(d->mu);
    if (!d->stop) {
      d->queue.push_back(c);
      c = nullptr;
    }
  }
  if (c) {
    delete c;
    Napi::Error e = Napi::Error::New(env, "devexit: cannot enqueue: the queue of hip:" + std::to_string(d->index) +
                                              " is closed");
    e.Set("code", Napi::String::New(env, g_reg->is_exiting() ? "ERR_DEVEXIT_EXITING" : "ERR_DEVEXIT_DEVICE_CLOSED"));
    throw e;
  }
  d->cv.notify_one();
}

Cmd *NewCmd(Op op) {
  auto *c = new Cmd();
  c->op = op;
  return c;
}

Napi::Value Alloc(const Napi::CallbackInfo &info) {
  Device *d = Dev(info);
  Cmd *c = NewCmd(Op::Alloc);
  c->a = d->next_buffer.fetch_add(1);
  c->bytes = U64(info[1]);
  uint32_t id = c->a;
  Push(info.Env(), d, c);
  return Napi::Number::New(info.Env(), id);
}

Napi::Value Free(const Napi::CallbackInfo &info) {
  Cmd *c = NewCmd(Op::Free);
  c->a = info[1].As<Napi::Number>().Uint32Value();
  Push(info.Env(), Dev(info), c);
  return info.Env().Undefined();
}

// write(dev, buffer, offset, Uint8Array): the bytes are copied now.
Napi::Value Write(const Napi::CallbackInfo &info) {
  Cmd *c = NewCmd(Op::Write);
  c->a = info[1].As<Napi::Number>().Uint32Value();
  c->off_a = U64(info[2]);
  Napi::Uint8Array bytes = info[3].As<Napi::Uint8Array>();
  c->data.assign(bytes.Data(), bytes.Data() + bytes.ByteLength());
  Push(info.Env(), Dev(info), c);
  return info.Env().Undefined();
}

Napi::Value Read(const Napi::CallbackInfo &info) {
  Cmd *c = NewCmd(Op::Read);
  c->a = info[1].As<Napi::Number>().Uint32Value();
  c->off_a = U64(info[2]);
  c->bytes = U64(info[3]);
  c->completion = info[4].As<Napi::Number>().DoubleValue();
  c->sink = Data(info.Env())->sink;
  Push(info.Env(), Dev(info), c);
  return info.Env().Undefined();
}

Napi::Value Fill(const Napi::CallbackInfo &info) {
  Cmd *c = NewCmd(Op::Fill);
  c->a = info[1].As<Napi::Number>().Uint32Value();
  c->value = info[2].As<Napi::Number>().Uint32Value();
  c->off_a = U64(info[3]);
  c->bytes = U64(info[4]);
  Push(info.Env(), Dev(info), c);
  return info.Env().Undefined();
}

Napi::Value Copy(const Napi::CallbackInfo &info) {
  Cmd *c = NewCmd(Op::Copy);
  c->a = info[1].As<Napi::Number>().Uint32Value();
  c->b = info[2].As<Napi::Number>().Uint32Value();
  c->bytes = U64(info[3]);
  c->off_a = U64(info[4]);
  c->off_b = U64(info[5]);
  Push(info.Env(), Dev(info), c);
  return info.Env().Undefined();
}

// launch(dev, kernel, gx, gy, gz, kinds: Uint8Array, values: Float64Array (u32/i32 as numbers, f32 bits))
Napi::Value Launch(const Napi::CallbackInfo &info) {
  Cmd *c = NewCmd(Op::Launch);
  c->kernel = info[1].As<Napi::Number>().Int32Value();
  for (int i = 0; i < 3; i++) c->grid[i] = info[2 + i].As<Napi::Number>().Uint32Value();
  Napi::Uint8Array kinds = info[5].As<Napi::Uint8Array>();
  Napi::Float64Array values = info[6].As<Napi::Float64Array>();
  for (size_t i = 0; i < kinds.ElementLength(); i++) {
    Arg a;
    a.kind = kinds[i];
    double v = values[i];
    if (a.kind == kArgI32) a.raw = static_cast<uint32_t>(static_cast<int32_t>(v));
    else a.raw = static_cast<uint32_t>(v);
    c->args.push_back(a);
  }
  Push(info.Env(), Dev(info), c);
  return info.Env().Undefined();
}

Napi::Value LoadModule(const Napi::CallbackInfo &info) {
  Cmd *c = NewCmd(Op::LoadModule);
  Napi::Uint8Array bytes = info[1].As<Napi::Uint8Array>();
  c->data.assign(bytes.Data(), bytes.Data() + bytes.ByteLength());
  c->data.push_back(0);  // text code objects (the stand-in's) are read up to a NUL
  c->entry = info[2].As<Napi::String>().Utf8Value();
  c->completion = info[3].As<Napi::Number>().DoubleValue();
  c->sink = Data(info.Env())->sink;
  Push(info.Env(), Dev(info), c);
  return info.Env().Undefined();
}

Napi::Value Flush(const Napi::CallbackInfo &info) {
  Cmd *c = NewCmd(Op::Flush);
  c->completion = info[1].As<Napi::Number>().DoubleValue();
  c->sink = Data(info.Env())->sink;
  Push(info.Env(), Dev(info), c);
  return info.Env().Undefined();
}

// closeQueue(dev) -> undefined | error message. Unregisters first so exit skips it.
Napi::Value CloseQueueJs(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Device *d = Dev(info);
  {
    std::lock_guard<std::mutex> lock(g_devices_mu);
    auto it = g_devices.find(d->index);
    if (it != g_devices.end() && it->second == d) g_devices.erase(it);
  }
  g_reg->forget(d->id, "queue");  // NOT_FOUND: the exit close took it; ours waits for it below
  {
    std::lock_guard<std::mutex> lock(d->mu);
    if (!d->stop) d->settle_dropped = true;
  }
  char err[512] = {0};
  devexit_close_call_v1 call = ExplicitCall(d->id, "queue", err, sizeof err);
  if (CloseQueue(d, &call) != 0) return Napi::String::New(env, err);
  return env.Undefined();
}

Napi::Object CompilerState(Napi::Env env, Compiler *c) {
  Napi::Object o = Napi::Object::New(env);
  o["initStatus"] = c->init_status;
  o["initName"] = HipErrorName(c->api, c->init_status);
  o["countStatus"] = c->count_status;
  o["countName"] = HipErrorName(c->api, c->count_status);
  o["count"] = c->count_status == 0 ? c->count : 0;
  o["polls"] = static_cast<double>(c->polls.load());
  return o;
}

Compiler *StartCompiler(Napi::Env env, int poll_us) {
  const HipApi *api = Api(env);
  std::lock_guard<std::mutex> lock(g_compiler_mu);
  if (g_compiler) return g_compiler;
  if (g_reg->is_exiting()) ThrowExiting(env, "start the hiprtc compiler");
  int type = g_reg->device_type("hip-host");
  if (type <= 0) throw Napi::Error::New(env, "devexit: device_type(\"hip-host\") failed");
  auto *c = new Compiler();  // lives for the process
  c->api = api;
  c->id.type = static_cast<uint16_t>(type);
  c->id.index = 0;
  c->poll_us = poll_us;
  c->thread = new std::thread(CompilerMain, c);
  {
    std::unique_lock<std::mutex> cl(c->mu);
    c->done_cv.wait(cl, [c] { return c->ready; });
  }
  int rc = g_reg->register_close(c->id, "compiler", CloseCompiler, c);
  if (rc < 0) {
    char err[256];
    devexit_close_call_v1 call = ExplicitCall(c->id, "compiler", err, sizeof err);
    CloseCompiler(c, &call);
    if (rc == DEVEXIT_ERR_EXITING) ThrowExiting(env, "start the hiprtc compiler");
    throw Napi::Error::New(env, "devexit: register_close failed with status " + std::to_string(rc));
  }
  g_compiler = c;
  return c;
}

// startCompiler(pollUs) -> what the compiler thread's HIP initialisation returned.
Napi::Value StartCompilerJs(const Napi::CallbackInfo &info) {
  int poll = info[0].IsNumber() ? info[0].As<Napi::Number>().Int32Value() : -1;
  return CompilerState(info.Env(), StartCompiler(info.Env(), poll));
}

// compile(source, name, options[], device, completionId)
Napi::Value CompileJs(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Compiler *c = StartCompiler(env, -1);
  auto *j = new Job();
  j->source = info[0].As<Napi::String>().Utf8Value();
  j->name = info[1].As<Napi::String>().Utf8Value();
  Napi::Array opts = info[2].As<Napi::Array>();
  for (uint32_t i = 0; i < opts.Length(); i++) j->options.push_back(opts.Get(i).As<Napi::String>().Utf8Value());
  j->device = info[3].As<Napi::Number>().Int32Value();
  j->completion = info[4].As<Napi::Number>().DoubleValue();
  j->sink = Data(env)->sink;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    if (!c->stop) {
      c->jobs.push_back(j);
      j = nullptr;
    }
  }
  if (j) {
    delete j;
    if (g_reg->is_exiting()) ThrowExiting(env, "compile");
    throw Napi::Error::New(env, "devexit: the hiprtc compiler is closed");
  }
  c->cv.notify_one();
  return env.Undefined();
}

Napi::Value StopCompilerJs(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  Compiler *c = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_compiler_mu);
    c = g_compiler;
    g_compiler = nullptr;
  }
  if (!c) return env.Undefined();
  g_reg->forget(c->id, "compiler");
  char err[512] = {0};
  devexit_close_call_v1 call = ExplicitCall(c->id, "compiler", err, sizeof err);
  if (CloseCompiler(c, &call) != 0) return Napi::String::New(env, err);
  return env.Undefined();
}

Napi::Value CompilerStateJs(const Napi::CallbackInfo &info) {
  std::lock_guard<std::mutex> lock(g_compiler_mu);
  if (!g_compiler) return info.Env().Null();
  return CompilerState(info.Env(), g_compiler);
}

Napi::Value RefuseArchJs(const Napi::CallbackInfo &info) {
  const HipApi *api = Api(info.Env());
  std::string why = RefuseArch(api, info[0].As<Napi::String>().Utf8Value());
  return why.empty() ? info.Env().Undefined() : Napi::String::New(info.Env(), why);
}

Napi::Value BuiltinSource(const Napi::CallbackInfo &info) { return Napi::String::New(info.Env(), kBuiltinSource); }

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  if (!g_reg) {
    char err[512];
    if (devexit_find_registry(DEVEXIT_ABI_VERSION, &g_reg, err, sizeof err) < 0) throw Napi::Error::New(env, err);
  }
  env.SetInstanceData(new EnvData());
  exports["setDispatcher"] = Napi::Function::New(env, SetDispatcher);
  exports["setRef"] = Napi::Function::New(env, SetRef);
  exports["probe"] = Napi::Function::New(env, Probe);
  exports["deviceInfo"] = Napi::Function::New(env, DeviceInfo);
  exports["openQueue"] = Napi::Function::New(env, OpenQueue);
  exports["alloc"] = Napi::Function::New(env, Alloc);
  exports["free"] = Napi::Function::New(env, Free);
  exports["write"] = Napi::Function::New(env, Write);
  exports["read"] = Napi::Function::New(env, Read);
  exports["fill"] = Napi::Function::New(env, Fill);
  exports["copy"] = Napi::Function::New(env, Copy);
  exports["launch"] = Napi::Function::New(env, Launch);
  exports["loadModule"] = Napi::Function::New(env, LoadModule);
  exports["flush"] = Napi::Function::New(env, Flush);
  exports["closeQueue"] = Napi::Function::New(env, CloseQueueJs);
  exports["startCompiler"] = Napi::Function::New(env, StartCompilerJs);
  exports["compile"] = Napi::Function::New(env, CompileJs);
  exports["stopCompiler"] = Napi::Function::New(env, StopCompilerJs);
  exports["compilerState"] = Napi::Function::New(env, CompilerStateJs);
  exports["refuseArch"] = Napi::Function::New(env, RefuseArchJs);
  exports["builtinSource"] = Napi::Function::New(env, BuiltinSource);
  return exports;
}

}  // namespace
}  // namespace devexit_hip

static Napi::Object InitDevexitHip(Napi::Env env, Napi::Object exports) { return devexit_hip::Init(env, exports); }

NODE_API_MODULE(devexit_hip, InitDevexitHip)
