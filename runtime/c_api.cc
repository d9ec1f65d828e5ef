// The C API (runtime/replaygate.h) over Table and SharedTable. No exception crosses it: when the
// runtime is built with exceptions, allocation failures become RG_ERR_NO_MEMORY.
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/c_api_handles.h"
#include "runtime/reload.h"
#include "runtime/replaygate.h"
#include "runtime/table.h"

using replaygate::Decision;
using replaygate::Input;
using replaygate::LoadError;
using replaygate::LoadStatus;
using replaygate::SharedTable;
using replaygate::Table;
using Entry = SharedTable::Entry;

// rg_shared_open's limit (SharedTable itself clamps; the C API refuses instead of silently giving
// fewer slots than asked for).
constexpr uint32_t kMaxReaders = 4096;

// rg_table is an incomplete C type; its pointers are SharedTable::Entry pointers, so a table
// pinned by a reader and a standalone table are the same thing to every accessor.
struct rg_input {
  Input input;
  std::vector<std::string> strings;  // owned copies of string values, one buffer per field
  std::vector<std::string> names;    // field names, for the by-name setters
  // Per field: 1 when only an operator sets it (FieldInfo::operator_only). The generic setters
  // refuse such a field and rg_input_set_operator_* accept only such fields, so the two channels
  // cannot be mixed up. Kept here, not looked up in a table, since an input outlives reloads
  // (which keep the markers: SharedTable::incompatibility).
  std::vector<uint8_t> operator_only;
  // The layout fingerprint of the table it was made for (Entry::layout): deciding it on a table
  // with another layout (same field count, a field renamed, retyped or given another source) is
  // RG_ERR_ARGUMENT, since its values would land in the wrong fields, or in a field the other
  // table lets only an operator or the record set (this input's generic setters did not refuse
  // it: operator_only is this table's). Compatible reloads keep the fingerprint.
  uint64_t layout;
  explicit rg_input(const Entry& e)
      : input(*e.table), strings(e.table->field_count()), layout(e.layout) {
    const Table& table = *e.table;
    names.reserve(table.field_count());
    operator_only.reserve(table.field_count());
    for (uint32_t f = 0; f < table.field_count(); ++f) {
      names.emplace_back(table.field(f).name);
      operator_only.push_back(table.field(f).operator_only ? 1 : 0);
    }
  }
};

struct rg_reader {
  SharedTable::Reader reader;
  std::optional<SharedTable::Guard> pin;
  explicit rg_reader(SharedTable& shared) : reader(shared) {}
};

