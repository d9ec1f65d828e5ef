// Classified inputs (issue 20 §3) through the compiler: both front-ends to one IR, the printers
// and lift round trips, check()'s and the analysis' diagnostics, the table section and its
// loader checks, diff on a changed classifier, and the starter fragments deciding real codes.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "compiler/analysis/classifiers.h"
#include "compiler/analysis/diff.h"
#include "compiler/compile.h"
#include "compiler/lift.h"
#include "compiler/lower.h"
#include "compiler/syntax/print_dsl.h"
#include "compiler/syntax/print_yaml.h"
#include "runtime/table.h"
#include "runtime/table_format.h"
#include "tests/support/paths.h"
#include "tests/support/table_bytes.h"

namespace replaygate {
namespace {

namespace fs = std::filesystem;
namespace fm = format;
using testing::TableBytes;

const char* kYaml = R"(policy: c
revision: 1
inputs:
  topic: {type: string}
  http_status: {type: int, optional: true, min: 100, max: 599}
  http_class:
    type: enum
    values: [retryable, permanent, unknown]
    classify:
      from: http_status
      rows:
        - {class: retryable, in: [429, 503]}
        - {class: permanent, range: [400, 499]}
      fallback: unknown
  sqlstate: {type: string, optional: true}
  sql_class:
    type: enum
    values: [retryable, unknown]
    classify: {from: sqlstate, rows: [{class: retryable, prefix: ["40", "53"]}, {class: unknown, in: ["40003"]}], fallback: unknown}
verbs:
  replay_once: {effect: create}
  never: {effect: none}
  hold: {effect: none}
default: hold
rules:
  - guard: retry
    when: {http_class: retryable, sql_class: retryable}
    verb: replay_once
    reason: transient
  - guard: park
    when: {http_class: permanent}
    verb: never
    reason: permanent
)";

const char* kDsl = R"(policy c revision 1
input topic: string
input http_status: optional int >= 100 <= 599
input http_class: enum (retryable, permanent, unknown) classify http_status {
  in (429, 503) -> retryable
  range (400, 499) -> permanent
  fallback unknown
}
input sqlstate: optional string
input sql_class: enum (retryable, unknown) classify sqlstate {
  prefix ("40", "53") -> retryable
  in ("40003") -> unknown
  fallback unknown
}
verb replay_once effect create
verb never effect none
verb hold effect none
default hold
rule retry: when http_class == retryable and sql_class == retryable -> replay_once "transient"
rule park: when http_class == permanent -> never "permanent"
)";

std::string codes(const LoadedPolicy& loaded) {
  std::string out;
  for (const Diagnostic& d : loaded.diagnostics) out += (out.empty() ? "" : " ") + d.code;
  return out;
}

LoadedPolicy compiled(const std::string& text, const std::string& path) {
  LoadedPolicy loaded = load_policy_text(text, path);
  EXPECT_TRUE(loaded.policy) << codes(loaded);
  return loaded;
}

TEST(Classify, YamlBecomesTheIr) {
  const LoadedPolicy loaded = compiled(kYaml, "c.yaml");
  ASSERT_TRUE(loaded.policy);
  const ir::Policy& p = loaded.policy->policy;
  ASSERT_TRUE(p.fields[2].classify);
  const ir::Classifier& c = *p.fields[2].classify;
  EXPECT_EQ(c.from, 1u);
  EXPECT_EQ(c.fallback, 2u);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_EQ(
      c.rows[0],
      (ir::ClassifyRow{ir::ClassifyRow::Kind::kIn, {ir::Value::Int(429), ir::Value::Int(503)}, 0}));
  EXPECT_EQ(c.rows[1],
            (ir::ClassifyRow{
                ir::ClassifyRow::Kind::kRange, {ir::Value::Int(400), ir::Value::Int(499)}, 1}));
  const ir::Classifier& s = *p.fields[4].classify;
  EXPECT_EQ(s.rows[0].kind, ir::ClassifyRow::Kind::kPrefix);
  EXPECT_EQ(s.rows[0].values,
            (std::vector<ir::Value>{ir::Value::String("40"), ir::Value::String("53")}));
  // The row after the prefix "40" that lists "40003" is never reached.
  ASSERT_EQ(loaded.diagnostics.size(), 1u) << codes(loaded);
  EXPECT_EQ(loaded.diagnostics[0].code, "RG216");
  EXPECT_EQ(loaded.diagnostics[0].span.line, 19u);
}

