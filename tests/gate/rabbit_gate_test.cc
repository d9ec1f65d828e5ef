// `replaygate gate rabbitmq` end to end against a private RabbitMQ node (one per suite): routing
// per verb, the x-death queue over a fanout, dry runs, kill -9 at every step, gates racing on one
// PostgreSQL ledger, poison messages, a corrupt table, reloads, broker restarts.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "amqp_test_client.h"
#include "audit/audit_log.h"
#include "pg_server.h"
#include "rabbit_server.h"
#include "rabbit_suite.h"
#include "support/cli_runner.h"

namespace replaygate::gate::testing {
namespace {

const char* const kWorkQueues[] = {"payment.capture", "inventory.reserve", "webhook.partner"};

// Headers as a publisher that writes into a dead-letter queue directly may set them: an x-death
// array of {queue, reason: rejected, count: 1} tables (newest first) and flat string headers.
class DeathHeaders {
 public:
  DeathHeaders(const std::vector<std::string>& queues,
               const std::vector<std::pair<std::string, std::string>>& flat) {
    deaths_.reserve(queues.size());
    for (const std::string& queue : queues) {
      deaths_.push_back({entry("count", integer(1)), entry("queue", text(queue)),
                         entry("reason", text("rejected"))});
    }
    for (auto& d : deaths_) {
      amqp_field_value_t v;
      v.kind = AMQP_FIELD_KIND_TABLE;
      v.value.table.num_entries = static_cast<int>(d.size());
      v.value.table.entries = d.data();
      death_values_.push_back(v);
    }
    amqp_field_value_t array;
    array.kind = AMQP_FIELD_KIND_ARRAY;
    array.value.array.num_entries = static_cast<int>(death_values_.size());
    array.value.array.entries = death_values_.data();
    entries_.push_back(entry("x-death", array));
    for (const auto& [name, value] : flat) entries_.push_back(entry(name, text(value)));
    table_.num_entries = static_cast<int>(entries_.size());
    table_.entries = entries_.data();
  }
  const amqp_table_t& table() const { return table_; }

 private:
  amqp_bytes_t keep(const std::string& s) {
    strings_.push_back(s);  // a deque: earlier strings never move
    return amqp_bytes_t{strings_.back().size(), strings_.back().data()};
  }
  amqp_table_entry_t entry(const std::string& key, amqp_field_value_t value) {
    amqp_table_entry_t e;
    e.key = keep(key);
    e.value = value;
    return e;
  }
  amqp_field_value_t text(const std::string& s) {
    amqp_field_value_t v;
    v.kind = AMQP_FIELD_KIND_UTF8;
    v.value.bytes = keep(s);
    return v;
  }
  static amqp_field_value_t integer(int64_t n) {
    amqp_field_value_t v;
    v.kind = AMQP_FIELD_KIND_I64;
    v.value.i64 = n;
    return v;
  }

  std::deque<std::string> strings_;
  std::vector<std::vector<amqp_table_entry_t>> deaths_;
  std::vector<amqp_field_value_t> death_values_;
  std::vector<amqp_table_entry_t> entries_;
  amqp_table_t table_{};
};

class RabbitGate : public RabbitSuite {
 protected:
  static void SetUpTestSuite() {
    start_node(true);
  }  // the quorum-queue test reads the queue's type over HTTP

  void SetUp() override {
    if (server_ == nullptr) GTEST_SKIP() << "no RabbitMQ node";
    ASSERT_EQ(client_.connect(server_->url()), "");
    fresh();
  }

  void fresh() {
    // A fresh topology per test: each work queue dead-letters into `dlq` through the default
    // exchange, as a Spring AMQP consumer's rejects do.
    for (const char* q : {"dlq", "dlq.parked", "dlq.hold", "audit.copy", "payment.capture",
                          "inventory.reserve", "webhook.partner"}) {
      client_.delete_queue(q);
    }
    ASSERT_EQ(client_.declare_queue("dlq", true), "");
    for (const char* q : kWorkQueues) {
      ASSERT_EQ(client_.declare_queue(q, true,
                                      {{"x-dead-letter-exchange", std::string("")},
                                       {"x-dead-letter-routing-key", std::string("dlq")}}),
                "");
    }
    dir_ = std::make_unique<ScratchDir>("rg-gate");
    mapping_ = kSourceDir + "/examples/rabbitmq.mapping.yaml";
    table_ = path("gate.rgt");
    const CliResult compiled = run_cli_args(
        dir_->path(), {"compile", kSourceDir + "/policies/replay_gate.yaml", "-o", table_});
    ASSERT_EQ(compiled.exit_code, 0) << compiled.err;
  }

  std::string path(const std::string& name) const { return (dir_->path() / name).string(); }

  // dlq as a quorum queue: the gate consumes a quorum queue (deliveries counted, x-delivery-count
  // on the returned ones). The work queues stay classic, so what a replay carries into them is
  // what the gate published (a quorum work queue writes its own x-delivery-count on delivery).
  void quorum_topology() {
    client_.delete_queue("dlq");
    ASSERT_EQ(client_.declare_queue("dlq", true, {{"x-queue-type", std::string("quorum")}}), "");
  }
  // The shipped mapping with the policy's `replays` input read from a header nobody writes: a
  // mapping as a user writes it without x-replay. Returns its path.
  std::string mapping_without_replay() const {
    std::string text = read_file(kSourceDir + "/examples/rabbitmq.mapping.yaml");
    // Every input that reads it (the example maps x-replay to attempts and to replays).
    EXPECT_NE(text.find("header: x-replay"), std::string::npos);
    for (size_t at = text.find("header: x-replay"); at != std::string::npos;
         at = text.find("header: x-replay")) {
      text.replace(at, 16, "header: x-retries");
    }
    write_file(path("no-replay.mapping.yaml"), text);
    return path("no-replay.mapping.yaml");
  }

  // Five letters for one block: three replays (keys K-r0..K-r2), one park, one hold; message
  // ids M-r0..M-r2, M-park, M-hold.
  void block_of_five(const std::string& k) {
    for (int i = 0; i < 3; ++i) {
      dead_letter("payment.capture", "java.net.SocketTimeoutException",
                  k + "-r" + std::to_string(i), k + "-m-r" + std::to_string(i));
    }
    dead_letter("payment.capture", "com.acme.payments.gateway.InsufficientFundsException",
                k + "-park", k + "-m-park");
    dead_letter("payment.capture",
                "org.springframework.web.client.HttpClientErrorException$BadRequest", k + "-hold",
                k + "-m-hold");
    ASSERT_EQ(client_.wait_for_count("dlq", 5), "");
  }
  // How many messages of each message id `queue` holds (and takes them out).
  std::map<std::string, int> ids_in(const std::string& queue) {
    std::map<std::string, int> ids;
    for (const Message& m : client_.get_all(queue)) ++ids[m.message_id];
    return ids;
  }

  // Publishes a letter to `queue` and has the broker dead-letter it into dlq.
  void dead_letter(const std::string& queue, const std::string& error_class, const std::string& key,
                   const std::string& message_id, bool committed = false, Fields extra = {}) {
    Fields headers = {{"x-exception-class", error_class}};
    for (auto& h : extra) headers.push_back(h);
    const std::string body = "{\"idempotency_key\":\"" + key +
                             "\",\"committed\":" + (committed ? "true" : "false") +
                             ",\"amount_cents\":901}";
    ASSERT_EQ(client_.publish("", queue, body, headers, message_id), "");
    ASSERT_EQ(client_.dead_letter(queue, 1), "");
  }

  std::vector<std::string> gate_args(bool apply, std::vector<std::string> more = {}) const {
    std::vector<std::string> args = {"gate",       "rabbitmq", "--table",     table_,
                                     "--mapping",  mapping_,   "--amqp",      server_->url(),
                                     "--queue",    "dlq",      "--idle-exit", "400",
                                     "--max-rate", "0",        "--quiet"};
    if (apply) {
      for (const std::string& a :
           {std::string("--apply"), std::string("--ledger"), ledger_, std::string("--audit"),
            path("audit.log"), std::string("--operator"), std::string("ops-test")}) {
        args.push_back(a);
      }
    }
    for (auto& m : more) args.push_back(m);
    return args;
  }
  CliResult gate(bool apply, std::vector<std::string> more = {}, std::string env = "") {
    CliRun run;
    run.args = gate_args(apply, std::move(more));
    run.timeout_seconds = 120;
    if (!env.empty()) run.env = {env};
    return run_cli(dir_->path(), run);
  }
  // The gate's stdout lines as JSON.
  static std::vector<nlohmann::json> letters(const CliResult& r) {
    std::vector<nlohmann::json> out;
    for (const std::string& line : lines_of(r.out)) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  // `replaygate ledger show KEY` rows.
  std::vector<nlohmann::json> ledger_rows(const std::string& key) const {
    const CliResult r = run_cli_args(dir_->path(), {"ledger", "show", key, "--ledger", ledger_});
    std::vector<nlohmann::json> rows;
    for (const std::string& line : lines_of(r.out)) rows.push_back(nlohmann::json::parse(line));
    return rows;
  }
  void expect_audit_verifies() const {
    const CliResult r = run_cli_args(dir_->path(), {"audit", "verify", path("audit.log")});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  // Runs the gate over six letters with the node stopped and started again while the gate waits
  // at `step` of its first letter (REPLAYGATE_TEST_PAUSE_AT), then reconnects the test's client.
  // Waits (60 s at most) for the file a REPLAYGATE_TEST_PAUSE_AT pause creates: whether it came.
  static bool paused_at(const std::string& flag) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(flag) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::filesystem::exists(flag);
  }

  // `more`: the gate's extra options (default: blocks of one letter).
  CliResult run_with_broker_restart_at(const std::string& step,
                                       std::vector<std::string> more = {"--block-max", "1"}) {
    ledger_ = path("ledger.db");
    for (int i = 0; i < 6; ++i) {
      dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_p" + std::to_string(i),
                  "p-" + std::to_string(i));
    }
    EXPECT_EQ(client_.wait_for_count("dlq", 6), "");
    client_.close();
    const std::string flag = path("paused");
    CliRun run;
    more.insert(more.begin(), {"--all", "--reconnect-for", "40"});
    run.args = gate_args(true, more);
    run.env = {"REPLAYGATE_TEST_PAUSE_AT=" + step + ":" + flag};
    run.timeout_seconds = 120;
    // The node is restarted from this thread (the harness ties its life to the starting thread).
    CliResult r;
    std::thread gate_run([&] { r = run_cli(dir_->path(), run); });
    EXPECT_TRUE(paused_at(flag)) << "the gate never reached " << step;
    server_->stop_node();
    EXPECT_EQ(server_->start_node(), "");
    std::filesystem::remove(flag);
    gate_run.join();
    EXPECT_EQ(client_.connect(server_->url()), "");
    EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
    return r;
  }

