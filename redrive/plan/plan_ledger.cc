// A plan as the ledger knows it (plan_ledger.h).
#include "redrive/plan/plan_ledger.h"

#include <chrono>

namespace replaygate::plan {

std::string now_text() {
  return ledger::format_time(
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now()));
}

ledger::PlanRecord plan_record_of(const PlanRead& plan) {
  ledger::PlanRecord r;
  r.digest = plan.digest;
  r.author = plan.header.author;
  r.source = plan.header.source;
  r.table_checksum = plan.header.table_checksum;
  r.letters = plan.summary.letters;
  r.copies = plan.summary.copies;
  r.created_at = ledger::parse_time(plan.header.created_at).value_or(ledger::Time{});
  r.expires_at = ledger::parse_time(plan.header.expires_at).value_or(ledger::Time{});
  return r;
}

std::vector<Approval> approvals_of(const std::vector<ledger::PlanApproval>& approvals) {
  std::vector<Approval> out;
  for (const ledger::PlanApproval& a : approvals) {
    out.push_back({a.digest, a.approver, a.key_id, a.signature, a.reason,
                   ledger::format_time(a.approved_at)});
  }
  return out;
}

PlanVerdict verify_against(ledger::Ledger& l, const PlanRead& plan, const Users& users,
                           const std::optional<std::string>& table_checksum, std::string* error) {
  VerifyInput in;
  in.plan = &plan;
  in.users = &users;
  in.policy_required = kPolicyApprovals;
  in.now = now_text();
  in.table_checksum = table_checksum;
  ledger::Result<std::optional<ledger::PlanRecord>> known = l.plan(plan.digest);
  if (!known) {
    *error = known.error().message;
    return {};
  }
  in.recorded = known.value().has_value();
  if (in.recorded && known.value()->cancelled_at) {
    const ledger::PlanRecord& r = *known.value();
    in.cancelled = "by " + r.cancelled_by + " at " + ledger::format_time(*r.cancelled_at) + ": " +
                   r.cancel_reason;
  }
  ledger::Result<std::vector<ledger::PlanApproval>> approvals = l.plan_approvals(plan.digest);
  if (!approvals) {
    *error = approvals.error().message;
    return {};
  }
  in.approvals = approvals_of(approvals.value());
  return verify_plan(in);
}

}  // namespace replaygate::plan
