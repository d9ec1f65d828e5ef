// AmqpTestClient: a small synchronous librabbitmq (0.11) client for tests against a private broker
// on 127.0.0.1: declare, bind, publish with a publisher confirm, dead-letter through the broker,
// drain and count queues. Errors come back as strings (never exceptions); a channel error
// reopens the channel, so the client stays usable.
#pragma once

#include <amqp.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace replaygate::gate::testing {

// A header or queue-argument value: a long string ('S') or a signed 64-bit integer ('l').
using FieldValue = std::variant<std::string, int64_t>;
// Ordered (name, value) pairs: message headers or queue arguments such as
// {"x-dead-letter-exchange", ""}, {"x-queue-type", "quorum"}, {"x-delivery-limit", int64_t{2}}.
using Fields = std::vector<std::pair<std::string, FieldValue>>;

// A message taken from a queue by get_all().
struct Message {
  std::string body;
  // Every header: strings as their text, integers and timestamps in decimal, booleans as
  // "true"/"false", floats in decimal; arrays as "array(N)" and tables as "table(N)" (N entries;
  // never descended into, so a deeply nested header costs no recursion here).
  std::map<std::string, std::string> headers;
  std::string message_id;
  bool redelivered = false;
  // The `queue` and `count` of each x-death entry, in the header's order (newest first).
  std::vector<std::string> x_death_queues;
  std::vector<int64_t> x_death_counts;
};

// A headers table of one entry `key` whose value is `depth` arrays nested in one another around
// the string "x": the poison header for decoder-recursion tests. depth 26,000 encodes to about
// 130 KB, just under the default frame_max of 131,072 (the content header must fit one frame).
class NestedArrayHeader {
 public:
  NestedArrayHeader(std::string key, std::size_t depth);
  NestedArrayHeader(const NestedArrayHeader&) = delete;
  NestedArrayHeader& operator=(const NestedArrayHeader&) = delete;
  // Valid while this object lives.
  const amqp_table_t& table() const { return table_; }

 private:
  std::string key_;
  std::vector<amqp_field_value_t> levels_;
  amqp_table_entry_t entry_{};
  amqp_table_t table_{};
};

class AmqpTestClient {
 public:
  AmqpTestClient() = default;
  AmqpTestClient(const AmqpTestClient&) = delete;
  AmqpTestClient& operator=(const AmqpTestClient&) = delete;
  ~AmqpTestClient() { close(); }

  // Connects to amqp://user:pass@127.0.0.1:PORT/vhost (any other host is refused), logs in
  // without heartbeats, opens an operations channel and a publishing channel in confirm mode.
  // "" or why not.
  std::string connect(const std::string& url);
  // Closes the connection (a no-op when not connected).
  void close();
  bool connected() const { return conn_ != nullptr; }

  // queue.declare (non-exclusive, not auto-delete). "" or the broker's / library's error, e.g.
  // "queue.declare work: 406 PRECONDITION_FAILED - inequivalent arg ...".
  std::string declare_queue(const std::string& name, bool durable, const Fields& args = {});
  // exchange.declare of `type` ("direct", "fanout", "topic", "headers").
  std::string declare_exchange(const std::string& name, const std::string& type,
                               bool durable = true);
  // queue.bind.
  std::string bind(const std::string& queue, const std::string& exchange,
                   const std::string& routing_key);
  // basic.publish (mandatory) and waits up to 30 s for the broker's confirm. "" once acked and
  // routed; else why not: a nack, a basic.return ("unroutable: 312 NO_ROUTE"; the ack that
  // follows it proves nothing), a channel error (e.g. 404 for a missing exchange), a timeout.
  // delivery_mode 2 when `persistent`; message_id only when not empty.
  std::string publish(const std::string& exchange, const std::string& routing_key,
                      const std::string& body, const Fields& headers = {},
                      const std::string& message_id = "", bool persistent = true);
  // As publish(), with a caller-built headers table (e.g. NestedArrayHeader). amqp_encode_table
  // recurses once per nesting level: call it on a thread with a large stack (the main thread's
  // 8 MiB is enough for 26,000 levels).
  std::string publish_raw_headers(const std::string& exchange, const std::string& routing_key,
                                  const std::string& body, const amqp_table_t& headers,
                                  const std::string& message_id = "", bool persistent = true);
  // basic.get + basic.reject(requeue=false) of `count` messages from `queue`, so the broker
  // dead-letters them itself (and writes x-death); then a passive declare of `queue`, after
  // which the broker has routed them. Fails when the queue holds fewer than `count`.
  std::string dead_letter(const std::string& queue, std::size_t count);
  // basic.get + basic.ack of every message in `queue` (drains it), in queue order. On an error
  // returns what it had taken so far and sets *error (when given) to why.
  std::vector<Message> get_all(const std::string& queue, std::string* error = nullptr);
  // The ready messages in `queue` (passive queue.declare), or -1 with *error set (e.g. 404 when
  // the queue does not exist).
  long message_count(const std::string& queue, std::string* error = nullptr);
  // Polls message_count() until it equals `expected` (dead-lettering, and a quorum queue's
  // enqueue, are asynchronous in the broker). "" or the last count / error on timeout.
  std::string wait_for_count(const std::string& queue, long expected, int timeout_ms = 10000);
  // queue.purge; *purged (when given) gets the number removed.
  std::string purge_queue(const std::string& queue, long* purged = nullptr);
  // exchange.delete (unconditionally).
  std::string delete_exchange(const std::string& exchange);
  // queue.delete (unconditionally).
  std::string delete_queue(const std::string& queue);

 private:
  std::string rpc_error(const std::string& what, amqp_channel_t channel);
  std::string reply_error(const std::string& what, const amqp_rpc_reply_t& reply,
                          amqp_channel_t channel);
  std::string open_channel(amqp_channel_t channel);
  std::string wait_for_confirm(uint64_t seq);
  std::string publish_with(const std::string& exchange, const std::string& routing_key,
                           const std::string& body, const amqp_table_t* headers,
                           const std::string& message_id, bool persistent);
  void drop_connection();

  amqp_connection_state_t conn_ = nullptr;
  uint64_t next_seq_ = 1;  // the publishing channel's next confirm sequence number
};

}  // namespace replaygate::gate::testing
