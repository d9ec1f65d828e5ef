// Jobs per second through Sidekiq's Dead set: `replaygate gate sidekiq --apply` against a bare
// Lua-move loop, in one run on one private redis-server (AOF, appendfsync always). Not a test;
// the numbers go to docs/benchmarks.md ("The live Sidekiq gate").
//
//   rg_redis_gate_bench [--jobs N] [--reps R]
//
// Every arm starts from a freshly filled `dead` of N distinct CaptureJob deaths in Sidekiq 6's
// shape (distinct jids and keys, error Net::ReadTimeout: every one a replay). The arms:
//   (a) bare loop: one script takes 64 jobs by score into an in-flight set, then one pipelined
//       script per job removes it from in-flight, LPUSHes it onto queue:payment.capture and
//       SADDs queues: the moves the gate makes, with no decision, ledger or audit log;
//   (b) replaygate gate sidekiq --apply --all --max-rate 0 --quiet (SQLite ledger, audit log),
//       blocks of 64 (the default);
//   (c) (b) with --block-max 500: fewer ledger transactions and audit appends (each an fsync).
// Each arm runs --reps times (default 3), interleaved; the median is reported. The queue's length
// is checked after every run; a wrong count stops the benchmark (exit 1).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "redis_server.h"
#include "redrive/redis/redis_client.h"
#include "tests/support/paths.h"

namespace {

using replaygate::gate::testing::RedisServer;
namespace rds = replaygate::redrive::redis;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kTake = R"lua(
local got = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf', 'WITHSCORES', 'LIMIT', 0, 64)
for i = 1, #got, 2 do
  redis.call('ZADD', KEYS[2], got[i + 1], got[i])
  redis.call('ZREM', KEYS[1], got[i])
end
return got
)lua";
constexpr std::string_view kMove = R"lua(
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], 'payment.capture')
return 1
)lua";

void seed(rds::Client& c, int n) {
  c.call({"FLUSHALL"});
  nlohmann::json job = nlohmann::json::parse(
      R"({"retry":0,"queue":"payment.capture","args":[{"idempotency_key":"k","committed":false}],
          "class":"CaptureJob","jid":"j","created_at":1796606698.32,"enqueued_at":1796606698.33,
          "error_message":"capture timed out","error_class":"Net::ReadTimeout",
          "failed_at":1796606699.1,"retry_count":0})");
  for (int start = 0; start < n; start += 500) {
    std::vector<std::string> owned = {"ZADD", "dead"};
    for (int i = start; i < std::min(n, start + 500); ++i) {
      job["jid"] = "bench_" + std::to_string(i);
      job["args"][0]["idempotency_key"] = "bench_key_" + std::to_string(i);
      owned.push_back(std::to_string(1796606699 + i));
      owned.push_back(job.dump());
    }
    c.call(std::vector<std::string_view>(owned.begin(), owned.end()));
  }
}

double bare_loop(rds::Client& c) {
  rds::Script take{kTake, ""}, move{kMove, ""};
  const auto start = Clock::now();
  for (;;) {
    std::optional<rds::Reply> got = c.eval(take, {"dead", "inflight"}, {});
    if (!got || got->elements.empty()) break;
    std::vector<std::vector<std::string_view>> calls;
    for (size_t i = 0; i + 1 < got->elements.size(); i += 2) {
      calls.push_back({"inflight", "queue:payment.capture", "queues", got->elements[i].str});
    }
    c.eval_many(move, calls, 3);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double gate_run(const RedisServer& server, const std::filesystem::path& dir, int block) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string src = RG_SOURCE_DIR;
  const std::string command =
      "REPLAYGATE_REDIS_URL=" + server.url() + " " + std::string(RG_BINARY) +
      " gate sidekiq --policy " + src + "/policies/replay_gate.yaml --mapping " + src +
      "/examples/sidekiq-gate.mapping.yaml --all --max-rate 0 --quiet --idle-exit 200 --apply "
      "--ledger " +
      (dir / "ledger.db").string() + " --audit " + (dir / "audit.log").string() +
      " --operator bench --block-max " + std::to_string(block) + " >" + (dir / "out").string() +
      " 2>" + (dir / "err").string();
  const auto start = Clock::now();
  const int rc = std::system(command.c_str());
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count() - 0.2;
  if (rc != 0) std::fprintf(stderr, "gate exited %d; see %s/err\n", rc, dir.c_str());
  return seconds;  // less the idle exit: the run's last 200 ms wait for a job that never comes
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 10000, reps = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--jobs") jobs = std::atoi(argv[i + 1]);
    if (flag == "--reps") reps = std::atoi(argv[i + 1]);
  }
  RedisServer server;
  if (const std::string why = server.create(); !why.empty()) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 2;
  }
  std::string problem, error;
  const std::optional<rds::RedisUrl> url = rds::parse_redis_url(server.url(), &problem);
  std::unique_ptr<rds::Client> c = rds::Client::open(*url, 5000, &error);
  if (!c) return 2;
  const std::filesystem::path dir = server.dir() + "/gate";
  std::vector<double> bare, gate, big;
  for (int r = 0; r < reps; ++r) {
    seed(*c, jobs);
    bare.push_back(bare_loop(*c));
    if (c->call({"LLEN", "queue:payment.capture"})->integer != jobs) return 1;
    seed(*c, jobs);
    gate.push_back(gate_run(server, dir, 64));
    if (c->call({"LLEN", "queue:payment.capture"})->integer != jobs) return 1;
    seed(*c, jobs);
    big.push_back(gate_run(server, dir, 500));
    if (c->call({"LLEN", "queue:payment.capture"})->integer != jobs) return 1;
  }
  const double a = jobs / median(bare), b = jobs / median(gate), d = jobs / median(big);
  std::printf("jobs %d, reps %d (medians)\n", jobs, reps);
  std::printf("(a) bare Lua-move loop:            %9.0f jobs/s\n", a);
  std::printf("(b) gate sidekiq --apply (SQLite): %9.0f jobs/s  (%.2f of (a))\n", b, b / a);
  std::printf("(c) (b) with --block-max 500:      %9.0f jobs/s  (%.2f of (a))\n", d, d / a);
  return 0;
}
