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

#include "compiler/ir.h"

namespace replaygate {

enum class Severity : uint8_t { kError = 0, kWarning = 1, kInfo = 2 };

struct Diagnostic {
  Severity severity = Severity::kError;
  std::string code;     // stable, e.g. "RG104"
  std::string message;  // one sentence, no trailing period, names the offending thing
  std::string path;     // file as given by the user; "" when not tied to a file
  ir::Span span;        // line 0 when unknown
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

// Levenshtein-based suggestion: the candidate closest to `word` within a small distance, or "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace replaygate
