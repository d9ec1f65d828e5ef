// The replayed keys (an exact set of hashes, then a split block filter) and the run-wide dump
// rules of `replaygate decide` (replay_guard.h).
#include "pipeline/replay_guard.h"

#define XXH_INLINE_ALL
#include <sys/mman.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <new>
#include <utility>

namespace replaygate::pipeline {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kWordsPerBlock = 8;

// The eight salts of the Parquet split block Bloom filter (BloomFilter.md, "Technical
// Approach"): odd constants whose products with the key spread its bits over the eight words.
constexpr uint32_t kSalt[kWordsPerBlock] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                            0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};

// Parquet's block_index: the upper 32 bits of the hash scaled to [0, blocks) by multiply-shift
// (no power-of-two size needed).
inline uint64_t block_of(uint64_t hash, uint64_t blocks) { return ((hash >> 32) * blocks) >> 32; }

// Parquet's mask: bit (key * salt[i]) >> 27 of word i, for the lower 32 bits of the hash.
inline uint32_t bit_of(uint64_t hash, size_t word) {
  const uint32_t product = static_cast<uint32_t>(hash) * kSalt[word];
  return uint32_t{1} << (product >> 27);
}

}  // namespace

ReplayedKeyFilter::ReplayedKeyFilter(uint64_t bytes)
    : blocks_(std::max<uint64_t>(bytes / kBlockBytes, 1)) {
  // Parquet's block index takes 32 bits: at most 2^32 blocks (128 GiB).
  blocks_ = std::min<uint64_t>(blocks_, uint64_t{1} << 32);
  mapped_bytes_ = static_cast<size_t>(blocks_ * kBlockBytes);
  void* p =
      ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  if (mapped_bytes_ >= kHugePage) ::madvise(p, mapped_bytes_, MADV_HUGEPAGE);  // a hint
  words_ = static_cast<uint32_t*>(p);
}

ReplayedKeyFilter::~ReplayedKeyFilter() { ::munmap(words_, mapped_bytes_); }

uint64_t ReplayedKeyFilter::hash(std::string_view key) noexcept {
  return XXH3_64bits(key.data(), key.size());
}

bool ReplayedKeyFilter::contains(uint64_t hash) const noexcept {
  const uint32_t* block = words_ + block_of(hash, blocks_) * kWordsPerBlock;
  bool all = true;
  for (size_t i = 0; i < kWordsPerBlock; ++i) all &= (block[i] & bit_of(hash, i)) != 0;
  return all;
}

void ReplayedKeyFilter::insert(uint64_t hash) noexcept {
  uint32_t* block = words_ + block_of(hash, blocks_) * kWordsPerBlock;
  for (size_t i = 0; i < kWordsPerBlock; ++i) block[i] |= bit_of(hash, i);
}

void ReplayedKeyFilter::prefetch(uint64_t hash) const noexcept {
  // For writing: the block is written (insert) right after it is read whenever the key is new.
  __builtin_prefetch(words_ + block_of(hash, blocks_) * kWordsPerBlock, 1);
}

double ReplayedKeyFilter::false_positive_rate(uint64_t keys, uint64_t blocks) {
  if (keys == 0 || blocks == 0) return 0;
  // Sum over k (keys in the query's block, Poisson with mean lambda) of P(k) * (1 - (31/32)^k)^8,
  // in log space so a saturated filter (lambda in the thousands) does not underflow exp(-lambda).
  const double lambda = static_cast<double>(keys) / static_cast<double>(blocks);
  const double spread = 12 * std::sqrt(lambda) + 40;
  const double first = std::max(0.0, std::floor(lambda - spread));
  const double last = std::ceil(lambda + spread);
  const double log_keep = std::log(31.0 / 32.0);
  double rate = 0;
  for (double k = first; k <= last; ++k) {
    const double log_p = k * std::log(lambda) - lambda - std::lgamma(k + 1);
    const double word_hit = -std::expm1(k * log_keep);  // 1 - (31/32)^k
    rate += std::exp(log_p) * std::pow(word_hit, 8);
  }
  return std::min(rate, 1.0);
}

double ReplayedKeyFilter::measured_false_positive_rate() const noexcept {
  // A key never inserted is contained when its bit is set in each of its block's eight words:
  // the mean over blocks of the product of the words' fill fractions.
  double sum = 0;
  for (uint64_t b = 0; b < blocks_; ++b) {
    const uint32_t* block = words_ + b * kWordsPerBlock;
    double product = 1;
    for (size_t i = 0; i < kWordsPerBlock && product > 0; ++i) {
      product *= __builtin_popcount(block[i]) / 32.0;
    }
    sum += product;
  }
  return sum / static_cast<double>(blocks_);
}

ReplayedKeys::ReplayedKeys(uint64_t cap_bytes) : filter_(cap_bytes) {
  max_slots_ = std::bit_floor(filter_.bytes() / 8 / sizeof(uint64_t));
  if (max_slots_ < kMinSlots) return;  // too small a cap to start exact: the filter at once
  try {
    slots_.assign(kMinSlots, 0);
  } catch (const std::bad_alloc&) {
    return;
  }
  exact_ = true;
  shift_ = 64 - static_cast<uint32_t>(std::countr_zero(kMinSlots));
}

