// The append-only audit trail of reviewed decisions (issue 5): JSON Lines with a hash chain.
//
// Format (docs/recovery.md, "Audit trail"): one JSON object per line, '\n'-terminated, no key
// twice, no other keys than these. Every entry has `seq` (1, 2, 3, ... in file order), `prev` (32
// hex digits: XXH3-128 of the previous line's bytes without its '\n'; 32 zeros for the first
// line), `kind` and `time` (UTC, "YYYY-MM-DDTHH:MM:SSZ", a real second from 1970 on, never
// earlier than the entry before's: an append whose clock reads earlier records that time instead):
//   "decision": operator (a name: operator_name_problem() in options.h), message_id and
//               operation_id (string or null), action (a verb name) and rule (a rule id, or
//               "default"), both in the policy's grammar (compiler/names.h), policy (a non-empty
//               string), effect
//               (none, read, copy or create; none when rule is "default"), policy_revision
//               (0 to INT64_MAX), table_checksum (32 hex digits), record_revision (integer, string
//               or null); `decide --audit` adds source (string) and record (line number, >= 1)
//   "result":   decision (the seq of an earlier decision entry, which has no other result),
//               revision (the new local revision, 0 to INT64_MAX), outcome (not blank), and
//               optionally operator
// Entries under one table_checksum name one policy and revision and give each action one effect.
// The chain detects a removed, reordered or edited line (except an edit of the very last line,
// which the hash printed when it was appended anchors). XXH3 is not a signature: someone who can
// rewrite the file can recompute the chain; the chain is against accidents and naive edits.
//
// Durability and concurrency: append() takes an exclusive flock(2) on the file, looks at the
// bytes after the last '\n' (if any): when they are a whole entry that continues the chain (a
// JSON object with the next seq and the last line's hash: it lost only its '\n', e.g. to an
// editor or a copy) the entry is kept and its '\n' is written first, in the same write(2) as the
// new line; otherwise, when they start like a line a writer writes (`{"action":"` or
// `{"decision":`, or a cut of either), they are a torn tail (a crash mid-append: never
// acknowledged) that is truncated away and handed back to the caller
// (AppendResult::removed_torn_tail) to show. Any other bytes there mean the file is not an audit
// log (a note, a dead letter: the wrong path): the append refuses it and changes nothing. Empty
// lines after the last entry (the file ends "\n\n": an editor) hold no entry and are truncated
// away too (AppendResult::removed_empty_lines). Both repairs happen only right before the write,
// after every check that can refuse. It writes with one write(2) under O_APPEND, fsync(2)s, and
// only then reports success.
// A short write (full disk, file size limit) is truncated away before the error is returned, so
// a failed append leaves no partial line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace replaygate::cli::audit {

struct AppendResult {
  bool ok = false;
  std::string error;  // when !ok: what failed, e.g. "cannot write /x/audit.log: No space left"
  uint64_t seq = 0;   // when ok: the new entry's seq
  std::string hash;   // when ok: XXH3-128 hex of the new line (the next entry's `prev`)
  // The torn tail this append removed (bytes after the last '\n' that were not a whole entry
  // continuing the chain), "" when none; set even when the append then fails. Commands print it
  // on stderr so that no bytes disappear silently.
  std::string removed_torn_tail;
  // How many empty lines after the last entry this append removed (set as removed_torn_tail).
  uint64_t removed_empty_lines = 0;
};

