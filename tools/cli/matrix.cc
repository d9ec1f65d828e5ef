// `replaygate matrix POLICY [--table-id ID] [-o FILE] [--format html|svg]`: a table's first two
// key fields as a colour-coded grid (views/matrix.h draws it); here the options, the files, the
// messages and the exit codes.
#include "views/matrix.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {
namespace {

struct MatrixOptions {
  std::string policy;
  std::string table_id;
  std::string output;
  std::string format = "html";
};

int run_matrix(const MatrixOptions& options) {
  if (options.format != "html" && options.format != "svg") {
    std::fprintf(stderr, "replaygate matrix: error: --format must be html or svg, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  if (!options.output.empty()) {
    std::vector<InputFile> inputs;
    inputs.push_back(InputFile{options.policy, "the policy file"});
    std::string error;
    if (!check_output_file(options.output, inputs, " (e.g. matrix.html)", &error)) {
      std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
      return kExitUsage;
    }
  }
  LoadedPolicy loaded;
  if (const int code = load_policy_reporting(options.policy, DiagnosticFormat::kText, &loaded);
      code != kExitOk) {
    return code;
  }
  views::MatrixOptions view_options;
  view_options.table_id = options.table_id;
  view_options.format =
      options.format == "svg" ? views::MatrixFormat::kSvg : views::MatrixFormat::kHtml;
  const views::MatrixResult matrix = views::render_matrix(loaded.policy->policy, view_options);
  if (!matrix.error.empty()) {
    std::fprintf(stderr, "replaygate matrix: error: %s\n", matrix.error.c_str());
    return kExitUsage;
  }
  const std::string& out = matrix.text;
  if (!options.output.empty()) {
    std::string error;
    if (!write_file_atomically(options.output, out, &error)) {
      std::fprintf(stderr, "replaygate: %s\n", error.c_str());
      return kExitUsage;
    }
    return kExitOk;
  }
  if (!print_to_stdout(out, "the matrix")) return kExitUsage;
  return kExitOk;
}

}  // namespace

Runner setup_matrix(CLI::App& sub) {
  auto options = std::make_shared<MatrixOptions>();
  sub.footer(
      "Render a table's first two keys (topic x error_class for the reference gate) as a\n"
      "colour-coded grid: one colour per verb, a legend, the rule id and reason on hover,\n"
      "wildcard rows marked *, cells a guard pre-empts outlined. Self-contained HTML or SVG.\n"
      "Exit: 0 written, 1 policy errors, 2 usage/I/O (no such table, a one-key table).");
  sub.add_option("POLICY", options->policy, "Policy file (.yaml)")->required();
  sub.add_option("--table-id", options->table_id, "Table to draw (default: the first table)");
  sub.add_option("-o,--output", options->output, "Output file (default, or -: standard output)");
  sub.add_option("--format", options->format, "html (default) or svg");
  return [options] {
    if (options->output == "-") options->output.clear();  // -o - is standard output, the default
    return run_matrix(*options);
  };
}

}  // namespace replaygate::cli
