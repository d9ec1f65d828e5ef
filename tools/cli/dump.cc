// `replaygate dump TABLE`: print a frozen table as a readable, deterministic listing.
//
// A table that does not load (corrupt, truncated, wrong version) is an input error: exit 2.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "runtime/table.h"
#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {
namespace {

int run_dump(const std::string& path) {
  LoadStatus status;
  const std::unique_ptr<Table> table = Table::load_file(path, &status);
  if (table == nullptr) {
    std::fprintf(stderr, "%s\n", describe_load_failure(path, status).c_str());
    return kExitUsage;
  }
  const std::string listing = table->dump();
  if (!print_to_stdout(listing, "the listing")) return kExitUsage;
  return kExitOk;
}

}  // namespace

Runner setup_dump(CLI::App& sub) {
  auto path = std::make_shared<std::string>();
  sub.footer(
      "Print TABLE (a compiled .rgt file) as a readable listing on stdout.\n"
      "Exit: 0 printed, 2 usage/I/O or a table that does not load (corrupt, wrong version).");
  sub.add_option("TABLE", *path, "Compiled table file")->required();
  return [path] { return run_dump(*path); };
}

}  // namespace replaygate::cli
