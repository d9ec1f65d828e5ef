// The grammar of names and rule ids in a policy: one definition for the checker (RG127, RG122) and
// for the tools that read them back from their own records (`audit verify`'s action and rule).
//
// Header-only and inline; depends on the standard library only.
#pragma once

#include <cstddef>
#include <string_view>

namespace replaygate::names {

// Whether `text` is an input, verb or constant name: a letter (ASCII) or '_', then letters, digits,
// '_', '.' or '-'. Empty is not a name.
inline bool is_name(std::string_view text) {
  if (text.empty()) return false;
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (!alpha(text[0]) && text[0] != '_') return false;
  for (char c : text) {
    if (!alpha(c) && !digit(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

// Whether `text` holds a space or a control character: a byte up to 0x20, DEL, a C1 control
// (U+0080..U+009F) or a line or paragraph separator (U+2028, U+2029), the characters that could
// cut or forge a line where the id is printed. A rule or policy id is one word.
inline bool has_space_or_control(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    const auto next = [&](size_t k) {
      return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
    };
    if (b <= 0x20 || b == 0x7F) return true;
    if (b == 0xC2 && next(1) >= 0x80 && next(1) <= 0x9F) return true;
    if (b == 0xE2 && next(1) == 0x80 && (next(2) == 0xA8 || next(2) == 0xA9)) return true;
  }
  return false;
}

// Whether `text` is an id the checker accepts for a guard, table, row or invariant: not empty,
// no space or control character. (It also refuses "default", reserved for the policy's default
// decision, which tools record as the rule "default"; duplicates are a policy-wide check.)
inline bool is_rule_id(std::string_view text) {
  return !text.empty() && !has_space_or_control(text);
}

}  // namespace replaygate::names
