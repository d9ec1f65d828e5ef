// The generators themselves: every generated policy obeys the checker's rules (checked here
// independently) and contains every construct; letters cover every kind of value.
#include "tests/properties/policy_gen.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace replaygate::testing {
namespace {

using ir::FieldType;
using ir::Op;

bool value_fits(const ir::Field& field, const ir::Value& v) {
  switch (field.type) {
    case FieldType::kString:
      return v.kind == ir::Value::Kind::kString && !v.str.empty();
    case FieldType::kEnum:
      return v.kind == ir::Value::Kind::kString &&
             std::count(field.enum_values.begin(), field.enum_values.end(), v.str) == 1;
    case FieldType::kBool:
      return v.kind == ir::Value::Kind::kBool;
    case FieldType::kInt:
      return v.kind == ir::Value::Kind::kInt && (!field.min || v.i >= *field.min) &&
             (!field.max || v.i <= *field.max);
  }
  return false;
}

std::string derived_id(const ir::Table& table, const ir::Row& row) {
  std::string id = table.id + ":";
  for (size_t k = 0; k < row.keys.size(); ++k) {
    if (k > 0) id += "/";
    const auto& key = row.keys[k];
    if (!key) {
      id += "*";
    } else if (key->kind == ir::Value::Kind::kString) {
      id += key->str;
    } else if (key->kind == ir::Value::Kind::kInt) {
      id += std::to_string(key->i);
    } else {
      id += key->b ? "true" : "false";
    }
  }
  return id;
}

RC_GTEST_PROP(PolicyGenTest, PoliciesAreValidAndCoverEveryConstruct, ()) {
  const ir::CheckedPolicy checked = *gen_policy();
  const ir::Policy& p = checked.policy;
  tag_policy(p);

  // Fields: names unique; flags only where they mean something; every construct present.
  std::set<std::string> names;
  std::set<FieldType> types;
  bool optional = false, empty_means_absent = false, bounded = false;
  for (const auto& f : p.fields) {
    RC_ASSERT(names.insert(f.name).second);
    types.insert(f.type);
    optional |= f.optional;
    empty_means_absent |= f.empty_means_absent;
    bounded |= f.min.has_value() || f.max.has_value();
    RC_ASSERT(!f.empty_means_absent || f.type == FieldType::kString);
    RC_ASSERT(!(f.min || f.max) || f.type == FieldType::kInt);
    RC_ASSERT(!f.min || !f.max || *f.min <= *f.max);
    const bool enum_ok =
        f.type == FieldType::kEnum ? f.enum_values.size() >= 2 : f.enum_values.empty();
    RC_ASSERT(enum_ok);
  }
  RC_ASSERT(types.size() == 4u);
  RC_ASSERT(optional);
  RC_ASSERT(empty_means_absent);
  RC_CLASSIFY(bounded, "bounded int");

  // Verbs: every effect; the default's is none.
  std::set<ir::Effect> effects;
  for (const auto& v : p.verbs) effects.insert(v.effect);
  RC_ASSERT(effects.size() == 4u);
  RC_ASSERT(p.verbs.at(p.default_verb).effect == ir::Effect::kNone);

  // Rules: ids unique and never "default"; ops fit fields; literals inside enums and bounds.
  std::set<std::string> ids = {"default"};
  std::set<Op> ops;
  std::set<std::string> constants_used;
  size_t guards = 0, tables = 0, wildcard_rows = 0, exact_rows = 0;
  for (const auto& rule : p.rules) {
    if (const auto* g = std::get_if<ir::Guard>(&rule)) {
      ++guards;
      RC_ASSERT(ids.insert(g->id).second);
      RC_ASSERT(!g->conditions.empty());
      RC_ASSERT(!g->reason.empty());
      RC_ASSERT(g->verb < p.verbs.size());
      for (const auto& c : g->conditions) {
        const ir::Field& f = p.fields.at(c.field);
        ops.insert(c.op);
        switch (c.op) {
          case Op::kAbsent:
          case Op::kPresent:
            RC_ASSERT(f.optional);
            RC_ASSERT(c.values.empty());
            break;
          case Op::kLt:
          case Op::kLe:
          case Op::kGt:
          case Op::kGe:
            RC_ASSERT(f.type == FieldType::kInt);
            RC_ASSERT(c.values.size() == 1u);
            break;
          case Op::kEq:
          case Op::kNe:
            RC_ASSERT(c.values.size() == 1u);
            break;
          case Op::kIn:
          case Op::kNotIn:
            RC_ASSERT(!c.values.empty());
            break;
        }
        for (const auto& v : c.values) RC_ASSERT(value_fits(f, v));
        if (!c.constant.empty()) {
          constants_used.insert(c.constant);
          auto k = std::find_if(p.constants.begin(), p.constants.end(),
                                [&](const ir::Constant& x) { return x.name == c.constant; });
          RC_ASSERT(k != p.constants.end());
          RC_ASSERT(c.values.size() == 1u);
          RC_ASSERT(c.values[0] == ir::Value::Int(k->value));
        }
      }
    } else {
      const auto& t = std::get<ir::Table>(rule);
      ++tables;
      RC_ASSERT(ids.insert(t.id).second);
      RC_ASSERT(!t.key_fields.empty());
      RC_ASSERT(t.key_fields.size() <= 3u);
      RC_ASSERT(std::set<uint32_t>(t.key_fields.begin(), t.key_fields.end()).size() ==
                t.key_fields.size());
      RC_ASSERT(!t.rows.empty());
      for (size_t r = 0; r < t.rows.size(); ++r) {
        const ir::Row& row = t.rows[r];
        RC_ASSERT(row.keys.size() == t.key_fields.size());
        RC_ASSERT(ids.insert(row.id).second);
        RC_ASSERT(row.id == derived_id(t, row) || row.id.find(':') == std::string::npos);
        size_t concrete = 0;
        for (size_t k = 0; k < row.keys.size(); ++k) {
          if (!row.keys[k]) continue;
          ++concrete;
          RC_ASSERT(value_fits(p.fields.at(t.key_fields[k]), *row.keys[k]));
        }
        (concrete == row.keys.size() ? exact_rows : wildcard_rows) += 1;
        for (size_t e = 0; e < r; ++e) {
          const ir::Row& earlier = t.rows[e];
          RC_ASSERT(earlier.keys != row.keys);
          size_t earlier_concrete =
              std::count_if(earlier.keys.begin(), earlier.keys.end(), [](auto& k) { return k; });
          bool overlap = true;
          for (size_t k = 0; k < row.keys.size(); ++k) {
            if (row.keys[k] && earlier.keys[k] && *row.keys[k] != *earlier.keys[k]) overlap = false;
          }
          RC_ASSERT(!(overlap && earlier_concrete == concrete && earlier.verb != row.verb));
        }
      }
    }
  }
  RC_ASSERT(guards >= 3u);
  RC_ASSERT(tables >= 2u);
  RC_ASSERT(ops.size() == 10u);
  RC_ASSERT(!constants_used.empty());
  RC_ASSERT(wildcard_rows + exact_rows > 0u);

  // Source map mirrors the IR.
  RC_ASSERT(checked.source.fields.size() == p.fields.size());
  RC_ASSERT(checked.source.verbs.size() == p.verbs.size());
  RC_ASSERT(checked.source.constants.size() == p.constants.size());
  RC_ASSERT(checked.source.rules.size() == p.rules.size());
  RC_ASSERT(checked.source.conditions.size() == p.rules.size());
  RC_ASSERT(checked.source.rows.size() == p.rules.size());
  RC_ASSERT(checked.source_base_name == std::string("gen.yaml"));
  RC_ASSERT(checked.source_digest.size() == 32u);
}

RC_GTEST_PROP(PolicyGenTest, LettersMixEveryKindOfValue, ()) {
  const ir::CheckedPolicy checked = *gen_policy();
  const Letter letter = *gen_letter(checked.policy);
  RC_ASSERT(letter.size() == checked.policy.fields.size());
  bool nul = false, missing = false, wrong = false;
  for (size_t f = 0; f < letter.size(); ++f) {
    const auto& v = letter[f];
    nul |= v.kind == LetterValue::Kind::kString && v.s.find('\0') != std::string::npos;
    missing |= v.kind == LetterValue::Kind::kMissing || v.kind == LetterValue::Kind::kNull;
    wrong |= v.kind == LetterValue::Kind::kInvalid;
  }
  RC_CLASSIFY(nul, "string with NUL");
  RC_CLASSIFY(missing, "missing or null");
  RC_CLASSIFY(wrong, "unreadable value");
  RC_TAG(interpret_kind_name(interpret(checked.policy, letter).kind));
}

// Over many letters for one policy, every decision kind turns up: the letters reach the rules.
TEST(PolicyGenTest, LettersReachRulesDefaultsAndInvalidInput) {
  size_t counts[3] = {0, 0, 0};
  rc::Random random(7);
  for (int i = 0; i < 200; ++i) {
    auto policy = gen_policy()(random.split(), 30).value();
    auto letter = gen_letter(policy.policy)(random.split(), 30).value();
    auto result = interpret(policy.policy, letter);
    counts[static_cast<int>(result.kind)] += 1;
  }
  EXPECT_GT(counts[0], 40u);  // a rule decided
  EXPECT_GE(counts[1], 5u);   // nothing matched
  EXPECT_GT(counts[2], 10u);  // invalid input
}

TEST(PolicyGenTest, YamlOfAHandBuiltPolicy) {
  ir::Policy p;
  p.id = "p";
  p.revision = 2;
  p.description = "d";
  ir::Field s{"s", FieldType::kString, true, true, {}, {}, {}, "a \"string\"", {}, {}};
  ir::Field n{"n", FieldType::kInt, false, false, 0, 9, {}, "", {}, {}};
  ir::Field e{"e", FieldType::kEnum, false, false, {}, {}, {"red", "green"}, "", {}, {}};
  p.fields = {s, n, e};
  p.verbs = {{"hold", ir::Effect::kNone, ""}, {"go", ir::Effect::kCreate, "go"}};
  p.default_reason = "none";
  p.constants = {{"limit", 3}};
  p.rules.emplace_back(ir::Guard{"g",
                                 "r",
                                 {{0, Op::kAbsent, {}, ""},
                                  {1, Op::kGe, {ir::Value::Int(3)}, "limit"},
                                  {1, Op::kNotIn, {ir::Value::Int(5), ir::Value::Int(6)}, ""}},
                                 1});
  ir::Table t{"t", {0, 2}, {}};
  t.rows.push_back({"t:a/*", "", {ir::Value::String("a"), std::nullopt}, 1});
  t.rows.push_back({"own", "why", {std::nullopt, ir::Value::String("red")}, 0});
  p.rules.emplace_back(t);
  // The canonical YAML of compiler/syntax/print_yaml.h: sections separated by a blank line, bare
  // words where YAML reads them back as the same string.
  EXPECT_EQ(to_yaml(p),
            "policy: p\n"
            "revision: 2\n"
            "description: \"d\"\n"
            "\n"
            "inputs:\n"
            "  s:\n    type: string\n    optional: true\n    empty_means_absent: true\n"
            "    description: \"a \\\"string\\\"\"\n"
            "  n:\n    type: int\n    min: 0\n    max: 9\n"
            "  e:\n    type: enum\n    values: [red, green]\n"
            "\n"
            "verbs:\n"
            "  hold:\n    effect: none\n"
            "  go:\n    effect: create\n    description: \"go\"\n"
            "\n"
            "default: hold\n"
            "default_reason: \"none\"\n"
            "\n"
            "constants:\n  limit: 3\n"
            "\n"
            "rules:\n"
            "  - guard: g\n"
            "    when:\n"
            "      s: absent\n"
            "      n: { ge: limit, not_in: [5, 6] }\n"
            "    verb: go\n"
            "    reason: \"r\"\n"
            "  - table: t\n"
            "    keys: [s, e]\n"
            "    rows:\n"
            "      - [a, '*', go]\n"
            "      - { keys: ['*', red], verb: hold, id: own, reason: \"why\" }\n");
}

}  // namespace
}  // namespace replaygate::testing
