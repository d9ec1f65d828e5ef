// Test helper for the replay ledger's CLI tests: letters the shipped policy replays, and the
// decision lines of a run.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
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

// The rows of `ledger export` output without what a rebuild from the audit log cannot reproduce
// (the times to the microsecond, the worker), sorted by key and generation.
inline std::vector<nlohmann::json> rows_modulo_times(const std::string& export_out) {
  std::vector<nlohmann::json> v = decisions(export_out);
  for (nlohmann::json& j : v) {
    for (const char* k : {"claimed_at", "updated_at", "released_at", "recorded_at", "worker"}) {
      j.erase(k);
    }
  }
  std::sort(v.begin(), v.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    return std::make_pair(a["key"].get<std::string>(), a["generation"].get<int64_t>()) <
           std::make_pair(b["key"].get<std::string>(), b["generation"].get<int64_t>());
  });
  return v;
}

}  // namespace replaygate::testing
