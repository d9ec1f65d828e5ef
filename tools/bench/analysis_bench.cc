// Analysis speed on big synthetic policies: check + analysis (shadowing/conflicts, decision
// regions, invariants) for tables of 10,000 and 1,000,000 rows behind 20 guards.
//
// Targets (issue 3): 10,000 rows + 20 guards under 1 s; 1,000,000 rows under 1 min.
// Run: build/bin/rg_analysis_bench --benchmark_filter=. (see docs/benchmarks.md, "## Analysis").
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "compiler/analysis/analysis.h"
#include "compiler/analysis/invariants.h"
#include "compiler/analysis/regions.h"
#include "compiler/check.h"
#include "compiler/compile.h"

namespace replaygate {
namespace {

// Fields: 0 topic, 1 error_class (strings), 2 attempts (int >= 0), 3 key (optional string),
// 4 committed (bool), 5 replays (optional int >= 0), 6 region (enum), 7 partner (string).
// 20 guards: single conditions on every field kind, plus a few two-condition guards; then one
// table keyed on (topic, error_class) with `rows` distinct concrete tuples, a tenth of them with
// a wildcard error_class; and two invariants.
ir::CheckedPolicy synthetic_policy(size_t rows) {
  ir::CheckedPolicy checked;
  ir::Policy& p = checked.policy;
  p.id = "bench";
  p.revision = 1;
  const auto field = [&](const char* name, ir::FieldType type, bool optional) {
    ir::Field f;
    f.name = name;
    f.type = type;
    f.optional = optional;
    p.fields.push_back(f);
  };
  field("topic", ir::FieldType::kString, false);
  field("error_class", ir::FieldType::kString, false);
  field("attempts", ir::FieldType::kInt, false);
  p.fields.back().min = 0;
  field("key", ir::FieldType::kString, true);
  field("committed", ir::FieldType::kBool, false);
  field("replays", ir::FieldType::kInt, true);
  p.fields.back().min = 0;
  field("region", ir::FieldType::kEnum, false);
  p.fields.back().enum_values = {"eu", "us", "ap", "sa"};
  field("partner", ir::FieldType::kString, false);
  p.verbs = {{"hold", ir::Effect::kNone, ""},
             {"never", ir::Effect::kNone, ""},
             {"peek", ir::Effect::kRead, ""},
             {"replay_once", ir::Effect::kCreate, ""}};
  p.default_verb = 0;
  const auto guard = [&](std::string id, std::vector<ir::Condition> conditions, uint32_t verb) {
    p.rules.emplace_back(ir::Guard{std::move(id), "r", std::move(conditions), verb});
  };
  using V = ir::Value;
  guard("g0", {{3, ir::Op::kAbsent, {}, ""}}, 0);
  guard("g1", {{4, ir::Op::kEq, {V::Bool(true)}, ""}}, 1);
  guard("g2", {{2, ir::Op::kGe, {V::Int(5)}, ""}}, 0);
  guard("g3", {{5, ir::Op::kGe, {V::Int(1)}, ""}}, 0);
  for (int i = 0; i < 8; ++i) {
    guard("p" + std::to_string(i),
          {{7, ir::Op::kEq, {V::String("partner" + std::to_string(i))}, ""}}, i % 2 == 0 ? 1 : 2);
  }
  guard("r0", {{6, ir::Op::kEq, {V::String("sa")}, ""}}, 0);
  guard("r1", {{6, ir::Op::kIn, {V::String("ap")}, ""}, {2, ir::Op::kGe, {V::Int(3)}, ""}}, 0);
  guard("k0", {{3, ir::Op::kIn, {V::String("legacy"), V::String("test")}, ""}}, 1);
  guard("a0", {{2, ir::Op::kEq, {V::Int(4)}, ""}, {6, ir::Op::kEq, {V::String("us")}, ""}}, 2);
  guard("t0", {{0, ir::Op::kEq, {V::String("topic0")}, ""}, {2, ir::Op::kGe, {V::Int(2)}, ""}}, 0);
  guard("e0", {{1, ir::Op::kEq, {V::String("fatal")}, ""}}, 1);
  guard("e1", {{1, ir::Op::kIn, {V::String("poison"), V::String("schema")}, ""}}, 1);
  guard("x0",
        {{7, ir::Op::kNe, {V::String("partner0")}, ""},
         {2, ir::Op::kLt, {V::Int(1)}, ""},
         {6, ir::Op::kEq, {V::String("eu")}, ""}},
        2);
  ir::Table table;
  table.id = "t";
  table.key_fields = {0, 1};
  const size_t side = static_cast<size_t>(std::ceil(std::sqrt(static_cast<double>(rows))));
  for (size_t i = 0; i < rows; ++i) {
    ir::Row row;
    const std::string topic = "topic" + std::to_string(i / side);
    const bool wildcard = i % side == 0;  // one wildcard row per topic
    const std::string error = "error" + std::to_string(i % side);
    row.keys = {V::String(topic)};
    if (wildcard) {
      row.keys.emplace_back(std::nullopt);
    } else {
      row.keys.emplace_back(V::String(error));
    }
    row.id = "t:" + topic + "/" + (wildcard ? "*" : error);
    row.verb = wildcard ? 0 : (i % 3 == 0 ? 3 : 1);
    table.rows.push_back(std::move(row));
  }
  p.rules.emplace_back(std::move(table));
  ir::Invariant committed;
  committed.id = "committed_never_creates";
  committed.conditions = {{4, ir::Op::kEq, {V::Bool(true)}, ""}};
  committed.op = ir::InvariantOp::kEffectNot;
  committed.effect = ir::Effect::kCreate;
  p.invariants.push_back(committed);
  ir::Invariant no_key;
  no_key.id = "no_key_no_replay";
  no_key.conditions = {{3, ir::Op::kAbsent, {}, ""}};
  no_key.op = ir::InvariantOp::kVerbNotIn;
  no_key.verbs = {3};
  p.invariants.push_back(no_key);
  checked.source.path = "bench.yaml";
  checked.source_base_name = "bench.yaml";
  return checked;
}

// analyze(): usefulness (RG201-RG206), then the decision regions with the invariant proofs.
void BM_Analyze(benchmark::State& state) {
  const ir::CheckedPolicy policy = synthetic_policy(static_cast<size_t>(state.range(0)));
  size_t diagnostics = 0;
  for (auto _ : state) {
    auto out = analyze(policy);
    diagnostics = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["rows"] = static_cast<double>(state.range(0));
  state.counters["diagnostics"] = static_cast<double>(diagnostics);
}
BENCHMARK(BM_Analyze)->Arg(10'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);

// The decision regions alone (regions.h), counted.
void BM_DecisionRegions(benchmark::State& state) {
  const ir::CheckedPolicy policy = synthetic_policy(static_cast<size_t>(state.range(0)));
  size_t regions = 0;
  for (auto _ : state) {
    RegionResult result = decision_regions(policy.policy);
    regions = result.regions.size();
    benchmark::DoNotOptimize(result);
  }
  state.counters["regions"] = static_cast<double>(regions);
}
BENCHMARK(BM_DecisionRegions)
    ->Arg(10'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The invariant proofs alone (regions visited, not stored).
void BM_ProveInvariants(benchmark::State& state) {
  const ir::CheckedPolicy policy = synthetic_policy(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    InvariantReport report = prove_invariants(policy.policy);
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_ProveInvariants)
    ->Arg(10'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace replaygate

BENCHMARK_MAIN();
