// --input-format servicebus: Service Bus dead-letter messages, one per line, mapped through
// examples/servicebus.mapping.yaml: the shipped example end to end (golden) and traps.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const std::string kGate = "policies/replay_gate.yaml";
const std::string kMapping = "examples/servicebus.mapping.yaml";
const std::string kDump = "examples/servicebus-dlq.jsonl";
// attempts from deliveryCount, to pin the reader's counter (the example no longer reads it).
const std::string kCounterMapping = "tests/data/inputs/counters/servicebus.mapping.yaml";

class ServiceBusCli : public CliFixture {
 protected:
  ServiceBusCli() : CliFixture(kSourceDir) {}
  CliResult decide(const std::string& lines, const std::string& mapping = kMapping) {
    return run(
        {"decide", "--policy", kGate, "--input-format", "servicebus", "--mapping", mapping, "-"},
        lines);
  }
};

std::string without_table(const std::string& out) {
  return std::regex_replace(out, std::regex("\"table\":\"[0-9a-f]{32}\""), "\"table\":\"@TABLE@\"");
}

std::string message(const std::string& count, const std::string& properties = "") {
  return R"({"messageId":"m1","sequenceNumber":7,"deliveryCount":)" + count +
         R"(,"deadLetterSource":"payment-capture","applicationProperties":{"error-class":"timeout")" +
         properties + R"(},"body":"{\"idempotency_key\":\"k1\",\"committed\":false}"})" + "\n";
}

TEST_F(ServiceBusCli, ExampleDumpGolden) {
  const CliResult r = run(
      {"decide", "--policy", kGate, "--input-format", "servicebus", "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(without_table(r.out), "inputs/servicebus-dlq.expected.jsonl");
  EXPECT_EQ(lines_of(r.out).size(), 21u);
}

TEST_F(ServiceBusCli, Traps) {
  EXPECT_NE(decide(message("1")).out.find("\"verb\":\"replay_once\""), std::string::npos);
  // The example budget counts redrives, not deliveries: a letter at MaxDeliveryCount replays.
  EXPECT_NE(decide(message("10")).out.find("\"verb\":\"replay_once\""), std::string::npos);
  for (const auto& [line, reason] : std::vector<std::pair<std::string, std::string>>{
           {message("\"1\""),
            "invalid input: attempts (record delivery-count: deliveryCount is not an integer >= "
            "0)"},
           {message("-1"),
            "invalid input: attempts (record delivery-count: deliveryCount is not an integer >= "
            "0)"},
           {message("1", R"(,"x-replay":null)"),
            "invalid input: replays (header 'x-replay' is present but null)"},
           {message("1", R"(,"x-replay":true)"),
            "invalid input: replays (header 'x-replay' does not decode as decimal: not a decimal "
            "integer (4 bytes))"},
           {message("1", R"(,"error-class":"x")"),
            "invalid record: duplicate key 'error-class' in /applicationProperties"},
       }) {
    const CliResult r = decide(line, kCounterMapping);
    EXPECT_EQ(r.exit_code, 1) << line;
    EXPECT_NE(r.out.find("\"reason\":\"" + reason + "\""), std::string::npos) << r.out;
  }
}

// The shapes the SDKs and Service Bus Explorer write, field for field (issue 35, item 10): the JS
// SDK's JSON.stringify (made by the SDK, offline), .NET's System.Text.Json and Service Bus
// Explorer's export (hand-made from their property lists): tests/data/inputs/servicebus/README.md.
TEST_F(ServiceBusCli, WhatTheSdksAndExplorerWrite) {
  for (const std::string name : {"js-sdk", "dotnet.handmade", "explorer.handmade"}) {
    SCOPED_TRACE(name);
    const CliResult r =
        run({"decide", "--policy", kGate, "--input-format", "servicebus", "--mapping", kMapping,
             "--show-inputs", "tests/data/inputs/servicebus/" + name + ".jsonl"});
    EXPECT_EQ(r.exit_code, 1) << r.err;  // each file's last letter has a body that is not JSON
    expect_golden(without_table(r.out), "inputs/servicebus/" + name + ".expected.jsonl");
    const std::vector<std::string> lines = lines_of(r.out);
    ASSERT_GE(lines.size(), 4u) << r.out << r.err;
    EXPECT_NE(lines[0].find("\"verb\":\"replay_once\""), std::string::npos) << lines[0];
    EXPECT_NE(lines[1].find("\"verb\":\"never\""), std::string::npos) << lines[1];
    EXPECT_NE(lines[2].find("\"rule\":\"already_replayed\""), std::string::npos) << lines[2];
    EXPECT_NE(lines[3].find("the payload is not JSON"), std::string::npos) << lines[3];
  }
}

TEST_F(ServiceBusCli, SdkValueShapes) {
  const std::string body = R"("body":{"idempotency_key":"k1","committed":false})";
  const std::string common =
      R"("deadLetterSource":"payment-capture","applicationProperties":{"error-class":"timeout"},)";
  // The JS SDK: a Long sequence number (2^32 + 2), a numeric message id, a JSON body as an object.
  CliResult r = run(
      {"explain", "--policy", kGate, "--input-format", "servicebus", "--mapping", kMapping, "-"},
      R"({"messageId":4242,"sequenceNumber":{"low":2,"high":1,"unsigned":false},)" + common + body +
          "}\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("offset = 4294967298"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("key = \"4242\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replay_once"), std::string::npos) << r.out;
  for (const auto& [line, reason] : std::vector<std::pair<std::string, std::string>>{
           {R"({"messageId":"m","sequenceNumber":{"low":2,"high":1},)" + common + body + "}",
            "invalid record: sequenceNumber must be an integer"},
           {R"({"messageId":"m","body":{"type":"Buffer","data":[256]},)" + common + "\"x\":1}",
            "invalid record: unknown key 'x' in a Service Bus message"},
           {R"({"messageId":"m",)" + common + R"("body":{"type":"Buffer","data":[256]}})",
            "invalid record: body is a Buffer whose data is not an array of bytes"},
           {R"({"messageId":"m","MessageId":"n",)" + common + body + "}",
            "invalid record: key 'MessageId' is one of .NET's ServiceBusReceivedMessage names, but "
            "the message's other keys are the SDKs' camelCase names (one writer's names per "
            "message)"},
           {R"({"MessageId":"m","ApplicationProperties":{},"Properties":{}})",
            "invalid record: key 'Properties' is one of Service Bus Explorer's export names, but "
            "the message's other keys are .NET's ServiceBusReceivedMessage names (one writer's "
            "names per message)"},
           {R"({"MessageId":"m","DeadLetterSource":"payment-capture","Body":"e30="})",
            "invalid record: a PascalCase message with a Body and neither ApplicationProperties "
            "(.NET, Body in base64) nor Properties (Service Bus Explorer, Body as text)"},
           {R"({"MessageId":"m","ApplicationProperties":{"error-class":"timeout"},)"
            R"("DeadLetterSource":"payment-capture","Body":"not base64!"})",
            "invalid input: idempotency_key (the payload does not decode (Body is base64): not "
            "base64:"},
       }) {
    r = decide(line + "\n");
    EXPECT_EQ(r.exit_code, 1) << line;
    EXPECT_NE(r.out.find("\"reason\":\"" + reason), std::string::npos) << r.out;
  }
}

}  // namespace
