// The SQLite backend: one file, many processes on one host. Takes a path, returns a Ledger
// (internal::open_sqlite is its one entry point).
//
// Durability and exclusion: the file is in WAL mode with synchronous=FULL, so a COMMIT returns only
// after the WAL is fsynced; every write call is one BEGIN IMMEDIATE ... COMMIT, so writers take
// the file's write lock up front and a busy file is waited for (busy_timeout) rather than failed;
// the unique index claims_key on (scope, key, slot), where slot is 0 for the live claim and the
// generation once released, lets at most one live row exist per (scope, key), which makes
// `INSERT ... ON CONFLICT DO NOTHING` an exact claim. One index keyed by random keys (plus the
// append-only time index) keeps the pages written per commit, and so the WAL, small.
//
// Recognition: the ledger sets application_id 0x52474C47 ("RGLG") and user_version = the schema
// version. A new or empty file is created; any other file must be this application's at this
// version and have exactly this schema (sqlite_master compared text for text), or it is refused.
// A file of an older schema version is refused on open; migrate_sqlite() brings a file of version
// 1, 2 or 3 with exactly that version's schema to this one (migrate()), in one transaction:
// columns added by ALTER TABLE (which writes the same text as a new file's), then the plan tables.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <unordered_map>

#include "ledger/backends.h"

namespace replaygate::ledger::internal {
namespace {

constexpr int kApplicationId = 0x52474C47;  // "RGLG"

// The schema, as sqlite_master stores it (compared text for text when a file is opened).
constexpr const char* kCreateTable =
    "CREATE TABLE claims (\n"
    "  scope TEXT NOT NULL,\n"
    "  key TEXT NOT NULL,\n"
    "  slot INTEGER NOT NULL,\n"
    "  generation INTEGER NOT NULL,\n"
    "  state TEXT NOT NULL CHECK (state IN ('claimed', 'recorded', 'confirmed', 'released')),\n"
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
    "  released_at TEXT, copy_replay INTEGER, body_digest TEXT, recorded_at TEXT NOT NULL DEFAULT "
    "'',\n"
    "  CHECK ((state = 'released' AND slot = generation) OR (state <> 'released' AND slot = 0))\n"
    ") STRICT";
// Schema version 2's table (no recorded_at), upgraded like version 1's.
constexpr const char* kCreateTableV2 =
    "CREATE TABLE claims (\n"
    "  scope TEXT NOT NULL,\n"
    "  key TEXT NOT NULL,\n"
    "  slot INTEGER NOT NULL,\n"
    "  generation INTEGER NOT NULL,\n"
    "  state TEXT NOT NULL CHECK (state IN ('claimed', 'recorded', 'confirmed', 'released')),\n"
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
    "  released_at TEXT, copy_replay INTEGER, body_digest TEXT,\n"
    "  CHECK ((state = 'released' AND slot = generation) OR (state <> 'released' AND slot = 0))\n"
    ") STRICT";
// Schema version 1's table: a file with it is upgraded (upgrade()); ALTER TABLE ADD COLUMN
// inserts the columns after the last one, which gives kCreateTable's text exactly (hence its
// layout: the added columns on one line, recorded_at with the DEFAULT that ADD COLUMN needs).
constexpr const char* kCreateTableV1 =
    "CREATE TABLE claims (\n"
    "  scope TEXT NOT NULL,\n"
    "  key TEXT NOT NULL,\n"
    "  slot INTEGER NOT NULL,\n"
    "  generation INTEGER NOT NULL,\n"
    "  state TEXT NOT NULL CHECK (state IN ('claimed', 'recorded', 'confirmed', 'released')),\n"
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
    "  CHECK ((state = 'released' AND slot = generation) OR (state <> 'released' AND slot = 0))\n"
    ") STRICT";
// slot is 0 for the live claim and the generation once released: one live claim per key.
constexpr const char* kCreateLive = "CREATE UNIQUE INDEX claims_key ON claims (scope, key, slot)";
constexpr const char* kCreateTime = "CREATE INDEX claims_time ON claims (scope, claimed_at)";
// recorded_at grows with the insert order: the last one is the index's end (claim_batch), and
// prune reads a prefix of it.
constexpr const char* kCreateRecorded = "CREATE INDEX claims_recorded ON claims (recorded_at)";
// The last signed checkpoint per audit log (Ledger::raise_anchor). A ledger made before it gets it
// when opened (add_anchor_table).
constexpr const char* kCreateAnchors =
    "CREATE TABLE audit_anchors (\n"
    "  scope TEXT NOT NULL,\n"
    "  log TEXT NOT NULL,\n"
    "  seq INTEGER NOT NULL,\n"
    "  head TEXT NOT NULL,\n"
    "  chain_digest TEXT NOT NULL,\n"
    "  key_id TEXT NOT NULL,\n"
    "  recorded_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (scope, log)\n"
    ") STRICT, WITHOUT ROWID";

// The plans (schema version 4, Ledger::record_plan and the rest).
constexpr const char* kCreatePlans =
    "CREATE TABLE plans (\n"
    "  scope TEXT NOT NULL,\n"
    "  digest TEXT NOT NULL,\n"
    "  author TEXT NOT NULL,\n"
    "  source TEXT NOT NULL,\n"
    "  table_checksum TEXT NOT NULL,\n"
    "  letters INTEGER NOT NULL,\n"
    "  copies INTEGER NOT NULL,\n"
    "  created_at TEXT NOT NULL,\n"
    "  expires_at TEXT NOT NULL,\n"
    "  recorded_at TEXT NOT NULL,\n"
    "  cancelled_by TEXT,\n"
    "  cancel_reason TEXT,\n"
    "  cancelled_at TEXT,\n"
    "  PRIMARY KEY (scope, digest)\n"
    ") STRICT, WITHOUT ROWID";
// One approval per approver: the primary key makes a second one a no-op insert.
constexpr const char* kCreatePlanApprovals =
    "CREATE TABLE plan_approvals (\n"
    "  scope TEXT NOT NULL,\n"
    "  digest TEXT NOT NULL,\n"
    "  approver TEXT NOT NULL,\n"
    "  key_id TEXT NOT NULL,\n"
    "  signature TEXT NOT NULL,\n"
    "  reason TEXT NOT NULL,\n"
    "  approved_at TEXT NOT NULL,\n"
    "  recorded_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (scope, digest, approver)\n"
    ") STRICT, WITHOUT ROWID";
constexpr const char* kCreatePlanProgress =
    "CREATE TABLE plan_progress (\n"
    "  scope TEXT NOT NULL,\n"
    "  digest TEXT NOT NULL,\n"
    "  identity TEXT NOT NULL,\n"
    "  done INTEGER NOT NULL,\n"
    "  held INTEGER NOT NULL,\n"
    "  changed INTEGER NOT NULL,\n"
    "  last_outcome TEXT NOT NULL,\n"
    "  updated_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (scope, digest, identity)\n"
    ") STRICT, WITHOUT ROWID";

constexpr const char* kPlanColumns =
    "digest, author, source, table_checksum, letters, copies, created_at, expires_at, "
    "recorded_at, cancelled_by, cancel_reason, cancelled_at";
constexpr const char* kApprovalColumns =
    "digest, approver, key_id, signature, reason, approved_at, recorded_at";
constexpr const char* kProgressColumns =
    "digest, identity, done, held, changed, last_outcome, updated_at";

using Objects = std::vector<std::pair<std::string, std::string>>;  // (name, sql), by name

Objects sorted(Objects o) {
  std::sort(o.begin(), o.end());
  return o;
}

// The tables and indexes of each schema version (without audit_anchors, checked on its own).
Objects layout(int version);

class Stmt {
 public:
  Stmt() = default;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s_); }
  void finalize() {
    sqlite3_finalize(s_);
    s_ = nullptr;
  }
  int prepare(sqlite3* db, const std::string& sql) {
    sqlite3_finalize(s_);
    s_ = nullptr;
    return sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr);
  }
  sqlite3_stmt* get() const { return s_; }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  void text(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  // The caller keeps `v` alive until the next reset.
  void text_static(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  }
  void integer(int i, std::int64_t v) { sqlite3_bind_int64(s_, i, v); }
  std::string column_text(int i) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, i));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, i))) : std::string();
  }
  bool column_null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }

 private:
  sqlite3_stmt* s_ = nullptr;
};

