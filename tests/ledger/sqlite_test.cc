// The SQLite backend: the shared semantics, many processes on one file, kill -9, an unwritable
// file, a full disk (RLIMIT_FSIZE), and files that must be refused (not a database, damaged,
// another application's, another schema version, an altered layout). Also the URL forms and the
// time texts, which do not depend on a backend.
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "support.h"

namespace replaygate::ledger::testing {
namespace {

class LedgerSqlite : public ::testing::Test {
 protected:
  std::string path() const { return dir_.file("ledger.db"); }
  Opener opener() const {
    const std::string p = path();
    return [p](const Options& o) { return open_ledger(p, o); };
  }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static void spit(const std::string& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  // Runs SQL on a file with plain SQLite (no ledger code).
  static void raw_sql(const std::string& p, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  // Creates a ledger with `n` claims and closes it.
  void make_ledger(int n) {
    auto l = open_ledger(path());
    ASSERT_TRUE(l.ok()) << l.error().message;
    std::vector<Claim> claims;
    for (int i = 0; i < n; ++i) claims.push_back(make_claim("pre-" + std::to_string(i)));
    if (n) {
      ASSERT_TRUE((*l)->claim_batch(claims).ok());
    }
  }
  void expect_claims(int n) {
    auto l = open_ledger(path());
    ASSERT_TRUE(l.ok()) << l.error().message;
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.push_back("pre-" + std::to_string(i));
    auto seen = (*l)->lookup(keys);
    ASSERT_TRUE(seen.ok()) << seen.error().message;
    for (int i = 0; i < n; ++i) EXPECT_TRUE((*seen)[i].has_value()) << keys[i];
  }

  TempDir dir_;
};

TEST_F(LedgerSqlite, ClaimAndLookup) { check_claim_and_lookup(opener()); }
TEST_F(LedgerSqlite, MarkTransitions) { check_mark_transitions(opener()); }
TEST_F(LedgerSqlite, ReleaseKeepsHistory) { check_release_history(opener()); }
TEST_F(LedgerSqlite, ListStatsExport) { check_list_stats_export(opener()); }
TEST_F(LedgerSqlite, PruneAgesRowsByTheLedgersClock) {
  check_prune_by_the_ledgers_clock(opener(), LedgerClock::kThisHost);
}
TEST_F(LedgerSqlite, ScopesSeparateSystems) { check_scopes(opener()); }
TEST_F(LedgerSqlite, InvalidArgumentsClaimNothing) { check_invalid_arguments(opener()); }
TEST_F(LedgerSqlite, ClaimsOutliveTheProcess) { check_persistence(opener()); }
TEST_F(LedgerSqlite, RestoreFillsAnEmptyScopeOnly) { check_restore(opener()); }
TEST_F(LedgerSqlite, CopyFieldsComeBack) { check_copy_fields(opener()); }

TEST(LedgerDuration, ParsesOneUnit) {
  using std::chrono::hours;
  using std::chrono::minutes;
  using std::chrono::seconds;
  EXPECT_EQ(parse_duration("30d"), hours{720});
  EXPECT_EQ(parse_duration("12h"), hours{12});
  EXPECT_EQ(parse_duration("90m"), minutes{90});
  EXPECT_EQ(parse_duration("45s"), seconds{45});
  EXPECT_EQ(parse_duration("0d"), seconds{0});
  EXPECT_EQ(parse_duration("999999d"), hours{999999 * 24});
  for (const char* bad :
       {"", "30", "d", "1.5d", "30 d", "1d12h", "-1d", "+1d", "30D", "30w", "1234567d", " 30d"}) {
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
  }
}

TEST_F(LedgerSqlite, SixProcessesOverlappingKeysEachKeyWonOnce) {
  // 6 processes, 3000 keys, each tries 1500 of them (every key by 3 processes), batches of 100.
  check_concurrent_processes(opener(), 6, 3000, 1500, 100);
}

TEST_F(LedgerSqlite, ProcessesOpeningOneNewFileAtOnceAllGetTheLedger) {
  // Gates started together on a ledger nobody has created yet: each one must wait for the
  // others' schema and WAL switch, never fail with "database is locked" (CI saw it once).
  for (int round = 0; round < 15; ++round) {
    const std::string p = dir_.file("race-" + std::to_string(round) + ".db");
    const std::vector<Child> children = children_at_once(6, [&](int i, int out) {
      auto l = open_ledger(p);
      if (!l.ok()) return write_all(out, l.error().message), 3;
      auto r = (*l)->claim_batch({make_claim("k-" + std::to_string(i))});
      if (!r.ok() || !(*r)[0].won) return write_all(out, r.ok() ? "lost" : r.error().message), 4;
      return 0;
    });
    ASSERT_EQ(children.size(), 6u);
    for (size_t i = 0; i < children.size(); ++i) {
      EXPECT_TRUE(WIFEXITED(children[i].status) && WEXITSTATUS(children[i].status) == 0)
          << "round " << round << " process " << i << ": " << children[i].said;
    }
    auto l = open_ledger(p);
    ASSERT_TRUE(l.ok()) << l.error().message;
    auto st = (*l)->stats();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->claimed, 6) << "round " << round;
  }
}

TEST_F(LedgerSqlite, Kill9MidBatchLosesNoReportedClaim) { check_kill9(opener(), 25); }

TEST_F(LedgerSqlite, FileIsInWalModeWithItsApplicationIdAndVersion) {
  make_ledger(1);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
    std::string v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(one("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(one("PRAGMA application_id"), std::to_string(0x52474C47));
  EXPECT_EQ(one("PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(one("SELECT count(*) FROM claims"), "1");
  sqlite3_close(db);
}

TEST_F(LedgerSqlite, UrlForms) {
  const std::string p = dir_.file("a.db");
  auto plain = open_ledger(p);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ((*plain)->describe(), "sqlite:" + p);
  auto prefixed = open_ledger("sqlite:" + p);
  ASSERT_TRUE(prefixed.ok());
  auto slashed = open_ledger("sqlite://" + p);  // sqlite:///tmp/... is the same file
  ASSERT_TRUE(slashed.ok());
  ASSERT_TRUE((*plain)->claim_batch({make_claim("u-1")}).ok());
  auto seen = (*slashed)->lookup({"u-1"});
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE((*seen)[0].has_value());
  for (const char* bad : {"", "sqlite:", "mysql://db/x", "redis://h"}) {
    auto r = open_ledger(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << bad;
  }
}

TEST_F(LedgerSqlite, EmptyFileBecomesALedger) {
  spit(path(), "");
  auto l = open_ledger(path());
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto r = (*l)->claim_batch({make_claim("e-1")});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].won);
}

TEST_F(LedgerSqlite, NotADatabaseIsRefusedAndLeftAlone) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "this is a log file, not a ledger\n";
  spit(path(), text);
  auto l = open_ledger(path());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kCorrupt);
  EXPECT_NE(l.error().message.find("not a SQLite database"), std::string::npos)
      << l.error().message;
  EXPECT_EQ(slurp(path()), text) << "a refused file is never rewritten";
}

TEST_F(LedgerSqlite, DamagedHeaderIsRefused) {
  make_ledger(10);
  std::string bytes = slurp(path());
  ASSERT_GT(bytes.size(), 100u);
  for (int i = 0; i < 16; ++i) bytes[static_cast<size_t>(i)] = 'X';
  spit(path(), bytes);
  auto l = open_ledger(path());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kCorrupt) << l.error().message;
  EXPECT_EQ(slurp(path()), bytes);
}

TEST_F(LedgerSqlite, DamagedPagesAreReportedNotCrashedOn) {
  make_ledger(4000);
  std::string bytes = slurp(path());
  ASSERT_GT(bytes.size(), 4096u * 8);
  for (size_t i = 4096 * 2; i < bytes.size() - 4096; i += 7) bytes[i] = static_cast<char>(0xA5);
  spit(path(), bytes);
  auto l = open_ledger(path());
  if (!l.ok()) {
    EXPECT_EQ(l.error().code, ErrorCode::kCorrupt) << l.error().message;
    return;
  }
  auto n = (*l)->export_rows([](const Record&) { return true; });
  ASSERT_FALSE(n.ok()) << "a damaged file read back without an error";
  EXPECT_EQ(n.error().code, ErrorCode::kCorrupt) << n.error().message;
  auto c = (*l)->claim_batch({make_claim("pre-1"), make_claim("pre-3999")});
  if (c.ok()) {
    for (const auto& o : *c) EXPECT_FALSE(o.won) << "a damaged ledger granted " << o.holder.key;
  } else {
    EXPECT_EQ(c.error().code, ErrorCode::kCorrupt) << c.error().message;
  }
}

TEST_F(LedgerSqlite, ForeignDatabaseIsRefused) {
  raw_sql(path(),
          "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
          "INSERT INTO users (name) VALUES ('eve');");
  auto l = open_ledger(path());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kForeign);
  EXPECT_NE(l.error().message.find("users"), std::string::npos) << l.error().message;
  // Still the other application's file, untouched.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name = 'claims'", -1,
                               &s, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 0);
  sqlite3_finalize(s);
  sqlite3_close(db);

