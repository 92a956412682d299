#include "device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace devexit_cpu {

const devexit_registry_v1 *Registry(std::string *error) {
  // Looked up once; the registry outlives every caller (it is never unloaded).
  static std::mutex *mu = new std::mutex();
  static const devexit_registry_v1 *reg = nullptr;
  std::lock_guard<std::mutex> lock(*mu);
  if (!reg) {
    char err[512] = {0};
    if (devexit_find_registry(DEVEXIT_ABI_VERSION, &reg, err, sizeof err) < 0) {
      reg = nullptr;
      if (error) *error = err;
    }
  }
  return reg;
}

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int CloseFromRegistry(void *ctx, const devexit_close_call_v1 *call) {
  std::string error;
  // closeServices() runs with JS alive: dropped reads and flushes are settled (rejected). At
  // exit they are only freed.
  bool js_alive = call->layer && strcmp(call->layer, "explicit") == 0;
  int rc = static_cast<Device *>(ctx)->CloseOnce(false, call->deadline_ns, &error, js_alive);
  if (rc != 0 && call->error && call->error_size) snprintf(call->error, call->error_size, "%s", error.c_str());
  return rc;
}

}  // namespace

// Workers take chunks of the current launch; the queue thread takes chunks too and waits until
// every worker that joined has left before the launch counts as done.
class Pool {
 public:
  explicit Pool(unsigned workers) {
    for (unsigned i = 0; i < workers; i++) threads_.emplace_back([this] { Work(); });
  }

  void Run(const KernelEntry *k, uint64_t grid, const devexit_cpu_arg_v1 *args, uint32_t nargs) {
    const uint64_t min_chunk = 4096;
    if (threads_.empty() || grid <= min_chunk) {
      k->fn(0, grid, args, nargs);
      return;
    }
    const uint64_t parts = (threads_.size() + 1) * 4;
    job_.fn = k->fn;
    job_.args = args;
    job_.nargs = nargs;
    job_.grid = grid;
    job_.chunk = std::max(min_chunk, (grid + parts - 1) / parts);
    job_.next.store(0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
      gen_++;
    }
    cv_.notify_all();
    Chunks();
    std::unique_lock<std::mutex> lock(mu_);
    open_ = false;
    done_cv_.wait(lock, [this] { return busy_ == 0; });
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto &t : threads_) t.join();
    threads_.clear();
  }

 private:
  struct Job {
    devexit_cpu_kernel_fn_v1 fn = nullptr;
    const devexit_cpu_arg_v1 *args = nullptr;
    uint32_t nargs = 0;
    uint64_t grid = 0, chunk = 1;
    std::atomic<uint64_t> next{0};
  };

  void Chunks() {
    for (;;) {
      uint64_t begin = job_.next.fetch_add(job_.chunk);
      if (begin >= job_.grid) return;
      job_.fn(begin, std::min(job_.grid, begin + job_.chunk), job_.args, job_.nargs);
    }
  }

  void Work() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || (open_ && gen_ != seen); });
      if (stop_) return;
      seen = gen_;
      busy_++;
      lock.unlock();
      Chunks();
      lock.lock();
      if (--busy_ == 0) done_cv_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  bool open_ = false, stop_ = false;
  uint64_t gen_ = 0;
  int busy_ = 0;
  Job job_;
};

Device::Device(uint32_t index, uint16_t type, unsigned threads) : threads_(threads) {
  id_.type = type;
  id_.index = index;
}

bool Device::closed() {
  std::lock_guard<std::mutex> lock(close_mu_);
  return state_ == State::kClosing || state_ == State::kClosed;
}

int Device::Start(std::string *error) {
  std::lock_guard<std::mutex> lock(close_mu_);
  if (state_ == State::kRunning) return kOk;
  if (state_ != State::kIdle) return kClosed;
  const devexit_registry_v1 *reg = Registry(error);
  if (!reg) return kStartFailed;
  if (reg->is_exiting()) return kExiting;
  int rc = reg->register_close(id_, "queue", CloseFromRegistry, this);
  if (rc == DEVEXIT_ERR_EXITING) return kExiting;
  if (rc < 0) {
    *error = "register_close refused with status " + std::to_string(rc);
    return kStartFailed;
  }
  registered_.store(true);
  try {
    pool_.reset(new Pool(threads_ > 1 ? threads_ - 1 : 0));
    thread_.reset(new std::thread([this] { Loop(); }));
  } catch (const std::exception &e) {
    *error = std::string("cannot start the queue thread: ") + e.what();
    if (pool_) pool_->Stop();
    reg->forget(id_, "queue");
    registered_.store(false);
    return kStartFailed;
  }
  state_ = State::kRunning;
  return kOk;
}

