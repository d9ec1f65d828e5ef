// The append-only audit trail of reviewed decisions (issue 5): JSON Lines with a hash chain.
//
// Format (docs/recovery.md, "Audit trail"): one JSON object per line, '\n'-terminated, no key
// twice, no other keys than these. Every entry has `seq` (1, 2, 3, ... in file order), `prev` (32
// hex digits: XXH3-128 of the previous line's bytes without its '\n'; 32 zeros for the first
// line), `kind` and `time` (UTC, "YYYY-MM-DDTHH:MM:SSZ", a real second from 1970 on, never
// earlier than the entry before's: an append whose clock reads earlier records that time instead):
//   "decision": operator (a name: operator_name_problem() in options.h), message_id and
//               operation_id (string or null), action (a verb name) and rule (a rule id, or
//               "default"), both in the policy's grammar (common/names.h), policy (a non-empty
//               string), effect
//               (none, read, copy or create; none when rule is "default"), policy_revision
//               (0 to INT64_MAX), table_checksum (32 hex digits), record_revision (integer, string
//               or null); `decide --audit` adds source (string) and record (line number, >= 1),
//               and, for a record with an idempotency key, idempotency_key (a non-empty string)
//               and, when its replay-ledger claim was won, claim_generation (>= 1; effect create)
//   "result":   decision (the seq of an earlier decision entry, which has no other result),
//               revision (the new local revision, 0 to INT64_MAX), outcome (not blank), and
//               optionally operator
//   "ledger":   an operator act on the replay ledger (`ledger release|prune|migrate`,
//               audit/entry.h's LedgerEntry): operator, act (release_requested, released,
//               prune_requested, pruned, ledger_migrate_requested, ledger_migrated), scope, and as
//               the act needs them idempotency_key, claim_generation, reason (one printable line),
//               cutoff (RFC 3339), state
//   "plan":     a plan's record in the ledger (`replaygate plan`, `decide --plan`, docs/plans.md;
//               audit/entry.h's PlanEntry): operator, act (plan_recorded, plan_approved,
//               plan_cancelled, plan_progress, plan_frozen, plan_returned), scope, digest (not
//               in plan_frozen: its plan_id names the plan) and the act's fields
//   "console":  an act of the web console (`console serve`, docs/console.md; audit/entry.h's
//               ConsoleEntry), allowed or refused: operator, act (a lowercase word), scope,
//               outcome (allowed, refused, failed), address, and optionally target, reason, detail
//   "checkpoint": written by an appender given a signing key only (audit/checkpoint.h):
//               chain_digest (64 hex digits: BLAKE2b-256 of every byte of the log before its
//               line), key_id (32 hex digits), signature (128 hex digits: Ed25519 over
//               checkpoint_message()); no operator
//   "repair":   written by `audit repair` only, when the log does not verify: operator, reason
//               (one printable line, as an operator name), covers (XXH3-128 of every byte of the
//               log before this line), problem_count (>= 1) and problems (the first 10 of them,
//               as verify words them); its seq is one more than every seq before it (and the
//               seqs after it count on from it), its time is the repair's own
// Entries under one table_checksum name one policy and revision and give each action one effect.
// The chain detects a removed, reordered or edited line (except an edit of the very last line,
// which the hash printed when it was appended anchors). XXH3 is not a signature: someone who can
// rewrite the file can recompute the chain; the chain is against accidents and naive edits.
//
// Appends continue only a log that verifies (every line, not only the last): a log with a problem
// anywhere is refused, unchanged, until it is restored from a copy or `audit repair` appends a
// repair entry. A repair rewrites nothing: the broken lines stay as they are, and the repair entry
// acknowledges their problems (verify reports them as repaired, not as problems) for as long as
// the bytes its `covers` hashes are unchanged; the chain continues from it.
//
// Durability and concurrency: append() takes an exclusive flock(2) on the file and looks at the
// bytes after the last '\n' (if any). A writer writes its whole line and the line's '\n' with
// one write(2) under the lock and fsync(2)s before it reports success, so what a crash can leave
// there is a cut of the line it was writing, and nothing else. The rule: those bytes are a torn
// tail only when they are a strict prefix of the next line a writer would write (nlohmann's dump:
// keys sorted, so `{"action":"`, `{"decision":`, `{"covers":"` or `{"act":"` first; no spaces;
// control characters escaped; no nested object; `seq` the next one and `prev` the last line's hash)
// that stops before the end of its last field (`time`, last in every kind). A torn tail was never
// acknowledged: it is truncated away and handed back to the caller
// (AppendResult::removed_torn_tail) to show. Anything else without a '\n' is a problem (a whole
// JSON object, an entry with bytes after its closing brace, two entries joined, an entry with a
// character deleted, a prefix holding every field but the brace, bytes that do not start like an
// entry: a note, a dead letter, the wrong path): nothing removes it, and appends and repair()
// refuse the log and change nothing, until a person restores the log or ends the line with a
// newline. Empty lines after the last entry (the file ends "\n\n": an editor) hold no entry and
// are truncated away too
// (AppendResult::removed_empty_lines). Both happen only right before the write, after every check
// that can refuse. It writes with one write(2) under O_APPEND, fsync(2)s, and only then reports
// success. A short write (full disk, file size limit) is truncated away before the error is
// returned, so a failed append leaves no partial line. Each append reads and checks the whole log
// (O(its size)): the log is for reviewed, one-at-a-time decisions.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "audit/checkpoint.h"

