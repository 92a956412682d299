// devexit_queue.hpp — the standard device queue of devexit's native backends (C++17,
// header-only, on devexit_service.hpp and devexit_sink.hpp).
//
// Every native backend (cpu, cuda, hip) runs the same queue: buffers by id, write / read / fill /
// copy / launch / flush / free, in order, on one service thread per device; errors of commands
// that answer nothing are kept and reported by the next read or flush. The backend supplies only
// its vendor calls (the Vendor* hooks below, all on the service thread); @devexit/backend's
// NativeQueue is the JS side of this protocol.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "devexit_service.hpp"
#include "devexit_sink.hpp"

namespace devexit {

// Kernel argument kinds: the same numbers as devexit_cpu_kernel.h's, in every backend and in JS.
enum ArgKind : uint32_t { kArgBuffer = 1, kArgU32 = 2, kArgI32 = 3, kArgF32 = 4 };

// Operation codes, shared with @devexit/backend's encoder (src/protocol.ts).
enum class QueueOp : uint8_t {
  kAlloc = 1,   // buffer, bytes
  kFree = 2,    // buffer
  kWrite = 3,   // buffer, offset, data
  kRead = 4,    // buffer, offset, bytes -> completion with the bytes
  kFill = 5,    // buffer, value, offset, bytes (u32 pattern)
  kCopy = 6,    // buffer (src), buffer2 (dst), bytes, offset (src), offset2 (dst)
  kLaunch = 7,  // kernel, grid[3], args
  kFlush = 8,   // -> completion once everything before it ran
  kCustom = 9,  // backend-specific (loading a module...), with a completion
};

struct KernelArg {
  uint32_t kind = kArgU32;
  uint32_t bits = 0;    // u32 / i32 / f32 bit pattern
  uint32_t buffer = 0;  // buffer id for kArgBuffer
};

// A kernel argument as the vendor launch sees it.
struct ResolvedArg {
  uint32_t kind = kArgU32;
  uint32_t bits = 0;
  void *ptr = nullptr;  // device (or host, for cpu) address of a buffer
  uint64_t size = 0;    // its size in bytes
};

struct QueueCommand {
  QueueOp op = QueueOp::kFlush;
  uint32_t buffer = 0, buffer2 = 0;
  uint64_t offset = 0, offset2 = 0, bytes = 0;
  uint32_t value = 0;
  int32_t kernel = 0;  // < 0: built-in kernel number -1 - kernel (core's BUILTIN_KERNELS order)
  uint32_t grid[3] = {1, 1, 1};
  std::vector<KernelArg> args;
  std::vector<uint8_t> data;  // write payload, or the custom command's input
  std::string text;           // the custom command's name/entry
  double completion = 0;      // the pending id of read / flush / custom
  std::shared_ptr<CompletionSink> sink;
};

// Decodes a batch of commands from JS (launch, fill, copy, free, alloc: the ones that carry no
// bytes and answer nothing). Words are doubles; each command starts with its op:
//   alloc:  1, buffer, bytes
//   free:   2, buffer
//   fill:   5, buffer, value, offset, bytes
//   copy:   6, src, dst, bytes, srcOffset, dstOffset
//   launch: 7, kernel, gx, gy, gz, nargs, then nargs x (kind, value)  (f32 values as numbers)
// Returns false for a malformed batch (nothing is decoded then).
inline bool DecodeBatch(const double *w, size_t n, std::vector<QueueCommand> *out) {
  auto u32 = [](double v, uint32_t *o) {
    if (!(v >= 0 && v <= 4294967295.0) || v != static_cast<double>(static_cast<uint64_t>(v))) return false;
    *o = static_cast<uint32_t>(v);
    return true;
  };
  auto u64 = [](double v, uint64_t *o) {
    if (!(v >= 0 && v <= 9007199254740991.0) || v != static_cast<double>(static_cast<uint64_t>(v))) return false;
    *o = static_cast<uint64_t>(v);
    return true;
  };
  size_t first = out->size();
  size_t i = 0;
  auto fail = [&] {
    out->resize(first);
    return false;
  };
  while (i < n) {
    QueueCommand c;
    uint32_t op;
    if (!u32(w[i++], &op)) return fail();
    auto need = [&](size_t k) { return i + k <= n; };
    switch (static_cast<QueueOp>(op)) {
      case QueueOp::kAlloc:
        if (!need(2) || !u32(w[i], &c.buffer) || !u64(w[i + 1], &c.bytes)) return fail();
        i += 2;
        break;
      case QueueOp::kFree:
        if (!need(1) || !u32(w[i], &c.buffer)) return fail();
        i += 1;
        break;
      case QueueOp::kFill:
        if (!need(4) || !u32(w[i], &c.buffer) || !u32(w[i + 1], &c.value) || !u64(w[i + 2], &c.offset) ||
            !u64(w[i + 3], &c.bytes))
          return fail();
        i += 4;
        break;
      case QueueOp::kCopy:
        if (!need(5) || !u32(w[i], &c.buffer) || !u32(w[i + 1], &c.buffer2) || !u64(w[i + 2], &c.bytes) ||
            !u64(w[i + 3], &c.offset) || !u64(w[i + 4], &c.offset2))
          return fail();
        i += 5;
        break;
      case QueueOp::kLaunch: {
        uint32_t nargs;
        if (!need(5) || !(w[i] >= -2147483648.0 && w[i] <= 2147483647.0) ||
            w[i] != static_cast<double>(static_cast<int64_t>(w[i])))
          return fail();
        c.kernel = static_cast<int32_t>(w[i]);
        if (!u32(w[i + 1], &c.grid[0]) || !u32(w[i + 2], &c.grid[1]) || !u32(w[i + 3], &c.grid[2]) ||
            !u32(w[i + 4], &nargs) || !need(5 + 2 * static_cast<size_t>(nargs)))
          return fail();
        i += 5;
        c.args.resize(nargs);
        for (uint32_t a = 0; a < nargs; a++, i += 2) {
          KernelArg &arg = c.args[a];
          if (!u32(w[i], &arg.kind)) return fail();
          double v = w[i + 1];
          switch (arg.kind) {
            case kArgBuffer:
              if (!u32(v, &arg.buffer)) return fail();
              break;
            case kArgU32:
              if (!u32(v, &arg.bits)) return fail();
              break;
            case kArgI32: {
              if (!(v >= -2147483648.0 && v <= 2147483647.0) || v != static_cast<double>(static_cast<int64_t>(v)))
                return fail();
              int32_t s = static_cast<int32_t>(v);
              std::memcpy(&arg.bits, &s, 4);
              break;
            }
            case kArgF32: {
              float f = static_cast<float>(v);
              std::memcpy(&arg.bits, &f, 4);
              break;
            }
            default:
              return fail();
          }
        }
        break;
      }
      default:
        return fail();
    }
    c.op = static_cast<QueueOp>(op);
    out->push_back(std::move(c));
  }
  return true;
}

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

  // A buffer id, unique on this device across realms; its memory comes when the queue reaches
  // the alloc command.
  uint32_t NewBufferId() { return next_buffer_.fetch_add(1, std::memory_order_relaxed); }

  // Submits and maps a refusal to kClosed or kExiting.
  int Enqueue(QueueCommand &&c) { return Refusal(Submit(std::move(c))); }
  int EnqueueAll(std::vector<QueueCommand> &batch) { return Refusal(SubmitAll(batch)); }

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
        if (ok) VendorLaunch(c.kernel, c.grid, args_);
        break;
      }
      case QueueOp::kFlush:
        VendorSync();
        Answer(c, new Completion(), true);
        break;
      case QueueOp::kCustom:
        VendorCustom(c);
        break;
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
  // Service thread only.
  std::unordered_map<uint32_t, Buffer> buffers_;
  std::vector<ResolvedArg> args_;
  int sticky_status_ = kOk;
  std::string sticky_, sticky_name_;
};

}  // namespace devexit
