// devexit_queue.hpp — the standard device queue of devexit's native backends (C++17,
// header-only, on devexit_service.hpp and devexit_sink.hpp).
//
// Every native backend (cpu, cuda, hip) runs the same queue: buffers by id, write / read / fill /
// copy / launch / flush / free, in order, on one service thread per device; errors of commands
// that answer nothing are kept and reported by the next read or flush. The backend supplies only
// its vendor calls (the Vendor* hooks below, all on the service thread); @devexit/backend's
// NativeQueue is the JS side of this protocol, whose commands and batches are in
// devexit_queue_command.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "devexit_queue_command.hpp"
#include "devexit_service.hpp"
#include "devexit_sink.hpp"

namespace devexit {

// A device's queue service: the standard commands over the backend's vendor calls. Heap-hold it
// for the life of the process. Close() is the one close of both the exit layers (through the
// registry) and device.close().
class QueueService : public ServiceThread<QueueCommand> {
 public:
  QueueService(devexit_device_id id, std::string service) : id_(id), service_(std::move(service)) {}

  devexit_device_id id() const { return id_; }
  const std::string &service() const { return service_; }

  // Starts the service thread and registers the exit close, once. kOk, kClosed, kExiting, or
  // kStartFailed with *error.
  int Open(std::string *error) {
    std::lock_guard<std::mutex> lock(open_mu_);
    if (opened_) return accepting() ? kOk : kClosed;
    if (close_.started()) return kClosed;
    const devexit_registry_v1 *reg = Registry(error);
    if (!reg) return kStartFailed;
    if (reg->is_exiting()) return kExiting;
    // Registered before the thread starts: an exit from now on closes it.
    int rc = RegisterClose(id_, service_.c_str(), this);
    if (rc == DEVEXIT_ERR_EXITING) return kExiting;
    if (rc < 0) {
      if (error) *error = "the registry refused the close (status " + std::to_string(rc) + ")";
      return kStartFailed;
    }
    if (!Start(error)) {
      // Not when a close took the registration between RegisterClose and Start (closeServices()
      // from another thread): forget() goes by key, and the key may be the next service's by now.
      close_.IfNotStarted([&] { reg->forget(id_, service_.c_str()); });
      if (close_.started()) return reg->is_exiting() ? kExiting : kClosed;  // closed while starting
      return kStartFailed;
    }
    opened_ = true;
    return kOk;
  }

  // The close, exactly once: drop what is queued (device.close() drains first, so nothing is
  // left for it), stop, release, join; shutdown() finishes the queue first, up to its drain
  // deadline. With JS alive, every realm hears that the device closed.
  int Close(const CloseContext &ctx, std::string *error) {
    closed_word_.store(1, std::memory_order_release);
    return close_.Run(ctx.deadline_ns, error, [&](std::string *why) {
      size_t dropped = 0;
      bool joined = ctx.finish ? Finish(ctx, why, &dropped) : Stop(StopMode::kDrop, ctx, why);
      if (ctx.js_alive) Realms::Get().NotifyClosed(id_.index, service_, true);
      if (joined && ctx.finish && ctx.note)
        *ctx.note = dropped ? DEVEXIT_NOTE_DROPPED + std::to_string(dropped) : DEVEXIT_NOTE_DRAINED;
      return joined ? 0 : 1;
    });
  }

  bool closed() { return close_.started(); }

  // A word that turns 1 when the close begins (as closed() does), for JS to read through a
  // typed-array view instead of a call on every enqueue. The service is never freed, so neither
  // is the word.
  uint32_t *closed_word() { return reinterpret_cast<uint32_t *>(&closed_word_); }

  // A buffer id, unique on this device across realms; its memory comes when the queue reaches
  // the alloc command.
  uint32_t NewBufferId() { return next_buffer_.fetch_add(1, std::memory_order_relaxed); }

  // Submits and maps a refusal to kClosed or kExiting.
  int Enqueue(QueueCommand &&c) { return Refusal(Submit(std::move(c))); }
  int EnqueueAll(std::vector<QueueCommand> &batch) { return Refusal(SubmitAll(batch)); }

