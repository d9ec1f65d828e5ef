// decide()'s load-time index (runtime/internal/decide_index.h) against the general path
// (decide_unindexed()): which index each policy gets, and identical decisions on exhaustive and
// random inputs, with the edges the index is most likely to get wrong: empty strings with
// empty_means_absent, unknown strings, strings the cheap hash cannot tell apart (same size, first
// and last 8 bytes), 1..3-byte strings, NUL bytes, invalid enum values, ints at bounds and cuts,
// wildcard specificity, and tables too big for a dense matrix.
#include "runtime/internal/decide_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/lower.h"
#include "runtime/table.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::string show(const Decision& d) {
  return "{verb " + std::to_string(d.verb) + ", rule " + std::to_string(d.rule) + ", kind " +
         std::to_string(static_cast<int>(d.kind)) + ", field " + std::to_string(d.invalid_field) +
         "}";
}

// The reference gate with `extra` more int fields x0, x1, ... (0..9) that no rule reads, and no
// source spans (the added fields have none).
ir::CheckedPolicy gate_with_extra_fields(int extra) {
  ir::CheckedPolicy wide = reference_gate();
  for (int i = 0; i < extra; ++i)
    wide.policy.fields.push_back(int_field("x" + std::to_string(i), 0, 9));
  wide.source.rules.clear();
  wide.source.conditions.clear();
  wide.source.rows.clear();
  return wide;
}

// decide() and decide_unindexed() agree on every field of the decision. Returns decide()'s.
Decision expect_same(const Table& table, const Input& in, const std::string& what) {
  const Decision fast = decide_unindexed(table, in);
  const Decision general = table.decide(in);
  EXPECT_TRUE(fast.verb == general.verb && fast.rule == general.rule && fast.kind == general.kind &&
              fast.invalid_field == general.invalid_field)
      << what << ": indexed " << show(general) << ", general " << show(fast);
  return general;
}

// One way to set a field: a value, or a state.
using Setter = std::function<void(Input&, uint32_t)>;
Setter str(std::string s) {
  return [s = std::move(s)](Input& in, uint32_t f) { in.set_string(f, s); };
}
Setter num(int64_t v) {
  return [v](Input& in, uint32_t f) { in.set_int(f, v); };
}
Setter flag(bool v) {
  return [v](Input& in, uint32_t f) { in.set_bool(f, v); };
}
const Setter kUnset = [](Input&, uint32_t) {};
const Setter kNull = [](Input& in, uint32_t f) { in.set_null(f); };
const Setter kBad = [](Input& in, uint32_t f) { in.set_invalid(f); };

// Every combination of the per-field setters, each compared; returns how many were compared.
size_t compare_all(const Table& table, const std::vector<std::vector<Setter>>& per_field) {
  Input in(table);
  std::vector<size_t> digit(per_field.size(), 0);
  size_t count = 0;
  for (;;) {
    in.clear();
    std::string what = "combination";
    for (uint32_t f = 0; f < per_field.size(); ++f) {
      per_field[f][digit[f]](in, f);
      what += " " + std::to_string(digit[f]);
    }
    expect_same(table, in, what);
    ++count;
    size_t f = 0;
    while (f < digit.size() && ++digit[f] == per_field[f].size()) digit[f++] = 0;
    if (f == digit.size()) break;
  }
  return count;
}

TEST(DecideIndex, ShippedGateGetsSmallDictionariesAnUnhashedKeyAndADenseTable) {
  auto table = load_lowered(reference_gate());
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  EXPECT_EQ(s.small_dict_fields, 2u);  // topic, error_class
  EXPECT_EQ(s.unhashed_fields, 1u);    // idempotency_key: no rule compares its value
  EXPECT_EQ(s.general_fields, 0u);
  EXPECT_EQ(s.dense_tables, 1u);
  EXPECT_EQ(s.probed_tables, 0u);
  EXPECT_EQ(s.dense_cells, 6u * 11u);  // topic: absent, other, 4 values; error: absent, other, 9
  EXPECT_TRUE(s.guard_masks);
  // No guard reads topic or error_class: they are looked up only when the table needs them.
  EXPECT_EQ(s.lazy_fields, 2u);
  EXPECT_EQ(s.perfect_fields, 2u);  // 4 and 9 values, each in its home slot
  EXPECT_TRUE(s.fast_path);
}

// More than 64 rules: no guard masks (the guards are evaluated one by one); the same decisions,
// and guards after the table still decide.
TEST(DecideIndex, PolicyOverSixtyFourRulesAgrees) {
  ir::CheckedPolicy checked = reference_gate();
  for (int64_t v = 10; v < 80; ++v) {
    checked.policy.rules.push_back(
        guard("error_" + std::to_string(v),
              {cond(kErrorClass, ir::Op::kEq, {S("e" + std::to_string(v))})},
              static_cast<uint32_t>(v % 3), "r"));
  }
  checked.source.rules.clear();
  checked.source.conditions.clear();
  checked.source.rows.clear();
  auto table = load_lowered(checked);
  ASSERT_NE(table, nullptr);
  EXPECT_FALSE(decide_index_stats(*table).guard_masks);
  EXPECT_FALSE(decide_index_stats(*table).fast_path);  // the fast path needs the guard masks
  EXPECT_EQ(decide_index_stats(*table).lazy_fields, 0u);
  std::vector<Setter> errors = {str("timeout"), str("nope")};
  for (int64_t v = 8; v < 82; ++v) errors.push_back(str("e" + std::to_string(v)));
  compare_all(*table, {{str("payment.capture"), str("nope")},
                       errors,
                       {num(0), num(3)},
                       {str("k"), str("")},
                       {flag(false), flag(true)},
                       {kUnset, num(-1), num(0), num(1)}});
  // A guard after the table decides an error class the table does not know.
  Input in(*table);
  in.set_string(kTopic, "payment.capture");
  in.set_string(kErrorClass, "e75");
  in.set_int(kAttempts, 0);
  in.set_string(kIdempotencyKey, "k");
  in.set_bool(kAlreadyCommitted, false);
  const Decision d = expect_same(*table, in, "late guard");
  EXPECT_EQ(table->rule_id(d.rule), "error_75");
}

