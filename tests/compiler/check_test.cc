// Tests for the YAML front-end and the checker: the shipped policy's IR, typing rules (YAML 1.1
// words, strict ints), derived ids, source spans, file handling, and the golden bad policies.
#include "compiler/check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/yaml_tree.h"
#include "compiler/compile.h"
#include "compiler/syntax/yaml_policy.h"
#include "tests/support/diagnostics.h"
#include "tests/support/paths.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using testing::diagnostics_text;
using testing::read_text;

namespace fs = std::filesystem;
using ir::Op;
using ir::Value;

// Compiles `body` appended to a small valid header.
LoadedPolicy compile_with_header(const std::string& rules) {
  const std::string header =
      "policy: t\n"
      "revision: 2\n"
      "inputs:\n"
      "  topic: {type: string}\n"
      "  attempts: {type: int, min: 0, max: 10}\n"
      "  key: {type: string, optional: true, empty_means_absent: true}\n"
      "  committed: {type: bool}\n"
      "  answer: {type: enum, values: [yes, no, maybe]}\n"
      "verbs:\n"
      "  hold: {effect: none}\n"
      "  never: {effect: none}\n"
      "  replay_once: {effect: create}\n"
      "default: hold\n"
      "constants:\n"
      "  max_attempts: 3\n"
      "rules:\n";
  return load_policy_text(header + rules, "t.yaml");
}

TEST(Check, MoreInputsThanTheRuntimeSupportsIsAnError) {
  std::string text = "policy: t\nrevision: 1\ninputs:\n";
  for (int i = 0; i < 1025; ++i) text += "  f" + std::to_string(i) + ": {type: bool}\n";
  text +=
      "verbs:\n  hold: {effect: none}\ndefault: hold\nrules:\n"
      "  - guard: g\n    when: {f0: true}\n    verb: hold\n    reason: r\n";
  const LoadedPolicy loaded = load_policy_text(text, "many.yaml");
  EXPECT_FALSE(loaded.policy.has_value());
  ASSERT_EQ(loaded.diagnostics.size(), 1u) << diagnostics_text(loaded);
  EXPECT_EQ(loaded.diagnostics[0].code, "RG129");
  EXPECT_EQ(loaded.diagnostics[0].message,
            "the policy declares 1025 inputs; at most 1024 are supported");
  EXPECT_EQ(loaded.diagnostics[0].hint,
            "split the policy, or map several broker fields onto one input");
}

class ShippedPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    loaded_ = load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml");
  }
  LoadedPolicy loaded_;
};

TEST_F(ShippedPolicy, CompilesWithoutDiagnostics) {
  EXPECT_FALSE(loaded_.io_error) << loaded_.io_message;
  EXPECT_TRUE(loaded_.diagnostics.empty()) << diagnostics_text(loaded_);
  ASSERT_TRUE(loaded_.policy.has_value());
  EXPECT_EQ(loaded_.policy->source_base_name, "replay_gate.yaml");
  const std::string& digest = loaded_.policy->source_digest;
  EXPECT_EQ(digest.size(), 32u);
  EXPECT_TRUE(std::all_of(digest.begin(), digest.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  })) << digest;
  // The digest depends on the bytes only, not on the path.
  const LoadedPolicy again = load_policy_text(loaded_.source_text, "elsewhere/x.yml");
  ASSERT_TRUE(again.policy.has_value());
  EXPECT_EQ(again.policy->source_digest, digest);
  EXPECT_EQ(again.policy->source_base_name, "x.yml");
  EXPECT_EQ(again.policy->policy, loaded_.policy->policy);
}