class SqliteLedger final : public Ledger {
 public:
  SqliteLedger(sqlite3* db, std::string path, const Options& o, bool migrating)
      : Ledger(o.scope, "sqlite:" + path, o.clock),
        db_(db),
        path_(std::move(path)),
        migrating_(migrating),
        test_point_(o.test_point) {}
  ~SqliteLedger() override {
    stmts_.clear();
    sqlite3_close_v2(db_);
  }

  // Opening: settings, recognition, creation. Returns an error or nothing.
  std::optional<Error> init(int busy_timeout_ms);
  // The schema version the file had when opened (== kSchemaVersion unless it was migrated).
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
  Error fail(std::string_view what, int rc) const {
    const int primary = rc & 0xFF;
    const ErrorCode code = (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
                               ? ErrorCode::kCorrupt
                               : ErrorCode::kUnavailable;
    std::string msg = "ledger " + describe() + ": " + std::string(what) + ": " + sqlite3_errstr(rc);
    const char* detail = sqlite3_errmsg(db_);
    if (detail && std::string_view(detail) != sqlite3_errstr(rc))
      msg += std::string(" (") + detail + ")";
    if (primary == SQLITE_NOTADB) msg += "; refused: the file is not a SQLite database";
    if (primary == SQLITE_CORRUPT) msg += "; refused: the file is damaged (never repaired here)";
    return error(code, std::move(msg));
  }
  int exec(const char* sql) { return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  // Begins a write (IMMEDIATE) or read transaction.
  std::optional<Error> begin(bool write) {
    int rc = exec(write ? "BEGIN IMMEDIATE" : "BEGIN");
    if (rc != SQLITE_OK) return fail(write ? "begin write transaction" : "begin", rc);
    return std::nullopt;
  }
  std::optional<Error> commit() {
    int rc = exec("COMMIT");
    if (rc != SQLITE_OK) {
      Error e = fail("commit", rc);
      rollback();
      return e;
    }
    return std::nullopt;
  }
  void rollback() {
    if (!sqlite3_get_autocommit(db_)) exec("ROLLBACK");
  }
  // A statement prepared once per connection, by name.
  Result<Stmt*> stmt(const char* name, const std::string& sql) {
    auto& s = stmts_[name];
    if (!s) {
      s = std::make_unique<Stmt>();
      int rc = s->prepare(db_, sql);
      if (rc != SQLITE_OK) {
        Error e = fail(std::string("prepare ") + name, rc);
        stmts_.erase(name);
        return e;
      }
    } else {
      s->reset();
    }
    return s.get();
  }
  Record read_row(const Stmt& s) const {
    Record r;
    r.scope = s.column_text(0);
    r.key = s.column_text(1);
    r.generation = sqlite3_column_int64(s.get(), 2);
    r.state = parse_state(s.column_text(3)).value_or(State::kClaimed);
    r.policy = s.column_text(4);
    r.revision = sqlite3_column_int64(s.get(), 5);
    r.table_checksum = s.column_text(6);
    r.rule = s.column_text(7);
    r.message_id = s.column_text(8);
    r.worker = s.column_text(9);
    r.claimed_at = parse_stored_time(s.column_text(10)).value_or(Time{});
    r.updated_at = parse_stored_time(s.column_text(11)).value_or(Time{});
    if (!s.column_null(12)) r.released_by = s.column_text(12);
    if (!s.column_null(13)) r.release_reason = s.column_text(13);
    if (!s.column_null(14)) r.released_at = parse_stored_time(s.column_text(14));
    if (!s.column_null(15)) r.copy_replay = sqlite3_column_int64(s.get(), 15);
    if (!s.column_null(16)) r.body_digest = s.column_text(16);
    r.recorded_at = parse_stored_time(s.column_text(17)).value_or(Time{});
    return r;
  }
  // Steps `s` to the end, appending every row. Returns an error or nothing.
  std::optional<Error> collect(Stmt& s, const char* what, std::vector<Record>& out) {
    for (;;) {
      int rc = sqlite3_step(s.get());
      if (rc == SQLITE_ROW) {
        out.push_back(read_row(s));
        continue;
      }
      if (rc == SQLITE_DONE) return std::nullopt;
      return fail(what, rc);
    }
  }
  // Runs `body` in a transaction; commits when it succeeds, rolls back when it fails.
  template <class T, class F>
  Result<T> in_transaction(bool write, F&& body) {
    if (auto e = begin(write)) return *e;
    Result<T> r = body();
    // A statement left mid-way would keep its read snapshot after COMMIT, and the next
    // BEGIN IMMEDIATE would then fail at once (SQLITE_BUSY_SNAPSHOT) instead of waiting.
    for (auto& [name, st] : stmts_) sqlite3_reset(st->get());
    if (!r) {
      rollback();
      return r;
    }
    if (auto e = commit()) return *e;
    return r;
  }
  std::optional<Error> check_schema();
  std::optional<Error> create_schema();
  std::optional<Error> use_wal();
  // The bodies of do_mark_batch and do_record_plan_progress, inside a write transaction.
  Status mark_rows(const std::vector<std::pair<std::string, std::int64_t>>& claims, State state);
  Status add_progress(const std::vector<PlanLetterProgress>& progress);
  std::optional<Error> migrate();
  std::optional<Error> add_anchor_table();
  // The plan of `digest` inside a transaction (nullopt: not recorded).
  Result<std::optional<PlanRecord>> read_plan(std::string_view digest);
  static PlanRecord plan_row(const Stmt& s);
  static PlanApproval approval_row(const Stmt& s);
  // The ledger's time for a row inserted now: this host's clock, but never earlier than the last
  // recorded_at in the file (a claimant whose clock is behind cannot make its row look old).
  // Inside a write transaction.
  Result<std::string> ledger_time();
  // The anchors of this scope ("" : all of them; else the one of `log`), inside a transaction.
  Result<std::vector<AuditAnchor>> read_anchors(const std::string& log);

  sqlite3* db_;
  std::string path_;
  bool migrating_ = false;  // opened by migrate_sqlite(): an older version is migrated
  std::function<void(std::string_view)> test_point_;
  int found_version_ = kSchemaVersion;
  int busy_timeout_ms_ = 0;
  std::unordered_map<std::string, std::unique_ptr<Stmt>> stmts_;
};

Objects layout(int version) {
  Objects o = {{"claims", version == 1   ? kCreateTableV1
                          : version == 2 ? kCreateTableV2
                                         : kCreateTable},
               {"claims_key", kCreateLive},
               {"claims_time", kCreateTime}};
  if (version >= 3) o.emplace_back("claims_recorded", kCreateRecorded);
  if (version >= 4) {
    o.emplace_back("plans", kCreatePlans);
    o.emplace_back("plan_approvals", kCreatePlanApprovals);
    o.emplace_back("plan_progress", kCreatePlanProgress);
  }
  return sorted(std::move(o));
}

const std::string kSelect = std::string("SELECT ") + kColumns + " FROM claims ";

std::optional<Error> SqliteLedger::check_schema() {
  // application_id and user_version come from the header; reading them also tells a non-database.
  Stmt s;
  int rc = s.prepare(db_,
                     "SELECT (SELECT application_id FROM pragma_application_id), "
                     "(SELECT user_version FROM pragma_user_version)");
  if (rc != SQLITE_OK) return fail("read the database header", rc);
  rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) return fail("read the database header", rc);
  const std::int64_t app = sqlite3_column_int64(s.get(), 0);
  const std::int64_t version = sqlite3_column_int64(s.get(), 1);
  std::vector<std::pair<std::string, std::string>> objects;  // name, sql
  Stmt m;
  rc = m.prepare(db_, "SELECT name, coalesce(sql, '') FROM sqlite_master ORDER BY name");
  if (rc != SQLITE_OK) return fail("read the schema", rc);
  while ((rc = sqlite3_step(m.get())) == SQLITE_ROW) {
    objects.emplace_back(m.column_text(0), m.column_text(1));
  }
  if (rc != SQLITE_DONE) return fail("read the schema", rc);
  s.finalize();  // no statement may stay open: it would hold a read transaction
  m.finalize();
  if (app == 0 && version == 0 && objects.empty()) {
    if (migrating_) {
      return error(ErrorCode::kUnavailable,
                   "no ledger at " + describe() + " (an empty database: nothing to migrate)");
    }
    return create_schema();
  }
  // The audit anchor table is checked on its own (a ledger made before it lacks it: added below),
  // so the claims schema is compared as it always was.
  const auto anchors =
      std::find(objects.begin(), objects.end(),
                std::pair<std::string, std::string>("audit_anchors", kCreateAnchors));
  const bool has_anchors = anchors != objects.end();
  if (has_anchors) objects.erase(anchors);
  if (app != kApplicationId) {
    std::string names;
    for (size_t i = 0; i < objects.size() && i < 5; ++i)
      names += (i ? ", " : "") + objects[i].first;
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08llX", static_cast<unsigned long long>(app));
    return error(ErrorCode::kForeign,
                 "ledger " + describe() + ": refused: a SQLite database of another application " +
                     "(application_id " + hex + ", user_version " + std::to_string(version) +
                     (names.empty() ? std::string() : ", tables " + names) +
                     "), not a replaygate ledger");
  }
  if (version != kSchemaVersion) {
    if (!migrating_ || version < 1 || version > kSchemaVersion) {
      return schema_version_error(describe(), static_cast<long long>(version));
    }
    if (sorted(objects) != layout(static_cast<int>(version))) {
      return error(ErrorCode::kForeign,
                   "ledger " + describe() +
                       ": refused: a replaygate ledger whose tables or indexes differ from schema "
                       "version " +
                       std::to_string(version) + " (altered by hand?); nothing was migrated");
    }
    return migrate();
  }
  if (sorted(objects) != layout(kSchemaVersion)) {
    return error(ErrorCode::kForeign,
                 "ledger " + describe() +
                     ": refused: a replaygate ledger whose tables or indexes differ from schema "
                     "version " +
                     std::to_string(kSchemaVersion) + " (altered by hand?)");
  }
  if (!has_anchors) return add_anchor_table();  // a ledger made before the anchors
  return std::nullopt;
}

std::optional<Error> SqliteLedger::add_anchor_table() {
  if (auto e = begin(true)) return e;
  Stmt s;
  int rc = s.prepare(db_, "SELECT count(*) FROM sqlite_master WHERE name = 'audit_anchors'");
  if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) {
    Error e = fail("read the schema", rc);
    rollback();
    return e;
  }
  const bool missing = sqlite3_column_int64(s.get(), 0) == 0;
  s.finalize();
  if (missing && (rc = exec(kCreateAnchors)) != SQLITE_OK) {
    Error e = fail("add the audit anchor table", rc);
    rollback();
    return e;
  }
  return commit();
}

