// Loading and verifying a frozen decision table: Table::load_file() and Table::load_bytes().
//
// load_file() reads a regular file straight into an 8-byte-aligned buffer sized from fstat, and
// load_bytes() copies into one, in pieces; each piece is hashed while still in cache
// (runtime/internal/table_hash.h: checksum, decision and provenance digests). The loader then
// checks the header (size caps, magic, version, sizes, checksum), the section directory (order,
// alignment, bounds) and every section: every string reference, index, atom, hash slot and count
// is range-checked here, once, so decide() (runtime/decide.cc) never meets a bad index. Record
// sections stay in the buffer as spans (runtime/internal/table_impl.h); only small per-field,
// per-verb, per-rule and per-condition structures and the string dictionary are decoded. Each
// failure is a specific LoadError and message (docs/table-format.md, "Load errors").
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>

#include "runtime/checked_codes.h"
#include "runtime/internal/decide_index.h"
#include "runtime/internal/table_hash.h"
#include "runtime/internal/table_impl.h"
#include "runtime/table.h"
#include "runtime/table_format.h"

namespace replaygate {
namespace {

namespace fm = replaygate::format;
using detail::digest_equals;
using detail::hex128;
using detail::in_range;
using detail::kChunk;
using detail::TableHasher;
using detail::Xxh128;

// Fuzz builds (tests/fuzz/) skip the digest comparisons so that mutated bytes reach the
// structural checks, which must hold on their own; never defined in a product build.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kSkipDigests = true;
#else
constexpr bool kSkipDigests = false;
#endif

const char* section_name(uint32_t kind) {
  switch (kind) {
    case fm::kMeta:
      return "meta";
    case fm::kStrings:
      return "strings";
    case fm::kFields:
      return "fields";
    case fm::kDictEntries:
      return "dict_entries";
    case fm::kDictSlots:
      return "dict_slots";
    case fm::kCuts:
      return "cuts";
    case fm::kVerbs:
      return "verbs";
    case fm::kRules:
      return "rules";
    case fm::kConditions:
      return "conditions";
    case fm::kBitsets:
      return "bitsets";
    case fm::kTableKeys:
      return "table_keys";
    case fm::kMasks:
      return "masks";
    case fm::kRowSlots:
      return "row_slots";
    case fm::kRowKeys:
      return "row_keys";
    case fm::kCatalog:
      return "catalog";
    case fm::kProvenance:
      return "provenance";
    case fm::kDerivations:
      return "derivations";
    case fm::kClassifiers:
      return "classifiers";
  }
  return "unknown";
}

std::string num(uint64_t v) { return std::to_string(v); }

bool is_pow2(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// The checks that need only the header, in the loader's order: magic, version, header size and
// the size cap. A stream is checked with them before the rest of it is read.
bool check_header_alone(const fm::Header& h, LoadStatus* status) {
  if (std::memcmp(h.magic, fm::kSignedMagic, sizeof(h.magic)) == 0) {
    // A signed envelope (docs/signing.md): this library cannot check the signature, and never
    // strips one unchecked; replaygate::verify unwraps it.
    *status = {LoadError::kBadMagic,
               "bad magic: a signed table; load it through replaygate::verify "
               "(rg_table_load_verified, or the CLI), which checks its signature"};
  } else if (std::memcmp(h.magic, fm::kMagic, sizeof(h.magic)) != 0) {
    *status = {LoadError::kBadMagic, "bad magic: not a replaygate table"};
  } else if (h.version != fm::kVersion) {
    *status = {LoadError::kUnsupportedVersion, "unsupported format version " + num(h.version) +
                                                   " (this runtime reads " + num(fm::kVersion) +
                                                   ")"};
  } else if (h.header_size != sizeof(fm::Header)) {
    *status = {LoadError::kMalformed, "bad header size " + num(h.header_size) + " (expected " +
                                          num(sizeof(fm::Header)) + ")"};
  } else if (h.total_size > Table::kMaxTableBytes) {
    *status = {LoadError::kTooLarge, "header claims " + num(h.total_size) +
                                         " bytes, over the limit of " + num(Table::kMaxTableBytes)};
  } else {
    return true;
  }
  return false;
}

// Decodes and validates; each check_* returns false after setting the status.
class Loader {
 public:
  Loader(Table::Impl& t, const TableHasher& hasher, LoadStatus* status)
      : t_(t), hasher_(hasher), status_(status) {}

  bool fail(LoadError error, std::string message) {
    status_->error = error;
    status_->message = std::move(message);
    return false;
  }

  bool run() {
    return check_header() && check_directory() && decode_strings() && decode_meta() &&
           decode_fields() && decode_verbs() && decode_catalog() && decode_rules() &&
           decode_provenance() && decode_derivations() && decode_classifiers() && check_digests();
  }

 private:
  const uint8_t* base() const { return t_.bytes(); }

  bool check_header() {
    fm::Header& h = t_.header;
    std::memcpy(&h, base(), sizeof(fm::Header));
    if (!check_header_alone(h, status_)) return false;
    if (h.total_size > t_.size) {
      return fail(LoadError::kTruncated,
                  "truncated: header says " + num(h.total_size) + " bytes, got " + num(t_.size));
    }
    if (h.total_size < t_.size) {
      return fail(LoadError::kMalformed, "trailing bytes: header says " + num(h.total_size) +
                                             " bytes, got " + num(t_.size));
    }
    if ((h.flags & ~fm::kKnownFlags) != 0) {
      return fail(LoadError::kMalformed, "unknown flags " + num(h.flags));
    }
    flags_ = h.flags;
    // Reserved words must be zero, so that a later version can give them a meaning that this
    // loader then refuses instead of ignoring.
    if (h.reserved != 0) {
      return fail(LoadError::kMalformed, "header reserved word is " + num(h.reserved) + ", not 0");
    }
    if (h.section_count < fm::kSectionCount || h.section_count > fm::kMaxSectionCount) {
      return fail(LoadError::kMalformed, "expected " + num(fm::kSectionCount) +
                                             " sections, header says " + num(h.section_count) +
                                             " (or " + num(fm::kDerivationsSectionCount) +
                                             " with a derivations section, " +
                                             num(fm::kMaxSectionCount) + " with classifiers)");
    }
    section_count_ = h.section_count;
    directory_end_ = sizeof(fm::Header) + uint64_t{section_count_} * sizeof(fm::SectionEntry);
    if (directory_end_ > t_.size) {
      return fail(LoadError::kTruncated, "truncated: the section directory ends past the table");
    }
    const XXH128_hash_t checksum = hasher_.checksum();
    if (!digest_equals(h.checksum, checksum) && !kSkipDigests) {
      return fail(LoadError::kBadChecksum, "bad checksum: header says " + hex128(h.checksum) +
                                               ", content hashes to " + hex128(checksum));
    }
    return true;
  }

  bool check_directory() {
    std::memcpy(sections_, base() + sizeof(fm::Header), section_count_ * sizeof(fm::SectionEntry));
    uint64_t previous_end = directory_end_;
    for (uint32_t i = 0; i < section_count_; ++i) {
      const fm::SectionEntry& e = sections_[i];
      if (e.kind != i + 1) {
        return fail(LoadError::kMalformed, "directory entry " + num(i) + " has kind " +
                                               num(e.kind) + ", expected " + num(i + 1));
      }
      if (e.reserved != 0) {
        return fail(LoadError::kMalformed, "directory entry " + num(i) + " reserved word is " +
                                               num(e.reserved) + ", not 0");
      }
      std::string where = std::string("section ") + section_name(e.kind) + " (offset " +
                          num(e.offset) + ", length " + num(e.length) + ")";
      if (!in_range(e.offset, e.length, t_.size)) {
        return fail(LoadError::kBadOffset,
                    where + " lies outside the table of " + num(t_.size) + " bytes");
      }
      if (e.offset % fm::kAlign != 0) {
        return fail(LoadError::kBadOffset, where + " is not 8-byte aligned");
      }
      if (e.offset < previous_end) {
        return fail(LoadError::kBadOffset, where + " overlaps the directory or an earlier section");
      }
      previous_end = e.offset + e.length;
    }
    return true;
  }

  const fm::SectionEntry& section(uint32_t kind) const { return sections_[kind - 1]; }

  // A view of a section's records in place. Sections start 8-byte aligned in an 8-byte aligned
  // buffer, so the records are aligned for every record type; the buffer's bytes were copied in
  // whole, which gives them the records' (implicit-lifetime) types.
  template <typename T>
  bool view(uint32_t kind, std::span<const T>& out) {
    const fm::SectionEntry& e = section(kind);
    if (e.length % sizeof(T) != 0) {
      return fail(LoadError::kMalformed,
                  std::string("section ") + section_name(kind) + " length " + num(e.length) +
                      " is not a multiple of its record size " + num(sizeof(T)));
    }
    static_assert(alignof(T) <= fm::kAlign);
    out = std::span<const T>(reinterpret_cast<const T*>(base() + e.offset), e.length / sizeof(T));
    return true;
  }

  // True when the reference lies in the string section (no overflow: both halves are u32).
  bool str_ok(const fm::StrRef& ref) const {
    return uint64_t{ref.offset} + ref.length <= strings_.size();
  }

  bool bad_str(const fm::StrRef& ref, const std::string& what) {
    return fail(LoadError::kBadOffset, "string offset out of range in " + what + " (offset " +
                                           num(ref.offset) + ", length " + num(ref.length) +
                                           ", string section " + num(strings_.size()) + " bytes)");
  }

  bool str(const fm::StrRef& ref, std::string_view* out, const std::string& what) {
    if (!str_ok(ref)) return bad_str(ref, what);
    *out = strings_.substr(ref.offset, ref.length);
    return true;
  }

  bool decode_strings() {
    const fm::SectionEntry& e = section(fm::kStrings);
    strings_ = std::string_view(reinterpret_cast<const char*>(base()) + e.offset, e.length);
    t_.strings = strings_;
    return true;
  }

  bool decode_meta() {
    const fm::SectionEntry& e = section(fm::kMeta);
    if (e.length != sizeof(fm::MetaRecord)) {
      return fail(LoadError::kMalformed, "meta section has " + num(e.length) + " bytes, expected " +
                                             num(sizeof(fm::MetaRecord)));
    }
    std::memcpy(&meta_, base() + e.offset, sizeof(meta_));
    if (meta_.reserved != 0) {
      return fail(LoadError::kMalformed,
                  "meta reserved word is " + num(meta_.reserved) + ", not 0");
    }
    t_.revision = meta_.revision;
    if (!str(meta_.policy_id, &t_.policy_id, "meta policy id") ||
        !str(meta_.description, &t_.description, "meta description") ||
        !str(meta_.default_reason, &t_.default_reason, "meta default reason")) {
      return false;
    }
    if (meta_.field_count > fm::kMaxFields) {
      return fail(LoadError::kMalformed,
                  num(meta_.field_count) + " fields, over the limit of " + num(fm::kMaxFields));
    }
    return true;
  }

  bool decode_fields() {
    std::span<const fm::FieldRecord> records;
    std::span<const fm::DictEntry> entries;
    if (!view(fm::kFields, records) || !view(fm::kDictEntries, entries) ||
        !view(fm::kDictSlots, t_.dict_slots) || !view(fm::kCuts, t_.cuts)) {
      return false;
    }
    if (records.size() != meta_.field_count) {
      return fail(LoadError::kMalformed, "meta says " + num(meta_.field_count) +
                                             " fields, fields section holds " +
                                             num(records.size()));
    }
    t_.dict.resize(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      t_.dict[i].hash = entries[i].hash;
      if (!str_ok(entries[i].bytes)) return bad_str(entries[i].bytes, "dictionary entry " + num(i));
      t_.dict[i].bytes = strings_.substr(entries[i].bytes.offset, entries[i].bytes.length);
      if (string_hash(t_.dict[i].bytes) != entries[i].hash) {
        return fail(LoadError::kMalformed, "dictionary entry " + num(i) + " has a wrong hash");
      }
    }
    bool any_operator_only = false, any_record_only = false;
    for (size_t f = 0; f < records.size(); ++f) {
      const fm::FieldRecord& r = records[f];
      Table::Impl::Field out;
      const std::string what = "field " + num(f);
      if (!str(r.name, &out.name, what + " name") ||
          !str(r.invalid_reason, &out.invalid_reason, what + " invalid reason")) {
        return false;
      }
      if (r.type >= kFieldTypeCount || r.optional > 1 || r.empty_means_absent > 1 ||
          r.has_min > 1 || r.has_max > 1 || r.source > fm::kSourceRecord || r.idempotency_key > 1 ||
          r.pad != 0) {
        return fail(LoadError::kMalformed, what + " has a bad type or flag byte");
      }
      if (r.reserved != 0) {
        return fail(LoadError::kMalformed,
                    what + " reserved word is " + num(r.reserved) + ", not 0");
      }
      if (r.source == fm::kSourceOperator && (flags_ & fm::kFlagOperatorFields) == 0) {
        return fail(LoadError::kMalformed,
                    what + " is operator-only but the header lacks the operator-fields flag");
      }
      if (r.source == fm::kSourceRecord && (flags_ & fm::kFlagRecordFields) == 0) {
        return fail(LoadError::kMalformed,
                    what + " is record-only but the header lacks the record-fields flag");
      }
      out.source = static_cast<FieldSource>(r.source);
      if (r.idempotency_key != 0) {
        if (r.type != static_cast<uint8_t>(FieldType::kString)) {
          return fail(LoadError::kMalformed,
                      what + " is the idempotency key but is not a string field");
        }
        if (t_.idempotency_key_field != Table::kNoField) {
          return fail(LoadError::kMalformed, what + " is a second idempotency key (field " +
                                                 num(t_.idempotency_key_field) + " is one)");
        }
        t_.idempotency_key_field = static_cast<uint32_t>(f);
      }
      any_operator_only = any_operator_only || r.source == fm::kSourceOperator;
      any_record_only = any_record_only || r.source == fm::kSourceRecord;
      const std::optional<FieldType> type = field_type_from_code(r.type);
      if (!type) return fail(LoadError::kMalformed, what + " has a bad type or flag byte");
      out.type = *type;
      out.optional = r.optional;
      out.empty_means_absent = r.empty_means_absent;
      if (out.empty_means_absent && out.type != FieldType::kString) {
        return fail(LoadError::kMalformed, what + ": empty_means_absent on a non-string field");
      }
      out.has_min = r.has_min;
      out.has_max = r.has_max;
      out.min = r.min;
      out.max = r.max;
      out.atom_count = r.atom_count;
      out.dict_begin = r.dict_begin;
      out.dict_count = r.dict_count;
      out.slot_begin = r.slot_begin;
      out.slot_count = r.slot_count;
      out.cut_begin = r.cut_begin;
      out.cut_count = r.cut_count;
      const bool dictionary = out.type == FieldType::kString || out.type == FieldType::kEnum;
      out.first_atom = out.type == FieldType::kString ? 2 : 1;
      uint64_t expected_atoms = 0;
      switch (out.type) {
        case FieldType::kString:
          expected_atoms = 2 + uint64_t{r.dict_count};
          break;
        case FieldType::kEnum:
          expected_atoms = 1 + uint64_t{r.dict_count};
          break;
        case FieldType::kBool:
          expected_atoms = 3;
          break;
        case FieldType::kInt:
          expected_atoms = 2 + uint64_t{r.cut_count};
          break;
      }
      if (r.atom_count != expected_atoms) {
        return fail(LoadError::kMalformed, what + " has " + num(r.atom_count) +
                                               " atoms, its type needs " + num(expected_atoms));
      }
      if (!dictionary && (r.dict_count != 0 || r.slot_count != 0)) {
        return fail(LoadError::kMalformed, what + " has a dictionary but is not a string or enum");
      }
      if (out.type != FieldType::kInt && (r.cut_count != 0 || r.has_min || r.has_max)) {
        return fail(LoadError::kMalformed, what + " has cut points or bounds but is not an int");
      }
      if (!in_range(r.dict_begin, r.dict_count, t_.dict.size()) ||
          !in_range(r.slot_begin, r.slot_count, t_.dict_slots.size()) ||
          !in_range(r.cut_begin, r.cut_count, t_.cuts.size())) {
        return fail(LoadError::kBadOffset, what + " dictionary, slot or cut range out of range");
      }
      if (r.dict_count == 0 ? r.slot_count != 0
                            : (!is_pow2(r.slot_count) || r.slot_count <= r.dict_count)) {
        return fail(LoadError::kMalformed, what + " has " + num(r.slot_count) +
                                               " index slots for " + num(r.dict_count) +
                                               " entries (need a power of two above it)");
      }
      for (uint32_t i = 1; i < r.cut_count; ++i) {
        if (t_.cuts[r.cut_begin + i - 1] >= t_.cuts[r.cut_begin + i]) {
          return fail(LoadError::kMalformed, what + " cut points are not sorted");
        }
      }
      if (out.type == FieldType::kString) {
        for (uint32_t i = 1; i < r.dict_count; ++i) {
          if (t_.dict[r.dict_begin + i - 1].bytes >= t_.dict[r.dict_begin + i].bytes) {
            return fail(LoadError::kMalformed, what + " dictionary is not sorted");
          }
        }
      }
      uint32_t occupied = 0;
      for (uint32_t s = 0; s < r.slot_count; ++s) {
        uint32_t atom = t_.dict_slots[r.slot_begin + s];
        if (atom == 0) continue;
        ++occupied;
        if (atom < out.first_atom || atom - out.first_atom >= r.dict_count) {
          return fail(LoadError::kBadOffset, what + " index slot " + num(s) + " holds atom " +
                                                 num(atom) + ", out of range");
        }
      }
      if (occupied != r.dict_count) {
        return fail(LoadError::kMalformed, what + " index holds " + num(occupied) +
                                               " entries, expected " + num(r.dict_count));
      }
      t_.fields.push_back(out);
      // Every entry must be found where decide() will look for it.
      for (uint32_t i = 0; i < r.dict_count; ++i) {
        const auto& entry = t_.dict[r.dict_begin + i];
        if (t_.lookup(t_.fields.back(), entry.bytes, entry.hash) != out.first_atom + i) {
          return fail(LoadError::kMalformed,
                      what + " dictionary index does not find entry " + num(i));
        }
      }
    }
    if ((flags_ & fm::kFlagOperatorFields) != 0 && !any_operator_only) {
      return fail(LoadError::kMalformed,
                  "the header's operator-fields flag is set but no field is operator-only");
    }
    if ((flags_ & fm::kFlagRecordFields) != 0 && !any_record_only) {
      return fail(LoadError::kMalformed,
                  "the header's record-fields flag is set but no field is record-only");
    }
    return true;
  }

  bool decode_verbs() {
    std::span<const fm::VerbRecord> records;
    if (!view(fm::kVerbs, records)) return false;
    if (records.size() != meta_.verb_count || records.empty()) {
      return fail(LoadError::kMalformed, "meta says " + num(meta_.verb_count) +
                                             " verbs, verbs section holds " + num(records.size()));
    }
    for (size_t v = 0; v < records.size(); ++v) {
      Table::Impl::Verb out;
      if (!str(records[v].name, &out.name, "verb " + num(v) + " name") ||
          !str(records[v].description, &out.description, "verb " + num(v) + " description")) {
        return false;
      }
      if (records[v].reserved != 0) {
        return fail(LoadError::kMalformed,
                    "verb " + num(v) + " reserved word is " + num(records[v].reserved) + ", not 0");
      }
      const std::optional<Effect> effect = effect_from_code(records[v].effect);
      if (!effect) {
        return fail(LoadError::kMalformed,
                    "verb " + num(v) + " has unknown effect " + num(records[v].effect));
      }
      out.effect = *effect;
      t_.verbs.push_back(out);
    }
    if (meta_.default_verb >= t_.verbs.size()) {
      return fail(LoadError::kBadOffset,
                  "default verb index " + num(meta_.default_verb) + " out of range");
    }
    t_.default_verb = meta_.default_verb;
    if (t_.verbs[t_.default_verb].effect != Effect::kNone) {
      return fail(LoadError::kMalformed, "default verb must have effect none");
    }
    return true;
  }

  // The catalog stays in the table bytes (Table::Impl::catalog). One branch-free pass checks
  // every entry; only when it finds a bad one does a second pass name the first.
  bool decode_catalog() {
    std::span<const fm::CatalogRecord> records;
    if (!view(fm::kCatalog, records)) return false;
    if (records.size() != meta_.catalog_count) {
      return fail(LoadError::kMalformed, "meta says " + num(meta_.catalog_count) +
                                             " catalog entries, catalog holds " +
                                             num(records.size()));
    }
    const uint64_t string_bytes = strings_.size();
    const uint32_t verb_count = static_cast<uint32_t>(t_.verbs.size());
    bool bad = false;
    for (const fm::CatalogRecord& r : records) {
      bad |= (uint64_t{r.id.offset} + r.id.length > string_bytes) |
             (uint64_t{r.reason.offset} + r.reason.length > string_bytes) | (r.verb >= verb_count) |
             (r.reserved != 0);
    }
    if (!bad) {
      t_.catalog = records;
      return true;
    }
    for (size_t c = 0; c < records.size(); ++c) {
      const std::string what = "catalog entry " + num(c);
      if (!str_ok(records[c].id)) return bad_str(records[c].id, what + " id");
      if (!str_ok(records[c].reason)) return bad_str(records[c].reason, what + " reason");
      if (records[c].verb >= verb_count) {
        return fail(LoadError::kBadOffset, what + " verb index " + num(records[c].verb) +
                                               " out of range (" + num(t_.verbs.size()) +
                                               " verbs)");
      }
      if (records[c].reserved != 0) {
        return fail(LoadError::kMalformed,
                    what + " reserved word is " + num(records[c].reserved) + ", not 0");
      }
    }
    return fail(LoadError::kMalformed, "catalog check disagrees with itself");  // unreachable
  }

  bool decode_rules() {
    std::span<const fm::RuleRecord> records;
    std::span<const fm::ConditionRecord> conditions;
    if (!view(fm::kRules, records) || !view(fm::kConditions, conditions) ||
        !view(fm::kBitsets, t_.bitsets) || !view(fm::kTableKeys, t_.table_keys) ||
        !view(fm::kMasks, t_.masks) || !view(fm::kRowSlots, t_.row_slots) ||
        !view(fm::kRowKeys, t_.row_keys)) {
      return false;
    }
    if (records.size() != meta_.rule_count) {
      return fail(LoadError::kMalformed, "meta says " + num(meta_.rule_count) +
                                             " rules, rules section holds " + num(records.size()));
    }
    for (size_t c = 0; c < conditions.size(); ++c) {
      const fm::ConditionRecord& r = conditions[c];
      const std::string what = "condition " + num(c);
      Table::Impl::Condition out;
      if (!str(r.text, &out.text, what + " text")) return false;
      if (r.field >= t_.fields.size()) {
        return fail(LoadError::kBadOffset, what + " field index " + num(r.field) + " out of range");
      }
      if (r.op >= kOpCount) return fail(LoadError::kMalformed, what + " has unknown op");
      const uint32_t atoms = t_.fields[r.field].atom_count;
      if (r.bits_count != (uint64_t{atoms} + 63) / 64) {
        return fail(LoadError::kMalformed, what + " bitset has " + num(r.bits_count) +
                                               " words for " + num(atoms) + " atoms");
      }
      if (!in_range(r.bits_begin, r.bits_count, t_.bitsets.size())) {
        return fail(LoadError::kBadOffset, what + " bitset out of range");
      }
      for (uint64_t a = atoms; a < uint64_t{r.bits_count} * 64; ++a) {
        if ((t_.bitsets[r.bits_begin + a / 64] >> (a % 64)) & 1u) {
          return fail(LoadError::kMalformed,
                      what + " accepts atom " + num(a) + ", beyond its field's atoms");
        }
      }
      out.field = r.field;
      out.op = r.op;
      out.bits_begin = r.bits_begin;
      out.bits_count = r.bits_count;
      t_.conditions.push_back(out);
    }
    uint64_t catalog_next = 0;
    for (size_t ri = 0; ri < records.size(); ++ri) {
      const fm::RuleRecord& r = records[ri];
      const std::string what = "rule " + num(ri);
      Table::Impl::Rule out;
      if (!str(r.id, &out.id, what + " id")) return false;
      if (r.kind > fm::kRuleTable) return fail(LoadError::kMalformed, what + " has unknown kind");
      out.is_table = r.kind == fm::kRuleTable;
      if (r.catalog_begin != catalog_next ||
          !in_range(r.catalog_begin, r.catalog_count, t_.catalog.size()) ||
          (!out.is_table && r.catalog_count != 1)) {
        return fail(LoadError::kMalformed, what + " catalog range does not follow the rules");
      }
      const fm::CatalogRecord* entries = t_.catalog.data() + r.catalog_begin;
      bool mismatch = false;
      for (uint32_t i = 0; i < r.catalog_count; ++i) {
        mismatch |= (entries[i].rule != ri) | (entries[i].row != i);
      }
      for (uint32_t i = 0; mismatch && i < r.catalog_count; ++i) {
        if (entries[i].rule != ri || entries[i].row != i) {
          return fail(LoadError::kMalformed,
                      "catalog entry " + num(r.catalog_begin + i) + " does not match " + what);
        }
      }
      catalog_next += r.catalog_count;
      out.catalog_begin = r.catalog_begin;
      out.catalog_count = r.catalog_count;
      out.item_begin = r.item_begin;
      out.item_count = r.item_count;
      out.mask_begin = r.mask_begin;
      out.mask_count = r.mask_count;
      out.row_key_begin = r.row_key_begin;
      if (!out.is_table) {
        if (r.item_count == 0) return fail(LoadError::kMalformed, what + " has no conditions");
        if (!in_range(r.item_begin, r.item_count, t_.conditions.size())) {
          return fail(LoadError::kBadOffset, what + " condition range out of range");
        }
        if (r.mask_count != 0) return fail(LoadError::kMalformed, what + " is a guard with masks");
      } else if (!check_table(r, what)) {
        return false;
      }
      t_.rules.push_back(out);
    }
    if (catalog_next != t_.catalog.size()) {
      return fail(LoadError::kMalformed, "rules cover " + num(catalog_next) + " of " +
                                             num(t_.catalog.size()) + " catalog entries");
    }
    return true;
  }

  bool check_table(const fm::RuleRecord& r, const std::string& what) {
    if (r.item_count == 0 || r.item_count > fm::kMaxKeys) {
      return fail(LoadError::kMalformed, what + " has " + num(r.item_count) + " keys");
    }
    if (!in_range(r.item_begin, r.item_count, t_.table_keys.size())) {
      return fail(LoadError::kBadOffset, what + " key range out of range");
    }
    for (uint32_t k = 0; k < r.item_count; ++k) {
      if (t_.table_keys[r.item_begin + k] >= t_.fields.size()) {
        return fail(LoadError::kBadOffset, what + " key " + num(k) + " field index out of range");
      }
    }
    const uint64_t key_cells = uint64_t{r.catalog_count} * r.item_count;
    if (!in_range(r.row_key_begin, key_cells, t_.row_keys.size())) {
      return fail(LoadError::kBadOffset, what + " row keys out of range");
    }
    uint32_t atom_counts[fm::kMaxKeys];
    for (uint32_t k = 0; k < r.item_count; ++k) {
      atom_counts[k] = t_.fields[t_.table_keys[r.item_begin + k]].atom_count;
    }
    // Each row's mask of concrete keys (item_count <= kMaxKeys = 8 bits).
    const uint32_t rows = r.catalog_count;
    std::unique_ptr<uint8_t[]> row_masks(new uint8_t[rows]);
    const uint32_t* keys = t_.row_keys.data() + r.row_key_begin;
    bool uniform = true;  // every row has the same mask, row_masks[0]
    for (uint32_t row = 0; row < rows; ++row, keys += r.item_count) {
      uint32_t row_mask = 0;
      for (uint32_t k = 0; k < r.item_count; ++k) {
        const uint32_t atom = keys[k];
        if (atom == fm::kWildcard) continue;
        if (atom == 0 || atom >= atom_counts[k]) {
          return fail(LoadError::kBadOffset, what + " row " + num(row) + " key " + num(k) +
                                                 " atom " + num(atom) + " out of range");
        }
        row_mask |= 1u << k;
      }
      row_masks[row] = static_cast<uint8_t>(row_mask);
      uniform &= row_mask == row_masks[0];
    }
    if (!in_range(r.mask_begin, r.mask_count, t_.masks.size())) {
      return fail(LoadError::kBadOffset, what + " mask range out of range");
    }
    for (uint32_t m = 0; m < r.mask_count; ++m) {
      const fm::MaskRecord& mask = t_.masks[r.mask_begin + m];
      const std::string mwhat = what + " mask " + num(m);
      if (mask.mask >= (1u << r.item_count) ||
          mask.concrete_count != static_cast<uint32_t>(std::popcount(mask.mask))) {
        return fail(LoadError::kMalformed, mwhat + " is not a valid key mask");
      }
      if (m > 0) {
        const fm::MaskRecord& prev = t_.masks[r.mask_begin + m - 1];
        bool ordered = prev.concrete_count > mask.concrete_count ||
                       (prev.concrete_count == mask.concrete_count && prev.mask < mask.mask);
        if (!ordered) return fail(LoadError::kMalformed, mwhat + " is out of order");
      }
      if (!is_pow2(mask.slot_count) ||
          !in_range(mask.slot_begin, mask.slot_count, t_.row_slots.size())) {
        return fail(LoadError::kBadOffset, mwhat + " row slots out of range");
      }
      // A fast pass finds whether any slot is bad; only then does the loop below name it. When
      // all rows share one mask (a table without wildcards, say), a slot's row need not be looked
      // up: a slot of that mask is good when in range, any used slot of another mask is bad.
      const uint32_t* slots = t_.row_slots.data() + mask.slot_begin;
      bool bad = false;
      if (uniform) {
        // Used slots may name rows 1..rows, or none when the rows have another mask.
        const uint32_t limit = rows > 0 && mask.mask == row_masks[0] ? rows : 0;
        uint32_t largest = 0;
        for (uint32_t s = 0; s < mask.slot_count; ++s) largest = std::max(largest, slots[s]);
        bad = largest > limit;
      } else {
        for (uint32_t s = 0; s < mask.slot_count && !bad; ++s) {
          const uint32_t v = slots[s];
          bad = v != 0 && (v > rows || row_masks[v - 1] != mask.mask);
        }
      }
      for (uint32_t s = 0; bad && s < mask.slot_count; ++s) {
        uint32_t v = slots[s];
        if (v == 0) continue;
        if (v > r.catalog_count) {
          return fail(LoadError::kBadOffset,
                      mwhat + " slot " + num(s) + " names row " + num(v - 1) + ", out of range");
        }
        if (row_masks[v - 1] != mask.mask) {
          return fail(LoadError::kMalformed,
                      mwhat + " indexes row " + num(v - 1) + " whose wildcards differ");
        }
      }
    }
    return check_rows_indexed(r, row_masks.get(), what);
  }

  // decide() finds a table's rows only through the masks' slots (runtime/decide.cc, probe), while
  // dump, explain's trace and diff read the rows themselves: the two must agree, or a table whose
  // checksum was recomputed after an edit (a kind flipped, a slot cleared) would decide what its
  // own rows do not say. So no row is named by two slots, and a row no slot names must repeat the
  // keys of an earlier row that its mask's index finds (lower.cc leaves such unreachable rows
  // out; a checked policy has none, RG203): a probe per row left out, none in a normal table.
  // (That each indexed row sits where its hash leads is the writer's and the checksum's:
  // re-deriving every row's home slot doubled the load time of a 1,000,000-row table.)
  bool check_rows_indexed(const fm::RuleRecord& r, const uint8_t* row_masks,
                          const std::string& what) {
    const uint32_t rows = r.catalog_count, key_count = r.item_count;
    const uint32_t* row_keys = t_.row_keys.data() + r.row_key_begin;
    int32_t record_of_mask[1u << fm::kMaxKeys];
    std::fill(std::begin(record_of_mask), std::end(record_of_mask), -1);
    // How many slots name each row, saturating at 2: [0] counts the empty slots, row r is [r + 1]
    // (no branch per slot: half the slots are empty, at random).
    std::unique_ptr<uint8_t[]> named(new uint8_t[uint64_t{rows} + 1]());
    for (uint32_t m = 0; m < r.mask_count; ++m) {
      const fm::MaskRecord& mask = t_.masks[r.mask_begin + m];
      record_of_mask[mask.mask] = static_cast<int32_t>(m);
      const uint32_t* slots = t_.row_slots.data() + mask.slot_begin;
      for (uint32_t s = 0; s < mask.slot_count; ++s) {
        uint8_t& count = named[slots[s]];
        count = static_cast<uint8_t>(count | ((count & 1u) << 1) | 1u);  // 0 -> 1 -> 3
      }
    }
    for (uint32_t row = 0; row < rows; ++row) {
      if (named[row + 1] == 1) continue;
      if (named[row + 1] != 0) {
        return fail(LoadError::kMalformed, what + " indexes row " + num(row) + " twice");
      }
      const int32_t m = record_of_mask[row_masks[row]];
      uint32_t found = rows;
      if (m >= 0) {
        const fm::MaskRecord& mask = t_.masks[r.mask_begin + static_cast<uint32_t>(m)];
        const uint32_t* slots = t_.row_slots.data() + mask.slot_begin;
        const uint32_t* keys = row_keys + uint64_t{row} * key_count;
        uint32_t at = static_cast<uint32_t>(fm::key_tuple_hash(keys, key_count, mask.mask));
        for (uint32_t probes = 0; probes < mask.slot_count; ++probes, ++at) {
          at &= mask.slot_count - 1;
          if (slots[at] == 0) break;
          const uint32_t* other = row_keys + uint64_t{slots[at] - 1} * key_count;
          bool same = true;
          for (uint32_t k = 0; k < key_count; ++k) {
            same &= !((mask.mask >> k) & 1u) || other[k] == keys[k];
          }
          if (same) {
            found = slots[at] - 1;
            break;
          }
        }
      }
      if (found >= row) {
        return fail(
            LoadError::kMalformed,
            what + " row " + num(row) + " is not indexed" +
                (found < rows ? ", but the later row " + num(found) + " with its keys is" : ""));
      }
    }
    return true;
  }

  bool decode_provenance() {
    const fm::SectionEntry& e = section(fm::kProvenance);
    fm::ProvenanceHeader h{};
    if (e.length < sizeof(h)) return fail(LoadError::kMalformed, "provenance section too short");
    std::memcpy(&h, base() + e.offset, sizeof(h));
    if (h.reserved != 0) {
      return fail(LoadError::kMalformed,
                  "provenance reserved word is " + num(h.reserved) + ", not 0");
    }
    if (h.line_count != t_.catalog.size()) {
      return fail(LoadError::kMalformed, "provenance has " + num(h.line_count) + " lines for " +
                                             num(t_.catalog.size()) + " catalog entries");
    }
    const uint64_t need =
        sizeof(h) + uint64_t{h.line_count} * 4 + uint64_t{h.name_length} + h.digest_length;
    if (need > e.length) {
      return fail(LoadError::kBadOffset, "provenance content runs past its section");
    }
    const uint8_t* p = base() + e.offset + sizeof(h);  // 8-byte aligned + 16: u32-aligned
    t_.source_lines = std::span<const uint32_t>(reinterpret_cast<const uint32_t*>(p), h.line_count);
    p += uint64_t{h.line_count} * 4;
    t_.source_name = std::string_view(reinterpret_cast<const char*>(p), h.name_length);
    t_.source_digest =
        std::string_view(reinterpret_cast<const char*>(p) + h.name_length, h.digest_length);
    return true;
  }

  // The optional derivations section: present only with section_count 17, then non-empty (a
  // policy without derived fields has the 16-section layout), one record per derived field in
  // ascending field order, each a required bool computed from two earlier required ints.
  bool decode_derivations() {
    if (section_count_ < fm::kDerivations) return true;
    if (!view(fm::kDerivations, t_.derivations)) return false;
    // With classifiers (section_count 18) the derivations section is there even when empty.
    if (t_.derivations.empty() && section_count_ == fm::kDerivationsSectionCount) {
      return fail(LoadError::kMalformed, "derivations section is present but empty");
    }
    for (size_t i = 0; i < t_.derivations.size(); ++i) {
      const fm::DerivationRecord& d = t_.derivations[i];
      const std::string what = "derivation " + num(i);
      if (d.field >= t_.fields.size() || d.lhs >= d.field || d.rhs >= d.field) {
        return fail(LoadError::kBadOffset, what + " field index out of range");
      }
      if (i > 0 && t_.derivations[i - 1].field >= d.field) {
        return fail(LoadError::kMalformed, what + " is out of order");
      }
      const bool op_ok = d.op == 0 || d.op == 1 || (d.op >= 4 && d.op <= 7);  // eq ne lt le gt ge
      Table::Impl::Field& f = t_.fields[d.field];
      const auto& lhs = t_.fields[d.lhs];
      const auto& rhs = t_.fields[d.rhs];
      if (!op_ok || f.type != FieldType::kBool || f.optional || f.source != FieldSource::kLetter ||
          lhs.type != FieldType::kInt || lhs.optional || rhs.type != FieldType::kInt ||
          rhs.optional) {
        return fail(LoadError::kMalformed,
                    what + " must compare two required ints into a required bool");
      }
      f.derived = true;
    }
    return true;
  }

  // The optional classifiers section (section_count 18): a header, the classifier records in
  // ascending field order, then every matcher; each classified field a required letter-sourced
  // enum computed from an earlier string or int field that is not computed itself, each class
  // index inside the enum, each matcher of the raw field's type, ranges not empty, prefixes not
  // empty, rows non-decreasing. Everything decide() reads is checked here, once.
  bool decode_classifiers() {
    if (section_count_ < fm::kClassifiers) return true;
    const fm::SectionEntry& e = section(fm::kClassifiers);
    fm::ClassifierHeader h{};
    if (e.length < sizeof(h)) {
      return fail(LoadError::kMalformed, "classifiers section is too short for its header");
    }
    std::memcpy(&h, base() + e.offset, sizeof(h));
    if (h.classifier_count == 0) {
      return fail(LoadError::kMalformed, "classifiers section is present but empty");
    }
    const uint64_t want = sizeof(h) + uint64_t{h.classifier_count} * sizeof(fm::ClassifierRecord) +
                          uint64_t{h.matcher_count} * sizeof(fm::ClassifierMatcher);
    if (want != e.length) {
      return fail(LoadError::kMalformed, "classifiers section length " + num(e.length) +
                                             " does not match its counts (" + num(want) + ")");
    }
    const uint8_t* p = base() + e.offset + sizeof(h);
    t_.classifiers = std::span<const fm::ClassifierRecord>(
        reinterpret_cast<const fm::ClassifierRecord*>(p), h.classifier_count);
    t_.classifier_matchers = std::span<const fm::ClassifierMatcher>(
        reinterpret_cast<const fm::ClassifierMatcher*>(p + uint64_t{h.classifier_count} *
                                                               sizeof(fm::ClassifierRecord)),
        h.matcher_count);
    uint64_t next_matcher = 0;
    for (size_t i = 0; i < t_.classifiers.size(); ++i) {
      const fm::ClassifierRecord& c = t_.classifiers[i];
      const std::string what = "classifier " + num(i);
      if (c.field >= t_.fields.size() || c.raw >= c.field) {
        return fail(LoadError::kBadOffset, what + " field index out of range");
      }
      if (i > 0 && t_.classifiers[i - 1].field >= c.field) {
        return fail(LoadError::kMalformed, what + " is out of order");
      }
      if (c.reserved != 0) {
        return fail(LoadError::kMalformed, what + " reserved word is " + num(c.reserved));
      }
      Table::Impl::Field& f = t_.fields[c.field];
      const Table::Impl::Field& raw = t_.fields[c.raw];
      if (f.type != FieldType::kEnum || f.optional || f.source != FieldSource::kLetter ||
          f.derived || raw.derived ||
          (raw.type != FieldType::kString && raw.type != FieldType::kInt)) {
        return fail(LoadError::kMalformed,
                    what + " must classify a string or int input into a required enum");
      }
      const uint32_t classes = f.atom_count - 1;
      if (c.fallback >= classes) {
        return fail(LoadError::kBadOffset, what + " fallback class " + num(c.fallback) +
                                               " is out of range (" + num(classes) + " classes)");
      }
      if (c.matcher_begin != next_matcher ||
          uint64_t{c.matcher_begin} + c.matcher_count > t_.classifier_matchers.size()) {
        return fail(LoadError::kBadOffset, what + " matchers are out of range or not contiguous");
      }
      next_matcher = uint64_t{c.matcher_begin} + c.matcher_count;
      for (uint32_t m = 0; m < c.matcher_count; ++m) {
        const fm::ClassifierMatcher& x = t_.classifier_matchers[c.matcher_begin + m];
        const std::string where = what + " matcher " + num(m);
        if (x.cls >= classes) {
          return fail(LoadError::kBadOffset, where + " class " + num(x.cls) + " is out of range (" +
                                                 num(classes) + " classes)");
        }
        if (x.reserved != 0 ||
            (m > 0 && t_.classifier_matchers[c.matcher_begin + m - 1].row > x.row)) {
          return fail(LoadError::kMalformed, where + " has a reserved word or row out of order");
        }
        const bool on_string = x.kind == fm::kMatchExact || x.kind == fm::kMatchPrefix;
        const bool on_int = x.kind == fm::kMatchInt || x.kind == fm::kMatchRange;
        if (!on_string && !on_int) {
          return fail(LoadError::kMalformed, where + " has unknown kind " + num(x.kind));
        }
        if (on_string != (raw.type == FieldType::kString)) {
          return fail(LoadError::kMalformed, where + " does not match the raw field's type");
        }
        if (on_string) {
          if (!str_ok(x.text)) {
            return fail(LoadError::kBadOffset, where + " string reference out of range");
          }
          if (x.lo != 0 || x.hi != 0 || (x.kind == fm::kMatchPrefix && x.text.length == 0)) {
            return fail(LoadError::kMalformed, where + " is malformed (bounds or empty prefix)");
          }
        } else if (x.text.offset != 0 || x.text.length != 0 || x.lo > x.hi ||
                   (x.kind == fm::kMatchInt && x.lo != x.hi)) {
          return fail(LoadError::kMalformed, where + " is a malformed range [" +
                                                 std::to_string(x.lo) + ", " +
                                                 std::to_string(x.hi) + "]");
        }
      }
      f.derived = true;  // computed: decide() and trace() skip its input slot
      f.classified = true;
    }
    if (next_matcher != t_.classifier_matchers.size()) {
      return fail(LoadError::kMalformed, "classifiers section has matchers no classifier owns");
    }
    return true;
  }

  // The digests were computed while the bytes arrived (TableHasher). The hasher plans from the
  // same directory check_directory() accepted, so it always has them here; computing them anew
  // when it does not only guards against the two checks drifting apart.
  bool check_digests() {
    XXH128_hash_t decision{}, provenance{};
    if (hasher_.planned()) {
      decision = hasher_.decision_digest();
      provenance = hasher_.provenance_digest();
    } else {
      Xxh128 d;
      for (uint32_t i = 0; i < section_count_; ++i) {
        const fm::SectionEntry& e = sections_[i];
        if (e.kind == fm::kProvenance) continue;
        uint32_t kind = e.kind;
        uint64_t length = e.length;
        d.update(&kind, sizeof(kind));
        d.update(&length, sizeof(length));
        d.update(base() + e.offset, e.length);
      }
      decision = d.digest();
      const fm::SectionEntry& prov = section(fm::kProvenance);
      Xxh128 p;
      p.update(base() + prov.offset, prov.length);
      provenance = p.digest();
    }
    if (!digest_equals(t_.header.decision_digest, decision) && !kSkipDigests) {
      return fail(LoadError::kBadChecksum, "bad decision digest: header says " +
                                               hex128(t_.header.decision_digest) +
                                               ", sections hash to " + hex128(decision));
    }
    if (!digest_equals(t_.header.provenance_digest, provenance) && !kSkipDigests) {
      return fail(LoadError::kBadChecksum, "bad provenance digest: header says " +
                                               hex128(t_.header.provenance_digest) +
                                               ", section hashes to " + hex128(provenance));
    }
    return true;
  }

  Table::Impl& t_;
  const TableHasher& hasher_;
  LoadStatus* status_;
  uint64_t directory_end_ = 0;
  uint32_t section_count_ = fm::kSectionCount;
  uint32_t flags_ = 0;  // the header's, checked against kKnownFlags
  fm::SectionEntry sections_[fm::kMaxSectionCount] = {};
  fm::MetaRecord meta_{};
  std::string_view strings_;
};

}  // namespace

const char* load_error_name(LoadError error) {
  switch (error) {
    case LoadError::kOk:
      return "ok";
    case LoadError::kIo:
      return "io";
    case LoadError::kTooLarge:
      return "too_large";
    case LoadError::kTruncated:
      return "truncated";
    case LoadError::kBadMagic:
      return "bad_magic";
    case LoadError::kUnsupportedVersion:
      return "unsupported_version";
    case LoadError::kBadChecksum:
      return "bad_checksum";
    case LoadError::kBadOffset:
      return "bad_offset";
    case LoadError::kMalformed:
      return "malformed";
    case LoadError::kIncompatible:
      return "incompatible";
    case LoadError::kSignature:
      return "signature";
    case LoadError::kRollback:
      return "rollback";
    case LoadError::kExpired:
      return "expired";
  }
  return "?";
}

void TableBuffer::allocate(size_t size) {
  const size_t words = (size + 7) / 8;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr size_t kHuge = size_t{2} << 20;
  if (size >= 2 * kHuge) {
    // Map one huge page more than needed, then unmap the parts outside the aligned range.
    const size_t length = (words * 8 + kHuge - 1) & ~(kHuge - 1);
    void* p =
        mmap(nullptr, length + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
      const uintptr_t begin = (raw + kHuge - 1) & ~(uintptr_t{kHuge} - 1);
      if (begin > raw) munmap(p, begin - raw);
      munmap(reinterpret_cast<void*>(begin + length), raw + kHuge - begin);  // never 0 bytes
      // Hints: a kernel without them (or with huge pages off) fills the pages on first touch.
      madvise(reinterpret_cast<void*>(begin), length, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
      madvise(reinterpret_cast<void*>(begin), length, MADV_POPULATE_WRITE);
#endif
      words_ = reinterpret_cast<uint64_t*>(begin);
      mapped_ = length;
      return;
    }
  }
#endif
  words_ = new uint64_t[words];  // default-initialised: no fill
}

TableBuffer::~TableBuffer() {
  if (mapped_ != 0) {
    munmap(words_, mapped_);
  } else {
    delete[] words_;
  }
}

namespace {

// The checks load_bytes() makes before allocating: true when the bytes may be a table.
bool precheck(const void* data, size_t size, LoadStatus* status) {
  if (size > Table::kMaxTableBytes) {
    *status = {LoadError::kTooLarge,
               num(size) + " bytes, over the limit of " + num(Table::kMaxTableBytes)};
    return false;
  }
  if (data == nullptr || size == 0) {
    *status = {LoadError::kTruncated, "empty table"};
    return false;
  }
  if (size < sizeof(fm::Header)) {
    size_t prefix = std::min(size, sizeof(fm::kMagic));
    if (std::memcmp(data, fm::kMagic, prefix) != 0) {
      *status = {LoadError::kBadMagic, "bad magic: not a replaygate table"};
    } else {
      *status = {LoadError::kTruncated,
                 "truncated: " + num(size) + " bytes, the header needs " + num(sizeof(fm::Header))};
    }
    return false;
  }
  return true;
}

std::string io_error(const char* what, const std::string& path, int error) {
  return std::string(what) + " " + path + ": " + std::generic_category().message(error);
}

// read(2) that retries when a signal interrupts it.
ssize_t read_some(int fd, void* buffer, size_t size) {
  ssize_t n;
  do {
    n = ::read(fd, buffer, size);
  } while (n < 0 && errno == EINTR);
  return n;
}

// Owns a file descriptor.
struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

// Reads into [out + done, out + size) until it is full or the stream ends, feeding each piece to
// `hasher` when there is one. The bytes now there (done + what was read), or -1 on a read error
// (errno set).
ssize_t read_up_to(int fd, uint8_t* out, size_t done, size_t size, TableHasher* hasher) {
  while (done < size) {
    const ssize_t n = read_some(fd, out + done, std::min(kChunk, size - done));
    if (n < 0) return -1;
    if (n == 0) break;
    if (hasher != nullptr) hasher->feed(out, done, done + static_cast<size_t>(n));
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

}  // namespace

std::unique_ptr<Table> Table::load_file(const std::string& path, LoadStatus* status) {
  LoadStatus ignored;
  if (status == nullptr) status = &ignored;
  *status = {};
  // O_NONBLOCK: a blocking open of a FIFO waits for a writer, forever if none comes (a reload
  // thread would hang), and opening some devices blocks too. Cleared once the file is known to
  // be one we read, so that a pipe's reads wait for its writer's bytes.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *status = {LoadError::kIo, io_error("cannot open", path, errno)};
    return nullptr;
  }
  Fd closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *status = {LoadError::kIo, io_error("cannot read", path, errno)};
    return nullptr;
  }
  // Devices (/dev/zero, /dev/urandom, a terminal) are never tables and may never end: refused
  // before any read. Directories go on to read(), whose EISDIR says what they are.
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISDIR(st.st_mode)) {
    const char* kind = S_ISCHR(st.st_mode)    ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    *status = {LoadError::kIo, "cannot read " + path + ": " + kind +
                                   ", not a table file (a table is read from a regular file "
                                   "or a pipe)"};
    return nullptr;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    *status = {LoadError::kIo, io_error("cannot read", path, errno)};
    return nullptr;
  }
  // Pipes, directories (whose read fails with EISDIR) and files that report no size (some in
  // /proc) are streams: no size to trust, so the header is read first, checked, and then says
  // how many bytes to read. A stream that is no table (cat /dev/zero |) is refused after its
  // first 80 bytes, and no stream is read more than one byte past the size its header gives.
  // A regular file is read straight into the table's buffer, sized from fstat. Publishers
  // replace a table by atomic rename, so the open descriptor keeps the old file whole; a file
  // changed in place that ends early or runs long is an I/O error. Both hash each piece as it
  // arrives.
  const bool stream = !S_ISREG(st.st_mode) || st.st_size <= 0;
  uint8_t head[sizeof(fm::Header)];
  size_t have = 0;  // bytes of `head` read
  size_t size = 0;
  if (stream) {
    const ssize_t got = read_up_to(fd, head, 0, sizeof(head), nullptr);
    if (got < 0) {
      *status = {LoadError::kIo, io_error("cannot read", path, errno)};
      return nullptr;
    }
    have = static_cast<size_t>(got);
    if (have == 0 && S_ISFIFO(st.st_mode)) {
      *status = {LoadError::kTruncated, "empty table: the pipe " + path +
                                            " gave no bytes (a FIFO with no writer when it is "
                                            "opened reads as empty)"};
      return nullptr;
    }
    if (have < sizeof(head)) return load_bytes(head, have, status);  // empty, or short
    fm::Header h;
    std::memcpy(&h, head, sizeof(h));
    if (!check_header_alone(h, status)) return nullptr;
    if (h.total_size < sizeof(head)) {
      *status = {LoadError::kMalformed, "trailing bytes: header says " + num(h.total_size) +
                                            " bytes, got at least " + num(sizeof(head))};
      return nullptr;
    }
    size = static_cast<size_t>(h.total_size);
  } else {
    if (static_cast<uint64_t>(st.st_size) > kMaxTableBytes) {
      *status = {LoadError::kTooLarge,
                 path + " is over the limit of " + num(kMaxTableBytes) + " bytes"};
      return nullptr;
    }
    size = static_cast<size_t>(st.st_size);
  }
  auto impl = std::make_unique<Impl>();
  impl->storage.allocate(size);
  impl->size = size;
  uint8_t* out = reinterpret_cast<uint8_t*>(impl->storage.get());
  TableHasher hasher(size);
  std::memcpy(out, head, have);
  if (have > 0) hasher.feed(out, 0, have);
  const ssize_t done = read_up_to(fd, out, have, size, &hasher);
  if (done < 0) {
    *status = {LoadError::kIo, io_error("cannot read", path, errno)};
    return nullptr;
  }
  if (static_cast<size_t>(done) < size) {
    // The loader's own words for a short table, which a stream is when it ends early.
    *status = stream ? LoadStatus{LoadError::kTruncated, "truncated: header says " + num(size) +
                                                             " bytes, got " + num(done)}
                     : LoadStatus{LoadError::kIo,
                                  "cannot read " + path + ": the file shrank from " + num(size) +
                                      " to " + num(done) + " bytes while being read"};
    return nullptr;
  }
  char extra;
  const ssize_t more = read_some(fd, &extra, 1);
  if (more < 0) {
    *status = {LoadError::kIo, io_error("cannot read", path, errno)};
    return nullptr;
  }
  if (more > 0) {
    *status =
        stream ? LoadStatus{LoadError::kMalformed, "trailing bytes: header says " + num(size) +
                                                       " bytes, and " + path + " goes on past them"}
               : LoadStatus{LoadError::kIo, "cannot read " + path + ": the file grew past " +
                                                num(size) + " bytes while being read"};
    return nullptr;
  }
  if (!precheck(out, size, status)) return nullptr;
  if (!Loader(*impl, hasher, status).run()) return nullptr;
  build_decide_index(*impl);
  return std::unique_ptr<Table>(new Table(std::move(impl)));
}

std::unique_ptr<Table> Table::load_bytes(const void* data, size_t size, LoadStatus* status) {
  LoadStatus ignored;
  if (status == nullptr) status = &ignored;
  *status = {};
  if (!precheck(data, size, status)) return nullptr;
  auto impl = std::make_unique<Impl>();
  impl->storage.allocate(size);
  impl->size = size;
  uint8_t* out = reinterpret_cast<uint8_t*>(impl->storage.get());
  const uint8_t* in = static_cast<const uint8_t*>(data);
  TableHasher hasher(size);
  for (size_t done = 0; done < size;) {
    // The first piece ends before the hasher can plan (kMaxDirectoryEnd, 488) but, in a table
    // of 16 sections, inside the first section (at 464), as a short read() of a file may: so
    // every load_bytes() also takes the path where the plan catches up on bytes already seen.
    const size_t n = std::min(done == 0 ? size_t{480} : kChunk, size - done);
    std::memcpy(out + done, in + done, n);
    hasher.feed(out, done, done + n);
    done += n;
  }
  if (!Loader(*impl, hasher, status).run()) return nullptr;
  build_decide_index(*impl);
  return std::unique_ptr<Table>(new Table(std::move(impl)));
}

}  // namespace replaygate
