/* The replaygate C API: load a frozen decision table, fill an input, decide; hot reload.
 *
 * Plain C (C99 and C++), for workers in any language with a C FFI (Python ctypes, Go cgo, Rust,
 * Java FFM). It wraps the C++ runtime (runtime/table.h, runtime/reload.h); no C++ exception
 * crosses it: every failure is a status code, with a message in an optional rg_error.
 *
 * Ownership: every object created by an rg_*_new / rg_*_load_* / rg_*_open function is owned by
 * the caller and freed with the matching rg_*_free (NULL is accepted and ignored). Strings
 * returned as rg_str point into the table and stay valid until that table is freed (for a table
 * pinned by rg_reader_acquire: until rg_reader_release). They are not NUL-terminated; `data` is
 * never NULL (an empty result points at a static "").
 *
 * Handles are not validated: passing a freed handle, freeing one twice, or passing one handle
 * type where another is expected (an rg_reader as an rg_shared) is undefined behaviour, as for
 * any C library. NULL is the only invalid handle the API detects (RG_ERR_ARGUMENT).
 *
 * Thread safety: an rg_table and an rg_shared may be used by any number of threads at once
 * (rg_shared_reload included). An rg_input and an rg_reader belong to one thread at a time.
 *
 * Fail closed: an unset, null, wrong-typed or out-of-range required field makes the decision the
 * policy default (kind RG_KIND_INVALID_INPUT), never a replay. See docs/embedding.md.
 *
 * Operator-only fields (rg_table_field_operator_only, policy `source: operator`): the generic
 * setters (rg_input_set_string, ..._int, ..._bool, ..._null, ..._invalid and their by-name forms)
 * and rg_decide_columns refuse them with RG_ERR_OPERATOR_ONLY, so a worker that copies a
 * message's fields into the input cannot be made to set one by the message ("operator_confirmed":
 * true proves nothing). Only rg_input_set_operator_string/_int/_bool set them, and only from an
 * operator's own act (a confirmation the worker recorded), never from message content.
 * rgj_decide_lines (bindings/jsonl) ignores them in records.
 * Record-only fields (rg_table_field_source == RG_SOURCE_RECORD): set them (with the generic
 * setters) from the durable operation record only, never from the message; rgj_decide_lines
 * ignores them in records too.
 */
#ifndef REPLAYGATE_H
#define REPLAYGATE_H

#include <stddef.h>
#include <stdint.h>

/* The replaygate version: its one definition. CMakeLists.txt reads the project version from
 * RG_VERSION; rg_version() returns it; the CLI prints it. */
#define RG_VERSION "0.1.0"

#if defined(_WIN32)
#define RG_API
#else
#define RG_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. 1..8 are the table loader's errors (docs/table-format.md, "Load errors"). */
typedef enum rg_status {
  RG_OK = 0,
  RG_ERR_IO = 1,                  /* file cannot be opened or read */
  RG_ERR_TOO_LARGE = 2,           /* over 1 GiB */
  RG_ERR_TRUNCATED = 3,           /* shorter than its header or declared size */
  RG_ERR_BAD_MAGIC = 4,           /* not a replaygate table */
  RG_ERR_UNSUPPORTED_VERSION = 5, /* a format version this runtime does not read */
  RG_ERR_BAD_CHECKSUM = 6,        /* content does not match the header's checksum or digests */
  RG_ERR_BAD_OFFSET = 7,          /* a section or index points outside the table */
  RG_ERR_MALFORMED = 8,           /* structurally invalid content */
  RG_ERR_INCOMPATIBLE = 9,        /* reload: fields or verbs differ from the table being served */
  /* NULL pointer, index out of range, input made for another table (field layout), a field
   * given two columns, max_readers over 4096 */
  RG_ERR_ARGUMENT = 10,
  RG_ERR_UNKNOWN_FIELD = 11,  /* a field name the table does not declare */
  RG_ERR_NO_MEMORY = 12,      /* allocation failed */
  RG_ERR_NO_READER_SLOT = 13, /* rg_reader_new: all max_readers slots are taken */
  /* a generic setter or a column for an operator-only field (rg_table_field_operator_only), or
   * an rg_input_set_operator_* call for a field that is not operator-only */
  RG_ERR_OPERATOR_ONLY = 14,
  /* The verified loads only (runtime/verify/replaygate_verify.h, docs/signing.md): */
  RG_ERR_SIGNATURE =
      15, /* unsigned while keys are pinned, bad envelope or signature, unpinned key */
  RG_ERR_ROLLBACK = 16, /* older than (or conflicting with) a table already activated */
  RG_ERR_EXPIRED = 17   /* a signed table past its expiry */
} rg_status;

