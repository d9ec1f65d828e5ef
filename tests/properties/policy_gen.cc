// Generators of random valid policies and of letters for them; YAML printing of the IR.
#include "tests/properties/policy_gen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "compiler/syntax/print_yaml.h"

namespace replaygate::testing {
namespace {

using ir::FieldType;
using ir::Op;

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Strings a policy may mention (none is a YAML keyword, none is empty).
const std::vector<std::string>& vocabulary() {
  static const std::vector<std::string> words = {
      "payment.capture", "inventory.reserve", "webhook.partner", "mail.receipt", "timeout",
      "http_503",        "lock_timeout",      "eu-west",         "tenant 42",    "x",
      "caf\xc3\xa9"};
  return words;
}

// Strings a letter may carry that no policy mentions: empty, NUL bytes, near-misses by case,
// length, trailing bytes.
const std::vector<std::string>& strangers() {
  static const std::vector<std::string> words = {"",
                                                 std::string("payment.capture\0", 16),
                                                 std::string("\0", 1),
                                                 std::string("x\0", 2),
                                                 "Payment.capture",
                                                 "payment.captur",
                                                 "payment.capture ",
                                                 "X",
                                                 "timeout\n",
                                                 "cafe",
                                                 "unknown.topic"};
  return words;
}

const std::vector<std::string>& enum_vocabulary() {
  static const std::vector<std::string> words = {"red", "green", "blue", "amber", "gray"};
  return words;
}

const std::vector<Op>& all_ops() {
  static const std::vector<Op> ops = {Op::kEq, Op::kNe, Op::kIn, Op::kNotIn,  Op::kLt,
                                      Op::kLe, Op::kGt, Op::kGe, Op::kAbsent, Op::kPresent};
  return ops;
}

bool single_operand(Op op) {
  return op == Op::kEq || op == Op::kNe || op == Op::kLt || op == Op::kLe || op == Op::kGt ||
         op == Op::kGe;
}

bool op_fits(const ir::Field& field, Op op) {
  switch (op) {
    case Op::kLt:
    case Op::kLe:
    case Op::kGt:
    case Op::kGe:
      return field.type == FieldType::kInt;
    case Op::kAbsent:
    case Op::kPresent:
      return field.optional;
    default:
      return true;
  }
}

// A uniform pick in [lo, hi) whatever the test size (rc::gen::inRange scales with size, which
// would skew every probability below towards its first case); it still shrinks towards lo.
template <typename T>
T uniform(T lo, T hi) {
  return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(lo, hi));
}

template <typename T>
T pick(const std::vector<T>& items) {
  return items.at(uniform<size_t>(0, items.size()));
}

bool chance(int percent) { return uniform<int>(0, 100) < percent; }

// Distinct elements, 1..max_count of them, in pool order.
std::vector<ir::Value> pick_distinct(const std::vector<ir::Value>& pool, size_t max_count) {
  size_t count = uniform<size_t>(1, std::min(max_count, pool.size()) + 1);
  std::vector<size_t> order(pool.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = 0; i < count; ++i) {
    size_t j = uniform<size_t>(i, order.size());
    std::swap(order[i], order[j]);
  }
  order.resize(count);
  std::sort(order.begin(), order.end());
  std::vector<ir::Value> out;
  for (size_t i : order) out.push_back(pool[i]);
  return out;
}

std::string key_text(const std::optional<ir::Value>& key) {
  if (!key) return "*";
  switch (key->kind) {
    case ir::Value::Kind::kString:
      return key->str;
    case ir::Value::Kind::kInt:
      return std::to_string(key->i);
    case ir::Value::Kind::kBool:
      return key->b ? "true" : "false";
  }
  return "?";
}

// The literals a generated policy may use for one field.
struct FieldPlan {
  ir::Field field;
  std::vector<ir::Value> pool;
};

// A policy literal no vocabulary holds: printable ASCII (no quote or backslash), sometimes UTF-8.
std::string generated_word() {
  static const std::string kChars = "abcdefghijklmnopqrstuvwxyz0123456789._-/:";
  std::string word = pick(vocabulary());
  word += pick<std::string>({".", "_", "-", "/"});
  const size_t length = uniform<size_t>(1, 10);
  for (size_t i = 0; i < length; ++i) word += kChars[uniform<size_t>(0, kChars.size())];
  if (chance(10)) word += "\xc3\xa9";
  return word;
}

// `big`: many literals (stresses the runtime's string dictionaries and int cut points).
FieldPlan gen_field(FieldType type, bool optional, const std::string& name, bool big) {
  FieldPlan plan;
  plan.field.name = name;
  plan.field.type = type;
  plan.field.optional = optional;
  plan.field.description = "generated " + std::string(ir::field_type_name(type)) + " field";
  switch (type) {
    case FieldType::kString: {
      plan.field.empty_means_absent = chance(40);
      std::vector<ir::Value> words;
      for (const auto& w : vocabulary()) words.push_back(ir::Value::String(w));
      plan.pool = pick_distinct(words, 4);
      if (plan.pool.size() < 2) plan.pool = pick_distinct(words, 4);
      if (big) {
        std::set<std::string> seen;
        for (const auto& v : plan.pool) seen.insert(v.str);
        const size_t target = uniform<size_t>(15, 61);
        for (size_t i = 0; i < 3 * target && seen.size() < target; ++i) {
          std::string word = generated_word();
          if (seen.insert(word).second) plan.pool.push_back(ir::Value::String(word));
        }
      }
      break;
    }
    case FieldType::kEnum: {
      size_t count = uniform<size_t>(2, 5);
      std::vector<std::string> values = enum_vocabulary();
      for (size_t i = 0; i < count; ++i) {
        std::swap(values[i], values[uniform<size_t>(i, values.size())]);
      }
      values.resize(count);
      plan.field.enum_values = values;
      for (const auto& v : values) plan.pool.push_back(ir::Value::String(v));
      break;
    }
    case FieldType::kBool:
      plan.pool = {ir::Value::Bool(false), ir::Value::Bool(true)};
      break;
    case FieldType::kInt: {
      int bounds = uniform<int>(0, 4);  // 0 none, 1 min, 2 max, 3 both
      if (bounds == 1 || bounds == 3) plan.field.min = pick<int64_t>({-3, 0, 1, 5});
      if (bounds == 2) plan.field.max = pick<int64_t>({10, 20});
      if (bounds == 3) plan.field.max = *plan.field.min + uniform<int64_t>(2, 16);
      int64_t lo = plan.field.min.value_or(big ? -1000 : -10);
      int64_t hi = plan.field.max.value_or(big ? 1000 : 30);
      std::set<int64_t> values;
      size_t count = big ? uniform<size_t>(10, 31) : uniform<size_t>(2, 5);
      for (size_t i = 0; i < count || values.size() < 2; ++i) {
        values.insert(uniform<int64_t>(lo, hi + 1));
      }
      // The extremes of int64 stress cut-point arithmetic (value + 1 overflows at the top).
      if (!plan.field.max && chance(10)) values.insert(kInt64Max);
      if (!plan.field.min && chance(10)) values.insert(kInt64Min);
      for (int64_t v : values) plan.pool.push_back(ir::Value::Int(v));
      break;
    }
  }
  return plan;
}

ir::Span next_span(uint32_t* line) {
  ir::Span span;
  span.line = ++*line;
  span.column = 3;
  span.offset = (span.line - 1) * 40 + 2;
  span.length = 10;
  return span;
}

// Whether some valid value of `field` (absent included when optional) satisfies every condition:
// candidates are the values the conditions and bounds mention, their neighbours, and one string no
// policy mentions.
bool satisfiable(const ir::Field& field, const std::vector<ir::Condition>& conditions) {
  std::vector<std::optional<ir::Value>> candidates;
  if (field.optional) candidates.push_back(std::nullopt);
  switch (field.type) {
    case FieldType::kString:
      candidates.push_back(ir::Value::String("\x01unmentioned"));
      for (const auto& c : conditions) {
        for (const auto& v : c.values) candidates.push_back(v);
      }
      break;
    case FieldType::kEnum:
      for (const auto& v : field.enum_values) candidates.push_back(ir::Value::String(v));
      break;
    case FieldType::kBool:
      candidates.push_back(ir::Value::Bool(false));
      candidates.push_back(ir::Value::Bool(true));
      break;
    case FieldType::kInt: {
      std::vector<int64_t> points = {0};
      if (field.min) points.push_back(*field.min);
      if (field.max) points.push_back(*field.max);
      for (const auto& c : conditions) {
        for (const auto& v : c.values) points.push_back(v.i);
      }
      for (int64_t p : points) {
        for (int64_t d = -1; d <= 1; ++d) {
          if ((d < 0 && p == kInt64Min) || (d > 0 && p == kInt64Max)) continue;
          int64_t v = p + d;
          if ((field.min && v < *field.min) || (field.max && v > *field.max)) continue;
          candidates.push_back(ir::Value::Int(v));
        }
      }
      break;
    }
  }
  auto holds = [&](const std::optional<ir::Value>& v, const ir::Condition& c) {
    if (c.op == Op::kAbsent) return !v;
    if (!v) return false;
    auto in = [&] { return std::find(c.values.begin(), c.values.end(), *v) != c.values.end(); };
    switch (c.op) {
      case Op::kPresent:
        return true;
      case Op::kEq:
      case Op::kIn:
        return in();
      case Op::kNe:
      case Op::kNotIn:
        return !in();
      case Op::kLt:
        return v->i < c.values[0].i;
      case Op::kLe:
        return v->i <= c.values[0].i;
      case Op::kGt:
        return v->i > c.values[0].i;
      case Op::kGe:
        return v->i >= c.values[0].i;
      case Op::kAbsent:
        break;
    }
    return false;
  };
  for (const auto& v : candidates) {
    if (std::all_of(conditions.begin(), conditions.end(),
                    [&](const ir::Condition& c) { return holds(v, c); })) {
      return true;
    }
  }
  return false;
}

struct GuardCondition {
  uint32_t field;
  Op op;
};

ir::CheckedPolicy generate_policy() {
  ir::CheckedPolicy checked;
  ir::Policy& policy = checked.policy;
  policy.id = "gen-policy";
  policy.revision = uniform<int64_t>(1, 100);
  policy.description = "a generated policy";

  // One policy in five is big: long literal lists and long tables.
  const bool big = chance(20);

  // Fields: a skeleton with every type and flag, then extras, then shuffled.
  struct Spec {
    FieldType type;
    bool optional;
  };
  std::vector<Spec> specs = {{FieldType::kString, false}, {FieldType::kString, true},
                             {FieldType::kInt, false},    {FieldType::kInt, true},
                             {FieldType::kBool, false},   {FieldType::kEnum, false}};
  size_t extras = uniform<size_t>(0, 4);
  for (size_t i = 0; i < extras; ++i) {
    specs.push_back(
        {pick<FieldType>({FieldType::kString, FieldType::kInt, FieldType::kBool, FieldType::kEnum}),
         chance(50)});
  }
  for (size_t i = 0; i + 1 < specs.size(); ++i) {
    std::swap(specs[i], specs[uniform<size_t>(i, specs.size())]);
  }
  std::vector<FieldPlan> plans;
  std::map<FieldType, int> per_type;
  for (const Spec& spec : specs) {
    static const std::map<FieldType, std::string> prefix = {{FieldType::kString, "s"},
                                                            {FieldType::kInt, "n"},
                                                            {FieldType::kBool, "flag"},
                                                            {FieldType::kEnum, "kind"}};
    std::string name = prefix.at(spec.type) + std::to_string(per_type[spec.type]++);
    plans.push_back(gen_field(spec.type, spec.optional, name, big));
  }
  // The skeleton's optional string always treats "" as absent: the construct is always present.
  for (auto& plan : plans) {
    if (plan.field.type == FieldType::kString && plan.field.optional) {
      plan.field.empty_means_absent = true;
      break;
    }
  }
  for (const auto& plan : plans) policy.fields.push_back(plan.field);
  const uint32_t field_count = static_cast<uint32_t>(plans.size());

  // Verbs: one per effect (plus a second `none`), shuffled; the default has effect none.
  std::vector<ir::Verb> verbs = {{"hold", ir::Effect::kNone, "wait for an operator"},
                                 {"peek", ir::Effect::kRead, "read the status"},
                                 {"copy_out", ir::Effect::kCopy, "copy the existing output"},
                                 {"replay", ir::Effect::kCreate, "requeue once"}};
  if (chance(60)) verbs.push_back({"park", ir::Effect::kNone, "park for a ticket"});
  for (size_t i = 0; i + 1 < verbs.size(); ++i) {
    std::swap(verbs[i], verbs[uniform<size_t>(i, verbs.size())]);
  }
  policy.verbs = verbs;
  std::vector<uint32_t> none_verbs;
  for (uint32_t v = 0; v < verbs.size(); ++v) {
    if (verbs[v].effect == ir::Effect::kNone) none_verbs.push_back(v);
  }
  policy.default_verb = pick(none_verbs);
  policy.default_reason = chance(50) ? "no rule matched" : "nothing known about this letter";
  const uint32_t verb_count = static_cast<uint32_t>(verbs.size());
  auto random_verb = [&] { return uniform<uint32_t>(0, verb_count); };

  // Constants: one or two per int field, from its pool (so inside the field's bounds).
  std::map<uint32_t, std::vector<size_t>> constants_of_field;
  for (uint32_t f = 0; f < field_count; ++f) {
    if (plans[f].field.type != FieldType::kInt) continue;
    int count = chance(30) ? 2 : 1;
    for (int i = 0; i < count; ++i) {
      constants_of_field[f].push_back(policy.constants.size());
      policy.constants.push_back(
          {"limit_" + plans[f].field.name + "_" + std::to_string(i), pick(plans[f].pool).i});
    }
  }

  // Guards: every op lands in some guard on a field it fits; a field's ops within one guard are
  // distinct, and absent/present stand alone (so the guard can be written as YAML).
  size_t guard_count = uniform<size_t>(3, 7);
  std::vector<std::vector<GuardCondition>> guard_plans(guard_count);
  std::vector<Op> demands = all_ops();
  size_t extra_demands = uniform<size_t>(0, guard_count + 1);
  for (size_t i = 0; i < extra_demands; ++i) demands.push_back(pick(all_ops()));
  for (Op op : demands) {
    std::vector<uint32_t> fitting;
    for (uint32_t f = 0; f < field_count; ++f) {
      if (op_fits(plans[f].field, op)) fitting.push_back(f);
    }
    // One condition per field and guard (the range construct below is the exception), so that
    // every op's guard can match; the first free (guard, field) after a random start, or a new
    // guard.
    auto fresh = [&](size_t g, uint32_t f) {
      for (const auto& c : guard_plans[g]) {
        if (c.field == f) return false;
      }
      return true;
    };
    const size_t g0 = uniform<size_t>(0, guard_plans.size());
    const size_t f0 = uniform<size_t>(0, fitting.size());
    bool placed = false;
    for (size_t dg = 0; dg < guard_plans.size() && !placed; ++dg) {
      for (size_t df = 0; df < fitting.size() && !placed; ++df) {
        size_t g = (g0 + dg) % guard_plans.size();
        uint32_t f = fitting[(f0 + df) % fitting.size()];
        if (fresh(g, f)) {
          guard_plans[g].push_back({f, op});
          placed = true;
        }
      }
    }
    if (!placed) guard_plans.push_back({{fitting[f0], op}});
  }
  // A range: two ordering ops on one int field of one guard (several ops are a conjunction).
  if (chance(60)) {
    size_t g = uniform<size_t>(0, guard_plans.size());
    for (uint32_t f = 0; f < field_count; ++f) {
      bool used = false;
      for (const auto& c : guard_plans[g]) used |= c.field == f;
      if (plans[f].field.type == FieldType::kInt && !used) {
        bool closed = chance(50);
        guard_plans[g].push_back({f, closed ? Op::kGe : Op::kGt});
        guard_plans[g].push_back({f, closed ? Op::kLt : Op::kLe});
        break;
      }
    }
  }
  guard_count = guard_plans.size();
  std::vector<ir::Rule> rules;
  bool constant_used = false;
  for (size_t g = 0; g < guard_count; ++g) {
    auto& plan = guard_plans[g];
    if (plan.empty()) plan.push_back({0, Op::kNe});
    // A lone broad condition (ne, not_in, present) would catch most letters; narrow it with eq
    // on another field so that later rules and the default stay reachable.
    if (plan.size() == 1) {
      uint32_t other = uniform<uint32_t>(0, field_count);
      if (other == plan[0].field) other = (other + 1) % field_count;
      plan.push_back({other, Op::kEq});
    }
    // Group by field in order of first appearance.
    std::vector<GuardCondition> grouped;
    for (const auto& c : plan) {
      bool seen = false;
      for (const auto& d : grouped) seen |= d.field == c.field;
      if (seen) continue;
      for (const auto& d : plan) {
        if (d.field == c.field) grouped.push_back(d);
      }
    }
    ir::Guard guard;
    guard.id = "g" + std::to_string(g);
    guard.reason = "because " + guard.id + " said so";
    guard.verb = random_verb();
    // Operands per field group, re-picked until the group can hold (the checker rejects a guard
    // that can never match, RG201); a group that never can is dropped.
    for (size_t i = 0; i < grouped.size();) {
      size_t j = i;
      while (j < grouped.size() && grouped[j].field == grouped[i].field) ++j;
      const FieldPlan& fp = plans[grouped[i].field];
      std::vector<ir::Condition> group;
      bool used_constant = false;
      for (int attempt = 0; attempt < 30; ++attempt) {
        group.clear();
        used_constant = false;
        for (size_t k = i; k < j; ++k) {
          ir::Condition c;
          c.field = grouped[k].field;
          c.op = grouped[k].op;
          if (c.op == Op::kIn || c.op == Op::kNotIn) {
            c.values = pick_distinct(fp.pool, 3);
          } else if (single_operand(c.op)) {
            auto constants = constants_of_field.find(c.field);
            bool use_constant =
                constants != constants_of_field.end() &&
                ((!constant_used && c.op != Op::kEq && c.op != Op::kNe) || chance(50));
            if (use_constant) {
              const ir::Constant& k = policy.constants[pick(constants->second)];
              c.values = {ir::Value::Int(k.value)};
              c.constant = k.name;
              used_constant = true;
            } else {
              c.values = {pick(fp.pool)};
            }
          }
          group.push_back(std::move(c));
        }
        if (satisfiable(fp.field, group)) break;
        group.clear();
      }
      if (group.empty() && j - i <= 2) {
        // Random operands kept failing (shrinking picks the same ones): try every combination of
        // single pool values in order.
        const size_t n = fp.pool.size();
        for (size_t combo = 0; combo < (j - i == 1 ? n : n * n) && group.empty(); ++combo) {
          for (size_t k = i; k < j; ++k) {
            const size_t which = k == i ? combo % n : combo / n;
            std::vector<ir::Value> operand;
            if (grouped[k].op != Op::kAbsent && grouped[k].op != Op::kPresent) {
              operand.push_back(fp.pool[which]);
            }
            group.push_back({grouped[k].field, grouped[k].op, std::move(operand), ""});
          }
          if (!satisfiable(fp.field, group)) group.clear();
        }
        used_constant = false;
      }
      constant_used |= used_constant && !group.empty();
      for (auto& c : group) guard.conditions.push_back(std::move(c));
      i = j;
    }
    if (guard.conditions.empty()) {
      guard.conditions.push_back({0, Op::kEq, {pick(plans[0].pool)}, ""});
    }
    rules.emplace_back(std::move(guard));
  }

  // Tables: 2-3, 1-3 distinct key fields each, rows filtered to what the checker accepts.
  size_t table_count = uniform<size_t>(2, 4);
  for (size_t t = 0; t < table_count; ++t) {
    ir::Table table;
    table.id = "t" + std::to_string(t);
    size_t key_count = uniform<size_t>(1, 4);
    std::vector<uint32_t> candidates(field_count);
    for (uint32_t f = 0; f < field_count; ++f) candidates[f] = f;
    for (size_t k = 0; k < key_count; ++k) {
      std::swap(candidates[k], candidates[uniform<size_t>(k, candidates.size())]);
      table.key_fields.push_back(candidates[k]);
    }
    size_t row_count = big ? uniform<size_t>(10, 61) : uniform<size_t>(2, 10);
    for (size_t r = 0; r < row_count; ++r) {
      ir::Row row;
      for (uint32_t f : table.key_fields) {
        if (chance(25)) {
          row.keys.push_back(std::nullopt);
        } else {
          row.keys.push_back(pick(plans[f].pool));
        }
      }
      // A row of wildcards only catches every letter; keep a few, so defaults stay reachable.
      if (std::none_of(row.keys.begin(), row.keys.end(), [](const auto& k) { return k; }) &&
          !chance(15)) {
        row.keys[0] = pick(plans[table.key_fields[0]].pool);
      }
      row.verb = random_verb();
      auto concrete = [](const ir::Row& x) {
        return std::count_if(x.keys.begin(), x.keys.end(), [](const auto& k) { return k; });
      };
      bool keep = true;
      for (const ir::Row& earlier : table.rows) {
        if (earlier.keys == row.keys) keep = false;
        if (concrete(earlier) != concrete(row) || earlier.verb == row.verb) continue;
        bool overlap = true;
        for (size_t k = 0; k < row.keys.size(); ++k) {
          if (row.keys[k] && earlier.keys[k] && *row.keys[k] != *earlier.keys[k]) overlap = false;
        }
        if (overlap) keep = false;
      }
      if (!keep) continue;
      std::string derived = table.id + ":";
      for (size_t k = 0; k < row.keys.size(); ++k) {
        if (k > 0) derived += "/";
        derived += key_text(row.keys[k]);
      }
      // Ids may not contain spaces or control characters (RG127): such rows get an explicit id.
      const bool derivable = std::none_of(derived.begin(), derived.end(),
                                          [](unsigned char c) { return c <= ' ' || c == 0x7f; });
      row.id = !derivable || chance(15) ? table.id + "_row" + std::to_string(r) : derived;
      row.reason = chance(50) ? "" : "row " + std::to_string(r) + " of " + table.id;
      table.rows.push_back(std::move(row));
    }
    rules.emplace_back(std::move(table));
  }
  for (size_t i = 0; i + 1 < rules.size(); ++i) {
    std::swap(rules[i], rules[uniform<size_t>(i, rules.size())]);
  }
  policy.rules = std::move(rules);

  std::string digest;
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) digest += kHex[uniform<int>(0, 16)];
  return with_source_map(std::move(checked.policy), std::move(digest));
}

