// What every run of a plan checks and says (run_rules.h).
#include "redrive/plan/run_rules.h"

#include <utility>
#include <vector>

#include "audit/entry.h"
#include "redrive/plan/approval.h"
#include "redrive/plan/plan_ledger.h"

namespace replaygate::plan {

std::string open_for_run(const RunCheck& check, ledger::Ledger& l, PlanRead* read,
                         PlanIndex* index) {
  *read = read_plan_file(check.plan_path, [&](const PlanLetter& letter) {
    if (letter.message_id) index->by_message_id.emplace(*letter.message_id, letter.identity);
    index->letters.emplace(letter.identity, letter);
    return true;
  });
  if (!read->ok) return read->error;
  if (!read->digest_matches()) {
    return check.plan_path + " says its digest is " + read->digest + " but its content hashes to " +
           read->computed_digest + ": the plan was edited after it was built";
  }
  if (check.source && read->header.source != *check.source) {
    return check.plan_path + " covers " + read->header.source + ", not " + *check.source + " (" +
           check.source_what + "): run a plan built from this queue";
  }
  if (check.table_checksum != read->header.table_checksum) {
    return "the table's checksum is " + check.table_checksum + "; the plan was built on " +
           read->header.table_checksum + ": build and approve a new plan";
  }
  Users users;
  if (const std::string why = read_users_file(check.users_path, &users); !why.empty()) return why;
  std::string error;
  const PlanVerdict v = verify_against(l, *read, users, check.table_checksum, &error);
  if (!error.empty()) return error;
  if (v.valid) return "";
  std::string why;
  for (const Finding& f : v.findings) {
    if (f.code != "approval") why += (why.empty() ? "" : "; ") + f.message;
  }
  return why;
}

std::string stop_reason(ledger::Ledger& l, const std::string& digest) {
  ledger::Result<std::optional<ledger::PlanRecord>> r = l.plan(digest);
  if (!r) return r.error().message;
  if (!r.value()) return "the ledger no longer has plan " + digest;
  if (r.value()->cancelled_at) {
    return "the plan was cancelled by " + r.value()->cancelled_by + " at " +
           ledger::format_time(*r.value()->cancelled_at) + " (" + r.value()->cancel_reason + ")";
  }
  return "";
}

std::string changed_reason(std::string_view message_id) {
  return "message id " + std::string(message_id) +
         " is planned, but this letter's body or inputs differ from the plan's";
}

std::string duplicate_reason(int64_t copy, int64_t count) {
  return "copy " + std::to_string(copy) + " of a letter the plan lists " + std::to_string(count) +
         " time(s)";
}

std::string mismatch_reason(const PlanDecision& now, const PlanDecision& planned) {
  return "decided " + now.verb + " by " + now.rule + " now; the plan says " + planned.verb +
         " by " + planned.rule;
}

nlohmann::json progress_entry(const ledger::PlanLetterProgress& p, const std::string& operator_name,
                              const std::string& scope) {
  audit::PlanEntry e;
  e.operator_name = operator_name;
  e.act = "plan_progress";
  e.scope = scope;
  e.fields = {{"digest", p.digest}, {"identity", p.identity}, {"done", p.done},
              {"held", p.held},     {"changed", p.changed},   {"last_outcome", p.last_outcome}};
  return audit::to_json(e);
}

}  // namespace replaygate::plan
