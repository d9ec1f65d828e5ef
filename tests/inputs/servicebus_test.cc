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

class ServiceBusCli : public CliFixture {
 protected:
  ServiceBusCli() : CliFixture(kSourceDir) {}
  CliResult decide(const std::string& lines) {
    return run(
        {"decide", "--policy", kGate, "--input-format", "servicebus", "--mapping", kMapping, "-"},
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
            "invalid record: application property 'error-class' given twice"},
       }) {
    const CliResult r = decide(line);
    EXPECT_EQ(r.exit_code, 1) << line;
    EXPECT_NE(r.out.find("\"reason\":\"" + reason + "\""), std::string::npos) << r.out;
  }
}

}  // namespace
