// The loader's structural checks, pinned at their boundaries: for each one a forged table with
// every digest recomputed (reseal()), at exactly the first invalid value (the exact LoadError and
// message) and just inside it (a clean load, or the next check's exact error when inside is
// itself invalid). The digests are no defence against a forger, so each check must hold alone.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "runtime/table.h"
#include "runtime/table_format.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

namespace fm = replaygate::format;
using Bytes = testing::TableBytes;
using testing::get;
using testing::load_error;
using testing::reseal;
using testing::section;
using testing::set;

// The byte offset of member `member` of record `i` of section `kind`.
#define RECORD_AT(bytes, kind, Record, i, member) \
  (section(bytes, kind).offset + (i) * sizeof(fm::Record) + offsetof(fm::Record, member))

const Bytes& gate() {
  static const Bytes bytes = lower(testing::reference_gate());
  return bytes;
}
const Bytes& small() {
  static const Bytes bytes = lower(testing::small_policy());
  return bytes;
}

// The loader's answer ("" or "ERROR: message") for `base` edited by `edit` and resealed.
std::string forged(const Bytes& base, const std::function<void(Bytes&)>& edit) {
  Bytes bytes = base;
  edit(bytes);
  reseal(bytes);
  return load_error(bytes);
}
template <typename T>
std::string forged_at(const Bytes& base, size_t offset, T value) {
  return forged(base, [&](Bytes& b) { set<T>(b, offset, value); });
}

fm::FieldRecord field_record(const Bytes& bytes, uint32_t f) {
  return get<fm::FieldRecord>(bytes, RECORD_AT(bytes, fm::kFields, FieldRecord, f, name));
}
std::string n(uint64_t v) { return std::to_string(v); }

TEST(LoadBoundaries, ResealedUneditedTablesLoad) {
  EXPECT_EQ(forged(gate(), [](Bytes&) {}), "");
  EXPECT_EQ(forged(small(), [](Bytes&) {}), "");
}

// ---- header and directory ----

TEST(LoadBoundaries, TotalSize) {
  const uint64_t size = gate().size();
  const size_t at = offsetof(fm::Header, total_size);
  EXPECT_EQ(forged_at<uint64_t>(gate(), at, size + 1),
            "truncated: truncated: header says " + n(size + 1) + " bytes, got " + n(size));
  EXPECT_EQ(forged_at<uint64_t>(gate(), at, size - 1),
            "malformed: trailing bytes: header says " + n(size - 1) + " bytes, got " + n(size));
  EXPECT_EQ(forged_at<uint64_t>(gate(), at, size), "");
}

TEST(LoadBoundaries, Flags) {
  const size_t at = offsetof(fm::Header, flags);
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, fm::kKnownFlags + 1), "malformed: unknown flags 4");
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, fm::kFlagRecordFields),
            "malformed: the header's record-fields flag is set but no field is record-only");
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, fm::kFlagOperatorFields),
            "malformed: the header's operator-fields flag is set but no field is operator-only");
}

TEST(LoadBoundaries, SectionCount) {
  const size_t at = offsetof(fm::Header, section_count);
  const std::string expected = " (or 17 with a derivations section, 18 with classifiers)";
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, fm::kSectionCount - 1),
            "malformed: expected 16 sections, header says 15" + expected);
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, fm::kMaxSectionCount + 1),
            "malformed: expected 16 sections, header says 19" + expected);
  // Inside: 18 entries are read, and the directory then ends at byte 512, over the meta section.
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, fm::kMaxSectionCount),
            "bad_offset: section meta (offset 464, length 56) overlaps the directory or an "
            "earlier section");
}

// The directory must fit in the table: 18 entries end at byte 512.
TEST(LoadBoundaries, DirectoryEnd) {
  const auto cut_to = [](size_t size) {
    return [size](Bytes& b) {
      b.resize(size);
      set<uint64_t>(b, offsetof(fm::Header, total_size), size);
      set<uint32_t>(b, offsetof(fm::Header, section_count), fm::kMaxSectionCount);
    };
  };
  EXPECT_EQ(forged(gate(), cut_to(511)),
            "truncated: truncated: the section directory ends past the table");
  EXPECT_EQ(forged(gate(), cut_to(512)),
            "bad_offset: section meta (offset 464, length 56) lies outside the table of 512 bytes");
}

TEST(LoadBoundaries, SectionBounds) {
  const Bytes& g = gate();
  const fm::SectionEntry prov = section(g, fm::kProvenance);
  const size_t length_at =
      testing::entry_offset(fm::kProvenance) + offsetof(fm::SectionEntry, length);
  const uint64_t room = g.size() - prov.offset;  // the longest provenance that fits
  EXPECT_EQ(forged_at<uint64_t>(g, length_at, room + 1),
            "bad_offset: section provenance (offset " + n(prov.offset) + ", length " + n(room + 1) +
                ") lies outside the table of " + n(g.size()) + " bytes");
  EXPECT_EQ(forged_at<uint64_t>(g, length_at, room), "");

  // Sections must not overlap: verbs may start where cuts end, not a word earlier.
  const fm::SectionEntry cuts = section(g, fm::kCuts);
  const fm::SectionEntry verbs = section(g, fm::kVerbs);
  const size_t offset_at = testing::entry_offset(fm::kVerbs) + offsetof(fm::SectionEntry, offset);
  const uint64_t cuts_end = cuts.offset + cuts.length;
  ASSERT_EQ(cuts_end % 8, 0u);
  ASSERT_EQ(verbs.offset, cuts_end);  // inside: the table as written
  EXPECT_EQ(forged_at<uint64_t>(g, offset_at, cuts_end - 1),
            "bad_offset: section verbs (offset " + n(cuts_end - 1) + ", length " + n(verbs.length) +
                ") is not 8-byte aligned");
  EXPECT_EQ(forged_at<uint64_t>(g, offset_at, cuts_end - 8),
            "bad_offset: section verbs (offset " + n(cuts_end - 8) + ", length " + n(verbs.length) +
                ") overlaps the directory or an earlier section");
  // The first section may start where the directory ends.
  const size_t meta_at = testing::entry_offset(fm::kMeta) + offsetof(fm::SectionEntry, offset);
  ASSERT_EQ(section(g, fm::kMeta).offset, 464u);
  EXPECT_EQ(forged_at<uint64_t>(g, meta_at, 456),
            "bad_offset: section meta (offset 456, length 56) overlaps the directory or an "
            "earlier section");
}

