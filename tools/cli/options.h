// Parsing of the values of command-line options, shared by the subcommands so that every count
// option (and every --operator) accepts exactly the same text and says the same thing about a bad
// one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "audit/operator_name.h"  // operator_name_problem()

namespace replaygate::cli {

// The operator-name rule is the audit log's (audit/operator_name.h).
using audit::operator_name_problem;

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

// The usage message for a bad --operator value, "" when it is usable: "--operator contains the
// control character U+000A (byte 4): who acted is recorded in the audit log and must be printable
// text on one line (e.g. --operator ana)". The value itself is not echoed.
std::string operator_error(std::string_view name, std::string_view option = "--operator");

// The usage message for a bad `lint --docs-url` value, "" when it is usable. SARIF's helpUri and
// informationUri must be absolute URIs, and the docs path is appended to the value: so it must be
// an absolute http:// or https:// URL (scheme in any case) with a host and without a query ('?')
// or fragment ('#'). "" (empty), "relative/path", "file:///x", "https://", "https://x/?q=1" are
// refused: "--docs-url must be an absolute http:// or https:// URL with a host and without a
// query (?) or fragment (#), e.g. https://example.com/replaygate, not 'relative/path'". Every
// byte must be one a URI may hold (RFC 3986: unreserved, reserved, or a %XX escape), else
// "--docs-url is not a URL: it has a space at byte 9 of 'http://a b'; write it percent-encoded
// (%20), as RFC 3986 asks" (likewise a non-ASCII byte, a control character, '"', '<', '>', '\',
// '^', '`', '{', '|', '}' or a lone '%'); a port must be digits.
std::string docs_url_error(std::string_view url);

}  // namespace replaygate::cli
