// What a redrive run reports: one line per letter (LetterReport), the running counts (RunStats),
// and their text forms (the progress line, Prometheus metrics). Broker-neutral: every gate prints
// the same lines and metrics.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/table.h"

namespace replaygate::redrive {

// One letter's line (stdout, JSON): what the gate did or, in a dry run, would do.
struct LetterReport {
  uint64_t ordinal = 0;
  std::optional<std::string> message_id;
  std::optional<std::string> key;
  std::string verb, effect, rule, reason;
  std::string action;  // "republish", "park", "hold", "ack", "leave"
  std::string target;  // where it was moved (the port's words)
  std::string outcome;
  bool dry_run = true;
  std::string plan;  // a plan runs: the guard's word on it (act, held, skipped, done_earlier)
};

struct RunStats {
  uint64_t received = 0, handled = 0, skipped = 0, republished = 0, parked = 0, held = 0,
           acked_only = 0, unreadable = 0, reconnects = 0;
  uint64_t left = 0;  // left unsettled in the queue: their park or hold queue is where they died
  std::vector<uint64_t> per_verb;
  std::optional<uint32_t> queue_depth;
  // Letters handled that carry a replay marker (x-replay, replaygate_replays >= 1): a copy a gate
  // republished died again. Counted when settled, whatever the policy then decided.
  uint64_t died_again = 0;
  // The park and hold places (Port::held_depth), refreshed with the queue depth when asked for
  // (RunOptions::held_depth); nullopt until known.
  std::optional<uint64_t> held_letters, parked_letters;
  std::optional<double> oldest_held_seconds;
  double rate = 0;  // letters per second, since the start
  bool finished = false;
  bool drained = false;  // it ended because the queue had no letter for --idle-exit
  std::string stop_reason;
};

// "3 letters (replay_once 2, never 1): 2 republished, 1 parked, ...; 4.0/s; queue depth 7".
std::string counts_text(const RunStats& stats, const Table& table);
// Prometheus text format (version 0.0.4), labelled with the dead-letter queue's name.
std::string metrics_text(const RunStats& stats, const Table& table, const std::string& queue);

}  // namespace replaygate::redrive