TEST(DecideIndex, ShippedGateAgreesOnEveryEdgeCombination) {
  auto table = load_lowered(reference_gate());
  ASSERT_NE(table, nullptr);
  const std::vector<Setter> topics = {str("payment.capture"),
                                      str("inventory.reserve"),
                                      str("webhook.partner"),
                                      str("mail.receipt"),
                                      str(""),
                                      str("payment.captur"),
                                      str("payment.capturf"),
                                      str(std::string("payment.capture\0", 16)),
                                      str(std::string(100, 'x')),
                                      kUnset,
                                      kNull,
                                      num(1)};
  const std::vector<Setter> errors = {str("timeout"),
                                      str("insufficient_funds"),
                                      str("duplicate"),
                                      str("lock_timeout"),
                                      str("overbook"),
                                      str("http_503"),
                                      str("http_400"),
                                      str("smtp_421"),
                                      str("unknown_recipient"),
                                      str("unknown_recipienT"),
                                      str("http_50"),
                                      str(""),
                                      kBad};
  const std::vector<Setter> attempts = {num(kMin), num(-1),   num(0), num(2),
                                        num(3),    num(kMax), kUnset, flag(true)};
  const std::vector<Setter> keys = {str(""), str("k"), kUnset, kNull, num(7)};
  const std::vector<Setter> committed = {flag(false), flag(true), kUnset, str("true")};
  const std::vector<Setter> replays = {kUnset, kNull, num(-1), num(0), num(1), num(kMax), str("1")};
  EXPECT_EQ(compare_all(*table, {topics, errors, attempts, keys, committed, replays}),
            12u * 13 * 8 * 5 * 4 * 7);
}

TEST(DecideIndex, ShippedGateDecidesTheSeedRowsThroughTheDenseMatrix) {
  auto table = load_lowered(reference_gate());
  ASSERT_NE(table, nullptr);
  Input in(*table);
  in.set_string(kTopic, "webhook.partner");
  in.set_string(kErrorClass, "http_400");
  in.set_int(kAttempts, 1);
  in.set_string(kIdempotencyKey, "k");
  in.set_bool(kAlreadyCommitted, false);
  Decision d = expect_same(*table, in, "webhook.partner/http_400");
  EXPECT_EQ(d.kind, DecisionKind::kRule);
  EXPECT_EQ(table->rule_id(d.rule), "known_failures:webhook.partner/http_400");
  EXPECT_EQ(d.verb, kNever);
  // An empty key is absent (empty_means_absent) without being hashed: the first guard holds.
  in.set_string(kIdempotencyKey, "");
  d = expect_same(*table, in, "empty key");
  EXPECT_EQ(table->rule_id(d.rule), "no_idempotency_key");
  // An unknown error class is "other": the default.
  in.set_string(kIdempotencyKey, "k");
  in.set_string(kErrorClass, "http_401");
  d = expect_same(*table, in, "unknown error");
  EXPECT_EQ(d.kind, DecisionKind::kDefault);
  EXPECT_EQ(d.verb, kHold);
}

// Strings the small index cannot tell apart by its words: the same size and the same first and
// last 8 bytes (only memcmp of the middle decides), at sizes 17 and 40; sizes 16 and 8 (words
// cover everything); 1..3-byte strings; NUL bytes; "" as a dictionary value of a field without
// empty_means_absent, and a required field with empty_means_absent.
ir::CheckedPolicy colliding_policy() {
  ir::CheckedPolicy checked;
  ir::Policy& p = checked.policy;
  p.id = "colliding";
  p.revision = 1;
  p.fields = {
      string_field("s"),
      enum_field("e", {"abcdefgh-one-12345678", "abcdefgh-two-12345678", "a", "ab", "ba", ""}),
      string_field("r", false, true), int_field("n", 0, 0)};
  p.verbs = {verb("hold", ir::Effect::kNone, ""), verb("go", ir::Effect::kCreate, "")};
  p.default_verb = 0;
  p.default_reason = "none";
  ir::Table t;
  t.id = "t";
  t.key_fields = {0, 1};
  const std::vector<std::string> values = {
      "abcdefgh-one-12345678",
      "abcdefgh-two-12345678",
      std::string(12, 'q') + "middle-one" + std::string(18, 'z'),
      std::string(12, 'q') + "middle-two" + std::string(18, 'z'),
      "0123456789abcdef",
      "0123456789abcdefXyyyyyyyy",  // 25 bytes: byte 16 is neither in the head nor the tail
      "01234567",
      "a",
      "ab",
      "ba",
      "aab",
      "aba",
      std::string("a\0b", 3),
      std::string("\0", 1),
      "",
  };
  for (size_t i = 0; i < values.size(); ++i) {
    t.rows.push_back(row(t.id, {S(values[i]), std::nullopt}, static_cast<uint32_t>(i % 2)));
  }
  t.rows.push_back(row(t.id, {std::nullopt, S("abcdefgh-two-12345678")}, 1));
  p.rules.push_back(t);
  return checked;
}