void Device::AddSink(const std::shared_ptr<Sink> &sink) {
  std::lock_guard<std::mutex> lock(sinks_mu_);
  sinks_.push_back(sink);
}

int Device::Alloc(uint64_t bytes, uint64_t *id) {
  static std::atomic<uint64_t> *next_id = new std::atomic<uint64_t>(1);
  if (closed()) return kClosed;
  auto *b = new Buffer();
  // calloc: fresh buffers read as zeros, like the other backends' cleared allocations.
  b->data = static_cast<uint8_t *>(calloc(bytes ? bytes : 1, 1));
  if (!b->data) {
    delete b;
    return kOutOfRange;
  }
  b->size = bytes;
  b->id = next_id->fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(buf_mu_);
    buffers_[b->id] = b;
  }
  *id = b->id;
  return kOk;
}

Buffer *Device::Find(uint64_t id) {
  std::lock_guard<std::mutex> lock(buf_mu_);
  auto it = buffers_.find(id);
  return it == buffers_.end() ? nullptr : it->second;
}

int Device::Free(uint64_t id) {
  Buffer *b;
  {
    std::lock_guard<std::mutex> lock(buf_mu_);
    auto it = buffers_.find(id);
    if (it == buffers_.end()) return kBadBuffer;
    b = it->second;
    buffers_.erase(it);
  }
  // The memory goes once the queue reaches the free: commands before it still use it.
  Command cmd;
  cmd.op = Op::kFree;
  cmd.dst = b;
  int rc = Enqueue(std::move(cmd));
  if (rc != kOk) {
    // Closing: the close frees what is left in buffers_; put it back for that.
    std::lock_guard<std::mutex> lock(buf_mu_);
    buffers_[b->id] = b;
  }
  return rc;
}

int Device::Enqueue(Command &&cmd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return kClosed;
    queue_.push_back(std::move(cmd));
  }
  cv_.notify_one();
  return kOk;
}

bool Device::BeginDrain(Completion *done) {
  {
    std::lock_guard<std::mutex> lock(close_mu_);
    if (state_ != State::kRunning) return false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_ || stop_) return false;
    accepting_ = false;
    Command cmd;
    cmd.op = Op::kFlush;
    cmd.done = done;
    queue_.push_back(std::move(cmd));
  }
  cv_.notify_one();
  return true;
}

void Device::Loop() {
  for (;;) {
    Command cmd;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      cmd = std::move(queue_.front());
      queue_.pop_front();
    }
    Execute(cmd);
  }
}

void Device::Execute(Command &c) {
  switch (c.op) {
    case Op::kWrite:
      memcpy(c.dst->data + c.offset, c.data.data(), c.data.size());
      break;
    case Op::kRead:
      c.done->data.assign(c.dst->data + c.offset, c.dst->data + c.offset + c.bytes);
      Deliver(c.done);
      break;
    case Op::kFill: {
      auto *p = reinterpret_cast<uint32_t *>(c.dst->data + c.offset);
      std::fill(p, p + c.bytes / 4, c.value);
      break;
    }
    case Op::kCopy:
      memmove(c.dst->data + c.offset, c.src->data + c.src_offset, c.bytes);
      break;
    case Op::kLaunch:
      if (c.kernel->prologue) c.kernel->prologue(c.args.data(), static_cast<uint32_t>(c.args.size()));
      pool_->Run(c.kernel, c.grid, c.args.data(), static_cast<uint32_t>(c.args.size()));
      break;
    case Op::kFlush:
      Deliver(c.done);
      break;
    case Op::kFree:
      free(c.dst->data);
      delete c.dst;
      break;
  }
  c.done = nullptr;
}

