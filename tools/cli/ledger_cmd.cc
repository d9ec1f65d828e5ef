// `replaygate ledger`: the durable replay ledger's command (docs/ledger.md) - show KEY, list,
// stats, export (rows as JSON Lines), and the operator commands release, prune, migrate, check,
// rebuild
// (ledger_acts.cc, ledger_check.cc, ledger_rebuild.cc).
#include "tools/cli/ledger_cmd.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "ledger/ledger.h"
#include "tools/cli/commands.h"

namespace replaygate::cli {

nlohmann::json row_json(const ledger::Record& r) {
  nlohmann::json j;
  j["scope"] = r.scope;
  j["key"] = r.key;
  j["generation"] = r.generation;
  j["state"] = std::string(ledger::state_name(r.state));
  j["policy"] = r.policy;
  j["revision"] = r.revision;
  j["table"] = r.table_checksum;
  j["rule"] = r.rule;
  j["message_id"] = r.message_id;
  j["worker"] = r.worker;
  // The live gate's record of the copy it published (absent for other claims).
  if (r.copy_replay) j["copy_replay"] = *r.copy_replay;
  if (!r.body_digest.empty()) j["body_digest"] = r.body_digest;
  j["claimed_at"] = ledger::format_time(r.claimed_at);
  j["updated_at"] = ledger::format_time(r.updated_at);
  j["recorded_at"] = ledger::format_time(r.recorded_at);  // the ledger's own time: prune ages by it
  if (r.released_at) {
    j["released_by"] = r.released_by;
    j["release_reason"] = r.release_reason;
    j["released_at"] = ledger::format_time(*r.released_at);
  }
  return j;
}

int ledger_failed(const ledger::Error& e) {
  std::fprintf(stderr, "replaygate ledger: error: %s (%s)\n", e.message.c_str(),
               std::string(ledger::error_code_name(e.code)).c_str());
  return kExitUsage;
}

int ledger_usage(const std::string& message) {
  std::fprintf(stderr, "replaygate ledger: error: %s\n", message.c_str());
  return kExitUsage;
}

int with_ledger(const LedgerOptions& o, const std::function<int(ledger::Ledger&)>& body,
                bool create, std::function<ledger::Time()> clock) {
  ledger::Options lo;
  lo.scope = o.scope;
  lo.create = create;
  lo.clock = std::move(clock);
  ledger::Result<std::unique_ptr<ledger::Ledger>> opened = ledger::open_ledger(o.ledger, lo);
  if (!opened) return ledger_failed(opened.error());
  const int code = body(*opened.value());
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "replaygate ledger: error: cannot write to standard output\n");
    return kExitUsage;
  }
  return code;
}

namespace {

void print_row(const ledger::Record& r) { std::printf("%s\n", row_json(r).dump().c_str()); }

}  // namespace