namespace replaygate::audit {

struct AppendResult {
  bool ok = false;
  std::string error;  // when !ok: what failed, e.g. "cannot write /x/audit.log: No space left"
  uint64_t seq = 0;   // when ok: the new entry's seq
  std::vector<uint64_t> seqs;   // when ok: the seq of each entry given, in order (a batch)
  std::string hash;             // when ok: XXH3-128 hex of the new line (the next entry's `prev`)
  uint64_t checkpoint_seq = 0;  // when ok and signed: the seq of the last checkpoint written
  // Its line's XXH3-128 hex and its chain_digest: what a caller records as the log's anchor.
  std::string checkpoint_head, checkpoint_digest;
  // When ok and signed: the last line written (an entry or a checkpoint) as an anchor.
  Anchor last;
  // The torn tail this append removed (bytes after the last '\n' that were a cut of the next
  // entry, see above), "" when none; set even when the append then fails.
  // Commands print it on stderr so that no bytes disappear silently.
  std::string removed_torn_tail;
  // How many empty lines after the last entry this append removed (set as removed_torn_tail).
  uint64_t removed_empty_lines = 0;
  // repair() only, when ok: the problems the repair entry acknowledges ("line N: ...").
  std::vector<std::string> acknowledged;
};

// Appends `entry` (a JSON object; its `seq` and `prev` are set here) to the log at `path`,
// creating the file (mode 0644) when it does not exist. When `decision_seq` is non-zero, the log
// must already exist (it is never created then) and hold a decision entry with that seq (for
// result entries). Errors (ok false): the path is "-" (standard input or output, as other
// commands read it: never a log), the path cannot be opened or is not a regular file, locking,
// reading, writing or fsync fails, the log does not verify (verify_bytes() finds a problem on any
// line; nothing is changed then): "refusing to append to PATH, which does not verify: line N: ...
// (and K more problems: run 'replaygate audit verify PATH' to see them all); nothing was changed.
// Restore the log from a copy, or keep it as it is and record the break with 'replaygate audit
// repair PATH --operator NAME --reason TEXT' (...)", or, when no line is a valid entry, "PATH is
// not an audit log ..." (for bytes after the last newline that are neither an entry nor the start
// of one: "is neither an audit entry nor the start of one"), `decision_seq` names no decision
// entry or one that already has a result entry,
// or an entry to append is not valid (a caller's bug, or a repair entry, which only repair()
// writes: "refusing to append an invalid entry ..."; what is written always verifies).
AppendResult append(const std::string& path, nlohmann::json entry, uint64_t decision_seq = 0,
                    const CheckpointSigner* signer = nullptr);

// Appends `entries` (JSON objects; `seq` and `prev` are set here, continuing the chain in order)
// under one lock with one write(2) and one fsync(2): all of them or none (a short write is
// truncated away). Used by `decide --audit`, which appends a block of decisions before it prints
// them. Errors as for append(); `decision_seq` as for append(). On success `seq` and `hash` are
// those of the last entry appended (for an empty batch: of the log's last line, seq 0 if empty).
// With `signer` (its key set), checkpoint entries (audit/checkpoint.h) are written in the same
// write: one after every signer->every entries since the log's last checkpoint, and one after the
// last entry, so the batch ends signed; `seq` and `hash` stay the last given entry's and
// `checkpoint_seq` is the last checkpoint's. A
// caller's own checkpoint entry is refused as invalid (only the signer writes them). A signing
// append first checks the log's signed state (signing_refusal(), audit/checkpoint.h, against
// signer->anchor) and refuses, writing nothing, a log that fails it.
AppendResult append_batch(const std::string& path, std::vector<nlohmann::json> entries,
                          uint64_t decision_seq = 0, const CheckpointSigner* signer = nullptr);

// An appender for a long run (the live gate, redrive/redrive.h): open() verifies the log once and
// keeps it open; each append then takes the lock (flock, as append() does) for that append only and
// costs the size of what it writes, not of the whole log (append() re-reads it every time). When
// the file grew since this appender's last write (another appender wrote: `ledger release
// --audit`, a second gate), that append reads and verifies the whole log again and continues it
// only when it verifies; a file replaced since open (an editor's rename, a removal) is refused.
// A file changed in place (its size or ctime differs from after our last write) is read again
// the same way. With a signer, open() and every re-read also apply signing_refusal() against the
// anchor: at open the signer's (the ledger's), then the last checkpoint seen or written here, so
// a log rewritten below it under a running writer is refused.
// Entries are checked and chained exactly as append_batch() does; checkpoints (signer) likewise.
// Not thread-safe; one per process per log.
class Appender {
 public:
  // Opens (creating it, mode 0644, when missing), locks and verifies the log at `path`. Null with
  // *error set: the errors of append() (a "-" path, open, lock or read failures, a log that does
  // not verify: nothing is changed).
  static std::unique_ptr<Appender> open(const std::string& path, const CheckpointSigner* signer,
                                        std::string* error);
  ~Appender();  // releases the lock
  Appender(const Appender&) = delete;
  Appender& operator=(const Appender&) = delete;
  // As append_batch(path, entries, decision_seq, signer), without re-reading the log. The first
  // append removes a torn tail or empty lines found at open (reported as append_batch() does).
  AppendResult append_batch(std::vector<nlohmann::json> entries, uint64_t decision_seq = 0);
  AppendResult append(nlohmann::json entry, uint64_t decision_seq = 0);
  // With a signer: writes a checkpoint when entries came after the last one (a writer that
  // checkpoints per block calls it at the end of its run), checked as an append is. ok with
  // checkpoint_seq 0 when there was nothing to sign.
  AppendResult close();

