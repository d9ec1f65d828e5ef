// The CLI's table of subcommands and its entry point.
//
// Each subcommand lives in its own file and exposes one setup function: it adds its options and
// positionals to the CLI11 sub-app and returns the function that runs the command once the
// command line has parsed. Exit codes, for every subcommand (see docs/cli.md):
//   0 success; 1 findings (policy errors, failed cases, invalid records);
//   2 usage errors, I/O errors, unreadable tables, internal errors.
#pragma once

#include <functional>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace replaygate::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitUsage = 2;  // also I/O and internal errors

using Runner = std::function<int()>;

struct Command {
  const char* name;
  const char* summary;
  Runner (*setup)(CLI::App& sub);
};

Runner setup_compile(CLI::App& sub);
Runner setup_lint(CLI::App& sub);
Runner setup_decide(CLI::App& sub);
Runner setup_dump(CLI::App& sub);
Runner setup_test(CLI::App& sub);
Runner setup_explain(CLI::App& sub);
Runner setup_graph(CLI::App& sub);
Runner setup_matrix(CLI::App& sub);
Runner setup_fmt(CLI::App& sub);
Runner setup_convert(CLI::App& sub);
Runner setup_review(CLI::App& sub);  // tools/cli/review.cc
Runner setup_audit(CLI::App& sub);   // tools/cli/audit_cmd.cc
Runner setup_diff(CLI::App& sub);
Runner setup_ledger(CLI::App& sub);    // tools/cli/ledger_cmd.cc
Runner setup_verify(CLI::App& sub);    // tools/cli/verify.cc
Runner setup_key(CLI::App& sub);       // tools/cli/sign_cmd.cc
Runner setup_sign(CLI::App& sub);      // tools/cli/sign_cmd.cc
Runner setup_trust(CLI::App& sub);     // tools/cli/sign_cmd.cc
Runner setup_gate(CLI::App& sub);      // tools/cli/gate_cmd.cc
Runner setup_propose(CLI::App& sub);   // tools/cli/propose.cc
Runner setup_proposal(CLI::App& sub);  // tools/cli/proposal_cmd.cc
Runner setup_lsp(CLI::App& sub);       // tools/cli/lsp.cc
Runner setup_plan(CLI::App& sub);      // tools/cli/plan_cmd.cc
Runner setup_console(CLI::App& sub);   // tools/cli/console_cmd.cc

// Builds the whole command line into `app` (empty on entry): its name, description, --version
// and every subcommand with its options, as run() parses them. Returns each top-level subcommand
// with the function that runs it; the runners own the options' storage, so `app` must not
// outlive them. The man pages and the bash completion (tools/docgen.cc) are written from this
// same object, so they list exactly what --help does. Throws what CLI11 throws on a definition
// error (a duplicate option name: a programming error).
std::vector<std::pair<CLI::App*, Runner>> build_app(CLI::App& app);

// Parses argv, runs the chosen subcommand and returns the process exit code. Never throws.
int run(int argc, char** argv);

}  // namespace replaygate::cli
