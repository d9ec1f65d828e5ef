// A decided letter as a plan letter (docs/plans.md): what a build lists and what every run
// (`decide --plan`, a gate's plan guard) computes again to compare with the plan.
//
// In: the table, the letter's decided Input, its message id and record bytes, the source name
// the plan covers and the decision. Out: a PlanLetter (identity, key, body digest, decision).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redrive/plan/plan.h"
#include "runtime/table.h"

namespace replaygate::plan {

// What a letter's verb does (as the gate's default map, redrive/redrive.h ActionMap): a create
// verb republishes, the default verb holds, another none verb parks; a read or copy verb has no
// action ("none").
std::string action_of(const Table& table, uint32_t verb);

// One readable record as a plan letter: identity, message id, idempotency key, body digest (of
// the record's bytes, a trailing CR or LF not counted), the decision, and where the first copy
// was (`line`: 1-based in a dump, 0 for a queue).
PlanLetter letter_of(const Table& table, const Input& input,
                     const std::optional<std::string_view>& message_id, std::string_view record,
                     const std::string& source, const Decision& decision, uint64_t line);

// The same from a body digest the caller already has: a live letter's (a broker port's
// DeadLetter::body_digest, "sha256:<hex>" of the message body), since its record carries what
// changes between deliveries (the redelivered flag) and the body does not.
PlanLetter letter_with_digest(const Table& table, const Input& input,
                              const std::optional<std::string_view>& message_id,
                              std::string body_digest, const std::string& source,
                              const Decision& decision, uint64_t line);

}  // namespace replaygate::plan
