// Small helpers over the IR: rule catalog numbering and names of enums.
#include "compiler/ir.h"

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

const char* effect_name(Effect effect) {
  switch (effect) {
    case Effect::kNone:
      return "none";
    case Effect::kRead:
      return "read";
    case Effect::kCopy:
      return "copy";
    case Effect::kCreate:
      return "create";
  }
  return "?";
}

const char* field_type_name(FieldType type) {
  switch (type) {
    case FieldType::kString:
      return "string";
    case FieldType::kInt:
      return "int";
    case FieldType::kBool:
      return "bool";
    case FieldType::kEnum:
      return "enum";
  }
  return "?";
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

const char* op_name(Op op) {
  switch (op) {
    case Op::kEq:
      return "eq";
    case Op::kNe:
      return "ne";
    case Op::kIn:
      return "in";
    case Op::kNotIn:
      return "not_in";
    case Op::kLt:
      return "lt";
    case Op::kLe:
      return "le";
    case Op::kGt:
      return "gt";
    case Op::kGe:
      return "ge";
    case Op::kAbsent:
      return "absent";
    case Op::kPresent:
      return "present";
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

}  // namespace replaygate::ir