  const std::string other = dir_.file("other-app.db");
  raw_sql(other, "PRAGMA application_id = 1234;");
  auto l2 = open_ledger(other);
  ASSERT_FALSE(l2.ok());
  EXPECT_EQ(l2.error().code, ErrorCode::kForeign);
  EXPECT_NE(l2.error().message.find("0x000004D2"), std::string::npos) << l2.error().message;
}

TEST_F(LedgerSqlite, ANewerSchemaVersionIsRefusedUpgradeReplaygate) {
  make_ledger(3);
  raw_sql(path(), "PRAGMA user_version = 5;");
  auto l = open_ledger(path());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kSchemaVersion);
  EXPECT_EQ(l.error().message, "ledger sqlite:" + path() +
                                   ": refused: ledger schema version 5 is newer than this "
                                   "replaygate (4): upgrade replaygate");
  auto m = migrate_ledger(path());
  ASSERT_FALSE(m.ok()) << "migrate never moves a ledger back";
  EXPECT_EQ(m.error().message, l.error().message);
  raw_sql(path(), "PRAGMA user_version = 4;");
  expect_claims(3);  // nothing was recreated
}

// A ledger of schema version 1, 2 or 3 as the build of that version left it (a version-3 file
// made by an upgrade has the same text as a new one), with `rows` claims "old-N" (one released)
// and, from version 2 on, a copy's record on the first.
void make_old_ledger(const std::string& p, int version, int rows) {
  std::string sql =
      "CREATE TABLE claims (\n"
      "  scope TEXT NOT NULL,\n"
      "  key TEXT NOT NULL,\n"
      "  slot INTEGER NOT NULL,\n"
      "  generation INTEGER NOT NULL,\n"
      "  state TEXT NOT NULL CHECK (state IN ('claimed', 'recorded', 'confirmed', "
      "'released')),\n"
      "  policy TEXT NOT NULL,\n"
      "  revision INTEGER NOT NULL,\n"
      "  table_checksum TEXT NOT NULL,\n"
      "  rule TEXT NOT NULL,\n"
      "  message_id TEXT NOT NULL,\n"
      "  worker TEXT NOT NULL,\n"
      "  claimed_at TEXT NOT NULL,\n"
      "  updated_at TEXT NOT NULL,\n"
      "  released_by TEXT,\n"
      "  release_reason TEXT,\n"
      "  released_at TEXT,\n"
      "  CHECK ((state = 'released' AND slot = generation) OR (state <> 'released' AND slot = "
      "0))\n"
      ") STRICT;\n"
      "CREATE UNIQUE INDEX claims_key ON claims (scope, key, slot);\n"
      "CREATE INDEX claims_time ON claims (scope, claimed_at);\n";
  for (int i = 0; i < rows; ++i) {
    const std::string n = std::to_string(i);
    const bool released = i == 1;
    sql +=
        "INSERT INTO claims VALUES ('default', 'old-" + n + "', " + (released ? "1" : "0") +
        ", 1, '" + (released ? "released" : "confirmed") +
        "', 'dlq-replay-gate', 1, '1242ace0f61e98a37d91a175388558cb', 'r', 'm-old-" + n +
        "', 'gate-0', '2026-11-01T10:00:00.000000Z', '2026-11-01T10:00:01.000000Z', " +
        (released ? "'ops', 'INC-1 refund', '2026-11-01T10:00:01.000000Z'" : "NULL, NULL, NULL") +
        ");\n";
  }
  if (version >= 2) {
    sql +=
        "ALTER TABLE claims ADD COLUMN copy_replay INTEGER;\n"
        "ALTER TABLE claims ADD COLUMN body_digest TEXT;\n"
        "UPDATE claims SET copy_replay = 3, body_digest = 'sha256:0f' WHERE key = 'old-0';\n";
  }
  if (version >= 3) {
    sql +=
        "ALTER TABLE claims ADD COLUMN recorded_at TEXT NOT NULL DEFAULT '';\n"
        "UPDATE claims SET recorded_at = claimed_at;\n"
        "CREATE INDEX claims_recorded ON claims (recorded_at);\n"
        "CREATE TABLE audit_anchors (\n"
        "  scope TEXT NOT NULL,\n"
        "  log TEXT NOT NULL,\n"
        "  seq INTEGER NOT NULL,\n"
        "  head TEXT NOT NULL,\n"
        "  chain_digest TEXT NOT NULL,\n"
        "  key_id TEXT NOT NULL,\n"
        "  recorded_at TEXT NOT NULL,\n"
        "  PRIMARY KEY (scope, log)\n"
        ") STRICT, WITHOUT ROWID;\n"
        "INSERT INTO audit_anchors VALUES ('default', 'h:/a.log', 7, 'aa', 'bb', 'cc', "
        "'2026-11-01T10:00:02.000000Z');\n";
  }
  sql +=
      "PRAGMA application_id = 1380404295; PRAGMA user_version = " + std::to_string(version) + ";";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_close(db);
}

