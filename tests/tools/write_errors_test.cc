// End-to-end tests of failed writes: the message names the cause and the file, the exit code is 2,
// and a regular output file never ends in half a line.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const std::string kPolicy = kSourceDir + "/policies/replay_gate.yaml";
const std::string kLetters = kSourceDir + "/examples/letters.jsonl";

class WriteErrorsTest : public CliFixture {
 protected:
  // Runs `replaygate ARGS` under bash with `setup` first (e.g. "ulimit -f 1"), stdout to
  // `redirect` (e.g. "> FILE"); the exit code, and stderr in err_.
  int run_redirected(const std::string& setup, const std::vector<std::string>& args,
                     const std::string& redirect) {
    std::string command = setup + "; exec " + shell_quote(kCliBinary);
    for (const std::string& a : args) command += " " + shell_quote(a);
    command += " </dev/null " + redirect + " 2>" + shell_quote((dir_ / "err").string());
    const int code = run_shell("bash -c " + shell_quote(command));
    err_ = read_file(dir_ / "err");
    return code;
  }
  std::string full_output() {
    const CliResult r = run({"decide", "--policy", kPolicy, kLetters});
    EXPECT_EQ(r.exit_code, 1) << r.err;  // the shipped letters include invalid ones
    return r.out;
  }
  std::string err_;
};

// bash's `ulimit -f` counts 1024-byte blocks.
constexpr size_t kLimitBytes = 1024;

TEST_F(WriteErrorsTest, DecidePastTheFileSizeLimitCutsBackToTheLastCompleteLine) {
  const std::string full = full_output();
  ASSERT_GT(full.size(), kLimitBytes);
  const std::string out = (dir_ / "out").string();
  const int code = run_redirected("ulimit -f 1", {"decide", "--policy", kPolicy, kLetters},
                                  "> " + shell_quote(out));
  EXPECT_EQ(code, 2);  // not killed by SIGXFSZ (-1)
  const std::string kept = full.substr(0, full.rfind('\n', kLimitBytes - 1) + 1);
  EXPECT_EQ(read_file(out), kept);
  EXPECT_EQ(err_, "replaygate: cannot write decisions to standard output (" + out +
                      "): File too large\nreplaygate: the output holds the decisions for the "
                      "first " +
                      std::to_string(lines_of(kept).size()) + " records only\n");
  EXPECT_EQ(lines_of(kept).size(), 3u);
}

// Appending past the file size limit keeps what the file held and complete lines; a held file
// whose last line is unfinished gets its '\n' first, which the cut back never removes.
TEST_F(WriteErrorsTest, DecideAppendingKeepsWhatTheFileHeldAndCompleteLines) {
  const std::string full = full_output();
  const std::string out = (dir_ / "out").string();
  for (const std::string held : {"earlier run\n", "earlier run"}) {
    write_file(out, held);
    const int code = run_redirected("ulimit -f 1", {"decide", "--policy", kPolicy, kLetters},
                                    ">> " + shell_quote(out));
    EXPECT_EQ(code, 2);
    const size_t room = kLimitBytes - std::string("earlier run\n").size();
    const std::string kept = full.substr(0, full.rfind('\n', room - 1) + 1);
    EXPECT_EQ(read_file(out), "earlier run\n" + kept);
    const std::string note = held.ends_with('\n') ? ""
                                                  : "replaygate: note: standard output (" + out +
                                                        ") does not end with a newline; the "
                                                        "decisions start on a new line\n";
    EXPECT_EQ(err_, note + "replaygate: cannot write decisions to standard output (" + out +
                        "): File too large\nreplaygate: the output holds the decisions for the "
                        "first " +
                        std::to_string(lines_of(kept).size()) + " records only\n");
  }
}

// `>>` onto a file whose last line is unfinished: the decisions start on a line of their own, so
// the file stays JSON Lines, and stderr says so once.
TEST_F(WriteErrorsTest, DecideAppendingToAnUnfinishedLineStartsOnANewLine) {
  const CliResult full = run({"decide", "--policy", kPolicy, kLetters});
  const std::string out = (dir_ / "out").string();
  write_file(out, "earlier run");
  const int code =
      run_redirected("true", {"decide", "--policy", kPolicy, kLetters}, ">> " + shell_quote(out));
  EXPECT_EQ(code, 1);
  EXPECT_EQ(read_file(out), "earlier run\n" + full.out);
  EXPECT_EQ(err_, "replaygate: note: standard output (" + out +
                      ") does not end with a newline; the decisions start on a new line\n" +
                      full.err);
  // A file that ends with a newline, or an empty one, gets no extra line and no note.
  for (const std::string held : {"", "earlier run\n"}) {
    write_file(out, held);
    EXPECT_EQ(
        run_redirected("true", {"decide", "--policy", kPolicy, kLetters}, ">> " + shell_quote(out)),
        1);
    EXPECT_EQ(read_file(out), held + full.out);
    EXPECT_EQ(err_, full.err);
  }
  // No records, no decisions: nothing is written, not even the '\n', and no note.
  write_file(out, "earlier run");
  const std::string none = (dir_ / "none.jsonl").string();
  write_file(none, "");
  EXPECT_EQ(run_redirected("true", {"decide", "--policy", kPolicy, none}, ">> " + shell_quote(out)),
            0);
  EXPECT_EQ(read_file(out), "earlier run");
  EXPECT_EQ(err_.find("note:"), std::string::npos) << err_;
}

