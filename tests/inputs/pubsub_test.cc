// --input-format pubsub: projects.subscriptions.pull responses ({"receivedMessages":[...]}),
// streamed, mapped through examples/pubsub.mapping.yaml: the shipped example end to end (golden)
// and the traps of issue 20.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const std::string kGate = "policies/replay_gate.yaml";
const std::string kMapping = "examples/pubsub.mapping.yaml";
const std::string kDump = "examples/pubsub-dlq.json";
// attempts from CloudPubSubDeadLetterSourceDeliveryCount, to pin the attribute's traps (the
// example no longer reads it: docs/input-mapping.md "Broker delivery counters").
const std::string kCounterMapping = "tests/data/inputs/counters/pubsub.mapping.yaml";

class PubSubCli : public CliFixture {
 protected:
  PubSubCli() : CliFixture(kSourceDir) {}
  CliResult decide(const std::string& dump, const std::string& mapping = kMapping) {
    return run({"decide", "--policy", kGate, "--input-format", "pubsub", "--mapping", mapping, "-"},
               dump);
  }
};

std::string without_table(const std::string& out) {
  return std::regex_replace(out, std::regex("\"table\":\"[0-9a-f]{32}\""), "\"table\":\"@TABLE@\"");
}

// {"idempotency_key":"k1","committed":false}
const std::string kData = "eyJpZGVtcG90ZW5jeV9rZXkiOiJrMSIsImNvbW1pdHRlZCI6ZmFsc2V9";

std::string received(const std::string& attributes, const std::string& data = kData) {
  return R"({"receivedMessages":[{"ackId":"a1","message":{"data":")" + data +
         R"(","messageId":"1","attributes":{"CloudPubSubDeadLetterSourceSubscription":)"
         R"("payment-capture-worker","error-class":"timeout")" +
         attributes + R"(}},"deliveryAttempt":1}]})";
}

TEST_F(PubSubCli, ExampleDumpGolden) {
  const CliResult r =
      run({"decide", "--policy", kGate, "--input-format", "pubsub", "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(without_table(r.out), "inputs/pubsub-dlq.expected.jsonl");
  EXPECT_EQ(lines_of(r.out).size(), 21u);
  EXPECT_NE(r.out.find("\"at\":\"/receivedMessages/15\""), std::string::npos) << r.out;
}

TEST_F(PubSubCli, Traps) {
  for (const auto& [dump, reason] : std::vector<std::pair<std::string, std::string>>{
           {received(""),
            "invalid input: attempts (header "
            "'CloudPubSubDeadLetterSourceDeliveryCount' is missing)"},
           {received(R"(,"CloudPubSubDeadLetterSourceDeliveryCount":"5x")"),
            "invalid input: attempts (header 'CloudPubSubDeadLetterSourceDeliveryCount' does not "
            "decode as decimal: not a decimal integer (2 bytes))"},
           {received(R"(,"CloudPubSubDeadLetterSourceDeliveryCount":"1")", "e30"),
            "invalid input: idempotency_key (the payload does not decode (message.data is "
            "base64): not base64: a length of 3, not a multiple of 4)"},
           {received(R"(,"CloudPubSubDeadLetterSourceDeliveryCount":1)"),
            "invalid record: attribute 'CloudPubSubDeadLetterSourceDeliveryCount' must be a "
            "string"},
           {received(R"(,"CloudPubSubDeadLetterSourceDeliveryCount":"1","error-class":"x")"),
            "invalid record: duplicate key 'error-class' in /message/attributes"},
       }) {
    const CliResult r = decide(dump, kCounterMapping);
    EXPECT_EQ(r.exit_code, 1) << dump;
    EXPECT_NE(r.out.find("\"reason\":\"" + reason + "\""), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"at\":\"/receivedMessages/0\""), std::string::npos) << r.out;
  }
  const CliResult ok =
      decide(received(R"(,"CloudPubSubDeadLetterSourceDeliveryCount":"1")"), kCounterMapping);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("\"verb\":\"replay_once\""), std::string::npos) << ok.out;
  EXPECT_EQ(decide("{}").exit_code, 0);  // an empty pull response: no message
}

}  // namespace
