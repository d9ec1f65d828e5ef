// Tests for the input-space partition: atoms, domains, condition and key atom sets, labels.
#include "compiler/analysis/partition.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tests/compiler/analysis_builder.h"

namespace replaygate {
namespace {

using ir::Op;
using testing::PolicyBuilder;
using Atoms = std::vector<uint32_t>;

std::vector<std::string> labels(const FieldPartition& field, const Atoms& atoms) {
  std::vector<std::string> out;
  for (uint32_t a : atoms) out.push_back(field.atom_label(a));
  return out;
}

TEST(PartitionTest, IntCutsFromBoundsAndThresholds) {
  PolicyBuilder b;
  b.int_field("attempts", 0);
  b.guard("g", {b.cond("attempts", Op::kGe, {3})}, "hold", 1);
  const Partition p = partition_policy(b.get().policy);
  const FieldPartition& f = p.fields[0];
  EXPECT_EQ(f.cuts, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(f.atom_count, 4u);
  EXPECT_EQ(labels(f, {0, 1, 2, 3}),
            (std::vector<std::string>{"absent", "[-inf, 0)", "[0, 3)", "[3, +inf)"}));
  EXPECT_EQ(f.domain(), (Atoms{2, 3}));
  EXPECT_EQ(condition_atoms(f, b.cond("attempts", Op::kGe, {3})), (Atoms{3}));
  EXPECT_EQ(condition_atoms(f, b.cond("attempts", Op::kLt, {3})), (Atoms{1, 2}));
  EXPECT_EQ(f.atom_of(ir::Value::Int(2)), 2u);
  EXPECT_EQ(f.atom_of(ir::Value::Int(3)), 3u);
  EXPECT_EQ(f.atom_of(ir::Value::Int(-5)), 1u);
}

TEST(PartitionTest, IntEqualityIsItsOwnAtomAndMaxBoundsTheDomain) {
  PolicyBuilder b;
  b.int_field("n", 0, 9, true);
  b.guard("g", {b.cond("n", Op::kNe, {4}), b.cond("n", Op::kLe, {6})}, "hold", 1);
  const FieldPartition f = partition_policy(b.get().policy).fields[0];
  EXPECT_EQ(f.cuts, (std::vector<int64_t>{0, 4, 5, 7, 10}));
  // atoms: 1 (-inf,0) 2 [0,4) 3 [4,5) 4 [5,7) 5 [7,10) 6 [10,+inf)
  EXPECT_EQ(f.domain(), (Atoms{0, 2, 3, 4, 5}));
  EXPECT_EQ(condition_atoms(f, b.cond("n", Op::kNe, {4})), (Atoms{1, 2, 4, 5, 6}));
  EXPECT_EQ(condition_atoms(f, b.cond("n", Op::kLe, {6})), (Atoms{1, 2, 3, 4}));
  EXPECT_EQ(condition_atoms(f, b.cond("n", Op::kGt, {6})), (Atoms{5, 6}));
  EXPECT_EQ(condition_atoms(f, b.cond("n", Op::kAbsent)), (Atoms{0}));
  EXPECT_EQ(condition_atoms(f, b.cond("n", Op::kPresent)), (Atoms{1, 2, 3, 4, 5, 6}));
}

TEST(PartitionTest, ExtremeIntThresholdsDoNotOverflow) {
  const int64_t lo = std::numeric_limits<int64_t>::min();
  const int64_t hi = std::numeric_limits<int64_t>::max();
  PolicyBuilder b;
  b.int_field("n", std::nullopt);
  auto& policy = b.mutable_policy().policy;
  ir::Guard g;
  g.id = "g";
  g.conditions.push_back({0, Op::kLt, {ir::Value::Int(lo)}, ""});
  g.conditions.push_back({0, Op::kLe, {ir::Value::Int(hi)}, ""});
  policy.rules.emplace_back(g);
  const FieldPartition f = partition_policy(policy).fields[0];
  EXPECT_EQ(f.cuts, (std::vector<int64_t>{lo}));
  // (-inf, INT64_MIN) is empty, so no valid input lands in it.
  EXPECT_EQ(f.domain(), (Atoms{2}));
  EXPECT_EQ(condition_atoms(f, g.conditions[0]), (Atoms{}));
  EXPECT_EQ(condition_atoms(f, g.conditions[1]), (Atoms{1, 2}));
  EXPECT_EQ(f.atom_of(ir::Value::Int(lo)), 2u);
  EXPECT_EQ(f.atom_of(ir::Value::Int(hi)), 2u);
}

TEST(PartitionTest, StringsAreSortedWithOtherAndAbsent) {
  PolicyBuilder b;
  b.string_field("topic", true).string_field("error_class");
  b.guard("g", {b.cond("topic", Op::kIn, {"zeta", "alpha"})}, "hold", 1);
  b.table("t", {"topic", "error_class"}, 2).row({"mid", "timeout"}, "hold", 3);
  const Partition p = partition_policy(b.get().policy);
  const FieldPartition& topic = p.fields[0];
  EXPECT_EQ(topic.strings, (std::vector<std::string>{"alpha", "mid", "zeta"}));
  EXPECT_EQ(topic.domain(), (Atoms{0, 1, 2, 3, 4}));
  EXPECT_EQ(labels(topic, topic.domain()),
            (std::vector<std::string>{"absent", "<other>", "\"alpha\"", "\"mid\"", "\"zeta\""}));
  EXPECT_EQ(topic.atom_of(ir::Value::String("nope")), kAtomOther);
  EXPECT_EQ(condition_atoms(topic, b.cond("topic", Op::kNotIn, {"mid"})), (Atoms{1, 2, 4}));
  EXPECT_EQ(key_atoms(topic, ir::Value::String("mid")), (Atoms{3}));
  EXPECT_EQ(key_atoms(topic, std::nullopt), (Atoms{0, 1, 2, 3, 4}));
  EXPECT_EQ(p.fields[1].domain(), (Atoms{1, 2}));  // required: no absent
}

TEST(PartitionTest, EnumAndBoolAtoms) {
  PolicyBuilder b;
  b.enum_field("severity", {"low", "high"}).bool_field("flag", true);
  const Partition p = partition_policy(b.get().policy);
  EXPECT_EQ(p.fields[0].domain(), (Atoms{1, 2}));
  EXPECT_EQ(labels(p.fields[0], {1, 2}), (std::vector<std::string>{"low", "high"}));
  EXPECT_EQ(condition_atoms(p.fields[0], b.cond("severity", Op::kNe, {"low"})), (Atoms{2}));
  EXPECT_EQ(p.fields[1].domain(), (Atoms{0, 1, 2}));
  EXPECT_EQ(condition_atoms(p.fields[1], b.cond("flag", Op::kEq, {true})), (Atoms{2}));
  EXPECT_EQ(labels(p.fields[1], {1, 2}), (std::vector<std::string>{"false", "true"}));
}

}  // namespace
}  // namespace replaygate
