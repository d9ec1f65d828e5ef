// Three block gates on a three-node RabbitMQ cluster (issue 41): quorum queues, one PostgreSQL
// ledger, the dead-letter queue's leader and one gate killed with -9 mid-run and restarted; every
// letter accounted for at the end.
#include "cluster.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "amqp_test_client.h"
#include "pg_server.h"
#include "support/cli_runner.h"

namespace {

using replaygate::gate::testing::AmqpTestClient;
using replaygate::gate::testing::Cluster;
using replaygate::gate::testing::cluster_letters;
using replaygate::gate::testing::ClusterLetter;
using replaygate::gate::testing::dead_letter_all;
using replaygate::gate::testing::Fields;
using replaygate::gate::testing::GateProcess;
using replaygate::gate::testing::Message;
using replaygate::testing::kCliBinary;
using replaygate::testing::kSourceDir;
using replaygate::testing::ScratchDir;
using Clock = std::chrono::steady_clock;

constexpr int kLetters = 2000;
constexpr int kBlockMax = 32;

class RabbitCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/lib/rabbitmq/bin/rabbitmq-server")) {
      GTEST_SKIP() << "rabbitmq-server is not installed";
    }
    if (const std::string why = pg_.create(); !why.empty()) GTEST_SKIP() << why;
    dir_ = std::make_unique<ScratchDir>("rg-cluster");
    const int base = 20000 + static_cast<int>(::getpid() % 400) * 100;
    ASSERT_EQ(cluster_.start(path("cluster"), 3, base), "");
  }
  std::string path(const std::string& name) const { return (dir_->path() / name).string(); }

  // Gate g's arguments: its nodes in order starting from node g; 150 letters per second each, so
  // that the kills land mid-run.
  std::vector<std::string> gate_args(int g) const {
    std::vector<std::string> args = {"gate",
                                     "rabbitmq",
                                     "--table",
                                     table_,
                                     "--mapping",
                                     kSourceDir + "/examples/rabbitmq.mapping.yaml",
                                     "--queue",
                                     "dlq",
                                     "--apply",
                                     "--all",
                                     "--ledger",
                                     pg_.url(),
                                     "--audit",
                                     path("audit-" + std::to_string(g) + ".log"),
                                     "--operator",
                                     "ops-cluster",
                                     "--max-rate",
                                     "150",
                                     "--quiet",
                                     "--idle-exit",
                                     "8000",
                                     "--reconnect-for",
                                     "120",
                                     "--block-max",
                                     std::to_string(kBlockMax)};
    for (int i = 0; i < 3; ++i) {
      args.push_back("--amqp");
      args.push_back(cluster_.urls()[(g + i) % 3]);
    }
    return args;
  }

  replaygate::ledger::testing::PgServer pg_;
  std::unique_ptr<ScratchDir> dir_;
  Cluster cluster_;
  std::string table_;
};

