// RabbitMQ management-API messages -> BrokerRecord (see rabbitmq.h).
#include "inputs/rabbitmq.h"

#include <simdjson.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "inputs/decoding.h"
#include "inputs/json_record.h"

namespace replaygate::inputs {
namespace {

namespace dom = simdjson::dom;

constexpr JsonRecordOptions kRecord{
    .what = "a management-API message", .blank = "blank record", .byte_order_mark = true};

// The keys a management-API "get" message has (3.10 to 4.x).
const std::vector<std::string>& message_keys() {
  static const std::vector<std::string> keys = {"payload_bytes", "redelivered",     "exchange",
                                                "routing_key",   "message_count",   "properties",
                                                "payload",       "payload_encoding"};
  return keys;
}

class RabbitMqReader : public BrokerRecordReader {
 public:
  bool read(std::string_view text, BrokerRecord* r, std::string* problem,
            size_t* problem_offset) override {
    r->clear();
    const uint64_t position = position_++;
    dom::object message;
    if (!read_json_object(text, parser_, kRecord, &message, problem, problem_offset)) return false;
    r->offset = static_cast<int64_t>(position);
    std::vector<std::string_view> seen;
    bool has_payload = false, has_encoding = false, has_properties = false;
    std::string_view encoding;
    dom::object properties;
    for (const dom::key_value_pair field : message) {
      const std::string_view key = field.key;
      if (!known_key(key, message_keys(), "a management-API message", problem)) return false;
      seen.push_back(key);
      const dom::element value = field.value;
      const auto want_string = [&](std::string_view* out) {
        if (value.get_string().get(*out)) {
          *problem = std::string(key) + " must be a string";
          return false;
        }
        return true;
      };
      std::string_view ignored;
      if (key == "routing_key") {
        if (!want_string(&r->topic)) return false;
      } else if (key == "exchange") {
        if (!want_string(&ignored)) return false;  // "" for the default exchange
      } else if (key == "payload") {
        if (!want_string(&r->payload)) return false;
        has_payload = true;
      } else if (key == "payload_encoding") {
        if (!want_string(&encoding)) return false;
        has_encoding = true;
      } else if (key == "properties") {
        if (value.get_object().get(properties)) {
          *problem = "properties must be an object";
          return false;
        }
        has_properties = true;
      } else if (key == "redelivered") {
        if (!value.is_bool()) {
          *problem = "redelivered must be true or false";
          return false;
        }
      } else {  // payload_bytes, message_count
        if (!value.is_int64()) {
          *problem = std::string(key) + " must be an integer";
          return false;
        }
      }
    }
    for (const char* required : {"payload", "payload_encoding", "properties", "routing_key"}) {
      if (std::find(seen.begin(), seen.end(), std::string_view(required)) == seen.end()) {
        *problem =
            std::string("missing key '") + required + "' (not a management-API /get message?)";
        return false;
      }
    }
    (void)has_payload;
    (void)has_properties;
    (void)has_encoding;
    if (encoding == "string") {
      r->payload_null = false;
    } else if (encoding == "base64") {
      std::string bytes, why;
      if (!decode_base64(r->payload, &bytes, &why)) {
        r->payload_problem = "does not decode (payload_encoding base64): " + why;
      } else {
        r->owned.push_back(std::move(bytes));
        r->payload = r->owned.back();
      }
      r->payload_null = false;
    } else {
      *problem = "payload_encoding must be string or base64, not " + quote_for_reason(encoding);
      return false;
    }
    return read_properties(properties, r, problem);
  }

