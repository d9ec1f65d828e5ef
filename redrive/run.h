// The live redrive loop, broker-neutral: take dead letters from a port (port.h) a block at a time,
// decide each one (Redrive), claim, record, move, record, settle; lose nothing, replay nothing
// twice (docs/gate.md). Every gate runs this loop; only its port differs.
//
// Per block, in this order (each step durable before the next):
//   next (up to block_max letters) -> decide each -> filters (a plan: its guard, plan_guard.h) ->
//   one ledger claim of every replay -> one audit append of every decision entry -> act (every
//   move, pipelined) -> one ledger mark of every confirmed replay (a plan: one progress
//   transaction) -> one audit append of every result entry (and the plan's progress) -> settle.
// A block is the smallest of block_max, what --max has left and what --max-rate allows now (a
// low rate or --message-id gives blocks of one, through the same code). One letter's trouble
// (unreadable, a refused move, a nack, an unroutable replay) is that letter's alone; a ledger,
// audit or connection failure stops or reconnects with the block's letters unsettled (they
// return to the queue; a claim made stays `claimed`, held as outcome unknown on redelivery).
// The run policy: --max letters handled, --max-rate (waits on the port between blocks, in
// slices so a stop or a reload is seen within 200 ms), filters (--message-id, --since, --topic,
// --error-class: a letter passed over stays unsettled), a dry run (decides and prints, claims
// and writes nothing, settles nothing: the letters it saw go back when the port closes), the
// unsettled bound (--max-unacked: skipped and dry-run letters kept, then stop), an unroutable
// replay moved to the hold place instead, --max-target-depth, reconnects with backoff (--apply
// only; the letters not settled went back with the connection), stats and progress about once a
// second.
//
// Threads: run() uses the calling thread (the port's: an AMQP port wants a large stack).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "inputs/records.h"
#include "redrive/port.h"
#include "redrive/redrive.h"
#include "redrive/stats.h"
#include "redrive/test_points.h"
#include "runtime/reload.h"

namespace replaygate::redrive {

class PlanGuard;  // redrive/plan_guard.h

struct RunOptions {
  bool apply = false;
  std::optional<std::string> message_id;  // handle this one letter only
  uint64_t max = UINT64_MAX;              // letters handled at most
  double max_rate = 10;                   // letters per second (0: no limit)
  // A block: at most block_max letters (and what --max and --max-rate allow now), sent when full
  // or block_linger_ms after its first letter came.
  size_t block_max = 64;
  int block_linger_ms = 5;
  std::optional<std::string> topic, error_class;  // filters on the inputs of those names
  std::optional<int64_t> since;                   // filter: the broker's timestamp >= since (s)
  uint64_t max_unacked = 1000;  // skipped and dry-run letters kept unsettled, at most
  std::optional<uint64_t> max_target_depth;
  int idle_exit_ms = 2000;  // no letter for this long: the queue is drained, stop
  bool follow = false;      // never stop on an idle queue
  int reconnect_for_s = 300;
  // Refresh the park and hold places' depths (Port::held_depth) with the queue depth, about once
  // a second (--metrics): off, the broker is not asked.
  bool held_depth = false;
  const TestPoints* test_points = nullptr;  // tests only; not owned
  // A plan runs (docs/plans.md): the guard changes each block's steps after the decisions and
  // records its progress after the outcomes, before the acks (plan_guard.h). Not owned.
  PlanGuard* plan = nullptr;
};

struct RunHooks {
  std::function<void(const LetterReport&)> letter;  // after each letter
  std::function<void(const RunStats&)> progress;    // about once a second, and at the end
  std::function<void(const std::string&)> note;     // blocked brokers, reconnects, reloads
  // Asked between letters: does a requested reload (and reports it).
  std::function<void()> maybe_reload;
  std::function<bool()> stop_requested;  // SIGINT / SIGTERM
};

// Runs until the queue is drained (no letter for idle_exit_ms, unless follow), max letters are
// handled, the one message_id is found, a stop is requested, or an error. Opens the port first.
// Returns the exit code: 0 done, 1 done with unreadable letters (held) or letters left in the
// queue (their park or hold place is where they died), 2 an error (a broker, ledger or audit
// failure: the letter in hand stays unsettled and returns to its queue).
// `make_parser` makes the record parser for a table (the broker's reader with the mapping); it is
// called again after each reload, for the new table.
using ParserFactory = std::function<std::unique_ptr<inputs::RecordParser>(const Table&)>;
int run(SharedTable& shared, const ParserFactory& make_parser, Redrive& redrive, Port& port,
        const RunOptions& options, const RunHooks& hooks, RunStats* stats);

}  // namespace replaygate::redrive