TEST_F(RabbitCluster, ThreeGatesLoseNothingWhenTheLeaderAndAGateAreKilled) {
  table_ = path("gate.rgt");
  const replaygate::testing::CliResult compiled = replaygate::testing::run_cli_args(
      dir_->path(), {"compile", kSourceDir + "/policies/replay_gate.yaml", "-o", table_});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  AmqpTestClient client;
  ASSERT_EQ(client.connect(cluster_.urls()[0]), "");
  const Fields quorum = {{"x-queue-type", std::string("quorum")}};
  Fields dlq = quorum;
  dlq.push_back({"x-delivery-limit", int64_t{20}});
  ASSERT_EQ(client.declare_queue("dlq", true, dlq), "");
  for (const char* q : {"dlq.parked", "dlq.hold"}) {
    ASSERT_EQ(client.declare_queue(q, true, quorum), "");
  }
  Fields work = quorum;
  work.push_back({"x-dead-letter-exchange", std::string("")});
  work.push_back({"x-dead-letter-routing-key", std::string("dlq")});
  ASSERT_EQ(client.declare_queue("payment.capture", true, work), "");
  // 2,000 letters dead-lettered by the broker: 60% replays, 30% parks, 10% holds; 100 keys shared
  // by two letters each.
  const std::vector<ClusterLetter> letters = cluster_letters(kLetters, 100, "c");
  std::map<std::string, std::string> class_of, key_of;  // message id -> its verb's action, key
  for (const ClusterLetter& l : letters) {
    class_of[l.id] = l.what;
    key_of[l.id] = l.key;
  }
  ASSERT_EQ(dead_letter_all(client, "payment.capture", letters), "");
  ASSERT_EQ(client.wait_for_count("dlq", kLetters, 60000), "");
  client.close();

  // The dead-letter queue's leader, asked before the run (rabbitmqctl takes a second or two).
  const int killed = cluster_.leader("dlq");
  ASSERT_GE(killed, 0) << "no node names the leader of dlq";
  std::vector<GateProcess> gates(3);
  for (int g = 0; g < 3; ++g) {
    ASSERT_EQ(gates[g].start(gate_args(g), path("out-" + std::to_string(g)),
                             path("err-" + std::to_string(g))),
              "");
  }
  // Mid-run: the dead-letter queue's leader killed with -9 once a fifth of the letters are
  // handled, gate 1 killed with -9 at half and restarted, then the node restarted.
  // Progress: the letter lines the gates have printed (a quorum queue's message count on
  // another node lags).
  const auto wait_until_handled = [&](long handled) {
    const auto give_up = Clock::now() + std::chrono::seconds(120);
    for (; Clock::now() < give_up; std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
      long lines = 0;
      for (int g = 0; g < 3; ++g) {
        const std::string out = replaygate::testing::read_file(path("out-" + std::to_string(g)));
        lines += static_cast<long>(std::count(out.begin(), out.end(), '\n'));
      }
      if (lines >= handled) return kLetters - lines;
    }
    return -1L;
  };
  const long at_node_kill = wait_until_handled(kLetters / 5);
  EXPECT_GT(at_node_kill, 0) << "the gates were done before the node was killed";
  cluster_.kill(killed);
  const long at_gate_kill = wait_until_handled(kLetters / 2);
  EXPECT_GT(at_gate_kill, 0) << "the gates were done before gate 1 was killed";
  gates[1].kill9();
  EXPECT_EQ(gates[1].exit_code, 128 + SIGKILL);
  ASSERT_EQ(gates[1].start(gate_args(1), path("out-1"), path("err-1")), "");
  EXPECT_EQ(cluster_.restart(killed), "");
  for (GateProcess& g : gates) g.wait();
  for (int g = 0; g < 3; ++g) {
    EXPECT_LE(gates[g].exit_code, 1)
        << "gate " << g << ": " << replaygate::testing::read_file(path("err-" + std::to_string(g)));
  }

  // Every letter accounted for.
  ASSERT_EQ(client.connect(cluster_.urls()[(killed + 1) % 3]), "");
  EXPECT_EQ(client.wait_for_count("dlq", 0, 30000), "") << "letters left in the dead-letter queue";
  std::map<std::string, int> in_work, in_parked;
  std::map<std::string, std::string> held_rule;
  std::map<std::string, int> held_copies;
  std::map<std::string, int> key_replays;
  for (const Message& m : client.get_all("payment.capture")) {
    ++in_work[m.message_id];
    ++key_replays[key_of[m.message_id]];
  }
  for (const Message& m : client.get_all("dlq.parked")) ++in_parked[m.message_id];
  for (const Message& m : client.get_all("dlq.hold")) {
    ++held_copies[m.message_id];
    held_rule[m.message_id] =
        m.headers.count("x-replaygate-rule") != 0 ? m.headers.at("x-replaygate-rule") : "";
  }
  int outcome_unknown = 0, twice = 0;
  for (const auto& [key, n] : key_replays) EXPECT_EQ(n, 1) << key << " replayed " << n << " times";
  for (const auto& [id, what] : class_of) {
    const int places = in_work[id] + in_parked[id] + held_copies[id];
    EXPECT_GE(places, 1) << id << " (" << what << ") lost";
    if (held_rule[id] == "ledger:outcome_unknown") ++outcome_unknown;
    if (places > 1) ++twice;
    if (what == "park") {
      EXPECT_GE(in_parked[id], 1) << id;
      EXPECT_EQ(in_work[id], 0) << id << " a `never` letter replayed";
    }
    if (what == "hold") {
      EXPECT_EQ(in_work[id], 0) << id << " an unknown letter replayed";
    }
  }
  // Each replay key: replayed once, or held as outcome unknown where a kill cut its block.
  std::set<std::string> replay_keys;
  for (const auto& [id, what] : class_of) {
    if (what == "replay") replay_keys.insert(key_of[id]);
  }
  for (const std::string& key : replay_keys) {
    if (key_replays[key] == 1) continue;
    bool unknown = false;
    for (const auto& [id, k] : key_of) {
      unknown = unknown || (k == key && held_rule[id] == "ledger:outcome_unknown");
    }
    EXPECT_TRUE(unknown) << key << " neither replayed nor held as outcome unknown";
  }
  // A kill leaves at most the blocks in flight unknown: one per gate on the killed node, and
  // the killed gate's.
  EXPECT_LE(outcome_unknown, 4 * kBlockMax);
  int reconnects = 0;
  for (int g = 0; g < 3; ++g) {
    const std::string err = replaygate::testing::read_file(path("err-" + std::to_string(g)));
    for (size_t at = err.find("reconnected"); at != std::string::npos;
         at = err.find("reconnected", at + 1)) {
      ++reconnects;
    }
  }
  EXPECT_GE(reconnects, 1) << "no gate was connected to the killed node";
  const auto copies = [](const std::map<std::string, int>& m) {
    int n = 0;
    for (const auto& [id, c] : m) n += c;
    return n;
  };
  std::printf(
      "cluster: node %d killed at %ld letters left, gate 1 at %ld; %d replayed, %d parked, %d "
      "held (%d outcome unknown); %d letters in two places; %d reconnects\n",
      killed, at_node_kill, at_gate_kill, copies(in_work), copies(in_parked), copies(held_copies),
      outcome_unknown, twice, reconnects);
}

}  // namespace