// The values a letter draws from for one field: what the policy mentions, and for ints the
// neighbours of every mentioned value and bound (the cut points of any partition).
struct LetterPlan {
  ir::Field field;
  std::vector<ir::Value> mentioned;
  std::vector<int64_t> near_ints;  // kInt: inside the bounds
};

std::vector<LetterPlan> letter_plans(const ir::Policy& policy) {
  std::vector<LetterPlan> plans(policy.fields.size());
  for (size_t f = 0; f < policy.fields.size(); ++f) plans[f].field = policy.fields[f];
  auto mention = [&](uint32_t f, const ir::Value& v) { plans.at(f).mentioned.push_back(v); };
  for (const auto& rule : policy.rules) {
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      for (const auto& c : guard->conditions) {
        for (const auto& v : c.values) mention(c.field, v);
      }
    } else {
      const auto& table = std::get<ir::Table>(rule);
      for (const auto& row : table.rows) {
        for (size_t k = 0; k < row.keys.size(); ++k) {
          if (row.keys[k]) mention(table.key_fields[k], *row.keys[k]);
        }
      }
    }
  }
  for (auto& plan : plans) {
    const ir::Field& field = plan.field;
    if (field.type == FieldType::kEnum) {
      for (const auto& v : field.enum_values) plan.mentioned.push_back(ir::Value::String(v));
    }
    if (field.type == FieldType::kBool) {
      plan.mentioned = {ir::Value::Bool(false), ir::Value::Bool(true)};
    }
    if (field.type != FieldType::kInt) continue;
    std::set<int64_t> near;
    auto add_near = [&](int64_t v) {
      for (int64_t d = -1; d <= 1; ++d) {
        if ((d < 0 && v == kInt64Min) || (d > 0 && v == kInt64Max)) continue;
        int64_t n = v + d;
        if (field.min && n < *field.min) continue;
        if (field.max && n > *field.max) continue;
        near.insert(n);
      }
    };
    for (const auto& v : plan.mentioned) add_near(v.i);
    if (field.min) add_near(*field.min);
    if (field.max) add_near(*field.max);
    add_near(0);
    plan.near_ints.assign(near.begin(), near.end());
  }
  return plans;
}

