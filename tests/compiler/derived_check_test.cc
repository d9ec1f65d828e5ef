// Derived bool inputs and the sensitive list through the YAML front-end and check(): the IR they
// produce, and the diagnostics for every misuse (the golden bad files cover the rendering).
#include <gtest/gtest.h>

#include <string>

#include "compiler/compile.h"
#include "compiler/interpret.h"
#include "compiler/ir.h"

namespace replaygate {
namespace {

// ir::compare, shared by the analysis (regions), the interpreter and the CLI's explain: every
// comparison op on both sides of equality and at the int64 ends; false for the ops that do not
// compare two ints.
TEST(IrCompare, EveryOp) {
  using ir::Op;
  const int64_t lo = INT64_MIN, hi = INT64_MAX;
  struct Case {
    Op op;
    bool less, equal, greater;  // compare(op, a, b) for a < b, a == b, a > b
  };
  for (const Case& c : {Case{Op::kEq, false, true, false}, Case{Op::kNe, true, false, true},
                        Case{Op::kLt, true, false, false}, Case{Op::kLe, true, true, false},
                        Case{Op::kGt, false, false, true}, Case{Op::kGe, false, true, true}}) {
    EXPECT_EQ(ir::compare(c.op, 1, 2), c.less) << ir::op_name(c.op);
    EXPECT_EQ(ir::compare(c.op, lo, hi), c.less) << ir::op_name(c.op);
    EXPECT_EQ(ir::compare(c.op, -7, -7), c.equal) << ir::op_name(c.op);
    EXPECT_EQ(ir::compare(c.op, hi, hi), c.equal) << ir::op_name(c.op);
    EXPECT_EQ(ir::compare(c.op, 0, -1), c.greater) << ir::op_name(c.op);
    EXPECT_EQ(ir::compare(c.op, hi, lo), c.greater) << ir::op_name(c.op);
  }
  for (Op op : {Op::kIn, Op::kNotIn, Op::kAbsent, Op::kPresent}) {
    EXPECT_FALSE(ir::compare(op, 1, 1)) << ir::op_name(op);
    EXPECT_FALSE(ir::compare(op, 1, 2)) << ir::op_name(op);
  }
}

const char* kPolicy = R"(policy: t
revision: 1
inputs:
  message_revision: {type: int, min: 0}
  record_revision: {type: int, min: 0}
  stale: {type: bool, derived: {lt: [message_revision, record_revision]}}
  same: {type: bool, derived: {eq: [record_revision, message_revision]}}
sensitive: [prompt, signed_url]
verbs:
  hold: {effect: none}
  ack: {effect: none}
default: hold
rules:
  - guard: g
    when: {stale: true}
    verb: ack
    reason: r
)";

std::string codes(const LoadedPolicy& loaded) {
  std::string out;
  for (const Diagnostic& d : loaded.diagnostics) out += (out.empty() ? "" : " ") + d.code;
  return out;
}

TEST(DerivedCheck, YamlBecomesTheIr) {
  const LoadedPolicy loaded = load_policy_text(kPolicy, "t.yaml");
  ASSERT_TRUE(loaded.policy) << codes(loaded);
  const ir::Policy& p = loaded.policy->policy;
  ASSERT_EQ(p.fields.size(), 4u);
  EXPECT_FALSE(p.fields[0].derived);
  ASSERT_TRUE(p.fields[2].derived);
  EXPECT_EQ(*p.fields[2].derived, (ir::Derivation{0, ir::Op::kLt, 1}));
  ASSERT_TRUE(p.fields[3].derived);
  EXPECT_EQ(*p.fields[3].derived, (ir::Derivation{1, ir::Op::kEq, 0}));
  EXPECT_EQ(p.sensitive, (std::vector<std::string>{"prompt", "signed_url"}));
}

TEST(DerivedCheck, InterpreterComputesAndIgnoresTheLetter) {
  const LoadedPolicy loaded = load_policy_text(kPolicy, "t.yaml");
  ASSERT_TRUE(loaded.policy);
  const ir::Policy& p = loaded.policy->policy;
  auto verb = [&](Letter letter) { return p.verbs[interpret(p, letter).verb].name; };
  EXPECT_EQ(verb({LetterValue::Int(1), LetterValue::Int(2)}), "ack");
  EXPECT_EQ(verb({LetterValue::Int(2), LetterValue::Int(2), LetterValue::Bool(true)}), "hold");
  EXPECT_EQ(verb({LetterValue::Int(1), LetterValue::Int(2), LetterValue::Invalid()}), "ack");
  const InterpretResult invalid = interpret(p, {LetterValue::Int(1)});
  EXPECT_EQ(invalid.kind, InterpretKind::kInvalidInput);
  EXPECT_EQ(invalid.invalid_field, 1u);
}

struct Case {
  const char* name;
  const char* input;  // replaces the `stale:` line
  const char* codes;
};

TEST(DerivedCheck, Misuse) {
  const Case cases[] = {
      // The guard's `stale: true` is then a bool literal on an int: RG108 too.
      {"not a bool", "stale: {type: int, derived: {lt: [message_revision, record_revision]}}",
       "RG140 RG108"},
      {"optional",
       "stale: {type: bool, optional: true, derived: {lt: [message_revision, "
       "record_revision]}}",
       "RG140"},
      {"unknown op", "stale: {type: bool, derived: {before: [message_revision, record_revision]}}",
       "RG141"},
      {"in is not a derivation op",
       "stale: {type: bool, derived: {in: [message_revision, record_revision]}}", "RG141"},
      {"one operand", "stale: {type: bool, derived: {lt: [message_revision]}}", "RG141"},
      {"three operands",
       "stale: {type: bool, derived: {lt: [message_revision, record_revision, message_revision]}}",
       "RG141"},
      {"unknown operand", "stale: {type: bool, derived: {lt: [message_revision, nope]}}", "RG105"},
      {"self operand", "stale: {type: bool, derived: {lt: [message_revision, stale]}}", "RG142"},
      {"list instead of mapping", "stale: {type: bool, derived: [lt, a, b]}", "RG103"},
      {"two ops", "stale: {type: bool, derived: {lt: [a, b], gt: [a, b]}}", "RG103"},
      {"scalar operands", "stale: {type: bool, derived: {lt: message_revision}}", "RG103"},
      {"nested operand", "stale: {type: bool, derived: {lt: [[a], b]}}", "RG103"},
  };
  for (const Case& c : cases) {
    std::string text = kPolicy;
    const std::string old_line =
        "stale: {type: bool, derived: {lt: [message_revision, record_revision]}}";
    text.replace(text.find(old_line), old_line.size(), c.input);
    const LoadedPolicy loaded = load_policy_text(text, "t.yaml");
    EXPECT_FALSE(loaded.policy) << c.name;
    EXPECT_EQ(codes(loaded), c.codes) << c.name;
  }
}

TEST(DerivedCheck, OperandsMustBeEarlierRequiredInts) {
  const char* text = R"(policy: t
revision: 1
inputs:
  n: {type: int}
  s: {type: string}
  o: {type: int, optional: true}
  d1: {type: bool, derived: {lt: [n, s]}}
  d2: {type: bool, derived: {lt: [n, o]}}
  d3: {type: bool, derived: {lt: [n, later]}}
  later: {type: int}
verbs:
  hold: {effect: none}
default: hold
rules:
  - guard: g
    when: {d1: true}
    verb: hold
    reason: r
)";
  const LoadedPolicy loaded = load_policy_text(text, "t.yaml");
  EXPECT_FALSE(loaded.policy);
  EXPECT_EQ(codes(loaded), "RG142 RG142 RG142");
  ASSERT_EQ(loaded.diagnostics.size(), 3u);
  EXPECT_EQ(loaded.diagnostics[0].message,
            "operand 's' of the derivation of input 'd1' has type string");
  EXPECT_EQ(loaded.diagnostics[1].message,
            "operand 'o' of the derivation of input 'd2' is optional");
  EXPECT_EQ(loaded.diagnostics[2].message,
            "operand 'later' of the derivation of input 'd3' is not declared before it");
}

TEST(DerivedCheck, SensitiveList) {
  std::string text = kPolicy;
  text.replace(text.find("[prompt, signed_url]"), 20, "[prompt, '', prompt, 'a b']");
  const LoadedPolicy loaded = load_policy_text(text, "t.yaml");
  EXPECT_FALSE(loaded.policy);
  EXPECT_EQ(codes(loaded), "RG143 RG143 RG143");
  text = kPolicy;
  text.replace(text.find("[prompt, signed_url]"), 20, "prompt");
  EXPECT_EQ(codes(load_policy_text(text, "t.yaml")), "RG103");
}

}  // namespace
}  // namespace replaygate
