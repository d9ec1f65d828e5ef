// Record-only inputs (policy `source: record`) end to end (issue 17, item 1), the refused
// --dedupe-field of an input letters never supply (item 3), and the warning of a second create
// decision for one message (item 8):
//  * review takes the shipped recovery policy's phase and allowance facts from the record file
//    only: a message that offers them is ignored and reported, a record that lacks them is
//    missing (fail closed); the record shows every input's value and where it came from;
//  * decide and explain leave a record-only input unset (the shipped policy then gives every
//    letter the default), a kafka mapping may not map it (RG311), test case files still set it;
//  * diff flags loosening the marker as more dangerous, convert keeps it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const std::string kPolicy = kSourceDir + "/policies/generation_recovery.yaml";
const std::string kDslPolicy = kSourceDir + "/policies/generation_recovery.policy";

// The dead-lettered message supplies every fact that gates the create verb.
const std::string kEvilMessage =
    R"({"message_id":"m-evil","operation_id":"op-1","revision":3,"phase":"prepared",)"
    R"("dispatch_confirmed_absent":true,"model_current":true,"spec_current":true,)"
    R"("user_authorized":true,"remaining_budget":1000})";

class RecordOnlyCli : public CliFixture {
 protected:
  CliResult review(const std::string& policy, const std::string& message, const std::string& record,
                   std::vector<std::string> extra = {}) {
    write_file(dir_ / "msg.json", message);
    write_file(dir_ / "rec.json", record);
    std::vector<std::string> args = {"review", "--policy", policy, "--message",
                                     msg(),    "--record", rec()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  std::vector<std::string> confirm(const std::string& who = "ana") {
    return {"--confirm", "--operator", who, "--audit", log()};
  }
  std::string msg() const { return (dir_ / "msg.json").string(); }
  std::string rec() const { return (dir_ / "rec.json").string(); }
  std::string log() const { return (dir_ / "ev.log").string(); }
};

// The issue's first scenario: the record has no phase and no allowance facts.
TEST_F(RecordOnlyCli, TheMessagesFactsNeverDecideAndTheRecordSaysSo) {
  for (const std::string& policy : {kPolicy, kDslPolicy}) {
    const CliResult r =
        review(policy, kEvilMessage, R"({"operation_id":"op-1","revision":3})", confirm());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("  action:               manual_reconciliation (effect none)\n"
                         "  in plain words:       no remote call"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("  rule:                 default\n"
                         "  reason:               invalid input: phase\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("  operation phase:      -\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("inputs (the value the policy used, and where it came from)\n"
                         "  phase:                      <missing> (record-only; not in "
                         "record.phase)\n"
                         "                              ignored: message.phase = \"prepared\" "
                         "(only the operation record supplies it)\n"
                         "  message_revision:           3 (from message.revision)\n"
                         "  record_revision:            3 (from record.revision; record-only)\n"
                         "  stale:                      <not computed: the input is invalid> "
                         "(derived: message_revision < record_revision)\n"
                         "  remote_job_id:              <missing> (not in record.remote_job_id, "
                         "message.remote_job_id, message.error.job_id)\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("  remaining_budget:           <missing> (record-only; not in "
                         "record.remaining_budget)\n"
                         "                              ignored: message.remaining_budget = 1000 "
                         "(only the operation record supplies it)\n"
                         "  operator_confirmed:         true (from --confirm; operator-only)\n"
                         "  operation_id:               \"op-1\" (from record.operation_id)\n"
                         "decision\n"),
              std::string::npos)
        << r.out;
    // The audit log records what was decided: no create.
    const std::string entries = read_file(log());
    EXPECT_NE(entries.find("\"action\":\"manual_reconciliation\",\"effect\":\"none\""),
              std::string::npos)
        << entries;
    EXPECT_EQ(entries.find("dispatch"), std::string::npos) << entries;
  }
}

// The second scenario: the record says prepared but has no allowance facts.
TEST_F(RecordOnlyCli, AllowanceFactsOnlyFromTheRecordGiveNoDispatch) {
  const CliResult r =
      review(kPolicy, kEvilMessage, R"({"operation_id":"op-1","revision":3,"phase":"prepared"})",
             {"--confirm", "--operator", "ana", "--audit", log(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["action"], "manual_reconciliation");
  EXPECT_EQ(doc["effect"], "none");
  EXPECT_EQ(doc["rule"], "default");
  EXPECT_EQ(doc["reason"], "no recovery rule applies; reconcile the operation by hand");
  EXPECT_EQ(doc["phase"], "prepared");
  const auto& inputs = doc["inputs"];
  ASSERT_EQ(inputs.size(), 14u) << r.out;
  EXPECT_EQ(inputs[0], nlohmann::json::parse(
                           R"({"name":"phase","source":"record","value":"prepared",
                               "missing":false,"from":"record.phase","ignored":[
                               {"from":"message.phase","value":"prepared",
                                "why":"only the operation record supplies it"}]})"));
  EXPECT_EQ(inputs[1], nlohmann::json::parse(
                           R"({"name":"message_revision","source":"letter","value":3,
                               "missing":false,"from":"message.revision","ignored":[]})"));
  EXPECT_EQ(inputs[3], nlohmann::json::parse(
                           R"({"name":"stale","source":"derived","value":false,"missing":false,
                               "from":"derived","formula":"message_revision < record_revision",
                               "ignored":[]})"));
  EXPECT_EQ(inputs[7], nlohmann::json::parse(
                           R"({"name":"dispatch_confirmed_absent","source":"record","value":null,
                               "missing":true,"from":null,
                               "unset_because":"not in record.dispatch_confirmed_absent",
                               "ignored":[{"from":"message.dispatch_confirmed_absent",
                               "value":true,"why":"only the operation record supplies it"}]})"));
  EXPECT_EQ(inputs[12], nlohmann::json::parse(
                            R"({"name":"operator_confirmed","source":"operator","value":true,
                                "missing":false,"from":"--confirm","ignored":[]})"));
}

// With the facts in the record, the message needs none of them: review decides from the record.
TEST_F(RecordOnlyCli, TheRecordsFactsDecideWhateverTheMessageSays) {
  const std::string record =
      R"({"operation_id":"op-1","revision":3,"phase":"prepared","dispatch_confirmed_absent":true,)"
      R"("model_current":true,"spec_current":true,"user_authorized":true,"remaining_budget":5})";
  CliResult r = review(kPolicy, R"({"message_id":"m-1","revision":3})", record, confirm());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  action:               dispatch (effect create)\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  remaining_budget:           5 (from record.remaining_budget; "
                       "record-only)\n"),
            std::string::npos)
      << r.out;
  // A message that says the budget is spent or the phase differs changes nothing either way.
  r = review(kPolicy,
             R"({"message_id":"m-2","revision":3,"phase":"delivered","remaining_budget":0})",
             record);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  action:               hold_for_review (effect none)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("ignored: message.phase = \"delivered\" (only the operation record "
                       "supplies it)\n"),
            std::string::npos)
      << r.out;
  // Either file's operator_confirmed is ignored too, and shown so.
  r = review(kPolicy, R"({"message_id":"m-3","revision":3,"operator_confirmed":true})",
             R"({"revision":3,"phase":"prepared","operator_confirmed":true})");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  operator_confirmed:         false (no --confirm; operator-only)\n"
                       "                              ignored: record.operator_confirmed = true "
                       "(only --confirm sets it)\n"
                       "                              ignored: message.operator_confirmed = true "
                       "(only --confirm sets it)\n"),
            std::string::npos)
      << r.out;
}

// A policy whose phase letters may set (no marker): the record's identifying phase row says
// where the value came from, so the record never hides that the message's phase decided.
TEST_F(RecordOnlyCli, APhaseFromTheMessageIsShownWithItsSource) {
  write_file(dir_ / "p.policy",
             "policy p revision 1\n"
             "input phase: enum (prepared, accepted)\n"
             "input revision_seen: optional int\n"
             "verb hold effect none\n"
             "verb go effect read\n"
             "default hold\n"
             "rule r: when phase == accepted -> go \"accepted\"\n");
  const CliResult r = review((dir_ / "p.policy").string(), R"({"phase":"accepted"})", "{}");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  operation phase:      accepted (from message.phase)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  phase:                \"accepted\" (from message.phase)\n"
                       "  revision_seen:        <missing> (not in record.revision_seen, "
                       "message.revision_seen)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  action:               go (effect read)\n"), std::string::npos) << r.out;
  // An object there (invalid input) shows only its kind, never what it holds.
  const CliResult o =
      review((dir_ / "p.policy").string(), R"({"phase":{"token":"SECRET-1"}})", "{}");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("  operation phase:      <an object> (from message.phase)\n"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("  phase:                <an object> (from message.phase)\n"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("  reason:               invalid input: phase\n"), std::string::npos);
  EXPECT_EQ(o.out.find("SECRET"), std::string::npos) << o.out;
}

// Item 8: the second --confirm of a create decision for the same message warns (and records).
TEST_F(RecordOnlyCli, ASecondCreateDecisionForTheMessageWarns) {
  const std::string record =
      R"({"operation_id":"op-1","revision":3,"phase":"prepared","dispatch_confirmed_absent":true,)"
      R"("model_current":true,"spec_current":true,"user_authorized":true,"remaining_budget":5})";
  const std::string message = R"({"message_id":"m-1","operation_id":"op-1","revision":3})";
  CliResult r = review(kPolicy, message, record, confirm("ana"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // the first one: nothing to warn about
  const std::string first = read_file(log());
  const std::string time = nlohmann::json::parse(first)["time"];

  r = review(kPolicy, message, record, confirm("bob"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("audit entry 2"), std::string::npos) << r.out;  // still recorded
  EXPECT_EQ(r.err, "replaygate: warning: " + log() +
                       " already records a create decision for this message (message m-1, "
                       "operation op-1): entry 1, dispatch (rule prepared_dispatch_reviewed), "
                       "recorded " +
                       time +
                       " by ana; no result is recorded for it\n"
                       "replaygate: warning: this review records another create decision: "
                       "acting on it submits the work again; check the operation record and the "
                       "audit log before acting\n");

  // A result for the first, then a third review for another message of the same operation.
  ASSERT_EQ(run({"audit", "result", "--log", log(), "--decision", "1", "--revision", "4",
                 "--outcome", "dispatched job_1"})
                .exit_code,
            0);
  r = review(kPolicy, R"({"message_id":"m-2","operation_id":"op-1","revision":3})", record,
             confirm("cy"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("already records a create decision for this operation (message m-1, "
                       "operation op-1): entry 1, dispatch (rule prepared_dispatch_reviewed), "
                       "recorded " +
                       time +
                       " by ana; later also entries 2; results recorded: "
                       "entry 1: dispatched job_1\n"),
            std::string::npos)
      << r.err;

  // A decision that creates nothing warns about nothing; nor does another operation.
  r = review(kPolicy, message, R"({"operation_id":"op-1","revision":3,"phase":"delivered"})",
             confirm());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = review(
      kPolicy, R"({"message_id":"m-9","operation_id":"op-9","revision":3})",
      R"({"operation_id":"op-9","revision":3,"phase":"prepared","dispatch_confirmed_absent":)"
      R"(true,"model_current":true,"spec_current":true,"user_authorized":true,)"
      R"("remaining_budget":5})",
      confirm());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
}

// decide and explain never take a record-only input from a letter: the shipped policy's required
// phase is then missing, so a letter alone gets the default, however much it claims.
TEST_F(RecordOnlyCli, DecideAndExplainLeaveItUnset) {
  const std::string letter =
      R"({"message_id":"m-1","phase":"prepared","message_revision":1,"record_revision":1,)"
      R"("dispatch_confirmed_absent":true,"model_current":true,"spec_current":true,)"
      R"("user_authorized":true,"remaining_budget":40,"operator_confirmed":true})";
  for (const std::string& policy : {kPolicy, kDslPolicy}) {
    const CliResult r = run({"decide", "--policy", policy, "-"}, letter + "\n");
    const auto out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["verb"], "manual_reconciliation") << r.out;
    EXPECT_EQ(out["rule"], "default") << r.out;
    EXPECT_EQ(out["reason"], "invalid input: phase") << r.out;
    EXPECT_EQ(out["problem"], "missing") << r.out;
    EXPECT_FALSE(out.contains("column")) << r.out;  // the letter's value was never read
  }
  // --show-inputs says what the rules saw: the record-only inputs unset (null).
  CliResult shown = run({"decide", "--policy", kPolicy, "--show-inputs", "-"}, letter + "\n");
  EXPECT_NE(shown.out.find("\"inputs\":{\"phase\":null,\"message_revision\":1,"
                           "\"record_revision\":null,\"stale\":null,"),
            std::string::npos)
      << shown.out;
  CliResult r = run({"explain", "--policy", kPolicy}, letter);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  phase = <missing> (read only from the operation record; the letter's "
                       "value \"prepared\" is ignored)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  record_revision = <missing> (read only from the operation record; the "
                       "letter's value 1 is ignored)\n"),
            std::string::npos)
      << r.out;
  r = run({"explain", "--policy", kPolicy, "--format", "json"}, letter);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["record_only"]["phase"]["ignored_letter_value"], "\"prepared\"") << r.out;
  EXPECT_EQ(doc["record_only"]["remaining_budget"]["ignored_letter_value"], "40") << r.out;
  EXPECT_EQ(doc["operator_only"]["operator_confirmed"]["ignored_letter_value"], "true") << r.out;
  EXPECT_EQ(doc["decision"]["verb"], "manual_reconciliation");

  // A compiled table keeps the marker: dump shows it, decide still ignores the letter's value.
  const std::string table = (dir_ / "g.rgt").string();
  ASSERT_EQ(run({"compile", kDslPolicy, "-o", table}).exit_code, 0);
  EXPECT_NE(
      run({"dump", table}).out.find("phase: enum, required, read from the operation record only\n"),
      std::string::npos);
  r = run({"decide", "--table", table, "-"}, letter + "\n");
  EXPECT_NE(r.out.find("\"reason\":\"invalid input: phase\""), std::string::npos) << r.out;

  // Case files stand for the record: they set it (the shipped cases do).
  r = run({"test", kPolicy});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run({"test", kDslPolicy, kSourceDir + "/policies/generation_recovery.test.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(RecordOnlyCli, KafkaMappingMayNotMapIt) {
  write_file(dir_ / "m.yaml",
             "format: kcat-json\ninputs:\n"
             "  message_revision: {payload: /message_revision}\n"
             "  remote_job_id: {payload: /remote_job_id, optional: true}\n"
             "  phase: {payload: /phase}\n"
             "  operation_id: {payload: /operation_id, optional: true}\n");
  write_file(dir_ / "r.jsonl", "");
  const CliResult r = run({"decide", "--policy", kPolicy, "--format", "kafka", "--mapping",
                           (dir_ / "m.yaml").string(), (dir_ / "r.jsonl").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(":5:3: error[RG311]: input 'phase' is read only from the operation record "
                       "(policy 'source: record'), never from a broker record"),
            std::string::npos)
      << r.err;
  // The unmapped record-only inputs are not "not mapped" (RG303).
  EXPECT_EQ(r.err.find("RG303"), std::string::npos) << r.err;
}

TEST_F(RecordOnlyCli, DiffFlagsLooseningTheMarkerAndConvertKeepsIt) {
  std::string text = read_file(kPolicy);
  const std::string marker =
      "    values: [prepared, accepted, succeeded, failed, submitting, "
      "delivered]\n    source: record\n";
  const size_t at = text.find(marker);
  ASSERT_NE(at, std::string::npos);
  text.erase(at + marker.size() - 19, 19);  // phase loses `source: record`
  write_file(dir_ / "loose.yaml", text);
  const std::string loose = (dir_ / "loose.yaml").string();
  CliResult r = run({"diff", kPolicy, loose});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("field 'phase': no longer record-only: letters may now set it, MORE "
                       "DANGEROUS\n"),
            std::string::npos)
      << r.out;
  r = run({"diff", loose, kPolicy});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("field 'phase': now read only from the operation record (letters no "
                       "longer set it)\n"),
            std::string::npos)
      << r.out;

  r = run({"convert", kPolicy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input remaining_budget: optional int source record \""), std::string::npos)
      << r.out;
  write_file(dir_ / "g.policy", r.out);
  r = run({"convert", (dir_ / "g.policy").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  remaining_budget:\n    type: int\n    optional: true\n    source: "
                       "record\n"),
            std::string::npos)
      << r.out;
}

// ---- item 3: --dedupe-field must name an input letters supply ----

const char* const kTicketPolicy =
    "policy: tickets\n"
    "revision: 1\n"
    "inputs:\n"
    "  topic: {type: string}\n"
    "  ticket: {type: string, optional: true, source: operator}\n"
    "  case_ref: {type: string, optional: true, source: record}\n"
    "  idempotency_key: {type: string, optional: true}\n"
    "verbs:\n"
    "  hold: {effect: none}\n"
    "  replay: {effect: create}\n"
    "default: hold\n"
    "rules:\n"
    "  - guard: any\n"
    "    when: {topic: t}\n"
    "    verb: replay\n"
    "    reason: replay it\n";

TEST_F(RecordOnlyCli, DedupeFieldLettersNeverSupplyIsRefused) {
  write_file(dir_ / "t.yaml", kTicketPolicy);
  const std::string letters =
      "{\"topic\":\"t\",\"ticket\":\"T-1\"}\n"
      "{\"topic\":\"t\",\"ticket\":\"T-1\"}\n"
      "{\"topic\":\"t\",\"ticket\":\"T-1\"}\n";
  const std::string policy = (dir_ / "t.yaml").string();
  CliResult r = run({"decide", "--policy", policy, "--dedupe-field", "ticket", "-"}, letters);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate decide: error: --dedupe-field 'ticket' is set only by an operator (policy "
            "'source: operator'): no letter supplies it, so no key would count as replayed and "
            "every letter could be replayed; name a string input that letters set (topic, "
            "idempotency_key)\nRun 'replaygate decide --help' for usage.\n");
  r = run({"decide", "--policy", policy, "--dedupe-field", "case_ref", "-"}, letters);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dedupe-field 'case_ref' is read only from the operation record (policy "
                       "'source: record'): no letter supplies it"),
            std::string::npos)
      << r.err;
  // A derived input is a bool, so not a string input at all.
  r = run({"decide", "--policy", kPolicy, "--dedupe-field", "stale", "-"}, letters);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dedupe-field 'stale' is not a string input of the policy"),
            std::string::npos)
      << r.err;
  // A key letters do set protects as before: one create, then the repeats are held.
  r = run({"decide", "--policy", policy, "--dedupe-field", "topic", "-"}, letters);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 3u);
  EXPECT_NE(lines_of(r.out)[0].find("\"verb\":\"replay\""), std::string::npos) << r.out;
  EXPECT_NE(lines_of(r.out)[1].find("\"verb\":\"hold\""), std::string::npos) << r.out;
  EXPECT_NE(lines_of(r.out)[2].find("\"verb\":\"hold\""), std::string::npos) << r.out;

