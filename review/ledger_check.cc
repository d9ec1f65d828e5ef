// Comparing a ledger with its audit logs (see ledger_check.h).
#include "review/ledger_check.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "audit/audit_log.h"
#include "audit/checkpoint.h"

namespace replaygate::review {

std::string claim_text(const std::string& key, std::int64_t generation) {
  return "key '" + key + "' generation " + std::to_string(generation);
}

std::vector<Finding> compare(
    const std::map<std::pair<std::string, std::int64_t>, ledger::Record>& rows,
    const Replayed& log) {
  std::vector<Finding> out;
  for (const auto& [id, r] : rows) {
    const std::string state(ledger::state_name(r.state));
    const std::string what = claim_text(r.key, r.generation) + " (" + state + ", claimed at " +
                             ledger::format_time(r.claimed_at) + " by " + r.worker + ")";
    const auto x = log.rows.find(id);
    if (x == log.rows.end()) {
      if (const auto p = log.pruned.find(id); p != log.pruned.end()) {
        out.push_back({"claim_without_entry", r.key, r.generation, p->second.line, p->second.log,
                       state, what + " is pruned in the log (this line) but still in the ledger"});
        continue;
      }
      out.push_back({"claim_without_entry", r.key, r.generation, 0, 0, state,
                     what + " has no decision entry in the log" +
                         (r.state == ledger::State::kClaimed
                              ? ": the deciding process stopped between its claim and its audit "
                                "entry, so its line was never printed and the letter was never "
                                "replayed; the key stays held until 'ledger release'"
                              : ": it was recorded in another log (give every gate's log: "
                                "--audit is repeatable), or its entry is lost")});
      continue;
    }
    const bool ledger_released = r.state == ledger::State::kReleased;
    const bool log_released = x->second.released_on != 0;
    if (ledger_released && !log_released) {
      const auto requested = log.pending_releases.find(id);
      if (requested != log.pending_releases.end()) {
        out.push_back({"release_not_logged", r.key, r.generation, requested->second.line,
                       requested->second.log, state,
                       what + " was released (by " + r.released_by +
                           ") after the request on this line, but its 'released' entry is "
                           "missing (the release was interrupted after the ledger changed); "
                           "rebuild would keep the key held"});
      } else {
        out.push_back({"release_without_entry", r.key, r.generation, x->second.granted_on,
                       x->second.granted_log, state,
                       what + " was released by " + r.released_by +
                           " without any release entry in the log (a release not made with "
                           "'replaygate ledger release --audit' on this log)"});
      }
    } else if (!ledger_released && log_released) {
      out.push_back({"release_not_in_ledger", r.key, r.generation, x->second.released_on,
                     x->second.released_log, state,
                     what + " is released in the log but live in the ledger: the key is held "
                            "(nothing replays it) until it is released again"});
    }
  }
  for (const auto& [id, x] : log.rows) {
    if (rows.count(id) != 0) continue;
    out.push_back({"entry_without_claim", id.first, id.second, x.granted_on, x.granted_log, "",
                   "the decision entry grants " + claim_text(id.first, id.second) +
                       " but the ledger has no such claim (deleted, pruned without a 'pruned' "
                       "entry, or another ledger or scope): the key can be replayed again"});
  }
  for (const TrailConflict& c : log.conflicts) {
    out.push_back(
        {"log_conflict", c.key, c.generation, c.line, c.log, "", "the entry " + c.message});
  }
  return out;
}

void check_anchors(const std::vector<ledger::AuditAnchor>& anchors,
                   const std::vector<std::string>& paths, const std::vector<std::string>& logs,
                   std::vector<Finding>* findings, std::vector<AnchorSeen>* seen) {
  std::vector<std::string> names;
  for (const std::string& path : paths) names.push_back(audit::anchor_name(path));
  std::vector<bool> held(anchors.size() * paths.size(), false);
  for (size_t i = 0; i < paths.size() && !anchors.empty(); ++i) {
    const std::string& bytes = logs.at(i);
    for (size_t k = 0; k < anchors.size(); ++k) {
      const ledger::AuditAnchor& a = anchors[k];
      held[k * paths.size() + i] = audit::holds_anchor(
          bytes, audit::Anchor{static_cast<uint64_t>(a.seq), a.head, a.chain_digest});
    }
  }
  for (size_t k = 0; k < anchors.size(); ++k) {
    const ledger::AuditAnchor& a = anchors[k];
    AnchorSeen s{a, false};
    for (size_t i = 0; i < paths.size(); ++i) {
      if (held[k * paths.size() + i]) s.given = true;
    }
    for (size_t i = 0; i < paths.size() && !s.given; ++i) {
      if (names[i] != a.log) continue;
      s.given = true;
      findings->push_back(
          {"anchor_missing", "", 0, 0, i, "",
           "the ledger anchors this log (" + a.log + ") at its entry " + std::to_string(a.seq) +
               " (chain head " + a.head + ", recorded " + ledger::format_time(a.recorded_at) +
               "), which it no longer holds: the log was cut back or rewritten below the last "
               "line its gate recorded; restore it from a copy"});
    }
    seen->push_back(std::move(s));
  }
}

namespace {
// How far a claimant's clock may be from the ledger's before its claim time is reported.
constexpr auto kClockTolerance = std::chrono::minutes(10);

std::string span_text(ledger::Time a, ledger::Time b) {
  const auto d = std::chrono::duration_cast<std::chrono::seconds>(a > b ? a - b : b - a);
  const auto days = d.count() / 86400;
  return days >= 2 ? std::to_string(days) + " days" : std::to_string(d.count()) + " s";
}
}  // namespace

void check_clocks(const std::map<std::pair<std::string, std::int64_t>, ledger::Record>& rows,
                  ledger::Time now, std::vector<Finding>* out) {
  for (const auto& [id, r] : rows) {
    const std::string state(ledger::state_name(r.state));
    const std::string what = claim_text(r.key, r.generation) + " (claimed at " +
                             ledger::format_time(r.claimed_at) + " by " + r.worker +
                             ", recorded by the ledger at " + ledger::format_time(r.recorded_at) +
                             ")";
    if (r.claimed_at > r.recorded_at + kClockTolerance) {
      out->push_back({"claim_time_in_future", r.key, r.generation, 0, 0, state,
                      what + ": the claimant's clock is " + span_text(r.claimed_at, r.recorded_at) +
                          " ahead of the ledger's; fix that host's clock"});
    } else if (r.claimed_at + kClockTolerance < r.recorded_at) {
      out->push_back({"claim_time_in_past", r.key, r.generation, 0, 0, state,
                      what + ": the claimant's clock is " + span_text(r.claimed_at, r.recorded_at) +
                          " behind the ledger's (prune ages the row by the ledger's time, so "
                          "it is not pruned early); fix that host's clock"});
    }
    if (r.recorded_at > now + kClockTolerance) {
      out->push_back({"ledger_time_in_future", r.key, r.generation, 0, 0, state,
                      what + ": the ledger recorded it " + span_text(r.recorded_at, now) +
                          " in this host's future: the ledger's clock (PostgreSQL: the server; "
                          "SQLite: a host that wrote to it) is ahead, or this host's is behind"});
    }
  }
}

namespace {

std::string counts_text(const ledger::PlanLetterProgress& p) {
  return "done " + std::to_string(p.done) + ", held " + std::to_string(p.held) + ", changed " +
         std::to_string(p.changed);
}

// The progress rows of one plan against its entries' sums.
void compare_progress(const LedgerPlan& lp, const ExpectedPlan* x, std::vector<Finding>* out) {
  const std::string& digest = lp.plan.digest;
  std::set<std::string> seen;
  for (const ledger::PlanLetterProgress& row : lp.progress) {
    seen.insert(row.identity);
    ledger::PlanLetterProgress logged;
    TrailPlace place;
    if (x != nullptr) {
      if (const auto it = x->progress.find(row.identity); it != x->progress.end()) {
        logged = it->second.first;
        place = it->second.second;
      }
    }
    const std::string what = "plan " + digest + " identity " + row.identity;
    if (row.done > logged.done || row.held > logged.held || row.changed > logged.changed) {
      out->push_back({"progress_without_entry", digest, 0, place.line, place.log, "",
                      what + ": the ledger counts " + counts_text(row) + ", its entries " +
                          counts_text(logged) +
                          " (a run stopped between its ledger call and its audit entry, or an "
                          "entry is in another log: --audit is repeatable)"});
    } else if (row.done < logged.done || row.held < logged.held || row.changed < logged.changed) {
      out->push_back({"progress_not_in_ledger", digest, 0, place.line, place.log, "",
                      what + ": its entries add up to " + counts_text(logged) +
                          ", the ledger counts " + counts_text(row)});
    }
  }
  if (x == nullptr) return;
  for (const auto& [identity, logged] : x->progress) {
    if (seen.count(identity) != 0) continue;
    out->push_back({"progress_not_in_ledger", digest, 0, logged.second.line, logged.second.log, "",
                    "plan " + digest + " identity " + identity + ": its entries add up to " +
                        counts_text(logged.first) + ", the ledger has no row"});
  }
}

}  // namespace

std::vector<Finding> compare_plans(const std::vector<LedgerPlan>& ledger_plans,
                                   const ReplayedPlans& log) {
  std::vector<Finding> out;
  std::set<std::string> seen;
  for (const LedgerPlan& lp : ledger_plans) {
    const std::string& digest = lp.plan.digest;
    seen.insert(digest);
    const auto x = log.plans.find(digest);
    const ExpectedPlan* expected = x == log.plans.end() ? nullptr : &x->second;
    if (expected == nullptr) {
      out.push_back({"plan_without_entry", digest, 0, 0, 0, "",
                     "plan " + digest + " (by " + lp.plan.author + ", recorded at " +
                         ledger::format_time(lp.plan.recorded_at) +
                         ") has no plan_recorded entry in the log"});
    }
    for (const ledger::PlanApproval& a : lp.approvals) {
      if (expected == nullptr || expected->approvals.count(a.approver) == 0) {
        out.push_back({"approval_without_entry", digest, 0, 0, 0, "",
                       "plan " + digest + ": the approval by " + a.approver + " (recorded at " +
                           ledger::format_time(a.recorded_at) +
                           ") has no plan_approved entry in the log"});
      }
    }
    if (expected != nullptr) {
      for (const auto& entry : expected->approvals) {
        // Named, not a structured binding: clang 14 cannot capture a binding in a lambda.
        const auto& approver = entry.first;
        const auto& logged = entry.second;
        const bool held = std::any_of(lp.approvals.begin(), lp.approvals.end(),
                                      [&](const auto& a) { return a.approver == approver; });
        if (!held) {
          out.push_back({"approval_not_in_ledger", digest, 0, logged.second.line, logged.second.log,
                         "",
                         "plan " + digest + ": the approval by " + approver +
                             " is in the log but not in the ledger"});
        }
      }
    }
    const bool logged_cancel = expected != nullptr && expected->cancelled.line != 0;
    if (lp.plan.cancelled_at && !logged_cancel) {
      out.push_back({"cancel_without_entry", digest, 0, 0, 0, "",
                     "plan " + digest + " was cancelled by " + lp.plan.cancelled_by + " at " +
                         ledger::format_time(*lp.plan.cancelled_at) +
                         " without a plan_cancelled entry in the log"});
    } else if (!lp.plan.cancelled_at && logged_cancel) {
      out.push_back({"cancel_not_in_ledger", digest, 0, expected->cancelled.line,
                     expected->cancelled.log, "",
                     "plan " + digest + " is cancelled in the log but not in the ledger"});
    }
    compare_progress(lp, expected, &out);
  }
  for (const auto& [digest, x] : log.plans) {
    if (seen.count(digest) != 0) continue;
    out.push_back({"plan_not_in_ledger", digest, 0, x.recorded.line, x.recorded.log, "",
                   "plan " + digest + " is recorded in the log but not in the ledger"});
  }
  for (const TrailConflict& c : log.conflicts) {
    out.push_back({"log_conflict", c.key, 0, c.line, c.log, "", c.message});
  }
  return out;
}

}  // namespace replaygate::review
