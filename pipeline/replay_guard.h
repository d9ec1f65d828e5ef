// The run-wide rules `replaygate decide` adds on top of the policy (docs/cli.md, "Dump
// semantics"): one replay per idempotency key, and the replay budget, in memory sized to the
// keys actually seen and capped before the first record is read.
//
// ReplayGuard::judge() is the one entry point: called for every record the policy gave a
// create-effect verb, it says whether the record may keep it or gets the default instead, and why.
// Replayed keys go into ReplayedKeys: an exact set of their 64-bit hashes while it is small, then
// a split block Bloom filter of the whole cap (ReplayedKeyFilter). Neither grows past the cap
// (--replayed-keys-memory), and both can only ever fail closed:
//   * a key replayed before is always found again (same hash, same slot or bits): a real
//     duplicate is always held;
//   * a new key can look replayed when its hash equals a stored one (the exact set: 1 in 2^64 per
//     stored key) or when all its filter bits happen to be set already (the filter): it is held
//     too (rule dump:maybe_duplicate). A replay becomes a hold, never the reverse. The chance of
//     that for the next new key is false_positive_rate(); the summary reports it and warns when
//     it is high;
//   * once `max_keys` keys were replayed, a create verb for a key not yet remembered is held
//     (rule dump:key_limit): a hard cap the operator can set. Keys already remembered are still
//     held as duplicates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace replaygate::pipeline {

// A split block Bloom filter exactly as the Apache Parquet format specifies it ("Split Block
// Bloom Filter", https://github.com/apache/parquet-format/blob/master/BloomFilter.md): an array of
// 256-bit blocks, each eight 32-bit words. A 64-bit key hash picks a block from its upper 32 bits
// ((hash >> 32) * blocks >> 32) and, from its lower 32 bits multiplied by eight salt constants,
// one bit in each of the block's eight words (the top 5 bits of each product). So a lookup or an
// insert touches one 32-byte block: one cache line, one possible cache miss, which prefetch() can
// start early. Only the hash function differs from Parquet (XXH3-64 instead of XXH64).
//
// The memory is one anonymous mapping of zero pages, faulted in as blocks are touched (with
// transparent huge pages requested: the blocks are picked at random, so 4 KiB pages would cost a
// TLB miss each, and a few thousand keys touch every 2 MiB page: ReplayedKeys only starts to use
// the filter once it holds enough keys to touch all of it anyway). It never grows.
class ReplayedKeyFilter {
 public:
  static constexpr uint64_t kBlockBytes = 32;

  // A filter of `bytes` rounded down to whole blocks, at least one block. Throws std::bad_alloc
  // when the memory cannot be mapped.
  explicit ReplayedKeyFilter(uint64_t bytes);
  ~ReplayedKeyFilter();
  ReplayedKeyFilter(const ReplayedKeyFilter&) = delete;
  ReplayedKeyFilter& operator=(const ReplayedKeyFilter&) = delete;

  // XXH3-64 of `key`: the hash every other member takes.
  static uint64_t hash(std::string_view key) noexcept;

  // True when every bit of `hash` is set: certainly when it was inserted, otherwise with
  // probability false_positive_rate().
  bool contains(uint64_t hash) const noexcept;
  void insert(uint64_t hash) noexcept;
  // Starts loading the block contains()/insert() will touch for `hash` (a hint).
  void prefetch(uint64_t hash) const noexcept;

  uint64_t blocks() const noexcept { return blocks_; }
  uint64_t bytes() const noexcept { return blocks_ * kBlockBytes; }

  // The probability that a key never inserted is reported as contained, after `keys` distinct
  // inserts into a filter of `blocks` blocks (the standard estimate for a split block filter:
  // keys per block are Poisson-distributed, and a word holds a given bit with probability
  // 1 - (31/32)^k after k keys in its block). 0 for no keys, close to 1 when saturated.
  static double false_positive_rate(uint64_t keys, uint64_t blocks);
  // The same probability measured on the filter as it is (a pass over all of it): exact for
  // keys that are uniformly hashed, whatever the order the keys were inserted in.
  double measured_false_positive_rate() const noexcept;

 private:
  uint32_t* words_ = nullptr;  // blocks_ * 8 words
  uint64_t blocks_ = 0;
  size_t mapped_bytes_ = 0;
};

// The hashes of the replayed keys, in memory that grows with them up to `cap_bytes`:
//   * exact while small: an open-addressing set of the 64-bit hashes (linear probing, at most half
//     full, doubled as it fills), as long as its slots take at most an eighth of the cap. A new
//     key is found only when its hash equals a stored one;
//   * then the split block filter of the whole cap: every stored hash is inserted into it, and
//     the set is freed. The filter is then exactly the one that would have held these keys from
//     the start (a filter's bits do not depend on the order of the inserts).
// The filter's address space is mapped at construction (untouched, so it costs no memory until
// it is used), so that the switch never fails: a set that cannot grow switches early.
// Not thread-safe.
class ReplayedKeys {
 public:
  // The smallest set: 1024 slots (8 KiB). A cap under 64 KiB has no exact phase.
  static constexpr uint64_t kMinSlots = 1024;