LetterValue to_letter_value(const ir::Value& v) {
  switch (v.kind) {
    case ir::Value::Kind::kString:
      return LetterValue::String(v.str);
    case ir::Value::Kind::kInt:
      return LetterValue::Int(v.i);
    case ir::Value::Kind::kBool:
      return LetterValue::Bool(v.b);
  }
  return LetterValue::Invalid();
}

LetterValue valid_value(const LetterPlan& plan, int mentioned_percent) {
  const ir::Field& field = plan.field;
  if (!plan.mentioned.empty() && chance(mentioned_percent)) {
    LetterValue v = to_letter_value(pick(plan.mentioned));
    // A near-miss of a mentioned string: one more byte, NUL included.
    if (field.type == FieldType::kString && chance(10))
      v.s += pick<std::string>({std::string("\0", 1), " ", "x"});
    return v;
  }
  switch (field.type) {
    case FieldType::kString:
      if (chance(70)) return LetterValue::String(pick(strangers()));
      return LetterValue::String(*rc::gen::container<std::string>(
          uniform<size_t>(0, 4),
          rc::gen::resize(rc::kNominalSize, rc::gen::inRange<char>(0, 127))));
    case FieldType::kEnum:
      return LetterValue::String(pick(field.enum_values));
    case FieldType::kBool:
      return LetterValue::Bool(chance(50));
    case FieldType::kInt: {
      if (chance(80)) return LetterValue::Int(pick(plan.near_ints));
      int64_t lo = field.min.value_or(-100);
      int64_t hi = field.max.value_or(100);
      if (!field.min && !field.max && chance(20))
        return LetterValue::Int(pick<int64_t>({kInt64Min, kInt64Max}));
      return LetterValue::Int(uniform<int64_t>(lo, hi + 1));
    }
  }
  return LetterValue::Invalid();
}

