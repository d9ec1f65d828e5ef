// The one escaping function for untrusted text in plain-text output (diagnostics, CLI reports).
//
// Shared by the compiler's text renderer (common/diagnostic.h) and every CLI command that prints
// policy text, letters or records as plain text, so one definition decides what reaches a
// terminal or a CI log raw.
#pragma once

#include <string>
#include <string_view>

namespace replaygate {

// `text` with control characters (C0 bytes NUL, ESC, CR, LF, ..., DEL, the C1 controls
// U+0080..U+009F, and U+2028/U+2029) written as \u00XX / \u2028, every byte that is not UTF-8 as
// \xHH (a lone 0x9B is CSI to an 8-bit terminal) and a backslash doubled, so a value read from a
// policy, a letter or a message cannot cut or forge a line of the output or drive the terminal.
// Text without any of these comes back unchanged.
//
// Backslash::kKeep leaves backslashes single: for sentences whose own text shows escapes the reader
// should type (a diagnostic's hint: "write \t for a tab"), where a doubled one would mislead. The
// output is then still one safe line, only no longer unambiguous (a literal "\u001b" reads like an
// escaped ESC); machine formats (JSON) carry the exact text.
enum class Backslash : unsigned char { kDouble, kKeep };
std::string escape_control(std::string_view text, Backslash backslash = Backslash::kDouble);

}  // namespace replaygate
