// What the `replaygate ledger` subcommands share (docs/ledger.md): their options, opening the
// ledger, printing a row, and the error words. The reading subcommands are in ledger_cmd.cc, the
// audited operator acts (release, prune, migrate) in ledger_acts.cc, check and rebuild in
// ledger_check.cc and ledger_rebuild.cc.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ledger/ledger.h"

namespace replaygate::cli {

struct LedgerOptions {
  std::string ledger;
  std::string scope = "default";
  std::string key;
  std::string since;
  std::string operator_name, reason, audit;
  bool operator_given = false, reason_given = false;
  std::string older_than;
  std::string from_audit;
  std::string output = "text";      // check: text or json
  std::vector<std::string> audits;  // check: --audit, repeatable (every gate's log)
  bool dry_run = false;
};

// One ledger row as JSON (the shape `ledger show|list|export` print).
nlohmann::json row_json(const ledger::Record& r);

// Prints "replaygate ledger: error: MESSAGE (CODE)" on stderr; returns 2.
int ledger_failed(const ledger::Error& e);
// Prints "replaygate ledger: error: MESSAGE" on stderr; returns 2.
int ledger_usage(const std::string& message);

// Opens the ledger of `o` (--ledger, --ledger-scope), runs `body` on it and flushes standard
// output: body's exit code, or 2 when the ledger cannot be opened or stdout cannot be written.
// `create`: a missing SQLite file is created (rebuild only); otherwise it is an error ("no ledger
// at PATH"), so that reading or checking a mistyped path leaves no empty ledger behind.
// `clock`: the ledger's clock (rebuild pins it to the log's times); default the system clock.
int with_ledger(const LedgerOptions& o, const std::function<int(ledger::Ledger&)>& body,
                bool create = false, std::function<ledger::Time()> clock = {});

// `ledger release KEY --operator NAME --reason TEXT --audit LOG` (ledger_acts.cc).
int run_ledger_release(const LedgerOptions& o);
// `ledger prune --older-than DURATION --operator NAME --audit LOG [--dry-run]` (ledger_acts.cc).
int run_ledger_prune(const LedgerOptions& o);
// `ledger migrate --operator NAME --reason TEXT --audit LOG` (ledger_acts.cc).
int run_ledger_migrate(const LedgerOptions& o);
// `ledger check --audit LOG [--audit LOG ...] [--output text|json]` (ledger_check.cc).
int run_ledger_check(const LedgerOptions& o);
// `ledger rebuild --from-audit LOG` (ledger_rebuild.cc).
int run_ledger_rebuild(const LedgerOptions& o);

}  // namespace replaygate::cli
