// The operator review record of one dead-lettered message (`replaygate review`, later the
// console), as data: the message's identifiers, every policy input with the value the policy used
// and where it came from (inputs.h), the chosen action and, in plain words, whether carrying it
// out reads status, copies an existing output or submits new work. The CLI (tools/cli/review.cc)
// reads the files, claims in the ledger, appends to the audit log and renders the record as text
// or JSON; everything it renders is built here.
//
// In: the message and the durable operation record (JSON objects: parse_document()), the table,
// the secret field names (sensitive.h), the input uses and the decision. Out: a ReviewRecord whose
// values are already redacted: a sensitive field shows as `<redacted: field NAME>`; with a table
// only (no `sensitive` list: Documents::table_only) every string value but message_id and
// operation_id does. JSON strings, integers, booleans and null become the matching input values;
// any other JSON value makes the input invalid (the policy default, fail closed). The identifying
// fields must be strings or integers (non_scalar_identifier()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "audit/reader.h"
#include "common/json_scan.h"
#include "review/inputs.h"
#include "runtime/table.h"

namespace replaygate::review {

// Why a document (the message or the operation record) is not a JSON object review can read:
// `what` is "" when it is one; `offset` is where (kNoOffset: the document as a whole).
struct DocumentProblem {
  std::string what;
  size_t offset = kNoOffset;
};

// Parses `text` into *out, as strictly as a dump record is read: no byte-order mark, no nesting
// deeper than kMaxJsonDepth, nothing after the object, valid UTF-8, no number out of range, no key
// given twice (nlohmann would keep the last, so `"a": true, "a": false` would read as false).
DocumentProblem parse_document(std::string_view text, nlohmann::json* out);

// The two documents under review and what of them is secret.
struct Documents {
  nlohmann::json message, record;
  std::set<std::string> sensitive;    // sensitive_names(): the built-in ones and the policy's
  std::vector<std::string> redacted;  // "message.prompt", "record.signed_url": name_redacted()
  // Reviewing with a table: a frozen table does not record the policy's `sensitive` list, so any
  // string may be a secret the policy names. Every string value from the message or the record is
  // redacted then, but message_id and operation_id, which identify what was reviewed and go into
  // the audit log (names on the built-in list stay redacted).
  bool table_only = false;
};

// Fills docs->redacted: each sensitive key of either document, and of its `error` object.
void name_redacted(Documents* docs);

// The identifying fields review prints and records (with the job id candidates and revisions) must
// each be a JSON string or integer, or null/missing: an object or array would be printed and
// written to the audit log as JSON text, whatever it holds; a message's `error`, when given, must
// be an object. Returns the first offender and the rule, as "'message_id' is an object; an
// identifying field must be ...", or "", and sets *where to the offender's keys ({"error",
// "job_id"}).
std::string non_scalar_identifier(const nlohmann::json& doc, bool is_message,
                                  std::vector<std::string>* where);

// The member `key` of `object`, nullptr when missing.
const nlohmann::json* member(const nlohmann::json& object, const std::string& key);
// A short printable form of an identifying value ("" when missing or null); never for secrets.
std::string text_of(const nlohmann::json* value);

// Sets each input of `uses` in *input; string values are kept in *keep (reserved by the caller
// for one per field, so the views into it stay valid).
void set_inputs(const std::vector<InputUse>& uses, Input* input, std::vector<std::string>* keep);

// "it will read status only: ...": what carrying out an action of `effect` does, in plain words.
std::string plain_words(Effect effect);

// A value a file offered for an input that its source does not allow.
struct IgnoredValue {
  std::string from;      // "message.phase"
  nlohmann::json value;  // as shown (redacted, or an object or array only by its kind)
  std::string why;       // "only the operation record supplies it"
};

// One input as the record shows it.
struct InputLine {
  std::string name;
  std::string source;    // "letter", "record", "operator" (field_source_name()) or "derived"
  nlohmann::json value;  // as shown; null when missing or not computed
  bool missing = false;
  std::string from;           // "record.phase", "--confirm", "derived"; "" when unset
  std::string formula;        // derived: "message_revision < record_revision"
  std::string unset_because;  // when missing (not derived): the places looked at
  std::vector<IgnoredValue> ignored;
};

struct ReviewRecord {
  // The identifying fields, as shown (redacted when sensitive).
  std::string message_id, operation_id, action_type, last_error_category, remote_job_id, phase;
  nlohmann::json attempt_count, message_revision, record_revision;  // numbers stay numbers
  // Where the phase came from, when the decision used one that is not record.phase (a policy
  // whose phase input letters may set): "" otherwise.
  std::string phase_from;
  std::vector<std::string> redacted;  // Documents::redacted
  std::vector<InputLine> inputs;      // every input, in field order
  uint32_t verb = 0;
  std::string action, effect, plain, verb_description, rule, reason;
  std::string policy, table_checksum;
  int64_t policy_revision = 0;
  // Set by the caller.
  std::optional<bool> claimed;  // --ledger and a create decision the ledger granted
  bool confirmed = false;
  bool mapped = false;  // read through --input-format and --mapping:
  std::string input_format, mapping, invalid_message;
  std::optional<uint64_t> audit_entry;  // --confirm: the decision's entry
  std::string audit_hash;
};

// The record of `docs` decided by `table` over `input` (set from `uses`): action `verb` by `rule`
// for `reason` (the caller's: the decision, or the default a mapping problem or a ledger hold
// gave).
ReviewRecord build_record(const Table& table, const Documents& docs, const Input& input,
                          const std::vector<InputUse>& uses, uint32_t verb, const std::string& rule,
                          const std::string& reason);

// The create decisions an audit log already holds for a message or operation (a second create
// would submit the work again), with the results recorded for them.
struct EarlierCreates {
  std::vector<audit::ReadEntry> decisions;  // in log order
  // "entry 3: OUTCOME" (the outcome escaped) for each result of one of them, in log order
  std::vector<std::string> results;
  bool same_message = false;  // the first one names this message (not only this operation)
};

// Reads the log `bytes` (every line, also an unterminated last one: the caller reads without the
// lock, for a warning, not a guard; the ledger is the guard) for decision entries of effect
// create whose message_id is `message_id` or whose operation_id is `operation_id` (each ignored
// when ""). A line that is not an entry is skipped.
EarlierCreates earlier_creates(std::string_view bytes, const std::string& message_id,
                               const std::string& operation_id);

}  // namespace replaygate::review
