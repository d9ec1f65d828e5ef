// Names of the table format's codes (see codes.h).
#include "runtime/codes.h"

namespace replaygate {

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

}  // namespace replaygate
