// Test helper: checked policies built by hand (no front-end needed), shared by the compiler,
// runtime and property tests and the decide benchmark. reference_gate() is the one hand-built IR
// of policies/replay_gate.yaml, rule for rule (tests/properties/reference_gate_test.cc checks
// that the front-end builds exactly this IR from the file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir.h"

namespace replaygate::testing {

// A field of `type`; the typed helpers below add what their type has.
inline ir::Field typed_field(std::string name, ir::FieldType type, bool optional) {
  ir::Field f;
  f.name = std::move(name);
  f.type = type;
  f.optional = optional;
  return f;
}

inline ir::Field string_field(std::string name, bool optional = false,
                              bool empty_means_absent = false) {
  ir::Field f = typed_field(std::move(name), ir::FieldType::kString, optional);
  f.empty_means_absent = empty_means_absent;
  return f;
}

inline ir::Field int_field(std::string name, std::optional<int64_t> min, std::optional<int64_t> max,
                           bool optional = false) {
  ir::Field f = typed_field(std::move(name), ir::FieldType::kInt, optional);
  f.min = min;
  f.max = max;
  return f;
}

inline ir::Field bool_field(std::string name, bool optional = false) {
  return typed_field(std::move(name), ir::FieldType::kBool, optional);
}

inline ir::Field enum_field(std::string name, std::vector<std::string> values,
                            bool optional = false) {
  ir::Field f = typed_field(std::move(name), ir::FieldType::kEnum, optional);
  f.enum_values = std::move(values);
  return f;
}

inline ir::Condition cond(uint32_t field, ir::Op op, std::vector<ir::Value> values = {},
                          std::string constant = "") {
  return ir::Condition{field, op, std::move(values), std::move(constant)};
}

inline ir::Guard guard(std::string id, std::vector<ir::Condition> conditions, uint32_t verb,
                       std::string reason) {
  ir::Guard g;
  g.id = std::move(id);
  g.conditions = std::move(conditions);
  g.verb = verb;
  g.reason = std::move(reason);
  return g;
}

// A row with derived id "<table>:<k1>/<k2>" ("*" for wildcards, nullopt keys).
inline ir::Row row(const std::string& table, std::vector<std::optional<ir::Value>> keys,
                   uint32_t verb, std::string reason = "") {
  ir::Row r;
  r.id = table + ":";
  for (size_t k = 0; k < keys.size(); ++k) {
    if (k) r.id += "/";
    if (!keys[k]) {
      r.id += "*";
    } else if (keys[k]->kind == ir::Value::Kind::kInt) {
      r.id += std::to_string(keys[k]->i);
    } else if (keys[k]->kind == ir::Value::Kind::kBool) {
      r.id += keys[k]->b ? "true" : "false";
    } else {
      r.id += keys[k]->str;
    }
  }
  r.keys = std::move(keys);
  r.verb = verb;
  r.reason = std::move(reason);
  return r;
}

inline ir::Verb verb(std::string name, ir::Effect effect, std::string description) {
  return ir::Verb{std::move(name), effect, std::move(description)};
}

inline ir::Value S(std::string s) { return ir::Value::String(std::move(s)); }
inline ir::Value I(int64_t v) { return ir::Value::Int(v); }
inline ir::Value B(bool v) { return ir::Value::Bool(v); }

// Field and verb indices of reference_gate().
enum RefField : uint32_t {
  kTopic = 0,
  kErrorClass = 1,
  kAttempts = 2,
  kIdempotencyKey = 3,
  kAlreadyCommitted = 4,
  kReplays = 5
};
enum RefVerb : uint32_t { kNever = 0, kReplayOnce = 1, kHold = 2 };

// The (topic, error_class) keys of reference_gate()'s table known_failures, in row order.
inline constexpr std::pair<const char*, const char*> kKnownFailureKeys[] = {
    {"payment.capture", "timeout"},       {"payment.capture", "insufficient_funds"},
    {"payment.capture", "duplicate"},     {"inventory.reserve", "lock_timeout"},
    {"inventory.reserve", "overbook"},    {"webhook.partner", "http_503"},
    {"webhook.partner", "http_400"},      {"mail.receipt", "smtp_421"},
    {"mail.receipt", "unknown_recipient"}};

// policies/replay_gate.yaml as IR, with the source lines of its rules and rows.
inline ir::CheckedPolicy reference_gate() {
  ir::CheckedPolicy checked;
  ir::Policy& p = checked.policy;
  p.id = "dlq-replay-gate";
  p.revision = 1;
  p.description =
      "Decides, for each dead-lettered message, whether a worker may requeue it once, must park "
      "it for a ticket, or must wait for an operator. Unknown (topic, error_class) pairs fail "
      "closed to hold.";
  p.fields = {string_field("topic"),
              string_field("error_class"),
              int_field("attempts", 0, std::nullopt),
              string_field("idempotency_key", true, true),
              bool_field("already_committed"),
              int_field("replays", 0, std::nullopt, true)};
  p.fields[0].description = "the topic the message was consumed from";
  p.fields[1].description = "the normalised error class of the last failure";
  p.fields[2].description = "delivery attempts so far";
  p.fields[3].description = "the key the consumer persisted before the first attempt";
  p.fields[3].idempotency_key = true;  // `idempotency_key: true`: the key the ledger claims
  p.fields[4].description = "the ledger, outbox or partner receipt says the work already landed";
  p.fields[5].description =
      "how often this gate already requeued the message (x-replay header); absent is 0";
  p.verbs = {verb("never", ir::Effect::kNone, "park the message for a ticket"),
             verb("replay_once", ir::Effect::kCreate,
                  "requeue with a fresh attempt counter and the same idempotency key"),
             verb("hold", ir::Effect::kNone, "wait for an operator")};
  p.default_verb = kHold;
  p.default_reason = "no rule matches this (topic, error_class) pair";
  p.constants = {ir::Constant{"max_attempts", 3}};
  p.rules.push_back(guard("no_idempotency_key", {cond(kIdempotencyKey, ir::Op::kAbsent)}, kHold,
                          "cannot replay safely without an idempotency key"));
  p.rules.push_back(guard("already_committed", {cond(kAlreadyCommitted, ir::Op::kEq, {B(true)})},
                          kNever,
                          "the work already committed; replaying would repeat a side effect"));
  p.rules.push_back(guard("attempts_exhausted",
                          {cond(kAttempts, ir::Op::kGe, {I(3)}, "max_attempts")}, kHold,
                          "attempt budget exhausted"));
  p.rules.push_back(guard("already_replayed", {cond(kReplays, ir::Op::kGe, {I(1)})}, kHold,
                          "replay_once means once; this letter was already requeued by the gate"));
  ir::Table t;
  t.id = "known_failures";
  t.key_fields = {kTopic, kErrorClass};
  const auto& keys = kKnownFailureKeys;
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
  for (size_t i = 0; i < 9; ++i) {
    t.rows.push_back(row(t.id, {S(keys[i].first), S(keys[i].second)}, verbs[i], row_reasons[i]));
  }
  p.rules.push_back(t);
  // The shipped invariants (not part of the table: lowering ignores them).
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
            cond(kAlreadyCommitted, ir::Op::kEq, {B(true)}), ir::InvariantOp::kEffectNot, {},
            ir::Effect::kCreate);
  invariant("no_key_no_replay", "without an idempotency key a requeue may repeat the side effect",
            cond(kIdempotencyKey, ir::Op::kAbsent), ir::InvariantOp::kVerbNotIn, {kReplayOnce},
            ir::Effect::kNone);
  invariant("exhausted_waits_or_parks",
            "an exhausted attempt budget needs an operator or a ticket, never another try",
            cond(kAttempts, ir::Op::kGe, {I(3)}, "max_attempts"), ir::InvariantOp::kVerbIn,
            {kHold, kNever}, ir::Effect::kNone);
  invariant("replay_once_means_once", "a letter the gate already requeued is never requeued again",
            cond(kReplays, ir::Op::kGe, {I(1)}), ir::InvariantOp::kVerbNotIn, {kReplayOnce},
            ir::Effect::kNone);

