// A stand-in libamdhip64 (test double, CI only): the subset of the HIP runtime and hiprtc that
// @devexit/hip calls, for machines without an AMD GPU.
//
// - Device memory is host memory; kernels are host functions looked up by name. A stand-in "code
//   object" is a text blob naming the kernels it holds; the stand-in hiprtc "compiles" HIP C++
//   by finding its __global__ functions and accepting those it has a host implementation for.
// - Async work runs on the runtime's own worker thread, in submission order.
// - Like the vendor runtime, its state is created on first use and its teardown registered then
//   (atexit: lazily). Teardown stops the worker, frees the state and leaves a poisoned pointer, so
//   a service thread still calling in after it crashes, as it would with ROCm.
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "standin_hip.h"

namespace {

using namespace standin_hip;

struct Stream {
  uint64_t submitted = 0;
  uint64_t completed = 0;
  int error = kSuccess;
};

struct Module {
  std::vector<std::string> kernels;
};
struct Function {
  const HostKernel *kernel;
};

struct Op {
  Stream *stream;
  std::function<int()> run;
};

struct State {
  std::mutex mu;
  std::condition_variable work_cv;
  std::condition_variable done_cv;
  std::deque<Op> ops;
  bool stop = false;
  std::thread *worker = nullptr;  // heap-held: joined by teardown
  std::map<uintptr_t, size_t> allocations;
  Stream null_stream;
  std::set<Stream *> streams;
  uint64_t pending = 0;  // submitted, not yet completed, over all streams
  int devices = 2;
  uint64_t calls = 0;
};

State *volatile g_state = nullptr;
pthread_once_t g_once = PTHREAD_ONCE_INIT;
thread_local int t_device = 0;
thread_local State *t_worker_state = nullptr;  // the runtime's own worker never reads the poison

void WorkerMain(State *s) {
  t_worker_state = s;
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    s->work_cv.wait(lock, [s] { return s->stop || !s->ops.empty(); });
    if (s->ops.empty()) return;
    Op op = std::move(s->ops.front());
    s->ops.pop_front();
    lock.unlock();
    int e = op.run();
    lock.lock();
    if (e != kSuccess && op.stream->error == kSuccess) op.stream->error = e;
    op.stream->completed++;
    s->pending--;
    s->done_cv.notify_all();
  }
}

void Teardown() {
  State *s = g_state;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stop = true;
    s->ops.clear();
    // Waiters return as if their work were done and walk into the poison on their next call.
    for (Stream *st : s->streams) st->completed = st->submitted;
    s->null_stream.completed = s->null_stream.submitted;
    s->pending = 0;
    g_state = reinterpret_cast<State *>(static_cast<uintptr_t>(0x10));  // a never-mapped page
  }
  s->work_cv.notify_all();
  s->done_cv.notify_all();
  s->worker->join();
  if (getenv("DEVEXIT_STANDIN_TRACE")) fprintf(stderr, "standin-hip: teardown\n");
  // A real teardown takes a while; late callers are caught in the act.
  const char *ms = getenv("DEVEXIT_STANDIN_TEARDOWN_MS");
  usleep(static_cast<useconds_t>((ms ? atoi(ms) : 5) * 1000));
  std::lock_guard<std::mutex> lock(s->mu);
  for (auto &a : s->allocations) {
    memset(reinterpret_cast<void *>(a.first), 0xdb, a.second);
    free(reinterpret_cast<void *>(a.first));
  }
  s->allocations.clear();
  // The state itself stays mapped (its mutex may still be held by a late caller); it is unreachable.
}

void InitOnce() {
  auto *s = new State();
  if (const char *n = getenv("DEVEXIT_STANDIN_HIP_DEVICES")) s->devices = atoi(n);
  s->worker = new std::thread(WorkerMain, s);
  g_state = s;
  atexit(Teardown);  // lazily, at first use, as the vendor's teardown is
}