namespace {

using replaygate::detail::entry_of;
using replaygate::detail::handle_of;

// Never a NULL data pointer (an empty view may have one): bindings build slices from it.
rg_str str(std::string_view s) {
  return s.data() == nullptr ? rg_str{"", 0} : rg_str{s.data(), s.size()};
}

using replaygate::detail::fail;
using replaygate::detail::ok;

// LoadError and rg_status share their values 0..9 (ok, the loader's errors, incompatible).
static_assert(static_cast<int>(LoadError::kIo) == RG_ERR_IO &&
              static_cast<int>(LoadError::kTooLarge) == RG_ERR_TOO_LARGE &&
              static_cast<int>(LoadError::kTruncated) == RG_ERR_TRUNCATED &&
              static_cast<int>(LoadError::kBadMagic) == RG_ERR_BAD_MAGIC &&
              static_cast<int>(LoadError::kUnsupportedVersion) == RG_ERR_UNSUPPORTED_VERSION &&
              static_cast<int>(LoadError::kBadChecksum) == RG_ERR_BAD_CHECKSUM &&
              static_cast<int>(LoadError::kBadOffset) == RG_ERR_BAD_OFFSET &&
              static_cast<int>(LoadError::kMalformed) == RG_ERR_MALFORMED &&
              static_cast<int>(LoadError::kIncompatible) == RG_ERR_INCOMPATIBLE);

rg_status from_load(const LoadStatus& status) { return replaygate::detail::status_of(status); }

using replaygate::detail::guarded;

void fill(const Entry& e, const Decision& d, rg_decision* out) {
  out->verb = d.verb;
  out->rule = d.rule;
  out->kind = static_cast<uint32_t>(d.kind);
  out->invalid_field = d.invalid_field;
  out->effect = static_cast<uint32_t>(e.table->verb_effect(d.verb));
  std::memcpy(out->table_checksum, e.checksum, sizeof out->table_checksum);
}

Decision to_decision(const rg_decision* d) {
  Decision out;
  out.verb = d->verb;
  out.rule = d->rule;
  out.kind = static_cast<replaygate::DecisionKind>(d->kind);
  out.invalid_field = d->invalid_field;
  return out;
}

rg_status decide_one(const Entry& e, const rg_input* input, rg_decision* out) {
  if (input == nullptr || out == nullptr) return RG_ERR_ARGUMENT;
  if (input->layout != e.layout || input->input.size() != e.table->field_count()) {
    return RG_ERR_ARGUMENT;
  }
  fill(e, e.table->decide(input->input), out);
  return RG_OK;
}

// Every column is checked before any row is decided. A field with two columns is an error, not
// "the last one wins": a later column could otherwise override an earlier
// already_committed = true and replay (the JSON readers refuse a duplicate key for the same
// reason).
rg_status check_columns(const Table& t, const rg_column* cols, size_t ncols, size_t rows) {
  if (cols == nullptr && ncols > 0) return RG_ERR_ARGUMENT;
  std::vector<uint8_t> seen(t.field_count(), 0);
  for (size_t c = 0; c < ncols; ++c) {
    const rg_column& col = cols[c];
    if (col.field >= t.field_count() || seen[col.field] != 0) return RG_ERR_ARGUMENT;
    seen[col.field] = 1;
    // Columns carry message values; an operator's value is set one record at a time.
    if (t.field(col.field).operator_only) return RG_ERR_OPERATOR_ONLY;
    switch (col.type) {
      case RG_COLUMN_STRING:
        if (col.offsets == nullptr || (col.bytes == nullptr && rows > 0 && col.offsets[rows] > 0)) {
          return RG_ERR_ARGUMENT;
        }
        for (size_t i = 0; i < rows; ++i) {
          if (col.offsets[i] > col.offsets[i + 1]) return RG_ERR_ARGUMENT;
        }
        break;
      case RG_COLUMN_INT:
        if (col.ints == nullptr && rows > 0) return RG_ERR_ARGUMENT;
        break;
      case RG_COLUMN_BOOL:
        if (col.bools == nullptr && rows > 0) return RG_ERR_ARGUMENT;
        break;
      default:
        return RG_ERR_ARGUMENT;
    }
  }
  return RG_OK;
}

rg_status decide_columns(const Entry& e, const rg_column* cols, size_t ncols, size_t rows,
                         uint32_t* verbs, rg_decision* decisions) {
  const Table& t = *e.table;
  return guarded(nullptr, [&] {
    if (rg_status s = check_columns(t, cols, ncols, rows); s != RG_OK) return s;
    // Nothing to write: the rows would be decided for no one (and rows may be any size_t).
    if (verbs == nullptr && decisions == nullptr) return RG_OK;
    Input in(t);  // the batch's allocations: this and check_columns' field set
    for (size_t i = 0; i < rows; ++i) {
      in.clear();
      for (size_t c = 0; c < ncols; ++c) {
        const rg_column& col = cols[c];
        uint8_t present = col.present == nullptr ? 1 : col.present[i];
        if (present == 0) continue;
        if (present == 2) {
          in.set_null(col.field);
          continue;
        }
        if (present != 1) {  // 3 and any other value: unreadable, fails closed
          in.set_invalid(col.field);
          continue;
        }
        switch (col.type) {
          case RG_COLUMN_STRING:
            in.set_string(col.field, std::string_view(col.bytes + col.offsets[i],
                                                      col.offsets[i + 1] - col.offsets[i]));
            break;
          case RG_COLUMN_INT:
            in.set_int(col.field, col.ints[i]);
            break;
          default:
            in.set_bool(col.field, col.bools[i] != 0);
            break;
        }
      }
      Decision d = t.decide(in);
      if (verbs != nullptr) verbs[i] = d.verb;
      if (decisions != nullptr) fill(e, d, &decisions[i]);
    }
    return RG_OK;
  });
}

// The checks every setter makes: a live input, a field in range, and the right channel: a
// generic setter (operator = false) for a field a message may set, rg_input_set_operator_*
// (operator = true) for an operator-only one. On error the slot is left as it was.
rg_status check_setter(const rg_input* in, uint32_t field, bool from_operator) {
  if (in == nullptr || field >= in->input.size()) return RG_ERR_ARGUMENT;
  if ((in->operator_only[field] != 0) != from_operator) return RG_ERR_OPERATOR_ONLY;
  return RG_OK;
}

rg_status set_string(rg_input* in, uint32_t field, const char* data, size_t size) {
  if (data == nullptr && size > 0) return RG_ERR_ARGUMENT;
  return guarded(nullptr, [&] {
    std::string& buffer = in->strings[field];
    buffer.assign(data == nullptr ? "" : data, size);
    in->input.set_string(field, buffer);
    return RG_OK;
  });
}

uint32_t field_by_name(const rg_input* input, const char* name) {
  std::string_view n(name);
  for (uint32_t f = 0; f < input->names.size(); ++f) {
    if (input->names[f] == n) return f;
  }
  return RG_NO_INDEX;
}

}  // namespace