TEST(LoadBoundaries, RecordSizes) {
  const Bytes& g = gate();
  const size_t verbs_length =
      testing::entry_offset(fm::kVerbs) + offsetof(fm::SectionEntry, length);
  EXPECT_EQ(forged_at<uint64_t>(g, verbs_length, 71),
            "malformed: section verbs length 71 is not a multiple of its record size 24");
  EXPECT_EQ(forged_at<uint64_t>(g, verbs_length, 48),
            "malformed: meta says 3 verbs, verbs section holds 2");
  const size_t meta_length = testing::entry_offset(fm::kMeta) + offsetof(fm::SectionEntry, length);
  EXPECT_EQ(forged_at<uint64_t>(g, meta_length, 55),
            "malformed: meta section has 55 bytes, expected 56");
}

// ---- meta, strings ----

TEST(LoadBoundaries, FieldCountLimit) {
  const size_t at = RECORD_AT(gate(), fm::kMeta, MetaRecord, 0, field_count);
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, fm::kMaxFields + 1),
            "malformed: 1025 fields, over the limit of 1024");
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, fm::kMaxFields),
            "malformed: meta says 1024 fields, fields section holds 6");
  EXPECT_EQ(forged_at<uint32_t>(gate(), at, 5),
            "malformed: meta says 5 fields, fields section holds 6");
}

// A string reference may end at the string section's end, not a byte past it.
TEST(LoadBoundaries, StringReferences) {
  const Bytes& g = gate();
  const uint64_t pool = section(g, fm::kStrings).length;
  const size_t at = RECORD_AT(g, fm::kMeta, MetaRecord, 0, description);
  const uint32_t length = get<fm::StrRef>(g, at).length;
  EXPECT_EQ(forged_at<uint32_t>(g, at, static_cast<uint32_t>(pool - length + 1)),
            "bad_offset: string offset out of range in meta description (offset " +
                n(pool - length + 1) + ", length " + n(length) + ", string section " + n(pool) +
                " bytes)");
  EXPECT_EQ(forged_at<uint32_t>(g, at, static_cast<uint32_t>(pool - length)), "");

  // The catalog's one-pass check and its naming pass agree on the same boundary, for ids and
  // for reasons.
  for (const size_t member :
       {offsetof(fm::CatalogRecord, id), offsetof(fm::CatalogRecord, reason)}) {
    const size_t c = section(g, fm::kCatalog).offset + 3 * sizeof(fm::CatalogRecord) + member;
    const uint32_t len = get<fm::StrRef>(g, c).length;
    const std::string what = member == 0 ? "id" : "reason";
    EXPECT_EQ(forged_at<uint32_t>(g, c, static_cast<uint32_t>(pool - len + 1)),
              "bad_offset: string offset out of range in catalog entry 3 " + what + " (offset " +
                  n(pool - len + 1) + ", length " + n(len) + ", string section " + n(pool) +
                  " bytes)");
    EXPECT_EQ(forged_at<uint32_t>(g, c, static_cast<uint32_t>(pool - len)), "");
  }
}

// ---- fields and dictionaries ----

TEST(LoadBoundaries, DictionaryEntries) {
  const Bytes& g = gate();
  const uint64_t pool = section(g, fm::kStrings).length;
  const size_t at = section(g, fm::kDictEntries).offset + offsetof(fm::DictEntry, bytes);
  const uint32_t length = get<fm::StrRef>(g, at).length;
  EXPECT_EQ(forged_at<uint32_t>(g, at, static_cast<uint32_t>(pool - length + 1)),
            "bad_offset: string offset out of range in dictionary entry 0 (offset " +
                n(pool - length + 1) + ", length " + n(length) + ", string section " + n(pool) +
                " bytes)");
  // Inside, the bytes are other bytes: their stored hash no longer matches.
  EXPECT_EQ(forged_at<uint32_t>(g, at, static_cast<uint32_t>(pool - length)),
            "malformed: dictionary entry 0 has a wrong hash");
  const size_t hash_at = section(g, fm::kDictEntries).offset + offsetof(fm::DictEntry, hash);
  EXPECT_EQ(forged_at<uint64_t>(g, hash_at, get<uint64_t>(g, hash_at) + 1),
            "malformed: dictionary entry 0 has a wrong hash");
}

TEST(LoadBoundaries, FieldTypeAndFlagBytes) {
  const Bytes& g = gate();
  const auto byte_at = [&](uint32_t f, size_t member) {
    return section(g, fm::kFields).offset + f * sizeof(fm::FieldRecord) + member;
  };
  const std::string bad = "malformed: field 0 has a bad type or flag byte";
  EXPECT_EQ(forged_at<uint8_t>(g, byte_at(0, offsetof(fm::FieldRecord, type)), kFieldTypeCount),
            bad);
  // Inside: an enum, whose atoms the string's dictionary does not give.
  EXPECT_EQ(forged_at<uint8_t>(g, byte_at(0, offsetof(fm::FieldRecord, type)), 3),
            "malformed: field 0 has 6 atoms, its type needs 5");
  for (const size_t member :
       {offsetof(fm::FieldRecord, optional), offsetof(fm::FieldRecord, empty_means_absent),
        offsetof(fm::FieldRecord, has_min), offsetof(fm::FieldRecord, has_max)}) {
    EXPECT_EQ(forged_at<uint8_t>(g, byte_at(0, member), 2), bad) << member;
  }
  EXPECT_EQ(forged_at<uint8_t>(g, byte_at(0, offsetof(fm::FieldRecord, optional)), 1), "");
  EXPECT_EQ(forged_at<uint8_t>(g, byte_at(0, offsetof(fm::FieldRecord, empty_means_absent)), 1),
            "");
  EXPECT_EQ(
      forged_at<uint8_t>(g, byte_at(0, offsetof(fm::FieldRecord, source)), fm::kSourceRecord + 1),
      bad);
  EXPECT_EQ(forged_at<uint8_t>(g, byte_at(0, offsetof(fm::FieldRecord, source)), fm::kSourceRecord),
            "malformed: field 0 is record-only but the header lacks the record-fields flag");
  EXPECT_EQ(forged_at<uint8_t>(g, byte_at(0, offsetof(fm::FieldRecord, pad)), 1), bad);
  EXPECT_EQ(forged_at<uint8_t>(g, byte_at(2, offsetof(fm::FieldRecord, empty_means_absent)), 1),
            "malformed: field 2: empty_means_absent on a non-string field");
  EXPECT_EQ(forged_at<uint8_t>(g, byte_at(4, offsetof(fm::FieldRecord, has_min)), 1),
            "malformed: field 4 has cut points or bounds but is not an int");
}

