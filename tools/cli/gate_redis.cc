// `replaygate gate sidekiq`: the live gate on Sidekiq's Dead set in Redis (docs/gate.md, "Redis
// job queues"). Its options and its port; everything else is gate_common.h's.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "redrive/redis/sidekiq_port.h"
#include "redrive/run.h"
#include "redrive/test_points.h"
#include "tools/cli/audit_signing.h"
#include "tools/cli/commands.h"
#include "tools/cli/gate_common.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

namespace rds = redrive::redis;

const std::string kWho = "gate sidekiq";

// The flags every gate has (gate_common.h), and Redis's own.
struct RedisCliOptions : GateFlags {
  std::string redis, gate_id = "default", dead_set = "dead";
  bool allow_volatile = false;
  uint64_t max_body = 1u << 20, dead_max_jobs = 10000;
  int timeout_ms = 5000, lease_ms = 60000;
};

int usage(const std::string& message) { return gate_usage(kWho, message); }

// The server from --redis or $REPLAYGATE_REDIS_URL. kExitOk or 2.
int read_server(RedisCliOptions& o, rds::RedisUrl* url) {
  if (o.redis.empty()) {
    if (const char* env = std::getenv("REPLAYGATE_REDIS_URL"); env != nullptr) o.redis = env;
  }
  if (o.redis.empty()) return usage("give the server with --redis URL or $REPLAYGATE_REDIS_URL");
  std::string problem;
  const std::optional<rds::RedisUrl> parsed = rds::parse_redis_url(o.redis, &problem);
  if (!parsed) return usage("--redis: " + problem);
  *url = *parsed;
  return kExitOk;
}

int run_gate_sidekiq(RedisCliOptions& o) {
  o.queue = o.dead_set;  // the metrics' queue label and the messages' "queue"
  AuditSigning signing;
  if (const int code = check_gate_flags(kWho, o, &signing); code != kExitOk) return code;
  rds::RedisUrl url;
  if (const int code = read_server(o, &url); code != kExitOk) return code;
  GateRun run;
  run.who = kWho;
  int64_t since = 0;
  RecordReading reading;
  rds::SidekiqOptions port;
  if (const int code = open_gate_input(kWho, o, "sidekiq", &run, &since, &reading, &port.topic_map);
      code != kExitOk) {
    return code;
  }
  run.options = gate_run_options(o, since);
  redrive::TestPoints test_points;
  if (const std::string why = test_points.from_environment(); !why.empty()) return usage(why);
  port.url = url;
  port.scope = o.ledger_scope;
  port.gate_id = o.gate_id;
  port.dead_key = o.dead_set;
  port.apply = o.apply;
  port.allow_volatile = o.allow_volatile;
  port.max_body = o.max_body;
  port.timeout_ms = o.timeout_ms;
  port.lease_ms = o.lease_ms;
  port.dead_max_jobs = o.dead_max_jobs;
  run.source = url.describe() + " sorted set " + o.dead_set;
  run.signer = signing.get();
  run.dry_run_note = "dry run: nothing is claimed or moved; the jobs are read from " + o.dead_set +
                     " by score and stay there. Give --apply to act.";
  run.make_port = [&port](std::function<void(const std::string&)> note,
                          const redrive::TestPoints* points) {
    return std::make_unique<rds::SidekiqPort>(std::move(port), std::move(note), points);
  };
  run.on_thread = [](const std::function<void()>& body) {
    body();
    return true;
  };
  return run_gate(o, std::move(run), test_points);
}