TEST_F(ShippedPolicy, FieldsVerbsDefaultAndConstants) {
  ASSERT_TRUE(loaded_.policy.has_value());
  const ir::Policy& p = loaded_.policy->policy;
  EXPECT_EQ(p.id, "dlq-replay-gate");
  EXPECT_EQ(p.revision, 1);
  EXPECT_EQ(p.description.substr(0, 40), "Decides, for each dead-lettered message,");
  ASSERT_EQ(p.fields.size(), 6u);
  const std::vector<std::string> names = {"topic",           "error_class",       "attempts",
                                          "idempotency_key", "already_committed", "replays"};
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(p.fields[i].name, names[i]);
  EXPECT_EQ(p.fields[0].type, ir::FieldType::kString);
  EXPECT_FALSE(p.fields[0].optional);
  EXPECT_EQ(p.fields[0].description, "the topic the message was consumed from");
  EXPECT_EQ(p.fields[2].type, ir::FieldType::kInt);
  EXPECT_EQ(p.fields[2].min, 0);
  EXPECT_EQ(p.fields[2].max, std::nullopt);
  EXPECT_EQ(p.fields[3].type, ir::FieldType::kString);
  EXPECT_TRUE(p.fields[3].optional);
  EXPECT_TRUE(p.fields[3].empty_means_absent);
  EXPECT_EQ(p.fields[4].type, ir::FieldType::kBool);
  EXPECT_FALSE(p.fields[4].optional);
  EXPECT_EQ(p.fields[5].type, ir::FieldType::kInt);
  EXPECT_TRUE(p.fields[5].optional);
  EXPECT_FALSE(p.fields[5].empty_means_absent);
  EXPECT_EQ(p.fields[5].min, 0);

  ASSERT_EQ(p.verbs.size(), 3u);
  EXPECT_EQ(p.verbs[0].name, "never");
  EXPECT_EQ(p.verbs[0].effect, ir::Effect::kNone);
  EXPECT_EQ(p.verbs[1].name, "replay_once");
  EXPECT_EQ(p.verbs[1].effect, ir::Effect::kCreate);
  EXPECT_EQ(p.verbs[2].name, "hold");
  EXPECT_EQ(p.verbs[2].effect, ir::Effect::kNone);
  EXPECT_EQ(p.verbs[2].description, "wait for an operator");
  EXPECT_EQ(p.default_verb, 2u);
  EXPECT_EQ(p.default_reason, "no rule matches this (topic, error_class) pair");
  ASSERT_EQ(p.constants.size(), 1u);
  EXPECT_EQ(p.constants[0], (ir::Constant{"max_attempts", 3}));
}

TEST_F(ShippedPolicy, RulesInOrder) {
  ASSERT_TRUE(loaded_.policy.has_value());
  const ir::Policy& p = loaded_.policy->policy;
  ASSERT_EQ(p.rules.size(), 5u);
  const auto guard = [&](size_t i) { return std::get<ir::Guard>(p.rules.at(i)); };
  EXPECT_EQ(guard(0), (ir::Guard{"no_idempotency_key",
                                 "cannot replay safely without an idempotency key",
                                 {ir::Condition{3, Op::kAbsent, {}, ""}},
                                 2}));
  EXPECT_EQ(guard(1), (ir::Guard{"already_committed",
                                 "the work already committed; replaying would repeat a side effect",
                                 {ir::Condition{4, Op::kEq, {Value::Bool(true)}, ""}},
                                 0}));
  EXPECT_EQ(guard(2), (ir::Guard{"attempts_exhausted",
                                 "attempt budget exhausted",
                                 {ir::Condition{2, Op::kGe, {Value::Int(3)}, "max_attempts"}},
                                 2}));
  EXPECT_EQ(guard(3), (ir::Guard{"already_replayed",
                                 "replay_once means once; this letter was already requeued by the "
                                 "gate",
                                 {ir::Condition{5, Op::kGe, {Value::Int(1)}, ""}},
                                 2}));
  const auto& table = std::get<ir::Table>(p.rules.at(4));
  EXPECT_EQ(table.id, "known_failures");
  EXPECT_EQ(table.key_fields, (std::vector<uint32_t>{0, 1}));
  // Every row (id, keys, verb, reason) as in the hand-built reference gate.
  const ir::CheckedPolicy reference = testing::reference_gate();
  const auto& by_hand = std::get<ir::Table>(reference.policy.rules.at(4));
  ASSERT_EQ(table.rows.size(), 9u);
  for (size_t i = 0; i < table.rows.size(); ++i) {
    EXPECT_TRUE(table.rows[i] == by_hand.rows[i]) << "row " << i << ": " << table.rows[i].id;
  }
  EXPECT_EQ(table.rows[0].id, "known_failures:payment.capture/timeout");
  EXPECT_EQ(ir::rule_catalog(p).size(), 13u);
}

