// A plan's run against the gate without a plan (issue 38: "a plan of 10,000 letters runs at no
// less than 0.9 of the gate without --plan in the same run"), on one private RabbitMQ node. Not a
// test; tools/bench/plan_gate.sh runs it, the figures go to docs/benchmarks.md.
//
//   rg_plan_bench [--letters N (10000)] [--reps R (5)] [--seed S]
//
// Each repetition runs both arms, in alternating order (A B, then B A, ...), each on a freshly
// filled dead-letter queue `dlq` of N distinct letters (distinct message ids and idempotency keys;
// a shuffled mix of 60% replayed to payment.capture, 25% parked, 15% held, as rg_gate_bench) and a
// fresh SQLite ledger and audit log:
//   (plain) replaygate gate rabbitmq --apply --all --max-rate 0 --quiet
//   (plan)  replaygate plan build --amqp (the N letters frozen into dlq.plan.ID), plan approve by
//           a second user (not timed), then replaygate gate rabbitmq --apply --plan --users
//           --max-rate 0 --quiet (timed)
// Only the two gate runs are timed (wall clock, from fork to exit). Every run's queue counts are
// checked (a wrong count stops the benchmark, exit 1). Prints each pair, the medians and the
// median of the pairwise ratios plain time / plan time (the plan's speed as a fraction of the
// gate's: 1.0 is as fast).
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "amqp_test_client.h"
#include "rabbit_server.h"
#include "tests/support/paths.h"