TEST(LoadBoundaries, AtomCounts) {
  const Bytes& g = gate();
  const size_t at = RECORD_AT(g, fm::kFields, FieldRecord, 2, atom_count);  // attempts: 2 cuts
  EXPECT_EQ(forged_at<uint32_t>(g, at, 5), "malformed: field 2 has 5 atoms, its type needs 4");
  EXPECT_EQ(forged_at<uint32_t>(g, at, 3), "malformed: field 2 has 3 atoms, its type needs 4");
  const size_t bool_at = RECORD_AT(g, fm::kFields, FieldRecord, 4, atom_count);
  EXPECT_EQ(forged_at<uint32_t>(g, bool_at, 4), "malformed: field 4 has 4 atoms, its type needs 3");
  // A dictionary on an int, cut points on a bool.
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kFields, FieldRecord, 2, slot_count), 1),
            "malformed: field 2 has a dictionary but is not a string or enum");
  EXPECT_EQ(forged(g,
                   [&](Bytes& b) {
                     set<uint32_t>(b, RECORD_AT(g, fm::kFields, FieldRecord, 4, cut_count), 1);
                     set<uint32_t>(b, RECORD_AT(g, fm::kFields, FieldRecord, 4, atom_count), 3);
                   }),
            "malformed: field 4 has cut points or bounds but is not an int");
}

// Field 3 (idempotency_key) has no dictionary and field 4 (a bool) no cut points: each run may
// begin at its section's end, not one past it.
TEST(LoadBoundaries, DictionarySlotAndCutRanges) {
  const Bytes& g = gate();
  const std::string out = " dictionary, slot or cut range out of range";
  const uint32_t entries = static_cast<uint32_t>(section(g, fm::kDictEntries).length / 16);
  const uint32_t slots = static_cast<uint32_t>(section(g, fm::kDictSlots).length / 4);
  const uint32_t cuts = static_cast<uint32_t>(section(g, fm::kCuts).length / 8);
  const size_t dict_at = RECORD_AT(g, fm::kFields, FieldRecord, 3, dict_begin);
  const size_t slot_at = RECORD_AT(g, fm::kFields, FieldRecord, 3, slot_begin);
  const size_t cut_at = RECORD_AT(g, fm::kFields, FieldRecord, 4, cut_begin);
  EXPECT_EQ(forged_at<uint32_t>(g, dict_at, entries + 1), "bad_offset: field 3" + out);
  EXPECT_EQ(forged_at<uint32_t>(g, dict_at, entries), "");
  EXPECT_EQ(forged_at<uint32_t>(g, slot_at, slots + 1), "bad_offset: field 3" + out);
  EXPECT_EQ(forged_at<uint32_t>(g, slot_at, slots), "");
  EXPECT_EQ(forged_at<uint32_t>(g, cut_at, cuts + 1), "bad_offset: field 4" + out);
  EXPECT_EQ(forged_at<uint32_t>(g, cut_at, cuts), "");
  // Field 1's (error_class) entries end at the dictionary's end: one later is past it.
  const fm::FieldRecord error_class = field_record(g, 1);
  ASSERT_EQ(error_class.dict_begin + error_class.dict_count, entries);
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kFields, FieldRecord, 1, dict_begin),
                                error_class.dict_begin + 1),
            "bad_offset: field 1" + out);
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kFields, FieldRecord, 1, dict_count),
                                error_class.dict_count + 1),
            "malformed: field 1 has 11 atoms, its type needs 12");
}

TEST(LoadBoundaries, IndexSlotCounts) {
  const Bytes& g = gate();
  const fm::FieldRecord topic = field_record(g, 0);  // 4 entries
  ASSERT_EQ(topic.dict_count, 4u);
  const size_t at = RECORD_AT(g, fm::kFields, FieldRecord, 0, slot_count);
  EXPECT_EQ(forged_at<uint32_t>(g, at, 4),
            "malformed: field 0 has 4 index slots for 4 entries (need a power of two above it)");
  EXPECT_EQ(forged_at<uint32_t>(g, at, 5),
            "malformed: field 0 has 5 index slots for 4 entries (need a power of two above it)");
  EXPECT_EQ(forged_at<uint32_t>(g, at, 0),
            "malformed: field 0 has 0 index slots for 4 entries (need a power of two above it)");
  EXPECT_EQ(forged_at<uint32_t>(g, at, topic.slot_count), "");
  // No entries: no slots (field 3 moved to the slots' start, so the range holds).
  EXPECT_EQ(forged(g,
                   [&](Bytes& b) {
                     set<uint32_t>(b, RECORD_AT(g, fm::kFields, FieldRecord, 3, slot_begin), 0);
                     set<uint32_t>(b, RECORD_AT(g, fm::kFields, FieldRecord, 3, slot_count), 1);
                   }),
            "malformed: field 3 has 1 index slots for 0 entries (need a power of two above it)");
}

TEST(LoadBoundaries, CutPointsStrictlyAscending) {
  const Bytes& g = gate();
  const size_t second = section(g, fm::kCuts).offset + 8;  // attempts: cuts 0, 3
  ASSERT_EQ(get<int64_t>(g, second), 3);
  EXPECT_EQ(forged_at<int64_t>(g, second, 0), "malformed: field 2 cut points are not sorted");
  EXPECT_EQ(forged_at<int64_t>(g, second, 1), "");
}

TEST(LoadBoundaries, DictionaryStrictlySorted) {
  const Bytes& g = gate();
  // Entry 1 made a copy of entry 0 (bytes and hash): equal is not ascending.
  const size_t entries = section(g, fm::kDictEntries).offset;
  EXPECT_EQ(
      forged(g, [&](Bytes& b) { std::memcpy(b.data() + entries + 16, b.data() + entries, 16); }),
      "malformed: field 0 dictionary is not sorted");
}

