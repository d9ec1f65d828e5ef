// The audit log as a gate stage (see audit_stage.h).
#include "pipeline/audit_stage.h"

#include <cstdio>
#include <utility>

#include "audit/audit_log.h"
#include "audit/entry.h"

namespace replaygate::pipeline {

AuditStage::AuditStage(std::string path, std::string operator_name, std::string source)
    : path_(std::move(path)),
      operator_name_(std::move(operator_name)),
      source_(std::move(source)) {}

audit::DecisionEntry decision_entry(const Table& table, uint32_t verb, std::string_view rule,
                                    std::string table_checksum_hex) {
  audit::DecisionEntry entry;
  entry.action = std::string(table.verb_name(verb));
  entry.effect = effect_name(table.verb_effect(verb));
  entry.rule = std::string(rule);
  entry.policy = std::string(table.policy_id());
  entry.policy_revision = table.revision();
  entry.table_checksum = std::move(table_checksum_hex);
  return entry;
}

void AuditStage::add(const Table& table, const Verdict& v) {
  if (checksum_of_ != &table) {
    checksum_hex_ = table.checksum_hex();
    checksum_of_ = &table;
  }
  audit::DecisionEntry entry = decision_entry(table, v.verb, v.rule(table), checksum_hex_);
  entry.source = source_;
  entry.record = v.record->line_number;
  if (v.meta != nullptr && v.meta->has_message_id) {
    entry.message_id = std::string(v.meta->message_id);
  }
  if (!v.key.empty()) entry.idempotency_key = std::string(v.key);
  entry.claim_generation = v.claim_generation;
  add_entry(std::move(entry));
}

void AuditStage::add_entry(audit::DecisionEntry entry) {
  entry.operator_name = operator_name_;
  pending_.push_back(audit::to_json(entry));
}

bool AuditStage::commit() {
  if (pending_.empty()) return true;
  const size_t entries = pending_.size();
  const audit::AppendResult appended = audit::append_batch(path_, std::move(pending_), 0, signer_);
  std::fputs(audit::removed_tail_note(path_, appended).c_str(), stderr);
  pending_.clear();
  if (!appended.ok) {
    error_ = appended.error;
    return false;
  }
  recorded_ += entries;
  last_seq_ = appended.seq;
  last_hash_ = appended.hash;
  return true;
}

}  // namespace replaygate::pipeline
