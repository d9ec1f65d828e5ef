// --input-format sqs: `aws sqs receive-message` output ({"Messages":[...]}), streamed one message
// at a time, mapped through examples/sqs.mapping.yaml: the shipped example end to end (golden), the
// array inside the object, and the traps of issue 20.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "inputs/records.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using replaygate::inputs::JsonArrayReader;
using replaygate::inputs::LineReader;

const std::string kGate = "policies/replay_gate.yaml";
const std::string kMapping = "examples/sqs.mapping.yaml";
const std::string kDump = "examples/sqs-dlq.json";
// attempts from ApproximateReceiveCount, to pin the reader's counter (the example no longer reads
// it: docs/input-mapping.md "Broker delivery counters").
const std::string kCounterMapping = "tests/data/inputs/counters/sqs.mapping.yaml";

std::vector<std::string> members(const std::string& text) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  EXPECT_EQ(write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fds[1]);
  JsonArrayReader reader(fds[0], 1 << 20, "Messages");
  std::vector<std::string> out;
  std::string_view record;
  while (true) {
    const LineReader::Status status = reader.next(&record);
    if (status == LineReader::Status::kEnd) break;
    if (status == LineReader::Status::kError) {
      out.push_back("!error: " + reader.error_text());
      break;
    }
    out.push_back(std::string(record));
  }
  close(fds[0]);
  return out;
}

TEST(JsonArrayReader, TheArrayOfAMember) {
  using V = std::vector<std::string>;
  EXPECT_EQ(members(""), V{});    // aws prints nothing when no message was received
  EXPECT_EQ(members("{}"), V{});  // nor a Messages member
  EXPECT_EQ(members(R"({"Messages":[{"a":1},{"b":"]}"}]})"), (V{R"({"a":1})", R"({"b":"]}"})"}));
  EXPECT_EQ(members(R"({"x":{"Messages":[1]},"Messages":[{}],"y":[1,{"z":"}"}]} )"), V{"{}"});
  EXPECT_EQ(members(R"({"Messages":[{}],"y":1)"),
            (V{"{}", "!error: the dump ends inside its top-level object"}));
  EXPECT_EQ(members(R"({"Messages":{}})"), V{"!error: \"Messages\" is not a JSON array"});
  EXPECT_EQ(members(R"([{}])"), V{"!error: not a JSON object with \"Messages\": [...]"});
  EXPECT_EQ(members(R"({"Messages":[]} {})"),
            V{"!error: content after the dump's closing bracket"});
}

class SqsCli : public CliFixture {
 protected:
  SqsCli() : CliFixture(kSourceDir) {}
  CliResult decide(const std::string& dump, const std::string& mapping = kMapping) {
    return run({"decide", "--policy", kGate, "--input-format", "sqs", "--mapping", mapping, "-"},
               dump);
  }
};

std::string without_table(const std::string& out) {
  return std::regex_replace(out, std::regex("\"table\":\"[0-9a-f]{32}\""), "\"table\":\"@TABLE@\"");
}

std::string message(
    const std::string& attributes, const std::string& message_attributes = "",
    const std::string& body =
        R"({\"idempotency_key\":\"k1\",\"committed\":false,\"error\":\"timeout\"})") {
  return R"({"MessageId":"m-1","ReceiptHandle":"AQEB","MD5OfBody":"x","Body":")" + body +
         R"(","Attributes":{)" + attributes + R"(},"MessageAttributes":{)" + message_attributes +
         "}}";
}
const std::string kSource =
    R"("DeadLetterQueueSourceArn":"arn:aws:sqs:eu-west-1:123456789012:payment-capture")";

