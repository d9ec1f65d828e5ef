// What every run of a plan checks and says, on a dump (`decide --plan`) or on a live gate (the
// plan guard, redrive/plan_guard.h): the plan opened for a run, its refusals, the guard's reasons
// and the `plan_progress` audit entry (docs/plans.md).
//
// In: the plan file's and the users file's paths, an open ledger, the table's checksum, the
// source the run reads. Out: the plan read back and indexed by identity and message id, or the
// exact refusal (the caller prefixes "replaygate WHO: refused: " and adds "; nothing acted on").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ledger/ledger.h"
#include "redrive/plan/plan.h"

namespace replaygate::plan {

// A plan's letters for a run: by identity, and the identity of each planned message id.
struct PlanIndex {
  std::unordered_map<std::string, PlanLetter> letters;
  std::unordered_map<std::string, std::string> by_message_id;
};

struct RunCheck {
  std::string plan_path, users_path;
  std::string table_checksum;  // the table the run decides with
  // The source the run reads (a gate: rabbitmq_source(vhost, DLQ)); nullopt: not checked (a
  // dump is named by --source at build time). `source_what` says what it is, for the refusal.
  std::optional<std::string> source;
  std::string source_what;
};

// Reads the plan into *read and *index, then checks, in this order: the file reads as a plan, its
// content hashes to its digest, its source is the run's, the table is the plan's, the users file
// reads, and the ledger knows the plan, not cancelled, not expired, with the approvals it needs
// (verify_against). "" when it may run, else the refusal.
std::string open_for_run(const RunCheck& check, ledger::Ledger& l, PlanRead* read,
                         PlanIndex* index);

// "" while the ledger knows the plan and it is not cancelled; else why a run must stop (a ledger
// failure too).
std::string stop_reason(ledger::Ledger& l, const std::string& digest);

// The guard's reasons, for its held letters.
std::string changed_reason(std::string_view message_id);
std::string duplicate_reason(int64_t copy, int64_t count);
std::string mismatch_reason(const PlanDecision& now, const PlanDecision& planned);

// The `plan_progress` audit entry of one progress row (the increments it added).
nlohmann::json progress_entry(const ledger::PlanLetterProgress& p, const std::string& operator_name,
                              const std::string& scope);

}  // namespace replaygate::plan