TEST(DecideIndex, CollidingWordsShortStringsAndEmptyValuesAgree) {
  auto table = load_lowered(colliding_policy());
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  EXPECT_EQ(s.small_dict_fields, 2u);
  EXPECT_EQ(s.unhashed_fields, 1u);
  EXPECT_EQ(s.dense_tables, 1u);
  std::vector<Setter> strings;
  for (const std::string& v : {std::string("abcdefgh-one-12345678"),
                               std::string("abcdefgh-two-12345678"),
                               std::string("abcdefgh-six-12345678"),
                               std::string("abcdefgh-one-1234567"),
                               std::string(12, 'q') + "middle-one" + std::string(18, 'z'),
                               std::string(12, 'q') + "middle-two" + std::string(18, 'z'),
                               std::string(12, 'q') + "middle-six" + std::string(18, 'z'),
                               std::string("0123456789abcdef"),
                               std::string("0123456789abcdeF"),
                               std::string("01234567"),
                               std::string("01234568"),
                               std::string("a"),
                               std::string("b"),
                               std::string("ab"),
                               std::string("ba"),
                               std::string("bb"),
                               std::string("aab"),
                               std::string("aba"),
                               std::string("abb"),
                               std::string("a\0b", 3),
                               std::string("a\0c", 3),
                               std::string("\0", 1),
                               std::string("\0\0", 2),
                               std::string("")}) {
    strings.push_back(str(v));
  }
  std::vector<Setter> s_values = strings, e_values = strings;
  s_values.push_back(kUnset);
  e_values.push_back(kNull);
  const std::vector<Setter> r_values = {str(""), str("x"), kUnset};
  const std::vector<Setter> n_values = {num(-1), num(0), num(1)};
  compare_all(*table, {s_values, e_values, r_values, n_values});

  // Spot checks with the expected answers, not only agreement.
  Input in(*table);
  in.set_string(0, "abcdefgh-six-12345678");
  in.set_string(1, "abcdefgh-six-12345678");
  in.set_string(2, "x");
  in.set_int(3, 0);
  Decision d = expect_same(*table, in, "unknown enum value with colliding words");
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(d.invalid_field, 1u);
  in.set_string(1, "");  // an enum value, not absent
  d = expect_same(*table, in, "unknown string with colliding words");
  EXPECT_EQ(d.kind, DecisionKind::kDefault);
  const std::string middle_two = std::string(12, 'q') + "middle-two" + std::string(18, 'z');
  in.set_string(0, middle_two);  // the Input keeps a view: the string must outlive decide()
  d = expect_same(*table, in, "long string, the middle decides");
  EXPECT_EQ(d.kind, DecisionKind::kRule);
  EXPECT_EQ(d.rule, 3u);
  in.set_string(0, "");  // "" is an ordinary value of s
  d = expect_same(*table, in, "empty string as a dictionary value");
  EXPECT_EQ(d.kind, DecisionKind::kRule);
  EXPECT_EQ(d.rule, 14u);
  in.set_string(2, "");  // required and empty_means_absent: invalid
  d = expect_same(*table, in, "required field, empty");
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(d.invalid_field, 2u);
}

TEST(DecideIndex, WildcardSpecificityAgreesOnEveryCombination) {
  auto table = load_lowered(small_policy());
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(decide_index_stats(*table).dense_tables, 1u);
  std::vector<Setter> tiers = {kUnset, kNull, str("1")};
  for (int64_t v = -1; v <= 10; ++v) tiers.push_back(num(v));
  compare_all(*table,
              {{kUnset, kNull, kBad, str("eu"), str("us"), str("ap"), str("EU"), str(""), num(0)},
               tiers,
               {kUnset, kNull, flag(true), flag(false), str("true")},
               {kUnset, kNull, str("acme"), str("acm"), str("acmf"), str(std::string("evil\0", 5)),
                str("evil"), str("bad"), str("")}});
  // [us, 2, acme] is the only three-key row: it wins over [*, *, acme] (a lower row).
  Input in(*table);
  in.set_string(kRegion, "us");
  in.set_int(kTier, 2);
  in.set_string(kPartner, "acme");
  Decision d = expect_same(*table, in, "most specific");
  EXPECT_EQ(table->rule_id(d.rule), "routes:us/2/acme");
  // [eu, 1, acme]: two rows of two keys match, [eu, 1, *] (row 0) and [eu, *, acme] (row 2):
  // the lower wins.
  in.set_string(kRegion, "eu");
  in.set_int(kTier, 1);
  d = expect_same(*table, in, "lowest row of the group");
  EXPECT_EQ(table->rule_id(d.rule), "routes:eu/1/*");
}

// Int fields with more cuts than the linear scan takes (binary search) and with a few, and their
// bounds, on every value around each cut and bound.
TEST(DecideIndex, IntsAtBoundsAndCutsAgree) {
  ir::CheckedPolicy checked;
  ir::Policy& p = checked.policy;
  p.id = "ints";
  p.revision = 1;
  p.fields = {int_field("many", -5, 100), int_field("few", std::nullopt, 7, true),
              int_field("free", std::nullopt, std::nullopt)};
  p.verbs = {verb("hold", ir::Effect::kNone, ""), verb("go", ir::Effect::kCreate, "")};
  p.default_verb = 0;
  p.default_reason = "none";
  for (int64_t c = 1; c <= 12; ++c) {
    p.rules.push_back(guard("many_lt_" + std::to_string(c * 3),
                            {cond(0, ir::Op::kLt, {I(c * 3)}), cond(2, ir::Op::kGe, {I(c)})},
                            static_cast<uint32_t>(c % 2), "r"));
  }
  p.rules.push_back(guard("few_ge_2", {cond(1, ir::Op::kGe, {I(2)})}, 1, "r"));
  p.rules.push_back(guard("few_absent", {cond(1, ir::Op::kAbsent)}, 1, "r"));
  auto table = load_lowered(checked);
  ASSERT_NE(table, nullptr);
  std::vector<Setter> many = {num(kMin), num(kMax), num(-6), num(-5), num(100), num(101)};
  for (int64_t c = 3; c <= 36; ++c) many.push_back(num(c));
  std::vector<Setter> few = {kUnset, kNull, num(kMin), num(1), num(2), num(3), num(7), num(8)};
  std::vector<Setter> free = {num(kMin), num(kMax), num(0), str("1")};
  for (int64_t c = 1; c <= 13; ++c) free.push_back(num(c));
  compare_all(*table, {many, few, free});
}

