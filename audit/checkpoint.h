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
// entries a valid checkpoint covers. What no key can detect: a log cut back to just after a
// checkpoint (keep the hash the last append printed, or a copy, for that).
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

struct VerifyReport;

// What a writer needs to add checkpoints: the key (not owned; it must outlive the append) and
// how many entries may come between two checkpoints (>= 1).
struct CheckpointSigner {
  const verify::SecretKey* key = nullptr;
  uint64_t every = 1000;
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
};

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

}  // namespace replaygate::audit
