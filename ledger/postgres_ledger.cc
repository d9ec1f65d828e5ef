// The PostgreSQL backend: gates on many hosts share one server. Takes a libpq connection URI,
// returns a Ledger (internal::open_postgres is its one entry point).
//
// Exclusion: the primary key (scope, key, slot), where slot is 0 for the live claim and the
// generation once released, allows one live row per (scope, key); a batch is one `INSERT ... SELECT
// FROM unnest(arrays) ON CONFLICT DO NOTHING RETURNING key` inside one transaction, so of
// concurrent claimants exactly one gets the row back. Keys are inserted in sorted order, so two
// batches with overlapping keys wait for each other in one direction and never deadlock (a deadlock
// or serialization failure is retried anyway). Durability: synchronous_commit is forced on for the
// session; claim_batch returns after COMMIT.
//
// Recognition: a table replaygate_ledger_meta (name, value) holds schema_version; creation runs
// under a transaction-scoped advisory lock, so concurrent first opens create it once. Tables that
// exist with another layout, or a claims table without the meta table, are refused.
// Another schema version is refused on open. migrate_postgres() brings versions 1 (without
// copy_replay, body_digest and recorded_at), 2 (without recorded_at) and 3 (without the plan
// tables) to 4 under the same lock, in one transaction: the columns added at the end, the plan
// tables created, the version set to 4.
#include <libpq-fe.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <unordered_map>

#include "ledger/backends.h"

