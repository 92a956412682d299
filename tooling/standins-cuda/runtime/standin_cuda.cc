// A stand-in libcuda.so.1 (test double, CI only): the driver-API subset @devexit/cuda calls, for
// machines without an NVIDIA GPU.
//
// - Device memory is host memory; kernels are host functions looked up by name. A module image is
//   PTX text, of which the stand-in reads only three directives: `.version`, `.target sm_XY` and
//   `.entry NAME` (README.md). Real NVRTC output loads; so does a hand-written three-line file.
// - Stream work runs on the runtime's own worker thread, in submission order. cuMemFree does not
//   wait for queued work (as the real one is not ordered with streams): work queued after it on a
//   freed buffer fails with CUDA_ERROR_ILLEGAL_ADDRESS.
// - Like libcuda, its state is created and its exit teardown registered at the first cuInit. The
//   teardown stops the worker and wakes waiters; then, by DEVEXIT_STANDIN_CUDA_TEARDOWN:
//     deinit (default)  every later call returns CUDA_ERROR_DEINITIALIZED (4), as libcuda does;
//     crash             the state is replaced by a poisoned pointer: a later call crashes.
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "standin_cuda.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace standin_cuda {

State *volatile g_state = nullptr;
namespace {

pthread_once_t g_once = PTHREAD_ONCE_INIT;
thread_local Context *t_context = nullptr;

void WorkerMain(State *s) {
  t_worker_state = s;
  std::unique_lock<std::mutex> lock(s->mu);
  for (;;) {
    s->work_cv.wait(lock, [s] { return s->stop || !s->ops.empty(); });
    if (s->stop) return;
    Op op = std::move(s->ops.front());
    s->ops.pop_front();
    s->running = true;
    lock.unlock();
    CUresult e = op.run();
    lock.lock();
    s->running = false;
    if (e != CUDA_SUCCESS && op.stream->error == CUDA_SUCCESS) op.stream->error = e;
    op.stream->completed++;
    s->done_cv.notify_all();
  }
}

void Teardown() {
  State *s = g_state;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->stop) return;  // ran early, from devexit_standin_cuda_teardown()
    s->stop = true;
    s->ops.clear();
    // Waiters return as if their work were done; their next call finds the runtime gone.
    for (Stream *st : s->streams) st->completed = st->submitted;
    s->null_stream.completed = s->null_stream.submitted;
    if (s->crash) g_state = reinterpret_cast<State *>(static_cast<uintptr_t>(0x10));  // a never-mapped page
    else s->torn_down = true;
  }
  s->work_cv.notify_all();
  s->done_cv.notify_all();
  s->worker->join();
  if (s->trace) fprintf(stderr, "standin-cuda: teardown (%s)\n", s->crash ? "crash" : "deinit");
  if (!s->crash) return;  // deinit: the state stays, and answers 4 from now on
  // A real teardown takes a while; late callers are caught in the act.
  usleep(static_cast<useconds_t>(s->teardown_ms * 1000));
  std::lock_guard<std::mutex> lock(s->mu);
  for (auto &a : s->allocations) {
    memset(reinterpret_cast<void *>(a.first), 0xdb, a.second);
    free(reinterpret_cast<void *>(a.first));
  }
  s->allocations.clear();
  // The state itself stays mapped (a late caller may hold its mutex); it is unreachable.
}

void InitOnce() {
  auto *s = new State();
  if (const char *v = getenv("DEVEXIT_STANDIN_CUDA_DEVICES")) s->devices = atoi(v);
  if (s->devices < 0) s->devices = 0;
  if (s->devices > kMaxDevices) s->devices = kMaxDevices;
  if (const char *v = getenv("DEVEXIT_STANDIN_CUDA_CC")) sscanf(v, "%d.%d", &s->cc_major, &s->cc_minor);
  if (const char *v = getenv("DEVEXIT_STANDIN_CUDA_TEARDOWN")) s->crash = strcmp(v, "crash") == 0;
  if (const char *v = getenv("DEVEXIT_STANDIN_TEARDOWN_MS")) s->teardown_ms = atoi(v);
  s->trace = getenv("DEVEXIT_STANDIN_TRACE") != nullptr;
  for (int i = 0; i < kMaxDevices; i++) s->contexts[i].device = i;
  s->worker = new std::thread(WorkerMain, s);
  g_state = s;
  atexit(Teardown);  // lazily, at the first cuInit, as libcuda registers its teardown
}

}  // namespace

