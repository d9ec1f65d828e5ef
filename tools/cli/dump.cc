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
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

int run_dump(const std::string& path, const TrustFlags& trust) {
  std::unique_ptr<Table> table;
  if (const int code = load_table_trusted(path, trust, &table); code != kExitOk) return code;
  const std::string listing = table->dump();
  if (!print_to_stdout(listing, "the listing")) return kExitUsage;
  return kExitOk;
}

}  // namespace

Runner setup_dump(CLI::App& sub) {
  auto path = std::make_shared<std::string>();
  auto trust = std::make_shared<TrustFlags>();
  sub.footer(
      "Print TABLE (a compiled .rgt file) as a readable listing on stdout.\n"
      "Exit: 0 printed, 2 usage/I/O or a table that does not load (corrupt, wrong version).");
  sub.add_option("TABLE", *path, "Compiled table file")->required();
  add_trust_options(sub, trust.get(), /*acting=*/false);
  return [path, trust] { return run_dump(*path, *trust); };
}

}  // namespace replaygate::cli
