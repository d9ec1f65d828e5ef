// Mapped inputs that must not fail open (docs/input-mapping.md): a `default:` that turns "the
// record does not say" into a create verb is refused (RG309) unless acknowledged, other defaults on
// compared inputs are warned about (RG308), a stale acknowledgement too (RG310); a header that is
// present but null is invalid input, not absent; a header that differs from a mapped one only in
// case is not read, and decide says so once. Exact input, exact outcome.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "inputs/kafka.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const char kGate[] = "policies/replay_gate.yaml";

class MappingSafetyTest : public CliFixture {
 protected:
  MappingSafetyTest() : CliFixture(kSourceDir) {}

  // A mapping for replay_gate.yaml with `attempts_line` as the attempts entry; returns its path.
  std::string mapping_with(const std::string& attempts_line, const std::string& extra = "") {
    const std::string path = (dir_ / "m.yaml").string();
    write_file(path,
               "format: kcat-json\n"
               "inputs:\n"
               "  topic: {header: kafka_dlt-original-topic}\n"
               "  error_class:\n"
               "    header: kafka_dlt-exception-cause-fqcn\n"
               "    map: {java.net.SocketTimeoutException: timeout}\n" +
                   attempts_line +
                   "  idempotency_key: {payload: /idempotency_key, optional: true}\n"
                   "  already_committed: {payload: /committed}\n"
                   "  replays: {header: x-replay, optional: true}\n" +
                   extra);
    return path;
  }

  CliResult decide(const std::string& mapping, const std::string& records) {
    return run({"decide", "--policy", kGate, "--format", "kafka", "--mapping", mapping}, records);
  }
};

// A kcat -J record of a payment.capture timeout; `headers` are added after the two Spring ones.
std::string record(int offset, const std::string& headers, const std::string& payload) {
  return R"({"topic":"payments.DLT","partition":0,"offset":)" + std::to_string(offset) +
         R"(,"headers":["kafka_dlt-original-topic","payment.capture",)"
         R"("kafka_dlt-exception-cause-fqcn","java.net.SocketTimeoutException")" +
         headers + R"(],"key":"k","payload":")" + payload + "\"}\n";
}

const char kNoAttempts[] = R"({\"idempotency_key\":\"cap_1\",\"committed\":false})";
const char kOneAttempt[] = R"({\"idempotency_key\":\"cap_1\",\"committed\":false,\"attempts\":1})";

const char kRg309Attempts[] =
    "error[RG309]: the default '0' of input 'attempts' can open a create verb: a record without "
    "payload /attempts can get replay_once (rule 'known_failures:payment.capture/timeout') instead "
    "of hold (invalid input)\n"
    "    7 |   attempts: {payload: /attempts, default: 0}\n"
    "      |                                           ^\n"
    "      = hint: e.g. {\"topic\": \"payment.capture\", \"error_class\": \"timeout\", "
    "\"idempotency_key\": \"other\", \"already_committed\": false, \"replays\": 0} without "
    "attempts; remove the default so that a record without it fails closed, or, once reviewed, "
    "add `acknowledge: default-opens-create` to input 'attempts'\n";

// `default: 0` on attempts: a record without a counter would be a first attempt and replay.
// decide refuses the mapping before any record is read (exit 1, as for every mapping error).
TEST_F(MappingSafetyTest, DefaultThatOpensCreateIsRefused) {
  const std::string m = mapping_with("  attempts: {payload: /attempts, default: 0}\n");
  const CliResult r = decide(m, record(1, "", kNoAttempts));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, m + ":7:43: " + kRg309Attempts + m + ": errors found; no record decided\n");

  // lint says the same, and exits 1 (findings).
  const CliResult lint = run({"lint", kGate, "--mapping", m});
  EXPECT_EQ(lint.exit_code, 1);
  EXPECT_EQ(lint.err, std::string(kGate) + ": ok\n" + m + ":7:43: " + kRg309Attempts + m +
                          ": 1 error, 0 warnings\n");
}