// Every entry point but cuInit and the error names: after teardown, 4 (deinit) or a crash on the
// poison (crash); before a successful cuInit, CUDA_ERROR_NOT_INITIALIZED.
CUresult Enter(State **out, bool need_context) {
  State *s = g_state;
  if (!s) return CUDA_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(s->mu);  // the poison faults here
  s->calls++;
  if (s->torn_down) return CUDA_ERROR_DEINITIALIZED;
  if (!s->initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (need_context && (!t_context || t_context->retained == 0)) return CUDA_ERROR_INVALID_CONTEXT;
  *out = s;
  return CUDA_SUCCESS;
}

Context *CurrentContext() { return t_context; }
void SetCurrentContext(Context *c) { t_context = c; }

CUresult CheckPtr(uint64_t p, uint64_t bytes) {
  State *s = t_worker_state ? t_worker_state : g_state;
  std::lock_guard<std::mutex> lock(s->mu);
  auto it = s->allocations.upper_bound(static_cast<uintptr_t>(p));
  if (it == s->allocations.begin()) return CUDA_ERROR_ILLEGAL_ADDRESS;
  --it;
  if (p < it->first || p + bytes > it->first + it->second) return CUDA_ERROR_ILLEGAL_ADDRESS;
  return CUDA_SUCCESS;
}

CUresult Enqueue(State *s, CUstream stream, std::function<CUresult()> run) {
  Stream *st = stream ? reinterpret_cast<Stream *>(stream) : &s->null_stream;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->torn_down) return CUDA_ERROR_DEINITIALIZED;
    st->submitted++;
    s->ops.push_back(Op{st, std::move(run)});
  }
  s->work_cv.notify_one();
  return CUDA_SUCCESS;
}

bool Stopping() {
  State *s = t_worker_state;
  std::lock_guard<std::mutex> lock(s->mu);
  return s->stop;
}

}  // namespace standin_cuda

using namespace standin_cuda;

EXPORT const char *devexit_standin_cuda_info(void) { return "devexit stand-in libcuda (test double)"; }

// For tests: the exit teardown, now (after a cuInit), as if the process were exiting. 0, or -1
// when there is no state to tear down.
EXPORT int devexit_standin_cuda_teardown(void) {
  if (!g_state) return -1;
  Teardown();
  return 0;
}

EXPORT CUresult cuInit(unsigned flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_once(&g_once, InitOnce);
  State *s = g_state;
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->torn_down) return CUDA_ERROR_DEINITIALIZED;
  s->initialised = s->devices > 0;
  return s->initialised ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

EXPORT CUresult cuDriverGetVersion(int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  if (State *s = g_state) {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->torn_down) return CUDA_ERROR_DEINITIALIZED;
  }
  *version = 12020;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = s->devices;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(int *device, int ordinal) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= s->devices) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, int device) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= s->devices) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, static_cast<size_t>(len), "devexit stand-in CUDA device %d", device);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= s->devices) return CUDA_ERROR_INVALID_DEVICE;
  switch (attribute) {
    case 75: *value = s->cc_major; return CUDA_SUCCESS;  // COMPUTE_CAPABILITY_MAJOR
    case 76: *value = s->cc_minor; return CUDA_SUCCESS;  // COMPUTE_CAPABILITY_MINOR
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, int device) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= s->devices) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = kMemoryBytes;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, int device) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (device < 0 || device >= s->devices) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(s->mu);
  s->contexts[device].retained++;
  *ctx = reinterpret_cast<CUcontext>(&s->contexts[device]);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (device < 0 || device >= s->devices) return CUDA_ERROR_INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(s->mu);
  if (s->contexts[device].retained == 0) return CUDA_ERROR_INVALID_CONTEXT;
  s->contexts[device].retained--;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  SetCurrentContext(reinterpret_cast<Context *>(ctx));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned flags) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  if (!stream || flags > 1) return CUDA_ERROR_INVALID_VALUE;
  auto *st = new Stream();
  std::lock_guard<std::mutex> lock(s->mu);
  s->streams.insert(st);
  *stream = reinterpret_cast<CUstream>(st);
  return CUDA_SUCCESS;
}