  // Throws std::bad_alloc when the filter's address space cannot be mapped.
  explicit ReplayedKeys(uint64_t cap_bytes);

  // True when `hash` was inserted (certainly), or a false positive (see above).
  bool contains(uint64_t hash) const noexcept;
  // Remembers `hash` (not yet contained). May grow the set or switch to the filter.
  void insert(uint64_t hash) noexcept;
  // Starts loading what contains()/insert() will touch for `hash` (a hint).
  void prefetch(uint64_t hash) const noexcept;

  bool exact() const noexcept { return exact_; }
  // The memory the keys take now: the set's slots, or the whole filter.
  uint64_t bytes() const noexcept;
  uint64_t cap_bytes() const noexcept { return filter_.bytes(); }
  const ReplayedKeyFilter& filter() const noexcept { return filter_; }

 private:
  void grow() noexcept;  // doubles the set, or switches to the filter
  void switch_to_filter() noexcept;
  void place(uint64_t hash) noexcept;  // into a slot of a set that has room

  ReplayedKeyFilter filter_;
  bool exact_ = false;
  std::vector<uint64_t> slots_;  // 0: empty; the hash 0 is has_zero_
  uint32_t shift_ = 64;          // a hash's first slot: hash >> shift_
  bool has_zero_ = false;
  uint64_t stored_ = 0;     // hashes in the set (has_zero_ included)
  uint64_t max_slots_ = 0;  // the most slots the set may have: an eighth of the cap
};

class ReplayGuard {
 public:
  enum class Outcome {
    kReplay,          // keeps its create verb (its key, if any, is now in the filter)
    kMaybeDuplicate,  // dump:maybe_duplicate: the key is in the filter (a duplicate, or rarely not)
    kBudget,          // dump:replay_budget
    kKeyLimit,        // dump:key_limit
  };
  using Hash = uint64_t (*)(std::string_view key) noexcept;

  static constexpr uint64_t kDefaultFilterMiB = 16;
  static constexpr uint64_t kDefaultMaxKeys = 10'000'000;
  // The summary warns once the false-positive rate for the next new key is above this.
  static constexpr double kWarnFalsePositiveRate = 1e-6;

  // max_replays < 0: no budget. max_keys: keys remembered before new keys get kKeyLimit.
  // filter_bytes: the cap on the memory for the keys (ReplayedKeys). `hash` is replaceable for
  // tests (forcing collisions). Throws std::bad_alloc when the cap cannot be mapped.
  ReplayGuard(int64_t max_replays, uint64_t max_keys, uint64_t filter_bytes,
              Hash hash = &ReplayedKeyFilter::hash);

  // For a record the policy gave a create-effect verb. `key` is its dedupe value, or nullptr
  // when the record has none (no dedupe field, or the field is absent/null): such records are
  // only subject to the budget. Checks, in order: filter (maybe duplicate), budget, key limit.
  Outcome judge(const std::string_view* key);
  // judge() split in two, so the caller can prefetch long before judging: hash_of() then
  // prefetch(h) ... judge_hash(&h), or judge_hash(nullptr) for a record without a key.
  uint64_t hash_of(std::string_view key) const noexcept { return hash_(key); }
  void prefetch(uint64_t hash) const noexcept { keys_seen_.prefetch(hash); }
  Outcome judge_hash(const uint64_t* hash);

  uint64_t replays() const noexcept { return replays_; }
  // Distinct keys remembered (replayed records with a key).
  uint64_t keys() const noexcept { return keys_; }
  uint64_t max_keys() const noexcept { return max_keys_; }
  const ReplayedKeys& replayed_keys() const noexcept { return keys_seen_; }
  // Where the keys are, for the run summary: "in a 16 MiB filter", or while the set is exact
  // "in an exact set (8 KiB of the 16 MiB --replayed-keys-memory)".
  std::string memory_text() const;

  // The chance that the next new key would be held by mistake. Exact set: keys() / 2^64 (its
  // hash equals a stored one). Filter: ReplayedKeyFilter's estimate for keys() keys while that is
  // below kMeasureAboveRate, measured on the filter above it (only keys that missed the filter
  // are inserted, so a full filter is fuller than the estimate).
  double false_positive_rate() const;
  static constexpr double kMeasureAboveRate = 1e-4;
  // The most distinct keys this run can have looked up in the filter: those inserted, plus every
  // maybe-duplicate hold (each could be a first occurrence), plus new keys the budget or the key
  // limit held.
  uint64_t keys_seen_at_most() const noexcept;
  // The smallest filter in MiB (a power of two, at most 65536) whose estimated rate stays at or
  // below `rate` for keys_seen_at_most() keys.
  uint64_t mib_for_rate(double rate) const;

 private:
  int64_t max_replays_;
  uint64_t max_keys_;
  Hash hash_;
  uint64_t replays_ = 0;
  uint64_t keys_ = 0;
  uint64_t maybe_duplicates_ = 0;     // kMaybeDuplicate outcomes
  uint64_t misses_not_inserted_ = 0;  // keys not remembered, held by the budget or key limit
  ReplayedKeys keys_seen_;
};

}  // namespace replaygate::pipeline
