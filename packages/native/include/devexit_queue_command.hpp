// devexit_queue_command.hpp — the commands of devexit's standard device queue and their batch
// encoding from JS (C++17, header-only). @devexit/backend's NativeQueue writes these batches;
// devexit_queue.hpp's QueueService runs the commands.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "devexit_protocol.hpp"
#include "devexit_sink.hpp"

namespace devexit {

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
  std::vector<double> words;  // a batch's commands, decoded on the service thread
  std::string text;           // the custom command's name/entry
  double completion = 0;      // the pending id of read / flush / custom
  std::shared_ptr<CompletionSink> sink;
  uint32_t realm = 0;  // alloc, free-realm: the realm's tag (queue_binding::RealmData); 0: none
};

// A batch of commands from JS (launch, fill, copy, free, alloc: the ones that carry no bytes and
// answer nothing). Words are doubles; each command starts with its op:
//   alloc:  1, buffer, bytes
//   free:   2, buffer
//   fill:   5, buffer, value, offset, bytes
//   copy:   6, src, dst, bytes, srcOffset, dstOffset
//   launch: 7, kernel, gx, gy, gz, nargs, then nargs x (kind, value)  (f32 values as numbers)
// BatchReader decodes one command at a time into a QueueCommand that the caller reuses, so that
// decoding allocates nothing once the command's argument vector has grown to the batch's widest
// launch. Next() returns false at the end or at a malformed command (then malformed() is true).
class BatchReader {
 public:
  BatchReader(const double *w, size_t n) : w_(w), n_(n) {}

  bool malformed() const { return malformed_; }

  bool Next(QueueCommand *c) {
    if (i_ >= n_ || malformed_) return false;
    if (!Decode(c)) {
      malformed_ = true;
      return false;
    }
    return true;
  }

 private:
  static bool U32(double v, uint32_t *o) {
    if (!(v >= 0 && v <= 4294967295.0) || v != static_cast<double>(static_cast<uint64_t>(v))) return false;
    *o = static_cast<uint32_t>(v);
    return true;
  }
  static bool U64(double v, uint64_t *o) {
    if (!(v >= 0 && v <= 9007199254740991.0) || v != static_cast<double>(static_cast<uint64_t>(v))) return false;
    *o = static_cast<uint64_t>(v);
    return true;
  }
  static bool I32(double v, int32_t *o) {
    if (!(v >= -2147483648.0 && v <= 2147483647.0) || v != static_cast<double>(static_cast<int64_t>(v))) return false;
    *o = static_cast<int32_t>(v);
    return true;
  }
  bool Need(size_t at, size_t k) const { return at + k <= n_; }

  bool Decode(QueueCommand *c) {
    const double *w = w_;
    uint32_t op;
    if (!U32(w[i_++], &op)) return false;
    size_t i = i_;
    switch (static_cast<QueueOp>(op)) {
      case QueueOp::kAlloc:
        if (!Need(i, 2) || !U32(w[i], &c->buffer) || !U64(w[i + 1], &c->bytes)) return false;
        i += 2;
        break;
      case QueueOp::kFree:
        if (!Need(i, 1) || !U32(w[i], &c->buffer)) return false;
        i += 1;
        break;
      case QueueOp::kFill:
        if (!Need(i, 4) || !U32(w[i], &c->buffer) || !U32(w[i + 1], &c->value) || !U64(w[i + 2], &c->offset) ||
            !U64(w[i + 3], &c->bytes))
          return false;
        i += 4;
        break;
      case QueueOp::kCopy:
        if (!Need(i, 5) || !U32(w[i], &c->buffer) || !U32(w[i + 1], &c->buffer2) || !U64(w[i + 2], &c->bytes) ||
            !U64(w[i + 3], &c->offset) || !U64(w[i + 4], &c->offset2))
          return false;
        i += 5;
        break;
      case QueueOp::kLaunch: {
        uint32_t nargs;
        if (!Need(i, 5) || !I32(w[i], &c->kernel) || !U32(w[i + 1], &c->grid[0]) || !U32(w[i + 2], &c->grid[1]) ||
            !U32(w[i + 3], &c->grid[2]) || !U32(w[i + 4], &nargs) || !Need(i + 5, 2 * static_cast<size_t>(nargs)))
          return false;
        i += 5;
        c->args.resize(nargs);
        for (uint32_t a = 0; a < nargs; a++, i += 2) {
          KernelArg &arg = c->args[a];
          arg.bits = 0;
          arg.buffer = 0;
          if (!U32(w[i], &arg.kind)) return false;
          const double v = w[i + 1];
          switch (arg.kind) {
            case kArgBuffer:
              if (!U32(v, &arg.buffer)) return false;
              break;
            case kArgU32:
              if (!U32(v, &arg.bits)) return false;
              break;
            case kArgI32: {
              int32_t s;
              if (!I32(v, &s)) return false;
              std::memcpy(&arg.bits, &s, 4);
              break;
            }
            case kArgF32: {
              const float f = static_cast<float>(v);
              std::memcpy(&arg.bits, &f, 4);
              break;
            }
            default:
              return false;
          }
        }
        break;
      }
      default:
        return false;
    }
    c->op = static_cast<QueueOp>(op);
    i_ = i;
    return true;
  }

  const double *w_;
  size_t n_;
  size_t i_ = 0;
  bool malformed_ = false;
};

// Decodes a whole batch into separate commands, appended to *out. Returns false for a malformed
// batch (nothing is appended then).
inline bool DecodeBatch(const double *w, size_t n, std::vector<QueueCommand> *out) {
  const size_t first = out->size();
  BatchReader reader(w, n);
  for (;;) {
    QueueCommand c;
    if (!reader.Next(&c)) break;
    out->push_back(std::move(c));
  }
  if (!reader.malformed()) return true;
  out->resize(first);
  return false;
}

// Checks a whole batch without keeping anything: true when every command decodes.
inline bool CheckBatch(const double *w, size_t n) {
  thread_local QueueCommand scratch;  // its argument vector is reused from batch to batch
  BatchReader reader(w, n);
  while (reader.Next(&scratch)) {
  }
  return !reader.malformed();
}

}  // namespace devexit
