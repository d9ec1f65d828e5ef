// The audited acts on a plan (docs/plans.md): `plan approve` (signed by the approver's key,
// recorded in the ledger with approve_plan, then audited `plan_approved`) and `plan cancel`
// (cancel_plan, then audited `plan_cancelled`). Each entry is written after the ledger call
// succeeded: the ledger is the truth and the entry its record. A crash between the two leaves a
// ledger row without its entry: `ledger check` reports it, and a rerun of the same command finds
// the row and writes the missing entry from it (test points plan_approval_recorded,
// plan_cancel_recorded).
#include <cstdio>
#include <string>

#include "audit/entry.h"
#include "runtime/verify/keys.h"
#include "tools/cli/commands.h"
#include "tools/cli/options.h"
#include "tools/cli/plan_cmd.h"
#include "tools/cli/plan_common.h"

namespace replaygate::cli {
namespace {

// The operator and the reason, checked as the ledger's acts check theirs: "" or the message.
std::string check_actor(const PlanOptions& o, const char* why_reason) {
  if (!o.operator_given) return "--operator NAME is required (who acts is recorded in the log)";
  if (const std::string why = operator_error(o.operator_name); !why.empty()) return why;
  if (!o.reason_given) return std::string("--reason TEXT is required (") + why_reason + ")";
  if (const std::string why = operator_name_problem(o.reason); !why.empty()) {
    return "--reason " + why;
  }
  if (o.operator_name.size() > 4096) return "--operator is longer than 4096 bytes";
  if (o.reason.size() > 4096) return "--reason is longer than 4096 bytes";
  if (o.audit == "-") return "--audit - is standard input or output, never an audit log";
  return "";
}

audit::PlanEntry approved_entry(const ledger::PlanApproval& a, const std::string& scope) {
  audit::PlanEntry e;
  e.operator_name = a.approver;
  e.act = "plan_approved";
  e.scope = scope;
  e.fields = {{"digest", a.digest}, {"approver", a.approver},
              {"key_id", a.key_id}, {"signature", a.signature},
              {"reason", a.reason}, {"approved_at", ledger::format_time(a.approved_at)}};
  return e;
}

audit::PlanEntry cancelled_entry(const ledger::PlanRecord& r, const std::string& scope) {
  audit::PlanEntry e;
  e.operator_name = r.cancelled_by;
  e.act = "plan_cancelled";
  e.scope = scope;
  e.fields = {{"digest", r.digest},
              {"cancelled_by", r.cancelled_by},
              {"cancel_reason", r.cancel_reason},
              {"cancelled_at", ledger::format_time(r.cancelled_at.value_or(ledger::Time{}))}};
  return e;
}

// An approval by this operator the ledger already holds (an earlier run): when its audit entry
// is missing (that run died between the two), writes it and sets *code 0; when it is there,
// refuses as the ledger would (*code 1). False when the operator has not approved the plan.
bool recover_approval(ledger::Ledger& l, const plan::PlanRead& read, const PlanOptions& o,
                      int* code) {
  ledger::Result<std::vector<ledger::PlanApproval>> approvals = l.plan_approvals(read.digest);
  if (!approvals) {
    *code = plan_usage(approvals.error().message + "; nothing approved");
    return true;
  }
  for (const ledger::PlanApproval& a : approvals.value()) {
    if (a.approver != o.operator_name) continue;
    std::string error;
    if (plan_entry_logged(o.audit, "plan_approved", read.digest, a.approver, &error)) {
      *code = plan_say(kExitFindings, "refused: plan " + read.digest + " already approved by " +
                                          a.approver + " at " + ledger::format_time(a.approved_at));
      return true;
    }
    if (!error.empty()) {
      *code = plan_usage(error);
      return true;
    }
    if (const std::string why =
            append_entries(o.audit, {audit::to_json(approved_entry(a, l.scope()))});
        !why.empty()) {
      *code = plan_usage(why);
      return true;
    }
    *code = plan_say(kExitOk, "the approval by " + a.approver +
                                  " was recorded in the ledger by an "
                                  "earlier run that stopped before its audit entry; the entry is "
                                  "now written to " +
                                  o.audit);
    return true;
  }
  return false;
}

// A cancel the ledger already holds whose audit entry is missing (an earlier run died between the
// two): writes the entry and sets *code 0. False otherwise (the ledger's refusal stands).
bool recover_cancel(ledger::Ledger& l, const plan::PlanRead& read, const PlanOptions& o,
                    int* code) {
  ledger::Result<std::optional<ledger::PlanRecord>> known = l.plan(read.digest);
  if (!known || !known.value() || !known.value()->cancelled_at) return false;
  std::string error;
  if (plan_entry_logged(o.audit, "plan_cancelled", read.digest, "", &error)) return false;
  if (!error.empty()) {
    *code = plan_usage(error);
    return true;
  }
  const ledger::PlanRecord& r = *known.value();
  if (const std::string why =
          append_entries(o.audit, {audit::to_json(cancelled_entry(r, l.scope()))});
      !why.empty()) {
    *code = plan_usage(why);
    return true;
  }
  *code = plan_say(kExitOk, "the plan was cancelled by " + r.cancelled_by +
                                " in the ledger by an earlier run that stopped before its audit "
                                "entry; the entry is now written to " +
                                o.audit);
  return true;
}

}  // namespace

int run_plan_approve(const PlanOptions& o) {
  if (const std::string why = check_actor(o, "why the plan is approved is recorded in the log");
      !why.empty()) {
    return plan_usage(why);
  }
  plan::Users users;
  if (const std::string why = plan::read_users_file(o.users, &users); !why.empty()) {
    return plan_usage(why);
  }
  verify::SecretKey key;
  std::string error;
  if (!verify::read_secret_key(o.sign_key, &key, &error)) return plan_usage(error);
  const plan::PlanRead read = plan::read_plan_file(o.plan_path, {});
  if (!read.ok) return plan_usage(read.error);
  if (!read.digest_matches()) {
    return plan_say(kExitFindings,
                    "refused: " + o.plan_path + " says its digest is " + read.digest +
                        " but its content hashes to " + read.computed_digest +
                        ": the plan was edited after it was built; nothing approved");
  }
  if (const std::string why =
          plan::approve_refusal(read.header, o.operator_name, key, users, o.users);
      !why.empty()) {
    return plan_say(kExitFindings, "refused: " + why + "; nothing approved");
  }
  if (read.header.expires_at <= plan::now_text()) {
    return plan_say(kExitFindings, "refused: the plan expired at " + read.header.expires_at +
                                       "; nothing approved");
  }
  // An existing ledger only: a mistyped --ledger must not record the approval in a new file the
  // gate never reads.
  std::unique_ptr<ledger::Ledger> l = open_plan_ledger(o.ledger, o.scope, false);
  if (l == nullptr) return kExitUsage;
  if (const std::string why = ensure_recorded(*l, read, o.operator_name, o.audit); !why.empty()) {
    return plan_usage(why + "; nothing approved");
  }
  if (int code = kExitOk; recover_approval(*l, read, o, &code)) return code;
  const std::string at = plan::now_text();
  const plan::Approval a = plan::sign_approval(key, read.digest, o.operator_name, o.reason, at);
  ledger::PlanApproval pa;
  pa.digest = a.digest;
  pa.approver = a.approver;
  pa.key_id = a.key_id;
  pa.signature = a.signature;
  pa.reason = a.reason;
  pa.approved_at = *ledger::parse_time(at);
  ledger::Result<ledger::PlanApproval> recorded = l->approve_plan(pa);
  if (!recorded) return plan_say(kExitFindings, "refused: " + recorded.error().message);
  test_point("plan_approval_recorded");
  if (const std::string why =
          append_entries(o.audit, {audit::to_json(approved_entry(recorded.value(), l->scope()))});
      !why.empty()) {
    return plan_usage(why +
                      "; the approval IS recorded in the ledger, but its 'plan_approved' "
                      "entry is missing: 'ledger check' reports it, and a rerun of this "
                      "approve writes it");
  }
  std::printf("%s\n", a.digest.c_str());
  return plan_say(kExitOk, "approved " + o.plan_path + " (" + a.digest + ") as " + o.operator_name +
                               " with key " + a.key_id + " (recorded in " + o.audit + ")");
}

int run_plan_cancel(const PlanOptions& o) {
  if (const std::string why = check_actor(o, "why the plan is cancelled is recorded in the log");
      !why.empty()) {
    return plan_usage(why);
  }
  const plan::PlanRead read = plan::read_plan_file(o.plan_path, {});
  if (!read.ok) return plan_usage(read.error);
  if (o.amqp_set) {
    if (const std::string why = check_plan_amqp(o, read); !why.empty()) return plan_usage(why);
  }
  std::unique_ptr<ledger::Ledger> l = open_plan_ledger(o.ledger, o.scope, false);
  if (l == nullptr) return kExitUsage;
  // A plan built without --ledger (its letters may already be frozen in a queue) is recorded
  // first, as an approval would record it, so that it can be cancelled and its letters moved
  // back. Not an edited file: the ledger would record content its digest does not name.
  if (read.digest_matches()) {
    ledger::Result<std::optional<ledger::PlanRecord>> known = l->plan(read.digest);
    if (known && !known.value()) {
      if (const std::string why = ensure_recorded(*l, read, o.operator_name, o.audit);
          !why.empty()) {
        return plan_usage(why + "; nothing cancelled");
      }
    }
  }
  // The digest the ledger knows the plan by: an edited file still names its plan.
  ledger::Result<ledger::PlanRecord> cancelled =
      l->cancel_plan(read.digest, o.operator_name, o.reason);
  if (!cancelled) {
    // Cancelled already: by a run that died before its audit entry (written now from the
    // ledger's row), or one that stopped while moving letters back (the moves go on).
    int code = kExitOk;
    const bool recovered = recover_cancel(*l, read, o, &code);
    if (recovered && code != kExitOk) return code;
    if (o.amqp_set && cancelled.error().code == ledger::ErrorCode::kBadTransition) {
      plan_say(kExitOk,
               "note: " + cancelled.error().message + "; moving what is left in its queue back");
      return return_plan_letters_amqp(o, read);
    }
    if (recovered) return code;
    return plan_say(kExitFindings, "refused: " + cancelled.error().message);
  }
  const ledger::PlanRecord& r = cancelled.value();
  test_point("plan_cancel_recorded");
  if (const std::string why =
          append_entries(o.audit, {audit::to_json(cancelled_entry(r, l->scope()))});
      !why.empty()) {
    return plan_usage(why +
                      "; the plan IS cancelled in the ledger, but its 'plan_cancelled' "
                      "entry is missing: 'ledger check' reports it, and a rerun of this "
                      "cancel writes it");
  }
  plan_say(kExitOk, "cancelled " + o.plan_path + " (" + r.digest +
                        "): a run stops before its next block (recorded in " + o.audit + ")");
  if (o.amqp_set) return return_plan_letters_amqp(o, read);
  if (read.header.input_format == "rabbitmq") {
    plan_say(kExitOk, "note: its letters stay in its queue (*.plan." + read.header.plan_id +
                          "): give --amqp URL to move them back to the dead-letter queue");
  }
  return kExitOk;
}

}  // namespace replaygate::cli