namespace replaygate::ledger::internal {
namespace {

// The server's clock as the fixed-width text of format_time: the ledger's own time (recorded_at,
// prune's cutoff), the same for every client whatever its clock says.
#define kServerNow "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"

constexpr const char* kCreateSql =
    "CREATE TABLE replaygate_ledger_meta (\n"
    "  name text PRIMARY KEY,\n"
    "  value text NOT NULL\n"
    ");\n"
    "CREATE TABLE replaygate_ledger_claims (\n"
    "  scope text NOT NULL,\n"
    "  key text NOT NULL,\n"
    "  slot bigint NOT NULL,\n"
    "  generation bigint NOT NULL,\n"
    "  state text NOT NULL CHECK (state IN ('claimed', 'recorded', 'confirmed', 'released')),\n"
    "  policy text NOT NULL,\n"
    "  revision bigint NOT NULL,\n"
    "  table_checksum text NOT NULL,\n"
    "  rule text NOT NULL,\n"
    "  message_id text NOT NULL,\n"
    "  worker text NOT NULL,\n"
    "  claimed_at text NOT NULL,\n"
    "  updated_at text NOT NULL,\n"
    "  released_by text,\n"
    "  release_reason text,\n"
    "  released_at text,\n"
    "  copy_replay bigint,\n"
    "  body_digest text,\n"
    "  recorded_at text NOT NULL DEFAULT " kServerNow
    ",\n"
    "  CONSTRAINT replaygate_ledger_key PRIMARY KEY (scope, key, slot),\n"
    "  CHECK ((state = 'released' AND slot = generation) OR (state <> 'released' AND slot = 0))\n"
    ");\n"
    "CREATE INDEX replaygate_ledger_time ON replaygate_ledger_claims (scope, claimed_at);\n";

// The last signed checkpoint per audit log (Ledger::raise_anchor); a ledger made before it gets
// it when opened (under the creation lock).
constexpr const char* kCreateAnchorsSql =
    "CREATE TABLE IF NOT EXISTS replaygate_ledger_audit_anchors (\n"
    "  scope text NOT NULL,\n"
    "  log text NOT NULL,\n"
    "  seq bigint NOT NULL,\n"
    "  head text NOT NULL,\n"
    "  chain_digest text NOT NULL,\n"
    "  key_id text NOT NULL,\n"
    "  recorded_at text NOT NULL,\n"
    "  CONSTRAINT replaygate_ledger_anchor_key PRIMARY KEY (scope, log)\n"
    ")";

// The plan tables (schema version 4): plans, one approval per approver, progress per identity.
constexpr const char* kCreatePlansSql =
    "CREATE TABLE replaygate_ledger_plans (\n"
    "  scope text NOT NULL,\n"
    "  digest text NOT NULL,\n"
    "  author text NOT NULL,\n"
    "  source text NOT NULL,\n"
    "  table_checksum text NOT NULL,\n"
    "  letters bigint NOT NULL,\n"
    "  copies bigint NOT NULL,\n"
    "  created_at text NOT NULL,\n"
    "  expires_at text NOT NULL,\n"
    "  recorded_at text NOT NULL,\n"
    "  cancelled_by text,\n"
    "  cancel_reason text,\n"
    "  cancelled_at text,\n"
    "  CONSTRAINT replaygate_ledger_plan_key PRIMARY KEY (scope, digest)\n"
    ");\n"
    "CREATE TABLE replaygate_ledger_plan_approvals (\n"
    "  scope text NOT NULL,\n"
    "  digest text NOT NULL,\n"
    "  approver text NOT NULL,\n"
    "  key_id text NOT NULL,\n"
    "  signature text NOT NULL,\n"
    "  reason text NOT NULL,\n"
    "  approved_at text NOT NULL,\n"
    "  recorded_at text NOT NULL,\n"
    "  CONSTRAINT replaygate_ledger_approval_key PRIMARY KEY (scope, digest, approver)\n"
    ");\n"
    "CREATE TABLE replaygate_ledger_plan_progress (\n"
    "  scope text NOT NULL,\n"
    "  digest text NOT NULL,\n"
    "  identity text NOT NULL,\n"
    "  done bigint NOT NULL,\n"
    "  held bigint NOT NULL,\n"
    "  changed bigint NOT NULL,\n"
    "  last_outcome text NOT NULL,\n"
    "  updated_at text NOT NULL,\n"
    "  CONSTRAINT replaygate_ledger_progress_key PRIMARY KEY (scope, digest, identity)\n"
    ");\n";
// (table, its columns as pg_attribute gives them) of the plan tables, checked on open.
const std::vector<std::pair<std::string, std::string>> kPlanTables = {
    {"replaygate_ledger_plans",
     "scope text NO, digest text NO, author text NO, source text NO, table_checksum text NO, "
     "letters bigint NO, copies bigint NO, created_at text NO, expires_at text NO, recorded_at "
     "text NO, cancelled_by text YES, cancel_reason text YES, cancelled_at text YES"},
    {"replaygate_ledger_plan_approvals",
     "scope text NO, digest text NO, approver text NO, key_id text NO, signature text NO, reason "
     "text NO, approved_at text NO, recorded_at text NO"},
    {"replaygate_ledger_plan_progress",
     "scope text NO, digest text NO, identity text NO, done bigint NO, held bigint NO, changed "
     "bigint NO, last_outcome text NO, updated_at text NO"}};
constexpr const char* kPlanColumns =
    "digest, author, source, table_checksum, letters, copies, created_at, expires_at, "
    "recorded_at, cancelled_by, cancel_reason, cancelled_at";
constexpr const char* kApprovalColumns =
    "digest, approver, key_id, signature, reason, approved_at, recorded_at";

// (column, data type, nullable) of replaygate_ledger_claims, in order.
const std::vector<std::string> kExpectedColumns = {"scope text NO",
                                                   "key text NO",
                                                   "slot bigint NO",
                                                   "generation bigint NO",
                                                   "state text NO",
                                                   "policy text NO",
                                                   "revision bigint NO",
                                                   "table_checksum text NO",
                                                   "rule text NO",
                                                   "message_id text NO",
                                                   "worker text NO",
                                                   "claimed_at text NO",
                                                   "updated_at text NO",
                                                   "released_by text YES",
                                                   "release_reason text YES",
                                                   "released_at text YES",
                                                   "copy_replay bigint YES",
                                                   "body_digest text YES",
                                                   "recorded_at text NO"};
// Version 1 had the columns above but the last three, version 2 all but recorded_at, version 3
// no plan tables. A later version must extend the migration. The rows already there keep the only
// time they have, their claimed_at (no later than the upgrade's now()), as recorded_at: they age as
// they did before.
constexpr size_t kVersion1Columns = 16;
constexpr size_t kVersion2Columns = 18;
constexpr const char* kUpgradeFrom1 =
    "ALTER TABLE replaygate_ledger_claims ADD COLUMN copy_replay bigint, "
    "ADD COLUMN body_digest text;\n";
constexpr const char* kUpgradeFrom2 =
    "ALTER TABLE replaygate_ledger_claims ADD COLUMN recorded_at text NOT NULL DEFAULT " kServerNow
    ";\n"
    "UPDATE replaygate_ledger_claims SET recorded_at = least(claimed_at COLLATE \"C\", "
    "recorded_at COLLATE \"C\");\n"
    "UPDATE replaygate_ledger_meta SET value = '3' WHERE name = 'schema_version';\n";
static_assert(kSchemaVersion == 4, "migrate older ledgers to the new version");
constexpr const char* kUpgradeFrom3 =
    "UPDATE replaygate_ledger_meta SET value = '4' WHERE name = 'schema_version';\n";

const std::string kSelect = std::string("SELECT ") + kColumns + " FROM replaygate_ledger_claims ";

using PgResult = std::unique_ptr<PGresult, decltype(&PQclear)>;

std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// The URI without its password.
std::string redact(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto at = url.find('@', scheme + 3);
  const auto slash = url.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return url;
  const auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon) + url.substr(at);
}

// A PostgreSQL array literal of texts: {"a","b\"c"}.
std::string text_array(const std::vector<const std::string*>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ',';
    out += '"';
    for (char c : *values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

class PgLedger final : public Ledger {
 public:
  PgLedger(PGconn* conn, const std::string& url, const Options& o, bool migrating)
      : Ledger(o.scope, redact(url), o.clock),
        conn_(conn),
        migrating_(migrating),
        test_point_(o.test_point) {}
  ~PgLedger() override { PQfinish(conn_); }

  std::optional<Error> init();
  // The schema version the database had when opened (== kSchemaVersion unless it was migrated).
  int found_version() const { return found_version_; }

 protected:
  Result<std::vector<ClaimOutcome>> do_claim_batch(const std::vector<Claim>& claims) override;
  Result<std::vector<std::optional<Record>>> do_lookup(
      const std::vector<std::string>& keys) override;
  Status do_mark_batch(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                       State state) override;
  Result<Record> do_release(std::string_view key, std::string_view operator_name,
                            std::string_view reason) override;
  Result<std::vector<Record>> do_show(std::string_view key) override;
  Result<std::vector<Record>> do_list(Time since) override;
  Result<Stats> do_stats() override;
  Result<std::int64_t> do_export_rows(const std::function<bool(const Record&)>& sink) override;
  Result<Pruned> do_prune(std::chrono::microseconds older_than, bool dry_run) override;
  Result<std::int64_t> do_restore(const std::vector<Record>& rows) override;
  Result<AuditAnchor> do_raise_anchor(const AuditAnchor& anchor) override;
  Result<std::vector<AuditAnchor>> do_anchors() override;
  Status do_record_plan(const PlanRecord& plan) override;
  Result<std::optional<PlanRecord>> do_plan(std::string_view digest) override;
  Result<PlanApproval> do_approve_plan(const PlanApproval& approval) override;
  Result<std::vector<PlanApproval>> do_plan_approvals(std::string_view digest) override;
  Result<PlanRecord> do_cancel_plan(std::string_view digest, std::string_view operator_name,
                                    std::string_view reason) override;
  Status do_record_plan_progress(const std::vector<PlanLetterProgress>& progress) override;
  Status do_mark_with_progress(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                               State state,
                               const std::vector<PlanLetterProgress>& progress) override;
  Result<std::vector<PlanLetterProgress>> do_plan_progress(
      std::string_view digest, const std::vector<std::string>& identities) override;
  Result<PlanCounts> do_plan_counts(std::string_view digest) override;
  Result<std::vector<PlanRecord>> do_plans() override;
  Result<std::int64_t> do_export_plan_progress(
      std::string_view digest, const std::function<bool(const PlanLetterProgress&)>& sink) override;

 private:
  struct Failure {
    Error error;
    bool retry = false;  // deadlock or serialization failure: the whole transaction may be rerun
  };

  Error fail(std::string_view what, const PGresult* r) const {
    std::string detail = r ? PQresultErrorMessage(r) : "";
    if (detail.empty()) detail = PQerrorMessage(conn_);
    if (detail.empty()) detail = "no response from the server";
    return error(ErrorCode::kUnavailable,
                 "ledger " + describe() + ": " + std::string(what) + ": " + one_line(detail));
  }

  // Runs one statement; nullopt result pointer on failure with `err` set.
  PgResult run(const char* what, const std::string& sql, const std::vector<std::string>& params,
               std::optional<Failure>& err) {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const auto& p : params) values.push_back(p.c_str());
    // Without parameters: the simple protocol, which also runs several statements at once.
    PgResult r(params.empty() ? PQexec(conn_, sql.c_str())
                              : PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()),
                                             nullptr, values.data(), nullptr, nullptr, 0),
               &PQclear);
    const auto st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      const char* code = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
      const bool retry =
          code && (std::string_view(code) == "40P01" || std::string_view(code) == "40001");
      err = Failure{fail(what, r.get()), retry};
      return PgResult(nullptr, &PQclear);
    }
    return r;
  }

  // The bodies of do_mark_batch and do_record_plan_progress, inside in_transaction.
  Status mark_rows(const std::vector<std::pair<std::string, std::int64_t>>& claims, State state,
                   std::optional<Failure>& f);
  Status add_progress(const std::vector<PlanLetterProgress>& progress, std::optional<Failure>& f);

  // Makes sure the connection is up (reconnecting once after a loss).
  std::optional<Error> connected() {
    if (PQstatus(conn_) == CONNECTION_OK) return std::nullopt;
    PQreset(conn_);
    if (PQstatus(conn_) == CONNECTION_OK) {
      if (auto e = session_settings()) return e;
      return std::nullopt;
    }
    return error(ErrorCode::kUnavailable, "ledger " + describe() +
                                              ": connection lost and not re-established: " +
                                              one_line(PQerrorMessage(conn_)));
  }

  std::optional<Error> session_settings() {
    std::optional<Failure> f;
    run("session settings",
        "SET synchronous_commit TO on; SET client_min_messages TO warning; "
        "SET default_transaction_isolation TO 'read committed'",
        {}, f);
    if (f) return f->error;
    return std::nullopt;
  }

  // Runs `body` (which may set a Failure) in BEGIN ... COMMIT, retrying deadlocks a few times. A
  // connection found lost before COMMIT was sent (a server restarted since the last call) is
  // re-established and the transaction run again, once: nothing of it can have been committed.
  // A connection lost at COMMIT is not retried: whether it committed is unknown.
  template <class T, class F>
  Result<T> in_transaction(F&& body) {
    if (auto e = connected()) return *e;
    bool reconnected = false;
    for (int attempt = 0;; ++attempt) {
      std::optional<Failure> f;
      bool commit_sent = false;
      run("begin", "BEGIN", {}, f);
      std::optional<Result<T>> value;
      if (!f) value.emplace(body(f));
      if (!f && value && !value->ok()) {
        // A refusal decided by the body (kNotFound, kBadTransition): undo and report.
        std::optional<Failure> ignored;
        run("rollback", "ROLLBACK", {}, ignored);
        return *value;
      }
      if (!f) {
        commit_sent = true;
        PgResult c = run("commit", "COMMIT", {}, f);
        if (!f && std::string_view(PQcmdStatus(c.get())) != "COMMIT") {
          f = Failure{error(ErrorCode::kUnavailable,
                            "ledger " + describe() + ": commit was rolled back by the server"),
                      false};
        }
        if (!f) return std::move(*value);
      }
      if (PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) != PQTRANS_IDLE) {
        std::optional<Failure> ignored;
        run("rollback", "ROLLBACK", {}, ignored);
      }
      if (PQstatus(conn_) == CONNECTION_BAD && !commit_sent && !reconnected) {
        reconnected = true;
        if (auto e = connected()) return *e;
        continue;
      }
      if (!f->retry || attempt >= 5) return f->error;
      std::this_thread::sleep_for(std::chrono::milliseconds(5 << attempt));
    }
  }

  static Record read_row(const PGresult* r, int row) {
    auto text = [&](int col) {
      return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
    };
    Record rec;
    rec.scope = text(0);
    rec.key = text(1);
    rec.generation = std::stoll(text(2));
    rec.state = parse_state(text(3)).value_or(State::kClaimed);
    rec.policy = text(4);
    rec.revision = std::stoll(text(5));
    rec.table_checksum = text(6);
    rec.rule = text(7);
    rec.message_id = text(8);
    rec.worker = text(9);
    rec.claimed_at = parse_stored_time(text(10)).value_or(Time{});
    rec.updated_at = parse_stored_time(text(11)).value_or(Time{});
    if (!PQgetisnull(r, row, 12)) rec.released_by = text(12);
    if (!PQgetisnull(r, row, 13)) rec.release_reason = text(13);
    if (!PQgetisnull(r, row, 14)) rec.released_at = parse_stored_time(text(14));
    if (!PQgetisnull(r, row, 15)) rec.copy_replay = std::stoll(text(15));
    if (!PQgetisnull(r, row, 16)) rec.body_digest = text(16);
    rec.recorded_at = parse_stored_time(text(17)).value_or(Time{});
    return rec;
  }
  static std::vector<Record> rows(const PGresult* r) {
    std::vector<Record> out;
    const int n = PQntuples(r);
    out.reserve(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out.push_back(read_row(r, i));
    return out;
  }

  std::optional<Error> check_or_create();
  // The plan of `digest` inside a transaction (nullopt: not recorded).
  Result<std::optional<PlanRecord>> read_plan(std::string_view digest, std::optional<Failure>& f,
                                              bool for_update);
  // The plan tables' layout (version 4), inside check_or_create's transaction: "" or why not.
  std::string plan_tables_problem(std::optional<Failure>& f);

  PGconn* conn_;
  bool migrating_ = false;  // opened by migrate_postgres(): an older version is migrated
  std::function<void(std::string_view)> test_point_;
  int found_version_ = kSchemaVersion;
};

