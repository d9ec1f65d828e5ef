// Lifting a table back into a policy (compiler/lift.h): the shipped policy lifts to its own rules,
// and tables that no checked policy lowers to fail with a clear error instead of a wrong lift.
#include "compiler/lift.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "tests/compiler/analysis_builder.h"
#include "tests/support/paths.h"

namespace replaygate {
namespace {

using testing::kStar;
using testing::PolicyBuilder;

std::unique_ptr<Table> load(const ir::CheckedPolicy& policy) {
  const std::vector<uint8_t> bytes = lower(policy);
  LoadStatus status;
  std::unique_ptr<Table> table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  EXPECT_NE(table, nullptr) << status.message;
  return table;
}

TEST(LiftTest, ShippedPolicyLiftsToItsOwnRules) {
  const LoadedPolicy loaded =
      load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml");
  ASSERT_TRUE(loaded.policy);
  const std::unique_ptr<Table> table = load(*loaded.policy);
  ASSERT_NE(table, nullptr);
  const LiftResult lifted = lift(*table);
  ASSERT_TRUE(lifted.policy) << lifted.error;
  EXPECT_EQ(lifted.error, "");
  const ir::Policy& original = loaded.policy->policy;
  const ir::Policy& policy = lifted.policy->policy;
  EXPECT_EQ(policy.id, original.id);
  EXPECT_EQ(policy.revision, original.revision);
  EXPECT_EQ(policy.description, original.description);
  EXPECT_EQ(policy.verbs, original.verbs);
  EXPECT_EQ(policy.default_verb, original.default_verb);
  EXPECT_EQ(policy.default_reason, original.default_reason);
  // Every rule comes back exactly (the shipped rows all have reasons; ids are derived or given).
  EXPECT_EQ(policy.rules, original.rules);
  // The constant a condition was written with, recovered from the stored operand.
  EXPECT_EQ(policy.constants, (std::vector<ir::Constant>{{"max_attempts", 3}}));
  const auto& exhausted = std::get<ir::Guard>(policy.rules[2]);
  EXPECT_EQ(exhausted.conditions[0].constant, "max_attempts");
  // Fields keep everything but their descriptions; invariants are not in a table.
  ASSERT_EQ(policy.fields.size(), original.fields.size());
  for (size_t f = 0; f < policy.fields.size(); ++f) {
    ir::Field expected = original.fields[f];
    expected.description.clear();
    expected.domain.clear();
    EXPECT_EQ(policy.fields[f], expected) << expected.name;
  }
  EXPECT_TRUE(policy.invariants.empty());
  // Provenance: the source lines of every rule and row, the base name and digest.
  const ir::SourceMap& src = lifted.policy->source;
  EXPECT_EQ(src.rules[2].line, loaded.policy->source.rules[2].line);
  EXPECT_EQ(src.rows[4][3].line, loaded.policy->source.rows[4][3].line);
  EXPECT_EQ(lifted.policy->source_base_name, "replay_gate.yaml");
  EXPECT_EQ(lifted.policy->source_digest, loaded.policy->source_digest);
}

// Wildcards, derived reasons, int keys, enum and bool conditions, in/not_in over strings.
TEST(LiftTest, RowsAndValueConditionsComeBack) {
  PolicyBuilder b;
  b.string_field("topic").int_field("code", 0, 999).enum_field("tier", {"gold", "free"});
  b.bool_field("urgent", true).string_field("key", true, true);
  b.guard("g1", {b.cond("topic", ir::Op::kNotIn, {"a", "b"}), b.cond("key", ir::Op::kPresent)},
          "never", 10);
  b.guard("g2", {b.cond("tier", ir::Op::kNe, {"gold"}), b.cond("urgent", ir::Op::kEq, {true})},
          "hold", 20);
  b.guard("g3", {b.cond("code", ir::Op::kIn, {5, 7}), b.cond("key", ir::Op::kAbsent)}, "hold", 25);
  b.table("t", {"topic", "code"}, 30)
      .row({"a", 500}, "replay_once", 31)
      .row({"a", kStar}, "never", 32)
      .row({kStar, 404}, "hold", 33);
  const std::unique_ptr<Table> table = load(b.get());
  ASSERT_NE(table, nullptr);
  const LiftResult lifted = lift(*table);
  ASSERT_TRUE(lifted.policy) << lifted.error;
  EXPECT_EQ(lifted.policy->policy.rules, b.get().policy.rules);
  EXPECT_EQ(lifted.policy->source.rows[3][2].line, 33u);
  EXPECT_EQ(lifted.policy->source.rules[1].line, 20u);
}

// A derived bool (issue 5) comes back with its operands and operator, and guards on it too.
TEST(LiftTest, DerivedFieldsComeBack) {
  PolicyBuilder b;
  b.int_field("message_revision", 0).int_field("record_revision", 0).bool_field("stale");
  b.mutable_policy().policy.fields[2].derived = ir::Derivation{0, ir::Op::kLt, 1};
  b.guard("stale_message", {b.cond("stale", ir::Op::kEq, {true})}, "never", 10);
  b.guard("young", {b.cond("record_revision", ir::Op::kLe, {4}, "young_max")}, "hold", 20);
  b.mutable_policy().policy.constants.push_back({"young_max", 4});
  const std::unique_ptr<Table> table = load(b.get());
  ASSERT_NE(table, nullptr);
  const LiftResult lifted = lift(*table);
  ASSERT_TRUE(lifted.policy) << lifted.error;
  EXPECT_EQ(lifted.policy->policy.fields, b.get().policy.fields);
  EXPECT_EQ(lifted.policy->policy.rules, b.get().policy.rules);
  EXPECT_EQ(lifted.policy->policy.constants, b.get().policy.constants);
}

// check() rejects `absent` on a required field; a table lowered from such an IR must not lift.
TEST(LiftTest, AbsentOnARequiredFieldIsAnError) {
  PolicyBuilder b;
  b.string_field("topic");
  b.guard("gone", {b.cond("topic", ir::Op::kAbsent)}, "never", 10);
  const std::unique_ptr<Table> table = load(b.get());
  ASSERT_NE(table, nullptr);
  const LiftResult lifted = lift(*table);
  EXPECT_FALSE(lifted.policy);
  EXPECT_EQ(lifted.error, "table of policy 'test' (checksum " + table->checksum_hex() +
                              ") cannot be lifted exactly: guard 'gone' condition 1: absent on "
                              "required field 'topic'");
}

// check() rejects `lt` on a string field; lowered anyway, its atoms are not an int threshold.
TEST(LiftTest, OrderingOnAStringIsAnError) {
  PolicyBuilder b;
  b.string_field("topic");
  b.guard("odd", {b.cond("topic", ir::Op::kLt, {"m"})}, "never", 10);
  const std::unique_ptr<Table> table = load(b.get());
  ASSERT_NE(table, nullptr);
  const LiftResult lifted = lift(*table);
  EXPECT_FALSE(lifted.policy);
  EXPECT_EQ(lifted.error, "table of policy 'test' (checksum " + table->checksum_hex() +
                              ") cannot be lifted exactly: guard 'odd' condition 1: lt on non-int "
                              "field 'topic'");
}

}  // namespace
}  // namespace replaygate
