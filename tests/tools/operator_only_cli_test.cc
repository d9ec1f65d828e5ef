// Operator-only inputs (policy `source: operator`) end to end: decide and explain (policy and
// table) leave them unset whatever the letter says, without making the letter invalid; review
// --confirm sets every operator-only bool; test case files still set them; a kafka mapping may not
// map them (RG307); convert/fmt keep the marker; diff flags its removal as more dangerous.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const std::string kPolicy = kSourceDir + "/policies/generation_recovery.yaml";
const std::string kDslPolicy = kSourceDir + "/policies/generation_recovery.policy";

// The shipped policy takes the operation's state from the record only (`source: record`), so a
// letter alone always gets the default there (tests/tools/record_only_cli_test.cc). To see what
// letters do with the operator-only input, these tests decide over a copy whose record-only
// inputs letters may set, and keep the operator marker.
class OperatorOnlyCli : public CliFixture {
 protected:
  void SetUp() override {
    policy_ = letter_state_recovery_policy(dir_);
    dsl_policy_ = letter_state_recovery_policy(dir_, /*dsl=*/true);
  }
  std::string policy_, dsl_policy_;
};

// Everything prepared_dispatch_reviewed needs, including the operator's confirmation.
const std::string kForgedLetter =
    "{\"message_id\": \"m-1\", \"phase\": \"prepared\", \"message_revision\": 1, "
    "\"record_revision\": 1, \"dispatch_confirmed_absent\": true, \"model_current\": true, "
    "\"spec_current\": true, \"user_authorized\": true, \"remaining_budget\": 40, "
    "\"operator_confirmed\": true}";

TEST_F(OperatorOnlyCli, DecideIgnoresTheLettersConfirmationAndHoldsForReview) {
  for (const std::string& policy : {policy_, dsl_policy_}) {
    const CliResult r = run({"decide", "--policy", policy, "-"}, kForgedLetter + "\n");
    EXPECT_EQ(r.exit_code, 0) << r.err;  // the letter is valid: its other fields are decided
    const auto out = nlohmann::json::parse(r.out);
    EXPECT_EQ(out["verb"], "hold_for_review") << r.out;
    EXPECT_EQ(out["rule"], "prepared_needs_review") << r.out;
    EXPECT_EQ(out["effect"], "none");
    EXPECT_EQ(out["invalid"], false);
    EXPECT_EQ(out["message_id"], "m-1");
  }
  // Any value is ignored, a malformed one included (it is not invalid input either).
  std::string odd = kForgedLetter;
  odd.replace(odd.find("\"operator_confirmed\": true"), 26, "\"operator_confirmed\": \"yes\"");
  CliResult r = run({"decide", "--policy", policy_, "-"}, odd + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"verb\":\"hold_for_review\""), std::string::npos) << r.out;
  // Bad JSON in its value is still bad JSON: the record is unreadable.
  std::string broken = kForgedLetter;
  broken.replace(broken.find("true}"), 5, "tru}");
  r = run({"decide", "--policy", policy_, "-"}, broken + "\n");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("\"invalid\":true"), std::string::npos) << r.out;
}

TEST_F(OperatorOnlyCli, DecideWithACompiledTableAlsoIgnoresIt) {
  const std::string table = (dir_ / "g.rgt").string();
  ASSERT_EQ(run({"compile", dsl_policy_, "-o", table}).exit_code, 0);
  const CliResult dump = run({"dump", table});
  EXPECT_NE(dump.out.find("operator_confirmed: bool, optional, set by an operator only\n"),
            std::string::npos)
      << dump.out;
  const CliResult r = run({"decide", "--table", table, "-"}, kForgedLetter + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"verb\":\"hold_for_review\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"rule\":\"prepared_needs_review\""), std::string::npos) << r.out;
}

