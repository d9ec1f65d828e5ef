// kcat -J lines -> BrokerRecord for the mapping engine (see kafka.h and docs/input-mapping.md).
#include "inputs/kafka.h"

#include <simdjson.h>

#include <string>
#include <utility>
#include <vector>

#include "common/diagnostic.h"
#include "common/utf8.h"

namespace replaygate::inputs {

namespace od = simdjson::ondemand;

namespace {

// The keys kcat -J prints (json.c fmt_msg_output_json), in its order.
enum KcatKey : uint32_t {
  kTopic,
  kPartition,
  kOffset,
  kTstype,
  kTs,
  kBroker,
  kHeaders,
  kKey,
  kKeyError,
  kKeySchemaId,
  kPayload,
  kPayloadError,
  kValueSchemaId,
  kKcatKeyCount
};
const std::vector<std::string>& kcat_key_names() {
  static const std::vector<std::string> names = {
      "topic",          "partition", "offset",    "tstype",        "ts",      "broker",
      "headers",        "key",       "key_error", "key_schema_id", "payload", "payload_error",
      "value_schema_id"};
  return names;
}

// The opening quote of the key whose raw text starts at `key_raw` (in `padded`), in `line` (the
// record as given; `padded` is either it or its repaired copy, in which each byte that is not UTF-8
// became the 3 bytes of U+FFFD). Error paths only.
const char* at_key(const char* key_raw, const simdjson::padded_string_view& padded,
                   std::string_view line) {
  const size_t target = static_cast<size_t>(key_raw - 1 - padded.data());
  size_t in_line = 0, in_padded = 0;
  while (in_line < line.size() && in_padded < target) {
    const size_t length = utf8_sequence_length(line, in_line);
    in_line += length == 0 ? 1 : length;
    in_padded += length == 0 ? 3 : length;
  }
  return line.data() + in_line;
}

bool fail(std::string* problem, std::string what) {
  *problem = std::move(what);
  return false;
}

// One kcat -J line -> BrokerRecord: kcat's keys, each of its type, each once.
class KcatReader : public BrokerRecordReader {
 public:
  bool read(std::string_view line, BrokerRecord* record, std::string* problem,
            size_t* problem_offset) override {
    record->clear();
    *problem_offset = RecordParser::kNoOffset;
    problem_at = nullptr;
    if (read_line(line, *record, problem)) return true;
    // An error path: where the problem is, in `line`.
    if (problem_at != nullptr) {
      *problem_offset = static_cast<size_t>(problem_at - line.data());
    } else if (const size_t bad = first_invalid_utf8(line); bad != std::string_view::npos) {
      *problem_offset = bad;
    } else if (line.find_first_not_of(" \t\r") != std::string_view::npos) {
      *problem_offset = locate_json_error(line).offset;
    }
    return false;
  }

 private:
  bool read_line(std::string_view line, BrokerRecord& r, std::string* problem);
  bool read_headers(od::value& value, BrokerRecord* r, std::string* problem);