// A value that fails validation for this field whether it is required or optional (or, for
// missing/null/"", only when required).
LetterValue bad_value(const LetterPlan& plan) {
  const ir::Field& field = plan.field;
  int kind = uniform<int>(0, 6);
  switch (kind) {
    case 0:
      return LetterValue::Missing();
    case 1:
      return LetterValue::Null();
    case 2:
      return LetterValue::Invalid();
    case 3:  // out of bounds / not an enum value / "" that means absent
      if (field.type == FieldType::kInt && (field.min || field.max)) {
        if (field.min && (!field.max || chance(50))) {
          return LetterValue::Int(
              *field.min == kInt64Min ? kInt64Min : *field.min - 1 - uniform<int64_t>(0, 2));
        }
        return LetterValue::Int(*field.max + 1 + uniform<int64_t>(0, 2));
      }
      if (field.type == FieldType::kEnum)
        return LetterValue::String(
            pick<std::string>({"", "RED", "purple", std::string("red\0", 4)}));
      if (field.type == FieldType::kString && field.empty_means_absent)
        return LetterValue::String("");
      [[fallthrough]];
    default:  // wrong type
      switch (field.type) {
        case FieldType::kString:
        case FieldType::kEnum:
          return chance(50) ? LetterValue::Int(uniform<int64_t>(-2, 3))
                            : LetterValue::Bool(chance(50));
        case FieldType::kInt:
          return chance(50) ? LetterValue::String("3") : LetterValue::Bool(true);
        case FieldType::kBool:
          return chance(50) ? LetterValue::Int(1) : LetterValue::String("true");
      }
  }
  return LetterValue::Invalid();
}