std::optional<Error> PgLedger::check_or_create() {
  std::optional<Failure> f;
  auto bail = [&](Error e) -> std::optional<Error> {
    std::optional<Failure> ignored;
    run("rollback", "ROLLBACK", {}, ignored);
    return e;
  };
  run("begin", "BEGIN", {}, f);
  if (f) return f->error;
  run("lock", "SELECT pg_advisory_xact_lock(7306926405357233479)", {}, f);
  if (f) return bail(f->error);
  PgResult exist = run("read the catalog",
                       "SELECT to_regclass('replaygate_ledger_meta') IS NOT NULL, "
                       "to_regclass('replaygate_ledger_claims') IS NOT NULL",
                       {}, f);
  if (f) return bail(f->error);
  const bool meta = std::string_view(PQgetvalue(exist.get(), 0, 0)) == "t";
  const bool claims = std::string_view(PQgetvalue(exist.get(), 0, 1)) == "t";
  if (!meta && !claims && migrating_) {
    return bail(error(ErrorCode::kUnavailable,
                      "no ledger at " + describe() + " (no ledger tables: nothing to migrate)"));
  }
  if (!meta && !claims) {
    run("create the ledger schema", std::string(kCreateSql) + kCreatePlansSql, {}, f);
    if (f) return bail(f->error);
    run("create the ledger schema",
        "INSERT INTO replaygate_ledger_meta (name, value) VALUES ('application', "
        "'replaygate-ledger'), ('schema_version', $1)",
        {std::to_string(kSchemaVersion)}, f);
    if (f) return bail(f->error);
  } else {
    const std::string where = "ledger " + describe() + ": refused: ";
    if (!meta) {
      return bail(error(ErrorCode::kForeign,
                        where + "a table replaygate_ledger_claims exists without "
                                "replaygate_ledger_meta: not a ledger this build created"));
    }
    PgResult v =
        run("read the schema version",
            "SELECT value FROM replaygate_ledger_meta WHERE name = 'schema_version'", {}, f);
    if (f) {
      return bail(error(ErrorCode::kForeign, where + "replaygate_ledger_meta has another layout (" +
                                                 f->error.message + ")"));
    }
    if (PQntuples(v.get()) != 1) {
      return bail(
          error(ErrorCode::kForeign, where + "replaygate_ledger_meta has no schema_version"));
    }
    const std::string version = PQgetvalue(v.get(), 0, 0);
    const bool upgrade = version == "1" || version == "2" || version == "3";
    if (version != std::to_string(kSchemaVersion) && (!upgrade || !migrating_)) {
      long long n = 0;
      try {
        n = std::stoll(version);
      } catch (...) {
        n = 0;
      }
      return bail(schema_version_error(describe(), n));
    }
    if (!claims) {
      return bail(error(ErrorCode::kForeign,
                        where + "replaygate_ledger_meta exists but replaygate_ledger_claims "
                                "does not"));
    }
    PgResult cols = run("read the table layout",
                        "SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || "
                        "CASE WHEN a.attnotnull THEN ' NO' ELSE ' YES' END FROM pg_attribute a "
                        "WHERE a.attrelid = 'replaygate_ledger_claims'::regclass AND a.attnum > "
                        "0 AND NOT a.attisdropped ORDER BY a.attnum",
                        {}, f);
    if (f) return bail(f->error);
    std::vector<std::string> have;
    for (int i = 0; i < PQntuples(cols.get()); ++i) have.emplace_back(PQgetvalue(cols.get(), i, 0));
    const std::vector<std::string> expected(
        kExpectedColumns.begin(),
        kExpectedColumns.begin() + static_cast<std::ptrdiff_t>(version == "1" ? kVersion1Columns
                                                               : version == "2"
                                                                   ? kVersion2Columns
                                                                   : kExpectedColumns.size()));
    if (have != expected) {
      std::string got;
      for (const auto& c : have) got += (got.empty() ? "" : ", ") + c;
      return bail(error(ErrorCode::kForeign,
                        where + "replaygate_ledger_claims has another layout (" + got + ")"));
    }
    PgResult idx = run("read the indexes",
                       "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
                       "WHERE i.indrelid = 'replaygate_ledger_claims'::regclass AND i.indisunique "
                       "AND i.indisprimary AND c.relname = 'replaygate_ledger_key' AND "
                       "i.indpred IS NULL AND "
                       "pg_get_indexdef(i.indexrelid) LIKE '%USING btree (scope, key, slot)'",
                       {}, f);
    if (f) return bail(f->error);
    if (std::string_view(PQgetvalue(idx.get(), 0, 0)) != "1") {
      return bail(error(ErrorCode::kForeign, where +
                                                 "replaygate_ledger_claims lacks its primary key "
                                                 "replaygate_ledger_key (one live claim per key)"));
    }
    if (version == "1") {
      run("migrate the ledger schema from version 1", kUpgradeFrom1, {}, f);
      if (f) return bail(f->error);
    }
    if (version == "1" || version == "2") {
      run("migrate the ledger schema to version 3", kUpgradeFrom2, {}, f);
      if (f) return bail(f->error);
    }
    if (upgrade) {
      // A version-3 database may hold leftovers of nothing else: its plan tables must not exist.
      run("migrate the ledger schema to version 4", std::string(kCreatePlansSql) + kUpgradeFrom3,
          {}, f);
      if (f) return bail(f->error);
      found_version_ = std::stoi(version);
    } else if (const std::string why = plan_tables_problem(f); !why.empty()) {
      return bail(error(ErrorCode::kForeign, where + why));
    } else if (f) {
      return bail(f->error);
    }
  }
  run("add the audit anchor table", kCreateAnchorsSql, {}, f);
  if (f) return bail(f->error);
  if (found_version_ != kSchemaVersion && test_point_) test_point_("migrate_in_transaction");
  PgResult c = run("commit", "COMMIT", {}, f);
  if (f) return f->error;
  return std::nullopt;
}