  // A batch from JS as one command: checked whole here (kBadArgs, nothing queued, if any of it
  // is malformed), decoded and run command by command on the service thread. The calling thread
  // pays a check and a copy per command, and no allocation per command anywhere.
  int EnqueueBatch(const double *words, size_t n) {
    if (!CheckBatch(words, n)) return kBadArgs;
    QueueCommand c;
    c.op = QueueOp::kBatch;
    c.words = TakeSpareWords();
    c.words.assign(words, words + n);
    return Refusal(Submit(std::move(c)));
  }

 protected:
  // ---- the backend's vendor calls, all on the service thread. Return true on success; on
  // failure call Fail() (or FailVendor()) and return false. ----
  virtual bool VendorAlloc(uint64_t bytes, void **ptr) = 0;
  virtual void VendorFree(void *ptr) = 0;
  // `data` may be kept (moved from) until the next VendorSync, for asynchronous copies.
  virtual bool VendorWrite(void *dst, std::vector<uint8_t> &data) = 0;
  virtual bool VendorRead(uint8_t *dst, const void *src, uint64_t bytes) = 0;
  virtual bool VendorFill(void *dst, uint32_t value, uint64_t bytes) = 0;
  virtual bool VendorCopy(void *dst, const void *src, uint64_t bytes) = 0;
  virtual bool VendorLaunch(int32_t kernel, const uint32_t grid[3], std::vector<ResolvedArg> &args) = 0;
  // Waits until the device finished everything submitted so far.
  virtual bool VendorSync() = 0;
  // A backend-specific command; answer it with Answer().
  virtual void VendorCustom(QueueCommand &c) { Answer(c, new Completion(), false); }
  // After the last command: release what remains besides buffers (modules, streams, contexts).
  virtual void VendorRelease() {}
  // Backends whose VendorLaunch returns before the device ran the launch (a stream): about how
  // much launched work may wait on the device, in ns. A close drops what is still queued here,
  // but what was handed to the device runs to its end first: without a bound, a batch of 1,000
  // long launches would all be on the stream at exit. 0 (the default): launches are done when
  // VendorLaunch returns (cpu).
  virtual int64_t InFlightBudgetNs() { return 0; }

  // Records the first failure since the last read or flush; that one rejects with it.
  void Fail(int status, const std::string &message, const std::string &name = "") {
    if (sticky_status_ != kOk) return;
    sticky_status_ = status;
    sticky_ = message;
    sticky_name_ = name;
  }

  // Sends a completion to the realm that asked. with_sticky: a read/flush also reports the kept
  // failure (and clears it).
  void Answer(QueueCommand &c, Completion *out, bool with_sticky) {
    out->id = c.completion;
    if (with_sticky && sticky_status_ != kOk && out->status == kOk) {
      out->status = sticky_status_;
      out->error = sticky_;
      out->error_name = sticky_name_;
      out->has_data = false;
      sticky_status_ = kOk;
      sticky_.clear();
      sticky_name_.clear();
    }
    if (c.sink) c.sink->Deliver(out, closing_with_js());
    else delete out;
  }