// Three kinds of letters: plain (mostly mentioned values), noisy (some fields invalid), outsider
// (mostly values the policy never mentions, so that letters also fall through every rule).
Letter generate_letter(const std::vector<LetterPlan>& plans) {
  int mode = uniform<int>(0, 100);
  bool noisy = mode < 25;
  int mentioned_percent = mode >= 75 ? 15 : 70;
  Letter letter;
  for (const auto& plan : plans) {
    if (noisy && chance(15)) {
      letter.push_back(bad_value(plan));
    } else if (plan.field.optional && chance(25)) {
      int how = uniform<int>(0, plan.field.empty_means_absent ? 3 : 2);
      letter.push_back(how == 0   ? LetterValue::Missing()
                       : how == 1 ? LetterValue::Null()
                                  : LetterValue::String(""));
    } else {
      letter.push_back(valid_value(plan, mentioned_percent));
    }
  }
  return letter;
}

}  // namespace

ir::CheckedPolicy with_source_map(ir::Policy policy, std::string digest) {
  ir::CheckedPolicy checked;
  checked.policy = std::move(policy);
  const ir::Policy& p = checked.policy;
  ir::SourceMap& source = checked.source;
  uint32_t line = 0;
  source.path = "gen.yaml";
  source.policy = next_span(&line);
  for (size_t i = 0; i < p.fields.size(); ++i) source.fields.push_back(next_span(&line));
  for (size_t i = 0; i < p.verbs.size(); ++i) source.verbs.push_back(next_span(&line));
  source.default_verb = next_span(&line);
  for (size_t i = 0; i < p.constants.size(); ++i) source.constants.push_back(next_span(&line));
  for (const auto& rule : p.rules) {
    source.rules.push_back(next_span(&line));
    std::vector<ir::Span> conditions, rows;
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      for (size_t i = 0; i < guard->conditions.size(); ++i) conditions.push_back(next_span(&line));
    } else {
      for (size_t i = 0; i < std::get<ir::Table>(rule).rows.size(); ++i) {
        rows.push_back(next_span(&line));
      }
    }
    source.conditions.push_back(std::move(conditions));
    source.rows.push_back(std::move(rows));
  }
  checked.source_base_name = "gen.yaml";
  checked.source_digest = std::move(digest);
  return checked;
}

