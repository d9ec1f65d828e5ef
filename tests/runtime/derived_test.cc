// Derived bool fields in the table and the runtime: the optional derivations section, decide()
// computing `lhs op rhs` after validation (ignoring the input's own value), agreement with the
// interpreter for every op, and every kind of corrupt derivation record rejected at load.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/interpret.h"
#include "compiler/lower.h"
#include "runtime/table.h"
#include "runtime/table_format.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

namespace fm = replaygate::format;
using Bytes = testing::TableBytes;
using testing::header_of;
using testing::load_error;
using testing::reseal;
using testing::section;

// Fields: 0 msg (int >= 0), 1 rec (int >= 0), 2 label (string), 3 stale = msg OP rec,
// 4 flag (optional bool). Verbs: 0 hold (none, default), 1 ack (none), 2 go (create).
ir::CheckedPolicy derived_policy(ir::Op op = ir::Op::kLt) {
  ir::CheckedPolicy c;
  ir::Policy& p = c.policy;
  p.id = "derived";
  p.revision = 1;
  p.fields = {testing::int_field("msg", 0, std::nullopt),
              testing::int_field("rec", 0, std::nullopt), testing::string_field("label"),
              testing::bool_field("stale"), testing::bool_field("flag", /*optional=*/true)};
  p.fields[3].derived = ir::Derivation{0, op, 1};
  p.verbs = {{"hold", ir::Effect::kNone, "wait"},
             {"ack", ir::Effect::kNone, "acknowledge"},
             {"go", ir::Effect::kCreate, "do it"}};
  p.default_verb = 0;
  p.default_reason = "no rule matched";
  p.rules.emplace_back(testing::guard(
      "stale", {testing::cond(3, ir::Op::kEq, {ir::Value::Bool(true)})}, 1, "stale message"));
  p.rules.emplace_back(testing::guard("fresh",
                                      {testing::cond(3, ir::Op::kEq, {ir::Value::Bool(false)}),
                                       testing::cond(2, ir::Op::kEq, {ir::Value::String("x")})},
                                      2, "fresh x"));
  c.source_base_name = "derived.yaml";
  c.source_digest = "00";
  return c;
}

TEST(DerivedTable, OnlyPoliciesWithDerivedFieldsGetTheSection) {
  const Bytes plain = lower(testing::reference_gate());
  EXPECT_EQ(header_of(plain).section_count, fm::kSectionCount);
  const Bytes derived = lower(derived_policy());
  const fm::Header h = header_of(derived);
  EXPECT_EQ(h.section_count, fm::kDerivationsSectionCount);
  const fm::SectionEntry e = section(derived, fm::kDerivations);
  EXPECT_EQ(e.kind, fm::kDerivations);
  ASSERT_EQ(e.length, sizeof(fm::DerivationRecord));
  fm::DerivationRecord r;
  std::memcpy(&r, derived.data() + e.offset, sizeof(r));
  EXPECT_EQ(r.field, 3u);
  EXPECT_EQ(r.op, static_cast<uint32_t>(ir::Op::kLt));
  EXPECT_EQ(r.lhs, 0u);
  EXPECT_EQ(r.rhs, 1u);
  EXPECT_EQ(load_error(derived), "");
}

TEST(DerivedTable, DumpShowsTheDerivation) {
  const Bytes bytes = lower(derived_policy());
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(table) << status.message;
  EXPECT_NE(table->dump().find("  #3 stale: bool, required, derived msg lt rec\n"),
            std::string::npos)
      << table->dump();
  EXPECT_TRUE(table->field_derived(3));
  EXPECT_FALSE(table->field_derived(0));
  EXPECT_FALSE(table->field_derived(99));
}

TEST(DerivedDecide, ComputedAfterValidationAndInputValueIgnored) {
  const Bytes bytes = lower(derived_policy());
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(table) << status.message;
  Input in(*table);
  auto run = [&](int64_t msg, int64_t rec, int stale_state) {
    in.clear();
    in.set_int(0, msg);
    in.set_int(1, rec);
    in.set_string(2, "x");
    if (stale_state == 1) in.set_bool(3, true);
    if (stale_state == 2) in.set_invalid(3);
    if (stale_state == 3) in.set_string(3, "yes");
    const Decision d = table->decide(in);
    return std::string(table->verb_name(d.verb)) + "/" + std::string(table->rule_name(d));
  };
  EXPECT_EQ(run(1, 2, 0), "ack/stale");
  EXPECT_EQ(run(2, 2, 0), "go/fresh");
  EXPECT_EQ(run(3, 2, 0), "go/fresh");
  EXPECT_EQ(run(2, 2, 1), "go/fresh");  // a `true` in the input does not make it stale
  EXPECT_EQ(run(2, 2, 2), "go/fresh");  // an unreadable value is ignored, not invalid
  EXPECT_EQ(run(1, 2, 3), "ack/stale");
  // An operand that fails validation makes the decision the default (before any derivation).
  in.clear();
  in.set_int(0, -1);
  in.set_int(1, 2);
  in.set_string(2, "x");
  Decision d = table->decide(in);
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(table->reason(d), "invalid input: msg");
  in.clear();
  in.set_int(0, 1);
  in.set_string(2, "x");
  d = table->decide(in);
  EXPECT_EQ(d.kind, DecisionKind::kInvalidInput);
  EXPECT_EQ(table->reason(d), "invalid input: rec");
}

