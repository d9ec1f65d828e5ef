// `replaygate ledger check --ledger L --audit LOG`: does the ledger hold exactly the claims the
// audit log granted? Compares the ledger's rows with the rows the log implies (ledger_trail.h)
// by (key, generation) and lists every difference (docs/ledger.md, "Operator commands").
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/escape.h"
#include "tools/cli/commands.h"
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
        out.push_back({"claim_without_entry", r.key, r.generation, p->second, state,
                       what + " is pruned in the log (this line) but still in the ledger"});
        continue;
      }
      out.push_back({"claim_without_entry", r.key, r.generation, 0, state,
                     what + " has no decision entry in the log" +
                         (r.state == ledger::State::kClaimed
                              ? ": the deciding process stopped between its claim and its audit "
                                "entry, so its line was never printed and the letter was never "
                                "replayed; the key stays held until 'ledger release'"
                              : ": it was recorded in another log, or its entry is lost")});
      continue;
    }
    const bool ledger_released = r.state == ledger::State::kReleased;
    const bool log_released = x->second.released_on != 0;
    if (ledger_released && !log_released) {
      const auto requested = log.pending_releases.find(id);
      if (requested != log.pending_releases.end()) {
        out.push_back({"release_not_logged", r.key, r.generation, requested->second, state,
                       what + " was released (by " + r.released_by +
                           ") after the request on this line, but its 'released' entry is "
                           "missing (the release was interrupted after the ledger changed); "
                           "rebuild would keep the key held"});
      } else {
        out.push_back({"release_without_entry", r.key, r.generation, x->second.granted_on, state,
                       what + " was released by " + r.released_by +
                           " without any release entry in the log (a release not made with "
                           "'replaygate ledger release --audit' on this log)"});
      }
    } else if (!ledger_released && log_released) {
      out.push_back({"release_not_in_ledger", r.key, r.generation, x->second.released_on, state,
                     what + " is released in the log but live in the ledger: the key is held "
                            "(nothing replays it) until it is released again"});
    }
  }
  for (const auto& [id, x] : log.rows) {
    if (rows.count(id) != 0) continue;
    out.push_back({"entry_without_claim", id.first, id.second, x.granted_on, "",
                   "the decision entry grants " + claim_text(id.first, id.second) +
                       " but the ledger has no such claim (deleted, pruned without a 'pruned' "
                       "entry, or another ledger or scope): the key can be replayed again"});
  }
  for (const TrailConflict& c : log.conflicts) {
    out.push_back({"log_conflict", c.key, c.generation, c.line, "", "the entry " + c.message});
  }
  return out;
}

}  // namespace

int run_ledger_check(const LedgerOptions& o) {
  Trail trail;
  if (const std::string why = read_trail(o.audit, o.scope, &trail); !why.empty()) {
    return ledger_usage(why);
  }
  const Replayed log = replay_trail(trail, o.scope);
  return with_ledger(o, [&](ledger::Ledger& l) {
    std::map<std::pair<std::string, std::int64_t>, ledger::Record> rows;
    auto n = l.export_rows([&](const ledger::Record& r) {
      rows.emplace(std::make_pair(r.key, r.generation), r);
      return true;
    });
    if (!n) return ledger_failed(n.error());
    const std::vector<Finding> findings = compare(rows, log);
    // Requests whose release did not happen: the key is still held (nothing is lost), said as a
    // note, not a finding.
    std::vector<std::pair<std::pair<std::string, std::int64_t>, uint64_t>> pending;
    for (const auto& [id, line] : log.pending_releases) {
      const auto r = rows.find(id);
      if (r != rows.end() && r->second.state != ledger::State::kReleased) {
        pending.emplace_back(id, line);
      }
    }
    std::string text;
    if (o.output == "json") {
      nlohmann::json j;
      j["ok"] = findings.empty();
      j["ledger"] = l.describe();
      j["scope"] = l.scope();
      j["audit"] = o.audit;
      j["claims"] = rows.size();
      j["grants"] = log.grants;
      j["unclaimed_creates"] = trail.unclaimed_creates;
      j["findings"] = nlohmann::json::array();
      for (const Finding& f : findings) {
        nlohmann::json e = {
            {"kind", f.kind}, {"key", f.key}, {"generation", f.generation}, {"message", f.message}};
        e["line"] = f.line != 0 ? nlohmann::json(f.line) : nlohmann::json();
        e["state"] = f.state.empty() ? nlohmann::json() : nlohmann::json(f.state);
        j["findings"].push_back(std::move(e));
      }
      j["releases_not_done"] = nlohmann::json::array();
      for (const auto& [id, line] : pending) {
        j["releases_not_done"].push_back(
            {{"key", id.first}, {"generation", id.second}, {"line", line}});
      }
      text = j.dump() + "\n";
    } else {
      const std::string where = o.audit + ":";
      for (const Finding& f : findings) {
        text += (f.line != 0 ? where + std::to_string(f.line) : l.describe()) + ": " + f.kind +
                ": " + escape_control(f.message) + "\n";
      }
      for (const auto& [id, line] : pending) {
        text += where + std::to_string(line) + ": note: the release of " +
                escape_control(claim_text(id.first, id.second)) +
                " was requested but not done (the key is still held); run 'ledger release' "
                "again to release it\n";
      }
      if (trail.unclaimed_creates != 0) {
        text += o.audit + ": note: " + plural(trail.unclaimed_creates, "create decision") +
                " with an idempotency key but no ledger claim (decided without a ledger, or "
                "as a dry run) are not compared\n";
      }
      text += l.describe() + " scope '" + l.scope() +
              "': " + (findings.empty() ? "ok" : "FINDINGS") + ", " + plural(rows.size(), "claim") +
              ", " + plural(log.grants, "grant") + " in " + o.audit + ", " +
              plural(findings.size(), "finding") + "\n";
    }
    if (!print_to_stdout(text, "the check report")) return kExitUsage;
    return findings.empty() ? kExitOk : kExitFindings;
  });
}

}  // namespace replaygate::cli
