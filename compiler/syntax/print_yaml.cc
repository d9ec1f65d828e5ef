// IR -> YAML (see print_yaml.h).
#include "compiler/syntax/print_yaml.h"

#include <cstdio>
#include <string>
#include <vector>

#include "compiler/key_text.h"

namespace replaygate {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

// A plain YAML scalar that yaml-cpp and check() read back as this exact string.
bool plain_word(const std::string& s) {
  if (s.empty()) return false;
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(s[0]) && s[0] != '_') return false;
  for (char c : s) {
    if (!alpha(c) && !digit(c) && c != '_' && c != '.' && c != '-') return false;
  }
  static const char* const kSpecial[] = {
      "true", "false", "null", "absent", "present", "yes",   "no",   "on",   "off",
      "y",    "n",     "True", "False",  "TRUE",    "FALSE", "Null", "NULL", "Yes",
      "No",   "YES",   "NO",   "On",     "ON",      "Off",   "OFF",  "Y",    "N"};
  for (const char* word : kSpecial) {
    if (s == word) return false;
  }
  return true;
}

std::string text(const std::string& s) { return plain_word(s) ? s : quoted(s); }

std::string value(const ir::Value& v) {
  switch (v.kind) {
    case ir::Value::Kind::kString:
      return text(v.str);
    case ir::Value::Kind::kInt:
      return std::to_string(v.i);
    case ir::Value::Kind::kBool:
      return v.b ? "true" : "false";
  }
  return "?";
}

std::string list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "]";
}

// `{field: matcher, ...}` for a conjunction; conditions on one field share its key.
std::string when(const ir::Policy& p, const std::vector<ir::Condition>& conditions,
                 const std::string& indent) {
  std::vector<uint32_t> order;
  for (const ir::Condition& c : conditions) {
    bool seen = false;
    for (uint32_t f : order) seen = seen || f == c.field;
    if (!seen) order.push_back(c.field);
  }
  std::string out;
  for (uint32_t f : order) {
    std::vector<const ir::Condition*> mine;
    for (const ir::Condition& c : conditions) {
      if (c.field == f) mine.push_back(&c);
    }
    out += indent + p.fields.at(f).name + ": ";
    if (mine.size() == 1 && mine[0]->op == ir::Op::kAbsent) {
      out += "absent";
    } else if (mine.size() == 1 && mine[0]->op == ir::Op::kPresent) {
      out += "present";
    } else {
      out += "{ ";
      for (size_t i = 0; i < mine.size(); ++i) {
        const ir::Condition& c = *mine[i];
        out += std::string(i ? ", " : "") + ir::op_name(c.op) + ": ";
        if (c.op == ir::Op::kIn || c.op == ir::Op::kNotIn) {
          std::vector<std::string> values;
          for (const ir::Value& v : c.values) values.push_back(value(v));
          out += list(values);
        } else if (!c.constant.empty()) {
          out += c.constant;
        } else if (!c.values.empty()) {
          out += value(c.values[0]);
        }
      }
      out += " }";
    }
    out += "\n";
  }
  return out;
}

// `    classify:` with its raw input, one flow mapping per row and the fallback.
std::string classifier(const ir::Policy& policy, const ir::Field& f) {
  const ir::Classifier& c = *f.classify;
  std::string out = "    classify:\n      from: " + policy.fields.at(c.from).name + "\n";
  if (!c.rows.empty()) out += "      rows:\n";
  for (const ir::ClassifyRow& row : c.rows) {
    std::vector<std::string> values;
    for (const ir::Value& v : row.values) {
      values.push_back(v.kind == ir::Value::Kind::kString ? quoted(v.str) : value(v));
    }
    const char* kind = row.kind == ir::ClassifyRow::Kind::kIn       ? "in"
                       : row.kind == ir::ClassifyRow::Kind::kPrefix ? "prefix"
                                                                    : "range";
    out += "        - {class: " + text(f.enum_values.at(row.cls)) + ", " + kind + ": " +
           list(values) + "}\n";
  }
  out += "      fallback: " + text(f.enum_values.at(c.fallback)) + "\n";
  return out;
}

}  // namespace

