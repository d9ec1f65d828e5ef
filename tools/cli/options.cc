// Strict parsing of count options and operator names (see options.h).
#include "tools/cli/options.h"

#include <cstdio>

#include "compiler/utf8.h"

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

std::string operator_name_problem(std::string_view name) {
  if (name.find_first_not_of(" \t") == std::string_view::npos) return "is empty";
  if (const size_t bad = first_invalid_utf8(name); bad != std::string_view::npos) {
    return "is not valid UTF-8 (byte " + std::to_string(bad + 1) + ")";
  }
  for (size_t i = 0; i < name.size();) {
    const size_t length = utf8_sequence_length(name, i);
    uint32_t code = static_cast<uint8_t>(name[i]);
    if (length == 2) {
      code = (code & 0x1F) << 6 | (static_cast<uint8_t>(name[i + 1]) & 0x3F);
    } else if (length == 3) {
      code = (code & 0x0F) << 12 | (static_cast<uint8_t>(name[i + 1]) & 0x3F) << 6 |
             (static_cast<uint8_t>(name[i + 2]) & 0x3F);
    }
    if (code < 0x20 || (code >= 0x7F && code <= 0x9F) || code == 0x2028 || code == 0x2029) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "%04X", static_cast<unsigned>(code));
      return "contains the control character U+" + std::string(hex) + " (byte " +
             std::to_string(i + 1) + ")";
    }
    i += length;
  }
  return "";
}

std::string operator_error(std::string_view name) {
  const std::string problem = operator_name_problem(name);
  if (problem.empty()) return "";
  return "--operator " + problem +
         ": who acted is recorded in the audit log and must be printable text on one line (e.g. "
         "--operator ana)";
}

}  // namespace replaygate::cli
