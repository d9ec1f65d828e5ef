// `replaygate key generate`, `replaygate sign` and `replaygate trust show|reset`: the operator's
// side of signed tables and rollback protection (docs/signing.md, runtime/verify/).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "common/escape.h"
#include "runtime/verify/keys.h"
#include "runtime/verify/signed_table.h"
#include "runtime/verify/trust_state.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

int usage(const std::string& message) {
  std::fprintf(stderr, "replaygate: error: %s\n", escape_control(message).c_str());
  return kExitUsage;
}

// ---- key generate ----

struct KeyOptions {
  std::string secret;
  std::string public_key;
};

int run_key_generate(const KeyOptions& o) {
  if (o.secret == o.public_key) return usage("--secret and --public must be two different files");
  verify::PublicKey key;
  std::string error;
  if (!verify::generate_key_files(o.secret, o.public_key, &key, &error)) return usage(error);
  // The key id only: the secret is never printed.
  const std::string line = "key-id " + verify::hex(key.id) + "\n";
  if (!print_to_stdout(line, "the key id")) return kExitUsage;
  std::fprintf(stderr,
               "replaygate: wrote %s (secret, mode 0600: keep it off the workers) and %s "
               "(public: pin it with --trusted-key)\n",
               escape_control(o.secret, Backslash::kKeep).c_str(),
               escape_control(o.public_key, Backslash::kKeep).c_str());
  return kExitOk;
}

// ---- sign ----

struct SignOptions {
  std::string table;
  std::string output;  // empty: replace TABLE
  std::string sign_key;
  std::string expires;
};

int run_sign(const SignOptions& o) {
  const std::string target = o.output.empty() ? o.table : o.output;
  if (!o.output.empty()) {
    std::string error;
    if (!check_output_file(o.output, {InputFile{o.table, "the table file"}}, " (e.g. signed.rgt)",
                           &error)) {
      return usage(error);
    }
  }
  int64_t expires_at = 0;
  if (!o.expires.empty() && !parse_utc_time(o.expires, &expires_at)) {
    return usage("--expires takes a UTC time like 2027-01-31T00:00:00Z, not '" + o.expires + "'");
  }
  verify::SecretKey key;
  std::string error;
  if (!verify::read_secret_key(o.sign_key, &key, &error)) return usage("--sign-key: " + error);
  std::vector<uint8_t> bytes;
  LoadStatus status;
  if (!verify::read_table_file(o.table, &bytes, &status)) {
    std::fprintf(stderr, "replaygate: cannot read table %s: %s\n",
                 escape_control(o.table, Backslash::kKeep).c_str(), status.message.c_str());
    return kExitUsage;
  }
  std::vector<uint8_t> signed_bytes;
  if (!verify::sign_table(bytes.data(), bytes.size(), key, expires_at, &signed_bytes, &error)) {
    std::fprintf(stderr, "replaygate: error: cannot sign %s: %s; nothing written\n",
                 escape_control(o.table, Backslash::kKeep).c_str(), error.c_str());
    return kExitUsage;
  }
  const std::string_view view(reinterpret_cast<const char*>(signed_bytes.data()),
                              signed_bytes.size());
  if (!write_file_atomically(target, view, &error)) {
    std::fprintf(stderr, "replaygate: %s\n", error.c_str());
    return kExitUsage;
  }
  std::fprintf(stderr, "replaygate: signed %s with key %s%s (%zu bytes)\n",
               escape_control(target, Backslash::kKeep).c_str(), verify::hex(key.id).c_str(),
               expires_at == 0 ? "" : (", expires " + verify::utc_text(expires_at)).c_str(),
               signed_bytes.size());
  return kExitOk;
}

// ---- trust show / reset ----

struct TrustOptions {
  std::string dir;
  std::string policy;
  std::string operator_name;
  std::string audit;
  std::string reason;
};

std::string describe(const verify::TrustRecord& r) {
  return "revision " + std::to_string(r.revision) + " digest " + r.digest;
}

// The record of o.policy in o.dir; false (the reason on stderr) when it cannot be read.
bool read_record(const TrustOptions& o, verify::TrustRecord* record, bool* found) {
  std::string error;
  if (verify::read_record(o.dir, o.policy, record, found, &error)) return true;
  std::fprintf(stderr, "replaygate: %s\n", error.c_str());
  return false;
}

int run_trust_show(const TrustOptions& o) {
  verify::TrustRecord record;
  bool found = false;
  if (!read_record(o, &record, &found)) return kExitUsage;
  const std::string line = "policy " + escape_control(o.policy) + ": " +
                           (found ? describe(record) : std::string("nothing activated")) + "\n";
  return print_to_stdout(line, "the trust state") ? kExitOk : kExitUsage;
}

