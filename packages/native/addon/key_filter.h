// The key table's (key_table.h) membership filter and the memory its large arrays come from.
// KeyFilter is a blocked Bloom filter over the low 32 bits of a key's hash (what a record keeps,
// so that the table can rebuild it from its records): one 64-byte block per key, one bit in each
// of the block's eight 64-bit words. "No" is exact; "maybe" is wrong for a few percent of new
// keys at 8 bits per key (the table keeps 8-16: half a byte per index slot), and erased keys' bits
// stay set until the next rebuild. At a million keys it is 1 MiB, where the index is 8 MiB: it
// stays in the cache where the index does not. On x86-64 with AVX2 (checked at run time) a
// block is read and written as two 256-bit vectors: the same bits as the scalar code, in fewer
// instructions (a re-index adds every key again: at a million keys, placing them went from 12-14
// ns per key to 7.6-9.3; each insert checks and adds, in one step). The AVX2 code is compiled
// apart and is not inlined into its callers: a re-index adds a region's keys in one call (AddAll).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

// DEVEXIT_KEY_FILTER_AVX2=0 builds the scalar code only (the key table's test runs both).
#if !defined(DEVEXIT_KEY_FILTER_AVX2)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DEVEXIT_KEY_FILTER_AVX2 1
#else
#define DEVEXIT_KEY_FILTER_AVX2 0
#endif
#endif
#if DEVEXIT_KEY_FILTER_AVX2
#include <immintrin.h>
#endif

namespace devexit {

// Memory for a table's arrays, from malloc, 64-byte aligned and not zeroed: the key table zeroes
// a large index and its filter region by region as it fills them, so that each line is brought in
// once instead of twice (a memset of the whole index first, then the placing, each a pass over
// memory the cache does not hold: at a million keys a re-index went from ~13 to ~8 ns per key).
// 2 MiB or more is 2 MiB-aligned and marked for transparent huge pages: where its pages are fresh
// (malloc maps a new block of that size), random accesses miss the TLB on a few huge pages
// instead of one 4 KiB page each, and a page is faulted in per 2 MiB; where malloc has the memory
// already (freed by an earlier index or anything else), it is used as it is. (Its own mapping, as
// before, took fresh pages every time, which this project's VMs back on first touch at 1-25 ns per
// key of a re-index: 76 against 62 ns per key at 1M keys, interleaved, tooling/bench's
// registration rows.) nullptr when out of memory; std::free releases it.
constexpr size_t kHugeBytes = size_t{2} << 20;

inline void *AllocTable(size_t bytes) {
  bool huge = false;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  huge = bytes >= kHugeBytes;
#endif
  const size_t align = huge ? kHugeBytes : 64;
  const size_t rounded = (bytes + align - 1) & ~(align - 1);
  void *p = std::aligned_alloc(align, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p && huge) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: fine if refused
#endif
  return p;
}

class KeyFilter {
 public:
  // One block (512 bits) per 128 slots of the index: 4 bits per slot, 8-16 per key.
  static constexpr uint32_t kBlockShift = 7;
  static constexpr size_t kSlotsPerBlock = size_t{1} << kBlockShift;

  KeyFilter() = default;
  KeyFilter(const KeyFilter &) = delete;
  KeyFilter &operator=(const KeyFilter &) = delete;
  ~KeyFilter() { std::free(words_); }

  // A filter of `blocks` blocks (a power of two, at least 8; 0: none) in place of this one's
  // memory, its bits not set yet: Clear() or ZeroSlots() before use. False (nothing changed) when
  // out of memory.
  bool Allocate(size_t blocks) {
    if (blocks == 0) {
      std::free(words_);
      words_ = nullptr;
      return true;
    }
    auto *words = static_cast<uint64_t *>(AllocTable(blocks * kBlockBytes));
    if (!words) return false;
    std::free(words_);
    words_ = words;
    log2_blocks_ = static_cast<uint32_t>(__builtin_ctzll(blocks));
    return true;
  }

  bool active() const { return words_ != nullptr; }

  void Swap(KeyFilter &other) {
    std::swap(words_, other.words_);
    std::swap(log2_blocks_, other.log2_blocks_);
  }

  void Add(uint32_t h) {
    if (!words_) return;
    uint64_t *w = words_ + Block(h) * kWords;
#if DEVEXIT_KEY_FILTER_AVX2
    if (avx2_) return AddAvx2(w, Bits(h));
#endif
    AddScalar(w, Bits(h));
  }

  // Adds `h`, and says whether it may have been there before: false when it was never added since
  // its blocks were last cleared; true when it may have been, or there is no filter.
  bool CheckAndAdd(uint32_t h) {
    if (!words_) return true;
    uint64_t *w = words_ + Block(h) * kWords;
#if DEVEXIT_KEY_FILTER_AVX2
    if (avx2_) return CheckAndAddAvx2(w, Bits(h));
#endif
    return CheckAndAddScalar(w, Bits(h));
  }

  // Add(items[i].hash) for each of n items: in one call, where each Add is a call of its own (the
  // AVX2 code is compiled apart and is not inlined into its callers).
  template <typename T>
  void AddAll(const T *items, size_t n) {
    if (!words_) return;
#if DEVEXIT_KEY_FILTER_AVX2
    if (avx2_) return AddAllAvx2(words_, log2_blocks_, items, n);
#endif
    for (size_t i = 0; i < n; i++) AddScalar(words_ + Block(items[i].hash) * kWords, Bits(items[i].hash));
  }

  // The bit in each word: six bits each of a second mix of h.
  static uint64_t Bits(uint32_t h) {
    uint64_t x = (uint64_t{h} << 32 | h) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 29);
  }