std::string PgLedger::plan_tables_problem(std::optional<Failure>& f) {
  for (const auto& [table, expected] : kPlanTables) {
    PgResult cols = run("read the plan tables' layout",
                        "SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, "
                        "a.atttypmod) || CASE WHEN a.attnotnull THEN ' NO' ELSE ' YES' END, ', ' "
                        "ORDER BY a.attnum) FROM pg_attribute a WHERE a.attrelid = "
                        "to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped",
                        {table}, f);
    if (f) return "";
    const std::string have = PQgetisnull(cols.get(), 0, 0) ? "" : PQgetvalue(cols.get(), 0, 0);
    if (have != expected) {
      return have.empty() ? "a ledger of schema version 4 without its table " + table
                          : table + " has another layout (" + have + ")";
    }
  }
  return "";
}

std::optional<Error> PgLedger::init() {
  PQsetNoticeProcessor(
      conn_, [](void*, const char*) {}, nullptr);
  if (auto e = session_settings()) return e;
  return check_or_create();
}

Result<std::vector<ClaimOutcome>> PgLedger::do_claim_batch(const std::vector<Claim>& claims) {
  // Distinct keys in sorted order (the first occurrence of each claims it).
  std::unordered_map<std::string_view, size_t> first;
  first.reserve(claims.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < claims.size(); ++i) {
    if (first.try_emplace(claims[i].key, i).second) order.push_back(i);
  }
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return claims[a].key < claims[b].key; });
  std::vector<const std::string*> k, p, t, ru, m, w, d;
  std::string revisions = "{", copies = "{";
  for (size_t n = 0; n < order.size(); ++n) {
    const Claim& c = claims[order[n]];
    k.push_back(&c.key);
    p.push_back(&c.policy);
    t.push_back(&c.table_checksum);
    ru.push_back(&c.rule);
    m.push_back(&c.message_id);
    w.push_back(&c.worker);
    d.push_back(&c.body_digest);
    if (n) {
      revisions += ',';
      copies += ',';
    }
    revisions += std::to_string(c.revision);
    copies += c.copy_replay ? std::to_string(*c.copy_replay) : "NULL";
  }
  revisions += '}';
  copies += '}';
  const std::vector<std::string> params = {scope(),        "",
                                           text_array(k),  text_array(p),
                                           revisions,      text_array(t),
                                           text_array(ru), text_array(m),
                                           text_array(w),  copies,
                                           text_array(d)};
  static const std::string kInsert =
      "INSERT INTO replaygate_ledger_claims (scope, key, slot, generation, state, policy, "
      "revision, table_checksum, rule, message_id, worker, claimed_at, updated_at, copy_replay, "
      "body_digest) "
      "SELECT $1, u.k, 0, coalesce((SELECT max(x.slot) FROM replaygate_ledger_claims x "
      "WHERE x.scope = $1 AND x.key = u.k), 0) + 1, 'claimed', u.p, u.r, u.t, u.ru, u.m, u.w, $2, "
      "$2, u.c, nullif(u.d, '') FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], "
      "$7::text[], $8::text[], $9::text[], $10::bigint[], $11::text[]) WITH ORDINALITY AS u(k, p, "
      "r, t, ru, m, w, c, d, i) ORDER BY u.i ON CONFLICT DO NOTHING RETURNING key, generation, "
      "recorded_at";
  static const std::string kHolders =
      kSelect + "WHERE scope = $1 AND key = ANY($2::text[]) AND slot = 0";
  std::vector<std::string> run_params = params;
  return in_transaction<std::vector<ClaimOutcome>>(
      [&](std::optional<Failure>& f) -> Result<std::vector<ClaimOutcome>> {
        const Time now_t = now();
        const std::string ts = format_time(now_t);
        run_params[1] = ts;
        PgResult ins = run("claim", kInsert, run_params, f);
        if (f) return f->error;
        std::vector<ClaimOutcome> out(claims.size());
        for (int i = 0; i < PQntuples(ins.get()); ++i) {
          const std::string key(PQgetvalue(ins.get(), i, 0),
                                static_cast<size_t>(PQgetlength(ins.get(), i, 0)));
          const size_t idx = first.at(key);
          const Claim& c = claims[idx];
          Record& r = out[idx].holder;
          out[idx].won = true;
          r.scope = scope();
          r.key = c.key;
          r.generation = std::stoll(PQgetvalue(ins.get(), i, 1));
          r.state = State::kClaimed;
          r.policy = c.policy;
          r.revision = c.revision;
          r.table_checksum = c.table_checksum;
          r.rule = c.rule;
          r.message_id = c.message_id;
          r.worker = c.worker;
          r.copy_replay = c.copy_replay;
          r.body_digest = c.body_digest;
          r.claimed_at = r.updated_at = parse_stored_time(ts).value_or(now_t);
          r.recorded_at = parse_stored_time(PQgetvalue(ins.get(), i, 2)).value_or(Time{});
        }
        std::vector<const std::string*> lost;
        for (size_t i : order) {
          if (!out[i].won) lost.push_back(&claims[i].key);
        }
        if (!lost.empty()) {
          PgResult h =
              run("read the holders of claimed keys", kHolders, {scope(), text_array(lost)}, f);
          if (f) return f->error;
          for (auto& rec : rows(h.get())) {
            auto it = first.find(rec.key);
            if (it != first.end() && !out[it->second].won) out[it->second].holder = std::move(rec);
          }
          for (size_t i : order) {
            if (!out[i].won && out[i].holder.key.empty()) {
              // Won by a concurrent claimant that released it again before we looked.
              out[i].holder.scope = scope();
              out[i].holder.key = claims[i].key;
              out[i].holder.state = State::kReleased;
            }
          }
        }
        for (size_t i = 0; i < claims.size(); ++i) {
          const size_t f0 = first.at(claims[i].key);
          if (f0 != i) out[i] = ClaimOutcome{false, out[f0].holder};
        }
        return out;
      });
}

Result<std::vector<std::optional<Record>>> PgLedger::do_lookup(
    const std::vector<std::string>& keys) {
  std::vector<const std::string*> k;
  for (const auto& key : keys) k.push_back(&key);
  const std::vector<std::string> params = {scope(), text_array(k)};
  return in_transaction<std::vector<std::optional<Record>>>(
      [&](std::optional<Failure>& f) -> Result<std::vector<std::optional<Record>>> {
        PgResult r =
            run("lookup", kSelect + "WHERE scope = $1 AND key = ANY($2::text[]) AND slot = 0",
                params, f);
        if (f) return f->error;
        std::unordered_map<std::string, Record> live;
        for (auto& rec : rows(r.get())) live.emplace(rec.key, std::move(rec));
        std::vector<std::optional<Record>> out(keys.size());
        for (size_t i = 0; i < keys.size(); ++i) {
          if (auto it = live.find(keys[i]); it != live.end()) out[i] = it->second;
        }
        return out;
      });
}

Status PgLedger::do_mark_batch(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                               State state) {
  return in_transaction<Ok>(
      [&](std::optional<Failure>& f) -> Status { return mark_rows(claims, state, f); });
}

Status PgLedger::do_mark_with_progress(
    const std::vector<std::pair<std::string, std::int64_t>>& claims, State state,
    const std::vector<PlanLetterProgress>& progress) {
  return in_transaction<Ok>([&](std::optional<Failure>& f) -> Status {
    if (Status marked = mark_rows(claims, state, f); !marked || f) return marked;
    return add_progress(progress, f);
  });
}