// The schema of a file as text: user_version and every object, by name.
std::string schema_of(const std::string& p) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db,
                               "SELECT (SELECT user_version FROM pragma_user_version) || '|' || "
                               "group_concat(name || ':' || sql, ';') FROM (SELECT name, sql "
                               "FROM sqlite_master ORDER BY name)",
                               -1, &s, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
  std::string text = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return text;
}

TEST_F(LedgerSqlite, AnOlderSchemaVersionIsRefusedRunLedgerMigrate) {
  for (int version : {1, 2, 3}) {
    const std::string p = dir_.file("v" + std::to_string(version) + ".db");
    make_old_ledger(p, version, 2);
    const std::string before = schema_of(p);
    auto l = open_ledger(p);
    ASSERT_FALSE(l.ok()) << version;
    EXPECT_EQ(l.error().code, ErrorCode::kSchemaVersion);
    EXPECT_EQ(l.error().message,
              "ledger sqlite:" + p + ": refused: ledger schema version " + std::to_string(version) +
                  "; this replaygate uses 4: run `replaygate ledger migrate --ledger sqlite:" + p +
                  " --operator NAME --reason TEXT --audit LOG`");
    EXPECT_EQ(schema_of(p), before) << "a refused ledger is left as it was";
  }
}

TEST_F(LedgerSqlite, MigrateFromVersions123To4KeepsEveryRow) {
  const std::string fresh = dir_.file("fresh.db");
  { ASSERT_TRUE(open_ledger(fresh).ok()); }
  for (int version : {1, 2, 3}) {
    SCOPED_TRACE("version " + std::to_string(version));
    const std::string p = dir_.file("m" + std::to_string(version) + ".db");
    make_old_ledger(p, version, 40);
    auto m = migrate_ledger(p);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->from, version);
    EXPECT_EQ(m->to, 4);
    EXPECT_EQ(schema_of(p), schema_of(fresh)) << "exactly a new file's schema";
    auto l = open_ledger(p);
    ASSERT_TRUE(l.ok()) << l.error().message;
    auto st = (*l)->stats();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->confirmed, 39);
    EXPECT_EQ(st->released, 1);
    EXPECT_EQ(st->keys, 40);
    auto old0 = (*l)->show("old-0");
    ASSERT_TRUE(old0.ok());
    ASSERT_EQ(old0->size(), 1u);
    EXPECT_EQ((*old0)[0].message_id, "m-old-0");
    EXPECT_EQ(format_time((*old0)[0].recorded_at), "2026-11-01T10:00:00.000000Z");
    if (version >= 2) {
      EXPECT_EQ((*old0)[0].copy_replay, 3);
      EXPECT_EQ((*old0)[0].body_digest, "sha256:0f");
    } else {
      EXPECT_FALSE((*old0)[0].copy_replay.has_value());
    }
    auto old1 = (*l)->show("old-1");
    ASSERT_TRUE(old1.ok());
    ASSERT_EQ(old1->size(), 1u);
    EXPECT_EQ((*old1)[0].state, State::kReleased);
    EXPECT_EQ((*old1)[0].release_reason, "INC-1 refund");
    if (version == 3) {
      auto anchors = (*l)->anchors();
      ASSERT_TRUE(anchors.ok());
      ASSERT_EQ(anchors->size(), 1u);
      EXPECT_EQ((*anchors)[0].seq, 7);
    }
    // The plan tables work, and a second migrate has nothing to do.
    ASSERT_TRUE((*l)->claim_batch({make_claim("new-1")}).ok());
    PlanRecord plan;
    plan.digest = "blake2b:" + std::string(64, 'f');
    ASSERT_TRUE((*l)->record_plan(plan).ok());
    auto again = migrate_ledger(p);
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->from, 4);
    EXPECT_EQ(again->to, 4);
  }
}

