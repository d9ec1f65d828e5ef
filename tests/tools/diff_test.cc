// `replaygate diff`: golden outputs for the fixtures in tests/data/diff/ (unchanged, safer, more
// dangerous, renamed-only) in text, JSON and Markdown, and one test per exit code; the same
// fixtures compiled to frozen tables at test time (table vs table, policy vs table), and tables
// that do not load.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "runtime/table.h"
#include "tests/compiler/analysis_builder.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;

// Runs `replaygate diff ARGS` in `dir` (the source directory unless given), so paths in the
// output are relative; `stdin_from` is a shell command whose output is piped to the diff.
// The timeout turns a diff that waits forever (e.g. on a FIFO it opens twice) into exit 124.
CliResult diff_args(const std::vector<std::string>& args, const std::string& dir = kSourceDir,
                    const std::string& stdin_from = "") {
  const ScratchDir scratch("rg_diff_test");
  std::vector<std::string> all = {"diff"};
  all.insert(all.end(), args.begin(), args.end());
  CliRun run;
  run.args = std::move(all);
  run.cwd = dir;
  run.stdin_command = stdin_from;
  run.timeout_seconds = 60;
  return run_cli(scratch.path(), run);
}

// As diff_args, with the arguments given as one string of space-separated words.
CliResult diff(const std::string& args, const std::string& dir = kSourceDir,
               const std::string& stdin_from = "") {
  std::vector<std::string> words;
  std::istringstream in(args);
  for (std::string word; in >> word;) words.push_back(word);
  return diff_args(words, dir, stdin_from);
}

CliResult diff_fixture(const std::string& name, const std::string& format) {
  return diff("tests/data/diff/base.yaml tests/data/diff/" + name + ".yaml --format " + format);
}

TEST(DiffCommand, UnchangedExitsZero) {
  const CliResult r = diff_fixture("unchanged", "text");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "diff/unchanged.text.expected");
}

TEST(DiffCommand, SaferChangeExitsOne) {
  for (const char* format : {"text", "json", "markdown"}) {
    const CliResult r = diff_fixture("safer", format);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    expect_golden(r.out, std::string("diff/safer.") + format + ".expected");
  }
}

TEST(DiffCommand, MoreDangerousChangeExitsThree) {
  for (const char* format : {"text", "json", "markdown"}) {
    const CliResult r = diff_fixture("more_dangerous", format);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    expect_golden(r.out, std::string("diff/more_dangerous.") + format + ".expected");
  }
}

TEST(DiffCommand, RenamedRuleIsAProvenanceChangeOnly) {
  const CliResult r = diff_fixture("renamed", "text");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "diff/renamed.text.expected");
  const CliResult j = diff_fixture("renamed", "json");
  EXPECT_NE(j.out.find("\"verb_change_regions\": 0, \"provenance_change_regions\": 1"),
            std::string::npos)
      << j.out;
}

TEST(DiffCommand, FieldChangesAreReported) {
  const CliResult r = diff_fixture("fields", "text");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "diff/fields.text.expected");
}

// Removing `empty_means_absent` makes an empty string a value again: the empty idempotency key
// that was absent (hold) now replays. The empty string is a region of its own.
TEST(DiffCommand, EmptyMeansAbsentRemovedIsMoreDangerous) {
  for (const char* format : {"text", "json"}) {
    const CliResult r = diff(std::string("tests/data/diff/replay_gate.yaml "
                                         "tests/data/diff/no_empty_absent.yaml --format ") +
                             format);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    expect_golden(r.out, std::string("diff/no_empty_absent.") + format + ".expected");
  }
  // Put back, the empty key is absent again: safer.
  const CliResult back =
      diff("tests/data/diff/no_empty_absent.yaml tests/data/diff/replay_gate.yaml");
  EXPECT_EQ(back.exit_code, 1) << back.err;
  expect_golden(back.out, "diff/empty_absent_added.text.expected");
}

