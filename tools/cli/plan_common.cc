// What the plan subcommands share (plan_common.h).
#include "tools/cli/plan_common.h"

#include <chrono>
#include <cstdio>

#include "audit/audit_log.h"
#include "runtime/codes.h"
#include "tools/cli/commands.h"

namespace replaygate::cli {

std::string action_of(const Table& table, uint32_t verb) {
  const Effect effect = table.verb_effect(verb);
  if (effect == Effect::kCreate) return "republish";
  if (verb == table.default_verb()) return "hold";
  if (effect == Effect::kNone) return "park";
  return "none";
}

plan::PlanLetter letter_of(const Table& table, const Input& input, const inputs::RecordMeta& meta,
                           std::string_view record, const std::string& source,
                           const Decision& decision, uint64_t line) {
  plan::PlanLetter l;
  l.source = source;
  if (meta.has_message_id) l.message_id = std::string(meta.message_id);
  const uint32_t key = table.idempotency_key_field();
  if (key != Table::kNoField && input.state(key) == Input::Slot::State::kString) {
    l.idempotency_key = std::string(input.slot(key).s);
  }
  // A JSON Lines record may end in "\r" (a CRLF dump): the same letter either way.
  while (!record.empty() && (record.back() == '\r' || record.back() == '\n')) {
    record.remove_suffix(1);
  }
  l.body_digest = plan::digest_of(record);
  l.identity =
      plan::letter_identity(source, l.message_id, l.body_digest, plan::input_values(table, input));
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

std::string now_text() {
  return ledger::format_time(
      std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now()));
}

int plan_usage(const std::string& message) {
  std::fprintf(stderr, "replaygate plan: error: %s\n", message.c_str());
  return kExitUsage;
}

int plan_say(int code, const std::string& message) {
  std::fprintf(stderr, "replaygate plan: %s\n", message.c_str());
  return code;
}

std::unique_ptr<ledger::Ledger> open_plan_ledger(const std::string& url, const std::string& scope,
                                                 bool create) {
  ledger::Options lo;
  lo.scope = scope;
  lo.create = create;
  ledger::Result<std::unique_ptr<ledger::Ledger>> opened = ledger::open_ledger(url, lo);
  if (!opened) {
    std::fprintf(stderr, "replaygate plan: error: %s (%s)\n", opened.error().message.c_str(),
                 std::string(ledger::error_code_name(opened.error().code)).c_str());
    return nullptr;
  }
  return std::move(opened.value());
}

std::string append_entries(const std::string& log, std::vector<nlohmann::json> entries) {
  const audit::AppendResult appended = audit::append_batch(log, std::move(entries));
  std::fputs(audit::removed_tail_note(log, appended).c_str(), stderr);
  return appended.ok ? "" : appended.error;
}

ledger::PlanRecord plan_record_of(const plan::PlanRead& plan) {
  ledger::PlanRecord r;
  r.digest = plan.digest;
  r.author = plan.header.author;
  r.source = plan.header.source;
  r.table_checksum = plan.header.table_checksum;
  r.letters = plan.summary.letters;
  r.copies = plan.summary.copies;
  r.created_at = ledger::parse_time(plan.header.created_at).value_or(ledger::Time{});
  r.expires_at = ledger::parse_time(plan.header.expires_at).value_or(ledger::Time{});
  return r;
}

audit::PlanEntry recorded_entry(const ledger::PlanRecord& r, const std::string& operator_name,
                                const std::string& scope) {
  audit::PlanEntry e;
  e.operator_name = operator_name;
  e.act = "plan_recorded";
  e.scope = scope;
  e.fields = {{"digest", r.digest},
              {"author", r.author},
              {"source", r.source},
              {"table_checksum", r.table_checksum},
              {"letters", r.letters},
              {"copies", r.copies},
              {"created_at", ledger::format_time(r.created_at)},
              {"expires_at", ledger::format_time(r.expires_at)}};
  return e;
}

std::string ensure_recorded(ledger::Ledger& l, const plan::PlanRead& plan,
                            const std::string& operator_name, const std::string& audit) {
  ledger::Result<std::optional<ledger::PlanRecord>> known = l.plan(plan.digest);
  if (!known) return known.error().message;
  if (known.value()) return "";
  const ledger::PlanRecord r = plan_record_of(plan);
  if (ledger::Status s = l.record_plan(r); !s) return s.error().message;
  return append_entries(audit, {audit::to_json(recorded_entry(r, operator_name, l.scope()))});
}

std::vector<plan::Approval> approvals_of(const std::vector<ledger::PlanApproval>& approvals) {
  std::vector<plan::Approval> out;
  for (const ledger::PlanApproval& a : approvals) {
    out.push_back({a.digest, a.approver, a.key_id, a.signature, a.reason,
                   ledger::format_time(a.approved_at)});
  }
  return out;
}

plan::PlanVerdict verify_against(ledger::Ledger& l, const plan::PlanRead& plan,
                                 const plan::Users& users,
                                 const std::optional<std::string>& table_checksum,
                                 std::string* error) {
  plan::VerifyInput in;
  in.plan = &plan;
  in.users = &users;
  in.policy_required = kPolicyApprovals;
  in.now = now_text();
  in.table_checksum = table_checksum;
  ledger::Result<std::optional<ledger::PlanRecord>> known = l.plan(plan.digest);
  if (!known) {
    *error = known.error().message;
    return {};
  }
  in.recorded = known.value().has_value();
  if (in.recorded && known.value()->cancelled_at) {
    const ledger::PlanRecord& r = *known.value();
    in.cancelled = "by " + r.cancelled_by + " at " + ledger::format_time(*r.cancelled_at) + ": " +
                   r.cancel_reason;
  }
  ledger::Result<std::vector<ledger::PlanApproval>> approvals = l.plan_approvals(plan.digest);
  if (!approvals) {
    *error = approvals.error().message;
    return {};
  }
  in.approvals = approvals_of(approvals.value());
  return plan::verify_plan(in);
}

}  // namespace replaygate::cli