Runner setup_ledger(CLI::App& sub) {
  auto o = std::make_shared<LedgerOptions>();
  sub.require_subcommand(1);
  sub.footer(
      "The durable replay ledger of `decide --ledger` (docs/ledger.md). Rows are printed as JSON\n"
      "Lines. release and prune are audited operator acts; check compares the ledger with an\n"
      "audit log; rebuild re-creates a lost ledger from one. Exit: 0 ok, 1 findings (check,\n"
      "rebuild), 2 usage or I/O errors (a ledger that cannot be opened, a log that does not\n"
      "verify).");
  auto common = [&](CLI::App* c) {
    c->add_option("--ledger", o->ledger, "SQLite PATH or postgresql:// URL")->required();
    c->add_option("--ledger-scope", o->scope, "Ledger scope (default 'default')");
  };
  CLI::App* show = sub.add_subcommand("show", "Every generation of one idempotency key");
  show->add_option("KEY", o->key, "The idempotency key")->required();
  common(show);
  CLI::App* list = sub.add_subcommand("list", "Claims, oldest first");
  list->add_option("--since", o->since, "Only claims made at or after this RFC 3339 time");
  common(list);
  CLI::App* stats = sub.add_subcommand("stats", "Claims per state, distinct keys, time bounds");
  common(stats);
  CLI::App* exp = sub.add_subcommand("export", "Every row as JSON Lines (a consistent snapshot)");
  common(exp);
  const auto who = [&](CLI::App* c, const char* why) {
    c->add_option("--operator", o->operator_name, "Who acts (recorded in the audit log)")
        ->each([o](const std::string&) { o->operator_given = true; });
    c->add_option("--reason", o->reason, why)->each([o](const std::string&) {
      o->reason_given = true;
    });
    c->add_option("--audit", o->audit, "The audit log the act is recorded in");
  };
  CLI::App* release = sub.add_subcommand(
      "release", "Allow one more replay of KEY: an audited operator act (docs/ledger.md)");
  release->add_option("KEY", o->key, "The idempotency key")->required();
  common(release);
  who(release, "Why one more replay is allowed (one printable line; required)");
  release->footer(
      "Writes 'release_requested' to the audit log, releases the key's live claim, then writes\n"
      "'released'. Exit: 0 released, 2 usage, I/O, a key with no live claim, a log that does\n"
      "not verify.");
  CLI::App* prune = sub.add_subcommand(
      "prune",
      "Delete rows the ledger recorded before its own now - DURATION: re-opens replay for those "
      "keys");
  prune->add_option("--older-than", o->older_than, "DURATION: 30d, 12h, 90m or 45s")->required();
  common(prune);
  who(prune, "Why (one printable line; optional)");
  prune->add_flag("--dry-run", o->dry_run, "List the rows that would be deleted; change nothing");
  prune->footer(
      "Pruning re-opens replay for the pruned keys. Writes 'prune_requested' to the audit log, "
      "deletes\n"
      "the rows, then writes one 'pruned' entry per row; prints the deleted rows as JSON Lines.\n"
      "Exit: 0 ok, 2 usage or I/O errors.");
  CLI::App* migrate = sub.add_subcommand(
      "migrate", "Bring a ledger of an older schema version to this build's: an audited act");
  common(migrate);
  who(migrate, "Why the ledger is migrated now (one printable line; required)");
  migrate->footer(
      "Writes 'ledger_migrate_requested' to the audit log, migrates the ledger in one transaction\n"
      "(every row kept; the ledger is at the old version or the new one, never between), then\n"
      "writes 'ledger_migrated'. Prints {\"ledger\",\"from\",\"to\"}. Exit: 0 migrated or already\n"
      "at this version, 2 usage, I/O, a newer or foreign database, a log that does not verify.");
  CLI::App* check =
      sub.add_subcommand("check", "Claims with no audit entry, and audit grants with no claim");
  common(check);
  check
      ->add_option("--audit", o->audits,
                   "The audit log of decide --audit, a gate and the acts (repeatable: give every "
                   "gate's log sharing the ledger)")
      ->required()
      ->allow_extra_args(false);
  check->add_option("--output", o->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  check->footer(
      "Exit: 0 everything accounted for, 1 findings, 2 I/O errors or a log that does not "
      "verify.");
  CLI::App* rebuild =
      sub.add_subcommand("rebuild", "Re-create the claims of an empty ledger from an audit log");
  rebuild->add_option("--from-audit", o->from_audit, "The audit log")->required();
  common(rebuild);
  rebuild->footer(
      "Refuses a ledger scope that holds rows and a log that does not verify (exit 2). Exit 1:\n"
      "restored, but the log holds conflicts (listed).");
  return [o, show, list, stats, exp, release, prune, migrate, check, rebuild] {
    if (release->parsed()) return run_ledger_release(*o);
    if (migrate->parsed()) return run_ledger_migrate(*o);
    if (prune->parsed()) return run_ledger_prune(*o);
    if (check->parsed()) return run_ledger_check(*o);
    if (rebuild->parsed()) return run_ledger_rebuild(*o);
    if (show->parsed()) {
      return with_ledger(*o, [&](ledger::Ledger& l) {
        auto rows = l.show(o->key);
        if (!rows) return ledger_failed(rows.error());
        for (const ledger::Record& r : *rows) print_row(r);
        if (rows->empty()) {
          std::fprintf(stderr, "replaygate ledger: key never claimed (or pruned)\n");
        }
        return kExitOk;
      });
    }
    if (list->parsed()) {
      ledger::Time since{};
      if (!o->since.empty()) {
        const std::optional<ledger::Time> t = ledger::parse_time(o->since);
        if (!t) {
          std::fprintf(stderr,
                       "replaygate ledger: error: --since '%s' is not an RFC 3339 time "
                       "(e.g. 2026-12-02T06:00:00Z)\n",
                       o->since.c_str());
          return kExitUsage;
        }
        since = *t;
      }
      return with_ledger(*o, [&](ledger::Ledger& l) {
        auto rows = l.list(since);
        if (!rows) return ledger_failed(rows.error());
        for (const ledger::Record& r : *rows) print_row(r);
        return kExitOk;
      });
    }
    if (stats->parsed()) {
      return with_ledger(*o, [&](ledger::Ledger& l) {
        auto s = l.stats();
        if (!s) return ledger_failed(s.error());
        nlohmann::json j;
        j["scope"] = l.scope();
        j["claimed"] = s->claimed;
        j["recorded"] = s->recorded;
        j["confirmed"] = s->confirmed;
        j["released"] = s->released;
        j["keys"] = s->keys;
        j["oldest"] = s->oldest ? nlohmann::json(ledger::format_time(*s->oldest)) : nullptr;
        j["newest"] = s->newest ? nlohmann::json(ledger::format_time(*s->newest)) : nullptr;
        std::printf("%s\n", j.dump().c_str());
        return kExitOk;
      });
    }
    if (exp->parsed()) {
      return with_ledger(*o, [&](ledger::Ledger& l) {
        auto n = l.export_rows([](const ledger::Record& r) {
          print_row(r);
          return !std::ferror(stdout);
        });
        if (!n) return ledger_failed(n.error());
        return kExitOk;
      });
    }
    return kExitUsage;
  };
}

}  // namespace replaygate::cli