Status PgLedger::mark_rows(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                           State state, std::optional<Failure>& f) {
  // Two statements for the whole batch (a block of thousands of claims must not cost a round trip
  // each): the rows' states, locked, then one UPDATE of those that move. The checks run in the
  // batch's order, so the first failing element's error is the one returned, as before.
  std::vector<const std::string*> keys;
  keys.reserve(claims.size());
  std::string generations = "{";
  for (size_t i = 0; i < claims.size(); ++i) {
    keys.push_back(&claims[i].first);
    if (i) generations += ',';
    generations += std::to_string(claims[i].second);
  }
  generations += '}';
  const std::string key_array = text_array(keys);
  const std::string ts = format_time(now());
  PgResult r = run("mark",
                   "SELECT c.key, c.generation, c.state FROM replaygate_ledger_claims c JOIN "
                   "unnest($2::text[], $3::bigint[]) AS u(k, g) ON c.key = u.k AND "
                   "c.generation = u.g WHERE c.scope = $1 ORDER BY c.key, c.generation "
                   "FOR UPDATE OF c",
                   {scope(), key_array, generations}, f);
  if (f) return f->error;
  std::map<std::pair<std::string, std::int64_t>, State> found;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    std::optional<State> st = parse_state(PQgetvalue(r.get(), i, 2));
    if (!st) continue;
    found.emplace(std::make_pair(std::string(PQgetvalue(r.get(), i, 0),
                                             static_cast<size_t>(PQgetlength(r.get(), i, 0))),
                                 std::stoll(PQgetvalue(r.get(), i, 1))),
                  *st);
  }
  std::vector<const std::string*> move_keys;
  std::string move_generations = "{";
  for (const auto& claim : claims) {
    const auto& [key, generation] = claim;
    auto it = found.find(claim);
    std::optional<State> current;
    if (it != found.end()) current = it->second;
    if (auto refused = mark_refusal(describe(), key, generation, current, state)) {
      return *refused;
    }
    if (*current == state) continue;
    it->second = state;  // a pair given twice moves once
    if (!move_keys.empty()) move_generations += ',';
    move_keys.push_back(&key);
    move_generations += std::to_string(generation);
  }
  move_generations += '}';
  if (move_keys.empty()) return Ok{};
  run("mark",
      "UPDATE replaygate_ledger_claims c SET state = $4, updated_at = $5 FROM "
      "unnest($2::text[], $3::bigint[]) AS u(k, g) WHERE c.scope = $1 AND c.key = u.k AND "
      "c.generation = u.g",
      {scope(), text_array(move_keys), move_generations, std::string(state_name(state)), ts}, f);
  if (f) return f->error;
  return Ok{};
}

Result<Record> PgLedger::do_release(std::string_view key, std::string_view operator_name,
                                    std::string_view reason) {
  return in_transaction<Record>([&](std::optional<Failure>& f) -> Result<Record> {
    PgResult r = run("release",
                     "UPDATE replaygate_ledger_claims SET state = 'released', slot = generation, "
                     "released_by = $3, release_reason = $4, released_at = $5, updated_at = $5 "
                     "WHERE scope = $1 AND key = $2 AND slot = 0 RETURNING " +
                         std::string(kColumns),
                     {scope(), std::string(key), std::string(operator_name), std::string(reason),
                      format_time(now())},
                     f);
    if (f) return f->error;
    if (PQntuples(r.get()) == 0) {
      return error(ErrorCode::kNotFound, "ledger " + describe() + ": release: key '" +
                                             std::string(key) + "' has no live claim");
    }
    return read_row(r.get(), 0);
  });
}

Result<std::vector<Record>> PgLedger::do_show(std::string_view key) {
  return in_transaction<std::vector<Record>>(
      [&](std::optional<Failure>& f) -> Result<std::vector<Record>> {
        PgResult r = run("show", kSelect + "WHERE scope = $1 AND key = $2 ORDER BY generation",
                         {scope(), std::string(key)}, f);
        if (f) return f->error;
        return rows(r.get());
      });
}

Result<std::vector<Record>> PgLedger::do_list(Time since) {
  return in_transaction<std::vector<Record>>(
      [&](std::optional<Failure>& f) -> Result<std::vector<Record>> {
        PgResult r = run("list",
                         kSelect +
                             "WHERE scope = $1 AND claimed_at >= $2 ORDER BY claimed_at "
                             "COLLATE \"C\", key COLLATE \"C\", generation",
                         {scope(), format_time(since)}, f);
        if (f) return f->error;
        return rows(r.get());
      });
}

Result<Stats> PgLedger::do_stats() {
  return in_transaction<Stats>([&](std::optional<Failure>& f) -> Result<Stats> {
    PgResult r = run("stats",
                     "SELECT state, count(*), min(claimed_at COLLATE \"C\"), max(claimed_at "
                     "COLLATE \"C\") FROM replaygate_ledger_claims WHERE scope = $1 GROUP BY state",
                     {scope()}, f);
    if (f) return f->error;
    Stats st;
    for (int i = 0; i < PQntuples(r.get()); ++i) {
      const std::int64_t n = std::stoll(PQgetvalue(r.get(), i, 1));
      switch (parse_state(PQgetvalue(r.get(), i, 0)).value_or(State::kClaimed)) {
        case State::kClaimed:
          st.claimed += n;
          break;
        case State::kRecorded:
          st.recorded += n;
          break;
        case State::kConfirmed:
          st.confirmed += n;
          break;
        case State::kReleased:
          st.released += n;
          break;
      }
      auto lo = parse_stored_time(PQgetvalue(r.get(), i, 2));
      auto hi = parse_stored_time(PQgetvalue(r.get(), i, 3));
      if (lo && (!st.oldest || *lo < *st.oldest)) st.oldest = lo;
      if (hi && (!st.newest || *hi > *st.newest)) st.newest = hi;
    }
    PgResult k =
        run("stats", "SELECT count(DISTINCT key) FROM replaygate_ledger_claims WHERE scope = $1",
            {scope()}, f);
    if (f) return f->error;
    st.keys = std::stoll(PQgetvalue(k.get(), 0, 0));
    return st;
  });
}

Result<std::int64_t> PgLedger::do_export_rows(const std::function<bool(const Record&)>& sink) {
  // A cursor inside one transaction: a consistent snapshot without holding every row at once.
  return in_transaction<std::int64_t>([&](std::optional<Failure>& f) -> Result<std::int64_t> {
    run("export",
        "DECLARE replaygate_ledger_export NO SCROLL CURSOR FOR " + kSelect +
            "WHERE scope = $1 ORDER BY claimed_at COLLATE \"C\", key COLLATE \"C\", generation",
        {scope()}, f);
    if (f) return f->error;
    std::int64_t n = 0;
    for (;;) {
      PgResult r = run("export", "FETCH 1000 FROM replaygate_ledger_export", {}, f);
      if (f) return f->error;
      const int count = PQntuples(r.get());
      if (count == 0) break;
      for (int i = 0; i < count; ++i) {
        ++n;
        if (!sink(read_row(r.get(), i))) {
          run("export", "CLOSE replaygate_ledger_export", {}, f);
          if (f) return f->error;
          return n;
        }
      }
    }
    run("export", "CLOSE replaygate_ledger_export", {}, f);
    if (f) return f->error;
    return n;
  });
}

