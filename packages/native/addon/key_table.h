// The registrations' table: (device type, device index, service) -> close, O(1) per operation
// at any size. Why this shape (tooling/bench's registration rows measure each piece):
// - Records are appended in registration order into chunks that never move, 32 bytes each; the
//   service names go into an append-only arena beside them. (std::unordered_map costs a node
//   allocation per key and rehashes that chase every node: 130 ns per key at 1k, 600+ at 100k.)
// - The index is one 4-byte word per slot, 7 bits of the hash (the tag) and the record's number:
//   placing a key reads and writes one cache line of it, and only a matching tag reads a record.
//   (Separate tag and record-number arrays cost two random lines per insert.)
// - ~45 bytes per key at a million keys (32 of record, ~8 of name, 4-8 of index, 0.5-1 of filter).
// - Below 2 MiB of index (up to ~130k keys) the index is in the cache: an insert looks the key
//   up and places it at once. Beyond, that line is a memory access (~100 ns here) which the
//   registry's lock kept from overlapping with the next insert's: its atomic instructions wait for
//   the store. So a larger index comes with a membership filter (key_filter.h: a blocked Bloom
//   filter of 4 bits per slot, 1 MiB at a million keys, which stays in the cache), and an insert
//   whose key the filter has never seen (almost every new key) only appends the record and leaves
//   the key pending: the pending keys (64) are placed together, their slot lines fetched in one
//   go. The caller prefetches the key's filter block and slot line before taking the lock
//   (Prefetch), so that line is in the cache when the key is placed. A key the filter may have
//   seen (a duplicate, an erased key again, a false positive: ~1% of new keys) is looked up in the
//   index and the pending list. Erase and the rest place the pending keys first: they see an
//   exact index.
// - The index doubles when half full (erased slots included). A large one is refilled region by
//   region from the records sorted by region, each region zeroed just before its keys go in
//   (512k keys into 2M slots: ~8 ns per key; ~13 with the index zeroed first, ~47 in registration
//   order), and from 2 MiB it is marked for huge pages (AllocTable).
// What is left at a million keys (~1.4x the cost per key at 1k on this VM): placing the pending
// keys (memory-bound, overlapped), the re-indexes (every key is placed again ~once on the way to
// 1M; growing by 4 instead of 2 from 2 MiB, ~0.35 times, measured slower: the keys from 256k on
// then go into an index and filter twice as large), the filter's cache misses, and the false
// positives' lookups.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <string_view>
#include <vector>

#include "devexit.h"
#include "key_filter.h"

namespace devexit {

class KeyTable {
 public:
  struct Record {
    devexit_close_fn close;  // nullptr: erased
    void *ctx;
    uint32_t index;
    uint32_t name;      // where the NUL-terminated service name starts in the name chunks
    uint32_t hash;      // the hash's low bits: the record's slot and filter bits when re-indexing
    uint16_t type;
    uint8_t name_size;  // <= DEVEXIT_MAX_NAME
    uint8_t tag;
  };
  static_assert(sizeof(Record) == 32, "two records per cache line");

  // Record numbers take 25 bits of a slot: at most this many registrations at once (32 GiB of
  // address space before that; registering more returns DEVEXIT_ERR_NOMEM).
  static constexpr size_t kMaxRecords = size_t{1} << 25;

  // An index of kFilterFrom slots or more (2 MiB: from ~130k keys) has the filter; below, it
  // stays in the cache. (The tests give a smaller threshold: the filter at any size.)
  static constexpr size_t kFilterFrom = size_t{1} << 19;
  explicit KeyTable(size_t filter_from = kFilterFrom) : filter_from_(filter_from) {}
  KeyTable(const KeyTable &) = delete;
  KeyTable &operator=(const KeyTable &) = delete;
  ~KeyTable() {
    std::free(slots_);
    for (Record *c : chunks_) std::free(c);
    for (char *c : names_) std::free(c);
  }

  static uint64_t Hash(uint16_t type, uint32_t index, std::string_view service) {
    uint64_t h = std::hash<std::string_view>()(service);
    h ^= (static_cast<uint64_t>(type) << 32 | index) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
  }

  // Starts fetching the filter block and the index slot line of `hash`. Any thread, without the
  // table's lock: it reads two atomic words, and a stale one only fetches a line for nothing. An
  // insert reads the filter block at once; the slot line is read when the key is placed (up to
  // kPending inserts later: still in the cache) or checked.
  void Prefetch(uint64_t hash) const {
    KeyFilter::Prefetch(filter_hint_.load(std::memory_order_relaxed), static_cast<uint32_t>(hash));
    const uintptr_t hint = index_hint_.load(std::memory_order_relaxed);
    if (hint == 0) return;
    const auto *slots = reinterpret_cast<const uint32_t *>(hint & ~kHintBits);
    __builtin_prefetch(slots + (hash & ((size_t{1} << (hint & kHintBits)) - 1)), 1);
  }