std::string print_yaml(const ir::Policy& policy) {
  std::string out;
  out += "policy: " + text(policy.id) + "\nrevision: " + std::to_string(policy.revision) + "\n";
  if (!policy.description.empty()) out += "description: " + quoted(policy.description) + "\n";
  if (!policy.sensitive.empty()) {
    std::vector<std::string> names;
    for (const std::string& name : policy.sensitive) names.push_back(text(name));
    out += "sensitive: " + list(names) + "\n";
  }
  out += "\ninputs:\n";
  for (const ir::Field& f : policy.fields) {
    out += "  " + f.name + ":\n    type: " + ir::field_type_name(f.type) + "\n";
    if (f.optional) out += "    optional: true\n";
    if (f.empty_means_absent) out += "    empty_means_absent: true\n";
    if (f.min) out += "    min: " + std::to_string(*f.min) + "\n";
    if (f.max) out += "    max: " + std::to_string(*f.max) + "\n";
    if (f.type == ir::FieldType::kEnum) {
      std::vector<std::string> values;
      for (const std::string& v : f.enum_values) values.push_back(text(v));
      out += "    values: " + list(values) + "\n";
    }
    if (!f.domain.empty()) {
      std::vector<std::string> values;
      for (const std::string& v : f.domain) values.push_back(text(v));
      out += "    domain: " + list(values) + "\n";
    }
    if (f.derived) {
      out += std::string("    derived: {") + ir::op_name(f.derived->op) + ": [" +
             policy.fields.at(f.derived->lhs).name + ", " + policy.fields.at(f.derived->rhs).name +
             "]}\n";
    }
    if (f.classify) out += classifier(policy, f);
    if (f.source != ir::InputSource::kLetter) {
      out += std::string("    source: ") + ir::input_source_name(f.source) + "\n";
    }
    if (f.idempotency_key) out += "    idempotency_key: true\n";
    if (!f.description.empty()) out += "    description: " + quoted(f.description) + "\n";
  }
  out += "\nverbs:\n";
  for (const ir::Verb& v : policy.verbs) {
    out += "  " + v.name + ":\n    effect: " + ir::effect_name(v.effect) + "\n";
    if (!v.description.empty()) out += "    description: " + quoted(v.description) + "\n";
  }
  out += "\ndefault: " + policy.verbs.at(policy.default_verb).name + "\n";
  if (policy.default_reason != "no rule matched") {
    out += "default_reason: " + quoted(policy.default_reason) + "\n";
  }
  if (!policy.constants.empty()) {
    out += "\nconstants:\n";
    for (const ir::Constant& k : policy.constants) {
      out += "  " + k.name + ": " + std::to_string(k.value) + "\n";
    }
  }
  out += "\nrules:\n";
  for (const ir::Rule& rule : policy.rules) {
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      out +=
          "  - guard: " + guard->id + "\n    when:\n" + when(policy, guard->conditions, "      ");
      out += "    verb: " + policy.verbs.at(guard->verb).name +
             "\n    reason: " + quoted(guard->reason) + "\n";
      continue;
    }
    const auto& table = std::get<ir::Table>(rule);
    std::vector<std::string> keys;
    for (uint32_t k : table.key_fields) keys.push_back(policy.fields.at(k).name);
    out += "  - table: " + table.id + "\n    keys: " + list(keys) + "\n    rows:\n";
    for (const ir::Row& row : table.rows) {
      std::vector<std::string> values;
      std::string derived = table.id + ":";
      for (size_t k = 0; k < row.keys.size(); ++k) {
        values.push_back(row.keys[k] ? value(*row.keys[k]) : "'*'");
        derived += (k ? "/" : "") + ir::key_text(row.keys[k]);
      }
      const std::string& verb = policy.verbs.at(row.verb).name;
      if (row.id == derived && row.reason.empty()) {
        values.push_back(verb);
        out += "      - " + list(values) + "\n";
        continue;
      }
      out += "      - { keys: " + list(values) + ", verb: " + verb;
      if (row.id != derived) out += ", id: " + row.id;
      if (!row.reason.empty()) out += ", reason: " + quoted(row.reason);
      out += " }\n";
    }
  }
  if (!policy.invariants.empty()) {
    out += "\ninvariants:\n";
    for (const ir::Invariant& n : policy.invariants) {
      out += "  - invariant: " + n.id + "\n";
      if (!n.conditions.empty()) out += "    when:\n" + when(policy, n.conditions, "      ");
      out += std::string("    require: {") + ir::invariant_op_name(n.op) + ": ";
      if (n.op == ir::InvariantOp::kVerbIn || n.op == ir::InvariantOp::kVerbNotIn) {
        std::vector<std::string> verbs;
        for (uint32_t v : n.verbs) verbs.push_back(policy.verbs.at(v).name);
        out += list(verbs);
      } else {
        out += ir::effect_name(n.effect);
      }
      out += "}\n";
      if (!n.reason.empty()) out += "    reason: " + quoted(n.reason) + "\n";
    }
  }
  return out;
}

}  // namespace replaygate
