// Parsing of the numeric values of command-line options, shared by the subcommands so that every
// count option accepts exactly the same text and says the same thing about a bad one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace replaygate::cli {

// A count option: how it is named in messages, what it counts, and its range.
struct CountOption {
  std::string_view name;  // "--max-replays"
  uint64_t min = 0;
  uint64_t max = 0;
  std::string_view unit;  // "" or what it counts, e.g. "MiB": "a whole number of MiB"
};

// Parses the value `text` of `option`: plain decimal digits only ("0", "42", "007"), from
// option.min to option.max. Returns false (and leaves *value alone) for anything else: an empty
// value, a sign ("-0", "+1"), spaces, hex ("0x10"), a fraction or exponent ("1.5", "1e3"), digit
// separators, or a number out of the range (overflow included, however many digits).
bool parse_count(const CountOption& option, std::string_view text, uint64_t* value);

// The usage message for a bad value: "--max-replays takes a whole number from 0 to
// 9223372036854775807 (decimal), not '-0'" ("a whole number of UNIT" with a unit).
std::string count_error(const CountOption& option, std::string_view text);

}  // namespace replaygate::cli
