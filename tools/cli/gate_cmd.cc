// `replaygate gate rabbitmq`: the live gate on a RabbitMQ dead-letter queue (docs/gate.md).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "redrive/plan/plan.h"
#include "redrive/rabbitmq/management.h"
#include "redrive/rabbitmq/rabbit_port.h"
#include "redrive/run.h"
#include "redrive/test_points.h"
#include "tools/cli/audit_signing.h"
#include "tools/cli/commands.h"
#include "tools/cli/gate_common.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

namespace rmq = redrive::rabbitmq;

const std::string kWho = "gate rabbitmq";

// The flags every gate has (gate_common.h), and RabbitMQ's own.
struct GateCliOptions : GateFlags {
  std::vector<std::string> amqp;
  std::string park_queue, hold_queue, replay_exchange, replay_routing_key, management;
  bool allow_peek = false;
  uint64_t max_body = 1u << 20;
  int prefetch = 128, confirm_timeout_ms = 10000, frame_max = 131072, heartbeat = 30;
  const CLI::Option *exchange_option = nullptr, *routing_option = nullptr;
};

int usage(const std::string& message) { return gate_usage(kWho, message); }

// The brokers from --amqp (repeatable) or $REPLAYGATE_AMQP_URL (comma-separated), in the order
// they are tried, and the management API's URL. kExitOk or 2.
int read_broker(GateCliOptions& o, std::vector<rmq::AmqpUrl>* urls) {
  if (o.amqp.empty()) {
    if (const char* env = std::getenv("REPLAYGATE_AMQP_URL"); env != nullptr && *env != '\0') {
      std::string_view rest = env;
      for (size_t comma = rest.find(','); !rest.empty(); comma = rest.find(',')) {
        o.amqp.emplace_back(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      }
    }
  }
  if (o.amqp.empty()) return usage("give the broker with --amqp URL or $REPLAYGATE_AMQP_URL");
  if (o.management.empty()) {
    if (const char* env = std::getenv("REPLAYGATE_MANAGEMENT_URL"); env != nullptr) {
      // Set but empty (`export REPLAYGATE_MANAGEMENT_URL=$UNSET`) is a mistake, not "no API":
      // without it a dry run on a quorum queue is not refused.
      if (*env == '\0') {
        return usage(
            "$REPLAYGATE_MANAGEMENT_URL is set but empty: give the management API's URL, or "
            "unset it");
      }
      o.management = env;
    }
  }
  for (const std::string& text : o.amqp) {
    if (text.empty()) return usage("--amqp is empty: give a broker URL amqp://HOST:PORT/VHOST");
    std::string problem;
    const std::optional<rmq::AmqpUrl> parsed = rmq::parse_amqp_url(text, &problem);
    if (!parsed) return usage("--amqp: " + problem);
    urls->push_back(*parsed);
  }
  return kExitOk;
}

// The port's options from the command line and the run's. kExitOk or the usage code.
int port_options(const GateCliOptions& o, const std::vector<rmq::AmqpUrl>& urls,
                 const redrive::RunOptions& run, rmq::PortOptions* port) {
  rmq::PortOptions& g = *port;
  g.urls = urls;
  g.settings.frame_max = o.frame_max;
  g.settings.heartbeat = o.heartbeat;
  g.queue = o.queue;
  g.park_queue = o.park_queue.empty() ? o.queue + ".parked" : o.park_queue;
  g.hold_queue = o.hold_queue.empty() ? o.queue + ".hold" : o.hold_queue;
  if (o.exchange_option->count() > 0) g.replay_exchange = o.replay_exchange;
  if (o.routing_option->count() > 0) g.replay_routing_key = o.replay_routing_key;
  g.apply = o.apply;
  g.allow_peek = o.allow_peek;
  g.max_rate = o.max_rate;
  g.max_unacked = o.max_unacked;
  // Skipped and dry-run letters stay unacked: the prefetch must leave room for them.
  // A plan run keeps the letters that are not the plan's.
  g.keeps =
      !o.apply || run.message_id || run.topic || run.error_class || run.since || !o.plan.empty();
  g.prefetch = static_cast<uint16_t>(o.prefetch);
  if (o.block_option->count() > 0 && o.block_max > static_cast<uint64_t>(o.prefetch)) {
    return usage("--block-max " + std::to_string(o.block_max) + " is more than --prefetch " +
                 std::to_string(o.prefetch) + ": a block is letters in flight at once");
  }
  g.confirm_timeout_ms = o.confirm_timeout_ms;
  g.limits.max_body = o.max_body;
  if (g.replay_routing_key && !g.replay_exchange && *g.replay_routing_key == g.queue) {
    return usage("--replay-routing-key " + g.queue +
                 " is the dead-letter queue itself: replays would come straight back");
  }
  for (const std::string* q : {&g.park_queue, &g.hold_queue}) {
    if (*q == g.queue) return usage("the park and hold queues must not be the dead-letter queue");
    if (g.replay_routing_key && *q == *g.replay_routing_key) {
      return usage("the park and hold queues must not be where replays go (--replay-routing-key)");
    }
  }
  if (!o.management.empty()) {
    if (const std::string why = rmq::check_queues(o.management, &g); !why.empty()) {
      return usage(why);
    }
  }
  return kExitOk;
}

int run_gate_rabbitmq(GateCliOptions& o) {
  AuditSigning signing;
  if (const int code = check_gate_flags(kWho, o, &signing); code != kExitOk) return code;
  std::vector<rmq::AmqpUrl> urls;
  if (const int code = read_broker(o, &urls); code != kExitOk) return code;
  GateRun run;
  run.who = kWho;
  int64_t since = 0;
  RecordReading reading;
  rmq::PortOptions port;
  if (const int code =
          open_gate_input(kWho, o, "rabbitmq", &run, &since, &reading, &port.topic_map);
      code != kExitOk) {
    return code;
  }
  run.options = gate_run_options(o, since);
  if (o.block_option->count() == 0) {
    run.options.block_max = std::min<size_t>(run.options.block_max, o.prefetch);
  }
  redrive::TestPoints test_points;
  if (const std::string why = test_points.from_environment(); !why.empty()) return usage(why);
  if (const int code = port_options(o, urls, run.options, &port); code != kExitOk) return code;
  // The first broker names the source, whichever node a reconnect reaches.
  run.source = urls.front().describe() + " queue " + o.queue;
  run.signer = signing.get();
  run.dry_run_note =
      "dry run: nothing is claimed, published or acked; the letters seen return to " + o.queue +
      " when the run ends (the broker marks them redelivered, and a quorum queue counts a "
      "delivery attempt). Give --apply to act.";
  if (!o.plan.empty()) {
    // The plan queue is drained; parks and holds stay the dead-letter queue's (port_options).
    run.plan_source = plan::rabbitmq_source(urls.front().vhost, o.queue);
    run.plan_source_what = "--queue " + o.queue + " on vhost " + urls.front().vhost;
    run.on_plan = [&port, &o](const plan::PlanRead& p) {
      port.queue = plan::plan_queue_name(o.queue, p.header.plan_id);
      port.exclusive = true;
      if (o.rate_option->count() == 0) port.max_rate = p.header.rate;
      return port.queue;
    };
  }
  run.make_port = [&port](std::function<void(const std::string&)> note,
                          const redrive::TestPoints* points) {
    return std::make_unique<rmq::RabbitPort>(std::move(port), std::move(note), points);
  };
  // librabbitmq decodes nested header tables recursively: a large stack bounds that (see
  // redrive/rabbitmq/amqp_client.h).
  run.on_thread = [](const std::function<void()>& body) {
    return rmq::run_with_stack(size_t{64} << 20, body);
  };
  return run_gate(o, std::move(run), test_points);
}

}  // namespace

