// Reading dead-letter dumps: a bounded line reader and the interface every record format
// implements.
//
// LineReader splits a stream into lines without ever holding more than one capped line: a line
// longer than the cap is skipped to its end and reported as kTooLarge (so memory stays constant
// in the dump's size). Each line is handed out in its own buffer followed by simdjson's padding
// (spaces), ready for simdjson::ondemand. A trailing '\r' is dropped (CRLF dumps work).
//
// A RecordParser turns one line into the policy's Input (through the field indices the table
// resolved at start-up) plus metadata echoed to the output. A line it cannot read becomes a
// "problem" text: the record then gets the policy default and "invalid": true.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/escape.h"  // escape_control(): the one escaping function for plain text
#include "common/json_scan.h"
#include "runtime/table.h"

namespace replaygate::inputs {

// The structural JSON checks live in common/json_scan.h (the audit log reads JSON too, and must
// not depend on inputs/); the readers here name them as before.
using replaygate::JsonError;
using replaygate::JsonShape;
using replaygate::kByteOrderMarkProblem;
using replaygate::kJsonNumberOutOfRange;
using replaygate::kMaxJsonDepth;
using replaygate::kUtf8ByteOrderMark;
using replaygate::locate_duplicate_key;
using replaygate::locate_json_error;
using replaygate::locate_member_value;
using replaygate::position_of;
using replaygate::quote_for_reason;
using replaygate::scan_json_shape;
using replaygate::TextPosition;

inline constexpr size_t kMaxRecordBytes = size_t{1} << 20;  // 1 MiB per line

// The reason of a record over `max_bytes` bytes, as decide and explain both say it:
// "invalid record: record too large (over 1048576 bytes)".
inline std::string record_too_large(size_t max_bytes) {
  return "invalid record: record too large (over " + std::to_string(max_bytes) + " bytes)";
}

class LineReader {
 public:
  enum class Status { kLine, kTooLarge, kEnd, kError };

  // Reads from file descriptor `fd` (not owned). `max_line` excludes the line terminator.
  explicit LineReader(int fd, size_t max_line = kMaxRecordBytes);
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // kLine: *line is the next line (without "\n" / "\r\n"), valid until the next call, followed
  // in memory by at least kPadding readable bytes. kTooLarge: a line over the cap was skipped
  // (it still counts as a line). kEnd: end of input. kError: read error (see error_number()).
  Status next(std::string_view* line);
  uint64_t line_number() const { return line_number_; }  // 1-based number of the last line
  int error_number() const { return error_number_; }
  size_t max_line() const { return max_line_; }

  static constexpr size_t kPadding = 64;  // >= SIMDJSON_PADDING

 private:
  bool refill();  // false at end of input or on error
  Status emit(size_t begin, size_t end, std::string_view* line);

  int fd_;
  size_t max_line_;
  size_t capacity_;
  std::unique_ptr<char[]> buffer_;
  std::unique_ptr<char[]> line_;  // the current line, padded
  size_t begin_ = 0, end_ = 0, scanned_ = 0;
  bool discarding_ = false;  // inside a line over the cap
  bool eof_ = false;
  uint64_t line_number_ = 0;
  int error_number_ = 0;
};

// Streams the elements of one JSON array (a management-API /get response) without holding more
// than one capped element: each element is handed out like a LineReader line (own buffer, padded;
// an element over the cap is skipped and reported as kTooLarge). line_number() is the element's
// 1-based position; its JSON pointer in the dump is "/" + (position - 1). A dump that is not one
// array (or is cut off inside it, or has content after it) ends with kError and error_text()
// saying so; a read error too (error_number() set).
class JsonArrayReader {
 public:
  // `member`: the array is the value of this key of a top-level object ({"Messages":[...]}, the
  // object's other members skipped; an empty input or an object without it is no record; keys are
  // compared unescaped, and an object that gives the member twice ends with kError after the first
  // array's elements, never as if complete), else the top level is the array.
  explicit JsonArrayReader(int fd, size_t max_record = kMaxRecordBytes, std::string member = "");
  JsonArrayReader(const JsonArrayReader&) = delete;
  JsonArrayReader& operator=(const JsonArrayReader&) = delete;

  LineReader::Status next(std::string_view* record);
  uint64_t line_number() const { return position_; }
  int error_number() const { return error_number_; }
  const std::string& error_text() const { return error_text_; }
  size_t max_line() const { return max_record_; }

