// `replaygate ledger check --ledger L --audit LOG [--audit LOG2 ...]`: does the ledger hold exactly
// the claims the audit logs (one per gate) granted, and does each log still hold the checkpoint the
// ledger anchors it at? Compares the ledger's rows with the rows the logs imply (ledger_trail.h)
// by (key, generation) and lists every difference (docs/ledger.md, "Operator commands").
#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "audit/audit_log.h"
#include "common/escape.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/ledger_cmd.h"
#include "tools/cli/ledger_trail.h"
#include "tools/cli/output.h"

namespace replaygate::cli {
namespace {

struct Finding {
  std::string kind;  // claim_without_entry, entry_without_claim, release_without_entry, ...
  std::string key;
  std::int64_t generation = 0;
  uint64_t line = 0;  // the log line it concerns (0: a ledger row only)
  size_t log = 0;     // the log it concerns (an index of --audit)
  std::string state;  // the ledger row's state ("" when the ledger has no row)
  std::string message;
};

std::string claim_text(const std::string& key, std::int64_t generation) {
  return "key '" + key + "' generation " + std::to_string(generation);
}

// Every difference between the ledger's rows and the log's.
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

// How far a claimant's clock may be from the ledger's before its claim time is reported.
constexpr auto kClockTolerance = std::chrono::minutes(10);

std::string span_text(ledger::Time a, ledger::Time b) {
  const auto d = std::chrono::duration_cast<std::chrono::seconds>(a > b ? a - b : b - a);
  const auto days = d.count() / 86400;
  return days >= 2 ? std::to_string(days) + " days" : std::to_string(d.count()) + " s";
}

// Rows whose claim time (the claimant's clock) is far from the time the ledger recorded them (its
// own clock, which prune ages rows by), and rows the ledger recorded in this host's future.
void check_clocks(const std::map<std::pair<std::string, std::int64_t>, ledger::Record>& rows,
                  std::vector<Finding>* out) {
  const ledger::Time now =
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now());
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

// An anchor (the last line a signing gate recorded for its log) checked against the logs
// given: the log it names (by audit::anchor_name()) must still hold that line; an anchor of
// a log not given is checked against any given log that holds it (a copy), else only noted.
struct AnchorSeen {
  ledger::AuditAnchor anchor;
  bool given = false;  // a given log is the one it names, or holds its line
};

// "" or why the logs cannot be read again (they were read and verified once already).
std::string check_anchors(const std::vector<ledger::AuditAnchor>& anchors,
                          const std::vector<std::string>& paths, std::vector<Finding>* findings,
                          std::vector<AnchorSeen>* seen) {
  std::vector<std::string> names;
  for (const std::string& path : paths) names.push_back(audit::anchor_name(path));
  std::vector<bool> held(anchors.size() * paths.size(), false);
  for (size_t i = 0; i < paths.size() && !anchors.empty(); ++i) {
    std::string bytes, error;
    if (!read_whole_file(paths[i], size_t{1} << 36, &bytes, &error)) return error;
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
  return "";
}

}  // namespace

int run_ledger_check(const LedgerOptions& o) {
  std::vector<Trail> trails(o.audits.size());
  for (size_t i = 0; i < o.audits.size(); ++i) {
    if (const std::string why = read_trail(o.audits[i], o.scope, &trails[i]); !why.empty()) {
      return ledger_usage(why);
    }
  }
  const Trail trail = merge_trails(trails);
  const Replayed log = replay_trail(trail, o.scope);
  std::string audit_names;
  for (const std::string& a : o.audits) audit_names += (audit_names.empty() ? "" : ", ") + a;
  return with_ledger(o, [&](ledger::Ledger& l) {
    std::map<std::pair<std::string, std::int64_t>, ledger::Record> rows;
    auto n = l.export_rows([&](const ledger::Record& r) {
      rows.emplace(std::make_pair(r.key, r.generation), r);
      return true;
    });
    if (!n) return ledger_failed(n.error());
    std::vector<Finding> findings = compare(rows, log);
    check_clocks(rows, &findings);
    auto anchors = l.anchors();
    if (!anchors) return ledger_failed(anchors.error());
    std::vector<AnchorSeen> anchor_seen;
    if (const std::string why = check_anchors(*anchors, o.audits, &findings, &anchor_seen);
        !why.empty()) {
      return ledger_usage(why);
    }
    // Requests whose release did not happen: the key is still held (nothing is lost), said as a
    // note, not a finding.
    std::vector<std::pair<std::pair<std::string, std::int64_t>, TrailPlace>> pending;
    for (const auto& [id, place] : log.pending_releases) {
      const auto r = rows.find(id);
      if (r != rows.end() && r->second.state != ledger::State::kReleased) {
        pending.emplace_back(id, place);
      }
    }
    std::string text;
    if (o.output == "json") {
      nlohmann::json j;
      j["ok"] = findings.empty();
      j["ledger"] = l.describe();
      j["scope"] = l.scope();
      j["audit"] = o.audits.front();  // the first log; every one in `audits`
      j["audits"] = o.audits;
      j["claims"] = rows.size();
      j["grants"] = log.grants;
      j["unclaimed_creates"] = trail.unclaimed_creates;
      j["findings"] = nlohmann::json::array();
      for (const Finding& f : findings) {
        nlohmann::json e = {
            {"kind", f.kind}, {"key", f.key}, {"generation", f.generation}, {"message", f.message}};
        e["line"] = f.line != 0 ? nlohmann::json(f.line) : nlohmann::json();
        e["log"] = f.line != 0 || f.kind == "anchor_missing" ? nlohmann::json(o.audits[f.log])
                                                             : nlohmann::json();
        e["state"] = f.state.empty() ? nlohmann::json() : nlohmann::json(f.state);
        j["findings"].push_back(std::move(e));
      }
      j["releases_not_done"] = nlohmann::json::array();
      for (const auto& [id, place] : pending) {
        j["releases_not_done"].push_back({{"key", id.first},
                                          {"generation", id.second},
                                          {"log", o.audits[place.log]},
                                          {"line", place.line}});
      }
      j["anchors"] = nlohmann::json::array();
      for (const AnchorSeen& a : anchor_seen) {
        j["anchors"].push_back({{"log", a.anchor.log},
                                {"seq", a.anchor.seq},
                                {"head", a.anchor.head},
                                {"recorded_at", ledger::format_time(a.anchor.recorded_at)},
                                {"checked", a.given}});
      }
      text = j.dump() + "\n";
    } else {
      for (const Finding& f : findings) {
        const std::string where = f.line != 0 ? o.audits[f.log] + ":" + std::to_string(f.line)
                                  : f.kind == "anchor_missing" ? o.audits[f.log]
                                                               : l.describe();
        text += where + ": " + f.kind + ": " + escape_control(f.message) + "\n";
      }
      for (const AnchorSeen& a : anchor_seen) {
        if (a.given) continue;
        text += l.describe() + ": note: the anchor of " + escape_control(a.anchor.log) +
                " (checkpoint " + std::to_string(a.anchor.seq) +
                ") was not checked: that log was not given (--audit)\n";
      }
      for (const auto& [id, place] : pending) {
        text += o.audits[place.log] + ":" + std::to_string(place.line) + ": note: the release of " +
                escape_control(claim_text(id.first, id.second)) +
                " was requested but not done (the key is still held); run 'ledger release' "
                "again to release it\n";
      }
      if (trail.unclaimed_creates != 0) {
        text += audit_names + ": note: " + plural(trail.unclaimed_creates, "create decision") +
                " with an idempotency key but no ledger claim (decided without a ledger, or "
                "as a dry run) are not compared\n";
      }
      text += l.describe() + " scope '" + l.scope() +
              "': " + (findings.empty() ? "ok" : "FINDINGS") + ", " + plural(rows.size(), "claim") +
              ", " + plural(log.grants, "grant") + " in " + audit_names + ", " +
              plural(findings.size(), "finding") + "\n";
    }
    if (!print_to_stdout(text, "the check report")) return kExitUsage;
    return findings.empty() ? kExitOk : kExitFindings;
  });
}

}  // namespace replaygate::cli
