// Letters per second and CPU per letter of 1, 2 and 3 block gates on a private three-node RabbitMQ
// cluster with one PostgreSQL ledger, the same with PostgreSQL restarted mid-run, and the pause
// after the dead-letter queue's leader is killed (issue 41). Not a test: the figures go to
// docs/operations.md. On one 2-core host this measures contention, not scale.
//
//   rg_cluster_bench [--letters N] [--reps R] [--events-only]    (defaults 2000 and 3)
//
// Queues as in tests/gate/cluster_test.cc (quorum work, dead-letter with x-delivery-limit 20,
// park and hold queues). Each run: N letters dead-lettered by the broker, then G gates started
// together (`--apply --all --max-rate 0 --block-max 64 --idle-exit 1000`, each given the three
// nodes starting from its own), timed from their start to the last letter line. Every run checks
// that the dead-letter queue ends empty and that every letter is somewhere.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "amqp_test_client.h"
#include "cluster.h"
#include "pg_server.h"
#include "support/cli_runner.h"

namespace {

using replaygate::gate::testing::AmqpTestClient;
using replaygate::gate::testing::Cluster;
using replaygate::gate::testing::cluster_letters;
using replaygate::gate::testing::dead_letter_all;
using replaygate::gate::testing::Fields;
using replaygate::gate::testing::GateProcess;
using replaygate::testing::kSourceDir;
using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "rg_cluster_bench: %s\n", what.c_str());
  std::exit(1);
}

long lines_in(const std::string& path) {
  const std::string text = replaygate::testing::read_file(path);
  return static_cast<long>(std::count(text.begin(), text.end(), '\n'));
}

struct Bench {
  Cluster cluster;
  replaygate::ledger::testing::PgServer pg;
  std::string root, table;
  int run_count = 0;

  std::vector<std::string> gate_args(int g, const std::string& dir) const {
    std::vector<std::string> args = {"gate",
                                     "rabbitmq",
                                     "--table",
                                     table,
                                     "--mapping",
                                     kSourceDir + "/examples/rabbitmq.mapping.yaml",
                                     "--queue",
                                     "dlq",
                                     "--apply",
                                     "--all",
                                     "--ledger",
                                     pg.url(),
                                     "--ledger-scope",
                                     std::filesystem::path(dir).filename(),
                                     "--audit",
                                     dir + "/audit-" + std::to_string(g) + ".log",
                                     "--operator",
                                     "bench",
                                     "--max-rate",
                                     "0",
                                     "--quiet",
                                     "--idle-exit",
                                     "1000",
                                     "--reconnect-for",
                                     "120",
                                     "--block-max",
                                     "64"};
    for (int i = 0; i < 3; ++i) {
      args.push_back("--amqp");
      args.push_back(cluster.urls()[(g + i) % 3]);
    }
    return args;
  }

  struct Run {
    double wall = 0, cpu = 0, longest_pause = 0;
    int restarts = 0;  // gates started again after exit 2
  };

