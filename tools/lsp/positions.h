// Positions in an open document: byte offsets (what the compiler's spans and diagnostics carry)
// to LSP positions (line, character) and back, where a character counts UTF-16 code units (the
// protocol's default) or UTF-8 bytes (when the client offers the `utf-8` position encoding).
//
// Lines are split at '\n' only, as the compiler counts them (common/source.h): a '\r' before it
// stays at the end of its line, so CR LF files map the same way; a lone '\r' is not a line break.
// The standard library only; no allocation after construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/span.h"

namespace replaygate::lsp {

enum class Encoding : uint8_t { kUtf16 = 0, kUtf8 = 1 };

// "utf-16" or "utf-8": the name the protocol uses (InitializeResult.capabilities.positionEncoding).
const char* encoding_name(Encoding encoding);

// A zero-based LSP position; `character` counts units of the negotiated encoding.
struct Position {
  uint32_t line = 0;
  uint32_t character = 0;
  bool operator==(const Position&) const = default;
};

struct Range {
  Position start;
  Position end;
  bool operator==(const Range&) const = default;
};

// An index of the line starts of `text`. Keeps a view of `text`: the text must outlive it and
// must not change. Not thread-safe to share while the text is being replaced.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);

  // The position of byte `offset` (past the end: the end of the text). An offset inside a UTF-8
  // sequence counts as the start of that sequence; a byte that is not UTF-8 counts as one unit.
  Position position_of(size_t offset, Encoding encoding) const;
  // The byte offset of `position`. A line past the last is the end of the text; a character past
  // the end of its line is the line's end (before its '\n'); a character inside a code point
  // (between the halves of a UTF-16 surrogate pair, or inside a UTF-8 sequence) is that code
  // point's start.
  size_t offset_of(Position position, Encoding encoding) const;
  // The range of a compiler span (1-based line and byte column, `length` bytes), as lint reports
  // it: the start is its line and column; the end is `length` bytes on, but never past the end of
  // the start's line. A span with line 0 (no position known) is the document's start.
  Range range_of(const Span& span, Encoding encoding) const;
  // The range from byte `offset` to byte `offset + length`.
  Range range_of_bytes(size_t offset, size_t length, Encoding encoding) const;
  // The position just past the last byte.
  Position end(Encoding encoding) const { return position_of(text_.size(), encoding); }

 private:
  // Byte offset of the end of line `line` (its '\n', or the end of the text).
  size_t line_end(size_t line) const;

  std::string_view text_;
  std::vector<size_t> starts_;  // byte offset of each line's first byte; starts_[0] == 0
};

}  // namespace replaygate::lsp
