// `replaygate gate rabbitmq --plan` end to end against a private RabbitMQ node (docs/plans.md,
// "Running a plan on RabbitMQ"): each refusal with its exact message and nothing consumed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "amqp_test_client.h"
#include "rabbit_server.h"
#include "support/cli_runner.h"

namespace replaygate::gate::testing {
namespace {

using nlohmann::json;
using replaygate::testing::CliResult;
using replaygate::testing::CliRun;
using replaygate::testing::kSourceDir;
using replaygate::testing::lines_of;
using replaygate::testing::read_file;
using replaygate::testing::run_cli;
using replaygate::testing::run_cli_args;
using replaygate::testing::ScratchDir;
using replaygate::testing::write_file;

const std::string kRule = "known_failures:payment.capture/timeout";
const std::string kSource = "rabbitmq:/%2F/dlq";

// A dump letter the shipped policy replays by kRule.
std::string dump_letter(int n) {
  return "{\"message_id\":\"m-" + std::to_string(n) +
         "\",\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":1,"
         "\"idempotency_key\":\"cap_" +
         std::to_string(n) + "\",\"already_committed\":false}\n";
}

class RabbitPlan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new RabbitServer();
    const std::string error = server_->create();
    if (!error.empty()) {
      delete server_;
      server_ = nullptr;
      GTEST_SKIP() << "no RabbitMQ node: " << error;
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "no RabbitMQ node";
    ASSERT_EQ(client_.connect(server_->url()), "");
    for (const char* q : {"dlq", "dlq.parked", "dlq.hold", "payment.capture"}) {
      client_.delete_queue(q);
    }
    ASSERT_EQ(client_.declare_queue("dlq", true), "");
    ASSERT_EQ(client_.declare_queue("payment.capture", true,
                                    {{"x-dead-letter-exchange", std::string("")},
                                     {"x-dead-letter-routing-key", std::string("dlq")}}),
              "");
    dir_ = std::make_unique<ScratchDir>("rg-plan-gate");
    mapping_ = kSourceDir + "/examples/rabbitmq.mapping.yaml";
    table_ = path("gate.rgt");
    CliResult r = cli({"compile", kSourceDir + "/policies/replay_gate.yaml", "-o", table_});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* who : {"alice", "bob"}) {
      r = cli({"key", "generate", "--secret", path(std::string(who) + ".key"), "--public",
               path(std::string(who) + ".pub")});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    write_file(path("users.json"), R"({"format_version":1,"users":[)"
                                   R"({"name":"alice","role":"approver","public_key":"alice.pub"},)"
                                   R"({"name":"bob","role":"approver","public_key":"bob.pub"},)"
                                   R"({"name":"carol","role":"operator"}]})");
  }
  void TearDown() override {
    for (const std::string& q : plan_queues_) client_.delete_queue(q);
    plan_queues_.clear();
  }

  std::string path(const std::string& name) const { return (dir_->path() / name).string(); }
  CliResult cli(std::vector<std::string> args) const {
    return run_cli_args(dir_->path(), std::move(args));
  }

  // Publishes a letter to payment.capture and has the broker dead-letter it into dlq.
  void dead_letter(const std::string& key, const std::string& message_id,
                   const std::string& error_class = "java.net.SocketTimeoutException") {
    const std::string body =
        "{\"idempotency_key\":\"" + key + "\",\"committed\":false,\"amount_cents\":901}";
    ASSERT_EQ(client_.publish("", "payment.capture", body, {{"x-exception-class", error_class}},
                              message_id),
              "");
    ASSERT_EQ(client_.dead_letter("payment.capture", 1), "");
  }

