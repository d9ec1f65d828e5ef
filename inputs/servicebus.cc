// Service Bus dead-letter messages -> BrokerRecord (see servicebus.h).
#include "inputs/servicebus.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/diagnostic.h"
#include "inputs/decoding.h"
#include "inputs/json_record.h"

namespace replaygate::inputs {
namespace {

namespace dom = simdjson::dom;

constexpr JsonRecordOptions kRecord{.what = "a Service Bus message",
                                    .blank = "blank line",
                                    .blank_space = " \t\r",
                                    .byte_order_mark = true,
                                    .shape_offsets = true};

// What the reader does with a field.
enum class Role {
  kId,          // messageId: a string or an integer (the JS SDK keeps a numeric AMQP id a number)
  kBody,        // the payload, decoded as the shape says
  kSource,      // deadLetterSource: the topic
  kSequence,    // sequenceNumber: the offset
  kCount,       // deliveryCount: the delivery counter
  kProperties,  // the application properties: the headers
  kText,        // a string or null, not mapped
  kAny,  // any JSON value, not mapped (dates, durations, enums, the JS SDK's raw AMQP message)
};

// Which writer a field name belongs to. A record uses one writer's names.
enum Shape : unsigned {
  kCamel = 1,     // a receive-and-print script, or JSON.stringify of the JS SDK's message
  kDotNet = 2,    // System.Text.Json of Azure.Messaging.ServiceBus's ServiceBusReceivedMessage
  kExplorer = 4,  // Service Bus Explorer's message export (BrokeredMessage's property names)
  kPascal = kDotNet | kExplorer,
};

struct Field {
  std::string name;
  Role role;
  unsigned shapes;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      // camelCase: the reader's own dump shape, and every own property JSON.stringify writes for a
      // peeked ServiceBusReceivedMessage of @azure/service-bus 7.x (types/latest/service-bus.d.ts).
      {"messageId", Role::kId, kCamel},
      {"body", Role::kBody, kCamel},
      {"deadLetterSource", Role::kSource, kCamel},
      {"sequenceNumber", Role::kSequence, kCamel},
      {"deliveryCount", Role::kCount, kCamel},
      {"applicationProperties", Role::kProperties, kCamel},
      {"enqueuedTimeUtc", Role::kText, kCamel},
      {"subject", Role::kText, kCamel},
      {"contentType", Role::kText, kCamel},
      {"correlationId", Role::kAny, kCamel},  // string, number or Buffer in the JS SDK
      {"sessionId", Role::kText, kCamel},
      {"partitionKey", Role::kText, kCamel},
      {"timeToLive", Role::kAny, kCamel},
      {"deadLetterReason", Role::kText, kCamel},
      {"deadLetterErrorDescription", Role::kText, kCamel},
      {"lockToken", Role::kText, kCamel},
      {"lockedUntilUtc", Role::kText, kCamel},
      {"expiresAtUtc", Role::kText, kCamel},
      {"scheduledEnqueueTimeUtc", Role::kText, kCamel},
      {"enqueuedSequenceNumber", Role::kAny, kCamel},
      {"replyTo", Role::kText, kCamel},
      {"replyToSessionId", Role::kText, kCamel},
      {"to", Role::kText, kCamel},
      {"state", Role::kText, kCamel},
      {"_rawAmqpMessage", Role::kAny, kCamel},
      // PascalCase, both .NET writers.
      {"MessageId", Role::kId, kPascal},
      {"Body", Role::kBody, kPascal},
      {"DeadLetterSource", Role::kSource, kPascal},
      {"SequenceNumber", Role::kSequence, kPascal},
      {"DeliveryCount", Role::kCount, kPascal},
      {"ContentType", Role::kText, kPascal},
      {"CorrelationId", Role::kText, kPascal},
      {"SessionId", Role::kText, kPascal},
      {"ReplyToSessionId", Role::kText, kPascal},
      {"PartitionKey", Role::kText, kPascal},
      {"To", Role::kText, kPascal},
      {"ReplyTo", Role::kText, kPascal},
      {"TimeToLive", Role::kAny, kPascal},
      {"LockToken", Role::kAny, kPascal},
      {"EnqueuedSequenceNumber", Role::kAny, kPascal},
      {"State", Role::kAny, kPascal},
      // Only ServiceBusReceivedMessage (Azure.Messaging.ServiceBus 7.x) has these names.
      {"ApplicationProperties", Role::kProperties, kDotNet},
      {"Subject", Role::kText, kDotNet},
      {"EnqueuedTime", Role::kAny, kDotNet},
      {"ExpiresAt", Role::kAny, kDotNet},
      {"LockedUntil", Role::kAny, kDotNet},
      {"ScheduledEnqueueTime", Role::kAny, kDotNet},
      {"TransactionPartitionKey", Role::kText, kDotNet},
      {"DeadLetterReason", Role::kText, kDotNet},
      {"DeadLetterErrorDescription", Role::kText, kDotNet},
      // Only BrokeredMessage (Service Bus Explorer's export) has these names.
      {"Properties", Role::kProperties, kExplorer},
      {"Label", Role::kText, kExplorer},
      {"EnqueuedTimeUtc", Role::kAny, kExplorer},
      {"ExpiresAtUtc", Role::kAny, kExplorer},
      {"LockedUntilUtc", Role::kAny, kExplorer},
      {"ScheduledEnqueueTimeUtc", Role::kAny, kExplorer},
      {"ViaPartitionKey", Role::kText, kExplorer},
      {"Size", Role::kAny, kExplorer},
      {"IsBodyConsumed", Role::kAny, kExplorer},
      {"ForcePersistence", Role::kAny, kExplorer},
  };
  return table;
}

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Field& f : fields()) out.push_back(f.name);
    return out;
  }();
  return names;
}

