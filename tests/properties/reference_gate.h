// The seed's Python reference gate (replay_gate.py: POLICY, MAX_ATTEMPTS, decide()) in C++: the
// oracle for property 4, which holds it against the shipped policy's IR built by hand
// (reference_gate() of tests/support/test_policies.h).
//
// Transcribed line by line from "Dead-Letter Replay Does Not Belong on Free Inference"
// (shared/seeds/000_*.txt). The one addition the shipped policy makes, the replay-once guard
// (`replays >= 1` -> hold), is not in the seed, so property 4 compares with replays absent.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "tests/support/test_policies.h"

namespace replaygate::testing {

enum class SeedVerb { kNever, kReplayOnce, kHold };

inline const char* seed_verb_name(SeedVerb verb) {
  switch (verb) {
    case SeedVerb::kNever:
      return "never";
    case SeedVerb::kReplayOnce:
      return "replay_once";
    case SeedVerb::kHold:
      return "hold";
  }
  return "?";
}

// The seed's DeadLetter (body_hash dropped: decide() never reads it). A missing key is modelled as
// std::nullopt, which Python's `not letter.idempotency_key` treats like "" (None is falsy).
struct SeedDeadLetter {
  std::string topic;
  std::string error_class;
  int64_t attempts = 0;
  std::optional<std::string> idempotency_key;
  bool already_committed = false;
};

inline const std::map<std::pair<std::string, std::string>, SeedVerb>& seed_policy() {
  static const std::map<std::pair<std::string, std::string>, SeedVerb> policy = {
      {{"payment.capture", "timeout"}, SeedVerb::kReplayOnce},
      {{"payment.capture", "insufficient_funds"}, SeedVerb::kNever},
      {{"payment.capture", "duplicate"}, SeedVerb::kNever},
      {{"inventory.reserve", "lock_timeout"}, SeedVerb::kReplayOnce},
      {{"inventory.reserve", "overbook"}, SeedVerb::kNever},
      {{"webhook.partner", "http_503"}, SeedVerb::kReplayOnce},
      {{"webhook.partner", "http_400"}, SeedVerb::kNever},
      {{"mail.receipt", "smtp_421"}, SeedVerb::kReplayOnce},
      {{"mail.receipt", "unknown_recipient"}, SeedVerb::kNever},
  };
  return policy;
}

inline constexpr int64_t kSeedMaxAttempts = 3;

// def decide(letter, policy=POLICY) -> Verb
inline SeedVerb seed_decide(const SeedDeadLetter& letter) {
  if (!letter.idempotency_key || letter.idempotency_key->empty()) return SeedVerb::kHold;
  if (letter.already_committed) return SeedVerb::kNever;
  if (letter.attempts >= kSeedMaxAttempts) return SeedVerb::kHold;
  // std::map compares std::string by bytes and length, like Python's str == (no normalisation).
  auto it = seed_policy().find({letter.topic, letter.error_class});
  if (it == seed_policy().end()) return SeedVerb::kHold;
  return it->second;
}

}  // namespace replaygate::testing
