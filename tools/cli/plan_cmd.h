// The `replaygate plan` subcommands' options and the acts in plan_acts.cc (docs/plans.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/formats.h"
#include "redrive/plan/plan.h"
#include "runtime/table.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {

struct PlanOptions {
  // build
  std::string input, policy, table, out, author, source;
  inputs::InputFormatOptions format;
  TrustFlags trust;
  std::string topic, error_class, since, rule, cap, rate, approvals;
  std::vector<std::string> message_ids;
  std::string expires_in = "24h";
  bool author_set = false, topic_set = false, error_class_set = false, since_set = false,
       rule_set = false, cap_set = false, rate_set = false, approvals_set = false;
  // build --amqp (plan_build_amqp.cc); cancel --amqp
  std::string amqp, queue;
  bool amqp_set = false, allow_peek = false;
  uint64_t block = 1000;
  // the others
  std::string plan_path, output = "text", users, sign_key;
  std::string ledger, scope = "default", audit;
  std::string operator_name, reason;
  bool operator_given = false, reason_given = false;
};

// What `plan build` checked of the plan's limits (plan_cmd.cc).
struct BuildLimits {
  int64_t approvals = 1;
  std::chrono::microseconds ttl{};
  uint64_t cap = 0;
  double rate = 0;
  size_t block = 1000;  // --amqp: moves per block (one confirm wait, one audit entry)
};

// Whether a decided letter passes the build's filters --topic, --error-class, --rule and
// --message-id (plan_cmd.cc).
bool plan_build_passes(const PlanOptions& o, const Table& table, const Input& input,
                       const Decision& d, const std::optional<std::string_view>& message_id);

// `plan build --amqp URL --queue DLQ ...` (plan_build_amqp.cc): the options already checked
// as for a dump's build.
// After a build wrote o.out: with --ledger, records the plan there and its plan_recorded entry in
// --audit. kExitOk, or the exit code with the message printed.
int record_built_plan(const PlanOptions& o);

int run_plan_build_amqp(const PlanOptions& o, const BuildLimits& limits);
// `plan cancel PLAN --amqp URL`, after the ledger's cancel: moves what is left in the plan's queue
// back to its dead-letter queue and deletes the plan queue when empty (plan_build_amqp.cc).
int return_plan_letters_amqp(const PlanOptions& o, const plan::PlanRead& read);
// Before that cancel: "" when --amqp fits the plan (a RabbitMQ plan on that broker's vhost), else
// the usage message.
std::string check_plan_amqp(const PlanOptions& o, const plan::PlanRead& read);

// `plan approve PLAN --operator NAME --sign-key KEY --reason TEXT --users FILE --ledger L --audit
// LOG` (plan_acts.cc).
int run_plan_approve(const PlanOptions& o);
// `plan cancel PLAN --operator NAME --reason TEXT --ledger L --audit LOG` (plan_acts.cc).
int run_plan_cancel(const PlanOptions& o);

}  // namespace replaygate::cli
