// `replaygate gate rabbitmq`: the live gate on a RabbitMQ dead-letter queue (docs/gate.md).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/plural.h"
#include "gate/ledger_stage.h"
#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "redrive/rabbitmq/management.h"
#include "redrive/rabbitmq/rabbit_gate.h"
#include "redrive/redrive.h"
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

std::string letter_line(const rmq::LetterReport& r) {
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

std::string counts_text(const rmq::GateStats& s, const Table& table) {
  std::string verbs;
  for (uint32_t v = 0; v < s.per_verb.size() && v < table.verb_count(); ++v) {
    if (s.per_verb[v] == 0) continue;
    verbs += (verbs.empty() ? "" : ", ") + std::string(table.verb_name(v)) + " " +
             std::to_string(s.per_verb[v]);
  }
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.1f", s.rate);
  std::string text =
      plural(s.handled, "letter") + (verbs.empty() ? "" : " (" + verbs + ")") + ": " +
      std::to_string(s.republished) + " republished, " + std::to_string(s.parked) + " parked, " +
      std::to_string(s.held) + " held, " + std::to_string(s.acked_only) +
      " acked as already replayed, " + std::to_string(s.skipped) + " skipped" +
      (s.left > 0 ? ", " + std::to_string(s.left) + " left in the queue" : "") + "; " + rate + "/s";
  if (s.queue_depth) text += "; queue depth " + std::to_string(*s.queue_depth);
  if (s.reconnects > 0) text += "; " + std::to_string(s.reconnects) + " reconnects";
  return text;
}

// A Prometheus label value: backslash, double quote and line feed escaped.
std::string label(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Prometheus text format (version 0.0.4).
std::string metrics_text(const rmq::GateStats& s, const Table& table, const std::string& queue) {
  std::string q = "queue=\"" + label(queue) + "\"";
  std::string out;
  out += "# HELP replaygate_gate_letters_total Dead letters handled, by verb.\n";
  out += "# TYPE replaygate_gate_letters_total counter\n";
  for (uint32_t v = 0; v < s.per_verb.size() && v < table.verb_count(); ++v) {
    out += "replaygate_gate_letters_total{" + q + ",verb=\"" + label(table.verb_name(v)) + "\"} " +
           std::to_string(s.per_verb[v]) + "\n";
  }
  out += "# HELP replaygate_gate_actions_total What the gate did with the letters it handled.\n";
  out += "# TYPE replaygate_gate_actions_total counter\n";
  for (const auto& [name, value] :
       {std::pair{"republish", s.republished}, std::pair{"park", s.parked},
        std::pair{"hold", s.held}, std::pair{"ack_already_replayed", s.acked_only},
        std::pair{"skip", s.skipped}, std::pair{"leave", s.left}}) {
    out += "replaygate_gate_actions_total{" + q + ",action=\"" + name + "\"} " +
           std::to_string(value) + "\n";
  }
  out += "# HELP replaygate_gate_unreadable_total Letters held because they could not be read.\n";
  out += "# TYPE replaygate_gate_unreadable_total counter\n";
  out += "replaygate_gate_unreadable_total{" + q + "} " + std::to_string(s.unreadable) + "\n";
  out += "# HELP replaygate_gate_reconnects_total Broker reconnections.\n";
  out += "# TYPE replaygate_gate_reconnects_total counter\n";
  out += "replaygate_gate_reconnects_total{" + q + "} " + std::to_string(s.reconnects) + "\n";
  if (s.queue_depth) {
    out += "# HELP replaygate_gate_queue_depth Messages in the dead-letter queue.\n";
    out += "# TYPE replaygate_gate_queue_depth gauge\n";
    out += "replaygate_gate_queue_depth{" + q + "} " + std::to_string(*s.queue_depth) + "\n";
  }
  out += "# HELP replaygate_gate_table_info The decision table serving.\n";
  out += "# TYPE replaygate_gate_table_info gauge\n";
  out += "replaygate_gate_table_info{" + q + ",policy=\"" + label(table.policy_id()) +
         "\",revision=\"" + std::to_string(table.revision()) + "\",checksum=\"" +
         table.checksum_hex() + "\"} 1\n";
  return out;
}

int run_gate_rabbitmq(GateCliOptions& o) {
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
  AuditSigning signing;
  if (!read_audit_signing(o.audit_sign, "gate rabbitmq", &signing)) return kExitUsage;

  if (o.amqp.empty()) {
    if (const char* env = std::getenv("REPLAYGATE_AMQP_URL"); env != nullptr) o.amqp = env;
  }
  if (o.amqp.empty()) {
    return usage("give the broker with --amqp URL or $REPLAYGATE_AMQP_URL");
  }
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
  std::string problem;
  const std::optional<rmq::AmqpUrl> url = rmq::parse_amqp_url(o.amqp, &problem);
  if (!url) return usage("--amqp: " + problem);
  int64_t since = 0;
  if (!o.since.empty() && !parse_utc_time(o.since, &since)) {
    return usage("--since '" + o.since + "' is not an RFC 3339 UTC time (2026-12-01T00:00:00Z)");
  }

  // The gate runs one policy: --policy-id, or its first table's id. The trust options carry the
  // binding, so a reload of another policy's table is refused before it is activated.
  const bool policy_id_given = o.policy_id_option->count() > 0;
  if (policy_id_given && o.policy_id.empty()) return usage("--policy-id is empty: name the policy");
  if (policy_id_given) o.trust.policy_id = o.policy_id;
  std::unique_ptr<Table> loaded;
  if (const int code = open_table(o.policy, o.table, &loaded, nullptr, &o.trust); code != kExitOk) {
    std::fprintf(stderr, "replaygate gate rabbitmq: no table, so the gate does not start\n");
    return code == kExitFindings ? kExitUsage : code;  // 1 is for a run with unreadable letters
  }
  if (policy_id_given && loaded->policy_id() != o.policy_id) {
    return usage("the table is policy " + std::string(loaded->policy_id()) +
                 ", and --policy-id says " + o.policy_id);
  }
  o.trust.policy_id = std::string(loaded->policy_id());
  if (!o.trust.trust_state.empty()) {
    LoadStatus bound;
    if (!verify::bind_policy(o.trust.trust_state, o.trust.policy_id, &bound)) {
      std::fprintf(stderr, "replaygate gate rabbitmq: %s; the gate does not start\n",
                   bound.message.c_str());
      return kExitUsage;
    }
  }
  redrive::ActionMap actions = redrive::ActionMap::defaults(*loaded);
  for (const std::string& spec : o.actions) {
    if (const std::string why = actions.set(*loaded, spec); !why.empty()) return usage(why);
  }
  if (const std::string why = actions.missing(*loaded); !why.empty()) return usage(why);
  for (const auto& [option, name] :
       {std::pair{o.topic_option, "topic"}, std::pair{o.class_option, "error_class"}}) {
    if (option->count() > 0 && loaded->field_index(name) == Table::kNoField) {
      return usage(std::string(option->get_name()) + ": the policy has no input '" + name + "'");
    }
  }

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
  std::map<std::string, std::string, std::less<>> topic_map;  // what a replay may go to
  if (mapping != nullptr) {
    for (const inputs::FieldMapping& field : mapping->fields) {
      if (field.input == "topic" && field.has_map) topic_map = field.map;
    }
  }
  const rmq::ParserFactory make_parser = [format, mapping](const Table& table) {
    return format->make_parser(table, mapping);
  };

  rmq::GateOptions g;
  g.url = *url;
  g.settings.frame_max = o.frame_max;
  g.settings.heartbeat = o.heartbeat;
  g.queue = o.queue;
  g.park_queue = o.park_queue.empty() ? o.queue + ".parked" : o.park_queue;
  g.hold_queue = o.hold_queue.empty() ? o.queue + ".hold" : o.hold_queue;
  if (o.exchange_option->count() > 0) g.replay_exchange = o.replay_exchange;
  if (o.routing_option->count() > 0) g.replay_routing_key = o.replay_routing_key;
  g.topic_map = std::move(topic_map);
  g.apply = o.apply;
  g.allow_peek = o.allow_peek;
  if (o.message_option->count() > 0) g.message_id = o.message_id;
  if (o.max_option->count() > 0) g.max = o.max;
  g.max_rate = o.max_rate;
  if (o.topic_option->count() > 0) g.topic = o.topic;
  if (o.class_option->count() > 0) g.error_class = o.error_class;
  if (!o.since.empty()) g.since = since;
  g.max_unacked = o.max_unacked;
  if (o.depth_option->count() > 0) g.max_target_depth = o.max_target_depth;
  g.prefetch = static_cast<uint16_t>(o.prefetch);
  g.confirm_timeout_ms = o.confirm_timeout_ms;
  g.idle_exit_ms = o.idle_exit_ms;
  g.follow = o.follow;
  g.reconnect_for_s = o.reconnect_for_s;
  g.limits.max_body = o.max_body;
  if (const char* crash = std::getenv("REPLAYGATE_TEST_CRASH_AT")) g.crash_at = crash;
  if (const char* pause = std::getenv("REPLAYGATE_TEST_PAUSE_AT")) {
    const std::string_view text = pause;
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon + 1 == text.size()) {
      return usage("REPLAYGATE_TEST_PAUSE_AT must be STEP:FILE");
    }
    g.pause_at = std::string(text.substr(0, colon));
    g.pause_file = std::string(text.substr(colon + 1));
  }
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
    const std::optional<rmq::QueueInfo> info =
        rmq::queue_info(o.management, *url, o.queue, &problem);
    if (!info) {
      std::fprintf(stderr, "replaygate gate rabbitmq: %s; nothing was consumed\n", problem.c_str());
      return kExitUsage;
    }
    for (const std::string* q : {&g.park_queue, &g.hold_queue}) {
      std::string why;
      const std::optional<rmq::QueueInfo> target = rmq::queue_info(o.management, *url, *q, &why);
      if (target && !target->dropping.empty()) {
        std::string list;
        for (const std::string& d : target->dropping) list += (list.empty() ? "" : ", ") + d;
        return usage(*q + " drops messages on its own (" + list +
                     "): a letter the gate moved there and acked could vanish; give it no length "
                     "limit or TTL, or choose another --park-queue / --hold-queue");
      }
    }
    if (info->type == "stream") {
      return usage(o.queue +
                   " is a stream: a stream keeps its messages after an ack, so a gate "
                   "cannot move letters out of it; dead-letter into a classic or quorum queue");
    }
    if (info->type == "quorum" && !o.apply && !o.allow_peek) {
      std::fprintf(
          stderr,
          "replaygate gate rabbitmq: refusing a dry run on %s, a quorum queue%s: each "
          "peek uses up one delivery attempt of every letter it sees, and a letter at its "
          "limit is dropped or dead-lettered by the broker. Give --allow-peek to accept "
          "that; nothing was consumed\n",
          o.queue.c_str(),
          info->delivery_limit
              ? (" with a delivery limit of " + std::to_string(*info->delivery_limit)).c_str()
              : "");
      return kExitUsage;
    }
    // Known only here: the gate then never returns a letter it need not (rabbit_gate.h).
    if (info->type == "quorum" && info->delivery_limit && *info->delivery_limit >= 0) {
      g.delivery_limit = info->delivery_limit;
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

  const uint32_t default_verb = loaded->default_verb();
  std::vector<Effect> effects;
  for (uint32_t v = 0; v < loaded->verb_count(); ++v) effects.push_back(loaded->verb_effect(v));
  SharedTable shared(std::move(loaded));
  struct sigaction stop_action {};
  stop_action.sa_handler = on_stop_signal;
  sigaction(SIGINT, &stop_action, nullptr);
  sigaction(SIGTERM, &stop_action, nullptr);
  struct sigaction reload_action {};
  reload_action.sa_handler = on_reload_signal;
  sigaction(SIGHUP, &reload_action, nullptr);

  struct stat watched {};
  if (o.watch) ::stat(o.table.c_str(), &watched);
  auto last_watch = std::chrono::steady_clock::now();
  const auto reload = [&] {
    bool wanted = g_reload.exchange(false);
    if (o.watch && std::chrono::steady_clock::now() - last_watch > std::chrono::seconds(1)) {
      last_watch = std::chrono::steady_clock::now();
      struct stat now {};
      // An in-place rewrite may keep the mtime (cp -p, touch -r): its size or its ctime, which
      // no user can set, still changes; a rename changes the inode.
      if (::stat(o.table.c_str(), &now) == 0 &&
          (now.st_mtim.tv_sec != watched.st_mtim.tv_sec ||
           now.st_mtim.tv_nsec != watched.st_mtim.tv_nsec || now.st_ino != watched.st_ino ||
           now.st_size != watched.st_size || now.st_ctim.tv_sec != watched.st_ctim.tv_sec ||
           now.st_ctim.tv_nsec != watched.st_ctim.tv_nsec)) {
        watched = now;
        wanted = true;
      }
    }
    if (!wanted) return;
    std::unique_ptr<Table> next;
    if (open_table(o.policy, o.table, &next, nullptr, &o.trust) != kExitOk) {
      std::fprintf(stderr,
                   "replaygate gate rabbitmq: reload refused; the old table keeps serving\n");
      return;
    }
    if (next->policy_id() != o.trust.policy_id) {  // --policy: compiled, no trust options
      std::fprintf(stderr,
                   "replaygate gate rabbitmq: reload refused: the new table is policy %s, and "
                   "this gate runs policy %s; the old table keeps serving\n",
                   std::string(next->policy_id()).c_str(), o.trust.policy_id.c_str());
      return;
    }
    // What each verb does must not change under a running gate: a verb whose effect changed
    // (replay_once made `none`) would still be republished by the map made at start.
    redrive::ActionMap next_actions = redrive::ActionMap::defaults(*next);
    for (const std::string& spec : o.actions) next_actions.set(*next, spec);
    bool same = next_actions == actions && next->default_verb() == default_verb;
    for (uint32_t v = 0; same && v < next->verb_count(); ++v) {
      same = v < effects.size() && next->verb_effect(v) == effects[v];
    }
    if (!same) {
      std::fprintf(
          stderr,
          "replaygate gate rabbitmq: reload refused: the new table changes a verb's effect, "
          "the default verb or what a verb does (republish, park, hold); restart the gate "
          "to run it. The old table keeps serving\n");
      return;
    }
    const std::string checksum = next->checksum_hex();
    const int64_t revision = next->revision();
    LoadStatus status;
    if (!shared.replace(std::move(next), &status)) {
      std::fprintf(stderr,
                   "replaygate gate rabbitmq: reload refused (%s); the old table keeps serving\n",
                   status.message.c_str());
      return;
    }
    std::fprintf(stderr, "replaygate gate rabbitmq: reloaded the table (revision %lld, %s)\n",
                 static_cast<long long>(revision), checksum.c_str());
  };

  rmq::GateHooks hooks;
  hooks.letter = [](const rmq::LetterReport& r) {
    const std::string line = letter_line(r) + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  };
  SharedTable::Reader status_reader(shared);
  hooks.progress = [&](const rmq::GateStats& s) {
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
      std::fprintf(stderr, "gate: %s%s\n", bar.c_str(), counts_text(s, pinned.table()).c_str());
    }
    if (!o.metrics.empty()) {
      std::string error;
      if (!write_file_atomically(o.metrics, metrics_text(s, pinned.table(), o.queue), &error)) {
        std::fprintf(stderr, "replaygate gate rabbitmq: cannot write --metrics: %s\n",
                     error.c_str());
      }
    }
  };
  hooks.note = [](const std::string& text) {
    std::fprintf(stderr, "replaygate gate rabbitmq: %s\n", text.c_str());
  };
  hooks.maybe_reload = reload;
  hooks.stop_requested = [] { return g_stop.load(); };

  if (!o.apply) {
    std::fprintf(stderr,
                 "replaygate gate rabbitmq: dry run: nothing is claimed, published or acked; the "
                 "letters seen return to %s when the run ends (the broker marks them redelivered, "
                 "and a quorum queue counts a delivery attempt). Give --apply to act.\n",
                 o.queue.c_str());
  }
  rmq::GateStats stats;
  int code = kExitUsage;
  // librabbitmq decodes nested header tables recursively: a large stack bounds that (see
  // redrive/rabbitmq/amqp_client.h).
  if (!rmq::run_with_stack(size_t{64} << 20, [&] {
        code = rmq::run_gate(shared, make_parser, redrive, g, hooks, &stats);
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
               o.apply ? "" : "dry run: ", counts_text(stats, pinned.table()).c_str(),
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
