// Properties of the decision-region engine (compiler/analysis/regions.h) and the invariant prover
// (compiler/analysis/invariants.h) on random valid policies:
//  * every region's verb and deciding rule equal the interpreter's and the frozen-table runtime's
//    decision on a random letter drawn from that region;
//  * regions are disjoint: a letter drawn from one region lies in no other;
//  * an invariant counterexample is real: its letter satisfies the premise and gets a verb the
//    invariant forbids; an invariant that holds is not broken by random letters.
#include "compiler/analysis/regions.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "compiler/analysis/invariants.h"
#include "compiler/interpret.h"
#include "tests/properties/policy_gen.h"

namespace replaygate::testing {
namespace {

constexpr size_t kRegionsPerPolicy = 30;

const std::vector<uint32_t>& atoms_of(const Domains& domains, size_t f, const AtomSet& set) {
  return set.all ? domains[f] : set.atoms;
}

// A letter value inside `atom` (random within intervals; a fresh string for "other").
LetterValue value_in_atom(const ir::Field& field, const FieldPartition& part, uint32_t atom) {
  if (atom == kAtomAbsent) return *rc::gen::element(LetterValue::Missing(), LetterValue::Null());
  if (field.type == ir::FieldType::kInt) {
    const size_t k = atom - 1;
    int64_t lo = k == 0 ? std::numeric_limits<int64_t>::min() : part.cuts[k - 1];
    int64_t hi = k == part.cuts.size() ? std::numeric_limits<int64_t>::max() : part.cuts[k] - 1;
    if (field.min) lo = std::max(lo, *field.min);
    if (field.max) hi = std::min(hi, *field.max);
    const int64_t pick = *rc::gen::element(lo, hi, lo + (hi / 2 - lo / 2));
    return LetterValue::Int(pick);
  }
  if (field.type == ir::FieldType::kString && atom == kAtomOther) {
    const ir::Value v = example_value(part, atom, field.empty_means_absent);
    return LetterValue::String(v.str + *rc::gen::element<std::string>("", "x", "-zz"));
  }
  const ir::Value v = example_value(part, atom, field.empty_means_absent);
  if (v.kind == ir::Value::Kind::kBool) return LetterValue::Bool(v.b);
  return LetterValue::String(v.str);
}

Letter letter_in_box(const ir::Policy& policy, const Partition& partition, const Domains& domains,
                     const Box& box) {
  Letter letter(policy.fields.size());
  for (size_t f = 0; f < policy.fields.size(); ++f) {
    const auto& atoms = atoms_of(domains, f, box[f]);
    const uint32_t atom = *rc::gen::elementOf(atoms);
    letter[f] = value_in_atom(policy.fields[f], partition.fields[f], atom);
  }
  return letter;
}

bool box_holds(const Partition& partition, const Domains& domains, const Box& box,
               const std::vector<uint32_t>& point) {
  for (size_t f = 0; f < box.size(); ++f) {
    const auto& atoms = atoms_of(domains, f, box[f]);
    if (!std::binary_search(atoms.begin(), atoms.end(), point[f])) return false;
  }
  (void)partition;
  return true;
}

// The atoms of a valid letter (the interpreter decided it, so it is valid).
std::vector<uint32_t> atoms_of_letter(const ir::Policy& policy, const Partition& partition,
                                      const Letter& letter) {
  std::vector<uint32_t> out(policy.fields.size(), kAtomAbsent);
  for (size_t f = 0; f < policy.fields.size(); ++f) {
    const LetterValue& v = letter[f];
    const FieldPartition& part = partition.fields[f];
    switch (v.kind) {
      case LetterValue::Kind::kString:
        if (v.s.empty() && policy.fields[f].empty_means_absent) break;
        out[f] = part.atom_of(ir::Value::String(v.s));
        break;
      case LetterValue::Kind::kInt:
        out[f] = part.atom_of(ir::Value::Int(v.i));
        break;
      case LetterValue::Kind::kBool:
        out[f] = part.atom_of(ir::Value::Bool(v.b));
        break;
      default:
        break;
    }
  }
  return out;
}

RC_GTEST_PROP(RegionsTest, EveryRegionDecidesLikeInterpreterAndRuntime, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const ir::Policy& policy = checked.policy;
    const RegionResult result = decision_regions(policy);
    RC_ASSERT(result.complete);
    RC_ASSERT(!result.regions.empty());
    const BuiltTable built = build_table_or_fail(checked);
    Input input(*built.table);
    const size_t step = std::max<size_t>(1, result.regions.size() / kRegionsPerPolicy);
    for (size_t r = 0; r < result.regions.size(); r += step) {
      const Region& region = result.regions[r];
      const Letter letter = letter_in_box(policy, result.partition, result.domains, region.box);
      const InterpretResult expected = interpret(policy, letter);
      const InterpretResult actual = runtime_decide(*built.table, letter, &input);
      if (expected != actual || expected.kind == InterpretKind::kInvalidInput) {
        RC_FAIL("letter " + describe_letter(policy, letter) + " from region " +
                describe_box(policy, result.partition, region.box) +
                ": invalid or runtime disagrees");
      }
      if (expected.verb != region.verb ||
          (expected.kind == InterpretKind::kRule) != region.rule.has_value() ||
          (region.rule && *region.rule != expected.rule)) {
        RC_FAIL("region " + describe_box(policy, result.partition, region.box) + " says verb " +
                policy.verbs[region.verb].name + " rule " +
                (region.rule ? std::to_string(*region.rule) : "default") + "; letter " +
                describe_letter(policy, letter) + " gets " + policy.verbs[expected.verb].name +
                " rule " + std::to_string(expected.rule) + "\n" + to_yaml(policy));
      }
      // Disjoint: the letter lies in its region and in no other.
      const auto point = atoms_of_letter(policy, result.partition, letter);
      size_t holders = 0;
      for (const Region& other : result.regions) {
        holders += box_holds(result.partition, result.domains, other.box, point);
      }
      if (holders != 1u) {
        RC_FAIL("letter " + describe_letter(policy, letter) + " lies in " +
                std::to_string(holders) + " regions");
      }
    }
  });
}