Result<Pruned> PgLedger::do_prune(std::chrono::microseconds older_than, bool dry_run) {
  return in_transaction<Pruned>([&](std::optional<Failure>& f) -> Result<Pruned> {
    // The cutoff by the server's clock (now() is the transaction's start): a client's clock,
    // the pruning one's or a claimant's, plays no part.
    PgResult c = run("prune",
                     "SELECT to_char((now() - $1::bigint * interval '1 microsecond') AT TIME "
                     "ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
                     {std::to_string(older_than.count())}, f);
    if (f) return f->error;
    Pruned out;
    const std::string cutoff = PQgetvalue(c.get(), 0, 0);
    out.cutoff = parse_stored_time(cutoff).value_or(Time{});
    PgResult r = run(
        "prune",
        std::string(dry_run ? kSelect + "WHERE" : "DELETE FROM replaygate_ledger_claims WHERE") +
            " scope = $1 AND recorded_at < $2" +
            (dry_run ? std::string() : " RETURNING " + std::string(kColumns)),
        {scope(), cutoff}, f);
    if (f) return f->error;
    out.rows = rows(r.get());
    std::sort(out.rows.begin(), out.rows.end(), [](const Record& a, const Record& b) {
      return std::tie(a.recorded_at, a.key, a.generation) <
             std::tie(b.recorded_at, b.key, b.generation);
    });
    return out;
  });
}

