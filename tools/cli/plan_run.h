// `replaygate decide --plan PLAN` on a dump (plan_run.cc, docs/plans.md).
#pragma once

#include <string>

#include "inputs/formats.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {

struct PlanRunOptions {
  std::string plan, users, input = "-", policy, table;
  inputs::InputFormatOptions format;
  TrustFlags trust;
  std::string ledger, scope = "default", audit, operator_name;
};

// Acts on the plan's letters of the dump (plan_run.cc's header comment). Exit: 0 every planned
// letter as planned, 1 some held by the plan guard, 2 refused or stopped (nothing or only the
// lines printed acted on).
int run_decide_plan(const PlanRunOptions& o);

}  // namespace replaygate::cli