// Every entry point: initialises on first use, and crashes on the poison after teardown.
State *St() {
  pthread_once(&g_once, InitOnce);
  State *s = g_state;
  std::lock_guard<std::mutex> lock(s->mu);
  s->calls++;
  return s;
}

}  // namespace

int standin_hip::StandinCheckPtr(uint64_t p, size_t bytes) {
  State *s = t_worker_state ? t_worker_state : g_state;
  std::lock_guard<std::mutex> lock(s->mu);
  auto it = s->allocations.upper_bound(static_cast<uintptr_t>(p));
  if (it == s->allocations.begin()) return kIllegalAddress;
  --it;
  if (p < it->first || p + bytes > it->first + it->second) return kIllegalAddress;
  return kSuccess;
}

namespace {

int Enqueue(State *s, void *stream, std::function<int()> run) {
  auto *st = stream ? static_cast<Stream *>(stream) : &s->null_stream;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    st->submitted++;
    s->pending++;
    s->ops.push_back(Op{st, std::move(run)});
  }
  s->work_cv.notify_one();
  return kSuccess;
}

int WaitStream(State *s, Stream *st) {
  std::unique_lock<std::mutex> lock(s->mu);
  s->done_cv.wait(lock, [st] { return st->completed == st->submitted; });
  int e = st->error;
  st->error = kSuccess;
  return e;
}

bool HasDevice(State *s) { return s->devices > 0; }

}  // namespace

typedef int hipError_t;

EXPORT const char *devexit_standin_hip_info(void) { return "devexit stand-in libamdhip64 (test double)"; }

EXPORT hipError_t hipInit(unsigned flags) {
  State *s = St();
  if (flags != 0) return kInvalidValue;
  return HasDevice(s) ? kSuccess : kInvalidDevice;
}

EXPORT hipError_t hipGetDeviceCount(int *count) {
  State *s = St();
  if (!count) return kInvalidValue;
  *count = s->devices > 0 ? s->devices : 0;
  return HasDevice(s) ? kSuccess : kNoDevice;
}

EXPORT hipError_t hipSetDevice(int device) {
  State *s = St();
  if (device < 0 || device >= s->devices) return kInvalidDevice;
  t_device = device;
  return kSuccess;
}

EXPORT hipError_t hipGetDevice(int *device) {
  St();
  if (!device) return kInvalidValue;
  *device = t_device;
  return kSuccess;
}

EXPORT hipError_t hipDeviceGetName(char *name, int len, int device) {
  State *s = St();
  if (!name || len <= 0) return kInvalidValue;
  if (device < 0 || device >= s->devices) return kInvalidDevice;
  snprintf(name, static_cast<size_t>(len), "devexit stand-in HIP device %d", device);
  return kSuccess;
}

// Fills only what callers read: the name at the start and an architecture name further in.
EXPORT hipError_t hipGetDeviceProperties(void *props, int device) {
  State *s = St();
  if (!props) return kInvalidValue;
  if (device < 0 || device >= s->devices) return kInvalidDevice;
  memset(props, 0, 792);
  snprintf(static_cast<char *>(props), 256, "devexit stand-in HIP device %d", device);
  snprintf(static_cast<char *>(props) + 392, 256, "gfx90a:sramecc+:xnack-");
  return kSuccess;
}

EXPORT hipError_t hipRuntimeGetVersion(int *v) {
  St();
  if (!v) return kInvalidValue;
  *v = 60000000;
  return kSuccess;
}
EXPORT hipError_t hipDriverGetVersion(int *v) { return hipRuntimeGetVersion(v); }

EXPORT hipError_t hipGetLastError(void) {
  St();
  return kSuccess;
}

EXPORT hipError_t hipStreamCreate(void **stream) {
  State *s = St();
  if (!stream) return kInvalidValue;
  if (!HasDevice(s)) return kNoDevice;
  auto *st = new Stream();
  std::lock_guard<std::mutex> lock(s->mu);
  s->streams.insert(st);
  *stream = st;
  return kSuccess;
}

