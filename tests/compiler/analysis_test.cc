// Tests for analyze(): exact RG2xx diagnostics (code, line, message, hint) on hand-built IR.
#include "compiler/analysis/analysis.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/compiler/analysis_builder.h"

namespace replaygate {
namespace {

using ir::Op;
using testing::kStar;
using testing::PolicyBuilder;

// One line per diagnostic: "LINE severity CODE: message | hint".
std::vector<std::string> lines(const std::vector<Diagnostic>& diagnostics) {
  std::vector<std::string> out;
  for (const auto& d : diagnostics) {
    EXPECT_EQ(d.path, "test.yaml");
    out.push_back(std::to_string(d.span.line) + " " +
                  (d.severity == Severity::kError     ? "error"
                   : d.severity == Severity::kWarning ? "warning"
                                                      : "info") +
                  " " + d.code + ": " + d.message + " | " + d.hint);
  }
  return out;
}

std::vector<std::string> analyze_lines(const PolicyBuilder& b) { return lines(analyze(b.get())); }

std::vector<std::string> want(std::vector<std::string> lines) { return lines; }

// The shipped policy (policies/replay_gate.yaml) as IR, lines as in the file.
PolicyBuilder shipped_policy(bool pause_payments = false) {
  PolicyBuilder b;
  b.string_field("topic")
      .string_field("error_class")
      .int_field("attempts", 0)
      .string_field("idempotency_key", true, true)
      .bool_field("already_committed")
      .int_field("replays", 0, std::nullopt, true);
  b.guard("no_idempotency_key", {b.cond("idempotency_key", Op::kAbsent)}, "hold", 55);
  b.guard("already_committed", {b.cond("already_committed", Op::kEq, {true})}, "never", 61);
  b.guard("attempts_exhausted", {b.cond("attempts", Op::kGe, {3}, "max_attempts")}, "hold", 67);
  b.guard("already_replayed", {b.cond("replays", Op::kGe, {1})}, "hold", 73);
  if (pause_payments) {
    b.guard("payments_paused", {b.cond("topic", Op::kEq, {"payment.capture"})}, "hold", 76);
  }
  b.table("known_failures", {"topic", "error_class"}, 79);
  b.row({"payment.capture", "timeout"}, "replay_once", 82)
      .row({"payment.capture", "insufficient_funds"}, "never", 83)
      .row({"payment.capture", "duplicate"}, "never", 84)
      .row({"inventory.reserve", "lock_timeout"}, "replay_once", 85)
      .row({"inventory.reserve", "overbook"}, "never", 86)
      .row({"webhook.partner", "http_503"}, "replay_once", 87)
      .row({"webhook.partner", "http_400"}, "never", 88)
      .row({"mail.receipt", "smtp_421"}, "replay_once", 89)
      .row({"mail.receipt", "unknown_recipient"}, "never", 90);
  return b;
}

TEST(AnalysisTest, ShippedPolicyIsClean) { EXPECT_EQ(analyze_lines(shipped_policy()), want({})); }

TEST(AnalysisTest, ShippedPolicyWithPausedTopicNamesThePause) {
  const std::string tail =
      "' is never reached: every input it matches is taken first by 'payments_paused' | remove "
      "the row, or narrow the earlier rules that take its inputs";
  EXPECT_EQ(analyze_lines(shipped_policy(true)),
            want({"82 warning RG202: row 'known_failures:payment.capture/timeout" + tail,
                  "83 warning RG202: row 'known_failures:payment.capture/insufficient_funds" + tail,
                  "84 warning RG202: row 'known_failures:payment.capture/duplicate" + tail}));
}

TEST(AnalysisTest, EmptyPolicyIsClean) {
  PolicyBuilder b;
  b.string_field("topic");
  EXPECT_EQ(analyze_lines(b), want({}));
}

// ---- RG201 ----

TEST(AnalysisTest, GuardBelowMinimumIsNeverTrue) {
  PolicyBuilder b;
  b.int_field("attempts", 0);
  b.guard("negative", {b.cond("attempts", Op::kLt, {0})}, "hold", 10);
  EXPECT_EQ(analyze_lines(b),
            want({"12 error RG201: guard 'negative' can never match: `attempts: {lt: 0}` is never "
                  "true | attempts is at least 0"}));
}

TEST(AnalysisTest, GuardAboveMaximumIsNeverTrue) {
  PolicyBuilder b;
  b.int_field("attempts", 0, 9);
  b.guard("big", {b.cond("attempts", Op::kGt, {9})}, "hold", 10)
      .guard("fits", {b.cond("attempts", Op::kEq, {9})}, "hold", 20);
  EXPECT_EQ(
      analyze_lines(b),
      want({"12 error RG201: guard 'big' can never match: `attempts: {gt: 9}` is never true | "
            "attempts is between 0 and 9"}));
}

TEST(AnalysisTest, ConditionsNeverTrueTogether) {
  PolicyBuilder b;
  b.int_field("attempts", 0).bool_field("flag");
  b.guard("odd",
          {b.cond("attempts", Op::kGe, {5}), b.cond("flag", Op::kEq, {true}),
           b.cond("attempts", Op::kLt, {3})},
          "hold", 10);
  EXPECT_EQ(analyze_lines(b),
            want({"14 error RG201: guard 'odd' can never match: `attempts: {ge: 5}` and "
                  "`attempts: {lt: 3}` are never true together | no valid value of attempts "
                  "satisfies all of them; fix the conditions or remove the guard"}));
}

TEST(AnalysisTest, NegationExcludingEveryEnumValueIsNeverTrue) {
  PolicyBuilder b;
  b.enum_field("severity", {"low", "high"});
  b.guard("none", {b.cond("severity", Op::kNotIn, {"low", "high"})}, "hold", 10);
  b.guard("one", {b.cond("severity", Op::kNe, {"low"})}, "hold", 20);
  EXPECT_EQ(analyze_lines(b),
            want({"12 error RG201: guard 'none' can never match: `severity: {not_in: [low, high]}` "
                  "is never true | it excludes every value severity can take"}));
}

TEST(AnalysisTest, EmptyStringOnEmptyMeansAbsentFieldIsNeverTrue) {
  PolicyBuilder b;
  b.string_field("key", true, true).string_field("plain", true, false);
  b.guard("empty_key", {b.cond("key", Op::kEq, {""})}, "hold", 10);
  b.guard("empty_plain", {b.cond("plain", Op::kEq, {""})}, "hold", 20);
  EXPECT_EQ(
      analyze_lines(b),
      want({"12 error RG201: guard 'empty_key' can never match: `key: \"\"` is never true | an "
            "empty key is read as absent; test `key: absent` instead"}));
}

TEST(AnalysisTest, AbsentOnRequiredFieldIsNeverTrue) {
  PolicyBuilder b;
  b.string_field("topic");
  b.guard("gone", {b.cond("topic", Op::kAbsent)}, "hold", 10);
  EXPECT_EQ(analyze_lines(b), want({"12 error RG201: guard 'gone' can never match: `topic: absent` "
                                    "is never true | topic is required, so it is never absent"}));
}

TEST(AnalysisTest, NeverTrueGuardIsNotAlsoShadowed) {
  PolicyBuilder b;
  b.int_field("attempts", 0);
  b.guard("all", {b.cond("attempts", Op::kGe, {0})}, "hold", 10);
  b.guard("negative", {b.cond("attempts", Op::kLt, {0})}, "hold", 20);
  auto got = analyze_lines(b);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].substr(0, 15), "22 error RG201:");
}

