// JSON Lines letters -> Input, with simdjson On Demand on one padded line at a time (letters.h).
#include "inputs/letters.h"

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/diagnostic.h"
#include "common/utf8.h"

namespace replaygate::inputs {

namespace od = simdjson::ondemand;

struct LetterParser::State {
  const Table* table = nullptr;
  std::vector<std::string> names;  // field names by index, then the metadata keys
  std::vector<FieldType> types;
  std::vector<uint8_t> seen;   // per key, reset per record
  std::vector<uint8_t> plain;  // per key: no '"' or '\\' in the name, so raw bytes can match it
  uint32_t message_id_key = 0, body_hash_key = 0;  // indices into names (after the fields)
  // The key index found at each position of the previous record: a dump's records nearly always
  // list their keys in the same order, so that name is tried first (one compare per key).
  std::vector<uint32_t> previous_order;
  od::parser parser{kMaxRecordBytes + 64};
  // Where the problem is, set only by a failure that is not bad JSON (a key, a value, trailing
  // content); nullptr: bad JSON, found again by locate_json_error() (see parse()).
  const char* problem_at = nullptr;
  // Operator- and record-only fields, left unset after each record (kIgnore).
  std::vector<uint32_t> not_from_letters;
};

std::string not_from_letters(const Table& table, uint32_t field) {
  if (field >= table.field_count()) return "";
  if (table.field_derived(field)) return "is derived (computed, never read)";
  switch (table.field(field).source) {
    case FieldSource::kOperator:
      return "is set only by an operator (policy 'source: operator')";
    case FieldSource::kRecord:
      return "is read only from the operation record (policy 'source: record')";
    case FieldSource::kLetter:
      break;
  }
  return "";
}

LetterParser::LetterParser(const Table& table, OperatorFields operator_fields)
    : state_(std::make_unique<State>()) {
  state_->table = &table;
  const uint32_t count = table.field_count();
  for (uint32_t i = 0; i < count; ++i) {
    const FieldInfo info = table.field(i);
    state_->names.emplace_back(info.name);
    state_->types.push_back(info.type);
    if (info.source != FieldSource::kLetter && operator_fields == OperatorFields::kIgnore) {
      state_->not_from_letters.push_back(i);
    }
  }
  // A policy input that happens to be called message_id/body_hash wins over the metadata key.
  state_->message_id_key = table.field_index("message_id") != Table::kNoField
                               ? Table::kNoField
                               : static_cast<uint32_t>(state_->names.size());
  if (state_->message_id_key != Table::kNoField) state_->names.emplace_back("message_id");
  state_->body_hash_key = table.field_index("body_hash") != Table::kNoField
                              ? Table::kNoField
                              : static_cast<uint32_t>(state_->names.size());
  if (state_->body_hash_key != Table::kNoField) state_->names.emplace_back("body_hash");
  state_->seen.assign(state_->names.size(), 0);
  for (const std::string& name : state_->names) {
    state_->plain.push_back(name.find_first_of("\"\\") == std::string::npos);
  }
  state_->previous_order.assign(state_->names.size(), static_cast<uint32_t>(state_->names.size()));
}

LetterParser::~LetterParser() = default;

namespace {

bool fail(std::string* problem, std::string what) {
  *problem = "invalid record: " + std::move(what);
  return false;
}

bool fail_json(std::string* problem, simdjson::error_code code) {
  return fail(problem, describe_json_error(code));
}

// When `value` (a number simdjson would not read) is well-formed JSON whose magnitude no double
// holds (1e400), sets *problem to "number out of range for 'FIELD': 1e400" and returns true:
// simdjson calls it a number error, but the record is valid JSON and the value is what is wrong.
// Only on error paths: the value is still unread there, so its raw token is available.
bool number_out_of_range(od::value& value, const std::string& name, std::string* problem) {
  std::string_view token = value.raw_json_token();
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t' || token.back() == '\r' ||
                            token.back() == '\n')) {
    token.remove_suffix(1);
  }
  if (!is_json_number(token)) return false;
  const std::string copy(token);
  errno = 0;
  const double magnitude = std::strtod(copy.c_str(), nullptr);
  if (errno != ERANGE || !std::isinf(magnitude)) return false;
  constexpr size_t kShown = 40;  // a number may be a megabyte of digits
  const std::string shown =
      token.size() > kShown ? std::string(token.substr(0, kShown)) + "..." : copy;
  fail(problem, "number out of range for " + quote_for_reason(name) + ": " + shown);
  return true;
}