  // Lines of policies/replay_gate.yaml (line 1 names its JSON Schema, docs/editors.md).
  ir::SourceMap& src = checked.source;
  src.path = "policies/replay_gate.yaml";
  for (uint32_t line : {54u, 60u, 66u, 72u, 78u}) src.rules.push_back(ir::Span{line, 5, 0, 0});
  src.conditions = {{ir::Span{56, 7, 0, 0}},
                    {ir::Span{62, 7, 0, 0}},
                    {ir::Span{68, 7, 0, 0}},
                    {ir::Span{74, 7, 0, 0}},
                    {}};
  src.rows = {{}, {}, {}, {}, {}};
  for (uint32_t line = 81; line <= 97; line += 2) src.rows[4].push_back(ir::Span{line, 9, 0, 0});
  // Invariant spans: the `invariant` key; condition spans: the field, or the op of `{ge: ..}`.
  for (uint32_t line : {102u, 107u, 112u, 117u}) src.invariants.push_back(ir::Span{line, 5, 0, 0});
  src.invariant_conditions = {{ir::Span{103, 12, 0, 0}},
                              {ir::Span{108, 12, 0, 0}},
                              {ir::Span{113, 23, 0, 0}},
                              {ir::Span{118, 22, 0, 0}}};
  checked.source_base_name = "replay_gate.yaml";
  checked.source_digest = "00112233445566778899aabbccddeeff";
  return checked;
}

