// `replaygate graph (--policy P | --table T) [-o FILE] [--format dot|svg]`: the decision structure
// as a Graphviz picture (views/graph.h draws it as DOT); here the options, the files, the
// messages, the exit codes and `--format svg`, which pipes the DOT through `dot -Tsvg` (Graphviz;
// exit 2 with a clear message when it is not installed).
#include "views/graph.h"

#include <stdio.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/table.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

struct GraphOptions {
  TrustFlags trust;
  std::string policy;
  std::string table;
  std::string output;
  std::string format = "dot";
};

// Runs `dot -Tsvg` on `dot_text`. Returns false with *error set when dot is missing or fails.
bool run_dot(const std::string& dot_text, std::string* svg, std::string* error) {
  char input_path[] = "/tmp/replaygate_graph.XXXXXX";
  const int fd = ::mkstemp(input_path);
  if (fd < 0) {
    *error = "cannot create a temporary file";
    return false;
  }
  ::close(fd);
  std::string io_error;
  if (!write_file_atomically(input_path, dot_text, &io_error)) {
    ::unlink(input_path);
    *error = io_error;
    return false;
  }
  const std::string command = std::string("dot -Tsvg ") + input_path + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ::unlink(input_path);
    *error = "cannot run dot";
    return false;
  }
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) svg->append(buffer, n);
  const int status = ::pclose(pipe);
  ::unlink(input_path);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = WIFEXITED(status) && WEXITSTATUS(status) == 127
                 ? "--format svg needs Graphviz's dot on PATH (apt-get install graphviz), or "
                   "use --format dot"
                 : "dot -Tsvg failed";
    return false;
  }
  return true;
}

int run_graph(const GraphOptions& options) {
  if (options.policy.empty() == options.table.empty()) {
    std::fprintf(stderr,
                 "replaygate graph: error: give exactly one of --policy POLICY.yaml or --table "
                 "TABLE.rgt\nRun 'replaygate graph --help' for usage.\n");
    return kExitUsage;
  }
  if (options.format != "dot" && options.format != "svg") {
    std::fprintf(stderr, "replaygate graph: error: --format must be dot or svg, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  if (!options.output.empty()) {
    std::vector<InputFile> inputs;
    inputs.push_back(InputFile{options.policy, "the policy file"});
    inputs.push_back(InputFile{options.table, "the table file"});
    std::string error;
    if (!check_output_file(options.output, inputs, " (e.g. gate.dot)", &error)) {
      std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
      return kExitUsage;
    }
  }
  views::GraphModel model;
  if (!options.policy.empty()) {
    LoadedPolicy loaded;
    if (const int code = load_policy_reporting(options.policy, DiagnosticFormat::kText, &loaded);
        code != kExitOk) {
      return code;
    }
    model = views::graph_from_policy(loaded.policy->policy);
  } else {
    std::unique_ptr<Table> table;
    if (const int code = open_table("", options.table, &table, nullptr, &options.trust);
        code != kExitOk)
      return code;
    model = views::graph_from_table(*table);
  }
  std::string out = views::render_dot(model);
  if (options.format == "svg") {
    std::string svg, error;
    if (!run_dot(out, &svg, &error)) {
      std::fprintf(stderr, "replaygate graph: %s\n", error.c_str());
      return kExitUsage;
    }
    out = std::move(svg);
  }
  if (!options.output.empty()) {
    std::string error;
    if (!write_file_atomically(options.output, out, &error)) {
      std::fprintf(stderr, "replaygate: %s\n", error.c_str());
      return kExitUsage;
    }
    return kExitOk;
  }
  if (!print_to_stdout(out, "the graph")) return kExitUsage;
  return kExitOk;
}

}  // namespace

Runner setup_graph(CLI::App& sub) {
  auto options = std::make_shared<GraphOptions>();
  sub.footer(
      "Write the decision structure as Graphviz DOT: guards in order with their conditions\n"
      "(true -> verb, false -> next rule), tables with their row count and one edge per verb,\n"
      "the default last; verbs coloured by effect. --format svg runs `dot -Tsvg` (Graphviz).\n"
      "Exit: 0 written, 1 policy errors, 2 usage/I/O (or svg without dot).");
  sub.add_option("--policy", options->policy, "Policy file (.yaml)");
  sub.add_option("--table", options->table, "Frozen table (.rgt)");
  sub.add_option("-o,--output", options->output, "Output file (default, or -: standard output)");
  sub.add_option("--format", options->format, "dot (default) or svg");
  add_trust_options(sub, &options->trust, /*acting=*/false);
  return [options] {
    if (options->output == "-") options->output.clear();  // -o - is standard output, the default
    return run_graph(*options);
  };
}

}  // namespace replaygate::cli
