// The CLI never loses or corrupts what a user already wrote, and never lets a malformed option
// turn a safety gate off: fmt/convert writes, audit result arguments, coverage thresholds, and the
// example letters the analysis prints (they must reproduce when decided).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;

class CliSafetyTest : public CliFixture {};

const char* const kSmallPolicy =
    "policy star revision 1\n"
    "input topic: string\n"
    "input error_class: string\n"
    "verb hold effect none\n"
    "verb replay_once effect create\n"
    "default hold \"no rule\"\n";

TEST_F(CliSafetyTest, FmtWriteThroughASymlinkFormatsTheTargetAndKeepsItsMode) {
  const fs::path target = dir_ / "p.policy";
  std::string text = read_file(kSourceDir + "/policies/replay_gate.policy");
  const std::string canonical = text;
  text += "\n\n";  // not canonical: extra blank lines at the end
  write_file(target, text);
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  fs::create_symlink("p.policy", dir_ / "link.policy");
  const CliResult r = run({"fmt", "--write", (dir_ / "link.policy").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.policy"));
  EXPECT_EQ(read_file(target), canonical);
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(CliSafetyTest, FmtRefusesACanonicalFormThatWouldNotReadBack) {
  // 1,200 values one per line: fine as written, but the canonical form puts the list on one line
  // longer than the 16 KiB line limit (RG015).
  std::string text = std::string(kSmallPolicy) + "rule many: when topic in (\n";
  for (int i = 0; i < 1200; ++i) text += "  \"topic.number." + std::to_string(i) + "\",\n";
  text += "  \"last\") -> hold \"r\"\n";
  const fs::path path = dir_ / "many.policy";
  write_file(path, text);
  ASSERT_EQ(run({"lint", path.string()}).exit_code, 0);
  const CliResult r = run({"fmt", "--write", path.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("would not read back (RG015"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(path), text);  // untouched
  EXPECT_EQ(run({"lint", path.string()}).exit_code, 0);
}

TEST_F(CliSafetyTest, ConvertRefusesToOverwriteItsInput) {
  const fs::path path = dir_ / "gate.policy";
  const std::string text =
      "# a comment convert would drop\n" + read_file(kSourceDir + "/policies/replay_gate.policy");
  write_file(path, text);
  const CliResult r = run({"convert", path.string(), "-o", path.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: error: refusing to write " + path.string() +
                       ": it is the input file itself; choose another -o path (to reformat in "
                       "place, use 'replaygate fmt --write')\n");
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(read_file(path), text);
}

// ---- every -o/--output refuses its own input, a hard link to it, and any symbolic link ----

// The cases each command with an output file must refuse (exit 2, the exact message, nothing
// written anywhere): the input itself, a hard link to it, a symbolic link to it, a symbolic link
// to an unrelated file, a directory.
class OutputFileTest : public CliFixture {
 protected:
  // Runs `args_before_o` + {"-o", out}; expects exit 2, no stdout, exactly `message`.
  void expect_refused(std::vector<std::string> args, const fs::path& out, const std::string& why) {
    args.push_back("-o");
    args.push_back(out.string());
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << out;
    EXPECT_EQ(r.out, "") << out;
    EXPECT_EQ(r.err, "replaygate: error: refusing to write " + out.string() + ": " + why + "\n");
  }
  // All five cases for a command whose input is `input` (called `what` in the message). The
  // outputs end in .yaml, which every command accepts (convert picks its syntax by extension).
  void expect_all_refused(const std::vector<std::string>& args, const fs::path& input,
                          const std::string& what, const std::string& example) {
    const std::string before = read_file(input);
    const std::string itself = "it is " + what + " itself; choose another -o path" + example;
    const std::string not_regular =
        "it exists and is not a regular file (a directory, device or symbolic link)";
    expect_refused(args, input, itself);
    fs::create_hard_link(input, dir_ / "hard.yaml");
    expect_refused(args, dir_ / "hard.yaml", itself);
    fs::create_symlink(input.filename(), dir_ / "soft.yaml");
    expect_refused(args, dir_ / "soft.yaml", not_regular);
    write_file(dir_ / "other", "KEEP");
    fs::create_symlink("other", dir_ / "other.yaml");
    expect_refused(args, dir_ / "other.yaml", not_regular);
    fs::create_directory(dir_ / "adir.yaml");
    expect_refused(args, dir_ / "adir.yaml", not_regular);
    EXPECT_EQ(read_file(input), before);
    EXPECT_EQ(read_file(dir_ / "other"), "KEEP");
    EXPECT_TRUE(fs::is_symlink(dir_ / "soft.yaml"));
    EXPECT_TRUE(fs::is_symlink(dir_ / "other.yaml"));
    EXPECT_TRUE(fs::is_empty(dir_ / "adir.yaml"));
  }
  fs::path copy_of(const std::string& source, const std::string& name) {
    write_file(dir_ / name, read_file(kSourceDir + "/" + source));
    return dir_ / name;
  }
};

TEST_F(OutputFileTest, CompileRefuses) {
  const fs::path policy = copy_of("policies/replay_gate.yaml", "p.yaml");
  expect_all_refused({"compile", policy.string()}, policy, "the policy file", " (e.g. gate.rgt)");
}

TEST_F(OutputFileTest, ConvertRefuses) {
  const fs::path policy = copy_of("policies/replay_gate.policy", "p.policy");
  expect_all_refused({"convert", policy.string()}, policy, "the input file",
                     " (to reformat in place, use 'replaygate fmt --write')");
}

TEST_F(OutputFileTest, GraphPolicyRefuses) {
  const fs::path policy = copy_of("policies/replay_gate.yaml", "p.yaml");
  expect_all_refused({"graph", "--policy", policy.string()}, policy, "the policy file",
                     " (e.g. gate.dot)");
}

TEST_F(OutputFileTest, GraphTableRefuses) {
  const fs::path table = copy_of("tests/data/tables/replay_gate.rgt", "t.rgt");
  expect_all_refused({"graph", "--table", table.string()}, table, "the table file",
                     " (e.g. gate.dot)");
}

TEST_F(OutputFileTest, MatrixRefuses) {
  const fs::path policy = copy_of("policies/replay_gate.yaml", "p.yaml");
  expect_all_refused({"matrix", policy.string()}, policy, "the policy file", " (e.g. matrix.html)");
}

// A new path and an existing regular file that is not an input are still written.
TEST_F(OutputFileTest, OrdinaryOutputsAreStillWritten) {
  const fs::path policy = copy_of("policies/replay_gate.yaml", "p.yaml");
  const fs::path table = copy_of("tests/data/tables/replay_gate.rgt", "t.rgt");
  write_file(dir_ / "old.dot", "OLD");
  const std::vector<std::vector<std::string>> runs = {
      {"compile", policy.string(), "-o", (dir_ / "new.rgt").string()},
      {"convert", policy.string(), "-o", (dir_ / "new.policy").string()},
      {"graph", "--policy", policy.string(), "-o", (dir_ / "old.dot").string()},
      {"graph", "--table", table.string(), "-o", (dir_ / "t.dot").string()},
      {"matrix", policy.string(), "-o", (dir_ / "m.html").string()}};
  for (const auto& args : runs) {
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_TRUE(fs::is_regular_file(args.back()));
    EXPECT_GT(fs::file_size(args.back()), 100u) << args.back();
  }
  EXPECT_EQ(read_file(dir_ / "old.dot"), read_file(dir_ / "t.dot"));  // same DOT both ways
  EXPECT_EQ(read_file(dir_ / "old.dot").rfind("digraph", 0), 0u);
}

TEST_F(CliSafetyTest, ConvertRefusesALiteralStarKeyThatYamlWouldReadAsTheWildcard) {
  const fs::path path = dir_ / "star.policy";
  write_file(path, std::string(kSmallPolicy) +
                       "table t by (topic, error_class) {\n"
                       "  \"*\", timeout -> replay_once \"a topic literally named *\"\n"
                       "}\n");
  ASSERT_EQ(run({"lint", path.string()}).exit_code, 0);
  const CliResult r = run({"convert", path.string(), "-o", (dir_ / "star.yaml").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has the literal key \"*\""), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "star.yaml"));
}

TEST_F(CliSafetyTest, MinCoverageRejectsNanAndWords) {
  const std::string gate = kSourceDir + "/policies/replay_gate.yaml";
  for (const char* bad : {"nan", "NaN", "inf", "abc", "-1", "101", "0x10"}) {
    const CliResult r = run({"test", gate, "--min-coverage", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("expected a percentage between 0 and 100"), std::string::npos) << r.err;
  }
  EXPECT_EQ(run({"test", gate, "--min-coverage", "92.5"}).exit_code, 0);
}

TEST_F(CliSafetyTest, AuditResultRejectsArgumentsThatWouldBreakTheLog) {
  const std::string log = (dir_ / "audit.log").string();
  // --decision and --revision are counts: plain decimal digits, nothing else.
  // "" is refused while parsing, as for every option (tests/tools/empty_option_test.cc).
  for (const char* bad : {"0", "-1", "-0", "+1", " 1", "0x1", "1e0", "9223372036854775808"}) {
    const CliResult r = run({"audit", "result", "--log", log, "--decision", bad, "--revision", "1",
                             "--outcome", "done"});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(
        r.err,
        std::string(
            "replaygate: error: --decision takes a whole number from 1 to 9223372036854775807 "
            "(decimal), not '") +
            bad + "'\nRun 'replaygate audit result --help' for usage.\n");
  }
  for (const char* bad : {"-5", "-0", "+0", "0x0", " 0", "1.0"}) {
    const CliResult r = run({"audit", "result", "--log", log, "--decision", "1", "--revision", bad,
                             "--outcome", "done"});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(
        r.err,
        std::string(
            "replaygate: error: --revision takes a whole number from 0 to 9223372036854775807 "
            "(decimal), not '") +
            bad + "'\nRun 'replaygate audit result --help' for usage.\n");
  }
  const CliResult empty = run(
      {"audit", "result", "--log", log, "--decision", "1", "--revision", "1", "--outcome", " "});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--outcome: must say what happened (it is empty)"), std::string::npos)
      << empty.err;
  EXPECT_FALSE(fs::exists(log));
}

TEST_F(CliSafetyTest, CounterexampleForADerivedInputReproduces) {
  std::string text = read_file(kSourceDir + "/policies/generation_recovery.yaml");
  const std::string anchor = "invariants:\n";
  const size_t at = text.find(anchor);
  ASSERT_NE(at, std::string::npos);
  text.insert(at + anchor.size(),
              "  - invariant: stale_dispatches\n"
              "    when: {stale: true}\n"
              "    require: {verb_in: [dispatch]}\n"
              "    reason: false on purpose\n");
  const fs::path path = dir_ / "g.yaml";
  write_file(path, text);
  const CliResult lint = run({"lint", path.string()});
  EXPECT_EQ(lint.exit_code, 1);
  const size_t start = lint.err.find("{\"phase\"");
  ASSERT_NE(start, std::string::npos) << lint.err;
  const std::string letter = lint.err.substr(start, lint.err.find('}', start) - start + 1);
  // stale = message_revision < record_revision must really be true in the letter.
  EXPECT_NE(letter.find("\"message_revision\": 0, \"record_revision\": 1"), std::string::npos)
      << letter;
  // decide never reads the shipped policy's record-only inputs from a letter: it reproduces the
  // counterexample over the same rules with letters allowed to set them.
  const CliResult decided =
      run({"decide", "--policy", letter_state_recovery_policy(dir_), "-"}, letter + "\n");
  EXPECT_EQ(decided.exit_code, 0) << decided.err;
  EXPECT_NE(decided.out.find("\"rule\":\"stale_message\""), std::string::npos) << decided.out;
}

}  // namespace
