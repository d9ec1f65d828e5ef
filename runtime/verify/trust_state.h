// Rollback protection (docs/signing.md, "Rollback"): per policy id, the highest revision and the
// table digest a worker activated, kept durably in a directory (--trust-state DIR).
//
// One file per policy id, DIR/policy-<hex of the id>.state, four lines:
//   replaygate-trust-state v1 / policy-hex <hex> / revision <decimal> / digest <64 hex>
// written to a temporary file, fsynced, renamed over the old one and the directory fsynced, while
// holding an exclusive flock on DIR/.lock (so processes sharing DIR check and write one at a
// time). A corrupt or unreadable state file refuses activation (fail closed) until an operator
// resets it (`replaygate trust reset`, audited).
//
// Thread safety: every function may be called from any thread; concurrent calls on one DIR
// serialize on the lock file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/table.h"

namespace replaygate::verify {

struct TrustRecord {
  std::string policy_id;
  int64_t revision = 0;
  std::string digest;  // 64 hex digits: BLAKE2b-256 of the table's bytes (signed_table.h)
};

// Activates (policy_id, revision, digest) in `dir` (created mode 0700 when missing): refuses with
// kRollback a revision lower than the recorded one ("rollback: policy P revision 3 is older than
// revision 5, activated before (digest ...)"), and the recorded revision with another digest
// ("equivocation: ..."); records a higher revision (or the first one) before returning true.
// kIo when the state cannot be read, parsed or written.
// A directory may be bound to one policy id (DIR/binding: `replaygate-trust-binding v1` /
// `policy-hex <hex>`): then activating any other policy id there is refused with kRollback
// ("policy binding: ..."), before its record is read or written. `bind_to` (not empty: it must be
// `policy_id`) records that binding on the first activation, as a gate does at start
// (docs/signing.md, "Policy binding").
bool activate(const std::string& dir, std::string_view policy_id, int64_t revision,
              const std::string& digest, LoadStatus* status, std::string_view bind_to = {});

// Binds `dir` to `policy_id` unless it is bound already: true when it is (now) bound to it,
// kRollback when it is bound to another, kIo when the binding cannot be read or written.
bool bind_policy(const std::string& dir, std::string_view policy_id, LoadStatus* status);

// The policy id `dir` is bound to: true with *bound empty when it is bound to none.
bool read_binding(const std::string& dir, std::string* bound, std::string* error);

// Reads the record for `policy_id`: true with *found false when there is none.
bool read_record(const std::string& dir, std::string_view policy_id, TrustRecord* out, bool* found,
                 std::string* error);

// Removes the record for `policy_id` (so the next activation of any revision is accepted), and
// the directory's binding when it names `policy_id`; *previous gets what it held (found false:
// there was none). Durable before it returns.
bool reset(const std::string& dir, std::string_view policy_id, TrustRecord* previous, bool* found,
           std::string* error);

}  // namespace replaygate::verify
