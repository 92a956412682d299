// The registry's key table against a plain model (std::map + registration order), through random
// inserts, duplicate inserts, erases, clears and the compactions and re-indexes they cause, with
// names up to the maximum length so that name chunks fill and roll over. Built and run by
// keyTable.test.ts (with AddressSanitizer where the compiler has it). Prints "ok <checks>".
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "key_table.h"

namespace {

using Key = std::tuple<uint16_t, uint32_t, std::string>;

int Close(void *, const devexit_close_call_v1 *) { return 0; }
int OtherClose(void *, const devexit_close_call_v1 *) { return 1; }

long checks = 0;
void Expect(bool ok, const char *what, long step) {
  checks++;
  if (ok) return;
  std::fprintf(stderr, "FAILED at step %ld: %s\n", step, what);
  std::exit(1);
}

struct Model {
  std::map<Key, std::pair<void *, uint64_t>> live;  // ctx, registration number
  uint64_t next = 0;
};

// Every live record, in registration order, with its context; the order numbers increase.
void Compare(devexit::KeyTable &t, const Model &m, long step) {
  Expect(t.size() == m.live.size(), "size", step);
  std::vector<std::pair<uint64_t, Key>> expected;
  for (const auto &[key, v] : m.live) expected.push_back({v.second, key});
  std::sort(expected.begin(), expected.end());
  size_t i = 0;
  size_t last_order = 0;
  bool first = true;
  t.ForEach([&](const devexit::KeyTable::Record &r, std::string_view service, size_t order) {
    Expect(i < expected.size(), "no more records than keys", step);
    const Key &k = expected[i].second;
    Expect(r.type == std::get<0>(k) && r.index == std::get<1>(k) && service == std::get<2>(k), "registration order", step);
    Expect(r.close == Close, "close kept", step);
    Expect(r.ctx == m.live.at(k).first, "context kept", step);
    Expect(service.data()[service.size()] == '\0', "names are NUL-terminated", step);
    Expect(first || order > last_order, "order numbers grow", step);
    first = false;
    last_order = order;
    i++;
  });
  Expect(i == expected.size(), "every key listed", step);
}

std::string Name(std::mt19937_64 &rng, uint32_t pool) {
  const uint32_t n = static_cast<uint32_t>(rng() % pool);
  // Lengths 1..64: the longest fill a 64 KiB name chunk in ~1000 names.
  const size_t len = 1 + n % DEVEXIT_MAX_NAME;
  std::string s(len, 'a' + static_cast<char>(n % 26));
  const std::string id = std::to_string(n);
  s.replace(0, std::min(len, id.size()), id.substr(0, std::min(len, id.size())));
  return s;
}

// filtered: the table has its filter (and pending keys) at any size.
void Run(uint64_t seed, long steps, uint32_t pool, int erase_percent, bool filtered) {
  std::mt19937_64 rng(seed);
  devexit::KeyTable t(filtered ? 0 : devexit::KeyTable::kFilterFrom);
  Model m;
  for (long step = 0; step < steps; step++) {
    const uint16_t type = static_cast<uint16_t>(1 + rng() % 3);
    const uint32_t index = static_cast<uint32_t>(rng() % 5);
    const std::string name = Name(rng, pool);
    const Key key{type, index, name};
    const uint64_t hash = devexit::KeyTable::Hash(type, index, name);
    t.Prefetch(hash);
    const int op = static_cast<int>(rng() % 100);
    if (op < erase_percent) {
      const bool had = m.live.erase(key) > 0;
      Expect(t.Erase(hash, type, index, name) == had, "erase finds exactly the live keys", step);
    } else if (op == 99 && rng() % 50 == 0) {
      t.Clear();
      m.live.clear();
    } else {
      void *ctx = reinterpret_cast<void *>(static_cast<uintptr_t>(rng() | 1));
      const bool fresh = m.live.find(key) == m.live.end();
      // A second registration of a key changes nothing, whatever it brings.
      const bool inserted = t.Insert(hash, type, index, name, fresh ? Close : OtherClose, ctx);
      Expect(inserted == fresh, "insert refuses exactly the keys present", step);
      if (fresh) m.live[key] = {ctx, m.next++};
    }
    if (step % 1999 == 0 || step == steps - 1) Compare(t, m, step);
  }
  Expect(filtered == (t.uncertain() > 0), "the table had its filter", steps);
}

// Directed cases for the filter and the pending keys (here from 16k index slots, ~4k keys: the
// table also goes from no filter to a filter):
// a key is found while it is pending (inserted again, erased), keys whose hashes' filter bits
// collide (here: equal low 32 bits, what the filter and the index see) are told apart exactly,
// and every key stays findable across re-indexes and a clear.
void Pending() {
  devexit::KeyTable t(size_t{1} << 14);
  const long kKeys = 60000;
  auto key = [](long i) { return "k" + std::to_string(i); };
  for (long i = 0; i < kKeys; i++) {
    const std::string name = key(i);
    const uint64_t h = devexit::KeyTable::Hash(1, 0, name);
    Expect(t.Insert(h, 1, 0, name, Close, nullptr), "a new key is inserted", i);
    // Right after its insert the key is pending (not in the index yet) most of the time.
    if (i % 7 == 0) Expect(!t.Insert(h, 1, 0, name, OtherClose, nullptr), "a pending key is a duplicate", i);
    if (i % 11 == 0) {
      Expect(t.Erase(h, 1, 0, name), "a pending key is erased", i);
      Expect(!t.Erase(h, 1, 0, name), "an erased key is gone", i);
      Expect(t.Insert(h, 1, 0, name, Close, nullptr), "an erased key is inserted again", i);
    }
  }
  Expect(t.size() == static_cast<size_t>(kKeys), "size after growth", kKeys);
  for (long i = 0; i < kKeys; i += 3) {
    const std::string name = key(i);
    const uint64_t h = devexit::KeyTable::Hash(1, 0, name);
    Expect(!t.Insert(h, 1, 0, name, Close, nullptr), "every key is found", i);
  }
  // Colliding hashes: the same low 32 bits (and so the same filter bits and home slot) for
  // different keys, and for the same name on other devices.
  const size_t before = t.uncertain();
  for (long i = 0; i < 5000; i++) {
    const std::string name = "collide" + std::to_string(i);
    const uint64_t h = (static_cast<uint64_t>(i) << 40) | 0x1234567u;
    Expect(t.Insert(h, 2, 0, name, Close, nullptr), "a colliding new key is inserted", i);
    Expect(t.Insert(h, 2, 1, name, Close, nullptr), "the same name on another device is new", i);
    Expect(!t.Insert(h, 2, 0, name, Close, nullptr), "a colliding duplicate is refused", i);
    if (i % 3 == 0) Expect(t.Erase(h, 2, 1, name), "a colliding key is erased", i);
  }
  Expect(t.uncertain() - before >= 5000 * 2, "colliding keys take the exact path", 0);
  for (long i = 0; i < 5000; i++) {
    const std::string name = "collide" + std::to_string(i);
    const uint64_t h = (static_cast<uint64_t>(i) << 40) | 0x1234567u;
    Expect(!t.Insert(h, 2, 0, name, Close, nullptr), "colliding keys stay found", i);
    Expect(t.Erase(h, 2, 1, name) == (i % 3 != 0), "colliding keys are erased exactly", i);
  }
  t.Clear();
  Expect(t.size() == 0, "clear empties", 0);
  for (long i = 0; i < kKeys; i += 5) {
    const std::string name = key(i);
    const uint64_t h = devexit::KeyTable::Hash(1, 0, name);
    Expect(t.Insert(h, 1, 0, name, Close, nullptr), "after a clear keys are new", i);
  }
}

// Long runs of occupied slots through the re-index by region (key_table.h's RebuildByRegion, which
// zeroes the new index region by region as it fills it): keys whose hashes share their low 32 bits
// have one home slot at every size, here near the end of region 0 (a run across two regions and
// more, past what is zeroed in advance) and the last slot (a run that wraps to the first), while
// other keys make the index grow; then most are erased and the rest compacted and re-indexed.
void Runs() {
  devexit::KeyTable t(0);  // the filter, and the re-index by region, at any size
  const long kAcross = 9000, kWrap = 2000, kOthers = 30000;
  struct Key {
    uint64_t hash;
    uint32_t index;
    std::string name;
  };
  std::vector<Key> keys;
  for (long i = 0; i < kOthers; i++) {
    if (i < kAcross) keys.push_back({static_cast<uint64_t>(i) << 40 | 0x1F00u, 0, "across" + std::to_string(i)});
    if (i < kWrap) keys.push_back({static_cast<uint64_t>(i) << 40 | 0xFFFFFFFFu, 1, "wrap" + std::to_string(i)});
    const std::string name = "k" + std::to_string(i);
    keys.push_back({devexit::KeyTable::Hash(3, 2, name), 2, name});
  }
  for (size_t i = 0; i < keys.size(); i++) {
    const Key &k = keys[i];
    Expect(t.Insert(k.hash, 3, k.index, k.name, Close, nullptr), "a new key is inserted", static_cast<long>(i));
    if (i % 1000 == 999) {
      for (size_t j = 0; j <= i; j += 37)
        Expect(!t.Insert(keys[j].hash, 3, keys[j].index, keys[j].name, OtherClose, nullptr), "every key stays found", static_cast<long>(j));
    }
  }
  for (size_t i = 0; i < keys.size(); i++) {
    const Key &k = keys[i];
    if (i % 3) Expect(t.Erase(k.hash, 3, k.index, k.name), "a key is erased", static_cast<long>(i));
  }
  // The next inserts compact the records (most are erased): the index is rebuilt from the rest.
  for (long i = 0; i < 2000; i++) {
    const std::string name = "after" + std::to_string(i);
    Expect(t.Insert(devexit::KeyTable::Hash(3, 3, name), 3, 3, name, Close, nullptr), "a new key after the erases", i);
  }
  for (size_t i = 0; i < keys.size(); i++) {
    const Key &k = keys[i];
    Expect(t.Insert(k.hash, 3, k.index, k.name, Close, nullptr) == (i % 3 != 0), "only the erased keys are new again", static_cast<long>(i));
  }
  Expect(t.size() == keys.size() + 2000, "size after the runs", 0);
}

// The filter's two ways of reading and writing a block (key_filter.h: AVX2 where the CPU has it,
// else scalar) set and test the same bits: random blocks, random keys, each way on its own copy.
void FilterPaths() {
#if DEVEXIT_KEY_FILTER_AVX2
  if (!devexit::KeyFilter::CpuHasAvx2()) return;
  using F = devexit::KeyFilter;
  alignas(64) uint64_t a[F::kWords], b[F::kWords];
  uint64_t state = 0x243F6A8885A308D3ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state ^ (state >> 29);
  };
  for (long round = 0; round < 20000; round++) {
    // A block from empty to dense: 0 to ~90 keys' bits.
    const long keys = round % 90;
    for (uint32_t i = 0; i < F::kWords; i++) a[i] = b[i] = 0;
    uint64_t last = 0;
    for (long k = 0; k < keys; k++) {
      const uint64_t x = last = F::Bits(static_cast<uint32_t>(next()));
      F::AddScalar(a, x);
      F::AddAvx2(b, x);
    }
    Expect(std::memcmp(a, b, sizeof a) == 0, "both ways set the same bits", round);
    if (keys > 0) {
      Expect(F::HasScalar(a, last) && F::HasAvx2(a, last), "both ways find the last key added", round);
    }
    for (int probe = 0; probe < 8; probe++) {
      const uint64_t x = F::Bits(static_cast<uint32_t>(next()));
      Expect(F::HasScalar(a, x) == F::HasAvx2(a, x), "both ways answer alike", round);
    }
    // Check-and-add: the answer a check gives, then the bits an add sets, each way.
    for (int probe = 0; probe < 4; probe++) {
      const uint64_t x = F::Bits(static_cast<uint32_t>(next()));
      const bool had = F::HasScalar(a, x);
      Expect(F::CheckAndAddScalar(a, x) == had && F::CheckAndAddAvx2(b, x) == had, "check-and-add answers as a check", round);
      Expect(std::memcmp(a, b, sizeof a) == 0 && F::HasScalar(a, x), "check-and-add sets the bits", round);
    }
  }
#endif
}

}  // namespace

int main() {
  FilterPaths();
  for (bool filtered : {false, true}) {
    Run(1, 100000, 50000, 10, filtered);   // mostly inserts: re-indexes, many record and name chunks
    Run(2, 150000, 3000, 48, filtered);    // open/close cycles: compactions of records and names
    Run(3, 50000, 200, 50, filtered);      // a small churning set
    Run(4, 40000, 1u << 30, 0, filtered);  // distinct long names only
  }
  Pending();
  Runs();
  std::printf("ok %ld\n", checks);
  return 0;
}