TEST(LoadBoundaries, IndexSlotAtoms) {
  const Bytes& g = gate();
  const fm::FieldRecord topic = field_record(g, 0);  // atoms 2..5 are its entries
  const size_t slots = section(g, fm::kDictSlots).offset + topic.slot_begin * 4;
  uint32_t s = 0;
  while (get<uint32_t>(g, slots + s * 4) != 2) ++s;  // the slot of atom 2
  uint32_t empty = 0;
  while (get<uint32_t>(g, slots + empty * 4) != 0) ++empty;
  const size_t at = slots + s * 4;
  EXPECT_EQ(forged_at<uint32_t>(g, at, 6),
            "bad_offset: field 0 index slot " + n(s) + " holds atom 6, out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, at, 1),
            "bad_offset: field 0 index slot " + n(s) + " holds atom 1, out of range");
  // Inside: atom 5 twice, so entry 0 (atom 2) is no longer found.
  EXPECT_EQ(forged_at<uint32_t>(g, at, 5),
            "malformed: field 0 dictionary index does not find entry 0");
  EXPECT_EQ(forged_at<uint32_t>(g, slots + empty * 4, 2),
            "malformed: field 0 index holds 5 entries, expected 4");
}

// ---- verbs and catalog ----

TEST(LoadBoundaries, Verbs) {
  const Bytes& g = gate();
  const size_t effect_at = RECORD_AT(g, fm::kVerbs, VerbRecord, 0, effect);
  EXPECT_EQ(forged_at<uint32_t>(g, effect_at, kEffectCount),
            "malformed: verb 0 has unknown effect 4");
  EXPECT_EQ(forged_at<uint32_t>(g, effect_at, kEffectCount - 1), "");
  const size_t default_at = RECORD_AT(g, fm::kMeta, MetaRecord, 0, default_verb);
  EXPECT_EQ(forged_at<uint32_t>(g, default_at, 3), "bad_offset: default verb index 3 out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, default_at, 0), "");  // never: effect none too
  const size_t count_at = RECORD_AT(g, fm::kMeta, MetaRecord, 0, verb_count);
  EXPECT_EQ(forged_at<uint32_t>(g, count_at, 4),
            "malformed: meta says 4 verbs, verbs section holds 3");
  EXPECT_EQ(forged_at<uint32_t>(g, count_at, 2),
            "malformed: meta says 2 verbs, verbs section holds 3");
}

TEST(LoadBoundaries, CatalogVerbsAndCount) {
  const Bytes& g = gate();
  const size_t at = RECORD_AT(g, fm::kCatalog, CatalogRecord, 4, verb);
  EXPECT_EQ(forged_at<uint32_t>(g, at, 3),
            "bad_offset: catalog entry 4 verb index 3 out of range (3 verbs)");
  EXPECT_EQ(forged_at<uint32_t>(g, at, 2), "");
  const size_t count_at = RECORD_AT(g, fm::kMeta, MetaRecord, 0, catalog_count);
  EXPECT_EQ(forged_at<uint32_t>(g, count_at, 12),
            "malformed: meta says 12 catalog entries, catalog holds 13");
}

// ---- conditions ----

TEST(LoadBoundaries, Conditions) {
  const Bytes& g = gate();
  // Condition 0: idempotency_key absent (field 3, 2 atoms, one bitset word).
  const size_t field_at = RECORD_AT(g, fm::kConditions, ConditionRecord, 0, field);
  EXPECT_EQ(forged_at<uint32_t>(g, field_at, 6),
            "bad_offset: condition 0 field index 6 out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, field_at, 5), "");  // replays: absent is its atom 0 too
  const size_t op_at = RECORD_AT(g, fm::kConditions, ConditionRecord, 0, op);
  EXPECT_EQ(forged_at<uint32_t>(g, op_at, kOpCount), "malformed: condition 0 has unknown op");
  EXPECT_EQ(forged_at<uint32_t>(g, op_at, kOpCount - 1), "");
  const size_t words_at = RECORD_AT(g, fm::kConditions, ConditionRecord, 0, bits_count);
  EXPECT_EQ(forged_at<uint32_t>(g, words_at, 2),
            "malformed: condition 0 bitset has 2 words for 2 atoms");
  EXPECT_EQ(forged_at<uint32_t>(g, words_at, 0),
            "malformed: condition 0 bitset has 0 words for 2 atoms");
  // The bitset range: the last word is the last condition's (replays ge 1: atom 3).
  const size_t begin_at = RECORD_AT(g, fm::kConditions, ConditionRecord, 0, bits_begin);
  const uint32_t words = static_cast<uint32_t>(section(g, fm::kBitsets).length / 8);
  EXPECT_EQ(forged_at<uint32_t>(g, begin_at, words), "bad_offset: condition 0 bitset out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, begin_at, words - 1),
            "malformed: condition 0 accepts atom 3, beyond its field's atoms");
  // Bits past the field's atoms: atom 2 is the first beyond idempotency_key's two.
  const size_t word_at =
      section(g, fm::kBitsets).offset + get<uint32_t>(g, begin_at) * sizeof(uint64_t);
  const uint64_t word = get<uint64_t>(g, word_at);
  EXPECT_EQ(forged_at<uint64_t>(g, word_at, word | 4u),
            "malformed: condition 0 accepts atom 2, beyond its field's atoms");
  EXPECT_EQ(forged_at<uint64_t>(g, word_at, word | (uint64_t{1} << 63)),
            "malformed: condition 0 accepts atom 63, beyond its field's atoms");
  EXPECT_EQ(forged_at<uint64_t>(g, word_at, word | 2u), "");
}

// A field of exactly 64 atoms needs one bitset word, of 65 two.
TEST(LoadBoundaries, BitsetWordsAtSixtyFourAtoms) {
  for (const uint32_t values : {62u, 63u}) {
    ir::CheckedPolicy c;
    ir::Policy& p = c.policy;
    p.id = "wide";
    p.revision = 1;
    p.fields = {testing::string_field("s")};
    std::vector<ir::Value> listed;
    for (uint32_t i = 0; i < values; ++i) listed.push_back(ir::Value::String("v" + n(100 + i)));
    p.verbs = {testing::verb("hold", ir::Effect::kNone, "wait")};
    p.default_reason = "none";
    p.rules.emplace_back(testing::guard("g", {testing::cond(0, ir::Op::kIn, listed)}, 0, "listed"));
    c.source_base_name = "wide.yaml";
    const Bytes bytes = lower(c);
    const uint32_t atoms = values + 2;
    const uint32_t words = (atoms + 63) / 64;
    const size_t at = RECORD_AT(bytes, fm::kConditions, ConditionRecord, 0, bits_count);
    ASSERT_EQ(get<uint32_t>(bytes, at), words) << atoms;
    EXPECT_EQ(
        forged_at<uint32_t>(bytes, at, words + 1),
        "malformed: condition 0 bitset has " + n(words + 1) + " words for " + n(atoms) + " atoms");
    EXPECT_EQ(
        forged_at<uint32_t>(bytes, at, words - 1),
        "malformed: condition 0 bitset has " + n(words - 1) + " words for " + n(atoms) + " atoms");
    EXPECT_EQ(forged(bytes, [](Bytes&) {}), "");
  }
}

// ---- rules ----

TEST(LoadBoundaries, RuleKindAndCatalogRanges) {
  const Bytes& g = gate();
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 0, kind), 2),
            "malformed: rule 0 has unknown kind");
  const std::string follow = " catalog range does not follow the rules";
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 1, catalog_begin), 2),
            "malformed: rule 1" + follow);
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 1, catalog_begin), 0),
            "malformed: rule 1" + follow);
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 1, catalog_count), 2),
            "malformed: rule 1" + follow);
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 1, catalog_count), 0),
            "malformed: rule 1" + follow);
  // The table's rows may end at the catalog's end, not one entry later.
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 4, catalog_count), 10),
            "malformed: rule 4" + follow);
  // Entries name their rule and row.
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kCatalog, CatalogRecord, 5, rule), 3),
            "malformed: catalog entry 5 does not match rule 4");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kCatalog, CatalogRecord, 5, row), 2),
            "malformed: catalog entry 5 does not match rule 4");
  // Fewer rules than the catalog needs.
  EXPECT_EQ(forged(g,
                   [&](Bytes& b) {
                     set<uint32_t>(b, RECORD_AT(g, fm::kMeta, MetaRecord, 0, rule_count), 4);
                     set<uint64_t>(
                         b, testing::entry_offset(fm::kRules) + offsetof(fm::SectionEntry, length),
                         4 * sizeof(fm::RuleRecord));
                   }),
            "malformed: rules cover 4 of 13 catalog entries");
}

