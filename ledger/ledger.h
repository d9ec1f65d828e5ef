// The durable replay ledger: "replay_once" means once across runs, processes and hosts.
//
// A claim is keyed by (scope, idempotency key). Of any number of concurrent claimants for one key
// exactly one wins, and the winning claim is committed durably before `claim_batch` returns, so a
// caller may treat "won" as the grant to replay (write-ahead). Everything else about a claim
// (policy id, revision, table checksum, rule, message id, worker, times) is recorded as data:
// revising or renaming a policy does not start "once" over.
//
// States of one claim (one generation of a key):
//
//   claimed ──mark──> recorded ──mark──> confirmed          (marks only move forward)
//      │                 │                   │
//      └──────── release (an operator allows one more replay) ──> released
//
// History: every claim is a row (scope, key, generation). Generation 1 is a key's first claim. A
// release keeps its row (state `released`, with the operator, reason and time) and frees the key;
// the next claim of that key inserts a new row with generation = the highest generation kept for
// the key + 1. At most one row per (scope, key) is not `released` (the "live" claim): the database
// enforces it with a unique index, which is what makes concurrent claims exact. `prune` deletes
// rows (any state) and so re-opens replay for their keys.
//
// Backends, chosen by `open_ledger(url)`: SQLite (a file; WAL, synchronous=FULL, one transaction
// per call, busy_timeout; many processes on one host) and PostgreSQL (many hosts; one transaction
// per call). The schema and URL forms are in docs/ledger.md.
//
// Errors: no exception leaves this interface (an exception inside a backend, even std::bad_alloc,
// becomes an Error with code kInternal). A failed call changes nothing: its transaction is rolled
// back, and what earlier calls committed stays. A caller that needs a grant turns any error into
// "fail closed" (the CLI's rule `ledger:unavailable`).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace replaygate::ledger {

// Microseconds since the Unix epoch, UTC. Stored and printed as RFC 3339 UTC with six fraction
// digits ("2026-12-02T06:52:16.123456Z"), a fixed-width text that sorts chronologically.
using Time = std::chrono::sys_time<std::chrono::microseconds>;

// "YYYY-MM-DDTHH:MM:SS.ffffffZ". Years outside 0000-9999 are clamped to that range.
std::string format_time(Time t);
// RFC 3339: "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" (a "t"/"z" or a space for "T" is
// accepted, fractions beyond microseconds are truncated). nullopt for anything else, including
// out-of-range fields (month 13, Feb 30, hour 24).
std::optional<Time> parse_time(std::string_view text);

// A retention like `30d`, `12h`, `90m` or `45s`: decimal digits (no sign, at most 6 of them)
// followed by one unit, d (days of 24 hours), h, m or s. nullopt for anything else ("", "30",
// "1.5d", "30 d", "1d12h", "-1d", "30D").
std::optional<std::chrono::microseconds> parse_duration(std::string_view text);

// Why `key` cannot be an idempotency key in the ledger, "" when it can: it must be 1 to 4096
// bytes of valid UTF-8 without a NUL byte (PostgreSQL text cannot hold one). "is empty", "is
// longer than 4096 bytes (5000)", "is not valid UTF-8 or contains a NUL byte". A claimant checks
// each key first, so that one bad key is held alone (ledger:invalid_key) instead of failing the
// whole claim_batch it would be part of.
std::string key_problem(std::string_view key);

enum class State { kClaimed, kRecorded, kConfirmed, kReleased };
// "claimed", "recorded", "confirmed", "released".
std::string_view state_name(State state);
// The inverse of state_name; nullopt for anything else.
std::optional<State> parse_state(std::string_view name);

enum class ErrorCode {
  kUnavailable,    // cannot open, reach, read or write the ledger (I/O error, disk full, read-only
                   // file, locked beyond busy_timeout, connection refused or lost, server stopped)
  kCorrupt,        // the SQLite file is not a database or is damaged (never repaired or recreated)
  kForeign,        // the database belongs to something else: a SQLite file with another
                   // application id or other tables, a PostgreSQL table of another layout
  kSchemaVersion,  // a ledger of another schema version (written by a newer or older build)
  kInvalidArgument,  // a bad URL, scope, key, field, operator or reason (nothing was changed)
  kNotFound,         // mark/release: the key has no live claim of that generation
  kBadTransition,    // mark: the claim is past the requested state (marks only move forward)
  kInternal,         // an exception inside a backend (out of memory) or a broken invariant
};
std::string_view error_code_name(ErrorCode code);  // "unavailable", "corrupt", ...

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;  // one line, names the ledger (path or host) and the cause
};

