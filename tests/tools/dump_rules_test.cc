// The run-wide rules of `replaygate decide` (tools/cli/dump_rules.h): the bounded fingerprint set,
// the key cap, and the direction of a fingerprint collision (always a hold, never a replay).
#include "tools/cli/dump_rules.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace replaygate::cli {
namespace {

using Outcome = DumpRules::Outcome;

TEST(ReplayedKeysTest, RemembersExactlyWhatWasInserted) {
  ReplayedKeys keys(100000);
  for (uint64_t k = 1; k <= 50000; ++k) ASSERT_TRUE(keys.insert(k * 7919));
  EXPECT_EQ(keys.size(), 50000u);
  for (uint64_t k = 1; k <= 50000; ++k) ASSERT_TRUE(keys.contains(k * 7919)) << k;
  for (uint64_t k = 1; k <= 50000; ++k) ASSERT_FALSE(keys.contains(k * 7919 + 1)) << k;
}

TEST(ReplayedKeysTest, RefusesKeysBeyondTheCap) {
  ReplayedKeys keys(3);
  EXPECT_TRUE(keys.insert(11));
  EXPECT_TRUE(keys.insert(22));
  EXPECT_TRUE(keys.insert(33));
  EXPECT_FALSE(keys.insert(44));
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_FALSE(keys.contains(44));
  EXPECT_TRUE(keys.contains(33));

  ReplayedKeys none(0);
  EXPECT_FALSE(none.insert(1));
  EXPECT_FALSE(none.contains(1));
}

TEST(ReplayedKeysTest, MemoryIsBoundedByTheCap) {
  // 8 bytes per slot, at most 3/4 full: the default cap of 10,000,000 keys needs 2^24 slots.
  EXPECT_EQ(ReplayedKeys::max_bytes(ReplayedKeys::kDefaultMaxKeys), uint64_t{128} << 20);
  EXPECT_EQ(ReplayedKeys::max_bytes(768), 8192u);  // the first array (1,024 slots)
  EXPECT_EQ(ReplayedKeys::max_bytes(769), 16384u);
  EXPECT_EQ(ReplayedKeys::max_bytes(0), 0u);
}

TEST(ReplayedKeysTest, FingerprintIsNeverTheEmptyMarker) {
  EXPECT_NE(ReplayedKeys::fingerprint(""), 0u);
  EXPECT_EQ(ReplayedKeys::fingerprint("k1"), ReplayedKeys::fingerprint(std::string("k1")));
  EXPECT_NE(ReplayedKeys::fingerprint("k1"), ReplayedKeys::fingerprint("k2"));
}

std::vector<Outcome> judge_all(DumpRules& rules, const std::vector<std::string>& keys) {
  std::vector<Outcome> out;
  for (const std::string& key : keys) {
    const std::string_view view = key;
    out.push_back(rules.judge(&view));
  }
  return out;
}

TEST(DumpRulesTest, OneReplayPerKey) {
  DumpRules rules(-1, 10);
  EXPECT_EQ(judge_all(rules, {"a", "b", "a", "c", "b"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kReplay, Outcome::kDuplicate,
                                  Outcome::kReplay, Outcome::kDuplicate}));
  EXPECT_EQ(rules.replays(), 3u);
  EXPECT_EQ(rules.judge(nullptr), Outcome::kReplay);  // no key: only the budget applies
  EXPECT_EQ(rules.judge(nullptr), Outcome::kReplay);
}

uint64_t everything_collides(std::string_view) noexcept { return 42; }

TEST(DumpRulesTest, AFingerprintCollisionHoldsNeverReplays) {
  // Different keys with the same fingerprint: the second is held as a duplicate.
  DumpRules rules(-1, 10, &everything_collides);
  EXPECT_EQ(judge_all(rules, {"k1", "k2", "k3", "k1"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kDuplicate, Outcome::kDuplicate,
                                  Outcome::kDuplicate}));
  EXPECT_EQ(rules.replays(), 1u);
}

uint64_t zero_fingerprint(std::string_view) noexcept { return 0; }

TEST(DumpRulesTest, AZeroFingerprintStillCountsAsSeen) {
  DumpRules rules(-1, 10, &zero_fingerprint);
  EXPECT_EQ(judge_all(rules, {"a", "b"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kDuplicate}));
}

TEST(DumpRulesTest, KeyLimitHoldsNewKeysButStillCatchesDuplicates) {
  DumpRules rules(-1, 2);
  EXPECT_EQ(judge_all(rules, {"a", "b", "c", "a", "d", "c"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kReplay, Outcome::kKeyLimit,
                                  Outcome::kDuplicate, Outcome::kKeyLimit, Outcome::kKeyLimit}));
  EXPECT_EQ(rules.replays(), 2u);
  EXPECT_EQ(rules.keys().size(), 2u);
  // Records without a key are not remembered, so the cap does not hold them.
  EXPECT_EQ(rules.judge(nullptr), Outcome::kReplay);
}

TEST(DumpRulesTest, BudgetComesAfterDuplicatesAndBeforeTheKeyLimit) {
  DumpRules rules(2, 2);
  EXPECT_EQ(judge_all(rules, {"a", "a", "b", "c", "b"}),
            (std::vector<Outcome>{Outcome::kReplay, Outcome::kDuplicate, Outcome::kReplay,
                                  Outcome::kBudget, Outcome::kDuplicate}));
  EXPECT_EQ(rules.judge(nullptr), Outcome::kBudget);
  DumpRules zero(0, 10);
  EXPECT_EQ(judge_all(zero, {"a", "a"}),
            (std::vector<Outcome>{Outcome::kBudget, Outcome::kBudget}));
}

}  // namespace
}  // namespace replaygate::cli