std::optional<Error> SqliteLedger::create_schema() {
  // journal_mode cannot change inside a transaction; WAL is persistent in the file.
  if (auto e = use_wal()) return e;
  if (auto e = begin(true)) return e;
  // Another process may have created it since we looked.
  Stmt s;
  int rc = s.prepare(db_, "SELECT count(*) FROM sqlite_master");
  if (rc == SQLITE_OK) rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW) {
    Error e = fail("read the schema", rc);
    rollback();
    return e;
  }
  const bool empty = sqlite3_column_int64(s.get(), 0) == 0;
  s.finalize();
  if (!empty) {
    rollback();
    return check_schema();
  }
  const std::string sql = std::string(kCreateTable) + ";\n" + kCreateLive + ";\n" + kCreateTime +
                          ";\n" + kCreateRecorded + ";\n" + kCreateAnchors + ";\n" + kCreatePlans +
                          ";\n" + kCreatePlanApprovals + ";\n" + kCreatePlanProgress +
                          ";\nPRAGMA application_id=" + std::to_string(kApplicationId) +
                          ";\nPRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
  rc = exec(sql.c_str());
  if (rc != SQLITE_OK) {
    Error e = fail("create the ledger schema", rc);
    rollback();
    return e;
  }
  return commit();
}

// Version 1, 2 or 3 -> 4, in one transaction. A later version must extend it (and kCreateTable's
// text). The rows already there keep the only time they have, their claimed_at (no later than the
// migration), as recorded_at: they age as they did before.
static_assert(kSchemaVersion == 4, "migrate older ledgers to the new version");
std::optional<Error> SqliteLedger::migrate() {
  if (auto e = begin(true)) return e;
  // Another process may have migrated it since we looked: check again under the write lock.
  Stmt v;
  int rc = v.prepare(db_,
                     "SELECT (SELECT user_version FROM pragma_user_version), (SELECT count(*) "
                     "FROM sqlite_master WHERE name = 'audit_anchors')");
  if (rc == SQLITE_OK) rc = sqlite3_step(v.get());
  if (rc != SQLITE_ROW) {
    Error e = fail("read the schema version", rc);
    rollback();
    return e;
  }
  const std::int64_t version = sqlite3_column_int64(v.get(), 0);
  const bool has_anchors = sqlite3_column_int64(v.get(), 1) != 0;
  v.finalize();
  if (version < 1 || version >= kSchemaVersion) {
    rollback();
    return check_schema();
  }
  std::string sql;
  if (version == 1) {
    sql +=
        "ALTER TABLE claims ADD COLUMN copy_replay INTEGER;\n"
        "ALTER TABLE claims ADD COLUMN body_digest TEXT;\n";
  }
  if (version <= 2) {
    sql +=
        "ALTER TABLE claims ADD COLUMN recorded_at TEXT NOT NULL DEFAULT '';\n"
        "UPDATE claims SET recorded_at = min(claimed_at, '" +
        format_time(now()) + "');\n" + kCreateRecorded + ";\n";
  }
  if (!has_anchors) sql += std::string(kCreateAnchors) + ";\n";
  sql += std::string(kCreatePlans) + ";\n" + kCreatePlanApprovals + ";\n" + kCreatePlanProgress +
         ";\nPRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
  rc = exec(sql.c_str());
  if (rc != SQLITE_OK) {
    Error e = fail("migrate the ledger schema from version " + std::to_string(version) + " to " +
                       std::to_string(kSchemaVersion),
                   rc);
    rollback();
    return e;
  }
  if (test_point_) test_point_("migrate_in_transaction");
  if (auto e = commit()) return e;
  found_version_ = static_cast<int>(version);
  return check_schema();  // the migrated file must now be exactly this version's
}

