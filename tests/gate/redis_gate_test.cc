// `replaygate gate sidekiq` end to end against a private redis-server (one per suite) and real
// Sidekiq 6 (Debian's ruby-sidekiq): jobs that really died, routed per verb; a replayed job that
// runs again under Sidekiq, dies again and is held; two gates on one dead set and one ledger;
// kill -9 at every step, then a restart; the server killed mid-run; poison members; refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ledger/pg_server.h"
#include "redis_server.h"
#include "redrive/redis/redis_client.h"
#include "support/cli_runner.h"

namespace replaygate::gate::testing {
namespace {

using replaygate::testing::CliResult;
using replaygate::testing::CliRun;
using replaygate::testing::kSourceDir;
using replaygate::testing::lines_of;
using replaygate::testing::read_file;
using replaygate::testing::run_cli;
using replaygate::testing::ScratchDir;
using Json = nlohmann::json;
namespace rds = redrive::redis;

// Sidekiq workers whose jobs die at once (retry: 0), with the exceptions the example mapping
// knows (Net::ReadTimeout: replay_once; Payments::InsufficientFunds: never) and one it does not
// (NoMethodError: an invalid input, held). Each run appends the job's key to RUNS_FILE.
constexpr const char* kWorker = R"rb(
require "sidekiq"
require "net/http"
Sidekiq.configure_server { |c| c.redis = { url: ENV["REDIS_URL"] } }
Sidekiq.configure_client { |c| c.redis = { url: ENV["REDIS_URL"] } }
module Payments; class InsufficientFunds < StandardError; end; end
def record_run(args)
  return if ENV["RUNS_FILE"].to_s.empty?
  File.open(ENV["RUNS_FILE"], "a") { |f| f.puts(args["idempotency_key"].to_s) }
end
class CaptureJob
  include Sidekiq::Worker
  sidekiq_options queue: "payment.capture", retry: 0
  def perform(args)
    record_run(args)
    raise Net::ReadTimeout, "capture timed out"
  end
end
class DeclineJob
  include Sidekiq::Worker
  sidekiq_options queue: "payment.capture", retry: 0
  def perform(args)
    record_run(args)
    raise Payments::InsufficientFunds, "card declined"
  end
end
class BrokenJob
  include Sidekiq::Worker
  sidekiq_options queue: "payment.capture", retry: 0
  def perform(args)
    record_run(args)
    nil.capture!
  end
end
)rb";

constexpr const char* kPush = R"rb(
6.times { |i| CaptureJob.perform_async({"idempotency_key" => "cap_#{i}", "committed" => false}) }
4.times { |i| DeclineJob.perform_async({"idempotency_key" => "dec_#{i}", "committed" => false}) }
3.times { |i| BrokenJob.perform_async({"idempotency_key" => "brk_#{i}", "committed" => false}) }
CaptureJob.perform_async({"committed" => false})
)rb";
constexpr long kRealDeaths = 14;

class RedisGateTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    server_ = new RedisServer();
    setup_error_ = server_->create();
    if (!setup_error_.empty()) return;
    sidekiq_dir_ = new ScratchDir("rg_sidekiq");
    setup_error_ = run_sidekiq(sidekiq_dir_->path().string(), server_->url(), kWorker, kPush,
                               {"payment.capture"}, kRealDeaths, "");
    if (!setup_error_.empty()) return;
    // The real deaths, kept as Sidekiq wrote them: each test starts from (copies of) these.
    real_ = new std::vector<std::pair<std::string, std::string>>();
    std::unique_ptr<rds::Client> c = connect();
    std::optional<rds::Reply> r = c->call({"ZRANGE", "dead", "0", "-1", "WITHSCORES"});
    for (size_t i = 0; r && i + 1 < r->elements.size(); i += 2) {
      real_->emplace_back(r->elements[i].str, r->elements[i + 1].str);
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    delete sidekiq_dir_;
    delete real_;
    server_ = nullptr;
    sidekiq_dir_ = nullptr;
    real_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(setup_error_, "");
    ASSERT_EQ(real_->size(), static_cast<size_t>(kRealDeaths));
    redis_ = connect();
    ASSERT_TRUE(redis_);
    call({"FLUSHALL"});
  }

  static std::unique_ptr<rds::Client> connect() {
    std::string problem, error;
    const std::optional<rds::RedisUrl> url = rds::parse_redis_url(server_->url(), &problem);
    return rds::Client::open(*url, 5000, &error);
  }
  rds::Reply call(const std::vector<std::string_view>& args) {
    if (!redis_ || redis_->lost()) redis_ = connect();
    std::optional<rds::Reply> r = redis_->call(args);
    EXPECT_TRUE(r.has_value()) << redis_->error();
    return r.value_or(rds::Reply());
  }
  long long number(const std::vector<std::string_view>& args) { return call(args).integer; }
  std::vector<std::string> strings(const std::vector<std::string_view>& args) {
    std::vector<std::string> out;
    for (rds::Reply& e : call(args).elements) out.push_back(std::move(e.str));
    return out;
  }
  // Puts the real deaths back into `dead` at their scores.
  void seed_real() {
    for (const auto& [member, score] : *real_) call({"ZADD", "dead", score, member});
  }
  // A real CaptureJob death (one with a key) as a template.
  Json capture_template() const {
    for (const auto& [member, score] : *real_) {
      Json j = Json::parse(member);
      if (j["class"] == "CaptureJob" && j["args"][0].contains("idempotency_key")) return j;
    }
    return Json();
  }
  // `n` copies of a real CaptureJob death with jids jid_<i>, keys from `key_of(i)`, scores 1000+i.
  void seed_captures(int n, const std::function<std::string(int)>& key_of) {
    Json job = capture_template();
    ASSERT_FALSE(job.is_null());
    std::vector<std::string> owned = {"ZADD", "dead"};
    for (int i = 0; i < n; ++i) {
      job["jid"] = "jid_" + std::to_string(i);
      job["args"][0]["idempotency_key"] = key_of(i);
      owned.push_back(std::to_string(1000 + i));
      owned.push_back(job.dump());
    }
    call(std::vector<std::string_view>(owned.begin(), owned.end()));
  }

  std::vector<std::string> gate_args(bool apply, const std::filesystem::path& dir) const {
    std::vector<std::string> a = {"gate",        "sidekiq",
                                  "--policy",    kSourceDir + "/policies/replay_gate.yaml",
                                  "--mapping",   kSourceDir + "/examples/sidekiq-gate.mapping.yaml",
                                  "--all",       "--max-rate",
                                  "0",           "--quiet",
                                  "--idle-exit", "300"};
    if (apply) {
      a.insert(a.end(), {"--apply", "--ledger", (dir / "ledger.db").string(), "--audit",
                         (dir / "audit.log").string(), "--operator", "test"});
    }
    return a;
  }
  CliResult gate(const std::filesystem::path& dir, std::vector<std::string> args,
                 std::vector<std::string> env = {}) const {
    CliRun run;
    run.args = std::move(args);
    run.env = std::move(env);
    run.env.push_back("REPLAYGATE_REDIS_URL=" + server_->url());
    run.timeout_seconds = 120;
    const std::filesystem::path out = dir / ("run" + std::to_string(++runs_));
    std::filesystem::create_directories(out);
    return run_cli(out, run);
  }
  // The keys (args[0].idempotency_key) of the jobs in a list or sorted set.
  std::multiset<std::string> keys_in(const std::string& key, bool list) {
    std::multiset<std::string> out;
    const std::vector<std::string> members =
        list ? strings({"LRANGE", key, "0", "-1"}) : strings({"ZRANGE", key, "0", "-1"});
    for (const std::string& m : members) {
      const Json j = Json::parse(m, nullptr, false);
      out.insert(j.is_discarded() ? "(unreadable)"
                                  : j["args"][0].value("idempotency_key", std::string("(none)")));
    }
    return out;
  }
  // Every per-letter line's "action" by message id.
  static std::map<std::string, std::string> actions_of(const std::string& out) {
    std::map<std::string, std::string> by_jid;
    for (const std::string& line : lines_of(out)) {
      const Json j = Json::parse(line);
      by_jid[j["message_id"].is_string() ? j["message_id"].get<std::string>() : "null"] =
          j["action"];
    }
    return by_jid;
  }

  static RedisServer* server_;
  static ScratchDir* sidekiq_dir_;
  static std::vector<std::pair<std::string, std::string>>* real_;
  static std::string setup_error_;
  std::unique_ptr<rds::Client> redis_;
  ScratchDir scratch_{"rg_redis_gate"};
  mutable int runs_ = 0;
};

