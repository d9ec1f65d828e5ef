// `plan build --amqp` and `plan cancel --amqp` against a private RabbitMQ node (one per suite):
// the freeze moves exactly the selected letters into the plan's queue, unchanged but for
// x-replaygate-plan; a quorum queue is refused without --allow-peek; a cancel moves them back;
// kill -9 between a move's confirm and its ack, and between two blocks, then a rerun: no letter
// lost, the killed build recovered (docs/plans.md, "Building a plan on RabbitMQ").
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "amqp_test_client.h"
#include "rabbit_server.h"
#include "rabbit_suite.h"
#include "support/cli_runner.h"

namespace replaygate::gate::testing {
namespace {

const std::string kTimeout = "java.net.SocketTimeoutException";
const std::string kDeclined = "com.acme.payments.gateway.InsufficientFundsException";
const std::string kRule = "known_failures:payment.capture/timeout";

class PlanFreeze : public RabbitSuite {
 protected:
  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "no RabbitMQ node";
    ASSERT_EQ(client_.connect(server_->url()), "");
    for (const char* q : {"dlq", "payment.capture", "qdlq"}) client_.delete_queue(q);
    ASSERT_EQ(client_.declare_queue("dlq", true), "");
    ASSERT_EQ(client_.declare_queue("payment.capture", true,
                                    {{"x-dead-letter-exchange", std::string("")},
                                     {"x-dead-letter-routing-key", std::string("dlq")}}),
              "");
    dir_ = std::make_unique<ScratchDir>("rg-freeze");
    table_ = path("gate.rgt");
    CliResult r = run({"compile", kSourceDir + "/policies/replay_gate.yaml", "-o", table_});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* who : {"alice", "bob"}) {
      r = run({"key", "generate", "--secret", path(std::string(who) + ".key"), "--public",
               path(std::string(who) + ".pub")});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    write_file(path("users.json"), R"({"format_version":1,"users":[)"
                                   R"({"name":"alice","role":"approver","public_key":"alice.pub"},)"
                                   R"({"name":"bob","role":"approver","public_key":"bob.pub"}]})");
  }
  void TearDown() override {
    // Every plan queue a test made (their names carry a random plan id).
    for (const std::string& q : plan_queues_) client_.delete_queue(q);
  }

  std::string path(const std::string& name) const { return (dir_->path() / name).string(); }
  CliResult run(const std::vector<std::string>& args, std::vector<std::string> env = {}) const {
    CliRun r;
    r.args = args;
    r.env = std::move(env);
    r.timeout_seconds = 120;
    return run_cli(dir_->path(), r);
  }

  static std::string body_of(const std::string& key) {
    return "{\"idempotency_key\":\"" + key + "\",\"committed\":false,\"amount_cents\":901}";
  }
  // Publishes a letter to payment.capture and has the broker dead-letter it into dlq.
  void dead_letter(const std::string& error_class, const std::string& key,
                   const std::string& message_id) {
    ASSERT_EQ(client_.publish("", "payment.capture", body_of(key),
                              {{"x-exception-class", error_class}}, message_id),
              "");
    ASSERT_EQ(client_.dead_letter("payment.capture", 1), "");
  }
  // The shipped letters: `timeouts` capture timeouts (t-0..; planned by --rule kRule),
  // `declined` declined cards (d-0..; not planned), and one letter whose message id is not UTF-8
  // (unreadable: never planned).
  void letters(int timeouts, int declined) {
    for (int i = 0; i < timeouts; ++i) {
      dead_letter(kTimeout, "cap_" + std::to_string(i), "t-" + std::to_string(i));
    }
    for (int i = 0; i < declined; ++i) {
      dead_letter(kDeclined, "dec_" + std::to_string(i), "d-" + std::to_string(i));
    }
    ASSERT_EQ(client_.publish("", "dlq", body_of("bad"), {}, "\xff\xfe-bad"), "");
    ASSERT_EQ(client_.wait_for_count("dlq", timeouts + declined + 1), "");
  }

