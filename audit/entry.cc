// The one writer of decision and result entries (see entry.h).
#include "audit/entry.h"

#include "audit/audit_log.h"

namespace replaygate::audit {

nlohmann::json to_json(const DecisionEntry& e) {
  nlohmann::json j;
  j["kind"] = "decision";
  j["time"] = e.time.empty() ? utc_now() : e.time;
  j["operator"] = e.operator_name;
  if (e.source) {
    j["source"] = *e.source;
    j["record"] = e.record;
  }
  j["message_id"] = e.message_id;
  j["operation_id"] = e.operation_id;
  j["action"] = e.action;
  j["effect"] = e.effect;
  j["rule"] = e.rule;
  j["policy"] = e.policy;
  j["policy_revision"] = e.policy_revision;
  j["table_checksum"] = e.table_checksum;
  j["record_revision"] = e.record_revision;
  if (e.idempotency_key) j["idempotency_key"] = *e.idempotency_key;
  if (e.claim_generation > 0) j["claim_generation"] = e.claim_generation;
  return j;
}

nlohmann::json to_json(const ResultEntry& e) {
  nlohmann::json j;
  j["kind"] = "result";
  j["time"] = e.time.empty() ? utc_now() : e.time;
  j["decision"] = e.decision;
  j["revision"] = e.revision;
  j["outcome"] = e.outcome;
  if (e.operator_name) j["operator"] = *e.operator_name;
  return j;
}

nlohmann::json to_json(const LedgerEntry& e) {
  nlohmann::json j;
  j["kind"] = "ledger";
  j["time"] = e.time.empty() ? utc_now() : e.time;
  j["operator"] = e.operator_name;
  j["act"] = e.act;
  j["scope"] = e.scope;
  if (e.idempotency_key) j["idempotency_key"] = *e.idempotency_key;
  if (e.claim_generation > 0) j["claim_generation"] = e.claim_generation;
  if (e.reason) j["reason"] = *e.reason;
  if (e.cutoff) j["cutoff"] = *e.cutoff;
  if (e.state) j["state"] = *e.state;
  return j;
}

nlohmann::json to_json(const PlanEntry& e) {
  nlohmann::json j = e.fields;
  j["kind"] = "plan";
  j["time"] = e.time.empty() ? utc_now() : e.time;
  j["operator"] = e.operator_name;
  j["act"] = e.act;
  j["scope"] = e.scope;
  return j;
}

nlohmann::json to_json(const ConsoleEntry& e) {
  nlohmann::json j{{"kind", "console"},
                   {"time", e.time.empty() ? utc_now() : e.time},
                   {"operator", e.operator_name},
                   {"act", e.act},
                   {"scope", e.scope},
                   {"outcome", e.outcome},
                   {"address", e.address}};
  if (e.target) j["target"] = *e.target;
  if (e.reason) j["reason"] = *e.reason;
  if (e.detail) j["detail"] = *e.detail;
  return j;
}

}  // namespace replaygate::audit
