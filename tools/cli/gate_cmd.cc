// `replaygate gate rabbitmq`: the live gate on a RabbitMQ dead-letter queue (docs/gate.md).
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gate/ledger_stage.h"
#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "redrive/rabbitmq/management.h"
#include "redrive/rabbitmq/rabbit_port.h"
#include "redrive/redrive.h"
#include "redrive/reload.h"
#include "redrive/run.h"
#include "redrive/stats.h"
#include "redrive/test_points.h"
#include "runtime/reload.h"
#include "runtime/verify/trust_state.h"
#include "tools/cli/audit_signing.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/options.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

namespace rmq = redrive::rabbitmq;

struct GateCliOptions {
  std::string policy, table, mapping, amqp, queue, ledger,
      ledger_scope = "default", audit, operator_name, message_id, topic, error_class, since,
      park_queue, hold_queue, replay_exchange, replay_routing_key, metrics, management, policy_id;
  std::vector<std::string> actions;
  bool apply = false, dry_run = false, allow_peek = false, all = false, follow = false,
       watch = false, quiet = false;
  uint64_t max = 0, max_unacked = 1000, max_target_depth = 0, max_body = 1u << 20;
  double max_rate = 10;
  int prefetch = 16, confirm_timeout_ms = 10000, idle_exit_ms = 2000, reconnect_for_s = 300,
      frame_max = 131072, heartbeat = 30;
  AuditSignFlags audit_sign;
  TrustFlags trust;
  // Which options were given.
  const CLI::Option *max_option = nullptr, *depth_option = nullptr, *exchange_option = nullptr,
                    *routing_option = nullptr, *message_option = nullptr, *topic_option = nullptr,
                    *class_option = nullptr, *policy_id_option = nullptr;
};

std::atomic<bool> g_stop{false}, g_reload{false};

constexpr double kMinRate = 1.0 / 86400;  // letters per second: one a day

extern "C" void on_stop_signal(int) { g_stop.store(true); }
extern "C" void on_reload_signal(int) { g_reload.store(true); }

int usage(const std::string& message) {
  std::fprintf(stderr, "replaygate gate rabbitmq: %s\n", message.c_str());
  return kExitUsage;
}

