// `replaygate ledger`: read the durable replay ledger (docs/ledger.md) - show KEY, list, stats,
// export. Every row is printed as one JSON object per line.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "ledger/ledger.h"
#include "tools/cli/commands.h"

namespace replaygate::cli {
namespace {

struct LedgerOptions {
  std::string ledger;
  std::string scope = "default";
  std::string key;
  std::string since;
};

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
  j["claimed_at"] = ledger::format_time(r.claimed_at);
  j["updated_at"] = ledger::format_time(r.updated_at);
  if (r.released_at) {
    j["released_by"] = r.released_by;
    j["release_reason"] = r.release_reason;
    j["released_at"] = ledger::format_time(*r.released_at);
  }
  return j;
}

void print_row(const ledger::Record& r) { std::printf("%s\n", row_json(r).dump().c_str()); }

int failed(const ledger::Error& e) {
  std::fprintf(stderr, "replaygate ledger: error: %s (%s)\n", e.message.c_str(),
               std::string(ledger::error_code_name(e.code)).c_str());
  return kExitUsage;
}

template <class F>
int with_ledger(const LedgerOptions& o, F&& body) {
  ledger::Options lo;
  lo.scope = o.scope;
  ledger::Result<std::unique_ptr<ledger::Ledger>> opened = ledger::open_ledger(o.ledger, lo);
  if (!opened) return failed(opened.error());
  const int code = body(*opened.value());
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "replaygate ledger: error: cannot write to standard output\n");
    return kExitUsage;
  }
  return code;
}

}  // namespace

Runner setup_ledger(CLI::App& sub) {
  auto o = std::make_shared<LedgerOptions>();
  sub.require_subcommand(1);
  sub.footer(
      "The durable replay ledger of `decide --ledger` (docs/ledger.md). Rows are printed as JSON\n"
      "Lines. Exit: 0 ok, 2 usage or I/O errors (a ledger that cannot be opened or read).");
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
  return [o, show, list, stats, exp] {
    if (show->parsed()) {
      return with_ledger(*o, [&](ledger::Ledger& l) {
        auto rows = l.show(o->key);
        if (!rows) return failed(rows.error());
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
        if (!rows) return failed(rows.error());
        for (const ledger::Record& r : *rows) print_row(r);
        return kExitOk;
      });
    }
    if (stats->parsed()) {
      return with_ledger(*o, [&](ledger::Ledger& l) {
        auto s = l.stats();
        if (!s) return failed(s.error());
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
        if (!n) return failed(n.error());
        return kExitOk;
      });
    }
    return kExitUsage;
  };
}

}  // namespace replaygate::cli
