// The command line front door: the subcommand table, CLI11 parsing, usage errors -> exit 2.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <exception>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/diagnostic.h"
#include "inputs/records.h"
#include "runtime/replaygate.h"
#include "runtime/table_format.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"

namespace replaygate::cli {
namespace {

constexpr Command kCommands[] = {
    {"compile", "Compile a policy into a frozen decision table", setup_compile},
    {"lint", "Check a policy and print its diagnostics", setup_lint},
    {"decide", "Decide every record of a dead-letter dump (JSON Lines in, JSON Lines out)",
     setup_decide},
    {"dump", "Print a frozen table as a readable listing", setup_dump},
    {"test", "Run a policy's test cases", setup_test},
    {"explain", "Explain, rule by rule, the decision for one letter", setup_explain},
    {"graph", "Draw the decision structure as Graphviz DOT or SVG", setup_graph},
    {"matrix", "Render a table's two keys as a colour-coded HTML or SVG grid", setup_matrix},
    {"fmt", "Print .policy files in canonical form (--write, --check)", setup_fmt},
    {"convert", "Convert a policy between YAML and the policy language", setup_convert},
    {"review", "Print the operator review record for one message and its operation record",
     setup_review},
    {"audit", "Verify the audit trail, append a result entry, or repair a broken log", setup_audit},
    {"diff", "Compare two policies: every region of inputs whose verb or rule changes", setup_diff},
    {"ledger", "Read the durable replay ledger: show a key, list, stats, export", setup_ledger},
    {"verify", "Check a table loads and, with --policy, decides exactly as the policy",
     setup_verify},
    {"key", "Generate an Ed25519 key pair for signing tables", setup_key},
    {"sign", "Sign a compiled table with a secret key", setup_sign},
    {"trust", "Show or reset the rollback state of signed tables", setup_trust},
    {"gate", "Run the live gate on a broker's dead-letter queue (rabbitmq, sidekiq)", setup_gate},
    {"propose", "Write a proposal of the unknown key groups in dead-letter dumps", setup_propose},
    {"proposal", "Check a proposal against a policy, or compare two proposals", setup_proposal},
    {"plan", "Build, show, approve, verify, cancel a plan: a frozen, reviewed set of letters",
     setup_plan},
    {"console", "The web console: serve it, manage its users (docs/console.md)", setup_console},
    {"lsp", "Run the language server for policies on stdin/stdout (docs/editors.md)", setup_lsp},
};

// Options for which "" is a value of the protocol they name, not "none": AMQP's default exchange
// is "", and a routing key may be "" (a fanout or headers exchange ignores it).
constexpr std::string_view kEmptyAllowed[] = {"--replay-exchange", "--replay-routing-key"};

// How an option is named in its empty-value message: "-o/--output", "--ledger", "FILE".
std::string display_name(const CLI::Option& option) {
  if (option.get_lnames().empty()) return option.get_name();
  const std::vector<std::string>& short_names = option.get_snames();
  return (short_names.empty() ? "" : "-" + short_names[0] + "/") + "--" + option.get_lnames()[0];
}

// What to give instead of an empty value.
std::string empty_value_message(const std::string& name) {
  if (name == "--operator") return operator_error("");
  if (name.ends_with("--output")) return name + " is empty: name the file to write";
  return name +
         " is empty: give a value, or leave the option out (an empty value never means "
         "'none')";
}

// An empty value for an option that names a file, URL, key or directory used to turn the
// protection it stands for off (decide --ledger "" ran without a ledger, --trust-state "" without
// rollback protection). So every option and positional that takes a value, on every command,
// refuses an empty one with exit 2, unless kEmptyAllowed names it. Checked while parsing (before
// "X is required"), so a test can find every option from build_app and try it alone. A
// ParseError other than ValidationError passes through CLI11's validator wrapper unchanged,
// so the message is ours, not "--ledger: ...".
void refuse_empty_values(CLI::App& command) {
  for (CLI::Option* option : command.get_options({})) {
    if (option->get_items_expected_max() <= 0) continue;  // a flag
    const std::string name = display_name(*option);
    if (std::find(std::begin(kEmptyAllowed), std::end(kEmptyAllowed), name) !=
        std::end(kEmptyAllowed)) {
      continue;
    }
    option->check(CLI::Validator(
        [name](std::string& value) -> std::string {
          if (!value.empty()) return "";
          throw CLI::ParseError(empty_value_message(name), CLI::ExitCodes::ValidationError);
        },
        "", "non-empty"));
  }
  for (CLI::App* sub : command.get_subcommands({})) refuse_empty_values(*sub);
}

int usage_error(const std::string& message, const std::string& command) {
  std::fprintf(stderr, "replaygate: error: %s\n", message.c_str());
  std::fprintf(stderr, "Run 'replaygate%s%s --help' for usage.\n", command.empty() ? "" : " ",
               command.c_str());
  return kExitUsage;
}

}  // namespace

std::vector<std::pair<CLI::App*, Runner>> build_app(CLI::App& app) {
  app.description(
      "replaygate: reviewed policies decide what may happen to dead-lettered messages.\n"
      "Exit codes: 0 success, 1 findings (policy errors, failed cases, invalid records),\n"
      "2 usage, I/O or internal errors.");
  app.name("replaygate");
  app.set_version_flag("--version", "replaygate " RG_VERSION " (table format " +
                                        std::to_string(format::kVersion) + ")");
  app.require_subcommand(1);
  app.fallthrough(false);
  std::vector<std::pair<CLI::App*, Runner>> runners;
  for (const Command& command : kCommands) {
    CLI::App* sub = app.add_subcommand(command.name, command.summary);
    runners.emplace_back(sub, command.setup(*sub));
  }
  refuse_empty_values(app);
  return runners;
}

int run(int argc, char** argv) {
  // A closed pipe must surface as a write error (exit 2), not kill the process silently.
  std::signal(SIGPIPE, SIG_IGN);
  // Likewise the file size limit (ulimit -f): write(2) then fails with EFBIG, which is reported
  // and cleaned up (a cut line is truncated away), instead of the process dying mid-line.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    CLI::App app;
    const std::vector<std::pair<CLI::App*, Runner>> runners = build_app(app);
    std::vector<std::string> names;
    for (const auto& [sub, runner] : runners) names.push_back(sub->get_name());
    if (argc >= 2 && argv[1][0] != '-') {
      const std::string word = argv[1];
      bool known = false;
      for (const auto& name : names) known = known || name == word;
      if (!known) {
        std::string message = "unknown command '" + escape_control(word) + "'";
        const std::string suggestion = closest_match(word, names);
        if (!suggestion.empty()) message += "; did you mean '" + suggestion + "'?";
        return usage_error(message, "");
      }
      // A command with actions of its own (`audit verify|result`): a missing or unknown action
      // is named with the valid ones, not CLI11's "A subcommand is required".
      std::vector<std::string> actions;
      for (const CLI::App* action : app.get_subcommand(word)->get_subcommands({})) {
        actions.push_back(action->get_name());
      }
      if (!actions.empty() && (argc < 3 || argv[2][0] != '-')) {
        std::string list;
        for (size_t i = 0; i < actions.size(); ++i) {
          list += (i == 0 ? "" : ", ") + actions[i];
        }
        if (argc < 3) return usage_error(word + " needs an action, one of: " + list, word);
        const std::string action = argv[2];
        if (std::find(actions.begin(), actions.end(), action) == actions.end()) {
          std::string message = "unknown " + word + " action '" + escape_control(action) +
                                "'; the actions are: " + list;
          const std::string suggestion = closest_match(action, actions);
          if (!suggestion.empty()) message += "; did you mean '" + suggestion + "'?";
          return usage_error(message, word);
        }
      }
    }
    // CLI11 reads `--opt=` (nothing after '=') as `--opt` and takes the next argument as its
    // value: `--max-replays= 0 FILE` would run with 0, and `audit result --decision= 2` append a
    // permanent entry. An empty value after '=' is refused, like `--opt ''`.
    for (int i = 2; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (arg == "--") break;
      if (arg.size() > 3 && arg.substr(0, 2) == "--" && arg.find('=') == arg.size() - 1) {
        const std::string name(arg.substr(0, arg.size() - 1));
        return usage_error(name + " has nothing after '=': give " + name + "=VALUE",
                           argv[1][0] == '-' ? "" : argv[1]);
      }
    }
    // CLI11 reads `-oVALUE` as `-o VALUE`, so `-o=gate.rgt` wrote a file named "=gate.rgt" and
    // left an existing gate.rgt stale. `-X=VALUE` for a short option that takes a value means
    // `-X VALUE`, as `--output=VALUE` does (a file whose name starts with '=': -o ./=x).
    std::set<char> value_options;
    const std::function<void(const CLI::App*)> collect = [&](const CLI::App* command) {
      for (const CLI::Option* option : command->get_options()) {
        if (option->get_items_expected_max() <= 0) continue;
        for (const std::string& name : option->get_snames()) value_options.insert(name[0]);
      }
      for (const CLI::App* sub : command->get_subcommands({})) collect(sub);
    };
    collect(&app);
    std::vector<std::string> args(argv, argv + argc);
    for (size_t i = 2; i < args.size(); ++i) {
      const std::string arg = args[i];
      if (arg == "--") break;
      if (arg.size() < 3 || arg[0] != '-' || arg[1] == '-' || arg[2] != '=' ||
          value_options.count(arg[1]) == 0) {
        continue;
      }
      if (arg.size() == 3) {
        return usage_error(
            arg.substr(0, 2) + " has nothing after '=': give " + arg.substr(0, 2) + " VALUE",
            argv[1][0] == '-' ? "" : argv[1]);
      }
      args[i] = arg.substr(0, 2);
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, arg.substr(3));
      ++i;
    }
    std::vector<char*> parse_argv;
    for (std::string& arg : args) parse_argv.push_back(arg.data());
    try {
      app.parse(static_cast<int>(parse_argv.size()), parse_argv.data());
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);  // --help: usage on stdout, exit 0
      // The command as typed, its action too ("audit result"): its --help has the options.
      std::string command;
      for (const auto& [sub, runner] : runners) {
        if (!sub->parsed()) continue;
        command = sub->get_name();
        for (const CLI::App* action : sub->get_subcommands({})) {
          if (action->parsed()) command += " " + action->get_name();
        }
      }
      return usage_error(e.what(), command);
    }
    for (const auto& [sub, runner] : runners) {
      if (!sub->parsed()) continue;
      return runner();
    }
    return usage_error("no command given", "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replaygate: internal error: %s\n", e.what());
    return kExitUsage;
  }
}

}  // namespace replaygate::cli
