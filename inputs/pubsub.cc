// Pub/Sub pulled messages -> BrokerRecord (see pubsub.h).
#include "inputs/pubsub.h"

#include <simdjson.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/diagnostic.h"
#include "inputs/decoding.h"
#include "inputs/json_record.h"

namespace replaygate::inputs {
namespace {

namespace dom = simdjson::dom;

constexpr JsonRecordOptions kRecord{.what = "a received message"};

class PubSubReader : public BrokerRecordReader {
 public:
  bool read(std::string_view text, BrokerRecord* r, std::string* problem,
            size_t* problem_offset) override {
    r->clear();
    const uint64_t position = position_++;
    dom::object received, message;
    if (!read_json_object(text, parser_, kRecord, &received, problem, problem_offset)) return false;
    dom::element root;  // each member read below
    if (!known_keys(received, {"ackId", "message", "deliveryAttempt"}, "a received message",
                    problem)) {
      return false;
    }
    r->offset = static_cast<int64_t>(position);
    r->topic_missing = true;
    dom::element attempt;
    if (!received["deliveryAttempt"].get(attempt)) {
      int64_t count = 0;
      if (attempt.get_int64().get(count) || count < 0) {
        r->delivery_count_problem = "deliveryAttempt is not an integer >= 0";
      } else {
        r->delivery_count = count;
      }
    }
    if (received["message"].get_object().get(message)) {
      *problem = "a received message needs a 'message' object";
      return false;
    }
    if (!known_keys(message,
                    {"data", "attributes", "messageId", "message_id", "publishTime", "publish_time",
                     "orderingKey"},
                    "message", problem)) {
      return false;
    }
    std::string_view data;
    r->payload_null = false;
    if (!message["data"].get(root)) {
      if (root.get_string().get(data)) {
        *problem = "message.data must be a string";
        return false;
      }
      std::string bytes, why;
      if (!decode_base64(data, &bytes, &why)) {
        r->payload_problem = "does not decode (message.data is base64): " + why;
      } else {
        r->owned.push_back(std::move(bytes));
        r->payload = r->owned.back();
      }
    }
    // The REST API spells them messageId and publishTime, the client libraries' JSON message_id
    // and publish_time: a message with both spellings of one field is two values for it.
    for (const auto& [camel, snake] :
         {std::pair{"messageId", "message_id"}, std::pair{"publishTime", "publish_time"}}) {
      if (!message[camel].error() && !message[snake].error()) {
        *problem = std::string("message has both ") + camel + " and " + snake;
        return false;
      }
    }
    for (const char* id : {"messageId", "message_id"}) {
      if (!message[id].get(root)) {
        if (root.get_string().get(r->key)) {
          *problem = std::string("message.") + id + " must be a string";
          return false;
        }
        r->key_null = false;
      }
    }
    dom::object attributes;
    if (!message["attributes"].get(root)) {
      if (root.get_object().get(attributes)) {
        *problem = "message.attributes must be an object";
        return false;
      }
      for (const dom::key_value_pair field : attributes) {
        std::string_view value;
        if (field.value.get_string().get(value)) {
          *problem = "attribute " + quote_for_reason(field.key) + " must be a string";
          return false;
        }
        r->headers.emplace_back(field.key, value);
      }
    }
    return true;
  }

 private:
  dom::parser parser_{kMaxRecordBytes + 64};
  uint64_t position_ = 0;
};

}  // namespace

std::unique_ptr<BrokerRecordReader> make_pubsub_reader() {
  return std::make_unique<PubSubReader>();
}

}  // namespace replaygate::inputs