  void Execute(QueueCommand &c) override {
    switch (c.op) {
      case QueueOp::kAlloc: {
        if (buffers_.count(c.buffer)) {
          Fail(kBadBuffer, "buffer " + std::to_string(c.buffer) + " is allocated twice");
          break;
        }
        void *p = nullptr;
        bool ok = VendorAlloc(c.bytes, &p);
        buffers_[c.buffer] = Buffer{ok ? p : nullptr, c.bytes};
        break;
      }
      case QueueOp::kFree: {
        auto it = buffers_.find(c.buffer);
        if (it == buffers_.end()) break;
        if (it->second.ptr) VendorFree(it->second.ptr);
        buffers_.erase(it);
        break;
      }
      case QueueOp::kWrite:
        if (void *p = Span(c.buffer, c.offset, c.data.size())) VendorWrite(static_cast<char *>(p) + c.offset, c.data);
        break;
      case QueueOp::kRead: {
        auto *out = new Completion();
        out->has_data = true;
        out->data.resize(c.bytes);
        if (void *p = Span(c.buffer, c.offset, c.bytes)) {
          if (c.bytes) VendorRead(out->data.data(), static_cast<char *>(p) + c.offset, c.bytes);
        }
        VendorSync();
        Repace();
        Answer(c, out, true);
        break;
      }
      case QueueOp::kFill:
        if (c.offset % 4 || c.bytes % 4) {
          Fail(kOutOfRange, "fill offset and bytes must be multiples of 4");
          break;
        }
        if (void *p = Span(c.buffer, c.offset, c.bytes)) {
          if (c.bytes) VendorFill(static_cast<char *>(p) + c.offset, c.value, c.bytes);
        }
        break;
      case QueueOp::kCopy: {
        void *src = Span(c.buffer, c.offset, c.bytes);
        void *dst = src ? Span(c.buffer2, c.offset2, c.bytes) : nullptr;
        if (src && dst && c.bytes) VendorCopy(static_cast<char *>(dst) + c.offset2, static_cast<char *>(src) + c.offset, c.bytes);
        break;
      }
      case QueueOp::kLaunch: {
        args_.resize(c.args.size());
        bool ok = true;
        for (size_t i = 0; i < c.args.size() && ok; i++) {
          ResolvedArg &r = args_[i];
          r.kind = c.args[i].kind;
          r.bits = c.args[i].bits;
          r.ptr = nullptr;
          r.size = 0;
          if (r.kind == kArgBuffer) {
            auto it = buffers_.find(c.args[i].buffer);
            if (it == buffers_.end() || !it->second.ptr) {
              Fail(kBadBuffer, "launch: argument " + std::to_string(i) + " is not a live buffer");
              ok = false;
            } else {
              r.ptr = it->second.ptr;
              r.size = it->second.size;
            }
          }
        }
        if (ok && Pace()) VendorLaunch(c.kernel, c.grid, args_);
        break;
      }
      case QueueOp::kFlush:
        VendorSync();
        Repace();
        Answer(c, new Completion(), true);
        break;
      case QueueOp::kCustom:
        VendorCustom(c);
        break;
      case QueueOp::kBatch: {
        // A drop stops between the batch's commands, as it does between queued commands.
        BatchReader reader(c.words.data(), c.words.size());
        while (!dropping() && reader.Next(&batch_command_)) {
          try {
            Execute(batch_command_);
          } catch (const std::exception &e) {
            OnExecuteFailed(batch_command_, e.what());
          }
        }
        GiveBackWords(std::move(c.words));
        break;
      }
    }
  }

  void OnExecuteFailed(QueueCommand &c, const char *what) override {
    Fail(kOutOfRange, std::string("out of memory: ") + what);
    if (c.op == QueueOp::kRead || c.op == QueueOp::kFlush || c.op == QueueOp::kCustom) {
      auto *out = new Completion();
      out->status = kOutOfRange;
      out->error = std::string("out of memory: ") + what;
      Answer(c, out, false);
    }
  }

  void OnStop() override {
    VendorSync();
    for (auto &b : buffers_)
      if (b.second.ptr) VendorFree(b.second.ptr);
    buffers_.clear();
    VendorRelease();
  }

  void OnDropped(QueueCommand &c, const CloseContext &ctx) override {
    if (!ctx.js_alive || !c.sink || c.completion == 0) return;
    auto *out = new Completion();
    out->id = c.completion;
    out->status = kClosed;
    out->error = "the device closed before this command ran";
    c.sink->Deliver(out, true);
  }

 private:
  struct Buffer {
    void *ptr = nullptr;
    uint64_t size = 0;
  };

  // Before a launch, with InFlightBudgetNs() > 0: when the launches since the last synchronize
  // are expected to take longer than the budget, synchronizes first, each launch expected to take
  // what the previous window's took on average. The window starts at one launch, and again after
  // each read or flush (the next launches may be other kernels): long kernels then keep one
  // launch on the device, tiny ones grow the window (up to 4096) and pay one synchronize per
  // ~budget of device work. A window learned on tiny kernels and then filled with long ones (no
  // read or flush between them) holds up to window x their time. False: a drop came while it
  // waited, and the launch is dropped too.
  void Repace() {
    paced_ = 0;
    pace_window_ = 1;
  }

  bool Pace() {
    const int64_t budget = InFlightBudgetNs();
    if (budget <= 0) return true;
    if (paced_ >= pace_window_) {
      VendorSync();
      const int64_t per_launch = std::max<int64_t>(1, (MonotonicNs() - pace_start_ns_) / paced_);
      pace_window_ = static_cast<uint32_t>(std::min<int64_t>(4096, std::max<int64_t>(1, budget / per_launch)));
      paced_ = 0;
      if (dropping()) return false;
    }
    if (paced_++ == 0) pace_start_ns_ = MonotonicNs();
    return true;
  }