// Switching a file to WAL needs it to itself for a moment, and SQLite answers SQLITE_BUSY at once
// rather than calling the busy handler when another connection is creating the schema or switching
// too (gates started together on a new ledger): wait for it within the busy timeout like any lock.
std::optional<Error> SqliteLedger::use_wal() {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms_);
  for (int attempt = 0;; ++attempt) {
    Stmt j;
    int rc = j.prepare(db_, "PRAGMA journal_mode=WAL");
    if (rc == SQLITE_OK) rc = sqlite3_step(j.get());
    if (rc == SQLITE_ROW) {
      const std::string mode = j.column_text(0);
      if (mode == "wal") return std::nullopt;
      return error(ErrorCode::kUnavailable,
                   "ledger " + describe() + ": cannot use WAL mode (journal_mode is " + mode + ")");
    }
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) {
      return fail("set WAL mode", rc);
    }
    j.finalize();
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 + attempt, 20)));
  }
}

std::optional<Error> SqliteLedger::init(int busy_timeout_ms) {
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  busy_timeout_ms_ = busy_timeout_ms;
  if (auto e = check_schema()) return e;
  // WAL (the file is already WAL unless someone changed it; this re-asserts it) and an fsync of
  // the WAL at every commit.
  if (auto e = use_wal()) return e;
  int rc = exec("PRAGMA synchronous=FULL");
  if (rc != SQLITE_OK) return fail("set synchronous=FULL", rc);
  // Throughput: a 64 MiB page cache (random keys touch pages all over the key index) and a
  // checkpoint every 16384 WAL pages (64 MiB) instead of 1000, so that most commits are one
  // append and one fsync of the WAL. Neither weakens durability.
  rc = exec("PRAGMA cache_size=-65536; PRAGMA wal_autocheckpoint=16384");
  if (rc != SQLITE_OK) return fail("set the page cache size", rc);
  return std::nullopt;
}

Result<std::vector<ClaimOutcome>> SqliteLedger::do_claim_batch(const std::vector<Claim>& claims) {
  return in_transaction<std::vector<ClaimOutcome>>(
      true, [&]() -> Result<std::vector<ClaimOutcome>> {
        // The next generation (index only: released rows have slot = generation), then a plain
        // insert that a live row of the key turns into a no-op.
        auto gen =
            stmt("generation",
                 "SELECT coalesce(max(slot), 0) + 1 FROM claims WHERE scope = ?1 AND key = ?2");
        if (!gen) return gen.error();
        auto ins = stmt("claim",
                        "INSERT INTO claims (scope, key, slot, generation, state, policy, "
                        "revision, table_checksum, rule, message_id, worker, claimed_at, "
                        "updated_at, copy_replay, body_digest, recorded_at) VALUES (?1, ?2, 0, "
                        "?3, 'claimed', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12, ?13) ON "
                        "CONFLICT DO NOTHING");
        if (!ins) return ins.error();
        auto live = stmt("live", kSelect + "WHERE scope = ?1 AND key = ?2 AND slot = 0");
        if (!live) return live.error();
        const Time t = now();
        const std::string ts = format_time(t);
        const Time stamped = parse_stored_time(ts).value_or(t);
        const Result<std::string> recorded = ledger_time();
        if (!recorded) return recorded.error();
        const Time recorded_at = parse_stored_time(*recorded).value_or(stamped);
        std::vector<ClaimOutcome> out(claims.size());
        std::unordered_map<std::string_view, size_t> first;  // key -> index in this batch
        first.reserve(claims.size());
        // In key order (a key's first occurrence first): the index is then written page after
        // page instead of at random.
        std::vector<size_t> order(claims.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return claims[a].key < claims[b].key; });
        for (size_t i : order) {
          const Claim& c = claims[i];
          if (auto [it, fresh] = first.try_emplace(c.key, i); !fresh) {
            out[i].won = false;
            out[i].holder = out[it->second].holder;
            continue;
          }
          Stmt& g = **gen;
          g.reset();
          g.text_static(1, scope());
          g.text_static(2, c.key);
          int rc = sqlite3_step(g.get());
          if (rc != SQLITE_ROW) return fail("claim", rc);
          const std::int64_t generation = sqlite3_column_int64(g.get(), 0);
          g.reset();
          Stmt& s = **ins;
          s.reset();
          s.text_static(1, scope());
          s.text_static(2, c.key);
          s.integer(3, generation);
          s.text_static(4, c.policy);
          s.integer(5, c.revision);
          s.text_static(6, c.table_checksum);
          s.text_static(7, c.rule);
          s.text_static(8, c.message_id);
          s.text_static(9, c.worker);
          s.text_static(10, ts);
          if (c.copy_replay) s.integer(11, *c.copy_replay);  // else NULL (cleared bindings)
          if (!c.body_digest.empty()) s.text_static(12, c.body_digest);
          s.text_static(13, *recorded);
          rc = sqlite3_step(s.get());
          if (rc == SQLITE_DONE && sqlite3_changes(db_) == 1) {
            Record& r = out[i].holder;
            out[i].won = true;
            r.generation = generation;
            r.scope = scope();
            r.key = c.key;
            r.state = State::kClaimed;
            r.policy = c.policy;
            r.revision = c.revision;
            r.table_checksum = c.table_checksum;
            r.rule = c.rule;
            r.message_id = c.message_id;
            r.worker = c.worker;
            r.copy_replay = c.copy_replay;
            r.body_digest = c.body_digest;
            r.claimed_at = r.updated_at = stamped;
            r.recorded_at = recorded_at;
            continue;
          }
          if (rc != SQLITE_DONE) return fail("claim", rc);
          Stmt& l = **live;
          l.reset();
          l.text(1, scope());
          l.text(2, c.key);
          rc = sqlite3_step(l.get());
          if (rc != SQLITE_ROW) {
            if (rc == SQLITE_DONE) {
              return error(ErrorCode::kInternal, "ledger " + describe() + ": claim of '" + c.key +
                                                     "' conflicted but no live claim holds it");
            }
            return fail("read the holder of a claimed key", rc);
          }
          out[i].holder = read_row(l);
        }
        return out;
      });
}

