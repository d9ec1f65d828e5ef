// The runtime's public API: load and verify a frozen decision table, then decide(input).
//
// Depends on the C++ standard library only. The table bytes are produced by the compiler's
// lower() (compiler/lower.h); their layout is documented in runtime/table_format.h and
// docs/table-format.md.
//
// Use:
//   replaygate::LoadStatus status;
//   auto table = replaygate::Table::load_file("replay_gate.rgt", &status);  // nullptr on error
//   replaygate::Input in(*table);                   // reusable; allocates once, here
//   uint32_t topic = table->field_index("topic");   // resolve once at start-up
//   in.set_string(topic, "payment.capture");        // no allocation; the view must outlive decide
//   replaygate::Decision d = table->decide(in);     // noexcept, no allocation, no I/O
//   table->verb_name(d.verb); table->rule_name(d); table->reason(d);
//
// Thread safety: a Table is immutable after load and may be shared by any number of threads
// calling decide() concurrently. An Input belongs to one thread at a time.
//
// Fail-closed contract (see ../shared/DESIGN.md): every field is validated before any rule runs.
// A required field that is unset, null, of the wrong type, out of its int bounds or not one of its
// enum values makes the decision the policy default with kind kInvalidInput and reason
// "invalid input: FIELD". So a bad value can never make a guard be skipped and a later row replay.
// A derived field (field_derived()) is not read from the Input: after validation it is computed
// as `lhs op rhs` over two required int fields (docs/table-format.md, derivations), or, for a
// classified enum, from its raw field's value by the classifier's rows (classifiers).
// An operator-only field (FieldInfo::operator_only) is read from the Input like any other, but
// must be set only from an operator's decision, never from the message (see FieldInfo); a
// record-only one (FieldInfo::source == FieldSource::kRecord) only from the operation record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/codes.h"

