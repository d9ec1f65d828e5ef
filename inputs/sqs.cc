// aws sqs receive-message messages -> BrokerRecord (see sqs.h).
#include "inputs/sqs.h"

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

constexpr JsonRecordOptions kRecord{.what = "an SQS message", .blank = "blank record"};

const std::vector<std::string>& message_keys() {
  static const std::vector<std::string> keys = {
      "MessageId",  "ReceiptHandle",          "MD5OfBody",        "Body",
      "Attributes", "MD5OfMessageAttributes", "MessageAttributes"};
  return keys;
}

class SqsReader : public BrokerRecordReader {
 public:
  bool read(std::string_view text, BrokerRecord* r, std::string* problem,
            size_t* problem_offset) override {
    r->clear();
    const uint64_t position = position_++;
    dom::object message;
    if (!read_json_object(text, parser_, kRecord, &message, problem, problem_offset)) return false;
    r->offset = static_cast<int64_t>(position);
    r->topic_missing = true;
    std::vector<std::string_view> seen;
    for (const dom::key_value_pair field : message) {
      const std::string_view key = field.key;
      if (!known_key(key, message_keys(), "an SQS message", problem)) return false;
      seen.push_back(key);
      const dom::element value = field.value;
      if (key == "Attributes") {
        if (!read_attributes(value, r, problem)) return false;
      } else if (key == "MessageAttributes") {
        if (!read_message_attributes(value, r, problem)) return false;
      } else {
        std::string_view s;
        if (value.get_string().get(s)) {
          *problem = std::string(key) + " must be a string";
          return false;
        }
        if (key == "MessageId") {
          r->key = s;
          r->key_null = false;
        } else if (key == "Body") {
          r->payload = s;
          r->payload_null = false;
        }
      }
    }
    for (const char* required : {"MessageId", "Body"}) {
      if (std::find(seen.begin(), seen.end(), std::string_view(required)) == seen.end()) {
        *problem =
            std::string("missing key '") + required + "' (not aws sqs receive-message output?)";
        return false;
      }
    }
    return true;
  }

 private:
  static bool read_attributes(const dom::element& value, BrokerRecord* r, std::string* problem) {
    dom::object attributes;
    if (value.get_object().get(attributes)) {
      *problem = "Attributes must be an object";
      return false;
    }
    for (const dom::key_value_pair field : attributes) {
      std::string_view text;
      if (field.value.get_string().get(text)) {
        *problem = "attribute " + quote_for_reason(field.key) + " must be a string";
        return false;
      }
      std::string why;
      if (field.key == "ApproximateReceiveCount") {
        int64_t count = 0;
        if (!decode_decimal(text, &count, &why) || count < 0) {
          r->delivery_count_problem =
              "ApproximateReceiveCount " + quote_for_reason(text) + " is not a count";
        } else {
          r->delivery_count = count;
        }
      } else if (field.key == "SentTimestamp") {
        if (decode_decimal(text, &r->timestamp, &why)) r->has_timestamp = true;
      } else if (field.key == "DeadLetterQueueSourceArn") {
        const size_t colon = text.rfind(':');
        r->topic = colon == std::string_view::npos ? text : text.substr(colon + 1);
        r->topic_missing = false;
      }
    }
    return true;
  }

  static bool read_message_attributes(const dom::element& value, BrokerRecord* r,
                                      std::string* problem) {
    dom::object attributes;
    if (value.get_object().get(attributes)) {
      *problem = "MessageAttributes must be an object";
      return false;
    }
    for (const dom::key_value_pair field : attributes) {
      dom::object attribute;
      if (field.value.get_object().get(attribute)) {
        *problem = "message attribute " + quote_for_reason(field.key) + " must be an object";
        return false;
      }
      std::optional<std::string_view> text;
      int values = 0;
      for (const dom::key_value_pair part : attribute) {
        std::string_view s;
        if (part.key == "StringValue" || part.key == "BinaryValue") {
          if (part.value.get_string().get(s)) {
            *problem = "message attribute " + quote_for_reason(field.key) + ": " +
                       std::string(part.key) + " must be a string";
            return false;
          }
          text = s;
          ++values;
        } else if (part.key == "DataType") {
          if (part.value.get_string().get(s)) {
            *problem =
                "message attribute " + quote_for_reason(field.key) + ": DataType must be a string";
            return false;
          }
        } else {
          *problem = "message attribute " + quote_for_reason(field.key) + " has " +
                     quote_for_reason(part.key) + " (only StringValue, BinaryValue, DataType)";
          return false;
        }
      }
      if (values != 1) {
        *problem = "message attribute " + quote_for_reason(field.key) +
                   " needs exactly one of StringValue and BinaryValue";
        return false;
      }
      r->headers.emplace_back(field.key, text);
    }
    return true;
  }

  dom::parser parser_{kMaxRecordBytes + 64};
  uint64_t position_ = 0;
};

}  // namespace

std::unique_ptr<BrokerRecordReader> make_sqs_reader() { return std::make_unique<SqsReader>(); }

}  // namespace replaygate::inputs