Result<std::vector<std::optional<Record>>> SqliteLedger::do_lookup(
    const std::vector<std::string>& keys) {
  return in_transaction<std::vector<std::optional<Record>>>(
      false, [&]() -> Result<std::vector<std::optional<Record>>> {
        auto live = stmt("live", kSelect + "WHERE scope = ?1 AND key = ?2 AND slot = 0");
        if (!live) return live.error();
        std::vector<std::optional<Record>> out(keys.size());
        for (size_t i = 0; i < keys.size(); ++i) {
          Stmt& l = **live;
          l.reset();
          l.text(1, scope());
          l.text(2, keys[i]);
          int rc = sqlite3_step(l.get());
          if (rc == SQLITE_ROW) {
            out[i] = read_row(l);
          } else if (rc != SQLITE_DONE) {
            return fail("lookup", rc);
          }
        }
        return out;
      });
}

Status SqliteLedger::do_mark_batch(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                                   State state) {
  return in_transaction<Ok>(true, [&]() -> Status { return mark_rows(claims, state); });
}

Status SqliteLedger::do_mark_with_progress(
    const std::vector<std::pair<std::string, std::int64_t>>& claims, State state,
    const std::vector<PlanLetterProgress>& progress) {
  return in_transaction<Ok>(true, [&]() -> Status {
    if (Status marked = mark_rows(claims, state); !marked) return marked;
    return add_progress(progress);
  });
}

Status SqliteLedger::mark_rows(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                               State state) {
  auto get = stmt("state",
                  "SELECT state FROM claims WHERE scope = ?1 AND key = ?2 AND "
                  "generation = ?3");
  if (!get) return get.error();
  auto set = stmt("mark",
                  "UPDATE claims SET state = ?4, updated_at = ?5 WHERE scope = ?1 "
                  "AND key = ?2 AND generation = ?3");
  if (!set) return set.error();
  const std::string ts = format_time(now());
  for (const auto& [key, generation] : claims) {
    Stmt& g = **get;
    g.reset();
    g.text(1, scope());
    g.text(2, key);
    g.integer(3, generation);
    int rc = sqlite3_step(g.get());
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail("mark", rc);
    std::optional<State> current;
    if (rc == SQLITE_ROW) current = parse_state(g.column_text(0));
    if (auto refused = mark_refusal(describe(), key, generation, current, state)) {
      return *refused;
    }
    if (*current == state) continue;
    Stmt& s = **set;
    s.reset();
    s.text(1, scope());
    s.text(2, key);
    s.integer(3, generation);
    s.text(4, state_name(state));
    s.text(5, ts);
    rc = sqlite3_step(s.get());
    if (rc != SQLITE_DONE) return fail("mark", rc);
  }
  return Ok{};
}

Result<Record> SqliteLedger::do_release(std::string_view key, std::string_view operator_name,
                                        std::string_view reason) {
  return in_transaction<Record>(true, [&]() -> Result<Record> {
    auto up = stmt("release",
                   "UPDATE claims SET state = 'released', slot = generation, released_by = ?3, "
                   "release_reason = ?4, released_at = ?5, updated_at = ?5 WHERE scope = ?1 AND "
                   "key = ?2 AND slot = 0 RETURNING " +
                       std::string(kColumns));
    if (!up) return up.error();
    Stmt& s = **up;
    s.text(1, scope());
    s.text(2, key);
    s.text(3, operator_name);
    s.text(4, reason);
    s.text(5, format_time(now()));
    std::vector<Record> rows;
    if (auto e = collect(s, "release", rows)) return *e;
    if (rows.empty()) {
      return error(ErrorCode::kNotFound, "ledger " + describe() + ": release: key '" +
                                             std::string(key) + "' has no live claim");
    }
    return rows.front();
  });
}

Result<std::vector<Record>> SqliteLedger::do_show(std::string_view key) {
  return in_transaction<std::vector<Record>>(false, [&]() -> Result<std::vector<Record>> {
    auto q = stmt("show", kSelect + "WHERE scope = ?1 AND key = ?2 ORDER BY generation");
    if (!q) return q.error();
    (*q)->text(1, scope());
    (*q)->text(2, key);
    std::vector<Record> rows;
    if (auto e = collect(**q, "show", rows)) return *e;
    return rows;
  });
}

Result<std::vector<Record>> SqliteLedger::do_list(Time since) {
  return in_transaction<std::vector<Record>>(false, [&]() -> Result<std::vector<Record>> {
    auto q = stmt("list", kSelect +
                              "WHERE scope = ?1 AND claimed_at >= ?2 ORDER BY claimed_at, "
                              "key, generation");
    if (!q) return q.error();
    (*q)->text(1, scope());
    (*q)->text(2, format_time(since));
    std::vector<Record> rows;
    if (auto e = collect(**q, "list", rows)) return *e;
    return rows;
  });
}

