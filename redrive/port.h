// The one interface between the redrive loop (run.h) and a broker: the loop asks a port for dead
// letters, tells it what to do with a block of them, and hears back per letter. A port is the only
// code that knows its broker's client library (redrive/rabbitmq/ for AMQP; a Redis port would be
// redrive/redis/): what a "move" is (AMQP: a mandatory persistent publish and its publisher
// confirm; Redis: one atomic script), what "settle" is (AMQP: basic.ack; Redis: drop the entry
// from the gate's in-flight set), and how a letter becomes the record its reader maps.
//
// The loop's order, per block of letters, which a port must not change: next() -> decide every
// letter -> one ledger claim of every replay -> one audit append of every decision entry -> act()
// (every move of the block at once: a port pipelines them) -> one ledger mark of every confirmed
// replay -> one audit append of every result -> settle() (a port may settle many at once). A letter
// a port hands out and the loop never settles (skipped, dry run, a failure) must go back to its
// queue unchanged when the port closes or loses its connection: nothing is lost by stopping.
//
// Errors: no exception; a failure is a return value with a message. Threads: a port belongs to the
// thread of the loop that drives it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "redrive/redrive.h"

namespace replaygate::redrive {

// One dead letter as a port hands it over. Valid until the port's next call of next() or close().
struct Letter {
  uint64_t handle = 0;  // the port's own (AMQP: the delivery tag)
  uint32_t slot = 0;    // its place in the block next() handed out
  // What Redrive::step() reads: the record, its problem, the redelivery evidence, the target check.
  DeadLetter dead;
  // The broker's timestamp of the letter (seconds), for --since; nullopt when it has none.
  std::optional<int64_t> timestamp;
  // Not empty: a dry run must stop at this letter without deciding it, for this reason (looking
  // costs: a quorum queue counts every delivery as an attempt). Set by the port only when allowed.
  std::string refuse_peek;
  // The letter must be moved even in a dry run (its last delivery attempt: returned, the broker
  // would drop it); Redrive holds it through DeadLetter::hold_rule.
  bool must_move = false;
};

// One letter's move: where Redrive::step() said it goes.
struct Move {
  const Letter* letter = nullptr;
  Action action = Action::kHold;
  int64_t copy_replay = 0;         // republish: the replay marker the copy carries (as claimed)
  std::string verb, rule, reason;  // park and hold: recorded on the moved letter
};

// What a move came to.
struct MoveAnswer {
  enum class Outcome : uint8_t {
    kDone,     // the broker took it where it was sent, durably
    kNotDone,  // the broker refused it (unroutable, nacked, a closed channel): nothing moved
    kUnknown,  // no answer in time, or the connection went: it may or may not have moved
  };
  Outcome outcome = Outcome::kUnknown;
  bool unroutable = false;  // kNotDone: no queue took it (a replay target that does not exist)
  bool lost = false;        // the connection went with it: the letter returns to its queue itself
  std::string result;       // the broker's word for it: "confirmed", "returned", "nacked", ...
  std::string detail;       // the broker's reply text, the library's error; kDone: the proof
};

class Port {
 public:
  virtual ~Port() = default;

  // Connects (again, after close()): "" or why not.
  virtual std::string open() = 0;
  // The connection is up. When it is not, every letter not settled is back in its queue.
  virtual bool up() const = 0;
  // Why the connection went: `where` says which connection, for the reconnect note.
  virtual std::string lost_reason(bool where) const = 0;
  // Closes the connection: every letter handed out and not settled goes back to its queue.
  virtual void close() = 0;
  // The broker, without secrets ("amqp://guest@127.0.0.1:5672/%2F"), and the dead-letter queue's
  // name, for messages.
  virtual std::string describe() const = 0;
  virtual const std::string& queue() const = 0;

  enum class Next : uint8_t { kLetters, kTimeout, kLost, kCancelled };
  // A block: up to `n` letters (at least one when kLetters) into *out, waiting up to `timeout_ms`
  // for the first and then up to `linger_ms` after it for more. kCancelled: the broker ended the
  // consumer (*error says why).
  virtual Next next(size_t n, int timeout_ms, int linger_ms, std::vector<Letter>* out,
                    std::string* error) = 0;
  // Waits `ms` servicing the connection (heartbeats, alarms), never a blind sleep. `tick` (the test
  // pause point) runs in each slice of the wait.
  virtual void wait(int ms, const std::function<void()>& tick = {}) = 0;

  // Where `action` would take `letter`, as text ("queue 'payments' (default exchange)").
  virtual std::string target(const Letter& letter, Action action) const = 0;
  // The name of the place held letters go (the hold queue).
  virtual const std::string& hold_name() const = 0;
  // Not nullopt: a park or hold of `letter` would hand it back to the consumer it died in, so the
  // letter is left in its queue; the text says so and what to choose instead.
  virtual std::optional<std::string> refuse_move(const Letter& letter, Action action) const = 0;
  // Carries out a block of moves, one answer per move, in order: all sent before any answer is
  // awaited (AMQP: pipelined publishes, then their confirms).
  virtual std::vector<MoveAnswer> act(const std::vector<Move>& block) = 0;
  // Removes settled letters from the dead-letter queue for good (after their records): one "" or
  // error per letter, in order. Never settles a letter not in `block` (AMQP: a `multiple` ack
  // only up to the highest delivery tag below which every letter handed out is in `block`).
  virtual std::vector<std::string> settle(const std::vector<const Letter*>& block) = 0;
  // Returns a letter not moved to its queue as it was (when the connection is up).
  virtual void give_back(const Letter& letter) = 0;

  // The dead-letter queue's depth, when known.
  virtual std::optional<uint32_t> depth() = 0;
  // A republished letter's target queue and its depth, when the target is a queue and readable.
  struct TargetDepth {
    std::string name;
    uint32_t depth = 0;
  };
  virtual std::optional<TargetDepth> replay_target_depth(const Letter& letter) = 0;
  // The letters waiting in the park and hold places, and how long ago the oldest held letter died
  // (seconds), each nullopt when the broker cannot say (or the read failed). Asked about once a
  // second with depth(), never per letter; reading must not consume, peek or move a letter.
  struct HeldDepth {
    std::optional<uint64_t> held, parked;
    std::optional<double> oldest_held_seconds;
  };
  virtual HeldDepth held_depth() { return {}; }
  // Not empty: passing a letter over (a filter, a --message-id search) costs it something, and
  // this says what (a quorum queue's delivery attempt).
  virtual std::string pass_over_cost() const = 0;

  // Where a letter is now, for a broker that can say (Redis can, AMQP cannot): after a crash
  // between a claim and a move, the next run looks instead of holding the claim as unknown.
  enum class Where : uint8_t { kUnknown, kDeadLetterQueue, kReplayed, kParked, kHeld, kGone };
  virtual Where locate(const Letter& /*letter*/) { return Where::kUnknown; }
};

}  // namespace replaygate::redrive
