// The replay ledger as an audit log tells it (docs/ledger.md, "Operator commands"): the grants
// (decision entries that won a ledger claim) and the operator acts (ledger entries) of one scope,
// in log order, and the ledger rows they imply. `ledger check` compares those rows with the
// ledger (ledger_check.h); `ledger rebuild` restores them into an empty one. Built here, as data,
// for the CLI and later the console.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audit/reader.h"
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

// One plan entry of the log (docs/ledger.md, "Plans in the audit log": kind "plan", acts
// plan_recorded, plan_approved, plan_cancelled, plan_progress), read from the line's JSON.
struct PlanEvent {
  enum class Kind { kRecorded, kApproved, kCancelled, kProgress };
  Kind kind = Kind::kRecorded;
  uint64_t line = 0;
  size_t log = 0;
  ledger::Time time{};  // the entry's time
  std::string operator_name;
  ledger::PlanRecord plan;              // kRecorded; kCancelled: digest and the cancel fields
  ledger::PlanApproval approval;        // kApproved
  ledger::PlanLetterProgress progress;  // kProgress: the increments that call added
};

struct Trail {
  std::vector<TrailEvent> events;      // in log order
  std::vector<PlanEvent> plan_events;  // in log order
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

// The plan tables the trail implies, replaying its plan events in order: a plan as its
// plan_recorded entry says, its approvals (one per approver), its cancel, and per identity the sum
// of the plan_progress increments (last_outcome and updated_at: the last entry's). An event no
// single ledger could have accepted (an approval, cancel or progress of a plan not recorded
// before it, a second approval by one approver, an approval after the cancel, a plan recorded
// again with other fields) is a conflict and changes nothing.
struct ExpectedPlan {
  ledger::PlanRecord plan;
  TrailPlace recorded;
  std::map<std::string, std::pair<ledger::PlanApproval, TrailPlace>> approvals;  // by approver
  TrailPlace cancelled;  // line 0: not cancelled
  std::map<std::string, std::pair<ledger::PlanLetterProgress, TrailPlace>> progress;  // identity
};
struct ReplayedPlans {
  std::map<std::string, ExpectedPlan> plans;  // by digest
  std::vector<TrailConflict> conflicts;       // key: the digest
};
ReplayedPlans replay_plans(const Trail& trail);

// One entry as a plan event of `scope` (read_trail() uses it; for tests and the console): false
// when the entry is not a plan entry of that scope (one of another scope is counted).
bool plan_event_of(const audit::ReadEntry& entry, const std::string& scope, PlanEvent* e,
                   Trail* trail);

// Re-creates `plans` in `ledger` through its own calls, in the order a run makes them: the plan,
// its approvals (in log order), its progress (the sums, in chunks of 5,000 identities), then its
// cancel. Before each call `pin` is given the time the ledger's clock should read (the log's:
// recorded_at, approved_at, the last progress entry's time, cancelled_at), so that the times the
// ledger sets from its clock are the log's (PostgreSQL sets recorded_at by its own). Not one
// transaction: the first error is returned, and what was restored before it stays.
ledger::Status restore_plans(ledger::Ledger& ledger, const ReplayedPlans& plans,
                             const std::function<void(ledger::Time)>& pin);

}  // namespace replaygate::review