Result<std::int64_t> PgLedger::do_restore(const std::vector<Record>& rows) {
  return in_transaction<std::int64_t>([&](std::optional<Failure>& f) -> Result<std::int64_t> {
    // Two restores of one scope at once: the second waits here, then sees the first's rows.
    run("restore", "SELECT pg_advisory_xact_lock(7306926405357233480)", {}, f);
    if (f) return f->error;
    PgResult any = run("restore", "SELECT count(*) FROM replaygate_ledger_claims WHERE scope = $1",
                       {scope()}, f);
    if (f) return f->error;
    const std::int64_t held = std::stoll(PQgetvalue(any.get(), 0, 0));
    if (held != 0) {
      return error(ErrorCode::kInvalidArgument, "ledger " + describe() + ": scope '" + scope() +
                                                    "' is not empty (" + std::to_string(held) +
                                                    " rows): restore fills an empty scope only");
    }
    for (const Record& r : rows) {
      const bool released = r.state == State::kReleased;
      std::vector<std::string> p = {scope(),
                                    r.key,
                                    std::to_string(released ? r.generation : 0),
                                    std::to_string(r.generation),
                                    std::string(state_name(r.state)),
                                    r.policy,
                                    std::to_string(r.revision),
                                    r.table_checksum,
                                    r.rule,
                                    r.message_id,
                                    r.worker,
                                    format_time(r.claimed_at),
                                    format_time(r.updated_at)};
      std::string sql =
          "INSERT INTO replaygate_ledger_claims (scope, key, slot, generation, state, policy, "
          "revision, table_checksum, rule, message_id, worker, claimed_at, updated_at";
      // A restored row keeps the only time it has, its claimed_at, as the ledger's (as an
      // upgraded one does), never later than the server's now.
      sql += ", recorded_at";
      std::string values =
          ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, least($12 COLLATE "
          "\"C\", " kServerNow " COLLATE \"C\")";
      // The optional columns, each with its own parameter (a NULL is a column left out).
      const auto add = [&](const char* column, std::string value) {
        p.push_back(std::move(value));
        sql += std::string(", ") + column;
        values += ", $" + std::to_string(p.size());
      };
      if (released) {
        add("released_by", r.released_by);
        add("release_reason", r.release_reason);
        add("released_at", format_time(r.released_at.value_or(r.updated_at)));
      }
      if (r.copy_replay) add("copy_replay", std::to_string(*r.copy_replay));
      if (!r.body_digest.empty()) add("body_digest", r.body_digest);
      sql += values + ")";
      run("restore", sql, p, f);
      if (f) return f->error;
    }
    return static_cast<std::int64_t>(rows.size());
  });
}

namespace {
constexpr const char* kSelectAnchors =
    "SELECT log, seq, head, chain_digest, key_id, recorded_at FROM "
    "replaygate_ledger_audit_anchors WHERE scope = $1";

std::vector<AuditAnchor> anchor_rows(const PGresult* r) {
  std::vector<AuditAnchor> out;
  for (int i = 0; i < PQntuples(r); ++i) {
    AuditAnchor a;
    a.log = PQgetvalue(r, i, 0);
    a.seq = std::stoll(PQgetvalue(r, i, 1));
    a.head = PQgetvalue(r, i, 2);
    a.chain_digest = PQgetvalue(r, i, 3);
    a.key_id = PQgetvalue(r, i, 4);
    a.recorded_at = parse_stored_time(PQgetvalue(r, i, 5)).value_or(Time{});
    out.push_back(std::move(a));
  }
  return out;
}
}  // namespace

Result<AuditAnchor> PgLedger::do_raise_anchor(const AuditAnchor& a) {
  return in_transaction<AuditAnchor>([&](std::optional<Failure>& f) -> Result<AuditAnchor> {
    run("raise an audit anchor",
        "INSERT INTO replaygate_ledger_audit_anchors (scope, log, seq, head, chain_digest, key_id, "
        "recorded_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (scope, log) DO UPDATE SET "
        "seq = excluded.seq, head = excluded.head, chain_digest = excluded.chain_digest, key_id = "
        "excluded.key_id, recorded_at = excluded.recorded_at WHERE excluded.seq > "
        "replaygate_ledger_audit_anchors.seq",
        {scope(), a.log, std::to_string(a.seq), a.head, a.chain_digest, a.key_id,
         format_time(a.recorded_at)},
        f);
    if (f) return f->error;
    PgResult r = run("read the audit anchor", std::string(kSelectAnchors) + " AND log = $2",
                     {scope(), a.log}, f);
    if (f) return f->error;
    std::vector<AuditAnchor> rows = anchor_rows(r.get());
    if (rows.empty()) {
      return error(ErrorCode::kInternal, "ledger " + describe() + ": the audit anchor of " + a.log +
                                             " is missing right after it was written");
    }
    return rows.front();
  });
}

Result<std::vector<AuditAnchor>> PgLedger::do_anchors() {
  return in_transaction<std::vector<AuditAnchor>>(
      [&](std::optional<Failure>& f) -> Result<std::vector<AuditAnchor>> {
        PgResult r = run("read the audit anchors", std::string(kSelectAnchors) + " ORDER BY log",
                         {scope()}, f);
        if (f) return f->error;
        return anchor_rows(r.get());
      });
}

namespace {

PlanRecord plan_from(const PGresult* r, int row) {
  auto text = [&](int col) {
    return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
  };
  PlanRecord p;
  p.digest = text(0);
  p.author = text(1);
  p.source = text(2);
  p.table_checksum = text(3);
  p.letters = std::stoll(text(4));
  p.copies = std::stoll(text(5));
  p.created_at = parse_stored_time(text(6)).value_or(Time{});
  p.expires_at = parse_stored_time(text(7)).value_or(Time{});
  p.recorded_at = parse_stored_time(text(8)).value_or(Time{});
  if (!PQgetisnull(r, row, 11)) {
    p.cancelled_by = text(9);
    p.cancel_reason = text(10);
    p.cancelled_at = parse_stored_time(text(11));
  }
  return p;
}

PlanApproval approval_from(const PGresult* r, int row) {
  auto text = [&](int col) {
    return std::string(PQgetvalue(r, row, col), static_cast<size_t>(PQgetlength(r, row, col)));
  };
  PlanApproval a;
  a.digest = text(0);
  a.approver = text(1);
  a.key_id = text(2);
  a.signature = text(3);
  a.reason = text(4);
  a.approved_at = parse_stored_time(text(5)).value_or(Time{});
  a.recorded_at = parse_stored_time(text(6)).value_or(Time{});
  return a;
}

std::string int_array(const std::vector<std::int64_t>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "}";
}

}  // namespace

Result<std::optional<PlanRecord>> PgLedger::read_plan(std::string_view digest,
                                                      std::optional<Failure>& f, bool for_update) {
  PgResult r = run("read a plan",
                   std::string("SELECT ") + kPlanColumns +
                       " FROM replaygate_ledger_plans WHERE scope = $1 AND digest = $2" +
                       (for_update ? " FOR UPDATE" : ""),
                   {scope(), std::string(digest)}, f);
  if (f) return f->error;
  if (PQntuples(r.get()) == 0) return std::optional<PlanRecord>();
  return std::optional<PlanRecord>(plan_from(r.get(), 0));
}

Status PgLedger::do_record_plan(const PlanRecord& plan) {
  return in_transaction<Ok>([&](std::optional<Failure>& f) -> Status {
    // Two records of one digest at once: the second waits for the first's row, then compares.
    PgResult ins = run("record a plan",
                       "INSERT INTO replaygate_ledger_plans (scope, digest, author, source, "
                       "table_checksum, letters, copies, created_at, expires_at, recorded_at) "
                       "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, " kServerNow
                       ") ON CONFLICT DO NOTHING RETURNING digest",
                       {scope(), plan.digest, plan.author, plan.source, plan.table_checksum,
                        std::to_string(plan.letters), std::to_string(plan.copies),
                        format_time(plan.created_at), format_time(plan.expires_at)},
                       f);
    if (f) return f->error;
    if (PQntuples(ins.get()) == 1) return Ok{};
    Result<std::optional<PlanRecord>> held = read_plan(plan.digest, f, false);
    if (!held) return held.error();
    if (!*held) {
      return error(ErrorCode::kInternal, "ledger " + describe() + ": plan " + plan.digest +
                                             " conflicted but is not recorded");
    }
    PlanRecord given = plan;
    given.created_at = parse_stored_time(format_time(plan.created_at)).value_or(plan.created_at);
    given.expires_at = parse_stored_time(format_time(plan.expires_at)).value_or(plan.expires_at);
    const std::string differ = differing_fields(**held, given);
    if (differ.empty()) return Ok{};
    return error(ErrorCode::kInvalidArgument, "ledger " + describe() + ": plan " + plan.digest +
                                                  " recorded with other fields (" + differ + ")");
  });
}

Result<std::optional<PlanRecord>> PgLedger::do_plan(std::string_view digest) {
  return in_transaction<std::optional<PlanRecord>>(
      [&](std::optional<Failure>& f) -> Result<std::optional<PlanRecord>> {
        return read_plan(digest, f, false);
      });
}

Result<PlanApproval> PgLedger::do_approve_plan(const PlanApproval& approval) {
  return in_transaction<PlanApproval>([&](std::optional<Failure>& f) -> Result<PlanApproval> {
    // FOR UPDATE: a cancel running at once either comes first (refused here) or waits.
    Result<std::optional<PlanRecord>> held = read_plan(approval.digest, f, true);
    if (!held) return held.error();
    if (!*held) {
      return error(ErrorCode::kNotFound,
                   "ledger " + describe() + ": plan " + approval.digest + " is not recorded");
    }
    if ((*held)->cancelled_at) {
      return error(ErrorCode::kBadTransition, "ledger " + describe() + ": plan " + approval.digest +
                                                  " is cancelled (by " + (*held)->cancelled_by +
                                                  ")");
    }
    PgResult r = run("approve a plan",
                     "INSERT INTO replaygate_ledger_plan_approvals (scope, digest, approver, "
                     "key_id, signature, reason, approved_at, recorded_at) VALUES ($1, $2, $3, "
                     "$4, $5, $6, $7, " kServerNow ") ON CONFLICT DO NOTHING RETURNING " +
                         std::string(kApprovalColumns),
                     {scope(), approval.digest, approval.approver, approval.key_id,
                      approval.signature, approval.reason, format_time(approval.approved_at)},
                     f);
    if (f) return f->error;
    if (PQntuples(r.get()) == 0) {
      return error(ErrorCode::kInvalidArgument, "ledger " + describe() + ": plan " +
                                                    approval.digest + " is already approved by " +
                                                    approval.approver);
    }
    return approval_from(r.get(), 0);
  });
}

Result<std::vector<PlanApproval>> PgLedger::do_plan_approvals(std::string_view digest) {
  return in_transaction<std::vector<PlanApproval>>(
      [&](std::optional<Failure>& f) -> Result<std::vector<PlanApproval>> {
        PgResult r = run("read a plan's approvals",
                         std::string("SELECT ") + kApprovalColumns +
                             " FROM replaygate_ledger_plan_approvals WHERE scope = $1 AND digest "
                             "= $2 ORDER BY recorded_at COLLATE \"C\", approver COLLATE \"C\"",
                         {scope(), std::string(digest)}, f);
        if (f) return f->error;
        std::vector<PlanApproval> out;
        for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(approval_from(r.get(), i));
        return out;
      });
}

Result<PlanRecord> PgLedger::do_cancel_plan(std::string_view digest, std::string_view operator_name,
                                            std::string_view reason) {
  return in_transaction<PlanRecord>([&](std::optional<Failure>& f) -> Result<PlanRecord> {
    Result<std::optional<PlanRecord>> held = read_plan(digest, f, true);
    if (!held) return held.error();
    if (!*held) {
      return error(ErrorCode::kNotFound,
                   "ledger " + describe() + ": plan " + std::string(digest) + " is not recorded");
    }
    if ((*held)->cancelled_at) {
      return error(ErrorCode::kBadTransition,
                   "ledger " + describe() + ": plan " + std::string(digest) +
                       " was already cancelled by " + (*held)->cancelled_by + " at " +
                       format_time(*(*held)->cancelled_at));
    }
    const std::string at = format_time(now());
    run("cancel a plan",
        "UPDATE replaygate_ledger_plans SET cancelled_by = $3, cancel_reason = $4, cancelled_at = "
        "$5 WHERE scope = $1 AND digest = $2",
        {scope(), std::string(digest), std::string(operator_name), std::string(reason), at}, f);
    if (f) return f->error;
    PlanRecord p = **held;
    p.cancelled_by = operator_name;
    p.cancel_reason = reason;
    p.cancelled_at = parse_stored_time(at);
    return p;
  });
}

Status PgLedger::do_record_plan_progress(const std::vector<PlanLetterProgress>& progress) {
  return in_transaction<Ok>(
      [&](std::optional<Failure>& f) -> Status { return add_progress(progress, f); });
}

Status PgLedger::add_progress(const std::vector<PlanLetterProgress>& progress,
                              std::optional<Failure>& f) {
  // One row per (digest, identity), in sorted order: an INSERT ... ON CONFLICT cannot touch a row
  // twice, and sorted rows make two concurrent batches lock in one direction.
  struct Sum {
    std::int64_t done = 0, held = 0, changed = 0;
    const std::string* outcome = nullptr;
  };
  std::map<std::pair<std::string_view, std::string_view>, Sum> sums;
  for (const PlanLetterProgress& p : progress) {
    Sum& s = sums[{p.digest, p.identity}];
    s.done += p.done;
    s.held += p.held;
    s.changed += p.changed;
    s.outcome = &p.last_outcome;
  }
  std::vector<std::string> digests_owned, identities_owned;
  std::vector<const std::string*> digests, identities, outcomes, distinct;
  std::vector<std::int64_t> done, held, changed;
  digests_owned.reserve(sums.size());
  identities_owned.reserve(sums.size());
  for (const auto& [id, s] : sums) {
    digests_owned.emplace_back(id.first);
    identities_owned.emplace_back(id.second);
    if (distinct.empty() || *distinct.back() != digests_owned.back()) {
      distinct.push_back(&digests_owned.back());
    }
    outcomes.push_back(s.outcome);
    done.push_back(s.done);
    held.push_back(s.held);
    changed.push_back(s.changed);
  }
  for (size_t i = 0; i < digests_owned.size(); ++i) {
    digests.push_back(&digests_owned[i]);
    identities.push_back(&identities_owned[i]);
  }
  const std::string at = format_time(now());
  PgResult known = run("read the plans of the progress",
                       "SELECT digest FROM replaygate_ledger_plans WHERE scope = $1 AND digest = "
                       "ANY($2::text[])",
                       {scope(), text_array(distinct)}, f);
  if (f) return f->error;
  if (PQntuples(known.get()) != static_cast<int>(distinct.size())) {
    std::set<std::string> found;
    for (int i = 0; i < PQntuples(known.get()); ++i) found.insert(PQgetvalue(known.get(), i, 0));
    for (const std::string* d : distinct) {
      if (found.count(*d) == 0) {
        return error(ErrorCode::kNotFound,
                     "ledger " + describe() + ": plan " + *d + " is not recorded (progress)");
      }
    }
  }
  run("record a plan's progress",
      "INSERT INTO replaygate_ledger_plan_progress AS t (scope, digest, identity, done, held, "
      "changed, last_outcome, updated_at) SELECT $1, u.d, u.i, u.n, u.h, u.c, u.o, $8 FROM "
      "unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::text[]) "
      "AS u(d, i, n, h, c, o) ON CONFLICT (scope, digest, identity) DO UPDATE SET done = "
      "t.done + excluded.done, held = t.held + excluded.held, changed = t.changed + "
      "excluded.changed, last_outcome = excluded.last_outcome, updated_at = excluded.updated_at",
      {scope(), text_array(digests), text_array(identities), int_array(done), int_array(held),
       int_array(changed), text_array(outcomes), at},
      f);
  if (f) return f->error;
  return Ok{};
}

Result<std::vector<PlanLetterProgress>> PgLedger::do_plan_progress(
    std::string_view digest, const std::vector<std::string>& identities) {
  return in_transaction<std::vector<PlanLetterProgress>>(
      [&](std::optional<Failure>& f) -> Result<std::vector<PlanLetterProgress>> {
        std::vector<const std::string*> ids;
        for (const std::string& i : identities) ids.push_back(&i);
        PgResult r = run("read a plan's progress",
                         "SELECT identity, done, held, changed, last_outcome, updated_at FROM "
                         "replaygate_ledger_plan_progress WHERE scope = $1 AND digest = $2 AND "
                         "identity = ANY($3::text[])",
                         {scope(), std::string(digest), text_array(ids)}, f);
        if (f) return f->error;
        std::unordered_map<std::string, int> row_of;
        for (int i = 0; i < PQntuples(r.get()); ++i) {
          row_of.emplace(std::string(PQgetvalue(r.get(), i, 0),
                                     static_cast<size_t>(PQgetlength(r.get(), i, 0))),
                         i);
        }
        std::vector<PlanLetterProgress> out(identities.size());
        for (size_t k = 0; k < identities.size(); ++k) {
          PlanLetterProgress& p = out[k];
          p.digest = digest;
          p.identity = identities[k];
          const auto it = row_of.find(identities[k]);
          if (it == row_of.end()) continue;
          const int i = it->second;
          p.done = std::stoll(PQgetvalue(r.get(), i, 1));
          p.held = std::stoll(PQgetvalue(r.get(), i, 2));
          p.changed = std::stoll(PQgetvalue(r.get(), i, 3));
          p.last_outcome = std::string(PQgetvalue(r.get(), i, 4),
                                       static_cast<size_t>(PQgetlength(r.get(), i, 4)));
          p.updated_at = parse_stored_time(PQgetvalue(r.get(), i, 5)).value_or(Time{});
        }
        return out;
      });
}

Result<PlanCounts> PgLedger::do_plan_counts(std::string_view digest) {
  return in_transaction<PlanCounts>([&](std::optional<Failure>& f) -> Result<PlanCounts> {
    PgResult r = run("count a plan's progress",
                     "SELECT count(*), coalesce(sum(done), 0), coalesce(sum(held), 0), "
                     "coalesce(sum(changed), 0) FROM replaygate_ledger_plan_progress WHERE scope "
                     "= $1 AND digest = $2",
                     {scope(), std::string(digest)}, f);
    if (f) return f->error;
    PlanCounts c;
    c.identities = std::stoll(PQgetvalue(r.get(), 0, 0));
    c.done = std::stoll(PQgetvalue(r.get(), 0, 1));
    c.held = std::stoll(PQgetvalue(r.get(), 0, 2));
    c.changed = std::stoll(PQgetvalue(r.get(), 0, 3));
    return c;
  });
}

Result<std::int64_t> PgLedger::do_export_plan_progress(
    std::string_view digest, const std::function<bool(const PlanLetterProgress&)>& sink) {
  // A cursor inside one transaction, as export_rows: a snapshot without every row in memory.
  return in_transaction<std::int64_t>([&](std::optional<Failure>& f) -> Result<std::int64_t> {
    run("export a plan's progress",
        "DECLARE replaygate_plan_progress_export NO SCROLL CURSOR FOR SELECT digest, identity, "
        "done, held, changed, last_outcome, updated_at FROM replaygate_ledger_plan_progress WHERE "
        "scope = $1 AND digest = $2 ORDER BY identity COLLATE \"C\"",
        {scope(), std::string(digest)}, f);
    if (f) return f->error;
    std::int64_t n = 0;
    for (bool more = true; more;) {
      PgResult r =
          run("export a plan's progress", "FETCH 1000 FROM replaygate_plan_progress_export", {}, f);
      if (f) return f->error;
      const int count = PQntuples(r.get());
      more = count > 0;
      for (int i = 0; i < count && more; ++i) {
        auto text = [&](int col) {
          return std::string(PQgetvalue(r.get(), i, col),
                             static_cast<size_t>(PQgetlength(r.get(), i, col)));
        };
        PlanLetterProgress p;
        p.digest = text(0);
        p.identity = text(1);
        p.done = std::stoll(text(2));
        p.held = std::stoll(text(3));
        p.changed = std::stoll(text(4));
        p.last_outcome = text(5);
        p.updated_at = parse_stored_time(text(6)).value_or(Time{});
        ++n;
        more = sink(p);
      }
    }
    run("export a plan's progress", "CLOSE replaygate_plan_progress_export", {}, f);
    if (f) return f->error;
    return n;
  });
}

Result<std::vector<PlanRecord>> PgLedger::do_plans() {
  return in_transaction<std::vector<PlanRecord>>(
      [&](std::optional<Failure>& f) -> Result<std::vector<PlanRecord>> {
        PgResult r = run("read the plans",
                         std::string("SELECT ") + kPlanColumns +
                             " FROM replaygate_ledger_plans WHERE scope = $1 ORDER BY recorded_at "
                             "COLLATE \"C\", digest COLLATE \"C\"",
                         {scope()}, f);
        if (f) return f->error;
        std::vector<PlanRecord> out;
        for (int i = 0; i < PQntuples(r.get()); ++i) out.push_back(plan_from(r.get(), i));
        return out;
      });
}

}  // namespace