Result<Stats> SqliteLedger::do_stats() {
  return in_transaction<Stats>(false, [&]() -> Result<Stats> {
    auto q = stmt("stats",
                  "SELECT state, count(*), min(claimed_at), max(claimed_at) FROM claims "
                  "WHERE scope = ?1 GROUP BY state");
    if (!q) return q.error();
    (*q)->text(1, scope());
    Stats st;
    int rc;
    while ((rc = sqlite3_step((*q)->get())) == SQLITE_ROW) {
      const auto n = sqlite3_column_int64((*q)->get(), 1);
      switch (parse_state((*q)->column_text(0)).value_or(State::kClaimed)) {
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
      auto lo = parse_stored_time((*q)->column_text(2));
      auto hi = parse_stored_time((*q)->column_text(3));
      if (lo && (!st.oldest || *lo < *st.oldest)) st.oldest = lo;
      if (hi && (!st.newest || *hi > *st.newest)) st.newest = hi;
    }
    if (rc != SQLITE_DONE) return fail("stats", rc);
    auto k = stmt("keys", "SELECT count(DISTINCT key) FROM claims WHERE scope = ?1");
    if (!k) return k.error();
    (*k)->text(1, scope());
    rc = sqlite3_step((*k)->get());
    if (rc != SQLITE_ROW) return fail("stats", rc);
    st.keys = sqlite3_column_int64((*k)->get(), 0);
    return st;
  });
}

Result<std::int64_t> SqliteLedger::do_export_rows(const std::function<bool(const Record&)>& sink) {
  return in_transaction<std::int64_t>(false, [&]() -> Result<std::int64_t> {
    auto q = stmt("export", kSelect + "WHERE scope = ?1 ORDER BY claimed_at, key, generation");
    if (!q) return q.error();
    (*q)->text(1, scope());
    std::int64_t n = 0;
    for (;;) {
      int rc = sqlite3_step((*q)->get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return fail("export", rc);
      ++n;
      if (!sink(read_row(**q))) break;
    }
    (*q)->reset();
    return n;
  });
}

Result<Pruned> SqliteLedger::do_prune(std::chrono::microseconds older_than, bool dry_run) {
  return in_transaction<Pruned>(!dry_run, [&]() -> Result<Pruned> {
    // recorded_at never goes back in insert order, so the rows before the cutoff are the oldest
    // inserts: a row a slow claimant wrote after newer ones carries their time, not its own.
    auto q = dry_run ? stmt("prune_dry", kSelect + "WHERE scope = ?1 AND recorded_at < ?2")
                     : stmt("prune",
                            "DELETE FROM claims WHERE scope = ?1 AND recorded_at < ?2 "
                            "RETURNING " +
                                std::string(kColumns));
    if (!q) return q.error();
    Pruned out;
    out.cutoff = now() - older_than;
    (*q)->text(1, scope());
    (*q)->text(2, format_time(out.cutoff));
    if (auto e = collect(**q, "prune", out.rows)) return *e;
    std::sort(out.rows.begin(), out.rows.end(), [](const Record& a, const Record& b) {
      return std::tie(a.recorded_at, a.key, a.generation) <
             std::tie(b.recorded_at, b.key, b.generation);
    });
    return out;
  });
}

Result<std::string> SqliteLedger::ledger_time() {
  auto q = stmt("ledger_time", "SELECT max(recorded_at) FROM claims");
  if (!q) return q.error();
  const int rc = sqlite3_step((*q)->get());
  if (rc != SQLITE_ROW) return fail("read the ledger's time", rc);
  std::string last = (*q)->column_text(0);
  (*q)->reset();
  std::string here = format_time(now());
  return last > here ? last : here;  // the fixed-width text sorts as the time does
}

Result<std::int64_t> SqliteLedger::do_restore(const std::vector<Record>& rows) {
  return in_transaction<std::int64_t>(true, [&]() -> Result<std::int64_t> {
    auto any = stmt("any", "SELECT count(*) FROM claims WHERE scope = ?1");
    if (!any) return any.error();
    (*any)->text(1, scope());
    int rc = sqlite3_step((*any)->get());
    if (rc != SQLITE_ROW) return fail("restore", rc);
    const std::int64_t held = sqlite3_column_int64((*any)->get(), 0);
    if (held != 0) {
      return error(ErrorCode::kInvalidArgument, "ledger " + describe() + ": scope '" + scope() +
                                                    "' is not empty (" + std::to_string(held) +
                                                    " rows): restore fills an empty scope only");
    }
    auto ins = stmt("restore",
                    "INSERT INTO claims (scope, key, slot, generation, state, policy, revision, "
                    "table_checksum, rule, message_id, worker, claimed_at, updated_at, "
                    "released_by, release_reason, released_at, copy_replay, body_digest, "
                    "recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                    "?14, ?15, ?16, ?17, ?18, ?19)");
    if (!ins) return ins.error();
    // A restored row keeps the only time it has, its claimed_at (as an upgraded one does), but
    // never later than the ledger's time now.
    const Result<std::string> recorded = ledger_time();
    if (!recorded) return recorded.error();
    for (const Record& r : rows) {
      Stmt& s = **ins;
      s.reset();
      const bool released = r.state == State::kReleased;
      s.text(1, scope());
      s.text(2, r.key);
      s.integer(3, released ? r.generation : 0);
      s.integer(4, r.generation);
      s.text(5, state_name(r.state));
      s.text(6, r.policy);
      s.integer(7, r.revision);
      s.text(8, r.table_checksum);
      s.text(9, r.rule);
      s.text(10, r.message_id);
      s.text(11, r.worker);
      s.text(12, format_time(r.claimed_at));
      s.text(13, format_time(r.updated_at));
      if (released) {
        s.text(14, r.released_by);
        s.text(15, r.release_reason);
        s.text(16, format_time(r.released_at.value_or(r.updated_at)));
      }
      if (r.copy_replay) s.integer(17, *r.copy_replay);
      if (!r.body_digest.empty()) s.text(18, r.body_digest);
      s.text(19, std::min(format_time(r.claimed_at), *recorded));
      rc = sqlite3_step(s.get());
      if (rc != SQLITE_DONE) return fail("restore", rc);
    }
    return static_cast<std::int64_t>(rows.size());
  });
}

Result<AuditAnchor> SqliteLedger::do_raise_anchor(const AuditAnchor& a) {
  return in_transaction<AuditAnchor>(true, [&]() -> Result<AuditAnchor> {
    auto up = stmt("raise_anchor",
                   "INSERT INTO audit_anchors (scope, log, seq, head, chain_digest, key_id, "
                   "recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (scope, log) DO "
                   "UPDATE SET seq = excluded.seq, head = excluded.head, chain_digest = "
                   "excluded.chain_digest, key_id = excluded.key_id, recorded_at = "
                   "excluded.recorded_at WHERE excluded.seq > audit_anchors.seq");
    if (!up) return up.error();
    Stmt& s = **up;
    s.text(1, scope());
    s.text(2, a.log);
    s.integer(3, a.seq);
    s.text(4, a.head);
    s.text(5, a.chain_digest);
    s.text(6, a.key_id);
    s.text(7, format_time(a.recorded_at));
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) return fail("raise an audit anchor", rc);
    Result<std::vector<AuditAnchor>> all = read_anchors(a.log);
    if (!all) return all.error();
    if (all->empty()) {
      return error(ErrorCode::kInternal, "ledger " + describe() + ": the audit anchor of " + a.log +
                                             " is missing right after it was written");
    }
    return all->front();
  });
}

Result<std::vector<AuditAnchor>> SqliteLedger::read_anchors(const std::string& log) {
  auto q = stmt(log.empty() ? "anchors" : "anchor",
                std::string("SELECT log, seq, head, chain_digest, key_id, recorded_at FROM "
                            "audit_anchors WHERE scope = ?1") +
                    (log.empty() ? "" : " AND log = ?2") + " ORDER BY log");
  if (!q) return q.error();
  Stmt& s = **q;
  s.text(1, scope());
  if (!log.empty()) s.text(2, log);
  std::vector<AuditAnchor> out;
  for (;;) {
    const int rc = sqlite3_step(s.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) return fail("read the audit anchors", rc);
    AuditAnchor a;
    a.log = s.column_text(0);
    a.seq = sqlite3_column_int64(s.get(), 1);
    a.head = s.column_text(2);
    a.chain_digest = s.column_text(3);
    a.key_id = s.column_text(4);
    a.recorded_at = parse_stored_time(s.column_text(5)).value_or(Time{});
    out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<AuditAnchor>> SqliteLedger::do_anchors() {
  return in_transaction<std::vector<AuditAnchor>>(
      false, [&]() -> Result<std::vector<AuditAnchor>> { return read_anchors(""); });
}

PlanRecord SqliteLedger::plan_row(const Stmt& s) {
  PlanRecord p;
  p.digest = s.column_text(0);
  p.author = s.column_text(1);
  p.source = s.column_text(2);
  p.table_checksum = s.column_text(3);
  p.letters = sqlite3_column_int64(s.get(), 4);
  p.copies = sqlite3_column_int64(s.get(), 5);
  p.created_at = parse_stored_time(s.column_text(6)).value_or(Time{});
  p.expires_at = parse_stored_time(s.column_text(7)).value_or(Time{});
  p.recorded_at = parse_stored_time(s.column_text(8)).value_or(Time{});
  if (!s.column_null(11)) {
    p.cancelled_by = s.column_text(9);
    p.cancel_reason = s.column_text(10);
    p.cancelled_at = parse_stored_time(s.column_text(11));
  }
  return p;
}

PlanApproval SqliteLedger::approval_row(const Stmt& s) {
  PlanApproval a;
  a.digest = s.column_text(0);
  a.approver = s.column_text(1);
  a.key_id = s.column_text(2);
  a.signature = s.column_text(3);
  a.reason = s.column_text(4);
  a.approved_at = parse_stored_time(s.column_text(5)).value_or(Time{});
  a.recorded_at = parse_stored_time(s.column_text(6)).value_or(Time{});
  return a;
}

Result<std::optional<PlanRecord>> SqliteLedger::read_plan(std::string_view digest) {
  auto q = stmt("plan", std::string("SELECT ") + kPlanColumns +
                            " FROM plans WHERE scope = ?1 AND digest = ?2");
  if (!q) return q.error();
  Stmt& s = **q;
  s.text(1, scope());
  s.text(2, digest);
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return std::optional<PlanRecord>();
  if (rc != SQLITE_ROW) return fail("read a plan", rc);
  std::optional<PlanRecord> p = plan_row(s);
  s.reset();
  return p;
}

Status SqliteLedger::do_record_plan(const PlanRecord& plan) {
  return in_transaction<Ok>(true, [&]() -> Status {
    Result<std::optional<PlanRecord>> held = read_plan(plan.digest);
    if (!held) return held.error();
    // Times are kept to the microsecond: compare what was stored with what would be.
    PlanRecord given = plan;
    given.created_at = parse_stored_time(format_time(plan.created_at)).value_or(plan.created_at);
    given.expires_at = parse_stored_time(format_time(plan.expires_at)).value_or(plan.expires_at);
    if (*held) {
      const std::string differ = differing_fields(**held, given);
      if (differ.empty()) return Ok{};
      return error(ErrorCode::kInvalidArgument, "ledger " + describe() + ": plan " + plan.digest +
                                                    " recorded with other fields (" + differ + ")");
    }
    auto ins = stmt("record_plan",
                    "INSERT INTO plans (scope, digest, author, source, table_checksum, letters, "
                    "copies, created_at, expires_at, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                    "?7, ?8, ?9, ?10)");
    if (!ins) return ins.error();
    Stmt& s = **ins;
    s.text(1, scope());
    s.text(2, plan.digest);
    s.text(3, plan.author);
    s.text(4, plan.source);
    s.text(5, plan.table_checksum);
    s.integer(6, plan.letters);
    s.integer(7, plan.copies);
    s.text(8, format_time(plan.created_at));
    s.text(9, format_time(plan.expires_at));
    s.text(10, format_time(now()));
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) return fail("record a plan", rc);
    return Ok{};
  });
}

Result<std::optional<PlanRecord>> SqliteLedger::do_plan(std::string_view digest) {
  return in_transaction<std::optional<PlanRecord>>(
      false, [&]() -> Result<std::optional<PlanRecord>> { return read_plan(digest); });
}

Result<PlanApproval> SqliteLedger::do_approve_plan(const PlanApproval& approval) {
  return in_transaction<PlanApproval>(true, [&]() -> Result<PlanApproval> {
    Result<std::optional<PlanRecord>> held = read_plan(approval.digest);
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
    auto ins = stmt("approve_plan",
                    "INSERT INTO plan_approvals (scope, digest, approver, key_id, signature, "
                    "reason, approved_at, recorded_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON "
                    "CONFLICT DO NOTHING");
    if (!ins) return ins.error();
    PlanApproval a = approval;
    a.approved_at = parse_stored_time(format_time(a.approved_at)).value_or(a.approved_at);
    const std::string recorded = format_time(now());
    a.recorded_at = parse_stored_time(recorded).value_or(Time{});
    Stmt& s = **ins;
    s.text(1, scope());
    s.text(2, a.digest);
    s.text(3, a.approver);
    s.text(4, a.key_id);
    s.text(5, a.signature);
    s.text(6, a.reason);
    s.text(7, format_time(a.approved_at));
    s.text(8, recorded);
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) return fail("approve a plan", rc);
    if (sqlite3_changes(db_) != 1) {
      return error(ErrorCode::kInvalidArgument, "ledger " + describe() + ": plan " + a.digest +
                                                    " is already approved by " + a.approver);
    }
    return a;
  });
}

Result<std::vector<PlanApproval>> SqliteLedger::do_plan_approvals(std::string_view digest) {
  return in_transaction<std::vector<PlanApproval>>(
      false, [&]() -> Result<std::vector<PlanApproval>> {
        auto q = stmt("plan_approvals", std::string("SELECT ") + kApprovalColumns +
                                            " FROM plan_approvals WHERE scope = ?1 AND digest = "
                                            "?2 ORDER BY recorded_at, approver");
        if (!q) return q.error();
        Stmt& s = **q;
        s.text(1, scope());
        s.text(2, digest);
        std::vector<PlanApproval> out;
        for (;;) {
          const int rc = sqlite3_step(s.get());
          if (rc == SQLITE_DONE) break;
          if (rc != SQLITE_ROW) return fail("read a plan's approvals", rc);
          out.push_back(approval_row(s));
        }
        return out;
      });
}

Result<PlanRecord> SqliteLedger::do_cancel_plan(std::string_view digest,
                                                std::string_view operator_name,
                                                std::string_view reason) {
  return in_transaction<PlanRecord>(true, [&]() -> Result<PlanRecord> {
    Result<std::optional<PlanRecord>> held = read_plan(digest);
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
    auto up = stmt("cancel_plan",
                   "UPDATE plans SET cancelled_by = ?3, cancel_reason = ?4, cancelled_at = ?5 "
                   "WHERE scope = ?1 AND digest = ?2");
    if (!up) return up.error();
    const std::string at = format_time(now());
    Stmt& s = **up;
    s.text(1, scope());
    s.text(2, digest);
    s.text(3, operator_name);
    s.text(4, reason);
    s.text(5, at);
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) return fail("cancel a plan", rc);
    PlanRecord p = **held;
    p.cancelled_by = operator_name;
    p.cancel_reason = reason;
    p.cancelled_at = parse_stored_time(at);
    return p;
  });
}

