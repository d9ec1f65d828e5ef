// The reference interpreter: validates a letter, then walks the IR's rules in order (the oracle).
#include "compiler/interpret.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <variant>

namespace replaygate {
namespace {

// A validated field value: nullopt is absent.
using Present = std::optional<LetterValue>;

// Validates one field. Returns false when the field makes the letter invalid; otherwise sets
// *out to the present value or to nullopt (absent).
bool validate_field(const ir::Field& field, const LetterValue& value, Present* out) {
  using Kind = LetterValue::Kind;
  *out = std::nullopt;
  switch (value.kind) {
    case Kind::kMissing:
    case Kind::kNull:
      return field.optional;
    case Kind::kInvalid:
      return false;
    case Kind::kString:
      if (field.type == ir::FieldType::kString) {
        if (value.s.empty() && field.empty_means_absent) return field.optional;
        *out = value;
        return true;
      }
      if (field.type == ir::FieldType::kEnum) {
        for (const std::string& allowed : field.enum_values) {
          if (allowed == value.s) {
            *out = value;
            return true;
          }
        }
        return false;
      }
      return false;
    case Kind::kInt:
      if (field.type != ir::FieldType::kInt) return false;
      if (field.min && value.i < *field.min) return false;
      if (field.max && value.i > *field.max) return false;
      *out = value;
      return true;
    case Kind::kBool:
      if (field.type != ir::FieldType::kBool) return false;
      *out = value;
      return true;
  }
  return false;
}

// Equality of a present, validated value and a policy literal of the same field.
bool equals(const ir::Field& field, const LetterValue& value, const ir::Value& literal) {
  switch (field.type) {
    case ir::FieldType::kString:
    case ir::FieldType::kEnum:
      return value.s == literal.str;  // std::string ==: length and every byte, NUL included
    case ir::FieldType::kInt:
      return value.i == literal.i;
    case ir::FieldType::kBool:
      return value.b == literal.b;
  }
  return false;
}

bool condition_holds(const ir::Field& field, const Present& value, const ir::Condition& c) {
  if (c.op == ir::Op::kAbsent) return !value.has_value();
  if (!value) return false;  // absent satisfies nothing else
  const LetterValue& v = *value;
  switch (c.op) {
    case ir::Op::kPresent:
      return true;
    case ir::Op::kEq:
      return equals(field, v, c.values.at(0));
    case ir::Op::kNe:
      return !equals(field, v, c.values.at(0));
    case ir::Op::kIn:
      for (const auto& literal : c.values) {
        if (equals(field, v, literal)) return true;
      }
      return false;
    case ir::Op::kNotIn:
      for (const auto& literal : c.values) {
        if (equals(field, v, literal)) return false;
      }
      return true;
    case ir::Op::kLt:
      return v.i < c.values.at(0).i;
    case ir::Op::kLe:
      return v.i <= c.values.at(0).i;
    case ir::Op::kGt:
      return v.i > c.values.at(0).i;
    case ir::Op::kGe:
      return v.i >= c.values.at(0).i;
    case ir::Op::kAbsent:
      break;
  }
  return false;
}

bool key_matches(const ir::Field& field, const Present& value,
                 const std::optional<ir::Value>& key) {
  if (!key) return true;  // the wildcard matches anything, absent included
  return value.has_value() && equals(field, *value, *key);
}

void append_escaped(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  out += '"';
}

}  // namespace

InterpretResult interpret(const ir::Policy& policy, const Letter& letter) {
  InterpretResult result;
  result.verb = policy.default_verb;

  std::vector<Present> values(policy.fields.size());
  for (uint32_t f = 0; f < policy.fields.size(); ++f) {
    // Computed below; the letter's value is ignored.
    if (policy.fields[f].derived || policy.fields[f].classify) continue;
    LetterValue missing;
    const LetterValue& raw = f < letter.size() ? letter[f] : missing;
    if (!validate_field(policy.fields[f], raw, &values[f])) {
      result.kind = InterpretKind::kInvalidInput;
      result.invalid_field = f;
      return result;
    }
  }

  // Derived bools, after validation: both operands are required ints, so present.
  for (uint32_t f = 0; f < policy.fields.size(); ++f) {
    if (!policy.fields[f].derived) continue;
    const ir::Derivation& d = *policy.fields[f].derived;
    const int64_t lhs = values.at(d.lhs)->i, rhs = values.at(d.rhs)->i;
    const bool b = ir::compare(d.op, lhs, rhs);
    values[f] = LetterValue::Bool(b);
  }

  // Classified enums, after validation: the first row (in order) with a value equal to the raw
  // one, a prefix of it or a range around it; else, or when the raw value is absent, the
  // fallback. Written out here rather than through ir::classify: this is the oracle.
  for (uint32_t f = 0; f < policy.fields.size(); ++f) {
    if (!policy.fields[f].classify) continue;
    const ir::Classifier& c = *policy.fields[f].classify;
    const Present& raw = values.at(c.from);
    uint32_t cls = c.fallback;
    for (size_t r = 0; raw && r < c.rows.size(); ++r) {
      const ir::ClassifyRow& row = c.rows[r];
      bool takes = false;
      if (row.kind == ir::ClassifyRow::Kind::kRange) {
        takes = raw->kind == LetterValue::Kind::kInt && row.values[0].i <= raw->i &&
                raw->i <= row.values[1].i;
      }
      for (const ir::Value& v : row.values) {
        if (row.kind == ir::ClassifyRow::Kind::kIn) {
          takes = takes || (raw->kind == LetterValue::Kind::kInt
                                ? v.kind == ir::Value::Kind::kInt && v.i == raw->i
                                : v.str == raw->s);
        } else if (row.kind == ir::ClassifyRow::Kind::kPrefix) {
          takes = takes ||
                  (raw->s.size() >= v.str.size() && raw->s.compare(0, v.str.size(), v.str) == 0);
        }
      }
      if (takes) {
        cls = row.cls;
        break;
      }
    }
    values[f] = LetterValue::String(policy.fields[f].enum_values.at(cls));
  }

  uint32_t catalog_base = 0;  // catalog index of the current rule's first entry
  for (const ir::Rule& rule : policy.rules) {
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      bool all = true;
      for (const auto& c : guard->conditions) {
        if (!condition_holds(policy.fields.at(c.field), values.at(c.field), c)) {
          all = false;
          break;
        }
      }
      if (all) {
        result.kind = InterpretKind::kRule;
        result.verb = guard->verb;
        result.rule = catalog_base;
        return result;
      }
      catalog_base += 1;
      continue;
    }
    const auto& table = std::get<ir::Table>(rule);
    std::optional<uint32_t> best;
    size_t best_concrete = 0;
    for (uint32_t r = 0; r < table.rows.size(); ++r) {
      const ir::Row& row = table.rows[r];
      bool match = true;
      size_t concrete = 0;
      for (size_t k = 0; k < table.key_fields.size(); ++k) {
        uint32_t f = table.key_fields[k];
        if (row.keys.at(k)) ++concrete;
        if (!key_matches(policy.fields.at(f), values.at(f), row.keys.at(k))) {
          match = false;
          break;
        }
      }
      // Strictly more concrete keys replaces; a tie keeps the earlier row.
      if (match && (!best || concrete > best_concrete)) {
        best = r;
        best_concrete = concrete;
      }
    }
    if (best) {
      result.kind = InterpretKind::kRule;
      result.verb = table.rows[*best].verb;
      result.rule = catalog_base + *best;
      return result;
    }
    catalog_base += static_cast<uint32_t>(table.rows.size());
  }
  result.kind = InterpretKind::kDefault;
  return result;
}