/* Optional out-parameter for a readable message; pass NULL when not needed. */
typedef struct rg_error {
  rg_status status;
  char message[256]; /* NUL-terminated, truncated to fit */
} rg_error;

typedef struct rg_str {
  const char* data;
  size_t size;
} rg_str;

typedef enum rg_kind {
  RG_KIND_RULE = 0,         /* a guard or table row decided; `rule` is its catalog index */
  RG_KIND_DEFAULT = 1,      /* no rule matched: the policy default */
  RG_KIND_INVALID_INPUT = 2 /* field `invalid_field` failed validation: the policy default */
} rg_kind;

typedef enum rg_field_type {
  RG_FIELD_STRING = 0,
  RG_FIELD_INT = 1,
  RG_FIELD_BOOL = 2,
  RG_FIELD_ENUM = 3
} rg_field_type;

/* Who may supply a field's value (rg_table_field_source; policy `source:`). */
typedef enum rg_field_source {
  RG_SOURCE_LETTER = 0,   /* letters (messages, records of a dump) may set it */
  RG_SOURCE_OPERATOR = 1, /* only an operator (`source: operator`): rg_table_field_operator_only */
  RG_SOURCE_RECORD = 2    /* only the durable operation record (`source: record`) */
} rg_field_source;

typedef enum rg_effect {
  RG_EFFECT_NONE = 0,
  RG_EFFECT_READ,
  RG_EFFECT_COPY,
  RG_EFFECT_CREATE
} rg_effect;

#define RG_NO_INDEX 0xFFFFFFFFu

typedef struct rg_decision {
  uint32_t verb;           /* verb index: rg_table_verb_name */
  uint32_t rule;           /* catalog index when kind == RG_KIND_RULE */
  uint32_t kind;           /* rg_kind */
  uint32_t invalid_field;  /* field index when kind == RG_KIND_INVALID_INPUT */
  uint32_t effect;         /* rg_effect of the verb */
  char table_checksum[33]; /* 32 hex digits of the deciding table's checksum, NUL-terminated */
} rg_decision;

typedef struct rg_table rg_table;   /* a loaded, verified, immutable table */
typedef struct rg_input rg_input;   /* one record's field values, sized for a table */
typedef struct rg_shared rg_shared; /* a table workers share and that can be reloaded */
typedef struct rg_reader rg_reader; /* one thread's handle on an rg_shared */

/* RG_VERSION ("0.1.0"). Static string. */
RG_API const char* rg_version(void);
/* "ok", "io", ..., "no_reader_slot", "operator_only", "signature", "rollback", "expired";
 * "unknown" for other values. Static. */
RG_API const char* rg_status_name(rg_status status);

/* ---- Tables ---------------------------------------------------------------------------- */

/* Reads and verifies a .rgt file. On success *out owns the table (free with rg_table_free).
 * `path` may be a regular file or a pipe (a FIFO, /dev/stdin): a pipe is read header first, and
 * no further than the size the header gives (plus one byte to see its end); a FIFO is opened
 * without waiting for a writer, and one with no writer reads as empty (RG_ERR_TRUNCATED). A
 * device or any other kind of file is RG_ERR_IO, before any read.
 * Errors: RG_ERR_ARGUMENT (NULL path or out), RG_ERR_IO .. RG_ERR_MALFORMED, RG_ERR_NO_MEMORY;
 * *out is then NULL and *err (if given) holds the message. */
