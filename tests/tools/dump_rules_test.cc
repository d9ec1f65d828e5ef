// The run-wide rules of `replaygate decide` (pipeline/replay_guard.h): the replayed keys (an
// exact set of hashes sized to the keys, then the split block Bloom filter of the whole cap), the
// false-positive estimate, the key cap, and the direction of every mistake (a hold, never a second
// replay).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "pipeline/replay_guard.h"

namespace replaygate::pipeline {
namespace {

using Outcome = ReplayGuard::Outcome;
constexpr uint64_t kMiB = uint64_t{1} << 20;

uint64_t hash_of(const std::string& key) { return ReplayedKeyFilter::hash(key); }

TEST(ReplayedKeyFilterTest, SizeIsWholeBlocksAndAtLeastOne) {
  EXPECT_EQ(ReplayedKeyFilter(16 * kMiB).blocks(), 524288u);
  EXPECT_EQ(ReplayedKeyFilter(16 * kMiB).bytes(), 16 * kMiB);
  EXPECT_EQ(ReplayedKeyFilter(100).blocks(), 3u);  // 96 bytes
  EXPECT_EQ(ReplayedKeyFilter(0).blocks(), 1u);
  EXPECT_EQ(ReplayedKeyFilter(31).bytes(), 32u);
}

TEST(ReplayedKeyFilterTest, NeverForgetsAKey) {
  // No false negatives, even in a filter far too small for its keys.
  for (const uint64_t bytes : {uint64_t{64} << 10, uint64_t{32}}) {
    ReplayedKeyFilter filter(bytes);
    for (int k = 0; k < 100000; ++k) filter.insert(hash_of("k" + std::to_string(k)));
    for (int k = 0; k < 100000; ++k) {
      ASSERT_TRUE(filter.contains(hash_of("k" + std::to_string(k)))) << bytes << " " << k;
    }
  }
}

TEST(ReplayedKeyFilterTest, EmptyFilterContainsNothing) {
  ReplayedKeyFilter filter(kMiB);
  for (int k = 0; k < 10000; ++k) ASSERT_FALSE(filter.contains(hash_of("k" + std::to_string(k))));
}

TEST(ReplayedKeyFilterTest, BlockFromTheUpperBitsWordBitsFromTheLower) {
  // Parquet's layout: with one block every hash lands in it, and the eight bits come from the
  // lower 32 bits only, so two hashes that differ only above bit 31 are the same entry.
  ReplayedKeyFilter one(32);
  one.insert(0x1234567800000001ull);
  EXPECT_TRUE(one.contains(0xFFFFFFFF00000001ull));
  EXPECT_TRUE(one.contains(0x0000000000000001ull));
  EXPECT_FALSE(one.contains(0x1234567800000002ull));
  // With two blocks the upper 32 bits pick the block: 0x8000_0000 and above is block 1.
  ReplayedKeyFilter two(64);
  two.insert(0x0000000000000001ull);
  EXPECT_TRUE(two.contains(0x7FFFFFFF00000001ull));
  EXPECT_FALSE(two.contains(0x8000000000000001ull));
}

TEST(ReplayedKeyFilterTest, EstimatedRateMatchesTheDocumentedFigures) {
  const uint64_t blocks_16mib = 16 * kMiB / ReplayedKeyFilter::kBlockBytes;
  EXPECT_EQ(ReplayedKeyFilter::false_positive_rate(0, blocks_16mib), 0.0);
  // docs/cli.md "Dump semantics": 16 MiB holds 1,000,000 keys at 3.3e-8, 10,000,000 at 3.2e-3.
  const double at_1m = ReplayedKeyFilter::false_positive_rate(1'000'000, blocks_16mib);
  EXPECT_GT(at_1m, 3.2e-8);
  EXPECT_LT(at_1m, 3.4e-8);
  const double at_10m = ReplayedKeyFilter::false_positive_rate(10'000'000, blocks_16mib);
  EXPECT_GT(at_10m, 3.1e-3);
  EXPECT_LT(at_10m, 3.2e-3);
  // 64 MiB keeps 10,000,000 keys under 1e-5 (2.5e-6).
  const double at_10m_64 = ReplayedKeyFilter::false_positive_rate(
      10'000'000, 64 * kMiB / ReplayedKeyFilter::kBlockBytes);
  EXPECT_GT(at_10m_64, 2.4e-6);
  EXPECT_LT(at_10m_64, 2.6e-6);
  // Saturated: one block and thousands of keys (no underflow on the way).
  EXPECT_GT(ReplayedKeyFilter::false_positive_rate(100000, 1), 0.999);
  EXPECT_LE(ReplayedKeyFilter::false_positive_rate(100000, 1), 1.0);
}

TEST(ReplayedKeyFilterTest, MeasuredRateIsCloseToTheEstimate) {
  // 2,048 blocks and 40,000 keys (about 20 a block): the estimate is 3.5e-3, so of 400,000 keys
  // never inserted about 1,400 should look contained.
  ReplayedKeyFilter filter(64 << 10);
  for (int k = 0; k < 40000; ++k) filter.insert(hash_of("in" + std::to_string(k)));
  int false_positives = 0;
  const int queries = 400000;
  for (int k = 0; k < queries; ++k)
    false_positives += filter.contains(hash_of("out" + std::to_string(k)));
  const double estimate = ReplayedKeyFilter::false_positive_rate(40000, filter.blocks());
  EXPECT_GT(estimate, 3.4e-3);
  EXPECT_LT(estimate, 3.6e-3);
  const double measured = static_cast<double>(false_positives) / queries;
  EXPECT_GT(measured, estimate * 0.85) << false_positives;
  EXPECT_LT(measured, estimate * 1.15) << false_positives;
}

std::vector<Outcome> judge_all(ReplayGuard& rules, const std::vector<std::string>& keys) {
  std::vector<Outcome> out;
  for (const std::string& key : keys) {
    const std::string_view view = key;
    out.push_back(rules.judge(&view));
  }
  return out;
}

TEST(DumpRulesTest, OneReplayPerKey) {
  ReplayGuard rules(-1, 10, 16 * kMiB);
  EXPECT_EQ(judge_all(rules, {"a", "b", "a", "c", "b"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kReplay, Outcome::kMaybeDuplicate,
                                  Outcome::kReplay, Outcome::kMaybeDuplicate}));
  EXPECT_EQ(rules.replays(), 3u);
  EXPECT_EQ(rules.keys(), 3u);
  EXPECT_EQ(rules.judge(nullptr), Outcome::kReplay);  // no key: only the budget applies
  EXPECT_EQ(rules.judge(nullptr), Outcome::kReplay);
  EXPECT_EQ(rules.keys(), 3u);
}

TEST(DumpRulesTest, EveryRealDuplicateIsHeldAndNoKeyIsReplayedTwice) {
  // 30,000 keys, each appearing one to four times in a scrambled order, through a filter of
  // 16 KiB (512 blocks, ~60 keys a block: about 1 new key in 5 looks seen). Whatever the
  // filter's mistakes, a key is replayed at most once and every repeat is held.
  ReplayGuard rules(-1, ReplayGuard::kDefaultMaxKeys, 16 << 10);
  std::vector<std::string> stream;
  for (int k = 0; k < 30000; ++k) {
    for (int copy = 0; copy <= k % 4; ++copy) stream.push_back("key-" + std::to_string(k));
  }
  uint64_t state = 12345;
  for (size_t i = stream.size() - 1; i > 0; --i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(stream[i], stream[(state >> 33) % (i + 1)]);
  }
  std::unordered_map<std::string, int> seen, replayed;
  uint64_t first_held = 0;
  for (const std::string& key : stream) {
    const std::string_view view = key;
    const Outcome outcome = rules.judge(&view);
    const bool repeat = seen[key]++ > 0;
    if (repeat) {
      ASSERT_EQ(outcome, Outcome::kMaybeDuplicate) << key;
    } else if (outcome != Outcome::kReplay) {
      ASSERT_EQ(outcome, Outcome::kMaybeDuplicate) << key;  // a false positive: held
      ++first_held;
    }
    if (outcome == Outcome::kReplay) {
      ASSERT_EQ(++replayed[key], 1) << key;
    }
  }
  EXPECT_GT(first_held, 0u);  // the filter was too small: it did make mistakes...
  EXPECT_EQ(rules.replays(), 30000u - first_held);  // ...and each one cost a replay, not a key
  EXPECT_GT(rules.false_positive_rate(), ReplayGuard::kWarnFalsePositiveRate);
  EXPECT_EQ(rules.keys_seen_at_most(), stream.size());  // every lookup counted once
}

uint64_t everything_collides(std::string_view) noexcept { return 42; }

TEST(DumpRulesTest, AHashCollisionHoldsNeverReplays) {
  // Different keys with the same hash: the second is held as a maybe-duplicate.
  ReplayGuard rules(-1, 10, 16 * kMiB, &everything_collides);
  EXPECT_EQ(judge_all(rules, {"k1", "k2", "k3", "k1"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kMaybeDuplicate,
                                  Outcome::kMaybeDuplicate, Outcome::kMaybeDuplicate}));
  EXPECT_EQ(rules.replays(), 1u);
  EXPECT_EQ(rules.keys(), 1u);
}

uint64_t zero_hash(std::string_view) noexcept { return 0; }

TEST(DumpRulesTest, AZeroHashIsAKeyLikeAnyOther) {
  ReplayGuard rules(-1, 10, 16 * kMiB, &zero_hash);
  EXPECT_EQ(judge_all(rules, {"a", "b"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kMaybeDuplicate}));
}

TEST(DumpRulesTest, ASaturatedFilterHoldsNewKeys) {
  // One 32-byte block: after some dozens of keys most bits are set and most new keys look seen:
  // they are held (the filter fills ever more slowly, since held keys are not inserted). Nothing
  // is ever replayed twice, and the rate says how bad it is.
  ReplayGuard rules(-1, ReplayGuard::kDefaultMaxKeys, 32);
  uint64_t replays = 0, holds = 0;
  for (int k = 0; k < 3000; ++k) {
    const std::string key = "k" + std::to_string(k);
    const std::string_view view = key;
    const Outcome outcome = rules.judge(&view);
    if (outcome == Outcome::kReplay) {
      ++replays;
    } else {
      ASSERT_EQ(outcome, Outcome::kMaybeDuplicate) << key;
      ++holds;
    }
  }
  EXPECT_LT(replays, 150u);
  EXPECT_EQ(rules.replays(), replays);
  EXPECT_EQ(rules.keys(), replays);
  // The selected keys filled the block far more than as many random keys would (estimate 0.55):
  // the rate is measured, and is what the run saw.
  EXPECT_GT(rules.false_positive_rate(), 0.95);
  EXPECT_NEAR(rules.false_positive_rate(), static_cast<double>(holds - 100) / (3000 - 100), 0.05);
  EXPECT_EQ(rules.keys_seen_at_most(), 3000u);
  // 3,000 keys in 1 MiB stay far under the warning rate.
  EXPECT_EQ(rules.mib_for_rate(ReplayGuard::kWarnFalsePositiveRate), 1u);
}

TEST(DumpRulesTest, MemoryForARateGrowsWithTheKeys) {
  ReplayGuard rules(-1, ReplayGuard::kDefaultMaxKeys, 16 * kMiB);
  EXPECT_EQ(rules.false_positive_rate(), 0.0);
  for (int k = 0; k < 500000; ++k) {
    const std::string key = "k" + std::to_string(k);
    const std::string_view view = key;
    ASSERT_EQ(rules.judge(&view), Outcome::kReplay) << key;  // 16 MiB: no mistake expected
  }
  EXPECT_LT(rules.false_positive_rate(), 1e-8);
  EXPECT_EQ(rules.mib_for_rate(1e-6), 4u);  // 500,000 keys: 4 MiB reach 1e-6
}

TEST(DumpRulesTest, KeyLimitHoldsNewKeysButStillCatchesDuplicates) {
  ReplayGuard rules(-1, 2, 16 * kMiB);
  EXPECT_EQ(
      judge_all(rules, {"a", "b", "c", "a", "d", "c"}),
      (std::vector<Outcome>{Outcome::kReplay, Outcome::kReplay, Outcome::kKeyLimit,
                            Outcome::kMaybeDuplicate, Outcome::kKeyLimit, Outcome::kKeyLimit}));
  EXPECT_EQ(rules.replays(), 2u);
  EXPECT_EQ(rules.keys(), 2u);
  // Records without a key are not remembered, so the cap does not hold them.
  EXPECT_EQ(rules.judge(nullptr), Outcome::kReplay);
  ReplayGuard none(-1, 0, 16 * kMiB);
  EXPECT_EQ(judge_all(none, {"a", "a"}),
            (std::vector<Outcome>{Outcome::kKeyLimit, Outcome::kKeyLimit}));
}

TEST(DumpRulesTest, BudgetComesAfterDuplicatesAndBeforeTheKeyLimit) {
  ReplayGuard rules(2, 2, 16 * kMiB);
  EXPECT_EQ(judge_all(rules, {"a", "a", "b", "c", "b"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kMaybeDuplicate, Outcome::kReplay,
                                  Outcome::kBudget, Outcome::kMaybeDuplicate}));
  EXPECT_EQ(rules.judge(nullptr), Outcome::kBudget);
  ReplayGuard zero(0, 10, 16 * kMiB);
  EXPECT_EQ(judge_all(zero, {"a", "a"}),
            (std::vector<Outcome>{Outcome::kBudget, Outcome::kBudget}));
}

// ---- ReplayedKeys: exact while small, then the filter of the whole cap ----

// Distinct, uniformly spread hashes (never 0).
std::vector<uint64_t> some_hashes(size_t count, uint64_t seed) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i < count; ++i) out.push_back(hash_of("h" + std::to_string(seed + i)) | 1);
  return out;
}