const char* interpret_kind_name(InterpretKind kind) {
  switch (kind) {
    case InterpretKind::kRule:
      return "rule";
    case InterpretKind::kDefault:
      return "default";
    case InterpretKind::kInvalidInput:
      return "invalid_input";
  }
  return "?";
}

std::string describe_value(const LetterValue& v) {
  std::string out;
  switch (v.kind) {
    case LetterValue::Kind::kMissing:
      return "<missing>";
    case LetterValue::Kind::kNull:
      return "null";
    case LetterValue::Kind::kString:
      append_escaped(out, v.s);
      return out;
    case LetterValue::Kind::kInt:
      return std::to_string(v.i);
    case LetterValue::Kind::kBool:
      return v.b ? "true" : "false";
    case LetterValue::Kind::kInvalid:
      return "<invalid>";
  }
  return "?";
}

std::string describe_letter(const ir::Policy& policy, const Letter& letter) {
  std::string out = "{";
  size_t n = std::max(policy.fields.size(), letter.size());
  for (size_t f = 0; f < n; ++f) {
    if (f > 0) out += ", ";
    out += f < policy.fields.size() ? policy.fields[f].name : "#" + std::to_string(f);
    out += '=';
    out += describe_value(f < letter.size() ? letter[f] : LetterValue::Missing());
  }
  out += '}';
  return out;
}

}  // namespace replaygate