TEST_F(OperatorOnlyCli, ExplainSaysTheLettersValueIsIgnored) {
  const std::string table = (dir_ / "g.rgt").string();
  ASSERT_EQ(run({"compile", policy_, "-o", table}).exit_code, 0);
  for (const std::vector<std::string>& source : {std::vector<std::string>{"--policy", policy_},
                                                 std::vector<std::string>{"--table", table}}) {
    std::vector<std::string> args = {"explain"};
    args.insert(args.end(), source.begin(), source.end());
    CliResult r = run(args, kForgedLetter);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("  operator_confirmed = <missing> (set only by an operator; the letter's "
                         "value true is ignored)\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("operator_confirmed == true: fails (operator_confirmed = absent, absent)"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("decision: hold_for_review (effect none)\n  rule: prepared_needs_review"),
              std::string::npos)
        << r.out;
    args.insert(args.end(), {"--format", "json"});
    r = run(args, kForgedLetter);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["letter"]["operator_confirmed"], "<missing>");
    EXPECT_EQ(doc["operator_only"]["operator_confirmed"]["ignored_letter_value"], "true");
    EXPECT_EQ(doc["decision"]["verb"], "hold_for_review");
    EXPECT_EQ(doc["decision"]["rule"], "prepared_needs_review");
  }
  // A letter without the field: named as operator-only, nothing ignored.
  std::string plain = kForgedLetter;
  const std::string field = ", \"operator_confirmed\": true";
  plain.erase(plain.find(field), field.size());
  CliResult r = run({"explain", "--policy", policy_}, plain);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  operator_confirmed = <missing> (set only by an operator)\n"),
            std::string::npos)
      << r.out;
  r = run({"explain", "--policy", policy_, "--format", "json"}, plain);
  EXPECT_TRUE(
      nlohmann::json::parse(r.out)["operator_only"]["operator_confirmed"]["ignored_letter_value"]
          .is_null())
      << r.out;
}

// Case files simulate the operator: they may set the field (the shipped cases do).
TEST_F(OperatorOnlyCli, TestCaseFilesStillSetIt) {
  const CliResult r = run({"test", kPolicy});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// A policy whose operator-only bool has another name: review --confirm sets it, and never reads
// it from the files.
TEST_F(OperatorOnlyCli, ReviewSetsEveryOperatorOnlyBool) {
  write_file(dir_ / "p.policy",
             "policy approvals revision 1\n"
             "input phase: enum (prepared, accepted)\n"
             "input approved: optional bool source operator \"an operator approved\"\n"
             "verb hold effect none\n"
             "verb dispatch effect create \"new work\"\n"
             "default hold \"not approved\"\n"
             "rule ok: when phase == prepared and approved -> dispatch \"approved\"\n");
  write_file(dir_ / "m.json", "{\"message_id\": \"m-1\", \"approved\": true}");
  write_file(dir_ / "r.json", "{\"phase\": \"prepared\", \"approved\": true}");
  const std::vector<std::string> base = {"review",
                                         "--policy",
                                         (dir_ / "p.policy").string(),
                                         "--message",
                                         (dir_ / "m.json").string(),
                                         "--record",
                                         (dir_ / "r.json").string(),
                                         "--format",
                                         "json"};
  CliResult r = run(base);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["action"], "hold") << r.out;
  std::vector<std::string> confirm = base;
  confirm.insert(confirm.end(),
                 {"--confirm", "--operator", "ana", "--audit", (dir_ / "a.log").string()});
  r = run(confirm);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["action"], "dispatch") << r.out;
}

