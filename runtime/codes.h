// The on-disk codes of the table format and their names: field types, verb effects and condition
// operators. The format owns them (runtime/table_format.h stores them as these numbers); the
// compiler's IR reuses these very enums (compiler/ir.h), so no cast links two vocabularies.
// Installed with table.h; the C++ standard library only.
#pragma once

#include <cstdint>

namespace replaygate {

enum class FieldType : uint8_t { kString = 0, kInt = 1, kBool = 2, kEnum = 3 };
inline constexpr uint32_t kFieldTypeCount = 4;
const char* field_type_name(FieldType type);  // "string", "int", "bool", "enum"

// Danger order: none < read < copy < create.
enum class Effect : uint8_t { kNone = 0, kRead = 1, kCopy = 2, kCreate = 3 };
inline constexpr uint32_t kEffectCount = 4;
const char* effect_name(Effect effect);  // "none", "read", "copy", "create"

// A condition's operator (and a derivation's: eq, ne, lt, le, gt, ge).
enum class Op : uint8_t {
  kEq = 0,     // values: 1
  kNe = 1,     // values: 1
  kIn = 2,     // values: >= 1
  kNotIn = 3,  // values: >= 1
  kLt = 4,     // kInt only, values: 1
  kLe = 5,
  kGt = 6,
  kGe = 7,
  kAbsent = 8,   // optional fields only, values: 0
  kPresent = 9,  // optional fields only, values: 0
};
inline constexpr uint32_t kOpCount = 10;
// "eq", "ne", "in", "not_in", "lt", "le", "gt", "ge", "absent", "present"; "?" for another value.
const char* op_name(Op op);
// The same for a code read from a table: "?" for a code at or above kOpCount.
inline const char* op_code_name(uint32_t code) {
  return code < kOpCount ? op_name(static_cast<Op>(code)) : "?";
}

}  // namespace replaygate
