// The declared idempotency key (`idempotency_key: true`, DSL `idempotency key`) in the compiler:
// both front-ends give the same IR, both printers and `fmt` keep it, lift gives it back from the
// table, the semantic diff reports a change of it, and RG139 refuses it on a non-string input and
// on a second input (exact text, position and hint).
#include <gtest/gtest.h>

#include <string>

#include "compiler/analysis/diff.h"
#include "compiler/compile.h"
#include "compiler/ir.h"
#include "compiler/lift.h"
#include "compiler/lower.h"
#include "compiler/syntax/print_dsl.h"
#include "compiler/syntax/print_yaml.h"
#include "runtime/table.h"

namespace replaygate {
namespace {

const char* const kYaml = R"(policy: keyed
revision: 1
inputs:
  topic: {type: string}
  request_id: {type: string, optional: true, source: record, idempotency_key: true}
verbs:
  hold: {effect: none}
  replay_once: {effect: create}
default: hold
rules:
  - guard: go
    when: {topic: orders}
    verb: replay_once
    reason: transient
)";

const char* const kDsl = R"(policy keyed revision 1
input topic: string
input request_id: optional string source record idempotency key
verb hold effect none
verb replay_once effect create
default hold
rule go: when topic == orders -> replay_once "transient"
)";

ir::Policy load(const std::string& text, const std::string& path) {
  const LoadedPolicy loaded = load_policy_text(text, path);
  EXPECT_TRUE(loaded.policy.has_value()) << render_text(loaded.diagnostics, loaded.source_text);
  return loaded.policy ? loaded.policy->policy : ir::Policy{};
}

std::string diagnostics_of(const std::string& text, const std::string& path) {
  const LoadedPolicy loaded = load_policy_text(text, path);
  EXPECT_FALSE(loaded.policy.has_value());
  return render_text(loaded.diagnostics, loaded.source_text);
}

TEST(IdempotencyKeyCompiler, BothFrontEndsAndPrintersKeepIt) {
  const ir::Policy from_yaml = load(kYaml, "keyed.yaml");
  const ir::Policy from_dsl = load(kDsl, "keyed.policy");
  ASSERT_EQ(from_yaml.fields.size(), 2u);
  EXPECT_FALSE(from_yaml.fields[0].idempotency_key);
  EXPECT_TRUE(from_yaml.fields[1].idempotency_key);
  EXPECT_EQ(from_yaml, from_dsl);

  const std::string dsl = print_dsl(from_yaml);
  EXPECT_NE(dsl.find("input request_id: optional string source record idempotency key\n"),
            std::string::npos)
      << dsl;
  const std::string yaml = print_yaml(from_dsl);
  EXPECT_NE(yaml.find("  request_id:\n    type: string\n    optional: true\n    source: record\n"
                      "    idempotency_key: true\n"),
            std::string::npos)
      << yaml;
  EXPECT_EQ(load(dsl, "again.policy"), from_yaml);
  EXPECT_EQ(load(yaml, "again.yaml"), from_yaml);
  // `idempotency_key: false` is the default, written or not.
  std::string off = kYaml;
  off.replace(off.find("idempotency_key: true"), 21, "idempotency_key: false");
  EXPECT_FALSE(load(off, "off.yaml").fields[1].idempotency_key);
}

TEST(IdempotencyKeyCompiler, FmtKeepsItAndIsIdempotent) {
  const FormatResult formatted = format_dsl(
      "policy keyed revision 1\ninput topic: string\ninput   request_id:  optional "
      "string   idempotency   key  \"the key\"\nverb hold effect none\ndefault hold\n",
      "k.policy");
  ASSERT_TRUE(formatted.text.has_value());
  EXPECT_NE(formatted.text->find("input request_id: optional string idempotency key \"the key\"\n"),
            std::string::npos)
      << *formatted.text;
  EXPECT_EQ(format_dsl(*formatted.text, "k.policy").text, formatted.text);
}

