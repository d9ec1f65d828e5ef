// The one JSON string writer: every JSON string literal the project prints (decision lines, audit
// entries, diagnostics as JSON and SARIF, region dumps) is written here.
//
// Three escaping rules are in use, on purpose, each pinned by golden files and documented output:
//   JsonText::kUtf8   the CLI's records (decide, audit, review, explain --json): valid UTF-8 kept
//   as
//                     is, a byte that is not UTF-8 written as \ufffd, \n \r \t short, other C0
//                     controls as \u00XX; DEL is kept. write_json_string() is its fast path.
//   JsonText::kAscii  diagnostics (render_json, render_sarif): plain ASCII output, every non-ASCII
//                     code point as \uXXXX (a surrogate pair above U+FFFF), DEL as \u007f, a byte
//                     that is not UTF-8 as \ufffd; code-scanning tools read it in any encoding.
//   JsonText::kBytes  the analysis' region keys and witness values (compiler/analysis/regions.h):
//                     every C0 control and DEL as \u00XX (no short forms), every other byte kept;
//                     region dumps and the RG2xx witnesses quote them so in the golden files.
// Header plus one source file; the standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace replaygate {

enum class JsonText : uint8_t { kUtf8, kAscii, kBytes };

// The most bytes a JSON string literal of `text` takes in any JsonText (each byte as \uXXXX,
// quotes).
constexpr size_t json_string_bound(std::string_view text) { return 6 * text.size() + 2; }

// Writes `text` as a JSON string literal (JsonText::kUtf8), quotes included, at `out`, which must
// have room for json_string_bound(text) bytes. Returns the end of what was written.
char* write_json_string(char* out, std::string_view text);

// Appends `text` to `out` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text, JsonText rule = JsonText::kUtf8);

// Returns `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text, JsonText rule = JsonText::kUtf8);

}  // namespace replaygate
