// The run-wide rules `replaygate decide` adds on top of the policy (docs/cli.md, "Dump
// semantics"): one replay per idempotency key, and the replay budget — in memory fixed before the
// first record is read.
//
// DumpRules::judge() is the one entry point: called for every record the policy gave a
// create-effect verb, it says whether the record may keep it or gets the default instead, and why.
// Replayed keys go into a split block Bloom filter of a fixed size (ReplayedKeyFilter): its memory
// does not grow with the dump. A Bloom filter has no false negatives and some false positives, so
// it can only ever fail closed:
//   * a key replayed before is always found again (same hash, same bits): a real duplicate is
//     always held;
//   * a new key whose bits all happen to be set already looks replayed and is held too (rule
//     dump:maybe_duplicate): a replay becomes a hold, never the reverse. The chance of that for the
//     next new key is false_positive_rate(); the summary reports it and warns when it is high;
//   * once `max_keys` keys were replayed, a create verb for a key not yet in the filter is held
//     (rule dump:key_limit): a hard cap the operator can set, kept from the exact set this
//     replaced. Keys already in the filter are still held as duplicates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace replaygate::cli {

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
// TLB miss each). It never grows.
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

class DumpRules {
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

  // max_replays < 0: no budget. max_keys: keys the filter takes before new keys get kKeyLimit.
  // filter_bytes: the filter's fixed size. `hash` is replaceable for tests (forcing collisions).
  DumpRules(int64_t max_replays, uint64_t max_keys, uint64_t filter_bytes,
            Hash hash = &ReplayedKeyFilter::hash);

  // For a record the policy gave a create-effect verb. `key` is its dedupe value, or nullptr
  // when the record has none (no dedupe field, or the field is absent/null): such records are
  // only subject to the budget. Checks, in order: filter (maybe duplicate), budget, key limit.
  Outcome judge(const std::string_view* key);
  // judge() split in two, so the caller can prefetch long before judging: hash_of() then
  // prefetch(h) ... judge_hash(&h), or judge_hash(nullptr) for a record without a key.
  uint64_t hash_of(std::string_view key) const noexcept { return hash_(key); }
  void prefetch(uint64_t hash) const noexcept { filter_.prefetch(hash); }
  Outcome judge_hash(const uint64_t* hash);

  uint64_t replays() const noexcept { return replays_; }
  // Distinct keys inserted into the filter (replayed records with a key).
  uint64_t keys() const noexcept { return keys_; }
  uint64_t max_keys() const noexcept { return max_keys_; }
  const ReplayedKeyFilter& filter() const noexcept { return filter_; }

  // The chance that the next new key would be held by mistake: ReplayedKeyFilter's estimate for
  // keys() keys while that is below kMeasureAboveRate, measured on the filter above it (only
  // keys that missed the filter are inserted, so a full filter is fuller than the estimate).
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
  uint64_t misses_not_inserted_ = 0;  // keys not in the filter, held by the budget or key limit
  ReplayedKeyFilter filter_;
};

}  // namespace replaygate::cli
