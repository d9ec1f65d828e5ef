// What every `gate <broker>` subcommand shares: flags, checks, the run and its output
// (gate_common.h).
#include "tools/cli/gate_common.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "pipeline/ledger_stage.h"
#include "redrive/plan_guard.h"
#include "redrive/reload.h"
#include "redrive/stats.h"
#include "runtime/reload.h"
#include "runtime/verify/trust_state.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/options.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {
namespace {

std::atomic<bool> g_stop{false}, g_reload{false};

constexpr double kMinRate = 1.0 / 86400;  // letters per second: one a day

extern "C" void on_stop_signal(int) { g_stop.store(true); }
extern "C" void on_reload_signal(int) { g_reload.store(true); }

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
  if (!r.plan.empty()) j["plan"] = r.plan;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The lines the run prints: one JSON line per letter on stdout; progress, notes and the metrics
// file on stderr and disk.
redrive::RunHooks output_hooks(const std::string& who, const GateFlags& o,
                               SharedTable::Reader& status_reader) {
  redrive::RunHooks hooks;
  hooks.letter = [](const redrive::LetterReport& r) {
    const std::string line = letter_line(r) + "\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  };
  hooks.progress = [&who, &o, &status_reader](const redrive::RunStats& s) {
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
        std::fprintf(stderr, "replaygate %s: cannot write --metrics: %s\n", who.c_str(),
                     error.c_str());
      }
    }
  };
  hooks.note = [&who](const std::string& text) {
    std::fprintf(stderr, "replaygate %s: %s\n", who.c_str(), text.c_str());
  };
  return hooks;
}

}  // namespace

int gate_usage(const std::string& who, const std::string& message) {
  std::fprintf(stderr, "replaygate %s: %s\n", who.c_str(), message.c_str());
  return kExitUsage;
}