TEST(Classify, DslGivesTheSameIr) {
  const LoadedPolicy yaml = compiled(kYaml, "c.yaml");
  const LoadedPolicy dsl = compiled(kDsl, "c.policy");
  ASSERT_TRUE(yaml.policy && dsl.policy);
  EXPECT_EQ(yaml.policy->policy, dsl.policy->policy);
  EXPECT_EQ(codes(dsl), "RG216");
}

TEST(Classify, PrintersAndFmtRoundTrip) {
  const LoadedPolicy yaml = compiled(kYaml, "c.yaml");
  ASSERT_TRUE(yaml.policy);
  const ir::Policy& p = yaml.policy->policy;
  const LoadedPolicy from_yaml = compiled(print_yaml(p), "again.yaml");
  ASSERT_TRUE(from_yaml.policy);
  EXPECT_EQ(from_yaml.policy->policy, p);
  const std::string dsl_text = print_dsl(p);
  EXPECT_NE(dsl_text.find("classify http_status {\n  in (429, 503) -> retryable\n"),
            std::string::npos)
      << dsl_text;
  const LoadedPolicy from_dsl = compiled(dsl_text, "again.policy");
  ASSERT_TRUE(from_dsl.policy);
  EXPECT_EQ(from_dsl.policy->policy, p);
  const FormatResult formatted = format_dsl(kDsl, "c.policy");
  ASSERT_TRUE(formatted.text);
  const FormatResult again = format_dsl(*formatted.text, "c.policy");
  ASSERT_TRUE(again.text);
  EXPECT_EQ(*again.text, *formatted.text);
  const LoadedPolicy reread = compiled(*formatted.text, "fmt.policy");
  ASSERT_TRUE(reread.policy);
  EXPECT_EQ(reread.policy->policy, p);
}

TEST(Classify, TableLiftsBackAndDumpsTheRows) {
  const LoadedPolicy loaded = compiled(kYaml, "c.yaml");
  ASSERT_TRUE(loaded.policy);
  const TableBytes bytes = lower(*loaded.policy);
  EXPECT_EQ(testing::header_of(bytes).section_count, fm::kMaxSectionCount);
  EXPECT_EQ(testing::section(bytes, fm::kDerivations).length, 0u);
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(table) << status.message;
  const LiftResult lifted = lift(*table);
  ASSERT_TRUE(lifted.policy) << lifted.error;
  EXPECT_EQ(lifted.policy->policy.fields, loaded.policy->policy.fields);
  const std::string dump = table->dump();
  EXPECT_NE(dump.find("classified from http_status, fallback unknown"), std::string::npos) << dump;
  EXPECT_NE(dump.find("classify row 1: range 400..499 -> permanent"), std::string::npos) << dump;
  EXPECT_NE(dump.find("classify row 0: prefix \"53\" -> retryable"), std::string::npos) << dump;
}

TEST(Classify, RuntimeDecidesFromTheRawValue) {
  const LoadedPolicy loaded = compiled(kYaml, "c.yaml");
  ASSERT_TRUE(loaded.policy);
  auto table = testing::load_lowered(*loaded.policy);
  ASSERT_TRUE(table);
  Input input(*table);
  const auto decide = [&](std::optional<int64_t> status, std::optional<std::string> sqlstate) {
    input.clear();
    input.set_string(0, "t");
    if (status) input.set_int(1, *status);
    input.set_string(2, "permanent");  // ignored: the class is computed
    if (sqlstate) input.set_string(3, *sqlstate);
    return std::string(table->verb_name(table->decide(input).verb));
  };
  EXPECT_EQ(decide(503, "40001"), "replay_once");
  EXPECT_EQ(decide(429, "53300"), "replay_once");
  EXPECT_EQ(decide(503, "23505"), "hold");  // sql_class falls back to unknown
  EXPECT_EQ(decide(503, std::nullopt), "hold");
  EXPECT_EQ(decide(404, "40001"), "never");
  EXPECT_EQ(decide(500, "40001"), "hold");  // http_class unknown
  EXPECT_EQ(decide(std::nullopt, "40001"), "hold");
  EXPECT_EQ(decide(600, "40001"), "hold");  // out of bounds: invalid input, the default
}

// ---- analysis ----