EXPORT hipError_t hipStreamSynchronize(void *stream) {
  State *s = St();
  return WaitStream(s, stream ? static_cast<Stream *>(stream) : &s->null_stream);
}

EXPORT hipError_t hipStreamQuery(void *stream) {
  State *s = St();
  auto *st = stream ? static_cast<Stream *>(stream) : &s->null_stream;
  std::lock_guard<std::mutex> lock(s->mu);
  return st->completed == st->submitted ? kSuccess : kNotReady;
}

EXPORT hipError_t hipStreamDestroy(void *stream) {
  State *s = St();
  if (!stream) return kInvalidHandle;
  WaitStream(s, static_cast<Stream *>(stream));
  std::lock_guard<std::mutex> lock(s->mu);
  s->streams.erase(static_cast<Stream *>(stream));
  delete static_cast<Stream *>(stream);
  return kSuccess;
}

EXPORT hipError_t hipDeviceSynchronize(void) {
  State *s = St();
  std::unique_lock<std::mutex> lock(s->mu);
  s->done_cv.wait(lock, [s] { return s->pending == 0; });
  return kSuccess;
}

EXPORT hipError_t hipMalloc(void **ptr, size_t size) {
  State *s = St();
  if (!ptr) return kInvalidValue;
  if (!HasDevice(s)) return kNoDevice;
  if (size == 0) {
    *ptr = nullptr;
    return kSuccess;
  }
  if (size > (size_t(1) << 34)) return kOutOfMemory;
  void *p = aligned_alloc(256, (size + 255) & ~size_t(255));
  if (!p) return kOutOfMemory;
  memset(p, 0xa5, size);  // device memory starts out as garbage, not zeros
  std::lock_guard<std::mutex> lock(s->mu);
  s->allocations[reinterpret_cast<uintptr_t>(p)] = size;
  *ptr = p;
  return kSuccess;
}

EXPORT hipError_t hipFree(void *ptr) {
  State *s = St();
  if (!ptr) return kSuccess;
  std::unique_lock<std::mutex> lock(s->mu);
  auto it = s->allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s->allocations.end()) return kInvalidValue;
  s->done_cv.wait(lock, [s] { return s->pending == 0; });  // hipFree synchronises the device
  s->allocations.erase(it);
  free(ptr);
  return kSuccess;
}

EXPORT hipError_t hipMemcpyHtoDAsync(void *dst, void *src, size_t bytes, void *stream) {
  State *s = St();
  if (!src && bytes) return kInvalidValue;
  uint64_t d = reinterpret_cast<uintptr_t>(dst);
  if (StandinCheckPtr(d, bytes)) return kInvalidValue;
  // Reads the host memory when the copy runs: the caller keeps it alive until then.
  return Enqueue(s, stream, [dst, src, bytes] {
    memcpy(dst, src, bytes);
    return kSuccess;
  });
}

EXPORT hipError_t hipMemcpyDtoHAsync(void *dst, void *src, size_t bytes, void *stream) {
  State *s = St();
  if (!dst && bytes) return kInvalidValue;
  if (StandinCheckPtr(reinterpret_cast<uintptr_t>(src), bytes)) return kInvalidValue;
  return Enqueue(s, stream, [dst, src, bytes] {
    memcpy(dst, src, bytes);
    return kSuccess;
  });
}

EXPORT hipError_t hipMemcpyDtoDAsync(void *dst, void *src, size_t bytes, void *stream) {
  State *s = St();
  if (StandinCheckPtr(reinterpret_cast<uintptr_t>(src), bytes)) return kInvalidValue;
  if (StandinCheckPtr(reinterpret_cast<uintptr_t>(dst), bytes)) return kInvalidValue;
  return Enqueue(s, stream, [dst, src, bytes] {
    memmove(dst, src, bytes);
    return kSuccess;
  });
}