  // One run of `gates` gates on `n` fresh letters; `during` runs once 1/5 of them are handled.
  Run run(int gates, int n, const std::function<void()>& during = {}) {
    const std::string dir = root + "/run" + std::to_string(++run_count);
    std::filesystem::create_directories(dir);
    AmqpTestClient client;
    if (!client.connect(cluster.urls()[0]).empty()) fail("connect");
    if (const std::string e = dead_letter_all(
            client, "payment.capture", cluster_letters(n, n / 20, "b" + std::to_string(run_count)));
        !e.empty()) {
      fail(e);
    }
    if (!client.wait_for_count("dlq", n, 60000).empty()) fail("the letters did not reach dlq");
    client.close();
    std::vector<GateProcess> procs(gates);
    const auto t0 = Clock::now();
    for (int g = 0; g < gates; ++g) {
      const std::string e = procs[g].start(gate_args(g, dir), dir + "/out-" + std::to_string(g),
                                           dir + "/err-" + std::to_string(g));
      if (!e.empty()) fail(e);
    }
    // Progress from the gates' letter lines: the run ends at the last one; the longest pause
    // between two increases is the recovery after a kill.
    Run r;
    long seen = 0;
    auto last_progress = t0, last_line = t0;
    bool done_during = !during;
    for (;;) {
      long lines = 0;
      for (int g = 0; g < gates; ++g) lines += lines_in(dir + "/out-" + std::to_string(g));
      const auto now = Clock::now();
      if (lines > seen) {
        r.longest_pause =
            std::max(r.longest_pause, std::chrono::duration<double>(now - last_progress).count());
        seen = lines;
        last_progress = last_line = now;
      }
      if (!done_during && seen >= n / 5) {
        during();
        done_during = true;
        last_progress = Clock::now();
      }
      // A gate that stopped on a ledger or broker failure (exit 2) is started again, as its
      // service manager would (Restart=on-failure).
      bool running = false;
      for (int g = 0; g < gates; ++g) {
        GateProcess& p = procs[g];
        if (!p.exited()) {
          running = true;
          continue;
        }
        if (p.exit_code == 2 && p.pid == 0) {
          r.cpu += p.cpu_s;
          ++r.restarts;
          const std::string e = p.start(gate_args(g, dir), dir + "/out-" + std::to_string(g),
                                        dir + "/err-" + std::to_string(g));
          if (!e.empty()) fail(e);
          running = true;
        }
      }
      if (!running || now - last_progress > std::chrono::seconds(150)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (GateProcess& p : procs) {
      p.wait();
      r.cpu += p.cpu_s;
      p.cpu_s = 0;
    }
    r.wall = std::chrono::duration<double>(last_line - t0).count();
    if (during) {  // what the gates said about the event
      for (int g = 0; g < gates; ++g) {
        std::fprintf(stderr, "gate %d:\n%s", g,
                     replaygate::testing::read_file(dir + "/err-" + std::to_string(g)).c_str());
      }
    }
    if (!client.connect(cluster.urls()[1]).empty()) fail("connect");
    if (!client.wait_for_count("dlq", 0, 30000).empty()) fail("letters left in dlq");
    const long placed = client.message_count("payment.capture") +
                        client.message_count("dlq.parked") + client.message_count("dlq.hold");
    if (placed < n) fail("only " + std::to_string(placed) + " of " + std::to_string(n) + " placed");
    for (const char* q : {"payment.capture", "dlq.parked", "dlq.hold"}) client.purge_queue(q);
    return r;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int letters = 2000, reps = 3;
  bool gates_table = true;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--events-only") {
      gates_table = false;
      --i;
      continue;
    }
    if (i + 1 >= argc) fail("usage: rg_cluster_bench [--letters N] [--reps R] [--events-only]");
    if (a == "--letters") {
      letters = std::atoi(argv[i + 1]);
    } else if (a == "--reps") {
      reps = std::atoi(argv[i + 1]);
    } else {
      fail("usage: rg_cluster_bench [--letters N] [--reps R] [--events-only]");
    }
  }
  if (letters < 100 || reps < 1) fail("--letters at least 100, --reps at least 1");
  Bench b;
  char tmpl[] = "/tmp/rg-cluster-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) fail("mkdtemp");
  b.root = tmpl;
  if (const std::string e = b.pg.create(); !e.empty()) fail(e);
  const auto t0 = Clock::now();
  if (const std::string e = b.cluster.start(b.root + "/cluster", 3, 24700); !e.empty()) fail(e);
  const double cluster_start = std::chrono::duration<double>(Clock::now() - t0).count();
  b.table = b.root + "/gate.rgt";
  if (replaygate::testing::run_cli_args(
          b.root, {"compile", kSourceDir + "/policies/replay_gate.yaml", "-o", b.table})
          .exit_code != 0) {
    fail("compile");
  }
  AmqpTestClient client;
  if (!client.connect(b.cluster.urls()[0]).empty()) fail("connect");
  const Fields quorum = {{"x-queue-type", std::string("quorum")}};
  Fields dlq = quorum, work = quorum;
  dlq.push_back({"x-delivery-limit", int64_t{20}});
  work.push_back({"x-dead-letter-exchange", std::string("")});
  work.push_back({"x-dead-letter-routing-key", std::string("dlq")});
  if (!client.declare_queue("dlq", true, dlq).empty() ||
      !client.declare_queue("dlq.parked", true, quorum).empty() ||
      !client.declare_queue("dlq.hold", true, quorum).empty() ||
      !client.declare_queue("payment.capture", true, work).empty()) {
    fail("declare the queues");
  }
  client.close();
  std::printf(
      "# Block gates on a three-node cluster\n\n3 nodes started and clustered in %.0f s; "
      "%d letters per run, %d runs per row\n\n",
      cluster_start, letters, reps);
  std::printf("| gates | wall s (median) | letters/s | CPU us per letter (all gates) |\n");
  std::printf("|---|---|---|---|\n");
  for (int gates = 1; gates <= (gates_table ? 3 : 0); ++gates) {
    std::vector<double> walls, cpus;
    for (int rep = 0; rep < reps; ++rep) {
      const Bench::Run r = b.run(gates, letters);
      walls.push_back(r.wall);
      cpus.push_back(r.cpu);
      std::fprintf(stderr, "%d gates, run %d: %.2f s, %.2f CPU s\n", gates, rep + 1, r.wall, r.cpu);
    }
    std::printf("| %d | %.2f | %.0f | %.0f |\n", gates, median(walls), letters / median(walls),
                median(cpus) * 1e6 / letters);
    std::fflush(stdout);
  }
  // PostgreSQL restarted, then the dead-letter queue's leader killed, each with three gates.
  const Bench::Run pg_restart = b.run(3, letters, [&] {
    b.pg.stop();
    if (const std::string e = b.pg.start(); !e.empty()) fail(e);
  });
  const int leader = b.cluster.leader("dlq");
  const Bench::Run leader_kill = b.run(3, letters, [&] { b.cluster.kill(leader); });
  std::printf(
      "\n| event, 3 gates | wall s | letters/s | longest pause in progress, s | gates "
      "restarted |\n");
  std::printf("|---|---|---|---|---|\n");
  std::printf("| PostgreSQL stopped and started at 1/5 | %.2f | %.0f | %.2f | %d |\n",
              pg_restart.wall, letters / pg_restart.wall, pg_restart.longest_pause,
              pg_restart.restarts);
  std::printf("| dead-letter queue's leader (node %d) killed at 1/5 | %.2f | %.0f | %.2f | %d |\n",
              leader, leader_kill.wall, letters / leader_kill.wall, leader_kill.longest_pause,
              leader_kill.restarts);
  b.cluster.stop();
  std::filesystem::remove_all(b.root);
  return 0;
}