// The options of a Redis gate: every gate option that is not about AMQP (the same names,
// meanings and defaults as `gate rabbitmq`), and the server's.
void add_redis_gate_options(CLI::App& r, RedisCliOptions& o) {
  r.add_option("--policy", o.policy, "Compile this policy in memory and use it");
  r.add_option("--table", o.table, "Use this compiled table (.rgt)");
  o.policy_id_option =
      r.add_option("--policy-id", o.policy_id,
                   "The policy this gate runs (default: its first table's); a table or reload of "
                   "another policy is refused, and --trust-state records the binding");
  r.add_option("--mapping", o.mapping,
               "Mapping file of format sidekiq-json (docs/input-mapping.md)")
      ->required();
  r.add_option("--redis", o.redis,
               "Server URL redis://[[USER]:PASS@]HOST:PORT/DB or unix:///PATH[?db=N]; default "
               "$REPLAYGATE_REDIS_URL, which keeps the password out of the process list");
  r.add_option("--dead-set", o.dead_set, "Sidekiq's Dead set (default 'dead')");
  r.add_option("--gate-id", o.gate_id,
               "This gate's name: its in-flight set and lease (default 'default'); give each gate "
               "on one dead set its own, and a restarted gate the same");
  r.add_flag("--apply", o.apply,
             "Act: claim, move, record (needs --ledger and --audit); without it, a dry run");
  r.add_flag("--dry-run", o.dry_run, "Decide and print, change nothing (the default)");
  r.add_flag("--allow-volatile", o.allow_volatile,
             "Allow --apply on a server without an append-only file (a restart may lose moves)");
  o.message_option = r.add_option("--message-id", o.message_id,
                                  "Handle only this reviewed job (its jid); other jobs stay");
  r.add_flag("--all", o.all, "Handle every job (bounded by --max and --max-rate)");
  o.max_option = r.add_option("--max", o.max, "Handle at most N jobs");
  r.add_option("--max-rate", o.max_rate, "Jobs per second at most (default 10; 0: no limit)");
  o.block_option =
      r.add_option("--block-max", o.block_max,
                   "Jobs decided, claimed, recorded and moved together at most (default 64)")
          ->check(CLI::Range(uint64_t{1}, uint64_t{1000}));
  o.topic_option = r.add_option("--topic", o.topic, "Only jobs whose input 'topic' is this value");
  o.class_option = r.add_option("--error-class", o.error_class,
                                "Only jobs whose input 'error_class' is this value");
  r.add_option("--since", o.since, "Only jobs that died at or after this time (their score)");
  r.add_option("--max-unacked", o.max_unacked,
               "Skipped (and dry-run) jobs passed over at most, then stop (default 1000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{60000}));
  o.depth_option =
      r.add_option("--max-target-depth", o.max_target_depth,
                   "Stop once the Sidekiq queue a replay went to holds more than N jobs");
  r.add_option("--action", o.actions,
               "VERB=republish|park|hold (repeatable): what a verb does; read and copy verbs "
               "need one, and only create verbs may republish")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  r.add_option("--ledger", o.ledger, "Replay ledger: a SQLite PATH or a postgresql:// URL");
  r.add_option("--ledger-scope", o.ledger_scope,
               "Ledger scope (default 'default'); also the Redis keys' prefix replaygate:SCOPE:");
  r.add_option("--audit", o.audit, "Audit log every decision and action is appended to");
  r.add_option("--operator", o.operator_name, "Who runs the gate (recorded in the audit log)");
  r.add_option("--metrics", o.metrics,
               "Prometheus text-format metrics file, rewritten atomically every second");
  r.add_flag("--watch", o.watch, "Reload --table when the file changes (as SIGHUP does)");
  r.add_flag("--follow", o.follow, "Keep polling when the dead set is empty (a service)");
  r.add_flag("--quiet", o.quiet, "No progress lines (the summary is still printed)");
  r.add_option("--idle-exit", o.idle_exit_ms,
               "Stop after this many milliseconds without a job (default 2000)")
      ->check(CLI::Range(1, 86400000));
  r.add_option("--reconnect-for", o.reconnect_for_s,
               "Seconds to keep reconnecting after the server is lost (default 300)")
      ->check(CLI::Range(0, 86400));
  r.add_option("--max-body", o.max_body,
               "Jobs larger than this (bytes) are held unread, never copied into the gate "
               "(default 1048576, the most a record holds)");
  r.add_option("--timeout", o.timeout_ms,
               "Milliseconds to wait for the server's reply (default 5000)")
      ->check(CLI::Range(10, 600000));
  r.add_option("--lease", o.lease_ms,
               "Milliseconds this gate's lease on its id lasts unrenewed (default 60000)")
      ->check(CLI::Range(1000, 86400000));
  r.add_option("--dead-max-jobs", o.dead_max_jobs,
               "Sidekiq's dead_max_jobs: warn when the dead set passes 90% of it (default 10000)");
  add_audit_sign_options(r, &o.audit_sign);
  add_trust_options(r, &o.trust, /*acting=*/true);
}

}  // namespace

GateSubcommand add_gate_sidekiq(CLI::App& sub) {
  auto o = std::make_shared<RedisCliOptions>();
  CLI::App* r = sub.add_subcommand(
      "sidekiq", "Take jobs from Sidekiq's Dead set in Redis, decide each, move it atomically");
  r->footer(
      "Per block of jobs (by score, into this gate's in-flight set): decide (the sidekiq reader\n"
      "and --mapping, as for a ZRANGE dump), claim each replay in the ledger (write-ahead),\n"
      "record the decisions in the audit log, move each job with one Lua script, mark the claims\n"
      "confirmed and record the outcomes. A create verb pushes the job back onto its queue as\n"
      "Sidekiq's client does (LPUSH queue:NAME, SADD queues NAME) with replaygate_replays + 1;\n"
      "the policy's default verb moves it to replaygate:SCOPE:held, other none-effect verbs to\n"
      "replaygate:SCOPE:parked. A dry run (the default) moves nothing. One JSON line per job on\n"
      "stdout; progress and a summary on stderr. Exit: 0 done, 1 done with unreadable jobs\n"
      "(held), 2 usage, table, server, ledger or audit errors (jobs not moved go back to dead).\n"
      "SIGHUP (or --watch) reloads the table; SIGINT/SIGTERM stop after the current block.");
  add_redis_gate_options(*r, *o);
  r->callback([] {});
  return {r, [o] { return run_gate_sidekiq(*o); }};
}

}  // namespace replaygate::cli