// ---- RG202 on guards ----

TEST(AnalysisTest, GuardShadowedByOneEarlierGuard) {
  PolicyBuilder b;
  b.int_field("attempts", 0);
  b.guard("three", {b.cond("attempts", Op::kGe, {3}, "max_attempts")}, "hold", 10);
  b.guard("five", {b.cond("attempts", Op::kGe, {5})}, "never", 20);
  EXPECT_EQ(
      analyze_lines(b),
      want({"20 warning RG202: guard 'five' is never reached: every input it matches is taken "
            "first by 'three' | remove the guard, or move it above the rules that take its "
            "inputs"}));
}

TEST(AnalysisTest, GuardShadowedByUnionOfIntervals) {
  PolicyBuilder b;
  b.int_field("attempts", 0, 9).string_field("topic");
  b.guard("low", {b.cond("attempts", Op::kLe, {2})}, "hold", 10);
  b.guard("mid", {b.cond("attempts", Op::kIn, {3, 4, 5})}, "hold", 20);
  b.guard("high", {b.cond("attempts", Op::kGt, {5})}, "hold", 30);
  b.guard("any", {b.cond("topic", Op::kEq, {"a"})}, "never", 40);
  EXPECT_EQ(analyze_lines(b),
            want({"40 warning RG202: guard 'any' is never reached: every input it matches is taken "
                  "first by 'low', 'mid' and 'high' | remove the guard, or move it above the rules "
                  "that take its inputs"}));
}