TEST_F(ShippedPolicy, SourceMapPointsAtTheDefinitions) {
  ASSERT_TRUE(loaded_.policy.has_value());
  const ir::SourceMap& s = loaded_.policy->source;
  const std::string& text = loaded_.source_text;
  const auto at = [&](const ir::Span& span) { return text.substr(span.offset, span.length); };
  EXPECT_EQ(s.path, std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml");
  EXPECT_EQ(at(s.policy), "policy");
  ASSERT_EQ(s.fields.size(), 6u);
  EXPECT_EQ(at(s.fields[3]), "idempotency_key");
  EXPECT_EQ(s.fields[0].line, 12u);
  EXPECT_EQ(s.fields[0].column, 3u);
  ASSERT_EQ(s.verbs.size(), 3u);
  EXPECT_EQ(at(s.verbs[1]), "replay_once");
  EXPECT_EQ(at(s.default_verb), "hold");
  EXPECT_EQ(s.default_verb.line, 47u);
  ASSERT_EQ(s.constants.size(), 1u);
  EXPECT_EQ(at(s.constants[0]), "max_attempts");
  ASSERT_EQ(s.rules.size(), 5u);
  EXPECT_EQ(at(s.rules[0]), "guard");
  EXPECT_EQ(s.rules[0].line, 54u);
  EXPECT_EQ(at(s.rules[4]), "table");
  EXPECT_EQ(s.rules[4].line, 78u);
  ASSERT_EQ(s.conditions.size(), 5u);
  ASSERT_EQ(s.conditions[2].size(), 1u);
  EXPECT_EQ(at(s.conditions[2][0]), "ge");
  EXPECT_EQ(at(s.conditions[0][0]), "idempotency_key");
  EXPECT_TRUE(s.conditions[4].empty());
  ASSERT_EQ(s.rows.size(), 5u);
  EXPECT_TRUE(s.rows[0].empty());
  ASSERT_EQ(s.rows[4].size(), 9u);
  EXPECT_EQ(s.rows[4][0].line, 81u);
  EXPECT_EQ(s.rows[4][8].line, 97u);
  EXPECT_EQ(s.rows[4][0].column, 9u);
  ASSERT_EQ(s.invariants.size(), 4u);
  EXPECT_EQ(at(s.invariants[0]), "invariant");
  EXPECT_EQ(s.invariants[0].line, 102u);
  EXPECT_EQ(s.invariants[3].line, 117u);
  ASSERT_EQ(s.invariant_conditions.size(), 4u);
  ASSERT_EQ(s.invariant_conditions[0].size(), 1u);
  EXPECT_EQ(at(s.invariant_conditions[0][0]), "already_committed");
  EXPECT_EQ(at(s.invariant_conditions[2][0]), "ge");
  EXPECT_EQ(s.invariant_conditions[2][0].line, 113u);
  EXPECT_EQ(s.invariant_conditions[2][0].column, 23u);
}

// The hand-built reference IR (tests/support/test_policies.h) includes the shipped invariants:
// the front-end's IR and source map for them are exactly the hand-built ones.
TEST_F(ShippedPolicy, InvariantsMatchTheHandBuiltReference) {
  ASSERT_TRUE(loaded_.policy.has_value());
  const ir::CheckedPolicy expected = testing::reference_gate();
  EXPECT_EQ(loaded_.policy->policy.invariants, expected.policy.invariants);
  const ir::SourceMap& s = loaded_.policy->source;
  ASSERT_EQ(s.invariants.size(), expected.source.invariants.size());
  for (size_t i = 0; i < s.invariants.size(); ++i) {
    EXPECT_EQ(s.invariants[i].line, expected.source.invariants[i].line) << i;
    EXPECT_EQ(s.invariants[i].column, expected.source.invariants[i].column) << i;
    ASSERT_EQ(s.invariant_conditions[i].size(), 1u);
    EXPECT_EQ(s.invariant_conditions[i][0].line, expected.source.invariant_conditions[i][0].line);
    EXPECT_EQ(s.invariant_conditions[i][0].column,
              expected.source.invariant_conditions[i][0].column);
  }
}

TEST(Check, Yaml11WordsStayTheStringsTheAuthorWrote) {
  const LoadedPolicy loaded = compile_with_header(
      "  - guard: g\n"
      "    when:\n"
      "      answer: no\n"
      "      topic: off\n"
      "      key: [yes, 'on', n]\n"
      "    verb: never\n"
      "    reason: r\n");
  ASSERT_TRUE(loaded.policy.has_value()) << diagnostics_text(loaded);
  const ir::Policy& p = loaded.policy->policy;
  EXPECT_EQ(p.fields[4].enum_values, (std::vector<std::string>{"yes", "no", "maybe"}));
  const auto& guard = std::get<ir::Guard>(p.rules[0]);
  ASSERT_EQ(guard.conditions.size(), 3u);
  EXPECT_EQ(guard.conditions[0], (ir::Condition{4, Op::kEq, {Value::String("no")}, ""}));
  EXPECT_EQ(guard.conditions[1], (ir::Condition{0, Op::kEq, {Value::String("off")}, ""}));
  EXPECT_EQ(guard.conditions[2],
            (ir::Condition{
                2, Op::kIn, {Value::String("yes"), Value::String("on"), Value::String("n")}, ""}));
}

TEST(Check, OperatorMappingsGiveOneConditionPerOperator) {
  const LoadedPolicy loaded = compile_with_header(
      "  - guard: g\n"
      "    when:\n"
      "      attempts: {ge: 1, lt: max_attempts, ne: 2, not_in: [4, 5]}\n"
      "      key: present\n"
      "      topic: 'absent'\n"
      "      committed: false\n"
      "    verb: never\n"
      "    reason: \"quoted reason\"\n");
  ASSERT_TRUE(loaded.policy.has_value()) << diagnostics_text(loaded);
  const auto& guard = std::get<ir::Guard>(loaded.policy->policy.rules[0]);
  ASSERT_EQ(guard.conditions.size(), 7u);
  EXPECT_EQ(guard.conditions[0], (ir::Condition{1, Op::kGe, {Value::Int(1)}, ""}));
  EXPECT_EQ(guard.conditions[1], (ir::Condition{1, Op::kLt, {Value::Int(3)}, "max_attempts"}));
  EXPECT_EQ(guard.conditions[2], (ir::Condition{1, Op::kNe, {Value::Int(2)}, ""}));
  EXPECT_EQ(guard.conditions[3],
            (ir::Condition{1, Op::kNotIn, {Value::Int(4), Value::Int(5)}, ""}));
  EXPECT_EQ(guard.conditions[4], (ir::Condition{2, Op::kPresent, {}, ""}));
  // A quoted 'absent' is the string.
  EXPECT_EQ(guard.conditions[5], (ir::Condition{0, Op::kEq, {Value::String("absent")}, ""}));
  EXPECT_EQ(guard.conditions[6], (ir::Condition{3, Op::kEq, {Value::Bool(false)}, ""}));
  EXPECT_EQ(guard.reason, "quoted reason");
  EXPECT_EQ(loaded.policy->source.conditions[0].size(), 7u);
}

TEST(Check, TableRowsWildcardsExplicitIdsAndDerivedIds) {
  const LoadedPolicy loaded = compile_with_header(
      "  - table: t\n"
      "    keys: [topic, attempts, committed]\n"
      "    rows:\n"
      "      - [a, 1, true, replay_once]\n"
      "      - ['*', max_attempts, '*', never]\n"
      "      - {keys: [b, '*', false], verb: hold, id: b_row, reason: because}\n"
      "      - [\"*x\", -0, false, hold]\n");
  ASSERT_TRUE(loaded.policy.has_value()) << diagnostics_text(loaded);
  const auto& table = std::get<ir::Table>(loaded.policy->policy.rules[0]);
  ASSERT_EQ(table.rows.size(), 4u);
  EXPECT_EQ(table.rows[0],
            (ir::Row{"t:a/1/true", "", {Value::String("a"), Value::Int(1), Value::Bool(true)}, 2}));
  EXPECT_EQ(table.rows[1],
            (ir::Row{"t:*/3/*", "", {std::nullopt, Value::Int(3), std::nullopt}, 1}));
  EXPECT_EQ(
      table.rows[2],
      (ir::Row{"b_row", "because", {Value::String("b"), std::nullopt, Value::Bool(false)}, 0}));
  EXPECT_EQ(table.rows[3].id, "t:*x/0/false");
  EXPECT_EQ(loaded.policy->source.rows[0].size(), 4u);
  EXPECT_EQ(loaded.policy->source.rows[0][2].line, 22u);
}

TEST(Check, DefaultReasonDefaultsAndEmptyRulesCompile) {
  const LoadedPolicy loaded = compile_with_header("  []\n");
  ASSERT_TRUE(loaded.policy.has_value()) << diagnostics_text(loaded);
  EXPECT_EQ(loaded.policy->policy.default_reason, "no rule matched");
  EXPECT_TRUE(loaded.policy->policy.rules.empty());
  EXPECT_EQ(loaded.policy->policy.revision, 2);
}

struct BadCase {
  std::string rules;
  std::string expected;  // "CODE@line:col message" of the first diagnostic
};

std::string first(const LoadedPolicy& loaded) {
  if (loaded.diagnostics.empty()) return "(none)";
  const Diagnostic& d = loaded.diagnostics[0];
  return d.code + "@" + std::to_string(d.span.line) + ":" + std::to_string(d.span.column) + " " +
         d.message;
}

TEST(Check, TypeAndValueErrors) {
  const std::vector<BadCase> cases = {
      {"  - {guard: g, when: {attempts: '3'}, verb: hold, reason: r}\n",
       "RG108@17:33 the quoted string '3' is not an int; int field 'attempts' needs an int"},
      {"  - {guard: g, when: {topic: true}, verb: hold, reason: r}\n",
       "RG108@17:30 true is a boolean, but 'topic' is a string field"},
      {"  - {guard: g, when: {committed: 'true'}, verb: hold, reason: r}\n",
       "RG108@17:34 the quoted string 'true' is not a boolean; bool field 'committed' needs true "
       "or false"},
      {"  - {guard: g, when: {committed: True}, verb: hold, reason: r}\n",
       "RG108@17:34 'True' is not a boolean; bool field 'committed' needs true or false"},
      {"  - {guard: g, when: {attempts: 007}, verb: hold, reason: r}\n",
       "RG109@17:33 '007' has a leading zero"},
      {"  - {guard: g, when: {attempts: +3}, verb: hold, reason: r}\n",
       "RG109@17:33 '+3' is not a decimal integer"},
      {"  - {guard: g, when: {attempts: -1}, verb: hold, reason: r}\n",
       "RG110@17:33 -1 is below the minimum 0 of field 'attempts'"},
      {"  - {guard: g, when: {attempts: {eq: [1]}}, verb: hold, reason: r}\n",
       "RG120@17:34 'eq' takes a single value, not a list"},
      {"  - {guard: g, when: {attempts: []}, verb: hold, reason: r}\n",
       "RG120@17:33 the list for 'in' on 'attempts' is empty"},
      {"  - {guard: g, when: {key: {absent: true}}, verb: hold, reason: r}\n",
       "RG107@17:29 'absent' is not an operator"},
      {"  - {guard: g, when: {topic: x}, verb: hold}\n", "RG102@17:6 guard 'g' has no 'reason'"},
      {"  - {guard: g, when: {topic: x}, verb: hold, reason: ''}\n",
       "RG108@17:54 the reason of guard 'g' is empty"},
      {"  - {guard: g, when: {topic: x}, verb: , reason: r}\n",
       "RG102@17:6 guard 'g' has no 'verb'"},
      {"  - {when: {topic: x}, verb: hold}\n",
       "RG102@17:5 this rule has neither 'guard: ID' nor 'table: ID'"},
      {"  - {guard: g, table: t}\n", "RG103@17:5 a rule is either a guard or a table, not both"},
      {"  - {table: t, keys: [topic], rows: [[absent, hold]]}\n",
       "RG128@17:39 a table row cannot match 'absent'"},
      {"  - {table: t, keys: [topic]}\n", "RG102@17:6 table 't' has no 'rows'"},
      {"  - {table: t, keys: [], rows: []}\n",
       "RG126@17:16 table 't' has 0 keys; a table has 1 to 8"},
      {"  - {table: t, keys: [topic, topic, topic, topic, topic, topic, topic, topic, topic], "
       "rows: []}\n",
       "RG126@17:16 table 't' has 9 keys; a table has 1 to 8"},
      // Counts of one in the singular.
      {"  - {table: t, keys: [topic], rows: [[hold]]}\n",
       "RG123@17:38 this row has 1 value, but table 't' has 1 key, so a row needs 2"},
      {"  - {table: t, keys: [topic], rows: [[a, b, hold]]}\n",
       "RG123@17:38 this row has 3 values, but table 't' has 1 key, so a row needs 2"},
      {"  - {table: t, keys: [answer], rows: [[perhaps, hold]]}\n",
       "RG111@17:40 'perhaps' is not a value of enum field 'answer'"},
      {"  - {table: t, keys: [attempts], rows: [[11, hold]]}\n",
       "RG110@17:42 11 is above the maximum 10 of field 'attempts'"},
      {"  - {guard: 'a b', when: {topic: x}, verb: hold, reason: r}\n",
       "RG127@17:13 guard id 'a b' contains spaces or control characters"},
      {"  - {guard: g, when: {topic: ~}, verb: hold, reason: r}\n",
       "RG108@17:30 missing value for string field 'topic'"},
      {"  - {guard: g, when: {topic: {lt: 3}}, verb: hold, reason: r}\n",
       "RG118@17:31 'lt' compares order, but 'topic' is a string field"},
      {"  - {guard: g, when: {committed: {ge: 1}}, verb: hold, reason: r}\n",
       "RG118@17:35 'ge' compares order, but 'committed' is a bool field"},
      {"  - {guard: g, when: {topic: {in: [[a]]}}, verb: hold, reason: r}\n",
       "RG103@17:36 each item of the list for 'in' must be a single value, not a list"},
  };
  for (const BadCase& c : cases) {
    const LoadedPolicy loaded = compile_with_header(c.rules);
    EXPECT_FALSE(loaded.policy.has_value()) << c.rules;
    EXPECT_EQ(first(loaded), c.expected) << c.rules << diagnostics_text(loaded);
  }
}

TEST(Check, HeaderErrors) {
  const auto compile = [](const std::string& text) { return load_policy_text(text, "h.yaml"); };
  const std::string rest =
      "inputs: {a: {type: string}}\nverbs: {hold: {effect: none}}\ndefault: hold\nrules: []\n";
  EXPECT_EQ(first(compile("policy: t\nrevision: '1'\n" + rest)),
            "RG108@2:11 revision must be an int, not the quoted string '1'");
  EXPECT_EQ(first(compile("policy: t\nrevision: -1\n" + rest)),
            "RG108@2:11 revision must not be negative");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\n" + rest + "constants: {c: x}\n")),
            "RG109@7:16 'x' is not a decimal integer");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\n" + rest + "constants: {9c: 1}\n")),
            "RG127@7:13 invalid constant name '9c'");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\n" + rest + "inputs2: 1\n")),
            "RG101@7:1 unknown top-level key 'inputs2'");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\ninputs: {a: {type: int, values: [x]}}\n"
                          "verbs: {hold: {effect: none}}\ndefault: hold\nrules: []\n")),
            "RG115@3:33 'values' does not apply to input 'a' of type int");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\ninputs: {a: {type: enum}}\n"
                          "verbs: {hold: {effect: none}}\ndefault: hold\nrules: []\n")),
            "RG102@3:20 input 'a' is an enum but has no 'values'");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\ninputs: {a: {type: enum, values: []}}\n"
                          "verbs: {hold: {effect: none}}\ndefault: hold\nrules: []\n")),
            "RG116@3:34 input 'a' has an empty list of values");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\ninputs: {a: {type: int, optinal: true}}\n"
                          "verbs: {hold: {effect: none}}\ndefault: hold\nrules: []\n")),
            "RG101@3:25 unknown input property 'optinal'");
  const LoadedPolicy typo = compile(
      "policy: t\nrevision: 1\ninputs: {a: {type: int}}\n"
      "verbs: {hold: {efect: none}}\ndefault: hold\nrules: []\n");
  EXPECT_EQ(render_text(typo.diagnostics, typo.source_text),
            "h.yaml:4:9: error[RG102]: verb 'hold' has no 'effect'\n"
            "    4 | verbs: {hold: {efect: none}}\n"
            "      |         ^~~~\n"
            "      = hint: add 'effect: none', 'read', 'copy' or 'create'\n"
            "\n"
            "h.yaml:4:16: error[RG101]: unknown verb property 'efect'\n"
            "    4 | verbs: {hold: {efect: none}}\n"
            "      |                ^~~~~\n"
            "      = hint: did you mean 'effect'?\n");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\ninputs: {a: {type: int}}\n"
                          "verbs: {hold: {effect: none}}\ndefault: hodl\nrules: []\n")),
            "RG104@5:10 unknown verb 'hodl'");
  EXPECT_EQ(first(compile("policy: t\nrevision: 1\ninputs: [a]\nverbs: {hold: {effect: none}}\n"
                          "default: hold\nrules: []\n")),
            "RG103@3:9 'inputs' must be a mapping, not a list");
  const LoadedPolicy missing = compile("description: only\n");
  std::vector<std::string> messages;
  for (const auto& d : missing.diagnostics) messages.push_back(d.code + " " + d.message);
  EXPECT_EQ(messages, (std::vector<std::string>{
                          "RG102 missing required key 'default'",
                          "RG102 missing required key 'inputs'",
                          "RG102 missing required key 'policy'",
                          "RG102 missing required key 'revision'",
                          "RG102 missing required key 'rules'",
                          "RG102 missing required key 'verbs'",
                      }));
}