 private:
  bool get(char* c);  // the next byte; false at end of input or on error
  LineReader::Status fail(std::string text);
  // Skips one JSON value that starts with `first`, through the ',' '}' or ']' that ends it at
  // its own level (*terminator); false at the end of input.
  bool skip_value(char first, char* terminator);
  LineReader::Status start_in_object();  // member mode: up to the array's '['
  bool read_member_key(bool* is_member, char* first, std::string* why);
  LineReader::Status end_of_array();  // after the array's ']'

  std::string member_;

  int fd_;
  size_t max_record_;
  std::unique_ptr<char[]> buffer_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  std::string element_;  // the current element, padded
  enum class State { kStart, kFirst, kAfterComma, kAfterElement, kDone } state_ = State::kStart;
  uint64_t position_ = 0;
  int error_number_ = 0;
  std::string error_text_;
  bool closed_object_ = false;  // member mode: the top-level object's '}' was read
};

// Metadata echoed to the output; views valid until the next parse.
struct RecordMeta {
  bool has_message_id = false;
  std::string_view message_id;
  bool has_body_hash = false;
  std::string_view body_hash;
};

// One part of a record as read, for `explain` (RecordParser::record_parts()).
struct RecordPartValue {
  std::string label;  // "topic", "partition", "offset", "timestamp", "key", "header", "payload"
  std::string name;   // a header's name as given (any bytes); "" for the other parts
  enum class Kind : uint8_t { kNull, kText, kInt, kSize } kind = Kind::kNull;
  std::string_view text;  // kText: the value's bytes as given
  int64_t number = 0;     // kInt: the value; kSize: the part's size in bytes (shown, not its text)
};

// Where a mapped policy input got its value, for `explain` (RecordParser::input_origin()).
struct InputOrigin {
  std::string source;  // "header 'x-replay'", "payload /attempts", "record offset"
  std::string part;    // the RecordPartValue::label it was read from ("header", "key", "payload")
  std::string header;  // a header source: the header's name (any bytes), else ""
  enum class Found : uint8_t {
    kMissing,
    kNull,
    kText,
    kInt,
    kBool,
    kOther
  } found = Found::kMissing;
  std::string text;        // kText: the source's bytes; kOther: what it is ("an object")
  int64_t number = 0;      // kInt
  bool flag = false;       // kBool
  bool defaulted = false;  // missing: the mapping's `default:` was used
  bool optional = false;   // missing, no default, `optional: true`: the input is absent
  bool mapped = false;     // the value went through the mapping's `map:`
};

class RecordParser {
 public:
  virtual ~RecordParser() = default;
  // `line` is padded (LineReader). Clears and fills `input` and `meta`. Returns false when the
  // line cannot be read as a record, with *problem set (e.g. "invalid record: duplicate key
  // 'topic'" or "invalid input: error_class (no mapping for 'x')"); `input` is then unusable.
  virtual bool parse(std::string_view line, Input& input, RecordMeta* meta,
                     std::string* problem) = 0;

  static constexpr size_t kNoOffset = replaygate::kNoOffset;
  // After parse() returned false: the byte offset in `line` of what made it unreadable (the
  // offending key, value or character; line.size() for an unexpected end), or kNoOffset when the
  // problem has no one place (a blank line, a mapped value). Set only on error paths.
  size_t problem_offset() const { return problem_offset_; }
  // After parse() returned true for `line` (still in memory) and the runtime found policy field
  // `field` invalid: the byte offset in `line` of the value it was read from, or kNoOffset when
  // that value has no one place in the line (the field was missing, or came from a mapping). Error
  // paths only: may walk the line again.
  virtual size_t field_value_offset(std::string_view /*line*/, uint32_t /*field*/) const {
    return kNoOffset;
  }

  // For `explain`, after parse() returned true (views into the record stay valid until the next
  // parse): the record's own parts as read, in order, for a format whose records are more than
  // the policy's inputs (kafka: coordinates, key, headers); none for letters.
  virtual std::vector<RecordPartValue> record_parts() const { return {}; }
  // For `explain`, after parse() returned true: where policy field `field` got its value, for a
  // format that reads through a mapping; nullopt for letters and for a field nothing maps.
  virtual std::optional<InputOrigin> input_origin(uint32_t /*field*/) const { return std::nullopt; }

 protected:
  size_t problem_offset_ = kNoOffset;
};

// "blank line", "not valid UTF-8", "bad JSON (...)": the readable name of a simdjson error code.
std::string describe_json_error(int simdjson_error_code);

// True when `token` is exactly one JSON number (RFC 8259:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?), whatever its magnitude. The readers use it on
// error paths, to tell a valid number simdjson cannot hold (1e400) from bad JSON.
bool is_json_number(std::string_view token);

}  // namespace replaygate::inputs