TEST(AnalysisTest, GapInIntervalsKeepsGuardReachable) {
  PolicyBuilder b;
  b.int_field("attempts", 0, 9);
  b.guard("low", {b.cond("attempts", Op::kLe, {2})}, "hold", 10);
  b.guard("high", {b.cond("attempts", Op::kGt, {3})}, "hold", 30);
  b.guard("any", {b.cond("attempts", Op::kGe, {0})}, "never", 40);  // 3 gets through
  EXPECT_EQ(analyze_lines(b), want({}));
}

TEST(AnalysisTest, AbsentIsAnInputOfItsOwn) {
  PolicyBuilder b;
  b.int_field("replays", 0, std::nullopt, true);
  b.guard("once", {b.cond("replays", Op::kGe, {1})}, "hold", 10);
  b.guard("zero", {b.cond("replays", Op::kLt, {1})}, "hold", 20);
  b.guard("present", {b.cond("replays", Op::kPresent)}, "never", 30);
  b.guard("missing", {b.cond("replays", Op::kAbsent)}, "never", 40);  // reachable
  b.guard("anything", {b.cond("replays", Op::kNe, {7})}, "never", 50);
  EXPECT_EQ(analyze_lines(b),
            want({"30 warning RG202: guard 'present' is never reached: every input it matches is "
                  "taken first by 'once' and 'zero' | remove the guard, or move it above the rules "
                  "that take its inputs",
                  "50 warning RG202: guard 'anything' is never reached: every input it matches is "
                  "taken first by 'once' and 'zero' | remove the guard, or move it "
                  "above the rules "
                  "that take its inputs"}));
}

TEST(AnalysisTest, ShadowerListIsCappedAtThree) {
  PolicyBuilder b;
  b.enum_field("kind", {"a", "b", "c", "d", "e"});
  for (const char* v : {"a", "b", "c", "d", "e"}) {
    b.guard(std::string("is_") + v, {b.cond("kind", Op::kEq, {v})}, "hold", 10);
  }
  b.guard("all", {b.cond("kind", Op::kIn, {"a", "b", "c", "d", "e"})}, "never", 40);
  EXPECT_EQ(analyze_lines(b),
            want({"40 warning RG202: guard 'all' is never reached: every input it matches is taken "
                  "first by 'is_a', 'is_b', 'is_c' and 2 more | remove the guard, or move it above "
                  "the rules that take its inputs"}));
}

TEST(AnalysisTest, GuardAfterTableShadowedOnlyWhenRowsCoverIt) {
  PolicyBuilder b;
  b.bool_field("flag").enum_field("kind", {"a", "b"});
  b.table("t", {"flag"}, 10).row({true}, "hold", 11).row({false}, "never", 12);
  b.guard("after", {b.cond("kind", Op::kEq, {"a"})}, "never", 20);
  EXPECT_EQ(analyze_lines(b),
            want({"20 warning RG202: guard 'after' is never reached: every input it matches is "
                  "taken first by 't:true' and 't:false' | remove the guard, or move it above the "
                  "rules that take its inputs"}));
}

// ---- RG202 on rows ----

TEST(AnalysisTest, RowShadowedByGuardOnTopic) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error_class");
  b.guard("payments_paused", {b.cond("topic", Op::kEq, {"payment.capture"})}, "hold", 10);
  b.table("known", {"topic", "error_class"}, 20)
      .row({"payment.capture", "timeout"}, "replay_once", 22)
      .row({"webhook.partner", "http_503"}, "replay_once", 23)
      .row({"payment.capture", "duplicate"}, "never", 24);
  EXPECT_EQ(
      analyze_lines(b),
      want({"22 warning RG202: row 'known:payment.capture/timeout' is never reached: every "
            "input it matches is taken first by 'payments_paused' | remove the row, or narrow "
            "the earlier rules that take its inputs",
            "24 warning RG202: row 'known:payment.capture/duplicate' is never reached: every "
            "input it matches is taken first by 'payments_paused' | remove the row, or narrow "
            "the earlier rules that take its inputs"}));
}

