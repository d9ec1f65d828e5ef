// One spelling of each fail-closed problem: why a field's value made the decision the policy
// default ("missing", "below its min 0", ...). Shared by the runtime's trace (runtime/trace.cc)
// and the IR explainer (compiler/explain.cc), so `explain --table` and `explain --policy` say the
// same words. decide() (runtime/decide.cc) finds the same problems without words; the reference
// interpreter (compiler/interpret.cc) stays independent on purpose. Header-only; the C++ standard
// library only.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/codes.h"

namespace replaygate::problem {

inline constexpr char kMissing[] = "missing";
inline constexpr char kNull[] = "null";
inline constexpr char kUnreadableValue[] = "unreadable (wrong JSON type or out of int64 range)";
inline constexpr char kEmptyCountsAsAbsent[] = "empty (counts as absent)";
inline constexpr char kNotAnEnumValue[] = "not one of its enum values";
inline constexpr char kUnreadable[] = "unreadable";

// A value of another type than the field's: "not a string" (string and enum fields), "not an
// int", "not a bool".
inline const char* wrong_type(FieldType type) {
  switch (type) {
    case FieldType::kString:
    case FieldType::kEnum:
      return "not a string";
    case FieldType::kInt:
      return "not an int";
    case FieldType::kBool:
      return "not a bool";
  }
  return "of the wrong type";
}

inline std::string below_min(int64_t min) { return "below its min " + std::to_string(min); }
inline std::string above_max(int64_t max) { return "above its max " + std::to_string(max); }

}  // namespace replaygate::problem
