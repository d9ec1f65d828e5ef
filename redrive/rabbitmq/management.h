// What AMQP does not tell a client about a queue, read from RabbitMQ's management HTTP API: its
// type (classic, quorum, stream) and a quorum queue's delivery limit, set by argument or policy.
// The gate's dry run needs it: on a quorum queue every peek uses up a delivery attempt and can drop
// a message at its limit (../shared/SERVERS.md measured it), so a dry run there is refused unless
// the operator allows it (--allow-peek).
//
// A plain HTTP/1.0 GET of /api/queues/VHOST/QUEUE with basic authentication (no TLS; run it on a
// trusted network or through a local proxy). Errors: a return value with a message; no exception.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "redrive/rabbitmq/amqp_client.h"
#include "redrive/rabbitmq/rabbit_port.h"

namespace replaygate::redrive::rabbitmq {

struct QueueInfo {
  std::string type;                       // "classic", "quorum", "stream"
  std::optional<int64_t> delivery_limit;  // x-delivery-limit, or the policy's delivery-limit
  std::optional<int64_t> messages;
  // Arguments or policy keys that make the broker drop messages on its own (x-max-length,
  // x-max-length-bytes, x-message-ttl, x-expires, or their policy forms): a park or hold queue
  // must have none, or letters the gate acked would vanish.
  std::vector<std::string> dropping;
};

// `base` is http://[USER:PASS@]HOST:PORT (the user and password default to the AMQP URL's).
// nullopt with *error: a bad URL, no connection within 5 s, an HTTP status other than 200 (401:
// the user may not read the queue; 404: no such queue or vhost), a body that is not the API's JSON.
std::optional<QueueInfo> queue_info(const std::string& base, const AmqpUrl& amqp,
                                    const std::string& queue, std::string* error);

// Before a run, what the management API at `base` says about the gate's queues: "" when the run
// may start, else why not (the whole message: nothing was consumed). Refused: a park or hold queue
// that drops messages on its own, a stream as the dead-letter queue, a dry run on a quorum queue
// without allow_peek. A quorum queue's delivery limit goes into options->delivery_limit.
std::string check_queues(const std::string& base, PortOptions* options);

}  // namespace replaygate::redrive::rabbitmq
