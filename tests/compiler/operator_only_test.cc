// Operator-only inputs (`source: operator`) in the compiler: both front-ends give the same IR,
// both printers keep the marker, and the semantic diff reports adding and removing it (removing
// it from an input the rules read is more dangerous).
#include <gtest/gtest.h>

#include <string>

#include "compiler/analysis/diff.h"
#include "compiler/compile.h"
#include "compiler/ir.h"
#include "compiler/syntax/print_dsl.h"
#include "compiler/syntax/print_yaml.h"

namespace replaygate {
namespace {

const char* const kYaml = R"(policy: op
revision: 1
inputs:
  phase: {type: enum, values: [prepared, accepted]}
  confirmed: {type: bool, optional: true, source: operator}
  note: {type: string, optional: true, source: operator}
  audited: {type: bool, source: letter}
verbs:
  hold: {effect: none}
  dispatch: {effect: create}
default: hold
rules:
  - guard: reviewed
    when: {phase: prepared, confirmed: true, audited: true}
    verb: dispatch
    reason: confirmed
)";

const char* const kDsl = R"(policy op revision 1
input phase: enum (prepared, accepted)
input confirmed: optional bool source operator
input note: optional string source operator
input audited: bool source letter
verb hold effect none
verb dispatch effect create
default hold
rule reviewed: when phase == prepared and confirmed and audited -> dispatch "confirmed"
)";

ir::Policy load(const std::string& text, const std::string& path) {
  const LoadedPolicy loaded = load_policy_text(text, path);
  EXPECT_TRUE(loaded.policy.has_value()) << render_text(loaded.diagnostics, loaded.source_text);
  return loaded.policy ? loaded.policy->policy : ir::Policy{};
}

TEST(OperatorOnlyCompiler, BothFrontEndsAndPrintersKeepTheMarker) {
  const ir::Policy from_yaml = load(kYaml, "op.yaml");
  const ir::Policy from_dsl = load(kDsl, "op.policy");
  ASSERT_EQ(from_yaml.fields.size(), 4u);
  EXPECT_EQ(from_yaml.fields[0].source, ir::InputSource::kLetter);
  EXPECT_EQ(from_yaml.fields[1].source, ir::InputSource::kOperator);
  EXPECT_EQ(from_yaml.fields[2].source, ir::InputSource::kOperator);
  // `source: letter` is the default, spelled out
  EXPECT_EQ(from_yaml.fields[3].source, ir::InputSource::kLetter);
  EXPECT_EQ(from_yaml, from_dsl);

  const std::string dsl = print_dsl(from_yaml);
  EXPECT_NE(dsl.find("input confirmed: optional bool source operator\n"), std::string::npos) << dsl;
  EXPECT_NE(dsl.find("input note: optional string source operator\n"), std::string::npos) << dsl;
  EXPECT_NE(dsl.find("input audited: bool\n"), std::string::npos) << dsl;
  const std::string yaml = print_yaml(from_dsl);
  EXPECT_NE(yaml.find("  confirmed:\n    type: bool\n    optional: true\n    source: operator\n"),
            std::string::npos)
      << yaml;
  EXPECT_EQ(load(dsl, "again.policy"), from_yaml);
  EXPECT_EQ(load(yaml, "again.yaml"), from_yaml);
}

TEST(OperatorOnlyCompiler, DiffReportsTheMarker) {
  const ir::Policy marked = load(kYaml, "op.yaml");
  ir::Policy unmarked = marked;
  unmarked.fields[1].source = ir::InputSource::kLetter;  // read by the guard
  unmarked.fields[2].source = ir::InputSource::kLetter;  // read by no rule

  PolicyDiff d = diff_policies(marked, unmarked);
  EXPECT_TRUE(d.verb_changes.empty());
  ASSERT_EQ(d.fields.size(), 2u);
  EXPECT_EQ(d.fields[0].name, "confirmed");
  EXPECT_EQ(d.fields[0].change, "no longer operator-only: letters may now set it");
  EXPECT_TRUE(d.fields[0].more_dangerous);
  EXPECT_EQ(d.fields[1].name, "note");
  EXPECT_FALSE(d.fields[1].more_dangerous);  // no rule reads it: letters gain nothing
  EXPECT_TRUE(d.any_more_dangerous());

  d = diff_policies(unmarked, marked);
  ASSERT_EQ(d.fields.size(), 2u);
  EXPECT_EQ(d.fields[0].change, "now set only by an operator (letters no longer set it)");
  EXPECT_FALSE(d.fields[0].more_dangerous);
  EXPECT_FALSE(d.any_more_dangerous());

  EXPECT_TRUE(diff_policies(marked, marked).fields.empty());
}

}  // namespace
}  // namespace replaygate