TEST(AnalysisTest, WildcardRowCoveredByExactRowsOnEnumKey) {
  PolicyBuilder b;
  b.enum_field("severity", {"low", "high"}).string_field("topic");
  b.table("t", {"severity", "topic"}, 10)
      .row({kStar, "orders"}, "hold", 11)
      .row({"low", "orders"}, "replay_once", 12)
      .row({"high", "orders"}, "never", 13)
      .row({"low", kStar}, "never", 14);
  EXPECT_EQ(analyze_lines(b),
            want({"11 warning RG202: row 't:*/orders' is never reached: every input it matches is "
                  "taken first by 't:low/orders' and 't:high/orders' | remove the row: more "
                  "specific rows of table 't' decide all its inputs"}));
}

TEST(AnalysisTest, WildcardRowOnOptionalEnumStillMatchesAbsent) {
  PolicyBuilder b;
  b.enum_field("severity", {"low", "high"}, true).string_field("topic");
  b.table("t", {"severity", "topic"}, 10)
      .row({"low", "orders"}, "replay_once", 11)
      .row({"high", "orders"}, "never", 12)
      .row({kStar, "orders"}, "hold", 13);
  EXPECT_EQ(analyze_lines(b), want({}));
}

TEST(AnalysisTest, RowShadowedByEarlierTable) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error_class");
  b.table("first", {"topic"}, 10).row({"orders"}, "hold", 11);
  b.table("second", {"topic", "error_class"}, 20)
      .row({"orders", "timeout"}, "replay_once", 21)
      .row({"payments", "timeout"}, "replay_once", 22);
  EXPECT_EQ(
      analyze_lines(b),
      want({"21 warning RG202: row 'second:orders/timeout' is never reached: every input it "
            "matches is taken first by 'first:orders' | remove the row, or narrow the earlier "
            "rules that take its inputs"}));
}

TEST(AnalysisTest, IntKeyRowsShadowedByGuard) {
  PolicyBuilder b;
  b.int_field("attempts", 0);
  b.guard("exhausted", {b.cond("attempts", Op::kGe, {3})}, "hold", 10);
  b.table("by_attempts", {"attempts"}, 20)
      .row({2}, "replay_once", 21)
      .row({3}, "replay_once", 22)
      .row({kStar}, "never", 23);
  EXPECT_EQ(
      analyze_lines(b),
      want({"22 warning RG202: row 'by_attempts:3' is never reached: every input it matches is "
            "taken first by 'exhausted' | remove the row, or narrow the earlier rules that "
            "take its inputs"}));
}

// ---- RG203 ----

TEST(AnalysisTest, DuplicateRows) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error_class");
  b.table("t", {"topic", "error_class"}, 10)
      .row({"orders", "timeout"}, "replay_once", 11, "first")
      .row({"orders", "timeout"}, "replay_once", 12, "second")
      .row({"orders", "timeout"}, "never", 13, "third")
      .row({"orders", kStar}, "never", 14, "w1")
      .row({"orders", kStar}, "never", 15, "w2");
  EXPECT_EQ(
      analyze_lines(b),
      want(
          {"12 error RG203: duplicate row 'second' in table 't': same keys [orders, timeout] as "
           "row 'first' (line 11) | remove one of the two rows",
           "13 error RG203: conflicting duplicate row 'third' in table 't': same keys [orders, "
           "timeout] as row 'first' (line 11) but verb 'never' instead of 'replay_once' | keep one "
           "of the two rows, with the verb you mean",
           "15 error RG203: duplicate row 'w2' in table 't': same keys [orders, '*'] as row 'w1' "
           "(line 14) | remove one of the two rows"}));
}

TEST(AnalysisTest, UnknownPositionsAreLeftOut) {
  PolicyBuilder b;
  b.string_field("topic");
  b.table("t", {"topic"}, 10).row({"a"}, "hold", 11, "first").row({"a"}, "hold", 12, "second");
  b.mutable_policy().source = ir::SourceMap{};
  b.mutable_policy().source.path = "test.yaml";
  EXPECT_EQ(analyze_lines(b), want({"0 error RG203: duplicate row 'second' in table 't': same keys "
                                    "[a] as row 'first' | remove one of the two rows"}));
}

