// The ledger's operator commands on PostgreSQL, end to end through the CLI: decide --audit, a
// release, a clean check, a check that finds a claim made without an audit entry, and a rebuild
// into an empty schema that reproduces the claims. Against a private postgresql-15 server
// (pg_server.h), labelled `server`; the SQLite variants are in tests/tools/ledger_ops_test.cc.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "ledger/ledger.h"
#include "pg_server.h"
#include "support/cli_runner.h"
#include "support/ledger_letters.h"

namespace replaygate::testing {
namespace {

using ledger::testing::PgServer;
using nlohmann::json;

class LedgerOpsPostgres : public CliFixture {
 protected:
  static void SetUpTestSuite() {
    server_ = new PgServer();
    start_error_ = new std::string(server_->create());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete start_error_;
    start_error_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(start_error_->empty()) << "no PostgreSQL server for the test: " << *start_error_;
  }
  // A ledger in its own schema of the server (a fresh, empty ledger per name).
  std::string ledger(const std::string& schema) {
    EXPECT_EQ(server_->psql("CREATE SCHEMA IF NOT EXISTS " + schema + ";"), 0);
    return server_->url() + "?options=-csearch_path%3D" + schema;
  }
  std::string log() const { return (dir_ / "audit.log").string(); }
  std::vector<json> rows(const std::string& url) {
    const CliResult r = run({"ledger", "export", "--ledger", url});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return rows_modulo_times(r.out);
  }

