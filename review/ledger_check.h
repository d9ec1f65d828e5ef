// `ledger check` as data: every difference between a ledger's rows and the rows its audit logs
// imply (ledger_trail.h), and whether each log still holds the checkpoint the ledger anchors it at
// (docs/ledger.md, "Operator commands"). The CLI (tools/cli/ledger_check.cc) reads the ledger and
// the logs and renders the findings as text or JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ledger/ledger.h"
#include "review/ledger_trail.h"

namespace replaygate::review {

struct Finding {
  std::string kind;  // claim_without_entry, entry_without_claim, release_without_entry, ...
  std::string key;
  std::int64_t generation = 0;
  uint64_t line = 0;  // the log line it concerns (0: a ledger row only)
  size_t log = 0;     // the log it concerns (an index of --audit)
  std::string state;  // the ledger row's state ("" when the ledger has no row)
  std::string message;
};

// "key 'k' generation 3".
std::string claim_text(const std::string& key, std::int64_t generation);

// Every difference between the ledger's `rows` (by key and generation) and the log's: claims
// without an entry, entries without a claim, releases the other side does not show, conflicts
// within the log.
std::vector<Finding> compare(
    const std::map<std::pair<std::string, std::int64_t>, ledger::Record>& rows,
    const Replayed& log);

// One plan as the ledger holds it: the plan, its approvals and its progress rows.
struct LedgerPlan {
  ledger::PlanRecord plan;
  std::vector<ledger::PlanApproval> approvals;
  std::vector<ledger::PlanLetterProgress> progress;
};

// The plan tables against the log's plan entries (ReplayedPlans). What the ledger holds that no
// entry accounts for (the plan commands write their entry after the ledger call, so a crash
// between leaves exactly this): plan_without_entry, approval_without_entry, cancel_without_entry,
// progress_without_entry (a row's done, held or changed above the sum of its entries). What the
// log says that the ledger lacks: plan_not_in_ledger, approval_not_in_ledger,
// cancel_not_in_ledger, progress_not_in_ledger. The log's plan conflicts are log_conflict.
// Findings carry the digest as `key` (generation 0).
std::vector<Finding> compare_plans(const std::vector<LedgerPlan>& ledger_plans,
                                   const ReplayedPlans& log);

// Rows whose claim time (the claimant's clock) is more than 10 minutes from the time the ledger
// recorded them (its own clock, which prune ages rows by): claim_time_in_future,
// claim_time_in_past; and rows the ledger recorded after `now` (this host's clock):
// ledger_time_in_future.
void check_clocks(const std::map<std::pair<std::string, std::int64_t>, ledger::Record>& rows,
                  ledger::Time now, std::vector<Finding>* out);

// An anchor (the last line a signing gate recorded for its log) checked against the logs
// given: the log it names (by audit::anchor_name()) must still hold that line; an anchor of
// a log not given is checked against any given log that holds it (a copy), else only noted.
struct AnchorSeen {
  ledger::AuditAnchor anchor;
  bool given = false;  // a given log is the one it names, or holds its line
};

// Checks each of the ledger's `anchors` against the logs given (`paths`, their bytes in `logs`,
// one per path): a finding anchor_missing for a log it names that no longer holds its line.
void check_anchors(const std::vector<ledger::AuditAnchor>& anchors,
                   const std::vector<std::string>& paths, const std::vector<std::string>& logs,
                   std::vector<Finding>* findings, std::vector<AnchorSeen>* seen);

}  // namespace replaygate::review
