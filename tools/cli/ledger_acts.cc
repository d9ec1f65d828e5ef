// The audited operator acts on the replay ledger (docs/ledger.md, "Operator commands"):
// `ledger release` (one more replay of a key), `ledger prune` (delete old rows, which re-opens
// replay for their keys) and `ledger migrate` (bring an older schema version to this build's).
//
// Write-ahead order, for both: (1) a "..._requested" ledger entry is appended to the audit log
// (fsynced) before the ledger changes; (2) the ledger changes in one transaction; (3) the result
// ("released", one "pruned" per row) is appended. A crash after (1) leaves a request without a
// result: the ledger may or may not have changed, and `ledger check` says which. A crash after
// (2) leaves a change whose result entry is missing: `ledger check` reports it (a released
// claim without its 'released' entry; a pruned grant without its 'pruned' entry), and `rebuild`
// does not honour it (the key stays held: fail closed). Nothing is changed without a request on
// record, and nothing the ledger did goes unreported.
#include <cstdio>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "redrive/test_points.h"
#include "tools/cli/commands.h"
#include "tools/cli/ledger_cmd.h"
#include "tools/cli/options.h"

namespace replaygate::cli {
namespace {

// The checks both acts make before anything is opened: "" or the usage message.
std::string check_actor(const LedgerOptions& o, bool reason_required,
                        const char* reason_why = "why one more replay is allowed") {
  if (!o.operator_given) return "--operator NAME is required (who acts is recorded in the log)";
  if (const std::string why = operator_error(o.operator_name); !why.empty()) return why;
  if (reason_required && !o.reason_given) {
    return "--reason TEXT is required (" + std::string(reason_why) + " is recorded in the log)";
  }
  if (o.reason_given) {
    if (const std::string why = operator_name_problem(o.reason); !why.empty()) {
      return "--reason " + why + " (e.g. --reason 'payment provider confirmed no charge')";
    }
  }
  // The ledger keeps at most 4096 bytes of each (ledger.h): refuse before anything is written.
  if (o.operator_name.size() > 4096) return "--operator is longer than 4096 bytes";
  if (o.reason.size() > 4096) return "--reason is longer than 4096 bytes";
  if (o.audit.empty()) return "--audit LOG is required (the act is recorded there)";
  if (o.audit == "-") return "--audit - is standard input or output, never an audit log";
  return "";
}

// Appends `entries` to the log; prints what the append removed and, on failure, the error.
bool append(const std::string& log, std::vector<nlohmann::json> entries, std::string* error) {
  const audit::AppendResult appended = audit::append_batch(log, std::move(entries));
  std::fputs(audit::removed_tail_note(log, appended).c_str(), stderr);
  if (!appended.ok) *error = appended.error;
  return appended.ok;
}

audit::LedgerEntry entry(const LedgerOptions& o, const ledger::Ledger& l, const char* act) {
  audit::LedgerEntry e;
  e.operator_name = o.operator_name;
  e.act = act;
  e.scope = l.scope();
  return e;
}

}  // namespace

int run_ledger_release(const LedgerOptions& o) {
  if (const std::string why = check_actor(o, true); !why.empty()) return ledger_usage(why);
  return with_ledger(o, [&](ledger::Ledger& l) {
    // Refuse a key with nothing to release before anything is written.
    ledger::Result<std::vector<std::optional<ledger::Record>>> live = l.lookup({o.key});
    if (!live) return ledger_failed(live.error());
    if (!live->at(0)) {
      return ledger_usage("key '" + o.key + "' has no live claim in scope '" + l.scope() + "' of " +
                          l.describe() +
                          " (never claimed, already released or pruned): nothing to release; "
                          "see 'replaygate ledger show'");
    }
    audit::LedgerEntry requested = entry(o, l, "release_requested");
    requested.idempotency_key = o.key;
    requested.claim_generation = live->at(0)->generation;
    requested.reason = o.reason;
    std::string error;
    if (!append(o.audit, {audit::to_json(requested)}, &error)) {
      return ledger_usage(error + "; the key was NOT released");
    }
    ledger::Result<ledger::Record> released = l.release(o.key, o.operator_name, o.reason);
    if (!released) {
      ledger_failed(released.error());
      std::fprintf(stderr,
                   "replaygate ledger: the key was NOT released; %s records the request "
                   "('release_requested'), which 'ledger check' lists as not done\n",
                   o.audit.c_str());
      return kExitUsage;
    }
    audit::LedgerEntry done = entry(o, l, "released");
    done.idempotency_key = o.key;
    done.claim_generation = released->generation;
    done.reason = o.reason;
    if (!append(o.audit, {audit::to_json(done)}, &error)) {
      std::printf("%s\n", row_json(*released).dump().c_str());
      return ledger_usage(error +
                          "; the key IS released (above), but its 'released' entry is "
                          "missing: 'ledger check' reports it");
    }
    std::printf("%s\n", row_json(*released).dump().c_str());
    std::fprintf(stderr,
                 "replaygate ledger: released key '%s' generation %lld in scope '%s': one more "
                 "replay is allowed (recorded in %s)\n",
                 o.key.c_str(), static_cast<long long>(released->generation), l.scope().c_str(),
                 o.audit.c_str());
    return kExitOk;
  });
}

int run_ledger_prune(const LedgerOptions& o) {
  const std::optional<std::chrono::microseconds> age = ledger::parse_duration(o.older_than);
  if (!age) {
    return ledger_usage("--older-than '" + o.older_than +
                        "' is not a duration: write a whole number and one unit, d (days), h, "
                        "m or s, e.g. --older-than 30d, 12h or 90m");
  }
  if (!o.dry_run) {
    if (const std::string why = check_actor(o, false); !why.empty()) return ledger_usage(why);
  }
  // The operator's request, by this host's clock; the ledger applies it by its own clock
  // (Ledger::prune) and the 'pruned' entries carry the cutoff it used.
  const std::string requested_text = ledger::format_time(
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now()) -
      *age);
  return with_ledger(o, [&](ledger::Ledger& l) {
    if (o.dry_run) {
      ledger::Result<ledger::Pruned> would = l.prune(*age, true);
      if (!would) return ledger_failed(would.error());
      for (const ledger::Record& r : would->rows) std::printf("%s\n", row_json(r).dump().c_str());
      std::fprintf(stderr,
                   "replaygate ledger: dry run: would prune %zu row(s) the ledger recorded before "
                   "%s (its own clock) in scope '%s' (re-opening replay for their keys); nothing "
                   "was changed\n",
                   would->rows.size(), ledger::format_time(would->cutoff).c_str(),
                   l.scope().c_str());
      return kExitOk;
    }
    audit::LedgerEntry requested = entry(o, l, "prune_requested");
    requested.cutoff = requested_text;
    if (o.reason_given) requested.reason = o.reason;
    std::string error;
    if (!append(o.audit, {audit::to_json(requested)}, &error)) {
      return ledger_usage(error + "; nothing was pruned");
    }
    ledger::Result<ledger::Pruned> pruned = l.prune(*age);
    if (!pruned) {
      ledger_failed(pruned.error());
      std::fprintf(stderr, "replaygate ledger: nothing was pruned (%s records the request)\n",
                   o.audit.c_str());
      return kExitUsage;
    }
    std::vector<nlohmann::json> entries;
    const std::string cutoff_text = ledger::format_time(pruned->cutoff);
    entries.reserve(pruned->rows.size());
    for (const ledger::Record& r : pruned->rows) {
      std::printf("%s\n", row_json(r).dump().c_str());
      audit::LedgerEntry e = entry(o, l, "pruned");
      e.idempotency_key = r.key;
      e.claim_generation = r.generation;
      e.cutoff = cutoff_text;
      e.state = std::string(ledger::state_name(r.state));
      entries.push_back(audit::to_json(e));
    }
    if (!append(o.audit, std::move(entries), &error)) {
      return ledger_usage(error + "; the " + std::to_string(pruned->rows.size()) +
                          " row(s) above ARE pruned, but their 'pruned' entries are missing: "
                          "'ledger check' reports them");
    }
    std::fprintf(stderr,
                 "replaygate ledger: pruned %zu row(s) the ledger recorded before %s (its own "
                 "clock) in scope '%s': their keys can be replayed again (recorded in %s)\n",
                 pruned->rows.size(), cutoff_text.c_str(), l.scope().c_str(), o.audit.c_str());
    return kExitOk;
  });
}