TEST(AnalysisTest, SameKeysInDifferentTablesAreNotDuplicates) {
  PolicyBuilder b;
  b.string_field("topic");
  b.table("a", {"topic"}, 10).row({"orders"}, "hold", 11);
  b.table("b", {"topic"}, 20).row({"orders"}, "hold", 21).row({"other"}, "hold", 22);
  EXPECT_EQ(analyze_lines(b),
            want({"21 warning RG202: row 'b:orders' is never reached: every input it matches is "
                  "taken first by 'a:orders' | remove the row, or narrow the earlier rules that "
                  "take its inputs"}));
}

// ---- RG204 ----

TEST(AnalysisTest, ConflictingWildcardRows) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error_class");
  b.table("t", {"topic", "error_class"}, 10)
      .row({"payment.capture", kStar}, "never", 11)
      .row({kStar, "timeout"}, "replay_once", 12);
  EXPECT_EQ(
      analyze_lines(b),
      want({"12 error RG204: row 't:*/timeout' conflicts with row 't:payment.capture/*' (line "
            "11) in table 't': both match [payment.capture, timeout] with different verbs "
            "('replay_once' vs 'never') and neither is more specific | add an exact row for "
            "[payment.capture, timeout] to settle it"}));
}

TEST(AnalysisTest, ExactRowSettlesConflict) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error_class");
  b.table("t", {"topic", "error_class"}, 10)
      .row({"payment.capture", kStar}, "never", 11)
      .row({kStar, "timeout"}, "replay_once", 12)
      .row({"payment.capture", "timeout"}, "hold", 13);
  EXPECT_EQ(analyze_lines(b), want({}));
}

TEST(AnalysisTest, SameVerbOverlapIsNoConflict) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error_class");
  b.table("t", {"topic", "error_class"}, 10)
      .row({"payment.capture", kStar}, "never", 11)
      .row({kStar, "timeout"}, "never", 12);
  EXPECT_EQ(analyze_lines(b), want({}));
}

TEST(AnalysisTest, ConflictInThreeKeyTableNamesAWitness) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error_class").bool_field("flag", true);
  b.table("t", {"topic", "error_class", "flag"}, 10)
      .row({"orders", kStar, kStar}, "never", 11)
      .row({kStar, "timeout", kStar}, "replay_once", 12)
      .row({"orders", "timeout", true}, "hold", 13);  // settles only part of the overlap
  EXPECT_EQ(
      analyze_lines(b),
      want({"12 error RG204: row 't:*/timeout/*' conflicts with row 't:orders/*/*' (line 11) "
            "in table 't': both match [orders, timeout, '*'] (e.g. [orders, timeout, absent]) "
            "with different verbs ('replay_once' vs 'never') and neither is more specific | "
            "add a row for [orders, timeout, '*'] to settle it",
            "12 warning RG206: row 't:*/timeout/*' gives 'replay_once' (effect create) to inputs "
            "without flag: its '*' key matches an absent flag too | decide absent first with a "
            "guard `flag: absent` before the table, or give the key a value"}));
}

// ---- RG206 ----

TEST(AnalysisTest, WildcardOnOptionalKeyLetsAbsentReachAReplay) {
  PolicyBuilder b;
  b.string_field("idempotency_key", true, true).string_field("topic");
  b.table("t", {"topic", "idempotency_key"}, 10).row({"orders", kStar}, "replay_once", 11);
  EXPECT_EQ(analyze_lines(b),
            want({"11 warning RG206: row 't:orders/*' gives 'replay_once' (effect create) to "
                  "inputs without idempotency_key: its '*' key matches an absent "
                  "idempotency_key too | decide absent first with a guard `idempotency_key: "
                  "absent` before the table, or give the key a value"}));
}

TEST(AnalysisTest, WildcardOnOptionalKeyIsQuietWhenAGuardTakesAbsentFirst) {
  PolicyBuilder b;
  b.string_field("idempotency_key", true, true).string_field("topic");
  b.guard("no_key", {b.cond("idempotency_key", ir::Op::kAbsent)}, "hold", 10);
  b.table("t", {"topic", "idempotency_key"}, 20).row({"orders", kStar}, "replay_once", 21);
  EXPECT_EQ(analyze_lines(b), want({}));
}