RedisServer* RedisGateTest::server_ = nullptr;
ScratchDir* RedisGateTest::sidekiq_dir_ = nullptr;
std::vector<std::pair<std::string, std::string>>* RedisGateTest::real_ = nullptr;
std::string RedisGateTest::setup_error_;

TEST_F(RedisGateTest, RealDeathsDryRunMovesNothing) {
  seed_real();
  const CliResult r = gate(scratch_.path(), gate_args(false, scratch_.path()));
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the BrokenJob deaths are unreadable inputs: held
  const std::map<std::string, std::string> actions = actions_of(r.out);
  EXPECT_EQ(actions.size(), static_cast<size_t>(kRealDeaths));
  std::map<std::string, int> counts;
  for (const auto& [jid, action] : actions) ++counts[action];
  EXPECT_EQ(counts["republish"], 6);
  EXPECT_EQ(counts["park"], 4);
  EXPECT_EQ(counts["hold"], 4);  // 3 NoMethodError, 1 without an idempotency key
  EXPECT_EQ(number({"ZCARD", "dead"}), kRealDeaths);
  EXPECT_EQ(strings({"KEYS", "*"}), std::vector<std::string>{"dead"});  // nothing else written
}

TEST_F(RedisGateTest, RealDeathsApplyRoutesEachVerbAndAReplayThatDiesAgainIsHeld) {
  seed_real();
  const CliResult r = gate(scratch_.path(), gate_args(true, scratch_.path()));
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(number({"ZCARD", "dead"}), 0);
  EXPECT_EQ(keys_in("queue:payment.capture", true),
            (std::multiset<std::string>{"cap_0", "cap_1", "cap_2", "cap_3", "cap_4", "cap_5"}));
  EXPECT_EQ(number({"SISMEMBER", "queues", "payment.capture"}), 1);
  EXPECT_EQ(keys_in("replaygate:default:parked", false),
            (std::multiset<std::string>{"dec_0", "dec_1", "dec_2", "dec_3"}));
  EXPECT_EQ(keys_in("replaygate:default:held", false),
            (std::multiset<std::string>{"brk_0", "brk_1", "brk_2", "(none)"}));
  EXPECT_EQ(number({"EXISTS", "replaygate:default:inflight:default"}), 0);
  EXPECT_EQ(number({"EXISTS", "replaygate:default:lease:default"}), 0);
  // A replayed job: Sidekiq's own fields as they were (retry_count not decremented, the failure
  // evidence kept), the marker and a new enqueued_at.
  std::map<std::string, Json> dead_by_jid;
  for (const auto& [member, score] : *real_) {
    const Json j = Json::parse(member);
    dead_by_jid[j["jid"]] = j;
  }
  for (const std::string& m : strings({"LRANGE", "queue:payment.capture", "0", "-1"})) {
    Json j = Json::parse(m);
    const Json& was = dead_by_jid.at(j["jid"]);
    EXPECT_EQ(j["replaygate_replays"], 1);
    EXPECT_GT(j["enqueued_at"].get<double>(), was["enqueued_at"].get<double>());
    for (const char* field : {"retry_count", "error_message", "error_class", "failed_at", "args",
                              "class", "queue", "created_at", "retry"}) {
      EXPECT_EQ(j[field], was[field]) << field;
    }
  }
  for (const std::string& m : strings({"ZRANGE", "replaygate:default:parked", "0", "-1"})) {
    const Json j = Json::parse(m);
    EXPECT_EQ(j["replaygate_verb"], "never");
    EXPECT_EQ(j["replaygate_rule"], "known_failures:payment.capture/insufficient_funds");
    EXPECT_EQ(j["replaygate_from"], "dead");
    EXPECT_EQ(j["error_class"], "Payments::InsufficientFunds");
  }

  // Real Sidekiq runs each replayed job once more; it dies again, with its marker.
  const std::string runs = (scratch_.path() / "runs.txt").string();
  ASSERT_EQ(run_sidekiq(sidekiq_dir_->path().string(), server_->url(), kWorker, "",
                        {"payment.capture"}, 6, runs),
            "");
  std::vector<std::string> ran = lines_of(read_file(runs));
  std::sort(ran.begin(), ran.end());
  EXPECT_EQ(ran, (std::vector<std::string>{"cap_0", "cap_1", "cap_2", "cap_3", "cap_4", "cap_5"}));
  EXPECT_EQ(number({"LLEN", "queue:payment.capture"}), 0);
  for (const std::string& m : strings({"ZRANGE", "dead", "0", "-1"})) {
    EXPECT_EQ(Json::parse(m)["replaygate_replays"], 1);
  }

  // "Retry All" again: every one is held (the policy's replays guard, and the ledger's key), and
  // the metrics file counts each as a replayed job that died again.
  std::vector<std::string> args = gate_args(true, scratch_.path());
  const std::string metrics = (scratch_.path() / "gate.prom").string();
  args.insert(args.end(), {"--metrics", metrics});
  const CliResult again = gate(scratch_.path(), args);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  for (const auto& [jid, action] : actions_of(again.out)) EXPECT_EQ(action, "hold") << jid;
  EXPECT_EQ(number({"LLEN", "queue:payment.capture"}), 0);
  EXPECT_EQ(number({"ZCARD", "replaygate:default:held"}), 4 + 6);
  EXPECT_EQ(number({"ZCARD", "dead"}), 0);
  const std::string text = read_file(metrics);
  EXPECT_NE(text.find("\nreplaygate_gate_died_again_total{queue=\"dead\"} 6\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nreplaygate_gate_held_letters{queue=\"dead\"} 10\n"), std::string::npos)
      << text;
}

