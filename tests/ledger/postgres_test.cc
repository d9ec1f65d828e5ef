// The PostgreSQL backend against a private postgresql-15 server that the suite starts on
// 127.0.0.1 (a free port, a temporary directory, run as `postgres`) and stops by process id.
// The server is started once per test process (ctest runs each test in its own process). When
// postgresql-15 is not installed every test FAILS with that message: these tests are never
// skipped silently (tools/setup.sh installs the package).
#include <libpq-fe.h>
#include <signal.h>
#include <sys/wait.h>

#include <atomic>

#include "pg_server.h"
#include "support.h"

namespace replaygate::ledger::testing {
namespace {

class LedgerPostgres : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new PgServer();
    start_error_ = new std::string(server_->create());
  }
  static void TearDownTestSuite() {
    delete server_;  // stops the server by its pid and removes its directory
    server_ = nullptr;
    delete start_error_;
    start_error_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(start_error_->empty()) << "no PostgreSQL server for the test: " << *start_error_;
    // Every test gets its own schema (first on the search path), so layouts and scopes never
    // leak between tests. (A database per test costs a second of fsyncs at each shutdown.)
    static std::atomic<int> n{0};
    schema_ = "t" + std::to_string(getpid()) + "_" + std::to_string(n++);
    ASSERT_EQ(server_->psql("CREATE SCHEMA " + schema_ + ";"), 0);
  }
  // The tables of this test, in its schema.
  int psql(const std::string& sql) const {
    return server_->psql("SET search_path TO " + schema_ + ";\n" + sql);
  }
  std::string query() const { return "?options=-csearch_path%3D" + schema_; }
  std::string url() const { return server_->url() + query(); }
  Opener opener() const {
    const std::string u = url();
    return [u](const Options& o) { return open_ledger(u, o); };
  }

  static PgServer* server_;
  static std::string* start_error_;
  std::string schema_;
};

PgServer* LedgerPostgres::server_ = nullptr;
std::string* LedgerPostgres::start_error_ = nullptr;

TEST_F(LedgerPostgres, ClaimAndLookup) { check_claim_and_lookup(opener()); }

// A server restarted between two calls (the gate's block between its claim and its mark): the
// next call finds its connection lost before anything was sent, reconnects once and goes on.
TEST_F(LedgerPostgres, AServerRestartedBetweenCallsIsReconnectedOnce) {
  Result<std::unique_ptr<Ledger>> opened = open_ledger(url(), Options{});
  ASSERT_TRUE(opened) << opened.error().message;
  Ledger& ledger = **opened;
  Result<std::vector<ClaimOutcome>> first = ledger.claim_batch({make_claim("restart-1")});
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(first->at(0).won);
  server_->stop();
  ASSERT_EQ(server_->start(), "");
  const Status marked =
      ledger.mark_batch({{"restart-1", first->at(0).holder.generation}}, State::kConfirmed);
  ASSERT_TRUE(marked) << marked.error().message;
  Result<std::vector<ClaimOutcome>> second = ledger.claim_batch({make_claim("restart-2")});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_TRUE(second->at(0).won);
  Result<std::vector<std::optional<Record>>> rows = ledger.lookup({"restart-1"});
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_TRUE(rows->at(0));
  EXPECT_EQ(rows->at(0)->state, State::kConfirmed);
}
TEST_F(LedgerPostgres, MarkTransitions) { check_mark_transitions(opener()); }
TEST_F(LedgerPostgres, ReleaseKeepsHistory) { check_release_history(opener()); }
TEST_F(LedgerPostgres, ListStatsExport) { check_list_stats_export(opener()); }
TEST_F(LedgerPostgres, PruneAgesRowsByTheLedgersClock) {
  check_prune_by_the_ledgers_clock(opener(), LedgerClock::kServer);
}
TEST_F(LedgerPostgres, ScopesSeparateSystems) { check_scopes(opener()); }
TEST_F(LedgerPostgres, InvalidArgumentsClaimNothing) { check_invalid_arguments(opener()); }
TEST_F(LedgerPostgres, CopyFieldsComeBack) { check_copy_fields(opener()); }
TEST_F(LedgerPostgres, ClaimsOutliveTheConnection) { check_persistence(opener()); }
TEST_F(LedgerPostgres, RestoreFillsAnEmptyScopeOnly) { check_restore(opener()); }
TEST_F(LedgerPostgres, AuditAnchorsMoveOnlyForward) { check_audit_anchors(opener()); }