  // Runs the gate under `timeout -k 30 SECONDS` (SIGTERM at SECONDS, SIGKILL 30 s later); *took
  // gets the wall time in seconds.
  CliResult gate_stopped_after(const std::vector<std::string>& args, int seconds, double* took) {
    std::string command = "cd " + replaygate::testing::shell_quote(dir_->path().string()) +
                          " && timeout -k 30 " + std::to_string(seconds) + " " +
                          replaygate::testing::shell_quote(kCliBinary);
    for (const std::string& a : args) command += " " + replaygate::testing::shell_quote(a);
    command += " </dev/null >" + replaygate::testing::shell_quote(path("stdout")) + " 2>" +
               replaygate::testing::shell_quote(path("stderr"));
    const auto start = std::chrono::steady_clock::now();
    CliResult r;
    r.exit_code = replaygate::testing::run_shell(command);
    *took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.out = read_file(path("stdout"));
    r.err = read_file(path("stderr"));
    return r;
  }

  // A quorum dead-letter queue `qdlq` with x-delivery-limit 2, fed by payment.capture (issue 42
  // item 4: with --management the gate knows the limit).
  void limited_quorum_topology() {
    for (const char* q : {"qdlq", "qdlq.hold", "qdlq.parked", "payment.capture"}) {
      client_.delete_queue(q);
    }
    ASSERT_EQ(client_.declare_queue(
                  "qdlq", true,
                  {{"x-queue-type", std::string("quorum")}, {"x-delivery-limit", int64_t{2}}}),
              "");
    ASSERT_EQ(client_.declare_queue("payment.capture", true,
                                    {{"x-dead-letter-exchange", std::string("")},
                                     {"x-dead-letter-routing-key", std::string("qdlq")}}),
              "");
  }
  std::vector<std::string> on_qdlq(bool apply, std::vector<std::string> more) const {
    more.push_back("--management");
    more.push_back(server_->management_url());
    std::vector<std::string> args = gate_args(apply, std::move(more));
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--queue") args[i + 1] = "qdlq";
    }
    return args;
  }
  // Every letter of the quorum topology, wherever it is; polls (returns reach the queue late)
  // until it is `want` or 10 s have passed.
  long quorum_total(long want) {
    long total = 0;
    for (int i = 0; i < 100; ++i) {
      total = 0;
      for (const char* q : {"qdlq", "qdlq.hold", "qdlq.parked", "payment.capture"}) {
        total += std::max(0L, client_.message_count(q));  // -1: not declared (yet)
      }
      if (total == want) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return total;
  }

  AmqpTestClient client_;
  std::unique_ptr<ScratchDir> dir_;
  std::string table_;
  std::string ledger_ = "";  // set in tests: path("ledger.db") or a PostgreSQL URL
  std::string mapping_ = kSourceDir + "/examples/rabbitmq.mapping.yaml";
};

TEST_F(RabbitGate, ApplyRoutesEachVerbAndRecordsEveryAction) {
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_a101", "m-1");
  dead_letter("payment.capture", "com.acme.payments.gateway.InsufficientFundsException", "cap_a102",
              "m-2");
  // A known class with no row for this topic: an unknown pair, held by the default.
  dead_letter("payment.capture",
              "org.springframework.web.client.HttpClientErrorException$BadRequest", "cap_a103",
              "m-3");
  ASSERT_EQ(client_.wait_for_count("dlq", 3), "");

  const CliResult r = gate(true, {"--all"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& l : lines) by_id[l["message_id"]] = l;
  EXPECT_EQ(by_id["m-1"]["verb"], "replay_once");
  EXPECT_EQ(by_id["m-1"]["action"], "republish");
  EXPECT_EQ(by_id["m-1"]["target"], "queue 'payment.capture' (default exchange)");
  EXPECT_EQ(by_id["m-2"]["verb"], "never");
  EXPECT_EQ(by_id["m-2"]["action"], "park");
  EXPECT_EQ(by_id["m-3"]["verb"], "hold");
  EXPECT_EQ(by_id["m-3"]["rule"], "default");
  EXPECT_EQ(by_id["m-3"]["action"], "hold");

  EXPECT_EQ(client_.message_count("dlq"), 0);
  const std::vector<Message> replayed = client_.get_all("payment.capture");
  ASSERT_EQ(replayed.size(), 1u);
  EXPECT_EQ(replayed[0].message_id, "m-1");
  EXPECT_EQ(replayed[0].headers.at("x-replay"), "1");
  EXPECT_EQ(replayed[0].headers.at("x-exception-class"), "java.net.SocketTimeoutException");
  EXPECT_NE(replayed[0].body.find("\"idempotency_key\":\"cap_a101\""), std::string::npos);
  const std::vector<Message> parked = client_.get_all("dlq.parked");
  ASSERT_EQ(parked.size(), 1u);
  EXPECT_EQ(parked[0].message_id, "m-2");
  EXPECT_EQ(parked[0].headers.at("x-replaygate-verb"), "never");
  EXPECT_EQ(parked[0].headers.count("x-replay"), 0u);
  const std::vector<Message> held = client_.get_all("dlq.hold");
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].message_id, "m-3");
  EXPECT_EQ(held[0].headers.at("x-replaygate-rule"), "default");

  // The ledger: one claim, confirmed. The audit log: a decision and a result per letter.
  const std::vector<nlohmann::json> rows = ledger_rows("cap_a101");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["state"], "confirmed");
  EXPECT_EQ(rows[0]["message_id"], "m-1");
  EXPECT_TRUE(ledger_rows("cap_a102").empty());
  expect_audit_verifies();
  const std::vector<std::string> audit = lines_of(read_file(path("audit.log")));
  ASSERT_EQ(audit.size(), 6u);
  int decisions = 0, results = 0;
  for (const std::string& line : audit) {
    const nlohmann::json e = nlohmann::json::parse(line);
    if (e["kind"] == "decision") {
      ++decisions;
      EXPECT_EQ(e["operator"], "ops-test");
    }
    if (e["kind"] == "result") {
      ++results;
      // What was done, where to, and why.
      EXPECT_NE(e["outcome"].get<std::string>().find("publisher confirm; reason: "),
                std::string::npos)
          << e;
    }
  }
  EXPECT_EQ(decisions, 3);
  EXPECT_EQ(results, 3);
}

TEST_F(RabbitGate, TheSeedsFiveCasesEndToEnd) {
  ledger_ = path("ledger.db");
  const std::string timeout = "java.net.SocketTimeoutException";
  dead_letter("payment.capture", timeout, "cap_9f3a", "s-1");                      // replay once
  dead_letter("payment.capture", timeout, "cap_9f3b", "s-2", /*committed=*/true);  // never
  dead_letter("payment.capture", "com.acme.partner.WeirdPartnerCode", "cap_9f3c", "s-3");
  dead_letter("payment.capture", timeout, "", "s-4");  // an empty idempotency key
  dead_letter("payment.capture", "com.acme.payments.gateway.InsufficientFundsException", "cap_9f3e",
              "s-5");
  ASSERT_EQ(client_.wait_for_count("dlq", 5), "");
  const CliResult r = gate(true, {"--all"});
  EXPECT_EQ(r.exit_code, 1) << r.err
                            << r.out;  // s-3's class is not in the mapping: an unreadable letter
  std::map<std::string, std::pair<std::string, std::string>> got;  // id -> (verb, action)
  for (const auto& l : letters(r)) got[l["message_id"]] = {l["verb"], l["action"]};
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(got["s-1"], P("replay_once", "republish"));
  EXPECT_EQ(got["s-2"], P("never", "park"));
  EXPECT_EQ(got["s-3"], P("hold", "hold"));
  EXPECT_EQ(got["s-4"], P("hold", "hold"));
  EXPECT_EQ(got["s-5"], P("never", "park"));
  EXPECT_EQ(client_.message_count("payment.capture"), 1);
  EXPECT_EQ(client_.message_count("dlq.parked"), 2);
  EXPECT_EQ(client_.message_count("dlq.hold"), 2);
  EXPECT_EQ(client_.message_count("dlq"), 0);
}