TEST(AnalysisTest, WildcardOnOptionalKeyIsQuietForVerbsThatDoNothing) {
  PolicyBuilder b;
  b.string_field("idempotency_key", true, true).string_field("topic");
  b.table("t", {"topic", "idempotency_key"}, 10).row({"orders", kStar}, "hold", 11);
  EXPECT_EQ(analyze_lines(b), want({}));
}

// ---- RG205 ----

TEST(AnalysisTest, EmptyKeyOnEmptyMeansAbsentFieldNeverMatches) {
  PolicyBuilder b;
  b.string_field("idempotency_key", true, true).string_field("topic");
  b.table("t", {"topic", "idempotency_key"}, 10)
      .row({"orders", ""}, "never", 11)
      .row({"orders", kStar}, "hold", 12);
  EXPECT_EQ(
      analyze_lines(b),
      want({"11 error RG205: row 't:orders/' can never match: an empty idempotency_key is read "
            "as absent, so key \"\" never occurs | use '*' for this key and decide absent "
            "with a guard `idempotency_key: absent` before the table"}));
}

TEST(AnalysisTest, EmptyKeyOnPlainStringFieldMatches) {
  PolicyBuilder b;
  b.string_field("key", true, false);
  b.table("t", {"key"}, 10).row({""}, "never", 11);
  EXPECT_EQ(analyze_lines(b), want({}));
}

TEST(AnalysisTest, IntKeyOutOfBoundsNeverMatches) {
  PolicyBuilder b;
  b.int_field("attempts", 0, 5);
  b.table("t", {"attempts"}, 10).row({7}, "never", 11).row({5}, "never", 12);
  EXPECT_EQ(analyze_lines(b),
            want({"11 error RG205: row 't:7' can never match: key 7 is out of bounds (attempts is "
                  "between 0 and 5) | valid inputs never carry this value; remove the row or fix "
                  "the key"}));
}

// ---- scale ----

TEST(AnalysisTest, TenThousandExactRowsWithWildcardsAndGuards) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error_class").int_field("attempts", 0);
  b.guard("exhausted", {b.cond("attempts", Op::kGe, {3})}, "hold", 1);
  b.guard("paused", {b.cond("topic", Op::kEq, {"t17"})}, "hold", 2);
  b.table("big", {"topic", "error_class"}, 3);
  for (int i = 0; i < 10000; ++i) {
    b.row({"t" + std::to_string(i / 10), "e" + std::to_string(i % 10)},
          i % 2 ? "never" : "replay_once", 10 + i);
  }
  b.row({"t5", kStar}, "hold", 20000);   // reachable: error classes outside e0..e9
  b.row({kStar, "e3"}, "never", 20001);  // reachable: topics outside t0..t999
  b.row({"t5", "e3"}, "hold", 20002);    // duplicate
  b.table("after", {"topic", "error_class"}, 30000).row({"t999", "e4"}, "hold", 30001);
  auto got = analyze_lines(b);
  ASSERT_EQ(got.size(), 12u);
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(got[k], "" + std::to_string(180 + k) + " warning RG202: row 'big:t17/e" +
                          std::to_string(k) +
                          "' is never reached: every input it matches is taken first by 'paused' "
                          "| remove the row, or narrow the earlier rules that take its inputs");
  }
  EXPECT_EQ(got[10],
            "20002 error RG203: conflicting duplicate row 'big:t5/e3' in table 'big': same keys "
            "[t5, e3] as the row at line 63 but verb 'hold' instead of 'never' | keep one of the "
            "two rows, with the verb you mean");
  EXPECT_EQ(got[11],
            "30001 warning RG202: row 'after:t999/e4' is never reached: every input it matches is "
            "taken first by 'big:t999/e4' | remove the row, or narrow the earlier "
            "rules that take "
            "its inputs");
}

// ---- RG209 ----

TEST(AnalysisTest, BudgetExhaustionIsReportedOnceAndStopsTheSearch) {
  PolicyBuilder b = shipped_policy(true);
  EXPECT_EQ(analyze_lines(b).size(), 3u);
  AnalysisBudget budget;
  budget.rows = 1;
  EXPECT_EQ(lines(analyze_with_budget(b.get(), budget)),
            want({"61 info RG209: analysis stopped early at rule 'already_committed': the policy "
                  "is too complex to finish the shadowing and conflict checks | split large "
                  "wildcard tables or guards; the compiled decisions are not affected"}));
}

}  // namespace
}  // namespace replaygate
