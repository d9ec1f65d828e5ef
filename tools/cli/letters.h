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

#include "runtime/table.h"
#include "tools/cli/records.h"

namespace replaygate::cli {

class LetterParser : public RecordParser {
 public:
  // Resolves every field name of `table` once.
  explicit LetterParser(const Table& table);
  ~LetterParser() override;
  bool parse(std::string_view line, Input& input, RecordMeta* meta, std::string* problem) override;

 private:
  // parse() without the structural pre-check; *saw_container when a nested value was skipped.
  bool parse_object(std::string_view line, Input& input, RecordMeta* meta, std::string* problem,
                    bool* saw_container);

  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace replaygate::cli
