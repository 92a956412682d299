// devexit_protocol.hpp — the one table of the protocol between devexit's native backends and
// their JS layer (C++17, header-only): statuses, kernel argument kinds, queue op codes, the
// built-in kernels and the built-in device types. The TypeScript side (@devexit/backend's
// Status, ARG_KIND and batch encoder, @devexit/core's BUILTIN_KERNEL_SIGNATURES and
// BUILTIN_DEVICE_TYPES) is checked against this file by packages/backend/test/protocol.test.ts,
// which parses it: keep each entry on its own line, as `kName = number,`.
#pragma once

#include <cstdint>

namespace devexit {

// Statuses a binding returns to its JS layer (@devexit/backend maps them to typed errors).
enum Status : int {
  kOk = 0,
  kClosed = 1,       // the service or device is closed
  kExiting = 2,      // the process is exiting: nothing new starts
  kBadBuffer = 3,    // unknown buffer id (freed, or another device's)
  kOutOfRange = 4,   // past a buffer's end, or no memory for it
  kStartFailed = 5,  // the service thread or the runtime could not start
  kBadArgs = 6,      // arguments the kernel's signature refuses
  kVendorError = 7,  // the vendor runtime failed; the completion names the error
};

// Kernel argument kinds: the same numbers as devexit_cpu_kernel.h's, in every backend and in JS.
enum ArgKind : uint32_t {
  kArgBuffer = 1,
  kArgU32 = 2,
  kArgI32 = 3,
  kArgF32 = 4,
};

// Operation codes of the queue, shared with @devexit/backend's batch encoder.
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
  kBatch = 10,  // words: a batch from JS (see BatchReader), run command by command
  kFreeRealm = 11,  // realm: free the buffers that realm allocated (it ended); native only
};

// The built-in device types: the registry's first type ids (16 and up are given out by name).
enum DeviceType : uint16_t {
  kDeviceCpu = 1,
  kDeviceCuda = 2,
  kDeviceHip = 3,
  kDeviceWgpu = 4,
};

// A built-in kernel as the queue checks it before any backend launches it (QueueService, shared
// by every backend, so that none can skip it): its argument kinds, and for each buffer how many
// 4-byte elements it must hold: kElementsN (the last argument, n) or a fixed count.
constexpr uint32_t kElementsN = 0xffffffffu;
struct BuiltinKernel {
  const char *name;
  uint32_t nargs;
  uint32_t kinds[4];
  uint32_t elements[4];  // buffers only: kElementsN or a count; 0 for scalars
  bool one_block;        // reduces in one block (GPU backends launch a single block)
};

// In @devexit/core's BUILTIN_KERNELS order: built-in i is launched as kernel id -1 - i.
// One kernel a line: name, nargs, kinds, elements, one_block.
constexpr BuiltinKernel kBuiltins[] = {
    {"fill_u32", 3, {kArgBuffer, kArgU32, kArgU32, 0}, {kElementsN, 0, 0, 0}, false},
    {"copy", 3, {kArgBuffer, kArgBuffer, kArgU32, 0}, {kElementsN, kElementsN, 0, 0}, false},
    {"saxpy_f32", 4, {kArgBuffer, kArgBuffer, kArgF32, kArgU32}, {kElementsN, kElementsN, 0, 0}, false},
    {"sum_f32", 3, {kArgBuffer, kArgBuffer, kArgU32, 0}, {kElementsN, 1, 0, 0}, true},
};
constexpr uint32_t kBuiltinCount = sizeof kBuiltins / sizeof kBuiltins[0];

// The built-in for a launch's kernel id (< 0), or nullptr.
inline const BuiltinKernel *FindBuiltin(int32_t kernel) {
  if (kernel >= 0) return nullptr;
  const int64_t index = -1 - static_cast<int64_t>(kernel);
  return index < kBuiltinCount ? &kBuiltins[index] : nullptr;
}

}  // namespace devexit