namespace replaygate {

enum class LoadError : uint8_t {
  kOk = 0,
  kIo,                  // file cannot be opened or read
  kTooLarge,            // over kMaxTableBytes
  kTruncated,           // shorter than its header or than the size the header declares
  kBadMagic,            // not a replaygate table
  kUnsupportedVersion,  // format version this runtime does not read
  kBadChecksum,         // payload does not match the header's checksum
  kBadOffset,           // a section or an index points outside the table
  kMalformed,           // structurally invalid content (bad enum, count, unsorted cuts, ...)
  kIncompatible,        // reload only: fields or verbs differ from the table being served
  // Produced only by replaygate::verify (runtime/verify/signed_table.h, docs/signing.md), never by
  // this library's own loader: a missing, malformed or invalid signature or an unpinned key
  // (kSignature); a table older than, or conflicting with, one already activated (kRollback);
  // a signed table past its expiry (kExpired).
  kSignature,
  kRollback,
  kExpired,
};

struct LoadStatus {
  LoadError error = LoadError::kOk;
  std::string message;  // specific, e.g. "bad checksum: header says 3f.., payload hashes to 9a.."
  bool ok() const { return error == LoadError::kOk; }
};

const char* load_error_name(LoadError error);  // "ok", "io", "too_large", ...

// FieldType, Effect and Op, the format's codes, and their names: runtime/codes.h.
// Who may supply a field's value (policy `source:`; docs/policy-language.md).
enum class FieldSource : uint8_t {
  kLetter = 0,    // letters (messages, dump records, broker records) and the operation record
  kOperator = 1,  // only an operator (`source: operator`)
  kRecord = 2,    // only the durable operation record (`source: record`)
};
const char* field_source_name(FieldSource source);  // "letter", "operator", "record"

enum class DecisionKind : uint8_t {
  kRule = 0,          // a guard or a table row decided; `rule` is its catalog index
  kDefault = 1,       // no rule matched: the policy default
  kInvalidInput = 2,  // validation failed on `invalid_field`: the policy default
};

struct Decision {
  uint32_t verb = 0;  // verb index
  uint32_t rule = 0;  // catalog index when kind == kRule (guards and rows, in order)
  DecisionKind kind = DecisionKind::kDefault;
  uint32_t invalid_field = 0;  // field index when kind == kInvalidInput
};

struct FieldInfo {
  std::string_view name;
  FieldType type;
  bool optional;
  bool empty_means_absent;
  bool has_min, has_max;
  int64_t min, max;
  // Only an operator sets this field (policy `source: operator`). decide() reads it like any
  // other field: it is the caller's job to set it only from its operator channel (a review, a
  // confirmation it recorded), never from the message being decided. The CLI's letter readers
  // and the JSONL binding leave it unset whatever a record says; the C API's generic setters
  // refuse it (rg_input_set_operator_* set it). Input's setters do not check it (see Input).
  // Same as source == kOperator.
  bool operator_only;
  // Who may supply the value. kRecord: only the durable operation record (a review's record
  // file, or the worker's own store); like an operator-only field, decide() reads it like any
  // other, the CLI's letter readers and the JSONL binding leave it unset whatever a letter says,
  // and a caller must never copy it from the message being decided.
  FieldSource source;
};

class Table;

// One input record: a fixed-size slot per field. Not thread-safe; reuse it across decisions.
// Slots are positional: decide() on a table with another field layout reads them as that table's
// fields (missing slots count as unset). Keep one Input per table, or per SharedTable (reloads
// keep the layout). The C API checks this (rg_input carries a layout fingerprint); decide()
// has no error channel and stays one indirect call.
//
// Input is the trusted, low-level layer: its setters accept every field, operator-only ones
// included (FieldInfo::operator_only), because the compiler's analysis enumerates every value
// and the CLI's own operator channel (`review --confirm`) sets them through it. A C++ worker that
// copies a message's fields into an Input must skip operator-only fields itself (check
// table.field(f).operator_only once, when it resolves field indices), or go through the C API
// (runtime/replaygate.h), whose generic setters refuse them (RG_ERR_OPERATOR_ONLY) and whose
// rg_input_set_operator_* calls are the only way to set them.
//
// Layout: 64-byte aligned, with what decide() reads of a policy of at most kInlineFields fields
// first: the size, the states and the cells, so a 6-field policy's Input is two cache lines
// (8 + 8 + 6 x 16 = 112 bytes), the pointers decide() does not read after them (issue 43: a
// caller's batch of Inputs streams through memory; 176 unaligned bytes were three lines).
class alignas(64) Input {
 public:
  // The largest policy whose Input lives entirely inside the object (no heap block): the states
  // and the cells of at most this many fields are one contiguous block of 136 bytes.
  static constexpr uint32_t kInlineFields = 8;

  explicit Input(const Table& table);  // allocates only for more than kInlineFields fields
  Input(const Input& other);
  Input& operator=(const Input& other);
  Input(Input&& other) noexcept;
  Input& operator=(Input&& other) noexcept;
  ~Input() = default;

  // Every field unset (= missing). Inline: for a policy of at most kInlineFields fields, a few
  // fixed-size stores.
  void clear() noexcept {
    if (size_ <= kInlineFields) {
      for (Cell& cell : inline_cells_) cell = Cell{};
      std::memset(inline_states_, 0, sizeof inline_states_);
    } else {
      clear_heap();
    }
  }

  // Setters take a field index from Table::field_index(). An out-of-range index is ignored.
  // Setting a value of the wrong type for the field is allowed: it makes the field invalid.
  // Inline (two stores each): a worker fills an Input per message, so a call per field would
  // cost as much as the decision (docs/benchmarks.md, "Streaming").
  void set_string(uint32_t field, std::string_view value) noexcept {  // view must outlive decide()
    put(field, Slot::State::kString, value.data(), static_cast<int64_t>(value.size()));
  }
  void set_int(uint32_t field, int64_t value) noexcept {
    put(field, Slot::State::kInt, nullptr, value);
  }
  void set_bool(uint32_t field, bool value) noexcept {
    put(field, Slot::State::kBool, nullptr, value ? 1 : 0);
  }
  // explicit null: absent for optional fields
  void set_null(uint32_t field) noexcept { put(field, Slot::State::kNull, nullptr, 0); }
  // present but unreadable (bad JSON type, overflow)
  void set_invalid(uint32_t field) noexcept { put(field, Slot::State::kInvalid, nullptr, 0); }
  // back to unset (= missing), like clear() for one
  void set_unset(uint32_t field) noexcept { put(field, Slot::State::kUnset, nullptr, 0); }