TEST(Compile, ExtensionsAndIoErrors) {
  // .policy goes to the DSL front-end: a syntax error there is RG014.
  const LoadedPolicy dsl = load_policy_text("policy x {}", "a/b.policy");
  ASSERT_EQ(dsl.diagnostics.size(), 1u);
  EXPECT_EQ(dsl.diagnostics[0].code, "RG014");
  EXPECT_EQ(dsl.diagnostics[0].message, "expected 'revision N' after the policy's name");
  EXPECT_FALSE(dsl.policy.has_value());
  EXPECT_FALSE(dsl.io_error);

  const LoadedPolicy json = load_policy_text("{}", "p.json");
  ASSERT_EQ(json.diagnostics.size(), 1u);
  EXPECT_EQ(render_text(json.diagnostics, json.source_text),
            "p.json: error[RG013]: unsupported policy file extension '.json'; supported: .policy "
            "(the policy language), .yaml, .yml (YAML)\n"
            "      = hint: rename the file to end in .policy or .yaml\n");
  EXPECT_EQ(load_policy_text("", "Policy.YML").diagnostics.at(0).code, "RG100");

  const LoadedPolicy missing = load_policy_file("/nonexistent/dir/p.yaml");
  EXPECT_TRUE(missing.io_error);
  EXPECT_EQ(missing.io_message, "cannot read '/nonexistent/dir/p.yaml': No such file or directory");
  EXPECT_FALSE(missing.policy.has_value());
  const LoadedPolicy directory = load_policy_file(std::string(RG_SOURCE_DIR) + "/policies");
  EXPECT_TRUE(directory.io_error);
}

