// Policy source text: bounded reading of a file and the byte screening both front-ends run first
// (RG009 not UTF-8, RG010 a byte order mark, RG011 a NUL or control byte, RG015 a line too long).
//
// One definition of which bytes a policy file may hold, for the YAML reader (common/yaml_tree.h)
// and the DSL (compiler/syntax/dsl_policy.h). The standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace replaygate {

// The largest policy file the front-ends read (RG007 above it).
inline constexpr size_t kMaxSourceBytes = 64u << 20;  // 64 MiB

// Reads `path` into `*text`, at most one byte past kMaxSourceBytes (enough for a front-end to
// report RG007, and safe on endless files such as /dev/zero). On failure returns false and sets
// `*error` to "cannot read 'PATH': WHY" (a directory, strerror, or "read error"). Never throws.
bool read_source_file(const std::string& path, std::string* text, std::string* error);

// The first byte a policy file may not hold, as a diagnostic's parts.
struct SourceProblem {
  std::string code;     // RG009, RG010, RG011 or RG015
  std::string message;  // e.g. "the file contains a NUL byte"
  std::string hint;
  size_t offset = 0;  // of the offending byte
  // Of the offending byte, counting '\n' as the only line break: 1-based, column in bytes.
  uint32_t line = 1;
  uint32_t column = 1;
};

struct SourceRules {
  // The DSL: a carriage return must end a line (CR LF); YAML reads a lone CR as a line break.
  bool lone_carriage_return_ok = true;
  // RG015 for a line of this many bytes or more (0: no limit).
  size_t max_line_bytes = 0;
};

// Screens `text` (the whole file): a byte order mark, a NUL, a control byte other than tab, line
// feed and carriage return, a byte that is not UTF-8, and what `rules` add. Returns the first
// problem in the file, or nothing.
std::optional<SourceProblem> screen_source(std::string_view text, const SourceRules& rules);

}  // namespace replaygate
