// The two run-wide rules `replaygate decide` adds on top of the policy (docs/cli.md, "Dump
// semantics"): one replay per idempotency key, and the replay budget — with the memory for the
// first one bounded.
//
// DumpRules::judge() is the one entry point: called for every record the policy gave a
// create-effect verb, it says whether the record may keep it or gets the default instead, and why.
// Replayed keys are remembered as 64-bit fingerprints (XXH3) in one open-addressing array:
// 8 bytes per slot, at most `max_keys` keys, so the memory that grows with the dump is bounded by
// the cap (ReplayedKeys::max_bytes()). Both shortcuts only ever fail closed:
//   * two different keys with the same fingerprint make the second look like a duplicate: a
//     replay becomes a hold, never the reverse (a key seen before always has the same
//     fingerprint, so a real duplicate is always caught);
//   * once `max_keys` keys are remembered, a create verb for a key not yet remembered is held
//     (rule dump:key_limit): it could not be remembered, so a later duplicate of it could not be
//     caught. Duplicates of remembered keys are still held as duplicates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace replaygate::cli {

// A set of nonzero 64-bit fingerprints with a fixed maximum size. Linear probing; the array
// doubles while it is at most 3/4 full after an insert, and never grows past the size that holds
// `max_keys` at that load.
class ReplayedKeys {
 public:
  static constexpr uint64_t kDefaultMaxKeys = 10'000'000;

  // max_keys: how many fingerprints insert() accepts before it reports kFull (0 accepts none).
  explicit ReplayedKeys(uint64_t max_keys);
  ReplayedKeys(const ReplayedKeys&) = delete;
  ReplayedKeys& operator=(const ReplayedKeys&) = delete;

  // XXH3-64 of `key`, with 0 (the empty-slot marker) mapped to 1.
  static uint64_t fingerprint(std::string_view key) noexcept;

  bool contains(uint64_t fingerprint) const noexcept;
  // Starts loading the memory contains()/insert() will probe for `fingerprint` (a hint: the
  // array is far larger than the caches, so decide() can run while the line arrives).
  void prefetch(uint64_t fingerprint) const noexcept;
  // Adds `fingerprint` (nonzero, not yet contained). False when max_keys are already held (the
  // set is unchanged). Throws std::bad_alloc when the array cannot grow.
  bool insert(uint64_t fingerprint);
  uint64_t size() const noexcept { return size_; }
  uint64_t max_keys() const noexcept { return max_keys_; }
  // The largest the slot array can get for max_keys (bytes): the bound on this set's memory.
  static uint64_t max_bytes(uint64_t max_keys) noexcept;

 private:
  void grow();
  // A zeroed array of `slots`; large ones are mapped from the kernel (zero pages, faulted in as
  // they are touched) with transparent huge pages requested: the probes are random, so 4 KiB
  // pages would cost a TLB miss each.
  struct Slots {
    Slots() = default;
    explicit Slots(size_t slots);
    Slots(Slots&& other) noexcept;
    Slots& operator=(Slots&& other) noexcept;
    ~Slots();
    uint64_t* data = nullptr;
    size_t bytes = 0;
    bool mapped = false;
  };

  uint64_t max_keys_;
  uint64_t size_ = 0;
  size_t mask_ = 0;  // slot count - 1 (slot count is a power of two), 0 before the first insert
  Slots slots_;
};

class DumpRules {
 public:
  enum class Outcome {
    kReplay,     // keeps its create verb (its key, if any, is now remembered)
    kDuplicate,  // dump:duplicate_key
    kBudget,     // dump:replay_budget
    kKeyLimit,   // dump:key_limit
  };
  using Fingerprint = uint64_t (*)(std::string_view key) noexcept;

  // max_replays < 0: no budget. `fingerprint` is replaceable for tests (forcing collisions).
  DumpRules(int64_t max_replays, uint64_t max_keys,
            Fingerprint fingerprint = &ReplayedKeys::fingerprint);

  // For a record the policy gave a create-effect verb. `key` is its dedupe value, or nullptr
  // when the record has none (no dedupe field, or the field is absent/null): such records are
  // only subject to the budget. Checks, in order: duplicate, budget, key limit.
  Outcome judge(const std::string_view* key);
  // judge() split in two, so the caller can prefetch before deciding: fingerprint_of() (nonzero)
  // then judge_fingerprint(&f), or judge_fingerprint(nullptr) for a record without a key.
  uint64_t fingerprint_of(std::string_view key) const noexcept;
  Outcome judge_fingerprint(const uint64_t* fingerprint);

  uint64_t replays() const noexcept { return replays_; }
  const ReplayedKeys& keys() const noexcept { return keys_; }

 private:
  int64_t max_replays_;
  Fingerprint fingerprint_;
  uint64_t replays_ = 0;
  ReplayedKeys keys_;
};

}  // namespace replaygate::cli
