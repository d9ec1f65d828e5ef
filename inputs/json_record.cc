// One record as one JSON object: the readers' shared preamble and key check (see json_record.h).
#include "inputs/json_record.h"

#include <algorithm>

#include "common/diagnostic.h"
#include "inputs/json_keys.h"
#include "inputs/records.h"

namespace replaygate::inputs {

namespace dom = simdjson::dom;

namespace {

// The nesting bound before parsing (a DOM parse of deep input is what it guards against).
bool shape_ok(std::string_view text, const JsonRecordOptions& options, std::string* problem,
              size_t* problem_offset) {
  const std::string too_deep = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  if (!options.shape_offsets) {
    if (scan_json_shape(text, kMaxJsonDepth) != JsonShape::kTooDeep) return true;
    *problem = too_deep;
    return false;
  }
  size_t at = 0;
  switch (scan_json_shape(text, kMaxJsonDepth, &at)) {
    case JsonShape::kTooDeep:
      *problem = too_deep;
      *problem_offset = at;
      return false;
    case JsonShape::kTrailing:
      *problem = "trailing content after the JSON object";
      *problem_offset = at;
      return false;
    case JsonShape::kOk:
      break;
  }
  return true;
}

}  // namespace

bool read_json_object(std::string_view text, dom::parser& parser, const JsonRecordOptions& options,
                      dom::object* object, std::string* problem, size_t* problem_offset) {
  *problem_offset = RecordParser::kNoOffset;
  if (!options.blank.empty() &&
      text.find_first_not_of(options.blank_space) == std::string_view::npos) {
    *problem = std::string(options.blank);
    return false;
  }
  if (options.byte_order_mark && text.starts_with(kUtf8ByteOrderMark)) {
    *problem = std::string(kByteOrderMarkProblem);
    *problem_offset = 0;
    return false;
  }
  if (!shape_ok(text, options, problem, problem_offset)) return false;
  dom::element root;
  if (auto error = parser.parse(text.data(), text.size(), false).get(root)) {
    *problem = describe_json_error(error);
    *problem_offset = locate_json_error(text).offset;
    return false;
  }
  if (std::string duplicate = duplicate_key_problem(root); !duplicate.empty()) {
    *problem = std::move(duplicate);
    *problem_offset = locate_duplicate_key(text);
    return false;
  }
  if (root.get_object().get(*object)) {
    *problem = "not a JSON object (" + std::string(options.what) + ")";
    return false;
  }
  return true;
}

bool known_key(std::string_view key, const std::vector<std::string>& keys, std::string_view where,
               std::string* problem) {
  if (std::find(keys.begin(), keys.end(), key) != keys.end()) return true;
  *problem = "unknown key " + quote_for_reason(key) + " in " + std::string(where);
  const std::string suggestion = closest_match(key, keys);
  if (!suggestion.empty()) *problem += " (did you mean '" + suggestion + "'?)";
  return false;
}

bool known_keys(const dom::object& object, const std::vector<std::string>& keys,
                std::string_view where, std::string* problem) {
  for (const dom::key_value_pair field : object) {
    if (!known_key(field.key, keys, where, problem)) return false;
  }
  return true;
}

}  // namespace replaygate::inputs
