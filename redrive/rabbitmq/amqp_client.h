// The gate's only contact with librabbitmq (Debian's 0.11): a connection, a consumer with manual
// acks and a bounded prefetch, and a publisher that waits for plain publisher confirms.
//
// librabbitmq 0.11 has no confirm wait (0.15 added one): Publisher::publish() waits on the socket
// for basic.ack / basic.nack (honouring `multiple`), drains a basic.return (a mandatory publish
// that reached no queue gets a return AND THEN an ack: an ack alone does not prove routing), and
// treats a channel.close (e.g. 404 for a missing exchange) as a dead channel: it answers
// close-ok, reopens the channel and selects confirms again (sequence numbers restart at 1).
// Consuming and publishing use two connections (../shared/SERVERS.md: with prefetch above 1,
// deliveries interleave with confirms on one connection). Heartbeats are serviced only inside
// library calls, so every wait here is a wait on the socket with a timeout, never a sleep.
//
// librabbitmq decodes header tables recursively (about 80 bytes of stack per nesting level, with
// no bound in 0.11): the connection negotiates frame_max (Settings::frame_max, 128 KiB), which
// bounds a content header, and so the nesting, to about 26,000 levels (2 MiB of stack); the gate
// runs its broker loop on a thread with a larger stack (run_with_stack()).
//
// Errors: no exception; every failure is a return value with a message. Threads: a connection
// and everything made on it belong to one thread.
#pragma once

#include <amqp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace replaygate::redrive::rabbitmq {

#if !defined(AMQP_VERSION_MINOR) || (AMQP_VERSION_MAJOR == 0 && AMQP_VERSION_MINOR < 10)
#error "replaygate's RabbitMQ gate needs librabbitmq 0.10 or later (Debian 12: librabbitmq-dev)"
#endif

// amqp://USER:PASS@HOST:PORT/VHOST (RFC 3986 escapes, e.g. %2F for the vhost "/"). An empty vhost
// ("amqp://host:5672/" or no path) means "/".
struct AmqpUrl {
  std::string user = "guest", password = "guest", host = "localhost", vhost = "/";
  int port = 5672;
  // The URL without the password: "amqp://guest@127.0.0.1:5672/%2F".
  std::string describe() const;
};
// RFC 3986 percent-encoding of everything but unreserved characters ("/" is "%2F").
std::string percent_encode(std::string_view text);

// Parses `text`. nullopt with *problem set: not an amqp:// URL, amqps:// (TLS is not built in),
// a bad port.
std::optional<AmqpUrl> parse_amqp_url(std::string_view text, std::string* problem);

struct Settings {
  int frame_max = 131072;  // bytes; bounds a header table's nesting (see above)
  int heartbeat = 30;      // seconds; 0: none
  int connect_timeout_ms = 5000;
  std::string connection_name;  // shown in the broker's connection list
};

// A logged-in connection with channel 1 open.
class Connection {
 public:
  // Connects and logs in. Null with *error set ("cannot connect to amqp://...: ...").
  static std::unique_ptr<Connection> open(const AmqpUrl& url, const Settings& settings,
                                          std::string* error);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  amqp_connection_state_t state() const { return state_; }
  // The connection is gone (closed by the broker, a socket error, a missed heartbeat).
  bool lost() const { return lost_; }
  void set_lost(std::string why);
  const std::string& lost_reason() const { return lost_reason_; }
  // The broker said publishing is blocked (a memory or disk alarm), until it says unblocked.
  bool blocked() const { return blocked_; }
  void set_blocked(bool blocked, std::string reason);
  const std::string& blocked_reason() const { return blocked_reason_; }

  // Opens channel `channel` (1 is open already). False with *error.
  bool open_channel(uint16_t channel, std::string* error);
  // The message count of `queue` (a passive queue.declare on channel 2, which it opens on first
  // use and reopens after the broker closes it, e.g. with 404 for a missing queue). nullopt with
  // *error when the queue does not exist or the call fails.
  std::optional<uint32_t> queue_depth(const std::string& queue, std::string* error);
  // Declares `queue` durable unless it exists (passive first: an existing queue of any type and
  // arguments is used as it is). False with *error.
  bool ensure_queue(const std::string& queue, std::string* error);
  // Declares `queue` durable (not exclusive, never auto-deleted) with `arguments`: it is made, or
  // an existing queue of the same arguments is used; another one is refused (406). False with
  // *error.
  bool declare_queue(const std::string& queue, const amqp_table_t& arguments, std::string* error);
  // Deletes `queue` when it holds no ready message and has no consumer (queue.delete if-empty
  // if-unused: a consumer's unacked letters would be lost with the queue). False with *error
  // (406 when it is not empty or in use); a queue that does not exist is deleted already: true.
  bool delete_empty_queue(const std::string& queue, std::string* error);
  // Whether `exchange` exists (a passive exchange.declare on channel 2). "" is the default
  // exchange and always exists.
  bool exchange_exists(const std::string& exchange, std::string* error);

  // The text of an RPC reply that is not normal ("server channel error 404: NOT_FOUND - ...").
  static std::string describe(const amqp_rpc_reply_t& reply);
  // Handles a method frame no call was waiting for (connection.close, blocked/unblocked,
  // channel.close on channel 2). Returns true when it was one of those.
  bool handle_async_method(const amqp_frame_t& frame);

