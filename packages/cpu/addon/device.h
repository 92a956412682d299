// A CPU device: a queue thread running commands in order and a small worker pool for kernels.
#pragma once

#include <node_api.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "devexit.h"
#include "kernels.h"

namespace devexit_cpu {

const devexit_registry_v1 *Registry(std::string *error);

// Where one JS realm's completions go: a thread-safe function of that realm's env. The queue
// thread only ever calls it non-blocking, under mu, while alive (env not torn down, not released).
struct Sink {
  std::mutex mu;
  napi_threadsafe_function tsfn = nullptr;
  bool alive = false;
  int pending = 0;  // JS thread only: reads/flushes not yet settled; the TSFN is ref'd while > 0
};

enum class Done { kOk, kDropped };

// A read's or flush's result, handed to the realm that asked.
struct Completion {
  std::shared_ptr<Sink> sink;
  napi_deferred deferred = nullptr;
  std::vector<uint8_t> data;
  bool is_read = false;
  Done status = Done::kOk;
};

struct Buffer {
  uint64_t id = 0;
  uint64_t size = 0;
  uint8_t *data = nullptr;
};

enum class Op { kWrite, kRead, kFill, kCopy, kLaunch, kFlush, kFree };

struct Command {
  Op op = Op::kFlush;
  Buffer *dst = nullptr;
  Buffer *src = nullptr;
  uint64_t offset = 0, src_offset = 0, bytes = 0;
  uint32_t value = 0;
  std::vector<uint8_t> data;
  const KernelEntry *kernel = nullptr;
  uint64_t grid = 0;
  std::vector<devexit_cpu_arg_v1> args;
  Completion *done = nullptr;
};

class Pool;

// Statuses returned to the binding.
enum Status { kOk = 0, kClosed = 1, kExiting = 2, kBadBuffer = 3, kOutOfRange = 4, kStartFailed = 5 };

class Device {
 public:
  Device(uint32_t index, uint16_t type, unsigned threads);
  // Heap-held for the life of the process: the registry keeps a pointer to it.
  Device(const Device &) = delete;

  devexit_device_id id() const { return id_; }
  unsigned threads() const { return threads_; }
  bool closed();

  // Starts the queue thread and pool, registering the close once. kOk, kClosed, kExiting.
  int Start(std::string *error);
  void AddSink(const std::shared_ptr<Sink> &sink);

  int Alloc(uint64_t bytes, uint64_t *id);
  int Enqueue(Command &&cmd);
  // Resolves buffer ids for a command; kBadBuffer if unknown (freed or another device's).
  Buffer *Find(uint64_t id);
  int Free(uint64_t id);

  // Explicit close, step 1: stop accepting and queue a last flush; false if nothing to drain.
  bool BeginDrain(Completion *done);
  // Explicit close, step 2 (and the exit close): the shared once. finish: run what is queued.
  // js_alive: closeServices() runs it with JS alive, so dropped work is settled (rejected).
  int CloseOnce(bool finish, int64_t deadline_ns, std::string *error, bool js_alive = false);
  // After an explicit close: release every realm's TSFN (JS thread).
  void ReleaseSinks();
  bool registered() const { return registered_.load(); }

 private:
  void Loop();
  void Execute(Command &cmd);
  void Deliver(Completion *c);

  devexit_device_id id_;
  unsigned threads_;

  std::mutex mu_;  // queue
  std::condition_variable cv_;
  std::deque<Command> queue_;
  bool accepting_ = true;
  bool stop_ = false;

  std::mutex close_mu_;
  std::condition_variable close_cv_;
  enum class State { kIdle, kRunning, kClosing, kClosed } state_ = State::kIdle;
  std::atomic<bool> registered_{false};
  std::atomic<bool> js_alive_close_{false};
  std::unique_ptr<std::thread> thread_;
  std::unique_ptr<Pool> pool_;

  std::mutex buf_mu_;
  std::unordered_map<uint64_t, Buffer *> buffers_;

  std::mutex sinks_mu_;
  std::vector<std::shared_ptr<Sink>> sinks_;
};

// The process-wide device for index, opening (or reopening after a close) as needed.
Device *OpenDevice(uint32_t index, unsigned threads, std::string *error);

}  // namespace devexit_cpu
