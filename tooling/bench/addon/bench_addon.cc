// The bench's native baselines (tooling/bench), built with @devexit/native's gyp flags:
//   emptyCall(a, b, c)        an N-API call that does nothing: the floor of any per-call path
//   memcpyGBps(bytes, reps)   memcpy bandwidth, GB/s of bytes read + written, one figure per rep
//   listScan(n)               the seed's registry: a list scanned for the key on each insert
//   registerMany(n)           n registrations into devexit's registry, through devexit.h
//   tableInsert(n, variant)   n inserts into the registry's own key table (addon/key_table.h),
//                             without the ABI: 'lock' (a mutex around each, as the registry
//                             takes), 'plain' (no lock), 'presized' (no lock, index sized first);
//                             also says how many inserts the table's filter could not call new
//   indexFloor(n)             n inserts into the barest hash index of the registry's shape (4-byte
//                             slots probed and written, no records, no lock, sized first): what
//                             the memory charges any index of that size
//   warmHeap(bytes)           makes malloc hand out memory already faulted in (see WarmHeap)
//   idleServices(backend, devices, perDevice)
//                             starts devices x perDevice idle service threads of the shared
//                             runtime (devexit_service.hpp), each registered for its exit close
// Timings are {wallNs, cpuNs, faults}: cpuNs is this thread's CPU time, which a loaded machine
// inflates less than wall time (other processes' time slices are not counted in it); faults, the
// page faults this thread took meanwhile.
#include <napi.h>
#include <sys/resource.h>
#include <time.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "devexit.h"
#include "devexit_service.hpp"
#include "key_table.h"

namespace {

int64_t ThreadCpuNs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t ThreadFaults() {
#if defined(RUSAGE_THREAD)
  rusage u;
  if (getrusage(RUSAGE_THREAD, &u) == 0) return u.ru_minflt + u.ru_majflt;
#endif
  return 0;
}

struct Timer {
  int64_t faults = ThreadFaults(), wall = WallNs(), cpu = ThreadCpuNs();
  Napi::Object Done(Napi::Env env) const {
    const int64_t cpu_end = ThreadCpuNs(), wall_end = WallNs();
    Napi::Object out = Napi::Object::New(env);
    out["cpuNs"] = static_cast<double>(cpu_end - cpu);
    out["wallNs"] = static_cast<double>(wall_end - wall);
    out["faults"] = static_cast<double>(ThreadFaults() - faults);
    return out;
  }
};

// The first touch of a fresh page costs a page fault: ~0.2 us on bare metal, 20-50 us on this
// project's CI VM (shadow paging). A registry of n keys faults in its ~48n bytes; at 1k keys those
// come from memory Node's start already faulted in, at 1M keys from fresh pages. So that 1k and 1M
// are compared on equal terms, the registration fixtures first make malloc keep `bytes` of
// faulted-in memory: no mmap for large blocks (they would be fresh pages), no trimming, and one
// block of `bytes` touched and freed. glibc only; elsewhere it does nothing.
Napi::Value WarmHeap(const Napi::CallbackInfo &info) {
  const size_t bytes = static_cast<size_t>(info[0].As<Napi::Number>().DoubleValue());
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 0x7fffffff);
  auto *block = static_cast<volatile char *>(malloc(bytes));
  if (!block) throw Napi::Error::New(info.Env(), "out of memory");
  for (size_t i = 0; i < bytes; i += 4096) block[i] = 1;
  free(const_cast<char *>(block));
  return Napi::Boolean::New(info.Env(), true);
#else
  return Napi::Boolean::New(info.Env(), false);
#endif
}

Napi::Value EmptyCall(const Napi::CallbackInfo &info) { return info.Env().Undefined(); }