// Once acknowledged, the default decides: the record without attempts replays, and nothing is
// reported about the mapping.
TEST_F(MappingSafetyTest, AcknowledgedDefaultDecides) {
  const std::string m = mapping_with(
      "  attempts: {payload: /attempts, default: 0, acknowledge: default-opens-create}\n");
  const CliResult r = decide(m, record(1, "", kNoAttempts));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("verb":"replay_once","effect":"create")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("rule":"known_failures:payment.capture/timeout")"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.rfind("summary: 1 record, never 0, replay_once 1, hold 0; invalid 0", 0), 0u)
      << r.err;
  const CliResult lint = run({"lint", kGate, "--mapping", m});
  EXPECT_EQ(lint.exit_code, 0);
  EXPECT_EQ(lint.err, std::string(kGate) + ": ok\n" + m + ": ok\n");

  // Without the default the same record fails closed.
  const std::string plain = mapping_with("  attempts: {payload: /attempts}\n");
  const CliResult closed = decide(plain, record(1, "", kNoAttempts));
  EXPECT_EQ(closed.exit_code, 1);
  EXPECT_NE(
      closed.out.find(R"("verb":"hold","effect":"none","action":"nothing","rule":"default",)"
                      R"x("reason":"invalid input: attempts (payload /attempts is missing)")x"),
      std::string::npos)
      << closed.out;
}

// A default on an optional input opens a create verb when its absence is what holds the letter.
TEST_F(MappingSafetyTest, DefaultOnAnAbsentTestedInputIsRefused) {
  const std::string m = (dir_ / "m.yaml").string();
  write_file(m,
             "inputs:\n"
             "  topic: {header: t}\n"
             "  error_class: {header: e}\n"
             "  attempts: {payload: /attempts}\n"
             "  idempotency_key: {payload: /key, optional: true, default: k1}\n"
             "  already_committed: {payload: /committed}\n"
             "  replays: {header: x-replay, optional: true}\n");
  const CliResult r = decide(m, "");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            m + ":5:61: error[RG309]: the default 'k1' of input 'idempotency_key' can open a "
                "create verb: a record without payload /key can get replay_once (rule "
                "'known_failures:inventory.reserve/lock_timeout') instead of hold (rule "
                "'no_idempotency_key')");
  EXPECT_NE(r.err.find("= hint: e.g. {\"topic\": \"inventory.reserve\", \"error_class\": "
                       "\"lock_timeout\", \"attempts\": 0, \"already_committed\": false, "
                       "\"replays\": 0} without "
                       "idempotency_key; "),
            std::string::npos)
      << r.err;
}

// A default that cannot open a create verb on a compared input is a warning: decide goes on.
// A stale acknowledgement is one too; a misspelt one is an error.
TEST_F(MappingSafetyTest, HarmlessDefaultsAndAcknowledgementsAreWarnedAbout) {
  std::string m = mapping_with("  attempts: {payload: /attempts, default: 3}\n");
  CliResult r = decide(m, record(1, "", kNoAttempts));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("verb":"hold","effect":"none","action":"nothing",)"
                       R"("rule":"attempts_exhausted")"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
            m + ":7:43: warning[RG308]: input 'attempts' has the default '3' and guard "
                "'attempts_exhausted' compares it: a record without payload /attempts is decided "
                "as if it said '3'");
  EXPECT_NE(r.err.find("= hint: it cannot open a create verb under this policy; still, remove it "
                       "unless the producer may leave the value out: a record without it is then "
                       "invalid input (fail closed)\n"),
            std::string::npos)
      << r.err;
  CliResult lint = run({"lint", kGate, "--mapping", m, "--werror"});
  EXPECT_EQ(lint.exit_code, 1);
  EXPECT_NE(lint.err.find(m + ": ok with 1 warning (failing: --werror)\n"), std::string::npos)
      << lint.err;

  m = mapping_with(
      "  attempts: {payload: /attempts, default: 3, acknowledge: default-opens-create}\n");
  lint = run({"lint", kGate, "--mapping", m});
  EXPECT_EQ(lint.exit_code, 0);
  EXPECT_EQ(lint.err.substr(lint.err.find('\n') + 1,
                            lint.err.find('\n', lint.err.find('\n') + 1) - lint.err.find('\n') - 1),
            m + ":7:59: warning[RG310]: input 'attempts' acknowledges a default that opens a "
                "create verb, but its default '3' cannot");

  m = mapping_with("  attempts: {payload: /attempts, default: 0, acknowledge: yes}\n");
  r = decide(m, "");
  EXPECT_EQ(r.exit_code, 1);
  // Not an acknowledgement: the default stays refused too.
  EXPECT_NE(r.err.find(m + ":7:43: error[RG309]: the default '0' of input 'attempts'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(m + ":7:59: error[RG305]: acknowledge of input 'attempts' must be "
                           "default-opens-create\n"),
            std::string::npos)
      << r.err;
}