  // Adds the key (close must be set); false if the key is there (then nothing changes). May
  // throw std::bad_alloc, before changing anything (a re-index or compaction may have happened:
  // they change nothing that can be seen).
  bool Insert(uint64_t hash, uint16_t type, uint32_t index, std::string_view service, devexit_close_fn close,
              void *ctx) {
    const auto h = static_cast<uint32_t>(hash);
    // Room first, then the record and its name written where the next ones go, not counted yet:
    // meanwhile the filter block that Prefetch asked for arrives (1-2 ns per key less, at any
    // size). A duplicate leaves them there, to be written over.
    Reserve(service.size());
    const uint32_t number = static_cast<uint32_t>(used_);
    Record &r = At(number);
    r.close = close;
    r.ctx = ctx;
    r.index = index;
    r.type = type;
    r.hash = h;
    r.tag = Tag(hash);
    r.name_size = static_cast<uint8_t>(service.size());
    r.name = WriteName(service);
    // The filter says "new" for almost every new key: then the key is neither in the index nor
    // pending, and its slot is found later, with the other pending keys'. Otherwise (and always
    // for a small index, which has no filter) the exact check: the index, then the pending keys.
    // The key's filter bits are set in the same step: a key found has them already.
    if (filter_.CheckAndAdd(h)) {  // always true without a filter
      if (filter_.active()) uncertain_++;
      if (Find(hash, type, index, service) != kNone || FindPending(h, type, index, service)) return false;
    }
    used_++;
    name_used_ += service.size() + 1;
    const uint32_t word = Word(r, number);
    if (!filter_.active()) {
      Place(h, word);  // a small index: in the cache
    } else {
      pending_[pending_size_++] = Pending{h, word};
      if (pending_size_ == kPending) Flush();
    }
    live_++;
    // Records and names are written in order: fetch the lines of the next few ahead of time.
    if (number % kChunk + 4 < kChunk) __builtin_prefetch(&r + 4, 1);
    if (name_used_ + 128 < kNameChunk) __builtin_prefetch(names_[name_chunk_] + name_used_ + 128, 1);
    return true;
  }

  bool Erase(uint64_t hash, uint16_t type, uint32_t index, std::string_view service) {
    Flush();
    const size_t slot = Find(hash, type, index, service);
    if (slot == kNone) return false;
    At(slots_[slot] & kNumberMask).close = nullptr;
    slots_[slot] = kDead;
    dead_slots_++;
    live_--;
    return true;
  }

  size_t size() const { return live_; }

  // Inserts that the filter could not call new (duplicates, re-registered keys, false positives),
  // since the table was made: tooling/bench reports them.
  size_t uncertain() const { return uncertain_; }

  // Sizes the index (and filter) for `keys` keys at once (tooling/bench's pre-sized variant: what
  // growing costs). May throw std::bad_alloc, changing nothing.
  void ReserveIndex(size_t keys) {
    size_t size = capacity_ > 1024 ? capacity_ : 1024;
    while (size < (keys + 1) * 2) size *= 2;
    if (size > capacity_) Reindex(size);
  }

  // Live records, oldest first: fn(const Record &, std::string_view service, size_t order), where
  // order grows with the registration's age (younger: larger).
  template <typename Fn>
  void ForEach(Fn &&fn) {
    for (size_t i = 0; i < used_; i++) {
      const Record &r = At(i);
      if (r.close) fn(r, std::string_view(NameAt(r.name), r.name_size), i);
    }
  }

  // Forgets every record; keeps the memory for the next registrations.
  void Clear() {
    if (slots_) std::memset(slots_, 0, capacity_ * sizeof(uint32_t));
    filter_.Clear();
    pending_size_ = 0;
    used_ = live_ = dead_slots_ = 0;
    name_chunk_ = name_used_ = 0;
  }

