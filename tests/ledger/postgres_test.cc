// The PostgreSQL backend against a private postgresql-15 server that the suite starts on
// 127.0.0.1 (a free port, a temporary directory, run as `postgres`) and stops by process id.
// The server is started once per test process (ctest runs each test in its own process). When
// postgresql-15 is not installed every test FAILS with that message: these tests are never
// skipped silently (tools/setup.sh installs the package).
#include <libpq-fe.h>

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

TEST_F(LedgerPostgres, WrongSchemaVersionIsRefused) {
  {
    auto l = open_ledger(url());
    ASSERT_TRUE(l.ok()) << l.error().message;
    ASSERT_TRUE((*l)->claim_batch({make_claim("v-1")}).ok());
  }
  ASSERT_EQ(psql("UPDATE replaygate_ledger_meta SET value = '4' WHERE name = "
                 "'schema_version';"),
            0);
  auto l = open_ledger(url());
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kSchemaVersion);
  EXPECT_NE(l.error().message.find("schema version 4, this build reads version 3"),
            std::string::npos)
      << l.error().message;
}

// A ledger made by a build of schema version 1 keeps working: upgraded on open (two nullable
// columns), its rows read back without the copy's record, new claims store it.
TEST_F(LedgerPostgres, AVersion1LedgerIsUpgradedOnOpen) {
  ASSERT_EQ(psql("CREATE TABLE replaygate_ledger_meta (name text PRIMARY KEY, value text NOT "
                 "NULL);\n"
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
                 "('schema_version', '1');\n"
                 "INSERT INTO replaygate_ledger_claims VALUES ('default', 'old-1', 0, 1, "
                 "'confirmed', 'dlq-replay-gate', 1, 'c', 'r', 'm-old', 'gate-0', "
                 "'2026-11-01T10:00:00.000000Z', '2026-11-01T10:00:01.000000Z', NULL, NULL, "
                 "NULL);"),
            0);
  {
    auto l = open_ledger(url());
    ASSERT_TRUE(l.ok()) << l.error().message;
    auto seen = (*l)->lookup({"old-1"});
    ASSERT_TRUE(seen.ok()) << seen.error().message;
    ASSERT_TRUE((*seen)[0]);
    EXPECT_EQ((*seen)[0]->message_id, "m-old");
    EXPECT_FALSE((*seen)[0]->copy_replay.has_value());
    EXPECT_EQ((*seen)[0]->body_digest, "");
    Claim c = make_claim("new-1");
    c.copy_replay = 2;
    c.body_digest = "sha256:00";
    ASSERT_TRUE((*l)->claim_batch({c}).ok());
  }
  auto again = open_ledger(url());  // now at this version: opened without another upgrade
  ASSERT_TRUE(again.ok()) << again.error().message;
  const auto seen = (*again)->lookup({"new-1", "old-1"});
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ((*seen)[0]->copy_replay, 2);
  EXPECT_EQ((*seen)[0]->body_digest, "sha256:00");
  ASSERT_TRUE((*seen)[1].has_value());
  EXPECT_EQ(format_time((*seen)[1]->recorded_at), "2026-11-01T10:00:00.000000Z")
      << "a row from before version 3 keeps its claimed_at as the ledger's time";
  ASSERT_EQ(psql("DO $$ BEGIN IF (SELECT value FROM replaygate_ledger_meta WHERE name = "
                 "'schema_version') <> '3' THEN RAISE EXCEPTION 'not upgraded'; END IF; END $$;"),
            0);
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