// Write-ahead as the other acts: 'ledger_migrate_requested', the migration (one transaction:
// the ledger is at the old version or the new one), 'ledger_migrated'. A crash between the two
// entries leaves a request without its result; a rerun migrates (or finds it done) and writes both.
int run_ledger_migrate(const LedgerOptions& o) {
  if (const std::string why = check_actor(o, true, "why the ledger is migrated now");
      !why.empty()) {
    return ledger_usage(why);
  }
  redrive::TestPoints points;
  if (const std::string why = points.from_environment(); !why.empty()) return ledger_usage(why);
  audit::LedgerEntry requested;
  requested.operator_name = o.operator_name;
  requested.act = "ledger_migrate_requested";
  requested.scope = o.scope;
  requested.reason = o.reason;
  std::string error;
  if (!append(o.audit, {audit::to_json(requested)}, &error)) {
    return ledger_usage(error + "; the ledger was NOT migrated");
  }
  points.at("migrate_requested");
  ledger::Options lo;
  lo.scope = o.scope;
  lo.test_point = [&points](std::string_view step) { points.at(step); };
  const ledger::Result<ledger::Migrated> migrated = ledger::migrate_ledger(o.ledger, lo);
  if (!migrated) {
    ledger_failed(migrated.error());
    std::fprintf(stderr,
                 "replaygate ledger: the ledger was NOT migrated; %s records the request "
                 "('ledger_migrate_requested')\n",
                 o.audit.c_str());
    return kExitUsage;
  }
  points.at("migrated");
  const std::string change =
      "schema version " + std::to_string(migrated->from) + " -> " + std::to_string(migrated->to);
  audit::LedgerEntry done = requested;
  done.act = "ledger_migrated";
  done.state = change;
  const bool recorded = append(o.audit, {audit::to_json(done)}, &error);
  const nlohmann::json result = {
      {"ledger", o.ledger}, {"from", migrated->from}, {"to", migrated->to}};
  std::printf("%s\n", result.dump().c_str());
  if (!recorded) {
    return ledger_usage(error + "; the ledger IS migrated (" + change +
                        "), but its 'ledger_migrated' entry is missing");
  }
  if (migrated->from == migrated->to) {
    std::fprintf(stderr,
                 "replaygate ledger: already at version %d: nothing to do (recorded in %s)\n",
                 migrated->to, o.audit.c_str());
  } else {
    std::fprintf(stderr,
                 "replaygate ledger: migrated the ledger from schema version %d to %d, every row "
                 "kept (recorded in %s)\n",
                 migrated->from, migrated->to, o.audit.c_str());
  }
  return kExitOk;
}

}  // namespace replaygate::cli
