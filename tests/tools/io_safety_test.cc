// A break-it run on files: an --audit/--log that is not an audit log (a note, a dead-letter dump)
// is refused and kept, not "repaired" away; a refused append changes nothing; decide's output or
// audit log that is one of its inputs is refused before anything is read; `-o=FILE` means
// `-o FILE`; an empty -o and an empty --outcome are named once.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;
namespace audit = replaygate::audit;

const std::string kGate = kSourceDir + "/policies/replay_gate.yaml";
const std::string kLetters = kSourceDir + "/examples/letters.jsonl";
const std::string kLetter =
    R"({"topic":"payment.capture","error_class":"timeout","attempts":1,"already_committed":false,)"
    R"("idempotency_key":"k1"})";

class IoSafetyTest : public CliFixture {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string table() {
    const std::string out = path("gate.rgt");
    if (!fs::exists(out)) {
      EXPECT_EQ(run({"compile", kGate, "-o", out}).exit_code, 0);
    }
    return out;
  }
  // Runs `replaygate ARGS` through the shell with `redirect` after it (e.g. ">> FILE"); stderr
  // is returned in *err.
  int run_redirected(const std::vector<std::string>& args, const std::string& redirect,
                     std::string* err) {
    std::string command = "timeout 20 " + shell_quote(kCliBinary);
    for (const std::string& a : args) command += " " + shell_quote(a);
    command += " </dev/null " + redirect + " 2>" + shell_quote(path("stderr.txt"));
    const int code = run_shell(command);
    *err = read_file(path("stderr.txt"));
    return code;
  }
};

nlohmann::json decision_entry() {
  nlohmann::json entry = nlohmann::json::parse(
      R"({"action":"observe","effect":"read","kind":"decision","message_id":"m",)"
      R"("operation_id":"op","operator":"ana","policy":"p","policy_revision":1,)"
      R"("record_revision":1,"rule":"r","table_checksum":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",)"
      R"("time":"2026-11-29T00:00:00Z"})");
  return entry;
}

// ---- 1. a file that is not an audit log is never cut ----

