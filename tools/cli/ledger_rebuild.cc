// `replaygate ledger rebuild --from-audit LOG --ledger L`: re-creates a lost ledger from the audit
// log (docs/ledger.md, "Operator commands"): every claim the log granted, released as the log's
// 'released' entries say and without the rows its 'pruned' entries deleted, restored in one
// transaction into a scope that holds no row (Ledger::restore); then the plan tables as the log's
// plan entries say (review::restore_plans, with the ledger's clock pinned to the log's times).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/escape.h"
#include "review/ledger_trail.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/ledger_cmd.h"
#include "tools/cli/output.h"

namespace replaygate::cli {
int run_ledger_rebuild(const LedgerOptions& o) {
  review::Trail trail;
  std::string bytes, error;
  if (!read_whole_file(o.from_audit, size_t{1} << 36, &bytes, &error)) {
    return ledger_usage(error + "; nothing was rebuilt");
  }
  if (const std::string why = review::read_trail(bytes, o.from_audit, o.scope, &trail);
      !why.empty()) {
    return ledger_usage(why + "; nothing was rebuilt");
  }
  const review::Replayed log = review::replay_trail(trail, o.scope);
  const review::ReplayedPlans plan_log = review::replay_plans(trail);
  // The ledger's clock: the log's time while plans are restored, else this host's.
  auto pinned = std::make_shared<std::optional<ledger::Time>>();
  const auto clock = [pinned]() -> ledger::Time {
    if (*pinned) return **pinned;
    return std::chrono::time_point_cast<std::chrono::microseconds>(
        std::chrono::system_clock::now());
  };
  return with_ledger(
      o,
      [&](ledger::Ledger& l) {
        // Said before anything is written; restore() checks it again inside its transaction.
        auto stats = l.stats();
        if (!stats) return ledger_failed(stats.error());
        const std::int64_t held =
            stats->claimed + stats->recorded + stats->confirmed + stats->released;
        if (held != 0) {
          return ledger_usage("refusing to rebuild into " + l.describe() + ": scope '" + l.scope() +
                              "' already holds " + plural(static_cast<uint64_t>(held), "row") +
                              "; rebuild fills an empty ledger only (a new file, or another "
                              "--ledger-scope), so that no claim is overwritten");
        }
        auto plans = l.plans();
        if (!plans) return ledger_failed(plans.error());
        if (!plans->empty()) {
          return ledger_usage("refusing to rebuild into " + l.describe() + ": scope '" + l.scope() +
                              "' already holds " + plural(plans->size(), "plan") +
                              "; rebuild fills an empty ledger only");
        }
        std::vector<ledger::Record> rows;
        rows.reserve(log.rows.size());
        for (const auto& [id, x] : log.rows) rows.push_back(x.row);
        auto restored = l.restore(rows);
        if (!restored) return ledger_failed(restored.error());
        const ledger::Status plans_restored =
            review::restore_plans(l, plan_log, [pinned](ledger::Time t) { *pinned = t; });
        pinned->reset();
        if (!plans_restored) {
          ledger_failed(plans_restored.error());
          std::fprintf(stderr,
                       "replaygate ledger: the claims ARE restored, the plans only in part: "
                       "rebuild again into an empty ledger\n");
          return kExitUsage;
        }
        for (const review::TrailConflict& c : plan_log.conflicts) {
          std::fprintf(stderr, "%s:%llu: log_conflict: %s (not restored)\n", o.from_audit.c_str(),
                       static_cast<unsigned long long>(c.line), escape_control(c.message).c_str());
        }
        for (const review::TrailConflict& c : log.conflicts) {
          std::fprintf(stderr, "%s:%llu: log_conflict: the entry %s (not restored)\n",
                       o.from_audit.c_str(), static_cast<unsigned long long>(c.line),
                       escape_control(c.message).c_str());
        }
        for (const auto& [id, place] : log.pending_releases) {
          std::fprintf(stderr,
                       "%s:%llu: note: the release of key '%s' generation %lld has no 'released' "
                       "entry: not honoured, the key stays held\n",
                       o.from_audit.c_str(), static_cast<unsigned long long>(place.line),
                       escape_control(id.first).c_str(), static_cast<long long>(id.second));
        }
        if (trail.unclaimed_creates != 0) {
          std::fprintf(
              stderr,
              "%s: note: %s with an idempotency key but no ledger claim (decided without a "
              "ledger, or as a dry run) were not claimed\n",
              o.from_audit.c_str(), plural(trail.unclaimed_creates, "create decision").c_str());
        }
        std::fprintf(
            stderr, "replaygate ledger: rebuilt %s and %s in scope '%s' of %s from %s (%s)\n",
            plural(static_cast<uint64_t>(*restored), "claim").c_str(),
            plural(plan_log.plans.size(), "plan").c_str(), l.scope().c_str(), l.describe().c_str(),
            o.from_audit.c_str(), plural(log.grants, "grant").c_str());
        return log.conflicts.empty() && plan_log.conflicts.empty() ? kExitOk : kExitFindings;
      },
      /*create=*/true, clock);
}

}  // namespace replaygate::cli
