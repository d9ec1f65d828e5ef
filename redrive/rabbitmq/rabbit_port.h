// The redrive port on RabbitMQ (redrive/port.h): consume a dead-letter queue with manual acks,
// move a letter with a mandatory, persistent publish and its publisher confirm, settle it with
// basic.ack. The loop (redrive/run.h) never sees AMQP.
//
// A move: a replay goes to the queue the letter died in (x-death's most recent `queue`) through
// the default exchange, never to its original exchange (which may fan out to queues whose
// consumers already succeeded), with the same body, properties and idempotency key, and
// x-replay = the claimed marker. Park and hold move it to the park and hold queues with
// x-replaygate-verb/-rule/-reason/-from. Nothing is acked before its confirm.
//
// Letters not settled (skipped, dry run, a failure) stay unacked until the channel closes, so
// they return to the queue as they were (the broker sets `redelivered`; a quorum queue counts a
// delivery attempt). The consume window leaves room for max_unacked of them. With a quorum
// queue's delivery limit, the port pulls one letter at a time (basic.get: nothing waits unsettled
// in a prefetch window), and a letter at its last delivery is moved to the hold queue before it
// is decided, in a dry run too (Letter::must_move).
//
// Threads: the port and the loop over it use one thread; run it through run_with_stack()
// (amqp_client.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "redrive/port.h"
#include "redrive/rabbitmq/amqp_client.h"
#include "redrive/rabbitmq/envelope_record.h"
#include "redrive/test_points.h"

namespace replaygate::redrive::rabbitmq {

struct AmqpLinks;

struct PortOptions {
  // The brokers, in the order they are tried (a cluster's nodes): open() connects to the first
  // that answers; after a lost connection, from the next one on, round the list.
  std::vector<AmqpUrl> urls;
  Settings settings;
  std::string queue;                              // the dead-letter queue
  std::string park_queue;                         // default QUEUE.parked
  std::string hold_queue;                         // default QUEUE.hold
  std::optional<std::string> replay_exchange;     // default: "" (the default exchange)
  std::optional<std::string> replay_routing_key;  // default: x-death's most recent queue
  // The mapping's `map:` of the policy input `topic` (raw value -> topic): a replay to a queue
  // that is not the decided topic must be a queue this maps to it (docs/gate.md).
  std::map<std::string, std::string, std::less<>> topic_map;
  bool apply = false;
  // A dry run on a quorum queue uses up a delivery attempt of every letter it sees: it stops at
  // the first delivery that shows the queue is one (an x-delivery-count header) unless allowed.
  bool allow_peek = false;
  // The queue's only consumer (a plan's run on its plan queue: a second gate on the same plan is
  // refused by the broker, so that the plan's cap and counts hold).
  bool exclusive = false;
  // A quorum queue's delivery limit (x-delivery-limit or its policy; known through --management):
  // see above, and docs/gate.md, "Quorum queues with a delivery limit".
  std::optional<int64_t> delivery_limit;
  // Letters the run keeps unacked (skipped, dry run), at most: the prefetch window leaves room
  // for them when `keeps` (a dry run or a filter).
  bool keeps = true;
  uint64_t max_unacked = 1000;
  double max_rate = 10;  // letters per second: a slow rate turns the consumer's heartbeats off
  uint16_t prefetch = 16;
  int confirm_timeout_ms = 10000;
  Limits limits;
};

class RabbitPort final : public Port {
 public:
  // `note` hears of a broker that blocks publishing; `test_points` may be null. Neither owned.
  RabbitPort(PortOptions options, std::function<void(const std::string&)> note,
             const TestPoints* test_points);
  ~RabbitPort() override;

  std::string open() override;
  bool up() const override;
  std::string lost_reason(bool where) const override;
  void close() override;
  std::string describe() const override { return o_.urls[current_].describe(); }
  const std::string& queue() const override { return o_.queue; }
  Next next(size_t n, int timeout_ms, int linger_ms, std::vector<Letter>* out,
            std::string* error) override;
  void wait(int ms, const std::function<void()>& tick) override;
  std::string target(const Letter& letter, Action action) const override;
  const std::string& hold_name() const override { return o_.hold_queue; }
  std::optional<std::string> refuse_move(const Letter& letter, Action action) const override;
  std::vector<MoveAnswer> act(const std::vector<Move>& block) override;
  std::vector<std::string> settle(const std::vector<const Letter*>& block) override;
  void give_back(const Letter& letter) override;
  std::optional<uint32_t> depth() override;
  std::optional<TargetDepth> replay_target_depth(const Letter& letter) override;
  // The park and hold queues' ready message counts (passive declares). No oldest age: AMQP tells a
  // queue's count and nothing of its head without a basic.get, which is a delivery (docs/gate.md).
  HeldDepth held_depth() override;
  std::string pass_over_cost() const override;

 private:
  // A letter in hand (of the block next() handed out): its delivery and record.
  struct InHand {
    Delivery delivery;
    EnvelopeRecord record;
    std::string replay_key;  // where a replay goes
  };
  // Makes the letter of the delivery in `hand`.
  void fill(InHand& hand, Letter& letter);
  // The publish of a move, made just before it is sent.
  PublishRequest request(const Move& move);

  PortOptions o_;
  std::function<void(const std::string&)> note_;
  const TestPoints* test_points_;
  std::unique_ptr<AmqpLinks> links_;
  std::vector<std::unique_ptr<InHand>> hands_;  // the block in hand (kept, reused)
  std::set<uint64_t> unsettled_;                // delivery tags handed out, not acked or requeued
  size_t current_ = 0;     // the broker of o_.urls connected to (or last tried)
  bool opened_ = false;    // open() succeeded before: a reopen starts at the next broker
  std::string cancelled_;  // the broker ended the consumer in the middle of a block: why
  std::vector<HeaderValue> move_headers_;
  std::vector<amqp_table_entry_t> header_storage_;
};

}  // namespace replaygate::redrive::rabbitmq