// Two keys of 300 values each, 300 rows on the diagonal: 302 x 302 cells is over the dense cap
// (max(2^16, 4 x rows)), so the table keeps the hash probes; decisions still agree.
TEST(DecideIndex, TableOverTheDenseCapKeepsTheProbesAndAgrees) {
  ir::CheckedPolicy checked = reference_gate();
  ir::Table& t = std::get<ir::Table>(checked.policy.rules[4]);
  t.rows.clear();
  for (int i = 0; i < 300; ++i) {
    t.rows.push_back(row(t.id, {S("t" + std::to_string(i)), S("e" + std::to_string(i))},
                         i % 2 ? kNever : kReplayOnce));
  }
  checked.source.rows.clear();
  auto table = load_lowered(checked);
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  EXPECT_EQ(s.dense_tables, 0u);
  EXPECT_EQ(s.probed_tables, 1u);
  EXPECT_EQ(s.small_dict_fields, 2u);
  std::mt19937 rng(20261130);
  Input in(*table);
  for (int i = 0; i < 20000; ++i) {
    const std::string topic = "t" + std::to_string(rng() % 320);
    // Half the letters on the diagonal (a row), half anywhere (mostly no row).
    const std::string error = rng() % 2 ? "e" + topic.substr(1) : "e" + std::to_string(rng() % 320);
    in.clear();
    in.set_string(kTopic, topic);
    in.set_string(kErrorClass, error);
    in.set_int(kAttempts, static_cast<int64_t>(rng() % 5) - 1);
    in.set_string(kIdempotencyKey, rng() % 8 ? "k" : "");
    in.set_bool(kAlreadyCommitted, rng() % 8 == 0);
    expect_same(*table, in, topic + "/" + error);
  }
  in.clear();
  in.set_string(kTopic, "t17");
  in.set_string(kErrorClass, "e17");
  in.set_int(kAttempts, 0);
  in.set_string(kIdempotencyKey, "k");
  in.set_bool(kAlreadyCommitted, false);
  const Decision d = expect_same(*table, in, "t17/e17");
  EXPECT_EQ(table->rule_id(d.rule), "known_failures:t17/e17");
}

// An Input made for a table with fewer fields: the missing slots are unset on both paths.
TEST(DecideIndex, ShorterInputAgrees) {
  auto gate = load_lowered(reference_gate());
  auto small = load_lowered(small_policy());
  ASSERT_NE(gate, nullptr);
  ASSERT_NE(small, nullptr);
  Input in(*small);  // 4 slots; the gate has 6, replays (optional) among the missing
  in.set_string(0, "payment.capture");
  in.set_string(1, "timeout");
  in.set_int(2, 1);
  in.set_string(3, "k");
  const Decision d = expect_same(*gate, in, "short input");
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(d.invalid_field, 4u);  // already_committed is required and missing
}

// The fast path defers the lookup of topic and error_class (no guard reads them) but validates
// every field before any rule: a guard that holds never hides a bad field, earlier or later, and
// the first bad field is the one reported.
TEST(DecideIndex, LazyKeysStillFailClosedBeforeAGuardDecides) {
  auto table = load_lowered(reference_gate());
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(decide_index_stats(*table).fast_path);
  Input in(*table);
  auto letter = [&] {
    in.clear();
    in.set_string(kTopic, "payment.capture");
    in.set_string(kErrorClass, "timeout");
    in.set_int(kAttempts, 1);
    in.set_string(kIdempotencyKey, "");  // no_idempotency_key holds
    in.set_bool(kAlreadyCommitted, false);
  };
  letter();
  Decision d = expect_same(*table, in, "guard");
  EXPECT_EQ(table->rule_id(d.rule), "no_idempotency_key");
  // A later field invalid: the invalid-input default, naming it, not the guard.
  letter();
  in.set_int(kReplays, -1);
  d = expect_same(*table, in, "guard, replays below its bound");
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(d.invalid_field, static_cast<uint32_t>(kReplays));
  EXPECT_EQ(d.verb, kHold);
  letter();
  in.set_string(kAlreadyCommitted, "true");
  d = expect_same(*table, in, "guard, committed of the wrong type");
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(d.invalid_field, static_cast<uint32_t>(kAlreadyCommitted));
  // A lazy key itself invalid (wrong type, unset, unreadable) while a guard holds: it is
  // reported, and being first, before a later bad field.
  const Setter unset = [](Input& input, uint32_t f) { input.set_unset(f); };
  for (const Setter& bad : {num(1), unset, kNull, kBad}) {
    letter();
    bad(in, kErrorClass);
    in.set_int(kReplays, -1);
    d = expect_same(*table, in, "guard, bad error_class");
    EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
    EXPECT_EQ(d.invalid_field, static_cast<uint32_t>(kErrorClass));
  }
  // Valid lazy keys that are not in the dictionary, empty, or differ in one byte: the guard.
  for (const std::string& error : {std::string("no_such_error"), std::string(""),
                                   std::string("timeouT"), std::string(40, 'x')}) {
    letter();
    in.set_string(kErrorClass, error);
    d = expect_same(*table, in, "guard, unknown error_class");
    EXPECT_EQ(table->rule_id(d.rule), "no_idempotency_key");
  }
  // No guard: the lazy keys are looked up for the table.
  letter();
  in.set_string(kIdempotencyKey, "k");
  d = expect_same(*table, in, "table");
  EXPECT_EQ(table->rule_id(d.rule), "known_failures:payment.capture/timeout");
}

