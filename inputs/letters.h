// The `letters` record format: one flat JSON object per line whose keys are the policy's inputs,
// plus the metadata keys `message_id` and `body_hash` (strings, echoed to the output).
//
// Strict on purpose (a typo must never make a field silently absent): an unknown key, a duplicate
// key, a value of the wrong JSON type for metadata, a line that is not one JSON object, bad JSON,
// text that is not UTF-8, nesting over kMaxJsonDepth or trailing content make the record
// unreadable; so do a line that starts with a UTF-8 byte-order mark ("starts with a UTF-8
// byte-order mark (remove it)") and a number no double can hold, in any field ("number out of
// range for 'FIELD': 1e400"). A field value of the wrong JSON type (a string for an int field,
// 1.5, an int beyond int64, an object...) is passed to the runtime as invalid, which decides the
// default with "invalid input: FIELD". JSON null is absent (Input::set_null). An unreadable
// record's problem_offset() (records.h) points at the key, value or byte that is wrong.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/records.h"
#include "runtime/table.h"

namespace replaygate::inputs {

// An operator-only field (FieldInfo::operator_only, policy `source: operator`) or a record-only
// one (FieldSource::kRecord, `source: record`: only the durable operation record supplies it) is
// never taken from a letter: its key is accepted and its value read as usual (bad JSON is still
// bad JSON), but the field is left unset, so the policy's handling of an absent (or, when
// required, missing: invalid input, the default) value applies. The record stays valid: a
// producer that echoes the field still gets its other fields decided.
// Why a letter never supplies `field` of `table`, as a phrase to follow its name, or "" when it
// does (also for kNoField): "is set only by an operator (policy 'source: operator')", "is read
// only from the operation record (policy 'source: record')", "is derived (computed, never read)".
std::string not_from_letters(const Table& table, uint32_t field);

class LetterParser : public RecordParser {
 public:
  // kKeep reads operator- and record-only fields like any other: for explain, which shows the
  // letter's value as ignored and unsets the field itself before deciding.
  enum class OperatorFields : uint8_t { kIgnore, kKeep };
  // Resolves every field name of `table` once.
  explicit LetterParser(const Table& table,
                        OperatorFields operator_fields = OperatorFields::kIgnore);
  ~LetterParser() override;
  bool parse(std::string_view line, Input& input, RecordMeta* meta, std::string* problem) override;
  // Where the letter gives the field's value (a key spelled with escapes too).
  size_t field_value_offset(std::string_view line, uint32_t field) const override;

 private:
  // parse() without the structural pre-check; *saw_container when a nested value was skipped.
  bool parse_object(std::string_view line, Input& input, RecordMeta* meta, std::string* problem,
                    bool* saw_container);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace replaygate::inputs
