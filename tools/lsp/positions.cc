// Byte offsets <-> LSP positions (see positions.h).
#include "tools/lsp/positions.h"

#include <algorithm>

#include "common/utf8.h"

namespace replaygate::lsp {
namespace {

// Units `length` bytes of UTF-8 (a valid sequence) take in `encoding`.
uint32_t units_of(size_t length, Encoding encoding) {
  if (encoding == Encoding::kUtf8) return static_cast<uint32_t>(length);
  return length == 4 ? 2 : 1;  // four-byte sequences are above U+FFFF: a surrogate pair
}

}  // namespace

const char* encoding_name(Encoding encoding) {
  return encoding == Encoding::kUtf8 ? "utf-8" : "utf-16";
}

LineIndex::LineIndex(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (size_t i = text.find('\n'); i != std::string_view::npos; i = text.find('\n', i + 1)) {
    starts_.push_back(i + 1);
  }
}

size_t LineIndex::line_end(size_t line) const {
  return line + 1 < starts_.size() ? starts_[line + 1] - 1 : text_.size();
}

Position LineIndex::position_of(size_t offset, Encoding encoding) const {
  offset = std::min(offset, text_.size());
  // The last line that starts at or before `offset`.
  const size_t line = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                                          starts_.begin()) -
                      1;
  Position position{static_cast<uint32_t>(line), 0};
  for (size_t i = starts_[line]; i < offset;) {
    const size_t length = std::max<size_t>(utf8_sequence_length(text_, i), 1);
    if (i + length > offset) break;  // `offset` is inside this sequence: its start
    position.character += length == 1 ? 1 : units_of(length, encoding);
    i += length;
  }
  return position;
}

size_t LineIndex::offset_of(Position position, Encoding encoding) const {
  if (position.line >= starts_.size()) return text_.size();
  const size_t end = line_end(position.line);
  size_t i = starts_[position.line];
  uint32_t units = 0;
  while (i < end && units < position.character) {
    const size_t length = std::max<size_t>(utf8_sequence_length(text_, i), 1);
    const uint32_t width = length == 1 ? 1 : units_of(length, encoding);
    if (units + width > position.character) break;  // inside this code point: its start
    units += width;
    i += length;
  }
  return std::min(i, end);
}

Range LineIndex::range_of(const Span& span, Encoding encoding) const {
  if (span.line == 0 || span.line > starts_.size()) return Range{};
  const size_t line = span.line - 1;
  const size_t end = line_end(line);
  const size_t start = std::min(starts_[line] + (span.column > 0 ? span.column - 1 : 0), end);
  const size_t stop = std::min(start + span.length, end);
  return Range{position_of(start, encoding), position_of(stop, encoding)};
}

Range LineIndex::range_of_bytes(size_t offset, size_t length, Encoding encoding) const {
  const size_t start = std::min(offset, text_.size());
  const size_t stop = std::min(text_.size() - start, length) + start;
  return Range{position_of(start, encoding), position_of(stop, encoding)};
}

}  // namespace replaygate::lsp
