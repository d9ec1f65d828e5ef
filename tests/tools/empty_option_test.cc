// An empty value never turns a protection off: every option and positional that takes a value, on
// every command, refuses "" with exit 2 (tools/cli/app.cc, refuse_empty_values). The options are
// enumerated from the CLI definition itself (build_app), so a new option cannot skip the rule.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"
#include "tools/cli/commands.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

// "" is a value of the protocol these name (AMQP's default exchange, an empty routing key).
const std::set<std::string> kEmptyAllowed = {"--replay-exchange", "--replay-routing-key"};

struct ValueOption {
  std::vector<std::string> command;  // {"ledger", "show"}
  std::string name;                  // "--ledger", or a positional's name ("KEY")
  bool positional = false;
  int before = 0;  // a positional: how many positionals of its command come first
};

void collect(const CLI::App* app, std::vector<std::string> path, std::vector<ValueOption>* out) {
  int positionals = 0;
  for (const CLI::Option* option : app->get_options()) {
    if (option->get_items_expected_max() <= 0) continue;  // a flag
    const bool positional = option->get_lnames().empty() && option->get_snames().empty();
    const std::string name = positional                     ? option->get_name()
                             : option->get_lnames().empty() ? "-" + option->get_snames()[0]
                                                            : "--" + option->get_lnames()[0];
    out->push_back({path, name, positional, positional ? positionals++ : 0});
  }
  for (const CLI::App* sub : app->get_subcommands({})) {
    std::vector<std::string> deeper = path;
    deeper.push_back(sub->get_name());
    collect(sub, deeper, out);
  }
}

std::vector<ValueOption> value_options() {
  CLI::App app;
  const auto runners = replaygate::cli::build_app(app);
  std::vector<ValueOption> out;
  collect(&app, {}, &out);
  return out;
}

class EmptyOptionTest : public CliFixture {};

TEST_F(EmptyOptionTest, EveryValueOptionOfEveryCommandRefusesAnEmptyValue) {
  const std::vector<ValueOption> options = value_options();
  // The paths and keys that issue 35 found turned off, among many more.
  std::set<std::string> seen;
  for (const ValueOption& o : options) {
    std::vector<std::string> args = o.command;
    if (!o.positional) args.push_back(o.name);
    // Earlier positionals get a value, so that "" lands in this one (`diff OLD ""`).
    for (int i = 0; i < o.before; ++i) args.push_back("x");
    args.push_back("");
    std::string shown;
    for (const std::string& a : o.command) shown += a + " ";
    shown += o.name;
    seen.insert(shown);
    const CliResult r = run(args);
    if (kEmptyAllowed.count(o.name) > 0) {
      EXPECT_EQ(r.err.find(o.name + " is empty"), std::string::npos) << shown << "\n" << r.err;
      continue;
    }
    EXPECT_EQ(r.exit_code, 2) << shown << "\n" << r.err;
    EXPECT_EQ(r.out, "") << shown;
    // The refusal names the option itself (not "--policy is required" or a later failure).
    EXPECT_NE(r.err.find(o.name), std::string::npos) << shown << "\n" << r.err;
    EXPECT_EQ(r.err.find("is required"), std::string::npos) << shown << "\n" << r.err;
  }
  for (const char* must :
       {"decide --ledger", "review --ledger", "decide --trust-state", "decide --trusted-key",
        "decide --mapping", "decide --audit", "decide --audit-sign-key", "gate rabbitmq --amqp",
        "gate rabbitmq --management", "gate rabbitmq --ledger", "gate rabbitmq --trust-state",
        "compile --output", "compile --sign-key", "lint --mapping", "trust reset --trust-state",
        "audit verify --trusted-key", "ledger show --ledger", "propose --output"}) {
    EXPECT_EQ(seen.count(must), 1u) << must << " is not an option any more: update this list";
  }
  EXPECT_GT(options.size(), 100u);
}

// The message says which option and what to do, and nothing ran: `decide --ledger ""` (as a script
// writes `--ledger "$UNSET"`) used to decide without a ledger, replaying the same letters on
// every run.
TEST_F(EmptyOptionTest, EmptyLedgerTrustStateAndMappingAreUsageErrors) {
  const std::string policy = kSourceDir + "/policies/replay_gate.yaml";
  const std::string letters = kSourceDir + "/examples/letters.jsonl";
  CliResult r = run({"decide", "--policy", policy, "--ledger", "", letters});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate: error: --ledger is empty: give a value, or leave the option out (an "
            "empty value never means 'none')\nRun 'replaygate decide --help' for usage.\n");
  r = run({"decide", "--policy", policy, "--trust-state", "", letters});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--trust-state is empty"), std::string::npos) << r.err;
  r = run({"decide", "--policy", policy, "--format", "kafka", "--mapping", "", letters});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--mapping is empty"), std::string::npos) << r.err;
  r = run({"review", "--policy", policy, "--message", letters, "--record", letters, "--confirm",
           "--operator", "ana", "--audit", (dir_ / "a.log").string(), "--ledger", ""});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ledger is empty"), std::string::npos) << r.err;
  // Nothing was appended: the refusal comes before any work.
  EXPECT_FALSE(std::filesystem::exists(dir_ / "a.log"));
  r = run({"gate", "rabbitmq", "--amqp", "", "--queue", "q", "--mapping", "m", "--table", "t"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--amqp is empty"), std::string::npos) << r.err;
  // The management API's variable set but empty is refused too: without the API a dry run on a
  // quorum queue (every peek uses up a delivery attempt) would not be refused.
  CliRun how;
  how.args = {"gate",    "rabbitmq", "--amqp",    "amqp://127.0.0.1:1/",
              "--queue", "q",        "--mapping", "m",
              "--table", "t",        "--all"};
  how.env = {"REPLAYGATE_MANAGEMENT_URL="};
  r = run_cli(dir_, how);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("$REPLAYGATE_MANAGEMENT_URL is set but empty"), std::string::npos) << r.err;
  // `--output` keeps its own words.
  r = run({"compile", policy, "-o", ""});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-o/--output is empty: name the file to write"), std::string::npos) << r.err;
}

}  // namespace
