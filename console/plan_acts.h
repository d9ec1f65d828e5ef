// The console's acts on a plan (docs/console.md, docs/plans.md): a cancel as `plan cancel` does
// it: the ledger's cancel_plan, then its `plan_cancelled` audit entry (the ledger is the truth,
// the entry its record). A library function so the CLI and the console share one definition.
//
// In: an open ledger, the audit log's path, a plan digest, who cancels and why (both checked by
// audit::operator_name_problem). Out: the cancelled record, or why not: `refused` when the ledger
// refuses (not recorded, cancelled already), else an I/O problem.
//
// Threads: the ledger's (any); the audit log is locked per append.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "ledger/ledger.h"

namespace replaygate::console {

struct CancelOutcome {
  bool ok = false;
  bool refused = false;       // the input or the ledger refused it: nothing changed
  std::string message;        // when !ok
  ledger::PlanRecord record;  // when ok
};

// `test_point` (tests: a kill -9 at a step) is called with "console_plan_cancelled" after the
// ledger's cancel and before its audit entry.
CancelOutcome cancel_plan(ledger::Ledger& ledger, const std::string& audit_log,
                          const std::string& digest, const std::string& operator_name,
                          const std::string& reason,
                          const std::function<void(std::string_view)>& test_point = {});

}  // namespace replaygate::console