EXPORT hipError_t hipMemsetD32Async(void *dst, int value, size_t count, void *stream) {
  State *s = St();
  if (StandinCheckPtr(reinterpret_cast<uintptr_t>(dst), count * 4)) return kInvalidValue;
  return Enqueue(s, stream, [dst, value, count] {
    auto *p = static_cast<uint32_t *>(dst);
    for (size_t i = 0; i < count; i++) p[i] = static_cast<uint32_t>(value);
    return kSuccess;
  });
}



EXPORT hipError_t hipModuleLoadData(void **module, const void *image) {
  St();
  if (!module || !image) return kInvalidValue;
  const char *text = static_cast<const char *>(image);
  if (strncmp(text, standin_hip::kCodeMagic, strlen(standin_hip::kCodeMagic)) != 0) return kInvalidImage;  // e.g. a real ELF code object
  auto *m = new Module();
  const char *p = text + strlen(standin_hip::kCodeMagic);
  while (*p) {
    const char *end = strchr(p, '\n');
    std::string line = end ? std::string(p, end) : std::string(p);
    if (line.rfind("kernel ", 0) == 0) m->kernels.push_back(line.substr(7));
    if (!end) break;
    p = end + 1;
  }
  *module = m;
  return kSuccess;
}

EXPORT hipError_t hipModuleUnload(void *module) {
  St();
  if (!module) return kInvalidHandle;
  delete static_cast<Module *>(module);
  return kSuccess;
}

EXPORT hipError_t hipModuleGetFunction(void **function, void *module, const char *name) {
  St();
  if (!function || !module || !name) return kInvalidValue;
  auto *m = static_cast<Module *>(module);
  if (std::find(m->kernels.begin(), m->kernels.end(), name) == m->kernels.end()) return kNotFound;
  const HostKernel *k = FindKernel(name);
  if (!k) return kNotFound;
  *function = new Function{k};
  return kSuccess;
}

EXPORT hipError_t hipModuleLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz, unsigned shared_bytes, void *stream,
                                        void **params, void **extra) {
  State *s = St();
  (void)shared_bytes;
  if (!function || extra) return kInvalidValue;
  if (!gx || !gy || !gz || !bx || !by || !bz || uint64_t(bx) * by * bz > 1024) return kInvalidValue;
  const HostKernel *k = static_cast<Function *>(function)->kernel;
  // Arguments are copied at launch, as the runtime does.
  std::vector<uint64_t> args;
  size_t n = strlen(k->sig);
  if (n && !params) return kInvalidValue;
  for (size_t i = 0; i < n; i++) {
    uint64_t v = 0;
    memcpy(&v, params[i], k->sig[i] == 'p' ? 8 : 4);
    args.push_back(v);
  }
  LaunchDims dims{{gx, gy, gz}, {bx, by, bz}};
  return Enqueue(s, stream, [k, args, dims] { return k->fn(args, dims); });
}

EXPORT const char *hipGetErrorName(hipError_t e) {
  switch (e) {
    case kSuccess: return "hipSuccess";
    case kInvalidValue: return "hipErrorInvalidValue";
    case kOutOfMemory: return "hipErrorOutOfMemory";
    case kNotInitialized: return "hipErrorNotInitialized";
    case kNoDevice: return "hipErrorNoDevice";
    case kInvalidDevice: return "hipErrorInvalidDevice";
    case kInvalidImage: return "hipErrorInvalidImage";
    case kInvalidHandle: return "hipErrorInvalidHandle";
    case kNotFound: return "hipErrorNotFound";
    case kNotReady: return "hipErrorNotReady";
    case kIllegalAddress: return "hipErrorIllegalAddress";
    case kLaunchFailure: return "hipErrorLaunchFailure";
    default: return "hipErrorUnknown";
  }
}
EXPORT const char *hipGetErrorString(hipError_t e) { return hipGetErrorName(e); }

// For the stand-in hiprtc (standin_hiprtc.cc).
namespace standin_hip {
const char kCodeMagic[] = "DEVEXIT-STANDIN-HIP-CO v1\n";
bool HasHostKernel(const std::string &name) { return FindKernel(name) != nullptr; }
}  // namespace standin_hip