// A value or an Error. [[nodiscard]]: ignoring a ledger error would fail open.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }  // precondition: ok()
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Error& error() const { return std::get<1>(v_); }  // precondition: !ok()

 private:
  std::variant<T, Error> v_;
};
struct Ok {};
using Status = Result<Ok>;

// What a claimant submits. Every text must be valid UTF-8 without NUL bytes (PostgreSQL text
// cannot hold them); `key` must be 1..4096 bytes, the others at most 4096 bytes.
struct Claim {
  std::string key;             // the idempotency key's value
  std::string policy;          // policy id
  std::int64_t revision = 0;   // policy revision
  std::string table_checksum;  // frozen table checksum (hex)
  std::string rule;            // the rule that granted the create verb
  std::string message_id;      // the dead letter's message id ("" when it has none)
  std::string worker;          // run or worker id: host, pid, run id, gate name
  // The live gate (redrive/redrive.h) records which copy it publishes, so that a redelivery of the
  // same death can later be told from a new death of that copy: the replay marker the copy
  // carries (RabbitMQ: x-replay) and the digest of the body it publishes ("sha256:HEX"). Unset
  // and "" for claims of `decide` and `review` (stored as NULL).
  std::optional<std::int64_t> copy_replay;
  std::string body_digest;  // at most 4096 bytes of UTF-8 without NUL, like the texts above
};

// One stored row: one generation of one key.
struct Record {
  std::string scope;
  std::string key;
  std::int64_t generation = 0;  // 1 for a key's first claim, +1 after each release
  State state = State::kClaimed;
  std::string policy;
  std::int64_t revision = 0;
  std::string table_checksum;
  std::string rule;
  std::string message_id;
  std::string worker;
  // As Claim's; unset and "" for a claim made without them (decide, review, a ledger rebuilt
  // from the audit log, a claim written by a build before schema version 2).
  std::optional<std::int64_t> copy_replay;
  std::string body_digest;
  Time claimed_at{};  // the claimant's clock: informational, never used to age the row
  Time updated_at{};  // the last change of state (== claimed_at until the first mark)
  // The ledger's own time when the row was inserted (PostgreSQL: the server's now(); SQLite: the
  // inserting host's clock, never earlier than any row inserted before it). `prune` ages rows by
  // it, so a claimant whose clock is slow cannot make its claim look old.
  Time recorded_at{};
  // Set only in state kReleased:
  std::string released_by;
  std::string release_reason;
  std::optional<Time> released_at;
};

struct ClaimOutcome {
  bool won = false;
  // won: the new row (state claimed). Lost: the live claim that holds the key, committed
  // earlier by another claimant (or by an earlier element of the same batch) - its claimed_at,
  // worker and message_id say when and where the key was first replayed.
  Record holder;
};

// The anchor of one audit log (docs/signing.md): the last signed checkpoint a gate wrote to it,
// kept outside the file so that a log cut back or rebuilt below it is refused and reported.
struct AuditAnchor {
  std::string log;           // audit::anchor_name(): "HOST:/absolute/path"; 1..4096 bytes
  std::int64_t seq = 0;      // the checkpoint's seq (>= 1)
  std::string head;          // XXH3-128 hex of its line
  std::string chain_digest;  // its chain_digest (BLAKE2b-256 hex)
  std::string key_id;        // the key that signed it
  Time recorded_at{};        // when it was last raised (the ledger's clock)
};

struct Pruned {
  Time cutoff{};             // rows recorded before it by the ledger's clock are (or would be) gone
  std::vector<Record> rows;  // ordered by recorded_at, key, generation
};

struct Stats {
  std::int64_t claimed = 0, recorded = 0, confirmed = 0, released = 0;  // rows per state
  std::int64_t keys = 0;                                                // distinct keys
  std::optional<Time> oldest, newest;                                   // claimed_at bounds
};