// Issue 40 (Watch): after a run that holds 4 jobs and parks 4, the metrics file has the held set's
// and the parked set's counts exactly, and the oldest held job's age: now minus its score, the time
// Sidekiq killed it (Time.now.to_f), which the held set keeps.
TEST_F(RedisGateTest, TheMetricsFileCountsHeldAndParkedJobsAndTheOldestHeldAge) {
  seed_real();
  std::vector<std::string> args = gate_args(true, scratch_.path());
  const std::string metrics = (scratch_.path() / "gate.prom").string();
  args.insert(args.end(), {"--metrics", metrics});
  const auto now = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const double before = now();
  const CliResult r = gate(scratch_.path(), args);
  const double after = now();
  ASSERT_EQ(r.exit_code, 1) << r.err;  // the BrokenJob deaths are unreadable: held
  ASSERT_EQ(number({"ZCARD", "replaygate:default:held"}), 4);
  const std::string text = read_file(metrics);
  EXPECT_NE(text.find("\nreplaygate_gate_held_letters{queue=\"dead\"} 4\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nreplaygate_gate_parked_letters{queue=\"dead\"} 4\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nreplaygate_gate_died_again_total{queue=\"dead\"} 0\n"), std::string::npos)
      << text;
  // The lowest held score is the earliest death of a held job, as Sidekiq wrote it in `dead`.
  const std::vector<std::string> lowest =
      strings({"ZRANGEBYSCORE", "replaygate:default:held", "-inf", "+inf", "WITHSCORES", "LIMIT",
               "0", "1"});
  ASSERT_EQ(lowest.size(), 2u);
  const double died = std::stod(lowest[1]);
  double earliest_real = after;
  for (const auto& [member, score] : *real_)
    earliest_real = std::min(earliest_real, std::stod(score));
  EXPECT_GE(died, earliest_real) << "a real death's score";
  const std::string key = "\nreplaygate_gate_oldest_held_seconds{queue=\"dead\"} ";
  const size_t at = text.find(key);
  ASSERT_NE(at, std::string::npos) << text;
  const double age = std::stod(text.substr(at + key.size()));
  // The gate read its clock between `before` and `after` (same machine), and printed 3 decimals.
  EXPECT_GE(age, before - died - 0.001) << text;
  EXPECT_LE(age, after - died + 0.001) << text;
}

