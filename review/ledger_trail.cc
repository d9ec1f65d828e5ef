// Reading an audit log as the replay ledger's history (see ledger_trail.h).
#include "review/ledger_trail.h"

#include <algorithm>
#include <string_view>
#include <tuple>

#include "audit/audit_log.h"
#include "audit/reader.h"

namespace replaygate::review {
namespace {

using audit::ReadEntry;

std::string text_of(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}
std::int64_t count_of(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}
ledger::Time time_of(const nlohmann::json& o, const char* key) {
  return ledger::parse_time(text_of(o, key)).value_or(ledger::Time{});
}

}  // namespace

// From the line's JSON, whatever kind the typed reader gives it.
bool plan_event_of(const ReadEntry& entry, const std::string& scope, PlanEvent* e, Trail* trail) {
  const nlohmann::json& o = entry.object;
  if (!o.is_object() || text_of(o, "kind") != "plan") return false;
  if (text_of(o, "scope") != scope) {
    ++trail->other_scopes;
    return false;
  }
  const std::string act = text_of(o, "act");
  e->line = entry.line;
  e->time = ledger::parse_time(text_of(o, "time")).value_or(ledger::Time{});
  e->operator_name = text_of(o, "operator");
  const std::string digest = text_of(o, "digest");
  if (act == "plan_recorded" || act == "plan_cancelled") {
    ledger::PlanRecord& p = e->plan;
    p.digest = digest;
    if (act == "plan_recorded") {
      e->kind = PlanEvent::Kind::kRecorded;
      p.author = text_of(o, "author");
      p.source = text_of(o, "source");
      p.table_checksum = text_of(o, "table_checksum");
      p.letters = count_of(o, "letters");
      p.copies = count_of(o, "copies");
      p.created_at = time_of(o, "created_at");
      p.expires_at = time_of(o, "expires_at");
    } else {
      e->kind = PlanEvent::Kind::kCancelled;
      p.cancelled_by = text_of(o, "cancelled_by");
      p.cancel_reason = text_of(o, "cancel_reason");
      p.cancelled_at = time_of(o, "cancelled_at");
    }
    return true;
  }
  if (act == "plan_approved") {
    e->kind = PlanEvent::Kind::kApproved;
    ledger::PlanApproval& a = e->approval;
    a.digest = digest;
    a.approver = text_of(o, "approver");
    a.key_id = text_of(o, "key_id");
    a.signature = text_of(o, "signature");
    a.reason = text_of(o, "reason");
    a.approved_at = time_of(o, "approved_at");
    return true;
  }
  if (act == "plan_progress") {
    e->kind = PlanEvent::Kind::kProgress;
    ledger::PlanLetterProgress& p = e->progress;
    p.digest = digest;
    p.identity = text_of(o, "identity");
    p.done = count_of(o, "done");
    p.held = count_of(o, "held");
    p.changed = count_of(o, "changed");
    p.last_outcome = text_of(o, "last_outcome");
    p.updated_at = e->time;
    return true;
  }
  return false;
}

namespace {

// One entry as an event of `scope`; false when it has nothing to do with the ledger.
bool event_of(const ReadEntry& entry, const std::string& scope, TrailEvent* e, Trail* trail) {
  e->line = entry.line;
  if (entry.kind == ReadEntry::Kind::kDecision) {
    const audit::DecisionEntry& d = entry.decision;
    e->key = d.idempotency_key.value_or("");
    e->generation = d.claim_generation;
    if (d.effect != "create" || e->key.empty()) return false;
    if (e->generation <= 0) {
      ++trail->unclaimed_creates;
      return false;
    }
    e->kind = TrailEvent::Kind::kGrant;
    e->time = ledger::parse_time(d.time).value_or(ledger::Time{});
    e->operator_name = d.operator_name;
    e->policy = d.policy;
    e->revision = d.policy_revision;
    e->table_checksum = d.table_checksum;
    e->rule = d.rule;
    e->message_id = d.message_id.is_string() ? d.message_id.get<std::string>() : std::string();
    e->source = d.source.value_or("");
    e->record = d.record;
    return true;
  }
  if (entry.kind != ReadEntry::Kind::kLedger) return false;
  const audit::LedgerEntry& l = entry.ledger;
  if (l.scope != scope) {
    ++trail->other_scopes;
    return false;
  }
  e->time = ledger::parse_time(l.time).value_or(ledger::Time{});
  e->operator_name = l.operator_name;
  e->key = l.idempotency_key.value_or("");
  e->generation = l.claim_generation;
  e->reason = l.reason.value_or("");
  e->cutoff = l.cutoff.value_or("");
  e->state = l.state.value_or("");
  if (l.act == "release_requested") {
    e->kind = TrailEvent::Kind::kReleaseRequested;
  } else if (l.act == "released") {
    e->kind = TrailEvent::Kind::kReleased;
  } else if (l.act == "prune_requested") {
    e->kind = TrailEvent::Kind::kPruneRequested;
  } else if (l.act == "pruned") {
    e->kind = TrailEvent::Kind::kPruned;
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::string read_trail(std::string_view bytes, const std::string& path, const std::string& scope,
                       Trail* trail) {
  const audit::VerifyReport report = audit::verify_bytes(bytes);
  if (!report.ok()) {
    return "the audit log " + path + " does not verify: " + report.problems.front() + " (" +
           std::to_string(report.problems.size()) +
           " problem(s) in all: run 'replaygate audit verify " + path +
           "'); nothing was changed. Restore the log from a copy, or record the break with "
           "'replaygate audit repair' first";
  }
  if (report.entries == 0 && !bytes.empty()) {
    return path + " is not an audit log: no line of it is an entry";
  }
  // Complete lines only: bytes after the last newline are a torn tail (verify said so). A line a
  // repair entry acknowledges may not be an entry at all: the reader skips it.
  audit::EntryReader reader(bytes, audit::EntryReader::Lines::kComplete);
  ReadEntry entry;
  while (reader.next(&entry)) {
    TrailEvent e;
    if (event_of(entry, scope, &e, trail)) trail->events.push_back(std::move(e));
    PlanEvent p;
    if (plan_event_of(entry, scope, &p, trail)) trail->plan_events.push_back(std::move(p));
  }
  return "";
}

Trail merge_trails(const std::vector<Trail>& trails) {
  Trail out;
  std::vector<size_t> next(trails.size(), 0);
  for (size_t t = 0; t < trails.size(); ++t) {
    out.unclaimed_creates += trails[t].unclaimed_creates;
    out.other_scopes += trails[t].other_scopes;
  }
  // A k-way merge by time (each log is in time order already), grants first within one second.
  const auto before = [](const TrailEvent& a, const TrailEvent& b) {
    const bool a_grant = a.kind == TrailEvent::Kind::kGrant;
    const bool b_grant = b.kind == TrailEvent::Kind::kGrant;
    return a.time < b.time || (a.time == b.time && a_grant && !b_grant);
  };
  for (;;) {
    size_t pick = trails.size();
    for (size_t t = 0; t < trails.size(); ++t) {
      if (next[t] == trails[t].events.size()) continue;
      if (pick == trails.size() ||
          before(trails[t].events[next[t]], trails[pick].events[next[pick]])) {
        pick = t;
      }
    }
    if (pick == trails.size()) break;
    out.events.push_back(trails[pick].events[next[pick]++]);
    out.events.back().log = pick;
  }
  // Plan events: in time order too, each log's own order kept (a stable sort of logs in order).
  for (size_t t = 0; t < trails.size(); ++t) {
    for (PlanEvent e : trails[t].plan_events) {
      e.log = t;
      out.plan_events.push_back(std::move(e));
    }
  }
  std::stable_sort(out.plan_events.begin(), out.plan_events.end(),
                   [](const PlanEvent& a, const PlanEvent& b) { return a.time < b.time; });
  return out;
}

ReplayedPlans replay_plans(const Trail& trail) {
  ReplayedPlans out;
  for (const PlanEvent& e : trail.plan_events) {
    const TrailPlace here{e.log, e.line};
    const std::string& digest = e.kind == PlanEvent::Kind::kApproved   ? e.approval.digest
                                : e.kind == PlanEvent::Kind::kProgress ? e.progress.digest
                                                                       : e.plan.digest;
    const auto conflict = [&](const std::string& message) {
      out.conflicts.push_back({e.line, e.log, digest, 0, "plan " + digest + ": " + message});
    };
    const auto it = out.plans.find(digest);
    if (e.kind == PlanEvent::Kind::kRecorded) {
      if (it == out.plans.end()) {
        ExpectedPlan& x = out.plans[digest];
        x.plan = e.plan;
        x.plan.recorded_at = e.time;
        x.recorded = here;
        continue;
      }
      const ledger::PlanRecord& p = it->second.plan;
      if (p.author != e.plan.author || p.source != e.plan.source ||
          p.table_checksum != e.plan.table_checksum || p.letters != e.plan.letters ||
          p.copies != e.plan.copies || p.created_at != e.plan.created_at ||
          p.expires_at != e.plan.expires_at) {
        conflict("recorded again with other fields than on line " +
                 std::to_string(it->second.recorded.line));
      }
      continue;
    }
    if (it == out.plans.end()) {
      conflict("an entry for a plan the log does not show recorded");
      continue;
    }
    ExpectedPlan& x = it->second;
    switch (e.kind) {
      case PlanEvent::Kind::kApproved:
        if (x.cancelled.line != 0) {
          conflict("approved by " + e.approval.approver + " after its cancel (line " +
                   std::to_string(x.cancelled.line) + ")");
        } else if (!x.approvals.emplace(e.approval.approver, std::make_pair(e.approval, here))
                        .second) {
          conflict("approved by " + e.approval.approver + " twice (line " +
                   std::to_string(x.approvals[e.approval.approver].second.line) + ")");
        }
        break;
      case PlanEvent::Kind::kCancelled:
        if (x.cancelled.line != 0) {
          conflict("cancelled twice (line " + std::to_string(x.cancelled.line) + ")");
          break;
        }
        x.cancelled = here;
        x.plan.cancelled_by = e.plan.cancelled_by;
        x.plan.cancel_reason = e.plan.cancel_reason;
        x.plan.cancelled_at = e.plan.cancelled_at;
        break;
      case PlanEvent::Kind::kProgress: {
        auto [p, fresh] = x.progress.try_emplace(e.progress.identity, e.progress, here);
        if (!fresh) {
          p->second.first.done += e.progress.done;
          p->second.first.held += e.progress.held;
          p->second.first.changed += e.progress.changed;
          p->second.first.last_outcome = e.progress.last_outcome;
          p->second.first.updated_at = e.progress.updated_at;
          p->second.second = here;
        }
        break;
      }
      case PlanEvent::Kind::kRecorded:
        break;
    }
  }
  return out;
}

Replayed replay_trail(const Trail& trail, const std::string& scope) {
  Replayed out;
  std::map<std::string, std::int64_t> live;  // key -> its live generation
  const auto conflict = [&](const TrailEvent& e, std::string message) {
    out.conflicts.push_back({e.line, e.log, e.key, e.generation, std::move(message)});
  };
  for (const TrailEvent& e : trail.events) {
    const std::pair<std::string, std::int64_t> id{e.key, e.generation};
    const std::string gen = " generation " + std::to_string(e.generation);
    switch (e.kind) {
      case TrailEvent::Kind::kGrant: {
        ++out.grants;
        if (const auto l = live.find(e.key); l != live.end()) {
          conflict(e, "grants key '" + e.key + "'" + gen + " while generation " +
                          std::to_string(l->second) + " (line " +
                          std::to_string(out.rows[{e.key, l->second}].granted_on) +
                          ") was not released: one ledger scope never grants a key twice (is "
                          "this log shared by two ledgers or scopes?)");
          break;
        }
        if (out.rows.count(id) != 0) {
          conflict(e, "grants key '" + e.key + "'" + gen + ", which line " +
                          std::to_string(out.rows[id].granted_on) +
                          " already granted: one ledger scope never grants a generation twice");
          break;
        }
        out.pruned.erase(id);
        ExpectedRow& x = out.rows[id];
        x.granted_on = e.line;
        x.granted_log = e.log;
        ledger::Record& r = x.row;
        r.scope = scope;
        r.key = e.key;
        r.generation = e.generation;
        r.state = ledger::State::kRecorded;
        r.policy = e.policy;
        r.revision = e.revision;
        r.table_checksum = e.table_checksum;
        r.rule = e.rule;
        r.message_id = e.message_id;
        r.worker = "audit log line " + std::to_string(e.line);
        r.claimed_at = r.updated_at = e.time;
        live[e.key] = e.generation;
        break;
      }
      case TrailEvent::Kind::kReleaseRequested:
        out.pending_releases[id] = {e.log, e.line};
        break;
      case TrailEvent::Kind::kReleased: {
        out.pending_releases.erase(id);
        const auto it = out.rows.find(id);
        if (it == out.rows.end() || it->second.released_on != 0) {
          conflict(e,
                   "releases key '" + e.key + "'" + gen + ", which the log does not show " +
                       (it == out.rows.end() ? "granted"
                                             : "live (released on line " +
                                                   std::to_string(it->second.released_on) + ")"));
          break;
        }
        ExpectedRow& x = it->second;
        x.released_on = e.line;
        x.released_log = e.log;
        x.row.state = ledger::State::kReleased;
        x.row.released_by = e.operator_name;
        x.row.release_reason = e.reason;
        x.row.released_at = e.time;
        x.row.updated_at = e.time;
        live.erase(e.key);
        break;
      }
      case TrailEvent::Kind::kPruneRequested:
        break;
      case TrailEvent::Kind::kPruned: {
        const auto it = out.rows.find(id);
        if (it == out.rows.end()) {
          conflict(e, "prunes key '" + e.key + "'" + gen + ", which the log does not show granted");
          break;
        }
        if (it->second.released_on == 0) live.erase(e.key);
        out.rows.erase(it);
        out.pending_releases.erase(id);
        out.pruned[id] = {e.log, e.line};
        break;
      }
    }
  }
  return out;
}

ledger::Status restore_plans(ledger::Ledger& l, const ReplayedPlans& plans,
                             const std::function<void(ledger::Time)>& pin) {
  for (const auto& [digest, x] : plans.plans) {
    pin(x.plan.recorded_at);
    if (ledger::Status s = l.record_plan(x.plan); !s) return s;
    std::vector<std::pair<TrailPlace, const ledger::PlanApproval*>> approvals;
    for (const auto& [approver, a] : x.approvals) approvals.emplace_back(a.second, &a.first);
    std::sort(approvals.begin(), approvals.end(), [](const auto& a, const auto& b) {
      return std::tie(a.first.log, a.first.line) < std::tie(b.first.log, b.first.line);
    });
    for (const auto& [place, a] : approvals) {
      pin(a->approved_at);
      if (auto r = l.approve_plan(*a); !r) return r.error();
    }
    constexpr size_t kChunk = 5000;
    std::vector<ledger::PlanLetterProgress> chunk;
    ledger::Time last{};
    const auto flush = [&]() -> ledger::Status {
      if (chunk.empty()) return ledger::Ok{};
      pin(last);
      ledger::Status s = l.record_plan_progress(chunk);
      chunk.clear();
      last = ledger::Time{};
      return s;
    };
    for (const auto& [identity, p] : x.progress) {
      chunk.push_back(p.first);
      last = std::max(last, p.first.updated_at);
      if (chunk.size() == kChunk) {
        if (ledger::Status s = flush(); !s) return s;
      }
    }
    if (ledger::Status s = flush(); !s) return s;
    if (x.cancelled.line != 0) {
      pin(x.plan.cancelled_at.value_or(x.plan.recorded_at));
      if (auto r = l.cancel_plan(digest, x.plan.cancelled_by, x.plan.cancel_reason); !r) {
        return r.error();
      }
    }
  }
  return ledger::Ok{};
}

}  // namespace replaygate::review
