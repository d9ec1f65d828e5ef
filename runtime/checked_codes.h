// The checked conversions from a raw code (a table's byte, a loop index) to the enums of
// runtime/codes.h: nullopt for a code at or above the enum's count. The only way a raw integer
// becomes a FieldType, an Effect or an Op outside codes.h itself. The C++ standard library only;
// not installed (the loader, lift, check, explain and review use it).
#pragma once

#include <cstdint>
#include <optional>

#include "runtime/codes.h"

namespace replaygate {

inline std::optional<FieldType> field_type_from_code(uint32_t code) {
  if (code >= kFieldTypeCount) return std::nullopt;
  return static_cast<FieldType>(code);
}
inline std::optional<Effect> effect_from_code(uint32_t code) {
  if (code >= kEffectCount) return std::nullopt;
  return static_cast<Effect>(code);
}
inline std::optional<Op> op_from_code(uint32_t code) {
  if (code >= kOpCount) return std::nullopt;
  return static_cast<Op>(code);
}

}  // namespace replaygate
