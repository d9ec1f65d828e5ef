// A decided letter as a plan letter (letters.h).
#include "redrive/plan/letters.h"

#include <utility>

#include "runtime/codes.h"

namespace replaygate::plan {

std::string action_of(const Table& table, uint32_t verb) {
  const Effect effect = table.verb_effect(verb);
  if (effect == Effect::kCreate) return "republish";
  if (verb == table.default_verb()) return "hold";
  if (effect == Effect::kNone) return "park";
  return "none";
}

PlanLetter letter_of(const Table& table, const Input& input,
                     const std::optional<std::string_view>& message_id, std::string_view record,
                     const std::string& source, const Decision& decision, uint64_t line) {
  // A JSON Lines record may end in "\r" (a CRLF dump): the same letter either way.
  while (!record.empty() && (record.back() == '\r' || record.back() == '\n')) {
    record.remove_suffix(1);
  }
  return letter_with_digest(table, input, message_id, digest_of(record), source, decision, line);
}

PlanLetter letter_with_digest(const Table& table, const Input& input,
                              const std::optional<std::string_view>& message_id,
                              std::string body_digest, const std::string& source,
                              const Decision& decision, uint64_t line) {
  PlanLetter l;
  l.source = source;
  if (message_id) l.message_id = std::string(*message_id);
  const uint32_t key = table.idempotency_key_field();
  if (key != Table::kNoField && input.state(key) == Input::Slot::State::kString) {
    l.idempotency_key = std::string(input.slot(key).s);
  }
  l.body_digest = std::move(body_digest);
  l.identity = letter_identity(source, l.message_id, l.body_digest, input_values(table, input));
  l.count = 1;
  l.first_line = line;
  l.decision.verb = std::string(table.verb_name(decision.verb));
  l.decision.rule = std::string(table.rule_name(decision));
  l.decision.effect = effect_name(table.verb_effect(decision.verb));
  l.decision.action = action_of(table, decision.verb);
  const uint32_t topic = table.field_index("topic");
  if (l.decision.action == "republish" && topic != Table::kNoField &&
      input.state(topic) == Input::Slot::State::kString) {
    l.decision.target = std::string(input.slot(topic).s);
  }
  return l;
}

}  // namespace replaygate::plan
