// replaygate::verify: load a table with a set of pinned Ed25519 public keys, sign one, and
// activate one against rollback state. Links libsodium; the runtime library it builds on
// (runtime/table.h) stays standard-library only. Layout and rules: docs/signing.md and
// format::SignedEnvelope (runtime/table_format.h).
//
// The one rule: the pinned keys decide, never the file. With keys pinned a signature is
// required, and it is checked over the domain tag, the envelope header and every payload byte
// before anything in the payload is parsed; an unsigned, truncated, padded, re-signed-by-another-
// key or otherwise altered table is refused (LoadError::kSignature, with the reason). With no key
// pinned a signed table's envelope is checked for shape and unwrapped, its signature unchecked
// (Verified::checked false), and an unsigned table loads as it always did; unless the caller
// requires signing (TrustOptions::require_signed), which refuses everything while no key is
// pinned.
//
// Use:
//   verify::TrustOptions trust;
//   std::string error;
//   trust.keys.emplace_back();
//   if (!verify::read_public_key("ops.pub", &trust.keys.back(), &error)) ...;
//   trust.trust_state = "/var/lib/gate/trust";   // a worker that acts: rollback protection
//   LoadStatus status;
//   verify::Verified info;
//   auto table = verify::load_table_file("gate.rgt", trust, &info, &status);  // nullptr on error
//
// Thread safety: the functions keep no state; TrustOptions is read only. Activation of one trust
// state directory from several threads or processes serializes on its lock (trust_state.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/reload.h"
#include "runtime/table.h"
#include "runtime/verify/keys.h"

namespace replaygate::verify {

struct TrustOptions {
  std::vector<PublicKey> keys;  // pinned; any of them may have signed (rotation)
  // Refuse every table while `keys` is empty: a worker that must never run an unsigned table
  // says so here, so a configuration that lost its keys fails closed instead of loading anything.
  bool require_signed = false;
  // Rollback protection (trust_state.h): when not empty, a loaded table is activated there (its
  // revision and digest checked and recorded) before it is returned. Leave empty for read-only
  // tools, which never refuse an older table as a rollback.
  std::string trust_state;
  // The policy id a worker is bound to (docs/signing.md, "Policy binding"): when not empty, a
  // table of any other policy id is refused (kRollback) before activation, and the first
  // activation in `trust_state` records the binding there, so a restart with another policy's
  // table is refused too. A reload never changes the policy a worker runs.
  std::string policy_id;
  int64_t now = -1;  // Unix seconds for the expiry check; -1: the current time
};

// What the envelope said, for messages and `replaygate verify`.
struct Verified {
  bool is_signed = false;  // the file is a signed envelope
  bool checked = false;    // its signature was checked against a pinned key (and holds)
  KeyId key_id{};          // the signer's key id (is_signed)
  std::string key_path;    // the pinned key file that verified it (checked)
  int64_t expires_at = 0;  // 0: never
  std::string digest;      // 64 hex digits: BLAKE2b-256 of the payload (the table's bytes)
};

// Checks the envelope of `size` bytes (a signed or unsigned table) against `trust` without
// parsing the payload: shape, key, signature, expiry. On success *payload / *payload_size name
// the table's bytes inside `data` and *info is filled. False with *status (kSignature, kExpired,
// kTooLarge) otherwise. Does not load the table or touch trust state.
bool open_envelope(const uint8_t* data, size_t size, const TrustOptions& trust, Verified* info,
                   const uint8_t** payload, size_t* payload_size, LoadStatus* status);

// Reads `path` once into memory (a regular file or a pipe, like Table::load_file; a device or
// socket is kIo), then as load_table_bytes(). The bytes checked are the bytes loaded: a file
// replaced after the read changes nothing.
std::unique_ptr<Table> load_table_file(const std::string& path, const TrustOptions& trust,
                                       Verified* info, LoadStatus* status);
// open_envelope(), then Table::load_bytes() of the payload, then (trust.trust_state not empty)
// activate() of its policy id, revision and digest. nullptr with *status set on any error;
// *info (may be null) is filled as far as the envelope was read.
std::unique_ptr<Table> load_table_bytes(const void* data, size_t size, const TrustOptions& trust,
                                        Verified* info, LoadStatus* status);

// Reads `path` whole into *bytes: a regular file (at most Table::kMaxTableBytes plus an envelope;
// kIo if it changes while read), or a stream (a pipe, /dev/stdin) read only as far as its header
// says and one byte past it (so `cat /dev/zero |` is refused after 8 bytes, and endless bytes after
// a table are "trailing bytes"), as Table::load_file reads one. Devices and sockets are kIo before
// any read. False with *status set on I/O errors, kTooLarge, or trailing bytes on a stream.
bool read_table_file(const std::string& path, std::vector<uint8_t>* bytes, LoadStatus* status);

// Signs `table`: an unsigned table, or a signed one whose envelope is replaced (re-signing keeps
// the payload). The payload must load (Table::load_bytes): a file that is not a table is never
// signed. expires_at: Unix seconds, 0 for never. False with *error on failure.
bool sign_table(const uint8_t* table, size_t size, const SecretKey& key, int64_t expires_at,
                std::vector<uint8_t>* out, std::string* error);

// A SharedTable whose every reload goes through load_table_bytes() with `trust` (its trust state,
// if any, is written in admit(), after the compatibility check and before the swap). The
// initial table is loaded and activated the same way. nullptr with *status on error.
std::unique_ptr<SharedTable> open_shared(const std::string& path, const TrustOptions& trust,
                                         uint32_t max_readers, LoadStatus* status);

// The trust options of the C APIs' verified loads (replaygate_verify.h, replaygate_jsonl.h): reads
// the `nkeys` public key files `keys`, `trust_state` (NULL: none) and `flags` (only
// kRequireSignedFlag, which is RG_TRUST_REQUIRE_SIGNED). False with *error for NULL keys with
// nkeys > 0, a NULL key path, an unknown flag, or a key file read_public_key() refuses.
inline constexpr uint32_t kRequireSignedFlag = 1u;
bool trust_options_from(const char* const* keys, size_t nkeys, const char* trust_state,
                        uint32_t flags, TrustOptions* out, std::string* error);

// "2026-12-03T09:00:00Z" for Unix seconds.
std::string utc_text(int64_t seconds);

}  // namespace replaygate::verify
