// `replaygate lint POLICY`: diagnostics only; exit 1 on errors (or warnings with --werror).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "tools/cli/commands.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {
namespace {

struct LintOptions {
  std::string policy;
  std::string format = "text";
  bool werror = false;
};

std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

int run_lint(const LintOptions& options) {
  DiagnosticFormat format;
  if (!parse_diagnostic_format(options.format, &format)) {
    std::fprintf(stderr, "replaygate: error: --format must be text or json, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  LoadedPolicy loaded;
  const int code = load_policy_reporting(options.policy, format, &loaded);
  if (code == kExitUsage) return code;
  size_t errors = 0, warnings = 0;
  for (const Diagnostic& d : loaded.diagnostics) {
    if (d.severity == Severity::kError) ++errors;
    if (d.severity == Severity::kWarning) ++warnings;
  }
  if (errors > 0) {
    std::fprintf(stderr, "%s: %s, %s\n", options.policy.c_str(), plural(errors, "error").c_str(),
                 plural(warnings, "warning").c_str());
    return kExitFindings;
  }
  if (warnings > 0) {
    std::fprintf(stderr, "%s: ok with %s%s\n", options.policy.c_str(),
                 plural(warnings, "warning").c_str(), options.werror ? " (failing: --werror)" : "");
    return options.werror ? kExitFindings : kExitOk;
  }
  std::fprintf(stderr, "%s: ok\n", options.policy.c_str());
  return kExitOk;
}

}  // namespace

Runner setup_lint(CLI::App& sub) {
  auto options = std::make_shared<LintOptions>();
  sub.footer(
      "Check POLICY and print its diagnostics (text on stderr, or a JSON array on stdout).\n"
      "Exit: 0 no errors, 1 errors (or warnings with --werror), 2 usage/I/O.");
  sub.add_option("POLICY", options->policy, "Policy file (.policy or .yaml)")->required();
  sub.add_option("--format", options->format, "text (default) or json");
  sub.add_flag("--werror", options->werror, "Treat warnings as errors");
  return [options] { return run_lint(*options); };
}

}  // namespace replaygate::cli