// Write-ahead like `ledger release`: the audit entry is appended first, then the record removed;
// a crash between leaves an audited reset that did not happen, never an unaudited one.
int run_trust_reset(const TrustOptions& o) {
  if (const std::string why = operator_error(o.operator_name); !why.empty()) return usage(why);
  if (const std::string why = operator_name_problem(o.reason); !why.empty()) {
    return usage("--reason " + why);
  }
  verify::TrustRecord record;
  bool found = false;
  if (!read_record(o, &record, &found)) return kExitUsage;
  if (!found) {
    std::fprintf(stderr, "replaygate: policy %s has no trust state in %s: nothing to reset\n",
                 escape_control(o.policy).c_str(), escape_control(o.dir, Backslash::kKeep).c_str());
    return kExitFindings;
  }
  audit::LedgerEntry e;
  e.operator_name = o.operator_name;
  e.act = "trust_reset";
  e.scope = "trust:" + o.policy;
  e.reason = o.reason;
  e.state = describe(record);
  const audit::AppendResult appended = audit::append(o.audit, audit::to_json(e));
  if (!appended.ok) {
    std::fprintf(stderr, "replaygate: cannot append to the audit log: %s; nothing was reset\n",
                 appended.error.c_str());
    return kExitUsage;
  }
  verify::TrustRecord previous;
  std::string error;
  if (!verify::reset(o.dir, o.policy, &previous, &found, &error)) {
    std::fprintf(stderr, "replaygate: %s (the audit log records the request, seq %llu)\n",
                 error.c_str(), static_cast<unsigned long long>(appended.seq));
    return kExitUsage;
  }
  std::fprintf(stderr,
               "replaygate: reset policy %s (was %s); the next activation of any revision is "
               "accepted (audit seq %llu)\n",
               escape_control(o.policy).c_str(), describe(previous).c_str(),
               static_cast<unsigned long long>(appended.seq));
  return kExitOk;
}

}  // namespace

Runner setup_key(CLI::App& sub) {
  auto o = std::make_shared<KeyOptions>();
  sub.require_subcommand(1);
  sub.footer(
      "Ed25519 key pairs for signed tables (docs/signing.md).\n"
      "Exit: 0 written, 2 usage/I/O (an existing file is never overwritten).");
  CLI::App* generate = sub.add_subcommand(
      "generate", "Write a new key pair: the secret (mode 0600) and the public key file");
  generate->add_option("--secret", o->secret, "Secret key file to create (e.g. sign.key)")
      ->required();
  generate->add_option("--public", o->public_key, "Public key file to create (e.g. sign.pub)")
      ->required();
  return [o] { return run_key_generate(*o); };
}

Runner setup_sign(CLI::App& sub) {
  auto o = std::make_shared<SignOptions>();
  sub.footer(
      "Sign TABLE (a compiled .rgt file, signed or not) with a secret key: the signature covers\n"
      "a domain tag, the envelope header and every byte of the table. TABLE is replaced\n"
      "atomically (or -o OUT is written). A file that is not a loadable table is never signed.\n"
      "Exit: 0 signed, 2 usage/I/O or not a table.");
  sub.add_option("TABLE", o->table, "Compiled table file")->required();
  sub.add_option("--sign-key", o->sign_key, "Secret key file (replaygate key generate)")
      ->required();
  sub.add_option("-o,--output", o->output, "Write the signed table here instead of over TABLE");
  sub.add_option("--expires", o->expires,
                 "Refuse the table after this UTC time (e.g. 2027-01-31T00:00:00Z)");
  return [o] { return run_sign(*o); };
}

Runner setup_trust(CLI::App& sub) {
  auto o = std::make_shared<TrustOptions>();
  sub.require_subcommand(1);
  sub.footer(
      "Rollback state (--trust-state DIR): per policy id, the highest revision and table digest\n"
      "a worker activated. A lower revision, or the same revision with another digest, is\n"
      "refused until an operator resets it here (audited).\n"
      "Exit: 0 done, 1 nothing to reset, 2 usage/I/O or a failed audit append.");
  CLI::App* show = sub.add_subcommand("show", "Print what a policy id's state holds");
  CLI::App* reset = sub.add_subcommand(
      "reset", "Forget a policy id's state, so the next activation of any revision is accepted");
  for (CLI::App* action : {show, reset}) {
    action->add_option("--trust-state", o->dir, "The trust state directory")->required();
    action->add_option("--policy", o->policy, "The policy id (e.g. dlq-replay-gate)")->required();
  }
  reset->add_option("--operator", o->operator_name, "Who resets it")->required();
  reset->add_option("--audit", o->audit, "Audit log the reset is recorded in first")->required();
  reset->add_option("--reason", o->reason, "Why, e.g. the incident or change it belongs to")
      ->required();
  return [o, show] { return show->parsed() ? run_trust_show(*o) : run_trust_reset(*o); };
}

}  // namespace replaygate::cli
