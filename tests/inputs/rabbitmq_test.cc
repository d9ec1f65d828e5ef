// --input-format rabbitmq: management-API /get responses (a JSON array of messages), streamed one
// message at a time (JsonArrayReader), mapped through examples/rabbitmq.mapping.yaml. The array
// reader on its own, the shipped example end to end (golden), and the traps of issue 20.
#include <fcntl.h>
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
const std::string kMapping = "examples/rabbitmq.mapping.yaml";
const std::string kDump = "examples/rabbitmq-dlq.json";
// attempts from the x-death count, to pin the reader's counter (the example no longer reads it:
// docs/input-mapping.md "Broker delivery counters").
const std::string kCounterMapping = "tests/data/inputs/counters/rabbitmq.mapping.yaml";

// Every element JsonArrayReader hands out for `text` ("!large" for kTooLarge), then "!error: ..."
// when it ends with an error.
std::vector<std::string> elements(const std::string& text, size_t max_record = 1 << 20) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  EXPECT_EQ(write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fds[1]);
  JsonArrayReader reader(fds[0], max_record);
  std::vector<std::string> out;
  std::string_view record;
  while (true) {
    const LineReader::Status status = reader.next(&record);
    if (status == LineReader::Status::kEnd) break;
    if (status == LineReader::Status::kError) {
      out.push_back("!error: " + reader.error_text());
      break;
    }
    out.push_back(status == LineReader::Status::kTooLarge ? "!large" : std::string(record));
    EXPECT_EQ(reader.line_number(), out.size());
  }
  close(fds[0]);
  return out;
}

TEST(JsonArrayReader, SplitsElementsOutsideStrings) {
  using V = std::vector<std::string>;
  EXPECT_EQ(elements("[]"), V{});
  EXPECT_EQ(elements(" [ ]\n"), V{});
  EXPECT_EQ(elements(R"([{"a":"],[{"},[1,[2]],"x\"]",3])"),
            (V{R"({"a":"],[{"})", "[1,[2]]", R"("x\"]")", "3"}));
  EXPECT_EQ(elements("[\n  {\"a\": 1} ,\n  {\"b\": 2}\n]\n"), (V{"{\"a\": 1}", "{\"b\": 2}"}));
  EXPECT_EQ(elements("[{\"a\":\"" + std::string(100, 'x') + "\"},{}]", 50), (V{"!large", "{}"}));
  EXPECT_EQ(elements(""), V{"!error: not a JSON array: the dump is empty"});
  EXPECT_EQ(elements("{\"Messages\":[]}"),
            V{"!error: not a JSON array (a management-API /get response is one)"});
  EXPECT_EQ(elements("[{},]"), (V{"{}", "!error: a ',' before the array's closing ']'"}));
  EXPECT_EQ(elements("[{}] x"), (V{"{}", "!error: content after the dump's closing bracket"}));
  EXPECT_EQ(elements("[{}, {\"a\":"), (V{"{}", "!error: the dump ends inside element /1"}));
  EXPECT_EQ(elements("[{}"), (V{"{}", "!error: the dump ends inside the array (no closing ']')"}));
}

class RabbitMqCli : public CliFixture {
 protected:
  RabbitMqCli() : CliFixture(kSourceDir) {}

  CliResult decide(const std::string& dump, const std::string& mapping = kMapping) {
    return run(
        {"decide", "--policy", kGate, "--input-format", "rabbitmq", "--mapping", mapping, "-"},
        dump);
  }
};

std::string without_table(const std::string& out) {
  return std::regex_replace(out, std::regex("\"table\":\"[0-9a-f]{32}\""), "\"table\":\"@TABLE@\"");
}

// One 3.10 message of the payment.capture queue with these headers (JSON members, sorted as the
// broker would) and payload.
std::string message(
    const std::string& headers,
    const std::string& payload = R"({\"idempotency_key\":\"k1\",\"committed\":false})",
    const std::string& encoding = "string") {
  return R"({"payload_bytes":10,"redelivered":true,"exchange":"","routing_key":"payment.capture.dlq",)"
         R"("message_count":0,"properties":{"delivery_mode":2,"headers":{)" +
         headers + R"(},"message_id":"m-1"},"payload":")" + payload + R"(","payload_encoding":")" +
         encoding + "\"}";
}
std::string death(int count, const std::string& queue = "payment.capture") {
  return R"({"count":)" + std::to_string(count) + R"(,"exchange":"","queue":")" + queue +
         R"(","reason":"rejected","routing-keys":[")" + queue + R"("],"time":1764403200})";
}
const std::string kFirst =
    R"("x-exception-class":"java.net.SocketTimeoutException","x-first-death-exchange":"",)"
    R"("x-first-death-queue":"payment.capture","x-first-death-reason":"rejected")";

