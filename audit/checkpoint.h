// Signed checkpoints of the audit trail (issue 22): an entry that signs the log so far.
//
// The XXH3 chain (audit_log.h) catches an edited, removed or reordered line, but whoever can
// rewrite the whole file can rebuild it. A checkpoint entry closes that gap with a key the writer
// holds and the file does not:
//   {"chain_digest":"<64 hex>","key_id":"<32 hex>","kind":"checkpoint","prev":"<32 hex>",
//    "seq":N,"signature":"<128 hex>","time":"YYYY-MM-DDTHH:MM:SSZ"}
// chain_digest is BLAKE2b-256 (libsodium crypto_generichash) of every byte of the log before the
// checkpoint's line, so it vouches for all of them (a cryptographic hash: XXH3 is not one);
// key_id names the Ed25519 key (runtime/verify/keys.h) and signature is Ed25519 (pure, RFC 8032,
// crypto_sign_detached) over checkpoint_message(): a domain tag, then seq, prev, time, key_id and
// chain_digest, one per line. The tag keeps a checkpoint signature from ever being a table
// signature (docs/signing.md), even under one key.
//
// Writers (decide --audit, review --confirm, audit result, the gate) given --audit-sign-key add
// one after every `every` entries since the last checkpoint and one at the end of every append, in
// the same write(2), so a log written only by signing writers always ends with one. Verify without
// keys checks each checkpoint's shape and chain_digest (any edit before it is then a problem on
// its line); with pinned keys, check_checkpoints() also checks each signature and says which
// entries a valid checkpoint covers. What no key can detect in the file alone: a log cut back to
// just after a checkpoint, or rewritten whole with its checkpoints dropped. The anchor closes
// that: the last checkpoint (seq, head, chain_digest) of each log is recorded outside the file
// (the gate keeps it in the replay ledger, docs/signing.md), and a signing writer refuses a log
// that no longer holds it (signing_refusal()).
//
// Thread safety: no shared state; every function may be called from any thread.
#pragma once

#include <sodium.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/verify/keys.h"

namespace replaygate::audit {

struct RepairSeen;
struct VerifyReport;

// A line a log must still hold: the last checkpoint recorded for it outside the file (the ledger
// anchor) or the last one a running writer saw or wrote; a writer that checkpoints per block
// anchors its last entry instead (CheckpointSigner::end_each_append). seq 0: none.
struct Anchor {
  uint64_t seq = 0;
  std::string head;          // XXH3-128 hex of the line (the next entry's prev)
  std::string chain_digest;  // BLAKE2b-256 of the bytes before it (a checkpoint's chain_digest)
};

// What a writer needs to add checkpoints: the key (not owned; it must outlive the append), how
// many entries may come between two checkpoints (>= 1), the anchor the log must still hold, and
// whether repairs after the writer's last checkpoint were accepted (--accept-repairs).
struct CheckpointSigner {
  CheckpointSigner() = default;
  CheckpointSigner(const verify::SecretKey* k, uint64_t n) : key(k), every(n) {}
  const verify::SecretKey* key = nullptr;
  uint64_t every = 1000;
  Anchor anchor;
  bool accept_repairs = false;
  // Whether every append ends with a checkpoint (true: a command's one append). A long-running
  // writer (the gate) sets false: checkpoints after every `every` entries and at Appender::close(),
  // and the anchor it records after each append (AppendResult::last) covers the entries between.
  bool end_each_append = true;
};

// BLAKE2b-256 of a byte stream fed in order; hex() may be called at any point and feeding may go
// on afterwards (the digest of every byte fed so far).
class ChainDigest {
 public:
  ChainDigest();
  void update(std::string_view bytes);
  std::string hex() const;  // 64 lowercase hex digits

 private:
  crypto_generichash_state state_;
};

// The bytes a checkpoint's signature covers (format above).
std::string checkpoint_message(uint64_t seq, std::string_view prev, std::string_view time,
                               std::string_view key_id, std::string_view chain_digest);

// The Ed25519 signature (128 lowercase hex digits) of `message` (checkpoint_message()) by `key`.
std::string checkpoint_signature(const verify::SecretKey& key, std::string_view message);

// A checkpoint verify found with a matching chain_digest (VerifyReport::checkpoints).
struct CheckpointSeen {
  uint64_t line = 0, seq = 0;
  uint64_t entries_before = 0;  // valid entries on the lines before it
  std::string key_id, time, prev, chain_digest, signature;
  std::string head;  // XXH3-128 hex of its line
};

// True when `c`'s signature verifies under `key`.
bool checkpoint_signed_by(const CheckpointSeen& c, const verify::PublicKey& key);

// The public half of `key` (path: "the --audit-sign-key key").
verify::PublicKey public_half(const verify::SecretKey& key);

// Why a writer holding `key` must not sign on after a log that verifies with `report` (every
// problem-free log passes verify_bytes() first), "" when it may: a checkpoint that names `key`
// but whose signature does not verify (forged or edited); `anchor` (seq > 0) not found again
// among the checkpoints (none with its seq, head and chain_digest: the log was cut back or
// rebuilt below it; audit_log.cc first looks for an anchored entry that is not a checkpoint),
// unless the log holds a repair and `accept_repairs` (a damaged log repaired and accepted);
// a repair entry after the last checkpoint `key` signed (or any, when it signed none) unless
// `accept_repairs`. Checkpoints under other keys are not checked here (the writer does not hold
// them; 'audit verify --trusted-key' does).
std::string signing_refusal(const VerifyReport& report, const verify::SecretKey& key,
                            const Anchor& anchor, bool accept_repairs);

// The name of the log at `path` for its anchor in the ledger: "HOST:/absolute/path" (the host
// name and the path made absolute and normal, symbolic links resolved when it exists).
std::string anchor_name(const std::string& path);

// What the signed checkpoints of a log vouch for, against pinned keys.
struct Coverage {
  // "line N: ..." for a checkpoint whose key is not pinned or whose signature does not verify,
  // "no checkpoint ..." when none is valid, and "lines A-B: ..." for the entries after the last
  // valid one (a writer with a signing key never leaves any). Empty: every entry is covered.
  std::vector<std::string> problems;
  uint64_t valid = 0;              // checkpoints whose signature verifies under a pinned key
  uint64_t covered_line = 0;       // the last valid checkpoint's line: lines 1..it are covered
  uint64_t covered_entries = 0;    // entries on those lines, the checkpoints included
  uint64_t uncovered_entries = 0;  // valid entries after it
  std::string covered_key, covered_time;  // the key file that verified it, and its time
};

// Checks every checkpoint of `report` (verify_bytes() of a log) against `keys` (pinned; a
// checkpoint names its key by key_id) and says what the valid ones cover. A log with problems of
// its own still gets its checkpoints checked; callers report both.
Coverage check_checkpoints(const VerifyReport& report, const std::vector<verify::PublicKey>& keys);

// The last checkpoint of `report` before line `line` (its digest matched), nullptr when none.
const CheckpointSeen* checkpoint_before(const VerifyReport& report, uint64_t line);

// What a repair entry follows, in words for `audit verify`: the last checkpoint before it, and
// whether its signature verifies under one of `keys` (not checked when none are given).
std::string describe_checkpoint_before(const VerifyReport& report, const RepairSeen& repair,
                                       const std::vector<verify::PublicKey>& keys);

}  // namespace replaygate::audit
