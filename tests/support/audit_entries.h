// A decision entry for audit-log tests: message m<n>, operator ana, rule r1 of policy p revision 1.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "audit/entry.h"

namespace replaygate::testing {

inline nlohmann::json decision(int n, const char* action = "never", const char* effect = "none") {
  audit::DecisionEntry e;
  e.time = "2026-12-01T00:00:0" + std::to_string(n % 10) + "Z";
  e.operator_name = "ana";
  e.message_id = "m" + std::to_string(n);
  e.operation_id = nullptr;
  e.action = action;
  e.effect = effect;
  e.rule = "r1";
  e.policy = "p";
  e.policy_revision = 1;
  e.table_checksum = std::string(32, 'a');
  e.record_revision = nullptr;
  return audit::to_json(e);
}

}  // namespace replaygate::testing