RG_API rg_status rg_table_load_file(const char* path, rg_table** out, rg_error* err);
/* As rg_table_load_file, from `size` bytes (copied; the caller keeps its buffer). */
RG_API rg_status rg_table_load_bytes(const void* data, size_t size, rg_table** out, rg_error* err);
RG_API void rg_table_free(rg_table* table);

/* Accessors. A NULL table or an out-of-range index gives an empty string, 0 or RG_NO_INDEX. */
RG_API rg_str rg_table_policy_id(const rg_table* table);
RG_API int64_t rg_table_revision(const rg_table* table);
RG_API const char* rg_table_checksum(const rg_table* table); /* 32 hex digits, NUL-terminated */
RG_API uint32_t rg_table_field_count(const rg_table* table);
RG_API uint32_t rg_table_field_index(const rg_table* table, const char* name, size_t size);
RG_API rg_str rg_table_field_name(const rg_table* table, uint32_t field);
RG_API uint32_t rg_table_field_type(const rg_table* table, uint32_t field); /* rg_field_type */
/* 1 when only an operator sets the field (policy `source: operator`), else 0 (also for a NULL
 * table or an out-of-range field). Such a field is set with rg_input_set_operator_* only (the
 * generic setters refuse it), from the worker's own operator channel (a confirmation it
 * recorded), never from the message being decided; leave it unset otherwise, so the policy's
 * fail-closed handling of an absent value applies. A message that carries the field's name is
 * not evidence of an operator's decision. */
RG_API int rg_table_field_operator_only(const rg_table* table, uint32_t field);
/* Who may supply the field's value: an rg_field_source, or RG_NO_INDEX for a NULL table or an
 * out-of-range field. RG_SOURCE_RECORD (policy `source: record`): rg_decide reads the field like
 * any other, but the worker must set it only from the durable operation record it keeps (its own
 * store), never from the message being decided; leave it unset otherwise (fail closed). The
 * message's copy of a record fact (a phase, an allowance) is what the record said when the
 * message was produced, or whatever its producer wrote. RG_SOURCE_OPERATOR: as
 * rg_table_field_operator_only. rgj_decide_lines ignores both kinds in records. */
RG_API uint32_t rg_table_field_source(const rg_table* table, uint32_t field);
/* 1 when the field is derived (policy `derived:`, e.g. stale = message_revision <
 * record_revision): rg_decide computes it after validation and never reads its input slot, so no
 * message, record or operator supplies it; 0 otherwise, for a NULL table or an out-of-range
 * field. A worker that keys anything on message fields (an idempotency key) must not pick one. */
RG_API int rg_table_field_derived(const rg_table* table, uint32_t field);
RG_API uint32_t rg_table_verb_count(const rg_table* table);
RG_API uint32_t rg_table_verb_index(const rg_table* table, const char* name, size_t size);
RG_API rg_str rg_table_verb_name(const rg_table* table, uint32_t verb);
RG_API uint32_t rg_table_verb_effect(const rg_table* table, uint32_t verb); /* rg_effect */
/* The deciding rule's id ("default" unless kind is RG_KIND_RULE) and the decision's reason. */
RG_API rg_str rg_table_rule_name(const rg_table* table, const rg_decision* decision);
RG_API rg_str rg_table_reason(const rg_table* table, const rg_decision* decision);

/* ---- Inputs ---------------------------------------------------------------------------- */

/* A reusable input with every field unset, made for `table`'s field layout: it can be decided on
 * `table` and on any table with the same layout (the same field names, types, derived flags and
 * sources (rg_table_field_source) in the same order, which every successful rg_shared_reload
 * keeps); rg_decide refuses it on any other table with RG_ERR_ARGUMENT. So an input made for a
 * table where a field is set from letters, whose slot for it was set with the generic setters,
 * is never decided on a table where that field is `source: operator` or `source: record`.
 * Errors: RG_ERR_ARGUMENT, RG_ERR_NO_MEMORY. */
RG_API rg_status rg_input_new(const rg_table* table, rg_input** out);
RG_API void rg_input_free(rg_input* input);
/* Every field unset (= missing). */
RG_API void rg_input_clear(rg_input* input);

