// DSL front-end: `.policy` text in, an ast::Policy (compiler/syntax/ast.h) out, plus the comments
// the formatter keeps. The grammar (PEGTL 3.2) lives in dsl_parse.cc; docs/policy-language.md has
// it in EBNF.
//
// Like the YAML front-end, the DSL front-end reports only syntax; check() does names, types,
// values and bounds, so both front-ends give the same diagnostics for the same mistakes. Codes:
//   RG007 the text is larger than yaml::kMaxBytes          RG009 not valid UTF-8
//   RG010 a byte order mark                                 RG011 a NUL or control byte
//   RG014 a syntax error (the message says what was expected there, the hint how to write it)
//   RG015 a line longer than kMaxLineBytes
// The first syntax error stops the parse (the AST is then incomplete and must not be checked).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/syntax/ast.h"

namespace replaygate::dsl {

inline constexpr size_t kMaxLineBytes = 16 * 1024;

// A `#` comment: `text` is everything after the `#` up to the end of the line (CR dropped).
struct Comment {
  uint32_t line = 0;
  uint32_t offset = 0;
  std::string text;
  bool own_line = false;  // only blanks precede it on its line (else: trailing an item)
};

struct ParseResult {
  ast::Policy policy;
  std::vector<Diagnostic> diagnostics;  // empty, or exactly one error
  std::vector<Comment> comments;        // source order
  // Per table rule (in rule order), the line of its closing `}` (comments before it stay inside).
  std::vector<uint32_t> table_close_lines;
  bool ok() const { return diagnostics.empty(); }
};

// Parses `text` (the bytes of a .policy file); `path` is copied into diagnostics. Never throws.
ParseResult parse(std::string_view text, std::string_view path);

// True when `text` can be written as a bare word in a value position (no quotes needed and not a
// keyword that would change its meaning): what the printer uses to decide on quoting.
bool is_bare_word(std::string_view text);
// True when `text` is a name the grammar accepts (ids, fields, verbs, constants).
bool is_name_token(std::string_view text);

// `text` in double quotes with the DSL escapes (\" \\ \n \t \xHH for other bytes < 0x20, 0x7F).
std::string quote(std::string_view text);

namespace testing {
// Runs tao::pegtl::analyze on the grammar (rules that could loop without consuming input) and
// returns the number of problems found; the unit tests assert 0.
size_t analyze_grammar();
}  // namespace testing

}  // namespace replaygate::dsl
