// `replaygate lint POLICY`: diagnostics only; exit 1 on errors (or warnings with --werror).
//
// Formats: text (stderr, with excerpts), json (array on stdout), sarif (SARIF 2.1.0 log on
// stdout, for code scanning) and github (workflow annotation lines on stdout).
//
// `--mapping MAPPING.yaml` also checks an input mapping file against the policy, as `decide
// --format kafka` does before it reads a record (RG3xx, docs/input-mapping.md): CI can refuse a
// mapping whose default opens a create verb (RG309) before it reaches production.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "checks/mapping_check.h"
#include "common/escape.h"
#include "compiler/lower.h"
#include "inputs/mapping.h"
#include "runtime/replaygate.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"

namespace replaygate::cli {

using inputs::LoadedMapping;

namespace {

// Where the docs are published; SARIF rules link to DOCS_URL/docs/diagnostics.md#rgNNN.
constexpr const char* kDefaultDocsUrl = "https://github.com/replaygate/replaygate/blob/main";

struct LintOptions {
  std::string policy;
  std::string format = "text";
  bool werror = false;
  std::string docs_url = kDefaultDocsUrl;
  std::string mapping;
};

// The last stderr line for one file: "PATH: ok", "PATH: ok with 2 warnings", "PATH: 1 error, 0
// warnings". Returns the exit code that file alone asks for.
int summarize(const std::string& file, const std::vector<Diagnostic>& diagnostics, bool werror) {
  // The file name may come from the pull request under review: one safe line in the CI log.
  const std::string path = escape_control(file, Backslash::kKeep);
  size_t errors = 0, warnings = 0;
  for (const Diagnostic& d : diagnostics) {
    if (d.severity == Severity::kError) ++errors;
    if (d.severity == Severity::kWarning) ++warnings;
  }
  if (errors > 0) {
    std::fprintf(stderr, "%s: %s, %s\n", path.c_str(), plural(errors, "error").c_str(),
                 plural(warnings, "warning").c_str());
    return kExitFindings;
  }
  if (warnings > 0) {
    std::fprintf(stderr, "%s: ok with %s%s\n", path.c_str(), plural(warnings, "warning").c_str(),
                 werror ? " (failing: --werror)" : "");
    return werror ? kExitFindings : kExitOk;
  }
  std::fprintf(stderr, "%s: ok\n", path.c_str());
  return kExitOk;
}

// Checks the mapping against the policy's table; kExitUsage (message printed) when the mapping
// cannot be read or the table not built.
int load_mapping_for(const LintOptions& options, const ir::CheckedPolicy& policy,
                     LoadedMapping* mapping) {
  const std::vector<uint8_t> bytes = lower(policy);
  LoadStatus status;
  const std::unique_ptr<Table> table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  if (table == nullptr) {
    std::fprintf(stderr,
                 "replaygate: internal error: the table compiled from %s does not load: %s: %s\n",
                 escape_control(options.policy).c_str(), load_error_name(status.error),
                 status.message.c_str());
    return kExitUsage;
  }
  *mapping = load_mapping_file(options.mapping, *table);
  if (mapping->io_error) {
    std::fprintf(stderr, "replaygate: %s\n", mapping->io_message.c_str());
    return kExitUsage;
  }
  // RG312 is lint's own: a review finding about the policy's budget, not about reading records.
  if (!has_errors(mapping->diagnostics)) {
    for (Diagnostic& d :
         checks::check_delivery_counters(mapping->mapping, *table, options.mapping)) {
      mapping->diagnostics.push_back(std::move(d));
    }
    sort_diagnostics(mapping->diagnostics);
  }
  return kExitOk;
}

int run_lint(const LintOptions& options) {
  const std::string& f = options.format;
  if (f != "text" && f != "json" && f != "sarif" && f != "github") {
    std::fprintf(stderr,
                 "replaygate: error: --format must be text, json, sarif or github, not '%s'\n",
                 f.c_str());
    return kExitUsage;
  }
  if (const std::string why = docs_url_error(options.docs_url); !why.empty()) {
    std::fprintf(stderr, "replaygate: error: %s\n", why.c_str());
    return kExitUsage;
  }
  if (!options.mapping.empty() && f == "sarif") {
    // One SARIF run converts columns against one file's text; two files would need two.
    std::fprintf(stderr,
                 "replaygate: error: --mapping works with --format text, json or github, not "
                 "sarif\n");
    return kExitUsage;
  }
  LoadedPolicy loaded;
  LoadedMapping mapping;
  int code = kExitOk;
  const auto check_mapping = [&](bool report_text) {
    if (options.mapping.empty()) return kExitOk;
    if (!loaded.policy) {
      std::fprintf(stderr, "%s: not checked (the policy has errors)\n",
                   escape_control(options.mapping, Backslash::kKeep).c_str());
      return kExitOk;
    }
    if (load_mapping_for(options, *loaded.policy, &mapping) != kExitOk) return kExitUsage;
    if (report_text) {
      report_diagnostics(mapping.diagnostics, mapping.source_text, DiagnosticFormat::kText);
    }
    return kExitOk;
  };
  if (f == "text") {
    if (load_policy_reporting(options.policy, DiagnosticFormat::kText, &loaded) == kExitUsage) {
      return kExitUsage;
    }
    code = summarize(options.policy, loaded.diagnostics, options.werror);
    if (check_mapping(true) != kExitOk) return kExitUsage;
  } else {
    loaded = load_policy_file(options.policy);
    if (loaded.io_error) {
      std::fprintf(stderr, "replaygate: %s\n",
                   loaded.io_message.empty() ? ("cannot read " + options.policy).c_str()
                                             : loaded.io_message.c_str());
      return kExitUsage;
    }
    if (check_mapping(false) != kExitOk) return kExitUsage;
    std::vector<Diagnostic> all = loaded.diagnostics;
    all.insert(all.end(), mapping.diagnostics.begin(), mapping.diagnostics.end());
    const std::string out =
        f == "json"    ? render_json(all)
        : f == "sarif" ? render_sarif(all, loaded.source_text, RG_VERSION, options.docs_url)
                       : render_github(all);
    if (!print_to_stdout(out, "the diagnostics")) return kExitUsage;
    code = summarize(options.policy, loaded.diagnostics, options.werror);
  }
  if (!options.mapping.empty() && loaded.policy) {
    code = std::max(code, summarize(options.mapping, mapping.diagnostics, options.werror));
  }
  return code;
}

}  // namespace

Runner setup_lint(CLI::App& sub) {
  auto options = std::make_shared<LintOptions>();
  sub.footer(
      "Check POLICY and print its diagnostics: text on stderr (default), or on stdout a JSON\n"
      "array (json), a SARIF 2.1.0 log (sarif) or GitHub Actions annotations (github).\n"
      "With --mapping, also check an input mapping file against the policy, as decide\n"
      "--format kafka does (docs/input-mapping.md).\n"
      "Exit: 0 no errors, 1 errors (or warnings with --werror), 2 usage/I/O.");
  sub.add_option("POLICY", options->policy, "Policy file (.policy or .yaml)")->required();
  sub.add_option("--mapping", options->mapping,
                 "Input mapping file to check against POLICY (text, json or github format)");
  sub.add_option("--format", options->format, "text (default), json, sarif or github");
  sub.add_option("--docs-url", options->docs_url,
                 "Base URL of the docs for SARIF helpUri links (default: the project's GitHub)");
  sub.add_flag("--werror", options->werror, "Treat warnings as errors");
  return [options] { return run_lint(*options); };
}

}  // namespace replaygate::cli