  od::parser parser{kMaxRecordBytes + 64};
  // kcat copies header and payload bytes as they are, so Spring's binary headers (big-endian
  // original-partition/-offset/-timestamp) can make a line invalid UTF-8. Such a line is re-read
  // with every byte that is not UTF-8 replaced by U+FFFD; a mapped text value that contains
  // U+FFFD is then rejected ("not valid UTF-8"), so a repaired value never decides anything.
  std::string repaired_line;
  // Where read_line()'s problem is, set only by a failure that is not bad JSON (a key, a value,
  // trailing content, a BOM); nullptr: bad JSON, found again by locate_json_error().
  const char* problem_at = nullptr;
};

bool KcatReader::read_headers(od::value& value, BrokerRecord* r, std::string* problem) {
  od::array array;
  if (value.get_array().get(array)) {
    return fail(problem, "headers must be kcat's flat [name, value, ...] array");
  }
  std::string_view name;
  bool expecting_name = true;
  for (auto element_result : array) {
    od::value element;
    if (auto error = std::move(element_result).get(element))
      return fail(problem, describe_json_error(error));
    od::json_type type;
    if (auto error = element.type().get(type)) return fail(problem, describe_json_error(error));
    if (expecting_name) {
      if (type != od::json_type::string || element.get_string().get(name)) {
        return fail(problem, "a header name is not a string");
      }
    } else if (type == od::json_type::null) {
      r->headers.emplace_back(name, std::nullopt);
    } else {
      std::string_view text;
      if (type != od::json_type::string || element.get_string().get(text)) {
        return fail(problem,
                    "header '" + std::string(name) + "' has a value that is not a string or null");
      }
      r->headers.emplace_back(name, text);
    }
    expecting_name = !expecting_name;
  }
  if (!expecting_name) return fail(problem, "header '" + std::string(name) + "' has no value");
  return true;
}

bool KcatReader::read_line(std::string_view line, BrokerRecord& r, std::string* problem) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return fail(problem, "blank line");
  // As the letters reader says it: simdjson would call it bad JSON.
  if (line.starts_with(kUtf8ByteOrderMark)) {
    problem_at = line.data();
    return fail(problem, std::string(kByteOrderMarkProblem));
  }
  size_t shape_at = 0;
  switch (scan_json_shape(line, kMaxJsonDepth, &shape_at)) {
    case JsonShape::kTooDeep:
      problem_at = line.data() + shape_at;
      return fail(problem, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    case JsonShape::kTrailing:
      problem_at = line.data() + shape_at;
      return fail(problem, "trailing content after the JSON object");
    case JsonShape::kOk:
      break;
  }
  simdjson::padded_string_view padded(line.data(), line.size(), line.size() + LineReader::kPadding);
  od::document document;
  simdjson::error_code iterate_error = parser.iterate(padded).get(document);
  if (iterate_error == simdjson::UTF8_ERROR) {
    repaired_line.clear();
    for (size_t i = 0; i < line.size();) {
      const size_t length = utf8_sequence_length(line, i);
      if (length == 0) {
        repaired_line += "\xEF\xBF\xBD";
        ++i;
      } else {
        repaired_line.append(line.substr(i, length));
        i += length;
      }
    }
    const size_t size = repaired_line.size();
    repaired_line.append(LineReader::kPadding, ' ');
    padded = simdjson::padded_string_view(repaired_line.data(), size, repaired_line.size());
    r.repaired = true;
    iterate_error = parser.iterate(padded).get(document);
  }
  if (iterate_error) return fail(problem, describe_json_error(iterate_error));
  od::json_type top_type;
  if (auto error = document.type().get(top_type)) return fail(problem, describe_json_error(error));
  if (top_type != od::json_type::object) {
    problem_at = line.data() + line.find_first_not_of(" \t\r");  // not blank: checked above
    return fail(problem, "not a JSON object");
  }
  od::object object;
  if (auto error = document.get_object().get(object))
    return fail(problem, describe_json_error(error));
  const auto& names = kcat_key_names();
  bool seen[kKcatKeyCount] = {};
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field))
      return fail(problem, describe_json_error(error));
    // Taken before unescaped_key(), which consumes the key (its raw() is then null).
    const char* const key_raw = field.key().raw();
    std::string_view name;
    if (auto error = field.unescaped_key().get(name))
      return fail(problem, describe_json_error(error));
    uint32_t k = 0;
    while (k < kKcatKeyCount && names[k] != name) ++k;
    if (k == kKcatKeyCount) {
      problem_at = at_key(key_raw, padded, line);
      std::string what = "unknown key " + quote_for_reason(name) + " in a kcat -J record";
      const std::string suggestion = closest_match(name, names);
      if (!suggestion.empty()) what += " (did you mean '" + suggestion + "'?)";
      return fail(problem, std::move(what));
    }
    if (seen[k]) {
      problem_at = at_key(key_raw, padded, line);
      return fail(problem, "duplicate key '" + names[k] + "'");
    }
    seen[k] = true;
    od::value value = field.value();
    od::json_type type;
    if (auto error = value.type().get(type)) return fail(problem, describe_json_error(error));
    const auto want_string = [&](std::string_view* out) {
      if (type != od::json_type::string) return fail(problem, names[k] + " must be a string");
      if (auto error = value.get_string().get(*out))
        return fail(problem, describe_json_error(error));
      return true;
    };
    const auto want_int = [&](int64_t* out) {
      if (type != od::json_type::number || value.get_int64().get(*out)) {
        return fail(problem, names[k] + " must be an integer");
      }
      return true;
    };
    const auto want_nullable_string = [&](std::string_view* out, bool* is_null) {
      if (type == od::json_type::null) {
        bool null_ok = false;
        if (value.is_null().get(null_ok) || !null_ok)
          return fail(problem, "bad JSON (malformed literal)");
        *is_null = true;
        return true;
      }
      *is_null = false;
      return want_string(out);
    };
    std::string_view ignored_text;
    int64_t ignored_number = 0;
    bool ok = true;
    switch (static_cast<KcatKey>(k)) {
      case kTopic:
        ok = want_string(&r.topic);
        break;
      case kPartition:
        ok = want_int(&r.partition);
        break;
      case kOffset:
        ok = want_int(&r.offset);
        break;
      case kTs:
        ok = want_int(&r.timestamp);
        r.has_timestamp = ok;
        break;
      case kBroker:
      case kKeySchemaId:
      case kValueSchemaId:
        ok = want_int(&ignored_number);
        break;
      case kTstype:
      case kKeyError:
      case kPayloadError:
        ok = want_string(&ignored_text);
        break;
      case kHeaders:
        ok = read_headers(value, &r, problem);
        break;
      case kKey:
        ok = want_nullable_string(&r.key, &r.key_null);
        break;
      case kPayload:
        ok = want_nullable_string(&r.payload, &r.payload_null);
        break;
      case kKcatKeyCount:
        break;
    }
    if (!ok) {
      // The value of this key is what is wrong (its type, or bad JSON inside it).
      problem_at = at_key(key_raw, padded, line);
      while (problem_at < line.data() + line.size() && *problem_at != ':') ++problem_at;
      if (problem_at < line.data() + line.size()) ++problem_at;
      while (problem_at < line.data() + line.size() && (*problem_at == ' ' || *problem_at == '\t'))
        ++problem_at;
      return false;
    }
  }
  if (!document.current_location().error())
    return fail(problem, "trailing content after the JSON object");
  for (const KcatKey required : {kTopic, kPartition, kOffset, kKey, kPayload}) {
    if (!seen[required])
      return fail(problem, "missing key '" + names[required] + "' (not kcat -J output?)");
  }
  return true;
}

}  // namespace

KafkaParser::KafkaParser(const Table& table, const Mapping& mapping, WarningSink warn)
    : MappedParser(table, mapping, std::make_unique<KcatReader>(), std::move(warn)) {}

}  // namespace replaygate::inputs