TEST_F(LedgerPostgres, ALedgerMadeBeforeTheAnchorsGetsTheirTable) {
  {
    auto l = open_ledger(url());
    ASSERT_TRUE(l.ok()) << l.error().message;
    ASSERT_TRUE((*l)->claim_batch({make_claim("k-1")}).ok());
  }
  ASSERT_EQ(psql("DROP TABLE replaygate_ledger_audit_anchors;"), 0);
  auto l = open_ledger(url());
  ASSERT_TRUE(l.ok()) << l.error().message;
  auto stats = (*l)->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->claimed, 1);
  AuditAnchor a{"h:/a.log", 4, std::string(32, 'a'), std::string(64, 'b'), std::string(32, 'c')};
  ASSERT_TRUE((*l)->raise_anchor(a).ok());
  auto all = (*l)->anchors();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].seq, 4);
}

TEST_F(LedgerPostgres, SixProcessesOverlappingKeysEachKeyWonOnce) {
  check_concurrent_processes(opener(), 6, 3000, 1500, 100);
}

TEST_F(LedgerPostgres, Kill9MidBatchLosesNoReportedClaim) { check_kill9(opener(), 12); }

TEST_F(LedgerPostgres, UrlFormsAndPasswordNotShown) {
  const std::string plain = url();
  auto a = open_ledger(plain);
  ASSERT_TRUE(a.ok()) << a.error().message;
  const std::string short_form = "postgres://" + plain.substr(std::string("postgresql://").size());
  auto b = open_ledger(short_form);
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_TRUE((*a)->claim_batch({make_claim("url-1")}).ok());
  auto seen = (*b)->lookup({"url-1"});
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE((*seen)[0].has_value());
  // trust auth ignores the password; it must not appear in descriptions or messages.
  const std::string with_pw =
      "postgresql://rg:s3cret@127.0.0.1:" + std::to_string(server_->port()) + "/postgres" + query();
  auto c = open_ledger(with_pw);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)->describe().find("s3cret"), std::string::npos) << (*c)->describe();
  auto d = open_ledger("postgresql://rg:s3cret@127.0.0.1:1/postgres");  // nothing listens on port 1
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(d.error().message.find("s3cret"), std::string::npos) << d.error().message;
}

TEST_F(LedgerPostgres, TableOfAnotherLayoutIsRefused) {
  ASSERT_EQ(psql("CREATE TABLE replaygate_ledger_claims (id serial PRIMARY KEY, k text);"), 0);
  auto l = open_ledger(url());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kForeign);
  EXPECT_NE(l.error().message.find("without replaygate_ledger_meta"), std::string::npos)
      << l.error().message;
  // Never recreated: the foreign table is still there, unchanged.
  ASSERT_EQ(psql("DO $$ BEGIN PERFORM id, k FROM replaygate_ledger_claims; END $$;"), 0);
}

TEST_F(LedgerPostgres, AlteredColumnsOrMissingIndexAreRefused) {
  {
    auto l = open_ledger(url());
    ASSERT_TRUE(l.ok()) << l.error().message;
  }
  ASSERT_EQ(psql("ALTER TABLE replaygate_ledger_claims ADD COLUMN extra int;"), 0);
  auto l = open_ledger(url());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kForeign);
  EXPECT_NE(l.error().message.find("another layout"), std::string::npos) << l.error().message;
  ASSERT_EQ(psql("ALTER TABLE replaygate_ledger_claims DROP COLUMN extra;"
                 "ALTER TABLE replaygate_ledger_claims DROP CONSTRAINT replaygate_ledger_key;"),
            0);
  auto l2 = open_ledger(url());
  ASSERT_FALSE(l2.ok());
  EXPECT_EQ(l2.error().code, ErrorCode::kForeign);
  EXPECT_NE(l2.error().message.find("replaygate_ledger_key"), std::string::npos)
      << l2.error().message;
}

