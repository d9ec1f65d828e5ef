// Reading an audit log as the replay ledger's history (see ledger_trail.h).
#include "review/ledger_trail.h"

#include <string_view>

#include "audit/audit_log.h"
#include "audit/reader.h"

namespace replaygate::review {
namespace {

using audit::ReadEntry;

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

}  // namespace replaygate::review