rc::Gen<ir::CheckedPolicy> gen_policy() { return rc::gen::exec(generate_policy); }

rc::Gen<Letter> gen_letter(const ir::Policy& policy) {
  return rc::gen::exec([plans = letter_plans(policy)] { return generate_letter(plans); });
}

std::string to_yaml(const ir::Policy& policy) { return print_yaml(policy); }

void tag_policy(const ir::Policy& policy) {
  size_t wildcard_rows = 0, exact_rows = 0, max_keys = 0;
  for (const auto& rule : policy.rules) {
    if (const auto* table = std::get_if<ir::Table>(&rule)) {
      max_keys = std::max(max_keys, table->key_fields.size());
      for (const auto& row : table->rows) {
        bool any_wild =
            std::any_of(row.keys.begin(), row.keys.end(), [](const auto& k) { return !k; });
        (any_wild ? wildcard_rows : exact_rows) += 1;
      }
    }
  }
  RC_CLASSIFY(wildcard_rows > 0 && exact_rows > 0, "wildcard+exact rows");
  RC_CLASSIFY(max_keys == 3, "3-key table");
  RC_CLASSIFY(wildcard_rows + exact_rows >= 30, "30+ rows");
}

void fill_input(const Letter& letter, Input* input) {
  input->clear();
  for (uint32_t f = 0; f < letter.size(); ++f) {
    const LetterValue& v = letter[f];
    switch (v.kind) {
      case LetterValue::Kind::kMissing:
        break;
      case LetterValue::Kind::kNull:
        input->set_null(f);
        break;
      case LetterValue::Kind::kString:
        input->set_string(f, v.s);
        break;
      case LetterValue::Kind::kInt:
        input->set_int(f, v.i);
        break;
      case LetterValue::Kind::kBool:
        input->set_bool(f, v.b);
        break;
      case LetterValue::Kind::kInvalid:
        input->set_invalid(f);
        break;
    }
  }
}

