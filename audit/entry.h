// The typed audit entries: one schema (audit_log.h's header comment, docs/recovery.md "Audit
// trail") and one writer, to_json(), for every command that appends: `decide --audit` and the
// gate, `review --confirm` (decision entries), `audit result` (result entries) and `replaygate
// ledger release|prune` (ledger entries). Repair entries are written by audit::repair() alone.
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
  // The record's idempotency key (nullopt: it has none, or no key field is named), and the
  // generation of the replay-ledger claim this decision won (0: none). Written only when set:
  // logs written before the ledger lack both.
  std::optional<std::string> idempotency_key;
  int64_t claim_generation = 0;
};

// An operator act on the replay ledger (docs/ledger.md, "Operator commands"). Acts:
//   release_requested  written before the ledger release (key, reason; generation: the live one)
//   released           written after it (key, generation released, reason)
//   prune_requested    written before a prune (cutoff; reason optional)
//   pruned             one per deleted row, after the prune (key, generation, state, cutoff)
//   ledger_migrate_requested  written before `ledger migrate` (reason)
//   ledger_migrated    written after it (reason; state "schema version F -> T")
struct LedgerEntry {
  std::string time;  // "" means now
  std::string operator_name;
  std::string act;
  std::string scope;
  std::optional<std::string> idempotency_key;
  int64_t claim_generation = 0;       // 0: not written
  std::optional<std::string> reason;  // release acts; prune_requested optionally
  std::optional<std::string> cutoff;  // prune acts: RFC 3339 UTC with microseconds
  std::optional<std::string> state;   // pruned: the row's state when it was deleted
};

// A plan's record in the ledger (docs/plans.md), written after the ledger call succeeded (the
// ledger is the truth; the entry is its record, which `ledger rebuild --from-audit` reads). Acts
// and their fields (times RFC 3339 UTC as ledger::format_time writes them; counts integers):
//   plan_recorded   digest, author, source, table_checksum, letters, copies, created_at, expires_at
//   plan_approved   digest, approver, key_id, signature, reason, approved_at
//   plan_cancelled  digest, cancelled_by, cancel_reason, cancelled_at
//   plan_progress   digest, identity, done, held, changed (the increments added), last_outcome
//   plan_frozen     plan_id, from, to, count, identities: a block of a RabbitMQ build's moves into
//                   the plan's queue (before the plan's digest exists; docs/plans.md)
//   plan_returned   plan_id, from, to, count (and digest, from a cancel): letters moved back from
//                   the plan's queue to its dead-letter queue
struct PlanEntry {
  std::string time;  // "" means now
  std::string operator_name;
  std::string act;
  std::string scope;
  nlohmann::json fields = nlohmann::json::object();  // the act's fields above, by name
};

// An act of the web console (`replaygate console serve`, docs/console.md), allowed or refused:
// every POST (login, logout, plan_cancel) and every request a role check refuses. Acts are
// lowercase words; outcome "allowed", "refused" or "failed" (allowed, then the act failed);
// `operator` is the signed-in user, or for a login the name given (a name that is no valid
// operator name is written "(invalid name)"). reason and detail: one printable line each.
struct ConsoleEntry {
  std::string time;  // "" means now
  std::string operator_name;
  std::string act;
  std::string scope;                  // the console's ledger scope
  std::string outcome;                // allowed, refused, failed
  std::string address;                // the client's address as the server saw it
  std::optional<std::string> target;  // what the act was on: a path, a plan digest
  std::optional<std::string> reason;  // the operator's reason (plan_cancel)
  std::optional<std::string> detail;  // why refused or failed
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
nlohmann::json to_json(const LedgerEntry& entry);
nlohmann::json to_json(const PlanEntry& entry);
nlohmann::json to_json(const ConsoleEntry& entry);

}  // namespace replaygate::audit
