// `replaygate lint POLICY`: diagnostics only; exit 1 on errors (or warnings with --werror).
//
// Formats: text (stderr, with excerpts), json (array on stdout), sarif (SARIF 2.1.0 log on
// stdout, for code scanning) and github (workflow annotation lines on stdout).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "compiler/escape.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {
namespace {

// Where the docs are published; SARIF rules link to DOCS_URL/docs/diagnostics.md#rgNNN.
constexpr const char* kDefaultDocsUrl = "https://github.com/replaygate/replaygate/blob/main";

struct LintOptions {
  std::string policy;
  std::string format = "text";
  bool werror = false;
  std::string docs_url = kDefaultDocsUrl;
};

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
  LoadedPolicy loaded;
  if (f == "text" || f == "json") {
    const int code = load_policy_reporting(
        options.policy, f == "json" ? DiagnosticFormat::kJson : DiagnosticFormat::kText, &loaded);
    if (code == kExitUsage) return code;
  } else {
    loaded = load_policy_file(options.policy);
    if (loaded.io_error) {
      std::fprintf(stderr, "replaygate: %s\n",
                   loaded.io_message.empty() ? ("cannot read " + options.policy).c_str()
                                             : loaded.io_message.c_str());
      return kExitUsage;
    }
    const std::string out = f == "sarif" ? render_sarif(loaded.diagnostics, loaded.source_text,
                                                        REPLAYGATE_VERSION, options.docs_url)
                                         : render_github(loaded.diagnostics);
    if (!print_to_stdout(out, "the diagnostics")) return kExitUsage;
  }
  // The file name may come from the pull request under review: one safe line in the CI log.
  const std::string path = escape_control(options.policy, Backslash::kKeep);
  size_t errors = 0, warnings = 0;
  for (const Diagnostic& d : loaded.diagnostics) {
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
                 options.werror ? " (failing: --werror)" : "");
    return options.werror ? kExitFindings : kExitOk;
  }
  std::fprintf(stderr, "%s: ok\n", path.c_str());
  return kExitOk;
}

}  // namespace

Runner setup_lint(CLI::App& sub) {
  auto options = std::make_shared<LintOptions>();
  sub.footer(
      "Check POLICY and print its diagnostics: text on stderr (default), or on stdout a JSON\n"
      "array (json), a SARIF 2.1.0 log (sarif) or GitHub Actions annotations (github).\n"
      "Exit: 0 no errors, 1 errors (or warnings with --werror), 2 usage/I/O.");
  sub.add_option("POLICY", options->policy, "Policy file (.policy or .yaml)")->required();
  sub.add_option("--format", options->format, "text (default), json, sarif or github");
  sub.add_option("--docs-url", options->docs_url,
                 "Base URL of the docs for SARIF helpUri links (default: the project's GitHub)");
  sub.add_flag("--werror", options->werror, "Treat warnings as errors");
  return [options] { return run_lint(*options); };
}

}  // namespace replaygate::cli