// One plan the ledger knows (docs/plans.md): recorded when it is built or first approved. Every
// text is valid UTF-8 without NUL, at most 4096 bytes; `digest` is required.
struct PlanRecord {
  std::string digest;  // the plan file's digest, "blake2b:<64 hex>" (1..4096 bytes)
  std::string author;
  std::string source;  // what the plan covers, e.g. "amqp://host/%2F/payments.dlq" or a dump path
  std::string table_checksum;
  std::int64_t letters = 0;  // distinct identities in the plan (>= 0)
  std::int64_t copies = 0;   // letters counting duplicate copies (>= letters)
  Time created_at{}, expires_at{};
  Time recorded_at{};  // set by the ledger (its own clock)
  // Set once cancelled:
  std::string cancelled_by, cancel_reason;
  std::optional<Time> cancelled_at;
};

// One approver's approval of a plan. The ledger keeps it as given: verifying the signature is
// the plan library's job, before it calls approve_plan.
struct PlanApproval {
  std::string digest, approver, key_id /*32 hex*/, signature /*128 hex Ed25519*/, reason;
  Time approved_at{};  // the approver's clock (signed), informational
  Time recorded_at{};  // set by the ledger
};

// Progress of one identity of one plan: how many of its copies the run acted on, and how (a
// plan's letter is acted on at most `count` times in all: a rerun resumes).
struct PlanLetterProgress {
  std::string digest, identity;  // identity: "blake2b:<64 hex>" (1..4096 bytes)
  std::int64_t done = 0;         // moved as planned (replayed, parked, held by the plan's decision)
  std::int64_t held = 0;         // held by the plan guard (plan:decision_mismatch, plan:duplicate)
  std::int64_t changed = 0;      // held as plan:changed (body or inputs differ)
  std::string last_outcome;      // the last result text, e.g. "republished (confirmed)"
  Time updated_at{};             // set by the ledger (the caller's value is ignored)
};

// A plan's progress in all: identities with a progress row, and the sums of their counts.
struct PlanCounts {
  std::int64_t identities = 0, done = 0, held = 0, changed = 0;
};

// What migrate_ledger did: the schema version found and the one left (equal: nothing to do).
struct Migrated {
  int from = 0, to = 0;
};

struct Options {
  // Separates unrelated systems sharing one database: every operation sees its scope only.
  // 1..64 bytes of [A-Za-z0-9._-].
  std::string scope = "default";
  // SQLite: how long a call waits for another process's write lock before kUnavailable.
  int busy_timeout_ms = 10000;
  // PostgreSQL: connect_timeout (seconds) unless the URL sets one.
  int connect_timeout_s = 5;
  // The clock that stamps claimed_at/updated_at/released_at (tests set it; default: system clock).
  std::function<Time()> clock;
  // SQLite: false opens an existing file only (a missing one is kUnavailable, "no ledger at
  // PATH"): commands that only read or repair a ledger must not leave an empty one behind.
  bool create = true;
  // Tests only: migrate_ledger calls it with "migrate_in_transaction" after the new schema is
  // written and before COMMIT (the CLI passes its crash points, redrive/test_points.h).
  std::function<void(std::string_view step)> test_point;
};

// The interface every backend implements. One object holds one connection. Calls on one object are
// serialized by an internal mutex, so an object may be shared between threads (for throughput,
// open one per thread). Distinct objects, processes and hosts may use one database concurrently:
// that is what the ledger is for. After a fork(), a child must open its own Ledger and never use
// the parent's. Every call is one transaction: all or nothing.
class Ledger {
 public:
  virtual ~Ledger() = default;
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  // Claims every key, in order, in one transaction committed durably (SQLite: fsync of the WAL;
  // PostgreSQL: COMMIT) before returning. outcomes[i] belongs to claims[i]. A key that appears
  // twice in one batch is won at most once (by its first occurrence). Errors: kInvalidArgument
  // (a claim breaks the rules of Claim; nothing claimed), kUnavailable, kCorrupt, kInternal -
  // after any error nothing of this batch is claimed and the caller must treat every claim as
  // not won.
  Result<std::vector<ClaimOutcome>> claim_batch(const std::vector<Claim>& claims);

  // The live (not released) claim of each key, nullopt when the key is free. Claims nothing: for
  // dry runs. Errors: kInvalidArgument, kUnavailable, kCorrupt, kInternal.
  Result<std::vector<std::optional<Record>>> lookup(const std::vector<std::string>& keys);

