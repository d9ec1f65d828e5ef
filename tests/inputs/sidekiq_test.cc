// --input-format sidekiq: Dead / Retry set job hashes, one per line, mapped through
// examples/sidekiq.mapping.yaml: the shipped example end to end (golden), failed_at in seconds
// (before 8.0) and milliseconds (since), and the traps of issue 20.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

const std::string kGate = "policies/replay_gate.yaml";
const std::string kMapping = "examples/sidekiq.mapping.yaml";
const std::string kDump = "examples/sidekiq-dlq.jsonl";
// attempts from retry_count + 1, to pin the reader's counter (the example no longer reads it:
// docs/input-mapping.md "Broker delivery counters").
const std::string kCounterMapping = "tests/data/inputs/counters/sidekiq.mapping.yaml";

class SidekiqCli : public CliFixture {
 protected:
  SidekiqCli() : CliFixture(kSourceDir) {}
  CliResult decide(const std::string& jobs, const std::string& mapping = kMapping) {
    return run(
        {"decide", "--policy", kGate, "--input-format", "sidekiq", "--mapping", mapping, "-"},
        jobs);
  }
};

std::string without_table(const std::string& out) {
  return std::regex_replace(out, std::regex("\"table\":\"[0-9a-f]{32}\""), "\"table\":\"@TABLE@\"");
}

std::string job(const std::string& retry_count, const std::string& failed_at = "1764403061.75",
                const std::string& arg = R"({"idempotency_key":"k1","committed":false})") {
  return R"({"retry":3,"queue":"payment.capture","class":"CaptureJob","args":[)" + arg +
         R"(],"jid":"j1","error_class":"Net::ReadTimeout","failed_at":)" + failed_at +
         (retry_count.empty() ? "" : R"(,"retry_count":)" + retry_count) + "}\n";
}

TEST_F(SidekiqCli, ExampleDumpGolden) {
  const CliResult r =
      run({"decide", "--policy", kGate, "--input-format", "sidekiq", "--mapping", kMapping, kDump});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  expect_golden(without_table(r.out), "inputs/sidekiq-dlq.expected.jsonl");
  EXPECT_EQ(lines_of(r.out).size(), 21u);
}

TEST_F(SidekiqCli, RetryCountIsFailuresMinusOne) {
  CliResult r = decide(job("0") + job("1") + job("2"), kCounterMapping);
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  EXPECT_NE(lines[0].find("\"verb\":\"replay_once\""), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("\"rule\":\"attempts_exhausted\""), std::string::npos) << lines[2];
  for (const auto& [count, reason] : std::vector<std::pair<std::string, std::string>>{
           {"", "invalid input: attempts (record delivery-count is missing)"},
           {"\"0\"",
            "invalid input: attempts (record delivery-count: retry_count is not an "
            "integer >= 0)"},
           {"-1",
            "invalid input: attempts (record delivery-count: retry_count is not an integer "
            ">= 0)"},
           {"9223372036854775807",
            "invalid input: attempts (record delivery-count: retry_count "
            "is not an integer >= 0)"},
           {"1e400", "invalid record: bad JSON (Problem while parsing a number)"},
       }) {
    r = decide(job(count), kCounterMapping);
    EXPECT_EQ(r.exit_code, 1) << count;
    EXPECT_NE(r.out.find("\"reason\":\"" + reason), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\"verb\":\"hold\""), std::string::npos) << r.out;
  }
}

TEST_F(SidekiqCli, FailedAtInSecondsOrMilliseconds) {
  for (const std::string failed_at : {"1764403061.75", "1764403061750"}) {
    const CliResult r =
        run({"explain", "--policy", kGate, "--input-format", "sidekiq", "--mapping", kMapping, "-"},
            job("0", failed_at));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("timestamp = 1764403061750"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("delivery-count = 1"), std::string::npos) << r.out;
  }
}

TEST_F(SidekiqCli, ArgumentTraps) {
  CliResult r = decide(job("0", "1", R"({"idempotency_key":"k1","committed":"false"})"));
  EXPECT_NE(r.out.find("invalid input: already_committed (payload /args/0/committed is a JSON "
                       "string, not a boolean)"),
            std::string::npos)
      << r.out;
  // replays null: absent for `replays`, but the example reads attempts (redrive cycles) from the
  // same field, and a null counter is invalid, never 0.
  r = decide(job("0", "1", R"({"idempotency_key":"k1","committed":false,"replays":null})"));
  EXPECT_NE(r.out.find("\"reason\":\"invalid input: attempts\""), std::string::npos) << r.out;
  r = decide(job("0", "1", R"({"idempotency_key":"k1","idempotency_key":"k2","committed":false})"));
  EXPECT_NE(r.out.find("invalid record: duplicate key 'idempotency_key' in /args/0"),
            std::string::npos)
      << r.out;
  r = decide(R"({"queue":"payment.capture","class":"CaptureJob"})"
             "\n");
  EXPECT_NE(r.out.find("invalid record: a Sidekiq job needs a string 'jid'"), std::string::npos)
      << r.out;
}

}  // namespace