TEST(ReplayedKeysTest, MemoryGrowsWithTheKeysUpToAnEighthOfTheCapThenIsTheFilter) {
  ReplayedKeys keys(16 * kMiB);
  EXPECT_TRUE(keys.exact());
  EXPECT_EQ(keys.bytes(), 8u << 10);  // 1024 slots, however large the cap
  EXPECT_EQ(keys.cap_bytes(), 16 * kMiB);
  const std::vector<uint64_t> hashes = some_hashes(131073, 0);
  for (size_t i = 0; i < hashes.size(); ++i) {
    ASSERT_FALSE(keys.contains(hashes[i])) << i;
    keys.insert(hashes[i]);
    if (i + 1 == 512) {
      EXPECT_EQ(keys.bytes(), 8u << 10);  // half full
    }
    if (i + 1 == 513) {
      EXPECT_EQ(keys.bytes(), 16u << 10);  // doubled
    }
    if (i + 1 == 131072) {
      // 262,144 slots (2 MiB: an eighth of the cap), half full: the most the set holds.
      EXPECT_TRUE(keys.exact());
      EXPECT_EQ(keys.bytes(), 2 * kMiB);
    }
  }
  EXPECT_FALSE(keys.exact());
  EXPECT_EQ(keys.bytes(), 16 * kMiB);
  for (const uint64_t h : hashes) ASSERT_TRUE(keys.contains(h)) << h;
}