// Written over from its start (`1<>`), a file is never cut back below the size it had: the bytes
// that were there stay, and the message says part of a line is left.
TEST_F(WriteErrorsTest, DecideNeverCutsAFileBelowItsSizeAtStart) {
  const std::string full = full_output();
  const std::string out = (dir_ / "out").string();
  const std::string held = std::string(2 * kLimitBytes - 1, 'y') + "\n";
  write_file(out, held);
  const int code = run_redirected("ulimit -f 1", {"decide", "--policy", kPolicy, kLetters},
                                  "1<> " + shell_quote(out));
  EXPECT_EQ(code, 2);
  EXPECT_EQ(read_file(out), full.substr(0, kLimitBytes) + held.substr(kLimitBytes));
  const size_t lines = lines_of(full.substr(0, full.rfind('\n', kLimitBytes - 1) + 1)).size();
  EXPECT_EQ(err_, "replaygate: cannot write decisions to standard output (" + out +
                      "): File too large\nreplaygate: the output holds the decisions for the "
                      "first " +
                      std::to_string(lines) +
                      " records only, then part of the next line (it cannot be cut back: not a "
                      "regular file, or the cut would reach bytes that were there before)\n");
}

TEST_F(WriteErrorsTest, DecideToAFullDeviceNamesTheCause) {
  const int code = run_redirected("true", {"decide", "--policy", kPolicy, kLetters}, "> /dev/full");
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err_,
            "replaygate: cannot write decisions to standard output (/dev/full): No space left on "
            "device\nreplaygate: the output holds the decisions for the first 0 records only\n");
}

// --audit records a decision before printing it. A stdout that cannot be written is refused before
// anything is decided, so nothing is recorded that no one could see.
TEST_F(WriteErrorsTest, DecideWithAuditToAClosedOrReadOnlyStdoutRecordsNothing) {
  const std::string log = (dir_ / "audit.log").string();
  for (const std::string redirect : {">&-", "1</dev/null"}) {
    const int code = run_redirected(
        "true", {"decide", "--policy", kPolicy, "--audit", log, "--operator", "ana", kLetters},
        redirect);
    EXPECT_EQ(code, 2) << redirect;
    EXPECT_EQ(err_,
              "replaygate: cannot write decisions to standard output: Bad file descriptor; no "
              "record decided\n")
        << redirect;
    EXPECT_FALSE(std::filesystem::exists(log)) << redirect;
  }
}

// A write that fails after the audit append: the run says exactly which recorded decisions were
// not printed, by record and by audit entry.
TEST_F(WriteErrorsTest, DecideWithAuditSaysWhichRecordedDecisionsWereNotPrinted) {
  const std::string log = (dir_ / "audit.log").string();
  for (const char* entries : {"1 to 20", "21 to 40"}) {
    const int code = run_redirected(
        "true", {"decide", "--policy", kPolicy, "--audit", log, "--operator", "ana", kLetters},
        "> /dev/full");
    EXPECT_EQ(code, 2);
    EXPECT_EQ(err_,
              "replaygate: cannot write decisions to standard output (/dev/full): No space left on "
              "device\nreplaygate: the output holds the decisions for the first 0 records only\n"
              "replaygate: the decisions for records 1 to 20 are in the audit log " +
                  log + " (entries " + entries + ") but were NOT printed\n");
  }
  EXPECT_EQ(lines_of(read_file(log)).size(), 40u);
  // One record: one decision, one entry, in the singular.
  const std::string one = (dir_ / "one.jsonl").string();
  write_file(one, lines_of(read_file(kLetters)).at(0) + "\n");
  const int code = run_redirected(
      "true", {"decide", "--policy", kPolicy, "--audit", log, "--operator", "ana", one},
      "> /dev/full");
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err_,
            "replaygate: cannot write decisions to standard output (/dev/full): No space left on "
            "device\nreplaygate: the output holds the decisions for the first 0 records only\n"
            "replaygate: the decision for record 1 is in the audit log " +
                log + " (entry 41) but was NOT printed\n");
}