TEST(Classify, FallbackThatCanReplayIsAnError) {
  const std::string text = std::string(kYaml) + R"(  - guard: payments
    when: {topic: payment.capture}
    verb: replay_once
    reason: payments
)";
  const LoadedPolicy loaded = load_policy_text(text, "c.yaml");
  EXPECT_FALSE(loaded.policy);
  std::string rg215;
  for (const Diagnostic& d : loaded.diagnostics) {
    if (d.code == "RG215") rg215 += d.message + "\n";
  }
  // Both classifiers' fallbacks reach the replaying guard; the counterexample is a raw value.
  EXPECT_NE(rg215.find("the fallback class 'unknown' of 'http_class' can replay: the policy "
                       "decides 'replay_once' (effect create) for {\"topic\": "
                       "\"payment.capture\", \"http_status\": "),
            std::string::npos)
      << rg215;
  EXPECT_EQ(rg215.find("\"http_class\""), std::string::npos) << rg215;
  EXPECT_NE(rg215.find("of 'sql_class' can replay"), std::string::npos) << rg215;
}

TEST(Classify, UnmentionedClassIsAWarning) {
  std::string text = kYaml;
  text.replace(text.find("values: [retryable, permanent, unknown]"),
               std::strlen("values: [retryable, permanent, unknown]"),
               "values: [retryable, permanent, teapot, unknown]");
  text.replace(text.find("fallback: unknown\n  sqlstate"), std::strlen("fallback: unknown"),
               "fallback: unknown");
  text.replace(text.find("- {class: permanent, range: [400, 499]}"),
               std::strlen("- {class: permanent, range: [400, 499]}"),
               "- {class: teapot, in: [418]}\n        - {class: permanent, range: [400, 499]}");
  const LoadedPolicy loaded = load_policy_text(text, "c.yaml");
  ASSERT_TRUE(loaded.policy) << codes(loaded);
  EXPECT_EQ(codes(loaded), "RG217 RG216") << codes(loaded);
}

TEST(Classify, ShadowedRangeRowIsAWarning) {
  ir::Classifier c;
  c.rows = {{ir::ClassifyRow::Kind::kRange, {ir::Value::Int(400), ir::Value::Int(450)}, 0},
            {ir::ClassifyRow::Kind::kIn, {ir::Value::Int(451)}, 0},
            {ir::ClassifyRow::Kind::kRange, {ir::Value::Int(452), ir::Value::Int(499)}, 0},
            {ir::ClassifyRow::Kind::kRange, {ir::Value::Int(410), ir::Value::Int(499)}, 1},
            {ir::ClassifyRow::Kind::kRange, {ir::Value::Int(410), ir::Value::Int(500)}, 1},
            {ir::ClassifyRow::Kind::kIn, {ir::Value::Int(700)}, 1}};
  ir::Field raw;
  raw.type = ir::FieldType::kInt;
  raw.max = 599;
  EXPECT_TRUE(classify_row_reachable(c, raw, 0));
  EXPECT_TRUE(classify_row_reachable(c, raw, 2));
  EXPECT_FALSE(classify_row_reachable(c, raw, 3));  // 400..499 taken by rows 0-2
  EXPECT_TRUE(classify_row_reachable(c, raw, 4));   // 500 is new
  EXPECT_FALSE(classify_row_reachable(c, raw, 5));  // 700 is above max
}

// ---- diff ----

TEST(Classify, DiffShowsRawValuesThatChangeVerb) {
  const LoadedPolicy before = compiled(kYaml, "old.yaml");
  std::string changed = kYaml;
  changed.replace(changed.find("in: [429, 503]"), std::strlen("in: [429, 503]"),
                  "in: [429, 502, 503]");
  const LoadedPolicy after = compiled(changed, "new.yaml");
  ASSERT_TRUE(before.policy && after.policy);
  const PolicyDiff d = diff_policies(before.policy->policy, after.policy->policy);
  ASSERT_EQ(d.fields.size(), 1u);
  EXPECT_EQ(d.fields[0].name, "http_class");
  EXPECT_EQ(d.fields[0].change, "reclassified http_status 502: unknown -> retryable");
  ASSERT_EQ(d.verb_changes.size(), 1u);
  const DiffGroup& g = d.verb_changes[0];
  EXPECT_EQ(g.old_verb, "hold");
  EXPECT_EQ(g.new_verb, "replay_once");
  EXPECT_TRUE(g.more_dangerous());
  EXPECT_NE(g.example.find("\"http_status\": 502"), std::string::npos) << g.example;
  EXPECT_EQ(g.example.find("http_class"), std::string::npos) << g.example;
  // An unchanged classifier gives no change at all.
  const PolicyDiff same = diff_policies(before.policy->policy, before.policy->policy);
  EXPECT_TRUE(same.fields.empty());
  EXPECT_TRUE(same.verb_changes.empty());
}

// ---- the loader ----

