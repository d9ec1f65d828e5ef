// `replaygate fmt FILE...`: print .policy files in canonical form, rewrite them (--write) or list
// those that are not canonical (--check). YAML files are refused: yaml-cpp does not report
// comments, so a formatted YAML file would lose them (use `convert` to get the DSL form).
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/escape.h"
#include "common/yaml_tree.h"
#include "compiler/syntax/print_dsl.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {
namespace {

struct FmtOptions {
  std::vector<std::string> files;
  bool write = false;
  bool check = false;
};

std::string extension_of(const std::string& path) {
  return std::filesystem::path(path).extension().string();
}

int run_fmt(const FmtOptions& options) {
  if (options.write && options.check) {
    std::fprintf(stderr, "replaygate: error: --write and --check exclude each other\n");
    return kExitUsage;
  }
  if (!options.write && !options.check) {
    // `fmt X.policy >> X.policy` would append the canonical form to the file it formats.
    std::vector<InputFile> inputs;
    for (const std::string& path : options.files) inputs.push_back({path, "the input file"});
    if (const std::string same = stdout_is_input(inputs); !same.empty()) {
      std::fprintf(stderr,
                   "replaygate: error: %s (input file is output file); redirect standard output "
                   "to another file, or use --write to reformat in place\n",
                   same.c_str());
      return kExitUsage;
    }
  }
  int exit_code = kExitOk;
  const auto worst = [&](int code) {
    if (code == kExitUsage || exit_code == kExitOk) exit_code = code;
  };
  for (const std::string& path : options.files) {
    const std::string extension = extension_of(path);
    if (extension == ".yaml" || extension == ".yml") {
      std::fprintf(stderr,
                   "replaygate: error: %s: fmt formats .policy files only; YAML comments cannot "
                   "be kept (run 'replaygate convert %s --to policy' for the policy-language "
                   "form)\n",
                   path.c_str(), path.c_str());
      worst(kExitUsage);
      continue;
    }
    if (extension != ".policy") {
      std::fprintf(stderr, "replaygate: error: %s: not a .policy file\n", path.c_str());
      worst(kExitUsage);
      continue;
    }
    std::string text, error;
    if (!read_whole_file(path, yaml::kMaxBytes, &text, &error)) {
      std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
      worst(kExitUsage);
      continue;
    }
    const FormatResult formatted = format_dsl_checked(text, path);
    if (!formatted.text && formatted.unstable.empty()) {
      report_diagnostics(formatted.diagnostics, text, DiagnosticFormat::kText);
      worst(kExitFindings);
      continue;
    }
    // Never hand on (or write) a canonical form that would not parse back, e.g. a list printed on
    // one line longer than the front-end's line limit (RG015).
    if (!formatted.text) {
      std::fprintf(stderr,
                   "replaygate: error: %s: the canonical form of this file would not read back "
                   "(%s); the file is left unchanged\n"
                   "      = hint: split the long item (for example a long 'in (...)' list into a "
                   "table, or several rules)\n",
                   path.c_str(), formatted.unstable.c_str());
      worst(kExitFindings);
      continue;
    }
    if (options.check) {
      if (*formatted.text != text) {
        if (!print_to_stdout(path + "\n", "the list of files")) return kExitUsage;
        worst(kExitFindings);
      }
    } else if (options.write) {
      if (*formatted.text != text) {
        // The atomic replace (a reader never sees half a file) gives the path a new inode: other
        // hard links to the old one keep the old text. Said, not silently done.
        struct stat before {};
        const nlink_t links = ::stat(path.c_str(), &before) == 0 ? before.st_nlink : 1;
        if (!write_file_atomically(path, *formatted.text, &error)) {
          std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
          worst(kExitUsage);
          continue;
        }
        std::fprintf(stderr, "formatted %s\n", path.c_str());
        if (links > 1) {
          std::fprintf(
              stderr,
              "replaygate: warning: %s had %llu hard links; --write replaced it with a "
              "new file (atomic rename), so %s the old text (format each name, or "
              "keep one name and symbolic links)\n",
              escape_control(path, Backslash::kKeep).c_str(),
              static_cast<unsigned long long>(links),
              links == 2
                  ? "the other name still holds"
                  : ("the other " + std::to_string(links - 1) + " names still hold").c_str());
        }
      }
    } else {
      if (!print_to_stdout(*formatted.text, "the formatted policy")) return kExitUsage;
    }
  }
  if (options.check && exit_code == kExitFindings) {
    std::fprintf(stderr,
                 "replaygate: the files above are not in canonical form (run 'replaygate "
                 "fmt --write')\n");
  }
  return exit_code;
}

}  // namespace

Runner setup_fmt(CLI::App& sub) {
  auto options = std::make_shared<FmtOptions>();
  sub.footer(
      "Print each .policy FILE in canonical form (stdout), keeping its comments. --write rewrites\n"
      "the files in place (atomically: a new file, so other hard links keep the old text; a\n"
      "warning says so), --check lists the files that are not canonical.\n"
      "YAML files are refused: their comments cannot be kept (use convert).\n"
      "Exit: 0 ok (all canonical with --check), 1 syntax errors or non-canonical files,\n"
      "2 usage/I/O.");
  sub.add_option("FILE", options->files, "Policy files (.policy)")->required();
  sub.add_flag("--write", options->write, "Rewrite the files in place");
  sub.add_flag("--check", options->check, "List files that are not canonical; exit 1 if any");
  return [options] { return run_fmt(*options); };
}

}  // namespace replaygate::cli