namespace {

using replaygate::gate::testing::AmqpTestClient;
using replaygate::gate::testing::RabbitServer;

const char* const kDlq = "dlq";
const char* const kWork = "payment.capture";
const char* const kClasses[] = {
    "java.net.SocketTimeoutException", "com.acme.payments.gateway.InsufficientFundsException",
    "org.springframework.web.client.HttpClientErrorException$BadRequest"};

void require_ok(const std::string& error, const std::string& what) {
  if (!error.empty()) throw std::runtime_error(what + ": " + error);
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The CPU seconds (user + system) of the last run()'s process.
double last_cpu = 0;
// --perf DIR: each timed gate run under `perf record --call-graph dwarf -o DIR/ARM.data` (the
// figures are then not comparable with runs without it).
std::string perf_dir;

// Runs the CLI with `args` in `dir` (output to DIR/NAME.out and .err): the wall seconds; throws
// when the exit code is not `want`.
double run(const std::string& dir, const std::string& name, const std::vector<std::string>& args,
           int want = 0) {
  std::string command = "cd " + quote(dir) + " && ";
  if (!perf_dir.empty() && args.front() == "gate") {
    command += "perf record -q --call-graph dwarf,16384 -F 400 -o " +
               quote(perf_dir + "/" + name + ".data") + " -- ";
  }
  command += quote(RG_BINARY);
  for (const std::string& a : args) command += " " + quote(a);
  command +=
      " </dev/null >" + quote(dir + "/" + name + ".out") + " 2>" + quote(dir + "/" + name + ".err");
  rusage before{}, after{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system(command.c_str());
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::getrusage(RUSAGE_CHILDREN, &after);
  const auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  last_cpu =
      secs(after.ru_utime) + secs(after.ru_stime) - secs(before.ru_utime) - secs(before.ru_stime);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != want) {
    std::ifstream err(dir + "/" + name + ".err");
    std::stringstream text;
    text << err.rdbuf();
    throw std::runtime_error(name + " exited " + std::to_string(code) + ": " + text.str());
  }
  return took;
}

// Empties the queues, then fills dlq with n shuffled letters through the broker's dead-lettering.
void fill(AmqpTestClient& client, long n, const std::string& tag, std::mt19937_64& rng) {
  for (const char* q : {kDlq, kWork, "dlq.parked", "dlq.hold"}) {
    require_ok(client.purge_queue(q), "purge");
  }
  std::vector<int> kinds;
  for (long i = 0; i < n; ++i) kinds.push_back(i * 100 < n * 60 ? 0 : i * 100 < n * 85 ? 1 : 2);
  std::shuffle(kinds.begin(), kinds.end(), rng);
  for (long i = 0; i < n; ++i) {
    const std::string key =
        "cap_" + tag + "_" + std::to_string(rng() % 1000000000) + "_" + std::to_string(i);
    const std::string body =
        "{\"idempotency_key\":\"" + key + "\",\"committed\":false,\"amount_cents\":901}";
    require_ok(
        client.publish("", kWork, body, {{"x-exception-class", std::string(kClasses[kinds[i]])}},
                       tag + "-" + std::to_string(i)),
        "publish");
  }
  require_ok(client.dead_letter(kWork, static_cast<size_t>(n)), "dead-letter");
  require_ok(client.wait_for_count(kDlq, n, 60000), "fill dlq");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int bench(int argc, char** argv) {
  long letters = 10000;
  int reps = 5;
  uint64_t seed = 38;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--letters")
      letters = std::atol(argv[i + 1]);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (a == "--perf")
      perf_dir = argv[i + 1];
    else if (a == "--seed")
      seed = std::strtoull(argv[i + 1], nullptr, 10);
    else
      throw std::runtime_error("unknown option " + a);
  }
  RabbitServer server;
  require_ok(server.create(), "start a RabbitMQ node");
  AmqpTestClient client;
  require_ok(client.connect(server.url()), "connect");
  require_ok(client.declare_queue(kDlq, true), "declare dlq");
  require_ok(client.declare_queue(kWork, true,
                                  {{"x-dead-letter-exchange", std::string("")},
                                   {"x-dead-letter-routing-key", std::string(kDlq)}}),
             "declare the work queue");
  require_ok(client.declare_queue("dlq.parked", true), "declare");
  require_ok(client.declare_queue("dlq.hold", true), "declare");
  char pattern[] = "/tmp/rg-plan-bench.XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp");
  const std::string dir = pattern;
  const std::string table = dir + "/gate.rgt";
  const std::string mapping = std::string(RG_SOURCE_DIR) + "/examples/rabbitmq.mapping.yaml";
  run(dir, "compile",
      {"compile", std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml", "-o", table}, 0);
  for (const char* who : {"alice", "bob"}) {
    run(dir, "key",
        {"key", "generate", "--secret", dir + "/" + who + ".key", "--public",
         dir + "/" + who + ".pub"});
  }
  std::ofstream(dir + "/users.json")
      << R"({"format_version":1,"users":[{"name":"alice","role":"approver","public_key":"alice.pub"},)"
      << R"({"name":"bob","role":"approver","public_key":"bob.pub"}]})";
  const std::vector<std::string> gate = {"gate",      "rabbitmq", "--table",    table,
                                         "--mapping", mapping,    "--amqp",     server.url(),
                                         "--queue",   kDlq,       "--max-rate", "0",
                                         "--quiet",   "--apply",  "--operator", "bench"};
  std::mt19937_64 rng(seed);
  std::vector<double> plain_s, plan_s, ratio, plain_cpu, plan_cpu;
  std::printf(
      "| rep | gate s | gate --plan s | plain / plan | gate CPU s | gate --plan CPU s |\n"
      "|---|---|---|---|---|---|\n");
  for (int r = 1; r <= reps; ++r) {
    const std::string tag = "r" + std::to_string(r);
    double times[2] = {0, 0}, cpu[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const bool plan = (k == 0) == (r % 2 == 0);  // alternate which arm goes first
      const std::string arm = std::string(plan ? "plan-" : "plain-") + tag;
      fill(client, letters, arm, rng);
      const std::string ledger = dir + "/" + arm + ".db", audit = dir + "/" + arm + ".log";
      std::vector<std::string> args = gate;
      for (const std::string& a :
           {std::string("--ledger"), ledger, std::string("--audit"), audit}) {
        args.push_back(a);
      }
      if (!plan) {
        args.push_back("--all");
        times[0] = run(dir, arm, args);
        cpu[0] = last_cpu;
      } else {
        const std::string p = dir + "/" + arm + ".json";
        run(dir, arm + "-build",
            {"plan", "build", "--amqp", server.url(), "--queue", kDlq, "--table", table,
             "--mapping", mapping, "--author", "alice", "--plan", p, "--ledger", ledger, "--audit",
             audit});
        run(dir, arm + "-approve",
            {"plan", "approve", p, "--operator", "bob", "--sign-key", dir + "/bob.key", "--reason",
             "bench", "--users", dir + "/users.json", "--ledger", ledger, "--audit", audit});
        for (const std::string& a :
             {std::string("--plan"), p, std::string("--users"), dir + "/users.json"}) {
          args.push_back(a);
        }
        times[1] = run(dir, arm, args);
        cpu[1] = last_cpu;
      }
      require_ok(client.wait_for_count(kDlq, 0, 30000), arm + ": dlq not drained");
      require_ok(client.wait_for_count(kWork, letters * 60 / 100, 30000),
                 arm + ": wrong count of replays");
    }
    plain_s.push_back(times[0]);
    plan_s.push_back(times[1]);
    ratio.push_back(times[0] / times[1]);
    plain_cpu.push_back(cpu[0]);
    plan_cpu.push_back(cpu[1]);
    std::printf("| %d | %.2f | %.2f | %.3f | %.2f | %.2f |\n", r, times[0], times[1],
                times[0] / times[1], cpu[0], cpu[1]);
    std::fflush(stdout);
  }
  std::printf(
      "median: gate %.2f s, gate --plan %.2f s (%ld letters); plain / plan %.3f (min %.3f, "
      "max %.3f); CPU s gate %.2f, gate --plan %.2f\n",
      median(plain_s), median(plan_s), letters, median(ratio),
      *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()),
      median(plain_cpu), median(plan_cpu));
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rg_plan_bench: FAILED: %s\n", e.what());
    return 1;
  }
}
