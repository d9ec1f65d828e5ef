// `decide --threads N` end to end (docs/cli.md, "Threads"): the output, stderr, the exit code,
// the ledger's claims and the audit log are the bytes of --threads 1 for the shipped examples of
// every input format, a generated dump with every outcome and keys repeated across blocks, a
// replay budget, --show-inputs, --audit, --ledger (fresh and seeded), a write error, an audit
// error and a read error in the middle, and random dumps; bad --threads values are refused.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"
#include "tests/support/shipped_letter.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using nlohmann::json;

const std::string kPolicy = kSourceDir + "/policies/replay_gate.yaml";
const std::string kTable = kSourceDir + "/tests/data/tables/replay_gate.rgt";
const std::string kExamples = kSourceDir + "/examples/";

// A letter of the shipped policy, one line.
std::string letter(size_t n, const std::string& key, const std::string& topic,
                   const std::string& error_class, int attempts, bool committed) {
  return replaygate::testing::shipped_letter(n, key, topic, error_class, attempts, committed) +
         "\n";
}

// tools/test.sh's sanitizer stages divide the dumps' sizes by $RG_DECIDE_THREADS_SCALE (the CLI
// runs about 20x slower under ASan at -O0); every kind of record and every boundary stays.
size_t scaled(size_t n) {
  static const size_t scale = [] {
    const char* text = std::getenv("RG_DECIDE_THREADS_SCALE");
    const long value = text != nullptr ? std::strtol(text, nullptr, 10) : 1;
    return value >= 1 ? static_cast<size_t>(value) : size_t{1};
  }();
  return std::max<size_t>(n / scale, 1);
}

// `n` records with every outcome: replays, parks, holds, duplicate keys far apart (each key again
// `key_period` records later, across the pool's and the ledger's blocks), unknown pairs, invalid
// inputs, unreadable and blank lines, a CRLF line, letters without a key or with a body hash, and
// (`huge`) one record over the 1 MiB cap.
std::string mixed_dump(size_t n, size_t key_period, bool huge) {
  std::string dump;
  for (size_t i = 0; i < n; ++i) {
    const std::string key = "k" + std::to_string(i % key_period);
    switch (i % 17) {
      case 0:
        dump += "{not json\n";
        break;
      case 1:
        dump += letter(i, key, "payment.capture", "insufficient_funds", 1, false);
        break;
      case 2:
        dump += letter(i, key, "payment.capture", "timeout", -1, false);  // invalid input
        break;
      case 3:
        dump += "\n";
        break;
      case 4:
        dump += letter(i, key, "no.such", "topic", 1, false);
        break;
      case 5:
        dump += R"({"topic":"payment.capture","error_class":"timeout","attempts":1,)"
                R"("already_committed":false})"
                "\n";
        break;
      case 6:
        dump += R"({"message_id":"m-)" + std::to_string(i) +
                R"(","body_hash":"sha256:ab","topic":"mail.receipt","error_class":"smtp_421",)"
                R"("attempts":1,"idempotency_key":")" +
                key + R"(","already_committed":false})" + "\r\n";
        break;
      case 7:
        dump += letter(i, key, "inventory.reserve", "lock_timeout", 2, false);
        break;
      case 8:
        dump += R"({"topic":"payment.capture","topic":"x","error_class":"timeout"})"
                "\n";
        break;
      default:
        dump += letter(i, key, "payment.capture", "timeout", 1, i % 11 == 0);
        break;
    }
    if (huge && i == n / 2) dump += "{\"pad\":\"" + std::string(1100000, 'x') + "\"}\n";
  }
  return dump;
}

// Every entry of an audit log or line of `ledger export` without what differs from one run to
// the next (the time, the hash chain that covers it, the claim's worker and times).
std::string normalized(const std::string& jsonl) {
  std::string out;
  for (const std::string& line : lines_of(jsonl)) {
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) return "not JSON: " + line;
    for (const char* varies :
         {"time", "prev", "claimed_at", "updated_at", "recorded_at", "worker"}) {
      j.erase(varies);
    }
    out += j.dump() + "\n";
  }
  return out;
}

// The thread counts compared with --threads 1: "3+" is --threads 3 with the input read on a thread
// of its own (decide chooses it for a regular file when the machine has N + 2 CPUs, which CI's 2
// do not have: the seam forces it).
const char* const kThreadCounts[] = {"2", "3", "8", "3+"};

