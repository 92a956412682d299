// Shared state of the stand-in libcuda (test double): see standin_cuda.cc.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace standin_cuda {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUstream = struct CUstream_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;

enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_NOT_SUPPORTED = 801,
};

constexpr int kMaxDevices = 16;
constexpr size_t kMemoryBytes = size_t{16} << 30;  // what each device says it has

struct Stream {
  uint64_t submitted = 0;
  uint64_t completed = 0;
  CUresult error = CUDA_SUCCESS;  // the first failure since the last synchronize
};

struct Context {
  int device = 0;
  int retained = 0;
};

struct Op {
  Stream *stream;
  std::function<CUresult()> run;
};

struct State {
  std::mutex mu;
  std::condition_variable work_cv;  // work or stop, for the worker
  std::condition_variable done_cv;  // an operation finished, or teardown
  std::deque<Op> ops;
  bool stop = false;
  bool running = false;     // the worker is running an operation
  bool initialised = false; // a cuInit found devices
  bool torn_down = false;   // deinit mode, after teardown: every call returns 4
  std::thread *worker = nullptr;
  std::map<uintptr_t, size_t> allocations;
  Stream null_stream;
  std::set<Stream *> streams;
  Context contexts[kMaxDevices];
  uint64_t calls = 0;
  // Settings, read once at the first cuInit.
  int devices = 2;
  int cc_major = 9, cc_minor = 0;
  bool crash = false;
  int teardown_ms = 5;
  bool trace = false;
};

extern State *volatile g_state;
inline thread_local State *t_worker_state = nullptr;  // the worker never reads the poison

// The checks every entry point makes first; CUDA_SUCCESS and *out, or why not.
CUresult Enter(State **out, bool need_context);
Context *CurrentContext();
// CUDA_SUCCESS when [p, p + bytes) lies inside one live allocation.
CUresult CheckPtr(uint64_t p, uint64_t bytes);
CUresult Enqueue(State *s, CUstream stream, std::function<CUresult()> run);
// On the worker: true once teardown began (long kernels end early).
bool Stopping();
// "CUDA_ERROR_..." or nullptr for a value the stand-in does not know.
const char *ErrorName(CUresult e);

}  // namespace standin_cuda
