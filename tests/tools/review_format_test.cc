// `review --input-format F --mapping M` (issue 20 §1): the message file is one broker record read
// through the mapping decide uses. The shipped recovery policy's scenarios (examples/recovery/)
// are reviewed once as JSON messages and once as the same facts in a spring-kafka (kcat) record
// and a RabbitMQ management-API dump: the decisions must be the same. A record that does not map
// gets the policy default (never a create); a mapping of another format, or one that maps a
// record-only or operator-only input, is refused (exit 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using nlohmann::json;

const std::string kPolicy = kSourceDir + "/policies/generation_recovery.yaml";
const std::string kExamples = kSourceDir + "/examples/recovery/";

// The letter-sourced inputs of the recovery policy, from headers and the payload.
const std::string kKafkaMapping =
    "format: kcat-json\n"
    "message_id: {header: message-id}\n"
    "inputs:\n"
    "  message_revision: {header: x-revision}\n"
    "  remote_job_id: {payload: /error/job_id, optional: true}\n"
    "  operation_id: {payload: /operation_id, optional: true}\n";

const std::string kRabbitMapping =
    "format: rabbitmq-management-json\n"
    "message_id: {record: key}\n"
    "inputs:\n"
    "  message_revision: {header: x-revision}\n"
    "  remote_job_id: {payload: /error/job_id, optional: true}\n"
    "  operation_id: {payload: /operation_id, optional: true}\n";

// The payload a producer would have sent: the message's operation id and error envelope.
std::string payload_of(const json& message) {
  json payload = json::object();
  payload["operation_id"] = message["operation_id"];
  if (message.contains("error")) payload["error"] = message["error"];
  return payload.dump();
}

// One kcat -J line carrying the JSON message's letter facts.
std::string kcat_line(const json& message) {
  json line = {{"topic", "generation.DLT"}, {"partition", 0}, {"offset", 7}, {"tstype", "create"},
               {"ts", 1764403200000},       {"broker", 1},    {"key", "k"}};
  line["headers"] = {"message-id", message["message_id"], "x-revision",
                     std::to_string(message["revision"].get<int64_t>())};
  line["payload"] = payload_of(message);
  return line.dump() + "\n";
}

// One RabbitMQ management-API message carrying the JSON message's letter facts.
json rabbit_message(const json& message) {
  return {{"payload_bytes", 10},
          {"redelivered", true},
          {"exchange", ""},
          {"routing_key", "generation.dlq"},
          {"message_count", 0},
          {"properties",
           {{"headers", {{"x-revision", std::to_string(message["revision"].get<int64_t>())}}},
            {"message_id", message["message_id"]}}},
          {"payload", payload_of(message)},
          {"payload_encoding", "string"}};
}

