// The mapping engine: a BrokerRecord -> Input through the reviewed mapping (see mapped_parser.h
// and docs/input-mapping.md).
#include "inputs/mapped_parser.h"

#include <simdjson.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/diagnostic.h"
#include "common/escape.h"
#include "common/utf8.h"
#include "inputs/decoding.h"
#include "inputs/header_names.h"
#include "inputs/json_keys.h"

namespace replaygate::inputs {

namespace dom = simdjson::dom;

namespace {

// One value read from a record, before conversion to the field's type.
struct Raw {
  enum class Kind { kMissing, kNull, kText, kJsonText, kInt, kBool, kOther };
  Kind kind = Kind::kMissing;
  std::string_view text;  // kText (converts to any type) / kJsonText (a JSON string)
  int64_t number = 0;
  bool flag = false;
  std::string other;  // kOther: what it is, e.g. "a number that is not an integer"
};

// What load_payload_with_big_numbers() puts in place of a number simdjson cannot hold, followed by
// the number's index (a NUL first: no text payload field is expected to start with one, and a
// payload that has such a string is refused rather than misread).
constexpr std::string_view kMarkerText = std::string_view("\0rg-number:", 11);

// What is wrong with the JSON number `token` for simdjson, "" when nothing (or when it is not a
// JSON number: the parser then says so): "an integer beyond int64" for an integer outside
// [-2^63, 2^64) (one up to 2^64 - 1 is read, and reported the same way by resolve_pointer()),
// "a number out of range: 1e400" for one no double holds (shown cut at 40 characters).
std::string number_out_of_range(std::string_view token) {
  if (!is_json_number(token)) return "";
  const bool integer = token.find_first_of(".eE") == std::string_view::npos;
  const std::string copy(token);
  if (integer) {
    const bool negative = token.starts_with('-');
    errno = 0;
    if (negative) {
      (void)std::strtoll(copy.c_str(), nullptr, 10);
    } else {
      (void)std::strtoull(copy.c_str(), nullptr, 10);
    }
    return errno == ERANGE ? "an integer beyond int64" : "";
  }
  errno = 0;
  const double magnitude = std::strtod(copy.c_str(), nullptr);
  if (errno != ERANGE || !std::isinf(magnitude)) return "";
  constexpr size_t kShown = 40;  // a number may be a megabyte of digits
  return "a number out of range: " +
         (token.size() > kShown ? std::string(token.substr(0, kShown)) + "..." : copy);
}

bool fail_record(std::string* problem, std::string what) {
  *problem = "invalid record: " + std::move(what);
  return false;
}

}  // namespace

struct MappedParser::State {
  const Table* table = nullptr;
  const Mapping* mapping = nullptr;
  dom::parser payload_parser;

  // The current record, as the reader read it.
  BrokerRecord record;
  std::string coordinates;
  std::string message_id_text, body_hash_text;
  // The payload document, parsed on first use per record.
  bool payload_tried = false;
  std::string payload_problem;
  dom::element payload_root;
  // A payload with numbers simdjson cannot hold, with those numbers replaced by markers
  // (load_payload_with_big_numbers()), and what each marker stood for ("an integer beyond int64").
  std::string rewritten_payload;
  std::vector<std::string> number_problems;
  // Values made by a decode: (base64 bytes, a JSON string), valid until the next record.
  std::deque<std::string> decoded;
  dom::parser scalar_parser;
  // The dump format's reader: kcat -J lines (kafka.cc), a management-API message, ...
  std::unique_ptr<BrokerRecordReader> reader;
  // Warnings: a header one edit away from a mapped header's skeleton (`x-replays`), once for
  // each (header, mapped header) pair (`warned`); a near miss makes the record invalid instead,
  // see extract().
  MappedParser::WarningSink warn;
  std::set<std::string> warned;
  // header_name_skeleton() of the names seen (mapped and record headers), kept across records:
  // the same few names come in every letter, and the skeleton walks code points (it was 11% of
  // the live gate's CPU). Cleared when it reaches kMaxSkeletons, so odd names cannot grow it.
  static constexpr size_t kMaxSkeletons = 4096;
  std::unordered_map<std::string, std::string> skeletons;
  const std::string& skeleton_of(std::string_view name) {
    if (const auto it = skeletons.find(std::string(name)); it != skeletons.end()) return it->second;
    if (skeletons.size() >= kMaxSkeletons) skeletons.clear();
    return skeletons.emplace(std::string(name), header_name_skeleton(name)).first->second;
  }