 private:
  Connection() = default;
  bool query_channel(std::string* error);

  amqp_connection_state_t state_ = nullptr;
  bool lost_ = false, blocked_ = false, query_open_ = false;
  std::string lost_reason_, blocked_reason_;
};

// One delivery, owned: the envelope's memory is freed with the Delivery.
class Delivery {
 public:
  Delivery() { envelope_ = {}; }
  ~Delivery();
  Delivery(const Delivery&) = delete;
  Delivery& operator=(const Delivery&) = delete;
  amqp_envelope_t& envelope() { return envelope_; }
  const amqp_envelope_t& envelope() const { return envelope_; }
  bool filled = false;

 private:
  amqp_envelope_t envelope_;
};

class Consumer {
 public:
  explicit Consumer(Connection& connection) : connection_(connection) {}
  // basic.qos(prefetch) then basic.consume on `queue` with manual acks; `exclusive`: as the
  // queue's only consumer. False with *error (the queue does not exist: 404; exclusive and
  // another consumer is there, or exclusive use by another: 403).
  bool start(const std::string& queue, uint16_t prefetch, std::string* error,
             bool exclusive = false);
  // Pulls instead (basic.get, manual ack): next() takes one message only when called, so none
  // waits in a prefetch window (on a quorum queue with a delivery limit, every delivery returned
  // unsettled uses up an attempt). No broker call; always true.
  bool start_pull(const std::string& queue);
  enum class Next { kDelivery, kTimeout, kLost, kCancelled };
  // Waits up to `timeout_ms` for the next delivery into *delivery (cleared first). Pulling: one
  // basic.get, and on an empty queue a wait of `timeout_ms` on the socket.
  Next next(Delivery* delivery, int timeout_ms, std::string* error);
  // basic.ack of the delivery; `through`: of every delivery up to it not acked yet (`multiple`).
  bool ack(uint64_t delivery_tag, std::string* error, bool through = false);
  // basic.nack with requeue (the letter goes back to the dead-letter queue as it was).
  bool requeue(uint64_t delivery_tag, std::string* error);
  // A round trip on the consuming channel (basic.qos, no prefetch limit: pulling is not bound by
  // one): once it returns, the broker has handled every ack sent on the channel before it.
  bool barrier(std::string* error);

 private:
  Next pull(Delivery* delivery, int timeout_ms, std::string* error);

  Connection& connection_;
  std::string pull_queue_;  // not empty: pulling
};

// What a confirmed publish came to.
enum class PublishResult {
  kConfirmed,      // basic.ack without a basic.return: the broker routed and stored it
  kReturned,       // basic.return (mandatory, no queue took it), then the ack
  kNacked,         // basic.nack: the broker could not store it
  kChannelClosed,  // the broker closed the channel (404: no such exchange); reopened since
  kTimeout,        // no confirm in time: the outcome is unknown
  kLost,           // the connection is gone: the outcome is unknown
};
std::string_view publish_result_name(PublishResult result);

struct PublishOutcome {
  PublishResult result = PublishResult::kLost;
  std::string detail;  // the broker's reply text, the library's error, ...
};

// One message to publish: its exchange, routing key, properties and body.
struct PublishRequest {
  std::string exchange, routing_key;
  amqp_basic_properties_t properties{};
  amqp_bytes_t body{};
};

class Publisher {
 public:
  explicit Publisher(Connection& connection) : connection_(connection) {}
  // confirm.select on channel 1. False with *error.
  bool select(std::string* error);
  // Publishes `body` with `properties` (mandatory) and waits up to `timeout_ms` for its confirm.
  // While the broker says publishing is blocked (an alarm), the wait goes on past the timeout and
  // `on_blocked` is called once per second with the broker's reason. `after_send` (tests' crash
  // points) runs once the publish is on the wire, before the wait.
  PublishOutcome publish(const std::string& exchange, const std::string& routing_key,
                         const amqp_basic_properties_t& properties, amqp_bytes_t body,
                         int timeout_ms,
                         const std::function<void(const std::string&)>& on_blocked = {},
                         const std::function<void()>& after_send = {});
  // Publishes `count` messages, pipelined: `request(i)` makes the i-th just before it is sent
  // (what it points to need live only until then, except the body, which must live until this
  // returns), `after_send(i)` runs once it is on the wire; then waits for all their confirms
  // (honouring `multiple`), up to `timeout_ms` after the last one (longer while the broker blocks
  // publishing, as above). One outcome per message, in order. A basic.return marks the first
  // unsettled publish with its exchange, routing key and body; a nack settles its publishes
  // alone; a closed channel or a lost connection makes every publish not confirmed by then
  // kChannelClosed or kLost.
  std::vector<PublishOutcome> publish_block(
      size_t count, const std::function<PublishRequest(size_t)>& request, int timeout_ms,
      const std::function<void(const std::string&)>& on_blocked = {},
      const std::function<void(size_t)>& after_send = {});

 private:
  Connection& connection_;
  uint64_t next_sequence_ = 1;
};

// Runs `body` on a new thread with a stack of `stack_bytes` and waits for it (the broker loop:
// see the header comment). Returns false when the thread cannot be made.
bool run_with_stack(size_t stack_bytes, const std::function<void()>& body);

}  // namespace replaygate::redrive::rabbitmq
