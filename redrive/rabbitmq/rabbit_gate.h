// The live gate on RabbitMQ: consume a dead-letter queue, decide each letter (redrive/redrive.h),
// act with publisher confirms, then ack; lose nothing, replay nothing twice (docs/gate.md).
//
// Per delivery, in this order (each step durable before the next):
//   record (envelope_record.h) -> decide -> filters -> ledger claim (create verbs) ->
//   audit decision entry -> publish (mandatory, persistent) -> publisher confirm ->
//   ledger `confirmed` + audit result entry -> basic.ack of the dead letter.
// A replay goes to the queue the letter died in (x-death's most recent `queue`) through the
// default exchange, never to its original exchange (which may fan out to queues whose consumers
// already succeeded), with the same body, properties and idempotency key, and x-replay = replays
// + 1. `never`-like verbs move it to the park queue, the default verb to the hold queue; each
// move is a confirmed publish, then the ack. Nothing is acked before its confirm.
//
// A dry run (the default) decides and prints, claims and writes nothing, acks nothing: the
// letters it saw stay unacked until the run ends and the channel closes, so they return to the
// queue as they were (the broker sets `redelivered`; a quorum queue counts a delivery attempt).
// Skipped letters (filters, --message-id) also stay unacked, so one run never handles a letter
// twice; at most Options::max_unacked are kept, then the run stops.
//
// Threads: run() uses the calling thread; call it through run_with_stack() (amqp_client.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inputs/records.h"
#include "redrive/rabbitmq/amqp_client.h"
#include "redrive/rabbitmq/envelope_record.h"
#include "redrive/redrive.h"
#include "runtime/reload.h"

namespace replaygate::redrive::rabbitmq {

struct GateOptions {
  AmqpUrl url;
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
  // A quorum queue's delivery limit (x-delivery-limit or its policy; known through --management):
  // the gate then pulls one letter at a time (basic.get: nothing waits unsettled in a prefetch
  // window, during a rate wait or at a stop), moves a letter delivered with x-delivery-count at
  // the limit (its last delivery: returned, the broker drops it) to the hold queue before it is
  // decided, in a dry run too, and stops a --message-id search at the first other letter
  // (docs/gate.md, "Quorum queues with a delivery limit").
  std::optional<int64_t> delivery_limit;
  std::optional<std::string> message_id;          // handle this one message only
  uint64_t max = UINT64_MAX;                      // letters handled at most
  double max_rate = 10;                           // letters per second (0: no limit)
  std::optional<std::string> topic, error_class;  // filters on the inputs of those names
  std::optional<int64_t> since;                   // filter: AMQP timestamp >= since (seconds)
  uint64_t max_unacked = 1000;  // skipped and dry-run letters kept unacked, at most
  std::optional<uint64_t> max_target_depth;
  uint16_t prefetch = 16;
  int confirm_timeout_ms = 10000;
  int idle_exit_ms = 2000;  // no delivery for this long: the queue is drained, stop
  bool follow = false;      // never stop on an idle queue
  int reconnect_for_s = 300;
  Limits limits;
  std::string crash_at;    // tests only ($REPLAYGATE_TEST_CRASH_AT): SIGKILL itself at this step
  std::string pause_at;    // tests only ($REPLAYGATE_TEST_PAUSE_AT=STEP:FILE): wait at this step
  std::string pause_file;  // ... while this file, which the gate creates there, exists
};

// One letter's line (stdout, JSON): what the gate did or, in a dry run, would do.
struct LetterReport {
  uint64_t ordinal = 0;
  std::optional<std::string> message_id;
  std::optional<std::string> key;
  std::string verb, effect, rule, reason;
  std::string action;  // "republish", "park", "hold", "ack", "leave"
  std::string target;  // the queue (and exchange) published to
  std::string outcome;
  bool dry_run = true;
};

struct GateStats {
  uint64_t received = 0, handled = 0, skipped = 0, republished = 0, parked = 0, held = 0,
           acked_only = 0, unreadable = 0, reconnects = 0;
  uint64_t left = 0;  // left unacked in the queue: their park or hold queue is where they died
  std::vector<uint64_t> per_verb;
  std::optional<uint32_t> queue_depth;
  double rate = 0;  // letters per second, since the start
  bool finished = false;
  std::string stop_reason;
};

struct GateHooks {
  std::function<void(const LetterReport&)> letter;  // after each letter
  std::function<void(const GateStats&)> progress;   // about once a second, and at the end
  std::function<void(const std::string&)> note;     // blocked publishing, reconnects, reloads
  // Asked between letters: true when a reload was requested and done or refused (it reports).
  std::function<void()> maybe_reload;
  std::function<bool()> stop_requested;  // SIGINT / SIGTERM
};

// Runs the gate until the queue is drained (no delivery for idle_exit_ms, unless follow), max
// letters are handled, the one --message-id is found, a stop is requested, or an error. Returns
// the exit code: 0 done, 1 done with unreadable letters (held) or letters left in the queue (their
// park or hold queue is the queue they died in), 2 an error (a broker, ledger or audit failure:
// the letter in hand stays unacked and returns to its queue).
// `make_parser` makes the record parser for a table (the `rabbitmq` reader with the mapping); it
// is called again after each reload, for the new table.
using ParserFactory = std::function<std::unique_ptr<inputs::RecordParser>(const Table&)>;
int run_gate(SharedTable& shared, const ParserFactory& make_parser, Redrive& redrive,
             const GateOptions& options, const GateHooks& hooks, GateStats* stats);

}  // namespace replaygate::redrive::rabbitmq