// `--threads N` for a kThreadCounts entry, and the seam it needs.
std::string thread_count(const std::string& variant) {
  return variant.ends_with('+') ? variant.substr(0, variant.size() - 1) : variant;
}
std::vector<std::string> thread_env(const std::string& variant) {
  return {std::string("REPLAYGATE_TEST_SOURCE_THREAD=") + (variant.ends_with('+') ? "1" : "0")};
}

class DecideThreads : public CliFixture {
 protected:
  // `decide ARGS --threads N` (a kThreadCounts entry, or "1"), with `env` (seams) for the binary.
  CliResult decide(std::vector<std::string> args, const std::string& threads,
                   std::vector<std::string> env = {}) {
    args.insert(args.begin(), "decide");
    args.push_back("--threads");
    args.push_back(thread_count(threads));
    CliRun how;
    how.args = args;
    how.env = std::move(env);
    for (const std::string& e : thread_env(threads)) how.env.push_back(e);
    return run_cli(dir_, how);
  }
  // Runs `args` with --threads 1 and then every kThreadCounts, and expects the same stdout, stderr
  // and exit code; returns the --threads 1 run.
  CliResult expect_same(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    const CliResult one = decide(args, "1", env);
    EXPECT_TRUE(one.exit_code == 0 || one.exit_code == 1) << one.err;
    for (const char* threads : kThreadCounts) {
      const CliResult many = decide(args, threads, env);
      EXPECT_EQ(many.out, one.out) << "--threads " << threads;
      EXPECT_EQ(many.err, one.err) << "--threads " << threads;
      EXPECT_EQ(many.exit_code, one.exit_code) << "--threads " << threads;
    }
    return one;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
};

TEST_F(DecideThreads, ShippedExamplesOfEveryFormatGiveTheSameBytes) {
  struct Example {
    const char* format;
    const char* file;
    const char* mapping;
  };
  const Example examples[] = {
      {"letters", "letters.jsonl", nullptr},
      {"spring-kafka", "spring-kafka-dlq.kcat.jsonl", "spring-kafka.mapping.yaml"},
      {"kafka", "payments-dlt.kcat.jsonl", "kafka-spring-dlt.mapping.yaml"},
      {"kafka-connect", "kafka-connect-dlq.kcat.jsonl", "kafka-connect.mapping.yaml"},
      {"rabbitmq", "rabbitmq-dlq.json", "rabbitmq.mapping.yaml"},
      {"sqs", "sqs-dlq.json", "sqs.mapping.yaml"},
      {"pubsub", "pubsub-dlq.json", "pubsub.mapping.yaml"},
      {"servicebus", "servicebus-dlq.jsonl", "servicebus.mapping.yaml"},
      {"sidekiq", "sidekiq-dlq.jsonl", "sidekiq.mapping.yaml"},
  };
  for (const Example& e : examples) {
    SCOPED_TRACE(e.format);
    std::vector<std::string> args = {"--policy", kPolicy, kExamples + e.file, "--input-format",
                                     e.format};
    if (e.mapping != nullptr) {
      args.push_back("--mapping");
      args.push_back(kExamples + e.mapping);
    }
    const CliResult one = expect_same(args);
    EXPECT_GT(lines_of(one.out).size(), 3u) << one.err;
    // With --show-inputs, in blocks of two records: every example crosses block boundaries.
    args.push_back("--show-inputs");
    expect_same(args, {"REPLAYGATE_TEST_THREAD_BLOCK=2"});
  }
}

TEST_F(DecideThreads, AMixedDumpGivesTheSameBytesWithEveryOption) {
  const std::string dump = path("dump.jsonl");
  write_file(dump, mixed_dump(scaled(5000), scaled(1500), true));
  const CliResult one = expect_same({"--table", kTable, dump});
  // Every outcome is there.
  EXPECT_EQ(one.exit_code, 1);
  for (const char* what :
       {"\"rule\":\"dump:maybe_duplicate\"", "\"verb\":\"replay_once\"", "\"verb\":\"never\"",
        "\"invalid\":true", "record too large", "\"column\":", "\"body_hash\":\"sha256:ab\""}) {
    EXPECT_NE(one.out.find(what), std::string::npos) << what;
  }
  EXPECT_EQ(lines_of(one.out).size(), scaled(5000) + 1);
  expect_same({"--table", kTable, dump, "--max-replays", std::to_string(scaled(700))});
  expect_same({"--policy", kPolicy, dump, "--show-inputs"});
  expect_same({"--table", kTable, dump}, {"REPLAYGATE_TEST_THREAD_BLOCK=3"});
  // From standard input.
  const std::string base = decide({"--table", kTable, "-"}, "1").out;  // nothing on stdin
  EXPECT_EQ(base, "");
  CliRun piped;
  piped.args = {"decide", "--table", kTable, "-", "--threads", "3"};
  piped.stdin_command = "cat " + shell_quote(dump);
  const CliResult from_stdin = run_cli(dir_, piped);
  EXPECT_EQ(from_stdin.out, one.out);
  EXPECT_EQ(from_stdin.exit_code, 1);
}

TEST_F(DecideThreads, TheAuditLogAndTheLedgerAreTheSame) {
  const std::string dump = path("dump.jsonl");
  write_file(dump, mixed_dump(scaled(3000), scaled(900), false));
  const std::string audit = path("audit.log"), ledger = path("ledger.db");
  // A ledger that already holds some keys, from an earlier run on part of the dump.
  const std::string seed = path("seed.db"), seed_dump = path("seed.jsonl");
  write_file(seed_dump, mixed_dump(scaled(400), scaled(900), false));
  ASSERT_EQ(decide({"--table", kTable, seed_dump, "--ledger", seed}, "1").exit_code, 1);
  struct Case {
    std::vector<std::string> args;
    bool seeded;
  };
  const std::vector<Case> cases = {
      {{"--audit", audit, "--operator", "ana"}, false},
      {{"--ledger", ledger, "--ledger-block", std::to_string(scaled(700))}, false},
      {{"--ledger", ledger, "--audit", audit, "--operator", "ana"}, false},
      {{"--ledger", ledger, "--ledger-block", "1", "--max-replays", std::to_string(scaled(300))},
       true},
      {{"--ledger", ledger, "--audit", audit, "--operator", "ana", "--ledger-block",
        std::to_string(scaled(333))},
       true},
      {{"--ledger", ledger, "--dry-run"}, true},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--table", kTable, dump};
    args.insert(args.end(), c.args.begin(), c.args.end());
    SCOPED_TRACE(::testing::PrintToString(args));
    const bool has_ledger = std::find(args.begin(), args.end(), ledger) != args.end();
    const bool has_audit = std::find(args.begin(), args.end(), audit) != args.end();
    std::string base_out, base_err, base_audit, base_ledger;
    int base_code = -1;
    for (const char* threads : {"1", "2", "3", "8", "3+"}) {
      std::filesystem::remove(audit);
      std::filesystem::remove(ledger);
      if (c.seeded) std::filesystem::copy_file(seed, ledger);
      const CliResult r = decide(args, threads);
      std::string audit_text = has_audit ? normalized(read_file(audit)) : "";
      std::string ledger_text;
      if (has_ledger) {
        const CliResult exported = run({"ledger", "export", "--ledger", ledger});
        EXPECT_EQ(exported.exit_code, 0) << exported.err;
        ledger_text = normalized(exported.out);
      }
      if (std::string(threads) == "1") {
        base_out = r.out;
        base_err = r.err;
        base_code = r.exit_code;
        base_audit = audit_text;
        base_ledger = ledger_text;
        EXPECT_EQ(r.exit_code, 1) << r.err;
        if (has_audit) {
          EXPECT_GE(lines_of(audit_text).size(), scaled(3000));
        }
        if (has_ledger && std::find(args.begin(), args.end(), "--dry-run") == args.end()) {
          EXPECT_GT(lines_of(ledger_text).size(), scaled(100));
          EXPECT_NE(r.out.find("\"claimed\":true"), std::string::npos);
        }
        if (c.seeded) {
          EXPECT_NE(r.out.find("ledger:already_replayed"), std::string::npos);
        }
        continue;
      }
      EXPECT_EQ(r.out, base_out) << "--threads " << threads;
      EXPECT_EQ(r.err, base_err) << "--threads " << threads;
      EXPECT_EQ(r.exit_code, base_code) << "--threads " << threads;
      EXPECT_EQ(audit_text, base_audit) << "--threads " << threads;
      EXPECT_EQ(ledger_text, base_ledger) << "--threads " << threads;
    }
  }
}

// Runs `decide ARGS --threads N` under bash with `setup` first, stdout into `out`; the exit code,
// stderr in *err.
int run_limited(const std::filesystem::path& dir, const std::string& setup,
                std::vector<std::string> args, const std::string& threads, const std::string& out,
                std::string* err) {
  std::string command = setup + "; export " + thread_env(threads)[0] + "; exec " +
                        shell_quote(kCliBinary) + " decide";
  args.push_back("--threads");
  args.push_back(thread_count(threads));
  for (const std::string& a : args) command += " " + shell_quote(a);
  command += " </dev/null >" + shell_quote(out) + " 2>" + shell_quote((dir / "err").string());
  const int code = run_shell("bash -c " + shell_quote(command));
  *err = read_file(dir / "err");
  return code;
}

TEST_F(DecideThreads, AWriteErrorOrAnAuditErrorLeavesTheSameLines) {
  const std::string dump = path("dump.jsonl");
  write_file(dump, mixed_dump(30000, 5000, false));  // about 9 MB of decisions
  const std::string out = path("out.jsonl"), audit = path("audit.log");
  struct Case {
    std::vector<std::string> args;
    const char* expect;  // in stderr
  };
  // bash's ulimit -f counts 1024-byte blocks: 3 MB for every file, so the output fails at its
  // third 1 MiB block, the audit log (larger) before it.
  const std::vector<Case> cases = {
      {{"--table", kTable, dump}, "File too large"},
      {{"--table", kTable, dump, "--audit", audit, "--operator", "ana"},
       "were NOT recorded and are not taken"},
  };
  for (const Case& c : cases) {
    std::string base_out, base_err, base_audit;
    for (const char* threads : {"1", "2", "8", "3+"}) {
      std::filesystem::remove(audit);
      std::string err;
      const int code = run_limited(dir_, "ulimit -f 3000", c.args, threads, out, &err);
      EXPECT_EQ(code, 2) << err;
      EXPECT_NE(err.find(c.expect), std::string::npos) << err;
      const std::string audit_text = normalized(read_file(audit));
      if (std::string(threads) == "1") {
        base_out = read_file(out);
        base_err = err;
        base_audit = audit_text;
        EXPECT_GT(base_out.size(), 0u);
        continue;
      }
      EXPECT_EQ(read_file(out), base_out) << "--threads " << threads;
      EXPECT_EQ(err, base_err) << "--threads " << threads;
      EXPECT_EQ(audit_text, base_audit) << "--threads " << threads;
    }
  }
}

TEST_F(DecideThreads, AReadErrorMidFileLeavesTheSameLines) {
  // A rabbitmq dump (one JSON array) of 3000 messages, cut inside message /2500.
  const json messages = json::parse(read_file(kExamples + "rabbitmq-dlq.json"));
  ASSERT_TRUE(messages.is_array());
  std::string text = "[";
  size_t cut = 0;
  for (size_t i = 0; i < 3000; ++i) {
    if (i > 0) text += ",\n";
    if (i == 2500) cut = text.size() + 40;
    text += messages[i % messages.size()].dump();
  }
  text += "]";
  const std::string dump = path("cut.json");
  write_file(dump, text.substr(0, cut));
  const CliResult one = decide({"--policy", kPolicy, dump, "--input-format", "rabbitmq",
                                "--mapping", kExamples + "rabbitmq.mapping.yaml"},
                               "1");
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("replaygate: cannot read " + dump + ": "), std::string::npos) << one.err;
  EXPECT_EQ(lines_of(one.out).size(), 2500u);
  for (const char* threads : {"2", "8", "3+"}) {
    const CliResult many = decide({"--policy", kPolicy, dump, "--input-format", "rabbitmq",
                                   "--mapping", kExamples + "rabbitmq.mapping.yaml"},
                                  threads, {"REPLAYGATE_TEST_THREAD_BLOCK=7"});
    EXPECT_EQ(many.out, one.out);
    EXPECT_EQ(many.err, one.err);
    EXPECT_EQ(many.exit_code, 2);
  }
}