std::string shape_name(unsigned shape) {
  switch (shape) {
    case kCamel:
      return "the SDKs' camelCase names";
    case kDotNet:
      return ".NET's ServiceBusReceivedMessage names";
    default:
      return "Service Bus Explorer's export names";
  }
}

class ServiceBusReader : public BrokerRecordReader {
 public:
  bool read(std::string_view text, BrokerRecord* r, std::string* problem,
            size_t* problem_offset) override {
    r->clear();
    dom::object message;
    if (!read_json_object(text, parser_, kRecord, &message, problem, problem_offset)) return false;
    r->topic_missing = true;
    unsigned shape = 0;
    if (!find_shape(message, &shape, problem)) return false;
    for (const dom::key_value_pair member : message) {
      const Field& field = *std::find_if(fields().begin(), fields().end(),
                                         [&](const Field& f) { return f.name == member.key; });
      if (!read_field(field, member.value, shape, r, problem)) return false;
    }
    return true;
  }

 private:
  // The one writer whose names the record uses: every key must be a field of it. A record whose
  // PascalCase names are common to .NET and Service Bus Explorer is read as .NET's unless it has a
  // Body, whose encoding (base64 or text) would then be a guess.
  static bool find_shape(const dom::object& message, unsigned* shape, std::string* problem) {
    unsigned possible = kCamel | kDotNet | kExplorer;
    for (const dom::key_value_pair member : message) {
      if (!known_key(member.key, field_names(), "a Service Bus message", problem)) return false;
      const auto field = std::find_if(fields().begin(), fields().end(),
                                      [&](const Field& f) { return f.name == member.key; });
      if ((possible & field->shapes) == 0) {
        const unsigned other = field->shapes & kCamel    ? kCamel
                               : field->shapes & kDotNet ? kDotNet
                                                         : kExplorer;
        const unsigned before = possible & kCamel    ? kCamel
                                : possible & kDotNet ? kDotNet
                                                     : kExplorer;
        *problem = "key " + quote_for_reason(member.key) + " is one of " + shape_name(other) +
                   ", but the message's other keys are " + shape_name(before) +
                   " (one writer's names per message)";
        return false;
      }
      possible &= field->shapes;
    }
    if (possible == kPascal) {
      dom::element ignored;
      if (!message["Body"].get(ignored)) {
        *problem =
            "a PascalCase message with a Body and neither ApplicationProperties (.NET, Body in "
            "base64) nor Properties (Service Bus Explorer, Body as text)";
        return false;
      }
      possible = kDotNet;
    }
    *shape = possible & kCamel ? kCamel : possible;
    return true;
  }