TEST(LoadBoundaries, GuardConditionRanges) {
  const Bytes& g = gate();
  const uint32_t conditions = static_cast<uint32_t>(section(g, fm::kConditions).length / 24);
  ASSERT_EQ(conditions, 4u);
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 0, item_count), 0),
            "malformed: rule 0 has no conditions");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 3, item_begin), 4),
            "bad_offset: rule 3 condition range out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 3, item_count), 2),
            "bad_offset: rule 3 condition range out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 2, item_count), 2), "");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 0, mask_count), 1),
            "malformed: rule 0 is a guard with masks");
}

TEST(LoadBoundaries, TableKeys) {
  const Bytes& g = gate();
  const size_t count_at = RECORD_AT(g, fm::kRules, RuleRecord, 4, item_count);
  EXPECT_EQ(forged_at<uint32_t>(g, count_at, fm::kMaxKeys + 1), "malformed: rule 4 has 9 keys");
  EXPECT_EQ(forged_at<uint32_t>(g, count_at, fm::kMaxKeys),
            "bad_offset: rule 4 key range out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, count_at, 0), "malformed: rule 4 has 0 keys");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 4, item_begin), 1),
            "bad_offset: rule 4 key range out of range");
  const size_t key_at = section(g, fm::kTableKeys).offset;  // key 0: topic (field 0)
  EXPECT_EQ(forged_at<uint32_t>(g, key_at, 6), "bad_offset: rule 4 key 0 field index out of range");
  // Inside: replays (4 atoms) cannot hold topic's atoms up to 5.
  EXPECT_EQ(forged_at<uint32_t>(g, key_at, 5),
            "bad_offset: rule 4 row 0 key 0 atom 4 out of range");
}

TEST(LoadBoundaries, RowKeyRangeAndAtoms) {
  const Bytes& g = gate();
  const uint32_t cells = static_cast<uint32_t>(section(g, fm::kRowKeys).length / 4);
  ASSERT_EQ(cells, 18u);  // 9 rows x 2 keys
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 4, row_key_begin), 1),
            "bad_offset: rule 4 row keys out of range");
  // Row 0 key 1: error_class, 11 atoms (0 absent .. 10 unknown_recipient).
  const size_t at = section(g, fm::kRowKeys).offset + 4;
  ASSERT_EQ(field_record(g, 1).atom_count, 11u);
  EXPECT_EQ(forged_at<uint32_t>(g, at, 11), "bad_offset: rule 4 row 0 key 1 atom 11 out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, at, 10), "");
  EXPECT_EQ(forged_at<uint32_t>(g, at, 0), "bad_offset: rule 4 row 0 key 1 atom 0 out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, at, 1), "");
  EXPECT_EQ(forged_at<uint32_t>(g, at, fm::kWildcard - 1),
            "bad_offset: rule 4 row 0 key 1 atom 4294967294 out of range");
  // A wildcard is in range, but row 0 is then not in the mask that indexes it.
  EXPECT_EQ(forged_at<uint32_t>(g, at, fm::kWildcard),
            "malformed: rule 4 mask 0 indexes row 0 whose wildcards differ");
  // The last row's last key (topic's 6 atoms on key 0).
  const size_t last = section(g, fm::kRowKeys).offset + 16 * 4;
  EXPECT_EQ(forged_at<uint32_t>(g, last, 6), "bad_offset: rule 4 row 8 key 0 atom 6 out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, last, 5), "");
}

TEST(LoadBoundaries, Masks) {
  const Bytes& g = gate();
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 4, mask_begin), 1),
            "bad_offset: rule 4 mask range out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kRules, RuleRecord, 4, mask_count), 2),
            "bad_offset: rule 4 mask range out of range");
  const size_t mask_at = RECORD_AT(g, fm::kMasks, MaskRecord, 0, mask);
  EXPECT_EQ(forged_at<uint32_t>(g, mask_at, 4), "malformed: rule 4 mask 0 is not a valid key mask");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kMasks, MaskRecord, 0, concrete_count), 1),
            "malformed: rule 4 mask 0 is not a valid key mask");
  const size_t slots_at = RECORD_AT(g, fm::kMasks, MaskRecord, 0, slot_count);
  const uint32_t slots = get<uint32_t>(g, slots_at);
  EXPECT_EQ(forged_at<uint32_t>(g, slots_at, 0),
            "bad_offset: rule 4 mask 0 row slots out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, slots_at, slots - 1),
            "bad_offset: rule 4 mask 0 row slots out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, slots_at, slots * 2),
            "bad_offset: rule 4 mask 0 row slots out of range");
  EXPECT_EQ(forged_at<uint32_t>(g, RECORD_AT(g, fm::kMasks, MaskRecord, 0, slot_begin), 1),
            "bad_offset: rule 4 mask 0 row slots out of range");
  // Half the slots: still a power of two and in range, but rows in the upper half are lost.
  EXPECT_NE(forged_at<uint32_t>(g, slots_at, slots / 2), "");
}

