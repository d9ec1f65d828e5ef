// Strict parsing of count options (see options.h).
#include "tools/cli/options.h"

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

}  // namespace replaygate::cli
