// Test helper: one JSON letter of the shipped policy (policies/replay_gate.yaml), written as a
// string so that the read-pool and decide --threads tests build their dumps alike. Header-only.
#pragma once

#include <cstddef>
#include <string>

namespace replaygate::testing {

// {"message_id":"m-N","topic":..,"error_class":..,"attempts":..,"idempotency_key":..,
// "already_committed":..} without a newline; a negative `attempts` is an invalid input on purpose.
inline std::string shipped_letter(size_t n, const std::string& key, const std::string& topic,
                                  const std::string& error_class, int attempts, bool committed) {
  return R"({"message_id":"m-)" + std::to_string(n) + R"(","topic":")" + topic +
         R"(","error_class":")" + error_class + R"(","attempts":)" + std::to_string(attempts) +
         R"(,"idempotency_key":")" + key + R"(","already_committed":)" +
         (committed ? "true" : "false") + "}";
}

}  // namespace replaygate::testing
