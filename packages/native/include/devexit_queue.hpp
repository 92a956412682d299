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
#include <iterator>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "devexit_queue_command.hpp"
#include "devexit_service_base.hpp"
#include "devexit_sink.hpp"

namespace devexit {

// A device's queue service: the standard commands over the backend's vendor calls, on the one
// service base (open, close, stop rule, lifetime: devexit_service_base.hpp).
class QueueService : public Service<QueueCommand> {
 public:
  QueueService(devexit_device_id id, std::string service) : Service(id, std::move(service)) {}

  // A buffer id, unique on this device across realms; its memory comes when the queue reaches
  // the alloc command.
  uint32_t NewBufferId() { return next_buffer_.fetch_add(1, std::memory_order_relaxed); }

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
  // Never called with an empty grid (a zero dimension launches nothing).
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
        buffers_[c.buffer] = Buffer{ok ? p : nullptr, c.bytes, c.realm};
        break;
      }
      case QueueOp::kFreeRealm:
        // A realm (a Worker) ended: what it allocated and did not free, no one else can use (its
        // buffer objects are its own), and the device outlives it.
        for (auto it = buffers_.begin(); it != buffers_.end();)
          it = it->second.realm == c.realm ? FreeBuffer(it) : std::next(it);
        break;
      case QueueOp::kFree: {
        auto it = buffers_.find(c.buffer);
        if (it != buffers_.end()) FreeBuffer(it);
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
        // An empty grid launches nothing on every backend (a vendor would refuse a zero dimension).
        const bool empty = c.grid[0] == 0 || c.grid[1] == 0 || c.grid[2] == 0;
        if (ok && !empty && CheckBuiltin(c.kernel, args_) && Pace()) VendorLaunch(c.kernel, c.grid, args_);
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
        if (dropping()) {
          size_t rest = 0;
          while (reader.Next(&batch_command_)) rest++;
          CutShort(rest);
        }
        GiveBackWords(std::move(c.words));
        break;
      }
    }
  }

  size_t CommandsIn(const QueueCommand &c) const override {
    if (c.op == QueueOp::kFreeRealm) return 0;  // not the program's: not counted as dropped
    if (c.op != QueueOp::kBatch) return 1;
    BatchReader reader(c.words.data(), c.words.size());
    QueueCommand each;
    size_t n = 0;
    while (reader.Next(&each)) n++;
    return n;
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

  const char *DroppedMessage() const override { return "the device closed before this command ran"; }

 private:
  struct Buffer {
    void *ptr = nullptr;
    uint64_t size = 0;
    uint32_t realm = 0;  // the allocating realm's tag (kFreeRealm)
  };
  using Buffers = std::unordered_map<uint32_t, Buffer>;

  // Frees one buffer (a failed allocation has no memory to free); the next one.
  Buffers::iterator FreeBuffer(Buffers::iterator it) {
    if (it->second.ptr) VendorFree(it->second.ptr);
    return buffers_.erase(it);
  }

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

  // A built-in's launch, checked here for every backend (JS checks first; this holds even when
  // it did not): the kernel exists, its arguments have their kinds, and every buffer holds the
  // elements the kernel touches. User kernels (id >= 0) have no signature here.
  bool CheckBuiltin(int32_t kernel, const std::vector<ResolvedArg> &args) {
    if (kernel >= 0) return true;
    const BuiltinKernel *k = FindBuiltin(kernel);
    if (!k) {
      Fail(kBadArgs, "launch: there is no built-in kernel " + std::to_string(kernel));
      return false;
    }
    bool ok = args.size() == k->nargs;
    for (size_t i = 0; ok && i < args.size(); i++) ok = args[i].kind == k->kinds[i];
    if (!ok) {
      Fail(kBadArgs, std::string("launch ") + k->name + ": arguments do not match its signature");
      return false;
    }
    const uint64_t n = args[k->nargs - 1].bits;
    for (size_t i = 0; i < args.size(); i++) {
      if (args[i].kind != kArgBuffer) continue;
      const uint64_t elements = k->elements[i] == kElementsN ? n : k->elements[i];
      if (args[i].size / 4 < elements) {
        Fail(kOutOfRange, std::string("launch ") + k->name + ": argument " + std::to_string(i) +
                              " holds fewer than the elements it would touch");
        return false;
      }
    }
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

  std::atomic<uint32_t> next_buffer_{1};
  std::mutex spare_mu_;
  std::vector<std::vector<double>> spare_words_;
  // Service thread only.
  Buffers buffers_;
  std::vector<ResolvedArg> args_;
  QueueCommand batch_command_;  // reused for every command of every batch
  uint32_t paced_ = 0;          // launches since the last synchronize (see Pace)
  uint32_t pace_window_ = 1;
  int64_t pace_start_ns_ = 0;
  int sticky_status_ = kOk;
  std::string sticky_, sticky_name_;
};

}  // namespace devexit