Status SqliteLedger::do_record_plan_progress(const std::vector<PlanLetterProgress>& progress) {
  return in_transaction<Ok>(true, [&]() -> Status { return add_progress(progress); });
}

Status SqliteLedger::add_progress(const std::vector<PlanLetterProgress>& progress) {
  std::set<std::string_view> recorded;
  for (const PlanLetterProgress& p : progress) {
    if (recorded.count(p.digest) != 0) continue;
    Result<std::optional<PlanRecord>> held = read_plan(p.digest);
    if (!held) return held.error();
    if (!*held) {
      return error(ErrorCode::kNotFound, "ledger " + describe() + ": plan " + p.digest +
                                             " is not recorded (progress of identity " +
                                             p.identity + ")");
    }
    recorded.insert(p.digest);
  }
  auto up = stmt("plan_progress_add",
                 "INSERT INTO plan_progress (scope, digest, identity, done, held, changed, "
                 "last_outcome, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON "
                 "CONFLICT (scope, digest, identity) DO UPDATE SET done = done + excluded.done, "
                 "held = held + excluded.held, changed = changed + excluded.changed, "
                 "last_outcome = excluded.last_outcome, updated_at = excluded.updated_at");
  if (!up) return up.error();
  const std::string at = format_time(now());
  for (const PlanLetterProgress& p : progress) {
    Stmt& s = **up;
    s.reset();
    s.text_static(1, scope());
    s.text_static(2, p.digest);
    s.text_static(3, p.identity);
    s.integer(4, p.done);
    s.integer(5, p.held);
    s.integer(6, p.changed);
    s.text_static(7, p.last_outcome);
    s.text_static(8, at);
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_DONE) {
      return fail("record a plan's progress", rc);
    }
  }
  return Ok{};
}

