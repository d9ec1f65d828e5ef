// Soundness of `replaygate diff` (compiler/analysis/diff.h) on random policy pairs: a generated
// policy and a mutation of it (empty_means_absent toggled, int bounds widened, a derived bool added
// whose comparison differs between the two sides, guards re-verbed, rules dropped or swapped),
// diffed in both directions. For random letters, whenever the two policies give different verbs the
// diff reports that (old verb, new verb) pair, so a diff without a more dangerous change never
// hides a letter whose verb got more dangerous.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/diff.h"
#include "compiler/interpret.h"
#include "tests/properties/policy_gen.h"

namespace replaygate::testing {
namespace {

constexpr size_t kLettersPerPair = 60;

const std::vector<ir::Op> kComparisons = {ir::Op::kEq, ir::Op::kNe, ir::Op::kLt,
                                          ir::Op::kLe, ir::Op::kGt, ir::Op::kGe};

// Whether some condition or table key of `policy` uses the string "" on field `f`.
bool mentions_empty(const ir::Policy& policy, uint32_t f) {
  for (const ir::Rule& rule : policy.rules) {
    if (const auto* g = std::get_if<ir::Guard>(&rule)) {
      for (const auto& c : g->conditions) {
        if (c.field != f) continue;
        for (const auto& v : c.values) {
          if (v.kind == ir::Value::Kind::kString && v.str.empty()) return true;
        }
      }
      continue;
    }
    const auto& t = std::get<ir::Table>(rule);
    for (size_t k = 0; k < t.key_fields.size(); ++k) {
      if (t.key_fields[k] != f) continue;
      for (const auto& row : t.rows) {
        if (row.keys[k] && row.keys[k]->kind == ir::Value::Kind::kString &&
            row.keys[k]->str.empty()) {
          return true;
        }
      }
    }
  }
  return false;
}

// Appends a derived bool `op(lhs, rhs)` over required int fields and a first guard on it, to
// both policies, with independently drawn comparisons (the interesting case: they differ).
void add_derived(ir::Policy& a, ir::Policy& b) {
  std::vector<uint32_t> ints;
  for (uint32_t f = 0; f < a.fields.size(); ++f) {
    if (a.fields[f].type == ir::FieldType::kInt && !a.fields[f].optional) ints.push_back(f);
  }
  if (ints.empty()) return;
  const bool wanted = *rc::gen::arbitrary<bool>();
  const uint32_t verb_a = *rc::gen::inRange<uint32_t>(0, static_cast<uint32_t>(a.verbs.size()));
  for (ir::Policy* p : {&a, &b}) {
    ir::Field field;
    field.name = "derived_flag";
    field.type = ir::FieldType::kBool;
    field.derived = ir::Derivation{*rc::gen::elementOf(ints), *rc::gen::elementOf(kComparisons),
                                   *rc::gen::elementOf(ints)};
    p->fields.push_back(std::move(field));
    ir::Guard guard;
    guard.id = "on_derived_flag";
    guard.reason = "derived";
    guard.conditions.push_back(
        {static_cast<uint32_t>(p->fields.size() - 1), ir::Op::kEq, {ir::Value::Bool(wanted)}, ""});
    guard.verb =
        p == &a ? verb_a : *rc::gen::inRange<uint32_t>(0, static_cast<uint32_t>(p->verbs.size()));
    p->rules.insert(p->rules.begin(), std::move(guard));
  }
}

ir::Policy mutate(ir::Policy p) {
  const int edits = *rc::gen::inRange(1, 5);
  for (int e = 0; e < edits; ++e) {
    switch (*rc::gen::inRange(0, 5)) {
      case 0: {  // toggle empty_means_absent on a string field
        std::vector<uint32_t> strings;
        for (uint32_t f = 0; f < p.fields.size(); ++f) {
          if (p.fields[f].type == ir::FieldType::kString) strings.push_back(f);
        }
        if (strings.empty()) break;
        const uint32_t f = *rc::gen::elementOf(strings);
        if (!p.fields[f].empty_means_absent && mentions_empty(p, f)) break;
        p.fields[f].empty_means_absent = !p.fields[f].empty_means_absent;
        break;
      }
      case 1: {  // widen an int field's bounds (the reverse diff narrows them)
        std::vector<uint32_t> ints;
        for (uint32_t f = 0; f < p.fields.size(); ++f) {
          if (p.fields[f].type == ir::FieldType::kInt) ints.push_back(f);
        }
        if (ints.empty()) break;
        ir::Field& field = p.fields[*rc::gen::elementOf(ints)];
        if (field.min)
          field.min = *rc::gen::arbitrary<bool>() ? std::nullopt : std::optional(*field.min - 2);
        if (field.max)
          field.max = *rc::gen::arbitrary<bool>() ? std::nullopt : std::optional(*field.max + 3);
        break;
      }
      case 2: {  // another verb for a guard
        std::vector<size_t> guards;
        for (size_t r = 0; r < p.rules.size(); ++r) {
          if (std::holds_alternative<ir::Guard>(p.rules[r])) guards.push_back(r);
        }
        if (guards.empty()) break;
        std::get<ir::Guard>(p.rules[*rc::gen::elementOf(guards)]).verb =
            *rc::gen::inRange<uint32_t>(0, static_cast<uint32_t>(p.verbs.size()));
        break;
      }
      case 3:  // drop a rule
        if (p.rules.size() > 1) {
          p.rules.erase(p.rules.begin() + *rc::gen::inRange<size_t>(0, p.rules.size()));
        }
        break;
      case 4:  // swap two adjacent rules
        if (p.rules.size() > 1) {
          const size_t r = *rc::gen::inRange<size_t>(0, p.rules.size() - 1);
          std::swap(p.rules[r], p.rules[r + 1]);
        }
        break;
    }
  }
  return p;
}

// Letters of `source`, some with an int operand copied onto another (equal values are where
// lt and le, or eq and ge, part ways).
std::vector<Letter> letters_for(const ir::Policy& source, const ir::Policy& any) {
  std::vector<Letter> letters = gen_letters(source, kLettersPerPair);
  std::vector<uint32_t> ints;
  for (uint32_t f = 0; f < any.fields.size(); ++f) {
    if (any.fields[f].type == ir::FieldType::kInt) ints.push_back(f);
  }
  for (Letter& letter : letters) {
    letter.resize(any.fields.size());
    if (ints.size() >= 2 && *rc::gen::inRange(0, 3) == 0) {
      const uint32_t from = *rc::gen::elementOf(ints);
      const uint32_t to = *rc::gen::elementOf(ints);
      if (letter[from].kind == LetterValue::Kind::kInt) {
        // Saturating, so that the int64 extremes the letters hold do not overflow.
        const int64_t v = letter[from].i, delta = *rc::gen::inRange<int64_t>(-1, 2);
        const bool stuck = (delta < 0 && v == std::numeric_limits<int64_t>::min()) ||
                           (delta > 0 && v == std::numeric_limits<int64_t>::max());
        letter[to] = LetterValue::Int(stuck ? v : v + delta);
      }
    }
  }
  return letters;
}

void check_pair(const ir::Policy& a, const ir::Policy& b, const std::vector<Letter>& letters) {
  const PolicyDiff diff = diff_policies(a, b);
  RC_ASSERT(diff.complete);
  for (const Letter& letter : letters) {
    const ir::Verb& old_verb = a.verbs[interpret(a, letter).verb];
    const ir::Verb& new_verb = b.verbs[interpret(b, letter).verb];
    if (old_verb == new_verb) continue;
    const bool reported =
        std::any_of(diff.verb_changes.begin(), diff.verb_changes.end(), [&](const DiffGroup& g) {
          return g.old_verb == old_verb.name && g.new_verb == new_verb.name;
        });
    if (!reported) {
      RC_FAIL("unreported verb change " + old_verb.name + " -> " + new_verb.name + " for " +
              describe_letter(b, letter) + "\nold:\n" + to_yaml(a) + "\nnew:\n" + to_yaml(b));
    }
    if (new_verb.effect > old_verb.effect) RC_ASSERT(diff.any_more_dangerous());
  }
}

RC_GTEST_PROP(DiffSoundness, NoUnreportedVerbChange, ()) {
  with_shrink_budget([] {
    ir::Policy a = (*gen_policy()).policy;
    ir::Policy b = mutate(a);
    if (*rc::gen::inRange(0, 3) != 0) add_derived(a, b);
    RC_TAG(a.fields.back().derived ? "derived" : "no derived");
    std::vector<Letter> letters = letters_for(a, a);
    const std::vector<Letter> more = letters_for(b, a);
    letters.insert(letters.end(), more.begin(), more.end());
    check_pair(a, b, letters);
    check_pair(b, a, letters);
  });
}

}  // namespace
}  // namespace replaygate::testing