class ReviewFormat : public CliFixture {
 protected:
  std::string put(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return (dir_ / name).string();
  }
  CliResult review(const std::string& message, const std::string& record,
                   std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"review",   "--policy", kPolicy,    "--message", message,
                                     "--record", record,     "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  }
  std::string log() const { return (dir_ / "audit.log").string(); }
};

// The parts of a review record that must not depend on how the message was read.
json decision_of(const json& doc) {
  json inputs = json::object();
  for (const json& item : doc["inputs"]) inputs[item["name"].get<std::string>()] = item["value"];
  return {{"action", doc["action"]},
          {"effect", doc["effect"]},
          {"rule", doc["rule"]},
          {"reason", doc["reason"]},
          {"message_id", doc["message_id"]},
          {"operation_id", doc["operation_id"]},
          {"remote_job_id", doc["remote_job_id"]},
          {"inputs", inputs}};
}

const json* input_named(const json& doc, const std::string& name) {
  for (const json& item : doc["inputs"]) {
    if (item["name"] == name) return &item;
  }
  return nullptr;
}

TEST_F(ReviewFormat, KafkaAndRabbitRecordsDecideAsTheJsonMessage) {
  const std::string kafka_mapping = put("kafka.yaml", kKafkaMapping);
  const std::string rabbit_mapping = put("rabbit.yaml", kRabbitMapping);
  // accepted: observe the known job; submit502: the job id is in the error envelope; prepared:
  // dispatch (create) only with --confirm; stale: acknowledge.
  int creates = 0;
  for (const std::string scenario : {"accepted", "submit502", "prepared", "stale", "delivery"}) {
    SCOPED_TRACE(scenario);
    const std::string message_path = kExamples + scenario + ".message.json";
    const std::string record = kExamples + scenario + ".record.json";
    const json message = json::parse(read_file(message_path));
    const std::vector<std::string> confirm = {"--confirm", "--operator", "ana", "--audit", log()};

    const CliResult plain = review(message_path, record, confirm);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    const json expected = json::parse(plain.out);
    if (expected["effect"] == "create") ++creates;

    const std::string kcat = put(scenario + ".kcat.jsonl", kcat_line(message));
    CliResult r = review(kcat, record,
                         {"--input-format", "spring-kafka", "--mapping", kafka_mapping, "--confirm",
                          "--operator", "ana", "--audit", log()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json via_kafka = json::parse(r.out);
    EXPECT_EQ(decision_of(via_kafka), decision_of(expected));
    EXPECT_EQ(via_kafka["input_format"], "spring-kafka");
    EXPECT_EQ(via_kafka["mapping"], kafka_mapping);
    // Where each input came from: the mapped source, the record, --confirm.
    EXPECT_EQ((*input_named(via_kafka, "message_revision"))["from"],
              "mapping: header 'x-revision'");
    EXPECT_EQ((*input_named(via_kafka, "phase"))["from"], "record.phase");
    EXPECT_EQ((*input_named(via_kafka, "operator_confirmed"))["from"], "--confirm");

    const std::string dump =
        put(scenario + ".rabbit.json", json::array({rabbit_message(message)}).dump());
    r = review(dump, record, {"--input-format", "rabbitmq", "--mapping", rabbit_mapping});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json via_rabbit = json::parse(r.out);
    const CliResult unconfirmed = review(message_path, record);
    ASSERT_EQ(unconfirmed.exit_code, 0) << unconfirmed.err;
    EXPECT_EQ(decision_of(via_rabbit), decision_of(json::parse(unconfirmed.out)));
  }
  EXPECT_EQ(creates, 1);  // the prepared scenario dispatches: the comparison covers a create
}

TEST_F(ReviewFormat, TheTextRecordNamesTheMappedSource) {
  const json message = json::parse(read_file(kExamples + "submit502.message.json"));
  const CliResult r =
      run({"review", "--policy", kPolicy, "--message", put("m.kcat.jsonl", kcat_line(message)),
           "--record", kExamples + "submit502.record.json", "--input-format", "kafka", "--mapping",
           put("kafka.yaml", kKafkaMapping)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  message_revision:           2 (from mapping: header 'x-revision')\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  remote_job_id:              \"job_9a02\" (from mapping: payload "
                       "/error/job_id)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  message id:           msg-0201\n"), std::string::npos) << r.out;
}

// The prepared scenario would dispatch with --confirm; a record whose revision is no integer, or
// whose payload is no JSON, must not.
TEST_F(ReviewFormat, ARecordThatDoesNotMapGetsTheDefaultNeverCreate) {
  json message = json::parse(read_file(kExamples + "prepared.message.json"));
  const std::string record = kExamples + "prepared.record.json";
  const std::string mapping = put("kafka.yaml", kKafkaMapping);
  const std::vector<std::string> confirm = {
      "--input-format", "spring-kafka", "--mapping", mapping, "--confirm",
      "--operator",     "ana",          "--audit",   log()};
  // Control: the well-formed record dispatches.
  CliResult r = review(put("ok.jsonl", kcat_line(message)), record, confirm);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["effect"], "create");

  json line = json::parse(kcat_line(message));
  line["headers"][3] = "one";
  const std::string bad_revision = line.dump() + "\n";
  line = json::parse(kcat_line(message));
  line["payload"] = "{not json";
  const std::string bad_payload = line.dump() + "\n";
  for (const std::string& line : {bad_revision, bad_payload}) {
    SCOPED_TRACE(line);
    r = review(put("bad.jsonl", line), record, confirm);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const json doc = json::parse(r.out);
    EXPECT_EQ(doc["action"], "manual_reconciliation");
    EXPECT_EQ(doc["effect"], "none");
    EXPECT_EQ(doc["rule"], "default");
    EXPECT_NE(doc["reason"].get<std::string>().find("invalid"), std::string::npos) << doc;
    EXPECT_EQ(doc["invalid_message"], doc["reason"]);
    // No letter input came from the unreadable record; the record's facts still did.
    EXPECT_EQ((*input_named(doc, "message_revision"))["missing"], true);
    EXPECT_EQ((*input_named(doc, "phase"))["value"], "prepared");
  }
  const std::string entries = read_file(log());
  // One create (the control), then two defaults recorded.
  EXPECT_EQ(entries.find("\"effect\":\"create\""), entries.rfind("\"effect\":\"create\""))
      << entries;
}

TEST_F(ReviewFormat, AMappingOfAnotherFormatIsAUsageError) {
  const json message = json::parse(read_file(kExamples + "accepted.message.json"));
  const CliResult r =
      review(put("m.kcat.jsonl", kcat_line(message)), kExamples + "accepted.record.json",
             {"--input-format", "rabbitmq", "--mapping", put("kafka.yaml", kKafkaMapping)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("kafka.yaml maps kcat-json records, but --input-format rabbitmq reads "
                       "rabbitmq-management-json records"),
            std::string::npos)
      << r.err;
}

TEST_F(ReviewFormat, AMappingOfARecordOnlyOrOperatorOnlyInputIsRefused) {
  const json message = json::parse(read_file(kExamples + "prepared.message.json"));
  const std::string kcat = put("m.kcat.jsonl", kcat_line(message));
  struct Case {
    std::string extra, code, says;
  };
  for (const Case& c : {Case{"  phase: {header: x-phase}\n", "RG311",
                             "input 'phase' is read only from the operation record"},
                        Case{"  operator_confirmed: {header: x-ok}\n", "RG307",
                             "input 'operator_confirmed' is set only by an operator"}}) {
    SCOPED_TRACE(c.code);
    const CliResult r = review(
        kcat, kExamples + "prepared.record.json",
        {"--input-format", "spring-kafka", "--mapping", put("m.yaml", kKafkaMapping + c.extra),
         "--confirm", "--operator", "ana", "--audit", log()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("error[" + c.code + "]: " + c.says), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("errors found; nothing reviewed"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(log()));  // nothing recorded
  }
}

TEST_F(ReviewFormat, ADumpOfMoreThanOneRecordNeedsMessageId) {
  const json first = json::parse(read_file(kExamples + "accepted.message.json"));
  json second = first;
  second["message_id"] = "msg-0194";
  second["revision"] = 3;  // stale against the record's 4
  const std::string dump =
      put("two.json", json::array({rabbit_message(first), rabbit_message(second)}).dump());
  const std::string record = kExamples + "accepted.record.json";
  const std::vector<std::string> format = {"--input-format", "rabbitmq", "--mapping",
                                           put("rabbit.yaml", kRabbitMapping)};
  CliResult r = review(dump, record, format);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("holds 2 records; review reads one: give --message-id ID"),
            std::string::npos)
      << r.err;

  std::vector<std::string> pick = format;
  pick.insert(pick.end(), {"--message-id", "msg-0194"});
  r = review(dump, record, pick);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["message_id"], "msg-0194");
  EXPECT_EQ((*input_named(doc, "message_revision"))["value"], 3);

  pick.back() = "msg-9999";
  r = review(dump, record, pick);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no record has message id 'msg-9999'"), std::string::npos) << r.err;

  // An empty dump holds no message to review.
  r = review(put("none.json", "[]"), record, format);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("holds no record"), std::string::npos) << r.err;
}

TEST_F(ReviewFormat, LettersStayTheDefaultAndTakeNoMessageId) {
  const std::string message = kExamples + "accepted.message.json";
  const std::string record = kExamples + "accepted.record.json";
  const CliResult plain = review(message, record);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const CliResult letters = review(message, record, {"--input-format", "letters"});
  ASSERT_EQ(letters.exit_code, 0) << letters.err;
  EXPECT_EQ(letters.out, plain.out);
  EXPECT_FALSE(json::parse(plain.out).contains("input_format"));

  CliResult r = review(message, record, {"--message-id", "msg-0193"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--message-id selects a record of a dump"), std::string::npos) << r.err;
  r = review(message, record, {"--input-format", "kafka"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--input-format kafka needs --mapping"), std::string::npos) << r.err;
}

}  // namespace
