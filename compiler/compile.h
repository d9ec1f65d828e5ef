// The compiler's front door: a policy file in, a checked policy and every diagnostic out.
//
// load_policy_*() picks the front-end by extension (.yaml/.yml: YAML; .policy: the DSL,
// compiler/syntax/dsl_policy.h), runs the front-end, check() and analyze(), and collects every
// diagnostic. The caller (the CLI) renders diagnostics and lowers the policy with lower()
// (compiler/lower.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/ir.h"
#include "compiler/timings.h"

namespace replaygate {

namespace ast {
struct Policy;
}

struct LoadedPolicy {
  std::optional<ir::CheckedPolicy> policy;  // set when there is no error-severity diagnostic
  std::vector<Diagnostic> diagnostics;      // errors, warnings and infos, sorted
  std::string source_text;                  // the file's bytes, for rendering excerpts
  bool io_error = false;                    // the file could not be read (exit code 2)
  std::string io_message;
  // Wall seconds per stage (read, parse, ast, check, analysis: rows, analysis: regions), in order.
  StageTimings timings;
};

// Hex XXH3-128 of `bytes`: a policy's source digest (CheckedPolicy::source_digest), and what other
// reviewed inputs are named by (a proposal file, checks/proposal_check.h).
std::string hex_digest(std::string_view bytes);

// Reads and compiles `path`. Never throws.
LoadedPolicy load_policy_file(const std::string& path);
// Compiles `text` as if read from `path` (the extension picks the front-end). When `syntax` is
// given, it also gets the front-end's AST (compiler/syntax/ast.h: names with their spans, for the
// language server's definitions, references and outline) whenever the syntax was good enough to
// check, whatever the checker then found; else it is reset.
LoadedPolicy load_policy_text(std::string_view text, const std::string& path,
                              std::optional<ast::Policy>* syntax = nullptr);

}  // namespace replaygate
