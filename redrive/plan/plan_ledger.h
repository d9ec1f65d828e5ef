// A plan as the ledger knows it (docs/plans.md): its record, its approvals, and the whole check a
// run or `plan verify` makes before acting.
//
// In: a plan file read back (PlanRead), an open ledger, the users file, the table's checksum.
// Out: the ledger's record of the plan, and a PlanVerdict (approval.h) saying whether it may run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledger/ledger.h"
#include "redrive/plan/approval.h"
#include "redrive/plan/plan.h"

namespace replaygate::plan {

// What the policy asks of every plan: one approval besides the author's (the policy language has
// no setting for it yet; `plan build --approvals N` may only raise it).
inline constexpr int64_t kPolicyApprovals = 1;

// The current time as the ledger writes it (RFC 3339 UTC with microseconds).
std::string now_text();

// The plan's ledger record from its header and summary.
ledger::PlanRecord plan_record_of(const PlanRead& plan);

// The ledger's approvals as the plan library's.
std::vector<Approval> approvals_of(const std::vector<ledger::PlanApproval>& approvals);

// The whole verification of a plan for a run or `plan verify`: the file (already read), the
// ledger's record and approvals, the users file, the table's checksum when known. A ledger
// failure: an empty verdict with *error set.
PlanVerdict verify_against(ledger::Ledger& l, const PlanRead& plan, const Users& users,
                           const std::optional<std::string>& table_checksum, std::string* error);

}  // namespace replaygate::plan
