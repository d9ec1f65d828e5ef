// Private to the runtime: the validated, decoded form of a table that table.cc builds at load and
// decide.cc reads. Every index in here was range-checked by the loader, so decide() can use them
// without checks. Not installed, not included outside runtime/.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/decide_index.h"
#include "runtime/table.h"
#include "runtime/table_format.h"

namespace replaygate {

struct Table::Impl {
  struct Field {
    std::string_view name;
    std::string_view invalid_reason;
    FieldType type = FieldType::kString;
    bool optional = false;
    bool empty_means_absent = false;
    bool has_min = false, has_max = false;
    int64_t min = 0, max = 0;
    uint32_t atom_count = 0;
    uint32_t first_atom = 0;  // atom of dictionary entry 0: 2 for strings, 1 for enums
    uint32_t dict_begin = 0, dict_count = 0;
    uint32_t slot_begin = 0, slot_count = 0;
    uint32_t cut_begin = 0, cut_count = 0;
    bool derived = false;  // computed from two int fields; see `derivations`
  };
  struct DictEntry {
    uint64_t hash = 0;
    std::string_view bytes;
  };
  struct Verb {
    std::string_view name;
    std::string_view description;
    Effect effect = Effect::kNone;
  };
  struct Rule {
    std::string_view id;
    bool is_table = false;
    uint32_t catalog_begin = 0, catalog_count = 0;
    uint32_t item_begin = 0, item_count = 0;
    uint32_t mask_begin = 0, mask_count = 0;
    uint32_t row_key_begin = 0;
  };
  struct Condition {
    uint32_t field = 0;
    uint32_t op = 0;
    uint32_t bits_begin = 0;
    uint32_t bits_count = 0;
    std::string_view text;
  };
  struct CatalogEntry {
    std::string_view id;
    std::string_view reason;
    uint32_t verb = 0;
    uint32_t rule = 0;
    uint32_t row = 0;
  };

  std::vector<uint64_t> storage;  // the table bytes, 8-byte aligned; string_views point here
  size_t size = 0;
  format::Header header{};

  std::string_view policy_id, description, default_reason;
  int64_t revision = 0;
  uint32_t default_verb = 0;

  std::vector<Field> fields;
  std::vector<DictEntry> dict;
  std::vector<uint32_t> dict_slots;
  std::vector<int64_t> cuts;
  std::vector<Verb> verbs;
  std::vector<Rule> rules;
  std::vector<Condition> conditions;
  std::vector<uint64_t> bitsets;
  std::vector<uint32_t> table_keys;
  std::vector<format::MaskRecord> masks;
  std::vector<uint32_t> row_slots;
  std::vector<uint32_t> row_keys;
  std::vector<CatalogEntry> catalog;
  std::vector<format::DerivationRecord> derivations;  // ascending field; validated at load

  std::string_view source_name, source_digest;
  std::vector<uint32_t> source_lines;

  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(storage.data()); }

  // The dictionary atom of `value` (whose hash is `hash`) in `field`, or 0 when it is not there.
  uint32_t lookup(const Field& field, std::string_view value, uint64_t hash) const noexcept;
  // The interval atom of an int value.
  uint32_t int_atom(const Field& field, int64_t value) const noexcept;

  // decide()'s load-time index over the structures above (runtime/decide_index.h), built by
  // build_decide_index() at the end of load. Kept last so that it is built from, and never
  // mistaken for, the verified decoded table.
  DecideIndex fast;
};

uint64_t string_hash(std::string_view bytes) noexcept;

}  // namespace replaygate
