// The grammar of names and rule ids in a policy: one definition for the checker (RG127, RG122) and
// for the tools that read them back from their own records (`audit verify`'s action and rule).
//
// Header-only and inline; depends on the standard library only.
#pragma once

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

// Whether `text` holds a space or an ASCII control character (a byte up to 0x20, or DEL): a rule
// id is one word.
inline bool has_space_or_control(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F) return true;
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