TEST_F(LedgerPostgres, ANewerSchemaVersionIsRefusedUpgradeReplaygate) {
  {
    auto l = open_ledger(url());
    ASSERT_TRUE(l.ok()) << l.error().message;
    ASSERT_TRUE((*l)->claim_batch({make_claim("v-1")}).ok());
  }
  ASSERT_EQ(psql("UPDATE replaygate_ledger_meta SET value = '5' WHERE name = "
                 "'schema_version';"),
            0);
  auto l = open_ledger(url());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kSchemaVersion);
  EXPECT_EQ(l.error().message, "ledger " + url() +
                                   ": refused: ledger schema version 5 is newer than this "
                                   "replaygate (4): upgrade replaygate");
  auto m = migrate_ledger(url());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, l.error().message);
}

// A ledger as the build of schema version 1, 2 or 3 left it, with 30 claims "old-N" (old-1
// released) and, from version 2 on, a copy's record on old-0.
std::string old_ledger_sql(int version) {
  std::string sql =
      "CREATE TABLE replaygate_ledger_meta (name text PRIMARY KEY, value text NOT NULL);\n"
      "CREATE TABLE replaygate_ledger_claims (scope text NOT NULL, key text NOT NULL, "
      "slot bigint NOT NULL, generation bigint NOT NULL, state text NOT NULL CHECK "
      "(state IN ('claimed', 'recorded', 'confirmed', 'released')), policy text NOT "
      "NULL, revision bigint NOT NULL, table_checksum text NOT NULL, rule text NOT "
      "NULL, message_id text NOT NULL, worker text NOT NULL, claimed_at text NOT NULL, "
      "updated_at text NOT NULL, released_by text, release_reason text, released_at "
      "text, CONSTRAINT replaygate_ledger_key PRIMARY KEY (scope, key, slot), CHECK "
      "((state = 'released' AND slot = generation) OR (state <> 'released' AND slot = "
      "0)));\n"
      "CREATE INDEX replaygate_ledger_time ON replaygate_ledger_claims (scope, "
      "claimed_at);\n"
      "INSERT INTO replaygate_ledger_meta VALUES ('application', 'replaygate-ledger'), "
      "('schema_version', '" +
      std::to_string(version) +
      "');\n"
      "INSERT INTO replaygate_ledger_claims SELECT 'default', 'old-' || n, CASE WHEN n = 1 THEN 1 "
      "ELSE 0 END, 1, CASE WHEN n = 1 THEN 'released' ELSE 'confirmed' END, 'dlq-replay-gate', 1, "
      "'c', 'r', 'm-old-' || n, 'gate-0', '2026-11-01T10:00:00.000000Z', "
      "'2026-11-01T10:00:01.000000Z', CASE WHEN n = 1 THEN 'ops' END, CASE WHEN n = 1 THEN "
      "'INC-1 refund' END, CASE WHEN n = 1 THEN '2026-11-01T10:00:01.000000Z' END FROM "
      "generate_series(0, 29) AS n;\n";
  if (version >= 2) {
    sql +=
        "ALTER TABLE replaygate_ledger_claims ADD COLUMN copy_replay bigint, ADD COLUMN "
        "body_digest text;\n"
        "UPDATE replaygate_ledger_claims SET copy_replay = 2, body_digest = 'sha256:00' WHERE key "
        "= 'old-0';\n";
  }
  if (version >= 3) {
    sql +=
        "ALTER TABLE replaygate_ledger_claims ADD COLUMN recorded_at text NOT NULL DEFAULT '';\n"
        "UPDATE replaygate_ledger_claims SET recorded_at = claimed_at;\n"
        "CREATE TABLE replaygate_ledger_audit_anchors (scope text NOT NULL, log text NOT NULL, "
        "seq bigint NOT NULL, head text NOT NULL, chain_digest text NOT NULL, key_id text NOT "
        "NULL, recorded_at text NOT NULL, CONSTRAINT replaygate_ledger_anchor_key PRIMARY KEY "
        "(scope, log));\n";
  }
  return sql;
}

