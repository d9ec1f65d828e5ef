// What the language server knows about one open policy document, built once per version:
// lint's diagnostics (the compiler's load_policy_text(), the very function `replaygate lint`
// runs), and from the front-end's AST the names (every input, verb and constant: where each is
// defined and where it is used), the outline (inputs, verbs, constants, guards, tables and their
// rows, invariants) and the hover texts.
//
// Positions are compiler spans (byte offsets); the server converts them (positions.h). The AST is
// there whenever the syntax is good enough to check, so names work in a policy with check errors,
// not in one with a syntax error. Immutable once built; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "common/span.h"

namespace replaygate::lsp {

enum class NameKind : uint8_t { kInput = 0, kVerb = 1, kConstant = 2 };

// One place a name is written: its definition or a use.
struct Occurrence {
  NameKind kind = NameKind::kInput;
  std::string name;
  Span span;  // the name's bytes
  bool definition = false;
};

// LSP SymbolKind values used in the outline.
enum class SymbolKind : int {
  kProperty = 7,   // invariant
  kField = 8,      // table row
  kFunction = 12,  // guard
  kVariable = 13,  // input
  kConstant = 14,  // constant
  kStruct = 23,    // table
  kEvent = 24,     // verb
};

// What hovering shows: a one-line signature and the author's words (description or reason).
struct HoverText {
  std::string signature;  // e.g. "verb replay_once: effect create"
  std::string text;       // may be ""
};

struct Symbol {
  std::string name;
  std::string detail;  // e.g. "int", "-> hold"
  SymbolKind kind = SymbolKind::kVariable;
  size_t offset = 0;  // the whole element's bytes (its keyword, name, conditions, reason, rows)
  size_t length = 0;
  Span selection;  // the name's span (inside the element)
  HoverText hover;
  std::vector<Symbol> children;  // a table's rows
};

struct PolicyModel {
  std::vector<Diagnostic> diagnostics;  // exactly lint's, sorted
  bool indexed = false;                 // the syntax was read: the members below are filled
  std::vector<Occurrence> occurrences;  // source order
  std::vector<Symbol> symbols;          // source order, by section
};

// Compiles `text` as if read from `path` (the extension picks the front-end, as for lint) and
// indexes it. Never throws.
PolicyModel analyze_policy(std::string_view text, const std::string& path);

// The name written at byte `offset` (its first byte up to just past its last), or null.
const Occurrence* occurrence_at(const PolicyModel& model, size_t offset);

// The definition of `occurrence`'s name (the first, if the policy defines it twice), or null.
const Occurrence* definition_of(const PolicyModel& model, const Occurrence& occurrence);

// Every occurrence of `occurrence`'s name, in source order; definitions only when asked for.
std::vector<const Occurrence*> references_of(const PolicyModel& model, const Occurrence& occurrence,
                                             bool include_definition);

// What hovering at byte `offset` shows: a name's definition (an input's type and description, a
// verb's effect and description, a constant's value), else the innermost guard, row, table or
// invariant the offset is in (a rule's verb, its effect and reason). nullopt when nothing is there.
std::optional<HoverText> hover_at(const PolicyModel& model, size_t offset);

}  // namespace replaygate::lsp
