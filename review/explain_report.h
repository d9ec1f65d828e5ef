// The explain report as data (`replaygate explain`, later the console): why one record gets its
// verb. In: a table (and, with --policy, the checked policy), one record a parser has read into an
// Input, the record's format and mapping, and the secret field names (sensitive.h). Out: an
// ExplainReport: each rule considered (for a guard each condition up to the first that fails,
// with the field's value and why it failed; for a table the key tuple looked up and the row that
// hit), the letter's fields (derived ones with their formula, operator- and record-only ones with
// the letter's ignored value), for a mapped format the record's parts and where each input came
// from, and the decision. Values of sensitive fields are already <redacted>; the renderers
// (tools/cli/explain.cc: text and JSON) escape what they print.
//
// With a checked policy the walk runs over the IR (compiler/explain.h, the interpreter's
// semantics); without, over the frozen table (runtime/trace.h). Both build the same report, and
// both must agree with decide() (the caller checks: a disagreement is a bug).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir.h"
#include "inputs/formats.h"
#include "inputs/records.h"
#include "runtime/table.h"

namespace replaygate::review {

// What a secret value shows as.
inline constexpr std::string_view kRedacted = "<redacted>";

struct ConditionStep {
  std::string text;   // "attempts >= max_attempts (3)"
  std::string field;  // "attempts"
  std::string value;  // the field's value: "1", "\"cap\"", "absent"
  bool holds = false;
  std::string why;  // when it fails: "absent", "value", "bound"
};

struct RuleStep {
  bool is_table = false;
  std::string id;
  bool matched = false;
  std::vector<ConditionStep> conditions;  // guards
  std::vector<std::string> key_fields;    // tables
  std::vector<std::string> key_values;    // tables: the tuple looked up
  std::string row;                        // tables: the row that hit, or ""
};

// A derived field (compiler/ir.h Derivation): how it is computed and the value the walk used.
struct DerivedField {
  bool derived = false;
  bool classified = false;  // a classified enum (ir::Classifier): `formula` says which row took it
  std::string formula;      // "message_revision < record_revision"
  std::string computed;     // "true", "false"; "" when not computed (invalid input)
};

struct LetterLine {
  std::string field;
  std::string value;  // as read ("<missing>" when the letter has none); derived: the computed one
  DerivedField derived;
  // kOperator or kRecord: only an operator (the operation record) sets it: the letter's value is
  // never used.
  FieldSource source = FieldSource::kLetter;
  // Derived, operator- and record-only fields: the letter's own value, ignored ("" if none).
  std::string letter_value;
  // A format read through a mapping: where the value came from, as shown after it ("from header
  // 'x' = \"3\""); "" for letters.
  std::string origin;
};

// A part of a record read through a mapping (RecordPartValue), as shown: `header "x-replay" = "2"`.
struct RecordLine {
  std::string part;   // "topic", "header", ...
  std::string name;   // a header's name as given (any bytes); "" for the others
  std::string value;  // shown: "\"payments.DLT\"", "17", "null", "<redacted>", "52 bytes"
};

struct ExplainReport {
  std::string at;  // a record of an array dump: its JSON pointer ("/Messages/3"); else ""
  std::string policy_id;
  int64_t revision = 0;
  std::string input_format = "letters";  // a format read through a mapping has `record` and origins
  std::string mapping;                   // its mapping file
  std::vector<RecordLine> record;
  std::vector<LetterLine> letter;
  std::vector<DerivedField> derived;  // per field, filled by the walk
  bool valid = true;
  std::string invalid_field, invalid_why, invalid_value;
  std::vector<RuleStep> steps;
  std::string verb, effect, description, kind, rule, reason;
  uint32_t line = 0;  // of the deciding rule; 0 for the default
};

// The report for one record `parser` has just read into `input` (parse() returned true): the
// letter's operator- and record-only fields are unset in `input` as decide() does (which is why it
// is not const). `checked` is the policy the table was compiled from, or nullptr (a --table walk).
// `mapping` is the mapping file's path for a format read through one ("" otherwise). Values of
// `sensitive` fields, and the record parts that feed them, are redacted.
ExplainReport explain_record(const Table& table, const ir::CheckedPolicy* checked,
                             const inputs::RecordParser& parser, Input& input,
                             const inputs::InputFormat& format, const std::string& mapping,
                             const std::set<std::string>& sensitive);

}  // namespace replaygate::review