TEST(Compile, TruncatedShippedPolicyNeverCrashesAndNeverPassesWithErrors) {
  const std::string text = read_text(fs::path(RG_SOURCE_DIR) / "policies/replay_gate.yaml");
  ASSERT_FALSE(text.empty());
  for (size_t n = 0; n < text.size(); n += 7) {
    const LoadedPolicy loaded = load_policy_text(text.substr(0, n), "p.yaml");
    EXPECT_EQ(loaded.policy.has_value(), !has_errors(loaded.diagnostics));
    for (const auto& d : loaded.diagnostics) EXPECT_EQ(d.path, "p.yaml");
  }
}

TEST(Compile, TheLanguageDocExampleCompiles) {
  const std::string doc = read_text(fs::path(RG_SOURCE_DIR) / "docs/policy-language.md");
  const size_t section = doc.find("## Example");
  ASSERT_NE(section, std::string::npos);
  const size_t begin = doc.find("```yaml\n", section);
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  const LoadedPolicy loaded = load_policy_text(doc.substr(begin + 8, end - begin - 8), "ex.yaml");
  ASSERT_TRUE(loaded.policy.has_value()) << diagnostics_text(loaded);
  EXPECT_EQ(loaded.policy->policy.id, "small-gate");
  const auto& table = std::get<ir::Table>(loaded.policy->policy.rules.at(2));
  EXPECT_EQ(table.rows.at(1).id, "retryable:*");
}

