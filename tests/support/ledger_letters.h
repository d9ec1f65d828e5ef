// Test helper for the replay ledger's CLI tests: letters the shipped policy replays, and the
// decision lines of a run.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.h"

namespace replaygate::testing {

inline const std::string kReplayGatePolicy = kSourceDir + "/policies/replay_gate.yaml";

// A letter the shipped policy replays (payment.capture timeout, first attempt, not committed).
inline std::string letter(const std::string& id, const std::string& key, int replays = -1) {
  nlohmann::json j = {{"message_id", id},         {"topic", "payment.capture"},
                      {"error_class", "timeout"}, {"attempts", 1},
                      {"idempotency_key", key},   {"already_committed", false}};
  if (replays >= 0) j["replays"] = replays;
  return j.dump() + "\n";
}

inline std::vector<nlohmann::json> decisions(const std::string& out) {
  std::vector<nlohmann::json> lines;
  for (const std::string& line : lines_of(out)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace replaygate::testing