/* Setters by field index (rg_table_field_index, resolved once), for values taken from the
 * message. Strings are copied into the input (it allocates only when a value is longer than any
 * earlier value of that field). A value of the wrong type for the field is accepted and makes the
 * decision fail closed. Errors: RG_ERR_ARGUMENT (NULL input, field out of range, NULL data with
 * size > 0), RG_ERR_OPERATOR_ONLY (an operator-only field: the slot is left as it was, unset
 * after rg_input_clear; see rg_input_set_operator_*), RG_ERR_NO_MEMORY. */
RG_API rg_status rg_input_set_string(rg_input* input, uint32_t field, const char* data,
                                     size_t size);
RG_API rg_status rg_input_set_int(rg_input* input, uint32_t field, int64_t value);
RG_API rg_status rg_input_set_bool(rg_input* input, uint32_t field, int value);
RG_API rg_status rg_input_set_null(rg_input* input, uint32_t field); /* absent if optional */
/* Present but unreadable (a value the caller could not convert): the decision fails closed. */
RG_API rg_status rg_input_set_invalid(rg_input* input, uint32_t field);
/* Missing. Allowed for every field, operator-only ones included (unset is the fail-closed
 * state). */
RG_API rg_status rg_input_unset(rg_input* input, uint32_t field);

/* Setters for operator-only fields (rg_table_field_operator_only), and for nothing else: call
 * them only from an operator's own act (a review, a confirmation the worker recorded for this
 * record), never with a value taken from message content. To leave such a field absent, do not
 * set it (or rg_input_unset). As the generic setters otherwise (a value of the wrong type fails
 * closed; strings are copied). Errors: RG_ERR_ARGUMENT (NULL input, field out of range, NULL data
 * with size > 0), RG_ERR_OPERATOR_ONLY (the field is not operator-only: the slot is left as it
 * was), RG_ERR_NO_MEMORY. */
RG_API rg_status rg_input_set_operator_string(rg_input* input, uint32_t field, const char* data,
                                              size_t size);
RG_API rg_status rg_input_set_operator_int(rg_input* input, uint32_t field, int64_t value);
RG_API rg_status rg_input_set_operator_bool(rg_input* input, uint32_t field, int value);

/* Generic setters by NUL-terminated field name: as rg_input_set_string etc. (operator-only
 * fields are refused), plus RG_ERR_ARGUMENT for a NULL name and RG_ERR_UNKNOWN_FIELD for a name
 * the table does not declare. */
RG_API rg_status rg_input_set_string_by_name(rg_input* input, const char* name, const char* data,
                                             size_t size);
RG_API rg_status rg_input_set_int_by_name(rg_input* input, const char* name, int64_t value);
RG_API rg_status rg_input_set_bool_by_name(rg_input* input, const char* name, int value);
RG_API rg_status rg_input_set_null_by_name(rg_input* input, const char* name);

/* ---- Deciding -------------------------------------------------------------------------- */

/* Decides one input. Never allocates, never blocks. Errors: RG_ERR_ARGUMENT (NULL argument, or
 * an input made for a table with another field layout: a different field count, or a field
 * renamed, retyped, made derived or given another source; see rg_input_new); *out is then
 * untouched. */
RG_API rg_status rg_decide(const rg_table* table, const rg_input* input, rg_decision* out);

/* Batch: columns of values for `rows` records, decided in one call (one FFI crossing for many
 * records). A column gives one field's values for every row; fields without a column are unset.
 * Columns carry message values: a column for an operator-only field is refused
 * (RG_ERR_OPERATOR_ONLY); decide a record an operator acted on with rg_input_set_operator_*.
 *   string column: row i is bytes[offsets[i], offsets[i+1]) (offsets has rows + 1 entries)
 *   int column:    ints[i]
 *   bool column:   bools[i] (0 false, otherwise true)
 *   present (optional, NULL = every row present): per row 1 present, 0 missing, 2 null,
 *   3 invalid (present but unreadable, e.g. a value of the wrong type: fails closed). */