Napi::Value MemcpyGBps(const Napi::CallbackInfo &info) {
  const size_t bytes = static_cast<size_t>(info[0].As<Napi::Number>().DoubleValue());
  const int reps = info[1].As<Napi::Number>().Int32Value();
  auto *src = static_cast<char *>(malloc(bytes));
  auto *dst = static_cast<char *>(malloc(bytes));
  if (!src || !dst) throw Napi::Error::New(info.Env(), "out of memory");
  memset(src, 1, bytes);  // fault every page in before timing
  memset(dst, 2, bytes);
  Napi::Array out = Napi::Array::New(info.Env());
  for (int r = 0; r < reps; r++) {
    const int64_t t = WallNs();
    memcpy(dst, src, bytes);
    const int64_t ns = WallNs() - t;
    out[static_cast<uint32_t>(r)] = 2.0 * static_cast<double>(bytes) / static_cast<double>(ns);
    src[r % bytes] = dst[(r * 7) % bytes];  // keep the copies observable
  }
  free(src);
  free(dst);
  return out;
}

std::vector<std::string> Names(uint32_t n) {
  std::vector<std::string> names(n);
  for (uint32_t i = 0; i < n; i++) names[i] = "s" + std::to_string(i);
  return names;
}

// The seed's registry: a list of keys, scanned on every registration for a duplicate.
struct ListKey {
  uint16_t type;
  uint32_t index;
  std::string service;
  void *ctx;
};
Napi::Value ListScan(const Napi::CallbackInfo &info) {
  const uint32_t n = info[0].As<Napi::Number>().Uint32Value();
  const std::vector<std::string> names = Names(n);
  std::vector<ListKey> list;
  Timer timer;
  for (uint32_t i = 0; i < n; i++) {
    bool found = false;
    for (const ListKey &k : list) {
      if (k.type == 1 && k.index == i % 64 && k.service == names[i]) {
        found = true;
        break;
      }
    }
    if (!found) list.push_back(ListKey{1, i % 64, names[i], nullptr});
  }
  Napi::Object out = timer.Done(info.Env());
  out["keys"] = static_cast<double>(list.size());
  return out;
}

int CloseNothing(void *, const devexit_close_call_v1 *) { return 0; }

Napi::Value RegisterMany(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const devexit_registry_v1 *reg = nullptr;
  char err[512] = {0};
  if (devexit_find_registry(DEVEXIT_ABI_VERSION, &reg, err, sizeof err) < 0 || !reg)
    throw Napi::Error::New(env, std::string("no registry: ") + err);
  const std::string backend = info[0].As<Napi::String>();
  const uint32_t n = info[1].As<Napi::Number>().Uint32Value();
  const int type = reg->device_type(backend.c_str());
  if (type <= 0) throw Napi::Error::New(env, "device_type failed");
  const std::vector<std::string> names = Names(n);
  // The first registration in a process starts the close engine's parked manager thread: a
  // one-time cost, not a per-key one. Pay it before the timer.
  devexit_device_id warm;
  warm.type = static_cast<uint16_t>(type);
  warm.index = 64;
  reg->register_close(warm, "warm-up", CloseNothing, nullptr);
  uint32_t accepted = 0;
  Timer timer;
  for (uint32_t i = 0; i < n; i++) {
    devexit_device_id id;
    id.type = static_cast<uint16_t>(type);
    id.index = i % 64;
    accepted += reg->register_close(id, names[i].c_str(), CloseNothing, nullptr) == DEVEXIT_OK;
  }
  Napi::Object out = timer.Done(env);
  out["keys"] = static_cast<double>(accepted);
  return out;
}

// The registry's own key table, without the ABI call: with the registry's lock around each
// insert, without it, and without it in an index sized first. Side by side with registerMany, they
// say what the ABI call, the lock and growing the index cost.
Napi::Value TableInsert(const Napi::CallbackInfo &info) {
  const uint32_t n = info[0].As<Napi::Number>().Uint32Value();
  const std::string variant = info[1].As<Napi::String>();
  const std::vector<std::string> names = Names(n);
  auto *table = new devexit::KeyTable();
  if (variant == "presized") table->ReserveIndex(n + 1);
  table->Insert(devexit::KeyTable::Hash(1, 64, "warm-up"), 1, 64, "warm-up", CloseNothing, nullptr);
  std::mutex mu;
  const bool lock = variant == "lock";
  uint32_t placed = 0;
  Timer timer;
  for (uint32_t i = 0; i < n; i++) {
    const uint64_t h = devexit::KeyTable::Hash(1, i % 64, names[i]);
    table->Prefetch(h);
    std::unique_lock<std::mutex> guard(mu, std::defer_lock);
    if (lock) guard.lock();
    placed += table->Insert(h, 1, i % 64, names[i], CloseNothing, nullptr);
  }
  Napi::Object out = timer.Done(info.Env());
  out["keys"] = static_cast<double>(placed);
  out["uncertain"] = static_cast<double>(table->uncertain());
  delete table;
  return out;
}

