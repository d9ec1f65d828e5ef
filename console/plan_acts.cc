// A plan's cancel, ledger then audit entry (console/plan_acts.h).
#include "console/plan_acts.h"

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "audit/operator_name.h"

namespace replaygate::console {

CancelOutcome cancel_plan(ledger::Ledger& ledger, const std::string& audit_log,
                          const std::string& digest, const std::string& operator_name,
                          const std::string& reason,
                          const std::function<void(std::string_view)>& test_point) {
  CancelOutcome out;
  if (const std::string why = audit::operator_name_problem(reason); !why.empty()) {
    out.refused = true;
    out.message = "the reason " + why;
    return out;
  }
  if (reason.size() > 4096) {
    out.refused = true;
    out.message = "the reason is longer than 4096 bytes";
    return out;
  }
  ledger::Result<ledger::PlanRecord> cancelled = ledger.cancel_plan(digest, operator_name, reason);
  if (!cancelled) {
    out.refused = cancelled.error().code != ledger::ErrorCode::kUnavailable &&
                  cancelled.error().code != ledger::ErrorCode::kInternal;
    out.message = cancelled.error().message;
    return out;
  }
  out.record = cancelled.value();
  if (test_point) test_point("console_plan_cancelled");
  audit::PlanEntry e;
  e.operator_name = operator_name;
  e.act = "plan_cancelled";
  e.scope = ledger.scope();
  e.fields = {
      {"digest", out.record.digest},
      {"cancelled_by", out.record.cancelled_by},
      {"cancel_reason", out.record.cancel_reason},
      {"cancelled_at", ledger::format_time(out.record.cancelled_at.value_or(ledger::Time{}))}};
  const audit::AppendResult appended = audit::append(audit_log, audit::to_json(e));
  if (!appended.ok) {
    out.message = appended.error +
                  "; the plan IS cancelled in the ledger, but its 'plan_cancelled' entry is "
                  "missing: 'ledger check' reports it";
    return out;
  }
  out.ok = true;
  return out;
}

}  // namespace replaygate::console
