// Decision regions (compiler/analysis/regions.h), invariant proofs (compiler/analysis/invariants.h)
// and the policy diff (compiler/analysis/diff.h) on the shipped gate and small hand-built policies,
// with exact values.
#include "compiler/analysis/regions.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "common/json.h"
#include "compiler/analysis/analysis.h"
#include "compiler/analysis/diff.h"
#include "compiler/analysis/invariants.h"
#include "tests/compiler/analysis_builder.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using testing::kStar;
using testing::PolicyBuilder;

// The shipped gate: key absent, committed, exhausted, replayed (one region each), then the table:
// payment.capture 3 rows + the rest of its error classes, inventory.reserve, webhook.partner and
// mail.receipt 2 rows + rest each, and any other topic: 4 + 4 + 3 * 3 + 1 = 18 regions.
TEST(Regions, ShippedGateHasEighteenRegions) {
  const ir::CheckedPolicy gate = testing::reference_gate();
  const RegionResult result = decision_regions(gate.policy);
  ASSERT_TRUE(result.complete);
  EXPECT_EQ(result.regions.size(), 18u);
  std::map<std::optional<uint32_t>, int> per_rule;
  for (const Region& r : result.regions) ++per_rule[r.rule];
  EXPECT_EQ(per_rule[std::nullopt], 5);  // 4 "other error class" regions + any other topic
  for (uint32_t rule = 0; rule < 13; ++rule) EXPECT_EQ(per_rule[rule], 1) << rule;
  // The first region is the first guard's: only idempotency_key is split, to absent.
  const Region& first = result.regions.front();
  EXPECT_EQ(first.rule, std::optional<uint32_t>(0));
  EXPECT_EQ(describe_box(gate.policy, result.partition, first.box), "idempotency_key: absent");
  EXPECT_EQ(example_letter(gate.policy, result.partition, result.domains, first.box),
            "{\"topic\": \"inventory.reserve\", \"error_class\": \"duplicate\", \"attempts\": 0, "
            "\"already_committed\": false, \"replays\": 0}");
}

TEST(Regions, ShippedInvariantsHold) {
  const InvariantReport report = prove_invariants(testing::reference_gate().policy);
  ASSERT_TRUE(report.complete);
  EXPECT_EQ(report.region_count, 18u);
  ASSERT_EQ(report.verdicts.size(), 4u);
  for (const InvariantVerdict& v : report.verdicts) {
    EXPECT_TRUE(v.holds);
    EXPECT_FALSE(v.vacuous);
  }
  EXPECT_TRUE(report.gaps.empty());  // no string domain declared
}

// Dropping the already_committed guard breaks the first invariant, at the earliest replay row.
TEST(Regions, BrokenInvariantNamesTheRuleAndALetter) {
  ir::CheckedPolicy gate = testing::reference_gate();
  gate.policy.rules.erase(gate.policy.rules.begin() + 1);
  gate.source.rules.erase(gate.source.rules.begin() + 1);
  gate.source.conditions.erase(gate.source.conditions.begin() + 1);
  gate.source.rows.erase(gate.source.rows.begin() + 1);
  const InvariantReport report = prove_invariants(gate.policy);
  ASSERT_FALSE(report.verdicts[0].holds);
  EXPECT_EQ(report.verdicts[0].violating_regions, 4u);             // the four replay_once rows
  EXPECT_EQ(report.verdicts[0].rule, std::optional<uint32_t>(3));  // known_failures row 0
  EXPECT_EQ(report.verdicts[0].counterexample,
            "{\"topic\": \"payment.capture\", \"error_class\": \"timeout\", \"attempts\": 0, "
            "\"idempotency_key\": \"other\", \"already_committed\": true, \"replays\": 0}");
  for (size_t i = 1; i < 4; ++i) EXPECT_TRUE(report.verdicts[i].holds) << i;
  const auto diagnostics = region_diagnostics(gate);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].code, "RG210");
  EXPECT_EQ(diagnostics[0].span.line, 102u);
  EXPECT_EQ(diagnostics[0].message,
            "invariant 'committed_is_never_replayed' does not hold: row "
            "'known_failures:payment.capture/timeout' (line 81) gives 'replay_once' (effect "
            "create) to {\"topic\": \"payment.capture\", \"error_class\": \"timeout\", "
            "\"attempts\": 0, \"idempotency_key\": \"other\", \"already_committed\": true, "
            "\"replays\": 0} (4 regions of inputs break it)");
}

