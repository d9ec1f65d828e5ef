// Three block gates on a three-node RabbitMQ cluster (issue 41): quorum queues, one PostgreSQL
// ledger, the dead-letter queue's leader and one gate killed with -9 mid-run and restarted; every
// letter accounted for at the end.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
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

extern char** environ;

namespace {

using replaygate::gate::testing::AmqpTestClient;
using replaygate::gate::testing::Fields;
using replaygate::gate::testing::Message;
using replaygate::testing::kCliBinary;
using replaygate::testing::kSourceDir;
using replaygate::testing::ScratchDir;
using replaygate::testing::shell_quote;
using Clock = std::chrono::steady_clock;

constexpr int kLetters = 2000;
constexpr int kBlockMax = 32;
const std::string kScript = kSourceDir + "/tools/rabbitmq-cluster.sh";

// Runs `command` with sh; its stdout, and its exit code in *code.
std::string shell(const std::string& command, int* code = nullptr) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  if (code != nullptr) *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A gate process in the background, its output in files.
struct GateProcess {
  pid_t pid = 0;
  int exit_code = -1;
  void start(const std::vector<std::string>& args, const std::string& out,
             const std::string& err) {
    std::vector<char*> argv = {const_cast<char*>(kCliBinary.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  void kill9() {
    ::kill(pid, SIGKILL);
    wait();
  }
  void wait() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

class RabbitCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/lib/rabbitmq/bin/rabbitmq-server")) {
      GTEST_SKIP() << "rabbitmq-server is not installed";
    }
    if (const std::string why = pg_.create(); !why.empty()) GTEST_SKIP() << why;
    dir_ = std::make_unique<ScratchDir>("rg-cluster");
    cluster_ = (dir_->path() / "cluster").string();
    const int base = 20000 + static_cast<int>(::getpid() % 400) * 100;
    int code = 0;
    const std::string urls = shell(shell_quote(kScript) + " start " + shell_quote(cluster_) +
                                       " 3 " + std::to_string(base) + " 2>" +
                                       shell_quote(path("cluster.err")),
                                   &code);
    ASSERT_EQ(code, 0) << replaygate::testing::read_file(path("cluster.err"));
    for (size_t at = 0; at < urls.size();) {
      const size_t nl = urls.find('\n', at);
      urls_.push_back(urls.substr(at, nl - at));
      at = nl == std::string::npos ? urls.size() : nl + 1;
    }
    ASSERT_EQ(urls_.size(), 3u) << urls;
  }
  void TearDown() override {
    if (!cluster_.empty()) shell(shell_quote(kScript) + " stop " + shell_quote(cluster_));
  }
  std::string path(const std::string& name) const { return (dir_->path() / name).string(); }

  // Gate g's arguments: its nodes in order starting from node g; 150 letters per second each, so
  // that the kills land mid-run.
  std::vector<std::string> gate_args(int g) const {
    std::vector<std::string> args = {"gate",        "rabbitmq",
                                     "--table",     table_,
                                     "--mapping",   kSourceDir + "/examples/rabbitmq.mapping.yaml",
                                     "--queue",     "dlq",
                                     "--apply",     "--all",
                                     "--ledger",    pg_.url(),
                                     "--audit",     path("audit-" + std::to_string(g) + ".log"),
                                     "--operator",  "ops-cluster",
                                     "--max-rate",  "150",
                                     "--quiet",     "--idle-exit",
                                     "8000",        "--reconnect-for",
                                     "120",         "--block-max",
                                     std::to_string(kBlockMax)};
    for (int i = 0; i < 3; ++i) {
      args.push_back("--amqp");
      args.push_back(urls_[(g + i) % 3]);
    }
    return args;
  }

  replaygate::ledger::testing::PgServer pg_;
  std::unique_ptr<ScratchDir> dir_;
  std::string cluster_, table_;
  std::vector<std::string> urls_;
};

TEST_F(RabbitCluster, ThreeGatesLoseNothingWhenTheLeaderAndAGateAreKilled) {
  table_ = path("gate.rgt");
  const replaygate::testing::CliResult compiled = replaygate::testing::run_cli_args(
      dir_->path(), {"compile", kSourceDir + "/policies/replay_gate.yaml", "-o", table_});
  ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  AmqpTestClient client;
  ASSERT_EQ(client.connect(urls_[0]), "");
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
  std::map<std::string, std::string> class_of;  // message id -> what the policy does with it
  std::map<std::string, std::string> key_of;
  for (int i = 0; i < kLetters; ++i) {
    const int kind = i % 10;
    const std::string cls = kind < 6   ? "java.net.SocketTimeoutException"
                            : kind < 9 ? "com.acme.payments.gateway.InsufficientFundsException"
                                       : "org.springframework.web.client.HttpClientErrorException"
                                         "$BadRequest";
    const std::string id = "c-" + std::to_string(i), key = "ck" + std::to_string(i % 1900);
    class_of[id] = kind < 6 ? "replay" : kind < 9 ? "park" : "hold";
    key_of[id] = key;
    ASSERT_EQ(client.publish("", "payment.capture",
                             "{\"idempotency_key\":\"" + key + "\",\"committed\":false,\"amount_cents\":901}",
                             {{"x-exception-class", cls}}, id),
              "");
  }
  ASSERT_EQ(client.dead_letter("payment.capture", kLetters), "");
  ASSERT_EQ(client.wait_for_count("dlq", kLetters, 60000), "");
  client.close();

  // The dead-letter queue's leader, asked before the run (rabbitmqctl takes a second or two).
  int code = 0;
  const std::string leader =
      shell(shell_quote(kScript) + " leader " + shell_quote(cluster_) + " dlq", &code);
  ASSERT_EQ(code, 0) << leader;
  const int killed = std::stoi(leader);
  std::vector<GateProcess> gates(3);
  for (int g = 0; g < 3; ++g) {
    gates[g].start(gate_args(g), path("out-" + std::to_string(g)),
                   path("err-" + std::to_string(g)));
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
  shell(shell_quote(kScript) + " kill " + shell_quote(cluster_) + " " + std::to_string(killed));
  const long at_gate_kill = wait_until_handled(kLetters / 2);
  EXPECT_GT(at_gate_kill, 0) << "the gates were done before gate 1 was killed";
  gates[1].kill9();
  EXPECT_EQ(gates[1].exit_code, 128 + SIGKILL);
  gates[1].start(gate_args(1), path("out-1"), path("err-1"));
  shell(shell_quote(kScript) + " restart " + shell_quote(cluster_) + " " +
            std::to_string(killed),
        &code);
  EXPECT_EQ(code, 0) << "node " << killed << " did not come back";
  for (GateProcess& g : gates) g.wait();
  for (int g = 0; g < 3; ++g) {
    EXPECT_LE(gates[g].exit_code, 1)
        << "gate " << g << ": "
        << replaygate::testing::read_file(path("err-" + std::to_string(g)));
  }

  // Every letter accounted for.
  ASSERT_EQ(client.connect(urls_[(killed + 1) % 3]), "");
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
    held_rule[m.message_id] = m.headers.count("x-replaygate-rule") != 0
                                  ? m.headers.at("x-replaygate-rule")
                                  : "";
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