// An Input made for a table with more fields: the states past this table's fields (in the
// fast path's last 8-byte word) are ignored on both paths.
TEST(DecideIndex, LongerInputAgrees) {
  auto gate = load_lowered(reference_gate());
  auto big = load_lowered(gate_with_extra_fields(5));
  ASSERT_NE(gate, nullptr);
  ASSERT_NE(big, nullptr);
  ASSERT_EQ(big->field_count(), 11u);
  Input in(*big);
  for (const Setter& extra : {kUnset, kNull, kBad, num(-1), str("x"), flag(true)}) {
    in.clear();
    in.set_string(kTopic, "payment.capture");
    in.set_string(kErrorClass, "timeout");
    in.set_int(kAttempts, 1);
    in.set_string(kIdempotencyKey, "k");
    in.set_bool(kAlreadyCommitted, false);
    for (uint32_t f = 6; f < 11; ++f) extra(in, f);
    const Decision d = expect_same(*gate, in, "longer input");
    EXPECT_EQ(gate->rule_id(d.rule), "known_failures:payment.capture/timeout");
  }
}

// A policy with a derived field does not take the fast path (derived bools are computed after
// validation, on the ordered path); decisions agree.
TEST(DecideIndex, DerivedFieldsKeepTheOrderedPath) {
  ir::CheckedPolicy c;
  ir::Policy& p = c.policy;
  p.id = "derived";
  p.revision = 1;
  p.fields = {int_field("msg", 0, std::nullopt), int_field("rec", 0, std::nullopt),
              string_field("label"), bool_field("stale")};
  p.fields[3].derived = ir::Derivation{0, ir::Op::kLt, 1};
  p.verbs = {verb("hold", ir::Effect::kNone, ""), verb("go", ir::Effect::kCreate, "")};
  p.default_verb = 0;
  p.default_reason = "none";
  p.rules.push_back(guard("stale", {cond(3, ir::Op::kEq, {ir::Value::Bool(true)})}, 1, "r"));
  p.rules.push_back(guard("x", {cond(2, ir::Op::kEq, {S("x")})}, 1, "r"));
  auto table = load_lowered(c);
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  EXPECT_TRUE(s.guard_masks);
  EXPECT_FALSE(s.fast_path);
  compare_all(*table, {{num(-1), num(0), num(5), kUnset},
                       {num(0), num(5), num(9), str("1")},
                       {str("x"), str("y"), str(""), kNull},
                       {flag(true), kUnset, kBad}});
}

// A dictionary too big for the seed search (over 4096 values) is not perfect: its lookups probe
// past a mismatching home slot. Decisions agree on values in and out of it.
TEST(DecideIndex, ImperfectDictionaryAgrees) {
  ir::CheckedPolicy checked = reference_gate();
  ir::Table& t = std::get<ir::Table>(checked.policy.rules[4]);
  t.rows.clear();
  for (int i = 0; i < 5000; ++i) {
    t.rows.push_back(row(t.id, {S("topic.number." + std::to_string(i)), std::nullopt},
                         i % 2 ? kNever : kReplayOnce));
  }
  checked.source.rows.clear();
  auto table = load_lowered(checked);
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  EXPECT_TRUE(s.fast_path);
  EXPECT_EQ(s.small_dict_fields, 1u);  // error_class has no values left
  EXPECT_EQ(s.perfect_fields, 0u);
  std::mt19937 rng(20261130);
  Input in(*table);
  for (int i = 0; i < 20000; ++i) {
    const uint32_t number = rng() % 5200;  // 5000 and over: not in the dictionary
    const std::string topic = "topic.number." + std::to_string(number);
    in.clear();
    in.set_string(kTopic, topic);
    in.set_string(kErrorClass, "e");
    in.set_int(kAttempts, 1);
    in.set_string(kIdempotencyKey, "k");
    in.set_bool(kAlreadyCommitted, false);
    const Decision d = expect_same(*table, in, topic);
    EXPECT_EQ(d.kind == DecisionKind::kRule, number < 5000) << topic;
  }
}

// The kernel (DecideIndex::Kernel): every field kind it takes, through its one operation per
// field and its early table read, on every combination of edge values: ints at INT64_MIN and
// INT64_MAX (a cut at INT64_MAX, where the kernel's padding cuts also count), an unbounded int
// (the whole range), bounds, a required string whose empty value is invalid (a lazy table key),
// an optional one whose empty value is absent (a guard reads it), an empty string that is a
// dictionary value, an int table key, a second table (looked up after the masks), guards before,
// between and after the tables, and wrong states, unset, null and unreadable slots everywhere.
ir::CheckedPolicy kernel_policy(int extra_cut) {
  ir::CheckedPolicy c;
  ir::Policy& p = c.policy;
  p.id = "kernel";
  p.revision = 1;
  // level: cuts 0, 10, 100 (+ extra_cut), INT64_MAX (+ 1000 when extra_cut); no bounds.
  p.fields = {string_field("code", false, true),
              int_field("level", std::nullopt, std::nullopt),
              bool_field("flag", true),
              string_field("note", true, true),
              string_field("zone", true),
              int_field("size", 0, std::nullopt)};  // cuts 0 (its min), 1, 2, 3
  p.verbs = {verb("never", ir::Effect::kNone, ""), verb("go", ir::Effect::kCreate, ""),
             verb("hold", ir::Effect::kNone, "")};
  p.default_verb = 2;
  p.default_reason = "none";
  p.rules.push_back(guard("top", {cond(1, ir::Op::kGe, {I(kMax)})}, 1, "r"));
  ir::Table t1;
  t1.id = "codes";
  t1.key_fields = {0, 4};
  t1.rows.push_back(row(t1.id, {S("A"), std::nullopt}, 1));
  t1.rows.push_back(row(t1.id, {S("A"), S("z1")}, 0));
  t1.rows.push_back(row(t1.id, {S("B"), S("z2")}, 1));
  t1.rows.push_back(row(t1.id, {S("C"), S("")}, 1));
  t1.rows.push_back(row(t1.id, {std::nullopt, S("z2")}, 0));
  p.rules.push_back(t1);
  p.rules.push_back(guard("flagged", {cond(2, ir::Op::kEq, {B(true)})}, 0, "r"));
  p.rules.push_back(guard("low", {cond(3, ir::Op::kAbsent), cond(1, ir::Op::kLt, {I(0)})}, 2, "r"));
  ir::Table t2;
  t2.id = "sizes";
  t2.key_fields = {5, 0};
  t2.rows.push_back(row(t2.id, {I(1), S("A")}, 0));
  t2.rows.push_back(row(t2.id, {I(2), std::nullopt}, 1));
  p.rules.push_back(t2);
  p.rules.push_back(guard("mid", {cond(1, ir::Op::kGe, {I(10)})}, 1, "r"));
  p.rules.push_back(guard("high", {cond(1, ir::Op::kGe, {I(100 + extra_cut)})}, 0, "r"));
  if (extra_cut != 0) p.rules.push_back(guard("higher", {cond(1, ir::Op::kGe, {I(1000)})}, 0, "r"));
  return c;
}