// small_policy()'s table has five masks: KKK, KK*, K*K, *K*, **K (keys region, tier, partner).
TEST(LoadBoundaries, MaskOrder) {
  const Bytes& s = small();
  const size_t at = RECORD_AT(s, fm::kMasks, MaskRecord, 2, mask);
  ASSERT_EQ(get<uint32_t>(s, RECORD_AT(s, fm::kMasks, MaskRecord, 1, mask)), 3u);  // KK*
  ASSERT_EQ(get<uint32_t>(s, at), 5u);                                             // K*K
  EXPECT_EQ(forged_at<uint32_t>(s, at, 3), "malformed: rule 1 mask 2 is out of order");
  // A lower count after a higher one is in order; a higher one after a lower is not.
  EXPECT_EQ(forged(s,
                   [&](Bytes& b) {
                     set<uint32_t>(b, RECORD_AT(s, fm::kMasks, MaskRecord, 3, mask), 7);
                     set<uint32_t>(b, RECORD_AT(s, fm::kMasks, MaskRecord, 3, concrete_count), 3);
                   }),
            "malformed: rule 1 mask 3 is out of order");
}

// Slot values name rows 1..rows (0 empty), in the uniform gate and in the mixed small table.
TEST(LoadBoundaries, RowSlotValues) {
  const Bytes& g = gate();
  const size_t slots = section(g, fm::kRowSlots).offset;
  uint32_t s = 0;
  while (get<uint32_t>(g, slots + s * 4) == 0) ++s;
  EXPECT_EQ(forged_at<uint32_t>(g, slots + s * 4, 10),
            "bad_offset: rule 4 mask 0 slot " + n(s) + " names row 9, out of range");
  const Bytes& m = small();
  const size_t mslots = section(m, fm::kRowSlots).offset;
  uint32_t t = 0;
  while (get<uint32_t>(m, mslots + t * 4) == 0) ++t;  // mask 0 (KKK): row 5 (us/2/acme)
  ASSERT_EQ(get<uint32_t>(m, mslots + t * 4), 5u);
  EXPECT_EQ(forged_at<uint32_t>(m, mslots + t * 4, 6),
            "bad_offset: rule 1 mask 0 slot " + n(t) + " names row 5, out of range");
  EXPECT_EQ(forged_at<uint32_t>(m, mslots + t * 4, 4),
            "malformed: rule 1 mask 0 indexes row 3 whose wildcards differ");
}

// ---- provenance ----

TEST(LoadBoundaries, Provenance) {
  const Bytes& g = gate();
  const fm::SectionEntry prov = section(g, fm::kProvenance);
  const size_t length_at =
      testing::entry_offset(fm::kProvenance) + offsetof(fm::SectionEntry, length);
  EXPECT_EQ(forged_at<uint64_t>(g, length_at, sizeof(fm::ProvenanceHeader) - 1),
            "malformed: provenance section too short");
  EXPECT_EQ(forged_at<uint64_t>(g, length_at, sizeof(fm::ProvenanceHeader)),
            "bad_offset: provenance content runs past its section");
  const size_t lines_at = prov.offset + offsetof(fm::ProvenanceHeader, line_count);
  EXPECT_EQ(forged_at<uint32_t>(g, lines_at, 12),
            "malformed: provenance has 12 lines for 13 catalog entries");
  const auto h = get<fm::ProvenanceHeader>(g, prov.offset);
  const uint64_t need = sizeof(h) + h.line_count * 4 + h.name_length + h.digest_length;
  const size_t digest_at = prov.offset + offsetof(fm::ProvenanceHeader, digest_length);
  EXPECT_EQ(forged_at<uint32_t>(g, digest_at,
                                static_cast<uint32_t>(h.digest_length + prov.length - need + 1)),
            "bad_offset: provenance content runs past its section");
  EXPECT_EQ(forged_at<uint32_t>(g, digest_at,
                                static_cast<uint32_t>(h.digest_length + prov.length - need)),
            "");
}

// ---- derivations (section 17) ----

// Fields: 0 a, 1 b (required ints), 2 lt = a < b, 3 ge = a >= b.
Bytes derived_bytes() {
  const LoadedPolicy loaded = load_policy_text(R"(policy: derived
revision: 1
inputs:
  a: {type: int, min: 0}
  b: {type: int, min: 0}
  lt: {type: bool, derived: {lt: [a, b]}}
  ge: {type: bool, derived: {ge: [a, b]}}
verbs:
  hold: {effect: none}
  go: {effect: create}
default: hold
rules:
  - guard: go
    when: {lt: true, ge: false}
    verb: go
    reason: a below b
)",
                                               "derived.yaml");
  EXPECT_TRUE(loaded.policy.has_value());
  return loaded.policy ? lower(*loaded.policy) : Bytes{};
}

