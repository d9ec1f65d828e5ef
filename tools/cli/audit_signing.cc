// --audit-sign-key / --checkpoint-every: read once, handed to every audit append.
#include "tools/cli/audit_signing.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>

#include "common/escape.h"
#include "tools/cli/options.h"

namespace replaygate::cli {

void add_audit_sign_options(CLI::App& sub, AuditSignFlags* flags) {
  sub.add_option("--audit-sign-key", flags->key_path,
                 "Secret key file (replaygate key generate): sign the audit log with checkpoint "
                 "entries, so 'audit verify --trusted-key' detects a rewritten log");
  sub.add_option("--checkpoint-every", flags->every,
                 "With --audit-sign-key: a checkpoint after every N entries (default 1000), and "
                 "one at the end of each append (gate: of the run)");
  sub.add_flag("--accept-repairs", flags->accept_repairs,
               "With --audit-sign-key: sign over the log's repair entries after its last "
               "checkpoint of this key (checked by you); without it such a log is refused");
}

bool read_audit_signing(const AuditSignFlags& flags, const char* command, AuditSigning* out) {
  const auto usage = [command](const std::string& why) {
    std::fprintf(stderr, "replaygate: error: %s\nRun 'replaygate %s --help' for usage.\n",
                 why.c_str(), command);
    return false;
  };
  if (flags.key_path.empty()) {
    if (!flags.every.empty()) {
      return usage("--checkpoint-every needs --audit-sign-key KEY (the key that signs them)");
    }
    if (flags.accept_repairs) {
      return usage(
          "--accept-repairs needs --audit-sign-key KEY (only a signing writer refuses "
          "repairs; 'audit verify --accept-repairs' accepts them when checking)");
    }
    return true;
  }
  uint64_t every = 1000;
  const CountOption option{"--checkpoint-every", 1, UINT64_MAX, ""};
  if (!flags.every.empty() && !parse_count(option, flags.every, &every)) {
    return usage(count_error(option, flags.every));
  }
  std::string error;
  if (!audit::open_signing(flags.key_path, every, flags.accept_repairs, out, &error)) {
    std::fprintf(stderr, "replaygate: error: --audit-sign-key: %s\n",
                 escape_control(error).c_str());
    return false;
  }
  return true;
}

}  // namespace replaygate::cli
