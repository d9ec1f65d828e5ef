// `replaygate ledger migrate` end to end on SQLite (docs/ledger.md, "Schema versions"): an older
// ledger is refused by every command with the words to run, migrate brings it to version 4
// keeping every row, audited before and after; a second run has nothing to do; usage errors and
// a newer ledger exit 2; kill -9 between the two entries and inside the transaction, then a rerun,
// completes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.h"
#include "support/ledger_letters.h"

namespace replaygate::testing {
namespace {

using nlohmann::json;

class LedgerMigrate : public CliFixture {
 protected:
  std::string db() const { return (dir_ / "ledger.db").string(); }
  std::string log() const { return (dir_ / "audit.log").string(); }
  std::string dump(const std::string& name, const std::string& text) {
    write_file(dir_ / name, text);
    return (dir_ / name).string();
  }
  CliResult decide(const std::string& text, const std::string& name) {
    return run({"decide", "--policy", kReplayGatePolicy, "--ledger", db(), "--audit", log(),
                "--operator", "ops", dump(name, text)});
  }
  CliResult migrate(const std::vector<std::string>& env = {}) {
    CliRun how;
    how.args = {"ledger",     "migrate", "--ledger", db(),
                "--operator", "ana",     "--reason", "CHG-12: upgrade to 0.9",
                "--audit",    log()};
    how.env = env;
    return run_cli(dir_, how);
  }
  std::string export_rows() {
    const CliResult r = run({"ledger", "export", "--ledger", db()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  std::vector<json> entries() {
    std::vector<json> out;
    for (const std::string& line : lines_of(read_file(log()))) out.push_back(json::parse(line));
    return out;
  }
  void sql(const std::string& statement) {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &h), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(h, statement.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "");
    sqlite3_free(error);
    sqlite3_close(h);
  }
  int user_version() {
    sqlite3* h = nullptr;
    EXPECT_EQ(sqlite3_open(db().c_str(), &h), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &s, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    const int v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(h);
    return v;
  }
  // A real ledger (claims made by decide) taken back to schema version 3, as a build of version 3
  // made it: its export as this build printed it before.
  std::string version3_ledger() {
    EXPECT_EQ(decide(letter("m-1", "k1") + letter("m-2", "k2") + letter("m-3", "k3"), "a.jsonl")
                  .exit_code,
              0);
    const std::string before = export_rows();
    sql("DROP TABLE plans; DROP TABLE plan_approvals; DROP TABLE plan_progress; "
        "PRAGMA user_version = 3;");
    return before;
  }
};

TEST_F(LedgerMigrate, AnOlderLedgerIsRefusedThenMigratedWithEveryRowAndAudited) {
  const std::string before = version3_ledger();
  const size_t entries_before = entries().size();
  const CliResult refused = decide(letter("m-4", "k4"), "b.jsonl");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  // Fail closed: the letter is held and said so, never replayed.
  ASSERT_EQ(entries().size(), entries_before + 1);
  EXPECT_EQ(entries().back()["effect"], "none") << entries().back();
  EXPECT_EQ(entries().back()["rule"], "ledger:unavailable") << entries().back();
  EXPECT_NE(refused.err.find("ledger schema version 3; this replaygate uses 4: run `replaygate "
                             "ledger migrate --ledger sqlite:" +
                             db() + " --operator NAME --reason TEXT --audit LOG`"),
            std::string::npos)
      << refused.err;
  const CliResult shown = run({"ledger", "stats", "--ledger", db()});
  EXPECT_EQ(shown.exit_code, 2);
  EXPECT_NE(shown.err.find("run `replaygate ledger migrate"), std::string::npos) << shown.err;

  const CliResult m = migrate();
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_EQ(json::parse(m.out), json({{"ledger", db()}, {"from", 3}, {"to", 4}}));
  EXPECT_NE(m.err.find("migrated the ledger from schema version 3 to 4, every row kept"),
            std::string::npos)
      << m.err;
  EXPECT_EQ(user_version(), 4);
  EXPECT_EQ(export_rows(), before) << "every row, field for field";
  const std::vector<json> e = entries();
  ASSERT_EQ(e.size(), entries_before + 3);
  const json& requested = e[e.size() - 2];
  EXPECT_EQ(requested["kind"], "ledger");
  EXPECT_EQ(requested["act"], "ledger_migrate_requested");
  EXPECT_EQ(requested["operator"], "ana");
  EXPECT_EQ(requested["reason"], "CHG-12: upgrade to 0.9");
  EXPECT_EQ(requested["scope"], "default");
  const json& done = e.back();
  EXPECT_EQ(done["act"], "ledger_migrated");
  EXPECT_EQ(done["state"], "schema version 3 -> 4");
  EXPECT_EQ(done["reason"], "CHG-12: upgrade to 0.9");
  const CliResult verified = run({"audit", "verify", log()});
  EXPECT_EQ(verified.exit_code, 0) << verified.out << verified.err;

  // A second run has nothing to do (and says so, audited); the ledger works again.
  const CliResult again = migrate();
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(json::parse(again.out)["from"], 4);
  EXPECT_NE(again.err.find("already at version 4"), std::string::npos) << again.err;
  EXPECT_EQ(entries().back()["state"], "schema version 4 -> 4");
  EXPECT_EQ(decide(letter("m-4", "k4"), "c.jsonl").exit_code, 0);
}

TEST_F(LedgerMigrate, UsageErrorsWriteNothingANewerLedgerIsRefused) {
  version3_ledger();
  const size_t n = entries().size();
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"ledger", "migrate", "--ledger", db(), "--reason", "r", "--audit", log()},
           {"ledger", "migrate", "--ledger", db(), "--operator", "ana", "--audit", log()},
           {"ledger", "migrate", "--ledger", db(), "--operator", "ana", "--reason", "r"},
           {"ledger", "migrate", "--operator", "ana", "--reason", "r", "--audit", log()}}) {
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
  }
  EXPECT_EQ(entries().size(), n) << "a usage error writes nothing";
  EXPECT_EQ(user_version(), 3);
  const CliResult missing = run({"ledger", "migrate", "--ledger", (dir_ / "none.db").string(),
                                 "--operator", "ana", "--reason", "r", "--audit", log()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no ledger at"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "none.db"));

  sql("PRAGMA user_version = 5;");
  const CliResult newer = migrate();
  EXPECT_EQ(newer.exit_code, 2);
  EXPECT_NE(newer.err.find("ledger schema version 5 is newer than this replaygate (4): upgrade "
                           "replaygate (schema_version)"),
            std::string::npos)
      << newer.err;
  EXPECT_NE(newer.err.find("the ledger was NOT migrated"), std::string::npos) << newer.err;
  EXPECT_EQ(entries().back()["act"], "ledger_migrate_requested");
  EXPECT_EQ(user_version(), 5);
}

// kill -9 after the request is recorded, inside the transaction, and after the commit: the
// ledger is at version 3 or 4, never between, with every row; a rerun completes and records both.
TEST_F(LedgerMigrate, Kill9AtEachStepThenARerunCompletes) {
  for (const char* step : {"migrate_requested", "migrate_in_transaction", "migrated"}) {
    SCOPED_TRACE(step);
    std::filesystem::remove(db());
    std::filesystem::remove(db() + "-wal");
    std::filesystem::remove(db() + "-shm");
    std::filesystem::remove(log());
    const std::string before = version3_ledger();
    const CliResult crashed = migrate({std::string("REPLAYGATE_TEST_CRASH_AT=") + step});
    EXPECT_EQ(crashed.exit_code, 128 + SIGKILL) << crashed.err;
    const bool committed = std::string(step) == "migrated";
    EXPECT_EQ(user_version(), committed ? 4 : 3);
    EXPECT_EQ(entries().back()["act"], "ledger_migrate_requested");
    const CliResult rerun = migrate();
    ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
    EXPECT_EQ(json::parse(rerun.out)["from"], committed ? 4 : 3);
    EXPECT_EQ(user_version(), 4);
    EXPECT_EQ(export_rows(), before);
    EXPECT_EQ(entries().back()["act"], "ledger_migrated");
    EXPECT_EQ(run({"audit", "verify", log()}).exit_code, 0);
  }
}

}  // namespace
}  // namespace replaygate::testing