// kcat -J prints a header without a value as null: it is present, so not "missing", and a replay
// counter that says nothing known makes the record invalid input (fail closed).
TEST_F(MappingSafetyTest, NullHeaderIsInvalidInput) {
  const std::string m = mapping_with("  attempts: {payload: /attempts}\n");
  const CliResult r =
      decide(m, record(1, R"(,"x-replay",null)", kOneAttempt) +
                    record(2, R"(,"x-replay","1")", kOneAttempt) + record(3, "", kOneAttempt));
  EXPECT_EQ(r.exit_code, 1);
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_NE(lines[0].find(R"("verb":"hold","effect":"none","action":"nothing","rule":"default",)"
                          R"x("reason":"invalid input: replays (header 'x-replay' is present )x"
                          R"x(but null)")x"),
            std::string::npos)
      << lines[0];
  EXPECT_NE(lines[0].find(R"("invalid":true)"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(R"("rule":"already_replayed")"), std::string::npos) << lines[1];
  // Only a missing header is absent.
  EXPECT_NE(lines[2].find(R"("verb":"replay_once")"), std::string::npos) << lines[2];
  EXPECT_EQ(r.err,
            "summary: 3 records, never 0, replay_once 1, hold 2; invalid 1, maybe-duplicate holds "
            "0, budget holds 0; replayed keys 1 in an exact set (8 KiB of the 16 MiB "
            "--replayed-keys-memory), false-positive rate 5.4e-20\n");
}

// Header names match exactly: `X-Replay` is not `x-replay`. A record that carries a near miss of
// a mapped header is invalid input (the policy default), not decided as if the replay counter
// were absent (which replayed it): the tester's exact record, then upper case, then both the exact
// header and a variant.
TEST_F(MappingSafetyTest, HeaderDifferingOnlyInCaseIsInvalidInput) {
  const std::string m = mapping_with("  attempts: {payload: /attempts}\n");
  const CliResult r = decide(m, record(1, R"(,"X-Replay","1")", kOneAttempt) +
                                    record(2, R"(,"X-REPLAY","1")", kOneAttempt) +
                                    record(3, R"(,"x-replay","1","X-Replay","0")", kOneAttempt) +
                                    record(4, "", kOneAttempt));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  for (const auto& [line, variant] : std::vector<std::pair<std::string, std::string>>{
           {lines[0], "X-Replay"}, {lines[1], "X-REPLAY"}, {lines[2], "X-Replay"}}) {
    EXPECT_NE(line.find(R"("verb":"hold","effect":"none","action":"nothing","rule":"default",)"
                        R"("reason":"invalid input: replays (header ')" +
                        variant +
                        R"(' differs from the mapped header 'x-replay' only in ASCII case: )"
                        R"(header names match exactly, so the record's value for it is unknown; )"
                        R"x(fix the producer or the mapping)")x"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find(R"("invalid":true)"), std::string::npos) << line;
  }
  // Without any such header the counter is absent, as before: the first replay.
  EXPECT_NE(lines[3].find(R"("verb":"replay_once")"), std::string::npos) << lines[3];
  EXPECT_EQ(r.err,
            "summary: 4 records, never 0, replay_once 1, hold 3; invalid 3, maybe-duplicate holds "
            "0, budget holds 0; replayed keys 1 in an exact set (8 KiB of the 16 MiB "
            "--replayed-keys-memory), false-positive rate 5.4e-20\n");
}

// Not only ASCII case: a header whose name is not the mapped one but has its skeleton (spaces,
// control and invisible characters, dashes, `_` and `.`, look-alike letters, fullwidth forms and
// case ignored) is a near miss too, and the record is invalid input, never decided as if the
// replay counter were absent (M2). The strings are JSON text, as in the record.
TEST_F(MappingSafetyTest, HeaderNearMissesOfEveryKindAreInvalidInput) {
  const std::string m = mapping_with("  attempts: {payload: /attempts}\n");
  for (const char* variant : {
           "x-replay ",
           " x-replay",
           "x-replay\\t",
           "x-replay\\u0000",
           "x_replay",
           "xreplay",
           "x.replay",
           "x\\u2010replay",
           "x\\u2011replay",
           "x\\u2212replay",
           "x\\uff0dreplay",
           "x-r\\u0435play",
           "\\u0445-replay",
           "x-re\\u0440lay",
           "\\u0425-REPLAY",
           "x-repl\\u03b1y",
           "\\uff58-replay",
           "x-\\u200breplay",
           "\\ufeffx-replay",
           "x\\u00adreplay",
           "x-replay\\u0301",
           "x-replay\\u2060",
           "\\uff38\\uff0d\\uff52eplay",
       }) {
    SCOPED_TRACE(variant);
    const CliResult r =
        decide(m, record(1, std::string(R"(,")") + variant + R"(","1")", kOneAttempt));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 1u) << r.out;
    EXPECT_NE(lines[0].find(R"("verb":"hold","effect":"none","action":"nothing","rule":"default",)"
                            R"("reason":"invalid input: replays (header ')"),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find(R"(' is a near miss of the mapped header 'x-replay' (the same name )"
                            R"(once spaces, invisible characters, dashes, look-alike letters and )"
                            R"(case are ignored): header names match exactly, so the record's )"
                            R"x(value for it is unknown; fix the producer or the mapping)")x"),
              std::string::npos)
        << lines[0];
    EXPECT_NE(lines[0].find(R"("invalid":true)"), std::string::npos) << lines[0];
    EXPECT_EQ(lines[0].find("replay_once"), std::string::npos) << lines[0];
  }
  // A trailing `s` is another word: not read for x-replay (the record replays, as without the
  // header), but warned about on stderr, once.
  const CliResult r = decide(m, record(1, R"(,"x-replays","1")", kOneAttempt) +
                                    record(2, R"(,"x-replays","1")", kOneAttempt));
  EXPECT_NE(r.out.find(R"("verb":"replay_once")"), std::string::npos) << r.out;
  const std::string warning =
      "replaygate: warning: header 'x-replays' is one letter away from the mapped header "
      "'x-replay' and is not read for it (header names match exactly); if it means the same, fix "
      "the producer or the mapping\n";
  ASSERT_EQ(r.err.rfind(warning, 0), 0u) << r.err;
  EXPECT_EQ(r.err.find(warning, 1), std::string::npos) << r.err;
}

// The skeleton itself, with a byte that is not UTF-8 (JSON text cannot carry one).
TEST(HeaderNameSkeleton, FoldsWhatLooksTheSame) {
  using replaygate::inputs::header_name_skeleton;
  EXPECT_EQ(header_name_skeleton("x-replay"), "xreplay");
  EXPECT_EQ(header_name_skeleton("X_Re.play"), "xreplay");
  EXPECT_EQ(header_name_skeleton("x-repl\xFF"
                                 "ay"),
            "xreplay");  // undecodable byte
  EXPECT_EQ(header_name_skeleton("x-repl\xC3"
                                 "ay"),
            "xreplay");                                                  // cut sequence
  EXPECT_EQ(header_name_skeleton("x-\xED\xA0\x80replay"), "xreplay");    // encoded surrogate
  EXPECT_EQ(header_name_skeleton("x\xE2\x80\x90replay"), "xreplay");     // U+2010
  EXPECT_EQ(header_name_skeleton("\xEF\xBD\x98-replay"), "xreplay");     // fullwidth x
  EXPECT_EQ(header_name_skeleton("x-r\xD0\xB5play"), "xreplay");         // Cyrillic е
  EXPECT_EQ(header_name_skeleton("x-replays"), "xreplays");              // the plural stays
  EXPECT_EQ(header_name_skeleton("x-r\xC3\xA9play"), "xr\xC3\xA9play");  // é is another letter
}

// decide never reads an operator-only input from a record, so a create verb that needs one cannot
// be opened by a default: generation_recovery's dispatch needs operator_confirmed. The defaults
// are still warned about, naming what reads them (a guard; a derived bool for an operand).
TEST_F(MappingSafetyTest, OperatorOnlyInputsAreUnsetInTheAnalysis) {
  std::string inputs;
  for (const char* name : {"phase", "record_revision"}) {
    inputs += std::string("  ") + name + ": {payload: /" + name + "}\n";
  }
  inputs += "  message_revision: {payload: /message_revision, default: 1}\n";
  for (const char* name :
       {"remote_job_id", "copy_complete", "refund_resolved", "dispatch_confirmed_absent",
        "model_current", "spec_current", "remaining_budget"}) {
    inputs += std::string("  ") + name + ": {payload: /" + name + ", optional: true}\n";
  }
  inputs += "  user_authorized: {payload: /user_authorized, optional: true, default: true}\n";
  inputs += "  operation_id: {payload: /operation_id, optional: true}\n";
  const std::string m = (dir_ / "m.yaml").string();
  write_file(m, "format: kcat-json\ninputs:\n" + inputs);
  // The shipped policy's record-only inputs may not be mapped (RG311): a copy without the marker.
  const CliResult r = run({"lint", letter_state_recovery_policy(dir_), "--mapping", m});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find(m + ":5:59: warning[RG308]: input 'message_revision' has the default '1' "
                           "and derived input 'stale' is computed from it: a record without "
                           "payload /message_revision is decided as if it said '1'\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(m + ":13:73: warning[RG308]: input 'user_authorized' has the default "
                           "'true' and guard 'prepared_dispatch_reviewed' compares it: a record "
                           "without payload /user_authorized is decided as if it said 'true'\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(m + ": ok with 2 warnings\n"), std::string::npos) << r.err;
}

// lint --mapping: the shipped example passes; json carries both files' diagnostics in one array;
// sarif is refused (one run, one file); a policy with errors leaves the mapping unchecked.
TEST_F(MappingSafetyTest, LintChecksTheMapping) {
  CliResult r =
      run({"lint", kGate, "--mapping", "examples/kafka-spring-dlt.mapping.yaml", "--werror"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, std::string(kGate) + ": ok\nexamples/kafka-spring-dlt.mapping.yaml: ok\n");

  const std::string m = mapping_with("  attempts: {payload: /attempts, default: 0}\n");
  r = run({"lint", kGate, "--mapping", m, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("[\n  {\"severity\":\"error\",\"code\":\"RG309\",\"message\":\"the default "
                        "'0' of input 'attempts' can open a create verb",
                        0),
            0u)
      << r.out;

  r = run({"lint", kGate, "--mapping", m, "--format", "sarif"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: --mapping works with --format text, json or github, not sarif\n");

  write_file(dir_ / "bad.yaml", "policy: p\n");
  r = run({"lint", (dir_ / "bad.yaml").string(), "--mapping", m});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(m + ": not checked (the policy has errors)\n"), std::string::npos) << r.err;
}

// A `constant:` is a default every record gets, whatever the message says: checked as a default
// is (issue 35). `attempts: {constant: 0}` makes every letter a first attempt: RG309.
TEST_F(MappingSafetyTest, ConstantThatOpensCreateIsRefusedAsADefaultIs) {
  const std::string m = mapping_with("  attempts: {constant: 0}\n");
  const CliResult lint = run({"lint", kGate, "--mapping", m});
  EXPECT_EQ(lint.exit_code, 1) << lint.err;
  EXPECT_NE(
      lint.err.find(m + ":7:24: error[RG309]: the constant '0' of input 'attempts' can open a "
                        "create verb: every record, whatever the message says, can get "
                        "replay_once (rule 'known_failures:payment.capture/timeout') instead of "
                        "hold (invalid input)\n"),
      std::string::npos)
      << lint.err;
  EXPECT_NE(lint.err.find("whatever it says for attempts; map input 'attempts' from the message"),
            std::string::npos)
      << lint.err;
  // decide refuses the mapping: no letter is decided, so none is replayed.
  const CliResult r = decide(m, record(1, "", kOneAttempt));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(m + ": errors found; no record decided\n"), std::string::npos) << r.err;
}

// `already_committed: {constant: false}`: a letter whose payload says committed: true would be
// replayed. Refused before any record is read.
TEST_F(MappingSafetyTest, ConstantFalseOnAlreadyCommittedIsRefused) {
  const std::string m = (dir_ / "m.yaml").string();
  write_file(m,
             "format: kcat-json\n"
             "inputs:\n"
             "  topic: {header: kafka_dlt-original-topic}\n"
             "  error_class:\n"
             "    header: kafka_dlt-exception-cause-fqcn\n"
             "    map: {java.net.SocketTimeoutException: timeout}\n"
             "  attempts: {payload: /attempts}\n"
             "  idempotency_key: {payload: /idempotency_key, optional: true}\n"
             "  already_committed: {constant: false}\n"
             "  replays: {header: x-replay, optional: true}\n");
  const CliResult r = decide(
      m, record(1, "", R"({\"idempotency_key\":\"cap_1\",\"committed\":true,\"attempts\":1})"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(m + ":9:33: error[RG309]: the constant 'false' of input 'already_committed' "
                           "can open a create verb"),
            std::string::npos)
      << r.err;
  // Acknowledged (reviewed), it is accepted as an acknowledged default is.
  const std::string acknowledged = (dir_ / "ack.yaml").string();
  std::string text = read_file(m);
  const std::string line = "  already_committed: {constant: false}";
  text.replace(text.find(line), line.size(),
               "  already_committed: {constant: false, acknowledge: default-opens-create}");
  write_file(acknowledged, text);
  const CliResult lint = run({"lint", kGate, "--mapping", acknowledged});
  EXPECT_EQ(lint.exit_code, 0) << lint.err;
  EXPECT_EQ(lint.err.find("RG309"), std::string::npos) << lint.err;
  EXPECT_EQ(lint.err.find("RG310"), std::string::npos) << lint.err;
}

// A constant that cannot open a create verb, on an input a guard compares: RG308, as a default.
TEST_F(MappingSafetyTest, ConstantOnAComparedInputIsWarnedAbout) {
  const std::string m = mapping_with("  attempts: {constant: 9}\n");
  const CliResult lint = run({"lint", kGate, "--mapping", m});
  EXPECT_EQ(lint.exit_code, 0) << lint.err;
  EXPECT_NE(
      lint.err.find(m + ":7:24: warning[RG308]: input 'attempts' has the constant '9' and guard "
                        "'attempts_exhausted' compares it: every record, whatever the message "
                        "says, is decided as if it said '9'\n"),
      std::string::npos)
      << lint.err;
  EXPECT_EQ(run({"lint", kGate, "--mapping", m, "--werror"}).exit_code, 1);
}

// `queue_attribute:` is a constant read from a file: the same check, named by the attribute. The
// shipped fixture acknowledges it (a queue setting no message carries), so it passes.
TEST_F(MappingSafetyTest, QueueAttributeIsCheckedAsAConstant) {
  const std::string dir = "tests/data/inputs/sqs_redrive/";
  write_file(dir_ / "queue-attributes.json",
             read_file(kSourceDir + "/" + dir + "queue-attributes.json"));
  const std::string m = (dir_ / "m.yaml").string();
  write_file(m,
             "format: sqs-json\n"
             "queue_attributes: queue-attributes.json\n"
             "inputs:\n"
             "  topic: {record: topic}\n"
             "  error_class: {payload: /error}\n"
             "  attempts: {payload: /attempts}\n"
             "  max_receive_count: {queue_attribute: RedrivePolicy.maxReceiveCount}\n");
  CliResult r = run({"lint", dir + "policy.yaml", "--mapping", m});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(m + ":7:40: error[RG309]: the queue attribute "
                           "'RedrivePolicy.maxReceiveCount' ('3') of input 'max_receive_count' can "
                           "open a create verb: every record, whatever the message says, can get "
                           "replay_once (rule 'timeout')"),
            std::string::npos)
      << r.err;
  r = run({"lint", dir + "policy.yaml", "--mapping", dir + "from-attributes.mapping.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("RG309"), std::string::npos) << r.err;
}

// RG312: a broker's own delivery counter as the attempt budget holds every letter (the broker
// dead-letters at its limit) or never trips (RabbitMQ's x-death count). Each counter source warns,
// with its own mapping fixture; the consumer's own payload counter does not.
TEST_F(MappingSafetyTest, BrokerDeliveryCounterOnAGuardInputIsWarnedAbout) {
  for (const std::string& source :
       {std::string("{record: delivery-count}"),
        std::string("{header: retry_topic-attempts, decode: be-int}"),
        std::string("{header: kafka_deliveryAttempt, decode: be-int}"),
        std::string("{header: X-Delivery-Count, decode: decimal}"),
        std::string("{header: CloudPubSubDeadLetterSourceDeliveryCount, decode: decimal}"),
        std::string("{payload: /retry_count}"), std::string("{payload: /ApproximateReceiveCount}"),
        std::string("{payload: /x-death/0/count}")}) {
    const std::string m = mapping_with("  attempts: " + source + "\n");
    const CliResult r = run({"lint", kGate, "--mapping", m});
    EXPECT_EQ(r.exit_code, 0) << source << "\n" << r.err;
    EXPECT_NE(r.err.find(m + ":7:"), std::string::npos) << source << "\n" << r.err;
    EXPECT_NE(
        r.err.find(": warning[RG312]: input 'attempts' reads the broker's delivery counter ("),
        std::string::npos)
        << source << "\n"
        << r.err;
    EXPECT_NE(r.err.find(") and guard 'attempts_exhausted' compares it: a broker dead-letters a "
                         "message only once that counter has reached its limit"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(run({"lint", kGate, "--mapping", m, "--werror"}).exit_code, 1) << source;
  }
  const CliResult own =
      run({"lint", kGate, "--mapping", mapping_with("  attempts: {payload: /attempts}\n")});
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.err.find("RG312"), std::string::npos) << own.err;

  // Through a derived bool: the SQS receive count into `exhausted: {ge: [attempts, max]}`.
  const std::string dir = "tests/data/inputs/sqs_redrive/";
  const CliResult derived =
      run({"lint", dir + "policy.yaml", "--mapping", dir + "constant.mapping.yaml"});
  EXPECT_NE(derived.err.find("warning[RG312]: input 'attempts' reads the broker's delivery counter "
                             "(record delivery-count) and guard 'exhausted' compares derived input "
                             "'exhausted', computed from it"),
            std::string::npos)
      << derived.err;
}

// A YAML anchor (or alias) in a mapping file is the YAML reader's RG003, alone: the mapping
// checker used to read the empty document as well and add RG301 ("must be a YAML mapping").
TEST_F(MappingSafetyTest, AnAnchorGetsTheAnchorDiagnosticOnly) {
  const std::string m = (dir_ / "m.yaml").string();
  write_file(m, "format: &f kcat-json\ninputs:\n  topic: {header: x}\n");
  const CliResult r = run({"lint", kGate, "--mapping", m});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(m + ":1:9: error[RG003]: anchors are not allowed ('&f')"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("RG301"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(m + ": 1 error, 0 warnings"), std::string::npos) << r.err;
}

}  // namespace