TEST_F(RedisGateTest, OneReviewedJobByItsJidMovesAloneAndTheOthersStay) {
  seed_real();
  std::string jid;
  for (const auto& [member, score] : *real_) {
    const Json j = Json::parse(member);
    if (j["args"][0].value("idempotency_key", "") == "cap_2") jid = j["jid"];
  }
  ASSERT_FALSE(jid.empty());
  std::vector<std::string> args = gate_args(true, scratch_.path());
  args.erase(std::find(args.begin(), args.end(), "--all"));
  args.insert(args.end(), {"--message-id", jid});
  const CliResult r = gate(scratch_.path(), args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("handled message " + jid), std::string::npos) << r.err;
  ASSERT_EQ(lines_of(r.out).size(), 1u);
  EXPECT_EQ(Json::parse(r.out)["message_id"], jid);
  EXPECT_EQ(keys_in("queue:payment.capture", true), (std::multiset<std::string>{"cap_2"}));
  EXPECT_EQ(number({"ZCARD", "dead"}), kRealDeaths - 1);  // the ones passed over went back
  EXPECT_EQ(number({"EXISTS", "replaygate:default:inflight:default"}), 0);
  for (const auto& [member, score] : *real_) {  // at their own scores, byte for byte
    if (member.find(jid) != std::string::npos) continue;
    EXPECT_EQ(call({"ZSCORE", "dead", member}).str, score);
  }
}

// `gates` gates (ids g0, g1, ...) at once on one dead set and one ledger (a SQLite path or a
// PostgreSQL URL), each with its own audit log.
void race(RedisGateTest* t, int gates, const std::string& ledger, const std::filesystem::path& dir,
          std::vector<CliResult>* results) {
  results->assign(gates, CliResult());
  std::vector<std::thread> threads;
  for (int g = 0; g < gates; ++g) {
    threads.emplace_back([&, g] {
      const std::filesystem::path out = dir / ("gate" + std::to_string(g));
      std::filesystem::create_directories(out);
      std::vector<std::string> args = t->gate_args(true, out);
      args[std::find(args.begin(), args.end(), "--ledger") - args.begin() + 1] = ledger;
      args.insert(args.end(), {"--gate-id", "g" + std::to_string(g), "--block-max", "16"});
      (*results)[g] = t->gate(out, args);
    });
  }
  for (std::thread& th : threads) th.join();
}

TEST_F(RedisGateTest, TwoGatesOnOneDeadSetAndOneLedgerReplayEachKeyOnce) {
  // 400 jobs, 200 keys (each key in two jobs of different jids): 200 replays in all.
  seed_captures(400, [](int i) { return "key_" + std::to_string(i % 200); });
  std::vector<CliResult> results;
  race(this, 2, (scratch_.path() / "ledger.db").string(), scratch_.path(), &results);
  size_t handled = 0;
  for (const CliResult& r : results) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    handled += lines_of(r.out).size();
  }
  EXPECT_EQ(handled, 400u);  // each job seen by one gate only
  const std::multiset<std::string> replayed = keys_in("queue:payment.capture", true);
  EXPECT_EQ(replayed.size(), 200u);
  EXPECT_EQ(std::set<std::string>(replayed.begin(), replayed.end()).size(), 200u);
  EXPECT_EQ(number({"ZCARD", "replaygate:default:held"}), 200);
  EXPECT_EQ(number({"ZCARD", "dead"}), 0);
  EXPECT_TRUE(strings({"KEYS", "replaygate:default:inflight:*"}).empty());
}

TEST_F(RedisGateTest, ThreeGatesOnOnePostgresLedgerReplayEachKeyOnce) {
  replaygate::ledger::testing::PgServer pg;
  if (const std::string why = pg.create(); !why.empty()) GTEST_SKIP() << why;
  // 300 jobs, 100 keys (each key in three jobs): 100 replays in all.
  seed_captures(300, [](int i) { return "pg_key_" + std::to_string(i % 100); });
  std::vector<CliResult> results;
  race(this, 3, pg.url(), scratch_.path(), &results);
  size_t handled = 0;
  for (const CliResult& r : results) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    handled += lines_of(r.out).size();
  }
  EXPECT_EQ(handled, 300u);
  const std::multiset<std::string> replayed = keys_in("queue:payment.capture", true);
  EXPECT_EQ(replayed.size(), 100u);
  EXPECT_EQ(std::set<std::string>(replayed.begin(), replayed.end()).size(), 100u);
  EXPECT_EQ(number({"ZCARD", "replaygate:default:held"}), 200);
  EXPECT_EQ(number({"ZCARD", "dead"}), 0);
}