void Device::Deliver(Completion *c) {
  // Once the process is exiting the JS side may be gone: results are dropped, never sent;
  // unless the close runs from closeServices(), with JS alive.
  const devexit_registry_v1 *reg = Registry(nullptr);
  std::shared_ptr<Sink> sink = c->sink;
  if (sink && (js_alive_close_.load() || !(reg && reg->is_exiting()))) {
    std::lock_guard<std::mutex> lock(sink->mu);
    if (sink->alive && napi_call_threadsafe_function(sink->tsfn, c, napi_tsfn_nonblocking) == napi_ok) return;
  }
  delete c;
}

int Device::CloseOnce(bool finish, int64_t deadline_ns, std::string *error, bool js_alive) {
  {
    std::unique_lock<std::mutex> lock(close_mu_);
    if (state_ == State::kClosing) {
      // The other close (explicit or exit) runs it: wait for that one.
      auto done = [this] { return state_ == State::kClosed; };
      if (deadline_ns <= 0) {
        close_cv_.wait(lock, done);
      } else if (!close_cv_.wait_for(lock, std::chrono::nanoseconds(std::max<int64_t>(0, deadline_ns - NowNs())),
                                     done)) {
        *error = "the other close of this device was still running at the deadline";
        return 1;
      }
      return 0;
    }
    if (state_ == State::kClosed) return 0;
    bool running = state_ == State::kRunning;
    state_ = State::kClosing;
    if (!running) {
      // Never started: no thread, nothing queued.
      std::lock_guard<std::mutex> q(mu_);
      accepting_ = false;
    }
  }
  js_alive_close_.store(js_alive);
  std::deque<Command> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
    stop_ = true;
    if (!finish) dropped.swap(queue_);
  }
  cv_.notify_all();
  // Dropped work is not run, but frees still release their memory.
  for (Command &c : dropped) {
    if (c.op == Op::kFree) {
      Execute(c);
    } else if (c.done && js_alive) {
      c.done->status = Done::kDropped;  // rejected with ERR_DEVEXIT_DEVICE_CLOSED in its realm
      Deliver(c.done);
    } else if (c.done) {
      delete c.done;  // its realm is going away with the process: nothing to settle
    }
  }
  if (thread_ && thread_->joinable()) thread_->join();
  if (pool_) pool_->Stop();
  {
    std::lock_guard<std::mutex> lock(buf_mu_);
    for (auto &kv : buffers_) {
      free(kv.second->data);
      delete kv.second;
    }
    buffers_.clear();
  }
  {
    std::lock_guard<std::mutex> lock(close_mu_);
    state_ = State::kClosed;
  }
  close_cv_.notify_all();
  return 0;
}

void Device::ReleaseSinks() {
  std::vector<std::shared_ptr<Sink>> sinks;
  {
    std::lock_guard<std::mutex> lock(sinks_mu_);
    sinks.swap(sinks_);
  }
  for (auto &s : sinks) {
    std::lock_guard<std::mutex> lock(s->mu);
    if (!s->alive) continue;
    s->alive = false;
    // release, not abort: results already queued to the realm are still delivered.
    napi_release_threadsafe_function(s->tsfn, napi_tsfn_release);
  }
}

namespace {
struct Devices {
  std::mutex mu;
  std::vector<Device *> slots;
};
Devices &D() {
  static Devices *d = new Devices();
  return *d;
}
}  // namespace

Device *OpenDevice(uint32_t index, unsigned threads, std::string *error) {
  const devexit_registry_v1 *reg = Registry(error);
  if (!reg) return nullptr;
  int type = reg->device_type("cpu");
  if (type <= 0) {
    *error = "device_type(\"cpu\") failed with status " + std::to_string(type);
    return nullptr;
  }
  Devices &d = D();
  std::lock_guard<std::mutex> lock(d.mu);
  if (d.slots.size() <= index) d.slots.resize(index + 1, nullptr);
  Device *&slot = d.slots[index];
  // A closed device stays allocated (the registry may still hold its pointer); a new one replaces it.
  if (!slot || slot->closed()) slot = new Device(index, static_cast<uint16_t>(type), threads);
  return slot;
}

}  // namespace devexit_cpu