// Random letters (gen_letter) land in exactly one region, whose decision they get.
RC_GTEST_PROP(RegionsTest, RandomLettersFallInTheirRegion, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const ir::Policy& policy = checked.policy;
    const RegionResult result = decision_regions(policy);
    const auto letters = gen_letters(policy, 30);
    for (const Letter& letter : letters) {
      const InterpretResult expected = interpret(policy, letter);
      if (expected.kind == InterpretKind::kInvalidInput) continue;
      const auto point = atoms_of_letter(policy, result.partition, letter);
      const Region* found = nullptr;
      size_t holders = 0;
      for (const Region& region : result.regions) {
        if (box_holds(result.partition, result.domains, region.box, point)) {
          found = &region;
          ++holders;
        }
      }
      RC_ASSERT(holders == 1u);
      RC_ASSERT(found->verb == expected.verb);
      RC_ASSERT(found->rule.has_value() == (expected.kind == InterpretKind::kRule));
      if (found->rule) RC_ASSERT(*found->rule == expected.rule);
    }
  });
}

// Invariants with a premise taken from the policy's own guards and a random requirement: a
// counterexample is real, and a proven invariant survives random letters.
RC_GTEST_PROP(RegionsTest, InvariantCounterexamplesAreReal, ()) {
  with_shrink_budget([] {
    ir::CheckedPolicy checked = *gen_policy();
    ir::Policy& policy = checked.policy;
    std::vector<ir::Condition> conditions;
    for (const ir::Rule& rule : policy.rules) {
      if (const auto* g = std::get_if<ir::Guard>(&rule)) {
        conditions.insert(conditions.end(), g->conditions.begin(), g->conditions.end());
      }
    }
    for (int n = 0; n < 4; ++n) {
      ir::Invariant inv;
      inv.id = "inv" + std::to_string(n);
      if (!conditions.empty() && *rc::gen::arbitrary<bool>()) {
        inv.conditions = {*rc::gen::elementOf(conditions)};
      }
      inv.op = *rc::gen::element(ir::InvariantOp::kVerbIn, ir::InvariantOp::kVerbNotIn,
                                 ir::InvariantOp::kEffectAtMost, ir::InvariantOp::kEffectNot);
      inv.verbs = {*rc::gen::inRange<uint32_t>(0, static_cast<uint32_t>(policy.verbs.size()))};
      inv.effect = *rc::gen::element(ir::Effect::kNone, ir::Effect::kRead, ir::Effect::kCopy,
                                     ir::Effect::kCreate);
      policy.invariants.push_back(inv);
    }
    const InvariantReport report = prove_invariants(policy);
    RC_ASSERT(report.complete);
    const Partition partition = analysis_partition(policy);
    const Domains domains = valid_domains(policy, partition);
    const auto letters = gen_letters(policy, 30);
    for (size_t i = 0; i < policy.invariants.size(); ++i) {
      const ir::Invariant& inv = policy.invariants[i];
      const InvariantVerdict& verdict = report.verdicts[i];
      const auto premise = premise_box(inv, partition, domains);
      if (!verdict.holds) {
        const Letter letter = letter_in_box(policy, partition, domains, verdict.counterexample_box);
        const InterpretResult result = interpret(policy, letter);
        RC_ASSERT(result.kind != InterpretKind::kInvalidInput);
        if (result.verb != verdict.verb) {
          RC_FAIL("counterexample " + describe_letter(policy, letter) + " from box " +
                  describe_box(policy, partition, verdict.counterexample_box) + " gets " +
                  policy.verbs[result.verb].name + " not " + policy.verbs[verdict.verb].name +
                  "\n" + to_yaml(policy));
        }
        RC_ASSERT(!invariant_allows(policy, inv, result.verb));
        RC_ASSERT(premise.has_value());
        if (!box_holds(partition, domains, *premise, atoms_of_letter(policy, partition, letter))) {
          RC_FAIL("counterexample " + describe_letter(policy, letter) + " from box " +
                  describe_box(policy, partition, verdict.counterexample_box) +
                  " is outside the premise " + describe_box(policy, partition, *premise));
        }
        continue;
      }
      for (const Letter& letter : letters) {
        const InterpretResult result = interpret(policy, letter);
        if (result.kind == InterpretKind::kInvalidInput || !premise) continue;
        if (!box_holds(partition, domains, *premise, atoms_of_letter(policy, partition, letter))) {
          continue;
        }
        RC_ASSERT(invariant_allows(policy, inv, result.verb));
      }
    }
  });
}

}  // namespace
}  // namespace replaygate::testing