namespace {
struct FailureClock {
  std::string test;  // the gtest test whose case failed
  std::chrono::steady_clock::time_point first_failure;
};
FailureClock& failure_clock() {
  static FailureClock clock;
  return clock;
}
std::string current_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info ? std::string(info->test_suite_name()) + "." + info->name() : "";
}
}  // namespace

bool shrink_budget_spent() {
  const FailureClock& clock = failure_clock();
  if (clock.test.empty() || clock.test != current_test_name()) return false;
  const std::chrono::duration<double> since =
      std::chrono::steady_clock::now() - clock.first_failure;
  return since.count() > kShrinkBudgetSeconds;
}

void note_case_failed() {
  FailureClock& clock = failure_clock();
  const std::string test = current_test_name();
  if (clock.test == test) return;
  clock.test = test;
  clock.first_failure = std::chrono::steady_clock::now();
}

BuiltTable build_table(const ir::CheckedPolicy& policy) {
  BuiltTable out;
  out.bytes = lower(policy);
  out.table = Table::load_bytes(out.bytes.data(), out.bytes.size(), &out.status);
  return out;
}

BuiltTable build_table_or_fail(const ir::CheckedPolicy& policy) {
  BuiltTable out = build_table(policy);
  if (!out.table) RC_FAIL("table does not load: " + out.status.message);
  return out;
}

