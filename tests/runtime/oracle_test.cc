// decide() against a tiny value-level evaluator over the IR, exhaustively on a grid of values per
// field (every mentioned value, its neighbours, bounds, absent, null, wrong types). The evaluator
// works on values, not atoms, so it checks partitioning, lowering and the runtime together.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/lower.h"
#include "runtime/table.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

// One field's input as the caller gives it.
struct In {
  enum class Kind { kUnset, kNull, kString, kInt, kBool } kind = Kind::kUnset;
  std::string s;
  int64_t i = 0;
  bool b = false;
};

struct Expected {
  DecisionKind kind = DecisionKind::kDefault;
  uint32_t verb = 0;
  uint32_t rule = 0;  // catalog index when kRule
  uint32_t invalid_field = 0;
};

// nullopt = absent; otherwise the typed value. Returns false when the input is invalid.
bool validate(const ir::Field& f, const In& in, std::optional<ir::Value>* out) {
  out->reset();
  switch (in.kind) {
    case In::Kind::kUnset:
    case In::Kind::kNull:
      return f.optional;
    case In::Kind::kString:
      if (f.type == ir::FieldType::kString) {
        if (in.s.empty() && f.empty_means_absent) return f.optional;
        *out = ir::Value::String(in.s);
        return true;
      }
      if (f.type == ir::FieldType::kEnum) {
        for (const auto& v : f.enum_values) {
          if (v == in.s) {
            *out = ir::Value::String(in.s);
            return true;
          }
        }
      }
      return false;
    case In::Kind::kInt:
      if (f.type != ir::FieldType::kInt) return false;
      if ((f.min && in.i < *f.min) || (f.max && in.i > *f.max)) return false;
      *out = ir::Value::Int(in.i);
      return true;
    case In::Kind::kBool:
      if (f.type != ir::FieldType::kBool) return false;
      *out = ir::Value::Bool(in.b);
      return true;
  }
  return false;
}

bool same(const ir::Value& a, const ir::Value& b) { return a == b; }

bool holds(const ir::Condition& c, const std::optional<ir::Value>& v) {
  if (c.op == ir::Op::kAbsent) return !v;
  if (!v) return false;
  switch (c.op) {
    case ir::Op::kPresent:
      return true;
    case ir::Op::kEq:
    case ir::Op::kIn:
      for (const auto& x : c.values) {
        if (same(*v, x)) return true;
      }
      return false;
    case ir::Op::kNe:
    case ir::Op::kNotIn:
      for (const auto& x : c.values) {
        if (same(*v, x)) return false;
      }
      return true;
    case ir::Op::kLt:
      return v->i < c.values[0].i;
    case ir::Op::kLe:
      return v->i <= c.values[0].i;
    case ir::Op::kGt:
      return v->i > c.values[0].i;
    case ir::Op::kGe:
      return v->i >= c.values[0].i;
    case ir::Op::kAbsent:
      break;
  }
  return false;
}

Expected evaluate(const ir::Policy& p, const std::vector<In>& input) {
  Expected e;
  e.verb = p.default_verb;
  std::vector<std::optional<ir::Value>> values(p.fields.size());
  for (uint32_t f = 0; f < p.fields.size(); ++f) {
    if (!validate(p.fields[f], input[f], &values[f])) {
      e.kind = DecisionKind::kInvalidInput;
      e.invalid_field = f;
      return e;
    }
  }
  uint32_t catalog = 0;
  for (const auto& rule : p.rules) {
    if (const auto* g = std::get_if<ir::Guard>(&rule)) {
      bool all = true;
      for (const auto& c : g->conditions) all = all && holds(c, values[c.field]);
      if (all) return {DecisionKind::kRule, g->verb, catalog, 0};
      ++catalog;
      continue;
    }
    const auto& t = std::get<ir::Table>(rule);
    int best = -1, best_count = -1;
    for (size_t r = 0; r < t.rows.size(); ++r) {
      int count = 0;
      bool match = true;
      for (size_t k = 0; k < t.key_fields.size() && match; ++k) {
        const auto& key = t.rows[r].keys[k];
        if (!key) continue;
        ++count;
        const auto& v = values[t.key_fields[k]];
        match = v && same(*v, *key);
      }
      if (match && count > best_count) {
        best = static_cast<int>(r);
        best_count = count;
      }
    }
    if (best >= 0) {
      return {DecisionKind::kRule, t.rows[best].verb, catalog + static_cast<uint32_t>(best), 0};
    }
    catalog += static_cast<uint32_t>(t.rows.size());
  }
  return e;
}

