// A plan (docs/plans.md): a frozen, reviewed set of dead letters, its file format, its digest.
//
// In: the letters a build selected (each with its identity and decision). Out: a plan file
// written streaming (PlanWriter) and read back streaming (read_plan), with a digest over all of
// it that an approval signs and every run checks.
//
// The plan file (format_version 1, schemas/plan.schema.json), one JSON object:
//   {"format_version":1,"header":{...},
//   "letters":[
//   {...one letter per line...},
//   ],
//   "summary":{"letters":N,"copies":M,"by_verb":{...}},
//   "digest":"blake2b:<64 hex>"}
// The digest is BLAKE2b-256 (libsodium crypto_generichash) over
//   "replaygate plan v1\0" + canonical(header) + "\0" + L + "\0" + canonical(summary)
// where canonical() is nlohmann's dump() of the parsed object (keys sorted, no spaces) and L the
// 32 bytes of BLAKE2b-256 over every letter's canonical() followed by "\n", in file order. So the
// reader needs one pass and memory for one letter at a time, whatever order the keys come in.
//
// A letter's identity: BLAKE2b-256 over length-prefixed fields (8-byte little-endian size, then
// the bytes): "replaygate letter v1", its source, its message id (or the marker "\x01none" for
// none), its body digest, then each decided input as "name=value" in the table's field order
// (value: "s:TEXT", "i:N", "b:true|false", "null", "unset", "invalid"). Two letters with the same
// identity are listed once with a count.
//
// Threads: everything here may be used from any thread; a PlanWriter belongs to one.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/table.h"

namespace replaygate::plan {

inline constexpr int kFormatVersion = 1;
inline constexpr std::string_view kDigestPrefix = "blake2b:";
// Nesting deeper than this is refused by the reader (a letter is two levels deep).
inline constexpr int kMaxDepth = 8;

// "blake2b:<64 hex>" of `bytes`.
std::string digest_of(std::string_view bytes);
// True for "blake2b:" followed by exactly 64 lowercase hex digits.
bool is_digest(std::string_view text);

// The decided inputs of a letter, as the identity hashes them: (name, value text) in field order.
using InputValues = std::vector<std::pair<std::string, std::string>>;
InputValues input_values(const Table& table, const Input& input);

// The identity of a letter ("blake2b:<64 hex>"), as the header comment says.
std::string letter_identity(std::string_view source, const std::optional<std::string>& message_id,
                            std::string_view body_digest, const InputValues& inputs);

// What the plan decided for a letter.
struct PlanDecision {
  std::string verb, rule, effect;  // effect: none|read|copy|create
  std::string action;              // republish|park|hold|none (a read or copy verb without a map)
  std::optional<std::string> target;  // where a republish goes (the decided topic), when known
  bool operator==(const PlanDecision&) const = default;
};

// One letter of a plan.
struct PlanLetter {
  std::string identity;
  std::string source;  // the source queue or dump it came from
  std::optional<std::string> message_id;
  std::optional<std::string> idempotency_key;
  std::string body_digest;  // "blake2b:<64 hex>" of the record's bytes
  int64_t count = 1;        // copies with this identity (>= 1)
  uint64_t first_line = 0;  // where the first copy was in the dump (1-based; 0: a queue)
  PlanDecision decision;
  bool operator==(const PlanLetter&) const = default;
};

// What a plan is about, known before its first letter.
struct PlanHeader {
  std::string plan_id;  // 12 hex digits, known up front (docs/plans.md)
  std::string source;   // what the plan covers (a dump path, an amqp:// URL)
  std::string input_format;
  std::string author;
  std::string created_at, expires_at;  // RFC 3339 UTC with microseconds (ledger::format_time)
  std::string policy;
  int64_t policy_revision = 0;
  std::string table_checksum;      // 32 hex
  int64_t cap = 0;                 // letters the plan may act on in all (0: every planned copy)
  double rate = 0;                 // letters per second (0: no limit)
  int64_t required_approvals = 1;  // approvals besides the author
  nlohmann::json filters = nlohmann::json::object();  // the build's filters, as given
  bool operator==(const PlanHeader&) const = default;
};

// The counts a plan file carries after its letters (and the reader recomputes).
struct VerbCount {
  std::string effect;
  int64_t letters = 0, copies = 0;
  bool operator==(const VerbCount&) const = default;
};
struct PlanSummary {
  int64_t letters = 0, copies = 0;
  std::map<std::string, VerbCount> by_verb;
  void add(const PlanLetter& letter);
  bool operator==(const PlanSummary&) const = default;
};

nlohmann::json to_json(const PlanHeader& header);
nlohmann::json to_json(const PlanLetter& letter);
nlohmann::json to_json(const PlanSummary& summary);
// Back from JSON: "" or what is wrong (a missing or mistyped field, by name).
std::string from_json(const nlohmann::json& j, PlanHeader* out);
std::string from_json(const nlohmann::json& j, PlanLetter* out);
std::string from_json(const nlohmann::json& j, PlanSummary* out);

// The digest of a plan from its parts (the header comment): header and summary as canonical JSON,
// `letters_hash` the 32 bytes over the letters.
std::string plan_digest(const nlohmann::json& header, const std::string& letters_hash,
                        const nlohmann::json& summary);

// Writes a plan file: begin(), add() each letter, finish(). The file appears complete or not at
// all (written to PATH.tmp, fsynced, renamed). Errors: false with error().
class PlanWriter {
 public:
  explicit PlanWriter(std::string path);
  ~PlanWriter();
  bool begin(const PlanHeader& header);
  bool add(const PlanLetter& letter);
  // Writes the summary and the digest, and puts the file in place. The digest, or "" on failure.
  std::string finish();
  // Makes what is written so far durable (the header of a RabbitMQ build, before its first move:
  // a rerun finds the plan id in PATH.tmp). False with error().
  bool sync();
  // Closes PATH.tmp and leaves it (a build whose moves must be recovered by a rerun).
  void keep_unfinished();
  const std::string& tmp_path() const { return tmp_; }
  const std::string& error() const { return error_; }
  const PlanSummary& summary() const { return summary_; }