TEST(DerivedDecide, EveryOpAgreesWithTheInterpreter) {
  const ir::Op ops[] = {ir::Op::kEq, ir::Op::kNe, ir::Op::kLt,
                        ir::Op::kLe, ir::Op::kGt, ir::Op::kGe};
  const int64_t values[] = {0, 1, 2, INT64_MAX};
  for (ir::Op op : ops) {
    const ir::CheckedPolicy c = derived_policy(op);
    const Bytes bytes = lower(c);
    LoadStatus status;
    auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    ASSERT_TRUE(table) << status.message;
    Input in(*table);
    for (int64_t a : values) {
      for (int64_t b : values) {
        in.clear();
        in.set_int(0, a);
        in.set_int(1, b);
        in.set_string(2, "x");
        const Decision d = table->decide(in);
        const Letter letter = {LetterValue::Int(a), LetterValue::Int(b), LetterValue::String("x"),
                               LetterValue::Invalid()};
        const InterpretResult want = interpret(c.policy, letter);
        EXPECT_EQ(d.verb, want.verb) << ir::op_name(op) << " " << a << " " << b;
        EXPECT_EQ(d.rule, want.rule) << ir::op_name(op) << " " << a << " " << b;
        const bool expected = op == ir::Op::kEq   ? a == b
                              : op == ir::Op::kNe ? a != b
                              : op == ir::Op::kLt ? a < b
                              : op == ir::Op::kLe ? a <= b
                              : op == ir::Op::kGt ? a > b
                                                  : a >= b;
        EXPECT_EQ(table->verb_name(d.verb), expected ? "ack" : "go")
            << ir::op_name(op) << " " << a << " " << b;
      }
    }
  }
}

// Rewrites the one derivation record, reseals the checksum, and returns the load error.
std::string with_record(fm::DerivationRecord r) {
  Bytes bytes = lower(derived_policy());
  const fm::SectionEntry e = section(bytes, fm::kDerivations);
  std::memcpy(bytes.data() + e.offset, &r, sizeof(r));
  reseal(bytes);
  return load_error(bytes);
}

TEST(DerivedLoad, CorruptRecordsAreRejected) {
  EXPECT_EQ(with_record({3, 4, 0, 1}), "");
  EXPECT_EQ(with_record({9, 4, 0, 1}), "bad_offset: derivation 0 field index out of range");
  EXPECT_EQ(with_record({3, 4, 3, 1}), "bad_offset: derivation 0 field index out of range");
  EXPECT_EQ(with_record({3, 4, 0, 4}), "bad_offset: derivation 0 field index out of range");
  const std::string bad_kind =
      "malformed: derivation 0 must compare two required ints into a "
      "required bool";
  EXPECT_EQ(with_record({3, 2, 0, 1}), bad_kind);   // op `in`
  EXPECT_EQ(with_record({3, 8, 0, 1}), bad_kind);   // op `absent`
  EXPECT_EQ(with_record({3, 99, 0, 1}), bad_kind);  // no such op
  EXPECT_EQ(with_record({3, 4, 2, 1}), bad_kind);   // lhs is a string
  EXPECT_EQ(with_record({4, 4, 0, 1}), bad_kind);   // the target is an optional bool
  EXPECT_EQ(with_record({2, 4, 0, 1}), bad_kind);   // the target is a string
}

TEST(DerivedLoad, EmptyOrMissingSectionIsRejected) {
  Bytes bytes = lower(derived_policy());
  const size_t entry = sizeof(fm::Header) + (fm::kDerivations - 1) * sizeof(fm::SectionEntry);
  uint64_t zero = 0;
  std::memcpy(bytes.data() + entry + 16, &zero, sizeof(zero));
  reseal(bytes);
  EXPECT_EQ(load_error(bytes), "malformed: derivations section is present but empty");

  bytes = lower(derived_policy());
  const uint32_t odd = 12;  // a length that is not a whole record
  uint64_t length = odd;
  std::memcpy(bytes.data() + entry + 16, &length, sizeof(length));
  reseal(bytes);
  EXPECT_NE(load_error(bytes).find("section derivations length 12 is not a multiple"),
            std::string::npos)
      << load_error(bytes);

  // A 16-section header over a 17-section table: the derivations are lost, and the decision
  // digest says so. (With every digest recomputed it loads: the derived fields then become plain
  // inputs, a forgery that is structurally sound; only a signature stops it.)
  bytes = lower(derived_policy());
  fm::Header h = header_of(bytes);
  h.section_count = fm::kSectionCount;
  std::memcpy(bytes.data(), &h, sizeof(h));
  testing::reseal_checksum(bytes);
  EXPECT_EQ(load_error(bytes).rfind("bad_checksum: bad decision digest", 0), 0u)
      << load_error(bytes);
}

TEST(DerivedLoad, DecisionDigestCoversTheSection) {
  const Bytes a = lower(derived_policy(ir::Op::kLt));
  const Bytes b = lower(derived_policy(ir::Op::kLe));
  EXPECT_NE(std::memcmp(header_of(a).decision_digest, header_of(b).decision_digest, 16), 0);
  // Flipping the op byte in place is caught by the checksum, and with a resealed checksum by the
  // decision digest.
  Bytes bytes = a;
  const fm::SectionEntry e = section(bytes, fm::kDerivations);
  bytes[e.offset + 4] = static_cast<uint8_t>(ir::Op::kLe);
  EXPECT_NE(load_error(bytes).find("bad_checksum: bad checksum"), std::string::npos);
  testing::reseal_checksum(bytes);
  EXPECT_NE(load_error(bytes).find("bad_checksum: bad decision digest"), std::string::npos);
}

TEST(DerivedLoad, EveryByteFlipFailsCleanly) {
  const Bytes good = lower(derived_policy());
  for (size_t i = 0; i < good.size(); ++i) {
    Bytes bytes = good;
    bytes[i] ^= 0x41;
    EXPECT_NE(load_error(bytes), "") << "byte " << i;
  }
}

}  // namespace
}  // namespace replaygate