  // The default idempotency_key, when letters never supply it: a note that protection is off.
  std::string text = kTicketPolicy;
  text.replace(text.find("idempotency_key: {type: string, optional: true}"), 47,
               "idempotency_key: {type: string, optional: true, source: record}");
  write_file(dir_ / "k.yaml", text);
  r = run({"decide", "--policy", (dir_ / "k.yaml").string(), "-"}, letters);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("replaygate: note: the policy's idempotency_key is read only from the "
                       "operation record (policy 'source: record'): no letter supplies it"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("has no string input 'idempotency_key'"), std::string::npos) << r.err;
}

}  // namespace

// The message file named as the record (the same path, or a hard link to it) would let the dead
// letter supply every record-only fact: refused before anything is read or recorded.
TEST_F(RecordOnlyCli, TheMessageFileIsNeverTheRecord) {
  write_file(dir_ / "msg.json", kEvilMessage);
  std::filesystem::create_hard_link(dir_ / "msg.json", dir_ / "link.json");
  for (const std::string& record : {msg(), (dir_ / "link.json").string()}) {
    std::vector<std::string> args = {"review", "--policy", kPolicy, "--message",
                                     msg(),    "--record", record};
    for (const std::string& a : confirm()) args.push_back(a);
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "replaygate: error: --record " + record + " is the message file " + msg() +
                         " itself; the operation record is the durable store's own document, "
                         "never the dead letter\nRun 'replaygate review --help' for usage.\n");
    EXPECT_FALSE(std::filesystem::exists(log()));
  }
}
