/* The replaygate C API's verified loads: a table or a shared table loaded with pinned Ed25519
 * public keys and, for a worker that acts on its decisions, rollback protection (docs/signing.md).
 *
 * Implemented by replaygate::verify (libreplaygate_verify.so, which carries the whole C API of
 * runtime/replaygate.h too, and links libsodium; or the static replaygate::verify). Every rule
 * of replaygate.h holds: ownership, thread safety, rg_error. The handles are the ordinary
 * rg_table and rg_shared: free them with rg_table_free and rg_shared_free.
 *
 * Pinned keys decide, never the file: with one or more keys a signature is required, and an
 * unsigned, truncated, padded, altered or other-key-signed table is RG_ERR_SIGNATURE; with none,
 * tables load as rg_table_load_file would (a signed one unwrapped, its signature unchecked),
 * unless flags has RG_TRUST_REQUIRE_SIGNED, which then refuses every table. A shared table opened
 * here verifies every rg_shared_reload the same way, with the keys read at open (rotate by adding
 * the new key before signing with it). */
#ifndef REPLAYGATE_VERIFY_H
#define REPLAYGATE_VERIFY_H

#include "runtime/replaygate.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Refuse every table while no key is pinned (a worker that must never run an unsigned table). */
#define RG_TRUST_REQUIRE_SIGNED 1u

/* Reads the `nkeys` public key files `trusted_keys` (replaygate key generate), then reads `path`
 * once into memory, checks its signature and loads it. When `trust_state` is not NULL it names
 * a directory of rollback state: the table's policy id, revision and digest are checked there
 * (RG_ERR_ROLLBACK for a lower revision than one activated before, or the same revision with
 * another digest) and recorded (fsynced) before the call returns; pass NULL for tools that only
 * read a table. Errors: RG_ERR_ARGUMENT (NULL path or out, NULL trusted_keys with nkeys > 0, an
 * unknown flag, a key file that cannot be read or is not a public key: the message says which),
 * RG_ERR_SIGNATURE, RG_ERR_EXPIRED, RG_ERR_ROLLBACK, RG_ERR_IO (also trust state I/O), and every
 * error of rg_table_load_file. *out is NULL on error. */
RG_API rg_status rg_table_load_verified(const char* path, const char* const* trusted_keys,
                                        size_t nkeys, const char* trust_state, uint32_t flags,
                                        rg_table** out, rg_error* err);

/* As rg_shared_open, verified like rg_table_load_verified; every later rg_shared_reload on the
 * handle is verified with the same keys, flags and trust state (the state is written after the
 * compatibility check, before the swap; a refused reload keeps the old table serving). */
RG_API rg_status rg_shared_open_verified(const char* path, const char* const* trusted_keys,
                                         size_t nkeys, const char* trust_state, uint32_t flags,
                                         uint32_t max_readers, rg_shared** out, rg_error* err);

#ifdef __cplusplus
}
#endif

#endif /* REPLAYGATE_VERIFY_H */
