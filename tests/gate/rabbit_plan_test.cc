// `replaygate gate rabbitmq --plan` end to end against a private RabbitMQ node (docs/plans.md,
// "Running a plan on RabbitMQ"): each refusal with its exact message and nothing consumed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "amqp_test_client.h"
#include "rabbit_server.h"
#include "rabbit_suite.h"
#include "support/cli_runner.h"

namespace replaygate::gate::testing {
namespace {

const std::string kRule = "known_failures:payment.capture/timeout";
const std::string kSource = "rabbitmq:/%2F/dlq";

// A dump letter the shipped policy replays by kRule.
std::string dump_letter(int n) {
  return "{\"message_id\":\"m-" + std::to_string(n) +
         "\",\"topic\":\"payment.capture\",\"error_class\":\"timeout\",\"attempts\":1,"
         "\"idempotency_key\":\"cap_" +
         std::to_string(n) + "\",\"already_committed\":false}\n";
}

class RabbitPlan : public RabbitSuite {
 protected:
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

  // plan build --amqp of dlq (the freeze): every letter in dlq into dlq.plan.ID. Returns ID.
  std::string build_amqp(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "plan",    "build",        "--amqp",    server_->url(), "--queue",  "dlq",
        "--table", table_,         "--mapping", mapping_,       "--author", "alice",
        "--plan",  path("p.json"), "--ledger",  path("l.db"),   "--audit",  path("audit.log")};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string id = json::parse(read_file(path("p.json"))).at("header").at("plan_id");
    plan_queues_.push_back("dlq.plan." + id);
    return id;
  }
  // How many messages of each message id `queue` holds (and takes them out).
  std::map<std::string, int> ids_in(const std::string& queue) {
    std::map<std::string, int> ids;
    for (const Message& m : client_.get_all(queue)) ++ids[m.message_id];
    return ids;
  }
  static std::vector<json> lines(const CliResult& r) {
    std::vector<json> out;
    for (const std::string& line : lines_of(r.out)) out.push_back(json::parse(line));
    return out;
  }
  void expect_logs_check() const {
    CliResult r = cli({"audit", "verify", path("audit.log")});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    r = cli({"ledger", "check", "--ledger", path("l.db"), "--audit", path("audit.log")});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  std::string status() const {
    const CliResult r = cli({"plan", "status", path("p.json"), "--ledger", path("l.db")});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
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
  // Waits up to a minute for `flag` (a gate paused at a test point writes it).
  static void wait_for_file(const std::string& flag) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(flag) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // The message expected on stderr for a refusal.
  static std::string refused(const std::string& why) {
    return "replaygate gate rabbitmq: refused: " + why + "; nothing acted on\n";
  }

  AmqpTestClient client_;
  std::unique_ptr<ScratchDir> dir_;
  std::string mapping_, table_;
  std::vector<std::string> plan_queues_;
};

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

// Particular/ServiceControl#660 on RabbitMQ: two letters reviewed and frozen, two more join the
// dead-letter queue, the plan runs: exactly the two replayed, the other two untouched.
TEST_F(RabbitPlan, Reproduces660OnRabbitMQ) {
  dead_letter("cap_1", "m-1");
  dead_letter("cap_2", "m-2");
  ASSERT_EQ(client_.wait_for_count("dlq", 2), "");
  const std::string id = build_amqp();
  const std::string q = "dlq.plan." + id;
  EXPECT_EQ(client_.wait_for_count(q, 2), "");
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
  dead_letter("cap_3", "m-3");
  dead_letter("cap_4", "m-4");
  ASSERT_EQ(client_.wait_for_count("dlq", 2), "");
  ASSERT_EQ(approve("bob").exit_code, 0);
  const CliResult r = gate_plan();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<json> out = lines(r);
  ASSERT_EQ(out.size(), 2u) << r.out;
  for (const json& l : out) {
    EXPECT_EQ(l.at("plan"), "act") << l;
    EXPECT_EQ(l.at("action"), "republish") << l;
  }
  EXPECT_NE(r.err.find("plan " + id + " ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": done 2, held 0"), std::string::npos) << r.err;
  EXPECT_EQ(ids_in("payment.capture"), (std::map<std::string, int>{{"m-1", 1}, {"m-2", 1}}));
  EXPECT_EQ(ids_in("dlq"), (std::map<std::string, int>{{"m-3", 1}, {"m-4", 1}}));
  EXPECT_EQ(client_.message_count(q), 0);
  EXPECT_NE(status().find("done 2  pending 0  held 0  changed 0"), std::string::npos) << status();
  expect_logs_check();
  // A rerun finds nothing left to do.
  const CliResult again = gate_plan();
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "");
}

// A plan built with --cap 2 over five letters acts on two, says the cap is reached, and leaves
// the other three in the plan queue, untouched, also on a rerun.
TEST_F(RabbitPlan, ThePlansCapActsOnThatManyAndLeavesTheRestInThePlanQueue) {
  for (int i = 1; i <= 5; ++i) dead_letter("cap_" + std::to_string(i), "m-" + std::to_string(i));
  ASSERT_EQ(client_.wait_for_count("dlq", 5), "");
  const std::string id = build_amqp({"--cap", "2"});
  const std::string q = "dlq.plan." + id;
  ASSERT_EQ(client_.wait_for_count(q, 5), "");
  ASSERT_EQ(approve("bob").exit_code, 0);
  const CliResult r = gate_plan();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  int acted = 0;
  for (const json& l : lines(r)) {
    if (l.at("plan") == "act") {
      EXPECT_EQ(l.at("action"), "republish") << l;
      ++acted;
    } else {
      EXPECT_EQ(l.at("plan"), "skipped") << l;
    }
  }
  EXPECT_EQ(acted, 2) << r.out;
  EXPECT_NE(r.err.find("the plan's cap is reached; the letters left are in " + q),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(": done 2, held 0"), std::string::npos) << r.err;
  const std::map<std::string, int> replayed = ids_in("payment.capture");
  EXPECT_EQ(replayed.size(), 2u);
  for (const auto& [id_, n] : replayed) EXPECT_EQ(n, 1) << id_;
  EXPECT_EQ(client_.wait_for_count(q, 3), "");
  EXPECT_EQ(client_.message_count("dlq"), 0);
  // A rerun: the cap counts what earlier runs did, so nothing more is replayed.
  const CliResult again = gate_plan();
  EXPECT_EQ(again.exit_code, 0) << again.err;
  for (const json& l : lines(again)) EXPECT_NE(l.at("plan"), "act") << l;
  EXPECT_TRUE(ids_in("payment.capture").empty());
  EXPECT_EQ(client_.wait_for_count(q, 3), "");
  EXPECT_NE(status().find("done 2  pending 3"), std::string::npos) << status();
  expect_logs_check();
}

// Planned letters taken out of the plan queue by hand: the run drains the queue, acts on what is
// there, and says the rest were not there (exit 1), never "done".
TEST_F(RabbitPlan, PlannedLettersMissingFromThePlanQueueAreAFinding) {
  for (int i = 1; i <= 3; ++i) dead_letter("cap_" + std::to_string(i), "m-" + std::to_string(i));
  ASSERT_EQ(client_.wait_for_count("dlq", 3), "");
  const std::string q = "dlq.plan." + build_amqp();
  ASSERT_EQ(client_.wait_for_count(q, 3), "");
  ASSERT_EQ(approve("bob").exit_code, 0);
  EXPECT_EQ(ids_in(q).size(), 3u);  // taken out by hand
  const CliResult r = gate_plan();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("3 planned cop(ies) neither done nor held were not in " + q +
                       " (moved away by hand, or returned by a cancel); `plan status` lists them "
                       "as pending"),
            std::string::npos)
      << r.err;
  EXPECT_NE(status().find("done 0  pending 3"), std::string::npos) << status();
}

// The guard's holds: a copy beyond the planned count (plan:duplicate), a planned message id with
// another body (plan:changed), a verb this gate maps otherwise than the plan (--action:
// plan:decision_mismatch), and a letter not in the plan, left in the plan queue.
TEST_F(RabbitPlan, TheGuardHoldsWhatIsNotAsPlannedAndLeavesWhatIsNotPlanned) {
  dead_letter("cap_1", "m-1");
  dead_letter("cap_2", "m-2", "com.acme.payments.gateway.InsufficientFundsException");
  ASSERT_EQ(client_.wait_for_count("dlq", 2), "");
  const std::string id = build_amqp();
  const std::string q = "dlq.plan." + id;
  ASSERT_EQ(client_.wait_for_count(q, 2), "");
  const Fields headers = {{"x-first-death-queue", std::string("payment.capture")},
                          {"x-exception-class", std::string("java.net.SocketTimeoutException")}};
  const std::string body =
      "{\"idempotency_key\":\"cap_1\",\"committed\":false,\"amount_cents\":901}";
  ASSERT_EQ(client_.publish("", q, body, headers, "m-1"), "");  // the same letter again
  ASSERT_EQ(client_.publish(
                "", q, "{\"idempotency_key\":\"cap_1\",\"committed\":false,\"amount_cents\":5}",
                headers, "m-1"),
            "");
  ASSERT_EQ(client_.publish("", q, "not a letter", headers, "m-2"), "");  // unreadable now
  ASSERT_EQ(client_.publish("", q, body, headers, "m-9"), "");
  ASSERT_EQ(approve("bob").exit_code, 0);
  const CliResult r = gate_plan("p.json", {"--action", "never=hold", "--block-linger", "1000"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> got;
  for (const json& l : lines(r)) {
    got.push_back(l.at("message_id").get<std::string>() + " " + l.at("plan").get<std::string>() +
                  " " + l.at("rule").get<std::string>() + " " + l.at("action").get<std::string>());
  }
  EXPECT_EQ(got, (std::vector<std::string>{
                     "m-1 act known_failures:payment.capture/timeout republish",
                     "m-2 held plan:decision_mismatch hold", "m-1 held plan:duplicate hold",
                     "m-1 held plan:changed hold", "m-2 held plan:changed hold",
                     "m-9 skipped plan:not_in_plan leave"}))
      << r.out;
  EXPECT_NE(r.err.find(": done 1, held 4 (decision mismatch 1, changed 2, duplicate 1)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ids_in("payment.capture"), (std::map<std::string, int>{{"m-1", 1}}));
  std::map<std::string, int> rules;
  for (const Message& m : client_.get_all("dlq.hold")) ++rules[m.headers.at("x-replaygate-rule")];
  EXPECT_EQ(rules, (std::map<std::string, int>{
                       {"plan:changed", 2}, {"plan:decision_mismatch", 1}, {"plan:duplicate", 1}}));
  EXPECT_EQ(ids_in(q), (std::map<std::string, int>{{"m-9", 1}})) << "not in the plan: untouched";
  EXPECT_NE(status().find("done 1  pending 0  held 2  changed 2"), std::string::npos) << status();
  expect_logs_check();
}

// kill -9 inside a plan's block (three replays, a park, a hold), then a rerun: no replay twice,
// nothing lost, and what the rerun does is what the kill left.
TEST_F(RabbitPlan, KillNineDuringAPlanLosesNothingAndReplaysOnce) {
  for (const std::string step :
       {"claimed", "decisions_recorded", "confirmed", "marked", "recorded"}) {
    SCOPED_TRACE(step);
    SetUp();
    for (int i = 0; i < 3; ++i) dead_letter("k" + std::to_string(i), "r" + std::to_string(i));
    dead_letter("kp", "park", "com.acme.payments.gateway.InsufficientFundsException");
    dead_letter("kh", "hold", "org.springframework.web.client.HttpClientErrorException$BadRequest");
    ASSERT_EQ(client_.wait_for_count("dlq", 5), "");
    const std::string q = "dlq.plan." + build_amqp();
    ASSERT_EQ(client_.wait_for_count(q, 5), "");
    ASSERT_EQ(approve("bob").exit_code, 0);
    const std::vector<std::string> block = {"--block-linger", "1000"};
    const CliResult crashed = gate_plan("p.json", block, "REPLAYGATE_TEST_CRASH_AT=" + step);
    EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
    const CliResult again = gate_plan("p.json", block);
    EXPECT_LE(again.exit_code, 1) << again.err;
    EXPECT_EQ(client_.wait_for_count(q, 0), "");
    EXPECT_EQ(client_.message_count("dlq"), 0);
    std::map<std::string, int> work = ids_in("payment.capture"), held = ids_in("dlq.hold"),
                               parked = ids_in("dlq.parked");
    int replayed = 0, held_replays = 0;
    for (int i = 0; i < 3; ++i) {
      const std::string m = "r" + std::to_string(i);
      EXPECT_LE(work[m], 1) << m << " replayed twice";
      EXPECT_GE(work[m] + held[m], 1) << m << " lost";
      replayed += work[m];
      held_replays += held[m];
    }
    EXPECT_GE(parked["park"] + held["park"], 1) << "the park letter lost";
    EXPECT_GE(held["hold"], 1) << "the hold letter lost";
    if (step == "claimed" || step == "decisions_recorded") {
      EXPECT_EQ(replayed, 0);
      EXPECT_EQ(held_replays, 3) << "claimed, never published: held as outcome unknown";
    } else if (step == "confirmed") {
      EXPECT_EQ(replayed, 3);
      EXPECT_EQ(held_replays, 3) << "confirmed but not marked: held for an operator";
    } else {
      EXPECT_EQ(replayed, 3);
      EXPECT_EQ(held_replays, 0);
      size_t acked = 0;
      for (const json& l : lines(again)) acked += l.at("action") == "ack" ? 1 : 0;
      EXPECT_EQ(acked, 3u) << again.out;
    }
    const std::string s = status();
    EXPECT_NE(s.find("pending 0"), std::string::npos) << s;
    if (step == "marked" || step == "recorded") {
      // Marked and counted in one transaction before the kill: the rerun acks the replays without
      // counting them again, and
      // holds the park and hold letters as copies beyond the plan (never lost).
      EXPECT_NE(s.find("done 5  pending 0  held 2"), std::string::npos) << s;
      EXPECT_EQ(held["park"], 1);
      EXPECT_EQ(held["hold"], 2);
    }
    CliResult r = cli({"audit", "verify", path("audit.log")});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    TearDown();
  }
}

// A reload while a plan runs is refused with a note: the plan was approved for one table.
TEST_F(RabbitPlan, AReloadIsRefusedWhileAPlanRuns) {
  for (int i = 0; i < 8; ++i) dead_letter("cap_w" + std::to_string(i), "w-" + std::to_string(i));
  ASSERT_EQ(client_.wait_for_count("dlq", 8), "");
  const std::string id = build_amqp();
  ASSERT_EQ(approve("bob").exit_code, 0);
  std::thread rewrite([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    std::filesystem::copy_file(table_, table_ + ".new");
    std::filesystem::rename(table_ + ".new", table_);  // a new inode: --watch sees it
  });
  const CliResult r = gate_plan("p.json", {"--watch", "--max-rate", "4", "--block-max", "1"});
  rewrite.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("replaygate gate rabbitmq: reload refused: plan " + id +
                       " runs on the table it was built on (checksum "),
            std::string::npos)
      << r.err;
  EXPECT_EQ(lines(r).size(), 8u);
  EXPECT_EQ(client_.message_count("payment.capture"), 8);
}

// Two gates on one plan: the second is refused by the broker (the plan queue's consumer is
// exclusive) and acts on nothing; the first runs the plan to its cap. A tester's two gates once
// both acted up to the cap: twice the letters the plan allowed.
TEST_F(RabbitPlan, ASecondGateOnARunningPlanIsRefusedAndTheCapHolds) {
  for (int i = 0; i < 6; ++i) dead_letter("cap_x" + std::to_string(i), "x-" + std::to_string(i));
  ASSERT_EQ(client_.wait_for_count("dlq", 6), "");
  const std::string q = "dlq.plan." + build_amqp({"--cap", "3"});
  ASSERT_EQ(approve("bob").exit_code, 0);
  const std::string flag = path("paused");
  CliResult first;
  std::thread run([&] {
    first = gate_plan("p.json", {"--block-max", "1"}, "REPLAYGATE_TEST_PAUSE_AT=claimed:" + flag);
  });
  wait_for_file(flag);
  ASSERT_TRUE(std::filesystem::exists(flag)) << "the first gate never reached its first claim";
  const CliResult second = gate_plan();
  std::filesystem::remove(flag);
  run.join();
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("another gate is consuming " + q +
                            " (a plan runs in one gate at a time, so that its cap and counts "
                            "hold)"),
            std::string::npos)
      << second.err;
  EXPECT_EQ(second.out, "");
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(client_.message_count("payment.capture"), 3);
  EXPECT_EQ(client_.wait_for_count(q, 3), "");
  EXPECT_NE(status().find("done 3  pending 3"), std::string::npos) << status();
  expect_logs_check();
}

// A cancel lands while a run is inside its first block: that block is finished and recorded, the
// run stops before the next one (exit 2), and the rest stays in the plan queue until the cancel
// moves it back.
TEST_F(RabbitPlan, ACancelStopsTheRunWithinOneBlock) {
  for (int i = 0; i < 4; ++i) dead_letter("cap_c" + std::to_string(i), "c-" + std::to_string(i));
  ASSERT_EQ(client_.wait_for_count("dlq", 4), "");
  const std::string q = "dlq.plan." + build_amqp();
  ASSERT_EQ(approve("bob").exit_code, 0);
  const std::string flag = path("paused");
  CliResult r;
  std::thread run([&] {
    r = gate_plan("p.json", {"--block-max", "1"}, "REPLAYGATE_TEST_PAUSE_AT=claimed:" + flag);
  });
  wait_for_file(flag);
  EXPECT_TRUE(std::filesystem::exists(flag)) << "the gate never reached its first claim";
  const CliResult cancelled =
      cli({"plan", "cancel", path("p.json"), "--operator", "carol", "--reason", "wrong group",
           "--ledger", path("l.db"), "--audit", path("audit.log")});
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.err;
  std::filesystem::remove(flag);
  run.join();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the plan was cancelled by carol at "), std::string::npos) << r.err;
  EXPECT_EQ(lines(r).size(), 1u) << r.out;
  EXPECT_EQ(client_.message_count("payment.capture"), 1);
  EXPECT_EQ(client_.wait_for_count(q, 3), "");
  const CliResult back =
      cli({"plan", "cancel", path("p.json"), "--operator", "carol", "--reason", "wrong group",
           "--ledger", path("l.db"), "--audit", path("audit.log"), "--amqp", server_->url()});
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(client_.wait_for_count("dlq", 3), "");
  EXPECT_NE(status().find("done 1  pending 3"), std::string::npos) << status();
  expect_logs_check();
}

}  // namespace
}  // namespace replaygate::gate::testing