TEST(ReplayedKeysTest, TheSwitchBuildsTheFilterTheKeysWouldHaveHadFromTheStart) {
  // 1 MiB: exact up to 8,192 keys. 20,000 keys and the hash 0 (kept apart from the slots, where
  // 0 means empty) go through the switch; the filter is bit for bit the one fed directly.
  ReplayedKeys keys(kMiB);
  ReplayedKeyFilter direct(kMiB);
  std::vector<uint64_t> hashes = some_hashes(20000, 1000000);
  hashes.insert(hashes.begin() + 10, 0);
  for (const uint64_t h : hashes) {
    keys.insert(h);
    direct.insert(h);
  }
  EXPECT_FALSE(keys.exact());
  for (const uint64_t h : hashes) ASSERT_TRUE(keys.contains(h)) << h;
  EXPECT_EQ(keys.filter().measured_false_positive_rate(), direct.measured_false_positive_rate());
  for (const uint64_t h : some_hashes(200000, 5000000)) {
    ASSERT_EQ(keys.contains(h), direct.contains(h)) << h;
  }
}

TEST(ReplayedKeysTest, ACapUnder64KiBIsTheFilterAtOnce) {
  ReplayedKeys small(32 << 10);  // an eighth is 512 slots, under the smallest set
  EXPECT_FALSE(small.exact());
  EXPECT_EQ(small.bytes(), 32u << 10);
  ReplayedKeys smallest_exact(64 << 10);
  EXPECT_TRUE(smallest_exact.exact());
}

