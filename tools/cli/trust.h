// The CLI's table loading with pinned keys (docs/signing.md): the --trusted-key, --require-signed
// and --trust-state options every command that loads a table takes, and the one load function
// they all go through (replaygate::verify).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/table.h"
#include "runtime/verify/signed_table.h"

namespace CLI {
class App;
}

namespace replaygate::cli {

struct TrustFlags {
  std::vector<std::string> trusted_keys;  // --trusted-key, repeatable (rotation)
  bool require_signed = false;            // --require-signed
  std::string trust_state;                // --trust-state DIR (commands that act only)
  std::string policy_id;  // the bound policy (the gate's --policy-id or first table); not an option
                          // here
  bool any() const { return !trusted_keys.empty() || require_signed || !trust_state.empty(); }
};

// Adds --trusted-key and --require-signed to `sub`, and --trust-state when the command acts on its
// decisions (`acting`: decide, review). Read-only commands (dump, diff, explain, graph, verify)
// verify signatures but never keep rollback state.
void add_trust_options(CLI::App& sub, TrustFlags* flags, bool acting);

// Reads the pinned keys of `flags` into *trust. False with a message on stderr (a key file that
// cannot be read or is not a public key).
bool read_trust(const TrustFlags& flags, verify::TrustOptions* trust);

// Loads the table at `path` through verify::load_table_file with `flags`' keys, requirement and
// rollback state. Returns 0 with *table set (and *info, when given); 2 with the reason on stderr
// ("replaygate: cannot load table PATH: signature: ...") and *table null, also for an unreadable
// key file. With no key pinned and no requirement, a table loads as Table::load_file would (a
// signed one unwrapped, its signature unchecked). `failure`, when given, gets the failed load's
// status (left ok for a key file problem).
int load_table_trusted(const std::string& path, const TrustFlags& flags,
                       std::unique_ptr<Table>* table, verify::Verified* info = nullptr,
                       LoadStatus* failure = nullptr);

// "replaygate: cannot load table PATH: NAME: MESSAGE" for a failed load.
std::string describe_load_failure(const std::string& path, const LoadStatus& status);

// "2027-01-01T00:00:00Z" (RFC 3339, UTC, 'Z') as Unix seconds; false for anything else or a time
// before 1970.
bool parse_utc_time(const std::string& text, int64_t* seconds);

}  // namespace replaygate::cli