 private:
  bool read_properties(const dom::object& properties, BrokerRecord* r, std::string* problem) {
    dom::object headers;
    bool has_headers = false;
    for (const dom::key_value_pair field : properties) {
      if (field.key == "headers") {
        if (field.value.get_object().get(headers)) {
          *problem = "properties.headers must be an object";
          return false;
        }
        has_headers = true;
      } else if (field.key == "message_id") {
        if (field.value.get_string().get(r->key)) {
          *problem = "properties.message_id must be a string";
          return false;
        }
        r->key_null = false;
      } else if (field.key == "timestamp") {
        if (field.value.get_int64().get(r->timestamp)) {
          *problem = "properties.timestamp must be an integer";
          return false;
        }
        r->has_timestamp = true;
      }
      // Other properties (delivery_mode, content_type, correlation_id, ...) are not mapped.
    }
    if (!has_headers) return true;
    std::string_view first_queue, first_reason;
    bool has_first_queue = false, has_first_reason = false;
    dom::element deaths;
    bool has_deaths = false;
    for (const dom::key_value_pair field : headers) {
      const std::string_view name = field.key;
      const dom::element value = field.value;
      std::optional<std::string_view> text;
      switch (value.type()) {
        case dom::element_type::NULL_VALUE:
          break;
        case dom::element_type::STRING:
          text = value.get_string().value_unsafe();
          break;
        case dom::element_type::INT64:
          r->owned.push_back(std::to_string(value.get_int64().value_unsafe()));
          text = r->owned.back();
          break;
        case dom::element_type::UINT64:
          r->owned.push_back(std::to_string(value.get_uint64().value_unsafe()));
          text = r->owned.back();
          break;
        case dom::element_type::BOOL:
          text = value.get_bool().value_unsafe() ? "true" : "false";
          break;
        default:  // a double, an array, a table: its JSON text
          r->owned.push_back(simdjson::minify(value));
          text = r->owned.back();
          break;
      }
      r->headers.emplace_back(name, text);
      if (name == "x-first-death-queue" && text && value.is_string()) {
        first_queue = *text;
        has_first_queue = true;
      } else if (name == "x-first-death-reason" && text && value.is_string()) {
        first_reason = *text;
        has_first_reason = true;
      } else if (name == "x-death") {
        deaths = value;
        has_deaths = true;
      }
    }
    if (has_deaths && has_first_queue && has_first_reason) {
      read_delivery_count(deaths, first_queue, first_reason, r);
    }
    return true;
  }

  // The count of the x-death entry of the first death (its queue and reason).
  static void read_delivery_count(const dom::element& deaths, std::string_view queue,
                                  std::string_view reason, BrokerRecord* r) {
    dom::array entries;
    if (deaths.get_array().get(entries)) {
      r->delivery_count_problem = "x-death is not an array";
      return;
    }
    if (entries.size() > kMaxDeaths) {
      r->delivery_count_problem = "x-death has " + std::to_string(entries.size()) +
                                  " entries (more than " + std::to_string(kMaxDeaths) + ")";
      return;
    }
    size_t index = 0, matches = 0;
    for (const dom::element entry : entries) {
      dom::object table;
      std::string_view q, why;
      int64_t count = 0;
      if (entry.get_object().get(table) || table["queue"].get_string().get(q) ||
          table["reason"].get_string().get(why)) {
        r->delivery_count_problem =
            "x-death/" + std::to_string(index) + " is not a table with a string queue and reason";
        return;
      }
      if (q == queue && why == reason) {
        if (table["count"].get_int64().get(count) || count < 0) {
          r->delivery_count_problem =
              "x-death/" + std::to_string(index) + "/count is not an integer >= 0";
          return;
        }
        ++matches;
        r->delivery_count = count;
      }
      ++index;
    }
    if (matches > 1) {
      r->delivery_count.reset();
      r->delivery_count_problem = "x-death has " + std::to_string(matches) +
                                  " entries for the first death (queue " + quote_for_reason(queue) +
                                  ", reason " + quote_for_reason(reason) + ")";
    }
  }

  dom::parser parser_{kMaxRecordBytes + 64};
  uint64_t position_ = 0;
};

}  // namespace

std::unique_ptr<BrokerRecordReader> make_rabbitmq_reader() {
  return std::make_unique<RabbitMqReader>();
}

}  // namespace replaygate::inputs