  // A plan of a dump's letters under `source` (no letters of a queue: for the refusals), recorded
  // in the ledger. Returns the plan's id.
  std::string dump_plan(const std::string& source, std::vector<std::string> extra = {}) {
    write_file(path("dump.jsonl"), dump_letter(1) + dump_letter(2));
    std::vector<std::string> args = {"plan",    "build",          path("dump.jsonl"),
                                     "--table", table_,           "--rule",
                                     kRule,     "--author",       "alice",
                                     "--plan",  path("p.json"),   "--source",
                                     source,    "--ledger",       path("l.db"),
                                     "--audit", path("audit.log")};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(read_file(path("p.json"))).at("header").at("plan_id");
  }
  CliResult approve(const std::string& who) const {
    return cli({"plan", "approve", path("p.json"), "--operator", who, "--sign-key",
                path(who + ".key"), "--reason", "reviewed", "--users", path("users.json"),
                "--ledger", path("l.db"), "--audit", path("audit.log")});
  }
  // Two letters by hand in the plan queue of `plan_id`, for "nothing consumed".
  std::string fill_plan_queue(const std::string& plan_id) {
    const std::string q = "dlq.plan." + plan_id;
    plan_queues_.push_back(q);
    EXPECT_EQ(client_.declare_queue(q, true, {{"x-queue-type", std::string("classic")}}), "");
    for (int i = 1; i <= 2; ++i) {
      EXPECT_EQ(
          client_.publish("", q, "{\"idempotency_key\":\"cap_" + std::to_string(i) + "\"}",
                          {{"x-exception-class", std::string("x")}}, "m-" + std::to_string(i)),
          "");
    }
    return q;
  }

  std::vector<std::string> gate_args(std::vector<std::string> more = {}) const {
    std::vector<std::string> args = {"gate",        "rabbitmq",
                                     "--table",     table_,
                                     "--mapping",   mapping_,
                                     "--amqp",      server_->url(),
                                     "--queue",     "dlq",
                                     "--idle-exit", "400",
                                     "--quiet",     "--apply",
                                     "--ledger",    path("l.db"),
                                     "--audit",     path("audit.log"),
                                     "--operator",  "carol",
                                     "--users",     path("users.json")};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  CliResult gate(std::vector<std::string> more, std::string env = "") const {
    CliRun run;
    run.args = gate_args(std::move(more));
    run.timeout_seconds = 180;
    if (!env.empty()) run.env = {env};
    return run_cli(dir_->path(), run);
  }
  CliResult gate_plan(const std::string& plan = "p.json", std::vector<std::string> more = {},
                      std::string env = "") const {
    more.insert(more.begin(), {"--plan", path(plan)});
    return gate(std::move(more), std::move(env));
  }
  // The message expected on stderr for a refusal.
  static std::string refused(const std::string& why) {
    return "replaygate gate rabbitmq: refused: " + why + "; nothing acted on\n";
  }

  static RabbitServer* server_;
  AmqpTestClient client_;
  std::unique_ptr<ScratchDir> dir_;
  std::string mapping_, table_;
  std::vector<std::string> plan_queues_;
};

RabbitServer* RabbitPlan::server_ = nullptr;

TEST_F(RabbitPlan, UsageErrors) {
  dump_plan(kSource);
  CliRun run;
  run.args = {"gate",    "rabbitmq",        "--table", table_, "--mapping", mapping_,
              "--amqp",  server_->url(),    "--queue", "dlq",  "--plan",    path("p.json"),
              "--users", path("users.json")};
  CliResult r = run_cli(dir_->path(), run);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate gate rabbitmq: --plan needs --apply: the plan was reviewed and approved; "
            "'replaygate plan show PLAN' shows what it does\n");
  r = gate_plan("p.json", {"--all"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate gate rabbitmq: --plan selects the letters: --all, --message-id, --topic, "
            "--error-class and --since do not apply\n");
  r = gate({"--all"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate gate rabbitmq: --users only applies with --plan PLAN\n");
  std::vector<std::string> args = gate_args({"--plan", path("p.json")});
  const auto users = std::find(args.begin(), args.end(), "--users");
  args.erase(users, users + 2);
  r = cli(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate gate rabbitmq: --plan needs --users FILE (the approvals are checked)\n");
}

// Unapproved, approved by its author only, edited, for another queue, on another table,
// cancelled: each refused before anything is consumed.
TEST_F(RabbitPlan, EachRefusalHasItsMessageAndConsumesNothing) {
  const std::string id = dump_plan(kSource);
  const std::string q = fill_plan_queue(id);
  CliResult r = gate_plan();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, refused("the plan has 0 of the 1 approval(s) it needs"));
  r = approve("alice");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "replaygate plan: refused: 'alice' is the plan's author and cannot approve it: a "
            "second person must; nothing approved\n");
  r = gate_plan();
  EXPECT_EQ(r.err, refused("the plan has 0 of the 1 approval(s) it needs"));
  ASSERT_EQ(approve("bob").exit_code, 0);

  // Edited after the approval.
  const std::string original = read_file(path("p.json"));
  std::string edited = original;
  edited.replace(edited.find("\"cap_2\""), 7, "\"cap_3\"");
  write_file(path("edited.json"), edited);
  const std::string digest = json::parse(original).at("digest");
  r = gate_plan("edited.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(std::regex_match(
      r.err, std::regex("replaygate gate rabbitmq: refused: " + path("edited.json") +
                        " says its digest is " + digest +
                        " but its content hashes to blake2b:[0-9a-f]{64}: the plan was edited "
                        "after it was built; nothing acted on\n")))
      << r.err;

  // Another table.
  std::string text = read_file(kSourceDir + "/policies/replay_gate.yaml");
  text.replace(text.find("revision: 1"), 11, "revision: 2");
  write_file(path("changed.yaml"), text);
  ASSERT_EQ(cli({"compile", path("changed.yaml"), "-o", path("changed.rgt")}).exit_code, 0);
  std::vector<std::string> args = gate_args({"--plan", path("p.json")});
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--table") args[i + 1] = path("changed.rgt");
  }
  r = cli(args);
  EXPECT_EQ(r.exit_code, 2);
  const std::string built = json::parse(original).at("header").at("table_checksum");
  EXPECT_TRUE(std::regex_match(
      r.err, std::regex("replaygate gate rabbitmq: refused: the table's checksum is [0-9a-f]{32}; "
                        "the plan was built on " +
                        built + ": build and approve a new plan; nothing acted on\n")))
      << r.err;