// A derived bool's comparison changed (le -> lt): where the revisions are equal the letter was
// stale before and dispatches now.
TEST(DiffCommand, DerivedComparisonChangeIsMoreDangerous) {
  for (const char* format : {"text", "json"}) {
    const CliResult r = diff(std::string("tests/data/diff/generation_recovery_le.yaml "
                                         "tests/data/diff/generation_recovery.yaml --format ") +
                             format);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    expect_golden(r.out, std::string("diff/derived_le_lt.") + format + ".expected");
  }
  // Swapped operands: stale now means the record is behind the message.
  const CliResult swapped = diff(
      "tests/data/diff/generation_recovery_swapped.yaml tests/data/diff/generation_recovery.yaml");
  EXPECT_EQ(swapped.exit_code, 3) << swapped.err;
  expect_golden(swapped.out, "diff/derived_swapped.text.expected");
  // lt -> le only makes more letters stale: safer, and the equal-revision region is reported.
  const CliResult safer =
      diff("tests/data/diff/generation_recovery.yaml tests/data/diff/generation_recovery_le.yaml");
  EXPECT_EQ(safer.exit_code, 1) << safer.err;
  expect_golden(safer.out, "diff/derived_lt_le.text.expected");
  // The same definition on both sides: no change at all.
  const CliResult same =
      diff("tests/data/diff/generation_recovery.yaml tests/data/diff/generation_recovery.yaml");
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("0 regions change verb, 0 regions"), std::string::npos) << same.out;
}

TEST(DiffCommand, ErrorsExitTwo) {
  CliResult r = diff("tests/data/diff/base.yaml tests/data/diff/missing.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read"), std::string::npos) << r.err;
  r = diff("tests/data/diff/base.yaml tests/data/diff/safer.yaml --format html");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format must be text, json or markdown"), std::string::npos) << r.err;
  r = diff("tests/data/diff/base.yaml tests/data/policies/bad/not_in_enum.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("both policies must compile"), std::string::npos) << r.err;
  r = diff("tests/data/diff/base.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
}

// ---- frozen tables ----

// A scratch directory holding the fixtures compiled to tables by the library (lower()), named
// NAME.rgt, plus copies of the fixture policies, so paths in the output are short and stable.
class DiffTables : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("rg_diff_tables_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    for (const char* name : {"base", "unchanged", "safer", "more_dangerous", "renamed", "fields",
                             "replay_gate", "no_empty_absent", "generation_recovery",
                             "generation_recovery_le", "generation_recovery_swapped"}) {
      const std::string yaml = kSourceDir + "/tests/data/diff/" + name + ".yaml";
      const replaygate::LoadedPolicy loaded = replaygate::load_policy_file(yaml);
      ASSERT_TRUE(loaded.policy) << yaml;
      const std::vector<uint8_t> bytes = replaygate::lower(*loaded.policy);
      std::ofstream(dir_ / (std::string(name) + ".rgt"), std::ios::binary)
          .write(reinterpret_cast<const char*>(bytes.data()),
                 static_cast<std::streamsize>(bytes.size()));
      fs::copy_file(yaml, dir_ / (std::string(name) + ".yaml"),
                    fs::copy_options::overwrite_existing);
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static CliResult run(const std::string& args, const std::string& stdin_from = "") {
    return diff(args, dir_.string(), stdin_from);
  }
  static void write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ / name, std::ios::binary) << bytes;
  }
  static std::string bytes(const std::string& name) { return read_file(dir_ / name); }

  static fs::path dir_;
};
fs::path DiffTables::dir_;

// The output without its header: the first line (paths), and the lines that name tables.
std::string body(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  bool first = true;
  while (std::getline(in, line)) {
    if (first || line.find("is a frozen table (checksum ") != std::string::npos) {
      first = false;
      continue;
    }
    out += line + "\n";
  }
  return out;
}

TEST_F(DiffTables, UnchangedTablesExitZero) {
  const CliResult r = run("base.rgt unchanged.rgt");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "diff/table_unchanged.text.expected");
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/unchanged.text.expected")));
}

TEST_F(DiffTables, SaferTableExitsOne) {
  for (const char* format : {"text", "json", "markdown"}) {
    const CliResult r = run(std::string("base.rgt safer.rgt --format ") + format);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    expect_golden(r.out, std::string("diff/table_safer.") + format + ".expected");
  }
  const CliResult r = run("base.rgt safer.rgt");
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/safer.text.expected")));
}

