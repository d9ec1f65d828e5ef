// --input-format sqs: `aws sqs receive-message` output ({"Messages":[...]}), streamed one message
// at a time, mapped through examples/sqs.mapping.yaml: the shipped example end to end (golden), the
// array inside the object, and the traps of issue 20.
#include <gtest/gtest.h>
#include <unistd.h>

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
  CliResult decide(const std::string& dump) {
    return run({"decide", "--policy", kGate, "--input-format", "sqs", "--mapping", kMapping, "-"},
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
  EXPECT_NE(lines[15].find("\"at\":\"/Messages/15\""), std::string::npos) << lines[15];
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
    const CliResult r = decide(R"({"Messages":[)" + msg + "]}");
    EXPECT_EQ(r.exit_code, 1) << msg;
    EXPECT_NE(r.out.find("\"reason\":\"" + reason + "\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"at\":\"/Messages/0\""), std::string::npos) << r.out;
  }
  const CliResult ok = decide(R"({"Messages":[)" +
                              message(kSource + R"(,"ApproximateReceiveCount":"2")",
                                      R"("x-replay":{"StringValue":"0","DataType":"Number"})") +
                              "]}");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"verb\":\"replay_once\""), std::string::npos) << ok.out;
}

}  // namespace