// Reads `value` into field `index` (named `name`) of `type`. Returns false only for malformed JSON
// or a number beyond the double range (*problem set); a well-formed value of the wrong type marks
// the field invalid instead.
bool set_field(od::value& value, uint32_t index, const std::string& name, FieldType type,
               Input& input, std::string* problem, bool* saw_container) {
  od::json_type json_type;
  if (auto error = value.type().get(json_type)) return fail_json(problem, error);
  switch (json_type) {
    case od::json_type::null: {
      bool is_null = false;
      if (auto error = value.is_null().get(is_null)) return fail_json(problem, error);
      if (!is_null) return fail(problem, "bad JSON (malformed literal)");
      input.set_null(index);
      return true;
    }
    case od::json_type::string: {
      std::string_view text;
      if (auto error = value.get_string().get(text)) return fail_json(problem, error);
      if (type == FieldType::kString || type == FieldType::kEnum) {
        input.set_string(index, text);
      } else {
        input.set_invalid(index);
      }
      return true;
    }
    case od::json_type::boolean: {
      bool flag = false;
      if (auto error = value.get_bool().get(flag)) return fail_json(problem, error);
      if (type == FieldType::kBool) {
        input.set_bool(index, flag);
      } else {
        input.set_invalid(index);
      }
      return true;
    }
    case od::json_type::number: {
      if (type == FieldType::kInt) {
        int64_t number = 0;
        const simdjson::error_code error = value.get_int64().get(number);
        if (!error) {
          input.set_int(index, number);
          return true;
        }
        if (number_out_of_range(value, name, problem)) return false;
        if (error != simdjson::INCORRECT_TYPE && error != simdjson::NUMBER_OUT_OF_RANGE) {
          return fail_json(problem, error);
        }
        input.set_invalid(index);  // 1.5, 1e3, beyond int64
        return true;
      }
      double ignored = 0;
      const simdjson::error_code error = value.get_double().get(ignored);
      if (error && number_out_of_range(value, name, problem)) return false;
      if (error && error != simdjson::NUMBER_OUT_OF_RANGE) {
        return fail_json(problem, error);
      }
      input.set_invalid(index);
      return true;
    }
    case od::json_type::array:
    case od::json_type::object:
      *saw_container = true;
      input.set_invalid(index);  // skipped (without recursion) when the object moves on
      return true;
  }
  return fail(problem, "bad JSON (unknown value type)");
}

// The index of the name whose bytes are exactly the raw key at `raw` (just after its opening
// quote) followed by the closing quote, or names.size(). A key written with escapes never
// matches here (a backslash is not in a plain name) and goes the slow, unescaping way.
uint32_t match_plain_key(const std::vector<std::string>& names, const std::vector<uint8_t>& plain,
                         uint32_t guess, const char* raw, const char* line_end) {
  const size_t available = static_cast<size_t>(line_end - raw);
  if (guess < names.size()) {
    const size_t length = names[guess].size();
    if (plain[guess] && length < available && raw[length] == '"' &&
        std::memcmp(raw, names[guess].data(), length) == 0) {
      return guess;
    }
  }
  for (uint32_t i = 0; i < names.size(); ++i) {
    const size_t length = names[i].size();
    if (plain[i] && length < available && raw[length] == '"' &&
        std::memcmp(raw, names[i].data(), length) == 0) {
      return i;
    }
  }
  return static_cast<uint32_t>(names.size());
}

// The first byte of the value of the key whose raw text starts at `key_raw` (after its opening
// quote): past the closing quote, the colon and white space. Error paths only.
const char* value_start(const char* key_raw, const char* line_end) {
  const char* p = key_raw;
  while (p < line_end && *p != '"') p += *p == '\\' ? 2 : 1;
  if (p < line_end) ++p;
  while (p < line_end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == ':')) ++p;
  return p < line_end ? p : line_end;
}

bool read_metadata(od::value& value, const char* key, std::string_view* out, bool* present,
                   std::string* problem) {
  // Nearly always a string: try that first, and look at the type only when it is not one.
  const simdjson::error_code error = value.get_string().get(*out);
  if (!error) {
    *present = true;
    return true;
  }
  if (error != simdjson::INCORRECT_TYPE) return fail_json(problem, error);
  od::json_type json_type;
  if (auto type_error = value.type().get(json_type)) return fail_json(problem, type_error);
  if (json_type == od::json_type::null) {
    bool is_null = false;
    if (auto null_error = value.is_null().get(is_null)) return fail_json(problem, null_error);
    if (!is_null) return fail(problem, "bad JSON (malformed literal)");
    *present = false;
    return true;
  }
  return fail(problem, std::string(key) + " must be a string");
}

}  // namespace