  std::vector<std::string> build_args(const std::string& plan, std::vector<std::string> more = {},
                                      const std::string& queue = "dlq") const {
    std::vector<std::string> args = {"plan",      "build",
                                     "--amqp",    server_->url(),
                                     "--queue",   queue,
                                     "--table",   table_,
                                     "--mapping", kSourceDir + "/examples/rabbitmq.mapping.yaml",
                                     "--author",  "alice",
                                     "--rule",    kRule,
                                     "--plan",    path(plan),
                                     "--audit",   path("audit.log"),
                                     "--ledger",  path("l.db")};
    for (std::string& m : more) args.push_back(std::move(m));
    return args;
  }
  json plan_file(const std::string& plan) const {
    return json::parse(read_file(path(plan)), nullptr, false);
  }
  std::string plan_queue(const std::string& plan) {
    const std::string q =
        "dlq.plan." + plan_file(plan).at("header").at("plan_id").get<std::string>();
    plan_queues_.push_back(q);
    return q;
  }
  // The plan_id of an unfinished build's PLAN.tmp (its first line).
  std::string unfinished_plan_queue(const std::string& plan) {
    std::string line = read_file(path(plan + ".tmp"));
    line = line.substr(0, line.find('\n'));
    line.back() = '}';
    const std::string q =
        "dlq.plan." + json::parse(line).at("header").at("plan_id").get<std::string>();
    plan_queues_.push_back(q);
    return q;
  }
  // How many messages of each message id `queue` holds (and takes them out).
  std::map<std::string, int> ids_in(const std::string& queue) {
    std::map<std::string, int> ids;
    for (const Message& m : client_.get_all(queue)) ++ids[m.message_id];
    return ids;
  }
  std::vector<json> audit_entries(const std::string& act) const {
    std::vector<json> out;
    for (const std::string& line : lines_of(read_file(path("audit.log")))) {
      const json j = json::parse(line);
      if (j.value("act", "") == act) out.push_back(j);
    }
    return out;
  }