TEST_F(LedgerSqlite, MigrateRefusesAMissingFileAnAlteredOneAndAForeignOne) {
  auto missing = migrate_ledger(dir_.file("none.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kUnavailable);
  EXPECT_FALSE(std::filesystem::exists(dir_.file("none.db"))) << "migrate creates nothing";
  const std::string altered = dir_.file("altered.db");
  make_old_ledger(altered, 2, 3);
  raw_sql(altered, "DROP INDEX claims_key;");
  const std::string before = schema_of(altered);
  auto m = migrate_ledger(altered);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kForeign);
  EXPECT_NE(m.error().message.find("differ from schema version 2"), std::string::npos)
      << m.error().message;
  EXPECT_EQ(schema_of(altered), before);
  raw_sql(dir_.file("users.db"), "CREATE TABLE users (id INTEGER);");
  auto foreign = migrate_ledger(dir_.file("users.db"));
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error().code, ErrorCode::kForeign);
}

// kill -9 inside the migration's transaction (after the new tables are written, before COMMIT):
// the file is at version 3 still, with every row; a rerun completes.
TEST_F(LedgerSqlite, Kill9InsideMigrateLeavesTheOldVersionAndARerunCompletes) {
  make_old_ledger(path(), 3, 25);
  const std::string before = schema_of(path());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Options o;
    o.test_point = [](std::string_view step) {
      if (step == "migrate_in_transaction") raise(SIGKILL);
    };
    (void)migrate_ledger(path(), o);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_EQ(schema_of(path()), before) << "killed inside the transaction: still version 3";
  auto refused = open_ledger(path());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("run `replaygate ledger migrate"), std::string::npos);
  auto m = migrate_ledger(path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->from, 3);
  auto l = open_ledger(path());
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ((*l)->stats()->keys, 25);
}