static CUresult WaitStream(State *s, Stream *st) {
  std::unique_lock<std::mutex> lock(s->mu);
  s->done_cv.wait(lock, [s, st] { return st->completed == st->submitted || s->stop; });
  if (s->torn_down) return CUDA_ERROR_DEINITIALIZED;
  CUresult e = st->error;
  st->error = CUDA_SUCCESS;
  return e;
}

EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  return WaitStream(s, stream ? reinterpret_cast<Stream *>(stream) : &s->null_stream);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream stream) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, false)) return e;
  if (!stream) return CUDA_ERROR_INVALID_HANDLE;
  auto *st = reinterpret_cast<Stream *>(stream);
  {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->streams.count(st)) return CUDA_ERROR_INVALID_HANDLE;
  }
  WaitStream(s, st);
  std::lock_guard<std::mutex> lock(s->mu);
  s->streams.erase(st);
  delete st;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > kMemoryBytes) return CUDA_ERROR_OUT_OF_MEMORY;
  void *p = aligned_alloc(256, (bytes + 255) & ~size_t{255});
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(p, 0xa5, bytes);  // device memory starts out as garbage, not zeros
  std::lock_guard<std::mutex> lock(s->mu);
  s->allocations[reinterpret_cast<uintptr_t>(p)] = bytes;
  *dptr = reinterpret_cast<uintptr_t>(p);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  if (!dptr) return CUDA_SUCCESS;
  std::unique_lock<std::mutex> lock(s->mu);
  auto it = s->allocations.find(static_cast<uintptr_t>(dptr));
  if (it == s->allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  size_t bytes = it->second;
  s->allocations.erase(it);
  // Not ordered with the streams: only the operation running right now still finishes with it.
  s->done_cv.wait(lock, [s] { return !s->running || s->stop; });
  memset(reinterpret_cast<void *>(dptr), 0xdb, bytes);
  free(reinterpret_cast<void *>(dptr));
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  if ((!src && bytes) || CheckPtr(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  // Reads the host memory when the copy runs: the caller keeps it until the stream synchronizes.
  return Enqueue(s, stream, [dst, src, bytes]() -> CUresult {
    if (CUresult e = CheckPtr(dst, bytes)) return e;
    memcpy(reinterpret_cast<void *>(dst), src, bytes);
    return CUDA_SUCCESS;
  });
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  if ((!dst && bytes) || CheckPtr(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return Enqueue(s, stream, [dst, src, bytes]() -> CUresult {
    if (CUresult e = CheckPtr(src, bytes)) return e;
    memcpy(dst, reinterpret_cast<const void *>(src), bytes);
    return CUDA_SUCCESS;
  });
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  if (CheckPtr(src, bytes) || CheckPtr(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return Enqueue(s, stream, [dst, src, bytes]() -> CUresult {
    if (CUresult e = CheckPtr(src, bytes)) return e;
    if (CUresult e = CheckPtr(dst, bytes)) return e;
    memmove(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), bytes);
    return CUDA_SUCCESS;
  });
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count, CUstream stream) {
  State *s = nullptr;
  if (CUresult e = Enter(&s, true)) return e;
  if (CheckPtr(dst, count * 4)) return CUDA_ERROR_INVALID_VALUE;
  return Enqueue(s, stream, [dst, value, count]() -> CUresult {
    if (CUresult e = CheckPtr(dst, count * 4)) return e;
    auto *p = reinterpret_cast<uint32_t *>(dst);
    for (size_t i = 0; i < count; i++) p[i] = value;
    return CUDA_SUCCESS;
  });
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **name) {
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  *name = ErrorName(error);
  return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **text) { return cuGetErrorName(error, text); }