TEST_F(IoSafetyTest, AuditResultRefusesANoteWithoutANewlineAndKeepsIt) {
  const std::string notes = path("notes.txt");
  write_file(notes, "my notes, no newline at end");
  const CliResult r = run(
      {"audit", "result", "--log", notes, "--decision", "1", "--revision", "1", "--outcome", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: the last line of " + notes +
                       " (line 1, without a newline) is neither an audit entry nor the start of "
                       "one (it begins 'my notes, no newline at end'): " +
                       notes +
                       " is not an audit log, or not one this version wrote; nothing was changed. "
                       "Check the path; if it is the log, run 'replaygate audit verify " +
                       notes + "'\nreplaygate: the result was NOT recorded\n");
  EXPECT_EQ(read_file(notes), "my notes, no newline at end");
}

TEST_F(IoSafetyTest, AHugeSingleLineIsKeptWhole) {
  const std::string big = path("big.txt");
  const std::string text = "x" + std::string(200013, 'y');
  write_file(big, text);
  const CliResult r = run(
      {"audit", "result", "--log", big, "--decision", "1", "--revision", "1", "--outcome", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("(it begins 'x" + std::string(39, 'y') + "'...)"), std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(big), text);
}

TEST_F(IoSafetyTest, DecideAuditRefusesTheDumpItDecides) {
  const std::string dump = path("dump.jsonl");
  write_file(dump, kLetter);
  const CliResult r =
      run({"decide", "--table", table(), "--audit", dump, "--operator", "ana", dump});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate decide: error: --audit " + dump + " is the input file " + dump +
                       " itself; the audit log is a file of its own (e.g. audit.log)\n"
                       "Run 'replaygate decide --help' for usage.\n");
  EXPECT_EQ(read_file(dump), kLetter);
  // A hard link is the same file.
  fs::create_hard_link(dump, path("link.jsonl"));
  EXPECT_EQ(
      run({"decide", "--table", table(), "--audit", path("link.jsonl"), "--operator", "ana", dump})
          .exit_code,
      2);
  EXPECT_EQ(read_file(dump), kLetter);
}

TEST_F(IoSafetyTest, DecideAuditRefusesADumpAsTheLog) {
  // Another dump (one letter, no newline) named as the log: not an audit log, kept.
  const std::string other = path("other.jsonl");
  write_file(other, kLetter);
  write_file(path("in.jsonl"), kLetter + "\n");
  const CliResult r =
      run({"decide", "--table", table(), "--audit", other, "--operator", "ana", path("in.jsonl")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  // The letter is a whole JSON object: never cut as a torn tail (and, without its newline, a
  // problem of its own), and no entry, so the file is not an audit log.
  EXPECT_EQ(r.err, "replaygate: " + other +
                       " is not an audit log, or not one this version wrote: no line of it is a "
                       "valid entry (line 1: no 'seq' (and 1 more problem: run 'replaygate audit "
                       "verify " +
                       other +
                       "' to see them all)); nothing was changed. Check the path\n"
                       "replaygate: the decisions not printed above were NOT recorded and are "
                       "not taken; do not act on them\n");
  EXPECT_EQ(read_file(other), kLetter);
}

TEST_F(IoSafetyTest, VerifySaysTheLogIsRefusedInsteadOfCallingItTorn) {
  const audit::VerifyReport report = audit::verify_bytes("my notes");
  EXPECT_FALSE(report.torn_tail);
  EXPECT_EQ(report.problems,
            std::vector<std::string>{"line 1: without a newline, and neither an entry nor the "
                                     "start of one (it begins 'my notes'): not a torn line an "
                                     "append left"});
  EXPECT_EQ(report.append_refusal,
            "line 1 (the last line, without its newline) is neither an audit entry nor the start "
            "of one: this is not an audit log, or not one this version wrote; check the path, or "
            "restore the log from a copy");
}

TEST_F(IoSafetyTest, ARealTornEntryIsStillRemoved) {
  const std::string log = path("audit.log");
  ASSERT_TRUE(audit::append(log, decision_entry()).ok);
  const std::string good = read_file(log);
  // A crash mid-append of the second entry, and one cut inside the JSON prefix.
  for (const char* torn : {R"({"action":"obs)", "{\"ac"}) {
    write_file(log, good + torn);
    EXPECT_TRUE(audit::verify_bytes(good + torn).torn_tail);
    const audit::AppendResult appended = audit::append(log, decision_entry());
    ASSERT_TRUE(appended.ok) << appended.error;
    EXPECT_EQ(appended.removed_torn_tail, torn);
    EXPECT_EQ(appended.seq, 2u);
    EXPECT_TRUE(audit::verify_bytes(read_file(log)).ok());
  }
  // The first append into a new log crashed: the file holds only the torn start.
  write_file(log, R"({"decision":1,"ki)");
  const audit::AppendResult first = audit::append(log, decision_entry());
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.seq, 1u);
  EXPECT_EQ(first.removed_torn_tail, R"({"decision":1,"ki)");
}

TEST_F(IoSafetyTest, ARefusedResultLeavesATornTailInPlace) {
  const std::string log = path("audit.log");
  ASSERT_TRUE(audit::append(log, decision_entry()).ok);
  const std::string torn = read_file(log) + R"({"action":"obs)";
  write_file(log, torn);
  // No decision 5: refused, and the torn tail is not removed either.
  const CliResult r = run(
      {"audit", "result", "--log", log, "--decision", "5", "--revision", "1", "--outcome", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: the audit log " + log +
                       " has no decision entry 5\nreplaygate: the result was NOT recorded\n");
  EXPECT_EQ(read_file(log), torn);
}

TEST_F(IoSafetyTest, ReviewAuditRefusesItsOwnRecordFile) {
  const std::string examples = kSourceDir + "/examples/recovery/";
  const std::string record = path("record.json");
  const std::string text = read_file(examples + "prepared.record.json");
  write_file(record, text);
  const CliResult r = run({"review", "--policy", kSourceDir + "/policies/generation_recovery.yaml",
                           "--message", examples + "prepared.message.json", "--record", record,
                           "--confirm", "--operator", "ana", "--audit", record});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate: error: --audit " + record + " is the operation record file " +
                       record +
                       " itself; the audit log is a file of its own (e.g. audit.log)\n"
                       "Run 'replaygate review --help' for usage.\n");
  EXPECT_EQ(read_file(record), text);
}

// ---- 2. standard output that is an input ----

TEST_F(IoSafetyTest, DecideRefusesToAppendToItsOwnInput) {
  const std::string dump = path("d.jsonl");
  const std::string letters = read_file(kLetters);
  write_file(dump, letters);
  std::string err;
  for (const std::string_view format : {"letters", "kafka"}) {
    std::vector<std::string> args = {"decide", "--table", table(), dump};
    if (format == "kafka") {
      args.insert(args.end(), {"--format", "kafka", "--mapping",
                               kSourceDir + "/examples/kafka-spring-dlt.mapping.yaml"});
    }
    EXPECT_EQ(run_redirected(args, ">> " + shell_quote(dump), &err), 2) << format;
    EXPECT_EQ(err, "replaygate: error: standard output is the input file " + dump +
                       " itself (input file is output file: decide would read its own decisions "
                       "back); redirect standard output to another file; no record decided\n");
    EXPECT_EQ(read_file(dump), letters);
  }
  // Standard input and output one file.
  EXPECT_EQ(run_shell(shell_quote(kCliBinary) + " decide --table " + shell_quote(table()) + " <" +
                      shell_quote(dump) + " >>" + shell_quote(dump) + " 2>/dev/null"),
            2);
  EXPECT_EQ(read_file(dump), letters);
}

TEST_F(IoSafetyTest, ConvertAndFmtRefuseToAppendToTheirInput) {
  const std::string policy = path("gate.policy");
  ASSERT_EQ(run({"convert", kGate, "-o", policy}).exit_code, 0);
  const std::string text = read_file(policy);
  std::string err;
  EXPECT_EQ(run_redirected({"convert", policy}, ">> " + shell_quote(policy), &err), 2);
  EXPECT_EQ(err, "replaygate: error: standard output is the input file " + policy +
                     " itself (input file is output file); redirect standard output to another "
                     "file, or give -o FILE\n");
  EXPECT_EQ(run_redirected({"fmt", policy}, ">> " + shell_quote(policy), &err), 2);
  EXPECT_EQ(err, "replaygate: error: standard output is the input file " + policy +
                     " itself (input file is output file); redirect standard output to another "
                     "file, or use --write to reformat in place\n");
  EXPECT_EQ(read_file(policy), text);
}

// ---- 3. -o=FILE ----

TEST_F(IoSafetyTest, ShortOptionWithEqualsMeansTheValue) {
  const std::string out = path("gate.rgt");
  CliResult r = run({"compile", kGate, "-o=" + out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out));
  EXPECT_FALSE(fs::exists(path("=gate.rgt")));
  r = run({"convert", kGate, "-o=" + path("out.policy")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(path("out.policy")));
  r = run({"compile", kGate, "-o="});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: -o has nothing after '=': give -o VALUE\n"
            "Run 'replaygate compile --help' for usage.\n");
}

// ---- 4, 5. empty values named once ----

TEST_F(IoSafetyTest, AnEmptyOutputIsRefusedUpFront) {
  for (const std::string_view name : {"compile", "convert"}) {
    const std::string command(name);
    const CliResult r = run({command, kGate, "-o", ""});
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.err,
              "replaygate: error: -o/--output is empty: name the file to write\nRun "
              "'replaygate " +
                  command + " --help' for usage.\n");
  }
}

