// Small helpers over the IR: rule catalog numbering and names of the IR's own enums.
#include "compiler/ir.h"

#include <algorithm>

#include "compiler/key_text.h"

namespace replaygate::ir {

std::vector<CatalogEntry> rule_catalog(const Policy& policy) {
  std::vector<CatalogEntry> out;
  for (uint32_t r = 0; r < policy.rules.size(); ++r) {
    if (const auto* table = std::get_if<Table>(&policy.rules[r])) {
      for (uint32_t row = 0; row < table->rows.size(); ++row) out.push_back({r, row});
    } else {
      out.push_back({r, 0});
    }
  }
  return out;
}

const char* input_source_name(InputSource source) {
  switch (source) {
    case InputSource::kLetter:
      return "letter";
    case InputSource::kOperator:
      return "operator";
    case InputSource::kRecord:
      return "record";
  }
  return "?";
}

bool compare(Op op, int64_t a, int64_t b) {
  switch (op) {
    case Op::kEq:
      return a == b;
    case Op::kNe:
      return a != b;
    case Op::kLt:
      return a < b;
    case Op::kLe:
      return a <= b;
    case Op::kGt:
      return a > b;
    case Op::kGe:
      return a >= b;
    case Op::kIn:
    case Op::kNotIn:
    case Op::kAbsent:
    case Op::kPresent:
      return false;
  }
  return false;
}

const char* invariant_op_name(InvariantOp op) {
  switch (op) {
    case InvariantOp::kVerbIn:
      return "verb_in";
    case InvariantOp::kVerbNotIn:
      return "verb_not_in";
    case InvariantOp::kEffectAtMost:
      return "effect_at_most";
    case InvariantOp::kEffectNot:
      return "effect_not";
  }
  return "?";
}

bool classify_row_takes(const ClassifyRow& row, const Value& raw) {
  switch (row.kind) {
    case ClassifyRow::Kind::kIn:
      return std::find(row.values.begin(), row.values.end(), raw) != row.values.end();
    case ClassifyRow::Kind::kPrefix:
      return raw.kind == Value::Kind::kString &&
             std::any_of(row.values.begin(), row.values.end(),
                         [&](const Value& p) { return raw.str.starts_with(p.str); });
    case ClassifyRow::Kind::kRange:
      return raw.kind == Value::Kind::kInt && row.values.size() == 2 && row.values[0].i <= raw.i &&
             raw.i <= row.values[1].i;
  }
  return false;
}

uint32_t classify(const Classifier& classifier, const std::optional<Value>& raw) {
  if (!raw) return classifier.fallback;
  for (const ClassifyRow& row : classifier.rows) {
    if (classify_row_takes(row, *raw)) return row.cls;
  }
  return classifier.fallback;
}

std::string key_text(const std::optional<Value>& key) {
  if (!key) return "*";
  switch (key->kind) {
    case Value::Kind::kString:
      return key->str;
    case Value::Kind::kInt:
      return std::to_string(key->i);
    case Value::Kind::kBool:
      return key->b ? "true" : "false";
  }
  return "?";
}

}  // namespace replaygate::ir