// The classifiers section of kYaml's table, and where its parts are.
struct Forged {
  TableBytes bytes;
  size_t records = 0;   // offset of ClassifierRecord 0
  size_t matchers = 0;  // offset of ClassifierMatcher 0
};
Forged forged() {
  const LoadedPolicy loaded = compiled(kYaml, "c.yaml");
  Forged f;
  f.bytes = lower(*loaded.policy);
  const fm::SectionEntry e = testing::section(f.bytes, fm::kClassifiers);
  const auto h = testing::get<fm::ClassifierHeader>(f.bytes, e.offset);
  f.records = e.offset + sizeof(fm::ClassifierHeader);
  f.matchers = f.records + h.classifier_count * sizeof(fm::ClassifierRecord);
  return f;
}

TEST(Classify, LoaderRejectsMalformedClassifiers) {
  {
    Forged f = forged();
    auto m = testing::get<fm::ClassifierMatcher>(f.bytes,
                                                 f.matchers + sizeof(fm::ClassifierMatcher) * 2);
    ASSERT_EQ(m.kind, fm::kMatchRange);
    std::swap(m.lo, m.hi);
    testing::set(f.bytes, f.matchers + sizeof(fm::ClassifierMatcher) * 2, m);
    testing::reseal(f.bytes);
    testing::expect_load_error(f.bytes, LoadError::kMalformed, "malformed range [499, 400]");
  }
  {
    Forged f = forged();
    auto m = testing::get<fm::ClassifierMatcher>(f.bytes, f.matchers);
    m.cls = 3;
    testing::set(f.bytes, f.matchers, m);
    testing::reseal(f.bytes);
    testing::expect_load_error(f.bytes, LoadError::kBadOffset, "class 3 is out of range");
  }
  {
    Forged f = forged();
    auto r = testing::get<fm::ClassifierRecord>(f.bytes, f.records);
    r.fallback = 9;
    testing::set(f.bytes, f.records, r);
    testing::reseal(f.bytes);
    testing::expect_load_error(f.bytes, LoadError::kBadOffset, "fallback class 9 is out of range");
  }
  {
    Forged f = forged();
    auto m = testing::get<fm::ClassifierMatcher>(f.bytes, f.matchers);
    m.kind = fm::kMatchPrefix;  // a string matcher on the int field
    testing::set(f.bytes, f.matchers, m);
    testing::reseal(f.bytes);
    testing::expect_load_error(f.bytes, LoadError::kMalformed, "does not match the raw field");
  }
  {
    Forged f = forged();
    auto r = testing::get<fm::ClassifierRecord>(f.bytes, f.records);
    r.raw = r.field;
    testing::set(f.bytes, f.records, r);
    testing::reseal(f.bytes);
    testing::expect_load_error(f.bytes, LoadError::kBadOffset, "field index out of range");
  }
  {
    Forged f = forged();
    auto r = testing::get<fm::ClassifierRecord>(f.bytes, f.records);
    r.raw = 0;  // topic is a string, but the matchers are int ones
    testing::set(f.bytes, f.records, r);
    testing::reseal(f.bytes);
    testing::expect_load_error(f.bytes, LoadError::kMalformed, "does not match the raw field");
  }
  {
    // An edit without a new digest is caught by the digests: the section counts.
    Forged f = forged();
    auto m = testing::get<fm::ClassifierMatcher>(f.bytes, f.matchers);
    m.lo = m.hi = 504;
    testing::set(f.bytes, f.matchers, m);
    testing::reseal_checksum(f.bytes);
    EXPECT_NE(testing::load_error(f.bytes).find("digest"), std::string::npos)
        << testing::load_error(f.bytes);
  }
}

TEST(Classify, PoliciesWithoutClassifiersKeepTheirLayout) {
  const LoadedPolicy loaded = compiled(
      "policy: p\nrevision: 1\ninputs:\n  a: {type: int}\nverbs:\n  hold: {effect: "
      "none}\ndefault: hold\nrules: []\n",
      "p.yaml");
  ASSERT_TRUE(loaded.policy);
  EXPECT_EQ(testing::header_of(lower(*loaded.policy)).section_count, fm::kSectionCount);
}

// ---- the starter fragments ----

TEST(Classify, StarterFragmentsCompileCleanly) {
  const fs::path dir = fs::path(RG_SOURCE_DIR) / "policies/classify";
  size_t count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".test.") != std::string::npos) continue;
    ++count;
    const LoadedPolicy loaded = load_policy_file(entry.path().string());
    ASSERT_TRUE(loaded.policy) << name << ": " << codes(loaded);
    EXPECT_EQ(codes(loaded), "") << name;
  }
  EXPECT_GE(count, 8u);  // http, smtp, grpc, sqlstate in both syntaxes
}

}  // namespace
}  // namespace replaygate