TEST(LoadBoundaries, Derivations) {
  const Bytes d = derived_bytes();
  ASSERT_FALSE(d.empty());
  ASSERT_EQ(forged(d, [](Bytes&) {}), "");
  const size_t field_at = RECORD_AT(d, fm::kDerivations, DerivationRecord, 0, field);
  const size_t lhs_at = RECORD_AT(d, fm::kDerivations, DerivationRecord, 0, lhs);
  const size_t rhs_at = RECORD_AT(d, fm::kDerivations, DerivationRecord, 0, rhs);
  const size_t op_at = RECORD_AT(d, fm::kDerivations, DerivationRecord, 0, op);
  const std::string range = "bad_offset: derivation 0 field index out of range";
  const std::string shape =
      "malformed: derivation 0 must compare two required ints into a required bool";
  EXPECT_EQ(forged_at<uint32_t>(d, field_at, 4), range);
  EXPECT_EQ(forged_at<uint32_t>(d, lhs_at, 2), range);  // its own field
  EXPECT_EQ(forged_at<uint32_t>(d, rhs_at, 2), range);
  EXPECT_EQ(forged_at<uint32_t>(d, lhs_at, 1), "");  // b < b: a comparison all the same
  EXPECT_EQ(forged_at<uint32_t>(d, rhs_at, 0), "");
  // Field 3 as the first derivation: the second one (field 3 too) is then out of order.
  EXPECT_EQ(forged_at<uint32_t>(d, field_at, 3), "malformed: derivation 1 is out of order");
  for (const uint32_t op : {2u, 3u, 8u, 9u})
    EXPECT_EQ(forged_at<uint32_t>(d, op_at, op), shape) << op;
  for (const uint32_t op : {0u, 1u, 4u, 7u}) EXPECT_EQ(forged_at<uint32_t>(d, op_at, op), "") << op;
  // A target or operand of the wrong type or optional.
  EXPECT_EQ(forged_at<uint32_t>(d, field_at, 1), range);  // lhs 0 < 1, rhs 1 is not < 1
  EXPECT_EQ(forged_at<uint8_t>(d, RECORD_AT(d, fm::kFields, FieldRecord, 0, optional), 1), shape);
}

// ---- classifiers (section 18) ----

// Fields: 0 topic, 1 http_status (optional int), 2 http_class (3 classes, from 1), 3 sqlstate
// (optional string), 4 sql_class (2 classes, from 3).
Bytes classified_bytes() {
  const LoadedPolicy loaded = load_policy_text(R"(policy: c
revision: 1
inputs:
  topic: {type: string}
  http_status: {type: int, optional: true, min: 100, max: 599}
  http_class:
    type: enum
    values: [retryable, permanent, unknown]
    classify:
      from: http_status
      rows:
        - {class: retryable, in: [429, 503]}
        - {class: permanent, range: [400, 499]}
      fallback: unknown
  sqlstate: {type: string, optional: true}
  sql_class:
    type: enum
    values: [retryable, unknown]
    classify: {from: sqlstate, rows: [{class: retryable, prefix: ["40", "53"]}, {class: unknown, in: ["40003"]}], fallback: unknown}
verbs:
  replay_once: {effect: create}
  hold: {effect: none}
default: hold
rules:
  - guard: retry
    when: {http_class: retryable, sql_class: retryable}
    verb: replay_once
    reason: transient
)",
                                               "c.yaml");
  EXPECT_TRUE(loaded.policy.has_value());
  return loaded.policy ? lower(*loaded.policy) : Bytes{};
}

struct ClassifierLayout {
  size_t header = 0, records = 0, matchers = 0;
  fm::ClassifierHeader counts{};
};
ClassifierLayout classifier_layout(const Bytes& bytes) {
  ClassifierLayout l;
  l.header = section(bytes, fm::kClassifiers).offset;
  l.counts = get<fm::ClassifierHeader>(bytes, l.header);
  l.records = l.header + sizeof(fm::ClassifierHeader);
  l.matchers = l.records + l.counts.classifier_count * sizeof(fm::ClassifierRecord);
  return l;
}
size_t record_member(const ClassifierLayout& l, uint32_t i, size_t member) {
  return l.records + i * sizeof(fm::ClassifierRecord) + member;
}
size_t matcher_member(const ClassifierLayout& l, uint32_t i, size_t member) {
  return l.matchers + i * sizeof(fm::ClassifierMatcher) + member;
}

TEST(LoadBoundaries, ClassifierHeaderAndRecords) {
  const Bytes c = classified_bytes();
  ASSERT_FALSE(c.empty());
  ASSERT_EQ(forged(c, [](Bytes&) {}), "");
  const ClassifierLayout l = classifier_layout(c);
  ASSERT_EQ(l.counts.classifier_count, 2u);
  ASSERT_EQ(l.counts.matcher_count, 6u);  // 429, 503, [400, 499]; "40", "53", "40003"
  const size_t length_at =
      testing::entry_offset(fm::kClassifiers) + offsetof(fm::SectionEntry, length);
  EXPECT_EQ(forged_at<uint64_t>(c, length_at, sizeof(fm::ClassifierHeader) - 1),
            "malformed: classifiers section is too short for its header");
  EXPECT_EQ(forged_at<uint32_t>(c, l.header + offsetof(fm::ClassifierHeader, classifier_count), 0),
            "malformed: classifiers section is present but empty");
  const uint64_t length = section(c, fm::kClassifiers).length;
  EXPECT_EQ(forged_at<uint32_t>(c, l.header + offsetof(fm::ClassifierHeader, matcher_count), 7),
            "malformed: classifiers section length " + n(length) + " does not match its counts (" +
                n(length + 40) + ")");
  EXPECT_EQ(forged_at<uint32_t>(c, l.header + offsetof(fm::ClassifierHeader, matcher_count), 5),
            "malformed: classifiers section length " + n(length) + " does not match its counts (" +
                n(length - 40) + ")");

  const size_t field0 = record_member(l, 0, offsetof(fm::ClassifierRecord, field));
  const size_t raw0 = record_member(l, 0, offsetof(fm::ClassifierRecord, raw));
  EXPECT_EQ(forged_at<uint32_t>(c, field0, 5), "bad_offset: classifier 0 field index out of range");
  EXPECT_EQ(forged_at<uint32_t>(c, raw0, 2), "bad_offset: classifier 0 field index out of range");
  EXPECT_EQ(forged_at<uint32_t>(c, raw0, 1), "");  // the record as written
  // Classifier 1 made a copy of classifier 0's field and raw field: equal is out of order.
  EXPECT_EQ(forged(c,
                   [&](Bytes& b) {
                     set<uint32_t>(b, record_member(l, 1, offsetof(fm::ClassifierRecord, field)),
                                   2);
                     set<uint32_t>(b, record_member(l, 1, offsetof(fm::ClassifierRecord, raw)), 1);
                   }),
            "malformed: classifier 1 is out of order");
  EXPECT_EQ(
      forged_at<uint32_t>(c, record_member(l, 0, offsetof(fm::ClassifierRecord, reserved)), 1),
      "malformed: classifier 0 reserved word is 1");
  // A classified field as the raw field.
  EXPECT_EQ(forged_at<uint32_t>(c, record_member(l, 1, offsetof(fm::ClassifierRecord, raw)), 2),
            "malformed: classifier 1 must classify a string or int input into a required enum");
  const size_t fallback0 = record_member(l, 0, offsetof(fm::ClassifierRecord, fallback));
  EXPECT_EQ(forged_at<uint32_t>(c, fallback0, 3),
            "bad_offset: classifier 0 fallback class 3 is out of range (3 classes)");
  EXPECT_EQ(forged_at<uint32_t>(c, fallback0, 0), "");
  // Matcher runs: contiguous, inside the matchers, and covering all of them.
  const size_t begin1 = record_member(l, 1, offsetof(fm::ClassifierRecord, matcher_begin));
  const size_t count1 = record_member(l, 1, offsetof(fm::ClassifierRecord, matcher_count));
  const std::string runs = "bad_offset: classifier 1 matchers are out of range or not contiguous";
  EXPECT_EQ(forged_at<uint32_t>(c, begin1, 4), runs);
  EXPECT_EQ(forged_at<uint32_t>(c, count1, 4), runs);
  EXPECT_EQ(forged_at<uint32_t>(c, count1, 2),
            "malformed: classifiers section has matchers no classifier owns");
}

