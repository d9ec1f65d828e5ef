// The replay ledger as an audit log tells it (docs/ledger.md, "Operator commands"): the grants
// (decision entries that won a ledger claim) and the operator acts (ledger entries) of one scope,
// in log order, and the ledger rows they imply. `ledger check` compares those rows with the
// ledger (ledger_check.h); `ledger rebuild` restores them into an empty one. Built here, as data,
// for the CLI and later the console.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ledger/ledger.h"

namespace replaygate::review {

// One entry of the log that bears on the ledger.
struct TrailEvent {
  enum class Kind { kGrant, kReleaseRequested, kReleased, kPruneRequested, kPruned };
  Kind kind = Kind::kGrant;
  uint64_t line = 0;            // its line in the log
  size_t log = 0;               // which log (merge_trails(): the index of its Trail)
  ledger::Time time{};          // the entry's time (a whole second)
  std::string key;              // "" for prune_requested
  std::int64_t generation = 0;  // 0 when the entry names none (release_requested may not)
  std::string operator_name;
  std::string reason, cutoff, state;  // the ledger entry's fields ("" when absent)
  // A grant's claim data, as the decision entry records it.
  std::string policy, table_checksum, rule, message_id, source;
  std::int64_t revision = 0;
  uint64_t record = 0;
};

struct Trail {
  std::vector<TrailEvent> events;  // in log order
  // Create decisions that carry a key but no claim_generation: decided without a ledger (or as a
  // dry run). They are not claims of any ledger, so check and rebuild leave them out (counted).
  uint64_t unclaimed_creates = 0;
  uint64_t other_scopes = 0;  // ledger entries of other scopes, left out
};

// The trails of several logs (one per gate, `ledger check --audit A --audit B`) as one, in time
// order: each event's `log` is its trail's index; each log's own order is kept, and of events in
// one second a grant comes before an operator act.
Trail merge_trails(const std::vector<Trail>& trails);

// A place in the logs: which log (an index) and its line.
struct TrailPlace {
  size_t log = 0;
  uint64_t line = 0;
};

// Reads the audit log `bytes` (the whole file at `path`, as `audit verify` reads it) through the
// typed reader (audit/reader.h) and keeps what concerns ledger scope `scope`. The log must verify
// (audit::verify_bytes: a torn tail is no problem); decision entries carry no scope, so every
// grant in the log is taken to be this scope's (keep one audit log per ledger scope). Returns ""
// or why not (the caller exits 2): "the audit log PATH does not verify: line N: ... (N problems;
// run 'replaygate audit verify PATH')", "PATH is not an audit log: ...".
std::string read_trail(std::string_view bytes, const std::string& path, const std::string& scope,
                       Trail* trail);

// A claim that the log says is in the ledger, with the log line that granted it.
struct ExpectedRow {
  ledger::Record row;
  uint64_t granted_on = 0;                   // the grant's line
  uint64_t released_on = 0;                  // the 'released' entry's line (0: live)
  size_t granted_log = 0, released_log = 0;  // in which log (TrailEvent::log)
};

// Something in the log that no single ledger could have done (a key granted twice without a
// release, a release or prune of a claim the log never granted), with its line.
struct TrailConflict {
  uint64_t line = 0;
  size_t log = 0;
  std::string key;
  std::int64_t generation = 0;
  std::string message;
};

// The rows the trail implies, by (key, generation), replaying its events in order: a grant
// inserts a `recorded` row (times: the entry's), a 'released' entry releases it (by the entry's
// operator, reason and time), a 'pruned' entry deletes it. A 'release_requested' entry without
// its 'released' entry changes nothing (the release may not have happened: the key stays held);
// it is listed in `pending_releases`. Rows get worker "audit log line N".
struct Replayed {
  std::map<std::pair<std::string, std::int64_t>, ExpectedRow> rows;
  std::map<std::pair<std::string, std::int64_t>, TrailPlace> pending_releases;  // -> request
  std::map<std::pair<std::string, std::int64_t>, TrailPlace> pruned;  // -> the 'pruned' entry
  std::vector<TrailConflict> conflicts;
  uint64_t grants = 0;
};
Replayed replay_trail(const Trail& trail, const std::string& scope);

}  // namespace replaygate::review