TEST_F(LedgerSqlite, PlanRecords) { check_plan_records(opener()); }
TEST_F(LedgerSqlite, PlanApprovalsOnePerApproverNoneOnceCancelled) {
  check_plan_approvals(opener());
}
TEST_F(LedgerSqlite, PlanProgressAddsUp) { check_plan_progress(opener()); }
TEST_F(LedgerSqlite, MarksAndPlanProgressAreOneTransaction) { check_marks_with_progress(opener()); }
TEST_F(LedgerSqlite, PlanProgressSumsAreTheIncrementsInAnyOrderProperty) {
  check_plan_progress_property(opener());
}
TEST_F(LedgerSqlite, OneApprovalPerApproverUnderARace) { check_plan_approval_race(opener(), 20); }
TEST_F(LedgerSqlite, PlanProgressFromFourProcessesIsExact) {
  check_plan_progress_concurrent(opener(), 4, 40);
}
TEST_F(LedgerSqlite, PlanTablesAreInTheSchema) {
  make_ledger(0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db,
                               "SELECT group_concat(name, ',') FROM (SELECT name FROM "
                               "sqlite_master WHERE name LIKE 'plan%' ORDER BY name)",
                               -1, &s, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
               "plan_approvals,plan_progress,plans");
  sqlite3_finalize(s);
  sqlite3_close(db);
}