In unset() { return {}; }
In null() { return {In::Kind::kNull, {}, 0, false}; }
In str(std::string s) { return {In::Kind::kString, std::move(s), 0, false}; }
In num(int64_t i) { return {In::Kind::kInt, {}, i, false}; }
In boolean(bool b) { return {In::Kind::kBool, {}, 0, b}; }

// Values worth trying for each field: everything the policy mentions and its neighbours.
std::vector<In> grid_for(const ir::Policy& p, uint32_t f) {
  const ir::Field& field = p.fields[f];
  std::vector<In> out = {unset(), null()};
  switch (field.type) {
    case ir::FieldType::kString:
    case ir::FieldType::kEnum: {
      std::vector<std::string> mentioned = field.enum_values;
      for (const auto& rule : p.rules) {
        if (const auto* g = std::get_if<ir::Guard>(&rule)) {
          for (const auto& c : g->conditions) {
            if (c.field == f) {
              for (const auto& v : c.values) mentioned.push_back(v.str);
            }
          }
        } else {
          const auto& t = std::get<ir::Table>(rule);
          for (const auto& row : t.rows) {
            for (size_t k = 0; k < t.key_fields.size(); ++k) {
              if (t.key_fields[k] == f && row.keys[k]) mentioned.push_back(row.keys[k]->str);
            }
          }
        }
      }
      std::sort(mentioned.begin(), mentioned.end());
      mentioned.erase(std::unique(mentioned.begin(), mentioned.end()), mentioned.end());
      for (const auto& s : mentioned) out.push_back(str(s));
      out.push_back(str(""));
      out.push_back(str("zz-unmentioned"));
      if (!mentioned.empty()) out.push_back(str(mentioned[0] + std::string(1, '\0')));
      out.push_back(num(1));
      break;
    }
    case ir::FieldType::kInt: {
      std::vector<int64_t> points = {0, INT64_MIN, INT64_MAX};
      if (field.min) points.push_back(*field.min);
      if (field.max) points.push_back(*field.max);
      for (const auto& rule : p.rules) {
        if (const auto* g = std::get_if<ir::Guard>(&rule)) {
          for (const auto& c : g->conditions) {
            if (c.field == f) {
              for (const auto& v : c.values) points.push_back(v.i);
            }
          }
        } else {
          const auto& t = std::get<ir::Table>(rule);
          for (const auto& row : t.rows) {
            for (size_t k = 0; k < t.key_fields.size(); ++k) {
              if (t.key_fields[k] == f && row.keys[k]) points.push_back(row.keys[k]->i);
            }
          }
        }
      }
      std::vector<int64_t> values;
      for (int64_t x : points) {
        values.push_back(x);
        if (x > INT64_MIN) values.push_back(x - 1);
        if (x < INT64_MAX) values.push_back(x + 1);
      }
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      for (int64_t x : values) out.push_back(num(x));
      out.push_back(str("1"));
      break;
    }
    case ir::FieldType::kBool:
      out.push_back(boolean(false));
      out.push_back(boolean(true));
      out.push_back(str("true"));
      break;
  }
  return out;
}

void set(Input& in, uint32_t f, const In& v) {
  switch (v.kind) {
    case In::Kind::kUnset:
      break;
    case In::Kind::kNull:
      in.set_null(f);
      break;
    case In::Kind::kString:
      in.set_string(f, v.s);
      break;
    case In::Kind::kInt:
      in.set_int(f, v.i);
      break;
    case In::Kind::kBool:
      in.set_bool(f, v.b);
      break;
  }
}