TEST_F(LedgerPostgres, AnOlderSchemaVersionIsRefusedRunLedgerMigrate) {
  ASSERT_EQ(psql(old_ledger_sql(3)), 0);
  auto l = open_ledger(url());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kSchemaVersion);
  EXPECT_EQ(l.error().message,
            "ledger " + url() +
                ": refused: ledger schema version 3; this replaygate uses 4: run `replaygate "
                "ledger migrate --ledger " +
                url() + " --operator NAME --reason TEXT --audit LOG`");
  ASSERT_EQ(psql("DO $$ BEGIN IF to_regclass('replaygate_ledger_plans') IS NOT NULL THEN RAISE "
                 "EXCEPTION 'changed'; END IF; END $$;"),
            0)
      << "a refused ledger is left as it was";
}

TEST_F(LedgerPostgres, MigrateFromVersions123To4KeepsEveryRow) {
  for (int version : {1, 2, 3}) {
    SCOPED_TRACE("version " + std::to_string(version));
    ASSERT_EQ(psql("DROP TABLE IF EXISTS replaygate_ledger_meta, replaygate_ledger_claims, "
                   "replaygate_ledger_audit_anchors, replaygate_ledger_plans, "
                   "replaygate_ledger_plan_approvals, replaygate_ledger_plan_progress;\n" +
                   old_ledger_sql(version)),
              0);
    auto m = migrate_ledger(url());
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->from, version);
    EXPECT_EQ(m->to, 4);
    auto l = open_ledger(url());
    ASSERT_TRUE(l.ok()) << l.error().message;
    auto st = (*l)->stats();
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(st->confirmed, 29);
    EXPECT_EQ(st->released, 1);
    EXPECT_EQ(st->keys, 30);
    auto old0 = (*l)->show("old-0");
    ASSERT_TRUE(old0.ok() && old0->size() == 1u);
    EXPECT_EQ((*old0)[0].message_id, "m-old-0");
    EXPECT_EQ(format_time((*old0)[0].recorded_at), "2026-11-01T10:00:00.000000Z");
    if (version >= 2) {
      EXPECT_EQ((*old0)[0].copy_replay, 2);
      EXPECT_EQ((*old0)[0].body_digest, "sha256:00");
    }
    auto old1 = (*l)->show("old-1");
    ASSERT_TRUE(old1.ok() && old1->size() == 1u);
    EXPECT_EQ((*old1)[0].state, State::kReleased);
    EXPECT_EQ((*old1)[0].release_reason, "INC-1 refund");
    PlanRecord plan;
    plan.digest = "blake2b:" + std::string(64, 'f');
    ASSERT_TRUE((*l)->record_plan(plan).ok());
    auto again = migrate_ledger(url());
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(again->from, 4);
    EXPECT_EQ(again->to, 4);
    ASSERT_EQ(psql("DO $$ BEGIN IF (SELECT value FROM replaygate_ledger_meta WHERE name = "
                   "'schema_version') <> '4' THEN RAISE EXCEPTION 'not migrated'; END IF; END "
                   "$$;"),
              0);
  }
}

TEST_F(LedgerPostgres, MigrateCreatesNothingInAnEmptyDatabase) {
  auto m = migrate_ledger(url());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kUnavailable);
  ASSERT_EQ(psql("DO $$ BEGIN IF to_regclass('replaygate_ledger_meta') IS NOT NULL THEN RAISE "
                 "EXCEPTION 'created'; END IF; END $$;"),
            0);
}

// kill -9 inside the migration's transaction: the server rolls it back; the database is at
// version 3 with every row; a rerun completes.
TEST_F(LedgerPostgres, Kill9InsideMigrateLeavesTheOldVersionAndARerunCompletes) {
  ASSERT_EQ(psql(old_ledger_sql(3)), 0);
  const std::string u = url();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    Options o;
    o.test_point = [](std::string_view step) {
      if (step == "migrate_in_transaction") raise(SIGKILL);
    };
    (void)migrate_ledger(u, o);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  auto refused = open_ledger(url());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("ledger schema version 3;"), std::string::npos)
      << refused.error().message;
  auto m = migrate_ledger(url());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->from, 3);
  auto l = open_ledger(url());
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ((*l)->stats()->keys, 30);
}