TEST_F(LedgerSqlite, AuditAnchorsMoveOnlyForward) { check_audit_anchors(opener()); }

TEST_F(LedgerSqlite, ALedgerMadeBeforeTheAnchorsGetsTheirTable) {
  make_ledger(2);
  raw_sql(path(), "DROP TABLE audit_anchors;");
  auto l = open_ledger(path());
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto stats = (*l)->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->claimed, 2);
  AuditAnchor a{"h:/a.log", 4, std::string(32, 'a'), std::string(64, 'b'), std::string(32, 'c')};
  ASSERT_TRUE((*l)->raise_anchor(a).ok());
  auto all = (*l)->anchors();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].seq, 4);
}

TEST_F(LedgerSqlite, AlteredLayoutIsRefused) {
  make_ledger(3);
  // Without the unique index two live claims per key would be possible.
  raw_sql(path(), "DROP INDEX claims_key;");
  auto l = open_ledger(path());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kForeign);
  EXPECT_NE(l.error().message.find("differ"), std::string::npos) << l.error().message;
}

TEST_F(LedgerSqlite, DirectoryPathIsUnavailable) {
  auto l = open_ledger(dir_.path());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kUnavailable) << l.error().message;
  auto missing = open_ledger(dir_.file("no/such/dir/ledger.db"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kUnavailable) << missing.error().message;
}

// Runs `body` in a child process that cannot write the ledger's directory or file (as the
// `nobody` user when the test runs as root, since root ignores file modes); returns its exit code.
int in_unprivileged_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(90);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

TEST_F(LedgerSqlite, UnwritableFileIsUnavailableAndKeepsEarlierClaims) {
  make_ledger(20);
  ASSERT_EQ(chmod(path().c_str(), 0444), 0);
  ASSERT_EQ(chmod(dir_.path().c_str(), 0555), 0);  // no -wal/-shm can be created either
  const std::string p = path();
  const int rc = in_unprivileged_child([&] {
    auto l = open_ledger(p);
    if (!l.ok()) return l.error().code == ErrorCode::kUnavailable ? 10 : 11;
    auto r = (*l)->claim_batch({make_claim("new-1"), make_claim("pre-0")});
    if (r.ok()) return 12;  // granted without a durable record: the failure this test is about
    return r.error().code == ErrorCode::kUnavailable ? 20 : 21;
  });
  EXPECT_TRUE(rc == 10 || rc == 20)
      << "child exit " << rc << " (11/21: wrong error code, 12: claimed without writing)";
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(chmod(path().c_str(), 0644), 0);
  expect_claims(20);
  auto l = open_ledger(path());
  ASSERT_TRUE(l.ok());
  auto seen = (*l)->lookup({"new-1"});
  ASSERT_TRUE(seen.ok());
  EXPECT_FALSE((*seen)[0].has_value());
}