// The same when the write fails part way: long body hashes make the output lines longer than the
// audit entries, so the log fits under the file size limit and the output does not.
TEST_F(WriteErrorsTest, DecideWithAuditCutPartWayNamesTheRest) {
  std::string dump;
  for (int i = 1; i <= 20; ++i) {
    dump += R"({"message_id":"m-)" + std::to_string(i) + R"(","body_hash":")" +
            std::string(2000, 'a') +
            R"(","topic":"payment.capture","error_class":"timeout","attempts":1,)"
            R"("idempotency_key":"k)" +
            std::to_string(i) + R"(","already_committed":false})" + "\n";
  }
  const std::string letters = (dir_ / "long.jsonl").string();
  write_file(letters, dump);
  const CliResult full = run({"decide", "--policy", kPolicy, letters});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  constexpr size_t kLimit = 16 * 1024;  // ulimit -f 16
  const std::string kept = full.out.substr(0, full.out.rfind('\n', kLimit - 1) + 1);
  const size_t k = lines_of(kept).size();
  ASSERT_EQ(k, 6u);
  const std::string log = (dir_ / "audit.log").string();
  const std::string out = (dir_ / "out").string();
  const int code = run_redirected(
      "ulimit -f 16", {"decide", "--policy", kPolicy, "--audit", log, "--operator", "ana", letters},
      "> " + shell_quote(out));
  EXPECT_EQ(code, 2);
  EXPECT_EQ(read_file(out), kept);
  EXPECT_EQ(err_, "replaygate: cannot write decisions to standard output (" + out +
                      "): File too large\nreplaygate: the output holds the decisions for the "
                      "first 6 records only\nreplaygate: the decisions for records 7 to 20 are in "
                      "the audit log " +
                      log + " (entries 7 to 20) but were NOT printed\n");
  EXPECT_EQ(lines_of(read_file(log)).size(), 20u);
}

// Every command that prints a document says what it could not write, where, and why.
TEST_F(WriteErrorsTest, EveryPrintingCommandNamesTheCause) {
  const std::string gate = (dir_ / "gate.rgt").string();
  ASSERT_EQ(run({"compile", kPolicy, "-o", gate}).exit_code, 0);
  const std::string letter = (dir_ / "letter.json").string();
  write_file(letter, R"({"topic":"payment.capture","error_class":"timeout","attempts":1,)"
                     R"("idempotency_key":"k","already_committed":false})");
  const std::string log = (dir_ / "audit.log").string();
  write_file(log, "");
  const std::string recovery = kSourceDir + "/examples/recovery/prepared.";
  const std::string unformatted = (dir_ / "unformatted.policy").string();
  write_file(unformatted, read_file(kSourceDir + "/policies/replay_gate.policy") + "\n\n");
  struct Case {
    std::vector<std::string> args;
    std::string what;
  };
  const Case cases[] = {
      {{"dump", gate}, "the listing"},
      {{"explain", "--policy", kPolicy, letter}, "the explanation"},
      {{"graph", "--policy", kPolicy}, "the graph"},
      {{"matrix", kPolicy}, "the matrix"},
      {{"lint", kPolicy, "--format", "json"}, "the diagnostics"},
      {{"lint", kPolicy, "--format", "sarif"}, "the diagnostics"},
      {{"diff", kPolicy, gate}, "the diff"},
      {{"convert", kPolicy, "--to", "policy"}, "the converted policy"},
      {{"fmt", kSourceDir + "/policies/replay_gate.policy"}, "the formatted policy"},
      {{"audit", "verify", log}, "the report"},
      {{"test", kPolicy}, "the test report"},
      {{"test", kPolicy, "--format", "json"}, "the test report"},
      {{"fmt", "--check", unformatted}, "the list of files"},
      {{"review", "--policy", kSourceDir + "/policies/generation_recovery.yaml", "--message",
        recovery + "message.json", "--record", recovery + "record.json"},
       "the review record"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(run_redirected("true", c.args, "> /dev/full"), 2) << c.args[0];
    EXPECT_EQ(err_, "replaygate: cannot write " + c.what +
                        " to standard output (/dev/full): No space left on device\n")
        << c.args[0];
  }
}

// review --confirm records the decision before printing the review record: a stdout that cannot
// be written is refused first (nothing recorded), and a print that fails after the record says
// which audit entry holds the decision.
TEST_F(WriteErrorsTest, ReviewConfirmNeverRecordsSilentlyWhatItCannotPrint) {
  const std::string log = (dir_ / "review.log").string();
  const std::string examples = kSourceDir + "/examples/recovery/";
  const std::vector<std::string> args = {"review",
                                         "--policy",
                                         kSourceDir + "/policies/generation_recovery.yaml",
                                         "--message",
                                         examples + "accepted.message.json",
                                         "--record",
                                         examples + "accepted.record.json",
                                         "--confirm",
                                         "--operator",
                                         "ana",
                                         "--audit",
                                         log};
  for (const std::string redirect : {">&-", "1</dev/null"}) {
    EXPECT_EQ(run_redirected("true", args, redirect), 2) << redirect;
    EXPECT_EQ(err_,
              "replaygate: cannot write the review record to standard output: Bad file "
              "descriptor; nothing recorded\n")
        << redirect;
    EXPECT_FALSE(std::filesystem::exists(log)) << redirect;
  }
  EXPECT_EQ(run_redirected("true", args, "> /dev/full"), 2);
  EXPECT_EQ(err_,
            "replaygate: cannot write the review record to standard output (/dev/full): No space "
            "left on device\nreplaygate: the decision IS recorded, as audit entry 1 in " +
                log + ", but this review record was NOT printed\n");
  EXPECT_EQ(lines_of(read_file(log)).size(), 1u);
}

}  // namespace