TEST_F(OperatorOnlyCli, KafkaMappingMayNotMapIt) {
  std::string inputs;
  for (const char* name : {"phase", "message_revision", "record_revision"}) {
    inputs += std::string("  ") + name + ": {payload: /" + name + "}\n";
  }
  for (const char* name :
       {"remote_job_id", "copy_complete", "refund_resolved", "dispatch_confirmed_absent",
        "model_current", "spec_current", "user_authorized", "remaining_budget", "operation_id"}) {
    inputs += std::string("  ") + name + ": {payload: /" + name + ", optional: true}\n";
  }
  // The payload carries a confirmation; the mapping leaves it out, so it is never read.
  write_file(dir_ / "r.jsonl",
             "{\"topic\":\"gen.DLT\",\"partition\":0,\"offset\":1,\"key\":null,\"payload\":"
             "\"{\\\"phase\\\":\\\"prepared\\\",\\\"message_revision\\\":1,"
             "\\\"record_revision\\\":1,\\\"dispatch_confirmed_absent\\\":true,"
             "\\\"model_current\\\":true,\\\"spec_current\\\":true,\\\"user_authorized\\\":true,"
             "\\\"remaining_budget\\\":40,\\\"operator_confirmed\\\":true}\"}\n");
  write_file(dir_ / "m.yaml", "format: kcat-json\ninputs:\n" + inputs);
  CliResult r = run({"decide", "--policy", policy_, "--format", "kafka", "--mapping",
                     (dir_ / "m.yaml").string(), (dir_ / "r.jsonl").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"verb\":\"hold_for_review\""), std::string::npos) << r.out;

  write_file(dir_ / "m.yaml", "format: kcat-json\ninputs:\n" + inputs +
                                  "  operator_confirmed: {payload: /operator_confirmed}\n");
  r = run({"decide", "--policy", policy_, "--format", "kafka", "--mapping",
           (dir_ / "m.yaml").string(), (dir_ / "r.jsonl").string()});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(":15:3: error[RG307]: input 'operator_confirmed' is set only by an "
                       "operator, never from a record"),
            std::string::npos)
      << r.err;
}

TEST_F(OperatorOnlyCli, ConvertAndFmtKeepTheMarker) {
  CliResult r = run({"convert", kPolicy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input operator_confirmed: optional bool source operator \"an operator"),
            std::string::npos)
      << r.out;
  write_file(dir_ / "g.policy", r.out);
  r = run({"convert", (dir_ / "g.policy").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  operator_confirmed:\n    type: bool\n    optional: true\n    source: "
                       "operator\n"),
            std::string::npos)
      << r.out;
  r = run({"fmt", kDslPolicy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("input operator_confirmed: optional bool source operator \"an operator"),
            std::string::npos)
      << r.out;
}

TEST_F(OperatorOnlyCli, DiffFlagsRemovingTheMarkerAsMoreDangerous) {
  std::string text = read_file(kPolicy);
  const std::string marker = "    source: operator\n";
  const size_t at = text.find(marker);
  ASSERT_NE(at, std::string::npos);
  text.erase(at, marker.size());
  write_file(dir_ / "unmarked.yaml", text);
  const std::string unmarked = (dir_ / "unmarked.yaml").string();

  CliResult r = run({"diff", kPolicy, unmarked});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("0 regions change verb"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("field 'operator_confirmed': no longer operator-only: letters may now set "
                       "it, MORE DANGEROUS\n"),
            std::string::npos)
      << r.out;
  r = run({"diff", kPolicy, unmarked, "--format", "json"});
  EXPECT_EQ(r.exit_code, 3);
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["more_dangerous"], true);
  ASSERT_EQ(doc["fields"].size(), 1u) << r.out;
  EXPECT_EQ(doc["fields"][0]["name"], "operator_confirmed");
  EXPECT_EQ(doc["fields"][0]["more_dangerous"], true);
  r = run({"diff", kPolicy, unmarked, "--format", "markdown"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("**Letters (or the operation record) may now set a field only an operator"),
            std::string::npos)
      << r.out;

  // Adding it takes power from letters: reported, not dangerous.
  r = run({"diff", unmarked, kPolicy});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("field 'operator_confirmed': now set only by an operator (letters no longer "
                       "set it)\n"),
            std::string::npos)
      << r.out;

  // Compiled tables keep the marker, so a deployed table diffs the same way.
  const std::string a = (dir_ / "a.rgt").string(), b = (dir_ / "b.rgt").string();
  ASSERT_EQ(run({"compile", kPolicy, "-o", a}).exit_code, 0);
  ASSERT_EQ(run({"compile", unmarked, "-o", b}).exit_code, 0);
  r = run({"diff", a, b});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("field 'operator_confirmed': no longer operator-only"), std::string::npos)
      << r.out;
}

}  // namespace
