// --input-format bullmq: BullMQ failed job hashes, one per line with their id and queue, mapped
// through examples/bullmq.mapping.yaml: the shipped example end to end (golden), the fields as
// headers and counters, and what makes a job unreadable.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const std::string kGate = "policies/replay_gate.yaml";
const std::string kMapping = "examples/bullmq.mapping.yaml";
const std::string kDump = "examples/bullmq-dlq.jsonl";

class BullmqCli : public CliFixture {
 protected:
  BullmqCli() : CliFixture(kSourceDir) {}
  CliResult decide(const std::string& jobs) {
    return run(
        {"decide", "--policy", kGate, "--input-format", "bullmq", "--mapping", kMapping, "-"},
        jobs);
  }
};

std::string without_table(const std::string& out) {
  return std::regex_replace(out, std::regex("\"table\":\"[0-9a-f]{32}\""), "\"table\":\"@TABLE@\"");
}

TEST_F(BullmqCli, ExampleDumpGolden) {
  const CliResult r =
      run({"decide", "--policy", kGate, "--input-format", "bullmq", "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(without_table(r.out), "inputs/bullmq-dlq.expected.jsonl");
  EXPECT_EQ(lines_of(r.out).size(), 13u);
}

TEST_F(BullmqCli, TheGatesMarkerIsAHeaderAndAReplayedJobIsHeld) {
  const std::string job =
      R"({"queue":"payment.capture","id":"7","data":"{\"idempotency_key\":\"k\",\"committed\":false}","atm":"2","failedReason":"capture timed out")";
  const CliResult r = decide(job + "}\n" + job + R"(,"rg:replays":"1"})" + "\n");
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_NE(lines[0].find("\"verb\":\"replay_once\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\"message_id\":\"7\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"rule\":\"already_replayed\""), std::string::npos) << lines[1];
}

TEST_F(BullmqCli, UnreadableJobsAreInvalidAlone) {
  for (const auto& [job, reason] : std::vector<std::pair<std::string, std::string>>{
           {R"({"queue":"q","data":"{}"})", "a BullMQ job needs a string 'id'"},
           {R"({"id":"1","data":"{}"})", "a BullMQ job needs a string 'queue'"},
           {R"({"id":"1","queue":"q"})", "a BullMQ job needs a string 'data'"},
           {R"({"id":"1","queue":"q","data":"{}","atm":2})",
            "field 'atm' is not a string (a BullMQ job hash holds strings only)"},
           {R"({"id":"1","queue":"q","data":"{}","id":"2"})", "duplicate key 'id'"},
       }) {
    const CliResult r = decide(job + "\n");
    ASSERT_EQ(lines_of(r.out).size(), 1u) << job << r.err;
    EXPECT_NE(r.out.find("\"invalid\":true"), std::string::npos) << job << r.out;
    EXPECT_NE(r.out.find(reason), std::string::npos) << job << ": " << r.out;
  }
}

}  // namespace