namespace {

// `gate rabbitmq`: its options into a sub-app of `gate`.
GateSubcommand add_gate_rabbitmq(CLI::App& sub) {
  auto o = std::make_shared<GateCliOptions>();
  CLI::App* r = sub.add_subcommand(
      "rabbitmq", "Consume a RabbitMQ dead-letter queue, decide each letter, act with confirms");
  r->footer(
      "Per letter: decide (the rabbitmq reader and --mapping, as for a management-API dump),\n"
      "claim a replay in the ledger (write-ahead), record the decision in the audit log, publish\n"
      "(mandatory, persistent) and wait for the publisher confirm, mark the claim confirmed and\n"
      "record the outcome, then ack the letter. A create verb (replay_once) republishes to the\n"
      "queue the letter died in (x-death) through the default exchange with x-replay + 1; the\n"
      "policy's default verb moves it to the hold queue; other none-effect verbs (never) to the\n"
      "park queue. A dry run (the default) acks nothing. One JSON line per letter on stdout;\n"
      "progress and a summary on stderr. Exit: 0 done, 1 done with unreadable letters (held)\n"
      "or letters left in the queue (their park or hold queue is where they died), 2 usage,\n"
      "table, broker, ledger or audit errors (the letter in hand is not acked).\n"
      "SIGHUP (or --watch) reloads the table; SIGINT/SIGTERM stop after the current letter.");
  r->add_option("--policy", o->policy, "Compile this policy in memory and use it");
  r->add_option("--table", o->table, "Use this compiled table (.rgt)");
  o->policy_id_option =
      r->add_option("--policy-id", o->policy_id,
                    "The policy this gate runs (default: its first table's); a table or reload of "
                    "another policy is refused, and --trust-state records the binding");
  r->add_option("--mapping", o->mapping,
                "Mapping file of format rabbitmq-management-json (docs/input-mapping.md)")
      ->required();
  r->add_option(
       "--amqp", o->amqp,
       "Broker URL amqp://USER:PASS@HOST:PORT/VHOST (vhost \"/\" as %2F or empty); "
       "repeat for the nodes of a cluster (tried in order; a lost node: the next); default "
       "$REPLAYGATE_AMQP_URL (comma-separated), which keeps the password out of the "
       "process list")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  r->add_option("--queue", o->queue, "The dead-letter queue to consume")->required();
  r->add_flag("--apply", o->apply,
              "Act: claim, publish, ack (needs --ledger and --audit); without it, a dry run");
  r->add_flag("--dry-run", o->dry_run, "Decide and print, change nothing (the default)");
  r->add_flag("--allow-peek", o->allow_peek,
              "Allow a dry run on a quorum queue, where every peek uses up a delivery attempt");
  r->add_option("--management", o->management,
                "Management API http://[USER:PASS@]HOST:15672: read the queue's type and delivery "
                "limit first (a dry run on a quorum queue is refused without --allow-peek); "
                "default $REPLAYGATE_MANAGEMENT_URL");
  o->message_option = r->add_option("--message-id", o->message_id,
                                    "Handle only this reviewed message; other letters stay");
  r->add_flag("--all", o->all, "Handle every letter (bounded by --max and --max-rate)");
  o->max_option = r->add_option("--max", o->max, "Handle at most N letters");
  o->rate_option = r->add_option(
      "--max-rate", o->max_rate,
      "Letters per second at most (default 10, or a plan's rate with --plan; 0: no limit)");
  o->block_option =
      r->add_option("--block-max", o->block_max,
                    "Letters decided, claimed, recorded and moved together at most (default 64, "
                    "at most --prefetch; a crash or a lost connection leaves at most this many "
                    "letters' outcome unknown)")
          ->check(CLI::Range(uint64_t{1}, uint64_t{1000}));
  r->add_option("--block-linger", o->block_linger_ms,
                "Milliseconds a block waits after its first letter for more (default 5)")
      ->check(CLI::Range(0, 10000));
  o->topic_option =
      r->add_option("--topic", o->topic, "Only letters whose input 'topic' is this value");
  o->class_option = r->add_option("--error-class", o->error_class,
                                  "Only letters whose input 'error_class' is this value");
  r->add_option("--since", o->since, "Only letters with an AMQP timestamp at or after this time");
  r->add_option("--max-unacked", o->max_unacked,
                "Skipped (and dry-run) letters kept unacked at most, then stop (default 1000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{60000}));
  o->depth_option =
      r->add_option("--max-target-depth", o->max_target_depth,
                    "Stop once the queue a replay went to holds more than N messages");
  r->add_option("--park-queue", o->park_queue, "Where parked letters go (default QUEUE.parked)");
  r->add_option("--hold-queue", o->hold_queue, "Where held letters go (default QUEUE.hold)");
  o->exchange_option =
      r->add_option("--replay-exchange", o->replay_exchange,
                    "Replay through this exchange instead of the default exchange (it must exist)");
  o->routing_option =
      r->add_option("--replay-routing-key", o->replay_routing_key,
                    "Replay with this routing key instead of the x-death queue's name");
  r->add_option("--action", o->actions,
                "VERB=republish|park|hold (repeatable): what a verb does; read and copy verbs "
                "need one, and only create verbs may republish")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  r->add_option("--plan", o->plan,
                "Run this approved plan (docs/plans.md): drain only its plan queue QUEUE.plan.ID "
                "(filled by 'plan build --amqp'), act on the plan's letters as planned; needs "
                "--apply and --users");
  r->add_option("--users", o->users, "With --plan: the users file (approvers and their keys)");
  r->add_option("--ledger", o->ledger, "Replay ledger: a SQLite PATH or a postgresql:// URL");
  r->add_option("--ledger-scope", o->ledger_scope, "Ledger scope (default 'default')");
  r->add_option("--audit", o->audit, "Audit log every decision and action is appended to");
  r->add_option("--operator", o->operator_name, "Who runs the gate (recorded in the audit log)");
  r->add_option("--metrics", o->metrics,
                "Prometheus text-format metrics file, rewritten atomically every second");
  r->add_flag("--watch", o->watch, "Reload --table when the file changes (as SIGHUP does)");
  r->add_flag("--follow", o->follow, "Keep consuming when the queue is empty (a service)");
  r->add_flag("--quiet", o->quiet, "No progress lines (the summary is still printed)");
  r->add_option("--prefetch", o->prefetch, "Deliveries in flight (default 128)")
      ->check(CLI::Range(1, 1000));
  r->add_option("--confirm-timeout", o->confirm_timeout_ms,
                "Milliseconds to wait for a publisher confirm (default 10000)")
      ->check(CLI::Range(10, 600000));
  r->add_option("--idle-exit", o->idle_exit_ms,
                "Stop after this many milliseconds without a letter (default 2000)")
      ->check(CLI::Range(1, 86400000));
  r->add_option("--reconnect-for", o->reconnect_for_s,
                "Seconds to keep reconnecting after the broker is lost (default 300)")
      ->check(CLI::Range(0, 86400));
  r->add_option("--max-body", o->max_body,
                "Letters with a larger body (bytes) are held unread (default 1048576, the most a "
                "record holds)");
  r->add_option("--frame-max", o->frame_max,
                "AMQP frame_max to negotiate (default 131072; bounds header nesting)")
      ->check(CLI::Range(4096, 1048576));
  r->add_option("--heartbeat", o->heartbeat, "AMQP heartbeat seconds (default 30; 0: none)")
      ->check(CLI::Range(0, 3600));
  add_audit_sign_options(*r, &o->audit_sign);
  add_trust_options(*r, &o->trust, /*acting=*/true);
  r->callback([] {});
  return {r, [o] { return run_gate_rabbitmq(*o); }};
}

}  // namespace

Runner setup_gate(CLI::App& sub) {
  sub.require_subcommand(1);
  sub.footer("Live gates on a broker's dead-letter queue (docs/gate.md).");
  // One entry per broker: a broker's subcommand file adds its own here.
  const std::vector<GateSubcommand> gates = {add_gate_rabbitmq(sub), add_gate_sidekiq(sub)};
  return [gates] {
    for (const GateSubcommand& gate : gates) {
      if (gate.app->parsed()) return gate.run();
    }
    return kExitUsage;  // require_subcommand(1): not reached
  };
}

}  // namespace replaygate::cli
