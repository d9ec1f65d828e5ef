// The `rabbitmq` record format: messages as RabbitMQ's management HTTP API returns them from
// POST /api/queues/{vhost}/{queue}/get (a JSON array; decide streams it, one message at a time,
// inputs/records.h JsonArrayReader). One message:
//   {"payload_bytes":57,"redelivered":false,"exchange":"","routing_key":"payments",
//    "message_count":2,"properties":{"message_id":"m-1","timestamp":1764403200,"headers":{
//      "x-death":[{"count":2,"exchange":"","queue":"payments","reason":"rejected",
//                  "routing-keys":["payments"],"time":1764403200}],
//      "x-first-death-exchange":"","x-first-death-queue":"payments",
//      "x-first-death-reason":"rejected","error-class":"timeout"}},
//    "payload":"{...}","payload_encoding":"string"}
// As a broker-neutral record (broker_record.h): headers = properties.headers (a string as its
// bytes, an integer as decimal text, a boolean as true/false, null as null, an array or table as
// its JSON text); payload = `payload`, base64-decoded when payload_encoding is "base64";
// topic = routing_key; offset = the message's 0-based position in the dump; key =
// properties.message_id; timestamp = properties.timestamp; delivery-count = the `count` of the
// x-death entry whose queue and reason are x-first-death-queue and x-first-death-reason.
//
// Never relies on header order (3.10 re-sorts headers), nor on x-last-death-* (3.10 writes none);
// the default exchange is "". Unreadable: not an object, a key the API does not return, a
// duplicate key or header, a field of the wrong JSON type, a payload_encoding other than string or
// base64. An x-death that is not an array of tables with string queue/reason and integer count,
// two entries for the first death, or more than kMaxDeaths entries make only the delivery count
// unreadable (invalid input when the mapping reads it).
#pragma once

#include <memory>

#include "inputs/broker_record.h"

namespace replaygate::inputs {

inline constexpr size_t kMaxDeaths = 1000;  // x-death entries read for the delivery count

std::unique_ptr<BrokerRecordReader> make_rabbitmq_reader();

}  // namespace replaygate::inputs