TEST_F(RabbitMqCli, ExampleDumpGolden) {
  const CliResult r = run(
      {"decide", "--policy", kGate, "--input-format", "rabbitmq", "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // bad records on purpose
  expect_golden(without_table(r.out), "inputs/rabbitmq-dlq.expected.jsonl");
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 23u);
  EXPECT_NE(lines[19].find("\"n\":20,"), std::string::npos) << lines[19];
  EXPECT_NE(lines[19].find("\"at\":\"/19\""), std::string::npos) << lines[19];
  EXPECT_EQ(r.err.substr(0, r.err.find(';')),
            "summary: 23 records, never 5, replay_once 6, hold 12");
}

TEST_F(RabbitMqCli, DecidesWhateverTheHeaderOrder) {
  const std::string sorted =
      message(R"("x-death":[)" + death(1) + "]," + kFirst + R"(,"x-replay":0)");
  const std::string shuffled = message(
      R"("x-replay":0,"x-first-death-reason":"rejected","x-first-death-queue":"payment.capture",)"
      R"("x-exception-class":"java.net.SocketTimeoutException","x-death":[)" +
      death(1) + "]");
  const CliResult a = decide("[" + sorted + "]");
  const CliResult b = decide("[" + shuffled + "]");
  EXPECT_EQ(a.exit_code, 0) << a.err << a.out;
  EXPECT_NE(a.out.find("\"verb\":\"replay_once\""), std::string::npos) << a.out;
  EXPECT_EQ(a.out, b.out);
}

TEST_F(RabbitMqCli, DeliveryCountTraps) {
  std::string huge = R"("x-death":[)";
  for (int i = 0; i < 1001; ++i) huge += (i ? "," : "") + death(1, "q" + std::to_string(i));
  huge += "],";
  for (
      const auto& [headers, reason] : std::vector<std::pair<std::string, std::string>>{
          {huge + kFirst,
           "invalid input: attempts (record delivery-count: x-death has 1001 "
           "entries (more than 1000))"},
          {R"("x-death":[)" + death(1) + "," + death(2) + "]," + kFirst,
           "invalid input: attempts (record delivery-count: x-death has 2 entries for the first "
           "death (queue 'payment.capture', reason 'rejected'))"},
          {R"("x-death":[{"count":-1,"queue":"payment.capture","reason":"rejected"}],)" + kFirst,
           "invalid input: attempts (record delivery-count: x-death/0/count is not an integer >= "
           "0)"},
          {R"("x-death":[{"count":"2","queue":"payment.capture","reason":"rejected"}],)" + kFirst,
           "invalid input: attempts (record delivery-count: x-death/0/count is not an integer >= "
           "0)"},
          {R"("x-death":{"count":1},)" + kFirst,
           "invalid input: attempts (record delivery-count: x-death is not an array)"},
          {R"("x-exception-class":"java.net.SocketTimeoutException","x-first-death-queue":"payment.capture")",
           "invalid input: attempts (record delivery-count is missing)"},
      }) {
    const CliResult r = decide("[" + message(headers) + "]", kCounterMapping);
    EXPECT_EQ(r.exit_code, 1) << headers.substr(0, 200);
    EXPECT_NE(r.out.find("\"reason\":\"" + reason + "\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"verb\":\"hold\""), std::string::npos) << r.out;
  }
}

// The example maps x-replay to attempts (redrive cycles) before replays: a bad x-replay is named
// for attempts, the first input read from it.
TEST_F(RabbitMqCli, HeaderAndPayloadTraps) {
  const std::string deaths = R"("x-death":[)" + death(1) + "],";
  for (const auto& [msg, reason] : std::vector<std::pair<std::string, std::string>>{
           {message(deaths + kFirst + R"(,"x-replay":null)"),
            "invalid input: attempts (header 'x-replay' is present but null)"},
           {message(deaths + kFirst + R"(,"x-replay":"one")"),
            "invalid input: attempts (header 'x-replay' does not decode as decimal: not a decimal "
            "integer (3 bytes))"},
           {message(deaths + kFirst + R"(,"x-replay":1.5)"),
            "invalid input: attempts (header 'x-replay' does not decode as decimal: not a decimal "
            "integer (3 bytes))"},
           {message(deaths + kFirst, "not json"),
            "invalid input: idempotency_key (the payload is not JSON)"},
           {message(deaths + kFirst, "eyJhIjo=x", "base64"),
            "invalid input: idempotency_key (the payload does not decode (payload_encoding "
            "base64): "
            "not base64: a length of 9, not a multiple of 4)"},
           {message(deaths + kFirst + R"(,"x-exception-class":"x")"),
            "invalid record: duplicate key 'x-exception-class' in /properties/headers"},
           {message(deaths + kFirst, "x", "auto"),
            "invalid record: payload_encoding must be string or base64, not 'auto'"},
       }) {
    const CliResult r = decide("[" + msg + "]");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find("\"reason\":\"" + reason + "\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"at\":\"/0\""), std::string::npos) << r.out;
  }
  // A base64 payload that decodes is read as the JSON document it encodes.
  const CliResult r =
      decide("[" +
             message(deaths + kFirst, "eyJpZGVtcG90ZW5jeV9rZXkiOiJrMiIsImNvbW1pdHRlZCI6ZmFsc2V9",
                     "base64") +
             "]");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"verb\":\"replay_once\""), std::string::npos) << r.out;
}

