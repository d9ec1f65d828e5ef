// Condition-level evaluation over the checked IR (see explain.h).
#include "compiler/explain.h"

#include <variant>

#include "runtime/problems.h"

namespace replaygate {
namespace {

// Returns "" when valid (with *out set to the present value or absent), else why not.
std::string validate_field(const ir::Field& field, const LetterValue& value, FieldValue* out) {
  using Kind = LetterValue::Kind;
  *out = std::nullopt;
  switch (value.kind) {
    case Kind::kMissing:
      return field.optional ? "" : problem::kMissing;
    case Kind::kNull:
      return field.optional ? "" : problem::kNull;
    case Kind::kInvalid:
      return problem::kUnreadableValue;
    case Kind::kString:
      if (field.type == ir::FieldType::kString) {
        if (value.s.empty() && field.empty_means_absent) {
          return field.optional ? "" : problem::kEmptyCountsAsAbsent;
        }
        *out = value;
        return "";
      }
      if (field.type == ir::FieldType::kEnum) {
        for (const std::string& allowed : field.enum_values) {
          if (allowed == value.s) {
            *out = value;
            return "";
          }
        }
        return problem::kNotAnEnumValue;
      }
      return problem::wrong_type(field.type);
    case Kind::kInt:
      if (field.type != ir::FieldType::kInt) return problem::wrong_type(field.type);
      if (field.min && value.i < *field.min) return problem::below_min(*field.min);
      if (field.max && value.i > *field.max) return problem::above_max(*field.max);
      *out = value;
      return "";
    case Kind::kBool:
      if (field.type != ir::FieldType::kBool) return problem::wrong_type(field.type);
      *out = value;
      return "";
  }
  return problem::kUnreadable;
}

bool equals(const ir::Field& field, const LetterValue& value, const ir::Value& literal) {
  switch (field.type) {
    case ir::FieldType::kString:
    case ir::FieldType::kEnum:
      return value.s == literal.str;
    case ir::FieldType::kInt:
      return value.i == literal.i;
    case ir::FieldType::kBool:
      return value.b == literal.b;
  }
  return false;
}

const char* op_symbol(ir::Op op) {
  switch (op) {
    case ir::Op::kEq:
      return "==";
    case ir::Op::kNe:
      return "!=";
    case ir::Op::kIn:
      return "in";
    case ir::Op::kNotIn:
      return "not in";
    case ir::Op::kLt:
      return "<";
    case ir::Op::kLe:
      return "<=";
    case ir::Op::kGt:
      return ">";
    case ir::Op::kGe:
      return ">=";
    case ir::Op::kAbsent:
      return "is absent";
    case ir::Op::kPresent:
      return "is present";
  }
  return "?";
}

}  // namespace

ValidatedLetter validate_letter(const ir::Policy& policy, const Letter& letter) {
  ValidatedLetter out;
  out.values.resize(policy.fields.size());
  for (uint32_t f = 0; f < policy.fields.size(); ++f) {
    const ir::Field& field = policy.fields[f];
    if (field.derived || field.classify) continue;  // computed below, never read from the letter
    const LetterValue missing;
    const LetterValue& raw = f < letter.size() ? letter[f] : missing;
    std::string why = validate_field(field, raw, &out.values[f]);
    if (!why.empty()) {
      out.invalid_field = f;
      out.invalid_why = std::move(why);
      out.values.clear();
      return out;
    }
  }
  for (uint32_t f = 0; f < policy.fields.size(); ++f) {
    const auto& derived = policy.fields[f].derived;
    if (!derived) continue;
    const FieldValue& lhs = out.values.at(derived->lhs);
    const FieldValue& rhs = out.values.at(derived->rhs);
    // Both operands are required ints, so both are present on a valid letter.
    out.values[f] = LetterValue::Bool(lhs && rhs && ir::compare(derived->op, lhs->i, rhs->i));
  }
  // Classified enums: the raw value's class (ir::classify), absent raw values the fallback.
  for (uint32_t f = 0; f < policy.fields.size(); ++f) {
    const ir::Field& field = policy.fields[f];
    if (!field.classify) continue;
    const FieldValue& raw = out.values.at(field.classify->from);
    std::optional<ir::Value> value;
    if (raw && raw->kind == LetterValue::Kind::kInt) value = ir::Value::Int(raw->i);
    if (raw && raw->kind == LetterValue::Kind::kString) value = ir::Value::String(raw->s);
    out.values[f] = LetterValue::String(field.enum_values.at(ir::classify(*field.classify, value)));
  }
  out.valid = true;
  return out;
}

const char* fail_why_name(FailWhy why) {
  switch (why) {
    case FailWhy::kHolds:
      return "holds";
    case FailWhy::kAbsent:
      return "absent";
    case FailWhy::kValue:
      return "value";
    case FailWhy::kBound:
      return "bound";
  }
  return "?";
}

FailWhy check_condition(const ir::Policy& policy, const ir::Condition& c,
                        const std::vector<FieldValue>& values) {
  const FieldValue& value = values.at(c.field);
  const ir::Field& field = policy.fields.at(c.field);
  if (c.op == ir::Op::kAbsent) return value ? FailWhy::kValue : FailWhy::kHolds;
  if (!value) return FailWhy::kAbsent;
  const LetterValue& v = *value;
  bool holds = false;
  switch (c.op) {
    case ir::Op::kPresent:
      holds = true;
      break;
    case ir::Op::kEq:
      holds = equals(field, v, c.values.at(0));
      break;
    case ir::Op::kNe:
      holds = !equals(field, v, c.values.at(0));
      break;
    case ir::Op::kIn:
    case ir::Op::kNotIn: {
      bool found = false;
      for (const auto& literal : c.values) found = found || equals(field, v, literal);
      holds = c.op == ir::Op::kIn ? found : !found;
      break;
    }
    case ir::Op::kLt:
    case ir::Op::kLe:
    case ir::Op::kGt:
    case ir::Op::kGe:
      return ir::compare(c.op, v.i, c.values.at(0).i) ? FailWhy::kHolds : FailWhy::kBound;
    case ir::Op::kAbsent:
      break;
  }
  return holds ? FailWhy::kHolds : FailWhy::kValue;
}

bool conditions_hold(const ir::Policy& policy, const std::vector<ir::Condition>& conditions,
                     const std::vector<FieldValue>& values) {
  for (const ir::Condition& c : conditions) {
    if (check_condition(policy, c, values) != FailWhy::kHolds) return false;
  }
  return true;
}

bool row_matches(const ir::Policy& policy, const ir::Table& table, const ir::Row& row,
                 const std::vector<FieldValue>& values) {
  for (size_t k = 0; k < table.key_fields.size(); ++k) {
    const auto& key = row.keys.at(k);
    if (!key) continue;
    const FieldValue& value = values.at(table.key_fields[k]);
    if (!value || !equals(policy.fields.at(table.key_fields[k]), *value, *key)) return false;
  }
  return true;
}

std::string describe_literal(const ir::Value& value) {
  switch (value.kind) {
    case ir::Value::Kind::kString:
      return describe_value(LetterValue::String(value.str));
    case ir::Value::Kind::kInt:
      return std::to_string(value.i);
    case ir::Value::Kind::kBool:
      return value.b ? "true" : "false";
  }
  return "?";
}

std::string describe_field_value(const FieldValue& value) {
  return value ? describe_value(*value) : "absent";
}

std::string describe_condition(const ir::Policy& policy, const ir::Condition& c) {
  std::string out = policy.fields.at(c.field).name + " " + op_symbol(c.op);
  if (c.op == ir::Op::kAbsent || c.op == ir::Op::kPresent) return out;
  // Enum values print bare, as the table's condition text has them (explain shows the same
  // text with --policy and --table).
  const bool bare = policy.fields.at(c.field).type == ir::FieldType::kEnum;
  auto literal_text = [bare](const ir::Value& v) { return bare ? v.str : describe_literal(v); };
  if (c.op == ir::Op::kIn || c.op == ir::Op::kNotIn) {
    out += " [";
    for (size_t i = 0; i < c.values.size(); ++i) {
      if (i > 0) out += ", ";
      out += literal_text(c.values[i]);
    }
    return out + "]";
  }
  const std::string literal = literal_text(c.values.at(0));
  if (!c.constant.empty()) return out + " " + c.constant + " (" + literal + ")";
  return out + " " + literal;
}

const char* op_word_symbol(std::string_view word) {
  for (ir::Op op : {ir::Op::kEq, ir::Op::kNe, ir::Op::kIn, ir::Op::kNotIn, ir::Op::kLt, ir::Op::kLe,
                    ir::Op::kGt, ir::Op::kGe, ir::Op::kAbsent, ir::Op::kPresent}) {
    if (word == ir::op_name(op)) return op_symbol(op);
  }
  return "?";
}

}  // namespace replaygate
