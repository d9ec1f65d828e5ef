// `replaygate ledger check --ledger L --audit LOG [--audit LOG2 ...]`: does the ledger hold exactly
// the claims the audit logs (one per gate) granted, and does each log still hold the checkpoint the
// ledger anchors it at? The comparison is review/ledger_check.h's; this file reads the ledger and
// the logs, renders the findings and owns the messages and exit codes (docs/ledger.md).
#include "review/ledger_check.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/escape.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/ledger_cmd.h"
#include "tools/cli/output.h"

namespace replaygate::cli {

using review::AnchorSeen;
using review::claim_text;
using review::Finding;
using review::Replayed;
using review::Trail;
using review::TrailPlace;

int run_ledger_check(const LedgerOptions& o) {
  std::vector<Trail> trails(o.audits.size());
  for (size_t i = 0; i < o.audits.size(); ++i) {
    // The whole log, as `audit verify` reads it (an append reads it whole too).
    std::string bytes, error;
    if (!read_whole_file(o.audits[i], size_t{1} << 36, &bytes, &error)) return ledger_usage(error);
    if (const std::string why = review::read_trail(bytes, o.audits[i], o.scope, &trails[i]);
        !why.empty()) {
      return ledger_usage(why);
    }
  }
  const Trail trail = review::merge_trails(trails);
  const Replayed log = review::replay_trail(trail, o.scope);
  std::string audit_names;
  for (const std::string& a : o.audits) audit_names += (audit_names.empty() ? "" : ", ") + a;
  return with_ledger(o, [&](ledger::Ledger& l) {
    std::map<std::pair<std::string, std::int64_t>, ledger::Record> rows;
    auto n = l.export_rows([&](const ledger::Record& r) {
      rows.emplace(std::make_pair(r.key, r.generation), r);
      return true;
    });
    if (!n) return ledger_failed(n.error());
    std::vector<Finding> findings = review::compare(rows, log);
    review::check_clocks(
        rows,
        std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now()),
        &findings);
    auto anchors = l.anchors();
    if (!anchors) return ledger_failed(anchors.error());
    // The logs are read again (they were read and verified once already) only to check anchors.
    std::vector<std::string> logs(o.audits.size());
    for (size_t i = 0; i < o.audits.size() && !anchors->empty(); ++i) {
      std::string error;
      if (!read_whole_file(o.audits[i], size_t{1} << 36, &logs[i], &error)) {
        return ledger_usage(error);
      }
    }
    std::vector<AnchorSeen> anchor_seen;
    review::check_anchors(*anchors, o.audits, logs, &findings, &anchor_seen);
    // The plan tables against the logs' plan entries.
    auto plans = l.plans();
    if (!plans) return ledger_failed(plans.error());
    std::vector<review::LedgerPlan> held;
    for (const ledger::PlanRecord& p : *plans) {
      review::LedgerPlan lp{p, {}, {}};
      auto approvals = l.plan_approvals(p.digest);
      if (!approvals) return ledger_failed(approvals.error());
      lp.approvals = std::move(*approvals);
      auto rows = l.export_plan_progress(p.digest, [&lp](const ledger::PlanLetterProgress& r) {
        lp.progress.push_back(r);
        return true;
      });
      if (!rows) return ledger_failed(rows.error());
      held.push_back(std::move(lp));
    }
    for (Finding& f : review::compare_plans(held, review::replay_plans(trail))) {
      findings.push_back(std::move(f));
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
      j["plans"] = held.size();
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