TEST_F(RabbitMqCli, TheDumpMustBeOneArray) {
  const std::string one = message(R"("x-death":[)" + death(1) + "]," + kFirst);
  CliResult r = decide(one + "\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a JSON array (a management-API /get response is one)"),
            std::string::npos)
      << r.err;
  r = decide("[" + one + "," + one.substr(0, 40));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines_of(r.out).size(), 1u) << r.out;  // the first message is decided
  EXPECT_NE(r.err.find("the dump ends inside element /1"), std::string::npos) << r.err;
}

TEST_F(RabbitMqCli, MappingFormatMustMatch) {
  const CliResult r = decide("[]", "examples/spring-kafka.mapping.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("examples/spring-kafka.mapping.yaml maps kcat-json records, but "
                       "--input-format rabbitmq reads rabbitmq-management-json records"),
            std::string::npos)
      << r.err;
  const CliResult k = run(
      {"decide", "--policy", kGate, "--input-format", "spring-kafka", "--mapping", kMapping, "-"},
      "");
  EXPECT_EQ(k.exit_code, 2);
}

TEST_F(RabbitMqCli, ExplainOneMessage) {
  const CliResult r =
      run({"explain", "--policy", kGate, "--input-format", "rabbitmq", "--mapping", kMapping, "-"},
          message(R"("x-death":[)" + death(2) + "]," + kFirst));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // x-death count 2: not the budget (it stays 1 across republish cycles on 3.13+); no x-replay: 0.
  EXPECT_NE(r.out.find("attempts = 0 (header 'x-replay' is missing: the mapping's default)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("header \"x-first-death-queue\" = \"payment.capture\""), std::string::npos)
      << r.out;
}

}  // namespace