  bool read_field(const Field& field, const dom::element& value, unsigned shape, BrokerRecord* r,
                  std::string* problem) {
    const std::string& key = field.name;
    const auto nullable_string = [&](std::string_view* out, bool* is_null) {
      *is_null = value.is_null();
      if (*is_null) return true;
      if (value.get_string().get(*out)) {
        *problem = key + " must be a string or null";
        return false;
      }
      return true;
    };
    std::string_view ignored;
    bool is_null = false;
    switch (field.role) {
      case Role::kId:
        if (value.is_int64()) {
          r->owned.push_back(std::to_string(value.get_int64().value_unsafe()));
          r->key = r->owned.back();
          r->key_null = false;
          return true;
        }
        if (!nullable_string(&r->key, &r->key_null)) {
          *problem = key + " must be a string, an integer or null";
          return false;
        }
        return true;
      case Role::kBody:
        return read_body(key, value, shape, r, problem);
      case Role::kSource:
        if (!nullable_string(&r->topic, &is_null)) return false;
        r->topic_missing = is_null;
        return true;
      case Role::kSequence:
        if (value.get_int64().get(r->offset) && !read_long(value, &r->offset)) {
          *problem = key + " must be an integer";
          return false;
        }
        return true;
      case Role::kCount: {
        int64_t count = 0;
        if (value.get_int64().get(count) || count < 0) {
          r->delivery_count_problem = key + " is not an integer >= 0";
        } else {
          r->delivery_count = count;
        }
        return true;
      }
      case Role::kProperties:
        return read_properties(key, value, r, problem);
      case Role::kText:
        return nullable_string(&ignored, &is_null);
      case Role::kAny:
        return true;
    }
    return true;
  }

  // The JS SDK's sequenceNumber is a long.js Long, which JSON.stringify writes as its fields:
  // {"low":2001,"high":0,"unsigned":false} (low and high are the two signed 32-bit halves).
  static bool read_long(const dom::element& value, int64_t* out) {
    dom::object object;
    int64_t low = 0, high = 0;
    bool is_unsigned = false;
    if (value.get_object().get(object) || object.size() != 3 ||
        object["low"].get_int64().get(low) || object["high"].get_int64().get(high) ||
        object["unsigned"].get_bool().get(is_unsigned) || low < INT32_MIN || low > INT32_MAX ||
        high < INT32_MIN || high > INT32_MAX || (is_unsigned && high < 0)) {
      return false;
    }
    *out = static_cast<int64_t>((static_cast<uint64_t>(static_cast<uint32_t>(high)) << 32) |
                                static_cast<uint32_t>(low));
    return true;
  }

  // body (camelCase): a string; null; the JS SDK's decoded JSON body (an object, array, number or
  // boolean: its JSON text is the payload); or a Node.js Buffer, {"type":"Buffer","data":[bytes]}.
  // Body (.NET): BinaryData, which System.Text.Json writes as base64. Body (Explorer): text.
  bool read_body(const std::string& key, const dom::element& value, unsigned shape, BrokerRecord* r,
                 std::string* problem) {
    r->payload_null = value.is_null();
    if (r->payload_null) return true;
    std::string_view text;
    if (!value.get_string().get(text)) {
      if (shape != kDotNet) {
        r->payload = text;
        return true;
      }
      std::string bytes, why;
      if (!decode_base64(text, &bytes, &why)) {
        r->payload_problem = "does not decode (Body is base64): " + why;
      } else {
        r->owned.push_back(std::move(bytes));
        r->payload = r->owned.back();
      }
      return true;
    }
    if (shape != kCamel) {
      *problem = key + " must be a string or null";
      return false;
    }
    if (is_buffer(value)) {
      std::string bytes;
      const dom::array data = value["data"].get_array().value_unsafe();
      for (const dom::element byte : data) {
        bytes.push_back(static_cast<char>(byte.get_int64().value_unsafe()));
      }
      r->owned.push_back(std::move(bytes));
    } else if (value.is_object() && value["type"].get_string().get(text) == simdjson::SUCCESS &&
               text == "Buffer") {
      *problem = key + " is a Buffer whose data is not an array of bytes";
      return false;
    } else {
      r->owned.push_back(simdjson::minify(value));
    }
    r->payload = r->owned.back();
    return true;
  }

  static bool is_buffer(const dom::element& value) {
    dom::object object;
    std::string_view type;
    dom::array data;
    if (value.get_object().get(object) || object.size() != 2 ||
        object["type"].get_string().get(type) || type != "Buffer" ||
        object["data"].get_array().get(data)) {
      return false;
    }
    for (const dom::element byte : data) {
      int64_t b = 0;
      if (byte.get_int64().get(b) || b < 0 || b > 255) return false;
    }
    return true;
  }

  static bool read_properties(const std::string& key, const dom::element& value, BrokerRecord* r,
                              std::string* problem) {
    if (value.is_null()) return true;
    dom::object properties;
    if (value.get_object().get(properties)) {
      *problem = key + " must be an object or null";
      return false;
    }
    for (const dom::key_value_pair field : properties) {
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
