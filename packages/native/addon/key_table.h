// The registrations' table: (device type, device index, service) -> Entry, O(1) per operation
// at any size. Why not std::unordered_map: a node allocation per key and rehashes that chase
// every node made registration cost grow with the number of keys (130 ns per key at 1k, 600+ at
// 100k, measured in tooling/bench). Here records are appended in registration order into chunks
// that never move, and an open-addressing index finds them. The index probes one byte per slot
// (a 7-bit tag of the hash): at a million keys that is 2 MiB, which stays in cache, where 8-byte
// slots (16 MiB) cost a memory round trip per registration (~130 ns here). The slots' record
// numbers (4 bytes each) are read only on a tag match and written once per insert; growing
// re-reads only the records' stored hashes. What is left at a million keys is the memory: the
// probe of the 2 MiB of tags misses the cache once the records stream through it (see
// tooling/bench's registration rows and the README's performance notes).
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <new>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "internal.h"

namespace devexit {

class KeyTable {
 public:
  struct Record {
    uint64_t hash = 0;
    uint16_t type = 0;
    uint32_t index = 0;
    std::string service;
    Entry entry{};  // entry.close == nullptr: erased
  };

  static uint64_t Hash(uint16_t type, uint32_t index, std::string_view service) {
    uint64_t h = std::hash<std::string_view>()(service);
    h ^= (static_cast<uint64_t>(type) << 32 | index) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
  }

  // Adds the key with `entry` (entry.close must be set); false if the key is there (then
  // nothing changes). May throw std::bad_alloc, before changing anything.
  bool Insert(uint16_t type, uint32_t index, std::string_view service, const Entry &entry) {
    const uint64_t h = Hash(type, index, service);
    // The slot's record number is written below, most likely at the first slot probed: start
    // fetching its line now, so the probe and the record's writes overlap the miss.
    if (!ctrl_.empty()) __builtin_prefetch(&refs_[h & (ctrl_.size() - 1)], 1);
    if (Find(h, type, index, service) != kNone) return false;
    Reserve();  // may throw: nothing changed yet
    Record &r = Append();
    r.hash = h;
    r.type = type;
    r.index = index;
    r.service.assign(service.data(), service.size());  // may throw: the record stays erased
    r.entry = entry;
    Place(h, static_cast<uint32_t>(used_ - 1));
    live_++;
    return true;
  }

  bool Erase(uint16_t type, uint32_t index, std::string_view service) {
    const size_t slot = Find(Hash(type, index, service), type, index, service);
    if (slot == kNone) return false;
    At(refs_[slot]).entry.close = nullptr;
    ctrl_[slot] = kDead;
    dead_slots_++;
    live_--;
    return true;
  }

  size_t size() const { return live_; }

  // Live records, oldest first.
  template <typename Fn>
  void ForEach(Fn &&fn) {
    for (size_t i = 0; i < used_; i++) {
      Record &r = At(i);
      if (r.entry.close) fn(r);
    }
  }

  // Forgets every record; keeps the memory for the next registrations.
  void Clear() {
    for (size_t i = 0; i < used_; i++) {
      Record &r = At(i);
      r.entry.close = nullptr;
      r.service.clear();
    }
    std::fill(ctrl_.begin(), ctrl_.end(), kEmpty);
    used_ = live_ = dead_slots_ = 0;
  }

 private:
  static constexpr size_t kChunkBits = 10;  // 1024 records a chunk
  static constexpr size_t kChunk = size_t{1} << kChunkBits;
  static constexpr uint8_t kEmpty = 0, kDead = 1;  // else 0x80 | 7 bits of the hash
  static constexpr size_t kNone = ~size_t{0};
  static uint8_t Tag(uint64_t h) { return static_cast<uint8_t>(0x80 | (h >> 57)); }

  Record &At(size_t i) { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }

  size_t Find(uint64_t h, uint16_t type, uint32_t index, std::string_view service) {
    if (ctrl_.empty()) return kNone;
    const size_t mask = ctrl_.size() - 1;
    const uint8_t tag = Tag(h);
    for (size_t s = h & mask;; s = (s + 1) & mask) {
      const uint8_t c = ctrl_[s];
      if (c == kEmpty) return kNone;
      if (c == tag) {
        const Record &r = At(refs_[s]);
        if (r.type == type && r.index == index && r.service == service) return s;
      }
    }
  }

  void Place(uint64_t h, uint32_t record) {
    const size_t mask = ctrl_.size() - 1;
    size_t s = h & mask;
    while (ctrl_[s] >= 0x80) s = (s + 1) & mask;
    if (ctrl_[s] == kDead) dead_slots_--;
    ctrl_[s] = Tag(h);
    refs_[s] = record;
  }

  // Room for one more record and one more slot. The index stays at most half full, erased
  // slots included (they lengthen probes); a re-index leaves it at most a quarter full, so the
  // next one is at least a quarter of its size away: O(1) amortised, also for open/close cycles.
  void Reserve() {
    if (used_ >= UINT32_MAX) throw std::bad_alloc();
    // Mostly erased records (services opened and closed again and again): compact them.
    if (used_ >= kChunk && live_ * 2 < used_) Compact();
    if (used_ == chunks_.size() * kChunk) chunks_.emplace_back(new Record[kChunk]);
    if ((live_ + dead_slots_ + 1) * 2 > ctrl_.size()) {
      size_t size = std::max<size_t>(ctrl_.size(), 1024);
      while (size < (live_ + 1) * 4) size *= 2;
      Reindex(size);
    }
  }

  Record &Append() { return At(used_++); }

  void Reindex(size_t size) {
    std::vector<uint8_t> ctrl(size, kEmpty);  // may throw: the old index stays
    std::vector<uint32_t> refs(size);
    ctrl_.swap(ctrl);
    refs_.swap(refs);
    dead_slots_ = 0;
    for (size_t i = 0; i < used_; i++) {
      const Record &r = At(i);
      if (r.entry.close) Place(r.hash, static_cast<uint32_t>(i));
    }
  }

  // Moves the live records to the front, in order, and re-indexes them.
  void Compact() {
    size_t to = 0;
    for (size_t i = 0; i < used_; i++) {
      Record &r = At(i);
      if (!r.entry.close) continue;
      if (to != i) {
        Record &dst = At(to);
        dst.hash = r.hash;
        dst.type = r.type;
        dst.index = r.index;
        dst.service.swap(r.service);
        dst.entry = r.entry;
        r.entry.close = nullptr;
      }
      to++;
    }
    for (size_t i = to; i < used_; i++) At(i).service.clear();
    used_ = to;
    std::fill(ctrl_.begin(), ctrl_.end(), kEmpty);
    dead_slots_ = 0;
    for (size_t i = 0; i < used_; i++) Place(At(i).hash, static_cast<uint32_t>(i));
  }

  std::vector<uint8_t> ctrl_;                      // a power of two, or empty
  std::vector<uint32_t> refs_;                     // the record of each slot whose tag is set
  std::vector<std::unique_ptr<Record[]>> chunks_;  // records never move between compactions
  size_t used_ = 0;                                // records appended since the last clear
  size_t live_ = 0;
  size_t dead_slots_ = 0;
};

}  // namespace devexit
