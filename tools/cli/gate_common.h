// What every `replaygate gate <broker>` subcommand shares, so that a broker's subcommand file is
// its broker's options and port and nothing else: the options that are not about a broker
// (GateFlags), their checks and messages, the table and its action map, the run's options, and
// the run itself with its output (one JSON line per letter on stdout; progress, notes, metrics
// and the summary on stderr; SIGINT/SIGTERM stop, SIGHUP and --watch reload under the rule of
// redrive/reload.h). Messages start with "replaygate <who>: " (who: "gate rabbitmq").
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "redrive/plan/plan.h"
#include "redrive/port.h"
#include "redrive/redrive.h"
#include "redrive/run.h"
#include "redrive/test_points.h"
#include "runtime/table.h"
#include "tools/cli/audit_signing.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {

struct GateFlags {
  std::string policy, table, mapping, queue, ledger, ledger_scope = "default", audit, operator_name,
                                                     message_id, topic, error_class, since, metrics,
                                                     policy_id, plan, users;
  std::vector<std::string> actions;
  bool apply = false, dry_run = false, all = false, follow = false, watch = false, quiet = false;
  uint64_t max = 0, max_unacked = 1000, max_target_depth = 0, block_max = 64;
  int block_linger_ms = 5;
  double max_rate = 10;
  int idle_exit_ms = 2000, reconnect_for_s = 300;
  AuditSignFlags audit_sign;
  TrustFlags trust;
  // Which options were given.
  const CLI::Option *max_option = nullptr, *depth_option = nullptr, *message_option = nullptr,
                    *topic_option = nullptr, *class_option = nullptr, *policy_id_option = nullptr,
                    *block_option = nullptr, *rate_option = nullptr;
};

// One broker's subcommand of `gate` (setup_gate, gate_cmd.cc): its sub-app and its runner.
struct GateSubcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// The Redis gates' subcommands (tools/cli/gate_redis.cc), for setup_gate (gate_cmd.cc).
GateSubcommand add_gate_sidekiq(CLI::App& sub);

// Prints "replaygate WHO: MESSAGE" on stderr; returns kExitUsage.
int gate_usage(const std::string& who, const std::string& message);

// The checks that need no table and no broker, in the order their messages are given; reads the
// audit signing key. kExitOk or the exit code (the message printed).
int check_gate_flags(const std::string& who, GateFlags& o, AuditSigning* signing);

// Parses --since, opens the table (bound to one policy: --policy-id or its own), makes the action
// map from --action, and checks the filters' inputs exist. kExitOk or the exit code.
int open_gate_policy(const std::string& who, GateFlags& o, int64_t* since,
                     std::unique_ptr<Table>* loaded, redrive::ActionMap* actions);

// The run's options from the flags (max_rate 0: none; the test points are set by run_gate()).
redrive::RunOptions gate_run_options(const GateFlags& o, int64_t since);

struct GateRun {
  std::string who;     // "gate rabbitmq"
  std::string source;  // the audit entries' source: the broker without secrets, and the queue
  const audit::CheckpointSigner* signer = nullptr;  // --audit-sign-key (not owned)
  std::unique_ptr<Table> table;
  redrive::ActionMap actions;
  redrive::ParserFactory make_parser;
  redrive::RunOptions options;
  // Printed before a dry run (after "replaygate WHO: "): where its letters go back, what it costs.
  std::string dry_run_note;
  // Makes the port, given the note hook (blocked brokers, reconnects) and the test points.
  std::function<std::unique_ptr<redrive::Port>(std::function<void(const std::string&)>,
                                               const redrive::TestPoints*)>
      make_port;
  // Runs `body` where the port wants to run (a thread with a large stack): false when it cannot.
  std::function<bool(const std::function<void()>&)> on_thread;
  // --plan: the source this gate drains as a plan names it (plan::rabbitmq_source) and what that
  // is in the gate's words, for the refusal; `on_plan` points the port at the plan's queue (and
  // its rate, without --max-rate) once the plan is checked, and returns that queue's name.
  std::string plan_source, plan_source_what;
  std::function<std::string(const plan::PlanRead&)> on_plan;
};

// What a gate subcommand opens before its port: the table and its action map
// (open_gate_policy), the record parser of `format_name` with --mapping into *reading (which must
// outlive the run: run->make_parser reads it), and the mapping's `map:` of the input `topic`
// (what a replay may go to) into *topic_map. kExitOk or the exit code (the message printed).
int open_gate_input(const std::string& who, GateFlags& o, const std::string& format_name,
                    GateRun* run, int64_t* since, RecordReading* reading,
                    std::map<std::string, std::string, std::less<>>* topic_map);

// Opens the Redrive (ledger, audit log), installs the signal handlers and the reload, runs the
// loop on a port and prints the summary. Returns the exit code (see redrive/run.h; 2 when the
// ledger or audit log cannot be opened: nothing was consumed).
int run_gate(GateFlags& o, GateRun run, const redrive::TestPoints& test_points);

}  // namespace replaygate::cli