// Runs every combination of grid values; returns the number of combinations checked.
size_t check_exhaustively(const ir::CheckedPolicy& checked) {
  const ir::Policy& p = checked.policy;
  std::vector<uint8_t> bytes = lower(checked);
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  EXPECT_TRUE(status.ok()) << status.message;
  if (!table) return 0;
  std::vector<std::vector<In>> grid;
  for (uint32_t f = 0; f < p.fields.size(); ++f) grid.push_back(grid_for(p, f));
  std::vector<In> current(p.fields.size());
  Input in(*table);
  size_t checked_count = 0, failures = 0;
  std::function<void(uint32_t)> walk = [&](uint32_t f) {
    if (f == p.fields.size()) {
      in.clear();
      for (uint32_t g = 0; g < p.fields.size(); ++g) set(in, g, current[g]);
      Decision d = table->decide(in);
      Expected e = evaluate(p, current);
      ++checked_count;
      bool ok = d.kind == e.kind && d.verb == e.verb &&
                (d.kind != DecisionKind::kRule || d.rule == e.rule) &&
                (d.kind != DecisionKind::kInvalidInput || d.invalid_field == e.invalid_field);
      if (!ok && ++failures <= 5) {
        std::string text;
        for (const auto& v : current) {
          text += " [" + std::to_string(static_cast<int>(v.kind)) + " '" + v.s + "' " +
                  std::to_string(v.i) + " " + (v.b ? "t" : "f") + "]";
        }
        ADD_FAILURE() << "input" << text << ": runtime kind " << static_cast<int>(d.kind)
                      << " verb " << d.verb << " rule " << d.rule << ", oracle kind "
                      << static_cast<int>(e.kind) << " verb " << e.verb << " rule " << e.rule;
      }
      return;
    }
    for (const In& v : grid[f]) {
      current[f] = v;
      walk(f + 1);
    }
  };
  walk(0);
  return checked_count;
}

TEST(Oracle, SmallPolicyExhaustive) {
  EXPECT_GT(check_exhaustively(testing::small_policy()), 1000u);
}

TEST(Oracle, ReferenceGateExhaustive) {
  EXPECT_GT(check_exhaustively(testing::reference_gate()), 10000u);
}

TEST(Oracle, EveryOpOnEveryType) {
  using namespace replaygate::testing;  // NOLINT: test vocabulary
  ir::CheckedPolicy checked;
  ir::Policy& p = checked.policy;
  p.id = "ops";
  p.fields = {string_field("s", true, true), int_field("i", -5, 5, true), bool_field("b", true),
              enum_field("e", {"x", "y", "z"}, true)};
  p.verbs = {verb("no", ir::Effect::kNone, ""), verb("yes", ir::Effect::kCopy, "")};
  std::vector<ir::Condition> conds = {cond(0, ir::Op::kNe, {S("a")}),
                                      cond(1, ir::Op::kLe, {I(-2)}),
                                      cond(1, ir::Op::kGt, {I(3)}),
                                      cond(3, ir::Op::kNotIn, {S("x"), S("z")}),
                                      cond(0, ir::Op::kIn, {S("b"), S("c")}),
                                      cond(1, ir::Op::kEq, {I(0)}),
                                      cond(2, ir::Op::kEq, {B(false)}),
                                      cond(1, ir::Op::kNotIn, {I(1), I(2)}),
                                      cond(3, ir::Op::kPresent),
                                      cond(1, ir::Op::kLt, {I(-5)}),
                                      cond(2, ir::Op::kAbsent),
                                      cond(0, ir::Op::kAbsent),
                                      cond(1, ir::Op::kGe, {I(2)}),
                                      cond(3, ir::Op::kEq, {S("y")})};
  // Pairs of conditions, so each guard is reached often and each condition fails sometimes.
  for (uint32_t k = 0; k < conds.size(); ++k) {
    uint32_t verb_index = k % 2;
    p.rules.push_back(
        guard("g" + std::to_string(k), {conds[k], conds[(k + 5) % conds.size()]}, verb_index, "r"));
  }
  EXPECT_GT(check_exhaustively(checked), 1000u);
}

}  // namespace
}  // namespace replaygate