  static PgServer* server_;
  static std::string* start_error_;
};

PgServer* LedgerOpsPostgres::server_ = nullptr;
std::string* LedgerOpsPostgres::start_error_ = nullptr;

TEST_F(LedgerOpsPostgres, ReleaseCheckAndRebuild) {
  const std::string url = ledger("ops_main");
  write_file(dir_ / "d.jsonl", letter("m-1", "k1") + letter("m-2", "k2"));
  const auto decide = [&](const std::string& file) {
    return run({"decide", "--policy", kReplayGatePolicy, "--ledger", url, "--audit", log(),
                "--operator", "ops", (dir_ / file).string()});
  };
  ASSERT_EQ(decide("d.jsonl").exit_code, 0);
  const CliResult released = run({"ledger", "release", "k1", "--ledger", url, "--operator", "ana",
                                  "--reason", "OPS-9", "--audit", log()});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  write_file(dir_ / "e.jsonl", letter("m-3", "k1") + letter("m-4", "k2"));
  const CliResult again = decide("e.jsonl");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::vector<json> d = decisions(again.out);
  EXPECT_EQ(d.at(0)["verb"], "replay_once") << "released: one more replay";
  EXPECT_EQ(d.at(1)["rule"], "ledger:already_replayed");
  const CliResult clean =
      run({"ledger", "check", "--ledger", url, "--audit", log(), "--output", "json"});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_EQ(json::parse(clean.out)["claims"], 3);

  // Rebuilt into an empty schema: the same claims.
  const std::string copy = ledger("ops_rebuilt");
  const CliResult rebuilt = run({"ledger", "rebuild", "--from-audit", log(), "--ledger", copy});
  ASSERT_EQ(rebuilt.exit_code, 0) << rebuilt.err;
  EXPECT_EQ(rows(copy), rows(url));
  EXPECT_EQ(run({"ledger", "rebuild", "--from-audit", log(), "--ledger", copy}).exit_code, 2)
      << "a second rebuild into the same scope is refused";

  // A claim without an audit entry (a decide killed between claim and append).
  {
    auto l = ledger::open_ledger(url);
    ASSERT_TRUE(l.ok()) << l.error().message;
    ledger::Claim c;
    c.key = "k7";
    c.worker = "host:1";
    ASSERT_TRUE((*l)->claim_batch({c}).ok());
  }
  const CliResult found =
      run({"ledger", "check", "--ledger", url, "--audit", log(), "--output", "json"});
  EXPECT_EQ(found.exit_code, 1) << found.out << found.err;
  const json report = json::parse(found.out);
  ASSERT_EQ(report["findings"].size(), 1u) << report;
  EXPECT_EQ(report["findings"][0]["kind"], "claim_without_entry");
  EXPECT_EQ(report["findings"][0]["key"], "k7");
}

// `ledger migrate` on PostgreSQL: a version-3 ledger (a real one taken back: the plan tables
// dropped, the version set to 3) is refused, killed -9 inside the migration's transaction stays at
// version 3, and a rerun migrates it keeping every row, audited.
TEST_F(LedgerOpsPostgres, MigrateAVersion3LedgerKill9InsideThenRerun) {
  const std::string url = ledger("ops_migrate");
  write_file(dir_ / "d.jsonl", letter("m-1", "k1") + letter("m-2", "k2") + letter("m-3", "k3"));
  ASSERT_EQ(run({"decide", "--policy", kReplayGatePolicy, "--ledger", url, "--audit", log(),
                 "--operator", "ops", (dir_ / "d.jsonl").string()})
                .exit_code,
            0);
  const std::vector<json> before = rows(url);
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(server_->psql("SET search_path TO ops_migrate; DROP TABLE replaygate_ledger_plans, "
                          "replaygate_ledger_plan_approvals, replaygate_ledger_plan_progress; "
                          "UPDATE replaygate_ledger_meta SET value = '3' WHERE name = "
                          "'schema_version';"),
            0);
  const CliResult refused = run({"ledger", "export", "--ledger", url});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("ledger schema version 3; this replaygate uses 4: run `replaygate "
                             "ledger migrate --ledger "),
            std::string::npos)
      << refused.err;
  CliRun how;
  how.args = {"ledger", "migrate",  "--ledger", url,       "--operator",
              "ana",    "--reason", "CHG-12",   "--audit", log()};
  how.env = {"REPLAYGATE_TEST_CRASH_AT=migrate_in_transaction"};
  const CliResult crashed = run_cli(dir_, how);
  EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
  EXPECT_EQ(run({"ledger", "export", "--ledger", url}).exit_code, 2) << "still version 3";
  how.env.clear();
  const CliResult migrated = run_cli(dir_, how);
  ASSERT_EQ(migrated.exit_code, 0) << migrated.err;
  EXPECT_EQ(json::parse(migrated.out)["from"], 3);
  EXPECT_EQ(json::parse(migrated.out)["to"], 4);
  EXPECT_EQ(rows(url), before);
  const std::vector<std::string> lines = lines_of(read_file(log()));
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(json::parse(lines[lines.size() - 3])["act"], "ledger_migrate_requested");
  EXPECT_EQ(json::parse(lines[lines.size() - 2])["act"], "ledger_migrate_requested");
  EXPECT_EQ(json::parse(lines.back())["state"], "schema version 3 -> 4");
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
}

// A plan's whole flow on a PostgreSQL ledger: build (recorded), approve by a second person,
// the #660 group grown by two letters, the run acts on the two planned only, a rerun on none;
// status, check and the audit log agree.
TEST_F(LedgerOpsPostgres, APlanRunsExactlyItsLettersOnce) {
  const std::string url = ledger("ops_plan");
  for (const char* who : {"alice", "bob"}) {
    ASSERT_EQ(run({"key", "generate", "--secret", (dir_ / (std::string(who) + ".key")).string(),
                   "--public", (dir_ / (std::string(who) + ".pub")).string()})
                  .exit_code,
              0);
  }
  write_file(dir_ / "users.json",
             R"({"format_version":1,"users":[{"name":"alice","role":"approver","public_key":)"
             R"("alice.pub"},{"name":"bob","role":"approver","public_key":"bob.pub"}]})");
  write_file(dir_ / "reviewed.jsonl", letter("m-1", "k1") + letter("m-2", "k2"));
  const std::string plan = (dir_ / "p.json").string(), users = (dir_ / "users.json").string();
  CliResult r =
      run({"plan", "build", (dir_ / "reviewed.jsonl").string(), "--policy", kReplayGatePolicy,
           "--author", "alice", "--plan", plan, "--ledger", url, "--audit", log()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run({"plan", "approve", plan, "--operator", "bob", "--sign-key", (dir_ / "bob.key").string(),
           "--reason", "reviewed", "--users", users, "--ledger", url, "--audit", log()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  write_file(dir_ / "now.jsonl",
             letter("m-1", "k1") + letter("m-3", "k3") + letter("m-2", "k2") + letter("m-4", "k4"));
  const std::vector<std::string> execute = {
      "decide",     "--policy", kReplayGatePolicy, (dir_ / "now.jsonl").string(),
      "--plan",     plan,       "--users",         users,
      "--ledger",   url,        "--audit",         log(),
      "--operator", "carol"};
  r = run(execute);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> states;
  for (const json& d : decisions(r.out)) states.push_back(d.at("plan").get<std::string>());
  EXPECT_EQ(states, (std::vector<std::string>{"act", "skipped", "act", "skipped"}));
  r = run(execute);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  states.clear();
  for (const json& d : decisions(r.out)) states.push_back(d.at("plan").get<std::string>());
  EXPECT_EQ(states, (std::vector<std::string>{"skipped", "skipped", "skipped", "skipped"}));
  r = run({"plan", "status", plan, "--ledger", url, "--output", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json status = json::parse(r.out);
  EXPECT_EQ(status.at("done"), 2);
  EXPECT_EQ(status.at("pending"), 0);
  const CliResult check =
      run({"ledger", "check", "--ledger", url, "--audit", log(), "--output", "json"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(json::parse(check.out)["claims"], 2);
  EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
}

}  // namespace
}  // namespace replaygate::testing