  // Moves the live claim (key, generation) forward to `state` (kRecorded or kConfirmed), and sets
  // updated_at. Marking a claim that already is in `state` succeeds and changes nothing.
  // Returns the row after the call. Errors: kInvalidArgument (state kClaimed/kReleased: use
  // release), kNotFound (no such generation, or it was released), kBadTransition (the claim is
  // already past `state`), kUnavailable, kCorrupt, kInternal.
  Result<Record> mark(std::string_view key, std::int64_t generation, State state);
  // The same for many claims in one transaction (the CLI marks a whole output block `recorded`
  // after its audit entries are written). All or nothing: the first failing element's error is
  // returned (its message names the key) and no element is changed.
  Status mark_batch(const std::vector<std::pair<std::string, std::int64_t>>& claims, State state);

  // An audited operator act: the key's live claim becomes `released` (released_by, release_reason,
  // released_at set), so the key can be claimed once more. Returns the released row. Errors:
  // kInvalidArgument (empty operator or reason, or more than 4096 bytes), kNotFound (the key
  // has no live claim), kUnavailable, kCorrupt, kInternal.
  Result<Record> release(std::string_view key, std::string_view operator_name,
                         std::string_view reason);

  // Every generation of a key, oldest first (empty: never claimed, or pruned). Errors:
  // kInvalidArgument (the key breaks the rules of Claim::key), kUnavailable, kCorrupt, kInternal.
  Result<std::vector<Record>> show(std::string_view key);

  // Rows with claimed_at >= since (every row: Time{}), ordered by claimed_at, key, generation.
  // The whole result is in memory: for a large ledger use export_rows. Errors: kUnavailable,
  // kCorrupt, kInternal.
  Result<std::vector<Record>> list(Time since);

  // Rows per state, distinct keys and the claimed_at bounds of this scope. Errors: kUnavailable,
  // kCorrupt, kInternal.
  Result<Stats> stats();

  // Streams every row of the scope to `sink`, ordered by claimed_at, key, generation, inside one
  // read transaction (a consistent snapshot). `sink` returns false to stop early. Returns the
  // number of rows given to `sink`. The CLI writes them as JSON Lines. `sink` runs with the
  // object's mutex held: it must not call this object. An exception thrown by `sink` becomes
  // kInternal. Errors: kUnavailable, kCorrupt, kInternal.
  Result<std::int64_t> export_rows(const std::function<bool(const Record&)>& sink);

  // Deletes every row (any state, live or released) the ledger recorded more than `older_than`
  // ago by its own clock (recorded_at < ledger now - older_than; PostgreSQL: the server's now(),
  // SQLite: this host's clock) and returns the cutoff and the deleted rows, so that the caller can
  // audit them. The claimant's claimed_at plays no part. Pruning re-opens replay for their keys.
  // One transaction: all or nothing; `dry_run` returns the same rows and rolls back. Errors:
  // kInvalidArgument (older_than < 0), kUnavailable, kCorrupt, kInternal.
  Result<Pruned> prune(std::chrono::microseconds older_than, bool dry_run = false);

  // Inserts `rows` exactly as given (generation, state, times, release fields) in one transaction,
  // into a scope that holds no row yet: `replaygate ledger rebuild` re-creates a lost ledger from
  // the audit log this way. Every row's scope is this object's scope (the row's own is ignored);
  // its recorded_at is its claimed_at (the only time a restored row has), never later than the
  // ledger's now. Returns the number of rows inserted. Errors: kInvalidArgument (the scope already
  // holds a row: "not empty"; a row breaks the rules of Claim's texts; two live rows or two equal
  // generations of one key; a released row without released_by/release_reason/released_at) -
  // nothing is inserted then; kUnavailable, kCorrupt, kInternal.
  Result<std::int64_t> restore(const std::vector<Record>& rows);

  // Raises the anchor of `anchor.log` in this scope to `anchor` (recorded_at is set here) when it
  // has none or a lower seq; an anchor never moves back (two writers of one log: the higher seq
  // stays). Returns the anchor held after the call. Existing ledgers get the table on open.
  // Errors: kInvalidArgument (seq < 1, texts breaking the rules of Claim), kUnavailable,
  // kCorrupt, kInternal.
  Result<AuditAnchor> raise_anchor(const AuditAnchor& anchor);
  // Every anchor of this scope, by log. Errors: kUnavailable, kCorrupt, kInternal.
  Result<std::vector<AuditAnchor>> anchors();