  // One block's check and insert for the bits `x` (Bits(h)), each way; public for the test that
  // they agree. Blocks are 64-byte aligned.
  static constexpr uint32_t kWords = 8;
  static bool HasScalar(const uint64_t *w, uint64_t x) {
    uint64_t all = 1;
    for (uint32_t i = 0; i < kWords; i++) all &= w[i] >> (x >> (6 * i) & 63);
    return all & 1;
  }
  static void AddScalar(uint64_t *w, uint64_t x) {
    for (uint32_t i = 0; i < kWords; i++) w[i] |= uint64_t{1} << (x >> (6 * i) & 63);
  }
  static bool CheckAndAddScalar(uint64_t *w, uint64_t x) {
    const bool had = HasScalar(w, x);
    AddScalar(w, x);
    return had;
  }
#if DEVEXIT_KEY_FILTER_AVX2
  static bool CpuHasAvx2() {
    static const bool yes = (__builtin_cpu_init(), __builtin_cpu_supports("avx2"));
    return yes;
  }
  // Word i's bit is (x >> 6i) & 63, as above: words 0-3 in one vector, 4-7 in the other.
  __attribute__((target("avx2"))) static void MasksAvx2(uint64_t x, __m256i *lo, __m256i *hi) {
    const __m256i xs = _mm256_set1_epi64x(static_cast<long long>(x));
    const __m256i low6 = _mm256_set1_epi64x(63), one = _mm256_set1_epi64x(1);
    *lo = _mm256_sllv_epi64(one, _mm256_and_si256(_mm256_srlv_epi64(xs, _mm256_setr_epi64x(0, 6, 12, 18)), low6));
    *hi = _mm256_sllv_epi64(one, _mm256_and_si256(_mm256_srlv_epi64(xs, _mm256_setr_epi64x(24, 30, 36, 42)), low6));
  }
  __attribute__((target("avx2"))) static bool HasAvx2(const uint64_t *w, uint64_t x) {
    __m256i lo, hi;
    MasksAvx2(x, &lo, &hi);
    const auto *v = reinterpret_cast<const __m256i *>(w);
    return _mm256_testc_si256(_mm256_load_si256(v), lo) & _mm256_testc_si256(_mm256_load_si256(v + 1), hi);
  }
  __attribute__((target("avx2"))) static void AddAvx2(uint64_t *w, uint64_t x) {
    __m256i lo, hi;
    MasksAvx2(x, &lo, &hi);
    auto *v = reinterpret_cast<__m256i *>(w);
    _mm256_store_si256(v, _mm256_or_si256(_mm256_load_si256(v), lo));
    _mm256_store_si256(v + 1, _mm256_or_si256(_mm256_load_si256(v + 1), hi));
  }
  __attribute__((target("avx2"))) static bool CheckAndAddAvx2(uint64_t *w, uint64_t x) {
    __m256i lo, hi;
    MasksAvx2(x, &lo, &hi);
    auto *v = reinterpret_cast<__m256i *>(w);
    const __m256i a = _mm256_load_si256(v), b = _mm256_load_si256(v + 1);
    _mm256_store_si256(v, _mm256_or_si256(a, lo));
    _mm256_store_si256(v + 1, _mm256_or_si256(b, hi));
    return _mm256_testc_si256(a, lo) & _mm256_testc_si256(b, hi);
  }
  template <typename T>
  __attribute__((target("avx2"))) static void AddAllAvx2(uint64_t *words, uint32_t log2_blocks, const T *items,
                                                         size_t n) {
    for (size_t i = 0; i < n; i++) AddAvx2(words + BlockOf(items[i].hash, log2_blocks) * kWords, Bits(items[i].hash));
  }
#endif

  void Clear() {
    if (words_) std::memset(words_, 0, bytes());
  }

  // Clears the blocks of the index slots [from, to) (multiples of kSlotsPerBlock, within the
  // index the filter was allocated for: one block per kSlotsPerBlock slots).
  void ZeroSlots(size_t from, size_t to) {
    if (words_) std::memset(words_ + (from >> kBlockShift) * kWords, 0, ((to - from) >> kBlockShift) * kBlockBytes);
  }

  // words_ | log2(blocks) (blocks are 64-byte aligned): for Prefetch, read without the table's lock.
  uintptr_t Hint() const { return words_ ? reinterpret_cast<uintptr_t>(words_) | log2_blocks_ : 0; }

  // Starts fetching the block of `h` in the filter that `hint` (a Hint()) names.
  static void Prefetch(uintptr_t hint, uint32_t h) {
    if (hint == 0) return;
    const auto *words = reinterpret_cast<const uint64_t *>(hint & ~uintptr_t{63});
    __builtin_prefetch(words + BlockOf(h, static_cast<uint32_t>(hint & 63)) * kWords, 1);
  }

 private:
  static constexpr size_t kBlockBytes = kWords * sizeof(uint64_t);

  // The block: the index region of h's home slot, when the index has kSlotsPerBlock slots per
  // block (the table's re-index then writes both one region after another).
  static size_t BlockOf(uint32_t h, uint32_t log2_blocks) {
    return (h >> kBlockShift) & ((size_t{1} << log2_blocks) - 1);
  }
  size_t Block(uint32_t h) const { return BlockOf(h, log2_blocks_); }

  size_t bytes() const { return words_ ? (size_t{1} << log2_blocks_) * kBlockBytes : 0; }

  uint64_t *words_ = nullptr;
  uint32_t log2_blocks_ = 0;
#if DEVEXIT_KEY_FILTER_AVX2
  bool avx2_ = CpuHasAvx2();
#endif
};

}  // namespace devexit