TEST(LoadBoundaries, ClassifierMatchers) {
  const Bytes c = classified_bytes();
  ASSERT_FALSE(c.empty());
  const ClassifierLayout l = classifier_layout(c);
  const uint64_t pool = section(c, fm::kStrings).length;
  // Matcher 0 of classifier 0: int 429 -> retryable (class 0 of 3).
  const size_t cls0 = matcher_member(l, 0, offsetof(fm::ClassifierMatcher, cls));
  EXPECT_EQ(forged_at<uint32_t>(c, cls0, 3),
            "bad_offset: classifier 0 matcher 0 class 3 is out of range (3 classes)");
  EXPECT_EQ(forged_at<uint32_t>(c, cls0, 2), "");
  EXPECT_EQ(
      forged_at<uint32_t>(c, matcher_member(l, 0, offsetof(fm::ClassifierMatcher, reserved)), 1),
      "malformed: classifier 0 matcher 0 has a reserved word or row out of order");
  // Rows are non-decreasing: matcher 2 (row 1) may not go back to... matcher 1 may rise to row 1.
  EXPECT_EQ(forged_at<uint32_t>(c, matcher_member(l, 1, offsetof(fm::ClassifierMatcher, row)), 1),
            "");
  EXPECT_EQ(forged_at<uint32_t>(c, matcher_member(l, 1, offsetof(fm::ClassifierMatcher, row)), 2),
            "malformed: classifier 0 matcher 2 has a reserved word or row out of order");
  const size_t kind0 = matcher_member(l, 0, offsetof(fm::ClassifierMatcher, kind));
  EXPECT_EQ(forged_at<uint32_t>(c, kind0, 4),
            "malformed: classifier 0 matcher 0 has unknown kind 4");
  EXPECT_EQ(forged_at<uint32_t>(c, kind0, fm::kMatchRange), "");  // [429, 429]
  EXPECT_EQ(forged_at<uint32_t>(c, kind0, fm::kMatchPrefix),
            "malformed: classifier 0 matcher 0 does not match the raw field's type");
  // Ints: lo <= hi for a range, lo == hi for one value, no text.
  const size_t lo2 = matcher_member(l, 2, offsetof(fm::ClassifierMatcher, lo));  // [400, 499]
  EXPECT_EQ(forged_at<int64_t>(c, lo2, 500),
            "malformed: classifier 0 matcher 2 is a malformed range [500, 499]");
  EXPECT_EQ(forged_at<int64_t>(c, lo2, 499), "");
  const size_t hi0 = matcher_member(l, 0, offsetof(fm::ClassifierMatcher, hi));  // 429
  EXPECT_EQ(forged_at<int64_t>(c, hi0, 430),
            "malformed: classifier 0 matcher 0 is a malformed range [429, 430]");
  EXPECT_EQ(
      forged_at<uint32_t>(c, matcher_member(l, 0, offsetof(fm::ClassifierMatcher, text) + 4), 1),
      "malformed: classifier 0 matcher 0 is a malformed range [429, 429]");
  // Strings (classifier 1, matcher 0 of it is matcher 3: prefix "40"): a text inside the pool,
  // not empty for a prefix, no bounds.
  const size_t text3 = matcher_member(l, 3, offsetof(fm::ClassifierMatcher, text));
  const uint32_t len3 = get<fm::StrRef>(c, text3).length;
  ASSERT_EQ(len3, 2u);
  EXPECT_EQ(forged_at<uint32_t>(c, text3, static_cast<uint32_t>(pool - len3 + 1)),
            "bad_offset: classifier 1 matcher 0 string reference out of range");
  EXPECT_EQ(forged_at<uint32_t>(c, text3, static_cast<uint32_t>(pool - len3)), "");
  EXPECT_EQ(forged_at<uint32_t>(c, text3 + 4, 0),
            "malformed: classifier 1 matcher 0 is malformed (bounds or empty prefix)");
  EXPECT_EQ(forged_at<uint32_t>(c, text3 + 4, 1), "");
  EXPECT_EQ(forged_at<int64_t>(c, matcher_member(l, 3, offsetof(fm::ClassifierMatcher, hi)), 1),
            "malformed: classifier 1 matcher 0 is malformed (bounds or empty prefix)");
  // An exact match may be empty (matcher 5: "40003").
  EXPECT_EQ(
      forged_at<uint32_t>(c, matcher_member(l, 5, offsetof(fm::ClassifierMatcher, text) + 4), 0),
      "");
}

}  // namespace
}  // namespace replaygate