TEST_F(SqsCli, ExampleDumpGolden) {
  const CliResult r =
      run({"decide", "--policy", kGate, "--input-format", "sqs", "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(without_table(r.out), "inputs/sqs-dlq.expected.jsonl");
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 22u);
  EXPECT_NE(lines[17].find("\"at\":\"/Messages/17\""), std::string::npos) << lines[17];
}

TEST_F(SqsCli, Traps) {
  for (const auto& [msg, reason] : std::vector<std::pair<std::string, std::string>>{
           {message(kSource), "invalid input: attempts (record delivery-count is missing)"},
           {message(kSource + R"(,"ApproximateReceiveCount":"3x")"),
            "invalid input: attempts (record delivery-count: ApproximateReceiveCount '3x' is not "
            "a count)"},
           {message(kSource + R"(,"ApproximateReceiveCount":"-1")"),
            "invalid input: attempts (record delivery-count: ApproximateReceiveCount '-1' is not "
            "a count)"},
           {message(kSource + R"(,"ApproximateReceiveCount":"99999999999999999999")"),
            "invalid input: attempts (record delivery-count: ApproximateReceiveCount "
            "'99999999999999999999' is not a count)"},
           {message(R"("ApproximateReceiveCount":"1")"),
            "invalid input: topic (record topic is missing)"},
           {message(kSource + R"(,"ApproximateReceiveCount":"1")",
                    R"("x-replay":{"StringValue":"one","DataType":"Number"})"),
            "invalid input: replays (header 'x-replay' does not decode as decimal: not a decimal "
            "integer (3 bytes))"},
           {message(kSource + R"(,"ApproximateReceiveCount":"1")", "", "not json"),
            "invalid input: error_class (the payload is not JSON)"},
           {message(kSource + R"(,"ApproximateReceiveCount":1)"),
            "invalid record: attribute 'ApproximateReceiveCount' must be a string"},
           {message(kSource + R"(,"ApproximateReceiveCount":"1")",
                    R"("x-replay":{"StringListValues":["1"],"DataType":"Number"})"),
            "invalid record: message attribute 'x-replay' has 'StringListValues' (only "
            "StringValue, BinaryValue, DataType)"},
       }) {
    const CliResult r = decide(R"({"Messages":[)" + msg + "]}", kCounterMapping);
    EXPECT_EQ(r.exit_code, 1) << msg;
    EXPECT_NE(r.out.find("\"reason\":\"" + reason + "\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"at\":\"/Messages/0\""), std::string::npos) << r.out;
  }
  const CliResult ok = decide(R"({"Messages":[)" +
                                  message(kSource + R"(,"ApproximateReceiveCount":"2")",
                                          R"("x-replay":{"StringValue":"0","DataType":"Number"})") +
                                  "]}",
                              kCounterMapping);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"verb\":\"replay_once\""), std::string::npos) << ok.out;
}

// The queue's maxReceiveCount is no message's: the mapping takes it as a constant, or from the
// queue attributes file (`aws sqs get-queue-attributes` output, RedrivePolicy's JSON text).
TEST_F(SqsCli, MaxReceiveCountFromTheQueueAttributesOrAConstant) {
  const std::string dir = "tests/data/inputs/sqs_redrive/";
  const auto decide_with = [&](const std::string& mapping, const std::string& count) {
    return run({"decide", "--policy", dir + "policy.yaml", "--input-format", "sqs", "--mapping",
                dir + mapping, "-"},
               R"({"Messages":[)" +
                   message(kSource + R"(,"ApproximateReceiveCount":")" + count + "\"") + "]}");
  };
  // maxReceiveCount 3 from the attributes file: 2 receives replay, 3 are exhausted.
  EXPECT_NE(decide_with("from-attributes.mapping.yaml", "2").out.find("\"verb\":\"replay_once\""),
            std::string::npos);
  const CliResult three = decide_with("from-attributes.mapping.yaml", "3");
  EXPECT_NE(three.out.find("\"verb\":\"hold\""), std::string::npos) << three.out << three.err;
  EXPECT_NE(three.out.find("\"rule\":\"exhausted\""), std::string::npos) << three.out;
  // constant: 5 in the mapping: 3 and 4 receives still replay.
  EXPECT_NE(decide_with("constant.mapping.yaml", "4").out.find("\"verb\":\"replay_once\""),
            std::string::npos);
  EXPECT_NE(decide_with("constant.mapping.yaml", "5").out.find("\"rule\":\"exhausted\""),
            std::string::npos);
  // explain names where the budget came from.
  const CliResult explained = run({"explain", "--policy", dir + "policy.yaml", "--input-format",
                                   "sqs", "--mapping", dir + "from-attributes.mapping.yaml", "-"},
                                  message(kSource + R"(,"ApproximateReceiveCount":"1")"));
  EXPECT_NE(explained.out.find(
                "max_receive_count = 3 (from queue attribute 'RedrivePolicy.maxReceiveCount' = "
                "\"3\")"),
            std::string::npos)
      << explained.out << explained.err;
}

