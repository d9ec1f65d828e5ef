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
  EXPECT_NE(r.err.find("is the input file"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(path), text);
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
  for (const char* bad : {"0", "-1", "-0", "+1", " 1", "0x1", "1e0", "", "9223372036854775808"}) {
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
  EXPECT_NE(empty.err.find("--outcome must say what happened"), std::string::npos) << empty.err;
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
  const CliResult decided =
      run({"decide", "--policy", kSourceDir + "/policies/generation_recovery.yaml", "-"},
          letter + "\n");
  EXPECT_EQ(decided.exit_code, 0) << decided.err;
  EXPECT_NE(decided.out.find("\"rule\":\"stale_message\""), std::string::npos) << decided.out;
}

}  // namespace
