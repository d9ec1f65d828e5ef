// Diagnostics are data: produced by front-ends, the checker and the analysis, rendered by the CLI.
//
// Nothing inside the compiler prints. A stage returns its diagnostics; the CLI renders them with
// render_text() (file:line:col: severity[CODE]: message, the source line, a caret, a hint) or
// render_json(). Codes are stable and documented in docs/diagnostics.md; ranges:
//   RG0xx syntax and structure (yaml_tree, dsl_parse)   RG1xx names, types, values (check)
//   RG2xx analysis: shadowed, conflicting, never-true rules (analysis)
//   RG3xx input mapping files (tools/cli)          RG4xx test case files (tools/cli)
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/span.h"

namespace replaygate {

enum class Severity : uint8_t { kError = 0, kWarning = 1, kInfo = 2 };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string code;     // stable, e.g. "RG104"
  std::string message;  // one sentence, no trailing period, names the offending thing
  std::string path;     // file as given by the user; "" when not tied to a file
  Span span;            // line 0 when unknown
  std::string hint;     // how to fix it; may be ""
  bool operator==(const Diagnostic&) const = default;
};

const char* severity_name(Severity severity);  // "error", "warning", "info"

bool has_errors(const std::vector<Diagnostic>& diagnostics);

// Sorts by (path, line, column, code, message): the stable order every renderer uses.
void sort_diagnostics(std::vector<Diagnostic>& diagnostics);

// Text form, one block per diagnostic:
//   policies/x.yaml:12:7: error[RG104]: unknown verb 'replay_onec'
//      12 |     verb: replay_onec
//         |           ^~~~~~~~~~~
//     = hint: did you mean 'replay_once'?
// `source` is the text of the file the diagnostics point into (may be empty: no excerpt then).
std::string render_text(const std::vector<Diagnostic>& diagnostics, std::string_view source);

// JSON array of {severity, code, message, path, line, column, hint}; deterministic key order.
std::string render_json(const std::vector<Diagnostic>& diagnostics);

// SARIF 2.1.0 log (one run) for code-scanning tools. `tool_version` goes to tool.driver.version;
// `help_base` is the URL the docs live under (an absolute URL without query or fragment: the CLI
// checks it; trailing slashes are dropped before the path is joined): each rules[] entry (one per
// distinct code, sorted) gets helpUri HELP_BASE/docs/diagnostics.md#rgNNN (HELP_BASE
// percent-encoded where RFC 3986 requires it: a space, a non-ASCII or control byte, '"', '<', '>',
// '\\', '^', '`', '{', '|', '}', '#', a '%' that starts no %XX; a valid URL is kept as is; the
// same for informationUri) and a short description
// from diagnostic_code_title(). Results carry ruleId, ruleIndex, level (error, warning, note),
// message (plus the hint) and, when the diagnostic has a path, a location with the artifact URI
// (the path as a URI reference: bytes outside RFC 3986's unreserved and sub-delims
// characters, '@' and '/' are percent-encoded, ':' included; an absolute path is a file:// URI,
// "/tmp/x.yaml" is "file:///tmp/x.yaml") and, when its line is known, region
// startLine/startColumn. Columns are converted from bytes to code points using `source` (the text
// of the file the diagnostics point into; may be empty: columns are then left in bytes) and the run
// says columnKind unicodeCodePoints. Deterministic: same input, same bytes. Never fails.
std::string render_sarif(const std::vector<Diagnostic>& diagnostics, std::string_view source,
                         std::string_view tool_version, std::string_view help_base);

// GitHub Actions workflow commands, one line per diagnostic:
//   ::error file=F,line=L,col=C,title=RG104::unknown verb 'replay_onec'%0Ahint: did you mean ...
// Severity error -> ::error, warning -> ::warning, info -> ::notice. Property values escape
// % CR LF : , as %25 %0D %0A %3A %2C; the message escapes % CR LF. file/line/col are left out
// when unknown. Never fails.
std::string render_github(const std::vector<Diagnostic>& diagnostics);

// A short title for a diagnostic code ("unknown verb" for RG104), or "" for an unknown code.
std::string_view diagnostic_code_title(std::string_view code);

// The span of `length` bytes at byte `offset` of `text` (line and column 1-based, columns count
// bytes). An offset past the end is taken as the end. The end of a text that ends with a line
// break is on a line the text does not have: a span there is put at the end of the last line
// instead (its break), so no diagnostic points past the end of a file. The length is cut to what
// the text holds from the offset on, and is 0 for a span at the end.
Span span_in_text(std::string_view text, size_t offset, size_t length);

// Levenshtein-based suggestion: the candidate closest to `word` within a small distance, or "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace replaygate
