// Test helper: runs the replaygate binary end to end (arguments in; exit code, stdout and stderr
// out), with the file helpers the CLI tests share. Header-only; tests/tools and tests/properties.
#pragma once

// RG_TEST_ASAN: built with AddressSanitizer (GCC: __SANITIZE_ADDRESS__, clang: __has_feature).
// Memory-limit tests cannot run there: the sanitizer reserves terabytes of shadow memory at start,
// and its quarantine keeps freed blocks, so a peak RSS is not the program's.
#if defined(__SANITIZE_ADDRESS__)
#define RG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RG_TEST_ASAN 1
#endif
#endif

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/table.h"
#include "tests/support/paths.h"

namespace replaygate::testing {

inline const std::string kSourceDir = RG_SOURCE_DIR;  // the source tree (fixtures, goldens)
inline const std::string kCliBinary = RG_BINARY;      // the replaygate binary under test

// The whole file; "" when it cannot be read.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Creates or replaces `path` with exactly `text`.
inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// `arg` as one POSIX shell word: in single quotes, each ' written as '\''.
inline std::string shell_quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Runs `command` with /bin/sh; its exit code, or -1 when it did not exit normally (a signal).
inline int run_shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The lines of `text`, without their '\n'.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Compares `actual` with the golden file tests/data/GOLDEN; RG_UPDATE_GOLDEN=1 rewrites the golden
// instead (review the diff before committing it).
inline void expect_golden(const std::string& actual, const std::string& golden) {
  const std::filesystem::path path = kSourceDir + "/tests/data/" + golden;
  if (std::getenv("RG_UPDATE_GOLDEN") != nullptr) write_file(path, actual);
  EXPECT_EQ(actual, read_file(path)) << "golden " << golden << ", actual output:\n" << actual;
}

// policies/generation_recovery.yaml (`dsl`: .policy) without its `source: record` markers,
// written to DIR/letter_state.yaml (.policy); returns the path. The shipped policy takes the
// operation's state from the record only, so a letter alone always gets the default there; tests
// of what letters do (decide, explain, kafka mappings, lint counterexamples) use this copy. Only
// the markers differ: the operator-only marker and every rule stay.
inline std::string letter_state_recovery_policy(const std::filesystem::path& dir,
                                                bool dsl = false) {
  std::string text =
      read_file(kSourceDir + "/policies/generation_recovery." + (dsl ? "policy" : "yaml"));
  const std::string marker = dsl ? " source record" : "    source: record\n";
  for (size_t at; (at = text.find(marker)) != std::string::npos;) text.erase(at, marker.size());
  const std::filesystem::path path = dir / (dsl ? "letter_state.policy" : "letter_state.yaml");
  write_file(path, text);
  return path.string();
}

// What one run of the binary did.
struct CliResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;     // stdout
  std::string err;     // stderr
};

// How to run the binary: `replaygate ARGS`, each argument passed as is (shell-quoted).
struct CliRun {
  std::vector<std::string> args;
  std::string cwd;                        // working directory; empty: the test's own
  std::optional<std::string> stdin_text;  // stdin's bytes; nullopt: /dev/null
  std::string stdin_command;              // when set, a shell command piped into stdin instead
  int timeout_seconds = 0;                // > 0: under timeout(1), which exits 124 when it fires
  std::vector<std::string> env;           // NAME=VALUE pairs set for the binary only
};

// Runs the binary as `run` says; stdin, stdout and stderr go through files named stdin, stdout
// and stderr in `scratch` (an existing directory of the test's own).
inline CliResult run_cli(const std::filesystem::path& scratch, const CliRun& run) {
  std::string command;
  if (!run.cwd.empty()) command += "cd " + shell_quote(run.cwd) + " && ";
  if (!run.stdin_command.empty()) command += run.stdin_command + " | ";
  if (!run.env.empty()) {
    command += "env";
    for (const std::string& e : run.env) command += " " + shell_quote(e);
    command += " ";
  }
  if (run.timeout_seconds > 0) command += "timeout " + std::to_string(run.timeout_seconds) + " ";
  command += shell_quote(kCliBinary);
  for (const std::string& a : run.args) command += " " + shell_quote(a);
  if (run.stdin_command.empty()) {
    std::string input = "/dev/null";
    if (run.stdin_text) {
      input = (scratch / "stdin").string();
      write_file(input, *run.stdin_text);
    }
    command += " <" + shell_quote(input);
  }
  command += " >" + shell_quote((scratch / "stdout").string()) + " 2>" +
             shell_quote((scratch / "stderr").string());
  CliResult r;
  r.exit_code = run_shell(command);
  r.out = read_file(scratch / "stdout");
  r.err = read_file(scratch / "stderr");
  return r;
}

// run_cli() with only arguments: stdin from /dev/null, in the test's working directory.
inline CliResult run_cli_args(const std::filesystem::path& scratch, std::vector<std::string> args) {
  CliRun run;
  run.args = std::move(args);
  return run_cli(scratch, run);
}

// A new directory /tmp/PREFIX.XXXXXX, removed with everything in it when the object goes.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) {
    std::string pattern = "/tmp/" + prefix + ".XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "cannot create " << pattern;
      return;
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Fixture for end-to-end tests: a fresh scratch directory per test (dir_) and run(), which runs
// the binary with `stdin_text` on stdin in cwd_ (the test's own directory unless a fixture sets
// it, e.g. to kSourceDir so paths in the output are relative).
class CliFixture : public ::testing::Test {
 protected:
  explicit CliFixture(std::string cwd = "") : scratch_("rg_cli_test"), cwd_(std::move(cwd)) {
    dir_ = scratch_.path();
  }

  CliResult run(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    CliRun how;
    how.args = args;
    how.cwd = cwd_;
    how.stdin_text = stdin_text;
    return run_cli(dir_, how);
  }

  // The shipped policy (policies/replay_gate.yaml) compiled by the CLI into this test's folder
  // (gate.rgt) and loaded; null, with the failure recorded, when either step fails.
  std::unique_ptr<Table> shipped_table() {
    const std::string out = (dir_ / "gate.rgt").string();
    const CliResult compiled =
        run({"compile", kSourceDir + "/policies/replay_gate.yaml", "-o", out});
    EXPECT_EQ(compiled.exit_code, 0) << compiled.err;
    LoadStatus status;
    std::unique_ptr<Table> table = Table::load_file(out, &status);
    EXPECT_TRUE(table) << status.message;
    return table;
  }

 private:
  ScratchDir scratch_;

 protected:
  std::string cwd_;
  std::filesystem::path dir_;
};

}  // namespace replaygate::testing
