// Service Bus dead-letter messages -> BrokerRecord (see servicebus.h).
#include "inputs/servicebus.h"

#include <simdjson.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/diagnostic.h"

namespace replaygate::inputs {
namespace {

namespace dom = simdjson::dom;

const std::vector<std::string>& message_keys() {
  static const std::vector<std::string> keys = {
      "messageId",     "sequenceNumber",   "enqueuedTimeUtc",
      "deliveryCount", "deadLetterSource", "subject",
      "contentType",   "correlationId",    "sessionId",
      "partitionKey",  "timeToLive",       "applicationProperties",
      "body"};
  return keys;
}

class ServiceBusReader : public BrokerRecordReader {
 public:
  bool read(std::string_view text, BrokerRecord* r, std::string* problem,
            size_t* problem_offset) override {
    r->clear();
    *problem_offset = RecordParser::kNoOffset;
    if (text.find_first_not_of(" \t\r") == std::string_view::npos) {
      *problem = "blank line";
      return false;
    }
    if (text.starts_with(kUtf8ByteOrderMark)) {
      *problem = std::string(kByteOrderMarkProblem);
      *problem_offset = 0;
      return false;
    }
    size_t at = 0;
    switch (scan_json_shape(text, kMaxJsonDepth, &at)) {
      case JsonShape::kTooDeep:
        *problem = "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels";
        *problem_offset = at;
        return false;
      case JsonShape::kTrailing:
        *problem = "trailing content after the JSON object";
        *problem_offset = at;
        return false;
      case JsonShape::kOk:
        break;
    }
    dom::element root;
    if (auto error = parser_.parse(text.data(), text.size(), false).get(root)) {
      *problem = describe_json_error(error);
      *problem_offset = locate_json_error(text).offset;
      return false;
    }
    dom::object message;
    if (root.get_object().get(message)) {
      *problem = "not a JSON object (a Service Bus message)";
      return false;
    }
    r->topic_missing = true;
    std::vector<std::string_view> seen;
    for (const dom::key_value_pair field : message) {
      const std::string_view key = field.key;
      const auto& keys = message_keys();
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        *problem = "unknown key " + quote_for_reason(key) + " in a Service Bus message";
        const std::string suggestion = closest_match(key, keys);
        if (!suggestion.empty()) *problem += " (did you mean '" + suggestion + "'?)";
        return false;
      }
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        *problem = "duplicate key " + quote_for_reason(key);
        return false;
      }
      seen.push_back(key);
      const dom::element value = field.value;
      const auto nullable_string = [&](std::string_view* out, bool* is_null) {
        if (value.is_null()) {
          *is_null = true;
          return true;
        }
        *is_null = false;
        if (value.get_string().get(*out)) {
          *problem = std::string(key) + " must be a string or null";
          return false;
        }
        return true;
      };
      std::string_view ignored;
      bool ignored_null = false;
      if (key == "messageId") {
        if (!nullable_string(&r->key, &r->key_null)) return false;
      } else if (key == "body") {
        if (!nullable_string(&r->payload, &r->payload_null)) return false;
      } else if (key == "deadLetterSource") {
        bool is_null = false;
        if (!nullable_string(&r->topic, &is_null)) return false;
        r->topic_missing = is_null;
      } else if (key == "sequenceNumber") {
        if (value.get_int64().get(r->offset)) {
          *problem = "sequenceNumber must be an integer";
          return false;
        }
      } else if (key == "deliveryCount") {
        int64_t count = 0;
        if (value.get_int64().get(count) || count < 0) {
          r->delivery_count_problem = "deliveryCount is not an integer >= 0";
        } else {
          r->delivery_count = count;
        }
      } else if (key == "applicationProperties") {
        if (!read_properties(value, r, problem)) return false;
      } else if (key == "timeToLive") {
        // A duration: a string ("14.00:00:00") or a number of seconds; not mapped.
      } else if (!nullable_string(&ignored, &ignored_null)) {
        return false;
      }
    }
    return true;
  }

 private:
  static bool read_properties(const dom::element& value, BrokerRecord* r, std::string* problem) {
    if (value.is_null()) return true;
    dom::object properties;
    if (value.get_object().get(properties)) {
      *problem = "applicationProperties must be an object or null";
      return false;
    }
    for (const dom::key_value_pair field : properties) {
      for (const auto& [name, unused] : r->headers) {
        if (name == field.key) {
          *problem = "application property " + quote_for_reason(field.key) + " given twice";
          return false;
        }
      }
      std::optional<std::string_view> text;
      switch (field.value.type()) {
        case dom::element_type::NULL_VALUE:
          break;
        case dom::element_type::STRING:
          text = field.value.get_string().value_unsafe();
          break;
        case dom::element_type::INT64:
          r->owned.push_back(std::to_string(field.value.get_int64().value_unsafe()));
          text = r->owned.back();
          break;
        case dom::element_type::BOOL:
          text = field.value.get_bool().value_unsafe() ? "true" : "false";
          break;
        default:
          r->owned.push_back(simdjson::minify(field.value));
          text = r->owned.back();
          break;
      }
      r->headers.emplace_back(field.key, text);
    }
    return true;
  }

  dom::parser parser_{kMaxRecordBytes + 64};
};

}  // namespace

std::unique_ptr<BrokerRecordReader> make_servicebus_reader() {
  return std::make_unique<ServiceBusReader>();
}

}  // namespace replaygate::inputs