// Wildcard rows stay merged: a `*` column is never split when no row needs it.
TEST(Regions, WildcardColumnsStayAll) {
  PolicyBuilder b;
  b.string_field("topic").string_field("error");
  b.table("t", {"topic", "error"}, 10)
      .row({"a", kStar}, "never", 11)
      .row({"a", "x"}, "replay_once", 12);
  const RegionResult result = decision_regions(b.get().policy);
  ASSERT_EQ(result.regions.size(), 3u);
  std::set<std::string> described;
  for (const Region& r : result.regions) {
    described.insert(describe_box(b.get().policy, result.partition, r.box) + " -> " +
                     b.get().policy.verbs[r.verb].name);
  }
  EXPECT_EQ(described, (std::set<std::string>{"topic: \"a\", error: \"x\" -> replay_once",
                                              "topic: \"a\", error: <other> -> never",
                                              "topic: <other> -> hold"}));
}

TEST(Regions, BudgetRunsOut) {
  const RegionResult result = decision_regions(testing::reference_gate().policy, 5);
  EXPECT_FALSE(result.complete);
}

// "LINE SEVERITY CODE: MESSAGE | HINT" for each diagnostic.
std::vector<std::string> diagnostic_lines(const std::vector<Diagnostic>& diagnostics) {
  std::vector<std::string> got;
  for (const Diagnostic& d : diagnostics) {
    got.push_back(std::to_string(d.span.line) + " " + severity_name(d.severity) + " " + d.code +
                  ": " + d.message + " | " + d.hint);
  }
  return got;
}

// The reference gate's diagnostics when the region walk gets 5 units of work: RG213 for each
// invariant (none was proven yet, fail closed) and RG212 (the regions, hence gaps, are incomplete).
std::vector<std::string> gate_out_of_region_budget() {
  const std::string hint =
      " | split large wildcard tables or guards so the policy has fewer regions";
  const std::string rg213 = " error RG213: invariant '";
  const std::string why = "' could not be proven: the analysis ran out of its work budget";
  return {
      "102" + rg213 + "committed_is_never_replayed" + why + hint,
      "107" + rg213 + "no_key_no_replay" + why + hint,
      "112" + rg213 + "exhausted_waits_or_parks" + why + hint,
      "117" + rg213 + "replay_once_means_once" + why + hint,
      "0 info RG212: decision regions incomplete: the analysis stopped after 0 "
      "regions; gaps were not all reported | the compiled decisions are not "
      "affected",
  };
}

// RG213 and RG212 from the region stage, with their exact text and spans.
TEST(Regions, BudgetRunsOutBeforeTheInvariantsAreProven) {
  const ir::CheckedPolicy gate = testing::reference_gate();
  EXPECT_EQ(diagnostic_lines(region_diagnostics(gate, 5)), gate_out_of_region_budget());
  // With the default budget the shipped gate's invariants are all proven: neither code appears.
  EXPECT_TRUE(region_diagnostics(gate).empty());
}

// The same through the analysis: analyze_with_budget hands its region budget to the region stage.
TEST(Regions, AnalysisRegionBudgetReachesTheRegionStage) {
  const ir::CheckedPolicy gate = testing::reference_gate();
  AnalysisBudget budget;
  budget.regions = 5;
  EXPECT_EQ(diagnostic_lines(analyze_with_budget(gate, budget)), gate_out_of_region_budget());
  EXPECT_EQ(diagnostic_lines(analyze_with_budget(gate, {})), diagnostic_lines(analyze(gate)));
  EXPECT_TRUE(analyze(gate).empty());
}

TEST(Regions, GapsOnlyWithDomains) {
  PolicyBuilder b;
  b.string_field("topic");
  b.table("t", {"topic"}, 10).row({"a"}, "never", 11);
  ir::CheckedPolicy policy = b.get();
  EXPECT_TRUE(prove_invariants(policy.policy).gaps.empty());
  policy.policy.fields[0].domain = {"a", "b", "c"};
  const InvariantReport report = prove_invariants(policy.policy);
  ASSERT_EQ(report.gaps.size(), 1u);
  const Partition partition = analysis_partition(policy.policy);
  EXPECT_EQ(describe_box(policy.policy, partition, report.gaps[0].box), "topic: \"b\" | \"c\"");
}

TEST(Regions, ExampleValues) {
  EXPECT_EQ(json_string("a\"b\\c\n", JsonText::kBytes), "\"a\\\"b\\\\c\\u000a\"");
  FieldPartition ints;
  ints.type = ir::FieldType::kInt;
  ints.cuts = {0, 3, 10};
  ints.min = 0;
  ints.atom_count = 5;
  EXPECT_EQ(example_value(ints, 2, false).i, 0);   // [0, 3)
  EXPECT_EQ(example_value(ints, 3, false).i, 3);   // [3, 10)
  EXPECT_EQ(example_value(ints, 4, false).i, 10);  // [10, +inf)
  FieldPartition strings;
  strings.type = ir::FieldType::kString;
  strings.strings = {"other", "other1"};
  strings.atom_count = 4;
  EXPECT_EQ(example_value(strings, kAtomOther, false).str, "other2");
  EXPECT_EQ(example_value(strings, 2, false).str, "other");
}