  // One field's value, read back: what was set, as a value (unset for an index past size()).
  struct Slot {
    enum class State : uint8_t { kUnset = 0, kNull, kString, kInt, kBool, kInvalid };
    State state = State::kUnset;
    bool b = false;      // a bool's value (false in the other states)
    int64_t i = 0;       // an int's value; a string's size; a bool's 0 or 1; 0 otherwise
    std::string_view s;  // empty unless kString
  };
  Slot slot(uint32_t field) const noexcept {
    Slot out;
    if (field >= size_) return out;
    out.state = static_cast<Slot::State>(states_[field]);
    out.i = cells_[field].i;
    out.b = out.state == Slot::State::kBool && out.i != 0;
    if (out.state == Slot::State::kString) {
      out.s = std::string_view(cells_[field].bytes, static_cast<size_t>(out.i));
    }
    return out;
  }
  Slot::State state(uint32_t field) const noexcept {
    return field < size_ ? static_cast<Slot::State>(states_[field]) : Slot::State::kUnset;
  }
  size_t size() const noexcept { return size_; }

  // What decide() reads (runtime/decide.cc): per field one 16-byte cell, the string's first
  // byte (null unless kString) and one number: the int's value, the string's size, the bool's 0
  // or 1, 0 in the other states. So decide() reads one number per bool, int or string field.
  struct Cell {
    const char* bytes = nullptr;
    int64_t i = 0;
  };
  const Cell* cells() const noexcept { return cells_; }
  // The fields' states (Slot::State), contiguous, padded with kUnset to a multiple of 8 bytes,
  // so decide() checks eight fields' states in one load. Only the setters and clear() write them.
  const uint8_t* states() const noexcept { return states_; }

 private:
  void put(uint32_t field, Slot::State state, const char* bytes, int64_t i) noexcept {
    if (field >= size_) return;
    cells_[field] = Cell{bytes, i};
    states_[field] = static_cast<uint8_t>(state);
  }
  void clear_heap() noexcept;
  void point_at_storage() noexcept;  // cells_/states_ at the inline arrays or the heap blocks
  void copy_from(const Input& other);

  uint32_t size_ = 0;
  alignas(8) uint8_t inline_states_[kInlineFields] = {};
  Cell inline_cells_[kInlineFields];
  Cell* cells_ = nullptr;
  uint8_t* states_ = nullptr;
  std::unique_ptr<Cell[]> heap_cells_;      // only past kInlineFields
  std::unique_ptr<uint8_t[]> heap_states_;  // only past kInlineFields
  friend struct DecideIndexAccess;          // runtime/decide.cc: the kernel reads the inline block
};

class Table {
 public:
  static constexpr size_t kMaxTableBytes = size_t{1} << 30;  // 1 GiB
  static constexpr uint32_t kNoField = 0xFFFFFFFFu;

  // Reads the whole file into memory and verifies it like load_bytes(). Publishers replace
  // tables by atomic rename, so a reader never maps a file a writer may truncate: a regular file
  // is read into a buffer of the size fstat gives, and one that ends before that size or runs
  // past it (changed in place while being read) is kIo. Pipes and files that report no size are
  // read header first: one whose 80-byte header is not a table's is refused at once (kBadMagic,
  // ...), else exactly the header's total_size bytes are read, plus one to see the end (an early
  // end is kTruncated, more bytes kMalformed "trailing bytes"). A FIFO is opened without waiting
  // for a writer, and one with no writer then reads as empty (kTruncated). Devices (/dev/zero, a
  // terminal) and sockets are kIo before any read. kIo also when the file cannot be opened or read,
  // kTooLarge over kMaxTableBytes; then every error of load_bytes(). nullptr on error, with *status
  // set.
  static std::unique_ptr<Table> load_file(const std::string& path, LoadStatus* status);
  // Copies and verifies `size` bytes: header, version, checksum, every offset and index.
  static std::unique_ptr<Table> load_bytes(const void* data, size_t size, LoadStatus* status);

  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  ~Table();