TEST(DecideIndex, KernelAgreesOnEveryEdgeCombination) {
  auto table = load_lowered(kernel_policy(0));
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  ASSERT_TRUE(s.fast_path);
  ASSERT_TRUE(s.kernel);
  ASSERT_TRUE(s.kernel_table);   // codes: two lazy string keys, a dense matrix
  EXPECT_FALSE(s.kernel_pair);   // wildcard rows: "other" and absent values have rows
  EXPECT_EQ(s.kernel_cuts, 4u);  // level, unbounded: 0, 10, 100, INT64_MAX
  EXPECT_EQ(s.lazy_fields, 2u);  // code and zone
  EXPECT_EQ(s.dense_tables, 2u);
  const size_t n = compare_all(
      *table, {{str("A"), str("B"), str("C"), str(""), str("Z"), kUnset, kNull, kBad, num(1)},
               {num(kMin), num(-1), num(0), num(9), num(10), num(99), num(100), num(kMax - 1),
                num(kMax), kUnset, str("1"), flag(true)},
               {flag(true), flag(false), kUnset, kNull, kBad, num(1)},
               {str(""), str("n"), kUnset, flag(true)},
               {str("z1"), str("z2"), str(""), str("zz"), kUnset, kBad},
               {num(-1), num(0), num(1), num(2), num(9), num(10), kUnset, kNull}});
  EXPECT_EQ(n, 9u * 12u * 6u * 4u * 6u * 8u);

  // Spot checks of each way out of the kernel.
  Input in(*table);
  auto letter = [&](int64_t level) {
    in.clear();
    in.set_string(0, "A");
    in.set_int(1, level);
    in.set_string(3, "n");
    in.set_string(4, "z1");
    in.set_int(5, 1);
  };
  letter(kMax);
  EXPECT_EQ(table->rule_id(expect_same(*table, in, "top").rule), "top");
  letter(5);
  EXPECT_EQ(table->rule_id(expect_same(*table, in, "codes").rule), "codes:A/z1");
  letter(5);
  in.set_string(0, "B");
  in.set_int(5, 2);
  EXPECT_EQ(table->rule_id(expect_same(*table, in, "sizes").rule), "sizes:2/*");
  letter(50);
  in.set_string(0, "Z");
  in.set_int(5, 3);
  EXPECT_EQ(table->rule_id(expect_same(*table, in, "mid").rule), "mid");
  letter(5);
  in.set_string(0, "Z");
  in.set_int(5, 3);
  Decision d = expect_same(*table, in, "default");
  EXPECT_EQ(d.kind, DecisionKind::kDefault);
  EXPECT_EQ(d.verb, 2u);
  // An empty code is invalid (required, empty counts as absent), even where a guard would decide
  // and a later field is bad too.
  letter(kMax);
  in.set_string(0, "");
  in.set_int(5, 10);
  d = expect_same(*table, in, "empty code");
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(d.invalid_field, 0u);
}

// Optional ints whose bounds leave out 0 (the value an absent slot holds): absent is valid, 0
// and every other value out of bounds is invalid input, in the kernel as in the general path.
TEST(DecideIndex, KernelOptionalIntsBoundedAwayFromZeroAgree) {
  ir::CheckedPolicy c;
  ir::Policy& p = c.policy;
  p.id = "bounded";
  p.revision = 1;
  p.fields = {int_field("above", 5, 9, true), int_field("below", -9, -5, true),
              int_field("plain", 0, 3)};
  p.verbs = {verb("never", ir::Effect::kNone, ""), verb("go", ir::Effect::kCreate, ""),
             verb("hold", ir::Effect::kNone, "")};
  p.default_verb = 2;
  p.default_reason = "none";
  p.rules.push_back(guard("high", {cond(0, ir::Op::kGe, {I(7)})}, 1, "r"));
  p.rules.push_back(guard("low", {cond(1, ir::Op::kLt, {I(-6)})}, 0, "r"));
  p.rules.push_back(guard("none", {cond(0, ir::Op::kAbsent), cond(1, ir::Op::kAbsent)}, 0, "r"));
  auto table = load_lowered(c);
  ASSERT_NE(table, nullptr);
  ASSERT_TRUE(decide_index_stats(*table).kernel);
  const std::vector<Setter> above = {num(kMin), num(-1), num(0), num(4),  num(5),
                                     num(6),    num(7),  num(9), num(10), num(kMax),
                                     kUnset,    kNull,   kBad,   str("")};
  const std::vector<Setter> below = {num(kMin), num(-10),  num(-9), num(-6), num(-5), num(-4),
                                     num(0),    num(kMax), kUnset,  kNull,   kBad,    flag(true)};
  EXPECT_EQ(compare_all(*table, {above, below, {num(0), num(3), num(4), kUnset}}), 14u * 12u * 4u);
  Input in(*table);
  in.set_int(2, 1);
  Decision d = expect_same(*table, in, "both absent");
  EXPECT_EQ(table->rule_id(d.rule), "none");
  in.set_int(0, 0);  // 0 is below `above`'s bounds
  d = expect_same(*table, in, "above 0");
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(d.invalid_field, 0u);
  in.set_int(0, 6);
  in.set_int(1, 0);  // 0 is above `below`'s bounds
  d = expect_same(*table, in, "below 0");
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(d.invalid_field, 1u);
  in.set_int(1, -5);
  d = expect_same(*table, in, "in bounds");
  EXPECT_EQ(d.kind, DecisionKind::kDefault);
}