  void reset() {
    coordinates.clear();
    payload_tried = false;
    payload_problem.clear();
    number_problems.clear();
    decoded.clear();
  }

  bool load_payload();
  void load_payload_with_big_numbers();
  bool extract(const ValueSource& source, Raw* raw, std::string* why);
  bool resolve_pointer(const ValueSource& source, Raw* raw, std::string* why);
  bool decode(const ValueSource& source, Raw* raw, std::string* why);
};

bool MappedParser::State::load_payload() {
  if (payload_tried) return payload_problem.empty();
  payload_tried = true;
  if (!record.payload_problem.empty()) {
    payload_problem = "the payload " + record.payload_problem;
  } else if (record.payload_null) {
    payload_problem = "the payload is null";
  } else if (scan_json_shape(record.payload, kMaxJsonDepth) == JsonShape::kTooDeep) {
    payload_problem = "the payload nests deeper than " + std::to_string(kMaxJsonDepth) + " levels";
  } else if (auto error = payload_parser.parse(record.payload.data(), record.payload.size(), true)
                              .get(payload_root)) {
    payload_problem = error == simdjson::UTF8_ERROR ? "the payload is not valid UTF-8"
                      : record.payload.starts_with(kUtf8ByteOrderMark)
                          ? "the payload " + std::string(kByteOrderMarkProblem)
                          : "the payload is not JSON";
    if (error != simdjson::UTF8_ERROR) load_payload_with_big_numbers();
  }
  // A key given twice anywhere in the payload leaves the document without one meaning (the
  // consumer's parser kept one of the two): no input is read from it (inputs/json_keys.h).
  if (payload_problem.empty()) {
    static constexpr std::string_view kDuplicate = "duplicate key";
    const std::string duplicate = duplicate_key_problem(payload_root);
    if (!duplicate.empty()) {
      payload_problem = "the payload repeats key" + duplicate.substr(kDuplicate.size());
    }
  }
  return payload_problem.empty();
}

// simdjson refuses a whole document for one number it cannot hold (an integer beyond 64 bits,
// 1e400), although the JSON is valid and only that value is wrong. Such numbers are replaced by
// marker strings ("\u0000rg-number:K") and the payload is parsed again; resolve_pointer() then
// reports a marker as what the number was. Only on this error path. The markers must be the only
// strings that start with the prefix: if the payload has one already, the payload stays refused.
void MappedParser::State::load_payload_with_big_numbers() {
  static constexpr std::string_view kMarker = "\\u0000rg-number:";  // as written in JSON
  number_problems.clear();
  rewritten_payload.clear();
  bool in_string = false;
  for (size_t i = 0; i < record.payload.size();) {
    const char c = record.payload[i];
    if (in_string) {
      // A backslash escapes the next byte (\" stays inside the string).
      const size_t length = c == '\\' && i + 1 < record.payload.size() ? 2 : 1;
      rewritten_payload += record.payload.substr(i, length);
      in_string = c != '"';
      i += length;
      continue;
    }
    if (c != '-' && (c < '0' || c > '9')) {
      in_string = c == '"';
      rewritten_payload += c;
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < record.payload.size() &&
           std::string_view("0123456789+-.eE").find(record.payload[end]) !=
               std::string_view::npos) {
      ++end;
    }
    const std::string_view token = record.payload.substr(i, end - i);
    const std::string problem = number_out_of_range(token);
    if (problem.empty()) {
      rewritten_payload += token;
    } else {
      rewritten_payload +=
          "\"" + std::string(kMarker) + std::to_string(number_problems.size()) + "\"";
      number_problems.push_back(problem);
    }
    i = end;
  }
  if (number_problems.empty()) return;
  if (payload_parser.parse(rewritten_payload.data(), rewritten_payload.size(), true)
          .get(payload_root)) {
    return;
  }
  // Every marker must be one of ours: count the strings with the prefix.
  size_t markers = 0;
  std::vector<dom::element> pending{payload_root};
  while (!pending.empty()) {
    const dom::element element = pending.back();
    pending.pop_back();
    if (element.is_string()) {
      markers += element.get_string().value_unsafe().starts_with(kMarkerText) ? 1 : 0;
    } else if (element.is_array()) {
      const dom::array array = element.get_array().value_unsafe();
      for (const dom::element child : array) pending.push_back(child);
    } else if (element.is_object()) {
      const dom::object object = element.get_object().value_unsafe();
      for (const dom::key_value_pair pair : object) pending.push_back(pair.value);
    }
  }
  if (markers == number_problems.size()) payload_problem.clear();
}

bool MappedParser::State::resolve_pointer(const ValueSource& source, Raw* raw, std::string* why) {
  if (!load_payload()) {
    *why = payload_problem;
    return false;
  }
  dom::element current = payload_root;
  for (const std::string& token : source.pointer) {
    if (current.is_object()) {
      dom::object object = current.get_object().value_unsafe();
      int matches = 0;
      for (dom::key_value_pair pair : object) {
        if (pair.key == token) {
          ++matches;
          current = pair.value;
        }
      }
      if (matches == 0) {
        raw->kind = Raw::Kind::kMissing;
        return true;
      }
      if (matches > 1) {
        *why = "the payload repeats key " + quote_for_reason(token);
        return false;
      }
    } else if (current.is_array()) {
      int64_t index = 0;
      const bool canonical = !token.empty() && (token == "0" || token[0] != '0');
      if (!canonical || !parse_int64_strict(token, &index) || index < 0) {
        *why = source.describe() + ": " + quote_for_reason(token) + " is not an array index";
        return false;
      }
      auto element = current.get_array().value_unsafe().at(static_cast<size_t>(index));
      if (element.error()) {
        raw->kind = Raw::Kind::kMissing;
        return true;
      }
      current = element.value_unsafe();
    } else {
      *why = source.describe() + " goes through a value that is not an object or array";
      return false;
    }
  }
  switch (current.type()) {
    case dom::element_type::NULL_VALUE:
      raw->kind = Raw::Kind::kNull;
      break;
    case dom::element_type::STRING:
      raw->kind = Raw::Kind::kJsonText;
      raw->text = current.get_string().value_unsafe();
      if (!number_problems.empty() && raw->text.starts_with(kMarkerText)) {
        raw->kind = Raw::Kind::kOther;
        raw->other =
            number_problems.at(std::stoul(std::string(raw->text.substr(kMarkerText.size()))));
      }
      break;
    case dom::element_type::INT64:
      raw->kind = Raw::Kind::kInt;
      raw->number = current.get_int64().value_unsafe();
      break;
    case dom::element_type::BOOL:
      raw->kind = Raw::Kind::kBool;
      raw->flag = current.get_bool().value_unsafe();
      break;
    case dom::element_type::UINT64:
      raw->kind = Raw::Kind::kOther;
      raw->other = "an integer beyond int64";
      break;
    case dom::element_type::DOUBLE:
      raw->kind = Raw::Kind::kOther;
      raw->other = "a number that is not an integer";
      break;
    case dom::element_type::ARRAY:
      raw->kind = Raw::Kind::kOther;
      raw->other = "an array";
      break;
    case dom::element_type::OBJECT:
      raw->kind = Raw::Kind::kOther;
      raw->other = "an object";
      break;
  }
  return true;
}

bool MappedParser::State::extract(const ValueSource& source, Raw* raw, std::string* why) {
  *raw = Raw{};
  switch (source.kind) {
    case SourceKind::kHeader: {
      int count = 0;
      for (const auto& [name, value] : record.headers) {
        // Header names match exactly (Kafka's are case-sensitive). A near miss (`X-Replay` for a
        // mapped `x-replay`) is neither read as the mapped header nor taken for its absence (an
        // absent replay counter would let the record replay): the value is invalid.
        if (same_but_ascii_case(name, source.name)) {
          *why = "header " + quote_for_reason(name) + " differs from the mapped header " +
                 quote_for_reason(source.name) +
                 " only in ASCII case: header names match exactly, so the record's value for it "
                 "is unknown; fix the producer or the mapping";
          return false;
        }
        if (name != source.name) {
          const std::string skeleton = skeleton_of(name);
          const std::string& mapped = skeleton_of(source.name);
          if (skeleton == mapped) {
            *why = "header " + quote_for_reason(name) + " is a near miss of the mapped header " +
                   quote_for_reason(source.name) +
                   " (the same name once spaces, invisible characters, dashes, look-alike letters "
                   "and case are ignored): header names match exactly, so the record's value for "
                   "it is unknown; fix the producer or the mapping";
            return false;
          }
          if (one_edit_apart(skeleton, mapped) &&
              warned.insert(std::string(name) + '\0' + source.name).second) {
            const std::string warning =
                "header " + quote_for_reason(name) + " is one letter away from the mapped header " +
                quote_for_reason(source.name) +
                " and is not read for it (header names match exactly); if it means the same, fix "
                "the producer or the mapping";
            if (warn) {
              warn(warning);
            } else {
              std::fprintf(stderr, "replaygate: warning: %s\n", warning.c_str());
            }
          }
          continue;
        }
        ++count;
        if (value.has_value()) {
          raw->kind = Raw::Kind::kText;
          raw->text = *value;
        } else {
          raw->kind = Raw::Kind::kNull;
        }
      }
      if (source.occurrence == Occurrence::kCount) {
        *raw = Raw{};
        if (count > 0) {
          raw->kind = Raw::Kind::kInt;
          raw->number = count;
        }
        return true;
      }
      if (count > 1 && source.occurrence == Occurrence::kOnly) {
        *why = source.describe() + " appears " + std::to_string(count) +
               " times (the mapping can say occurrence: first or last)";
        return false;
      }
      if (count > 1 && source.occurrence == Occurrence::kFirst) {
        for (const auto& [name, value] : record.headers) {
          if (name != source.name) continue;
          raw->kind = value.has_value() ? Raw::Kind::kText : Raw::Kind::kNull;
          raw->text = value.value_or(std::string_view());
          break;
        }
      }
      return true;
    }
    case SourceKind::kPayload:
      return resolve_pointer(source, raw, why);
    case SourceKind::kConstant:  // the mapping's (or the queue attributes file's) text
      raw->kind = Raw::Kind::kText;
      raw->text = source.name;
      return true;
    case SourceKind::kRecord:
      switch (source.part) {
        case RecordPart::kTopic:
          if (record.topic_missing) return true;
          raw->kind = Raw::Kind::kText;
          raw->text = record.topic;
          return true;
        case RecordPart::kPartition:
          raw->kind = Raw::Kind::kInt;
          raw->number = record.partition;
          return true;
        case RecordPart::kOffset:
          raw->kind = Raw::Kind::kInt;
          raw->number = record.offset;
          return true;
        case RecordPart::kTimestamp:
          if (record.has_timestamp) {
            raw->kind = Raw::Kind::kInt;
            raw->number = record.timestamp;
          }
          return true;
        case RecordPart::kKey:
          raw->kind = record.key_null ? Raw::Kind::kNull : Raw::Kind::kText;
          raw->text = record.key;
          return true;
        case RecordPart::kDeliveryCount:
          if (!record.delivery_count_problem.empty()) {
            *why = source.describe() + ": " + record.delivery_count_problem;
            return false;
          }
          if (record.delivery_count.has_value()) {
            raw->kind = Raw::Kind::kInt;
            raw->number = *record.delivery_count;
          }
          return true;
        case RecordPart::kCoordinates:
          if (coordinates.empty()) {
            coordinates = std::string(record.topic) + "/" + std::to_string(record.partition) + "/" +
                          std::to_string(record.offset);
          }
          raw->kind = Raw::Kind::kText;
          raw->text = coordinates;
          return true;
      }
  }
  return true;
}

// Applies the source's `decode:` to a value read as bytes (see decoding.h); false with *why when
// it does not decode. A missing or null value stays as it is.
bool MappedParser::State::decode(const ValueSource& source, Raw* raw, std::string* why) {
  if (source.decoding == Decoding::kText || raw->kind == Raw::Kind::kMissing ||
      raw->kind == Raw::Kind::kNull) {
    return true;
  }
  const std::string prefix =
      source.describe() + " does not decode as " + decoding_name(source.decoding) + ": ";
  if (raw->kind != Raw::Kind::kText && raw->kind != Raw::Kind::kJsonText) {
    *why = prefix + (raw->kind == Raw::Kind::kInt    ? std::string("it is a JSON number")
                     : raw->kind == Raw::Kind::kBool ? std::string("it is a JSON boolean")
                                                     : "it is " + raw->other);
    return false;
  }
  std::string detail;
  switch (source.decoding) {
    case Decoding::kText:
      return true;
    case Decoding::kUtf8:
      if (!check_utf8(raw->text, &detail)) break;
      raw->kind = Raw::Kind::kText;
      return true;
    case Decoding::kBeInt:
      if (!decode_be_int(raw->text, &raw->number, &detail)) break;
      raw->kind = Raw::Kind::kInt;
      return true;
    case Decoding::kDecimal:
      if (!decode_decimal(raw->text, &raw->number, &detail)) break;
      raw->kind = Raw::Kind::kInt;
      return true;
    case Decoding::kBase64: {
      std::string bytes;
      if (!decode_base64(raw->text, &bytes, &detail)) break;
      if (!check_utf8(bytes, &detail)) {
        detail = "the decoded bytes are " + detail;
        break;
      }
      decoded.push_back(std::move(bytes));
      raw->kind = Raw::Kind::kText;
      raw->text = decoded.back();
      return true;
    }
    case Decoding::kJson: {
      decoded.emplace_back(raw->text);
      const std::string& copy = decoded.back();
      dom::element element;
      if (scan_json_shape(copy, kMaxJsonDepth) != JsonShape::kOk ||
          scalar_parser.parse(copy.data(), copy.size(), true).get(element)) {
        detail = "not a JSON document";
        break;
      }
      switch (element.type()) {
        case dom::element_type::NULL_VALUE:
          raw->kind = Raw::Kind::kNull;
          return true;
        case dom::element_type::STRING:
          decoded.emplace_back(element.get_string().value_unsafe());
          raw->kind = Raw::Kind::kJsonText;
          raw->text = decoded.back();
          return true;
        case dom::element_type::INT64:
          raw->kind = Raw::Kind::kInt;
          raw->number = element.get_int64().value_unsafe();
          return true;
        case dom::element_type::BOOL:
          raw->kind = Raw::Kind::kBool;
          raw->flag = element.get_bool().value_unsafe();
          return true;
        default:
          detail = "not a JSON string, integer, boolean or null";
          break;
      }
      break;
    }
  }
  *why = prefix + detail;
  return false;
}

namespace {

std::string raw_as_text(const Raw& raw) {
  switch (raw.kind) {
    case Raw::Kind::kText:
    case Raw::Kind::kJsonText:
      return std::string(raw.text);
    case Raw::Kind::kInt:
      return std::to_string(raw.number);
    case Raw::Kind::kBool:
      return raw.flag ? "true" : "false";
    default:
      return "";
  }
}

// Sets field `m.field` from `raw`; false with *why when the value does not fit the type.
bool convert(const FieldMapping& m, const Raw& raw, Input& input, std::string* why) {
  switch (raw.kind) {
    case Raw::Kind::kMissing:
      *why = "missing";  // handled by the caller
      return false;
    case Raw::Kind::kNull:
      input.set_null(m.field);
      return true;
    case Raw::Kind::kOther:
      *why = raw.other;
      return false;
    default:
      break;
  }
  switch (m.type) {
    case FieldType::kString:
    case FieldType::kEnum:
      if (raw.kind == Raw::Kind::kText || raw.kind == Raw::Kind::kJsonText) {
        input.set_string(m.field, raw.text);
        return true;
      }
      *why = (raw.kind == Raw::Kind::kInt ? "an integer" : "a boolean") +
             std::string(", not a string");
      return false;
    case FieldType::kInt: {
      if (raw.kind == Raw::Kind::kInt) {
        input.set_int(m.field, raw.number);
        return true;
      }
      int64_t number = 0;
      if (raw.kind == Raw::Kind::kText && parse_int64_strict(raw.text, &number)) {
        input.set_int(m.field, number);
        return true;
      }
      *why = raw.kind == Raw::Kind::kText       ? "not an integer: " + quote_for_reason(raw.text)
             : raw.kind == Raw::Kind::kJsonText ? "a JSON string, not an integer"
                                                : "a boolean, not an integer";
      return false;
    }
    case FieldType::kBool: {
      if (raw.kind == Raw::Kind::kBool) {
        input.set_bool(m.field, raw.flag);
        return true;
      }
      bool flag = false;
      if (raw.kind == Raw::Kind::kText && parse_bool_strict(raw.text, &flag)) {
        input.set_bool(m.field, flag);
        return true;
      }
      *why = raw.kind == Raw::Kind::kText       ? "not true or false: " + quote_for_reason(raw.text)
             : raw.kind == Raw::Kind::kJsonText ? "a JSON string, not a boolean"
                                                : "an integer, not a boolean";
      return false;
    }
  }
  return false;
}

}  // namespace

MappedParser::MappedParser(const Table& table, const Mapping& mapping,
                           std::unique_ptr<BrokerRecordReader> reader, WarningSink warn)
    : state_(std::make_unique<State>()) {
  state_->table = &table;
  state_->mapping = &mapping;
  state_->reader = std::move(reader);
  state_->warn = std::move(warn);
}

MappedParser::~MappedParser() = default;

std::unique_ptr<RecordParser> make_mapped_parser(const Table& table, const Mapping& mapping,
                                                 std::unique_ptr<BrokerRecordReader> reader) {
  return std::make_unique<MappedParser>(table, mapping, std::move(reader));
}

bool MappedParser::parse(std::string_view line, Input& input, RecordMeta* meta,
                         std::string* problem) {
  State& s = *state_;
  input.clear();
  *meta = RecordMeta{};
  s.reset();
  std::string why;
  size_t at = kNoOffset;
  if (!s.reader->read(line, &s.record, &why, &at)) {
    problem_offset_ = at;
    return fail_record(problem, std::move(why));
  }
  // Metadata first, so that even an invalid record names its message.
  const auto read_meta = [&](const std::optional<ValueSource>& source, const char* name,
                             std::string* storage, std::string_view* out, bool* present) {
    if (!source.has_value()) return true;
    Raw raw;
    std::string why;
    if (!s.extract(*source, &raw, &why) || !s.decode(*source, &raw, &why)) {
      problem_offset_ = kNoOffset;  // a mapped value: the reason names it
      return fail_record(problem, std::string(name) + " (" + why + ")");
    }
    if (raw.kind == Raw::Kind::kMissing || raw.kind == Raw::Kind::kNull ||
        raw.kind == Raw::Kind::kOther) {
      return true;
    }
    *storage = raw_as_text(raw);
    *out = *storage;
    *present = true;
    return true;
  };
  if (!read_meta(s.mapping->message_id, "message_id", &s.message_id_text, &meta->message_id,
                 &meta->has_message_id) ||
      !read_meta(s.mapping->body_hash, "body_hash", &s.body_hash_text, &meta->body_hash,
                 &meta->has_body_hash)) {
    return false;
  }
  for (const FieldMapping& m : s.mapping->fields) {
    Raw raw;
    std::string why;
    const auto invalid = [&](const std::string& detail) {
      problem_offset_ = kNoOffset;  // a mapped value: the reason names it
      *problem = "invalid input: " + m.input + " (" + detail + ")";
      return false;
    };
    if (!s.extract(m.source, &raw, &why)) return invalid(why);
    // Repaired bytes never decode (a be-int of U+FFFD would be a guessed number).
    if (s.record.repaired && (raw.kind == Raw::Kind::kText || raw.kind == Raw::Kind::kJsonText) &&
        raw.text.find("\xEF\xBF\xBD") != std::string_view::npos) {
      return invalid(m.source.describe() + " is not valid UTF-8");
    }
    if (!s.decode(m.source, &raw, &why)) return invalid(why);
    // kcat prints a header without a value as null. It is there, so it is not "missing" (which
    // alone may be absent or defaulted): a counter sent as null counts nothing known, and reading
    // it as absent would let the letter replay. (message_id and body_hash are only echoed: a null
    // header leaves them out.)
    if (m.source.kind == SourceKind::kHeader && raw.kind == Raw::Kind::kNull) {
      return invalid(m.source.describe() + " is present but null");
    }
    if (raw.kind == Raw::Kind::kMissing) {
      if (m.default_text.has_value()) {
        raw.kind = Raw::Kind::kText;
        raw.text = *m.default_text;
      } else if (m.optional) {
        input.set_null(m.field);
        continue;
      } else {
        return invalid(m.source.describe() + " is missing");
      }
    }
    if (m.has_map && raw.kind != Raw::Kind::kNull) {
      const std::string key = raw_as_text(raw);
      const auto hit = raw.kind == Raw::Kind::kOther ? m.map.end() : m.map.find(key);
      if (hit == m.map.end()) {
        return invalid(raw.kind == Raw::Kind::kOther ? raw.other + " has no mapping"
                                                     : "no mapping for " + quote_for_reason(key));
      }
      raw.kind = Raw::Kind::kText;
      raw.text = hit->second;
    }
    if (!convert(m, raw, input, &why)) return invalid(m.source.describe() + " is " + why);
  }
  return true;
}

std::vector<RecordPartValue> MappedParser::record_parts() const {
  const State& s = *state_;
  std::vector<RecordPartValue> parts;
  const auto add = [&](std::string label, RecordPartValue::Kind kind, std::string_view text,
                       int64_t number) {
    RecordPartValue part;
    part.label = std::move(label);
    part.kind = kind;
    part.text = text;
    part.number = number;
    parts.push_back(std::move(part));
  };
  add("topic", RecordPartValue::Kind::kText, s.record.topic, 0);
  add("partition", RecordPartValue::Kind::kInt, {}, s.record.partition);
  add("offset", RecordPartValue::Kind::kInt, {}, s.record.offset);
  if (s.record.has_timestamp) {
    add("timestamp", RecordPartValue::Kind::kInt, {}, s.record.timestamp);
  }
  add("key", s.record.key_null ? RecordPartValue::Kind::kNull : RecordPartValue::Kind::kText,
      s.record.key, 0);
  for (const auto& [name, value] : s.record.headers) {
    add("header", value ? RecordPartValue::Kind::kText : RecordPartValue::Kind::kNull,
        value.value_or(""), 0);
    parts.back().name = std::string(name);
  }
  if (s.record.delivery_count.has_value()) {
    add("delivery-count", RecordPartValue::Kind::kInt, {}, *s.record.delivery_count);
  }
  add("payload",
      s.record.payload_null ? RecordPartValue::Kind::kNull : RecordPartValue::Kind::kSize, {},
      static_cast<int64_t>(s.record.payload.size()));
  return parts;
}

std::optional<InputOrigin> MappedParser::input_origin(uint32_t field) const {
  State& s = *state_;
  for (const FieldMapping& m : s.mapping->fields) {
    if (m.field != field) continue;
    InputOrigin origin;
    origin.source = m.source.describe();
    switch (m.source.kind) {
      case SourceKind::kHeader:
        origin.part = "header";
        origin.header = m.source.name;
        break;
      case SourceKind::kPayload:
        origin.part = "payload";
        break;
      case SourceKind::kRecord:  // "topic", ..., "coordinates": record_parts()' labels
        origin.part = m.source.name;
        break;
      case SourceKind::kConstant:
        origin.part = "constant";
        break;
    }
    Raw raw;
    std::string why;
    if (!s.extract(m.source, &raw, &why) ||
        !s.decode(m.source, &raw, &why)) {  // parse() would have failed: not after a true
      origin.found = InputOrigin::Found::kOther;
      origin.text = why;
      return origin;
    }
    switch (raw.kind) {
      case Raw::Kind::kMissing:
        origin.defaulted = m.default_text.has_value();
        origin.optional = !origin.defaulted && m.optional;
        break;
      case Raw::Kind::kNull:
        origin.found = InputOrigin::Found::kNull;
        break;
      case Raw::Kind::kText:
      case Raw::Kind::kJsonText:
        origin.found = InputOrigin::Found::kText;
        origin.text = std::string(raw.text);
        break;
      case Raw::Kind::kInt:
        origin.found = InputOrigin::Found::kInt;
        origin.number = raw.number;
        break;
      case Raw::Kind::kBool:
        origin.found = InputOrigin::Found::kBool;
        origin.flag = raw.flag;
        break;
      case Raw::Kind::kOther:
        origin.found = InputOrigin::Found::kOther;
        origin.text = raw.other;
        break;
    }
    // As parse() applies map: (a default goes through it too).
    origin.mapped = m.has_map && raw.kind != Raw::Kind::kNull &&
                    (raw.kind != Raw::Kind::kMissing || origin.defaulted);
    return origin;
  }
  return std::nullopt;
}

}  // namespace replaygate::inputs
