// Reading an audit log as the replay ledger's history (see ledger_trail.h).
#include "tools/cli/ledger_trail.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "audit/audit_log.h"
#include "inputs/records.h"
#include "tools/cli/files.h"

namespace replaygate::cli {
namespace {

using nlohmann::json;

std::string text_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::int64_t int_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

// One verified line as an event of `scope`; false when it has nothing to do with the ledger.
bool event_of(const json& j, const std::string& scope, TrailEvent* e, Trail* trail) {
  const std::string kind = text_of(j, "kind");
  e->time = ledger::parse_time(text_of(j, "time")).value_or(ledger::Time{});
  e->operator_name = text_of(j, "operator");
  e->key = text_of(j, "idempotency_key");
  e->generation = int_of(j, "claim_generation");
  if (kind == "decision") {
    if (text_of(j, "effect") != "create" || e->key.empty()) return false;
    if (e->generation <= 0) {
      ++trail->unclaimed_creates;
      return false;
    }
    e->kind = TrailEvent::Kind::kGrant;
    e->policy = text_of(j, "policy");
    e->revision = int_of(j, "policy_revision");
    e->table_checksum = text_of(j, "table_checksum");
    e->rule = text_of(j, "rule");
    e->message_id = text_of(j, "message_id");
    e->source = text_of(j, "source");
    e->record = static_cast<uint64_t>(int_of(j, "record"));
    return true;
  }
  if (kind != "ledger") return false;
  if (text_of(j, "scope") != scope) {
    ++trail->other_scopes;
    return false;
  }
  const std::string act = text_of(j, "act");
  e->reason = text_of(j, "reason");
  e->cutoff = text_of(j, "cutoff");
  e->state = text_of(j, "state");
  if (act == "release_requested") {
    e->kind = TrailEvent::Kind::kReleaseRequested;
  } else if (act == "released") {
    e->kind = TrailEvent::Kind::kReleased;
  } else if (act == "prune_requested") {
    e->kind = TrailEvent::Kind::kPruneRequested;
  } else if (act == "pruned") {
    e->kind = TrailEvent::Kind::kPruned;
  } else {
    return false;
  }
  return true;
}

}  // namespace

std::string read_trail(const std::string& path, const std::string& scope, Trail* trail) {
  std::string bytes, error;
  // The whole log, as `audit verify` reads it (an append reads it whole too).
  if (!read_whole_file(path, size_t{1} << 36, &bytes, &error)) return error;
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
  uint64_t line = 0;
  size_t from = 0;
  // Complete lines only: bytes after the last newline are a torn tail (verify said so).
  for (size_t end = bytes.find('\n'); end != std::string::npos;
       from = end + 1, end = bytes.find('\n', from)) {
    ++line;
    const std::string_view text = std::string_view(bytes).substr(from, end - from);
    // A repaired log keeps its broken lines: never hand one nested without bound to the parser.
    if (inputs::scan_json_shape(text, inputs::kMaxJsonDepth) == inputs::JsonShape::kTooDeep) {
      continue;
    }
    const json j = json::parse(text, nullptr, false);
    // A line a repair entry acknowledges may not be an entry at all: it holds no act.
    if (!j.is_object()) continue;
    TrailEvent e;
    e.line = line;
    if (event_of(j, scope, &e, trail)) trail->events.push_back(std::move(e));
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

}  // namespace replaygate::cli
