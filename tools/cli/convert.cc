// `replaygate convert IN [-o OUT] [--to yaml|policy]`: a policy in one syntax -> the other.
// The input is compiled first (front-end, check, analysis); the output is printed from the IR, so
// it compiles to the same decisions. YAML comments are lost (yaml-cpp does not report them).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compiler/print_dsl.h"
#include "compiler/print_yaml.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {
namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  std::string to;
};

std::string kind_of(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".policy") return "policy";
  if (extension == ".yaml" || extension == ".yml") return "yaml";
  return "";
}

int run_convert(const ConvertOptions& options) {
  std::string to = options.to;
  if (!to.empty() && to != "yaml" && to != "policy") {
    std::fprintf(stderr, "replaygate: error: --to must be yaml or policy, not '%s'\n", to.c_str());
    return kExitUsage;
  }
  if (!options.output.empty()) {
    const std::string by_extension = kind_of(options.output);
    if (by_extension.empty()) {
      std::fprintf(stderr,
                   "replaygate: error: the output '%s' must end in .policy, .yaml or .yml\n",
                   options.output.c_str());
      return kExitUsage;
    }
    if (!to.empty() && to != by_extension) {
      std::fprintf(stderr, "replaygate: error: --to %s contradicts the output file name '%s'\n",
                   to.c_str(), options.output.c_str());
      return kExitUsage;
    }
    to = by_extension;
  }
  if (to.empty()) {
    const std::string from = kind_of(options.input);
    to = from == "policy" ? "yaml" : "policy";
  }
  // convert would replace the input (and drop its comments): 'fmt --write' reformats in place.
  if (!options.output.empty()) {
    std::vector<InputFile> inputs;
    inputs.push_back(InputFile{options.input, "the input file"});
    std::string error;
    if (!check_output_file(options.output, inputs,
                           " (to reformat in place, use 'replaygate fmt --write')", &error)) {
      std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
      return kExitUsage;
    }
  }
  // `convert IN >> IN` would append the other form to the policy it reads.
  if (const std::string same = stdout_is_input({InputFile{options.input, "the input file"}});
      options.output.empty() && !same.empty()) {
    std::fprintf(stderr,
                 "replaygate: error: %s (input file is output file); redirect standard output "
                 "to another file, or give -o FILE\n",
                 same.c_str());
    return kExitUsage;
  }
  LoadedPolicy loaded;
  const int code = load_policy_reporting(options.input, DiagnosticFormat::kText, &loaded);
  if (code != kExitOk) return code;
  const ir::Policy& policy = loaded.policy->policy;
  if (to == "yaml") {
    // YAML reads any quoted '*' in a row's keys as the wildcard, so a literal "*" key (which the
    // policy language can say) cannot be written there without changing decisions.
    for (const ir::Rule& rule : policy.rules) {
      const auto* table = std::get_if<ir::Table>(&rule);
      if (table == nullptr) continue;
      for (const ir::Row& row : table->rows) {
        for (const auto& key : row.keys) {
          if (key && key->kind == ir::Value::Kind::kString && key->str == "*") {
            std::fprintf(stderr,
                         "replaygate: error: row '%s' of table '%s' has the literal key \"*\", "
                         "which YAML can only read as the wildcard; not converted\n"
                         "      = hint: keep this policy in the .policy form, or rename the "
                         "value\n",
                         row.id.c_str(), table->id.c_str());
            return kExitFindings;
          }
        }
      }
    }
  }
  const std::string text = to == "yaml" ? print_yaml(policy) : print_dsl(policy);
  if (options.output.empty()) {
    return print_to_stdout(text, "the converted policy") ? kExitOk : kExitUsage;
  }
  std::string error;
  if (!write_file_atomically(options.output, text, &error)) {
    std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

Runner setup_convert(CLI::App& sub) {
  auto options = std::make_shared<ConvertOptions>();
  sub.footer(
      "Convert a policy between YAML (.yaml/.yml) and the policy language (.policy). The target\n"
      "is --to, else OUT's extension, else the other syntax than IN's. IN is compiled first; on\n"
      "errors nothing is written. YAML comments are not carried over.\n"
      "Exit: 0 converted, 1 policy errors, 2 usage/I/O.");
  sub.add_option("IN", options->input, "Policy file (.policy, .yaml or .yml)")->required();
  sub.add_option("-o,--output", options->output, "File to write (default: stdout)");
  sub.add_option("--to", options->to, "yaml or policy");
  return [options] { return run_convert(*options); };
}

}  // namespace replaygate::cli