TEST_F(DiffTables, MoreDangerousTableExitsThree) {
  const CliResult r = run("base.rgt more_dangerous.rgt");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "diff/table_more_dangerous.text.expected");
  EXPECT_EQ(body(r.out),
            body(read_file(kSourceDir + "/tests/data/diff/more_dangerous.text.expected")));
  const CliResult j = run("base.rgt more_dangerous.rgt --format json");
  EXPECT_EQ(j.exit_code, 3) << j.err;
  EXPECT_NE(j.out.find("\"more_dangerous\": true"), std::string::npos) << j.out;
}

// The compiled tables keep empty_means_absent and derived definitions: the same findings.
TEST_F(DiffTables, EmptyMeansAbsentAndDerivedChangesInTables) {
  const CliResult r = run("replay_gate.rgt no_empty_absent.rgt");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "diff/table_no_empty_absent.text.expected");
  EXPECT_EQ(body(r.out),
            body(read_file(kSourceDir + "/tests/data/diff/no_empty_absent.text.expected")));
  const CliResult d = run("generation_recovery_le.rgt generation_recovery.rgt");
  EXPECT_EQ(d.exit_code, 3) << d.err;
  expect_golden(d.out, "diff/table_derived_le_lt.text.expected");
  EXPECT_EQ(body(d.out),
            body(read_file(kSourceDir + "/tests/data/diff/derived_le_lt.text.expected")));
  const CliResult s = run("generation_recovery_swapped.rgt generation_recovery.rgt");
  EXPECT_EQ(s.exit_code, 3) << s.err;
  EXPECT_EQ(body(s.out),
            body(read_file(kSourceDir + "/tests/data/diff/derived_swapped.text.expected")));
}

TEST_F(DiffTables, RenamedRuleInATableIsAProvenanceChangeOnly) {
  const CliResult r = run("base.rgt renamed.rgt");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "diff/table_renamed.text.expected");
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/renamed.text.expected")));
}

TEST_F(DiffTables, FieldChangesBetweenTablesAreReported) {
  const CliResult r = run("base.rgt fields.rgt");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "diff/table_fields.text.expected");
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/fields.text.expected")));
}

// The deployed table against a new policy, and a policy against a table.
TEST_F(DiffTables, PolicyAgainstTableBothWays) {
  CliResult r = run("base.rgt safer.yaml");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(r.out, "diff/table_policy_safer.text.expected");
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/safer.text.expected")));
  r = run("base.yaml more_dangerous.rgt --format markdown");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_golden(r.out, "diff/policy_table_more_dangerous.markdown.expected");
}

// A table is recognised by its magic whatever its name.
TEST_F(DiffTables, TableWithoutTheExtensionIsATable) {
  write("deployed.table", bytes("base.rgt"));
  const CliResult r = run("deployed.table base.yaml");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("old deployed.table is a frozen table (checksum "), std::string::npos)
      << r.out;
}

