// End-to-end tests of the `replaygate` binary: exact stdout lines, stderr and exit codes.
//
// Golden files: tests/data/letters/*.expected.jsonl and tests/data/mapping/*.expected.jsonl hold
// the exact decide output with the table checksum replaced by @TABLE@. To regenerate them on
// purpose, run with RG_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "runtime/table.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;

const std::string kPolicy = kSourceDir + "/policies/replay_gate.yaml";

class CliTest : public CliFixture {
 protected:
  // Compiles the shipped policy into dir_/gate.rgt and returns its checksum.
  std::string compile_gate() {
    const CliResult r = run({"compile", kPolicy, "-o", table_path()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    replaygate::LoadStatus status;
    auto table = replaygate::Table::load_file(table_path(), &status);
    EXPECT_NE(table, nullptr) << status.message;
    return table ? table->checksum_hex() : "";
  }
  std::string table_path() const { return (dir_ / "gate.rgt").string(); }

  // Compares decide output with a golden file (checksum replaced by @TABLE@).
  void expect_golden(const std::string& actual, const std::string& checksum,
                     const std::string& golden) {
    std::string normalised = actual;
    for (size_t at; !checksum.empty() && (at = normalised.find(checksum)) != std::string::npos;) {
      normalised.replace(at, checksum.size(), "@TABLE@");
    }
    replaygate::testing::expect_golden(normalised, golden);
  }
};

// ---- usage errors: exit 2 with a message saying what to fix ----

TEST_F(CliTest, NoCommandIsAUsageError) {
  const CliResult r = run({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Run 'replaygate --help' for usage."), std::string::npos) << r.err;
}

TEST_F(CliTest, UnknownCommandSuggestsTheClosest) {
  const CliResult r = run({"decid"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: unknown command 'decid'; did you mean 'decide'?\n"
            "Run 'replaygate --help' for usage.\n");
}

TEST_F(CliTest, HelpExitsZero) {
  const CliResult r = run({"decide", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--max-replays"), std::string::npos) << r.out;
}

// `--opt=` with nothing after '=' is a usage error: CLI11 alone would take the next argument as
// the value (`--max-replays= 0 FILE` ran with 0; `audit result --decision= 2` appended an entry).
TEST_F(CliTest, AnEmptyValueAfterEqualsIsAUsageError) {
  const std::string log = (dir_ / "a.log").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"decide", "--policy", kPolicy, "--max-replays=", "0", "-"},
        std::vector<std::string>{"audit", "result", "--log", log, "--decision=", "2", "--revision",
                                 "1", "--outcome", "succeeded"}}) {
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    const std::string name = args[0] == "decide" ? "--max-replays" : "--decision";
    EXPECT_EQ(r.err, "replaygate: error: " + name + " has nothing after '=': give " + name +
                         "=VALUE\nRun 'replaygate " + args[0] + " --help' for usage.\n");
  }
  EXPECT_FALSE(std::filesystem::exists(log));
  // After `--`, such a word is an operand, not an option.
  EXPECT_NE(run({"decide", "--policy", kPolicy, "--", "--x="}).err.find("--x="), std::string::npos);
}

TEST_F(CliTest, DecideNeedsExactlyOneOfPolicyAndTable) {
  const std::string message =
      "replaygate decide: error: give exactly one of --policy POLICY.yaml or --table TABLE.rgt\n"
      "Run 'replaygate decide --help' for usage.\n";
  CliResult r = run({"decide", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, message);
  r = run({"decide", "--policy", kPolicy, "--table", "x.rgt", "-"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, message);
}

TEST_F(CliTest, DecideFormatAndMappingMistakes) {
  CliResult r = run({"decide", "--policy", kPolicy, "--format", "avro"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate decide: error: --format must be letters, spring-kafka, kafka, "
            "kafka-connect, rabbitmq, "
            "sqs, pubsub, servicebus, sidekiq or bullmq, not 'avro'\n"
            "Run 'replaygate decide --help' for usage.\n");
  r = run({"decide", "--policy", kPolicy, "--format", "kafka"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format kafka needs --mapping MAPPING.yaml"), std::string::npos) << r.err;
  r = run({"decide", "--policy", kPolicy, "--mapping", "m.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find(
          "--mapping applies only to a format that reads broker records "
          "(--input-format spring-kafka, kafka, kafka-connect, rabbitmq, sqs, pubsub, servicebus, "
          "sidekiq, bullmq), not to letters"),
      std::string::npos)
      << r.err;
  r = run({"decide", "--policy", kPolicy, "--max-replays", "-1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
}

TEST_F(CliTest, DecideMissingInputFileIsAnIoError) {
  const CliResult r = run({"decide", "--policy", kPolicy, (dir_ / "nope.jsonl").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: cannot open " + (dir_ / "nope.jsonl").string() +
                       ": No such file or directory\n");
  EXPECT_TRUE(r.out.empty());
}

// ---- compile ----

TEST_F(CliTest, CompileWritesALoadableTableAndNoTemporaryFile) {
  compile_gate();
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"gate.rgt", "stderr", "stdin", "stdout"}));
}

TEST_F(CliTest, CompileOnErrorsWritesNothingAndKeepsTheOldTable) {
  std::string policy = read_file(kPolicy);
  const size_t at = policy.find("verb: never");
  ASSERT_NE(at, std::string::npos);
  policy.replace(at, 11, "verb: nevr");
  write_file(dir_ / "bad.yaml", policy);
  const std::string out = (dir_ / "bad.rgt").string();
  CliResult r = run({"compile", (dir_ / "bad.yaml").string(), "-o", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_NE(r.err.find("nevr"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("errors found; " + out + " not written"), std::string::npos) << r.err;

  write_file(out, "OLD TABLE");
  r = run({"compile", (dir_ / "bad.yaml").string(), "-o", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(read_file(out), "OLD TABLE");
}

TEST_F(CliTest, CompileJsonDiagnosticsGoToStdout) {
  std::string policy = read_file(kPolicy);
  policy.replace(policy.find("verb: never"), 11, "verb: nevr");
  write_file(dir_ / "bad.yaml", policy);
  const CliResult r =
      run({"compile", (dir_ / "bad.yaml").string(), "-o", table_path(), "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out[0], '[');
  EXPECT_NE(r.out.find("nevr"), std::string::npos) << r.out;
}

TEST_F(CliTest, CompileTimingsListEveryStageAndChangeNoByte) {
  compile_gate();
  const std::string plain = read_file(table_path());
  const std::string timed = (dir_ / "timed.rgt").string();
  const CliResult r = run({"compile", "--timings", kPolicy, "-o", timed});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(timed), plain);
  std::vector<std::string> stages;
  for (const std::string& line : lines_of(r.err)) {
    if (line.rfind("timing: ", 0) != 0) continue;
    EXPECT_NE(line.find(" s wall "), std::string::npos) << line;
    EXPECT_NE(line.find(" s cpu"), std::string::npos) << line;
    // "timing: <stage>  <wall> s wall  <cpu> s cpu": the stage is the text before the numbers.
    const std::string rest = line.substr(8);
    const size_t digits = rest.find_first_of("0123456789");
    std::string stage = rest.substr(0, digits);
    stage.erase(stage.find_last_not_of(' ') + 1);
    stages.push_back(stage);
  }
  EXPECT_EQ(stages,
            (std::vector<std::string>{"read", "parse", "ast", "check", "digest",
                                      "analysis: partition", "analysis: rows", "analysis: regions",
                                      "lower", "verify", "self-check", "write", "total"}));
  // Without the flag, no timing lines.
  const CliResult quiet = run({"compile", kPolicy, "-o", timed});
  EXPECT_EQ(quiet.err.find("timing:"), std::string::npos);
}

TEST_F(CliTest, CompileUnreadablePolicyIsAnIoError) {
  const CliResult r = run({"compile", (dir_ / "missing.yaml").string(), "-o", table_path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(table_path()));
}

// ---- lint ----

TEST_F(CliTest, LintShippedPolicyIsClean) {
  const CliResult r = run({"lint", kPolicy});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, kPolicy + ": ok\n");
}

TEST_F(CliTest, LintReportsErrors) {
  std::string policy = read_file(kPolicy);
  policy.replace(policy.find("verb: never"), 11, "verb: nevr");
  write_file(dir_ / "bad.yaml", policy);
  const CliResult r = run({"lint", (dir_ / "bad.yaml").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error["), std::string::npos) << r.err;
  EXPECT_NE(r.err.find((dir_ / "bad.yaml").string() + ": 1 error"), std::string::npos) << r.err;
}

// ---- dump ----

TEST_F(CliTest, DumpPrintsTheTable) {
  compile_gate();
  const CliResult r = run({"dump", table_path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dlq-replay-gate"), std::string::npos);
}

TEST_F(CliTest, DumpOfACorruptTableIsAnInputError) {
  write_file(dir_ / "junk.rgt", "this is not a table, just some text that is long enough......");
  CliResult r = run({"dump", (dir_ / "junk.rgt").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind(
                "replaygate: cannot load table " + (dir_ / "junk.rgt").string() + ": bad_magic", 0),
            0u)
      << r.err;
  EXPECT_TRUE(r.out.empty());

  compile_gate();
  const std::string whole = read_file(table_path());
  write_file(dir_ / "cut.rgt", whole.substr(0, whole.size() / 2));
  r = run({"dump", (dir_ / "cut.rgt").string()});
  EXPECT_EQ(r.exit_code, 2);
  // The error's kind is said once, then the loader's specifics.
  EXPECT_EQ(r.err, "replaygate: cannot load table " + (dir_ / "cut.rgt").string() +
                       ": truncated: header says " + std::to_string(whole.size()) + " bytes, got " +
                       std::to_string(whole.size() / 2) + "\n");

  std::string flipped = whole;
  flipped[flipped.size() - 1] ^= 0x5A;
  write_file(dir_ / "flip.rgt", flipped);
  r = run({"dump", (dir_ / "flip.rgt").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot load table"), std::string::npos) << r.err;

  r = run({"decide", "--table", (dir_ / "flip.rgt").string(), "-"}, "{}\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
}

// ---- decide: letters ----

TEST_F(CliTest, DecideLettersEveryBadRecordGetsOneLine) {
  const std::string checksum = compile_gate();
  const CliResult r =
      run({"decide", "--table", table_path(), kSourceDir + "/tests/data/letters/records.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "summary: 23 records, never 1, replay_once 2, hold 20; invalid 17, maybe-duplicate "
            "holds 0, budget holds 0; replayed keys 2 in an exact set (8 KiB of the 16 MiB "
            "--replayed-keys-memory), "
            "false-positive rate 1.1e-19\n");
  EXPECT_EQ(lines_of(r.out).size(), 23u);
  expect_golden(r.out, checksum, "letters/records.expected.jsonl");
}

TEST_F(CliTest, DecideFromStdinWithPolicyMatchesTable) {
  const std::string checksum = compile_gate();
  const std::string letters = read_file(kSourceDir + "/tests/data/letters/records.jsonl");
  const CliResult from_table = run({"decide", "--table", table_path(), "-"}, letters);
  const CliResult from_policy = run({"decide", "--policy", kPolicy}, letters);
  EXPECT_EQ(from_policy.exit_code, 1);
  EXPECT_EQ(from_policy.out, from_table.out);
  EXPECT_NE(from_policy.out.find(checksum), std::string::npos);
}

TEST_F(CliTest, DecideRecordTooLargeIsOneInvalidLine) {
  const std::string good =
      "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":1,"
      "\"idempotency_key\":\"k1\",\"already_committed\":false}\n";
  const std::string huge = "{\"topic\":\"" + std::string(3u << 20, 'x') + "\"}\n";
  const std::string good2 =
      "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":1,"
      "\"idempotency_key\":\"k2\",\"already_committed\":false}\n";
  const CliResult r = run({"decide", "--policy", kPolicy}, good + huge + good2);
  EXPECT_EQ(r.exit_code, 1);
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out.substr(0, 2000);
  EXPECT_EQ(lines[1].rfind("{\"n\":2,\"verb\":\"hold\",\"effect\":\"none\",\"action\":\"nothing\","
                           "\"rule\":\"default\",\"reason\":\"invalid record: record too large "
                           "(over 1048576 bytes)\"",
                           0),
            0u)
      << lines[1];
  EXPECT_NE(lines[1].find("\"invalid\":true}"), std::string::npos);
  EXPECT_EQ(lines[2].rfind("{\"n\":3,\"verb\":\"replay_once\"", 0), 0u) << lines[2];
}

TEST_F(CliTest, DecidePolicyErrorsStopBeforeReadingInput) {
  std::string policy = read_file(kPolicy);
  policy.replace(policy.find("verb: never"), 11, "verb: nevr");
  write_file(dir_ / "bad.yaml", policy);
  const CliResult r = run({"decide", "--policy", (dir_ / "bad.yaml").string(),
                           (dir_ / "does-not-exist.jsonl").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.err.find("cannot open"), std::string::npos) << r.err;
}

TEST_F(CliTest, DecideDuplicateIdempotencyKeyReplaysOnce) {
  const CliResult r =
      run({"decide", "--policy", kPolicy, kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[0].find("\"verb\":\"replay_once\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"verb\":\"hold\",\"effect\":\"none\",\"action\":\"nothing\","
                          "\"rule\":\"dump:maybe_duplicate\",\"reason\":\"idempotency key "
                          "probably replayed earlier in this dump (a replayed-key filter match; "
                          "its false-positive rate is in the run summary)\""),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[1].find("\"invalid\":false"), std::string::npos);
  // A never verb is never touched by the dump rules, even with a seen key.
  EXPECT_NE(lines[2].find("\"verb\":\"never\""), std::string::npos) << lines[2];
  EXPECT_EQ(r.err,
            "summary: 6 records, never 1, replay_once 4, hold 1; invalid 0, maybe-duplicate holds "
            "1, budget holds 0; replayed keys 4 in an exact set (8 KiB of the 16 MiB "
            "--replayed-keys-memory), "
            "false-positive rate 2.2e-19\n");
}

TEST_F(CliTest, DecideMisspelledDedupeFieldIsAUsageError) {
  // A typo must not silently switch off the one-replay-per-key rule.
  CliResult r = run({"decide", "--policy", kPolicy, "--dedupe-field", "idempotency_kye",
                     kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.err,
            "replaygate decide: error: --dedupe-field 'idempotency_kye' is not a string input of "
            "the policy; did you mean 'idempotency_key'?\n"
            "Run 'replaygate decide --help' for usage.\n");
  // A non-string input cannot carry a key either.
  r = run({"decide", "--policy", kPolicy, "--dedupe-field", "attempts",
           kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'attempts' is not a string input"), std::string::npos) << r.err;
  // Nor can an empty name (it used to fall back to idempotency_key silently).
  r = run({"decide", "--policy", kPolicy, "--dedupe-field", "",
           kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.err,
            "replaygate: error: --dedupe-field is empty: give a value, or leave the option out (an "
            "empty value never means 'none')\nRun 'replaygate decide --help' for usage.\n");
}

TEST_F(CliTest, DecideSaysSoWhenThePolicyHasNoIdempotencyKey) {
  write_file(dir_ / "nokey.yaml",
             "policy: nokey\nrevision: 1\ninputs:\n  topic: {type: string}\n"
             "verbs:\n  hold: {effect: none}\n  replay_once: {effect: create}\n"
             "default: hold\nrules:\n  - table: t\n    keys: [topic]\n    rows:\n"
             "      - [orders, replay_once]\n");
  const CliResult r = run({"decide", "--policy", (dir_ / "nokey.yaml").string(), "-"},
                          "{\"topic\":\"orders\"}\n{\"topic\":\"orders\"}\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 2u);
  EXPECT_EQ(r.err,
            "replaygate: note: the policy declares no idempotency key and has no string input "
            "'idempotency_key'; every letter may be replayed (declare one with "
            "'idempotency_key: true', or name one with --dedupe-field)\n"
            "summary: 2 records, hold 0, replay_once 2; invalid 0, maybe-duplicate holds 0, "
            "budget holds 0\n");
}

TEST_F(CliTest, VersionExitsZero) {
  const CliResult r = run({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "replaygate 0.1.0 (table format 1)\n");
}

TEST_F(CliTest, DecideMaxReplaysTakesADecimalCount) {
  // Plain decimal digits only: no sign (not even "-0"), spaces, hex, separators or overflow.
  // "" is refused while parsing, as for every option (tests/tools/empty_option_test.cc).
  for (const char* bad : {"-1", "abc", "0x2", "1.5", "-0", "+1", "+0", " 1", "1 ", "1_000", "1e3",
                          "9223372036854775808", "99999999999999999999999"}) {
    const CliResult r = run({"decide", "--policy", kPolicy, "--max-replays", bad,
                             kSourceDir + "/tests/data/letters/duplicates.jsonl"});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_TRUE(r.out.empty()) << bad;
    EXPECT_EQ(r.err, std::string("replaygate decide: error: --max-replays takes a whole "
                                 "number from 0 to 9223372036854775807 (decimal), not '") +
                         bad + "'\nRun 'replaygate decide --help' for usage.\n");
  }
}

TEST_F(CliTest, CompileRefusesToOverwriteThePolicyOrANonRegularFile) {
  const std::string policy = read_file(kPolicy);
  write_file(dir_ / "p.yaml", policy);
  CliResult r = run({"compile", (dir_ / "p.yaml").string(), "-o", (dir_ / "p.yaml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("it is the policy file itself"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(dir_ / "p.yaml"), policy);

  fs::create_directory(dir_ / "adir");
  r = run({"compile", kPolicy, "-o", (dir_ / "adir").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not a regular file"), std::string::npos) << r.err;

  write_file(dir_ / "target", "KEEP");
  fs::create_symlink(dir_ / "target", dir_ / "link.rgt");
  r = run({"compile", kPolicy, "-o", (dir_ / "link.rgt").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.rgt"));
  EXPECT_EQ(read_file(dir_ / "target"), "KEEP");
}

TEST_F(CliTest, DecideMaxReplaysHoldsTheRest) {
  const CliResult r = run({"decide", "--policy", kPolicy, "--max-replays", "2",
                           kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[3].find("\"verb\":\"replay_once\""), std::string::npos) << lines[3];
  for (size_t i : {4u, 5u}) {
    EXPECT_NE(lines[i].find("\"verb\":\"hold\",\"effect\":\"none\",\"action\":\"nothing\","
                            "\"rule\":\"dump:replay_budget\",\"reason\":\"replay budget "
                            "exhausted\""),
              std::string::npos)
        << lines[i];
  }
  EXPECT_EQ(r.err,
            "summary: 6 records, never 1, replay_once 2, hold 3; invalid 0, maybe-duplicate holds "
            "1, budget holds 2; replayed keys 2 in an exact set (8 KiB of the 16 MiB "
            "--replayed-keys-memory), "
            "false-positive rate 1.1e-19\n");
  const CliResult zero = run({"decide", "--policy", kPolicy, "--max-replays", "0",
                              kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(zero.err,
            "summary: 6 records, never 1, replay_once 0, hold 5; invalid 0, maybe-duplicate holds "
            "0, budget holds 5; replayed keys 0 in an exact set (8 KiB of the 16 MiB "
            "--replayed-keys-memory), "
            "false-positive rate 0\n");
}

TEST_F(CliTest, DecideMaxReplayedKeysHoldsNewKeysOnceFull) {
  // K, L, M, N are replay keys; with room for two, M and N cannot be remembered, so they are held
  // (a later duplicate of them could not be caught). The duplicate of K is still caught.
  const CliResult r = run({"decide", "--policy", kPolicy, "--max-replayed-keys", "2",
                           kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[0].find("\"verb\":\"replay_once\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"rule\":\"dump:maybe_duplicate\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[3].find("\"verb\":\"replay_once\""), std::string::npos) << lines[3];
  for (size_t i : {4u, 5u}) {
    EXPECT_NE(lines[i].find("\"verb\":\"hold\",\"effect\":\"none\",\"action\":\"nothing\","
                            "\"rule\":\"dump:key_limit\",\"reason\":\"too many replayed keys to "
                            "remember (--max-replayed-keys); held so that a later duplicate cannot "
                            "be replayed\""),
              std::string::npos)
        << lines[i];
    EXPECT_NE(lines[i].find("\"invalid\":false}"), std::string::npos) << lines[i];
  }
  EXPECT_EQ(r.err,
            "summary: 6 records, never 1, replay_once 2, hold 3; invalid 0, maybe-duplicate holds "
            "1, budget holds 0, key-limit holds 2; replayed keys 2 in an exact set (8 KiB of the "
            "16 MiB --replayed-keys-memory), "
            "false-positive rate 1.1e-19\n");
  // 0 remembers nothing: every keyed create verb is held.
  const CliResult zero = run({"decide", "--policy", kPolicy, "--max-replayed-keys", "0",
                              kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(zero.err,
            "summary: 6 records, never 1, replay_once 0, hold 5; invalid 0, maybe-duplicate holds "
            "0, budget holds 0, key-limit holds 5; replayed keys 0 in an exact set (8 KiB of the "
            "16 MiB --replayed-keys-memory), "
            "false-positive rate 0\n");
  for (const char* bad :
       {"-1", "abc", "1e3", "4294967297", "-0", "+1", " 2", "0x2", "18446744073709551617"}) {
    const CliResult b = run({"decide", "--policy", kPolicy, "--max-replayed-keys", bad,
                             kSourceDir + "/tests/data/letters/duplicates.jsonl"});
    EXPECT_EQ(b.exit_code, 2) << bad;
    EXPECT_TRUE(b.out.empty()) << bad;
    EXPECT_EQ(b.err, std::string("replaygate decide: error: --max-replayed-keys takes a whole "
                                 "number from 0 to 4294967296 (decimal), not '") +
                         bad + "'\nRun 'replaygate decide --help' for usage.\n");
  }
}

TEST_F(CliTest, DecideReplayedKeysMemoryTakesWholeMiB) {
  for (const char* bad :
       {"0", "-1", "abc", "1.5", "16MiB", "65537", "-0", "+1", "-16", " 16", "0x10"}) {
    const CliResult b = run({"decide", "--policy", kPolicy, "--replayed-keys-memory", bad,
                             kSourceDir + "/tests/data/letters/duplicates.jsonl"});
    EXPECT_EQ(b.exit_code, 2) << bad;
    EXPECT_TRUE(b.out.empty()) << bad;
    EXPECT_EQ(b.err, std::string("replaygate decide: error: --replayed-keys-memory takes a whole "
                                 "number of MiB from 1 to 65536 (decimal), not '") +
                         bad + "'\nRun 'replaygate decide --help' for usage.\n");
  }
  const CliResult r = run({"decide", "--policy", kPolicy, "--replayed-keys-memory", "1",
                           kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err,
            "summary: 6 records, never 1, replay_once 4, hold 1; invalid 0, maybe-duplicate holds "
            "1, budget holds 0; replayed keys 4 in an exact set (8 KiB of the 1 MiB "
            "--replayed-keys-memory), "
            "false-positive rate 2.2e-19\n");
}

// A cap above what the machine can give is refused before any record is read (it would fail or
// be OOM-killed mid-run), naming the limit: here the address-space limit, then MemAvailable.
TEST_F(CliTest, DecideRefusesAReplayedKeysMemoryAboveTheMemoryAvailable) {
#if defined(RG_TEST_ASAN)
  // ASan reserves terabytes of shadow address space and inflates RSS: `ulimit -v` and an RSS
  // bound say nothing about the code under it (the plain build runs this test).
  GTEST_SKIP() << "memory bounds are measured in the plain build, not under AddressSanitizer";
#endif
  const std::string out = (dir_ / "out").string(), err = (dir_ / "err").string();
  const int code = run_shell("ulimit -v 1048576; " + shell_quote(kCliBinary) + " decide --policy " +
                             shell_quote(kPolicy) + " --replayed-keys-memory 2048 " +
                             shell_quote(kSourceDir + "/tests/data/letters/duplicates.jsonl") +
                             " >" + shell_quote(out) + " 2>" + shell_quote(err));
  EXPECT_EQ(code, 2);
  EXPECT_EQ(read_file(out), "");
  const std::string text = read_file(err);
  EXPECT_EQ(text.rfind("replaygate decide: error: --replayed-keys-memory 2048 MiB is more than "
                       "the memory available (",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find(" MiB: the address-space limit, ulimit -v); give at most "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nRun 'replaygate decide --help' for usage.\n"), std::string::npos) << text;
  // Under the same limit a cap that fits runs (the cap is address space, not memory in use).
  const int fits = run_shell("ulimit -v 1048576; " + shell_quote(kCliBinary) + " decide --policy " +
                             shell_quote(kPolicy) + " --replayed-keys-memory 256 " +
                             shell_quote(kSourceDir + "/tests/data/letters/duplicates.jsonl") +
                             " >" + shell_quote(out) + " 2>" + shell_quote(err));
  EXPECT_EQ(fits, 0) << read_file(err);

  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  unsigned long long available_kib = 0;
  while (std::getline(meminfo, line)) {
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &available_kib) == 1) break;
  }
  if (available_kib == 0 || available_kib >= (65536ull << 10)) {
    GTEST_SKIP() << "64 GiB or more available: 65536 MiB fits here";
  }
  const CliResult r = run({"decide", "--policy", kPolicy, "--replayed-keys-memory", "65536",
                           kSourceDir + "/tests/data/letters/duplicates.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("replaygate decide: error: --replayed-keys-memory 65536 MiB is more than "
                        "the memory available (",
                        0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find(" MiB: MemAvailable in /proc/meminfo); give at most "), std::string::npos)
      << r.err;
}

// The peak resident set of `command` (run by /bin/sh) in KiB, or -1: a forked child runs it and
// reports getrusage(RUSAGE_CHILDREN), which covers only that child's own descendants.
long peak_rss_kib(const std::string& command) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const int status = std::system(command.c_str());
    struct rusage usage {};
    ::getrusage(RUSAGE_CHILDREN, &usage);
    const long kib = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? usage.ru_maxrss : -1;
    if (::write(fds[1], &kib, sizeof kib) != sizeof kib) _exit(1);
    _exit(0);
  }
  ::close(fds[1]);
  long kib = -1;
  if (pid < 0 || ::read(fds[0], &kib, sizeof kib) != sizeof kib) kib = -1;
  ::close(fds[0]);
  if (pid > 0) ::waitpid(pid, nullptr, 0);
  return kib;
}

// The keys' memory grows with the keys seen, up to the cap: 20,000 keys under a 1024 MiB cap
// take 512 KiB (an exact set of their hashes). Before, the cap was mapped with huge pages and
// 20,000 random first touches made about all of it resident (1 GiB).
TEST_F(CliTest, DecideReplayedKeysMemoryIsACapNotAnAllocation) {
#if defined(RG_TEST_ASAN)
  // ASan reserves terabytes of shadow address space and inflates RSS: `ulimit -v` and an RSS
  // bound say nothing about the code under it (the plain build runs this test).
  GTEST_SKIP() << "memory bounds are measured in the plain build, not under AddressSanitizer";
#endif
  std::string dump;
  for (int i = 0; i < 20000; ++i) {
    dump +=
        "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":1,"
        "\"idempotency_key\":\"k" +
        std::to_string(i) + "\",\"already_committed\":false}\n";
  }
  write_file(dir_ / "keys.jsonl", dump);
  const std::string out = (dir_ / "out").string(), err = (dir_ / "err").string();
  const long kib =
      peak_rss_kib(shell_quote(kCliBinary) + " decide --policy " + shell_quote(kPolicy) +
                   " --replayed-keys-memory 1024 " + shell_quote((dir_ / "keys.jsonl").string()) +
                   " >" + shell_quote(out) + " 2>" + shell_quote(err));
  EXPECT_GT(kib, 0) << read_file(err);
  EXPECT_LT(kib, 48 * 1024) << "peak RSS " << kib << " KiB";
  EXPECT_EQ(lines_of(read_file(out)).size(), 20000u);
  EXPECT_NE(read_file(err).find("; replayed keys 20000 in an exact set (512 KiB of the 1024 MiB "
                                "--replayed-keys-memory), false-positive rate 1.1e-15\n"),
            std::string::npos)
      << read_file(err);
}

TEST_F(CliTest, DecideOverfullFilterHoldsAndWarns) {
  // 240,000 create-verb letters with 160,000 distinct keys (every third repeats a key seen
  // before) through the smallest filter, 1 MiB: the filter's rate passes 1e-6, so the run
  // warns. Whatever its mistakes, every repeated key is held and no key is replayed twice.
  std::string dump;
  std::vector<std::string> keys;
  for (int i = 0; i < 240000; ++i) {
    const int key = i % 3 == 2 ? (i * 7919) % (i / 3 * 2 + 1) : i / 3 * 2 + i % 3;
    keys.push_back("k" + std::to_string(key));
    dump +=
        "{\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":1,"
        "\"idempotency_key\":\"" +
        keys.back() + "\",\"already_committed\":false}\n";
  }
  write_file(dir_ / "many.jsonl", dump);
  const CliResult r = run({"decide", "--policy", kPolicy, "--replayed-keys-memory", "1",
                           (dir_ / "many.jsonl").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), keys.size());
  std::unordered_set<std::string> seen, replayed;
  size_t first_held = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool repeat = !seen.insert(keys[i]).second;
    const bool replay = lines[i].find("\"verb\":\"replay_once\"") != std::string::npos;
    if (replay) {
      ASSERT_FALSE(repeat) << i << " " << lines[i];
      ASSERT_TRUE(replayed.insert(keys[i]).second) << i;
    } else {
      ASSERT_NE(lines[i].find("\"rule\":\"dump:maybe_duplicate\""), std::string::npos) << lines[i];
      if (!repeat) ++first_held;  // a false positive: held, never replayed
    }
  }
  EXPECT_EQ(seen.size(), 160000u);
  EXPECT_EQ(replayed.size() + first_held, 160000u);
  EXPECT_NE(r.err.find("summary: 240000 records, never 0, replay_once " +
                       std::to_string(replayed.size())),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("replayed keys " + std::to_string(replayed.size()) +
                       " in a 1 MiB filter, false-positive rate "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("\nreplaygate: warning: the 1 MiB replayed-key filter is too full: a new "
                       "key is now held as dump:maybe_duplicate by mistake with probability "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; decide the dump again with --replayed-keys-memory 2 (keeps the rate "
                       "under 1.0e-06 for up to 240000 keys)\n"),
            std::string::npos)
      << r.err;
}

TEST_F(CliTest, DecideShippedLetters) {
  const CliResult r = run({"decide", "--policy", kPolicy, kSourceDir + "/examples/letters.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.out).size(), 20u);
  EXPECT_EQ(
      r.err,
      "summary: 20 records, never 6, replay_once 4, hold 10; invalid 3, maybe-duplicate holds "
      "1, budget holds 0; replayed keys 4 in an exact set (8 KiB of the 16 MiB "
      "--replayed-keys-memory), "
      "false-positive rate 2.2e-19\n");
}

// ---- decide: kafka ----

TEST_F(CliTest, DecideKafkaThroughTheMapping) {
  const std::string checksum = compile_gate();
  const CliResult r = run({"decide", "--table", table_path(), "--format", "kafka", "--mapping",
                           kSourceDir + "/tests/data/mapping/spring.mapping.yaml",
                           kSourceDir + "/tests/data/mapping/records.kcat.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.err,
      "summary: 15 records, never 1, replay_once 1, hold 13; invalid 9, maybe-duplicate holds "
      "1, budget holds 0; replayed keys 1 in an exact set (8 KiB of the 16 MiB "
      "--replayed-keys-memory), "
      "false-positive rate 5.4e-20\n");
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 15u);
  EXPECT_NE(lines[2].find("\"reason\":\"invalid input: error_class (no mapping for "
                          "'java.lang.IllegalStateException')\""),
            std::string::npos)
      << lines[2];
  expect_golden(r.out, checksum, "mapping/records.expected.jsonl");
}

TEST_F(CliTest, DecideKafkaBadMappingIsReportedWithPositions) {
  const std::string mapping = kSourceDir + "/tests/data/mapping/bad.mapping.yaml";
  const CliResult r = run({"decide", "--policy", kPolicy, "--format", "kafka", "--mapping", mapping,
                           kSourceDir + "/tests/data/mapping/records.kcat.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty());
  for (const std::string& expected : {
           mapping + ":2:1: error[RG303]: policy input 'error_class' is not mapped",
           mapping + ":4:3: error[RG302]: 'error_clas' is not an input of policy "
                     "'dlq-replay-gate'",
           mapping + ":5:47: error[RG305]: input 'attempts' is int in the policy, not 'string'",
           mapping + ":6:30: error[RG304]: bad JSON pointer 'order/key' for input "
                     "'idempotency_key'",
           mapping + ":7:22: error[RG304]: input 'already_committed' has more than one source",
           mapping + ":8:31: error[RG301]: unknown key 'optinal' in the mapping of input "
                     "'replays'",
           std::string("did you mean 'optional'?"),
           mapping + ": errors found; no record decided",
       }) {
    EXPECT_NE(r.err.find(expected), std::string::npos) << expected << "\n---\n" << r.err;
  }
}

// Derived inputs are computed, never read: a mapping need not (and must not) map them.
TEST_F(CliTest, DecideKafkaMappingLeavesDerivedInputsOut) {
  // The shipped policy's record-only inputs may not be mapped (RG308): a copy without the marker.
  const std::string policy = letter_state_recovery_policy(dir_);
  std::string inputs;
  for (const char* name : {"phase", "message_revision", "record_revision"}) {
    inputs += std::string("  ") + name + ": {payload: /" + name + "}\n";
  }
  for (const char* name :
       {"remote_job_id", "copy_complete", "refund_resolved", "dispatch_confirmed_absent",
        "model_current", "spec_current", "user_authorized", "remaining_budget", "operation_id"}) {
    inputs += std::string("  ") + name + ": {payload: /" + name + ", optional: true}\n";
  }
  // operator_confirmed is operator-only: left out too (mapping it is RG307).
  write_file(dir_ / "m.yaml", "format: kcat-json\ninputs:\n" + inputs);
  write_file(dir_ / "r.jsonl",
             "{\"topic\":\"gen.DLT\",\"partition\":0,\"offset\":1,\"key\":null,\"payload\":"
             "\"{\\\"phase\\\":\\\"accepted\\\",\\\"message_revision\\\":1,"
             "\\\"record_revision\\\":2,\\\"remote_job_id\\\":\\\"j1\\\"}\"}\n"
             "{\"topic\":\"gen.DLT\",\"partition\":0,\"offset\":2,\"key\":null,\"payload\":"
             "\"{\\\"phase\\\":\\\"accepted\\\",\\\"message_revision\\\":2,"
             "\\\"record_revision\\\":2,\\\"remote_job_id\\\":\\\"j1\\\"}\"}\n");
  CliResult r = run({"decide", "--policy", policy, "--format", "kafka", "--mapping",
                     (dir_ / "m.yaml").string(), (dir_ / "r.jsonl").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_NE(lines[0].find("\"verb\":\"acknowledge_obsolete\",\"effect\":\"none\""),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find("\"rule\":\"stale_message\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"verb\":\"observe\",\"effect\":\"read\""), std::string::npos)
      << lines[1];

  // Mapping one is an error (RG306) pointing at its key, with the fix.
  write_file(dir_ / "m.yaml",
             "format: kcat-json\ninputs:\n" + inputs + "  stale: {payload: /stale}\n");
  r = run({"decide", "--policy", policy, "--format", "kafka", "--mapping",
           (dir_ / "m.yaml").string(), (dir_ / "r.jsonl").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  const std::string mapping = (dir_ / "m.yaml").string();
  EXPECT_NE(
      r.err.find(mapping +
                 ":15:3: error[RG306]: input 'stale' is derived; it is computed, never read\n"),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hint: remove it; derived inputs are computed from message_revision and "
                       "record_revision (stale = message_revision < record_revision)"),
            std::string::npos)
      << r.err;
}

// A policy input missing from a mapping is reported at the inputs: key (or the file, without one).
TEST_F(CliTest, DecideKafkaUnmappedInputPointsAtTheInputsKey) {
  write_file(dir_ / "m.yaml",
             "# a comment\nformat: kcat-json\n\ninputs:\n  topic: {header: t}\n  error_class: "
             "{header: e}\n  attempts: {header: a}\n  idempotency_key: {header: k}\n  "
             "already_committed: {header: c}\n");
  const CliResult r = run({"decide", "--policy", kPolicy, "--format", "kafka", "--mapping",
                           (dir_ / "m.yaml").string(), "/dev/null"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.err.substr(0, r.err.find('\n')),
      (dir_ / "m.yaml").string() + ":4:1: error[RG303]: policy input 'replays' is not mapped");
}

// A compiled table given as a policy: RG013 says to use --table.
TEST_F(CliTest, TableGivenAsPolicyHintsAtTable) {
  compile_gate();
  CliResult r = run({"decide", "--policy", table_path(), "/dev/null"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error[RG013]: unsupported policy file extension '.rgt'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("hint: this is a compiled table: use --table\n"), std::string::npos)
      << r.err;
  write_file(dir_ / "p.txt", "policy: p\n");
  r = run({"decide", "--policy", (dir_ / "p.txt").string(), "/dev/null"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("hint: rename the file to end in .policy or .yaml\n"), std::string::npos)
      << r.err;
}

TEST_F(CliTest, DecideShippedKafkaDump) {
  const CliResult r = run({"decide", "--policy", kPolicy, "--format", "kafka", "--mapping",
                           kSourceDir + "/examples/kafka-spring-dlt.mapping.yaml",
                           kSourceDir + "/examples/payments-dlt.kcat.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.out).size(), 62u);
  EXPECT_EQ(r.err,
            "summary: 62 records, never 18, replay_once 21, hold 23; invalid 6, maybe-duplicate "
            "holds 2, budget holds 0; replayed keys 21 in an exact set (8 KiB of the 16 MiB "
            "--replayed-keys-memory), "
            "false-positive rate 1.1e-18\n");
}

// ---- test ----

TEST_F(CliTest, TestShippedCasesPass) {
  const CliResult r = run({"test", kPolicy});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2], "41 passed, 0 failed");
  // The invariant count follows policies/replay_gate.yaml's invariants section (issue 3).
  EXPECT_EQ(lines.back().rfind("coverage: rules 13/13 (100.0%), invariants ", 0), 0u)
      << lines.back();
}

TEST_F(CliTest, TestReportsFailures) {
  write_file(dir_ / "cases.yaml",
             "cases:\n"
             "  - name: timeout replays\n"
             "    input: {topic: payment.capture, error_class: timeout, attempts: 1,\n"
             "            idempotency_key: k, already_committed: false}\n"
             "    expect: replay_once\n"
             "  - name: wrong expectation\n"
             "    input: {topic: payment.capture, error_class: timeout, attempts: 1,\n"
             "            idempotency_key: k, already_committed: false}\n"
             "    expect: never\n"
             "    rule: already_committed\n");
  const CliResult r = run({"test", kPolicy, (dir_ / "cases.yaml").string()});
  EXPECT_EQ(r.exit_code, 1);
  // The coverage line's invariant count follows the shipped policy (see TestShippedCasesPass).
  EXPECT_EQ(r.out.rfind(
                "PASS timeout replays\n"
                "FAIL wrong expectation: expected never (rule already_committed), got replay_once "
                "(rule known_failures:payment.capture/timeout, reason \"the capture timed out "
                "before an answer; the idempotency key makes one requeue safe\")\n"
                "1 passed, 1 failed\n"
                "coverage: rules 1/13 (7.7%), invariants ",
                0),
            0u)
      << r.out;
}

TEST_F(CliTest, TestCaseFileErrorsAreDiagnostics) {
  write_file(dir_ / "cases.yaml",
             "cases:\n"
             "  - name: typo\n"
             "    input: {topik: payment.capture}\n"
             "    expect: replay_onec\n");
  const CliResult r = run({"test", kPolicy, (dir_ / "cases.yaml").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find((dir_ / "cases.yaml").string() +
                       ":3:13: error[RG403]: 'topik' is not an input of the policy"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find((dir_ / "cases.yaml").string() +
                       ":4:13: error[RG404]: unknown verb 'replay_onec'"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.rfind("0 passed, 0 failed\ncoverage: rules 0/13 (0.0%), invariants 0/", 0), 0u)
      << r.out;
}

TEST_F(CliTest, TestMissingCaseFileIsAnIoError) {
  write_file(dir_ / "p.yaml", read_file(kPolicy));
  const CliResult r = run({"test", (dir_ / "p.yaml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("p.test.yaml"), std::string::npos) << r.err;
}

}  // namespace