// Past the kernel's limits (an int with five cuts; more than eight fields): the fast path
// without the kernel, with the same decisions.
TEST(DecideIndex, PoliciesPastTheKernelKeepTheFastPath) {
  auto table = load_lowered(kernel_policy(1));  // level: cuts 0, 10, 101, 1000, INT64_MAX
  ASSERT_NE(table, nullptr);
  DecideIndexStats s = decide_index_stats(*table);
  EXPECT_TRUE(s.fast_path);
  EXPECT_FALSE(s.kernel);
  compare_all(*table, {{str("A"), str("Z"), str(""), kUnset},
                       {num(kMin), num(-1), num(0), num(10), num(101), num(1000), num(kMax)},
                       {flag(true), kUnset},
                       {str(""), str("n")},
                       {str("z1"), str("z2")},
                       {num(1), num(2), kUnset}});
  auto big = load_lowered(gate_with_extra_fields(3));
  ASSERT_NE(big, nullptr);
  s = decide_index_stats(*big);
  EXPECT_TRUE(s.fast_path);
  EXPECT_FALSE(s.kernel);  // nine fields
  auto gate = load_lowered(reference_gate());
  ASSERT_NE(gate, nullptr);
  EXPECT_TRUE(decide_index_stats(*gate).kernel);
  EXPECT_TRUE(decide_index_stats(*gate).kernel_table);
  EXPECT_TRUE(decide_index_stats(*gate).kernel_pair);  // nine (topic, error_class) pairs
}

// The shipped gate's ints have the cuts 0 (their min, left out: every valid value is past it)
// and 3 or 1: the kernel compares one cut per field. A second attempts threshold makes it two;
// decisions agree at and around every cut and bound, absent, empty and wrong-state values.
TEST(DecideIndex, KernelCutWidthsAgree) {
  auto gate = load_lowered(reference_gate());
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(decide_index_stats(*gate).kernel_cuts, 1u);
  ir::CheckedPolicy two = reference_gate();
  two.policy.rules.insert(two.policy.rules.begin() + 2,
                          guard("many", {cond(kAttempts, ir::Op::kGe, {I(7)})}, kNever, "r"));
  two.source.rules.clear();
  two.source.conditions.clear();
  two.source.rows.clear();
  auto table = load_lowered(two);
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  EXPECT_TRUE(s.kernel);
  EXPECT_EQ(s.kernel_cuts, 2u);  // attempts: 0 (min, left out), 3, 7
  for (const Table* t : {gate.get(), table.get()}) {
    compare_all(*t, {{str("payment.capture"), str("mail.receipt"), str(""), kUnset},
                     {str("timeout"), str("smtp_421"), str("nope"), num(3)},
                     {num(kMin), num(-1), num(0), num(2), num(3), num(6), num(7), num(kMax), kNull},
                     {str("k"), str(""), kUnset, kNull, num(0)},
                     {flag(false), flag(true), kUnset, str("x")},
                     {kUnset, kNull, num(-1), num(0), num(1), num(kMax), flag(true)}});
  }
}

// The kernel table's pair index (DecideIndex::KernelTable::pair): one probe keyed by both key
// values. A policy of two lazy string keys with rows only at dictionary pairs gets it; the values
// are of every string_words() shape (1..3 bytes, 4..7, 8, 16, 17, and 24-byte values that differ
// only in their third word), rows on some pairs and not others, and a guard before and after the
// table. Decisions agree with the general path on every combination of those values, near misses
// (one byte off, a prefix, 25 bytes), the empty value, absent, unset, null, unreadable and
// wrong-type slots.
const std::vector<std::string>& pair_values() {
  static const std::vector<std::string> values = {
      "a",
      "ab",
      "ba",
      "aab",
      "aba",
      std::string("a\0b", 3),
      "abcd",
      "abce",
      "abcdefg",
      "01234567",
      "0123456789abcdef",
      "0123456789abcdefX",
      "AAAAAAAAmiddle01ZZZZZZZZ",  // 24 bytes: only the third word tells these two apart
      "AAAAAAAAmiddle02ZZZZZZZZ",
  };
  return values;
}

// Rows at (x, y) for x, y in pair_values() where (i + j) % 3 != 0, with `extra` appended.
ir::CheckedPolicy pair_policy(
    std::vector<std::pair<std::optional<std::string>, std::string>> extra) {
  ir::CheckedPolicy c;
  ir::Policy& p = c.policy;
  p.id = "pairs";
  p.revision = 1;
  p.fields = {string_field("x"), string_field("y", true, true), int_field("n", 0, 5),
              bool_field("flag", true)};
  p.verbs = {verb("never", ir::Effect::kNone, ""), verb("go", ir::Effect::kCreate, ""),
             verb("hold", ir::Effect::kNone, "")};
  p.default_verb = 2;
  p.default_reason = "none";
  p.rules.push_back(guard("high", {cond(2, ir::Op::kGe, {I(3)})}, 2, "r"));
  ir::Table t;
  t.id = "pairs";
  t.key_fields = {0, 1};
  const std::vector<std::string>& values = pair_values();
  for (size_t i = 0; i < values.size(); ++i) {
    for (size_t j = 0; j < 6; ++j) {
      if ((i + j) % 3 == 0) continue;
      t.rows.push_back(row(t.id, {S(values[i]), S(values[j])}, static_cast<uint32_t>((i * j) % 2)));
    }
  }
  for (const auto& [x, y] : extra) {
    t.rows.push_back(row(t.id, {x ? std::optional<ir::Value>(S(*x)) : std::nullopt, S(y)}, 1));
  }
  p.rules.push_back(t);
  p.rules.push_back(guard("flagged", {cond(3, ir::Op::kEq, {B(true)})}, 0, "r"));
  return c;
}