TEST_F(RabbitGate, DryRunChangesNothingButWhatItReports) {
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_d1", "d-1");
  dead_letter("webhook.partner",
              "org.springframework.web.client.HttpServerErrorException$ServiceUnavailable", "wh_1",
              "d-2");
  ASSERT_EQ(client_.wait_for_count("dlq", 2), "");
  const CliResult r = gate(false, {"--all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& l : lines) {
    EXPECT_EQ(l["dry_run"], true);
    EXPECT_EQ(l["action"], "republish");
  }
  EXPECT_NE(r.err.find("dry run"), std::string::npos);
  // Both letters are back in the dead-letter queue; nothing was published anywhere.
  EXPECT_EQ(client_.wait_for_count("dlq", 2), "");
  EXPECT_EQ(client_.message_count("payment.capture"), 0);
  EXPECT_EQ(client_.message_count("webhook.partner"), 0);
  std::string error;
  EXPECT_EQ(client_.message_count("dlq.hold", &error), -1) << "a dry run declares no queue";
  const std::vector<Message> back = client_.get_all("dlq");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(back[0].redelivered);
  EXPECT_EQ(back[0].headers.count("x-replay"), 0u);
}

TEST_F(RabbitGate, ApplyNeedsLedgerAndAuditAndRefusesDryRun) {
  CliRun run;
  run.args = gate_args(false, {"--all", "--apply"});
  CliResult r = run_cli(dir_->path(), run);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--apply needs --ledger"), std::string::npos) << r.err;
  ledger_ = path("ledger.db");
  r = gate(true, {"--all", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("contradict"), std::string::npos) << r.err;
  r = gate(true, {});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--message-id ID"), std::string::npos) << r.err;
}

// Issue 42, item 1: a signed log rewritten between two runs (a decision's operator and action
// changed, the XXH3 chain rebuilt, the checkpoints dropped) is refused by the next signing run,
// which finds the ledger's anchor gone: nothing is signed, the letter stays in the queue, and
// `audit verify --trusted-key` and `ledger check` report the log.
TEST_F(RabbitGate, ASignedLogRewrittenBetweenRunsIsRefusedNotSigned) {
  ledger_ = path("ledger.db");
  const CliResult key = run_cli_args(
      dir_->path(), {"key", "generate", "--secret", path("s.key"), "--public", path("p.pub")});
  ASSERT_EQ(key.exit_code, 0) << key.err;
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "k-a1", "a-1");
  CliResult r = gate(true, {"--all", "--audit-sign-key", path("s.key")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> verify = {"audit", "verify", path("audit.log"), "--trusted-key",
                                           path("p.pub")};
  EXPECT_EQ(run_cli_args(dir_->path(), verify).exit_code, 0);
  std::vector<std::string> lines;
  for (const std::string& l : lines_of(read_file(path("audit.log")))) {
    nlohmann::json j = nlohmann::json::parse(l);
    if (j["kind"] == "checkpoint") continue;
    if (j["kind"] == "decision") {
      j["operator"] = "mallory";
      j["action"] = "park";
    }
    lines.push_back(j.dump());
  }
  std::string forged, prev(32, '0');
  for (size_t i = 0; i < lines.size(); ++i) {
    nlohmann::json j = nlohmann::json::parse(lines[i]);
    j["seq"] = i + 1;
    j["prev"] = prev;
    forged += j.dump() + "\n";
    prev = audit::line_hash(j.dump());
  }
  write_file(path("audit.log"), forged);
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "k-a2", "a-2");
  r = gate(true, {"--all", "--audit-sign-key", path("s.key")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("refusing to sign on after " + path("audit.log") +
                       ": the log no longer holds its entry"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(path("audit.log")), forged);
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "");
  const CliResult v = run_cli_args(dir_->path(), verify);
  EXPECT_EQ(v.exit_code, 1) << v.out;
  const CliResult check = run_cli_args(
      dir_->path(), {"ledger", "check", "--ledger", ledger_, "--audit", path("audit.log")});
  EXPECT_EQ(check.exit_code, 1) << check.out;
  EXPECT_NE(check.out.find("anchor_missing"), std::string::npos) << check.out;
}

TEST_F(RabbitGate, ReplayGoesOnlyToTheQueueItDiedInNotThroughItsFanout) {
  ledger_ = path("ledger.db");
  ASSERT_EQ(client_.declare_exchange("payments.fanout", "fanout"), "");
  ASSERT_EQ(client_.declare_queue("audit.copy", true), "");
  ASSERT_EQ(client_.bind("payment.capture", "payments.fanout", ""), "");
  ASSERT_EQ(client_.bind("audit.copy", "payments.fanout", ""), "");
  ASSERT_EQ(client_.publish(
                "payments.fanout", "", "{\"idempotency_key\":\"cap_f1\",\"committed\":false}",
                {{"x-exception-class", std::string("java.net.SocketTimeoutException")}}, "f-1"),
            "");
  // The audit consumer succeeded; the payment consumer failed and rejected.
  ASSERT_EQ(client_.get_all("audit.copy").size(), 1u);
  ASSERT_EQ(client_.dead_letter("payment.capture", 1), "");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  const CliResult r = gate(true, {"--message-id", "f-1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(client_.message_count("payment.capture"), 1);
  EXPECT_EQ(client_.message_count("audit.copy"), 0) << "a redrive through the fanout repeats "
                                                       "the audit consumer's side effect";
}

TEST_F(RabbitGate, AlreadyReplayedLetterIsHeldAndMessageIdPicksOne) {
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_r1", "r-1", false,
              {{"x-replay", int64_t{1}}});
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_r2", "r-2");
  ASSERT_EQ(client_.wait_for_count("dlq", 2), "");
  const CliResult r = gate(true, {"--message-id", "r-1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["rule"], "already_replayed");
  EXPECT_EQ(lines[0]["action"], "hold");
  EXPECT_EQ(client_.message_count("dlq.hold"), 1);
  EXPECT_EQ(client_.message_count("payment.capture"), 0);
  // r-2 was skipped: it stays in the dead-letter queue, unchanged.
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "");
  const std::vector<Message> rest = client_.get_all("dlq");
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].message_id, "r-2");
  EXPECT_EQ(rest[0].headers.count("x-replay"), 0u);
}

TEST_F(RabbitGate, DryRunOnAQuorumQueueIsRefusedUnlessPeeksAreAllowed) {
  client_.delete_queue("qdlq");
  ASSERT_EQ(client_.declare_queue(
                "qdlq", true,
                {{"x-queue-type", std::string("quorum")}, {"x-delivery-limit", int64_t{5}}}),
            "");
  ASSERT_EQ(client_.publish("", "qdlq", "{}", {}, "q-1"), "");
  ASSERT_EQ(client_.wait_for_count("qdlq", 1), "");
  const auto on_qdlq = [&](std::vector<std::string> more) {
    CliRun run;
    run.args = gate_args(false, std::move(more));
    for (size_t i = 0; i + 1 < run.args.size(); ++i) {
      if (run.args[i] == "--queue") run.args[i + 1] = "qdlq";
    }
    run.timeout_seconds = 60;
    return run_cli(dir_->path(), run);
  };
  // With the management API the gate knows before it consumes anything.
  CliResult r = on_qdlq({"--all", "--management", server_->management_url()});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("a quorum queue with a delivery limit of 5"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  // Without it, the first delivery that carries x-delivery-count stops the run.
  r = on_qdlq({"--all", "--allow-peek"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // the letter is unreadable by the mapping: held (dry run)
  r = on_qdlq({"--all"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is a quorum queue"), std::string::npos) << r.err;
  EXPECT_EQ(client_.wait_for_count("qdlq", 1), "") << "a refused peek keeps the letter";
  client_.delete_queue("qdlq");
}

TEST_F(RabbitGate, AMemoryAlarmBlocksPublishingAndTheGateWaitsAndSaysSo) {
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_alarm", "a-1");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  // A watermark of 0 raises the memory alarm at once: the broker blocks every publisher.
  ASSERT_EQ(server_->ctl({"set_vm_memory_high_watermark", "0"}), "");
  CliRun run;
  run.args = gate_args(true, {"--all", "--confirm-timeout", "1000"});
  run.timeout_seconds = 60;
  CliResult r;
  std::thread gate_run([&] { r = run_cli(dir_->path(), run); });
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  EXPECT_EQ(client_.message_count("payment.capture"), 0) << "published through an alarm";
  ASSERT_EQ(server_->ctl({"set_vm_memory_high_watermark", "0.4"}), "");
  gate_run.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("publishing is blocked by the broker"), std::string::npos) << r.err;
  EXPECT_EQ(client_.message_count("payment.capture"), 1);
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
}

// Issue 40 (Watch): the metrics file says how many letters wait in the hold and park queues (the
// queues' own counts, letters of earlier runs included) and counts a replayed letter that died
// again; the oldest held age is absent, since AMQP cannot tell it without taking a letter.
TEST_F(RabbitGate, TheMetricsFileCountsHeldAndParkedLettersAndAReplayThatDiedAgain) {
  ledger_ = path("ledger.db");
  const std::string timeout = "java.net.SocketTimeoutException";
  dead_letter("payment.capture", timeout, "cap_m1", "m-1");                              // replay
  dead_letter("payment.capture", timeout, "cap_m2", "m-2", /*committed=*/true);          // park
  dead_letter("payment.capture", "com.acme.partner.WeirdPartnerCode", "cap_m3", "m-3");  // hold
  dead_letter("payment.capture", "com.acme.partner.WeirdPartnerCode", "cap_m4", "m-4");  // hold
  dead_letter("payment.capture", timeout, "", "m-5");  // no key: hold
  ASSERT_EQ(client_.wait_for_count("dlq", 5), "");
  const std::string metrics = path("gate.prom");
  CliResult r = gate(true, {"--all", "--metrics", metrics});
  ASSERT_EQ(r.exit_code, 1) << r.err;  // m-3 and m-4 are unreadable: held
  ASSERT_EQ(client_.message_count("dlq.hold"), 3);
  std::string text = read_file(metrics);
  EXPECT_NE(text.find("\nreplaygate_gate_held_letters{queue=\"dlq\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nreplaygate_gate_parked_letters{queue=\"dlq\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nreplaygate_gate_died_again_total{queue=\"dlq\"} 0\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("replaygate_gate_oldest_held_seconds"), std::string::npos)
      << "AMQP cannot know the oldest held letter's age without taking it: absent, not faked";

  // The replayed copy fails in its work queue and dies again (x-replay 1): held by the policy's
  // already_replayed guard, counted as died again; the hold queue's count includes the first
  // run's letters.
  ASSERT_EQ(client_.wait_for_count("payment.capture", 1), "");
  ASSERT_EQ(client_.dead_letter("payment.capture", 1), "");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  r = gate(true, {"--all", "--metrics", metrics});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(letters(r).size(), 1u);
  EXPECT_EQ(letters(r)[0]["action"], "hold");
  text = read_file(metrics);
  EXPECT_NE(text.find("\nreplaygate_gate_held_letters{queue=\"dlq\"} 4\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nreplaygate_gate_parked_letters{queue=\"dlq\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nreplaygate_gate_died_again_total{queue=\"dlq\"} 1\n"), std::string::npos)
      << text;
}

TEST_F(RabbitGate, FiltersBoundsAndMetrics) {
  ledger_ = path("ledger.db");
  const std::string timeout = "java.net.SocketTimeoutException";
  const std::string unavailable =
      "org.springframework.web.client.HttpServerErrorException$ServiceUnavailable";
  for (int i = 0; i < 3; ++i) {
    dead_letter("payment.capture", timeout, "cap_f" + std::to_string(i), "pf-" + std::to_string(i));
    dead_letter("webhook.partner", unavailable, "wh_f" + std::to_string(i),
                "wf-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 6), "");
  // --topic: only webhook.partner's letters; the others stay in the queue, unchanged.
  CliResult r = gate(true, {"--all", "--topic", "webhook.partner", "--metrics", path("gate.prom")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(letters(r).size(), 3u);
  EXPECT_EQ(client_.message_count("webhook.partner"), 3);
  EXPECT_EQ(client_.wait_for_count("dlq", 3), "");
  const std::string metrics = read_file(path("gate.prom"));
  EXPECT_NE(metrics.find("replaygate_gate_actions_total{queue=\"dlq\",action=\"republish\"} 3"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("replaygate_gate_actions_total{queue=\"dlq\",action=\"skip\"} 3"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("replaygate_gate_letters_total{queue=\"dlq\",verb=\"replay_once\"} 3"),
            std::string::npos)
      << metrics;
  // --max 1 handles one letter; --max-target-depth 0 stops after the first block (of one) whose
  // replay lands.
  r = gate(true, {"--all", "--max", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(letters(r).size(), 1u);
  EXPECT_NE(r.err.find("handled 1 letter (--max)"), std::string::npos) << r.err;
  r = gate(true, {"--all", "--max-target-depth", "0", "--block-max", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(letters(r).size(), 1u);
  EXPECT_NE(r.err.find("more than --max-target-depth 0"), std::string::npos) << r.err;
  EXPECT_EQ(client_.message_count("payment.capture"), 2);
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "");
  // --max-unacked bounds what a filtered run keeps: the remaining letter is skipped, then it stops.
  r = gate(true, {"--all", "--error-class", "no_such_class", "--max-unacked", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(letters(r).size(), 0u);
  EXPECT_NE(r.err.find("kept unacked"), std::string::npos) << r.err;
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "");
}

TEST_F(RabbitGate, AParkQueueThatIsTheWorkQueueLeavesThatLetterAloneAndAMissingMessageSaysSo) {
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "com.acme.payments.gateway.InsufficientFundsException", "cap_n1",
              "n-1");
  dead_letter("webhook.partner",
              "org.springframework.web.client.HttpServerErrorException$ServiceUnavailable", "wh_n2",
              "n-2");
  ASSERT_EQ(client_.wait_for_count("dlq", 2), "");
  // Parking a `never` letter in the queue it died in would hand it back to its consumer: that
  // letter stays where it is, reported, and the letters after it go on (issue 35 item 7).
  CliResult r = gate(true, {"--all", "--park-queue", "payment.capture"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& l : letters(r)) by_id[l["message_id"]] = l;
  ASSERT_EQ(by_id.size(), 2u) << r.out;
  EXPECT_EQ(by_id["n-1"]["action"], "leave");
  EXPECT_NE(by_id["n-1"]["outcome"].get<std::string>().find("the queue it died in"),
            std::string::npos)
      << by_id["n-1"];
  EXPECT_EQ(by_id["n-2"]["action"], "republish");
  EXPECT_NE(r.err.find("1 left in the queue"), std::string::npos) << r.err;
  EXPECT_EQ(client_.message_count("payment.capture"), 0);
  EXPECT_EQ(client_.message_count("webhook.partner"), 1);
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "");
  r = gate(false, {"--message-id", "no-such-id"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("message no-such-id was not among the 1 letter seen"), std::string::npos)
      << r.err;
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "");
  const std::vector<Message> left = client_.get_all("dlq");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].message_id, "n-1");
}

TEST_F(RabbitGate, KillNineAtEveryStepLosesNothingAndReplaysOnce) {
  for (const std::string step :
       {"decided", "claimed", "published", "confirmed", "recorded", "acked"}) {
    SCOPED_TRACE(step);
    fresh();
    ledger_ = path("ledger-" + step + ".db");
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_k_" + step, "k-" + step);
    ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
    const CliResult crashed = gate(true, {"--all"}, "REPLAYGATE_TEST_CRASH_AT=" + step);
    EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
    const CliResult again = gate(true, {"--all"});
    EXPECT_LE(again.exit_code, 1) << again.err;
    EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
    const long work = client_.message_count("payment.capture");
    const long held = client_.message_count("dlq.hold");
    EXPECT_LE(work, 1) << "replayed twice";
    EXPECT_GE(work + held, 1) << "lost";
    const std::vector<nlohmann::json> rows = ledger_rows("cap_k_" + step);
    if (step == "decided") {
      EXPECT_EQ(work, 1);
      EXPECT_EQ(held, 0);
    } else if (step == "claimed") {
      // Claimed, never published: the outcome is unknown to the second run, which holds it.
      EXPECT_EQ(work, 0);
      EXPECT_EQ(held, 1);
    } else if (step == "published" || step == "confirmed") {
      EXPECT_EQ(held, 1) << "claimed without a recorded confirm: held for an operator";
    } else {
      EXPECT_EQ(work, 1);
      EXPECT_EQ(held, 0) << "the ledger says confirmed: acked without a second publish";
    }
    if (step == "recorded") {
      const std::vector<nlohmann::json> lines = letters(again);
      ASSERT_EQ(lines.size(), 1u) << again.out;
      EXPECT_EQ(lines[0]["action"], "ack") << lines[0];
    }
    ASSERT_EQ(rows.size(), 1u);
    if (work == 1 && held == 0) {
      EXPECT_EQ(rows[0]["state"], "confirmed");
    }
    if (held == 1) {
      const std::vector<Message> h = client_.get_all("dlq.hold");
      ASSERT_EQ(h.size(), 1u);
      EXPECT_EQ(h[0].headers.at("x-replaygate-rule"), "ledger:outcome_unknown");
    }
    expect_audit_verifies();
    std::filesystem::remove(path("audit.log"));
  }
}

// Issue 37: a block of five letters (three replays, a park, a hold) killed at each step of the
// block and between two of its publishes, then a run without the kill: nothing lost, no key
// replayed twice, the audit log verifies, and what the second run does is what the first left.
TEST_F(RabbitGate, KillNineAtEveryStepOfABlockLosesNothingAndReplaysOnce) {
  for (const std::string step : {"decided", "claimed", "decisions_recorded", "published",
                                 "confirmed", "marked", "result_recorded", "recorded", "acked"}) {
    SCOPED_TRACE(step);
    fresh();
    ledger_ = path("ledger-" + step + ".db");
    const std::string k = "kb_" + step;
    block_of_five(k);
    const std::vector<std::string> block = {"--all", "--block-linger", "2000"};
    const CliResult crashed = gate(true, block, "REPLAYGATE_TEST_CRASH_AT=" + step);
    EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
    const CliResult again = gate(true, block);
    EXPECT_LE(again.exit_code, 1) << again.err;
    EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
    std::map<std::string, int> work = ids_in("payment.capture"), held = ids_in("dlq.hold"),
                               parked = ids_in("dlq.parked");
    int replayed = 0, held_replays = 0;
    for (int i = 0; i < 3; ++i) {
      const std::string id = k + "-m-r" + std::to_string(i);
      EXPECT_LE(work[id], 1) << id << " replayed twice";
      EXPECT_GE(work[id] + held[id], 1) << id << " lost";
      replayed += work[id];
      held_replays += held[id];
    }
    EXPECT_GE(parked[k + "-m-park"], 1) << "the park letter lost";
    EXPECT_EQ(held[k + "-m-hold"] >= 1, true) << "the hold letter lost";
    int in_work = 0;
    for (const auto& [id, copies] : work) in_work += copies;
    EXPECT_EQ(in_work, replayed) << "only the block's replays are in the work queue";
    if (step == "decided") {
      EXPECT_EQ(replayed, 3);
      EXPECT_EQ(held_replays, 0);
    } else if (step == "claimed" || step == "decisions_recorded") {
      // Claimed, never published: the whole block's replays are held as outcome unknown.
      EXPECT_EQ(replayed, 0);
      EXPECT_EQ(held_replays, 3);
    } else if (step == "published") {
      // Killed after the block's first publish: that one may have reached the broker.
      EXPECT_LE(replayed, 1);
      EXPECT_EQ(held_replays, 3);
    } else if (step == "confirmed") {
      EXPECT_EQ(replayed, 3);
      EXPECT_EQ(held_replays, 3) << "confirmed but not marked: held for an operator";
    } else {
      // Marked `confirmed` before the kill: the redelivered letters are acked without a publish.
      EXPECT_EQ(replayed, 3);
      EXPECT_EQ(held_replays, 0);
      size_t acked_only = 0;
      for (const auto& l : letters(again)) acked_only += l["action"] == "ack" ? 1 : 0;
      EXPECT_EQ(acked_only, step == "acked" ? 0u : 3u) << again.out;
    }
    for (int i = 0; i < 3; ++i) {
      const std::vector<nlohmann::json> rows = ledger_rows(k + "-r" + std::to_string(i));
      ASSERT_EQ(rows.size(), 1u);
      EXPECT_EQ(rows[0]["state"], held_replays == 0 ? "confirmed" : "claimed") << rows[0];
    }
    expect_audit_verifies();
    std::filesystem::remove(path("audit.log"));
  }
}

// Issue 37: the broker restarted while a block of six replays is claimed: the publishes find the
// connection gone, the six letters return with it, and on redelivery each is held as outcome
// unknown: exactly the block (its size is the blast radius, docs/gate.md), nothing replayed.
TEST_F(RabbitGate, BrokerRestartMidBlockHoldsExactlyThatBlock) {
  const CliResult r = run_with_broker_restart_at("claimed", {"--block-linger", "2000"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 12u) << r.out;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NE(lines[i].value("outcome", "").find("returns to its queue with the connection"),
              std::string::npos)
        << lines[i].dump();
    EXPECT_EQ(lines[6 + i].value("rule", ""), "ledger:outcome_unknown") << lines[6 + i].dump();
  }
  EXPECT_EQ(client_.message_count("dlq.hold"), 6);
  EXPECT_EQ(client_.message_count("payment.capture"), 0);
  expect_audit_verifies();
}

// Issue 37: PostgreSQL restarted while a block is claimed (paused after its claims): the block's
// mark finds its connection lost before sending anything, reconnects once, and the block
// completes: each replay once and confirmed, nothing held as outcome unknown.
TEST_F(RabbitGate, APostgresRestartMidBlockReconnectsAndCompletesTheBlock) {
  replaygate::ledger::testing::PgServer pg;
  if (const std::string why = pg.create(); !why.empty()) GTEST_SKIP() << why;
  ledger_ = pg.url();
  block_of_five("pgr");
  const std::string flag = path("paused");
  CliRun run;
  run.args = gate_args(true, {"--all", "--block-linger", "2000"});
  run.env = {"REPLAYGATE_TEST_PAUSE_AT=claimed:" + flag};
  run.timeout_seconds = 120;
  CliResult r;
  std::thread gate_run([&] { r = run_cli(dir_->path(), run); });
  EXPECT_TRUE(paused_at(flag)) << "the gate never claimed its block";
  pg.stop();
  EXPECT_EQ(pg.start(), "");
  std::filesystem::remove(flag);
  gate_run.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
  std::map<std::string, int> work = ids_in("payment.capture"), held = ids_in("dlq.hold");
  for (int i = 0; i < 3; ++i) {
    const std::string id = "pgr-m-r" + std::to_string(i);
    EXPECT_EQ(work[id], 1) << id;
    EXPECT_EQ(held[id], 0) << id;
    const std::vector<nlohmann::json> rows = ledger_rows("pgr-r" + std::to_string(i));
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["state"], "confirmed");
  }
  EXPECT_EQ(held["pgr-m-hold"], 1);
  EXPECT_EQ(ids_in("dlq.parked")["pgr-m-park"], 1);
  expect_audit_verifies();
}

// Issue 37: one block with a publish the broker nacks (a park queue that rejects publishes), an
// unroutable replay (its work queue deleted) and a poison letter among good replays: each of the
// three is settled alone (the nacked one returns to the queue unchanged, the unroutable one is
// held, the poison one is held) and the letters around them are replayed once. A broker that
// keeps refusing stops the run once its refusals outlast --reconnect-for.
TEST_F(RabbitGate, ABlockWithANackAReturnAndAPoisonLetterSettlesEachAlone) {
  ledger_ = path("ledger.db");
  ASSERT_EQ(client_.declare_queue(
                "dlq.parked", true,
                {{"x-max-length", int64_t{0}}, {"x-overflow", std::string("reject-publish")}}),
            "");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "nb_1", "nb-1");
  dead_letter("payment.capture", "com.acme.payments.gateway.InsufficientFundsException", "nb_2",
              "nb-2");
  dead_letter("webhook.partner",
              "org.springframework.web.client.HttpServerErrorException$ServiceUnavailable", "nb_3",
              "nb-3");
  ASSERT_EQ(client_.publish("", "dlq", "{not json", {}, "nb-4"), "");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "nb_5", "nb-5");
  ASSERT_EQ(client_.wait_for_count("dlq", 5), "");
  client_.delete_queue("webhook.partner");
  // The refused letter comes back and is refused again: the gate waits 500 ms, then stops, since
  // the refusals outlast --reconnect-for 1.
  const CliResult r = gate(true, {"--all", "--block-linger", "2000", "--reconnect-for", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the broker refused 1 publish (nack): those letters return to dlq; waiting "
                       "500 ms"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the broker kept refusing publishes (nacks)"), std::string::npos) << r.err;
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& l : letters(r)) by_id[l["message_id"]] = l;
  ASSERT_EQ(by_id.size(), 5u) << r.out;
  EXPECT_EQ(by_id["nb-1"]["action"], "republish");
  EXPECT_EQ(by_id["nb-5"]["action"], "republish");
  EXPECT_NE(by_id["nb-2"]["outcome"].get<std::string>().find("nacked"), std::string::npos)
      << by_id["nb-2"];
  EXPECT_EQ(by_id["nb-3"]["action"], "hold");
  EXPECT_EQ(by_id["nb-3"]["rule"], "gate:unroutable");
  EXPECT_EQ(by_id["nb-4"]["rule"], "invalid");
  const std::map<std::string, int> work = ids_in("payment.capture");
  EXPECT_EQ(work, (std::map<std::string, int>{{"nb-1", 1}, {"nb-5", 1}}));
  const std::map<std::string, int> held = ids_in("dlq.hold");
  EXPECT_EQ(held, (std::map<std::string, int>{{"nb-3", 1}, {"nb-4", 1}}));
  const std::vector<Message> left = client_.get_all("dlq");
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].message_id, "nb-2");
  EXPECT_EQ(left[0].headers.count("x-replaygate-rule"), 0u) << "returned as it was";
  for (const auto& [key, state] : {std::pair{"nb_1", "confirmed"}, std::pair{"nb_5", "confirmed"},
                                   std::pair{"nb_3", "claimed"}}) {
    const std::vector<nlohmann::json> rows = ledger_rows(key);
    ASSERT_EQ(rows.size(), 1u) << key;
    EXPECT_EQ(rows[0]["state"], state) << key << " (an unroutable replay's claim stays claimed)";
  }
  expect_audit_verifies();
}

// Issue 37: blocks of one and blocks of many decide and record the same for every letter: about
// 20 shuffled queues of distinct letters (replays, parks, holds, keys shared between letters),
// each run once with --block-max 1 and once with the default, compared per message id (verb,
// rule, action, key, the ledger row's state, the audit entries' verb and rule).
TEST_F(RabbitGate, BlocksOfOneAndOfManyDecideAndRecordTheSame) {
  std::mt19937 random(20261207);
  const std::vector<std::string> classes = {
      "java.net.SocketTimeoutException", "com.acme.payments.gateway.InsufficientFundsException",
      "org.springframework.web.client.HttpClientErrorException$BadRequest"};
  for (int queue = 0; queue < 20; ++queue) {
    SCOPED_TRACE("queue " + std::to_string(queue));
    struct Planned {
      std::string error_class, key, id;
    };
    std::vector<Planned> planned;
    const int n = 4 + static_cast<int>(random() % 8);
    for (int i = 0; i < n; ++i) {
      const std::string cls = classes[random() % classes.size()];
      // About one letter in four shares a key with another of the queue.
      const int key = static_cast<int>(random() % 4 == 0 ? random() % (i + 1) : i);
      planned.push_back({cls, "pq" + std::to_string(queue) + "_" + std::to_string(key),
                         "pq" + std::to_string(queue) + "-" + std::to_string(i)});
    }
    std::shuffle(planned.begin(), planned.end(), random);
    std::map<std::string, std::string> seen[2];
    for (int run = 0; run < 2; ++run) {
      fresh();
      ledger_ = path("ledger.db");
      for (const Planned& p : planned) dead_letter("payment.capture", p.error_class, p.key, p.id);
      ASSERT_EQ(client_.wait_for_count("dlq", static_cast<long>(planned.size())), "");
      const CliResult r =
          gate(true, run == 0 ? std::vector<std::string>{"--all", "--block-max", "1"}
                              : std::vector<std::string>{"--all", "--block-linger", "50"});
      ASSERT_LE(r.exit_code, 1) << r.err;
      for (const auto& l : letters(r)) {
        const std::string key = l.value("idempotency_key", "");
        const std::vector<nlohmann::json> rows = ledger_rows(key);
        seen[run][l["message_id"]] = l.value("verb", "") + " " + l.value("rule", "") + " " +
                                     l.value("action", "") + " " + key + " " +
                                     (rows.empty() ? "-" : rows[0].value("state", ""));
      }
      std::istringstream log(read_file(path("audit.log")));
      for (std::string line; std::getline(log, line);) {
        const nlohmann::json e = nlohmann::json::parse(line);
        if (e["kind"] != "decision") continue;
        seen[run]["audit " + e.value("message_id", "")] =
            e.value("action", "") + " " + e.value("rule", "");
      }
      expect_audit_verifies();
    }
    EXPECT_EQ(seen[0].size(), 2 * planned.size());
    EXPECT_EQ(seen[0], seen[1]);
  }
}

TEST_F(RabbitGate, ThreeGatesOnOnePostgresLedgerReplayEachKeyOnce) {
  replaygate::ledger::testing::PgServer pg;
  if (const std::string why = pg.create(); !why.empty()) GTEST_SKIP() << why;
  ledger_ = pg.url();
  // 12 keys, each dead-lettered three times under different message ids.
  for (int copy = 0; copy < 3; ++copy) {
    for (int k = 0; k < 12; ++k) {
      dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_p" + std::to_string(k),
                  "p" + std::to_string(k) + "-" + std::to_string(copy));
    }
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 36), "");
  std::vector<std::thread> gates;
  std::vector<CliResult> results(3);
  for (int g = 0; g < 3; ++g) {
    gates.emplace_back([&, g] {
      const std::filesystem::path scratch = dir_->path() / ("g" + std::to_string(g));
      std::filesystem::create_directories(scratch);
      CliRun run;
      run.args = gate_args(true, {"--all", "--prefetch", "8", "--block-max", "4"});
      for (auto& a : run.args) {
        if (a == path("audit.log")) a = (scratch / "audit.log").string();
      }
      run.timeout_seconds = 120;
      results[g] = run_cli(scratch, run);
    });
  }
  for (auto& t : gates) t.join();
  for (const CliResult& r : results) EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
  const std::vector<Message> replayed = client_.get_all("payment.capture");
  std::multiset<std::string> keys;
  for (const Message& m : replayed) {
    const nlohmann::json body = nlohmann::json::parse(m.body);
    keys.insert(body["idempotency_key"].get<std::string>());
  }
  EXPECT_EQ(replayed.size(), 12u);
  for (int k = 0; k < 12; ++k) EXPECT_EQ(keys.count("cap_p" + std::to_string(k)), 1u);
  EXPECT_EQ(client_.message_count("dlq.hold"), 24);
}

TEST_F(RabbitGate, PoisonMessagesAreHeldNeverACrash) {
  ledger_ = path("ledger.db");
  {
    // Arrays nested 26,000 deep: as deep as the default frame_max allows.
    NestedArrayHeader deep("x-deep", 26000);
    ASSERT_EQ(client_.publish_raw_headers("", "dlq", "{\"idempotency_key\":\"p1\"}", deep.table(),
                                          "poison-deep"),
              "");
  }
  ASSERT_EQ(client_.publish("", "dlq", "{}", {{"x-exception-class", std::string("\xff\xfe")}},
                            "poison-utf8"),
            "");
  Fields many;
  for (int i = 0; i < 5000; ++i) many.push_back({"h" + std::to_string(i), int64_t{i}});
  ASSERT_EQ(client_.publish("", "dlq", "{}", many, "poison-wide"), "");
  ASSERT_EQ(client_.publish("", "dlq", std::string(100u << 20, 'x'), {}, "poison-huge"), "");
  ASSERT_EQ(client_.wait_for_count("dlq", 4), "");
  const CliResult r = gate(true, {"--all"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // done, with unreadable letters
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& l : letters(r)) by_id[l["message_id"]] = l;
  ASSERT_EQ(by_id.size(), 4u) << r.out;
  for (const auto& [id, l] : by_id) {
    EXPECT_EQ(l["action"], "hold") << id;
    EXPECT_EQ(l["rule"], "invalid") << id;
  }
  EXPECT_NE(by_id["poison-deep"]["reason"].get<std::string>().find("nest deeper"),
            std::string::npos);
  EXPECT_NE(by_id["poison-utf8"]["reason"].get<std::string>().find("UTF-8"), std::string::npos);
  EXPECT_NE(by_id["poison-wide"]["reason"].get<std::string>().find("header values"),
            std::string::npos);
  EXPECT_NE(by_id["poison-huge"]["reason"].get<std::string>().find("--max-body"),
            std::string::npos);
  EXPECT_EQ(client_.message_count("dlq"), 0);
  EXPECT_EQ(client_.message_count("dlq.hold"), 4);
  expect_audit_verifies();
}

TEST_F(RabbitGate, CorruptTableAtStartConsumesNothing) {
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_c1", "c-1");
  std::string bytes = read_file(table_);
  bytes[bytes.size() / 2] ^= 0x01;
  write_file(table_, bytes);
  const CliResult r = gate(true, {"--all"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("does not start"), std::string::npos) << r.err;
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "");
  EXPECT_FALSE(client_.get_all("dlq").at(0).redelivered) << "the gate consumed before refusing";
}

TEST_F(RabbitGate, MissingReplayExchangeIsRefusedBeforeConsuming) {
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_x1", "x-1");
  const CliResult r = gate(true, {"--all", "--replay-exchange", "no.such.exchange"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("404"), std::string::npos) << r.err;
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "");
}

TEST_F(RabbitGate, AnUnroutableReplayIsHeldNotLost) {
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_u1", "u-1");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  const CliResult r = gate(true, {"--all", "--replay-routing-key", "no.such.queue"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["rule"], "gate:unroutable");
  EXPECT_EQ(lines[0]["action"], "hold");
  EXPECT_EQ(client_.message_count("dlq.hold"), 1);
  EXPECT_EQ(client_.message_count("dlq"), 0);
  // The claim stays: the replay never happened, and only an operator's release allows another.
  const std::vector<nlohmann::json> rows = ledger_rows("cap_u1");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["state"], "claimed");
  expect_audit_verifies();
}

TEST_F(RabbitGate, AnExchangeDeletedMidRunLeavesItsLetterInTheQueue) {
  ledger_ = path("ledger.db");
  ASSERT_EQ(client_.declare_exchange("replay.x", "direct"), "");
  ASSERT_EQ(client_.bind("payment.capture", "replay.x", "payment.capture"), "");
  for (int i = 0; i < 4; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_e" + std::to_string(i),
                "e-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 4), "");
  CliRun run;
  run.args = gate_args(true, {"--all", "--replay-exchange", "replay.x"});
  for (size_t i = 0; i + 1 < run.args.size(); ++i) {
    if (run.args[i] == "--max-rate") run.args[i + 1] = "2";
  }
  run.timeout_seconds = 60;
  CliResult r;
  std::thread gate_run([&] { r = run_cli(dir_->path(), run); });
  // The exchange goes after the first replay (at 2 letters/s the others are still waiting): a
  // fixed sleep was shorter than the gate's start on a loaded machine, and nothing was replayed.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (client_.message_count("payment.capture") < 1 &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(client_.delete_exchange("replay.x"), "");
  gate_run.join();
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("404"), std::string::npos) << r.err;
  const long replayed = client_.message_count("payment.capture");
  EXPECT_GE(replayed, 1);
  EXPECT_LE(replayed, 3);
  EXPECT_EQ(client_.wait_for_count("dlq", 4 - replayed), "") << "a letter went missing";
  expect_audit_verifies();
}

TEST_F(RabbitGate, ReloadUnderLoadAndACorruptReloadKeepsTheOldTable) {
  ledger_ = path("ledger.db");
  for (int i = 0; i < 30; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_l" + std::to_string(i),
                "l-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 30), "");
  CliRun run;
  run.args = gate_args(true, {"--all", "--watch"});
  for (size_t i = 0; i < run.args.size(); ++i) {
    if (run.args[i] == "--max-rate") run.args[i + 1] = "10";
  }
  run.timeout_seconds = 120;
  std::thread corrupt([&] {
    // A good table written anew (a new file: --watch sees it), then a corrupt one.
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    write_file(table_ + ".new", read_file(table_));
    std::filesystem::rename(table_ + ".new", table_);
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    std::string bytes = read_file(table_);
    bytes[bytes.size() / 2] ^= 0x01;
    write_file(table_ + ".new", bytes);
    std::filesystem::rename(table_ + ".new", table_);
  });
  const CliResult r = run_cli(dir_->path(), run);
  corrupt.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("reloaded the table"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("reload refused"), std::string::npos) << r.err;
  EXPECT_EQ(letters(r).size(), 30u);
  EXPECT_EQ(client_.message_count("payment.capture"), 30);
}

TEST_F(RabbitGate, BrokerRestartMidRunReconnectsAndGoesOn) {
  ledger_ = path("ledger.db");
  for (int i = 0; i < 20; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_b" + std::to_string(i),
                "b-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 20), "");
  client_.close();
  CliRun run;
  run.args = gate_args(true, {"--all"});
  for (size_t i = 0; i + 1 < run.args.size(); ++i) {
    if (run.args[i] == "--max-rate") run.args[i + 1] = "8";
    if (run.args[i] == "--idle-exit") run.args[i + 1] = "3000";
  }
  for (const char* a : {"--reconnect-for", "40"}) {
    run.args.push_back(a);
  }
  run.timeout_seconds = 120;
  // The node is restarted from this thread: the harness ties the node's life to the thread that
  // started it (a parent-death signal), so the gate runs on another one.
  CliResult r;
  std::thread gate_run([&] { r = run_cli(dir_->path(), run); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  server_->stop_node();
  EXPECT_EQ(server_->start_node(), "");
  gate_run.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("reconnected"), std::string::npos) << r.err;
  // The note names the connection lost and why (whichever the gate noticed first), not a bare
  // "connection lost".
  EXPECT_TRUE(r.err.find(" ms (consuming connection: ") != std::string::npos ||
              r.err.find(" ms (publishing connection: ") != std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("(connection lost)"), std::string::npos) << r.err;
  ASSERT_EQ(client_.connect(server_->url()), "");
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
  const long work = client_.message_count("payment.capture");
  const long held = client_.message_count("dlq.hold");
  EXPECT_GE(work + held, 20) << "every letter is replayed or held, none lost";
  EXPECT_LE(work, 20) << "no letter replayed twice";
  EXPECT_LE(held, 1) << "at most the letter in flight is held as outcome unknown";
  expect_audit_verifies();
}

TEST_F(RabbitGate, BrokerStoppedBeforeAPublishHoldsThatLetterAndGoesOn) {
  // The node goes down between the claim and the publish: the publish (or its confirm wait)
  // finds the connection gone, the letter returns to the queue with it, the gate reconnects,
  // and on redelivery the ledger's unconfirmed claim holds the letter as outcome unknown.
  const CliResult r = run_with_broker_restart_at("claimed");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("reconnected"), std::string::npos) << r.err;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 7u) << r.out;  // the interrupted letter twice: not acked, then held
  EXPECT_NE(lines[0].value("outcome", "").find("connection lost"), std::string::npos)
      << lines[0].dump();
  EXPECT_NE(lines[0].value("outcome", "").find("returns to its queue"), std::string::npos)
      << lines[0].dump();
  EXPECT_EQ(lines[1].value("action", ""), "hold") << lines[1].dump();
  EXPECT_EQ(lines[1].value("rule", ""), "ledger:outcome_unknown") << lines[1].dump();
  EXPECT_EQ(client_.message_count("dlq.hold"), 1) << "the letter whose publish was cut off";
  EXPECT_EQ(client_.message_count("payment.capture"), 5) << "every other letter, once";
  expect_audit_verifies();
}

TEST_F(RabbitGate, BrokerStoppedAfterAPublishNeverRepeatsIt) {
  // The node goes down right after the first publish: its confirm may already sit in the socket
  // (then the ack is what fails, and on redelivery the ledger's `confirmed` claim acks the letter
  // without publishing) or not (then the letter is held as outcome unknown). Either way nothing
  // is lost and nothing is published twice.
  const CliResult r = run_with_broker_restart_at("published");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("reconnected"), std::string::npos) << r.err;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 7u) << r.out;
  const long held = client_.message_count("dlq.hold");
  const long work = client_.message_count("payment.capture");
  if (lines[1].value("action", "") == "ack") {
    EXPECT_NE(lines[0].value("outcome", "").find("the ack was lost"), std::string::npos)
        << lines[0].dump();
    EXPECT_EQ(held, 0);
    EXPECT_EQ(work, 6);
  } else {
    EXPECT_EQ(lines[1].value("rule", ""), "ledger:outcome_unknown") << lines[1].dump();
    EXPECT_EQ(held, 1);
    EXPECT_GE(work, 5);
    EXPECT_LE(work, 6) << "the held letter's publish may have been stored, never twice";
  }
  expect_audit_verifies();
}

// Issue 35 item 1: a replayed copy that fails again and dead-letters again is a new letter; its
// key is used up, so it is held, never acked away, whether the mapping reads x-replay (the
// policy's already_replayed guard holds it) or not (the ledger holds it), on classic and quorum
// queues.
TEST_F(RabbitGate, AReplayedCopyThatDiesAgainIsHeldNeverAckedAway) {
  for (const bool quorum : {false, true}) {
    for (const bool mapped : {true, false}) {
      SCOPED_TRACE(std::string(quorum ? "quorum" : "classic") +
                   (mapped ? ", x-replay mapped" : ", x-replay not mapped"));
      fresh();
      if (quorum) quorum_topology();
      if (!mapped) mapping_ = mapping_without_replay();
      ledger_ = path("ledger.db");
      dead_letter("payment.capture", "java.net.SocketTimeoutException", "k0", "m-0");
      ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
      CliResult r = gate(true, {"--all"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ASSERT_EQ(letters(r).size(), 1u);
      EXPECT_EQ(letters(r)[0]["action"], "republish");
      ASSERT_EQ(client_.wait_for_count("payment.capture", 1), "");
      // The consumer fails the copy again: the broker dead-letters it into dlq once more.
      ASSERT_EQ(client_.dead_letter("payment.capture", 1), "");
      ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
      r = gate(true, {"--all"});
      EXPECT_EQ(r.exit_code, 0) << r.err;
      const std::vector<nlohmann::json> lines = letters(r);
      ASSERT_EQ(lines.size(), 1u) << r.out;
      EXPECT_EQ(lines[0]["action"], "hold") << lines[0];
      EXPECT_EQ(lines[0]["rule"], mapped ? "already_replayed" : "ledger:already_replayed")
          << lines[0];
      EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
      EXPECT_EQ(client_.message_count("payment.capture"), 0);
      const std::vector<Message> held = client_.get_all("dlq.hold");
      ASSERT_EQ(held.size(), 1u) << "the copy that died again is gone from every queue";
      EXPECT_EQ(held[0].message_id, "m-0");
      EXPECT_EQ(held[0].headers.at("x-replay"), "1");
      const std::vector<nlohmann::json> rows = ledger_rows("k0");
      ASSERT_EQ(rows.size(), 1u);
      EXPECT_EQ(rows[0]["state"], "confirmed");
      EXPECT_EQ(rows[0]["copy_replay"], 1);
      expect_audit_verifies();
    }
  }
}

// Issue 42 item 2: a letter with another body under the message id and key of a replayed,
// confirmed letter is held, not acked away, even when the broker marks it redelivered.
TEST_F(RabbitGate, AnotherBodyUnderAReplayedMessageIdIsHeldNeverAckedAway) {
  mapping_ = mapping_without_replay();
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "k1", "m-1");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  CliResult r = gate(true, {"--all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(client_.wait_for_count("payment.capture", 1), "");
  ASSERT_EQ(client_.get_all("payment.capture").size(), 1u);  // the copy succeeded
  // Another letter: the same message id and key, another amount.
  const std::string body =
      "{\"idempotency_key\":\"k1\",\"committed\":false,\"amount_cents\":90100}";
  ASSERT_EQ(client_.publish("", "payment.capture", body,
                            {{"x-exception-class", std::string("java.net.SocketTimeoutException")}},
                            "m-1"),
            "");
  ASSERT_EQ(client_.dead_letter("payment.capture", 1), "");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  // A dry run first, so the broker marks it redelivered: only its body tells it apart.
  r = gate(false, {"--all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  r = gate(true, {"--all"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0]["action"], "hold") << lines[0];
  EXPECT_EQ(lines[0]["rule"], "gate:ambiguous_redelivery") << lines[0];
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("body differs"), std::string::npos)
      << lines[0];
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
  const std::vector<Message> held = client_.get_all("dlq.hold");
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].body, body);
  expect_audit_verifies();
}

// The crash the ack-only rule exists for: killed after the confirm was recorded, before the ack.
// The redelivered letter is acked without a second publish, on classic and quorum queues.
TEST_F(RabbitGate, AKillAfterTheRecordedConfirmIsAckedOnlyOnBothQueueTypes) {
  for (const bool quorum : {false, true}) {
    SCOPED_TRACE(quorum ? "quorum" : "classic");
    fresh();
    if (quorum) quorum_topology();
    ledger_ = path("ledger.db");
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "k2", "m-2");
    ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
    const CliResult crashed = gate(true, {"--all"}, "REPLAYGATE_TEST_CRASH_AT=recorded");
    EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
    const CliResult again = gate(true, {"--all"});
    EXPECT_EQ(again.exit_code, 0) << again.err;
    const std::vector<nlohmann::json> lines = letters(again);
    ASSERT_EQ(lines.size(), 1u) << again.out;
    EXPECT_EQ(lines[0]["action"], "ack") << lines[0];
    EXPECT_NE(lines[0]["outcome"].get<std::string>().find("acked without publishing"),
              std::string::npos);
    EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
    EXPECT_EQ(client_.message_count("payment.capture"), 1) << "published once";
    EXPECT_EQ(client_.message_count("dlq.hold"), 0);
    expect_audit_verifies();
  }
}

// kill -9 between the result entry's append and the raise of the log's anchor in the ledger
// (signed log, anchored by an earlier run): the anchor is left behind the log, never ahead.
// `ledger check` passes at once, the next run accepts the log (it still holds the anchor's
// entry), acks the redelivered letter without a second publish and raises the anchor; the log
// verifies against the key.
TEST_F(RabbitGate, AKillBeforeTheResultsAnchorLeavesItBehindAndTheNextRunRaisesIt) {
  ledger_ = path("ledger.db");
  const CliResult key = run_cli_args(
      dir_->path(), {"key", "generate", "--secret", path("s.key"), "--public", path("p.pub")});
  ASSERT_EQ(key.exit_code, 0) << key.err;
  const std::vector<std::string> sign = {"--all", "--audit-sign-key", path("s.key")};
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_rr0", "rr-0");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  ASSERT_EQ(gate(true, sign).exit_code, 0) << "the first run anchors the log";
  const size_t anchored_lines = lines_of(read_file(path("audit.log"))).size();
  long consumed = 0;  // the work queue's consumer takes rr-0's replay
  ASSERT_EQ(client_.purge_queue("payment.capture", &consumed), "");
  EXPECT_EQ(consumed, 1);
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_rr1", "rr-1");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  const CliResult crashed = gate(true, sign, "REPLAYGATE_TEST_CRASH_AT=result_recorded");
  EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
  const std::vector<std::string> log = lines_of(read_file(path("audit.log")));
  ASSERT_EQ(log.size(), anchored_lines + 2) << "the decision and result entries, unanchored";
  EXPECT_EQ(nlohmann::json::parse(log.back())["kind"], "result");
  const std::vector<std::string> check = {"ledger", "check",   "--ledger",
                                          ledger_,  "--audit", path("audit.log")};
  const CliResult lagging = run_cli_args(dir_->path(), check);
  EXPECT_EQ(lagging.exit_code, 0) << lagging.out << lagging.err;
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "") << "the unacked letter returns";
  EXPECT_EQ(client_.message_count("payment.capture"), 1);
  const CliResult again = gate(true, sign);
  EXPECT_EQ(again.exit_code, 0) << again.err;
  const std::vector<nlohmann::json> lines = letters(again);
  ASSERT_EQ(lines.size(), 1u) << again.out;
  EXPECT_EQ(lines[0]["action"], "ack") << lines[0];
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
  EXPECT_EQ(client_.message_count("payment.capture"), 1) << "published once";
  EXPECT_EQ(client_.message_count("dlq.hold"), 0);
  for (const char* k : {"cap_rr0", "cap_rr1"}) {
    const std::vector<nlohmann::json> rows = ledger_rows(k);
    ASSERT_EQ(rows.size(), 1u) << k;
    EXPECT_EQ(rows[0]["state"], "confirmed") << k;
  }
  const CliResult v = run_cli_args(
      dir_->path(), {"audit", "verify", path("audit.log"), "--trusted-key", path("p.pub")});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  const CliResult checked = run_cli_args(dir_->path(), check);
  EXPECT_EQ(checked.exit_code, 0) << checked.out << checked.err;
  const std::vector<std::string> after = lines_of(read_file(path("audit.log")));
  EXPECT_EQ(nlohmann::json::parse(after.back())["kind"], "checkpoint") << "signed and anchored";
}

// Issue 42 item 6: a letter published straight into the dead-letter queue, decided for
// payment.capture (x-first-death-queue) but naming refunds.execute as its newest death, is held:
// a replay goes only to the queue its decision was made for. Issue 35 item 7: one whose newest
// death names the dead-letter queue itself is held. The letters after them go on.
TEST_F(RabbitGate, AReplayGoesOnlyToTheQueueItsDecisionWasMadeFor) {
  ledger_ = path("ledger.db");
  client_.delete_queue("refunds.execute");
  ASSERT_EQ(client_.declare_queue("refunds.execute", true), "");
  const std::vector<std::pair<std::string, std::string>> flat = {
      {"x-first-death-queue", "payment.capture"},
      {"x-first-death-reason", "rejected"},
      {"x-exception-class", "java.net.SocketTimeoutException"}};
  {
    DeathHeaders steered({"refunds.execute", "payment.capture"}, flat);
    ASSERT_EQ(client_.publish_raw_headers("", "dlq",
                                          "{\"idempotency_key\":\"k-steer\",\"committed\":false}",
                                          steered.table(), "steer-1"),
              "");
    DeathHeaders looped({"dlq", "payment.capture"}, flat);
    ASSERT_EQ(client_.publish_raw_headers("", "dlq",
                                          "{\"idempotency_key\":\"k-loop\",\"committed\":false}",
                                          looped.table(), "loop-1"),
              "");
  }
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "k-ok", "ok-1");
  ASSERT_EQ(client_.wait_for_count("dlq", 3), "");
  const CliResult r = gate(true, {"--all"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& l : letters(r)) by_id[l["message_id"]] = l;
  ASSERT_EQ(by_id.size(), 3u) << r.out;
  EXPECT_EQ(by_id["steer-1"]["action"], "hold");
  EXPECT_EQ(by_id["steer-1"]["rule"], "gate:target_mismatch");
  EXPECT_NE(by_id["steer-1"]["reason"].get<std::string>().find("topic 'payment.capture'"),
            std::string::npos)
      << by_id["steer-1"];
  EXPECT_EQ(by_id["loop-1"]["action"], "hold");
  EXPECT_EQ(by_id["loop-1"]["rule"], "gate:target_is_gate_queue");
  EXPECT_EQ(by_id["ok-1"]["action"], "republish");
  EXPECT_EQ(client_.message_count("refunds.execute"), 0) << "a replay steered into refunds";
  EXPECT_EQ(client_.message_count("payment.capture"), 1);
  EXPECT_EQ(client_.message_count("dlq.hold"), 2);
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
  EXPECT_TRUE(ledger_rows("k-steer").empty()) << "held before any claim: the key is not used up";
  EXPECT_TRUE(ledger_rows("k-loop").empty());
  client_.delete_queue("refunds.execute");
}

// The mapping's `map:` of the topic input says which queues a topic's letters may be replayed to:
// a letter decided for payment.capture whose newest death names payments.retry, a queue the
// mapping maps to payment.capture, is replayed there.
TEST_F(RabbitGate, AReplayMayGoToAQueueTheMappingMapsToItsTopic) {
  ledger_ = path("ledger.db");
  std::string text = read_file(kSourceDir + "/examples/rabbitmq.mapping.yaml");
  const std::string topic = "    header: x-first-death-queue\n    type: string\n";
  const size_t at = text.find(topic);
  ASSERT_NE(at, std::string::npos);
  text.insert(at + topic.size(),
              "    map:\n      payment.capture: payment.capture\n"
              "      payments.retry: payment.capture\n");
  write_file(path("retry.mapping.yaml"), text);
  mapping_ = path("retry.mapping.yaml");
  client_.delete_queue("payments.retry");
  ASSERT_EQ(client_.declare_queue("payments.retry", true), "");
  {
    DeathHeaders retried({"payments.retry", "payment.capture"},
                         {{"x-first-death-queue", "payment.capture"},
                          {"x-first-death-reason", "rejected"},
                          {"x-exception-class", "java.net.SocketTimeoutException"}});
    ASSERT_EQ(client_.publish_raw_headers("", "dlq",
                                          "{\"idempotency_key\":\"k-retry\",\"committed\":false}",
                                          retried.table(), "retry-1"),
              "");
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  const CliResult r = gate(true, {"--all"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<nlohmann::json> lines = letters(r);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0]["action"], "republish") << lines[0];
  EXPECT_EQ(lines[0]["target"], "queue 'payments.retry' (default exchange)");
  EXPECT_EQ(client_.message_count("payments.retry"), 1);
  client_.delete_queue("payments.retry");
}

// Issue 42 item 10: a replay from a quorum dead-letter queue leaves that queue's
// x-delivery-count behind and keeps the gate's own x-replay and the broker's x-death.
TEST_F(RabbitGate, AReplayFromAQuorumQueueCarriesNoDeliveryCount) {
  quorum_topology();
  ledger_ = path("ledger.db");
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "k3", "m-3");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  // A dry run returns the letter: the quorum queue counts it, and says so on the next delivery.
  CliResult r = gate(false, {"--all", "--allow-peek"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  r = gate(false, {"--all"});
  ASSERT_EQ(r.exit_code, 2) << r.err;
  ASSERT_NE(r.err.find("carry x-delivery-count"), std::string::npos) << r.err;
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  r = gate(true, {"--all"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Message> copies = client_.get_all("payment.capture");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].headers.count("x-delivery-count"), 0u) << "the dead-letter queue's count";
  EXPECT_EQ(copies[0].headers.at("x-replay"), "1");
  EXPECT_EQ(copies[0].headers.at("x-first-death-queue"), "payment.capture");
  ASSERT_FALSE(copies[0].x_death_queues.empty());
  EXPECT_EQ(copies[0].x_death_queues[0], "payment.capture");
}

TEST_F(RabbitGate, APreemptedRateWaitNeverDropsTheConnection) {
  // The gate waits at the rate wait's pause point (after its deadline check) until the deadline
  // has passed, as a preempted thread would: the time left is negative there, and the wait must
  // be 0 ms, not a negative timeval that librabbitmq refuses ("invalid parameter") and that made
  // the gate drop both connections and return every prefetched letter.
  ledger_ = path("ledger.db");
  for (int i = 0; i < 3; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_pw" + std::to_string(i),
                "pw-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 3), "");
  const std::string flag = path("paused");
  CliRun run;
  run.args = gate_args(true, {"--all"});
  for (size_t i = 0; i + 1 < run.args.size(); ++i) {
    if (run.args[i] == "--max-rate") run.args[i + 1] = "4";
  }
  run.env = {"REPLAYGATE_TEST_PAUSE_AT=rate_wait:" + flag};
  run.timeout_seconds = 120;
  CliResult r;
  std::thread gate_run([&] { r = run_cli(dir_->path(), run); });
  EXPECT_TRUE(paused_at(flag)) << "the gate never waited for the rate";
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // past the wait's deadline
  std::filesystem::remove(flag);
  gate_run.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("reconnect"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("invalid parameter"), std::string::npos) << r.err;
  EXPECT_EQ(letters(r).size(), 3u) << r.out;
  EXPECT_EQ(client_.message_count("payment.capture"), 3);
  EXPECT_EQ(client_.wait_for_count("dlq", 0), "");
}

TEST_F(RabbitGate, ASlowRateIsStoppedBySigtermAtOnce) {
  ledger_ = path("ledger.db");
  // A rate below one letter a day is refused before anything is consumed (1e-300 was "no limit").
  for (const char* rate : {"1e-300", "0.00001"}) {
    std::vector<std::string> args = gate_args(true, {"--all"});
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--max-rate") args[i + 1] = rate;
    }
    const CliResult refused = run_cli_args(dir_->path(), args);
    EXPECT_EQ(refused.exit_code, 2) << rate << refused.err;
    EXPECT_NE(refused.err.find("below one letter a day"), std::string::npos) << refused.err;
  }
  for (int i = 0; i < 2; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_sr" + std::to_string(i),
                "sr-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 2), "");
  // One letter, then a wait of 1,000 s for the next: SIGTERM after 3 s ends it within a second.
  std::vector<std::string> args = gate_args(true, {"--all"});
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--max-rate") args[i + 1] = "0.001";
  }
  double took = 0;
  const CliResult r = gate_stopped_after(args, 3, &took);
  EXPECT_EQ(r.exit_code, 124) << "timeout's code after its SIGTERM (137: SIGKILL was needed)"
                              << r.err;
  EXPECT_LT(took, 6.0) << r.err;
  EXPECT_NE(r.err.find("stopped by a signal"), std::string::npos) << r.err;
  EXPECT_EQ(letters(r).size(), 1u) << r.out;
  EXPECT_EQ(client_.message_count("payment.capture"), 1);
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "") << "the other letter returns, untouched";
}

TEST_F(RabbitGate, QuorumMessageIdRunsDropNothing) {
  ledger_ = path("ledger.db");
  limited_quorum_topology();
  for (int i = 0; i < 20; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_q" + std::to_string(i),
                "q-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("qdlq", 20), "");
  // Three searches for letters behind others: each stops at the head instead of taking (and
  // returning) the whole queue; the head's last delivery goes to the hold queue.
  for (const char* id : {"q-5", "q-10", "q-15"}) {
    CliRun run;
    run.args = on_qdlq(true, {"--message-id", id});
    run.timeout_seconds = 60;
    const CliResult r = run_cli(dir_->path(), run);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("refusing to search qdlq for message " + std::string(id)),
              std::string::npos)
        << r.err;
  }
  EXPECT_EQ(quorum_total(20), 20) << "a letter was dropped";
  EXPECT_EQ(client_.message_count("payment.capture"), 0) << "a letter not asked for was replayed";
  for (const Message& m : client_.get_all("qdlq.hold")) {
    EXPECT_EQ(m.headers.at("x-replaygate-rule"), "gate:last_delivery_attempt") << m.message_id;
  }
  client_.delete_queue("qdlq");
}

TEST_F(RabbitGate, QuorumRateLimitedRunsStoppedBySigtermDropNothing) {
  ledger_ = path("ledger.db");
  limited_quorum_topology();
  for (int i = 0; i < 30; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_qs" + std::to_string(i),
                "qs-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("qdlq", 30), "");
  std::vector<std::string> args = on_qdlq(true, {"--all"});
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--max-rate") args[i + 1] = "2";
  }
  long replayed = 0;
  for (int run = 0; run < 3; ++run) {
    double took = 0;
    const CliResult r = gate_stopped_after(args, 2, &took);
    EXPECT_EQ(r.exit_code, 124) << r.err;
    EXPECT_NE(r.err.find("stopped by a signal"), std::string::npos) << r.err;
    replayed += static_cast<long>(letters(r).size());
  }
  EXPECT_GT(replayed, 0);
  EXPECT_EQ(quorum_total(30), 30) << "a letter was dropped";
  EXPECT_EQ(client_.message_count("payment.capture"), replayed);
  // Pulling one letter at a time, a stop never returned one: no delivery attempt was used.
  for (const Message& m : client_.get_all("qdlq")) {
    const auto count = m.headers.find("x-delivery-count");
    EXPECT_TRUE(count == m.headers.end() || count->second == "0") << m.message_id;
  }
  client_.delete_queue("qdlq");
}

TEST_F(RabbitGate, QuorumKillNineAfterDryRunsDropsNothing) {
  ledger_ = path("ledger.db");
  limited_quorum_topology();
  for (int i = 0; i < 10; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_qk" + std::to_string(i),
                "qk-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("qdlq", 10), "");
  // Two allowed dry runs use up two attempts of every letter: each is now on its last delivery.
  for (int run = 0; run < 2; ++run) {
    CliRun dry;
    dry.args = on_qdlq(false, {"--all", "--allow-peek"});
    dry.timeout_seconds = 60;
    const CliResult r = run_cli(dir_->path(), dry);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(letters(r).size(), 10u) << r.out;
    EXPECT_EQ(quorum_total(10), 10);
  }
  // kill -9 after the first letter is acked: only the letter in hand could have gone back.
  CliRun apply;
  apply.args = on_qdlq(true, {"--all"});
  apply.timeout_seconds = 60;
  apply.env = {"REPLAYGATE_TEST_CRASH_AT=acked"};
  const CliResult killed = run_cli(dir_->path(), apply);
  EXPECT_NE(killed.exit_code, 0) << killed.err;
  EXPECT_EQ(quorum_total(10), 10) << "a letter was dropped by the kill";
  apply.env.clear();
  const CliResult r = run_cli(dir_->path(), apply);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const nlohmann::json& line : letters(r)) {
    EXPECT_EQ(line["rule"], "gate:last_delivery_attempt") << line.dump();
    EXPECT_EQ(line["action"], "hold") << line.dump();
  }
  EXPECT_EQ(quorum_total(10), 10) << "a letter was dropped";
  EXPECT_EQ(client_.message_count("qdlq.hold"), 10);
  EXPECT_EQ(client_.message_count("qdlq"), 0);
  client_.delete_queue("qdlq");
}

// kill -9 between the confirmed hold copy of a letter on its last delivery attempt and the ack of
// the original: the copy is in the hold queue; the original is either dropped by the broker (its
// attempts used up) or delivered again and held a second time (moves are at least once: two
// copies to review). Never lost, never replayed.
TEST_F(RabbitGate, QuorumKillNineBetweenTheLastAttemptsHoldAndItsAckDropsNothing) {
  ledger_ = path("ledger.db");
  limited_quorum_topology();
  dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_hl", "hl-1");
  ASSERT_EQ(client_.wait_for_count("qdlq", 1), "");
  for (int run = 0; run < 2; ++run) {  // two allowed dry runs use up two attempts
    CliRun dry;
    dry.args = on_qdlq(false, {"--all", "--allow-peek"});
    dry.timeout_seconds = 60;
    const CliResult r = run_cli(dir_->path(), dry);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(quorum_total(1), 1);
  }
  CliRun apply;
  apply.args = on_qdlq(true, {"--all"});
  apply.timeout_seconds = 60;
  apply.env = {"REPLAYGATE_TEST_CRASH_AT=held_last_attempt"};
  const CliResult killed = run_cli(dir_->path(), apply);
  EXPECT_EQ(killed.exit_code, 128 + SIGKILL) << killed.err;
  EXPECT_EQ(client_.wait_for_count("qdlq.hold", 1), "") << "the confirmed copy";
  // The broker takes the original back when the connection drops: give it time to land (or not).
  std::this_thread::sleep_for(std::chrono::seconds(1));
  apply.env.clear();
  const CliResult r = run_cli(dir_->path(), apply);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const nlohmann::json& line : letters(r)) {
    EXPECT_EQ(line["rule"], "gate:last_delivery_attempt") << line.dump();
    EXPECT_EQ(line["action"], "hold") << line.dump();
  }
  const long held = client_.message_count("qdlq.hold");
  EXPECT_GE(held, 1) << "lost";
  EXPECT_LE(held, 2);
  EXPECT_EQ(held, 1 + static_cast<long>(letters(r).size()));
  EXPECT_EQ(client_.message_count("qdlq"), 0);
  EXPECT_EQ(client_.message_count("payment.capture"), 0) << "replayed";
  for (const Message& m : client_.get_all("qdlq.hold")) {
    EXPECT_EQ(m.message_id, "hl-1");
    EXPECT_EQ(m.headers.at("x-replaygate-rule"), "gate:last_delivery_attempt");
  }
  EXPECT_TRUE(ledger_rows("cap_hl").empty()) << "a hold claims nothing";
  expect_audit_verifies();
  client_.delete_queue("qdlq");
}

TEST_F(RabbitGate, AReloadOfAnotherPolicyIsRefusedEvenWhenSigned) {
  ledger_ = path("ledger.db");
  // Two policies with the same inputs and verbs, signed by one key: the other one replays what
  // the running one parks (insufficient funds).
  std::string other = read_file(kSourceDir + "/policies/replay_gate.yaml");
  other.replace(other.find("policy: dlq-replay-gate"), 23, "policy: other-gate");
  const std::string declined = "{keys: [payment.capture, insufficient_funds], verb: never";
  other.replace(other.find(declined), declined.size(),
                "{keys: [payment.capture, insufficient_funds], verb: replay_once");
  write_file(path("other.yaml"), other);
  for (const std::vector<std::string>& step :
       {std::vector<std::string>{"compile", path("other.yaml"), "-o", path("other.rgt")},
        std::vector<std::string>{"key", "generate", "--secret", path("k.key"), "--public",
                                 path("k.pub")},
        std::vector<std::string>{"sign", table_, "--sign-key", path("k.key")},
        std::vector<std::string>{"sign", path("other.rgt"), "--sign-key", path("k.key")}}) {
    const CliResult done = run_cli_args(dir_->path(), step);
    ASSERT_EQ(done.exit_code, 0) << step[0] << done.err;
  }
  const std::string signed_other = read_file(path("other.rgt"));
  for (int i = 0; i < 12; ++i) {
    dead_letter("payment.capture", "com.acme.payments.gateway.InsufficientFundsException",
                "cap_pb" + std::to_string(i), "pb-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 12), "");
  const std::vector<std::string> trust = {"--trusted-key", path("k.pub"), "--trust-state",
                                          path("trust")};
  CliRun run;
  run.args = gate_args(true, {"--all", "--watch"});
  for (const std::string& a : trust) run.args.push_back(a);
  for (size_t i = 0; i + 1 < run.args.size(); ++i) {
    if (run.args[i] == "--max-rate") run.args[i + 1] = "5";
  }
  run.timeout_seconds = 120;
  std::thread swap([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    write_file(table_ + ".new", signed_other);
    std::filesystem::rename(table_ + ".new", table_);
  });
  CliResult r = run_cli(dir_->path(), run);
  swap.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("policy binding: this table is policy other-gate, and this worker is bound "
                       "to policy dlq-replay-gate"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("reload refused"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("reloaded the table"), std::string::npos) << r.err;
  EXPECT_EQ(letters(r).size(), 12u);
  EXPECT_EQ(client_.message_count("payment.capture"), 0) << "the other policy replayed a letter";
  EXPECT_EQ(client_.message_count("dlq.parked"), 12);
  // A restart with the other policy's table and the same trust state: refused, nothing consumed.
  dead_letter("payment.capture", "com.acme.payments.gateway.InsufficientFundsException", "cap_pbx",
              "pb-x");
  ASSERT_EQ(client_.wait_for_count("dlq", 1), "");
  std::vector<std::string> restart = gate_args(true, {"--all"});
  for (const std::string& a : trust) restart.push_back(a);
  r = run_cli_args(dir_->path(), restart);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("is bound to policy dlq-replay-gate"), std::string::npos) << r.err;
  // --policy-id names the policy; a table of another is refused at start (no trust state).
  r = run_cli_args(dir_->path(), gate_args(true, {"--all", "--policy-id", "dlq-replay-gate"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("policy binding"), std::string::npos) << r.err;
  r = run_cli_args(dir_->path(), gate_args(true, {"--all", "--policy-id", ""}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // A key file restricted to dlq-replay-gate refuses the other policy's table.
  write_file(path("k-main.pub"), read_file(path("k.pub")) + "policies dlq-replay-gate\n");
  std::vector<std::string> restricted =
      gate_args(true, {"--all", "--trusted-key", path("k-main.pub")});
  r = run_cli_args(dir_->path(), restricted);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("may sign only policy dlq-replay-gate, and this table is policy other-gate"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(client_.wait_for_count("dlq", 1), "") << "a refused start consumes nothing";
}

TEST_F(RabbitGate, WatchSeesAnInPlaceRewriteThatKeepsTheMtime) {
  ledger_ = path("ledger.db");
  for (int i = 0; i < 12; ++i) {
    dead_letter("payment.capture", "java.net.SocketTimeoutException", "cap_w" + std::to_string(i),
                "w-" + std::to_string(i));
  }
  ASSERT_EQ(client_.wait_for_count("dlq", 12), "");
  CliRun run;
  run.args = gate_args(true, {"--all", "--watch"});
  for (size_t i = 0; i + 1 < run.args.size(); ++i) {
    if (run.args[i] == "--max-rate") run.args[i + 1] = "5";
  }
  run.timeout_seconds = 120;
  std::thread rewrite([&] {
    // The same file (same inode and size), one byte changed, its mtime put back.
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    const auto mtime = std::filesystem::last_write_time(table_);
    std::string bytes = read_file(table_);
    bytes[bytes.size() / 2] ^= 0x01;
    write_file(table_, bytes);
    std::filesystem::last_write_time(table_, mtime);
  });
  const CliResult r = run_cli(dir_->path(), run);
  rewrite.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("reload refused"), std::string::npos) << "the rewrite was not seen\n"
                                                             << r.err;
  EXPECT_EQ(letters(r).size(), 12u);
  EXPECT_EQ(client_.message_count("payment.capture"), 12);
}

}  // namespace
}  // namespace replaygate::gate::testing