namespace {

Result<std::unique_ptr<PgLedger>> connect(const std::string& conninfo, const Options& options,
                                          bool migrating) {
  const std::string timeout = std::to_string(options.connect_timeout_s);
  // Later keywords win over earlier ones: the URI's own connect_timeout overrides ours.
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, 1);
  if (!conn) return error(ErrorCode::kInternal, "ledger: out of memory (libpq)");
  if (PQstatus(conn) != CONNECTION_OK) {
    Error e =
        error(ErrorCode::kUnavailable,
              "ledger " + redact(conninfo) + ": cannot connect: " + one_line(PQerrorMessage(conn)));
    PQfinish(conn);
    return e;
  }
  auto ledger = std::make_unique<PgLedger>(conn, conninfo, options, migrating);
  if (auto e = ledger->init()) return *e;
  return ledger;
}

}  // namespace

Result<std::unique_ptr<Ledger>> open_postgres(const std::string& conninfo, const Options& options) {
  Result<std::unique_ptr<PgLedger>> l = connect(conninfo, options, false);
  if (!l) return l.error();
  return std::unique_ptr<Ledger>(std::move(*l));
}

Result<Migrated> migrate_postgres(const std::string& conninfo, const Options& options) {
  Result<std::unique_ptr<PgLedger>> l = connect(conninfo, options, true);
  if (!l) return l.error();
  return Migrated{(*l)->found_version(), kSchemaVersion};
}

}  // namespace replaygate::ledger::internal
