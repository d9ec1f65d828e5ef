// The `replaygate plan` subcommands' options and the acts in plan_acts.cc (docs/plans.md).
#pragma once

#include <string>
#include <vector>

#include "inputs/formats.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {

struct PlanOptions {
  // build
  std::string input, policy, table, out, author, source;
  inputs::InputFormatOptions format;
  TrustFlags trust;
  std::string topic, error_class, since, rule, cap, rate, approvals;
  std::vector<std::string> message_ids;
  std::string expires_in = "24h";
  bool author_set = false, topic_set = false, error_class_set = false, since_set = false,
       rule_set = false, cap_set = false, rate_set = false, approvals_set = false;
  // the others
  std::string plan_path, output = "text", users, sign_key;
  std::string ledger, scope = "default", audit;
  std::string operator_name, reason;
  bool operator_given = false, reason_given = false;
};

// `plan approve PLAN --operator NAME --sign-key KEY --reason TEXT --users FILE --ledger L --audit
// LOG` (plan_acts.cc).
int run_plan_approve(const PlanOptions& o);
// `plan cancel PLAN --operator NAME --reason TEXT --ledger L --audit LOG` (plan_acts.cc).
int run_plan_cancel(const PlanOptions& o);

}  // namespace replaygate::cli