// Appends `entry` (a JSON object; its `seq` and `prev` are set here) to the log at `path`,
// creating the file (mode 0644) when it does not exist. When `decision_seq` is non-zero, the log
// must already exist (it is never created then) and hold a decision entry with that seq (for
// result entries). Errors (ok false): the path is "-" (standard input or output, as other
// commands read it: never a log), the path cannot be opened or is not a regular file, locking,
// reading, writing or fsync fails, the last line that is not empty is not a valid entry (the chain
// cannot be continued: run `audit verify`; nothing is changed then; "(line N) is not a valid audit
// entry (PROBLEM)"), the bytes after the last newline are neither an entry continuing the chain
// nor the start of one ("is neither an audit entry nor the start of one"), an empty line stands
// before an unterminated last entry, `decision_seq` names no decision entry (an unterminated last
// entry that continues the chain counts as an entry) or one that already has a result entry, or an
// entry to append is not valid (a caller's bug: "refusing to append an invalid entry ..."; what is
// written always verifies).
AppendResult append(const std::string& path, nlohmann::json entry, uint64_t decision_seq = 0);

// Appends `entries` (JSON objects; `seq` and `prev` are set here, continuing the chain in order)
// under one lock with one write(2) and one fsync(2): all of them or none (a short write is
// truncated away). Used by `decide --audit`, which appends a block of decisions before it prints
// them. Errors as for append(); `decision_seq` as for append(). On success `seq` and `hash` are
// those of the last entry appended (for an empty batch: of the log's last line, seq 0 if empty).
AppendResult append_batch(const std::string& path, std::vector<nlohmann::json> entries,
                          uint64_t decision_seq = 0);

// The stderr notes for what `appended` removed from the log at `path`, "" when nothing: a line
// for removed empty lines, and a warning for a torn tail that shows its first 200 bytes (control
// characters and bytes that are not UTF-8 escaped by escape_control()) and, when it is
// longer, "... (N bytes in all)", so nothing disappears silently and a huge tail stays one line.
std::string removed_tail_note(const std::string& path, const AppendResult& appended);

struct VerifyReport {
  uint64_t entries = 0;    // complete, valid lines
  uint64_t decisions = 0;  // of which decision entries
  uint64_t results = 0;    // of which result entries
  // The file ends in an unterminated fragment that is not a whole entry continuing the chain but
  // starts like one (a crashed append); it is not counted in `entries`. A fragment that does not
  // start like an entry is a problem instead (and an append_refusal): not an audit log.
  bool torn_tail = false;
  uint64_t torn_bytes = 0;  // its length
  // The last entry is complete and continues the chain but lacks its '\n'; it is counted in
  // `entries` and kept: an append writes the '\n' first, unless append_refusal says why it
  // refuses the log instead.
  bool unterminated = false;
  // Empty lines after the last entry (the file ends "\n\n"), with nothing but a torn tail after
  // them: tolerated, not problems (no entry is missing), removed by the next append.
  uint64_t trailing_empty_lines = 0;
  // Empty or blank (whitespace-only) lines elsewhere, each also a problem: never written by an
  // appender, so the entries around them are checked as if they were not there.
  uint64_t blank_lines = 0;
  std::string last_hash;              // hash of the last complete line (32 zeros for an empty log)
  std::vector<std::string> problems;  // "line N: ..." for every broken line, in file order
  // Why the next append (append_batch(): audit result, review --confirm, decide --audit) will
  // refuse this log and write nothing, and how to repair it; "" when it will append. The cases are
  // append_batch()'s: the last line that is not blank is not a valid entry, or the unterminated
  // last entry is not valid, or empty lines stand before it. (Each is also a problem.)
  std::string append_refusal;
  bool ok() const { return problems.empty(); }
};

// Checks a whole log held in memory: every complete line is an entry as described above (one
// problem per line: the first thing wrong, naming the field), seq counts up from 1, every prev
// matches the previous entry line's hash, every result names an earlier decision that has no
// other result, and the entries under one table_checksum agree (policy, revision, each action's
// effect). An unterminated last fragment that is a JSON object with the seq after the last line's
// (as an append reads it) and that line's hash is that entry (unterminated; checked like the
// others); any other unterminated fragment is a torn tail, reported (torn_tail) but not a problem.
// Empty lines: see trailing_empty_lines and blank_lines. Entries' times never run backwards (a
// problem on the later line).
VerifyReport verify_bytes(std::string_view bytes);

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

}  // namespace replaygate::cli::audit