TEST_F(RedisGateTest, SidekiqTrimmingDeadDuringARunNeverTouchesParkedOrHeld) {
  // 10,000 dead jobs (half replays, half declines: parked), and real Sidekiq killing 20 more
  // jobs meanwhile with dead_max_jobs 100: each death trims `dead` (ZREMRANGEBYRANK).
  Json decline;
  for (const auto& [member, score] : *real_) {
    const Json j = Json::parse(member);
    if (j["class"] == "DeclineJob") decline = j;
  }
  ASSERT_FALSE(decline.is_null());
  seed_captures(5000, [](int i) { return "trim_cap_" + std::to_string(i); });
  std::vector<std::string> owned = {"ZADD", "dead"};
  for (int i = 0; i < 5000; ++i) {
    decline["jid"] = "decline_" + std::to_string(i);
    decline["args"][0]["idempotency_key"] = "trim_dec_" + std::to_string(i);
    owned.push_back(std::to_string(1000 + i) + ".5");
    owned.push_back(decline.dump());
  }
  call(std::vector<std::string_view>(owned.begin(), owned.end()));
  ASSERT_EQ(number({"ZCARD", "dead"}), 10000);
  CliResult r;
  std::thread run([&] {
    std::vector<std::string> args = gate_args(true, scratch_.path());
    args[std::find(args.begin(), args.end(), "--max-rate") - args.begin() + 1] = "1500";
    args.insert(args.end(), {"--dead-max-jobs", "10000"});
    r = gate(scratch_.path(), args);
  });
  const std::string trimming =
      std::string(kWorker) +
      "Sidekiq.options[:dead_max_jobs] = 100\n"
      "class TrimJob < CaptureJob\n  sidekiq_options queue: \"trim\"\nend\n";
  ScratchDir trim_dir("rg_sidekiq_trim");
  const std::string sidekiq =
      run_sidekiq(trim_dir.path().string(), server_->url(), trimming,
                  "20.times { |i| TrimJob.perform_async({\"idempotency_key\" => \"t#{i}\"}) }\n",
                  {"trim"}, 0, (trim_dir.path() / "runs.txt").string(), 20);
  run.join();
  EXPECT_EQ(sidekiq, "");
  EXPECT_LE(r.exit_code, 1) << r.err;  // 1: Sidekiq's own deaths lack inputs (held invalid)
  EXPECT_NE(r.err.find("90% or more of Sidekiq's dead_max_jobs (10000)"), std::string::npos);
  std::map<std::string, long long> lines;
  for (const auto& [jid, action] : actions_of(r.out)) ++lines[action];
  // Whatever Sidekiq trimmed before the gate took it is gone (Sidekiq's own limit); everything
  // the gate moved is where it said, and nothing parked or held was trimmed.
  EXPECT_EQ(number({"LLEN", "queue:payment.capture"}), lines["republish"]);
  EXPECT_EQ(number({"ZCARD", "replaygate:default:parked"}), lines["park"]);
  EXPECT_EQ(number({"ZCARD", "replaygate:default:held"}), lines["hold"]);
  EXPECT_GT(lines["park"], 0);
  EXPECT_LE(number({"ZCARD", "dead"}), 100);
}

TEST_F(RedisGateTest, KillNineAtEachStepThenARestartReplaysEachKeyOnce) {
  const std::vector<std::string> steps = {"decided",         "claimed",   "decisions_recorded",
                                          "published",       "confirmed", "marked",
                                          "result_recorded", "recorded",  "acked"};
  for (const std::string& step : steps) {
    SCOPED_TRACE(step);
    call({"FLUSHALL"});
    const std::filesystem::path dir = scratch_.path() / step;
    std::filesystem::create_directories(dir);
    seed_captures(6, [](int i) { return "crash_" + std::to_string(i); });
    std::vector<std::string> args = gate_args(true, dir);
    args.insert(args.end(), {"--block-max", "3"});
    const CliResult crashed = gate(dir, args, {"REPLAYGATE_TEST_CRASH_AT=" + step});
    EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
    const CliResult restarted = gate(dir, args);
    EXPECT_EQ(restarted.exit_code, 0) << restarted.err;
    for (const auto& [jid, action] : actions_of(restarted.out)) {
      EXPECT_EQ(action, "republish") << jid << ": " << restarted.out;
    }
    EXPECT_EQ(keys_in("queue:payment.capture", true),
              (std::multiset<std::string>{"crash_0", "crash_1", "crash_2", "crash_3", "crash_4",
                                          "crash_5"}));
    EXPECT_EQ(number({"ZCARD", "replaygate:default:held"}), 0);
    EXPECT_EQ(number({"ZCARD", "dead"}), 0);
    EXPECT_EQ(number({"EXISTS", "replaygate:default:inflight:default"}), 0);
  }
}

