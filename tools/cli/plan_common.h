// What the `replaygate plan` subcommands and `decide --plan` share (docs/plans.md): messages,
// the plan's ledger and its audit entries.
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
#include "redrive/plan/letters.h"
#include "redrive/plan/plan.h"
#include "redrive/plan/plan_ledger.h"
#include "runtime/table.h"

namespace replaygate::cli {

// The letter source a dump's letters are planned under when --source is not given.
inline constexpr std::string_view kDumpSource = "dump";

// A record's message id, when its format carries one.
inline std::optional<std::string_view> message_id_of(const inputs::RecordMeta& meta) {
  if (!meta.has_message_id) return std::nullopt;
  return std::string_view(meta.message_id);
}

// The build's note on an idempotency key `replays` planned replays share (LetterSet::write):
// the ledger lets one of them replay, and the reviewer should know before approving.
void note_shared_key(std::string_view key, uint64_t replays);

// Prints "replaygate plan: error: MESSAGE" on stderr and returns 2.
int plan_usage(const std::string& message);
// Prints "replaygate plan: MESSAGE" on stderr and returns `code`.
int plan_say(int code, const std::string& message);

// Opens the ledger at `url` (scope): null with the error printed.
std::unique_ptr<ledger::Ledger> open_plan_ledger(const std::string& url, const std::string& scope,
                                                 bool create);

// Appends `entries` to the audit log: "" or why not.
std::string append_entries(const std::string& log, std::vector<nlohmann::json> entries);
// "" or why the audit log cannot take entries now (opened, locked and verified, then closed): a
// move that publishes before its entry checks first that the entry can be written.
std::string check_audit_log(const std::string& log);

// The audit entry of a plan's ledger record.
audit::PlanEntry recorded_entry(const ledger::PlanRecord& r, const std::string& operator_name,
                                const std::string& scope);

// The test crash and pause points of the plan commands (redrive/test_points.h; read from the
// environment once): plan_recorded, plan_approval_recorded, plan_cancel_recorded.
void test_point(std::string_view step);

// Whether the audit log holds a plan entry of `act` for `digest` (and, when not empty, of
// `approver`): how a rerun finds the entry a crash after the ledger call did not write. A log that
// does not exist holds none; *error is set when the log cannot be read.
bool plan_entry_logged(const std::string& log, std::string_view act, std::string_view digest,
                       std::string_view approver, std::string* error);

// Records the plan in the ledger when it is not yet recorded, then its plan_recorded audit entry
// (also when an earlier run recorded the plan and died before its entry, which a plan without
// approvals checks): "" or why not.
std::string ensure_recorded(ledger::Ledger& l, const plan::PlanRead& plan,
                            const std::string& operator_name, const std::string& audit);

}  // namespace replaygate::cli