// Golden files: each tests/data/policies/bad/X.yaml has X.expected.txt with the exact text
// rendering. Set RG_UPDATE_GOLDEN=1 to rewrite them (then review the diff).
TEST(FrontEndGolden, BadPolicies) {
  const fs::path root(RG_SOURCE_DIR);
  const fs::path dir = root / "tests/data/policies/bad";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 25u);
  const bool update = std::getenv("RG_UPDATE_GOLDEN") != nullptr;
  fs::current_path(root);
  for (const fs::path& file : files) {
    const std::string relative = fs::relative(file, root).string();
    const LoadedPolicy loaded = load_policy_file(relative);
    EXPECT_FALSE(loaded.io_error) << relative;
    EXPECT_FALSE(loaded.policy.has_value()) << relative;
    EXPECT_TRUE(has_errors(loaded.diagnostics)) << relative;
    const std::string actual = render_text(loaded.diagnostics, loaded.source_text);
    fs::path expected_path = file;
    expected_path.replace_extension(".expected.txt");
    if (update) {
      std::ofstream(expected_path, std::ios::binary) << actual;
      continue;
    }
    const std::string expected = read_text(expected_path);
    EXPECT_EQ(actual, expected) << "golden mismatch for " << relative << "; actual text:\n"
                                << actual;
  }
}

}  // namespace
}  // namespace replaygate