TEST(DumpRulesTest, TheExactSetMakesNoMistakesAndSaysSo) {
  // 100,000 keys, each twice, in a scrambled order: every first occurrence is replayed, every
  // second held; the rate is that of a 64-bit hash collision, and the summary names the set.
  ReplayGuard rules(-1, ReplayGuard::kDefaultMaxKeys, 16 * kMiB);
  EXPECT_EQ(rules.memory_text(), "in an exact set (8 KiB of the 16 MiB --replayed-keys-memory)");
  std::vector<std::string> stream;
  for (int k = 0; k < 100000; ++k) {
    stream.push_back("key-" + std::to_string(k));
    stream.push_back("key-" + std::to_string(k));
  }
  uint64_t state = 777;
  for (size_t i = stream.size() - 1; i > 0; --i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::swap(stream[i], stream[(state >> 33) % (i + 1)]);
  }
  std::unordered_map<std::string, int> seen;
  for (const std::string& key : stream) {
    const std::string_view view = key;
    ASSERT_EQ(rules.judge(&view), seen[key]++ == 0 ? Outcome::kReplay : Outcome::kMaybeDuplicate)
        << key;
  }
  EXPECT_TRUE(rules.replayed_keys().exact());
  EXPECT_EQ(rules.keys(), 100000u);
  EXPECT_EQ(rules.false_positive_rate(), 100000.0 / 18446744073709551616.0);
  EXPECT_EQ(rules.memory_text(), "in an exact set (2 MiB of the 16 MiB --replayed-keys-memory)");
}

uint64_t zero_for_z(std::string_view key) noexcept {
  return key == "z" ? 0 : ReplayedKeyFilter::hash(key);
}

TEST(DumpRulesTest, AKeyReplayedBeforeTheSwitchIsHeldAfterIt) {
  ReplayGuard rules(-1, ReplayGuard::kDefaultMaxKeys, kMiB, &zero_for_z);
  const std::string_view z = "z", first = "k0";
  EXPECT_EQ(rules.judge(&z), Outcome::kReplay);
  EXPECT_EQ(rules.judge(&first), Outcome::kReplay);
  for (int k = 1; k < 20000; ++k) {
    const std::string key = "k" + std::to_string(k);
    const std::string_view view = key;
    rules.judge(&view);
  }
  EXPECT_FALSE(rules.replayed_keys().exact());
  EXPECT_EQ(rules.memory_text(), "in a 1 MiB filter");
  EXPECT_EQ(rules.judge(&z), Outcome::kMaybeDuplicate);
  EXPECT_EQ(rules.judge(&first), Outcome::kMaybeDuplicate);
}

}  // namespace
}  // namespace replaygate::pipeline