extern "C" {

const char* rg_version(void) { return RG_VERSION; }

const char* rg_status_name(rg_status status) {
  // A C caller may pass any int: read the bits as one, since loading an rg_status outside its
  // enumerators' range is undefined in C++ (clang's -fsanitize=enum says so).
  static_assert(sizeof(rg_status) == sizeof(int), "rg_status is an int-sized C enum");
  int code = 0;
  std::memcpy(&code, &status, sizeof code);
  switch (code) {
    case RG_OK:
      return "ok";
    case RG_ERR_IO:
      return "io";
    case RG_ERR_TOO_LARGE:
      return "too_large";
    case RG_ERR_TRUNCATED:
      return "truncated";
    case RG_ERR_BAD_MAGIC:
      return "bad_magic";
    case RG_ERR_UNSUPPORTED_VERSION:
      return "unsupported_version";
    case RG_ERR_BAD_CHECKSUM:
      return "bad_checksum";
    case RG_ERR_BAD_OFFSET:
      return "bad_offset";
    case RG_ERR_MALFORMED:
      return "malformed";
    case RG_ERR_INCOMPATIBLE:
      return "incompatible";
    case RG_ERR_ARGUMENT:
      return "argument";
    case RG_ERR_UNKNOWN_FIELD:
      return "unknown_field";
    case RG_ERR_NO_MEMORY:
      return "no_memory";
    case RG_ERR_NO_READER_SLOT:
      return "no_reader_slot";
    case RG_ERR_OPERATOR_ONLY:
      return "operator_only";
    case RG_ERR_SIGNATURE:
      return "signature";
    case RG_ERR_ROLLBACK:
      return "rollback";
    case RG_ERR_EXPIRED:
      return "expired";
  }
  return "unknown";
}

rg_status rg_table_load_file(const char* path, rg_table** out, rg_error* err) {
  if (out == nullptr) return fail(err, RG_ERR_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (path == nullptr) return fail(err, RG_ERR_ARGUMENT, "path is NULL");
  return guarded(err, [&] {
    LoadStatus status;
    std::unique_ptr<Table> table = Table::load_file(path, &status);
    if (table == nullptr) return fail(err, from_load(status), status.message);
    *out = const_cast<rg_table*>(handle_of(SharedTable::make_entry(std::move(table)).release()));
    return ok(err);
  });
}

rg_status rg_table_load_bytes(const void* data, size_t size, rg_table** out, rg_error* err) {
  if (out == nullptr) return fail(err, RG_ERR_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (data == nullptr && size > 0) return fail(err, RG_ERR_ARGUMENT, "data is NULL");
  return guarded(err, [&] {
    LoadStatus status;
    std::unique_ptr<Table> table = Table::load_bytes(data, size, &status);
    if (table == nullptr) return fail(err, from_load(status), status.message);
    *out = const_cast<rg_table*>(handle_of(SharedTable::make_entry(std::move(table)).release()));
    return ok(err);
  });
}

void rg_table_free(rg_table* table) { delete reinterpret_cast<Entry*>(table); }

rg_str rg_table_policy_id(const rg_table* t) {
  return t == nullptr ? rg_str{"", 0} : str(entry_of(t)->table->policy_id());
}
int64_t rg_table_revision(const rg_table* t) {
  return t == nullptr ? 0 : entry_of(t)->table->revision();
}
const char* rg_table_checksum(const rg_table* t) {
  return t == nullptr ? "" : entry_of(t)->checksum;
}
uint32_t rg_table_field_count(const rg_table* t) {
  return t == nullptr ? 0 : entry_of(t)->table->field_count();
}
uint32_t rg_table_field_index(const rg_table* t, const char* name, size_t size) {
  if (t == nullptr || (name == nullptr && size > 0)) return RG_NO_INDEX;
  return entry_of(t)->table->field_index(std::string_view(name == nullptr ? "" : name, size));
}
rg_str rg_table_field_name(const rg_table* t, uint32_t field) {
  if (t == nullptr || field >= entry_of(t)->table->field_count()) return rg_str{"", 0};
  return str(entry_of(t)->table->field(field).name);
}
uint32_t rg_table_field_type(const rg_table* t, uint32_t field) {
  if (t == nullptr || field >= entry_of(t)->table->field_count()) return RG_NO_INDEX;
  return static_cast<uint32_t>(entry_of(t)->table->field(field).type);
}
int rg_table_field_operator_only(const rg_table* t, uint32_t field) {
  if (t == nullptr || field >= entry_of(t)->table->field_count()) return 0;
  return entry_of(t)->table->field(field).operator_only ? 1 : 0;
}
uint32_t rg_table_field_source(const rg_table* t, uint32_t field) {
  if (t == nullptr || field >= entry_of(t)->table->field_count()) return RG_NO_INDEX;
  static_assert(static_cast<uint32_t>(replaygate::FieldSource::kRecord) == RG_SOURCE_RECORD);
  return static_cast<uint32_t>(entry_of(t)->table->field(field).source);
}
int rg_table_field_derived(const rg_table* t, uint32_t field) {
  if (t == nullptr || field >= entry_of(t)->table->field_count()) return 0;
  return entry_of(t)->table->field_derived(field) ? 1 : 0;
}
uint32_t rg_table_verb_count(const rg_table* t) {
  return t == nullptr ? 0 : entry_of(t)->table->verb_count();
}
uint32_t rg_table_verb_index(const rg_table* t, const char* name, size_t size) {
  if (t == nullptr || (name == nullptr && size > 0)) return RG_NO_INDEX;
  return entry_of(t)->table->verb_index(std::string_view(name == nullptr ? "" : name, size));
}
rg_str rg_table_verb_name(const rg_table* t, uint32_t verb) {
  if (t == nullptr || verb >= entry_of(t)->table->verb_count()) return rg_str{"", 0};
  return str(entry_of(t)->table->verb_name(verb));
}
uint32_t rg_table_verb_effect(const rg_table* t, uint32_t verb) {
  if (t == nullptr || verb >= entry_of(t)->table->verb_count()) return 0;
  return static_cast<uint32_t>(entry_of(t)->table->verb_effect(verb));
}
rg_str rg_table_rule_name(const rg_table* t, const rg_decision* d) {
  if (t == nullptr || d == nullptr) return rg_str{"", 0};
  return str(entry_of(t)->table->rule_name(to_decision(d)));
}
rg_str rg_table_reason(const rg_table* t, const rg_decision* d) {
  if (t == nullptr || d == nullptr) return rg_str{"", 0};
  return str(entry_of(t)->table->reason(to_decision(d)));
}

rg_status rg_input_new(const rg_table* t, rg_input** out) {
  if (out == nullptr) return RG_ERR_ARGUMENT;
  *out = nullptr;
  if (t == nullptr) return RG_ERR_ARGUMENT;
  return guarded(nullptr, [&] {
    *out = new rg_input(*entry_of(t));
    return RG_OK;
  });
}
void rg_input_free(rg_input* input) { delete input; }
void rg_input_clear(rg_input* input) {
  if (input != nullptr) input->input.clear();
}

rg_status rg_input_set_string(rg_input* in, uint32_t field, const char* data, size_t size) {
  if (rg_status s = check_setter(in, field, false); s != RG_OK) return s;
  return set_string(in, field, data, size);
}
rg_status rg_input_set_int(rg_input* in, uint32_t field, int64_t value) {
  if (rg_status s = check_setter(in, field, false); s != RG_OK) return s;
  in->input.set_int(field, value);
  return RG_OK;
}
rg_status rg_input_set_bool(rg_input* in, uint32_t field, int value) {
  if (rg_status s = check_setter(in, field, false); s != RG_OK) return s;
  in->input.set_bool(field, value != 0);
  return RG_OK;
}
rg_status rg_input_set_null(rg_input* in, uint32_t field) {
  if (rg_status s = check_setter(in, field, false); s != RG_OK) return s;
  in->input.set_null(field);
  return RG_OK;
}
rg_status rg_input_set_invalid(rg_input* in, uint32_t field) {
  if (rg_status s = check_setter(in, field, false); s != RG_OK) return s;
  in->input.set_invalid(field);
  return RG_OK;
}
rg_status rg_input_unset(rg_input* in, uint32_t field) {
  if (in == nullptr || field >= in->input.size()) return RG_ERR_ARGUMENT;
  in->input.set_unset(field);
  return RG_OK;
}

rg_status rg_input_set_operator_string(rg_input* in, uint32_t field, const char* data,
                                       size_t size) {
  if (rg_status s = check_setter(in, field, true); s != RG_OK) return s;
  return set_string(in, field, data, size);
}
rg_status rg_input_set_operator_int(rg_input* in, uint32_t field, int64_t value) {
  if (rg_status s = check_setter(in, field, true); s != RG_OK) return s;
  in->input.set_int(field, value);
  return RG_OK;
}
rg_status rg_input_set_operator_bool(rg_input* in, uint32_t field, int value) {
  if (rg_status s = check_setter(in, field, true); s != RG_OK) return s;
  in->input.set_bool(field, value != 0);
  return RG_OK;
}

rg_status rg_input_set_string_by_name(rg_input* in, const char* name, const char* data,
                                      size_t size) {
  if (in == nullptr || name == nullptr) return RG_ERR_ARGUMENT;
  uint32_t f = field_by_name(in, name);
  return f == RG_NO_INDEX ? RG_ERR_UNKNOWN_FIELD : rg_input_set_string(in, f, data, size);
}
rg_status rg_input_set_int_by_name(rg_input* in, const char* name, int64_t value) {
  if (in == nullptr || name == nullptr) return RG_ERR_ARGUMENT;
  uint32_t f = field_by_name(in, name);
  return f == RG_NO_INDEX ? RG_ERR_UNKNOWN_FIELD : rg_input_set_int(in, f, value);
}
rg_status rg_input_set_bool_by_name(rg_input* in, const char* name, int value) {
  if (in == nullptr || name == nullptr) return RG_ERR_ARGUMENT;
  uint32_t f = field_by_name(in, name);
  return f == RG_NO_INDEX ? RG_ERR_UNKNOWN_FIELD : rg_input_set_bool(in, f, value);
}
rg_status rg_input_set_null_by_name(rg_input* in, const char* name) {
  if (in == nullptr || name == nullptr) return RG_ERR_ARGUMENT;
  uint32_t f = field_by_name(in, name);
  return f == RG_NO_INDEX ? RG_ERR_UNKNOWN_FIELD : rg_input_set_null(in, f);
}

rg_status rg_decide(const rg_table* t, const rg_input* input, rg_decision* out) {
  if (t == nullptr) return RG_ERR_ARGUMENT;
  return decide_one(*entry_of(t), input, out);
}

rg_status rg_decide_columns(const rg_table* t, const rg_column* columns, size_t ncolumns,
                            size_t rows, uint32_t* verbs, rg_decision* decisions) {
  if (t == nullptr) return RG_ERR_ARGUMENT;
  return decide_columns(*entry_of(t), columns, ncolumns, rows, verbs, decisions);
}

rg_status rg_shared_open(const char* path, uint32_t max_readers, rg_shared** out, rg_error* err) {
  if (out == nullptr) return fail(err, RG_ERR_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (path == nullptr) return fail(err, RG_ERR_ARGUMENT, "path is NULL");
  return guarded(err, [&] {
    if (max_readers > kMaxReaders) {
      return fail(err, RG_ERR_ARGUMENT,
                  "max_readers " + std::to_string(max_readers) + " is over the limit of " +
                      std::to_string(kMaxReaders));
    }
    LoadStatus status;
    auto shared = SharedTable::open(
        path, &status, max_readers == 0 ? SharedTable::kDefaultMaxReaders : max_readers);
    if (shared == nullptr) return fail(err, from_load(status), status.message);
    *out = new rg_shared{std::move(shared)};
    return ok(err);
  });
}

void rg_shared_free(rg_shared* shared) { delete shared; }

rg_status rg_shared_reload(rg_shared* shared, const char* path, rg_error* err) {
  if (shared == nullptr || path == nullptr) {
    return fail(err, RG_ERR_ARGUMENT, "shared or path is NULL");
  }
  return guarded(err, [&] {
    LoadStatus status;
    if (shared->shared->reload(path, &status)) return ok(err);
    return fail(err, from_load(status), status.message);
  });
}

uint64_t rg_shared_generation(const rg_shared* shared) {
  return shared == nullptr ? 0 : shared->shared->generation();
}

rg_status rg_reader_new(rg_shared* shared, rg_reader** out) {
  if (out == nullptr) return RG_ERR_ARGUMENT;
  *out = nullptr;
  if (shared == nullptr) return RG_ERR_ARGUMENT;
  return guarded(nullptr, [&] {
    auto reader = std::make_unique<rg_reader>(*shared->shared);
    if (!reader->reader.ok()) return RG_ERR_NO_READER_SLOT;
    *out = reader.release();
    return RG_OK;
  });
}

void rg_reader_free(rg_reader* reader) { delete reader; }

rg_status rg_reader_input_new(rg_reader* reader, rg_input** out) {
  if (reader == nullptr || out == nullptr) return RG_ERR_ARGUMENT;
  if (reader->pin) return rg_input_new(handle_of(&reader->pin->entry()), out);
  SharedTable::Guard guard = reader->reader.acquire();
  return rg_input_new(handle_of(&guard.entry()), out);
}

rg_status rg_reader_decide(rg_reader* reader, const rg_input* input, rg_decision* out) {
  if (reader == nullptr) return RG_ERR_ARGUMENT;
  if (reader->pin) return decide_one(reader->pin->entry(), input, out);
  SharedTable::Guard guard = reader->reader.acquire();
  return decide_one(guard.entry(), input, out);
}

rg_status rg_reader_decide_columns(rg_reader* reader, const rg_column* columns, size_t ncolumns,
                                   size_t rows, uint32_t* verbs, rg_decision* decisions) {
  if (reader == nullptr) return RG_ERR_ARGUMENT;
  if (reader->pin) {
    return decide_columns(reader->pin->entry(), columns, ncolumns, rows, verbs, decisions);
  }
  SharedTable::Guard guard = reader->reader.acquire();
  return decide_columns(guard.entry(), columns, ncolumns, rows, verbs, decisions);
}

rg_status rg_reader_acquire(rg_reader* reader, const rg_table** out) {
  if (reader == nullptr || out == nullptr) return RG_ERR_ARGUMENT;
  if (!reader->pin) reader->pin.emplace(reader->reader.acquire());
  *out = handle_of(&reader->pin->entry());
  return RG_OK;
}

void rg_reader_release(rg_reader* reader) {
  if (reader != nullptr) reader->pin.reset();
}

}  // extern "C"
