// `replaygate review` and the audit trail: review records for the recovery fixtures, secrets that
// never reach any output, the audit log's chain and torn-tail handling, failed appends (file size
// limit, unwritable path) that report nothing as taken, and concurrent writers killed with SIGKILL
// mid-append whose every acknowledged entry survives.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "audit/audit_log.h"
#include "tests/support/cli_runner.h"
#include "tests/support/paths.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;
namespace audit = replaygate::audit;

const std::string kPolicy = kSourceDir + "/policies/generation_recovery.yaml";
const std::string kExamples = kSourceDir + "/examples/recovery/";

class RecoveryTest : public CliFixture {
 protected:
  CliResult review(const std::string& fixture, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"review",
                                     "--policy",
                                     kPolicy,
                                     "--message",
                                     kExamples + fixture + ".message.json",
                                     "--record",
                                     kExamples + fixture + ".record.json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }

  std::string log() const { return (dir_ / "audit.log").string(); }
};

nlohmann::json json_of(const std::string& text) { return nlohmann::json::parse(text); }

// ---- review ----

TEST_F(RecoveryTest, AcceptedWithKnownJobObservesInPlainWords) {
  const CliResult r = review("accepted");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string prefix =
      "review record\n"
      "  message id:           msg-0193\n"
      "  operation id:         op-7731\n"
      "  action type:          generate_image\n"
      "  attempt count:        3\n"
      "  last error category:  consumer_timeout\n"
      "  known remote job id:  job_5f1c\n"
      "  operation phase:      accepted\n"
      "  revisions:            message 4, record 4\n"
      "  sensitive fields:     <redacted: field message.credentials>, <redacted: field "
      "message.prompt>, <redacted: field message.signed_url>\n"
      "inputs (the value the policy used, and where it came from)\n"
      "  phase:                      \"accepted\" (from record.phase; record-only)\n"
      "  message_revision:           4 (from message.revision)\n"
      "  record_revision:            4 (from record.revision; record-only)\n"
      "  stale:                      false (derived: message_revision < record_revision)\n"
      "  remote_job_id:              \"job_5f1c\" (from record.remote_job_id)\n"
      "  copy_complete:              <missing> (record-only; not in record.copy_complete)\n"
      "  refund_resolved:            <missing> (record-only; not in record.refund_resolved)\n"
      "  dispatch_confirmed_absent:  <missing> (record-only; not in "
      "record.dispatch_confirmed_absent)\n"
      "  model_current:              true (from record.model_current; record-only)\n"
      "  spec_current:               true (from record.spec_current; record-only)\n"
      "  user_authorized:            true (from record.user_authorized; record-only)\n"
      "  remaining_budget:           120 (from record.remaining_budget; record-only)\n"
      "  operator_confirmed:         false (no --confirm; operator-only)\n"
      "  operation_id:               \"op-7731\" (from record.operation_id)\n"
      "decision\n"
      "  action:               observe (effect read)\n"
      "  in plain words:       it will read status only: no output is copied and no new work is "
      "submitted\n"
      "  what it does:         read the status of the known remote job (GET the same id); never "
      "resubmit\n"
      "  rule:                 known_remote_job\n"
      "  reason:               the remote job id is known; observe that job instead of "
      "resubmitting\n"
      "  policy:               generation-recovery revision 1, table ";
  EXPECT_EQ(r.out.substr(0, prefix.size()), prefix) << r.out;
  EXPECT_NE(r.out.find("  confirmed:            no (review only; nothing recorded"),
            std::string::npos);
}

TEST_F(RecoveryTest, ReplayingAnAcceptedMessageTwiceObservesBothTimes) {
  for (int i = 0; i < 2; ++i) {
    const CliResult r = review("accepted", {"--format", "json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = json_of(r.out);
    EXPECT_EQ(j["action"], "observe");
    EXPECT_EQ(j["effect"], "read");
  }
  // Even an operator's confirmation does not turn it into a create.
  const CliResult r =
      review("accepted", {"--format", "json", "--confirm", "--operator", "ana", "--audit", log()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_of(r.out)["action"], "observe");
}

TEST_F(RecoveryTest, FailedPostWithErrorJobIdObserves) {
  const CliResult r = review("submit502", {"--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json_of(r.out);
  EXPECT_EQ(j["remote_job_id"], "job_9a02");
  EXPECT_EQ(j["action"], "observe");
  EXPECT_EQ(j["redacted"], nlohmann::json::array({"message.error.token"}));
}

// An empty remote_job_id in the record or the message is "not given": the search goes on to the
// error envelope's job id, so the known job is never dispatched again (found by a break-it test:
// "" stopped the search, and with --confirm the job was dispatched a second time).
TEST_F(RecoveryTest, EmptyJobIdDoesNotHideTheEnvelopesJobId) {
  const std::string message = (dir_ / "m.json").string(), record = (dir_ / "r.json").string();
  for (const auto& [message_extra, record_extra] : std::vector<std::pair<std::string, std::string>>{
           {"", R"(, "remote_job_id": "")"},
           {R"("remote_job_id": "", )", R"(, "remote_job_id": null)"},
           {R"("remote_job_id": "", )", ""}}) {
    SCOPED_TRACE(message_extra + record_extra);
    write_file(message,
               "{" + message_extra +
                   R"("message_id": "msg-0201", "operation_id": "op-7740", "revision": 2, )"
                   R"("error": {"status": 502, "job_id": "job_9a02"}})");
    write_file(record, R"({"operation_id": "op-7740", "phase": "submitting", "revision": 2)" +
                           record_extra + "}");
    const CliResult r =
        run({"review", "--policy", kPolicy, "--message", message, "--record", record, "--format",
             "json", "--confirm", "--operator", "ana", "--audit", log()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = json_of(r.out);
    EXPECT_EQ(j["remote_job_id"], "job_9a02");
    EXPECT_EQ(j["action"], "observe");
    EXPECT_EQ(j["effect"], "read");
  }
}

TEST_F(RecoveryTest, DeliveryFailureReusesTheOutput) {
  const CliResult r = review("delivery", {"--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json_of(r.out);
  EXPECT_EQ(j["action"], "retry_delivery");
  EXPECT_EQ(j["effect"], "copy");
  EXPECT_EQ(j["plain"], "it will copy an existing output: no new work is submitted");
  EXPECT_EQ(j["redacted"], nlohmann::json::array({"message.output_url"}));
}

TEST_F(RecoveryTest, StaleMessageForDeliveredOperationIsObsolete) {
  const CliResult r = review("stale", {"--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json_of(r.out);
  EXPECT_EQ(j["action"], "acknowledge_obsolete");
  EXPECT_EQ(j["rule"], "stale_message");
}

TEST_F(RecoveryTest, PreparedHoldsUntilConfirmedThenDispatchesAndRecords) {
  CliResult r = review("prepared", {"--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json_of(r.out)["action"], "hold_for_review");
  EXPECT_FALSE(fs::exists(log()));

  r = review("prepared", {"--confirm", "--operator", "ana", "--audit", log()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  action:               dispatch (effect create)\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  in plain words:       it will SUBMIT NEW WORK (a new generation "
                       "request)\n"),
            std::string::npos);
  EXPECT_NE(r.out.find("confirmed:            yes, by ana; audit entry 1 (hash "),
            std::string::npos);
  const std::string text = read_file(log());
  const auto entry = json_of(text.substr(0, text.find('\n')));
  EXPECT_EQ(entry["kind"], "decision");
  EXPECT_EQ(entry["seq"], 1);
  EXPECT_EQ(entry["prev"], std::string(32, '0'));
  EXPECT_EQ(entry["operator"], "ana");
  EXPECT_EQ(entry["message_id"], "msg-0210");
  EXPECT_EQ(entry["operation_id"], "op-7760");
  EXPECT_EQ(entry["action"], "dispatch");
  EXPECT_EQ(entry["rule"], "prepared_dispatch_reviewed");
  EXPECT_EQ(entry["policy"], "generation-recovery");
  EXPECT_EQ(entry["policy_revision"], 1);
  EXPECT_EQ(entry["record_revision"], 1);
  EXPECT_EQ(entry["table_checksum"].get<std::string>().size(), 32u);

  // The worker's result refers to the decision.
  r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "2", "--outcome",
           "dispatched job_e410"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 43), "recorded result entry 2 for decision 1 (has");
  r = run(
      {"audit", "result", "--log", log(), "--decision", "7", "--revision", "2", "--outcome", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("has no decision entry 7"), std::string::npos) << r.err;
  r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(": ok, 2 entries (1 decision, 1 result), last hash "), std::string::npos)
      << r.out;
}

TEST_F(RecoveryTest, SecretsNeverReachAnyOutputOrTheLog) {
  const char* secrets[] = {"SECRET-PROMPT", "SECRET-SIG", "SECRET-TOKEN"};
  for (const char* fixture : {"accepted", "submit502", "delivery", "prepared"}) {
    for (const char* format : {"text", "json"}) {
      const CliResult r =
          review(fixture, {"--format", format, "--confirm", "--operator", "ana", "--audit", log()});
      ASSERT_EQ(r.exit_code, 0) << fixture << r.err;
      for (const char* secret : secrets) {
        EXPECT_EQ(r.out.find(secret), std::string::npos) << fixture << " " << secret;
        EXPECT_EQ(r.err.find(secret), std::string::npos) << fixture << " " << secret;
      }
    }
  }
  const std::string text = read_file(log());
  EXPECT_FALSE(text.empty());
  for (const char* secret : secrets) EXPECT_EQ(text.find(secret), std::string::npos) << secret;
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
}

TEST_F(RecoveryTest, AnIdentifyingFieldDeclaredSensitiveIsRedactedToo) {
  write_file(dir_ / "m.json",
             R"({"message_id": "m1", "operation_id": "op1", "revision": 1, "token": "tk-SECRET"})");
  write_file(
      dir_ / "r.json",
      R"({"operation_id": "op1", "phase": "accepted", "revision": 1, "remote_job_id": "j"})");
  std::string policy = read_file(kPolicy);
  policy.replace(policy.find("sensitive: [prompt,"), 19, "sensitive: [message_id, prompt,");
  write_file(dir_ / "p.yaml", policy);
  const CliResult r =
      run({"review", "--policy", (dir_ / "p.yaml").string(), "--message",
           (dir_ / "m.json").string(), "--record", (dir_ / "r.json").string(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json_of(r.out);
  EXPECT_EQ(j["message_id"], "<redacted: field message_id>");
  EXPECT_EQ(j["redacted"], nlohmann::json::array({"message.message_id", "message.token"}));
  EXPECT_EQ(r.out.find("tk-SECRET"), std::string::npos);
}

TEST_F(RecoveryTest, UnknownPhaseGetsManualReconciliation) {
  write_file(dir_ / "m.json", R"({"message_id": "m1", "operation_id": "op1", "revision": 1})");
  write_file(dir_ / "r.json", R"({"operation_id": "op1", "phase": "rendering", "revision": 1})");
  const CliResult r = run({"review", "--policy", kPolicy, "--message", (dir_ / "m.json").string(),
                           "--record", (dir_ / "r.json").string(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json_of(r.out);
  EXPECT_EQ(j["action"], "manual_reconciliation");
  EXPECT_EQ(j["reason"], "invalid input: phase");
}

// A message field cannot forge lines of the text record or drive the terminal: every value review
// prints is escaped as explain escapes letter keys (control bytes as \u00XX, '\' doubled).
TEST_F(RecoveryTest, MessageFieldsAreEscapedInTheTextRecord) {
  write_file(dir_ / "inj.json",
             "{\"message_id\":\"m1\\ndecision\\n  action:               dispatch (effect "
             "create)\\n\\u001b[8m\",\"action_type\":\"gen\\\\\\r\",\"last_error_category\":"
             "\"t\\u0000x\\u007f\",\"revision\":1}");
  const CliResult r = run({"review", "--policy", kPolicy, "--message", (dir_ / "inj.json").string(),
                           "--record", kExamples + "prepared.record.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string prefix =
      "review record\n"
      "  message id:           m1\\u000adecision\\u000a  action:               dispatch (effect "
      "create)\\u000a\\u001b[8m\n"
      "  operation id:         op-7760\n"
      "  action type:          gen\\\\\\u000d\n"
      "  attempt count:        -\n"
      "  last error category:  t\\u0000x\\u007f\n"
      "  known remote job id:  -\n"
      "  operation phase:      prepared\n"
      "  revisions:            message 1, record 1\n"
      "  sensitive fields:     none present\n"
      "inputs (the value the policy used, and where it came from)\n";
  EXPECT_EQ(r.out.substr(0, prefix.size()), prefix);
  EXPECT_NE(r.out.find("decision\n  action:               hold_for_review (effect none)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.out.find('\r'), std::string::npos);
}

// An identifying field that is not a string or an integer is an invalid message or record: it is
// named, nothing is printed, decided or written to the audit log.
// Malformed JSON in the message or the record file: the error gives the position and a fixed
// reason, never the parser's "last read: '...'" text, which would quote a secret value (M1).
TEST_F(RecoveryTest, MalformedJsonNeverPrintsTheBytesItRead) {
  const std::string table = (dir_ / "gate.rgt").string();
  ASSERT_EQ(run({"compile", kPolicy, "-o", table}).exit_code, 0);
  const std::string good_message = kExamples + "submit502.message.json";
  const std::string good_record = kExamples + "submit502.record.json";
  const struct {
    std::string text, where;
  } cases[] = {
      {"{\"message_id\":\"m\",\"operation_id\":\"op-7740\",\"prompt\":\"SECRET-PROMPT-abc\x01"
       "def\",\"revision\":2}",
       ":1:71: bad JSON (unescaped control character in a string)"},
      {R"({"message_id":"m","prompt":"SECRET-PROMPT-abc\qdef","revision":2})",
       ":1:47: bad JSON (bad escape in a string)"},
      {R"({"message_id":"m","prompt":"SECRET-PROMPT-abc\u12zz","revision":2})",
       ":1:50: bad JSON (bad \\u escape in a string)"},
      {R"({"message_id":"m","prompt":"SECRET-PROMPT-abc\uD800x","revision":2})",
       ":1:52: bad JSON (bad \\u surrogate pair in a string)"},
      {R"({"message_id":"m","prompt":"SECRET-PROMPT-abc)", ":1:46: bad JSON (unclosed string)"},
      {R"({"message_id":"m","prompt":SECRET-PROMPT-abc})", ":1:28: bad JSON (malformed literal)"},
      {R"({"message_id":"m","prompt":-SECRET-PROMPT-abc})", ":1:29: bad JSON (malformed number)"},
  };
  const std::string file = (dir_ / "bad.json").string();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    write_file(file, c.text);
    for (const bool is_message : {true, false}) {
      for (const std::string& from : {std::string("--policy"), std::string("--table")}) {
        for (const std::string& format : {std::string("text"), std::string("json")}) {
          const CliResult r = run({"review", from, from == "--policy" ? kPolicy : table,
                                   "--message", is_message ? file : good_message, "--record",
                                   is_message ? good_record : file, "--format", format});
          EXPECT_EQ(r.exit_code, 1);
          EXPECT_EQ(r.out, "");
          EXPECT_EQ(r.err, std::string("replaygate: invalid ") +
                               (is_message ? "message: " : "operation record: ") + file + c.where +
                               "\n");
          EXPECT_EQ(r.err.find("SECRET"), std::string::npos) << r.err;
          EXPECT_EQ(r.err.find("last read"), std::string::npos) << r.err;
        }
      }
    }
  }
}

TEST_F(RecoveryTest, NonScalarIdentifyingFieldIsAnInvalidRecord) {
  const std::string record = kExamples + "prepared.record.json";
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"message_id": {"token": "SECRET-X"}, "revision": 1})",
            "1:16: 'message_id' is an object"},
           {R"({"message_id": "m1", "action_type": ["a"], "revision": 1})",
            "1:37: 'action_type' is an array"},
           {R"({"message_id": "m1", "last_error_category": true, "revision": 1})",
            "1:45: 'last_error_category' is a boolean"},
           {R"({"message_id": "m1", "attempt_count": 1.5, "revision": 1})",
            "1:39: 'attempt_count' is a number with a fraction"},
           {R"({"message_id": "m1", "revision": {"n": 1}})", "1:34: 'revision' is an object"},
           {R"({"message_id": "m1", "revision": 1, "error": {"job_id": {"id": "j"}}})",
            "1:57: 'error.job_id' is an object"},
           {R"({"message_id": 100000000000000000000000, "revision": 1})",
            "1:16: 'message_id' is a number beyond the 64-bit integer range"}}) {
    SCOPED_TRACE(text);
    const std::string message = (dir_ / "m.json").string();
    write_file(message, text);
    fs::remove(log());
    const CliResult r = run({"review", "--policy", kPolicy, "--message", message, "--record",
                             record, "--confirm", "--operator", "ana", "--audit", log()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "replaygate: invalid message: " + message + ":" + why +
                         "; an identifying field must be a string or an integer (nothing "
                         "decided, nothing recorded)\n");
    EXPECT_FALSE(fs::exists(log()));
  }
  // A stringified or listed error envelope could hide the remote job id: invalid, not "no job".
  for (const auto& [error, kind] : std::vector<std::pair<std::string, std::string>>{
           {R"("{\"job_id\":\"job_9a02\"}")", "a string"},
           {R"([{"job_id": "job_9a02"}])", "an array"},
           {"502", "a number"}}) {
    SCOPED_TRACE(error);
    const std::string message = (dir_ / "m.json").string();
    write_file(message, R"({"message_id": "m1", "revision": 1, "error": )" + error + "}");
    fs::remove(log());
    const CliResult r = run({"review", "--policy", kPolicy, "--message", message, "--record",
                             record, "--confirm", "--operator", "ana", "--audit", log()});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "replaygate: invalid message: " + message + ":1:46: 'error' is " + kind +
                         "; the error envelope must be an object (nothing decided, nothing "
                         "recorded)\n");
    EXPECT_FALSE(fs::exists(log()));
  }
  write_file(dir_ / "r.json",
             R"({"operation_id": "op-7760", "phase": ["prepared"], "revision": 1})");
  const CliResult r =
      run({"review", "--policy", kPolicy, "--message", kExamples + "prepared.message.json",
           "--record", (dir_ / "r.json").string(), "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "replaygate: invalid operation record: " + (dir_ / "r.json").string() +
                       ":1:38: 'phase' is an array; an identifying field must be a string or an "
                       "integer (nothing decided, nothing recorded)\n");
  // An integer id is still an id.
  write_file(dir_ / "m.json", R"({"message_id": 17, "revision": 1})");
  const CliResult ok = run({"review", "--policy", kPolicy, "--message", (dir_ / "m.json").string(),
                            "--record", record, "--format", "json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(json_of(ok.out)["message_id"], "17");
}

TEST_F(RecoveryTest, BadInputsAndUsage) {
  write_file(dir_ / "m.json", R"({"message_id": "m1", "operation_id": "op1", "revision": 1})");
  write_file(dir_ / "other.json", R"({"operation_id": "op2", "phase": "accepted", "revision": 1})");
  write_file(dir_ / "list.json", "[1, 2]");
  const std::string m = (dir_ / "m.json").string();
  CliResult r = run(
      {"review", "--policy", kPolicy, "--message", m, "--record", (dir_ / "other.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate: the message and the operation record name different operations\n");
  r = run(
      {"review", "--policy", kPolicy, "--message", m, "--record", (dir_ / "list.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate: invalid operation record: " + (dir_ / "list.json").string() +
                       ":1:1: not a JSON object\n");
  // A key given twice, at the top or inside a nested object, is refused (the last would win).
  write_file(
      dir_ / "twice.json",
      R"({"operation_id": "op1", "phase": "accepted", "revision": 1, "phase": "delivered"})");
  r = run(
      {"review", "--policy", kPolicy, "--message", m, "--record", (dir_ / "twice.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate: invalid operation record: " + (dir_ / "twice.json").string() +
                       ":1:61: has the key 'phase' twice\n");
  write_file(dir_ / "nested.json", R"({"message_id": "m1", "operation_id": "op1", "revision": 1,)"
                                   R"( "error": {"job_id": "a", "code": 1, "job_id": "b"}})");
  r = run({"review", "--policy", kPolicy, "--message", (dir_ / "nested.json").string(), "--record",
           (dir_ / "other.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate: invalid message: " + (dir_ / "nested.json").string() +
                       ":1:96: has the key 'job_id' twice\n");
  // A key is shown escaped (no raw control bytes reach the terminal), and bad UTF-8 is named.
  for (const auto& [file, text, problem] :
       {std::tuple<std::string, std::string, std::string>{
            "ctrl.json", "{\"a\\u001b[31m\\nFAKE\": 1, \"a\\u001b[31m\\nFAKE\": 2}",
            ":1:26: has the key 'a\\u001b[31m\\u000aFAKE' twice\n"},
        {"latin1.json", "{\"message_id\": \"caf\xE9\"}", ":1:20: not valid UTF-8\n"}}) {
    write_file(dir_ / file, text);
    r = run({"review", "--policy", kPolicy, "--message", (dir_ / file).string(), "--record", m});
    EXPECT_EQ(r.exit_code, 1) << file;
    EXPECT_EQ(r.err, "replaygate: invalid message: " + (dir_ / file).string() + problem);
  }
  // The same key in two different objects is not a duplicate.
  write_file(
      dir_ / "apart.json",
      R"({"message_id": "m1", "operation_id": "op1", "revision": 1, "error": {"revision": 2}})");
  r = run({"review", "--policy", kPolicy, "--message", (dir_ / "apart.json").string(), "--record",
           (dir_ / "m.json").string()});
  EXPECT_EQ(r.err.find("twice"), std::string::npos) << r.err;
  write_file(dir_ / "deep.json", std::string(5000, '[') + std::string(5000, ']'));
  r = run(
      {"review", "--policy", kPolicy, "--message", (dir_ / "deep.json").string(), "--record", m});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate: invalid message: " + (dir_ / "deep.json").string() +
                       ":1:33: nesting deeper than 32 levels\n");
  r = run({"review", "--policy", kPolicy, "--message", m, "--record",
           (dir_ / "missing.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"review", "--policy", kPolicy, "--message", m, "--record", m, "--confirm"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give --audit FILE and --operator NAME"), std::string::npos);
  r = run({"review", "--message", m, "--record", m});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give exactly one of --policy and --table"), std::string::npos);
}

TEST_F(RecoveryTest, WorksFromACompiledTable) {
  const std::string table = (dir_ / "g.rgt").string();
  ASSERT_EQ(run({"compile", kPolicy, "-o", table}).exit_code, 0);
  const CliResult r =
      run({"review", "--table", table, "--message", kExamples + "accepted.message.json", "--record",
           kExamples + "accepted.record.json", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = json_of(r.out);
  EXPECT_EQ(j["action"], "observe");
  // Without the policy only the built-in secret names are known; these fixtures use them.
  EXPECT_EQ(r.out.find("SECRET"), std::string::npos);
}

TEST_F(RecoveryTest, PolicyLanguageFormDecidesTheSame) {
  const std::string yaml_table = (dir_ / "y.rgt").string();
  const std::string dsl_table = (dir_ / "d.rgt").string();
  ASSERT_EQ(run({"compile", kPolicy, "-o", yaml_table}).exit_code, 0);
  ASSERT_EQ(run({"compile", kSourceDir + "/policies/generation_recovery.policy", "-o", dsl_table})
                .exit_code,
            0);
  auto digest = [&](const std::string& table) {
    const CliResult r = run({"dump", table});
    const size_t at = r.out.find("decision digest: ");
    return at == std::string::npos ? std::string("?") : r.out.substr(at, 49);
  };
  EXPECT_EQ(digest(yaml_table), digest(dsl_table));
  EXPECT_NE(digest(yaml_table), "?");
}

TEST_F(RecoveryTest, UnwritableAuditLogTakesNoDecision) {
  const CliResult r = review("prepared", {"--confirm", "--operator", "ana", "--audit",
                                          (dir_ / "no/such/dir/audit.log").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");  // nothing reported as taken
  EXPECT_NE(r.err.find("cannot open audit log"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the decision was NOT recorded and is not taken"), std::string::npos);
  const CliResult dir =
      review("prepared", {"--confirm", "--operator", "ana", "--audit", dir_.string()});
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_EQ(dir.out, "");
  const CliResult full =
      review("prepared", {"--confirm", "--operator", "ana", "--audit", "/dev/full"});
  EXPECT_EQ(full.exit_code, 2);
  EXPECT_EQ(full.out, "");
  EXPECT_NE(full.err.find("is not a regular file"), std::string::npos) << full.err;
}

// ---- audit library ----

nlohmann::json decision(const std::string& message_id) {
  return {{"kind", "decision"},
          {"time", "2026-11-29T00:00:00Z"},
          {"operator", "t"},
          {"message_id", message_id},
          {"operation_id", "op"},
          {"action", "observe"},
          {"effect", "read"},
          {"rule", "r"},
          {"policy", "p"},
          {"policy_revision", 1},
          {"table_checksum", std::string(32, 'a')},
          {"record_revision", 1}};
}

TEST_F(RecoveryTest, VerifyDetectsEditsRemovalsAndTornTails) {
  for (int i = 1; i <= 3; ++i)
    ASSERT_TRUE(audit::append(log(), decision("m" + std::to_string(i))).ok);
  const std::string good = read_file(log());
  audit::VerifyReport report = audit::verify_bytes(good);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.entries, 3u);

  std::string edited = good;
  edited.replace(edited.find("\"m1\""), 4, "\"mX\"");
  report = audit::verify_bytes(edited);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0],
            "line 2: prev hash does not match the previous line (a line before it was edited, "
            "removed or reordered)");

  const size_t first_end = good.find('\n') + 1;
  const size_t second_end = good.find('\n', first_end) + 1;
  std::string removed = good.substr(0, first_end) + good.substr(second_end);
  report = audit::verify_bytes(removed);
  ASSERT_EQ(report.problems.size(), 2u);
  EXPECT_EQ(report.problems[0], "line 2: seq 3, expected 2 (a line was removed or moved)");

  report = audit::verify_bytes(good + "{\"action\":\"obs");
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report.torn_tail);
  EXPECT_EQ(report.torn_bytes, 14u);
  report = audit::verify_bytes(good + "garbage\n");
  EXPECT_EQ(report.problems, std::vector<std::string>{"line 4: not valid JSON"});

  // An appender drops a torn tail first, then continues the chain.
  write_file(log(), good + "{\"action\":\"obs");
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("torn last line (14 bytes without a newline)"), std::string::npos) << r.out;
  const audit::AppendResult appended = audit::append(log(), decision("m4"));
  ASSERT_TRUE(appended.ok) << appended.error;
  EXPECT_EQ(appended.seq, 4u);
  EXPECT_EQ(appended.removed_torn_tail, "{\"action\":\"obs");
  report = audit::verify_bytes(read_file(log()));
  EXPECT_TRUE(report.ok());
  EXPECT_FALSE(report.torn_tail);
  EXPECT_EQ(report.entries, 4u);

  // A broken last line stops appends (the chain cannot be continued).
  write_file(log(), good + "garbage\n");
  const audit::AppendResult refused = audit::append(log(), decision("m5"));
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.error.rfind("refusing to append to " + log() +
                                    ", which does not verify: line 4: not valid JSON; nothing was "
                                    "changed.",
                                0),
            0u)
      << refused.error;
  r = run({"audit", "verify", "--format", "json", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(json_of(r.out)["problems"], nlohmann::json::array({"line 4: not valid JSON"}));
}

// A write cut short by the file size limit (as by a full disk) leaves no partial line.
TEST_F(RecoveryTest, ShortWriteIsRemovedAndReported) {
  ASSERT_TRUE(audit::append(log(), decision("m1")).ok);
  const std::string before = read_file(log());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {
      static_cast<rlim_t>(before.size() + 20), static_cast<rlim_t>(before.size() + 20)
    };
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const audit::AppendResult r = audit::append(log(), decision("m2"));
    const std::string msg = r.ok ? "ok" : r.error;
    (void)!::write(pipe_fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) message.append(buf, n);
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_NE(message.find("short write (20 of "), std::string::npos) << message;
  EXPECT_EQ(read_file(log()), before);  // the partial line was truncated away
  EXPECT_TRUE(audit::verify_bytes(read_file(log())).ok());
}

// Concurrent writers appending as fast as they can, killed with SIGKILL at random moments: the log
// verifies afterwards and holds every entry a writer acknowledged (ack = after fsync).
TEST_F(RecoveryTest, ConcurrentWritersKilledMidAppendLoseNothingAcknowledged) {
  constexpr int kWriters = 4;
  constexpr int kRounds = 3;
  std::set<std::string> acknowledged;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::pair<pid_t, int>> writers;
    for (int w = 0; w < kWriters; ++w) {
      int fds[2];
      ASSERT_EQ(::pipe(fds), 0);
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(fds[0]);
        for (int i = 0;; ++i) {
          const std::string id =
              "r" + std::to_string(round) + "w" + std::to_string(w) + "i" + std::to_string(i);
          if (!audit::append(log(), decision(id)).ok) ::_exit(3);
          const std::string ack = id + "\n";
          if (::write(fds[1], ack.data(), ack.size()) != static_cast<ssize_t>(ack.size())) {
            ::_exit(4);
          }
        }
      }
      ::close(fds[1]);
      writers.emplace_back(pid, fds[0]);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 70 * round));
    for (auto& [pid, fd] : writers) ::kill(pid, SIGKILL);
    for (auto& [pid, fd] : writers) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
      std::string acks;
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) acks.append(buf, n);
      ::close(fd);
      std::istringstream lines(acks);
      for (std::string line; std::getline(lines, line);) {
        if (!line.empty() && lines.good()) acknowledged.insert(line);  // a whole ack line
      }
    }
  }
  const std::string text = read_file(log());
  const audit::VerifyReport report = audit::verify_bytes(text);
  EXPECT_TRUE(report.ok()) << report.problems.front();
  EXPECT_GT(acknowledged.size(), 10u);
  std::set<std::string> present;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) present.insert(j.value("message_id", ""));
  }
  for (const std::string& id : acknowledged) EXPECT_TRUE(present.count(id)) << id;
  const CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

}  // namespace

namespace {

// ---- decide --audit ----

TEST_F(RecoveryTest, DecideAuditRecordsEveryDecisionBeforePrintingIt) {
  const std::string letters = std::string(RG_SOURCE_DIR) + "/examples/letters.jsonl";
  const std::string gate = std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml";
  const CliResult r =
      run({"decide", "--policy", gate, "--audit", log(), "--operator", "ana", letters});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the example holds invalid letters on purpose
  const std::string text = read_file(log());
  const audit::VerifyReport report = audit::verify_bytes(text);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.entries, 20u);
  EXPECT_EQ(report.decisions, 20u);
  // Entry N is stdout line N: same verb and rule, in input order.
  std::vector<std::string> out_lines, log_lines;
  for (const auto* src : {&r.out, &text}) {
    auto& lines = src == &r.out ? out_lines : log_lines;
    size_t at = 0;
    while (at < src->size()) {
      const size_t end = src->find('\n', at);
      lines.push_back(src->substr(at, end - at));
      at = end + 1;
    }
  }
  ASSERT_EQ(out_lines.size(), 20u);
  ASSERT_EQ(log_lines.size(), 20u);
  for (size_t i = 0; i < out_lines.size(); ++i) {
    const nlohmann::json printed = json_of(out_lines[i]);
    const nlohmann::json logged = json_of(log_lines[i]);
    EXPECT_EQ(logged["seq"], i + 1);
    EXPECT_EQ(logged["action"], printed["verb"]);
    EXPECT_EQ(logged["rule"], printed["rule"]);
    EXPECT_EQ(logged["record"], printed["n"]);
    EXPECT_EQ(logged["operator"], "ana");
    EXPECT_EQ(logged["table_checksum"], printed["table"]);
  }
  // A second run continues the same chain.
  const CliResult again =
      run({"decide", "--policy", gate, "--audit", log(), "--operator", "ana", letters});
  EXPECT_EQ(again.exit_code, 1);
  const audit::VerifyReport both = audit::verify_bytes(read_file(log()));
  EXPECT_TRUE(both.ok());
  EXPECT_EQ(both.entries, 40u);
}

TEST_F(RecoveryTest, DecideAuditFailurePrintsNoDecision) {
  const std::string letters = std::string(RG_SOURCE_DIR) + "/examples/letters.jsonl";
  const std::string gate = std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml";
  const CliResult full =
      run({"decide", "--policy", gate, "--audit", "/dev/full", "--operator", "ana", letters});
  EXPECT_EQ(full.exit_code, 2);
  EXPECT_EQ(full.out, "");
  EXPECT_NE(full.err.find("were NOT recorded and are not taken"), std::string::npos) << full.err;
  const CliResult missing = run({"decide", "--policy", gate, "--audit",
                                 (dir_ / "no/dir/log").string(), "--operator", "ana", letters});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.out, "");
  const CliResult no_operator = run({"decide", "--policy", gate, "--audit", log(), letters});
  EXPECT_EQ(no_operator.exit_code, 2);
  EXPECT_NE(no_operator.err.find("--audit needs --operator NAME"), std::string::npos);
  EXPECT_FALSE(fs::exists(log()));
}

}  // namespace

namespace {

// ---- a last entry that lost only its newline: a problem, not a torn tail ----

// Three decisions recorded by `decide --audit` (all printed), then the final '\n' lost.
class UnterminatedTest : public RecoveryTest {
 protected:
  const std::string kLetter =
      "{\"message_id\":\"m-001\",\"topic\":\"payment.capture\",\"error_class\":\"timeout\","
      "\"attempts\":1,\"idempotency_key\":\"cap_9f3a\",\"already_committed\":false}\n";
  std::string good_;
  void SetUp() override {
    RecoveryTest::SetUp();
    const std::string gate = std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml";
    const std::string letters = kLetter + kLetter + kLetter;
    const CliResult r =
        run({"decide", "--policy", gate, "--audit", log(), "--operator", "ana"}, letters);
    ASSERT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3) << r.out << r.err;
    good_ = read_file(log());
    ASSERT_EQ(good_.back(), '\n');
    write_file(log(), good_.substr(0, good_.size() - 1));
  }
};

// A whole entry without its newline is no cut of a writer's line (a writer writes the line and
// its newline in one write): it is a problem, never removed and never continued (issue 17
// follow-up: "torn" is only a cut of the next line a writer writes).
const char kNoNewline4[] =
    "line 3: without a newline, and not a torn line (it is a whole JSON object): an append writes "
    "a whole line and its newline in one write, so a crash leaves only a cut of the next entry, "
    "never these bytes";

TEST_F(UnterminatedTest, VerifyReportsAWholeEntryWithoutItsNewlineAsAProblem) {
  const audit::VerifyReport report = audit::verify_bytes(read_file(log()));
  EXPECT_FALSE(report.ok());
  EXPECT_TRUE(report.unterminated);
  EXPECT_FALSE(report.torn_tail);
  EXPECT_EQ(report.torn_bytes, 0u);
  EXPECT_EQ(report.entries, 3u);  // checked like any line: it is a valid entry
  EXPECT_EQ(report.decisions, 3u);
  EXPECT_EQ(report.problems, std::vector<std::string>{kNoNewline4});
  EXPECT_EQ(report.last_hash, audit::verify_bytes(good_).last_hash);
  CliResult r = run({"audit", "verify", log()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.substr(0, r.out.find('\n') + 1), log() + ": " + kNoNewline4 + "\n");
  EXPECT_NE(r.out.find(log() + ": BROKEN, 3 entries (3 decisions, 0 results), last hash " +
                       report.last_hash + "\n"),
            std::string::npos)
      << r.out;
  r = run({"audit", "verify", "--format", "json", log()});
  EXPECT_EQ(r.exit_code, 1);
  const nlohmann::json j = json_of(r.out);
  EXPECT_EQ(j["unterminated"], true);
  EXPECT_EQ(j["torn_tail"], false);
  EXPECT_EQ(j["appendable"], false);
  EXPECT_EQ(j["entries"], 3);
}

TEST_F(UnterminatedTest, AuditResultRefusesItUntilTheNewlineIsBack) {
  const std::string before = read_file(log());
  CliResult r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "1",
                     "--outcome", "done"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("replaygate: refusing to append to " + log() +
                            ", which does not verify: " + kNoNewline4 +
                            "; nothing was changed. Its last line (line 3) has no newline",
                        0),
            0u)
      << r.err;
  EXPECT_EQ(read_file(log()), before);
  // The operator checks the line (a whole entry) and ends it (printf '\n' >> LOG): appends go on.
  write_file(log(), good_);
  r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "1", "--outcome",
           "done"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("recorded result entry 4 for decision 1 (hash ", 0), 0u) << r.out;
  const std::string text = read_file(log());
  EXPECT_EQ(text.substr(0, good_.size()), good_);
  const audit::VerifyReport report = audit::verify_bytes(text);
  EXPECT_TRUE(report.ok()) << report.problems.front();
  EXPECT_EQ(report.entries, 4u);
  EXPECT_EQ(json_of(text.substr(good_.size()))["prev"], audit::verify_bytes(good_).last_hash);
}

TEST_F(UnterminatedTest, EveryWriterRefusesItAndChangesNothing) {
  const std::string before = read_file(log());
  const audit::AppendResult result = audit::append(log(),
                                                   {{"kind", "result"},
                                                    {"time", "2026-11-29T00:00:00Z"},
                                                    {"decision", 3},
                                                    {"revision", 2},
                                                    {"outcome", "done"}},
                                                   3);
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.removed_torn_tail, "");
  EXPECT_EQ(read_file(log()), before);
  const audit::AppendResult empty = audit::append_batch(log(), {});
  EXPECT_FALSE(empty.ok);
  EXPECT_EQ(read_file(log()), before);
  const std::string gate = std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml";
  CliResult r = run({"decide", "--policy", gate, "--audit", log(), "--operator", "ana"}, kLetter);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(read_file(log()), before);
  r = run({"audit", "repair", log(), "--operator", "ana", "--reason", "lost newline"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(read_file(log()), before);
}

// A whole last line whose chain does not verify (wrong seq or prev) is not a torn tail: it is a
// complete line that may have been acknowledged (it used to be removed as torn by the next append).
// It is kept and checked, its seq is a problem, and appends refuse the log, changing nothing.
TEST_F(UnterminatedTest, AWholeLineThatDoesNotContinueTheChainIsKeptAndAProblem) {
  const size_t third = good_.rfind('\n', good_.size() - 2) + 1;
  nlohmann::json entry = json_of(good_.substr(third));
  entry["seq"] = 7;
  const std::string fragment = entry.dump();
  write_file(log(), good_ + fragment);
  const audit::VerifyReport report = audit::verify_bytes(read_file(log()));
  EXPECT_FALSE(report.ok());
  EXPECT_FALSE(report.torn_tail);
  EXPECT_TRUE(report.unterminated);
  EXPECT_EQ(report.entries, 4u);
  EXPECT_EQ(report.problems,
            (std::vector<std::string>{
                "line 4: seq 7, expected 4 (a line was removed or moved)",
                "line 4: prev hash does not match the previous line (a line before it was "
                "edited, removed or reordered)",
                "line 4: without a newline, and not a torn line (it is a whole JSON object): an "
                "append writes a whole line and its newline in one write, so a crash leaves only "
                "a cut of the next entry, never these bytes"}));
  const CliResult r = run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "1",
                           "--outcome", "done"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("replaygate: refusing to append to " + log() +
                            ", which does not verify: line 4: seq 7, expected 4 (a line was "
                            "removed or moved) (and 2 more problems: ",
                        0),
            0u)
      << r.err;
  EXPECT_EQ(read_file(log()), good_ + fragment);
}

// A broken last complete line refuses the append and leaves the file untouched, torn tail included.
TEST_F(UnterminatedTest, ARefusedAppendChangesNothing) {
  const std::string broken = good_ + "garbage\n{\"seq\"";
  write_file(log(), broken);
  const audit::AppendResult refused = audit::append(log(), decision("m"));
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.removed_torn_tail, "");
  EXPECT_EQ(read_file(log()), broken);
}

// Concurrent appenders on a log whose last entry lost its newline: every one refuses it, and the
// file stays byte for byte as it was (none terminates it: that is a person's call).
TEST_F(UnterminatedTest, ConcurrentAppendersAllRefuseIt) {
  constexpr int kWriters = 4;
  constexpr int kEach = 5;
  const std::string before = read_file(log());
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < kEach; ++i) {
        if (audit::append(log(), decision("w" + std::to_string(w) + "i" + std::to_string(i))).ok)
          ::_exit(3);
      }
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  for (const pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(read_file(log()), before);
}

}  // namespace