TEST_F(RedisGateTest, AnotherGateRecoversTheJobsOfAGateWhoseLeaseEnded) {
  seed_captures(6, [](int i) { return "lease_" + std::to_string(i); });
  std::vector<std::string> a = gate_args(true, scratch_.path());
  a.insert(a.end(), {"--gate-id", "a", "--lease", "1000", "--block-max", "3"});
  const CliResult crashed = gate(scratch_.path(), a, {"REPLAYGATE_TEST_CRASH_AT=claimed"});
  EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
  EXPECT_EQ(number({"ZCARD", "replaygate:default:inflight:a"}), 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));  // gate a's lease ends
  std::vector<std::string> b = gate_args(true, scratch_.path());
  b.insert(b.end(), {"--gate-id", "b"});
  const CliResult r = gate(scratch_.path(), b);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("recovered 3 job(s) of gate 'a'"), std::string::npos) << r.err;
  EXPECT_EQ(keys_in("queue:payment.capture", true),
            (std::multiset<std::string>{"lease_0", "lease_1", "lease_2", "lease_3", "lease_4",
                                        "lease_5"}));
  EXPECT_EQ(number({"ZCARD", "replaygate:default:held"}), 0);
  EXPECT_EQ(number({"EXISTS", "replaygate:default:inflight:a"}), 0);
}

TEST_F(RedisGateTest, TheServerKilledMidRunLosesNothingAndMovesNothingTwice) {
  seed_captures(6, [](int i) { return "restart_" + std::to_string(i); });
  const std::filesystem::path pause = scratch_.path() / "paused";
  std::vector<std::string> args = gate_args(true, scratch_.path());
  args.insert(args.end(), {"--block-max", "3"});
  CliResult r;
  std::thread run([&] {
    r = gate(scratch_.path(), args, {"REPLAYGATE_TEST_PAUSE_AT=claimed:" + pause.string()});
  });
  for (int i = 0; i < 3000 && !std::filesystem::exists(pause); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(pause));
  redis_.reset();
  server_->kill9();  // the block was taken (AOF, fsync always) and claimed, not moved
  ASSERT_EQ(server_->start(), "");
  std::filesystem::remove(pause);
  run.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("resuming 3 job(s)"), std::string::npos) << r.err;
  EXPECT_EQ(keys_in("queue:payment.capture", true),
            (std::multiset<std::string>{"restart_0", "restart_1", "restart_2", "restart_3",
                                        "restart_4", "restart_5"}));
  EXPECT_EQ(number({"ZCARD", "replaygate:default:held"}), 0);
  EXPECT_EQ(number({"ZCARD", "dead"}), 0);
}