  AmqpTestClient client_;
  std::unique_ptr<ScratchDir> dir_;
  std::string table_;
  std::vector<std::string> plan_queues_;
};

TEST_F(PlanFreeze, BuildMovesExactlyTheSelectedLettersAndThePlanVerifies) {
  letters(6, 3);
  // A second copy of t-0: the same identity, listed once with a count of 2.
  dead_letter(kTimeout, "cap_0", "t-0");
  ASSERT_EQ(client_.wait_for_count("dlq", 11), "");
  CliResult r = run(build_args("p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json plan = plan_file("p.json");
  ASSERT_FALSE(plan.is_discarded());
  EXPECT_EQ(r.out, plan.at("digest").get<std::string>() + "\n");
  const json& h = plan.at("header");
  EXPECT_EQ(h.at("source"), "rabbitmq:/%2F/dlq");
  EXPECT_EQ(h.at("input_format"), "rabbitmq");
  EXPECT_EQ(plan.at("summary").at("letters"), 6);
  EXPECT_EQ(plan.at("summary").at("copies"), 7);
  std::map<std::string, int64_t> counts;
  for (const json& l : plan.at("letters")) {
    EXPECT_EQ(l.at("source"), "rabbitmq:/%2F/dlq");
    EXPECT_EQ(l.at("decision").at("rule"), kRule);
    EXPECT_EQ(l.at("body_digest").get<std::string>().rfind("sha256:", 0), 0u);
    counts[l.at("message_id").get<std::string>()] = l.at("count").get<int64_t>();
  }
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{
                        {"t-0", 2}, {"t-1", 1}, {"t-2", 1}, {"t-3", 1}, {"t-4", 1}, {"t-5", 1}}));
  const std::string pq = plan_queue("p.json");
  EXPECT_NE(r.err.find("moved 7 of 11 letter(s) seen into " + pq +
                       "; left 4 in dlq (1 unreadable, "
                       "never planned)"),
            std::string::npos)
      << r.err;
  // The letters moved: unchanged (body, message id, x-death, the consumer's headers) plus the
  // plan's id; the others are still in the dead-letter queue.
  const std::vector<Message> moved = client_.get_all(pq);
  ASSERT_EQ(moved.size(), 7u);
  for (const Message& m : moved) {
    ASSERT_EQ(m.message_id.rfind("t-", 0), 0u) << m.message_id;
    EXPECT_EQ(m.body, body_of("cap_" + m.message_id.substr(2)));
    EXPECT_EQ(m.headers.at("x-exception-class"), kTimeout);
    EXPECT_EQ(m.headers.at("x-first-death-queue"), "payment.capture");
    EXPECT_EQ(m.x_death_queues, std::vector<std::string>{"payment.capture"});
    EXPECT_EQ(m.headers.at("x-replaygate-plan"), h.at("plan_id").get<std::string>());
    EXPECT_FALSE(m.redelivered);
  }
  // Put them back for the checks below (the test client's publish cannot copy x-death).
  std::map<std::string, int> left = ids_in("dlq");
  EXPECT_EQ(left,
            (std::map<std::string, int>{{"d-0", 1}, {"d-1", 1}, {"d-2", 1}, {"\xff\xfe-bad", 1}}));
  // The moves are audited, and the log verifies.
  const std::vector<json> frozen = audit_entries("plan_frozen");
  ASSERT_EQ(frozen.size(), 1u);
  EXPECT_EQ(frozen[0].at("count"), 7);
  EXPECT_EQ(frozen[0].at("from"), "dlq");
  EXPECT_EQ(frozen[0].at("to"), pq);
  EXPECT_EQ(frozen[0].at("plan_id"), h.at("plan_id"));
  EXPECT_EQ(frozen[0].at("identities").size(), 7u);
  r = run({"audit", "verify", path("audit.log")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // show, approve, verify.
  r = run({"plan", "show", path("p.json")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("source rabbitmq:/%2F/dlq  author alice"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("letters 6 (copies 7)"), std::string::npos) << r.out;
  r = run({"plan", "approve", path("p.json"), "--operator", "bob", "--sign-key", path("bob.key"),
           "--reason", "captures", "--users", path("users.json"), "--ledger", path("l.db"),
           "--audit", path("audit.log")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run(
      {"plan", "verify", path("p.json"), "--users", path("users.json"), "--ledger", path("l.db")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out, path("p.json") + ": valid (1 of 1 approval(s): bob)\n");
  // A RabbitMQ plan is not run over a dump: its letters are in the plan queue.
  r = run({"decide", "--table", table_, kSourceDir + "/examples/letters.jsonl", "--plan",
           path("p.json"), "--users", path("users.json"), "--ledger", path("l.db"), "--audit",
           path("audit.log"), "--operator", "carol"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate decide: refused: the plan's letters are frozen in RabbitMQ (source "
            "rabbitmq:/%2F/dlq), not in a dump: run it with `gate rabbitmq --plan`; nothing acted "
            "on\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(PlanFreeze, FiltersSelectByMessageIdAndNothingElseMoves) {
  letters(4, 2);
  const CliResult r = run(build_args("p.json", {"--message-id", "t-1", "--message-id", "t-3",
                                                "--message-id", "d-0", "--block-max", "1"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // d-0 is not decided by the rule: --rule and --message-id both select.
  const std::string pq = plan_queue("p.json");
  EXPECT_EQ(ids_in(pq), (std::map<std::string, int>{{"t-1", 1}, {"t-3", 1}}));
  EXPECT_EQ(client_.message_count("dlq"), 5);
  EXPECT_EQ(audit_entries("plan_frozen").size(), 2u);  // blocks of one
  EXPECT_EQ(plan_file("p.json").at("header").at("filters").at("message_id"),
            json::array({"t-1", "t-3", "d-0"}));
}

TEST_F(PlanFreeze, AQuorumQueueIsRefusedWithoutAllowPeek) {
  ASSERT_EQ(client_.declare_queue("qdlq", true, {{"x-queue-type", std::string("quorum")}}), "");
  ASSERT_EQ(client_.publish("", "qdlq", body_of("q"), {{"x-exception-class", kTimeout}}, "q-1"),
            "");
  ASSERT_EQ(client_.wait_for_count("qdlq", 1), "");
  CliResult r = run(build_args("q.json", {}, "qdlq"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "replaygate plan: error: refusing to build: qdlq is a quorum queue (its deliveries "
            "carry x-delivery-count), where every letter looked at and left uses up a delivery "
            "attempt and one at its delivery limit can be dropped; give --allow-peek to accept "
            "that; nothing planned, nothing moved\n");
  EXPECT_FALSE(std::filesystem::exists(path("q.json")));
  EXPECT_FALSE(std::filesystem::exists(path("q.json.tmp")));
  EXPECT_EQ(client_.wait_for_count("qdlq", 1), "") << "a refused build keeps the letter";
  EXPECT_TRUE(audit_entries("plan_frozen").empty());
  // Allowed: the letter (no x-first-death-queue: no topic, so not the rule's) stays.
  r = run(build_args("q.json", {"--allow-peek"}, "qdlq"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(plan_file("q.json").at("summary").at("letters"), 0);
  EXPECT_EQ(client_.wait_for_count("qdlq", 1), "");
  client_.delete_queue("qdlq.plan." +
                       plan_file("q.json").at("header").at("plan_id").get<std::string>());
  client_.delete_queue("qdlq");
}

TEST_F(PlanFreeze, UsageErrorsMoveNothing) {
  letters(1, 0);
  std::vector<std::string> args = build_args("p.json");
  // No --audit: every move is audited.
  std::vector<std::string> no_audit;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--audit" || args[i] == "--ledger") {
      ++i;
      continue;
    }
    no_audit.push_back(args[i]);
  }
  CliResult r = run(no_audit);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate plan: error: --audit LOG is required with --amqp (every move into the "
            "plan's queue is audited)\n");
  // An audit log that cannot take entries (a folder that does not exist, a log that does not
  // verify): refused before the first move, so no letter is copied into the plan queue and back
  // (a tester's mistyped path once tripled every letter).
  for (const std::string& log : {path("no/such/dir/audit.log"), path("bad.log")}) {
    write_file(path("bad.log"), "not an audit log\n");
    std::vector<std::string> bad = args;
    for (size_t i = 0; i + 1 < bad.size(); ++i) {
      if (bad[i] == "--audit") bad[i + 1] = log;
    }
    r = run(bad);
    EXPECT_EQ(r.exit_code, 2) << log;
    EXPECT_EQ(r.err.rfind("replaygate plan: error: --audit: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("; nothing moved\n"), std::string::npos) << r.err;
    EXPECT_EQ(client_.message_count("dlq"), 2);
    EXPECT_FALSE(std::filesystem::exists(path("p.json.tmp")));
  }
  // A broker that refuses the login: nothing moved, nothing left for a rerun to recover.
  {
    std::vector<std::string> wrong = args;
    for (size_t i = 0; i + 1 < wrong.size(); ++i) {
      if (wrong[i] != "--amqp") continue;
      const size_t at = wrong[i + 1].find("guest:guest@");
      ASSERT_NE(at, std::string::npos) << wrong[i + 1];
      wrong[i + 1].replace(at, 12, "guest:wrong@");
    }
    r = run(wrong);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("; nothing moved, no plan written\n"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("failed too"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(path("p.json.tmp")));
    EXPECT_EQ(client_.message_count("dlq"), 2);
  }
  // A queue name whose plan queue would not fit AMQP's 255 bytes: refused up front.
  r = run(build_args("long.json", {}, std::string(240, 'q')));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("more than the 255 AMQP allows; nothing moved"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("long.json.tmp")));
  // An existing plan file is never overwritten.
  write_file(path("p.json"), "{}");
  r = run(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("exists: a RabbitMQ build never overwrites a plan"), std::string::npos)
      << r.err;
  EXPECT_EQ(client_.message_count("dlq"), 2);
  // A dead-letter queue that does not exist: nothing written.
  r = run(build_args("none.json", {}, "no.such.dlq"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("replaygate plan: error: no.such.dlq: the queue does not exist or cannot "
                       "be read: queue 'no.such.dlq': "),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("none.json")));
  EXPECT_FALSE(std::filesystem::exists(path("none.json.tmp")));
  // cancel --amqp of a dump's plan: refused before anything is cancelled.
  r = run({"plan", "build", kSourceDir + "/examples/letters.jsonl", "--table", table_, "--author",
           "alice", "--plan", path("dump.json"), "--ledger", path("l.db"), "--audit",
           path("audit.log")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run({"plan", "cancel", path("dump.json"), "--operator", "bob", "--reason", "no", "--ledger",
           path("l.db"), "--audit", path("audit.log"), "--amqp", server_->url()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate plan: error: --amqp: the plan's letters are not from RabbitMQ (its source "
            "is dump); nothing done\n");
  EXPECT_TRUE(audit_entries("plan_cancelled").empty());
}

TEST_F(PlanFreeze, CancelMovesWhatIsLeftBackAndDeletesThePlanQueue) {
  letters(5, 1);
  CliResult r = run(build_args("p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string pq = plan_queue("p.json");
  ASSERT_EQ(client_.message_count(pq), 5);
  ASSERT_EQ(client_.message_count("dlq"), 2);
  r = run({"plan", "cancel", path("p.json"), "--operator", "bob", "--reason", "wrong set",
           "--ledger", path("l.db"), "--audit", path("audit.log"), "--amqp", server_->url()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("moved 5 letter(s) from " + pq + " back to dlq; " + pq + " is deleted"),
            std::string::npos)
      << r.err;
  std::string error;
  EXPECT_EQ(client_.message_count(pq, &error), -1) << "the plan queue is deleted";
  const std::vector<json> returned = audit_entries("plan_returned");
  ASSERT_EQ(returned.size(), 1u);
  EXPECT_EQ(returned[0].at("count"), 5);
  EXPECT_EQ(returned[0].at("digest"), plan_file("p.json").at("digest"));
  r = run({"audit", "verify", path("audit.log")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The ledger and the log agree (the moves' entries are not the ledger's).
  r = run({"ledger", "check", "--ledger", path("l.db"), "--audit", path("audit.log")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // Back as they were: no x-replaygate-plan, the headers and bodies intact.
  const std::vector<Message> back = client_.get_all("dlq");
  ASSERT_EQ(back.size(), 7u);
  std::map<std::string, int> ids;
  for (const Message& m : back) {
    ++ids[m.message_id];
    EXPECT_EQ(m.headers.count("x-replaygate-plan"), 0u) << m.message_id;
    if (m.message_id.rfind("t-", 0) == 0) {
      EXPECT_EQ(m.body, body_of("cap_" + m.message_id.substr(2)));
      EXPECT_EQ(m.x_death_queues, std::vector<std::string>{"payment.capture"});
    }
  }
  EXPECT_EQ(ids.size(), 7u);
  // A second cancel: already cancelled, nothing left to move.
  r = run({"plan", "cancel", path("p.json"), "--operator", "bob", "--reason", "again", "--ledger",
           path("l.db"), "--audit", path("audit.log"), "--amqp", server_->url()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("moved 0 letter(s)"), std::string::npos) << r.err;
}

// A plan built without --ledger froze its letters all the same: its cancel records it in the
// ledger, cancels it and moves the letters back (a tester found them stuck: "not recorded").
TEST_F(PlanFreeze, ACancelOfAPlanBuiltWithoutALedgerMovesItsLettersBack) {
  letters(3, 0);
  const int before = client_.message_count("dlq");
  std::vector<std::string> args = build_args("p.json");
  args.resize(args.size() - 2);  // no --ledger
  CliResult r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string pq = plan_queue("p.json");
  ASSERT_EQ(client_.message_count(pq), 3);
  ASSERT_EQ(client_.message_count("dlq"), before - 3);
  // The ledger exists (a gate's, here made by a dump's plan), but does not know this plan.
  r = run({"plan", "build", kSourceDir + "/examples/letters.jsonl", "--table", table_, "--author",
           "alice", "--plan", path("dump.json"), "--ledger", path("l.db"), "--audit",
           path("audit.log")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run({"plan", "cancel", path("p.json"), "--operator", "bob", "--reason", "not needed",
           "--ledger", path("l.db"), "--audit", path("audit.log"), "--amqp", server_->url()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("moved 3 letter(s) from " + pq + " back to dlq"), std::string::npos)
      << r.err;
  EXPECT_EQ(client_.wait_for_count("dlq", before), "");
  EXPECT_EQ(audit_entries("plan_recorded").size(), 2u);
  EXPECT_EQ(audit_entries("plan_cancelled").size(), 1u);
  r = run({"ledger", "check", "--ledger", path("l.db"), "--audit", path("audit.log")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// kill -9 while a cancel moves the letters back (after a block's confirms, before its acks): the
// plan is cancelled in the ledger already, and a second cancel finishes the moves; copies, never
// a loss.
TEST_F(PlanFreeze, KillNineDuringACancelThenASecondCancelFinishesIt) {
  letters(3, 0);
  CliResult r = run(build_args("p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string pq = plan_queue("p.json");
  const std::vector<std::string> cancel = {
      "plan",     "cancel",     path("p.json"), "--operator",      "bob",    "--reason",    "stop",
      "--ledger", path("l.db"), "--audit",      path("audit.log"), "--amqp", server_->url()};
  r = run(cancel, {"REPLAYGATE_TEST_CRASH_AT=return_confirmed"});
  ASSERT_EQ(r.exit_code, 128 + 9) << r.err;
  EXPECT_EQ(client_.wait_for_count(pq, 3), "");
  EXPECT_EQ(client_.wait_for_count("dlq", 4), "");  // the 3 copies and the unreadable letter
  r = run(cancel);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("was already cancelled"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("moved 3 letter(s) from " + pq + " back to dlq; " + pq + " is deleted"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ids_in("dlq"),
            (std::map<std::string, int>{{"t-0", 2}, {"t-1", 2}, {"t-2", 2}, {"\xff\xfe-bad", 1}}));
  EXPECT_EQ(audit_entries("plan_cancelled").size(), 1u);
}

// kill -9 after a block's confirms (copies in the plan queue, originals not acked), and after a
// block's acks (between two blocks); then the same build again: it recovers the killed one (its
// plan queue's letters back to dlq, audited) and builds afresh. No letter is lost; a letter
// copied twice by the crash is planned twice (one identity, count 2).
TEST_F(PlanFreeze, KillNineDuringTheFreezeThenARerunLosesNothing) {
  for (const char* step : {"freeze_confirmed", "freeze_acked"}) {
    SCOPED_TRACE(step);
    client_.purge_queue("dlq");
    std::filesystem::remove(path("p.json"));
    letters(6, 2);  // 9 letters, 6 planned, blocks of 2
    CliResult r = run(build_args("p.json", {"--block-max", "2"}),
                      {std::string("REPLAYGATE_TEST_CRASH_AT=") + step});
    ASSERT_EQ(r.exit_code, 128 + 9) << r.err;
    ASSERT_TRUE(std::filesystem::exists(path("p.json.tmp")));
    ASSERT_FALSE(std::filesystem::exists(path("p.json")));
    const std::string killed = unfinished_plan_queue("p.json");
    const bool copied = step == std::string("freeze_confirmed");
    // The kill: the first block's two letters are in the plan queue; their originals too when
    // the kill came before the acks.
    EXPECT_EQ(client_.wait_for_count(killed, 2), "");
    EXPECT_EQ(client_.wait_for_count("dlq", copied ? 9 : 7), "");
    r = run(build_args("p.json", {"--block-max", "2"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("recovered: 2 letter(s) moved back to dlq"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(path("p.json.tmp")));
    std::string error;
    EXPECT_EQ(client_.message_count(killed, &error), -1) << "the killed build's queue is deleted";
    const json plan = plan_file("p.json");
    EXPECT_EQ(plan.at("summary").at("letters"), 6);
    EXPECT_EQ(plan.at("summary").at("copies"), copied ? 8 : 6);
    const std::string pq = plan_queue("p.json");
    std::map<std::string, int> frozen = ids_in(pq);
    std::map<std::string, int> left = ids_in("dlq");
    int total = 0;
    for (const auto& [id, n] : frozen) total += n;
    EXPECT_EQ(total, copied ? 8 : 6);
    for (int i = 0; i < 6; ++i) EXPECT_GE(frozen["t-" + std::to_string(i)], 1);
    EXPECT_EQ(left, (std::map<std::string, int>{{"d-0", 1}, {"d-1", 1}, {"\xff\xfe-bad", 1}}));
    EXPECT_EQ(audit_entries("plan_returned").empty(), false);
    r = run({"audit", "verify", path("audit.log")});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
}

// kill -9 while a rerun moves the killed build's letters back (after a return block's confirms):
// the next rerun finishes the recovery; copies, never a loss.
TEST_F(PlanFreeze, KillNineDuringTheRecoveryThenARerunFinishesIt) {
  letters(4, 1);
  CliResult r =
      run(build_args("p.json", {"--block-max", "2"}), {"REPLAYGATE_TEST_CRASH_AT=freeze_acked"});
  ASSERT_EQ(r.exit_code, 128 + 9) << r.err;
  const std::string killed = unfinished_plan_queue("p.json");
  EXPECT_EQ(client_.wait_for_count(killed, 2), "");
  r = run(build_args("p.json", {"--block-max", "1"}),
          {"REPLAYGATE_TEST_CRASH_AT=return_confirmed"});
  ASSERT_EQ(r.exit_code, 128 + 9) << r.err;
  ASSERT_TRUE(std::filesystem::exists(path("p.json.tmp")));
  // One letter copied back (its original still in the plan queue), the other not moved yet.
  EXPECT_EQ(client_.wait_for_count(killed, 2), "");
  EXPECT_EQ(client_.wait_for_count("dlq", 5), "");
  r = run(build_args("p.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("recovered: 2 letter(s) moved back to dlq"), std::string::npos) << r.err;
  const std::string pq = plan_queue("p.json");
  std::map<std::string, int> frozen = ids_in(pq);
  int total = 0;
  for (const auto& [id, n] : frozen) total += n;
  EXPECT_EQ(total, 5);  // 4 letters, one of them twice
  for (int i = 0; i < 4; ++i) EXPECT_GE(frozen["t-" + std::to_string(i)], 1);
  EXPECT_EQ(ids_in("dlq"), (std::map<std::string, int>{{"d-0", 1}, {"\xff\xfe-bad", 1}}));
}

}  // namespace
}  // namespace replaygate::gate::testing

namespace replaygate::gate::testing {
namespace {

// The speed of a build (docs/plans.md): RG_PLAN_FREEZE_BENCH=N letters, 9 of 10 planned; skipped
// unless set. Prints the build's time and its standard error (the worked example's lines).
TEST_F(PlanFreeze, SpeedOfABuild) {
  const char* n_text = std::getenv("RG_PLAN_FREEZE_BENCH");
  if (n_text == nullptr) GTEST_SKIP() << "set RG_PLAN_FREEZE_BENCH=N to time a build of N letters";
  const int n = std::atoi(n_text);
  for (int i = 0; i < n; ++i) {
    const bool planned = i % 10 != 0;
    ASSERT_EQ(client_.publish("", "dlq", body_of("cap_" + std::to_string(i)),
                              {{"x-first-death-queue", std::string("payment.capture")},
                               {"x-exception-class", planned ? kTimeout : kDeclined}},
                              "m-" + std::to_string(i)),
              "");
  }
  ASSERT_EQ(client_.wait_for_count("dlq", n), "");
  const auto start = std::chrono::steady_clock::now();
  const CliResult r = run(build_args("p.json"));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  rusage usage{};
  ::getrusage(RUSAGE_CHILDREN, &usage);
  std::printf(
      "build of %d letters: %.2f s (%.0f letters/s; the CLI's CPU %.2f s user, %.2f s "
      "system)\n%s",
      n, took, n / took, usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6,
      usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6, r.err.c_str());
  const std::string pq = plan_queue("p.json");
  EXPECT_EQ(client_.message_count(pq), n - (n + 9) / 10);
  const CliResult shown = run({"plan", "show", path("p.json")});
  std::printf("%s", shown.out.c_str());
}

}  // namespace
}  // namespace replaygate::gate::testing