bool ReplayedKeys::contains(uint64_t hash) const noexcept {
  if (!exact_) return filter_.contains(hash);
  if (hash == 0) return has_zero_;
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>(hash >> shift_);; i = (i + 1) & mask) {
    if (slots_[i] == hash) return true;
    if (slots_[i] == 0) return false;  // the set is at most half full: an empty slot is near
  }
}

void ReplayedKeys::place(uint64_t hash) noexcept {
  const size_t mask = slots_.size() - 1;
  size_t i = static_cast<size_t>(hash >> shift_);
  while (slots_[i] != 0) i = (i + 1) & mask;
  slots_[i] = hash;
}

void ReplayedKeys::insert(uint64_t hash) noexcept {
  if (!exact_) {
    filter_.insert(hash);
    return;
  }
  // At most half full after this insert; else double, or switch once at an eighth of the cap.
  if (2 * (stored_ + 1) > slots_.size()) {
    grow();
    if (!exact_) {
      filter_.insert(hash);
      return;
    }
  }
  if (hash == 0) {
    has_zero_ = true;
  } else {
    place(hash);
  }
  ++stored_;
}

void ReplayedKeys::grow() noexcept {
  if (slots_.size() >= max_slots_) return switch_to_filter();
  std::vector<uint64_t> previous;
  try {
    previous.assign(slots_.size() * 2, 0);
  } catch (const std::bad_alloc&) {
    return switch_to_filter();  // the filter's address space is mapped already
  }
  previous.swap(slots_);  // slots_ is now the doubled set, empty
  shift_ -= 1;
  for (const uint64_t h : previous) {
    if (h != 0) place(h);
  }
}

void ReplayedKeys::switch_to_filter() noexcept {
  // The blocks are random: start loading each a few slots ahead, so the misses overlap.
  constexpr size_t kAhead = 16;
  const size_t n = slots_.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && slots_[i + kAhead] != 0) filter_.prefetch(slots_[i + kAhead]);
    if (slots_[i] != 0) filter_.insert(slots_[i]);
  }
  if (has_zero_) filter_.insert(0);
  std::vector<uint64_t>().swap(slots_);  // gives the set's memory back
  exact_ = false;
}

void ReplayedKeys::prefetch(uint64_t hash) const noexcept {
  if (!exact_) return filter_.prefetch(hash);
  __builtin_prefetch(slots_.data() + (hash >> shift_), 1);
}

uint64_t ReplayedKeys::bytes() const noexcept {
  return exact_ ? slots_.size() * sizeof(uint64_t) : filter_.bytes();
}

ReplayGuard::ReplayGuard(int64_t max_replays, uint64_t max_keys, uint64_t filter_bytes, Hash hash)
    : max_replays_(max_replays), max_keys_(max_keys), hash_(hash), keys_seen_(filter_bytes) {}

ReplayGuard::Outcome ReplayGuard::judge(const std::string_view* key) {
  if (key == nullptr) return judge_hash(nullptr);
  const uint64_t h = hash_of(*key);
  return judge_hash(&h);
}

ReplayGuard::Outcome ReplayGuard::judge_hash(const uint64_t* hash) {
  if (hash != nullptr && keys_seen_.contains(*hash)) {
    ++maybe_duplicates_;
    return Outcome::kMaybeDuplicate;
  }
  if (max_replays_ >= 0 && replays_ >= static_cast<uint64_t>(max_replays_)) {
    if (hash != nullptr) ++misses_not_inserted_;
    return Outcome::kBudget;
  }
  if (hash != nullptr) {
    if (keys_ >= max_keys_) {
      ++misses_not_inserted_;
      return Outcome::kKeyLimit;
    }
    keys_seen_.insert(*hash);
    ++keys_;
  }
  ++replays_;
  return Outcome::kReplay;
}

double ReplayGuard::false_positive_rate() const {
  // Exact: a new key is found only when its (uniform) 64-bit hash equals one of the keys_ stored.
  if (keys_seen_.exact()) return std::ldexp(static_cast<double>(keys_), -64);
  const ReplayedKeyFilter& filter = keys_seen_.filter();
  const double estimate = ReplayedKeyFilter::false_positive_rate(keys_, filter.blocks());
  // A key is inserted only when it missed the filter, so inserted keys overlap less than random
  // ones: once misses are rare no more, the filter is fuller than the estimate says. Measure it.
  return estimate < kMeasureAboveRate ? estimate : filter.measured_false_positive_rate();
}

namespace {

// 8192 -> "8 KiB", 16777216 -> "16 MiB" (whole KiB or MiB: the sizes here are powers of two or
// whole MiB), else "N bytes".
std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

std::string ReplayGuard::memory_text() const {
  if (!keys_seen_.exact()) return "in a " + size_text(keys_seen_.cap_bytes()) + " filter";
  return "in an exact set (" + size_text(keys_seen_.bytes()) + " of the " +
         size_text(keys_seen_.cap_bytes()) + " --replayed-keys-memory)";
}

uint64_t ReplayGuard::keys_seen_at_most() const noexcept {
  return keys_ + maybe_duplicates_ + misses_not_inserted_;
}

uint64_t ReplayGuard::mib_for_rate(double rate) const {
  const uint64_t keys = keys_seen_at_most();
  uint64_t mib = 1;
  while (mib < (uint64_t{1} << 16) &&
         ReplayedKeyFilter::false_positive_rate(
             keys, (mib << 20) / ReplayedKeyFilter::kBlockBytes) > rate) {
    mib *= 2;
  }
  return mib;
}

}  // namespace replaygate::pipeline
