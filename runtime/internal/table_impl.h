// Private to the runtime: the validated form of a table that table.cc builds at load and
// decide.cc reads. Every index in here was range-checked by the loader, so decide() can use them
// without checks. Not installed, not included outside runtime/.
//
// Sections whose on-disk records are what decide() needs are kept as std::span views into the
// table bytes (`storage`), not copied: the loader verifies them in place. Only the small per-field,
// per-verb, per-rule and per-condition structures and the string dictionary are decoded.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/internal/decide_index.h"
#include "runtime/table.h"
#include "runtime/table_format.h"

namespace replaygate {

// The memory holding a table's bytes: 8-byte aligned, not zero-filled. A large one is its own
// anonymous mapping on 2 MiB boundaries with transparent huge pages requested and its pages
// populated in one call: filling 130 MB through 4 KiB page faults cost more than everything else
// the loader does (docs/benchmarks.md).
class TableBuffer {
 public:
  TableBuffer() = default;
  ~TableBuffer();
  void allocate(size_t size);  // once, for `size` bytes
  TableBuffer(const TableBuffer&) = delete;
  TableBuffer& operator=(const TableBuffer&) = delete;
  uint64_t* get() const { return words_; }

 private:
  uint64_t* words_ = nullptr;
  size_t mapped_ = 0;  // bytes mapped by mmap, or 0 when words_ came from new[]
};

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
    bool derived = false;     // computed: from two int fields (`derivations`) or classified
    bool classified = false;  // computed by a classifier (`classifiers`); derived is set too
    FieldSource source = FieldSource::kLetter;  // who may supply it (FieldRecord::source)
  };
  // The field whose FieldRecord::idempotency_key is 1, or Table::kNoField (the loader checks
  // it is a string field and the only one).
  uint32_t idempotency_key_field = 0xFFFFFFFFu;
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

  // The table bytes, 8-byte aligned (every section starts 8-byte aligned, so each span below is
  // suitably aligned for its record type); every string_view and span points here.
  TableBuffer storage;
  size_t size = 0;
  std::string_view strings;  // the kStrings section
  format::Header header{};

  std::string_view policy_id, description, default_reason;
  int64_t revision = 0;
  uint32_t default_verb = 0;

  std::vector<Field> fields;
  std::vector<DictEntry> dict;
  std::span<const uint32_t> dict_slots;
  std::span<const int64_t> cuts;
  std::vector<Verb> verbs;
  std::vector<Rule> rules;
  std::vector<Condition> conditions;
  std::span<const uint64_t> bitsets;
  std::span<const uint32_t> table_keys;
  std::span<const format::MaskRecord> masks;
  std::span<const uint32_t> row_slots;
  std::span<const uint32_t> row_keys;
  // Verb, rule and row of every entry checked at load; the id and reason through catalog_id() and
  // catalog_reason() (their string references were checked too).
  std::span<const format::CatalogRecord> catalog;
  std::span<const format::DerivationRecord> derivations;  // ascending field; validated at load
  std::span<const format::ClassifierRecord> classifiers;  // ascending field; validated at load
  std::span<const format::ClassifierMatcher> classifier_matchers;  // validated at load

  std::string_view source_name, source_digest;
  std::span<const uint32_t> source_lines;

  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(storage.get()); }
  // A string reference the loader checked against `strings`.
  std::string_view str(const format::StrRef& ref) const noexcept {
    return strings.substr(ref.offset, ref.length);
  }
  std::string_view catalog_id(uint32_t c) const noexcept { return str(catalog[c].id); }
  std::string_view catalog_reason(uint32_t c) const noexcept { return str(catalog[c].reason); }

  // The dictionary atom of `value` (whose hash is `hash`) in `field`, or 0 when it is not there.
  uint32_t lookup(const Field& field, std::string_view value, uint64_t hash) const noexcept;
  // The interval atom of an int value.
  uint32_t int_atom(const Field& field, int64_t value) const noexcept;

  // decide()'s load-time index over the structures above (runtime/internal/decide_index.h), built
  // by build_decide_index() at the end of load. Kept last so that it is built from, and never
  // mistaken for, the verified decoded table.
  DecideIndex fast;
};

uint64_t string_hash(std::string_view bytes) noexcept;

// The atom of a derived bool (2 true, 1 false): `lhs op rhs` with the record's op code. Shared by
// decide() and trace() so that the two compute derived fields the same way.
inline uint32_t derived_atom(const format::DerivationRecord& d, int64_t lhs, int64_t rhs) noexcept {
  bool b = false;
  switch (d.op) {
    case 0:  // eq
      b = lhs == rhs;
      break;
    case 1:  // ne
      b = lhs != rhs;
      break;
    case 4:  // lt
      b = lhs < rhs;
      break;
    case 5:  // le
      b = lhs <= rhs;
      break;
    case 6:  // gt
      b = lhs > rhs;
      break;
    default:  // 7, ge (the loader admits no other code)
      b = lhs >= rhs;
      break;
  }
  return b ? 2 : 1;
}

// The atom of a classified field (1 + class) for the raw field's validated atom and slot value:
// the first matcher that takes the value, else the fallback; an absent raw value (atom 0) gets
// the fallback. No allocation; shared by decide() and trace() so both classify the same way.
inline uint32_t classified_atom(const Table::Impl& t, const format::ClassifierRecord& c,
                                uint32_t raw_atom, const Input::Slot& raw) noexcept {
  if (raw_atom != 0) {
    for (uint32_t m = 0; m < c.matcher_count; ++m) {
      const format::ClassifierMatcher& x = t.classifier_matchers[c.matcher_begin + m];
      bool takes = false;
      switch (x.kind) {
        case format::kMatchExact:
          takes = raw.s == t.str(x.text);
          break;
        case format::kMatchPrefix:
          takes = raw.s.starts_with(t.str(x.text));
          break;
        default:  // kMatchInt, kMatchRange (the loader admits no other kind)
          takes = x.lo <= raw.i && raw.i <= x.hi;
          break;
      }
      if (takes) return 1 + x.cls;
    }
  }
  return 1 + c.fallback;
}

}  // namespace replaygate