std::string letter_line(const redrive::LetterReport& r) {
  nlohmann::json j;
  j["n"] = r.ordinal;
  j["message_id"] = r.message_id ? nlohmann::json(*r.message_id) : nlohmann::json(nullptr);
  j["idempotency_key"] = r.key ? nlohmann::json(*r.key) : nlohmann::json(nullptr);
  j["verb"] = r.verb;
  j["effect"] = r.effect;
  j["rule"] = r.rule;
  j["reason"] = r.reason;
  j["action"] = r.action;
  if (!r.target.empty()) j["target"] = r.target;
  j["outcome"] = r.outcome;
  j["dry_run"] = r.dry_run;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The options that need no table, in the order their messages are given. kExitOk or the code.
int check_options(GateCliOptions& o, AuditSigning* signing) {
  if (o.policy.empty() == o.table.empty()) {
    return usage("give exactly one of --policy POLICY or --table TABLE.rgt");
  }
  if (o.apply && o.dry_run) {
    return usage("--apply and --dry-run contradict each other; a dry run is the default");
  }
  if (o.apply && (o.ledger.empty() || o.audit.empty())) {
    return usage(
        "--apply needs --ledger LEDGER and --audit LOG: a replay is claimed in the ledger before "
        "it is published, and every action is recorded");
  }
  if (!o.audit.empty() && o.operator_name.empty()) {
    return usage("--audit needs --operator NAME (who runs the gate)");
  }
  if (const std::string why = operator_error(o.operator_name);
      !o.operator_name.empty() && !why.empty()) {
    return usage(why);
  }
  if (o.message_option->count() > 0 && o.all) {
    return usage("give --message-id ID (one reviewed message) or --all (bulk), not both");
  }
  if (o.message_option->count() == 0 && !o.all) {
    return usage(
        "give --message-id ID to handle one reviewed message, or --all to handle the queue "
        "(bounded by --max and --max-rate)");
  }
  if (!std::isfinite(o.max_rate) || o.max_rate < 0) {
    return usage("--max-rate must be a number >= 0 (0: no limit)");
  }
  // A rate below one letter a day is a typo or an underflow (1e-300 once meant "no limit").
  if (o.max_rate > 0 && o.max_rate < kMinRate) {
    return usage("--max-rate " + std::to_string(o.max_rate) +
                 " is below one letter a day (1/86400); give 0 for no limit");
  }
  if (o.queue.empty()) return usage("--queue is empty: name the dead-letter queue");
  if (o.max_option->count() > 0 && o.max == 0) return usage("--max 0 handles nothing");
  // A dry run must not create a ledger: a mistyped path would look like an empty ledger, and
  // every letter like one never replayed.
  if (!o.apply && !o.ledger.empty() && o.ledger.rfind("postgres", 0) != 0 &&
      ::access(o.ledger.c_str(), F_OK) != 0) {
    return usage("--ledger " + o.ledger +
                 " does not exist, and a dry run does not create one; check the path (a dry run "
                 "reads the ledger the --apply run will use)");
  }
  if (o.watch && o.table.empty()) return usage("--watch needs --table (it watches that file)");
  if (!read_audit_signing(o.audit_sign, "gate rabbitmq", signing)) return kExitUsage;
  if (o.amqp.empty()) {
    if (const char* env = std::getenv("REPLAYGATE_AMQP_URL"); env != nullptr) o.amqp = env;
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
  return kExitOk;
}

// The table the gate runs (bound to one policy), its action map, and the filters' inputs.
int open_policy(GateCliOptions& o, std::unique_ptr<Table>* loaded, redrive::ActionMap* actions) {
  // The gate runs one policy: --policy-id, or its first table's id. The trust options carry the
  // binding, so a reload of another policy's table is refused before it is activated.
  const bool policy_id_given = o.policy_id_option->count() > 0;
  if (policy_id_given && o.policy_id.empty()) return usage("--policy-id is empty: name the policy");
  if (policy_id_given) o.trust.policy_id = o.policy_id;
  if (const int code = open_table(o.policy, o.table, loaded, nullptr, &o.trust); code != kExitOk) {
    std::fprintf(stderr, "replaygate gate rabbitmq: no table, so the gate does not start\n");
    return code == kExitFindings ? kExitUsage : code;  // 1 is for a run with unreadable letters
  }
  const Table& table = **loaded;
  if (policy_id_given && table.policy_id() != o.policy_id) {
    return usage("the table is policy " + std::string(table.policy_id()) +
                 ", and --policy-id says " + o.policy_id);
  }
  o.trust.policy_id = std::string(table.policy_id());
  if (!o.trust.trust_state.empty()) {
    LoadStatus bound;
    if (!verify::bind_policy(o.trust.trust_state, o.trust.policy_id, &bound)) {
      std::fprintf(stderr, "replaygate gate rabbitmq: %s; the gate does not start\n",
                   bound.message.c_str());
      return kExitUsage;
    }
  }
  *actions = redrive::ActionMap::defaults(table);
  for (const std::string& spec : o.actions) {
    if (const std::string why = actions->set(table, spec); !why.empty()) return usage(why);
  }
  if (const std::string why = actions->missing(table); !why.empty()) return usage(why);
  for (const auto& [option, name] :
       {std::pair{o.topic_option, "topic"}, std::pair{o.class_option, "error_class"}}) {
    if (option->count() > 0 && table.field_index(name) == Table::kNoField) {
      return usage(std::string(option->get_name()) + ": the policy has no input '" + name + "'");
    }
  }
  return kExitOk;
}

// The port's options and the run's, from the command line. kExitOk or the usage code.
int make_options(const GateCliOptions& o, const rmq::AmqpUrl& url, int64_t since,
                 rmq::PortOptions* port, redrive::RunOptions* run) {
  rmq::PortOptions& g = *port;
  g.url = url;
  g.settings.frame_max = o.frame_max;
  g.settings.heartbeat = o.heartbeat;
  g.queue = o.queue;
  g.park_queue = o.park_queue.empty() ? o.queue + ".parked" : o.park_queue;
  g.hold_queue = o.hold_queue.empty() ? o.queue + ".hold" : o.hold_queue;
  if (o.exchange_option->count() > 0) g.replay_exchange = o.replay_exchange;
  if (o.routing_option->count() > 0) g.replay_routing_key = o.replay_routing_key;
  g.apply = run->apply = o.apply;
  g.allow_peek = o.allow_peek;
  if (o.message_option->count() > 0) run->message_id = o.message_id;
  if (o.max_option->count() > 0) run->max = o.max;
  g.max_rate = run->max_rate = o.max_rate;
  if (o.topic_option->count() > 0) run->topic = o.topic;
  if (o.class_option->count() > 0) run->error_class = o.error_class;
  if (!o.since.empty()) run->since = since;
  g.max_unacked = run->max_unacked = o.max_unacked;
  // Skipped and dry-run letters stay unacked: the prefetch must leave room for them.
  g.keeps = !o.apply || run->message_id || run->topic || run->error_class || run->since;
  if (o.depth_option->count() > 0) run->max_target_depth = o.max_target_depth;
  g.prefetch = static_cast<uint16_t>(o.prefetch);
  g.confirm_timeout_ms = o.confirm_timeout_ms;
  run->idle_exit_ms = o.idle_exit_ms;
  run->follow = o.follow;
  run->reconnect_for_s = o.reconnect_for_s;
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
  return kExitOk;
}

// The lines the run prints: one JSON line per letter on stdout; progress, notes and the metrics
// file on stderr and disk.
redrive::RunHooks output_hooks(const GateCliOptions& o, SharedTable::Reader& status_reader) {
  redrive::RunHooks hooks;
  hooks.letter = [](const redrive::LetterReport& r) {
    const std::string line = letter_line(r) + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  };
  hooks.progress = [&o, &status_reader](const redrive::RunStats& s) {
    SharedTable::Guard pinned = status_reader.acquire();
    if (!o.quiet && !s.finished) {
      // A bar when the queue's depth is known: letters handled of those handled plus waiting.
      std::string bar;
      // Not in a dry run: the letters it saw stay unacked, which the depth does not count.
      if (s.queue_depth && o.apply) {
        const double done = static_cast<double>(s.handled) /
                            static_cast<double>(std::max<uint64_t>(1, s.handled + *s.queue_depth));
        const int filled = static_cast<int>(done * 20);
        bar = "[" + std::string(filled, '#') + std::string(20 - filled, '.') + "] " +
              std::to_string(static_cast<int>(done * 100)) + "% ";
      }
      std::fprintf(stderr, "gate: %s%s\n", bar.c_str(),
                   redrive::counts_text(s, pinned.table()).c_str());
    }
    if (!o.metrics.empty()) {
      std::string error;
      if (!write_file_atomically(o.metrics, redrive::metrics_text(s, pinned.table(), o.queue),
                                 &error)) {
        std::fprintf(stderr, "replaygate gate rabbitmq: cannot write --metrics: %s\n",
                     error.c_str());
      }
    }
  };
  hooks.note = [](const std::string& text) {
    std::fprintf(stderr, "replaygate gate rabbitmq: %s\n", text.c_str());
  };
  hooks.stop_requested = [] { return g_stop.load(); };
  return hooks;
}

int run_gate_rabbitmq(GateCliOptions& o) {
  AuditSigning signing;
  if (const int code = check_options(o, &signing); code != kExitOk) return code;
  std::string problem;
  const std::optional<rmq::AmqpUrl> url = rmq::parse_amqp_url(o.amqp, &problem);
  if (!url) return usage("--amqp: " + problem);
  int64_t since = 0;
  if (!o.since.empty() && !parse_utc_time(o.since, &since)) {
    return usage("--since '" + o.since + "' is not an RFC 3339 UTC time (2026-12-01T00:00:00Z)");
  }
  std::unique_ptr<Table> loaded;
  redrive::ActionMap actions;
  if (const int code = open_policy(o, &loaded, &actions); code != kExitOk) return code;

  std::string format_error;
  inputs::InputFormatOptions format_options;
  format_options.input_format = "rabbitmq";
  format_options.input_format_set = true;
  format_options.mapping = o.mapping;
  const InputFormat* format = inputs::choose_input_format(format_options, &format_error);
  if (format == nullptr) return usage(format_error);
  RecordReading reading;
  if (const int code =
          open_record_parser(*format, o.mapping, *loaded, "the gate does not start", &reading);
      code != kExitOk) {
    return code;
  }
  const inputs::Mapping* mapping = reading.mapping ? &reading.mapping->mapping : nullptr;
  rmq::PortOptions port_options;
  if (mapping != nullptr) {  // what a replay may go to
    for (const inputs::FieldMapping& field : mapping->fields) {
      if (field.input == "topic" && field.has_map) port_options.topic_map = field.map;
    }
  }
  const redrive::ParserFactory make_parser = [format, mapping](const Table& table) {
    return format->make_parser(table, mapping);
  };
  redrive::RunOptions run_options;
  redrive::TestPoints test_points;
  if (const std::string why = test_points.from_environment(); !why.empty()) return usage(why);
  run_options.test_points = &test_points;
  if (const int code = make_options(o, *url, since, &port_options, &run_options); code != kExitOk) {
    return code;
  }
  if (!o.management.empty()) {
    if (const std::string why = rmq::check_queues(o.management, &port_options); !why.empty()) {
      return usage(why);
    }
  }

  redrive::Redrive::Options ro;
  ro.actions = actions;
  ro.dry_run = !o.apply;
  ro.ledger_url = o.ledger;
  ro.ledger_scope = o.ledger_scope;
  ro.worker = gate::default_worker() + " gate rabbitmq " + o.queue;
  ro.audit_path = o.apply ? o.audit : "";
  ro.operator_name = o.operator_name;
  ro.source = url->describe() + " queue " + o.queue;
  ro.signer = signing.get();
  redrive::Redrive redrive(std::move(ro));
  if (const std::string why = redrive.open(); !why.empty()) {
    std::fprintf(stderr, "replaygate gate rabbitmq: %s; nothing was consumed\n", why.c_str());
    return kExitUsage;
  }

  const redrive::ReloadRule rule(*loaded, o.actions, actions);
  SharedTable shared(std::move(loaded));
  struct sigaction stop_action {};
  stop_action.sa_handler = on_stop_signal;
  sigaction(SIGINT, &stop_action, nullptr);
  sigaction(SIGTERM, &stop_action, nullptr);
  struct sigaction reload_action {};
  reload_action.sa_handler = on_reload_signal;
  sigaction(SIGHUP, &reload_action, nullptr);

  SharedTable::Reader status_reader(shared);
  redrive::RunHooks hooks = output_hooks(o, status_reader);
  std::optional<redrive::FileWatch> watch;
  if (o.watch) watch.emplace(o.table);
  hooks.maybe_reload = [&] {
    const bool changed = watch && watch->changed();
    if (!g_reload.exchange(false) && !changed) return;
    std::unique_ptr<Table> next;
    if (open_table(o.policy, o.table, &next, nullptr, &o.trust) != kExitOk) {
      std::fprintf(stderr,
                   "replaygate gate rabbitmq: reload refused; the old table keeps serving\n");
      return;
    }
    hooks.note(rule.reload(shared, std::move(next)));
  };
  if (!o.apply) {
    std::fprintf(stderr,
                 "replaygate gate rabbitmq: dry run: nothing is claimed, published or acked; the "
                 "letters seen return to %s when the run ends (the broker marks them redelivered, "
                 "and a quorum queue counts a delivery attempt). Give --apply to act.\n",
                 o.queue.c_str());
  }
  redrive::RunStats stats;
  int code = kExitUsage;
  rmq::RabbitPort port(std::move(port_options), hooks.note, &test_points);
  // librabbitmq decodes nested header tables recursively: a large stack bounds that (see
  // redrive/rabbitmq/amqp_client.h).
  if (!rmq::run_with_stack(size_t{64} << 20, [&] {
        code = redrive::run(shared, make_parser, redrive, port, run_options, hooks, &stats);
        port.close();
      })) {
    std::fprintf(stderr, "replaygate gate rabbitmq: cannot start the broker thread\n");
    return kExitUsage;
  }
  // The run's last signed checkpoint (docs/signing.md, "The anchor"): a failure is an audit error.
  if (const std::string why = redrive.close(); !why.empty()) {
    std::fprintf(stderr, "replaygate gate rabbitmq: %s\n", why.c_str());
    if (code == kExitOk || code == kExitFindings) code = kExitUsage;
  }
  SharedTable::Guard pinned = status_reader.acquire();
  std::fprintf(stderr, "replaygate gate rabbitmq: %s%s; %s\n",
               o.apply ? "" : "dry run: ", redrive::counts_text(stats, pinned.table()).c_str(),
               stats.stop_reason.c_str());
  return code;
}

}  // namespace

Runner setup_gate(CLI::App& sub) {
  auto o = std::make_shared<GateCliOptions>();
  sub.require_subcommand(1);
  sub.footer("Live gates on a broker's dead-letter queue (docs/gate.md).");
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
  r->add_option("--amqp", o->amqp,
                "Broker URL amqp://USER:PASS@HOST:PORT/VHOST (vhost \"/\" as %2F or empty); "
                "default $REPLAYGATE_AMQP_URL, which keeps the password out of the process list");
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
  r->add_option("--max-rate", o->max_rate, "Letters per second at most (default 10; 0: no limit)");
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
  r->add_option("--ledger", o->ledger, "Replay ledger: a SQLite PATH or a postgresql:// URL");
  r->add_option("--ledger-scope", o->ledger_scope, "Ledger scope (default 'default')");
  r->add_option("--audit", o->audit, "Audit log every decision and action is appended to");
  r->add_option("--operator", o->operator_name, "Who runs the gate (recorded in the audit log)");
  r->add_option("--metrics", o->metrics,
                "Prometheus text-format metrics file, rewritten atomically every second");
  r->add_flag("--watch", o->watch, "Reload --table when the file changes (as SIGHUP does)");
  r->add_flag("--follow", o->follow, "Keep consuming when the queue is empty (a service)");
  r->add_flag("--quiet", o->quiet, "No progress lines (the summary is still printed)");
  r->add_option("--prefetch", o->prefetch, "Deliveries in flight (default 16)")
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
  return [o] { return run_gate_rabbitmq(*o); };
}

}  // namespace replaygate::cli