TEST(IdempotencyKeyCompiler, LiftGivesItBackFromTheTable) {
  const LoadedPolicy loaded = load_policy_text(kYaml, "keyed.yaml");
  ASSERT_TRUE(loaded.policy.has_value());
  const std::vector<uint8_t> bytes = lower(*loaded.policy);
  LoadStatus status;
  const auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(table) << status.message;
  EXPECT_EQ(table->idempotency_key_field(), 1u);
  const LiftResult lifted = lift(*table);
  ASSERT_TRUE(lifted.policy.has_value()) << lifted.error;
  EXPECT_FALSE(lifted.policy->policy.fields[0].idempotency_key);
  EXPECT_TRUE(lifted.policy->policy.fields[1].idempotency_key);
}

TEST(IdempotencyKeyCompiler, DiffReportsAChangeOfTheKey) {
  const ir::Policy keyed = load(kYaml, "keyed.yaml");
  ir::Policy plain = keyed;
  plain.fields[1].idempotency_key = false;
  PolicyDiff d = diff_policies(keyed, plain);
  ASSERT_EQ(d.fields.size(), 1u);
  EXPECT_EQ(d.fields[0].name, "request_id");
  EXPECT_EQ(d.fields[0].change, "no longer the idempotency key");
  EXPECT_TRUE(d.verb_changes.empty());  // it changes no decision
  d = diff_policies(plain, keyed);
  ASSERT_EQ(d.fields.size(), 1u);
  EXPECT_EQ(d.fields[0].change, "now the idempotency key");
}

TEST(IdempotencyKeyCompiler, OnANonStringInputIsRG139) {
  std::string text = kYaml;
  text.replace(text.find("topic: {type: string}"), 21, "topic: {type: int, idempotency_key: true}");
  const std::string shown = diagnostics_of(text, "k.yaml");
  EXPECT_NE(shown.find("k.yaml:4:39: error[RG139]: input 'topic' is of type int, so it cannot be "
                       "the idempotency key"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("hint: the idempotency key is a string input"), std::string::npos) << shown;

  const std::string dsl = diagnostics_of(
      "policy k revision 1\ninput n: bool idempotency key\nverb hold effect none\ndefault hold\n",
      "k.policy");
  EXPECT_NE(dsl.find("k.policy:2:15: error[RG139]: input 'n' is of type bool, so it cannot be "
                     "the idempotency key"),
            std::string::npos)
      << dsl;
}

TEST(IdempotencyKeyCompiler, ASecondKeyIsRG139) {
  std::string text = kYaml;
  text.replace(text.find("topic: {type: string}"), 21,
               "topic: {type: string, idempotency_key: true}");
  const std::string shown = diagnostics_of(text, "k.yaml");
  EXPECT_NE(shown.find("k.yaml:5:79: error[RG139]: input 'request_id' cannot be a second "
                       "idempotency key: input 'topic' already is"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("hint: a letter has one idempotency key: remove 'idempotency_key: true' "
                       "from all inputs but one"),
            std::string::npos)
      << shown;
  const std::string dsl = diagnostics_of(
      "policy k revision 1\ninput a: string idempotency key\ninput b: string idempotency key\n"
      "verb hold effect none\ndefault hold\n",
      "k.policy");
  EXPECT_NE(dsl.find("k.policy:3:17: error[RG139]: input 'b' cannot be a second idempotency key: "
                     "input 'a' already is"),
            std::string::npos)
      << dsl;
  EXPECT_NE(dsl.find("remove 'idempotency key' from all inputs but one"), std::string::npos) << dsl;
}

TEST(IdempotencyKeyCompiler, TheDslSaysWhatItExpectsAfterIdempotency) {
  const LoadedPolicy loaded = load_policy_text(
      "policy k revision 1\ninput a: string idempotency\nverb hold effect none\ndefault hold\n",
      "k.policy");
  ASSERT_FALSE(loaded.policy.has_value());
  const std::string shown = render_text(loaded.diagnostics, loaded.source_text);
  EXPECT_NE(shown.find("expected 'key' after 'idempotency'"), std::string::npos) << shown;
}

}  // namespace
}  // namespace replaygate
