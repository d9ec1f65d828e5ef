/* Batch decisions straight from JSON Lines bytes: the one-call-per-batch path for workers in
 * languages whose per-record work costs more than a decision (Python, Ruby, ...).
 *
 * A separate shared library (libreplaygate_jsonl.so) because it parses JSON with simdjson and the
 * CLI's strict `letters` reader (inputs/letters.h), while the runtime depends on the standard
 * library only. It carries its own copy of the runtime: an rgj_gate is a hot-reloadable table
 * (runtime/reload.h) and does not mix with rg_table handles. Status codes and rg_error are those
 * of runtime/replaygate.h.
 *
 * Thread safety: an rgj_gate may be used by any number of threads at once (each call claims a
 * reader slot for its duration; at most 64 concurrent calls, else RG_ERR_NO_READER_SLOT).
 *
 * Operator-only fields (rg_table_field_operator_only, policy `source: operator`): a record never
 * sets them (rgj_decide_lines leaves them unset whatever the line says), and this API has no way
 * to pass an operator's value: a record an operator acted on is decided through the C API
 * (runtime/replaygate.h, rg_input_set_operator_*).
 */
#ifndef REPLAYGATE_JSONL_H
#define REPLAYGATE_JSONL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/replaygate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rgj_gate rgj_gate;

/* Loads `path`. Errors: as rg_table_load_file. Free with rgj_free. */
RG_API rg_status rgj_open(const char* path, rgj_gate** out, rg_error* err);
/* As rgj_open, verified as rg_shared_open_verified (runtime/verify/replaygate_verify.h) is:
 * `nkeys` pinned public key files (with any, a signature is required; flags
 * RG_TRUST_REQUIRE_SIGNED, 1, refuses every table while none is pinned) and, when `trust_state`
 * is not NULL, rollback state. Every later rgj_reload of the gate is verified the same way, and a
 * refused reload keeps the old table serving. Errors: those of rg_shared_open_verified
 * (RG_ERR_SIGNATURE, RG_ERR_ROLLBACK, RG_ERR_EXPIRED, RG_ERR_ARGUMENT for a key file that cannot
 * be read or an unknown flag) and of rgj_open. */
RG_API rg_status rgj_open_verified(const char* path, const char* const* trusted_keys, size_t nkeys,
                                   const char* trust_state, uint32_t flags, rgj_gate** out,
                                   rg_error* err);
RG_API void rgj_free(rgj_gate* gate);
/* As rg_shared_reload: verified completely, swapped atomically, old table kept on error. */
RG_API rg_status rgj_reload(rgj_gate* gate, const char* path, rg_error* err);
/* Verb names and count (stable across reloads: a reload must keep the verbs). */
RG_API uint32_t rgj_verb_count(const rgj_gate* gate);
RG_API rg_str rgj_verb_name(const rgj_gate* gate, uint32_t verb);
/* What the run-wide rules of `replaygate decide` (docs/cli.md, "Dump semantics") need to know of
 * the table the gate serves now, all read from that one table: effects[v] receives verb v's
 * rg_effect for v < min(capacity, rgj_verb_count), *default_verb (if not NULL) the policy
 * default's verb index, checksum_out (33 bytes, NUL-terminated, if not NULL) the table's
 * checksum. A reload keeps the verb names and their order but may change an effect or the
 * default: these facts belong to the batch whose rgj_decide_lines checksum equals checksum_out.
 * Errors: RG_ERR_ARGUMENT (NULL gate, NULL effects with capacity > 0), RG_ERR_NO_READER_SLOT,
 * RG_ERR_NO_MEMORY. */
RG_API rg_status rgj_verb_effects(rgj_gate* gate, uint32_t* effects, size_t capacity,
                                  uint32_t* default_verb, char* checksum_out);

/* Decides every line of buf[0, size) as a `letters` record (docs/cli.md), all on one table, whose
 * checksum is copied to checksum_out (33 bytes, NUL-terminated) if not NULL. Lines end at '\n' (a
 * '\r' before it is dropped); a last line without '\n' is a line, and an empty buffer has none,
 * so a buffer of N lines yields N verbs, exactly one per line in order, like `replaygate decide`
 * prints one output line per input line. verbs[i] receives the verb index of the i-th line;
 * *count the number of lines decided (at most `capacity`: the rest of the buffer is not read,
 * *consumed says how many bytes were, always whole lines when capacity stops the call).
 *
 * The buffer must hold whole lines: its end is a line's end. A streaming reader that hands over
 * each read() chunk as it comes would have a line cut in two decided as two (invalid) lines, and
 * every later verb shifted by one; keep the bytes after the chunk's last '\n' for the next call.
 *
 * *invalid (if not NULL) counts the lines that `replaygate decide` marks "invalid": true, so both
 * report the same count for the same bytes: a line that is not a valid record (blank or
 * whitespace only, bad JSON, unknown or duplicate key, over 1 MiB), and a record whose field
 * value fails validation (a wrong type, null, out of bounds or not an enum value in a required
 * field: the decision's kind is invalid input). Both get the policy default (fail closed); no
 * line is ever skipped. Every line takes at least one byte, so capacity >= size always suffices
 * for one call. A record's value for an operator-only field (rg_table_field_operator_only) is
 * ignored: the field stays unset (the record stays valid), so a message cannot set what only an
 * operator may; so is its value for a record-only field (rg_table_field_source ==
 * RG_SOURCE_RECORD: only the operation record supplies it; a required one left unset makes the
 * input invalid, the default). The caller owns buf, verbs and
 * checksum_out; nothing is kept after the call. Errors: RG_ERR_ARGUMENT (NULL gate, buffer,
 * verbs, count), RG_ERR_NO_READER_SLOT, RG_ERR_NO_MEMORY. */
RG_API rg_status rgj_decide_lines(rgj_gate* gate, const char* buf, size_t size, uint32_t* verbs,
                                  size_t capacity, size_t* count, size_t* invalid, size_t* consumed,
                                  char* checksum_out);

#ifdef __cplusplus
}
#endif

#endif /* REPLAYGATE_JSONL_H */