TEST(Diff, IdenticalPoliciesHaveNoChanges) {
  const ir::Policy gate = testing::reference_gate().policy;
  const PolicyDiff d = diff_policies(gate, gate);
  EXPECT_TRUE(d.complete);
  EXPECT_TRUE(d.fields.empty());
  EXPECT_TRUE(d.verb_changes.empty());
  EXPECT_TRUE(d.provenance_changes.empty());
  EXPECT_EQ(d.regions, 18u);
}

TEST(Diff, BoundsChangeMakesInputsInvalid) {
  const ir::Policy old_gate = testing::reference_gate().policy;
  ir::Policy new_gate = old_gate;
  new_gate.fields[2].max = 9;  // attempts
  const PolicyDiff d = diff_policies(old_gate, new_gate);
  ASSERT_EQ(d.fields.size(), 1u);
  EXPECT_EQ(d.fields[0].name, "attempts");
  EXPECT_EQ(d.fields[0].change, "bounds [0, none] -> [0, 9]");
  ASSERT_EQ(d.verb_changes.size(), 1u);  // never -> hold for committed inputs with attempts > 9
  EXPECT_EQ(d.verb_changes[0].old_verb, "never");
  EXPECT_EQ(d.verb_changes[0].new_verb, "hold");
  EXPECT_EQ(d.verb_changes[0].new_rules, std::vector<std::string>{"invalid input"});
  EXPECT_FALSE(d.any_more_dangerous());
}

// Without empty_means_absent an empty key is a string again: the letters that held as "no key"
// now replay, in a region of their own (the empty string).
TEST(Diff, EmptyStringIsItsOwnRegionWhenOneSideReadsItAsAbsent) {
  const ir::Policy old_gate = testing::reference_gate().policy;
  ir::Policy new_gate = old_gate;
  size_t key = 0;
  while (key < new_gate.fields.size() && new_gate.fields[key].name != "idempotency_key") ++key;
  ASSERT_LT(key, new_gate.fields.size());
  ASSERT_TRUE(new_gate.fields[key].empty_means_absent);
  new_gate.fields[key].empty_means_absent = false;
  const PolicyDiff d = diff_policies(old_gate, new_gate);
  ASSERT_EQ(d.fields.size(), 1u);
  EXPECT_EQ(d.fields[0].change, "no longer empty_means_absent");
  EXPECT_TRUE(d.any_more_dangerous());
  bool found = false;
  for (const DiffGroup& g : d.verb_changes) {
    if (!g.more_dangerous()) continue;
    found = true;
    EXPECT_EQ(g.old_verb, "hold");
    EXPECT_NE(g.example.find("\"idempotency_key\": \"\""), std::string::npos) << g.example;
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(d.unresolved, 0u);
  // Back again: only safer changes.
  const PolicyDiff back = diff_policies(new_gate, old_gate);
  EXPECT_FALSE(back.any_more_dangerous());
  EXPECT_FALSE(back.verb_changes.empty());
}

}  // namespace
}  // namespace replaygate

namespace replaygate {
namespace {

// RG207: crossing wildcard rows with different verbs and different specificity.
TEST(Overlap, CrossingWildcardRowsAreNamed) {
  testing::PolicyBuilder b;
  b.string_field("topic").string_field("error_class").string_field("region");
  b.table("t", {"topic", "error_class", "region"}, 10)
      .row({"orders", testing::kStar, testing::kStar}, "never", 11)
      .row({testing::kStar, "timeout", "eu"}, "replay_once", 12);
  const auto diagnostics = analyze(b.get());
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].code, "RG207");
  EXPECT_EQ(diagnostics[0].severity, Severity::kInfo);
  EXPECT_EQ(diagnostics[0].span.line, 12u);
  EXPECT_EQ(diagnostics[0].message,
            "wildcard rows 't:*/timeout/eu' and 't:orders/*/*' (line 11) of table 't' overlap on "
            "[orders, timeout, eu]: 't:*/timeout/eu' decides there ('replay_once', not 'never') "
            "(more concrete keys)");
  // An exact row for the overlap settles it.
  b.row({"orders", "timeout", "eu"}, "hold", 13);
  EXPECT_TRUE(analyze(b.get()).empty());
}

}  // namespace
}  // namespace replaygate
