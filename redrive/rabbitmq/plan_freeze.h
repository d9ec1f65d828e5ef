// Moving letters between a dead-letter queue and a plan's queue (docs/plans.md, "Building a plan
// on RabbitMQ"): the freeze of `plan build --amqp` (DLQ -> DLQ.plan.ID) and the way back of a
// cancel or a crashed build's recovery (DLQ.plan.ID -> DLQ).
//
// In: a broker URL, the queue read (`from`), the queue written (`to`). Out: each letter of `from`
// in turn (its record, as the gate's port makes it), and for the letters the caller takes, a
// move: a persistent, mandatory publish to `to` through the default exchange with a publisher
// confirm, then the ack of the original. A crash between the confirm and the ack leaves a copy in
// both queues, never none. A moved letter keeps its body, properties and every header (x-death
// included) but the queue's own x-delivery-count; a freeze adds `x-replaygate-plan: ID`, a
// return removes it.
//
// Letters are pulled one at a time (basic.get, manual ack), so any number of letters not taken
// can stay unacked (no prefetch window bounds them) and "the queue answers empty" means every
// letter that was ready has been seen; the letters not taken return to `from` unchanged but for
// the redelivered flag when the mover closes (a quorum queue counts a delivery attempt: a quorum
// `from` is refused unless allow_peek, as the gate's dry run refuses it).
//
// Errors: no exception, a return value with a message. Threads: one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "redrive/rabbitmq/amqp_client.h"
#include "redrive/rabbitmq/envelope_record.h"
#include "redrive/test_points.h"

namespace replaygate::redrive::rabbitmq {

// The header a frozen letter carries: the plan id whose queue it is in.
inline constexpr const char* kPlanHeader = "x-replaygate-plan";

struct MoverOptions {
  AmqpUrl url;
  Settings settings;
  std::string from, to;
  // Set: moved letters carry x-replaygate-plan: plan_id, and `to` is declared a durable classic
  // queue (x-queue-type: classic, no other argument). Unset: the header is removed and `to` must
  // exist.
  std::optional<std::string> plan_id;
  bool allow_peek = false;  // take letters from a quorum queue (their returns count attempts)
  Limits limits;
  int confirm_timeout_ms = 10000;
  // Crash points, tests only (not owned; may be null): STEP_confirmed after a block's confirms and
  // its `confirmed` callback, before the acks; STEP_acked after the acks (between two blocks).
  const TestPoints* test_points = nullptr;
  std::string step = "freeze";
};

// A letter of `from`, as next() hands it over; valid until the next call of next().
struct SeenLetter {
  const EnvelopeRecord* record = nullptr;  // record, problem, message id, body digest
  std::optional<int64_t> timestamp;        // the AMQP timestamp (seconds), when set
};

class QueueMover {
 public:
  explicit QueueMover(MoverOptions options);
  ~QueueMover();
  QueueMover(const QueueMover&) = delete;
  QueueMover& operator=(const QueueMover&) = delete;

  // Connects (one connection to pull, one to publish with confirms), checks `from` exists and
  // declares or checks `to`. "" or why not. kMissing: `from` does not exist (*error says so).
  std::string open(bool* from_missing = nullptr);
  // The ready letters of `from` when open() ran.
  uint32_t depth_at_open() const { return depth_at_open_; }

  enum class Next { kLetter, kEmpty, kRefused, kLost };
  // The next letter of `from` into *out. kEmpty: the queue answers empty (every ready letter was
  // seen). kRefused: `from` is a quorum queue and peeks are not allowed (*error: the refusal,
  // nothing of this letter taken). kLost: the connection went (*error).
  Next next(SeenLetter* out, std::string* error);
  // Takes the letter next() handed out last: it is moved by the next move_taken().
  void take();
  size_t taken() const { return taken_.size(); }

  // Moves every taken letter: publishes all (pipelined), waits for every confirm, calls
  // `confirmed` (the audit entry of the block: "" or why not), then acks the originals and makes
  // sure the broker has the acks. "" or why not: a publish not confirmed, or `confirmed` failing,
  // acks nothing (the originals return to `from` when the mover closes; copies confirmed stay in
  // `to`).
  std::string move_taken(const std::function<std::string()>& confirmed);

  // Deletes `name` when it is empty: "" or why not.
  std::string delete_if_empty(const std::string& name);
  // The ready letters of `name`, or nullopt with *error.
  std::optional<uint32_t> depth(const std::string& name, std::string* error);
  // Closes both connections: every letter handed out and not moved returns to `from`.
  void close();

 private:
  MoverOptions o_;
  std::unique_ptr<Connection> pull_, publish_;
  std::unique_ptr<Consumer> consumer_;
  std::unique_ptr<Publisher> publisher_;
  std::unique_ptr<Delivery> current_;  // the letter next() handed out last
  EnvelopeRecord record_;
  std::vector<std::unique_ptr<Delivery>> taken_;
  std::vector<std::unique_ptr<Delivery>> spare_;
  uint32_t depth_at_open_ = 0;
};

}  // namespace replaygate::redrive::rabbitmq
