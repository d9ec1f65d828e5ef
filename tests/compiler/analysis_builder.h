// Test helper: builds ir::CheckedPolicy values by hand, with source lines, for the analysis tests.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir.h"

namespace replaygate::testing {

// A table key as written in a row: a value, or the wildcard.
struct Key {
  std::optional<ir::Value> value;
  Key(const char* s) : value(ir::Value::String(s)) {}             // NOLINT: implicit for brevity
  Key(std::string s) : value(ir::Value::String(std::move(s))) {}  // NOLINT
  Key(int v) : value(ir::Value::Int(v)) {}                        // NOLINT
  Key(bool b) : value(ir::Value::Bool(b)) {}                      // NOLINT
  static Key wild() {
    Key k(0);
    k.value.reset();
    return k;
  }
};
inline const Key kStar = Key::wild();

class PolicyBuilder {
 public:
  PolicyBuilder() {
    p_.policy.id = "test";
    p_.policy.revision = 1;
    p_.source.path = "test.yaml";
    verb("hold");  // verb 0 = the default
    verb("never");
    verb("replay_once", ir::Effect::kCreate);
    p_.policy.default_verb = 0;
  }

  PolicyBuilder& verb(const std::string& name, ir::Effect effect = ir::Effect::kNone) {
    p_.policy.verbs.push_back({name, effect, ""});
    p_.source.verbs.push_back({});
    return *this;
  }
  PolicyBuilder& string_field(const std::string& name, bool optional = false,
                              bool empty_means_absent = false) {
    ir::Field f;
    f.name = name;
    f.type = ir::FieldType::kString;
    f.optional = optional;
    f.empty_means_absent = empty_means_absent;
    return add(std::move(f));
  }
  PolicyBuilder& int_field(const std::string& name, std::optional<int64_t> min,
                           std::optional<int64_t> max = std::nullopt, bool optional = false) {
    ir::Field f;
    f.name = name;
    f.type = ir::FieldType::kInt;
    f.min = min;
    f.max = max;
    f.optional = optional;
    return add(std::move(f));
  }
  PolicyBuilder& bool_field(const std::string& name, bool optional = false) {
    ir::Field f;
    f.name = name;
    f.type = ir::FieldType::kBool;
    f.optional = optional;
    return add(std::move(f));
  }
  PolicyBuilder& enum_field(const std::string& name, std::vector<std::string> values,
                            bool optional = false) {
    ir::Field f;
    f.name = name;
    f.type = ir::FieldType::kEnum;
    f.enum_values = std::move(values);
    f.optional = optional;
    return add(std::move(f));
  }

  // A condition; the values are typed by the field. `constant` names the operand's constant.
  ir::Condition cond(const std::string& field, ir::Op op, std::vector<Key> values = {},
                     std::string constant = "") const {
    ir::Condition c;
    c.field = field_index(field);
    c.op = op;
    for (auto& k : values) c.values.push_back(typed(c.field, *k.value));
    c.constant = std::move(constant);
    return c;
  }

  // A guard at `line`; its conditions sit on the following lines.
  PolicyBuilder& guard(const std::string& id, std::vector<ir::Condition> conditions,
                       const std::string& verb_name, uint32_t line) {
    ir::Guard g;
    g.id = id;
    g.reason = "because";
    g.conditions = std::move(conditions);
    g.verb = verb_index(verb_name);
    std::vector<ir::Span> spans;
    for (size_t i = 0; i < g.conditions.size(); ++i) {
      spans.push_back({line + 2 + static_cast<uint32_t>(i), 7, 0, 0});
    }
    p_.policy.rules.emplace_back(std::move(g));
    p_.source.rules.push_back({line, 5, 0, 0});
    p_.source.conditions.push_back(std::move(spans));
    p_.source.rows.emplace_back();
    return *this;
  }

  PolicyBuilder& table(const std::string& id, const std::vector<std::string>& keys, uint32_t line) {
    ir::Table t;
    t.id = id;
    for (const auto& k : keys) t.key_fields.push_back(field_index(k));
    p_.policy.rules.emplace_back(std::move(t));
    p_.source.rules.push_back({line, 5, 0, 0});
    p_.source.conditions.emplace_back();
    p_.source.rows.emplace_back();
    return *this;
  }

  // A row of the last table; the id is derived like check() does unless given.
  PolicyBuilder& row(std::vector<Key> keys, const std::string& verb_name, uint32_t line,
                     std::string id = "") {
    auto& t = std::get<ir::Table>(p_.policy.rules.back());
    ir::Row r;
    r.verb = verb_index(verb_name);
    std::string derived = t.id + ":";
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i > 0) derived += "/";
      if (keys[i].value) {
        r.keys.push_back(typed(t.key_fields.at(i), *keys[i].value));
        derived += text(*r.keys.back());
      } else {
        r.keys.push_back(std::nullopt);
        derived += "*";
      }
    }
    r.id = id.empty() ? derived : id;
    t.rows.push_back(std::move(r));
    p_.source.rows.back().push_back({line, 9, 0, 0});
    return *this;
  }

  const ir::CheckedPolicy& get() const { return p_; }
  ir::CheckedPolicy& mutable_policy() { return p_; }

  uint32_t field_index(const std::string& name) const {
    for (uint32_t i = 0; i < p_.policy.fields.size(); ++i) {
      if (p_.policy.fields[i].name == name) return i;
    }
    throw std::invalid_argument("no field " + name);
  }
  uint32_t verb_index(const std::string& name) const {
    for (uint32_t i = 0; i < p_.policy.verbs.size(); ++i) {
      if (p_.policy.verbs[i].name == name) return i;
    }
    throw std::invalid_argument("no verb " + name);
  }

 private:
  PolicyBuilder& add(ir::Field f) {
    p_.policy.fields.push_back(std::move(f));
    p_.source.fields.push_back({});
    return *this;
  }

  // Test keys are written as strings or ints; convert to the field's type (enums are strings,
  // bools accept Key(bool)).
  ir::Value typed(uint32_t field, const ir::Value& v) const {
    switch (p_.policy.fields.at(field).type) {
      case ir::FieldType::kString:
      case ir::FieldType::kEnum:
        return v;
      case ir::FieldType::kInt:
        return ir::Value::Int(v.i);
      case ir::FieldType::kBool:
        return v.kind == ir::Value::Kind::kBool ? v : ir::Value::Bool(v.str == "true");
    }
    return v;
  }

  static std::string text(const ir::Value& v) {
    switch (v.kind) {
      case ir::Value::Kind::kInt:
        return std::to_string(v.i);
      case ir::Value::Kind::kBool:
        return v.b ? "true" : "false";
      case ir::Value::Kind::kString:
        return v.str;
    }
    return "";
  }

  ir::CheckedPolicy p_;
};

}  // namespace replaygate::testing