TEST_F(LedgerSqlite, DiskFullIsUnavailableAndKeepsEarlierClaims) {
  make_ledger(50);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead of killing us
    auto l = open_ledger(path());
    if (!l.ok()) _exit(3);
    struct stat st {};
    stat(path().c_str(), &st);
    const rlim_t limit = static_cast<rlim_t>(st.st_size) + 512 * 1024;
    rlimit rl{limit, limit};
    setrlimit(RLIMIT_FSIZE, &rl);
    int errors = 0;
    for (int b = 0; b < 1000 && errors < 3; ++b) {
      std::vector<Claim> claims;
      for (int i = 0; i < 500; ++i)
        claims.push_back(make_claim("full-" + std::to_string(b * 500 + i)));
      auto r = (*l)->claim_batch(claims);
      if (!r.ok()) {
        write_all(fds[1], "ERROR " + std::string(error_code_name(r.error().code)) + " " +
                              r.error().message + "\n");
        ++errors;
        continue;
      }
      std::string won;
      for (size_t i = 0; i < claims.size(); ++i) {
        if ((*r)[i].won) won += claims[i].key + "\n";
      }
      write_all(fds[1], won);
    }
    _exit(errors ? 0 : 5);
  }
  close(fds[1]);
  const auto lines = complete_lines(read_all(fds[0]));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the size limit was never hit";
  std::vector<std::string> won;
  int errors = 0;
  for (const auto& line : lines) {
    if (line.starts_with("ERROR ")) {
      ++errors;
      EXPECT_TRUE(line.starts_with("ERROR unavailable ")) << line;
    } else {
      won.push_back(line);
    }
  }
  EXPECT_EQ(errors, 3) << "every call after the disk filled up fails";
  EXPECT_GT(won.size(), 0u) << "some batches should have fit";
  expect_claims(50);
  auto l = open_ledger(path());
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto seen = (*l)->lookup(won);
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  for (size_t i = 0; i < won.size(); ++i) EXPECT_TRUE((*seen)[i].has_value()) << won[i];
  auto st = (*l)->stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->claimed, static_cast<std::int64_t>(50 + won.size()))
      << "a failed batch left nothing behind";
}

TEST_F(LedgerSqlite, BusyDatabaseIsWaitedFor) {
  make_ledger(1);
  // Another connection holds the write lock for 300 ms; a claim waits and then succeeds.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path().c_str(), &db), SQLITE_OK);
  auto l = open_ledger(path());
  ASSERT_TRUE(l.ok()) << l.error().message;
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = (*l)->claim_batch({make_claim("busy-1")});
  const auto waited = std::chrono::steady_clock::now() - t0;
  release.join();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE((*r)[0].won);
  EXPECT_GE(waited, std::chrono::milliseconds(200));
  // With a short busy_timeout, a lock held longer is kUnavailable.
  Options quick;
  quick.busy_timeout_ms = 100;
  auto q = open_ledger(path(), quick);
  ASSERT_TRUE(q.ok()) << q.error().message;
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto r2 = (*q)->claim_batch({make_claim("busy-2")});
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r2.error().message.find("locked"), std::string::npos) << r2.error().message;
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
}

TEST(LedgerTime, FormatsAndParsesRfc3339) {
  auto t = parse_time("2026-12-02T06:52:16.123456Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(format_time(*t), "2026-12-02T06:52:16.123456Z");
  EXPECT_EQ(format_time(*parse_time("2026-12-02T08:52:16+02:00")), "2026-12-02T06:52:16.000000Z");
  EXPECT_EQ(format_time(*parse_time("2026-12-01T23:00:00.5-07:30")), "2026-12-02T06:30:00.500000Z");
  EXPECT_EQ(format_time(*parse_time("2024-02-29t00:00:00.1234567z")),
            "2024-02-29T00:00:00.123456Z");
  EXPECT_EQ(format_time(Time{}), "1970-01-01T00:00:00.000000Z");
  for (const char* bad : {"", "2026-12-02", "2026-12-02T06:52:16", "2026-13-01T00:00:00Z",
                          "2025-02-29T00:00:00Z", "2026-12-02T24:00:00Z", "2026-12-02T06:52:16.Z",
                          "2026-12-02T06:52:16Zjunk", "2026-12-02T06:52:16+0200"}) {
    EXPECT_FALSE(parse_time(bad).has_value()) << bad;
  }
  EXPECT_EQ(parse_state("recorded"), State::kRecorded);
  EXPECT_FALSE(parse_state("Recorded").has_value());
  EXPECT_EQ(state_name(State::kReleased), "released");
}

}  // namespace
}  // namespace replaygate::ledger::testing