  // The buffer's base address when [offset, offset + bytes) lies inside it; else a kept failure.
  void *Span(uint32_t id, uint64_t offset, uint64_t bytes) {
    auto it = buffers_.find(id);
    if (it == buffers_.end() || !it->second.ptr) {
      Fail(kBadBuffer, "buffer " + std::to_string(id) + " has no memory (freed, or its allocation failed)");
      return nullptr;
    }
    if (offset > it->second.size || bytes > it->second.size - offset) {
      Fail(kOutOfRange, "range past the end of buffer " + std::to_string(id));
      return nullptr;
    }
    return it->second.ptr;
  }

  // Batches' word vectors, kept for the next batches: a fresh vector of a large batch is memory
  // the kernel maps, faults in and unmaps again (with a TLB shootdown: the service thread read
  // it) every time.
  std::vector<double> TakeSpareWords() {
    std::lock_guard<std::mutex> lock(spare_mu_);
    if (spare_words_.empty()) return {};
    std::vector<double> v = std::move(spare_words_.back());
    spare_words_.pop_back();
    return v;
  }
  void GiveBackWords(std::vector<double> &&v) {
    v.clear();
    std::lock_guard<std::mutex> lock(spare_mu_);
    if (spare_words_.size() < 4) spare_words_.push_back(std::move(v));
  }

  int Refusal(int status) {
    if (status == kOk) return kOk;
    return ProcessExiting() ? kExiting : kClosed;
  }

  devexit_device_id id_;
  std::string service_;
  std::mutex open_mu_;
  bool opened_ = false;
  std::atomic<uint32_t> next_buffer_{1};
  CloseOnce close_;
  std::atomic<uint32_t> closed_word_{0};
  std::mutex spare_mu_;
  std::vector<std::vector<double>> spare_words_;
  // Service thread only.
  std::unordered_map<uint32_t, Buffer> buffers_;
  std::vector<ResolvedArg> args_;
  QueueCommand batch_command_;  // reused for every command of every batch
  uint32_t paced_ = 0;          // launches since the last synchronize (see Pace)
  uint32_t pace_window_ = 1;
  int64_t pace_start_ns_ = 0;
  int sticky_status_ = kOk;
  std::string sticky_, sticky_name_;
};

// A backend's device services, one per device index, process-wide (every realm opens the same
// one): OpenDevice() of the cpu, cuda and hip backends. Get() is never destroyed, nor is a service
// it replaced: an exit layer or another realm may still reach it.
template <typename Service>
class DeviceSlots {
 public:
  static DeviceSlots &Get() {
    static DeviceSlots &slots = *new DeviceSlots();
    return slots;
  }

  // The service of device `index` of type `type_name`: the one handed out before, or, when there
  // is none, it closed or `stale(service)` says it is unusable, a new one from make(id) (called
  // under the lock). nullptr with *error when the registry or the device type cannot be had.
  template <typename Make, typename Stale>
  Service *Open(const char *type_name, uint32_t index, std::string *error, Make &&make, Stale &&stale) {
    const devexit_registry_v1 *reg = Registry(error);
    if (!reg) return nullptr;
    const int type = reg->device_type(type_name);
    if (type <= 0) {
      *error = std::string("device_type(\"") + type_name + "\") failed with status " + std::to_string(type);
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (slots_.size() <= index) slots_.resize(index + 1, nullptr);
    Service *&slot = slots_[index];
    if (!slot || slot->closed() || stale(*slot)) {
      devexit_device_id id;
      id.type = static_cast<uint16_t>(type);
      id.index = index;
      slot = make(id);
    }
    return slot;
  }

  template <typename Make>
  Service *Open(const char *type_name, uint32_t index, std::string *error, Make &&make) {
    return Open(type_name, index, error, std::forward<Make>(make), [](const Service &) { return false; });
  }

 private:
  DeviceSlots() = default;
  std::mutex mu_;
  std::vector<Service *> slots_;
};

}  // namespace devexit