typedef enum rg_column_type {
  RG_COLUMN_STRING = 0,
  RG_COLUMN_INT = 1,
  RG_COLUMN_BOOL = 2
} rg_column_type;
typedef struct rg_column {
  uint32_t field; /* field index */
  uint32_t type;  /* rg_column_type */
  const uint8_t* present;
  const char* bytes;
  const uint64_t* offsets;
  const int64_t* ints;
  const uint8_t* bools;
} rg_column;

/* Writes each row's verb index to verbs[i] (if verbs is not NULL) and its full decision to
 * decisions[i] (if decisions is not NULL); each given array holds `rows` entries (offsets
 * rows + 1). Every column is checked before any row is decided. Errors: RG_ERR_ARGUMENT (NULL
 * table, NULL columns with ncolumns > 0, a field out of range, a field given two columns, an
 * unknown column type, a missing array for the column's type, string offsets that decrease),
 * RG_ERR_OPERATOR_ONLY (a column for an operator-only field), RG_ERR_NO_MEMORY; outputs are then
 * unspecified. Cost: linear in rows (one decision per row, plus a pass over each string column's
 * offsets); with both verbs and decisions NULL the columns are checked and no row is decided. */
RG_API rg_status rg_decide_columns(const rg_table* table, const rg_column* columns, size_t ncolumns,
                                   size_t rows, uint32_t* verbs, rg_decision* decisions);

/* ---- Hot reload ------------------------------------------------------------------------ */

/* Loads `path` into a shareable, reloadable handle with room for `max_readers` reader threads
 * (0 means 64). Errors: as rg_table_load_file, and RG_ERR_ARGUMENT for max_readers over 4096
 * (refused, not clamped: a worker pool sized above it would meet RG_ERR_NO_READER_SLOT late). */
RG_API rg_status rg_shared_open(const char* path, uint32_t max_readers, rg_shared** out,
                                rg_error* err);
/* No rg_reader of this handle may be alive. */
RG_API void rg_shared_free(rg_shared* shared);
/* Reads and verifies `path` completely, then swaps it in atomically; readers finish in-flight
 * decisions on the old table, which is freed once no reader pins it. On error the old table
 * keeps serving: RG_ERR_IO .. RG_ERR_MALFORMED, RG_ERR_INCOMPATIBLE (fields or verbs differ:
 * names, types or order), RG_ERR_ARGUMENT, RG_ERR_NO_MEMORY. Thread-safe; reloads serialize. */
RG_API rg_status rg_shared_reload(rg_shared* shared, const char* path, rg_error* err);
/* Number of successful reloads since rg_shared_open. */
RG_API uint64_t rg_shared_generation(const rg_shared* shared);

/* Claims one reader slot for the calling thread. Errors: RG_ERR_ARGUMENT, RG_ERR_NO_READER_SLOT,
 * RG_ERR_NO_MEMORY. Free it (rg_reader_free) before the rg_shared. */
RG_API rg_status rg_reader_new(rg_shared* shared, rg_reader** out);
RG_API void rg_reader_free(rg_reader* reader);
/* An input sized for the handle's tables (all reloads keep the same fields). */
RG_API rg_status rg_reader_input_new(rg_reader* reader, rg_input** out);
/* Decides on the current table without taking a lock or allocating; out->table_checksum names
 * the table that decided. Errors: as rg_decide. */
RG_API rg_status rg_reader_decide(rg_reader* reader, const rg_input* input, rg_decision* out);
/* As rg_decide_columns, every row on the same table. */
RG_API rg_status rg_reader_decide_columns(rg_reader* reader, const rg_column* columns,
                                          size_t ncolumns, size_t rows, uint32_t* verbs,
                                          rg_decision* decisions);
/* Pins the current table so its strings (rule names, reasons) stay valid; *out is valid until
 * rg_reader_release. While pinned, rg_reader_decide uses the pinned table. Acquiring twice
 * without a release keeps the first pin. Errors: RG_ERR_ARGUMENT. */
RG_API rg_status rg_reader_acquire(rg_reader* reader, const rg_table** out);
RG_API void rg_reader_release(rg_reader* reader);

#ifdef __cplusplus
}
#endif

#endif /* REPLAYGATE_H */