TEST_F(LedgerPostgres, PlanRecords) { check_plan_records(opener()); }
TEST_F(LedgerPostgres, PlanApprovalsOnePerApproverNoneOnceCancelled) {
  check_plan_approvals(opener());
}
TEST_F(LedgerPostgres, PlanProgressAddsUp) { check_plan_progress(opener()); }
TEST_F(LedgerPostgres, MarksAndPlanProgressAreOneTransaction) {
  check_marks_with_progress(opener());
}
TEST_F(LedgerPostgres, PlanProgressSumsAreTheIncrementsInAnyOrderProperty) {
  check_plan_progress_property(opener());
}
TEST_F(LedgerPostgres, OneApprovalPerApproverUnderARace) { check_plan_approval_race(opener(), 20); }
TEST_F(LedgerPostgres, PlanProgressFromFourProcessesIsExact) {
  check_plan_progress_concurrent(opener(), 4, 40);
}

TEST_F(LedgerPostgres, ServerStoppedMidRunIsUnavailableAndKeepsCommits) {
  auto l = open_ledger(url());
  ASSERT_TRUE(l.ok()) << l.error().message;
  std::vector<Claim> first;
  for (int i = 0; i < 500; ++i) first.push_back(make_claim("before-" + std::to_string(i)));
  auto r = (*l)->claim_batch(first);
  ASSERT_TRUE(r.ok()) << r.error().message;
  server_->stop();
  auto after = (*l)->claim_batch({make_claim("after-1")});
  ASSERT_FALSE(after.ok()) << "a claim was granted with the server stopped";
  EXPECT_EQ(after.error().code, ErrorCode::kUnavailable) << after.error().message;
  auto again = (*l)->lookup({"before-1"});  // and it stays unavailable, no hang
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kUnavailable) << again.error().message;
  auto fresh = open_ledger(url());
  ASSERT_FALSE(fresh.ok());
  EXPECT_EQ(fresh.error().code, ErrorCode::kUnavailable);
  // Back up: everything committed before the stop is there, the refused claim is not, and the
  // old object reconnects by itself.
  ASSERT_EQ(server_->start(), "");
  auto seen = (*l)->lookup({"before-0", "before-499", "after-1"});
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  EXPECT_TRUE((*seen)[0].has_value());
  EXPECT_TRUE((*seen)[1].has_value());
  EXPECT_FALSE((*seen)[2].has_value());
}

TEST_F(LedgerPostgres, DeadlockFreeWithReversedKeyOrders) {
  // Two connections claim the same keys in opposite orders, concurrently, many times.
  auto a = open_ledger(url());
  auto b = open_ledger(url());
  ASSERT_TRUE(a.ok() && b.ok());
  for (int round = 0; round < 20; ++round) {
    std::vector<Claim> fwd, rev;
    for (int i = 0; i < 200; ++i)
      fwd.push_back(make_claim("dl-" + std::to_string(round) + "-" + std::to_string(i), "a"));
    rev.assign(fwd.rbegin(), fwd.rend());
    for (auto& c : rev) c.worker = "b";
    Result<std::vector<ClaimOutcome>> ra = Error{}, rb = Error{};
    std::thread ta([&] { ra = (*a)->claim_batch(fwd); });
    std::thread tb([&] { rb = (*b)->claim_batch(rev); });
    ta.join();
    tb.join();
    ASSERT_TRUE(ra.ok()) << ra.error().message;
    ASSERT_TRUE(rb.ok()) << rb.error().message;
    int won = 0;
    for (const auto& o : *ra) won += o.won;
    for (const auto& o : *rb) won += o.won;
    EXPECT_EQ(won, 200) << "round " << round;
  }
}

}  // namespace
}  // namespace replaygate::ledger::testing