std::vector<Letter> gen_letters(const ir::Policy& policy, size_t count) {
  return *rc::gen::container<std::vector<Letter>>(count, gen_letter(policy));
}

InterpretResult runtime_decide(const Table& table, const Letter& letter, Input* scratch) {
  fill_input(letter, scratch);
  Decision d = table.decide(*scratch);
  InterpretResult out;
  out.verb = d.verb;
  switch (d.kind) {
    case DecisionKind::kRule:
      out.kind = InterpretKind::kRule;
      out.rule = d.rule;
      break;
    case DecisionKind::kDefault:
      out.kind = InterpretKind::kDefault;
      break;
    case DecisionKind::kInvalidInput:
      out.kind = InterpretKind::kInvalidInput;
      out.invalid_field = d.invalid_field;
      break;
  }
  return out;
}

}  // namespace replaygate::testing

namespace replaygate::ir {
void showValue(const CheckedPolicy& policy, std::ostream& os) {
  os << "\n# ---- policy (YAML) ----\n"
     << replaygate::testing::to_yaml(policy.policy) << "# ----\n";
}
}  // namespace replaygate::ir

namespace replaygate {
void showValue(const LetterValue& value, std::ostream& os) { os << describe_value(value); }

void showValue(const InterpretResult& result, std::ostream& os) {
  os << "{verb " << result.verb << ", " << interpret_kind_name(result.kind) << ", rule "
     << result.rule << ", invalid_field " << result.invalid_field << "}";
}
}  // namespace replaygate
