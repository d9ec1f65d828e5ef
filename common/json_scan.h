// Structural JSON checks every strict JSON reader shares (the record formats in inputs/, the
// audit log's reader in audit/, review's documents): the nesting pre-check, where and why a
// document is refused, where a key or member is, and the line and column of an offset. In: JSON
// text; out: offsets, positions and fixed reasons that never quote a byte of the input (but
// quote_for_reason(), which cuts and escapes). nlohmann-json (no DOM built) for the error paths.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace replaygate {

inline constexpr size_t kMaxJsonDepth = 32;  // nesting of arrays/objects

// "No offset": what the locating functions below answer when there is nothing to point at.
inline constexpr size_t kNoOffset = static_cast<size_t>(-1);

// A UTF-8 byte-order mark, and what every JSON reader says of a line or document that starts with
// one (simdjson would call it bad JSON; nlohmann would skip it silently).
inline constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";
inline constexpr std::string_view kByteOrderMarkProblem =
    "starts with a UTF-8 byte-order mark (remove it)";

// A cheap structural pre-check that runs before any JSON parser (linear, no recursion; brackets
// inside strings do not count): kTooDeep when arrays/objects nest deeper than `max_depth`,
// kTrailing when something other than whitespace follows the first complete top-level
// array/object (simdjson would report that only as a generic error).
// When `at` is given and the shape is not kOk, *at is the offset of the bracket that nests too deep
// or of the first trailing byte.
enum class JsonShape { kOk, kTooDeep, kTrailing };
JsonShape scan_json_shape(std::string_view json, size_t max_depth, size_t* at = nullptr);

// Where and why a strict JSON parser (nlohmann's, no DOM built) refuses `json`: the offset of the
// offending byte (json.size() for an unexpected end) and a fixed reason that never holds a byte of
// the input ("unescaped control character in a string", "malformed literal", kJsonNumberOutOfRange,
// "syntax error while parsing object key - unexpected '}'; expected string literal"; nlohmann's
// "last read: '...'" is never kept: it may quote a secret), or offset kNoOffset when
// it is well-formed. For error paths only: a second, slow parse.
inline constexpr std::string_view kJsonNumberOutOfRange = "number out of range";
struct JsonError {
  size_t offset = kNoOffset;
  std::string what;
};
JsonError locate_json_error(std::string_view json);

// In a well-formed JSON document (error paths only: a walk of the text, no recursion): the offset
// of the opening quote of the first key that an object gives twice (compared unescaped), and the
// offset of the value of the member at `path` (keys from the top-level object down, e.g.
// {"error", "job_id"}; arrays are not entered). kNoOffset when there is none.
size_t locate_duplicate_key(std::string_view json);
size_t locate_member_value(std::string_view json, const std::vector<std::string>& path);

// The 1-based line and column (counted in bytes, as the compiler's diagnostics count them) of
// byte `offset` of `text`; an offset past the end is the end.
struct TextPosition {
  size_t line = 1, column = 1;
};
TextPosition position_of(std::string_view text, size_t offset);

// 'text' in single quotes for a reason or a message, cut to 64 bytes ("...") so reasons stay one
// short line, escaped with escape_control() (common/escape.h).
std::string quote_for_reason(std::string_view text);

}  // namespace replaygate
