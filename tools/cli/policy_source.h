// Shared by compile, lint, decide and test: load a policy and report its diagnostics, or open a
// frozen table; either way hand back something the subcommand can use and an exit code.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/compile.h"
#include "runtime/table.h"

namespace replaygate::cli {

enum class DiagnosticFormat { kText, kJson };

// Parses "text" / "json"; false for anything else.
bool parse_diagnostic_format(const std::string& word, DiagnosticFormat* format);

// Renders diagnostics: text goes to stderr (with excerpts from `source`), JSON to stdout.
// Nothing is printed for an empty list in text form; JSON always prints an array. Returns false
// when the JSON cannot be written to stdout (print_to_stdout() said why on stderr), else true.
bool report_diagnostics(const std::vector<Diagnostic>& diagnostics, const std::string& source,
                        DiagnosticFormat format);

// Loads and checks `path`, reports every diagnostic, and returns
//   0 when the policy has no errors (loaded->policy is set), 1 on policy errors,
//   2 when the file cannot be read, or JSON diagnostics cannot be written (message on stderr).
int load_policy_reporting(const std::string& path, DiagnosticFormat format, LoadedPolicy* loaded);

// As load_policy_reporting, for a policy whose bytes the caller has already read (a FIFO or
// /dev/stdin can be read only once): compiles `text` as if read from `path` (the extension picks
// the front-end, compile.h) and reports every diagnostic. Returns 0 when the policy has no errors
// (loaded->policy is set), 1 on policy errors (including RG013, an unknown extension), 2 when
// JSON diagnostics cannot be written.
int compile_policy_reporting(std::string_view text, const std::string& path,
                             DiagnosticFormat format, LoadedPolicy* loaded);

// Opens the table a subcommand runs against: exactly one of `policy_path` (compiled in memory:
// load, check, lower, load_bytes) and `table_path` (load_table_trusted() with `trust`: its
// signature checked against the pinned keys, its rollback state kept) is non-empty. A policy
// source has no signature: with keys pinned, signing required or a trust state, --policy is
// refused (exit 2) and the user is pointed at --table.
// Returns 0 with *table set, 1 on policy errors (diagnostics on stderr), 2 on I/O errors and
// unloadable tables (message with load_error_name on stderr). When `sensitive` is given it gets the
// policy's `sensitive` list (empty for a table, which does not keep it).
struct TrustFlags;
int open_table(const std::string& policy_path, const std::string& table_path,
               std::unique_ptr<Table>* table, std::vector<std::string>* sensitive = nullptr,
               const TrustFlags* trust = nullptr);

}  // namespace replaygate::cli