TEST_F(DiffTables, TablesThatDoNotLoadExitTwo) {
  std::string corrupt = bytes("base.rgt");
  corrupt[corrupt.size() / 2] ^= 0x40;  // payload no longer matches the checksum
  write("corrupt.rgt", corrupt);
  CliResult r = run("corrupt.rgt safer.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("replaygate: cannot load table corrupt.rgt: bad_checksum: ", 0), 0u)
      << r.err;

  write("short.rgt", bytes("base.rgt").substr(0, 100));
  r = run("base.rgt short.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("replaygate: cannot load table short.rgt: truncated", 0), 0u) << r.err;

  // A policy saved under a table's name is not parsed as a policy.
  write("policy.rgt", bytes("base.yaml"));
  r = run("policy.rgt base.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("replaygate: cannot load table policy.rgt: bad_magic", 0), 0u) << r.err;

  // A valid table that no checked policy lowers to (check() rejects `absent` on a required
  // field) is refused, not diffed wrongly.
  replaygate::testing::PolicyBuilder b;
  b.string_field("topic");
  b.guard("gone", {b.cond("topic", replaygate::ir::Op::kAbsent)}, "never", 10);
  const std::vector<uint8_t> odd = replaygate::lower(b.get());
  write("odd.rgt", std::string(odd.begin(), odd.end()));
  replaygate::LoadStatus status;
  const auto table = replaygate::Table::load_bytes(odd.data(), odd.size(), &status);
  ASSERT_NE(table, nullptr) << status.message;
  r = run("odd.rgt base.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err, "replaygate: error: odd.rgt: table of policy 'test' (checksum " +
                       table->checksum_hex() +
                       ") cannot be lifted exactly: guard 'gone' condition 1: absent on required "
                       "field 'topic'\n");

  r = run("base.rgt missing.rgt");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("replaygate: cannot load table missing.rgt: io", 0), 0u) << r.err;
}

// Markdown has no escapes inside code spans: a name with backticks gets a longer fence (and a
// space inside it when it starts or ends with one), so it cannot end its span early.
TEST_F(DiffTables, MarkdownKeepsNamesWithBackticksInTheirCodeSpans) {
  write("old `v1`.yaml", bytes("base.yaml"));
  write("``new``.rgt", bytes("safer.rgt"));
  const CliResult r =
      diff_args({"old `v1`.yaml", "``new``.rgt", "--format", "markdown"}, dir_.string());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')),
            "### Policy diff: ``old `v1`.yaml`` → ``` ``new``.rgt ```");
  expect_golden(r.out, "diff/backtick_names.markdown.expected");
}

// ---- inputs that can be read only once (FIFOs, pipes on /dev/stdin) ----

// Feeds `bytes` to a new FIFO at `path` from a thread: waits (up to 60 s) for a reader to open it,
// writes everything and closes it. A diff that opens the FIFO a second time then waits for a
// writer that never comes, until `timeout` ends it (exit 124).
class FifoWriter {
 public:
  FifoWriter(const fs::path& path, std::string bytes) {
    EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
    thread_ = std::thread([path, bytes = std::move(bytes)] {
      // A reader that closes early gives EPIPE here, not a SIGPIPE that ends the test.
      sigset_t pipe_signal;
      sigemptyset(&pipe_signal);
      sigaddset(&pipe_signal, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      int fd = -1;
      while ((fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        if (errno != ENXIO || std::chrono::steady_clock::now() > deadline) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      size_t done = 0;
      while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      ::close(fd);
    });
  }
  ~FifoWriter() { thread_.join(); }

 private:
  std::thread thread_;
};

TEST_F(DiffTables, TableFromAFifoIsReadOnce) {
  const fs::path fifo = dir_ / "deployed";  // no .rgt: recognised by its magic
  FifoWriter writer(fifo, bytes("base.rgt"));
  const CliResult r = run("deployed safer.yaml");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out.rfind("diff deployed -> safer.yaml: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nold deployed is a frozen table (checksum "), std::string::npos) << r.out;
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/safer.text.expected")));
}

TEST_F(DiffTables, PolicyFromAFifoIsReadOnce) {
  FifoWriter writer(dir_ / "old.yaml", bytes("base.yaml"));
  const CliResult r = run("old.yaml safer.rgt");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/safer.text.expected")));
}

TEST_F(DiffTables, TablePipedToDevStdin) {
  const CliResult r = run("/dev/stdin safer.rgt", "cat base.rgt");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("\nold /dev/stdin is a frozen table (checksum "), std::string::npos)
      << r.out;
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/safer.text.expected")));
}

TEST_F(DiffTables, DashIsStandardInput) {
  const CliResult r = run("- safer.rgt", "cat base.rgt");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("\nold - is a frozen table (checksum "), std::string::npos) << r.out;
  EXPECT_EQ(body(r.out), body(read_file(kSourceDir + "/tests/data/diff/safer.text.expected")));
}

// Inputs diff cannot use exit 2 with nothing on stdout and a message that says what the input is
// and what diff takes. A policy has no magic: its extension picks the language, so a policy
// under a name without one (here /dev/stdin) is a usage error that says how to fix it.
TEST_F(DiffTables, InputsItCannotUseSayWhatIsAccepted) {
  const std::string accepted =
      "diff takes a policy (a file named *.policy, *.yaml or *.yml) or a frozen table (*.rgt, or "
      "any file that starts with the table magic RGTABLE)";
  struct Case {
    std::string args, stdin_from, err;
  };
  const auto rg100_yaml = [](const std::string& name) {
    return name +
           ": error[RG100]: the policy file is empty\n      = hint: a policy is a mapping with the "
           "keys policy, revision, inputs, verbs, default and rules (see docs/policy-language.md)"
           "\nreplaygate: error: both policies must compile to be diffed\n";
  };
  const auto rg100_dsl = [](const std::string& name) {
    return name +
           ": error[RG100]: the policy file is empty\n      = hint: a .policy file starts with "
           "'policy NAME revision N', for example: policy dlq-replay-gate revision 1 (see "
           "docs/policy-language.md)\nreplaygate: error: both policies must compile to be "
           "diffed\n";
  };
  for (const char* name : {"empty.yaml", "empty.yml", "empty.policy"}) write(name, "");
  write("blank.yaml", "  \n\n");
  write("blank.policy", " \t\r\n\n");
  write("comments.yaml", "# nothing yet\n\n");
  write("comments.policy", "# nothing yet\n");
  const Case cases[] = {
      {"/dev/stdin safer.rgt", "cat base.yaml",
       "replaygate: error: cannot tell what /dev/stdin is: it is not a frozen table (it does not "
       "start with the table magic) and its name does not end in .policy, .yaml or .yml, which "
       "pick the policy language; save it to a file with one of those extensions (" +
           accepted + ")\n"},
      {"/dev/null base.yaml", "", "replaygate: error: /dev/null is empty: " + accepted + "\n"},
      // A policy file that is empty, white space or comments only is the compiler's RG100 (no
      // position), as from compile and lint; its extension picks the language's hint.
      {"empty.yaml base.yaml", "", rg100_yaml("empty.yaml")},
      {"base.yaml empty.yml", "", rg100_yaml("empty.yml")},
      {"empty.policy base.yaml", "", rg100_dsl("empty.policy")},
      {"blank.yaml base.yaml", "", rg100_yaml("blank.yaml")},
      {"base.yaml blank.policy", "", rg100_dsl("blank.policy")},
      {"comments.yaml base.yaml", "", rg100_yaml("comments.yaml")},
      {"comments.policy base.yaml", "", rg100_dsl("comments.policy")},
      {". base.yaml", "", "replaygate: cannot read '.': it is a directory\n"},
      // Standard input can be read once: both sides on it is a usage error, before any read.
      {"- -", "cat base.yaml",
       "replaygate: error: OLD and NEW are both standard input (- and -), which can be read only "
       "once; save one of them to a file\nRun 'replaygate diff --help' for usage.\n"},
      {"- /dev/stdin", "cat base.rgt",
       "replaygate: error: OLD and NEW are both standard input (- and /dev/stdin), which can be "
       "read only once; save one of them to a file\nRun 'replaygate diff --help' for usage.\n"},
      // Its other names, and any path to the same pipe (same device and inode as fd 0).
      {"/dev/fd/0 -", "cat base.yaml",
       "replaygate: error: OLD and NEW are both standard input (/dev/fd/0 and -), which can be "
       "read only once; save one of them to a file\nRun 'replaygate diff --help' for usage.\n"},
      {"/proc/self/fd/0 -", "cat base.yaml",
       "replaygate: error: OLD and NEW are both standard input (/proc/self/fd/0 and -), which can "
       "be read only once; save one of them to a file\nRun 'replaygate diff --help' for usage.\n"},
      {"/dev/stdin /proc/self/fd/./0", "cat base.yaml",
       "replaygate: error: OLD and NEW are both standard input (/dev/stdin and /proc/self/fd/./0), "
       "which can be read only once; save one of them to a file\nRun 'replaygate diff --help' "
       "for usage.\n"},
  };
  for (const Case& c : cases) {
    const CliResult r = run(c.args, c.stdin_from);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_EQ(r.err, c.err) << c.args;
  }
}

}  // namespace