TEST_F(IoSafetyTest, AnEmptyOutcomeNamesTheOptionOnce) {
  const CliResult r = run({"audit", "result", "--log", path("a.log"), "--decision", "1",
                           "--revision", "1", "--outcome", ""});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: --outcome: must say what happened (it is empty)\n"
            "Run 'replaygate audit result --help' for usage.\n");
}

// `cat /dev/zero | replaygate dump /dev/stdin` buffered 1 GiB before it said "bad magic"; the
// header is checked first, so it is refused at once (and cat ends on the closed pipe).
TEST_F(IoSafetyTest, DumpOfAnEndlessPipeThatIsNoTableIsRefusedAtOnce) {
  CliRun how;
  how.args = {"dump", "/dev/stdin"};
  how.stdin_command = "cat /dev/zero";
  how.timeout_seconds = 20;
  const CliResult r = run_cli(dir_, how);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate: cannot load table /dev/stdin: bad_magic: bad magic: not a replaygate "
            "table\n");
  // A table with endless bytes after it: read to its size, and one byte past.
  how.stdin_command = "cat " + shell_quote(table()) + " /dev/zero";
  const CliResult tail = run_cli(dir_, how);
  EXPECT_EQ(tail.exit_code, 2);
  EXPECT_EQ(tail.err.rfind("replaygate: cannot load table /dev/stdin: malformed: trailing bytes: "
                           "header says ",
                           0),
            0u)
      << tail.err;
  EXPECT_NE(tail.err.find(" bytes, and /dev/stdin goes on past them\n"), std::string::npos)
      << tail.err;
}