 private:
  struct State;
  explicit Appender(std::unique_ptr<State> state);
  // append_batch(), and with `close` a last checkpoint when entries came after the last one.
  AppendResult write(std::vector<nlohmann::json> entries, uint64_t decision_seq, bool close);
  std::unique_ptr<State> state_;
};

// Records a break in the log at `path` so that appends can continue it (`audit repair`): under the
// lock, when the log does not verify but holds a valid entry, removes what an append removes (a
// torn tail, empty lines after the last line) and appends a repair entry (format above) by
// `operator_name` (operator_name_problem() must accept it) for `reason` (the same rule) that
// acknowledges every problem found; every other byte is kept. One write(2), fsync(2). On success
// `seq` and `hash` are the repair entry's and `acknowledged` lists the problems. Errors (ok false,
// nothing written): "-", a missing file (never created), the open, lock, read or write errors of
// append(), a log that verifies ("there is nothing to repair"), one with no valid entry ("is not
// an audit log"), one whose last line has no '\n' and is not a torn tail ("refusing to repair
// PATH: its last line (line N) has no newline and is not a torn line ...": a repair does not
// guess what those bytes are), a bad operator or reason ("refusing to append an invalid repair
// entry ...").
AppendResult repair(const std::string& path, const std::string& operator_name,
                    const std::string& reason);

// The stderr notes for what `appended` removed from the log at `path`, "" when nothing: a line
// for removed empty lines, and a warning for a torn tail that shows its first 200 bytes (control
// characters and bytes that are not UTF-8 escaped by escape_control()) and, when it is
// longer, "... (N bytes in all)", so nothing disappears silently and a huge tail stays one line.
std::string removed_tail_note(const std::string& path, const AppendResult& appended);

// A repair entry that acknowledges the problems before it (see repair()).
struct RepairSeen {
  uint64_t line = 0;  // its line
  std::string operator_name, time, reason;
  // The problems it acknowledges, as verify words them now ("line N: ..."): those of the lines
  // after the repair before it (if any), which are kept in the file as they are.
  std::vector<std::string> problems;
};

struct VerifyReport {
  uint64_t entries = 0;             // valid lines (an unterminated whole object too, when valid)
  uint64_t decisions = 0;           // of which decision entries
  uint64_t results = 0;             // of which result entries
  uint64_t ledger = 0;              // of which ledger entries
  uint64_t checkpoint_entries = 0;  // of which checkpoints (the rest are repair entries)
  // The checkpoints whose chain_digest matches the bytes before them, in file order (one whose
  // digest does not match is a problem); check_checkpoints() checks their signatures.
  std::vector<CheckpointSeen> checkpoints;
  // The file ends in a torn tail: unterminated bytes that are a cut of the next line a writer
  // would write (the rule above: a crashed append); not counted in `entries`, not a problem.
  bool torn_tail = false;
  uint64_t torn_bytes = 0;  // its length
  // The file ends in unterminated bytes that are not a torn tail: a problem (the reason and the
  // line are in `problems`); a whole JSON object there is also checked like any line (and counted
  // when valid). Nothing removes them; appends and repair() refuse the log.
  bool unterminated = false;
  // Empty lines after the last entry (the file ends "\n\n"), with nothing but a torn tail after
  // them: tolerated, not problems (no entry is missing), removed by the next append.
  uint64_t trailing_empty_lines = 0;
  // Empty or blank (whitespace-only) lines elsewhere, each also a problem (unless a repair entry
  // after them acknowledges it: then not counted): never written by an appender, so the entries
  // around them are checked as if they were not there.
  uint64_t blank_lines = 0;
  std::string last_hash;  // hash of the last line that is not blank (32 zeros for an empty log)
  // "line N: ..." for every broken line, in file order, but those a repair acknowledges.
  std::vector<std::string> problems;
  std::vector<RepairSeen> repairs;  // the repair entries whose `covers` matches, in file order
  // Why the next append (append_batch(): audit result, review --confirm, decide --audit) will
  // refuse this log and write nothing, and how to repair it; "" when it will append, which is
  // when `problems` is empty. It names the number of problems and the first one's line, and the
  // repairs: restore the log from a copy, or `replaygate audit repair LOG --operator NAME --reason
  // TEXT`; or, when no line is a valid entry, says the file is not an audit log.
  std::string append_refusal;
  bool ok() const { return problems.empty(); }
};

// Checks a whole log held in memory: every complete line is an entry as described above (one
// problem per line: the first thing wrong, naming the field), seq counts up from 1, every prev
// matches the previous entry line's hash, every result names an earlier decision that has no
// other result, and the entries under one table_checksum agree (policy, revision, each action's
// effect). Unterminated last bytes are a torn tail (reported, torn_tail, not a problem) only when
// they are a cut of the next line a writer would write (see above); any others are a problem
// (unterminated). Empty lines: see trailing_empty_lines and blank_lines.
// Entries' times never run backwards (a problem on the later line), except at a repair entry.
// A repair entry whose `covers` is the hash of the bytes before it acknowledges the problems
// before it (they move from `problems` to its RepairSeen); one whose `covers` does not match is a
// problem, and acknowledges nothing. Thread-safe (no shared state).
VerifyReport verify_bytes(std::string_view bytes);

// Whether the log `bytes` still holds `anchor`'s line (Anchor, audit/checkpoint.h): a line with
// its seq and hash after bytes whose BLAKE2b-256 is its chain_digest. O(size of the log).
bool holds_anchor(std::string_view bytes, const Anchor& anchor);

// XXH3-128 of `line` as 32 hex digits (high half first).
std::string line_hash(std::string_view line);

// Watches a nlohmann parse for a key given twice in one object (nlohmann keeps the last one, so
// `"effect":"none","effect":"create"` would read as create) and for the key whose value is being
// read (to name a number out of range). Pass callback() to json::parse; it refuses nothing.
// One watch per parse: reset() before parsing again.
class DuplicateKeyWatch {
 public:
  nlohmann::json::parser_callback_t callback();
  const std::string& duplicate() const { return duplicate_; }  // the first key given twice, or ""
  const std::string& last_key() const { return last_key_; }
  void reset();

 private:
  std::vector<std::set<std::string>> keys_seen_;  // one set per open object
  std::string duplicate_, last_key_;
};

// The current UTC time as "YYYY-MM-DDTHH:MM:SSZ".
std::string utc_now();

}  // namespace replaygate::audit
