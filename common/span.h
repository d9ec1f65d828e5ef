// Where something is in a source file: the position every diagnostic and every IR side table
// (compiler/ir.h SourceMap) carries. Header-only; the standard library only.
#pragma once

#include <cstdint>

namespace replaygate {

// 1-based line and column (column counts bytes), plus the byte offset into the source text.
struct Span {
  uint32_t line = 0;  // 0: unknown
  uint32_t column = 0;
  uint32_t offset = 0;
  uint32_t length = 0;
  bool operator==(const Span&) const = default;
};

}  // namespace replaygate