TEST_F(RedisGateTest, PoisonMembersAreHeldAloneAndUnchanged) {
  seed_captures(2, [](int i) { return "good_" + std::to_string(i); });
  Json big = capture_template();
  big["jid"] = "big";
  big["args"][0]["blob"] = std::string(20u << 20, 'x');  // 20 MB, over --max-body
  const std::string huge = big.dump();
  const std::string not_json = "{\"jid\":\"broken\",\"queue\":\"payment.capture\"";
  const std::string bad_utf8 =
      "{\"jid\":\"\xff\xfe\",\"queue\":\"payment.capture\",\"class\":\"X\"}";
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (const std::string* m : {&huge, &not_json, &bad_utf8, &deep}) {
    call({"ZADD", "dead", "5000", *m});
  }
  const CliResult r = gate(scratch_.path(), gate_args(true, scratch_.path()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(keys_in("queue:payment.capture", true),
            (std::multiset<std::string>{"good_0", "good_1"}));
  const std::vector<std::string> held = strings({"ZRANGE", "replaygate:default:held", "0", "-1"});
  ASSERT_EQ(held.size(), 4u);
  const std::set<std::string> held_set(held.begin(), held.end());
  for (const std::string* m : {&huge, &not_json, &bad_utf8, &deep}) {
    EXPECT_EQ(held_set.count(*m), 1u) << m->substr(0, 60);  // moved as they were, byte for byte
  }
  EXPECT_NE(r.out.find("more than --max-body"), std::string::npos);
  EXPECT_NE(r.out.find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(r.out.find("nests deeper than"), std::string::npos);
  EXPECT_EQ(number({"ZCARD", "dead"}), 0);
}

TEST_F(RedisGateTest, TheMinimalAclOfDocsGateMdIsEnough) {
  seed_captures(3, [](int i) { return "acl_" + std::to_string(i); });
  ASSERT_EQ(call({"ACL",       "SETUSER",        "replaygate",    "on",
                  ">gate-pw",  "resetkeys",      "~dead",         "~queue:*",
                  "~queues",   "~replaygate:*",  "resetchannels", "-@all",
                  "+evalsha",  "+script|load",   "+zcard",        "+llen",
                  "+type",     "+info",          "+ping",         "+wait",
                  "+set",      "+get",           "+del",          "+sadd",
                  "+smembers", "+zrangebyscore", "+zadd",         "+zrem",
                  "+zscore",   "+lpush",         "+pexpire",      "+exists"})
                .str,
            "OK");
  std::vector<std::string> args = gate_args(true, scratch_.path());
  args.insert(args.end(), {"--redis", "redis://replaygate:gate-pw@127.0.0.1:" +
                                          std::to_string(server_->port()) + "/0"});
  // --metrics: the held and parked counts' script runs under the ACL too.
  const std::string metrics = (scratch_.path() / "gate.prom").string();
  args.insert(args.end(), {"--metrics", metrics});
  const CliResult r = gate(scratch_.path(), args);
  call({"ACL", "DELUSER", "replaygate"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(keys_in("queue:payment.capture", true),
            (std::multiset<std::string>{"acl_0", "acl_1", "acl_2"}));
  const std::string text = read_file(metrics);
  EXPECT_NE(text.find("\nreplaygate_gate_held_letters{queue=\"dead\"} 0\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nreplaygate_gate_parked_letters{queue=\"dead\"} 0\n"), std::string::npos)
      << text;
}

TEST_F(RedisGateTest, UnsafeServersAndUrlsAreRefused) {
  seed_captures(1, [](int) { return "refused_0"; });
  const auto expect_refused = [&](const CliResult& r, const std::string& text) {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
    EXPECT_EQ(number({"ZCARD", "dead"}), 1);
    EXPECT_EQ(number({"LLEN", "queue:payment.capture"}), 0);
  };
  call({"CONFIG", "SET", "appendonly", "no"});
  expect_refused(gate(scratch_.path(), gate_args(true, scratch_.path())), "append-only file");
  call({"CONFIG", "SET", "appendonly", "yes"});
  call({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"});
  expect_refused(gate(scratch_.path(), gate_args(true, scratch_.path())),
                 "maxmemory-policy is 'allkeys-lru'");
  call({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  call({"SET", "replaygate:default:lease:default", "another-host:1"});
  expect_refused(gate(scratch_.path(), gate_args(true, scratch_.path())),
                 "is held by a running gate (another-host:1)");
  call({"DEL", "replaygate:default:lease:default"});
  for (const auto& [url, text] : std::vector<std::pair<std::string, std::string>>{
           {"rediss://127.0.0.1:6379", "no TLS"},
           {"redis-sentinel://127.0.0.1:26379", "Sentinel"},
           {"redis://127.0.0.1:7000,127.0.0.1:7001", "Cluster"}}) {
    std::vector<std::string> args = gate_args(false, scratch_.path());
    args.insert(args.end(), {"--redis", url});
    expect_refused(gate(scratch_.path(), args), text);
  }
  // --allow-volatile: the same server without AOF is accepted.
  call({"CONFIG", "SET", "appendonly", "no"});
  std::vector<std::string> args = gate_args(true, scratch_.path());
  args.push_back("--allow-volatile");
  const CliResult r = gate(scratch_.path(), args);
  call({"CONFIG", "SET", "appendonly", "yes"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(keys_in("queue:payment.capture", true), (std::multiset<std::string>{"refused_0"}));
}

}  // namespace
}  // namespace replaygate::gate::testing
