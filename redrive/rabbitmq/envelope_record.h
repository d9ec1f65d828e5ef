// An AMQP delivery as the gate's record, and the properties of what the gate publishes for it.
//
// In: a delivered envelope (librabbitmq's amqp_envelope_t). Out: the message as RabbitMQ's
// management API would return it from a queue "get" (inputs/rabbitmq.h: routing_key, exchange,
// redelivered, properties.headers / message_id / timestamp, payload), so the live gate decides a
// message with the same `rabbitmq` reader and mapping as a dump of it (docs/input-mapping.md).
// Headers become JSON as the management API writes them: strings as strings, integers and
// timestamps as integers, booleans, arrays as arrays, tables as objects, void as null.
//
// A message that cannot be such a record is not decided: `problem` says why and the gate holds it
// (never a replay): a header nested deeper than Limits::max_depth, more than max_headers values
// in all, a string (header, routing key, exchange, message id) that is not valid UTF-8, a header
// name twice in one table, a body over max_body bytes, a record over inputs::kMaxRecordBytes. The
// record is built without recursion deeper than max_depth, so a poison header costs bounded stack
// here (librabbitmq's own decoder is bounded by frame_max: amqp_client.h).
#pragma once

#include <amqp.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace replaygate::redrive::rabbitmq {

struct Limits {
  size_t max_body = size_t{1} << 20;  // bytes (a record holds at most inputs::kMaxRecordBytes)
  int max_depth = 32;                 // header nesting (x-death is 2 levels deep)
  size_t max_headers = 4096;          // header values, nested ones included
};

struct EnvelopeRecord {
  std::string record;  // the management-API JSON object, then kPadding spare bytes
  size_t record_size = 0;
  std::string problem;                    // "": the record is good
  std::optional<std::string> message_id;  // properties.message_id, when set and valid UTF-8
  // The queue the message died in last: x-death's first entry's `queue` (RabbitMQ keeps the
  // most recent death first), "" when the message has no readable x-death.
  std::string died_in;
  // The gate's own replay marker (`x-replay`: an integer, or its decimal text), 0 when absent,
  // nullopt when present but unreadable. Read from the envelope itself, whatever the mapping
  // maps: the redelivery judgement (redrive/redrive.h) and the copy's marker depend on it.
  std::optional<int64_t> replays = 0;
  // "sha256:" and the SHA-256 of the body in lowercase hex; "" for a body over max_body.
  std::string body_digest;
  std::string topic_hint;  // the routing key, for progress lines
};

// A header value of an integer kind (any width, a u64 above INT64_MAX clamped), else nullopt.
std::optional<int64_t> integer_field(const amqp_field_value_t& value);

// Fills *out from `envelope` (see above).
void envelope_to_record(const amqp_envelope_t& envelope, const Limits& limits, EnvelopeRecord* out);

// The properties the gate publishes a message with: the delivered message's own (content type,
// message id, correlation id, ...; every header but the ones replaced, the gate's own
// x-replaygate-* move markers and the headers the queue it was delivered from wrote:
// kBrokerOwnedHeaders), persistent (delivery mode 2), with `set_headers` added (replacing a
// header of the same name). x-death and x-first-death-* stay: they say where the letter died
// (docs/gate.md). The result points into
// `envelope`, `set_headers` and *storage: they must outlive its use.
// Headers a queue writes on delivery, which describe the dead-letter queue's delivery and not the
// message: a quorum queue's x-delivery-count would otherwise travel into the work queue (and make
// a classic queue the letter later reaches look like a quorum queue that counted deliveries).
inline constexpr const char* kBrokerOwnedHeaders[] = {"x-delivery-count"};

struct HeaderValue {
  std::string name;
  bool is_int = false;
  int64_t number = 0;
  std::string text;
};
amqp_basic_properties_t republish_properties(const amqp_envelope_t& envelope,
                                             const std::vector<HeaderValue>& set_headers,
                                             std::vector<amqp_table_entry_t>* storage);

}  // namespace replaygate::redrive::rabbitmq
