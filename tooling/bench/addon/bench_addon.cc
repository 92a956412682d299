// The bench's native baselines (tooling/bench), built with @devexit/native's gyp flags:
//   emptyCall(a, b, c)        an N-API call that does nothing: the floor of any per-call path
//   memcpyGBps(bytes, reps)   memcpy bandwidth, GB/s of bytes read + written, one figure per rep
//   listScan(n)               the seed's registry: a list scanned for the key on each insert
//   registerMany(n)           n registrations into devexit's registry, through devexit.h
//   indexFloor(n)             n inserts into the barest hash index of the registry's shape (1-byte
//                             tags probed, 4-byte record numbers written): the memory's share
// Timings are {wallNs, cpuNs}: cpuNs is this thread's CPU time, which a loaded machine inflates
// less than wall time (other processes' time slices are not counted in it).
#include <napi.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "devexit.h"

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

struct Timer {
  int64_t wall = WallNs(), cpu = ThreadCpuNs();
  Napi::Object Done(Napi::Env env) const {
    Napi::Object out = Napi::Object::New(env);
    out["cpuNs"] = static_cast<double>(ThreadCpuNs() - cpu);
    out["wallNs"] = static_cast<double>(WallNs() - wall);
    return out;
  }
};

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

// The registry's index without the registry: the same hashing of the same keys into a tag
// array and a record-number array of the registry's sizes, no lock, no names kept, no records.
// What it costs per key at n keys is what the memory hierarchy charges any such index.
Napi::Value IndexFloor(const Napi::CallbackInfo &info) {
  const uint32_t n = info[0].As<Napi::Number>().Uint32Value();
  const std::vector<std::string> names = Names(n);
  size_t size = 1024;
  while (size < (static_cast<size_t>(n) + 1) * 2) size *= 2;
  std::vector<uint8_t> tags(size, 0);
  std::vector<uint32_t> refs(size, 0);
  const size_t mask = size - 1;
  uint32_t placed = 0;
  Timer timer;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t h = std::hash<std::string>()(names[i]) ^ ((uint64_t{1} << 32 | (i % 64)) * 0x9E3779B97F4A7C15ull);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    const auto tag = static_cast<uint8_t>(0x80 | (h >> 57));
    __builtin_prefetch(&refs[h & mask], 1);
    size_t at = h & mask;
    while (tags[at] != 0) at = (at + 1) & mask;
    tags[at] = tag;
    refs[at] = i;
    placed++;
  }
  Napi::Object out = timer.Done(info.Env());
  out["keys"] = static_cast<double>(placed);
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports["emptyCall"] = Napi::Function::New(env, EmptyCall, "emptyCall");
  exports["memcpyGBps"] = Napi::Function::New(env, MemcpyGBps, "memcpyGBps");
  exports["listScan"] = Napi::Function::New(env, ListScan, "listScan");
  exports["registerMany"] = Napi::Function::New(env, RegisterMany, "registerMany");
  exports["indexFloor"] = Napi::Function::New(env, IndexFloor, "indexFloor");
  return exports;
}

}  // namespace

NODE_API_MODULE(devexit_bench, Init)