Result<std::vector<PlanLetterProgress>> SqliteLedger::do_plan_progress(
    std::string_view digest, const std::vector<std::string>& identities) {
  return in_transaction<std::vector<PlanLetterProgress>>(
      false, [&]() -> Result<std::vector<PlanLetterProgress>> {
        auto q = stmt("plan_progress", std::string("SELECT ") + kProgressColumns +
                                           " FROM plan_progress WHERE scope = ?1 AND digest = "
                                           "?2 AND identity = ?3");
        if (!q) return q.error();
        std::vector<PlanLetterProgress> out(identities.size());
        for (size_t i = 0; i < identities.size(); ++i) {
          Stmt& s = **q;
          s.reset();
          s.text_static(1, scope());
          s.text_static(2, digest);
          s.text_static(3, identities[i]);
          PlanLetterProgress& p = out[i];
          p.digest = digest;
          p.identity = identities[i];
          const int rc = sqlite3_step(s.get());
          if (rc == SQLITE_DONE) continue;
          if (rc != SQLITE_ROW) return fail("read a plan's progress", rc);
          p.done = sqlite3_column_int64(s.get(), 2);
          p.held = sqlite3_column_int64(s.get(), 3);
          p.changed = sqlite3_column_int64(s.get(), 4);
          p.last_outcome = s.column_text(5);
          p.updated_at = parse_stored_time(s.column_text(6)).value_or(Time{});
        }
        return out;
      });
}

Result<PlanCounts> SqliteLedger::do_plan_counts(std::string_view digest) {
  return in_transaction<PlanCounts>(false, [&]() -> Result<PlanCounts> {
    auto q = stmt("plan_counts",
                  "SELECT count(*), coalesce(sum(done), 0), coalesce(sum(held), 0), "
                  "coalesce(sum(changed), 0) FROM plan_progress WHERE scope = ?1 AND digest = ?2");
    if (!q) return q.error();
    Stmt& s = **q;
    s.text(1, scope());
    s.text(2, digest);
    if (int rc = sqlite3_step(s.get()); rc != SQLITE_ROW)
      return fail("count a plan's progress", rc);
    PlanCounts c;
    c.identities = sqlite3_column_int64(s.get(), 0);
    c.done = sqlite3_column_int64(s.get(), 1);
    c.held = sqlite3_column_int64(s.get(), 2);
    c.changed = sqlite3_column_int64(s.get(), 3);
    return c;
  });
}

Result<std::int64_t> SqliteLedger::do_export_plan_progress(
    std::string_view digest, const std::function<bool(const PlanLetterProgress&)>& sink) {
  return in_transaction<std::int64_t>(false, [&]() -> Result<std::int64_t> {
    auto q = stmt("export_plan_progress", std::string("SELECT ") + kProgressColumns +
                                              " FROM plan_progress WHERE scope = ?1 AND digest = "
                                              "?2 ORDER BY identity");
    if (!q) return q.error();
    Stmt& s = **q;
    s.text(1, scope());
    s.text(2, digest);
    std::int64_t n = 0;
    for (;;) {
      const int rc = sqlite3_step(s.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return fail("read a plan's progress", rc);
      PlanLetterProgress p;
      p.digest = s.column_text(0);
      p.identity = s.column_text(1);
      p.done = sqlite3_column_int64(s.get(), 2);
      p.held = sqlite3_column_int64(s.get(), 3);
      p.changed = sqlite3_column_int64(s.get(), 4);
      p.last_outcome = s.column_text(5);
      p.updated_at = parse_stored_time(s.column_text(6)).value_or(Time{});
      ++n;
      if (!sink(p)) break;
    }
    s.reset();
    return n;
  });
}

Result<std::vector<PlanRecord>> SqliteLedger::do_plans() {
  return in_transaction<std::vector<PlanRecord>>(false, [&]() -> Result<std::vector<PlanRecord>> {
    auto q = stmt("plans", std::string("SELECT ") + kPlanColumns +
                               " FROM plans WHERE scope = ?1 ORDER BY recorded_at, digest");
    if (!q) return q.error();
    Stmt& s = **q;
    s.text(1, scope());
    std::vector<PlanRecord> out;
    for (;;) {
      const int rc = sqlite3_step(s.get());
      if (rc == SQLITE_DONE) break;
      if (rc != SQLITE_ROW) return fail("read the plans", rc);
      out.push_back(plan_row(s));
    }
    return out;
  });
}

}  // namespace

namespace {

Result<std::unique_ptr<SqliteLedger>> open_file(const std::string& path, const Options& options,
                                                bool migrating) {
  sqlite3* db = nullptr;
  const bool create = options.create && !migrating;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = "ledger sqlite:" + path + ": cannot open: " + sqlite3_errstr(rc);
    if (!create && (rc & 0xFF) == SQLITE_CANTOPEN) {
      msg = "no ledger at sqlite:" + path +
            (migrating ? std::string(" (nothing to migrate)")
                       : " (not created here: decide --ledger, review --ledger and ledger "
                         "rebuild create one)");
    }
    if (db) {
      msg += std::string(" (") + sqlite3_errmsg(db) + ")";
      sqlite3_close_v2(db);
    }
    return error(ErrorCode::kUnavailable, std::move(msg));
  }
  auto ledger = std::make_unique<SqliteLedger>(db, path, options, migrating);
  if (auto e = ledger->init(options.busy_timeout_ms)) return *e;
  return ledger;
}

}  // namespace

Result<std::unique_ptr<Ledger>> open_sqlite(const std::string& path, const Options& options) {
  Result<std::unique_ptr<SqliteLedger>> l = open_file(path, options, false);
  if (!l) return l.error();
  return std::unique_ptr<Ledger>(std::move(*l));
}

Result<Migrated> migrate_sqlite(const std::string& path, const Options& options) {
  Result<std::unique_ptr<SqliteLedger>> l = open_file(path, options, true);
  if (!l) return l.error();
  return Migrated{(*l)->found_version(), kSchemaVersion};
}

}  // namespace replaygate::ledger::internal
