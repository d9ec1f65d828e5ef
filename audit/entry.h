// The typed audit entries: one schema (audit_log.h's header comment, docs/recovery.md "Audit
// trail") and one writer, to_json(), for every command that appends: `decide --audit` and the
// gate, `review --confirm` (decision entries) and `audit result` (result entries). Repair entries
// are written by audit::repair() alone.
//
// to_json() gives the object append() / append_batch() write (they set `seq` and `prev`); the keys
// are written sorted (nlohmann's object order), so an entry's bytes depend only on its values.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace replaygate::audit {

// A decision a command made for one record or message.
struct DecisionEntry {
  std::string time;           // UTC "YYYY-MM-DDTHH:MM:SSZ"; "" means now (utc_now())
  std::string operator_name;  // who acted: operator_name_problem() must accept it
  // `decide --audit` and the gate: the input's name and the record's line (>= 1); review has
  // neither (both or none are written).
  std::optional<std::string> source;
  uint64_t record = 0;
  nlohmann::json message_id;    // a string, or null when the record has none
  nlohmann::json operation_id;  // a string, or null
  std::string action;           // the verb's name
  std::string effect;           // "none", "read", "copy" or "create"
  std::string rule;             // the rule id, "default", or a dump rule ("dump:replay_budget")
  std::string policy;           // the policy id
  int64_t policy_revision = 0;
  std::string table_checksum;      // 32 hex digits
  nlohmann::json record_revision;  // integer, string or null (review: the operation record's)
};

// An outcome recorded against an earlier decision entry (`audit result`).
struct ResultEntry {
  std::string time;       // "" means now
  uint64_t decision = 0;  // the decision entry's seq
  uint64_t revision = 0;  // the new local revision
  std::string outcome;
  std::optional<std::string> operator_name;
};

nlohmann::json to_json(const DecisionEntry& entry);
nlohmann::json to_json(const ResultEntry& entry);

}  // namespace replaygate::audit