TEST_F(DecideThreads, BadThreadCountsAreRefused) {
  const std::string letters = kExamples + "letters.jsonl";
  for (const char* bad :
       {"0", "-1", "abc", "65", "1.5", "+2", " 2", "0x2", "99999999999999999999"}) {
    const CliResult r = decide({"--table", kTable, letters}, bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(r.out, "") << bad;
    EXPECT_EQ(r.err,
              "replaygate decide: error: --threads takes a whole number from 1 to 64 (decimal) or "
              "auto (one per online CPU), not '" +
                  std::string(bad) + "'\nRun 'replaygate decide --help' for usage.\n")
        << bad;
  }
  // auto: one thread per online CPU, the same bytes.
  const CliResult one = decide({"--table", kTable, letters}, "1");
  const CliResult automatic = decide({"--table", kTable, letters}, "auto");
  EXPECT_EQ(automatic.out, one.out);
  EXPECT_EQ(automatic.err, one.err);
  EXPECT_EQ(automatic.exit_code, one.exit_code);
  EXPECT_EQ(decide({"--table", kTable, letters}, "64").exit_code, one.exit_code);
}

// Random dumps of valid, invalid, unreadable and duplicate-key letters, random blocks (the seam)
// and ledger blocks, with and without a replay budget and a ledger: --threads N is --threads 1.
void any_thread_count_gives_the_bytes_of_one() {
  const size_t n = *rc::gen::inRange<size_t>(0, 120);
  const size_t key_space = *rc::gen::inRange<size_t>(1, 40);
  std::string dump;
  for (size_t i = 0; i < n; ++i) {
    const int kind = *rc::gen::inRange(0, 100);
    const std::string key = "k" + std::to_string(*rc::gen::inRange<size_t>(0, key_space));
    if (kind < 10) {
      dump += *rc::gen::element<std::string>("", "{", "[]", "{\"topic\":1}", "null") + "\n";
    } else {
      static const std::pair<const char*, const char*> kPairs[] = {
          {"payment.capture", "timeout"},        {"payment.capture", "insufficient_funds"},
          {"inventory.reserve", "lock_timeout"}, {"webhook.partner", "http_503"},
          {"mail.receipt", "smtp_421"},          {"no.such", "pair"}};
      const auto& [topic, error] = kPairs[*rc::gen::inRange(0, 6)];
      dump += letter(i, key, topic, error, *rc::gen::element(-1, 0, 1, 2, 3, 100),
                     *rc::gen::inRange(0, 10) == 0);
    }
  }
  ScratchDir dir("rg_threads_prop");
  const std::string file = (dir.path() / "dump.jsonl").string();
  write_file(file, dump);
  std::vector<std::string> args = {"decide", "--table", kTable, file};
  if (*rc::gen::arbitrary<bool>()) {
    args.insert(args.end(), {"--max-replays", std::to_string(*rc::gen::inRange(0, 30))});
  }
  const bool ledger = *rc::gen::arbitrary<bool>();
  if (ledger) {
    args.insert(args.end(), {"--ledger", (dir.path() / "l.db").string(), "--ledger-block",
                             std::to_string(*rc::gen::inRange(1, 12))});
  }
  const std::string seam =
      "REPLAYGATE_TEST_THREAD_BLOCK=" + std::to_string(*rc::gen::inRange(1, 20));
  const std::string source_thread =
      std::string("REPLAYGATE_TEST_SOURCE_THREAD=") + (*rc::gen::arbitrary<bool>() ? "1" : "0");
  auto decide = [&](const std::string& threads) {
    std::filesystem::remove(dir.path() / "l.db");
    CliRun how;
    how.args = args;
    how.args.insert(how.args.end(), {"--threads", threads});
    how.env = {seam, source_thread};
    return run_cli(dir.path(), how);
  };
  const CliResult one = decide("1");
  const CliResult many = decide(std::to_string(*rc::gen::inRange(2, 9)));
  RC_ASSERT(one.exit_code == 0 || one.exit_code == 1);
  RC_ASSERT(many.out == one.out);
  RC_ASSERT(many.err == one.err);
  RC_ASSERT(many.exit_code == one.exit_code);
}

// The property above runs the binary twice per case: at most 40 cases, whatever RC_PARAMS asks
// (the in-process property of tests/pipeline/read_pool_test.cc takes the full count).
TEST(DecideThreadsProperty, AnyThreadCountGivesTheBytesOfOne) {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = std::min(params.maxSuccess, 40);
  rc::detail::TestMetadata metadata;
  metadata.id = "DecideThreadsProperty/AnyThreadCountGivesTheBytesOfOne";
  metadata.description = "AnyThreadCountGivesTheBytesOfOne";
  const rc::detail::TestResult result = rc::detail::checkProperty(
      rc::detail::toProperty(&any_thread_count_gives_the_bytes_of_one), metadata, params);
  if (!result.is<rc::detail::SuccessResult>()) {
    std::ostringstream message;
    rc::detail::printResultMessage(result, message);
    FAIL() << message.str();
  }
}

}  // namespace
