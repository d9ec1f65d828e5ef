// The seed's Python reference gate (replay_gate.py: POLICY, MAX_ATTEMPTS, decide()) in C++, and
// the shipped policy's IR built by hand; the oracles for property 4.
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

#include "compiler/ir.h"

namespace replaygate::testing {

enum class RefVerb { kNever, kReplayOnce, kHold };

inline const char* ref_verb_name(RefVerb verb) {
  switch (verb) {
    case RefVerb::kNever:
      return "never";
    case RefVerb::kReplayOnce:
      return "replay_once";
    case RefVerb::kHold:
      return "hold";
  }
  return "?";
}

// The seed's DeadLetter (body_hash dropped: decide() never reads it). A missing key is modelled as
// std::nullopt, which Python's `not letter.idempotency_key` treats like "" (None is falsy).
struct RefDeadLetter {
  std::string topic;
  std::string error_class;
  int64_t attempts = 0;
  std::optional<std::string> idempotency_key;
  bool already_committed = false;
};

inline const std::map<std::pair<std::string, std::string>, RefVerb>& ref_policy() {
  static const std::map<std::pair<std::string, std::string>, RefVerb> policy = {
      {{"payment.capture", "timeout"}, RefVerb::kReplayOnce},
      {{"payment.capture", "insufficient_funds"}, RefVerb::kNever},
      {{"payment.capture", "duplicate"}, RefVerb::kNever},
      {{"inventory.reserve", "lock_timeout"}, RefVerb::kReplayOnce},
      {{"inventory.reserve", "overbook"}, RefVerb::kNever},
      {{"webhook.partner", "http_503"}, RefVerb::kReplayOnce},
      {{"webhook.partner", "http_400"}, RefVerb::kNever},
      {{"mail.receipt", "smtp_421"}, RefVerb::kReplayOnce},
      {{"mail.receipt", "unknown_recipient"}, RefVerb::kNever},
  };
  return policy;
}

inline constexpr int64_t kRefMaxAttempts = 3;

// def decide(letter, policy=POLICY) -> Verb
inline RefVerb ref_decide(const RefDeadLetter& letter) {
  if (!letter.idempotency_key || letter.idempotency_key->empty()) return RefVerb::kHold;
  if (letter.already_committed) return RefVerb::kNever;
  if (letter.attempts >= kRefMaxAttempts) return RefVerb::kHold;
  // std::map compares std::string by bytes and length, like Python's str == (no normalisation).
  auto it = ref_policy().find({letter.topic, letter.error_class});
  if (it == ref_policy().end()) return RefVerb::kHold;
  return it->second;
}

// policies/replay_gate.yaml as the IR the front-end should produce for it (field, verb, rule and
// row order as written; derived row ids; descriptions as YAML reads them).
inline ir::Policy shipped_policy_by_hand() {
  using ir::Value;
  ir::Policy p;
  p.id = "dlq-replay-gate";
  p.revision = 1;
  p.description =
      "Decides, for each dead-lettered message, whether a worker may requeue it once, must park it "
      "for a ticket, or must wait for an operator. Unknown (topic, error_class) pairs fail closed "
      "to hold.";
  auto field = [](std::string name, ir::FieldType type, std::string description) {
    ir::Field f;
    f.name = std::move(name);
    f.type = type;
    f.description = std::move(description);
    return f;
  };
  p.fields.push_back(
      field("topic", ir::FieldType::kString, "the topic the message was consumed from"));
  p.fields.push_back(field("error_class", ir::FieldType::kString,
                           "the normalised error class of the last failure"));
  p.fields.push_back(field("attempts", ir::FieldType::kInt, "delivery attempts so far"));
  p.fields.back().min = 0;
  p.fields.push_back(field("idempotency_key", ir::FieldType::kString,
                           "the key the consumer persisted before the first attempt"));
  p.fields.back().optional = true;
  p.fields.back().empty_means_absent = true;
  p.fields.push_back(field("already_committed", ir::FieldType::kBool,
                           "the ledger, outbox or partner receipt says the work already landed"));
  p.fields.push_back(
      field("replays", ir::FieldType::kInt,
            "how often this gate already requeued the message (x-replay header); absent is 0"));
  p.fields.back().min = 0;
  p.fields.back().optional = true;

  p.verbs = {{"never", ir::Effect::kNone, "park the message for a ticket"},
             {"replay_once", ir::Effect::kCreate,
              "requeue with a fresh attempt counter and the same idempotency key"},
             {"hold", ir::Effect::kNone, "wait for an operator"}};
  constexpr uint32_t kNever = 0, kReplayOnce = 1, kHold = 2;
  p.default_verb = kHold;
  p.default_reason = "no rule matches this (topic, error_class) pair";
  p.constants = {{"max_attempts", 3}};

  p.rules.emplace_back(ir::Guard{"no_idempotency_key",
                                 "cannot replay safely without an idempotency key",
                                 {{3, ir::Op::kAbsent, {}, ""}},
                                 kHold});
  p.rules.emplace_back(ir::Guard{"already_committed",
                                 "the work already committed; replaying would repeat a side effect",
                                 {{4, ir::Op::kEq, {Value::Bool(true)}, ""}},
                                 kNever});
  p.rules.emplace_back(ir::Guard{"attempts_exhausted",
                                 "attempt budget exhausted",
                                 {{2, ir::Op::kGe, {Value::Int(3)}, "max_attempts"}},
                                 kHold});
  p.rules.emplace_back(
      ir::Guard{"already_replayed",
                "replay_once means once; this letter was already requeued by the gate",
                {{5, ir::Op::kGe, {Value::Int(1)}, ""}},
                kHold});
  ir::Table table;
  table.id = "known_failures";
  table.key_fields = {0, 1};
  const std::pair<const char*, const char*> keys[] = {
      {"payment.capture", "timeout"},       {"payment.capture", "insufficient_funds"},
      {"payment.capture", "duplicate"},     {"inventory.reserve", "lock_timeout"},
      {"inventory.reserve", "overbook"},    {"webhook.partner", "http_503"},
      {"webhook.partner", "http_400"},      {"mail.receipt", "smtp_421"},
      {"mail.receipt", "unknown_recipient"}};
  const uint32_t verbs[] = {kReplayOnce, kNever, kNever,      kReplayOnce, kNever,
                            kReplayOnce, kNever, kReplayOnce, kNever};
  const char* const row_reasons[] = {
      "the capture timed out before an answer; the idempotency key makes one requeue safe",
      "the card was declined; a retry cannot succeed and would only repeat the attempt",
      "the gateway already holds a capture with this key",
      "lock contention is transient; the reservation is keyed and safe to retry once",
      "the stock is gone; a retry would oversell",
      "the partner was unavailable; it deduplicates on the idempotency key",
      "the partner rejected the payload; resending it unchanged fails again",
      "the mail server deferred delivery; one resend with the same key",
      "the address does not exist; resending would bounce again",
  };
  for (size_t r = 0; r < std::size(keys); ++r) {
    ir::Row row;
    row.reason = row_reasons[r];
    row.id = std::string("known_failures:") + keys[r].first + "/" + keys[r].second;
    row.keys = {Value::String(keys[r].first), Value::String(keys[r].second)};
    row.verb = verbs[r];
    table.rows.push_back(std::move(row));
  }
  p.rules.emplace_back(std::move(table));

  const auto invariant = [&](const char* id, const char* reason, ir::Condition premise,
                             ir::InvariantOp op, std::vector<uint32_t> verbs, ir::Effect effect) {
    ir::Invariant inv;
    inv.id = id;
    inv.reason = reason;
    inv.conditions = {std::move(premise)};
    inv.op = op;
    inv.verbs = std::move(verbs);
    inv.effect = effect;
    p.invariants.push_back(std::move(inv));
  };
  invariant("committed_is_never_replayed", "work that already landed must never be repeated",
            {4, ir::Op::kEq, {Value::Bool(true)}, ""}, ir::InvariantOp::kEffectNot, {},
            ir::Effect::kCreate);
  invariant("no_key_no_replay", "without an idempotency key a requeue may repeat the side effect",
            {3, ir::Op::kAbsent, {}, ""}, ir::InvariantOp::kVerbNotIn, {kReplayOnce},
            ir::Effect::kNone);
  invariant("exhausted_waits_or_parks",
            "an exhausted attempt budget needs an operator or a ticket, never another try",
            {2, ir::Op::kGe, {Value::Int(3)}, "max_attempts"}, ir::InvariantOp::kVerbIn,
            {kHold, kNever}, ir::Effect::kNone);
  invariant("replay_once_means_once", "a letter the gate already requeued is never requeued again",
            {5, ir::Op::kGe, {Value::Int(1)}, ""}, ir::InvariantOp::kVerbNotIn, {kReplayOnce},
            ir::Effect::kNone);
  return p;
}

}  // namespace replaygate::testing
