// What the `replaygate plan` subcommands and `decide --plan` share (docs/plans.md): a dump's
// records as plan letters, the verb -> action rule, the plan's ledger and its audit entries.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/entry.h"
#include "inputs/records.h"
#include "ledger/ledger.h"
#include "redrive/plan/approval.h"
#include "redrive/plan/plan.h"
#include "runtime/table.h"

namespace replaygate::cli {

// What the policy asks of every plan: one approval besides the author's (the policy language has
// no setting for it yet; `plan build --approvals N` may only raise it).
inline constexpr int64_t kPolicyApprovals = 1;

// The letter source a dump's letters are planned under when --source is not given.
inline constexpr std::string_view kDumpSource = "dump";

// What a dump letter's verb does (as the gate's default map, redrive/redrive.h ActionMap): a
// create verb republishes, the default verb holds, another none verb parks; a read or copy verb
// has no action ("none").
std::string action_of(const Table& table, uint32_t verb);

// One readable record of a dump as a plan letter: identity, message id, idempotency key, body
// digest (of the record's bytes), the decision, and where the first copy was (`line`).
plan::PlanLetter letter_of(const Table& table, const Input& input, const inputs::RecordMeta& meta,
                           std::string_view record, const std::string& source,
                           const Decision& decision, uint64_t line);

// The current time as the ledger writes it.
std::string now_text();

// Prints "replaygate plan: error: MESSAGE" on stderr and returns 2.
int plan_usage(const std::string& message);
// Prints "replaygate plan: MESSAGE" on stderr and returns `code`.
int plan_say(int code, const std::string& message);

// Opens the ledger at `url` (scope): null with the error printed.
std::unique_ptr<ledger::Ledger> open_plan_ledger(const std::string& url, const std::string& scope,
                                                 bool create);

// Appends `entries` to the audit log: "" or why not.
std::string append_entries(const std::string& log, std::vector<nlohmann::json> entries);

// The plan's ledger record from its header and summary, and its audit entry.
ledger::PlanRecord plan_record_of(const plan::PlanRead& plan);
audit::PlanEntry recorded_entry(const ledger::PlanRecord& r, const std::string& operator_name,
                                const std::string& scope);

// Records the plan in the ledger when it is not yet recorded (and then its plan_recorded audit
// entry): "" or why not.
std::string ensure_recorded(ledger::Ledger& l, const plan::PlanRead& plan,
                            const std::string& operator_name, const std::string& audit);

// The ledger's approvals as the plan library's.
std::vector<plan::Approval> approvals_of(const std::vector<ledger::PlanApproval>& approvals);

// The whole verification of a plan for a run or `plan verify`: the file (already read), the
// ledger's record and approvals, the users file, the table's checksum when known.
plan::PlanVerdict verify_against(ledger::Ledger& l, const plan::PlanRead& plan,
                                 const plan::Users& users,
                                 const std::optional<std::string>& table_checksum,
                                 std::string* error);

}  // namespace replaygate::cli