// The structural pre-check (scan_json_shape) takes precedence over every other problem. It is
// run only when it can change the outcome: after any failure (to report nesting or trailing
// content instead), and after a success that skipped a nested array/object. A record without
// nested values that simdjson read to its end has neither (its depth is 1 and nothing follows).
bool LetterParser::parse(std::string_view line, Input& input, RecordMeta* meta,
                         std::string* problem) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
    input.clear();
    *meta = RecordMeta{};
    problem_offset_ = kNoOffset;
    return fail(problem, "blank line");
  }
  bool saw_container = false;
  const bool ok = parse_object(line, input, meta, problem, &saw_container);
  // Only an operator or the operation record sets these (letters.h): whatever the letter said,
  // they stay unset.
  for (const uint32_t field : state_->not_from_letters) input.set_unset(field);
  if (ok && !saw_container) return true;
  // From here on an error path (or a record with a nested value): the problem's position is
  // worked out only now, never for a record that reads.
  const char* problem_at = state_->problem_at;
  state_->problem_at = nullptr;
  // simdjson reads a byte-order mark as bad JSON; say what it is (checked only after a failure).
  if (!ok && line.starts_with(kUtf8ByteOrderMark)) {
    problem_offset_ = 0;
    return fail(problem, std::string(kByteOrderMarkProblem));
  }
  size_t shape_at = 0;
  switch (scan_json_shape(line, kMaxJsonDepth, &shape_at)) {
    case JsonShape::kTooDeep:
      problem_offset_ = shape_at;
      return fail(problem, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    case JsonShape::kTrailing:
      problem_offset_ = shape_at;
      return fail(problem, "trailing content after the JSON object");
    case JsonShape::kOk:
      break;
  }
  if (!ok) {
    if (problem_at != nullptr) {
      problem_offset_ = static_cast<size_t>(problem_at - line.data());
    } else if (const size_t bad = first_invalid_utf8(line); bad != std::string_view::npos) {
      problem_offset_ = bad;
    } else {
      problem_offset_ = locate_json_error(line).offset;
    }
  }
  return ok;
}

size_t LetterParser::field_value_offset(std::string_view line, uint32_t field) const {
  const State& s = *state_;
  // An operator- or record-only field's value in the letter was never read: it is not where the
  // field failed.
  if (field >= s.table->field_count() ||
      std::find(s.not_from_letters.begin(), s.not_from_letters.end(), field) !=
          s.not_from_letters.end()) {
    return kNoOffset;
  }
  return locate_member_value(line, {s.names[field]});
}

bool LetterParser::parse_object(std::string_view line, Input& input, RecordMeta* meta,
                                std::string* problem, bool* saw_container) {
  State& s = *state_;
  input.clear();
  *meta = RecordMeta{};
  const char* const line_end = line.data() + line.size();
  const simdjson::padded_string_view padded(line.data(), line.size(),
                                            line.size() + LineReader::kPadding);
  // Results used in place, not copied out (as for the fields below).
  auto document_result = s.parser.iterate(padded);
  if (auto error = document_result.error()) return fail_json(problem, error);
  od::document& document = document_result.value_unsafe();
  od::json_type top_type;
  if (auto error = document.type().get(top_type)) return fail_json(problem, error);
  if (top_type != od::json_type::object) {
    const size_t first = line.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos) s.problem_at = line.data() + first;
    return fail(problem, "not a JSON object");
  }
  auto object_result = document.get_object();
  if (auto error = object_result.error()) return fail_json(problem, error);
  od::object& object = object_result.value_unsafe();
  std::fill(s.seen.begin(), s.seen.end(), 0);
  size_t position = 0;
  for (auto field_result : object) {
    // The field in place (no copy out of the result: on the hot path a copy of simdjson's small
    // structs costs store-forwarding stalls).
    if (auto error = field_result.error()) return fail_json(problem, error);
    od::field& field = field_result.value_unsafe();
    const uint32_t guess = position < s.previous_order.size()
                               ? s.previous_order[position]
                               : static_cast<uint32_t>(s.names.size());
    // Taken before unescaped_key(), which consumes the key (its raw() is then null).
    const char* const key_raw = field.key().raw();
    uint32_t index = match_plain_key(s.names, s.plain, guess, key_raw, line_end);
    std::string_view key;
    if (index == s.names.size()) {
      if (auto error = field.unescaped_key().get(key)) return fail_json(problem, error);
      index = 0;
      while (index < s.names.size() && s.names[index] != key) ++index;
    }
    if (index == s.names.size()) {
      s.problem_at = key_raw - 1;  // its opening quote
      std::string what = "unknown key " + quote_for_reason(key);
      const std::string suggestion = closest_match(key, s.names);
      if (!suggestion.empty()) what += " (did you mean '" + suggestion + "'?)";
      return fail(problem, std::move(what));
    }
    if (s.seen[index]) {
      s.problem_at = key_raw - 1;
      return fail(problem, "duplicate key '" + s.names[index] + "'");
    }
    s.seen[index] = 1;
    if (position < s.previous_order.size()) s.previous_order[position] = index;
    ++position;
    od::value& value = field.value();
    if (index == s.message_id_key) {
      if (!read_metadata(value, "message_id", &meta->message_id, &meta->has_message_id, problem)) {
        s.problem_at = value_start(key_raw, line_end);
        return false;
      }
    } else if (index == s.body_hash_key) {
      if (!read_metadata(value, "body_hash", &meta->body_hash, &meta->has_body_hash, problem)) {
        s.problem_at = value_start(key_raw, line_end);
        return false;
      }
    } else if (!set_field(value, index, s.names[index], s.types[index], input, problem,
                          saw_container)) {
      s.problem_at = value_start(key_raw, line_end);
      return false;
    }
  }
  if (!document.current_location().error())
    return fail(problem, "trailing content after the JSON object");
  return true;
}

}  // namespace replaygate::inputs
