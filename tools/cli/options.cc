// Strict parsing of count options and operator names (see options.h).
#include "tools/cli/options.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "common/utf8.h"
#include "tools/cli/records.h"

namespace replaygate::cli {

bool parse_count(const CountOption& option, std::string_view text, uint64_t* value) {
  if (text.empty()) return false;
  uint64_t number = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const auto digit = static_cast<uint64_t>(c - '0');
    // number * 10 + digit > max, asked without overflowing
    if (digit > option.max || number > (option.max - digit) / 10) return false;
    number = number * 10 + digit;
  }
  if (number < option.min) return false;
  *value = number;
  return true;
}

std::string count_error(const CountOption& option, std::string_view text) {
  std::string message(option.name);
  message += " takes a whole number";
  if (!option.unit.empty()) message += " of " + std::string(option.unit);
  // The range in full, the largest value too: "9223372036854775808" is then plainly too large.
  message += " from " + std::to_string(option.min) + " to " + std::to_string(option.max);
  message += " (decimal), not '" + std::string(text) + "'";
  return message;
}

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

std::string operator_error(std::string_view name) {
  const std::string problem = operator_name_problem(name);
  if (problem.empty()) return "";
  return "--operator " + problem +
         ": who acted is recorded in the audit log and must be printable text on one line (e.g. "
         "--operator ana)";
}

std::string docs_url_error(std::string_view url) {
  const auto starts_with_nocase = [&](std::string_view prefix) {
    if (url.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(url[i])) != prefix[i]) return false;
    }
    return true;
  };
  const size_t scheme = starts_with_nocase("https://") ? 8 : starts_with_nocase("http://") ? 7 : 0;
  // The host: the authority (up to the path) without user info and port, e.g. "[::1]".
  std::string_view authority = url.substr(scheme, url.find('/', scheme) - scheme);
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  const std::string_view host = authority.starts_with('[')
                                    ? authority.substr(0, authority.find(']') + 1)
                                    : authority.substr(0, authority.find(':'));
  if (scheme == 0 || host.empty() || url.find_first_of("?#") != std::string_view::npos) {
    return "--docs-url must be an absolute http:// or https:// URL with a host and without a "
           "query (?) or fragment (#), e.g. https://example.com/replaygate, not '" +
           escape_control(url) + "'";
  }
  // Every byte must be one RFC 3986 allows in a URI (SARIF's helpUri is one): unreserved,
  // reserved or a %XX escape. A space, a quote or a non-ASCII byte makes it no URL; it used to
  // be percent-encoded silently, so the links pointed somewhere the user never wrote.
  static constexpr std::string_view kAllowed =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=";
  const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  for (size_t i = 0; i < url.size(); ++i) {
    const char c = url[i];
    if (c == '%' && i + 2 < url.size() && hex(url[i + 1]) && hex(url[i + 2])) {
      i += 2;
      continue;
    }
    if (c != '%' && kAllowed.find(c) != std::string_view::npos) continue;
    const unsigned char b = static_cast<unsigned char>(c);
    // The escape to write: for a non-ASCII character, all its bytes (é is %C3%A9).
    size_t end = i + 1;
    while (b >= 0x80 && end < url.size() && static_cast<unsigned char>(url[end]) >= 0x80) ++end;
    std::string escape;
    for (size_t j = i; j < end; ++j) {
      char hex_byte[4];
      std::snprintf(hex_byte, sizeof hex_byte, "%%%02X", static_cast<unsigned char>(url[j]));
      escape += hex_byte;
    }
    std::string what = c == ' '                ? "a space"
                       : c == '%'              ? "a '%' that starts no %XX escape"
                       : b >= 0x80             ? "a non-ASCII byte"
                       : b < 0x20 || b == 0x7F ? "a control character"
                                               : std::string("the character '") + c + "'";
    return "--docs-url is not a URL: it has " + what + " at byte " + std::to_string(i + 1) +
           " of '" + escape_control(url) + "'; write it percent-encoded (" + escape +
           "), as RFC 3986 asks";
  }
  // After the host, ':' starts a port: digits only (https://ex.com:80/docs).
  const std::string_view after_host = authority.substr(std::min(
      authority.size(), static_cast<size_t>(host.data() - authority.data()) + host.size()));
  if (!after_host.empty()) {
    const std::string_view port = after_host.substr(1);
    if (after_host[0] != ':' || port.find_first_not_of("0123456789") != std::string_view::npos) {
      return "--docs-url is not a URL: the port '" + escape_control(port) + "' of '" +
             escape_control(url) + "' is not a number";
    }
  }
  return "";
}

}  // namespace replaygate::cli