 private:
  bool write(std::string_view text);
  std::string path_, tmp_;
  int fd_ = -1;
  bool first_ = true;
  nlohmann::json header_;
  PlanSummary summary_;
  struct Hasher;
  std::unique_ptr<Hasher> letters_;
  std::string error_;
};

// A plan file read back.
struct PlanRead {
  bool ok = false;  // false: the file could not be read or is not a plan (error says why)
  std::string
      error;  // "plan.json:3:14: not JSON: ..." or "plan.json: letter 2: ..." for ok == false
  uint64_t line = 0, column = 0;  // where the JSON syntax error is (1-based), 0 when not one
  PlanHeader header;
  PlanSummary summary;          // as the file says (checked against the letters)
  std::string digest;           // as the file says
  std::string computed_digest;  // over what the file holds
  bool digest_matches() const { return ok && digest == computed_digest; }
};

// Reads a plan, calling `on_letter` for each letter in file order (it returns false to stop the
// read: then ok is false with error "stopped"). Memory: one letter at a time. Never throws.
// nlohmann's "[json.exception.parse_error.101] parse error at line L, column C: REASON" as REASON,
// with *line and *column set; another message as it is (they stay unchanged).
std::string json_reason(std::string_view what, uint64_t* line, uint64_t* column);
PlanRead read_plan(std::istream& in, const std::function<bool(const PlanLetter&)>& on_letter);
PlanRead read_plan_file(const std::string& path,
                        const std::function<bool(const PlanLetter&)>& on_letter);

// What a plan built from a RabbitMQ queue covers, as its header's `source` and each letter's
// identity name it: "rabbitmq:/VHOST/QUEUE", VHOST with '%' and '/' percent-encoded as in an AMQP
// URL ("rabbitmq:/%2F/payments.dlq"), the same whichever node of a cluster was read, as any user.
std::string rabbitmq_source(std::string_view vhost, std::string_view queue);
// The queue a RabbitMQ plan's letters are frozen in while it waits and runs: "QUEUE.plan.<id>".
std::string plan_queue_name(std::string_view queue, std::string_view plan_id);

// The header of a plan file whose writing did not finish (PATH.tmp of a build that stopped): its
// first line. nullopt with *error when it has none (not even the header was written).
std::optional<PlanHeader> read_unfinished_header(const std::string& path, std::string* error);
// The same from a stream (`name` for messages); reads at most the first line. Never throws.
std::optional<PlanHeader> unfinished_header(std::istream& in, const std::string& name,
                                            std::string* error);

// A fresh plan id: 12 hex digits of BLAKE2b over source, author, created_at and a random nonce.
std::string new_plan_id(std::string_view source, std::string_view author,
                        std::string_view created_at);

}  // namespace replaygate::plan