  // Plans (docs/plans.md, schema version 4). Each call is one transaction; the errors are the
  // interface's (kInvalidArgument for a text breaking the rules of PlanRecord, nothing changed).
  //
  // Records `plan` (recorded_at set here). The same digest again with equal fields (author,
  // source, table_checksum, letters, copies, created_at, expires_at) is Ok and changes nothing;
  // with other fields it is kInvalidArgument "plan D recorded with other fields (...)".
  Status record_plan(const PlanRecord& plan);
  // The plan of `digest`, nullopt when it is not recorded.
  Result<std::optional<PlanRecord>> plan(std::string_view digest);
  // Records one approver's approval (recorded_at set here) and returns it. Errors: kNotFound (the
  // plan is not recorded), kBadTransition (it is cancelled), kInvalidArgument (empty approver,
  // key_id, signature or reason; "already approved by NAME": one approval per approver).
  Result<PlanApproval> approve_plan(const PlanApproval& approval);
  // The approvals of a plan, by recorded_at (then approver).
  Result<std::vector<PlanApproval>> plan_approvals(std::string_view digest);
  // Cancels a plan (cancelled_by, cancel_reason, cancelled_at set) and returns it. Errors:
  // kInvalidArgument (empty operator or reason), kNotFound, kBadTransition (already cancelled).
  Result<PlanRecord> cancel_plan(std::string_view digest, std::string_view operator_name,
                                 std::string_view reason);
  // Adds each element's done/held/changed (each >= 0) to its (digest, identity) row, creating it,
  // and sets last_outcome and updated_at (this object's clock): the run's progress for one block,
  // in one transaction. An identity given twice adds both. Every digest must be recorded
  // (kNotFound); a cancelled plan still takes progress (the block that was running has acted).
  Status record_plan_progress(const std::vector<PlanLetterProgress>& progress);
  // mark_batch(claims, state) and record_plan_progress(progress) in one transaction, all or
  // nothing: a plan's run settles a block with one commit (its confirmed replays and its progress).
  Status mark_batch_with_progress(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                                  State state, const std::vector<PlanLetterProgress>& progress);
  // The progress rows of these identities of a plan, in the order given; an identity without a
  // row comes back with every count 0, last_outcome "" and updated_at Time{}.
  Result<std::vector<PlanLetterProgress>> plan_progress(std::string_view digest,
                                                        const std::vector<std::string>& identities);
  // Rows and sums of a plan's progress (all 0 for a plan without progress or not recorded).
  Result<PlanCounts> plan_counts(std::string_view digest);
  // Every plan of the scope, by recorded_at (then digest).
  Result<std::vector<PlanRecord>> plans();
  // Streams every progress row of a plan to `sink`, by identity, in one read transaction (for
  // `ledger check`, which must find rows it does not know the identity of). `sink` returns false
  // to stop early and runs with the object's mutex held (as export_rows'). Returns the number of
  // rows given to `sink`.
  Result<std::int64_t> export_plan_progress(
      std::string_view digest, const std::function<bool(const PlanLetterProgress&)>& sink);

  // The scope this object works in, and a description for messages ("sqlite:/var/lib/x.db",
  // "postgresql://rg@127.0.0.1:5432/postgres" without the password).
  const std::string& scope() const { return scope_; }
  const std::string& describe() const { return describe_; }

 protected:
  Ledger(std::string scope, std::string describe, std::function<Time()> clock);
  Time now() const;