int check_gate_flags(const std::string& who, GateFlags& o, AuditSigning* signing) {
  const auto usage = [&who](const std::string& message) { return gate_usage(who, message); };
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
  if (!o.plan.empty()) {
    if (!o.apply) {
      return usage(
          "--plan needs --apply: the plan was reviewed and approved; 'replaygate plan show PLAN' "
          "shows what it does");
    }
    if (o.users.empty()) return usage("--plan needs --users FILE (the approvals are checked)");
    if (o.message_option->count() > 0 || o.all || o.topic_option->count() > 0 ||
        o.class_option->count() > 0 || !o.since.empty()) {
      return usage(
          "--plan selects the letters: --all, --message-id, --topic, --error-class and --since do "
          "not apply");
    }
  } else if (!o.users.empty()) {
    return usage("--users only applies with --plan PLAN");
  }
  if (o.message_option->count() > 0 && o.all) {
    return usage("give --message-id ID (one reviewed message) or --all (bulk), not both");
  }
  if (o.message_option->count() == 0 && !o.all && o.plan.empty()) {
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
  if (!read_audit_signing(o.audit_sign, who.c_str(), signing)) return kExitUsage;
  return kExitOk;
}

int open_gate_policy(const std::string& who, GateFlags& o, int64_t* since,
                     std::unique_ptr<Table>* loaded, redrive::ActionMap* actions) {
  const auto usage = [&who](const std::string& message) { return gate_usage(who, message); };
  if (!o.since.empty() && !parse_utc_time(o.since, since)) {
    return usage("--since '" + o.since + "' is not an RFC 3339 UTC time (2026-12-01T00:00:00Z)");
  }
  // The gate runs one policy: --policy-id, or its first table's id. The trust options carry the
  // binding, so a reload of another policy's table is refused before it is activated.
  const bool policy_id_given = o.policy_id_option->count() > 0;
  if (policy_id_given && o.policy_id.empty()) return usage("--policy-id is empty: name the policy");
  if (policy_id_given) o.trust.policy_id = o.policy_id;
  if (const int code = open_table(o.policy, o.table, loaded, nullptr, &o.trust); code != kExitOk) {
    std::fprintf(stderr, "replaygate %s: no table, so the gate does not start\n", who.c_str());
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
      std::fprintf(stderr, "replaygate %s: %s; the gate does not start\n", who.c_str(),
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

int open_gate_input(const std::string& who, GateFlags& o, const std::string& format_name,
                    GateRun* run, int64_t* since, RecordReading* reading,
                    std::map<std::string, std::string, std::less<>>* topic_map) {
  if (const int code = open_gate_policy(who, o, since, &run->table, &run->actions);
      code != kExitOk) {
    return code;
  }
  std::string format_error;
  inputs::InputFormatOptions format_options;
  format_options.input_format = format_name;
  format_options.input_format_set = true;
  format_options.mapping = o.mapping;
  const InputFormat* format = inputs::choose_input_format(format_options, &format_error);
  if (format == nullptr) return gate_usage(who, format_error);
  if (const int code =
          open_record_parser(*format, o.mapping, *run->table, "the gate does not start", reading);
      code != kExitOk) {
    return code;
  }
  const inputs::Mapping* mapping = reading->mapping ? &reading->mapping->mapping : nullptr;
  if (mapping != nullptr) {
    for (const inputs::FieldMapping& field : mapping->fields) {
      if (field.input == "topic" && field.has_map) *topic_map = field.map;
    }
  }
  run->make_parser = [format, mapping](const Table& table) {
    return format->make_parser(table, mapping);
  };
  return kExitOk;
}

redrive::RunOptions gate_run_options(const GateFlags& o, int64_t since) {
  redrive::RunOptions run;
  run.apply = o.apply;
  if (o.message_option->count() > 0) run.message_id = o.message_id;
  if (o.max_option->count() > 0) run.max = o.max;
  run.max_rate = o.max_rate;
  run.block_max = o.block_max;
  run.block_linger_ms = o.block_linger_ms;
  if (o.topic_option->count() > 0) run.topic = o.topic;
  if (o.class_option->count() > 0) run.error_class = o.error_class;
  if (!o.since.empty()) run.since = since;
  run.max_unacked = o.max_unacked;
  if (o.depth_option->count() > 0) run.max_target_depth = o.max_target_depth;
  run.idle_exit_ms = o.idle_exit_ms;
  run.follow = o.follow;
  run.held_depth = !o.metrics.empty();  // only the metrics file shows them: else no broker call
  run.reconnect_for_s = o.reconnect_for_s;
  return run;
}

int run_gate(GateFlags& o, GateRun run, const redrive::TestPoints& test_points) {
  const std::string& who = run.who;
  redrive::Redrive::Options ro;
  ro.actions = run.actions;
  ro.dry_run = !o.apply;
  ro.ledger_url = o.ledger;
  ro.ledger_scope = o.ledger_scope;
  ro.worker = pipeline::default_worker() + " " + who + " " + o.queue;
  ro.audit_path = o.apply ? o.audit : "";
  ro.operator_name = o.operator_name;
  ro.source = run.source;
  ro.signer = run.signer;
  ro.test_points = &test_points;
  redrive::Redrive redrive(std::move(ro));
  if (const std::string why = redrive.open(); !why.empty()) {
    std::fprintf(stderr, "replaygate %s: %s; nothing was consumed\n", who.c_str(), why.c_str());
    return kExitUsage;
  }

  std::unique_ptr<redrive::PlanGuard> guard;
  if (!o.plan.empty()) {
    redrive::PlanGuardOptions po;
    po.plan_path = o.plan;
    po.users_path = o.users;
    po.source = run.plan_source;
    po.source_what = run.plan_source_what;
    po.test_points = &test_points;
    std::string refusal;
    guard = redrive::PlanGuard::open(po, *run.table, redrive, &refusal);
    if (guard == nullptr) {
      std::fprintf(stderr, "replaygate %s: refused: %s; nothing acted on\n", who.c_str(),
                   refusal.c_str());
      return kExitUsage;
    }
    const plan::PlanRead& p = guard->plan();
    guard->set_queue(run.on_plan(p));
    if (o.rate_option == nullptr || o.rate_option->count() == 0) {
      run.options.max_rate = p.header.rate;
    }
    run.options.plan = guard.get();
    std::fprintf(stderr,
                 "replaygate %s: plan %s (%s): %lld letter(s), %lld cop(ies), drained from %s\n",
                 who.c_str(), p.header.plan_id.c_str(), p.digest.c_str(),
                 static_cast<long long>(p.summary.letters),
                 static_cast<long long>(p.summary.copies), guard->queue().c_str());
  }

  const redrive::ReloadRule rule(*run.table, o.actions, run.actions);
  SharedTable shared(std::move(run.table));
  struct sigaction stop_action {};
  stop_action.sa_handler = on_stop_signal;
  sigaction(SIGINT, &stop_action, nullptr);
  sigaction(SIGTERM, &stop_action, nullptr);
  struct sigaction reload_action {};
  reload_action.sa_handler = on_reload_signal;
  sigaction(SIGHUP, &reload_action, nullptr);

  SharedTable::Reader status_reader(shared);
  redrive::RunHooks hooks = output_hooks(who, o, status_reader);
  std::optional<redrive::FileWatch> watch;
  if (o.watch) watch.emplace(o.table);
  hooks.maybe_reload = [&] {
    const bool changed = watch && watch->changed();
    if (!g_reload.exchange(false) && !changed) return;
    if (guard != nullptr) {
      // The plan was approved for one table: a reload would decide its letters with another.
      hooks.note("reload refused: plan " + guard->plan().header.plan_id +
                 " runs on the table it was built on (checksum " +
                 guard->plan().header.table_checksum + "); the table stays until the run ends");
      return;
    }
    std::unique_ptr<Table> next;
    if (open_table(o.policy, o.table, &next, nullptr, &o.trust) != kExitOk) {
      std::fprintf(stderr, "replaygate %s: reload refused; the old table keeps serving\n",
                   who.c_str());
      return;
    }
    hooks.note(rule.reload(shared, std::move(next)));
  };
  hooks.stop_requested = [] { return g_stop.load(); };
  if (!o.apply) std::fprintf(stderr, "replaygate %s: %s\n", who.c_str(), run.dry_run_note.c_str());
  redrive::RunStats stats;
  int code = kExitUsage;
  run.options.test_points = &test_points;
  const std::unique_ptr<redrive::Port> port = run.make_port(hooks.note, &test_points);
  if (!run.on_thread([&] {
        code = redrive::run(shared, run.make_parser, redrive, *port, run.options, hooks, &stats);
        port->close();
      })) {
    std::fprintf(stderr, "replaygate %s: cannot start the broker thread\n", who.c_str());
    return kExitUsage;
  }
  // The run's last signed checkpoint (docs/signing.md, "The anchor"): a failure is an audit error.
  if (const std::string why = redrive.close(); !why.empty()) {
    std::fprintf(stderr, "replaygate %s: %s\n", who.c_str(), why.c_str());
    if (code == kExitOk || code == kExitFindings) code = kExitUsage;
  }
  SharedTable::Guard pinned = status_reader.acquire();
  std::fprintf(stderr, "replaygate %s: %s%s; %s\n", who.c_str(),
               o.apply ? "" : "dry run: ", redrive::counts_text(stats, pinned.table()).c_str(),
               stats.stop_reason.c_str());
  if (guard != nullptr) {
    std::fprintf(stderr, "replaygate %s: %s\n", who.c_str(), guard->summary().c_str());
    // As decide --plan: letters the guard held are findings; so are letters not the plan's left
    // in its queue, and planned letters a drained queue did not hold.
    if (code == kExitOk && (guard->findings() > 0 || guard->not_in_plan() > 0)) {
      code = kExitFindings;
    }
    if (stats.drained && code != kExitUsage) {
      if (const std::string note = guard->unseen_note(); !note.empty()) {
        std::fprintf(stderr, "replaygate %s: %s\n", who.c_str(), note.c_str());
        if (code == kExitOk) code = kExitFindings;
      }
    }
  }
  return code;
}

}  // namespace replaygate::cli
