// --input-format kafka-connect: Connect's dead-letter topic via kcat -J, __connect.errors.* text
// headers, mapped through examples/kafka-connect.mapping.yaml (occurrence: first / last / count):
// the shipped example end to end (golden) and traps.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const std::string kGate = "policies/replay_gate.yaml";
const std::string kMapping = "examples/kafka-connect.mapping.yaml";
const std::string kDump = "examples/kafka-connect-dlq.kcat.jsonl";

class KafkaConnectCli : public CliFixture {
 protected:
  KafkaConnectCli() : CliFixture(kSourceDir) {}
  CliResult decide(const std::string& lines, const std::string& mapping_text = "") {
    std::string mapping = kMapping;
    if (!mapping_text.empty()) {
      mapping = (dir_ / "m.yaml").string();
      write_file(mapping, mapping_text);
    }
    return run(
        {"decide", "--policy", kGate, "--input-format", "kafka-connect", "--mapping", mapping, "-"},
        lines);
  }
};

std::string without_table(const std::string& out) {
  return std::regex_replace(out, std::regex("\"table\":\"[0-9a-f]{32}\""), "\"table\":\"@TABLE@\"");
}

TEST_F(KafkaConnectCli, ExampleDumpGolden) {
  const CliResult r = run({"decide", "--policy", kGate, "--input-format", "kafka-connect",
                           "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(without_table(r.out), "inputs/kafka-connect-dlq.expected.jsonl");
  EXPECT_EQ(lines_of(r.out).size(), 19u);
}

TEST_F(KafkaConnectCli, CountFirstAndLast) {
  const std::string context =
      R"("__connect.errors.topic","payment.capture","__connect.errors.exception.class.name",)"
      R"("java.net.SocketTimeoutException")";
  const auto record = [](const std::string& headers) {
    return R"({"topic":"connect-dlq","partition":0,"offset":1,"headers":[)" + headers +
           R"(],"key":"k","payload":"{\"idempotency_key\":\"k1\",\"committed\":false}"})" + "\n";
  };
  CliResult r = decide(record(context));
  EXPECT_NE(r.out.find("\"verb\":\"replay_once\""), std::string::npos) << r.out;
  r = decide(record(context + "," + context + "," + context));  // three failures
  EXPECT_NE(r.out.find("\"rule\":\"attempts_exhausted\""), std::string::npos) << r.out;
  r = decide(record(R"("__connect.errors.topic","payment.capture")"));
  // No error context at all: the class (read before the count) is missing.
  EXPECT_NE(r.out.find("invalid input: error_class (header '__connect.errors.exception.class.name' "
                       "is missing)"),
            std::string::npos)
      << r.out;
  // A Spring-style binary decoding of Connect's text headers is refused.
  std::string mapping = read_file(kSourceDir + "/" + kMapping);
  mapping.replace(mapping.find("decode: decimal"), 15, "decode: be-int");
  mapping.replace(mapping.find("header: x-replay"), 16, "header: __connect.errors.offset");
  r = decide(record(context), mapping);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error[RG305]: header '__connect.errors.offset' is UTF-8 text in Kafka "
                       "Connect, so input 'replays' must not say decode: be-int"),
            std::string::npos)
      << r.err;
  // occurrence: count on a string input is refused.
  mapping = read_file(kSourceDir + "/" + kMapping);
  mapping.replace(mapping.find("occurrence: first"), 17, "occurrence: count");
  r = decide(record(context), mapping);
  EXPECT_NE(r.err.find("error[RG305]: occurrence: count gives an integer, but input 'topic' is "
                       "string in the policy"),
            std::string::npos)
      << r.err;
  // A Spring mapping is not a Connect mapping.
  r = run({"decide", "--policy", kGate, "--input-format", "kafka-connect", "--mapping",
           "examples/spring-kafka.mapping.yaml", "-"},
          record(context));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("reads connect-kcat-json records; give a mapping with format: "
                       "connect-kcat-json"),
            std::string::npos)
      << r.err;
}

}  // namespace