  // Cancelled.
  r = cli({"plan", "cancel", path("p.json"), "--operator", "carol", "--reason", "wrong group",
           "--ledger", path("l.db"), "--audit", path("audit.log")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = gate_plan();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(std::regex_match(
      r.err, std::regex("replaygate gate rabbitmq: refused: the plan was cancelled by carol at "
                        "[0-9T:.-]+Z: wrong group; nothing acted on\n")))
      << r.err;
  EXPECT_EQ(client_.message_count(q), 2) << "a refused plan consumed a letter";
  EXPECT_EQ(client_.message_count("dlq.hold"), -1) << "nothing declared, nothing moved";
  const CliResult stats = cli({"ledger", "stats", "--ledger", path("l.db")});
  EXPECT_EQ(json::parse(stats.out).at("keys"), 0) << stats.out;
}

TEST_F(RabbitPlan, APlanOfAnotherQueueOrExpiredIsRefused) {
  const std::string id = dump_plan("rabbitmq:/%2F/other.dlq");
  const std::string q = fill_plan_queue(id);
  ASSERT_EQ(approve("bob").exit_code, 0);
  CliResult r = gate_plan();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, refused(path("p.json") +
                           " covers rabbitmq:/%2F/other.dlq, not rabbitmq:/%2F/dlq (--queue dlq "
                           "on vhost /): run a plan built from this queue"));
  const std::string expiring = dump_plan(kSource, {"--expires-in", "1s"});
  const std::string q2 = fill_plan_queue(expiring);
  ASSERT_EQ(approve("bob").exit_code, 0);
  ::sleep(2);
  r = gate_plan();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(std::regex_match(
      r.err, std::regex("replaygate gate rabbitmq: refused: the plan expired at [0-9T:.-]+Z; "
                        "nothing acted on\n")))
      << r.err;
  EXPECT_EQ(client_.message_count(q), 2);
  EXPECT_EQ(client_.message_count(q2), 2);
}

}  // namespace
}  // namespace replaygate::gate::testing