  // Fails closed; see the header comment. Never allocates, never throws, never does I/O.
  // Inline: one indirect call to the body chosen at load (runtime/internal/decide_index.h, entry).
  Decision decide(const Input& input) const noexcept { return decide_(*impl_, input); }
  // Decides inputs[0, count) into out[0, count): out[i] == decide(inputs[i]), in order. For a
  // batch the caller holds at once (a block of deliveries, a vector of Inputs filled from a
  // dump): while deciding one input it prefetches the string values that decide() reads of the
  // input 8 places ahead, whose memory (a letter's own std::strings, scattered over the heap) is
  // otherwise a cache miss per letter that one decision at a time cannot hide
  // (docs/benchmarks.md, "Two layouts"). Never allocates, never throws, never does I/O.
  void decide_many(const Input* inputs, size_t count, Decision* out) const noexcept;
  // The same over an array of pointers (Inputs not contiguous; prefetched 16 places ahead).
  void decide_many(const Input* const* inputs, size_t count, Decision* out) const noexcept;

  std::string_view policy_id() const noexcept;
  int64_t revision() const noexcept;
  std::string_view description() const noexcept;
  std::string checksum_hex() const;         // 32 hex digits, the header's checksum
  std::string decision_digest_hex() const;  // 32 hex digits, digest of the decision sections
  // 32 hex digits, digest of the provenance section.
  std::string provenance_digest_hex() const;
  uint16_t format_version() const noexcept;

  uint32_t field_count() const noexcept;
  uint32_t field_index(std::string_view name) const noexcept;  // kNoField when unknown
  FieldInfo field(uint32_t index) const noexcept;
  // True when the field is computed after validation (a derived bool, from two int fields, or a
  // classified enum, from its raw field); its value in an Input is ignored. False for an
  // out-of-range index.
  bool field_derived(uint32_t index) const noexcept;
  // The field the policy declares as the letter's idempotency key (`idempotency_key: true`,
  // docs/ledger.md "Which key"): a string field, the value the replay ledger claims. kNoField when
  // the policy declares none (every table compiled before the declaration existed).
  uint32_t idempotency_key_field() const noexcept;

  uint32_t verb_count() const noexcept;
  std::string_view verb_name(uint32_t verb) const noexcept;
  Effect verb_effect(uint32_t verb) const noexcept;
  std::string_view verb_description(uint32_t verb) const noexcept;
  uint32_t default_verb() const noexcept;
  // kNoField when unknown.
  uint32_t verb_index(std::string_view name) const noexcept;
  std::string_view default_reason() const noexcept;

  uint32_t rule_count() const noexcept;                    // catalog size
  std::string_view rule_id(uint32_t rule) const noexcept;  // guard id or row id
  std::string_view rule_reason(uint32_t rule) const noexcept;
  // The catalog entry's verb; the default verb when out of range.
  uint32_t rule_verb(uint32_t rule) const noexcept;
  uint32_t rule_source_line(uint32_t rule) const noexcept;  // provenance; 0 when unknown
  std::string_view source_name() const noexcept;            // provenance: source base name
  std::string_view source_digest() const noexcept;          // provenance: hex digest of source

  // For a decision: "default" unless kind == kRule.
  std::string_view rule_name(const Decision& d) const noexcept;
  // The rule's reason, the default reason, or "invalid input: FIELD" (stored in the table).
  std::string_view reason(const Decision& d) const noexcept;

  // A readable name for an interned value of `field` (see runtime/table_format.h, atoms):
  // "absent", "<other>", "\"payment.capture\"" (quoted, \xNN escapes), an enum value,
  // "true"/"false", "[0, 3)". "?" when the field or atom is out of range.
  std::string atom_label(uint32_t field, uint32_t atom) const;

  // A readable, deterministic listing of everything in the table (`replaygate dump`).
  std::string dump() const;

  struct Impl;

 private:
  explicit Table(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  Decision (*decide_)(const Impl&, const Input&) noexcept;  // impl_->fast.entry
  friend class Input;
  friend struct TableTraceAccess;   // runtime/trace.cc reads the loaded table (read only)
  friend struct DecideIndexAccess;  // runtime/decide.cc: the unindexed path, for tests (read only)
};

}  // namespace replaygate
