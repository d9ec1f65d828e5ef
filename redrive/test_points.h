// The crash and pause points of the redrive loop, for tests: $REPLAYGATE_TEST_CRASH_AT=STEP dies
// as a kill -9 would at that step; $REPLAYGATE_TEST_PAUSE_AT=STEP:FILE creates FILE at the first
// STEP and waits (at most 120 s) until the test removes it, so that a test can stop the broker at
// an exact point. Steps, per block: decided (every letter), claimed (the block's claims
// committed), decisions_recorded (its decision entries), published (after each publish: between
// two publishes of a block), confirmed (every confirm in), held_last_attempt, marked (the
// confirmed replays marked), result_recorded (the result entries, before the audit anchor),
// recorded, acked; and rate_wait.
#pragma once

#include <string>
#include <string_view>

namespace replaygate::redrive {

struct TestPoints {
  std::string crash_at;
  std::string pause_at;
  std::string pause_file;
  // Reads the two variables; "" or why REPLAYGATE_TEST_PAUSE_AT is malformed.
  std::string from_environment();
  // At step `step`: dies, pauses, or returns.
  void at(std::string_view step) const;
};

}  // namespace replaygate::redrive
