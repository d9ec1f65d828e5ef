// Parsing an audit log's lines back into typed entries (see reader.h).
#include "audit/reader.h"

#include <string>

#include "common/json_scan.h"

namespace replaygate::audit {
namespace {

using nlohmann::json;

std::string string_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> optional_string(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

int64_t int_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

ReadEntry::Kind kind_of(const std::string& kind) {
  if (kind == "decision") return ReadEntry::Kind::kDecision;
  if (kind == "result") return ReadEntry::Kind::kResult;
  if (kind == "ledger") return ReadEntry::Kind::kLedger;
  if (kind == "checkpoint") return ReadEntry::Kind::kCheckpoint;
  if (kind == "repair") return ReadEntry::Kind::kRepair;
  return ReadEntry::Kind::kOther;
}

}  // namespace

DecisionEntry decision_from_json(const json& j) {
  DecisionEntry d;
  d.time = string_of(j, "time");
  d.operator_name = string_of(j, "operator");
  d.source = optional_string(j, "source");
  d.record = static_cast<uint64_t>(int_of(j, "record"));
  d.message_id = j.value("message_id", json());
  d.operation_id = j.value("operation_id", json());
  d.action = string_of(j, "action");
  d.effect = string_of(j, "effect");
  d.rule = string_of(j, "rule");
  d.policy = string_of(j, "policy");
  d.policy_revision = int_of(j, "policy_revision");
  d.table_checksum = string_of(j, "table_checksum");
  d.record_revision = j.value("record_revision", json());
  d.idempotency_key = optional_string(j, "idempotency_key");
  d.claim_generation = int_of(j, "claim_generation");
  return d;
}

ResultEntry result_from_json(const json& j) {
  ResultEntry r;
  r.time = string_of(j, "time");
  const auto decision = j.find("decision");
  if (decision != j.end() && decision->is_number_unsigned()) r.decision = decision->get<uint64_t>();
  r.revision = static_cast<uint64_t>(int_of(j, "revision"));
  r.outcome = string_of(j, "outcome");
  r.operator_name = optional_string(j, "operator");
  return r;
}

LedgerEntry ledger_from_json(const json& j) {
  LedgerEntry l;
  l.time = string_of(j, "time");
  l.operator_name = string_of(j, "operator");
  l.act = string_of(j, "act");
  l.scope = string_of(j, "scope");
  l.idempotency_key = optional_string(j, "idempotency_key");
  l.claim_generation = int_of(j, "claim_generation");
  l.reason = optional_string(j, "reason");
  l.cutoff = optional_string(j, "cutoff");
  l.state = optional_string(j, "state");
  return l;
}

bool read_entry(std::string_view text, uint64_t line, ReadEntry* out) {
  if (scan_json_shape(text, kMaxJsonDepth) == JsonShape::kTooDeep) return false;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return false;
  *out = ReadEntry{};
  out->line = line;
  out->kind = kind_of(string_of(j, "kind"));
  if (const auto seq = j.find("seq"); seq != j.end() && seq->is_number_unsigned()) {
    out->seq = seq->get<uint64_t>();
  }
  switch (out->kind) {
    case ReadEntry::Kind::kDecision:
      out->decision = decision_from_json(j);
      break;
    case ReadEntry::Kind::kResult:
      out->result = result_from_json(j);
      break;
    case ReadEntry::Kind::kLedger:
      out->ledger = ledger_from_json(j);
      break;
    case ReadEntry::Kind::kCheckpoint:
      out->checkpoint.line = line;
      out->checkpoint.seq = out->seq.value_or(0);
      out->checkpoint.key_id = string_of(j, "key_id");
      out->checkpoint.time = string_of(j, "time");
      out->checkpoint.prev = string_of(j, "prev");
      out->checkpoint.chain_digest = string_of(j, "chain_digest");
      out->checkpoint.signature = string_of(j, "signature");
      break;
    case ReadEntry::Kind::kRepair:
    case ReadEntry::Kind::kOther:
      break;
  }
  out->object = std::move(j);
  return true;
}

bool EntryReader::next(ReadEntry* out) {
  while (from_ < bytes_.size()) {
    size_t end = bytes_.find('\n', from_);
    if (end == std::string_view::npos) {
      if (lines_ == Lines::kComplete) {
        from_ = bytes_.size();
        return false;
      }
      end = bytes_.size();
    }
    const std::string_view text = bytes_.substr(from_, end - from_);
    from_ = end + 1;
    ++line_;
    if (read_entry(text, line_, out)) return true;
  }
  return false;
}

}  // namespace replaygate::audit
