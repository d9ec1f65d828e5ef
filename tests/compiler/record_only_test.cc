// Record-only inputs (`source: record`) in the compiler: both front-ends give the same IR, both
// printers keep the marker, the table gets the record-fields flag (and a policy without the marker
// keeps flags 0), and the semantic diff counts a looser source of an input the rules read as more
// dangerous (record -> letter, operator -> record).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "compiler/analysis/diff.h"
#include "compiler/compile.h"
#include "compiler/ir.h"
#include "compiler/lower.h"
#include "compiler/syntax/print_dsl.h"
#include "compiler/syntax/print_yaml.h"
#include "runtime/table_format.h"

namespace replaygate {
namespace {

const char* const kYaml = R"(policy: rec
revision: 1
inputs:
  phase: {type: enum, values: [prepared, accepted], source: record}
  budget: {type: int, optional: true, source: record}
  confirmed: {type: bool, optional: true, source: operator}
  note: {type: string, optional: true, source: record}
verbs:
  hold: {effect: none}
  dispatch: {effect: create}
default: hold
rules:
  - guard: reviewed
    when: {phase: prepared, budget: {gt: 0}, confirmed: true}
    verb: dispatch
    reason: allowed
)";

const char* const kDsl = R"(policy rec revision 1
input phase: enum (prepared, accepted) source record
input budget: optional int source record
input confirmed: optional bool source operator
input note: optional string source record
verb hold effect none
verb dispatch effect create
default hold
rule reviewed: when phase == prepared and budget > 0 and confirmed -> dispatch "allowed"
)";

ir::Policy load(const std::string& text, const std::string& path) {
  const LoadedPolicy loaded = load_policy_text(text, path);
  EXPECT_TRUE(loaded.policy.has_value()) << render_text(loaded.diagnostics, loaded.source_text);
  return loaded.policy ? loaded.policy->policy : ir::Policy{};
}

uint32_t table_flags(const std::string& text, const std::string& path) {
  const LoadedPolicy loaded = load_policy_text(text, path);
  EXPECT_TRUE(loaded.policy.has_value());
  if (!loaded.policy) return ~0u;
  const std::vector<uint8_t> bytes = lower(*loaded.policy);
  format::Header header;
  std::memcpy(&header, bytes.data(), sizeof header);
  return header.flags;
}

TEST(RecordOnlyCompiler, BothFrontEndsAndPrintersKeepTheMarker) {
  const ir::Policy from_yaml = load(kYaml, "rec.yaml");
  const ir::Policy from_dsl = load(kDsl, "rec.policy");
  ASSERT_EQ(from_yaml.fields.size(), 4u);
  EXPECT_EQ(from_yaml.fields[0].source, ir::InputSource::kRecord);
  EXPECT_EQ(from_yaml.fields[1].source, ir::InputSource::kRecord);
  EXPECT_EQ(from_yaml.fields[2].source, ir::InputSource::kOperator);
  EXPECT_EQ(from_yaml.fields[3].source, ir::InputSource::kRecord);
  EXPECT_EQ(from_yaml, from_dsl);

  const std::string dsl = print_dsl(from_yaml);
  EXPECT_NE(dsl.find("input phase: enum (prepared, accepted) source record\n"), std::string::npos)
      << dsl;
  EXPECT_NE(dsl.find("input budget: optional int source record\n"), std::string::npos) << dsl;
  const std::string yaml = print_yaml(from_dsl);
  EXPECT_NE(yaml.find("  budget:\n    type: int\n    optional: true\n    source: record\n"),
            std::string::npos)
      << yaml;
  EXPECT_EQ(load(dsl, "again.policy"), from_yaml);
  EXPECT_EQ(load(yaml, "again.yaml"), from_yaml);
}

TEST(RecordOnlyCompiler, TheHeaderFlagsSayWhichMarkersThereAre) {
  EXPECT_EQ(table_flags(kYaml, "rec.yaml"),
            format::kFlagOperatorFields | format::kFlagRecordFields);
  std::string record_only = kYaml;
  record_only.replace(record_only.find("source: operator"), 16, "source: letter");
  EXPECT_EQ(table_flags(record_only, "rec.yaml"), format::kFlagRecordFields);
  std::string unmarked = record_only;
  for (size_t at; (at = unmarked.find(", source: record")) != std::string::npos;) {
    unmarked.erase(at, 16);
  }
  EXPECT_EQ(table_flags(unmarked, "rec.yaml"), 0u);  // the bytes of a policy without markers
}

TEST(RecordOnlyCompiler, DiffCountsALooserSourceAsMoreDangerous) {
  const ir::Policy marked = load(kYaml, "rec.yaml");
  ir::Policy letter = marked;
  letter.fields[0].source = ir::InputSource::kLetter;  // phase: read by the guard
  letter.fields[3].source = ir::InputSource::kLetter;  // note: read by no rule

  PolicyDiff d = diff_policies(marked, letter);
  EXPECT_TRUE(d.verb_changes.empty());
  ASSERT_EQ(d.fields.size(), 2u);
  EXPECT_EQ(d.fields[0].name, "phase");
  EXPECT_EQ(d.fields[0].change, "no longer record-only: letters may now set it");
  EXPECT_TRUE(d.fields[0].more_dangerous);
  EXPECT_EQ(d.fields[1].name, "note");
  EXPECT_FALSE(d.fields[1].more_dangerous);  // no rule reads it
  EXPECT_TRUE(d.any_more_dangerous());

  d = diff_policies(letter, marked);
  ASSERT_EQ(d.fields.size(), 2u);
  EXPECT_EQ(d.fields[0].change,
            "now read only from the operation record (letters no longer set it)");
  EXPECT_FALSE(d.any_more_dangerous());

  // operator -> record: the record file may now set what only --confirm set.
  ir::Policy from_record = marked;
  from_record.fields[2].source = ir::InputSource::kRecord;
  d = diff_policies(marked, from_record);
  ASSERT_EQ(d.fields.size(), 1u);
  EXPECT_EQ(d.fields[0].change, "no longer operator-only: the operation record may now set it");
  EXPECT_TRUE(d.fields[0].more_dangerous);
  d = diff_policies(from_record, marked);
  ASSERT_EQ(d.fields.size(), 1u);
  EXPECT_EQ(d.fields[0].change,
            "now set only by an operator (the operation record no longer sets it)");
  EXPECT_FALSE(d.any_more_dangerous());
}

TEST(RecordOnlyCompiler, UnknownSourceNamesAllThree) {
  std::string text = kYaml;
  text.replace(text.find("source: record"), 14, "source: recrod");
  const LoadedPolicy loaded = load_policy_text(text, "rec.yaml");
  ASSERT_FALSE(loaded.policy.has_value());
  const std::string shown = render_text(loaded.diagnostics, loaded.source_text);
  EXPECT_NE(shown.find("error[RG144]: unknown source 'recrod' for input 'phase'"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("hint: did you mean 'record'?"), std::string::npos) << shown;
}

}  // namespace
}  // namespace replaygate
