// Properties: usefulness and the whole analysis agree with brute-force enumeration on tiny domains.
#include "compiler/analysis/usefulness.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/analysis.h"
#include "tests/compiler/analysis_builder.h"

namespace replaygate {
namespace {

using Domains = std::vector<std::vector<uint32_t>>;

bool in_set(const AtomSet& set, uint32_t atom) {
  return set.all || std::find(set.atoms.begin(), set.atoms.end(), atom) != set.atoms.end();
}

bool in_box(const Box& box, const std::vector<uint32_t>& tuple) {
  for (size_t f = 0; f < box.size(); ++f) {
    if (!in_set(box[f], tuple[f])) return false;
  }
  return true;
}

AtomSet random_set(const std::vector<uint32_t>& domain) {
  if (*rc::gen::inRange(0, 3) == 0) return AtomSet{};
  AtomSet set;
  set.all = false;
  for (uint32_t atom : domain) {
    if (*rc::gen::arbitrary<bool>()) set.atoms.push_back(atom);
  }
  return set;
}

// Calls `visit` on every tuple of the domains' product.
template <typename Visit>
void for_each_tuple(const Domains& domains, Visit visit) {
  std::vector<size_t> index(domains.size(), 0);
  std::vector<uint32_t> tuple(domains.size());
  while (true) {
    for (size_t f = 0; f < domains.size(); ++f) tuple[f] = domains[f][index[f]];
    visit(tuple);
    size_t f = 0;
    while (f < domains.size() && ++index[f] == domains[f].size()) index[f++] = 0;
    if (f == domains.size()) return;
  }
}

RC_GTEST_PROP(UsefulnessProperty, AgreesWithEnumeration, ()) {
  const int field_count = *rc::gen::inRange(2, 4);
  Domains domains(field_count);
  for (auto& domain : domains) {
    for (uint32_t atom = 0; atom < 6; ++atom) {
      if (*rc::gen::inRange(0, 3) != 0) domain.push_back(atom);
    }
    if (domain.empty()) domain.push_back(*rc::gen::inRange<uint32_t>(0, 6));
  }
  auto random_box = [&] {
    Box box;
    for (const auto& domain : domains) box.push_back(random_set(domain));
    return box;
  };
  Box candidate = random_box();
  std::vector<Box> rows(*rc::gen::inRange(0, 8));
  for (auto& row : rows) row = random_box();
  std::vector<const Box*> row_ptrs;
  for (const auto& row : rows) row_ptrs.push_back(&row);

  bool expected_uncovered = false;
  for_each_tuple(domains, [&](const std::vector<uint32_t>& tuple) {
    if (!in_box(candidate, tuple)) return;
    for (const auto& row : rows) {
      if (in_box(row, tuple)) return;
    }
    expected_uncovered = true;
  });

  uint64_t budget = 1'000'000;
  CoverageResult result = find_uncovered(domains, candidate, row_ptrs, budget);
  RC_ASSERT(result.coverage == (expected_uncovered ? Coverage::kUncovered : Coverage::kCovered));
  if (expected_uncovered) {
    RC_ASSERT(in_box(candidate, result.witness));
    for (const auto& row : rows) RC_ASSERT(!in_box(row, result.witness));
  }
}

TEST(UsefulnessTest, WitnessAndBudget) {
  const Domains domains = {{1, 2, 3}, {0, 1}};
  const Box candidate = {AtomSet{}, AtomSet{}};
  const Box low = {AtomSet{false, {1, 2}}, AtomSet{}};
  const Box three_zero = {AtomSet{false, {3}}, AtomSet{false, {0}}};
  const Box three_one = {AtomSet{false, {3}}, AtomSet{false, {1}}};
  uint64_t budget = 1000;
  CoverageResult open = find_uncovered(domains, candidate, {&low, &three_zero}, budget);
  EXPECT_EQ(open.coverage, Coverage::kUncovered);
  EXPECT_EQ(open.witness, (std::vector<uint32_t>{3, 1}));
  CoverageResult closed =
      find_uncovered(domains, candidate, {&low, &three_zero, &three_one}, budget);
  EXPECT_EQ(closed.coverage, Coverage::kCovered);
  uint64_t tiny = 3;
  EXPECT_EQ(find_uncovered(domains, candidate, {&low, &three_zero, &three_one}, tiny).coverage,
            Coverage::kGaveUp);
  EXPECT_EQ(tiny, 0u);
  const Box empty = {AtomSet{false, {}}, AtomSet{}};
  EXPECT_EQ(find_uncovered(domains, empty, {}, budget).coverage, Coverage::kCovered);
}

// ---- the whole analysis against a brute-force evaluator over concrete values ----

using Input = std::vector<std::optional<ir::Value>>;  // per field; nullopt = absent

bool holds(const ir::Condition& c, const std::optional<ir::Value>& v) {
  if (c.op == ir::Op::kAbsent) return !v;
  if (c.op == ir::Op::kPresent) return v.has_value();
  if (!v) return false;
  auto in_values = [&] {
    for (const auto& x : c.values) {
      if (x == *v) return true;
    }
    return false;
  };
  switch (c.op) {
    case ir::Op::kEq:
    case ir::Op::kIn:
      return in_values();
    case ir::Op::kNe:
    case ir::Op::kNotIn:
      return !in_values();
    case ir::Op::kLt:
      return v->i < c.values[0].i;
    case ir::Op::kLe:
      return v->i <= c.values[0].i;
    case ir::Op::kGt:
      return v->i > c.values[0].i;
    case ir::Op::kGe:
      return v->i >= c.values[0].i;
    default:
      return false;
  }
}

bool guard_matches(const ir::Guard& g, const Input& in) {
  for (const auto& c : g.conditions) {
    if (!holds(c, in[c.field])) return false;
  }
  return true;
}

bool row_matches(const ir::Table& t, const ir::Row& row, const Input& in) {
  for (size_t p = 0; p < t.key_fields.size(); ++p) {
    if (row.keys[p] && !(in[t.key_fields[p]] && *in[t.key_fields[p]] == *row.keys[p])) {
      return false;
    }
  }
  return true;
}

int concrete(const ir::Row& row) {
  int n = 0;
  for (const auto& k : row.keys) n += k.has_value();
  return n;
}

// Every valid input over the values the random policies can mention (and one they cannot).
std::vector<Input> valid_inputs(const ir::Policy& policy) {
  std::vector<std::vector<std::optional<ir::Value>>> per_field;
  for (const auto& f : policy.fields) {
    std::vector<std::optional<ir::Value>> values;
    if (f.optional) values.push_back(std::nullopt);
    switch (f.type) {
      case ir::FieldType::kString:
        for (const char* s : {"", "a", "b", "zz"}) {
          if (f.empty_means_absent && *s == '\0') continue;  // reads as absent
          values.push_back(ir::Value::String(s));
        }
        break;
      case ir::FieldType::kEnum:
        for (const auto& s : f.enum_values) values.push_back(ir::Value::String(s));
        break;
      case ir::FieldType::kBool:
        values.push_back(ir::Value::Bool(false));
        values.push_back(ir::Value::Bool(true));
        break;
      case ir::FieldType::kInt:
        for (int64_t i = -3; i <= 6; ++i) {
          if ((f.min && i < *f.min) || (f.max && i > *f.max)) continue;
          values.push_back(ir::Value::Int(i));
        }
        break;
    }
    per_field.push_back(std::move(values));
  }
  std::vector<Input> out;
  Input in(per_field.size());
  std::vector<size_t> index(per_field.size(), 0);
  while (true) {
    for (size_t f = 0; f < per_field.size(); ++f) in[f] = per_field[f][index[f]];
    out.push_back(in);
    size_t f = 0;
    while (f < per_field.size() && ++index[f] == per_field[f].size()) index[f++] = 0;
    if (f == per_field.size()) return out;
  }
}

// Line numbering of the random policies: rule r at 100*(r+1), its conditions at +2+k, its rows
// at +10+i. A finding is named "CODE rule/row".
uint32_t rule_line(size_t r) { return 100 * static_cast<uint32_t>(r + 1); }

std::string finding(const std::string& code, size_t rule, size_t row) {
  return code + " " + std::to_string(rule) + "/" + std::to_string(row);
}

std::set<std::string> expected_findings(const ir::Policy& policy) {
  std::vector<Input> inputs = valid_inputs(policy);
  std::set<std::string> out;
  std::set<std::pair<size_t, size_t>> reached, never_true, duplicate;
  for (size_t r = 0; r < policy.rules.size(); ++r) {
    if (const auto* g = std::get_if<ir::Guard>(&policy.rules[r])) {
      bool any = false;
      for (const auto& in : inputs) any = any || guard_matches(*g, in);
      if (!any) never_true.insert({r, 0}), out.insert(finding("RG201", r, 0));
      continue;
    }
    const auto& t = std::get<ir::Table>(policy.rules[r]);
    for (size_t i = 0; i < t.rows.size(); ++i) {
      bool any = false;
      for (const auto& in : inputs) any = any || row_matches(t, t.rows[i], in);
      if (!any) never_true.insert({r, i}), out.insert(finding("RG205", r, i));
      for (size_t j = 0; j < i; ++j) {
        if (t.rows[j].keys == t.rows[i].keys) {
          duplicate.insert({r, i});
          out.insert(finding("RG203", r, i));
          break;
        }
      }
    }
    // RG204: equally specific rows with different verbs that an input hits as the best match.
    for (const auto& in : inputs) {
      int best = -1;
      std::vector<size_t> top;
      for (size_t i = 0; i < t.rows.size(); ++i) {
        if (!row_matches(t, t.rows[i], in)) continue;
        int c = concrete(t.rows[i]);
        if (c > best) best = c, top.clear();
        if (c == best) top.push_back(i);
      }
      for (size_t a = 0; a < top.size(); ++a) {
        for (size_t b = a + 1; b < top.size(); ++b) {
          const auto& ra = t.rows[top[a]];
          const auto& rb = t.rows[top[b]];
          if (ra.verb != rb.verb && ra.keys != rb.keys && !duplicate.count({r, top[b]})) {
            out.insert(finding("RG204", r, top[b]));
          }
        }
      }
    }
  }
  for (const auto& in : inputs) {
    for (size_t r = 0; r < policy.rules.size(); ++r) {
      if (const auto* g = std::get_if<ir::Guard>(&policy.rules[r])) {
        if (guard_matches(*g, in)) {
          reached.insert({r, 0});
          break;
        }
        continue;
      }
      const auto& t = std::get<ir::Table>(policy.rules[r]);
      std::optional<size_t> winner;
      for (size_t i = 0; i < t.rows.size(); ++i) {
        if (row_matches(t, t.rows[i], in) &&
            (!winner || concrete(t.rows[i]) > concrete(t.rows[*winner]))) {
          winner = i;
        }
      }
      if (winner) {
        reached.insert({r, *winner});
        // RG206: an absent optional value reaches a row with a doing verb through a '*' key.
        const ir::Row& row = t.rows[*winner];
        if (policy.verbs[row.verb].effect != ir::Effect::kNone) {
          for (size_t p = 0; p < t.key_fields.size(); ++p) {
            const uint32_t f = t.key_fields[p];
            if (!row.keys[p] && policy.fields[f].optional && !in[f]) {
              out.insert(finding("RG206", r, *winner));
              break;
            }
          }
        }
        break;
      }
    }
  }
  for (size_t r = 0; r < policy.rules.size(); ++r) {
    size_t rows = 1;
    if (const auto* t = std::get_if<ir::Table>(&policy.rules[r])) rows = t->rows.size();
    for (size_t i = 0; i < rows; ++i) {
      if (!reached.count({r, i}) && !never_true.count({r, i}) && !duplicate.count({r, i})) {
        out.insert(finding("RG202", r, i));
      }
    }
  }
  return out;
}

std::set<std::string> actual_findings(const std::vector<Diagnostic>& diagnostics) {
  std::set<std::string> out;
  for (const auto& d : diagnostics) {
    if (d.code == "RG207") continue;  // an info about the hit policy, not a reachability finding
    size_t rule = d.span.line / 100 - 1;
    uint32_t offset = d.span.line % 100;
    out.insert(finding(d.code, rule, offset >= 10 ? offset - 10 : 0));
  }
  return out;
}

ir::Value pool_value(const ir::Field& f) {
  switch (f.type) {
    case ir::FieldType::kString:
      return ir::Value::String(*rc::gen::element<std::string>("", "a", "b"));
    case ir::FieldType::kEnum:
      return ir::Value::String(*rc::gen::elementOf(f.enum_values));
    case ir::FieldType::kBool:
      return ir::Value::Bool(*rc::gen::arbitrary<bool>());
    case ir::FieldType::kInt:
      return ir::Value::Int(*rc::gen::inRange(-1, 5));
  }
  return {};
}

RC_GTEST_PROP(AnalysisProperty, AgreesWithBruteForceEvaluation, ()) {
  testing::PolicyBuilder b;
  b.string_field("s", *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>());
  std::optional<int64_t> min, max;
  if (*rc::gen::arbitrary<bool>()) min = *rc::gen::inRange(-1, 2);
  if (*rc::gen::arbitrary<bool>()) max = *rc::gen::inRange(2, 4);
  b.int_field("n", min, max, *rc::gen::arbitrary<bool>());
  if (*rc::gen::arbitrary<bool>()) {
    b.enum_field(
        "e", *rc::gen::element(std::vector<std::string>{"x"}, std::vector<std::string>{"x", "y"}),
        *rc::gen::arbitrary<bool>());
  } else {
    b.bool_field("e", *rc::gen::arbitrary<bool>());
  }
  ir::CheckedPolicy& cp = b.mutable_policy();
  const auto& fields = cp.policy.fields;
  const int rule_count = *rc::gen::inRange(1, 5);
  for (int r = 0; r < rule_count; ++r) {
    uint32_t line = rule_line(r);
    std::string verb = *rc::gen::element<std::string>("hold", "never", "replay_once");
    if (*rc::gen::inRange(0, 2) == 0) {
      std::vector<ir::Condition> conditions;
      const int n = *rc::gen::inRange(1, 3);
      for (int k = 0; k < n; ++k) {
        ir::Condition c;
        c.field = *rc::gen::inRange<uint32_t>(0, 3);
        const ir::Field& f = fields[c.field];
        std::vector<ir::Op> ops = {ir::Op::kEq, ir::Op::kNe, ir::Op::kIn, ir::Op::kNotIn};
        if (f.type == ir::FieldType::kInt) {
          ops.insert(ops.end(), {ir::Op::kLt, ir::Op::kLe, ir::Op::kGt, ir::Op::kGe});
        }
        if (f.optional) ops.insert(ops.end(), {ir::Op::kAbsent, ir::Op::kPresent});
        c.op = *rc::gen::elementOf(ops);
        int values = (c.op == ir::Op::kIn || c.op == ir::Op::kNotIn) ? *rc::gen::inRange(1, 3)
                     : (c.op == ir::Op::kAbsent || c.op == ir::Op::kPresent) ? 0
                                                                             : 1;
        for (int v = 0; v < values; ++v) c.values.push_back(pool_value(f));
        conditions.push_back(std::move(c));
      }
      b.guard("g" + std::to_string(r), std::move(conditions), verb, line);
    } else {
      std::vector<std::string> keys = {"s", "n", "e"};
      keys = *rc::gen::element(std::vector<std::string>{"s"}, std::vector<std::string>{"n", "e"},
                               std::vector<std::string>{"e", "s"},
                               std::vector<std::string>{"s", "n", "e"});
      b.table("t" + std::to_string(r), keys, line);
      const int rows = *rc::gen::inRange(1, 6);
      for (int i = 0; i < rows; ++i) {
        std::vector<testing::Key> row_keys;
        for (const auto& k : keys) {
          testing::Key key = testing::kStar;
          if (*rc::gen::inRange(0, 3) != 0) key.value = pool_value(fields[b.field_index(k)]);
          row_keys.push_back(key);
        }
        b.row(std::move(row_keys), *rc::gen::element<std::string>("hold", "never", "replay_once"),
              line + 10 + i, "t" + std::to_string(r) + "_" + std::to_string(i));
      }
    }
  }
  std::vector<Diagnostic> diagnostics = analyze(b.get());
  RC_ASSERT(actual_findings(diagnostics) == expected_findings(b.get().policy));
}

}  // namespace
}  // namespace replaygate