// The registry's index without the registry: the same hashing of the same keys into an array of
// the registry's 4-byte slots (7 bits of tag, 25 of record number), sized first, no lock, no
// names kept, no records. What it costs per key at n keys is what the memory charges any such
// index.
Napi::Value IndexFloor(const Napi::CallbackInfo &info) {
  const uint32_t n = info[0].As<Napi::Number>().Uint32Value();
  const std::vector<std::string> names = Names(n);
  size_t size = 1024;
  while (size < (static_cast<size_t>(n) + 1) * 2) size *= 2;
  std::vector<uint32_t> slots(size, 0);
  const size_t mask = size - 1;
  uint32_t placed = 0;
  Timer timer;
  for (uint32_t i = 0; i < n; i++) {
    const uint64_t h = devexit::KeyTable::Hash(1, i % 64, names[i]);
    size_t at = h & mask;
    while (slots[at] != 0) at = (at + 1) & mask;
    slots[at] = static_cast<uint32_t>((h >> 57) | 1) << 25 | i;
    placed++;
  }
  Napi::Object out = timer.Done(info.Env());
  out["keys"] = static_cast<double>(placed);
  return out;
}

// An idle device service as a backend has one: a thread of the shared runtime waiting for
// commands, closed at exit by stopping it (queued work dropped) and joining it.
class IdleService : public devexit::ServiceThread<int> {
 public:
  int Close(const devexit::CloseContext &ctx, std::string *error) {
    return once_.Run(ctx.deadline_ns, error, [&](std::string *why) {
      return Stop(devexit::StopMode::kDrop, ctx, why) ? 0 : 1;
    });
  }

 protected:
  void Execute(int &) override {}

 private:
  devexit::CloseOnce once_;
};

Napi::Value IdleServices(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const devexit_registry_v1 *reg = devexit::Registry();
  if (!reg) throw Napi::Error::New(env, "no registry: require('@devexit/native') first");
  const std::string backend = info[0].As<Napi::String>();
  const uint32_t devices = info[1].As<Napi::Number>().Uint32Value();
  const uint32_t per_device = info[2].As<Napi::Number>().Uint32Value();
  const int type = reg->device_type(backend.c_str());
  if (type <= 0) throw Napi::Error::New(env, "device_type failed");
  uint32_t started = 0;
  for (uint32_t d = 0; d < devices; d++) {
    for (uint32_t k = 0; k < per_device; k++) {
      auto *service = new IdleService();  // lives as long as the process: the registry points at it
      std::string error;
      if (!service->Start(&error)) throw Napi::Error::New(env, "service start failed: " + error);
      devexit_device_id id;
      id.type = static_cast<uint16_t>(type);
      id.index = d;
      const std::string name = "service" + std::to_string(k);
      if (devexit::RegisterClose(id, name.c_str(), service) != DEVEXIT_OK)
        throw Napi::Error::New(env, "register_close refused");
      started++;
    }
  }
  return Napi::Number::New(env, started);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports["emptyCall"] = Napi::Function::New(env, EmptyCall, "emptyCall");
  exports["memcpyGBps"] = Napi::Function::New(env, MemcpyGBps, "memcpyGBps");
  exports["listScan"] = Napi::Function::New(env, ListScan, "listScan");
  exports["registerMany"] = Napi::Function::New(env, RegisterMany, "registerMany");
  exports["tableInsert"] = Napi::Function::New(env, TableInsert, "tableInsert");
  exports["indexFloor"] = Napi::Function::New(env, IndexFloor, "indexFloor");
  exports["warmHeap"] = Napi::Function::New(env, WarmHeap, "warmHeap");
  exports["idleServices"] = Napi::Function::New(env, IdleServices, "idleServices");
  return exports;
}

}  // namespace

NODE_API_MODULE(devexit_bench, Init)