// `-o -` wrote a file named "-". It is standard output now: compile writes the table's bytes there
// (the same bytes as -o FILE), convert, graph and matrix print what they print without -o.
TEST_F(IoSafetyTest, DashOutputIsStandardOutput) {
  const std::string file_table = table();
  CliRun how;
  how.cwd = dir_.string();
  how.args = {"compile", kGate, "-o", "-"};
  CliResult r = run_cli(dir_, how);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, read_file(file_table));
  EXPECT_EQ(r.err.rfind(kGate + ": wrote standard output (" + std::to_string(r.out.size()) +
                            " bytes, policy dlq-replay-gate revision 1, checksum ",
                        0),
            0u)
      << r.err;
  for (const std::vector<std::string>& args : {std::vector<std::string>{"convert", kGate},
                                               {"graph", "--policy", kGate},
                                               {"matrix", kGate}}) {
    how.args = args;
    const CliResult plain = run_cli(dir_, how);
    how.args.insert(how.args.end(), {"-o", "-"});
    const CliResult dash = run_cli(dir_, how);
    EXPECT_EQ(plain.exit_code, 0) << args[0] << plain.err;
    EXPECT_EQ(dash.exit_code, 0) << args[0] << dash.err;
    EXPECT_FALSE(plain.out.empty()) << args[0];
    EXPECT_EQ(dash.out, plain.out) << args[0];
  }
  EXPECT_FALSE(fs::exists(dir_ / "-"));
}

// compile -o - refuses a terminal (binary bytes would garble and could drive it), JSON
// diagnostics on the same stream, and a standard output that is the policy itself.
TEST_F(IoSafetyTest, CompileToStandardOutputRefusesATerminalAndMixedStreams) {
  const std::string prefix =
      "replaygate: error: -o - writes the table's bytes to standard output, but ";
  const std::string out = path("tty.txt");
  const int code =
      run_shell("script -qec " +
                shell_quote(shell_quote(kCliBinary) + " compile " + shell_quote(kGate) + " -o -") +
                " /dev/null >" + shell_quote(out) + " 2>&1 </dev/null");
  if (code == 127 || read_file(out).find("script:") != std::string::npos) {
    GTEST_SKIP() << "no script(1) pseudo-terminal: " << read_file(out);
  }
  EXPECT_EQ(code, 2);
  EXPECT_NE(read_file(out).find(prefix +
                                "standard output is a terminal; redirect it (-o - > gate.rgt, or "
                                "a pipe) or name the table file"),
            std::string::npos)
      << read_file(out);
  const CliResult json = run({"compile", kGate, "-o", "-", "--format", "json"});
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_EQ(json.out, "");
  EXPECT_EQ(json.err, prefix +
                          "--format json prints the diagnostics on standard output too; use "
                          "--format text, or name the table file\n");
  const std::string policy = path("p.yaml");
  write_file(policy, read_file(kGate));
  std::string err;
  EXPECT_EQ(run_redirected({"compile", policy, "-o", "-"}, ">> " + shell_quote(policy), &err), 2);
  EXPECT_EQ(err, prefix + "standard output is the policy file " + policy +
                     " itself; redirect it elsewhere\n");
  EXPECT_EQ(read_file(policy), read_file(kGate));
}

// fmt --write replaces the file atomically (a reader never sees half of it), which gives the
// name a new inode: a hard link keeps the old text. Kept, and said on stderr.
TEST_F(IoSafetyTest, FmtWriteWarnsThatOtherHardLinksKeepTheOldText) {
  const std::string canonical = read_file(kSourceDir + "/policies/replay_gate.policy");
  const std::string messy = canonical + "\n\n\n";
  const std::string a = path("a.policy"), b = path("b.policy");
  write_file(a, messy);
  fs::create_hard_link(a, b);
  CliResult r = run({"fmt", "--write", a});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "formatted " + a + "\nreplaygate: warning: " + a +
                       " had 2 hard links; --write replaced it with a new file (atomic rename), "
                       "so the other name still holds the old text (format each name, or keep "
                       "one name and symbolic links)\n");
  EXPECT_EQ(read_file(a), canonical);
  EXPECT_EQ(read_file(b), messy);
  // One name: no warning.
  write_file(b, messy);
  fs::remove(a);
  r = run({"fmt", "--write", b});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "formatted " + b + "\n");
}

}  // namespace