// A queue attribute the mapping cannot have is a mapping error (RG304/RG305), before any record.
TEST_F(SqsCli, QueueAttributeMappingErrors) {
  const std::string dir = "tests/data/inputs/sqs_redrive/";
  const std::string base = "format: sqs-json\n";
  const std::string rest =
      "  topic: {record: topic}\n  error_class: {payload: /error}\n  attempts: {record: "
      "delivery-count}\n";
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {base + "inputs:\n" + rest +
                "  max_receive_count: {queue_attribute: RedrivePolicy.maxReceiveCount}\n",
            "error[RG304]: input 'max_receive_count' reads a queue attribute, but the mapping "
            "names no file"},
           {base + "queue_attributes: queue-attributes.json\ninputs:\n" + rest +
                "  max_receive_count: {queue_attribute: RedrivePolicy.maxRetries}\n",
            "error[RG304]: queue attribute 'RedrivePolicy' has no key 'maxRetries'"},
           {base + "queue_attributes: queue-attributes.json\ninputs:\n" + rest +
                "  max_receive_count: {queue_attribute: MaximumMessageSize}\n",
            "error[RG304]: the queue attributes file has no attribute 'MaximumMessageSize'"},
           {base + "queue_attributes: missing.json\ninputs:\n" + rest +
                "  max_receive_count: {constant: 3}\n",
            "error[RG301]: cannot read the queue attributes file 'missing.json'"},
           {base + "inputs:\n" + rest + "  max_receive_count: {constant: three}\n",
            "error[RG305]: the constant 'three' of input 'max_receive_count' is not an integer"},
           {base + "inputs:\n" + rest + "  max_receive_count: {constant: 3, decode: decimal}\n",
            "error[RG304]: decode applies to a header or a payload value, not to input "
            "'max_receive_count''s constant"},
       }) {
    // In the test's scratch directory, beside a copy of the attributes file.
    write_file(dir_ / "queue-attributes.json",
               read_file(kSourceDir + "/" + dir + "queue-attributes.json"));
    write_file(dir_ / "scratch.mapping.yaml", text);
    const CliResult r =
        run({"lint", dir + "policy.yaml", "--mapping", (dir_ / "scratch.mapping.yaml").string()});
    EXPECT_EQ(r.exit_code, 1) << text;
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
  }
}

// explain on a whole dump: every message, in order, each under its JSON pointer; a message that
// cannot be read is said on stderr (exit 1) and the others are still explained.
TEST_F(SqsCli, ExplainTheWholeDump) {
  const CliResult r =
      run({"explain", "--policy", kGate, "--input-format", "sqs", "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  size_t explained = 0, unreadable = 0;
  for (size_t i = 0; i < 22; ++i) {
    const std::string at = "/Messages/" + std::to_string(i);
    const bool shown = r.out.find("message " + at + " of the dump\n") != std::string::npos;
    const bool refused =
        r.err.find(kDump + " at " + at + ": unreadable record: ") != std::string::npos;
    EXPECT_NE(shown, refused) << at << "\n" << r.err;
    explained += shown;
    unreadable += refused;
  }
  EXPECT_EQ(explained + unreadable, 22u);
  EXPECT_GT(unreadable, 0u);
  EXPECT_EQ(r.out.find("message /Messages/22"), std::string::npos);
  // Each explanation shows the raw metadata, the mapped inputs and the decision.
  EXPECT_NE(r.out.find("message /Messages/0 of the dump\npolicy "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("attempts = 0 (header 'x-replay' is missing: the mapping's default)"),
            std::string::npos)
      << r.out;

  const CliResult json = run({"explain", "--policy", kGate, "--input-format", "sqs", "--mapping",
                              kMapping, "--format", "json", kDump});
  EXPECT_EQ(json.exit_code, 1) << json.err;
  const nlohmann::json doc = nlohmann::json::parse(json.out);
  ASSERT_TRUE(doc.is_array());
  EXPECT_EQ(doc.size(), explained);
  EXPECT_EQ(doc.at(0).at("at"), "/Messages/0");
  EXPECT_TRUE(doc.at(0).contains("record"));
  EXPECT_TRUE(doc.at(0).contains("decision"));

  // One message (not a dump) is explained as before, without an "at".
  const CliResult one =
      run({"explain", "--policy", kGate, "--input-format", "sqs", "--mapping", kMapping, "-"},
          message(kSource + R"(,"ApproximateReceiveCount":"2")"));
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.rfind("policy ", 0), 0u) << one.out;
  // An empty dump holds no message.
  const CliResult none =
      run({"explain", "--policy", kGate, "--input-format", "sqs", "--mapping", kMapping, "-"},
          R"({"Messages":[]})");
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "");
  EXPECT_NE(none.err.find("holds no message"), std::string::npos) << none.err;
}

}  // namespace