  virtual Result<std::vector<ClaimOutcome>> do_claim_batch(const std::vector<Claim>& claims) = 0;
  virtual Result<std::vector<std::optional<Record>>> do_lookup(
      const std::vector<std::string>& keys) = 0;
  virtual Status do_mark_batch(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                               State state) = 0;
  virtual Result<Record> do_release(std::string_view key, std::string_view operator_name,
                                    std::string_view reason) = 0;
  virtual Result<std::vector<Record>> do_show(std::string_view key) = 0;
  virtual Result<std::vector<Record>> do_list(Time since) = 0;
  virtual Result<Stats> do_stats() = 0;
  virtual Result<std::int64_t> do_export_rows(const std::function<bool(const Record&)>& sink) = 0;
  virtual Result<Pruned> do_prune(std::chrono::microseconds older_than, bool dry_run) = 0;
  // Called with the rows checked; must refuse a scope that holds a row (kInvalidArgument).
  virtual Result<std::int64_t> do_restore(const std::vector<Record>& rows) = 0;
  // Both backends keep anchors; the defaults (kInternal) are for a test's scripted ledger.
  virtual Result<AuditAnchor> do_raise_anchor(const AuditAnchor& anchor);
  virtual Result<std::vector<AuditAnchor>> do_anchors();
  // Plans: both backends keep them; the defaults (kInternal) are for a test's scripted ledger.
  // Called with the arguments checked.
  virtual Status do_record_plan(const PlanRecord& plan);
  virtual Result<std::optional<PlanRecord>> do_plan(std::string_view digest);
  virtual Result<PlanApproval> do_approve_plan(const PlanApproval& approval);
  virtual Result<std::vector<PlanApproval>> do_plan_approvals(std::string_view digest);
  virtual Result<PlanRecord> do_cancel_plan(std::string_view digest, std::string_view operator_name,
                                            std::string_view reason);
  virtual Status do_record_plan_progress(const std::vector<PlanLetterProgress>& progress);
  // Called with both lists non-empty.
  virtual Status do_mark_with_progress(
      const std::vector<std::pair<std::string, std::int64_t>>& claims, State state,
      const std::vector<PlanLetterProgress>& progress);
  virtual Result<std::vector<PlanLetterProgress>> do_plan_progress(
      std::string_view digest, const std::vector<std::string>& identities);
  virtual Result<PlanCounts> do_plan_counts(std::string_view digest);
  virtual Result<std::vector<PlanRecord>> do_plans();
  virtual Result<std::int64_t> do_export_plan_progress(
      std::string_view digest, const std::function<bool(const PlanLetterProgress&)>& sink);

 private:
  std::string scope_;
  std::string describe_;
  std::function<Time()> clock_;
  std::mutex mu_;
};

// Opens (and, for a new SQLite file or an empty PostgreSQL database, creates at kSchemaVersion) a
// ledger:
//   PATH, sqlite:PATH, sqlite://PATH      SQLite file (created when missing or empty)
//   postgresql://...  postgres://...      PostgreSQL, a libpq connection URI
// Any other "scheme://" is kInvalidArgument. The caller owns the returned object; it closes the
// connection when destroyed. Errors: kInvalidArgument (URL or scope), kUnavailable (cannot create,
// open or connect), kCorrupt (not a SQLite database), kForeign (another application's database
// or a table of another layout), kSchemaVersion (another ledger schema version). An existing
// database is never altered to fit: a ledger of an older version is refused with "ledger schema
// version 3; this replaygate uses 4: run `replaygate ledger migrate --ledger URL --operator NAME
// --reason TEXT --audit LOG`", a newer one with "ledger schema version 5 is newer than this
// replaygate (4): upgrade replaygate".
Result<std::unique_ptr<Ledger>> open_ledger(std::string_view url, const Options& options = {});

// Brings an existing ledger of schema version 1, 2 or 3 to kSchemaVersion in one transaction (the
// database is at the old version or the new one, never between): 1 -> 2 adds copy_replay and
// body_digest (NULL in the rows there), 2 -> 3 adds recorded_at (the rows there get their
// claimed_at, no later than now), 3 -> 4 adds the plan tables. At kSchemaVersion already: Ok with
// from == to, nothing changed. Every row is kept. A missing SQLite file is kUnavailable (nothing
// is created); the other errors are open_ledger's (a newer version, a foreign layout: refused,
// unchanged).
Result<Migrated> migrate_ledger(std::string_view url, const Options& options = {});

// The ledger schema version this build reads and writes (SQLite user_version, PostgreSQL
// replaygate_ledger_meta.schema_version). Version 1 had no copy_replay / body_digest columns,
// version 2 no recorded_at, version 3 no plan tables.
inline constexpr int kSchemaVersion = 4;

}  // namespace replaygate::ledger