// A small policy exercising wildcards, enums, NUL bytes and every guard op:
//   fields: region (enum eu|us|ap, optional), tier (int 0..9), vip (bool, optional),
//           partner (string, optional)
//   rule 0 guard blocked: partner in ["evil\0", "bad"] -> deny
//   rule 1 table routes keys (region, tier, partner):
//       [eu, 1, *] -> allow       [*, 1, *] -> deny       [eu, *, "acme"] -> allow
//       [*, *, "acme"] -> deny    [us, 2, "acme"] -> allow [*, *, *] -> deny? no: only via guard
//   rule 2 guard vip_low_tier: vip eq true, tier lt 3 -> allow
//   default deny
enum SmallField : uint32_t { kRegion = 0, kTier = 1, kVip = 2, kPartner = 3 };
enum SmallVerb : uint32_t { kDeny = 0, kAllow = 1 };

inline ir::CheckedPolicy small_policy() {
  ir::CheckedPolicy checked;
  ir::Policy& p = checked.policy;
  p.id = "small";
  p.revision = 7;
  p.description = "wildcards, enums and NUL bytes";
  p.fields = {enum_field("region", {"eu", "us", "ap"}, true), int_field("tier", 0, 9),
              bool_field("vip", true), string_field("partner", true)};
  p.verbs = {verb("deny", ir::Effect::kNone, "refuse"), verb("allow", ir::Effect::kRead, "let in")};
  p.default_verb = kDeny;
  p.default_reason = "no rule matched";
  p.rules.push_back(guard("blocked",
                          {cond(kPartner, ir::Op::kIn, {S(std::string("evil\0", 5)), S("bad")})},
                          kDeny, "partner is blocked"));
  ir::Table t;
  t.id = "routes";
  t.key_fields = {kRegion, kTier, kPartner};
  t.rows.push_back(row(t.id, {S("eu"), I(1), std::nullopt}, kAllow));
  t.rows.push_back(row(t.id, {std::nullopt, I(1), std::nullopt}, kDeny, "tier one elsewhere"));
  t.rows.push_back(row(t.id, {S("eu"), std::nullopt, S("acme")}, kAllow));
  t.rows.push_back(row(t.id, {std::nullopt, std::nullopt, S("acme")}, kDeny));
  t.rows.push_back(row(t.id, {S("us"), I(2), S("acme")}, kAllow));
  p.rules.push_back(t);
  p.rules.push_back(guard("vip_low_tier",
                          {cond(kVip, ir::Op::kEq, {B(true)}), cond(kTier, ir::Op::kLt, {I(3)})},
                          kAllow, "vip on a low tier"));
  checked.source_base_name = "small.yaml";
  checked.source_digest = "ffeeddccbbaa99887766554433221100";
  return checked;
}

}  // namespace replaygate::testing
