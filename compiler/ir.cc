// Small helpers over the IR: rule catalog numbering and names of the IR's own enums.
#include "compiler/ir.h"

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