 private:
  static constexpr size_t kChunk = 1024;                   // records per chunk (32 KiB)
  static constexpr size_t kNameChunk = size_t{1} << 16;    // bytes per name chunk
  static constexpr uint32_t kNumberBits = 25;
  static constexpr uint32_t kNumberMask = (uint32_t{1} << kNumberBits) - 1;
  static constexpr uint32_t kEmpty = 0, kDead = 1;        // tag 0; live slots have tag 1..127
  static constexpr size_t kNone = ~size_t{0};
  static constexpr size_t kPending = 64;                   // keys placed in the index together
  static constexpr uintptr_t kHintBits = 63;               // log2(capacity) in the slots' low bits
  static constexpr unsigned kRegionBits = 13;               // a re-index's region: 8192 slots
  struct Pending {
    uint32_t hash;  // the hash's low bits
    uint32_t word;  // the record's slot word
  };
  static_assert(kMaxRecords == size_t{1} << kNumberBits, "");

  static uint8_t Tag(uint64_t h) {
    const auto t = static_cast<uint8_t>(h >> 57);
    return t ? t : 1;
  }

  Record &At(size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const char *NameAt(uint32_t at) const { return names_[at >> 16] + (at & 0xFFFF); }

  size_t Find(uint64_t hash, uint16_t type, uint32_t index, std::string_view service) {
    if (!slots_) return kNone;
    const size_t mask = capacity_ - 1;
    const uint32_t tag = Tag(hash);
    for (size_t s = hash & mask;; s = (s + 1) & mask) {
      const uint32_t v = slots_[s];
      if (v == kEmpty) return kNone;
      if (v >> kNumberBits != tag) continue;
      const Record &r = At(v & kNumberMask);
      if (r.type == type && r.index == index && r.name_size == service.size() &&
          std::memcmp(NameAt(r.name), service.data(), service.size()) == 0)
        return s;
    }
  }

  // `word`: the record's tag and number.
  static uint32_t Word(const Record &r, size_t number) {
    return uint32_t{r.tag} << kNumberBits | static_cast<uint32_t>(number);
  }

  bool FindPending(uint32_t h, uint16_t type, uint32_t index, std::string_view service) {
    for (size_t i = 0; i < pending_size_; i++) {
      if (pending_[i].hash != h) continue;
      const Record &r = At(pending_[i].word & kNumberMask);
      if (r.type == type && r.index == index && r.name_size == service.size() &&
          std::memcmp(NameAt(r.name), service.data(), service.size()) == 0)
        return true;
    }
    return false;
  }

  void Place(uint32_t hash, uint32_t word) {
    const size_t mask = capacity_ - 1;
    size_t s = hash & mask;
    while (slots_[s] >> kNumberBits) s = (s + 1) & mask;
    if (slots_[s] == kDead) dead_slots_--;
    slots_[s] = word;
  }

  // Places the pending keys: their slots' lines are fetched first, all together, so that their
  // memory latencies overlap instead of adding up one insert after another.
  void Flush() {
    const size_t mask = capacity_ - 1;
    for (size_t i = 0; i < pending_size_; i++) __builtin_prefetch(slots_ + (pending_[i].hash & mask), 1);
    for (size_t i = 0; i < pending_size_; i++) Place(pending_[i].hash, pending_[i].word);
    pending_size_ = 0;
  }

  // Writes the name where the next one goes (Reserve made room); Insert counts it.
  uint32_t WriteName(std::string_view service) {
    char *at = names_[name_chunk_] + name_used_;
    std::memcpy(at, service.data(), service.size());
    at[service.size()] = '\0';
    return static_cast<uint32_t>(name_chunk_ << 16 | name_used_);
  }

  // So that push_back cannot throw after a chunk is allocated; doubling, where reserve(size + 1)
  // would copy every chunk pointer for each new chunk.
  template <typename T>
  static void RoomForOneMore(std::vector<T> &v) {
    if (v.size() == v.capacity()) v.reserve(v.size() * 2 + 8);
  }

  // Room for one more record, its name and its slot. The index stays at most half full, erased
  // slots included (they lengthen probes); a re-index leaves it at most a third full, so the next
  // one is at least a sixth of its size away: O(1) amortised, also for open/close cycles.
  void Reserve(size_t name_size) {
    // Mostly erased records (services opened and closed again and again): compact them.
    if (used_ >= kChunk && live_ * 2 < used_) Compact();
    if (used_ >= kMaxRecords) throw std::bad_alloc();
    if (used_ == chunks_.size() * kChunk) {
      RoomForOneMore(chunks_);
      auto *chunk = static_cast<Record *>(std::malloc(kChunk * sizeof(Record)));
      if (!chunk) throw std::bad_alloc();
      chunks_.push_back(chunk);
    }
    if (names_.empty() || name_used_ + name_size + 1 > kNameChunk) {
      const size_t next = names_.empty() ? 0 : name_chunk_ + 1;
      if (next == names_.size()) {
        RoomForOneMore(names_);
        auto *chunk = static_cast<char *>(std::malloc(kNameChunk));
        if (!chunk) throw std::bad_alloc();
        names_.push_back(chunk);
      }
      name_chunk_ = next;  // what is left of the previous chunk stays unused
      name_used_ = 0;
    }
    if ((live_ + dead_slots_ + 1) * 2 > capacity_) {
      size_t size = capacity_ > 1024 ? capacity_ : 1024;
      while (size < (live_ + 1) * 3) size *= 2;
      Reindex(size);
    }
  }

  // A new index of `size` slots (an index of 2 MiB or more, from ~130k keys, is marked for huge
  // pages: see AllocTable) and a new filter of half a byte per slot, both filled
  // from the records (pending keys included). May throw std::bad_alloc, changing nothing.
  void Reindex(size_t size) {
    auto *slots = static_cast<uint32_t *>(AllocTable(size * sizeof(uint32_t)));
    if (!slots) throw std::bad_alloc();
    KeyFilter filter;
    if (!filter.Allocate(size >= filter_from_ ? size / kSlotsPerBlock : 0)) {
      std::free(slots);
      throw std::bad_alloc();  // the old index and filter stay
    }
    std::free(slots_);
    slots_ = slots;
    capacity_ = size;
    filter_.Swap(filter);  // the old one goes with `filter`
    Rebuild();
    filter_hint_.store(filter_.Hint(), std::memory_order_relaxed);
    index_hint_.store(reinterpret_cast<uintptr_t>(slots_) | static_cast<uintptr_t>(__builtin_ctzll(size)),
                      std::memory_order_relaxed);
  }

  // Fills the index and filter from the live records, whatever they held before (a new index's
  // memory is not zeroed); nothing is left pending. A large index region by region
  // (RebuildByRegion), a small one zeroed and then filled in registration order.
  void Rebuild() {
    pending_size_ = 0;
    dead_slots_ = 0;
    if (capacity_ >= filter_from_ && RebuildByRegion()) return;
    std::memset(slots_, 0, capacity_ * sizeof(uint32_t));
    filter_.Clear();
    for (size_t i = 0; i < used_; i++) {
      const Record &r = At(i);
      if (!r.close) continue;
      filter_.Add(r.hash);
      Place(r.hash, Word(r, i));
    }
  }

  // The same for a large index, one region of it (32 KiB, and its filter blocks) after another:
  // the live records, sorted by region first (SortByRegion), then written where the region's lines
  // are in the cache; taken in registration order, every one would wait for the memory. Each
  // region is zeroed (index and filter) with the next one before its keys go in, while its lines
  // are fetched anyway: a key's run of occupied slots may go on past its region's end, and further
  // on is zeroed when a run reaches it. False (nothing changed) without memory for the sort.
  bool RebuildByRegion() {
    const size_t regions = capacity_ > (size_t{1} << kRegionBits) ? capacity_ >> kRegionBits : 1;
    const size_t mask = capacity_ - 1;
    Pending *sorted;
    uint32_t *bounds;
    if (!SortByRegion(regions, &sorted, &bounds)) return false;
    size_t zeroed = 0;  // index slots [0, zeroed) and their filter blocks are zeroed
    const auto zero_to = [&](size_t end) {
      end = end < capacity_ ? end : capacity_;
      if (end <= zeroed) return;
      std::memset(slots_ + zeroed, 0, (end - zeroed) * sizeof(uint32_t));
      filter_.ZeroSlots(zeroed, end);
      zeroed = end;
    };
    for (size_t g = 0; g < regions; g++) {
      zero_to((g + 2) << kRegionBits);
      filter_.AddAll(sorted + bounds[2 * g], bounds[2 * g + 1] - bounds[2 * g]);
      for (size_t k = bounds[2 * g]; k < bounds[2 * g + 1]; k++) {
        const uint32_t h = sorted[k].hash;
        size_t slot = h & mask;
        while (true) {
          if (slot == zeroed) zero_to(zeroed + (size_t{1} << kRegionBits));  // (a run wraps to 0: zeroed)
          if (!(slots_[slot] >> kNumberBits)) break;
          slot = (slot + 1) & mask;
        }
        slots_[slot] = sorted[k].word;
      }
    }
    zero_to(capacity_);
    std::free(sorted);
    std::free(bounds);
    return true;
  }

  // The live records' hashes and slot words, sorted by the index region of their home slot into
  // *sorted (std::free it): region g's are (*sorted)[bounds[2g]] to (*sorted)[bounds[2g + 1]]
  // (std::free *bounds too). One pass over the records, into a room of fixed size per region: the
  // mean count per region and six standard deviations (the hash spreads keys evenly: a region
  // fills its room about once in 10^9). Where one does (keys whose hashes cluster), a counting
  // sort instead: a pass to count and one to place (one pass less took ~0.8 ns per key off a
  // million keys' registration). False (nothing to free) without memory.
  bool SortByRegion(size_t regions, Pending **sorted, uint32_t **bounds) {
    const size_t mask = capacity_ - 1;
    const auto region = [mask](uint32_t h) { return (h & mask) >> kRegionBits; };
    auto *b = static_cast<uint32_t *>(std::malloc(2 * regions * sizeof(uint32_t)));
    if (!b) return false;
    // Each live record's hash and word at the end of its region's keys in `out` (b[2g + 1]);
    // false, part done, where full(g) says region g has no room left.
    const auto scatter = [&](Pending *out, auto &&full) {
      for (size_t i = 0; i < used_; i++) {
        const Record &r = At(i);
        if (!r.close) continue;
        const size_t g = region(r.hash);
        if (full(g)) return false;
        out[b[2 * g + 1]++] = Pending{r.hash, Word(r, i)};
      }
      return true;
    };
    const size_t mean = live_ / regions;
    size_t root = 1;
    while (root * root < mean) root++;
    const size_t room = mean + 6 * root + 32;
    if (auto *out = static_cast<Pending *>(std::malloc(regions * room * sizeof(Pending)))) {
      for (size_t g = 0; g < regions; g++) b[2 * g] = b[2 * g + 1] = static_cast<uint32_t>(g * room);
      if (scatter(out, [&](size_t g) { return b[2 * g + 1] == (g + 1) * room; })) {
        *sorted = out;
        *bounds = b;
        return true;
      }
      std::free(out);
    }
    std::memset(b, 0, 2 * regions * sizeof(uint32_t));
    size_t live = 0;
    for (size_t i = 0; i < used_; i++) {
      const Record &r = At(i);
      if (r.close) b[2 * region(r.hash) + 1]++, live++;
    }
    auto *out = static_cast<Pending *>(std::malloc(live * sizeof(Pending) + 1));
    if (!out) {
      std::free(b);
      return false;
    }
    for (size_t g = 0, start = 0; g < regions; g++) {
      const uint32_t count = b[2 * g + 1];
      b[2 * g] = b[2 * g + 1] = static_cast<uint32_t>(start);
      start += count;
    }
    scatter(out, [](size_t) { return false; });  // counted: every region has its room
    *sorted = out;
    *bounds = b;
    return true;
  }

  // Moves the live records and their names to the front, in order, and re-indexes them. Names
  // only move towards the front (each chunk was filled in record order), so it needs no memory.
  void Compact() {
    size_t to = 0, chunk = 0, used = 0;
    for (size_t i = 0; i < used_; i++) {
      Record r = At(i);
      if (!r.close) continue;
      if (used + r.name_size + 1 > kNameChunk) {
        chunk++;
        used = 0;
      }
      std::memmove(names_[chunk] + used, NameAt(r.name), r.name_size + 1);
      r.name = static_cast<uint32_t>(chunk << 16 | used);
      used += r.name_size + 1;
      At(to++) = r;
    }
    used_ = to;
    name_chunk_ = chunk;
    name_used_ = used;
    Rebuild();  // the erased keys' filter bits go too
  }

  uint32_t *slots_ = nullptr;       // capacity_ words: a power of two, or none yet
  size_t capacity_ = 0;
  static constexpr size_t kSlotsPerBlock = KeyFilter::kSlotsPerBlock;  // 4 filter bits per slot
  const size_t filter_from_;
  KeyFilter filter_;
  // For Prefetch without the lock: filter_.Hint(), and slots_ | log2(capacity_).
  std::atomic<uintptr_t> filter_hint_{0}, index_hint_{0};
  Pending pending_[kPending];  // records not in the index yet, all in the filter
  size_t pending_size_ = 0;
  size_t uncertain_ = 0;
  std::vector<Record *> chunks_;    // records never move between compactions
  std::vector<char *> names_;       // name chunks; names_[name_chunk_] is being filled
  size_t name_chunk_ = 0;
  size_t name_used_ = 0;
  size_t used_ = 0;  // records appended since the last clear
  size_t live_ = 0;
  size_t dead_slots_ = 0;
};

}  // namespace devexit
