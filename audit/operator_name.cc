// The rule for an operator's name (see operator_name.h).
#include "audit/operator_name.h"

#include <cstdint>
#include <cstdio>
#include <utility>

#include "common/utf8.h"

namespace replaygate::audit {

namespace {

// The code point of the valid UTF-8 sequence of `length` bytes (1 to 4) at text[i].
uint32_t code_point(std::string_view text, size_t i, size_t length) {
  const auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(text[k])); };
  switch (length) {
    case 2:
      return (byte(i) & 0x1F) << 6 | (byte(i + 1) & 0x3F);
    case 3:
      return (byte(i) & 0x0F) << 12 | (byte(i + 1) & 0x3F) << 6 | (byte(i + 2) & 0x3F);
    case 4:
      return (byte(i) & 0x07) << 18 | (byte(i + 1) & 0x3F) << 12 | (byte(i + 2) & 0x3F) << 6 |
             (byte(i + 3) & 0x3F);
    default:
      return byte(i);
  }
}

// The bidirectional formatting characters (Unicode Bidi_Control): they reorder the text shown
// after them, so "ana" + U+202E + "nimda" reads as someone else in a terminal or a review.
bool is_bidi_control(uint32_t c) {
  return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2066 && c <= 0x2069);
}

// Characters that show no glyph: Unicode White_Space and Default_Ignorable_Code_Point (format
// characters such as U+200B..U+200D, U+2060, U+FEFF, fillers and variation selectors). A name of
// only these looks empty.
bool is_invisible(uint32_t c) {
  static constexpr std::pair<uint32_t, uint32_t> kRanges[] = {
      {0x0009, 0x000D},   {0x0020, 0x0020},   {0x0085, 0x0085},   {0x00A0, 0x00A0},
      {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x061C, 0x061C},   {0x115F, 0x1160},
      {0x1680, 0x1680},   {0x17B4, 0x17B5},   {0x180B, 0x180F},   {0x2000, 0x200F},
      {0x2028, 0x202F},   {0x205F, 0x206F},   {0x3000, 0x3000},   {0x3164, 0x3164},
      {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF0, 0xFFF8},
      {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
  };
  for (const auto& [low, high] : kRanges) {
    if (c >= low && c <= high) return true;
  }
  return false;
}

// "U+00A0" for a code point (four hex digits at least).
std::string u_plus(uint32_t code) {
  char hex[12];
  std::snprintf(hex, sizeof(hex), "U+%04X", static_cast<unsigned>(code));
  return hex;
}

}  // namespace

std::string operator_name_problem(std::string_view name) {
  if (name.find_first_not_of(" \t") == std::string_view::npos) return "is empty";
  if (const size_t bad = first_invalid_utf8(name); bad != std::string_view::npos) {
    return "is not valid UTF-8 (byte " + std::to_string(bad + 1) + ")";
  }
  bool visible = false;
  std::string first_invisible;  // "U+00A0 (byte 1)": the first invisible one but ' ' and tab
  for (size_t i = 0; i < name.size();) {
    const size_t length = utf8_sequence_length(name, i);
    const uint32_t code = code_point(name, i, length);
    const std::string where = " (byte " + std::to_string(i + 1) + ")";
    if (code < 0x20 || (code >= 0x7F && code <= 0x9F) || code == 0x2028 || code == 0x2029) {
      return "contains the control character " + u_plus(code) + where;
    }
    if (is_bidi_control(code)) {
      return "contains the bidirectional control character " + u_plus(code) + where;
    }
    if (!is_invisible(code)) {
      visible = true;
    } else if (first_invisible.empty() && code != ' ' && code != '\t') {
      first_invisible = u_plus(code) + where;
    }
    i += length;
  }
  if (!visible) return "has only white space or invisible characters, such as " + first_invisible;
  return "";
}

}  // namespace replaygate::audit
