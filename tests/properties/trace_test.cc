// Properties of the explanation walks: runtime/trace.h's decision equals decide(), and
// compiler/explain.h's validation and condition verdicts agree with interpret(), on random
// policies and letters and on the shipped policy.
#include "runtime/trace.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <optional>
#include <variant>

#include "compiler/compile.h"
#include "compiler/explain.h"
#include "properties/policy_gen.h"
#include "tests/support/paths.h"

namespace replaygate {
namespace {

using testing::build_table;
using testing::fill_input;

void check_trace(const ir::CheckedPolicy& checked, const Table& table, const Letter& letter) {
  Input input(table);
  fill_input(letter, &input);
  const Decision d = table.decide(input);
  const Trace t = trace(table, input);
  RC_ASSERT(t.decision.verb == d.verb);
  RC_ASSERT(t.decision.kind == d.kind);
  RC_ASSERT(t.decision.rule == d.rule);
  RC_ASSERT(t.decision.invalid_field == d.invalid_field);
  if (d.kind == DecisionKind::kInvalidInput) {
    RC_ASSERT(t.rules.empty());
    RC_ASSERT(!t.fields.back().valid);
    RC_ASSERT(!t.fields.back().problem.empty());
  } else {
    RC_ASSERT(t.fields.size() == table.field_count());
    // Every rule before the last traced one did not match; the last matched iff a rule decided.
    for (size_t i = 0; i + 1 < t.rules.size(); ++i) RC_ASSERT(!t.rules[i].matched);
    if (d.kind == DecisionKind::kRule) RC_ASSERT(t.rules.back().matched);
  }

  // The IR walk used by `explain --policy`: same validation, same deciding rule.
  const ir::Policy& policy = checked.policy;
  const InterpretResult oracle = interpret(policy, letter);
  const ValidatedLetter valid = validate_letter(policy, letter);
  RC_ASSERT(valid.valid == (oracle.kind != InterpretKind::kInvalidInput));
  if (!valid.valid) {
    RC_ASSERT(valid.invalid_field == oracle.invalid_field);
    return;
  }
  uint32_t base = 0;
  std::optional<uint32_t> decided;
  for (const ir::Rule& rule : policy.rules) {
    if (const auto* g = std::get_if<ir::Guard>(&rule)) {
      if (conditions_hold(policy, g->conditions, valid.values)) {
        decided = base;
        break;
      }
      ++base;
      continue;
    }
    const auto& table_rule = std::get<ir::Table>(rule);
    std::optional<uint32_t> best;
    size_t best_concrete = 0;
    for (uint32_t r = 0; r < table_rule.rows.size(); ++r) {
      if (!row_matches(policy, table_rule, table_rule.rows[r], valid.values)) continue;
      size_t concrete = 0;
      for (const auto& k : table_rule.rows[r].keys) concrete += k ? 1 : 0;
      if (!best || concrete > best_concrete) {
        best = r;
        best_concrete = concrete;
      }
    }
    if (best) {
      decided = base + *best;
      break;
    }
    base += static_cast<uint32_t>(table_rule.rows.size());
  }
  RC_ASSERT(decided.has_value() == (oracle.kind == InterpretKind::kRule));
  if (decided) RC_ASSERT(*decided == oracle.rule);
}

RC_GTEST_PROP(Trace, AgreesWithDecideOnRandomPolicies, ()) {
  testing::with_shrink_budget([] {
    const ir::CheckedPolicy checked = *testing::gen_policy();
    const testing::BuiltTable built = build_table(checked);
    RC_ASSERT(built.table != nullptr);
    for (int i = 0; i < 20; ++i) {
      const Letter letter = *testing::gen_letter(checked.policy);
      check_trace(checked, *built.table, letter);
    }
  });
}

RC_GTEST_PROP(Trace, AgreesWithDecideOnTheShippedPolicy, ()) {
  static const LoadedPolicy loaded =
      load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml");
  RC_ASSERT(loaded.policy.has_value());
  static const testing::BuiltTable built = build_table(*loaded.policy);
  RC_ASSERT(built.table != nullptr);
  const Letter letter = *testing::gen_letter(loaded.policy->policy);
  check_trace(*loaded.policy, *built.table, letter);
}

// The recovery policy has a derived input (`stale`): trace() computes it as decide() does and
// ignores whatever the letter says for it.
RC_GTEST_PROP(Trace, AgreesWithDecideOnTheRecoveryPolicy, ()) {
  static const LoadedPolicy loaded =
      load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/generation_recovery.yaml");
  RC_ASSERT(loaded.policy.has_value());
  static const testing::BuiltTable built = build_table(*loaded.policy);
  RC_ASSERT(built.table != nullptr);
  const Letter letter = *testing::gen_letter(loaded.policy->policy);
  check_trace(*loaded.policy, *built.table, letter);
}

TEST(Trace, DerivedInputIsComputedNotRead) {
  const LoadedPolicy loaded =
      load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/generation_recovery.yaml");
  ASSERT_TRUE(loaded.policy.has_value());
  const testing::BuiltTable built = build_table(*loaded.policy);
  ASSERT_NE(built.table, nullptr);
  const Table& table = *built.table;
  const uint32_t stale = table.field_index("stale");
  Input input(table);
  input.set_string(table.field_index("phase"), "accepted");
  input.set_int(table.field_index("message_revision"), 1);
  input.set_int(table.field_index("record_revision"), 2);
  input.set_string(table.field_index("remote_job_id"), "j1");
  Trace t = trace(table, input);
  EXPECT_EQ(table.rule_name(t.decision), "stale_message");
  EXPECT_EQ(table.rule_name(t.decision), table.rule_name(table.decide(input)));
  EXPECT_TRUE(t.fields.at(stale).derived);
  EXPECT_EQ(t.fields.at(stale).atom_label, "true");
  ASSERT_EQ(t.rules.size(), 1u);
  EXPECT_TRUE(t.rules[0].conditions.at(0).holds);

  // A current message that claims to be stale: the claim is ignored.
  input.set_int(table.field_index("message_revision"), 2);
  input.set_bool(stale, true);
  t = trace(table, input);
  EXPECT_EQ(t.fields.at(stale).atom_label, "false");
  EXPECT_EQ(table.rule_name(t.decision), "known_remote_job");
  EXPECT_EQ(table.rule_name(t.decision), table.rule_name(table.decide(input)));
}

TEST(Trace, ShippedPolicyStepByStep) {
  const LoadedPolicy loaded =
      load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml");
  ASSERT_TRUE(loaded.policy.has_value());
  const testing::BuiltTable built = build_table(*loaded.policy);
  ASSERT_NE(built.table, nullptr);
  const Table& table = *built.table;
  Input input(table);
  input.set_string(table.field_index("topic"), "payment.capture");
  input.set_string(table.field_index("error_class"), "timeout");
  input.set_int(table.field_index("attempts"), 4);
  input.set_string(table.field_index("idempotency_key"), "k");
  input.set_bool(table.field_index("already_committed"), false);
  const Trace t = trace(table, input);
  ASSERT_EQ(t.rules.size(), 3u);
  EXPECT_EQ(t.rules[0].id, "no_idempotency_key");
  ASSERT_EQ(t.rules[0].conditions.size(), 1u);
  EXPECT_EQ(t.rules[0].conditions[0].op, "absent");
  EXPECT_FALSE(t.rules[0].conditions[0].holds);
  EXPECT_EQ(t.rules[2].id, "attempts_exhausted");
  EXPECT_TRUE(t.rules[2].matched);
  EXPECT_EQ(t.rules[2].conditions[0].operand, "max_attempts (3)");
  EXPECT_EQ(t.fields[2].atom_label, "[3, +inf)");
  EXPECT_EQ(table.rule_name(t.decision), "attempts_exhausted");

  input.set_int(table.field_index("attempts"), 1);
  const Trace hit = trace(table, input);
  ASSERT_EQ(hit.rules.size(), 5u);
  EXPECT_TRUE(hit.rules[4].is_table);
  EXPECT_EQ(hit.rules[4].id, "known_failures");
  EXPECT_EQ(hit.rules[4].key_labels,
            (std::vector<std::string>{"\"payment.capture\"", "\"timeout\""}));
  EXPECT_EQ(hit.rules[4].candidate_rows, 1u);
  EXPECT_EQ(table.rule_id(hit.rules[4].catalog), "known_failures:payment.capture/timeout");

  input.set_invalid(table.field_index("attempts"));
  const Trace bad = trace(table, input);
  EXPECT_EQ(bad.decision.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(bad.fields.size(), 3u);
  EXPECT_EQ(bad.fields[2].problem, "unreadable (wrong JSON type or out of int64 range)");
}

}  // namespace
}  // namespace replaygate