size_t compare_pairs(const Table& table) {
  std::vector<Setter> xs, ys;
  for (const std::string& v : pair_values()) {
    xs.push_back(str(v));
    ys.push_back(str(v));
  }
  for (const std::string& v :
       {std::string(""), std::string("b"), std::string("abcf"), std::string("0123456789abcdeX"),
        std::string("0123456789abcdefY"), std::string("AAAAAAAAmiddle03ZZZZZZZZ"),
        std::string("AAAAAAAAmiddle01ZZZZZZZZZ"), std::string(std::string("a\0c", 3)),
        std::string(40, 'q'), std::string("long enough to be over twenty-four bytes")}) {
    xs.push_back(str(v));
    ys.push_back(str(v));
  }
  for (const Setter& s : {kUnset, kNull, kBad, num(1)}) {
    xs.push_back(s);
    ys.push_back(s);
  }
  return compare_all(
      table, {xs, ys, {num(0), num(2), num(3), num(6), kUnset}, {flag(false), flag(true), kUnset}});
}

TEST(DecideIndex, KernelPairIndexAgrees) {
  auto table = load_lowered(pair_policy({}));
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  ASSERT_TRUE(s.kernel);
  ASSERT_TRUE(s.kernel_table);
  EXPECT_TRUE(s.kernel_pair);
  EXPECT_TRUE(s.kernel_pair_only);  // guards before and after the one table, picked branch-free
  EXPECT_EQ(compare_pairs(*table), 28u * 28u * 5u * 3u);

  // Spot checks with the expected answers: a row, a pair without a row (then the guard after the
  // table, else the default), and the two values that differ only in their third word.
  const std::vector<std::string>& values = pair_values();
  Input in(*table);
  in.set_string(0, values[12]);
  in.set_string(1, values[1]);  // (12 + 1) % 3 != 0: a row, verb (12 * 1) % 2 = 0
  in.set_int(2, 0);
  Decision d = expect_same(*table, in, "row");
  EXPECT_EQ(d.kind, DecisionKind::kRule);
  EXPECT_EQ(table->rule_id(d.rule), "pairs:" + values[12] + "/" + values[1]);
  in.set_string(0, values[13]);  // (13 + 1) % 3 != 0: its own row, verb (13 * 1) % 2 = 1
  d = expect_same(*table, in, "third word");
  EXPECT_EQ(table->rule_id(d.rule), "pairs:" + values[13] + "/" + values[1]);
  EXPECT_EQ(d.verb, 1u);
  in.set_string(1, values[2]);  // (13 + 2) % 3 == 0: no row
  d = expect_same(*table, in, "no row");
  EXPECT_EQ(d.kind, DecisionKind::kDefault);
  in.set_bool(3, true);
  d = expect_same(*table, in, "no row, the guard after the table");
  EXPECT_EQ(table->rule_id(d.rule), "flagged");

  // Values that differ from a pair's only in the third word: some land in that pair's home slot
  // (one in a few hundred), where only the comparison of every word and size tells them apart.
  in.set_bool(3, false);
  in.set_string(1, values[1]);
  for (int i = 0; i < 4096; ++i) {
    char middle[9];
    std::snprintf(middle, sizeof middle, "mid%05d", i);
    const std::string x = "AAAAAAAA" + std::string(middle) + "ZZZZZZZZ";
    in.set_string(0, x);
    d = expect_same(*table, in, x);
    EXPECT_EQ(d.kind, DecisionKind::kDefault) << x;  // "mid" and 5 digits: no pair's value
  }
}

// With a second table after the pair-indexed one, the kernel keeps its general pick (the second
// table is looked up out of line, from the atoms the ops stored): same decisions.
TEST(DecideIndex, KernelPairIndexWithASecondTableAgrees) {
  ir::CheckedPolicy c = pair_policy({});
  ir::Table second;
  second.id = "by_y";
  second.key_fields = {1};
  second.rows.push_back(row(second.id, {S(pair_values()[2])}, 1));
  second.rows.push_back(row(second.id, {std::nullopt}, 0));  // any y, absent included
  c.policy.rules.insert(c.policy.rules.end() - 1, second);
  auto table = load_lowered(c);
  ASSERT_NE(table, nullptr);
  const DecideIndexStats s = decide_index_stats(*table);
  ASSERT_TRUE(s.kernel_pair);
  EXPECT_FALSE(s.kernel_pair_only);
  EXPECT_EQ(compare_pairs(*table), 28u * 28u * 5u * 3u);
  Input in(*table);
  in.set_string(0, "no such x");
  in.set_string(1, pair_values()[2]);
  in.set_int(2, 0);
  const Decision d = expect_same(*table, in, "second table");
  EXPECT_EQ(table->rule_id(d.rule), "by_y:" + pair_values()[2]);
}

// A pair index is built only where a miss means "no row": not when a row has a wildcard (then
// "other" and absent values have rows), a value over kWordBytes (its words do not decide
// equality), or an empty value. Those tables keep the per-key lookups, with the same decisions.
TEST(DecideIndex, KernelPairIndexOnlyWhereAMissMeansNoRow) {
  const std::vector<std::vector<std::pair<std::optional<std::string>, std::string>>> extras = {
      {{std::nullopt, "b"}},
      {{"long enough to be over twenty-four bytes", "a"}},
      {{"", "a"}},
  };
  for (const auto& extra : extras) {
    auto table = load_lowered(pair_policy(extra));
    ASSERT_NE(table, nullptr);
    const DecideIndexStats s = decide_index_stats(*table);
    ASSERT_TRUE(s.kernel_table);
    EXPECT_FALSE(s.kernel_pair);
    compare_pairs(*table);
  }
}

}  // namespace
}  // namespace replaygate
