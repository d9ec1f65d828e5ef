// Loading and verifying tables: round trips, and every kind of corrupt table with its LoadError.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "compiler/lower.h"
#include "runtime/table.h"
#include "runtime/table_format.h"
#include "tests/support/paths.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

namespace fm = replaygate::format;
using Bytes = testing::TableBytes;
using namespace testing;  // NOLINT: table-bytes test vocabulary

Bytes reference_bytes() { return lower(testing::reference_gate()); }

TEST(Load, RoundTrip) {
  Bytes bytes = reference_bytes();
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(status.message, "");
  EXPECT_EQ(table->format_version(), fm::kVersion);
  EXPECT_EQ(table->source_name(), "replay_gate.yaml");
  EXPECT_EQ(table->source_digest(), "00112233445566778899aabbccddeeff");
  EXPECT_EQ(table->checksum_hex().size(), 32u);
  EXPECT_EQ(bytes.size() % 8, 0u);
}

TEST(Load, FromFile) {
  Bytes bytes = reference_bytes();
  const std::string path = write_temp_table(bytes, "rg_load_test.rgt");
  LoadStatus status;
  auto table = Table::load_file(path, &status);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(table->policy_id(), "dlq-replay-gate");
  std::remove(path.c_str());
}

// The committed golden table (written by lower_test) still loads and decides the seed case.
TEST(Load, CommittedGoldenTable) {
  LoadStatus status;
  auto table =
      Table::load_file(std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt", &status);
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(table->decision_digest_hex(), "73ce8dafd5f99df8e3ac5616e15d10a0");
  Input in(*table);
  in.set_string(table->field_index("topic"), "payment.capture");
  in.set_string(table->field_index("error_class"), "timeout");
  in.set_int(table->field_index("attempts"), 1);
  in.set_string(table->field_index("idempotency_key"), "cap_9f3a");
  in.set_bool(table->field_index("already_committed"), false);
  Decision d = table->decide(in);
  EXPECT_EQ(table->verb_name(d.verb), "replay_once");
  EXPECT_EQ(table->rule_name(d), "known_failures:payment.capture/timeout");
}

TEST(Load, MissingFileIsIo) {
  expect_file_load_error("/nonexistent/dir/table.rgt", LoadError::kIo,
                         "cannot open /nonexistent/dir/table.rgt: No such file or directory");
}

TEST(Load, DirectoryIsIo) {
  expect_file_load_error(RG_SOURCE_DIR, LoadError::kIo,
                         std::string("cannot read ") + RG_SOURCE_DIR + ": Is a directory");
}

// /dev/null is a device, refused before any read (tests/runtime/load_special_files_test.cc).
TEST(Load, EmptyFileIsTruncated) {
  const std::string path = write_temp_table(Bytes{}, "rg_load_empty.rgt");
  expect_file_load_error(path, LoadError::kTruncated, "empty table");
  std::remove(path.c_str());
}

TEST(Load, Empty) {
  LoadStatus status;
  EXPECT_EQ(Table::load_bytes(nullptr, 0, &status), nullptr);
  EXPECT_EQ(status.error, LoadError::kTruncated);
  EXPECT_EQ(status.message, "empty table");
  Bytes one = {0};
  expect_load_error(Bytes{}, LoadError::kTruncated, "empty table");
  expect_load_error(one, LoadError::kBadMagic, "bad magic");
}

TEST(Load, OversizeInputIsRejectedBeforeReading) {
  uint8_t byte = 0;
  LoadStatus status;
  EXPECT_EQ(Table::load_bytes(&byte, Table::kMaxTableBytes + 1, &status), nullptr);
  EXPECT_EQ(status.error, LoadError::kTooLarge);
}

TEST(Load, TruncatedAtSeveralPoints) {
  Bytes bytes = reference_bytes();
  for (size_t size : {size_t{4}, size_t{8}, size_t{40}, size_t{79}, size_t{80}, size_t{200},
                      bytes.size() / 2, bytes.size() - 8, bytes.size() - 1}) {
    SCOPED_TRACE(size);
    expect_load_error(Bytes(bytes.begin(), bytes.begin() + static_cast<long>(size)),
                      LoadError::kTruncated, "truncated");
  }
}

TEST(Load, WrongMagic) {
  Bytes bytes = reference_bytes();
  bytes[0] = 'X';
  expect_load_error(bytes, LoadError::kBadMagic, "bad magic: not a replaygate table");
  Bytes text(100, 'a');
  expect_load_error(text, LoadError::kBadMagic, "bad magic");
}

TEST(Load, UnknownVersion) {
  Bytes bytes = reference_bytes();
  fm::Header h = header_of(bytes);
  h.version = 2;
  put_header(bytes, h);
  expect_load_error(bytes, LoadError::kUnsupportedVersion,
                    "unsupported format version 2 (this runtime reads 1)");
}

TEST(Load, OversizeHeaderClaims) {
  Bytes bytes = reference_bytes();
  fm::Header h = header_of(bytes);
  h.total_size = uint64_t{1} << 40;
  put_header(bytes, h);
  expect_load_error(bytes, LoadError::kTooLarge, "header claims 1099511627776 bytes");

  bytes = reference_bytes();
  h = header_of(bytes);
  h.header_size = 4096;
  put_header(bytes, h);
  expect_load_error(bytes, LoadError::kMalformed, "bad header size 4096 (expected 80)");

  bytes = reference_bytes();
  h = header_of(bytes);
  h.section_count = 1000;
  put_header(bytes, h);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed, "expected 16 sections, header says 1000");
}

TEST(Load, TrailingBytes) {
  Bytes bytes = reference_bytes();
  bytes.resize(bytes.size() + 8, 0);
  expect_load_error(bytes, LoadError::kMalformed, "trailing bytes");
}

TEST(Load, FlippedPayloadByteFailsTheChecksum) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry strings = section(bytes, fm::kStrings);
  bytes[strings.offset + 3] ^= 0x20;
  expect_load_error(bytes, LoadError::kBadChecksum, "bad checksum: header says ");
  bytes = reference_bytes();
  bytes[bytes.size() - 1] ^= 1;  // padding and provenance are covered too
  expect_load_error(bytes, LoadError::kBadChecksum, "bad checksum");
}

TEST(Load, SectionOffsetOutOfRange) {
  Bytes bytes = reference_bytes();
  set<uint64_t>(bytes, entry_offset(fm::kVerbs) + 8, bytes.size() + 64);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "section verbs (offset ");

  bytes = reference_bytes();
  set<uint64_t>(bytes, entry_offset(fm::kCatalog) + 16, uint64_t{1} << 63);  // huge length
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "lies outside the table");
}

TEST(Load, SectionMisalignedOrOverlapping) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry verbs = section(bytes, fm::kVerbs);
  set<uint64_t>(bytes, entry_offset(fm::kVerbs) + 8, verbs.offset + 4);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "is not 8-byte aligned");

  bytes = reference_bytes();
  set<uint64_t>(bytes, entry_offset(fm::kVerbs) + 8, section(bytes, fm::kMeta).offset);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "overlaps");

  bytes = reference_bytes();
  set<uint32_t>(bytes, entry_offset(fm::kVerbs), 3);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed, "directory entry 6 has kind 3, expected 7");
}

TEST(Load, StringOffsetOutOfRange) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry meta = section(bytes, fm::kMeta);
  set<uint32_t>(bytes, meta.offset + offsetof(fm::MetaRecord, policy_id), 0xFFFFFF00u);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "string offset out of range in meta policy id");

  bytes = reference_bytes();
  fm::SectionEntry catalog = section(bytes, fm::kCatalog);
  // Length runs past the pool end: offset + length overflows u32 arithmetic if done naively.
  set<uint32_t>(bytes, catalog.offset + offsetof(fm::CatalogRecord, reason) + 4, 0xFFFFFFFFu);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "string offset out of range in catalog entry 0");
}

TEST(Load, VerbIndexOutOfRange) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry catalog = section(bytes, fm::kCatalog);
  set<uint32_t>(
      bytes, catalog.offset + 2 * sizeof(fm::CatalogRecord) + offsetof(fm::CatalogRecord, verb), 3);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset,
                    "catalog entry 2 verb index 3 out of range (3 verbs)");

  bytes = reference_bytes();
  fm::SectionEntry meta = section(bytes, fm::kMeta);
  set<uint32_t>(bytes, meta.offset + offsetof(fm::MetaRecord, default_verb), 77);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "default verb index 77 out of range");
}

// Every reserved word must be zero (docs/table-format.md): a later version may give one a
// meaning, which this loader must then refuse rather than ignore. Each edit is resealed, so it
// reaches the structural checks.
TEST(Load, NonzeroReservedWordsAreRejected) {
  const auto with = [](size_t offset) {
    Bytes bytes = reference_bytes();
    set<uint32_t>(bytes, offset, 1);
    reseal(bytes);
    return bytes;
  };
  const Bytes reference = reference_bytes();
  expect_load_error(with(offsetof(fm::Header, reserved)), LoadError::kMalformed,
                    "header reserved word is 1, not 0");
  expect_load_error(with(entry_offset(fm::kVerbs) + offsetof(fm::SectionEntry, reserved)),
                    LoadError::kMalformed, "directory entry 6 reserved word is 1, not 0");
  expect_load_error(with(section(reference, fm::kMeta).offset + offsetof(fm::MetaRecord, reserved)),
                    LoadError::kMalformed, "meta reserved word is 1, not 0");
  expect_load_error(with(section(reference, fm::kFields).offset + sizeof(fm::FieldRecord) +
                         offsetof(fm::FieldRecord, reserved)),
                    LoadError::kMalformed, "field 1 reserved word is 1, not 0");
  expect_load_error(with(section(reference, fm::kVerbs).offset + 2 * sizeof(fm::VerbRecord) +
                         offsetof(fm::VerbRecord, reserved)),
                    LoadError::kMalformed, "verb 2 reserved word is 1, not 0");
  expect_load_error(with(section(reference, fm::kCatalog).offset + 5 * sizeof(fm::CatalogRecord) +
                         offsetof(fm::CatalogRecord, reserved)),
                    LoadError::kMalformed, "catalog entry 5 reserved word is 1, not 0");
  expect_load_error(
      with(section(reference, fm::kProvenance).offset + offsetof(fm::ProvenanceHeader, reserved)),
      LoadError::kMalformed, "provenance reserved word is 1, not 0");
}

TEST(Load, DefaultVerbMustHaveNoEffect) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry meta = section(bytes, fm::kMeta);
  set<uint32_t>(bytes, meta.offset + offsetof(fm::MetaRecord, default_verb), 1);  // replay_once
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed, "default verb must have effect none");
}

TEST(Load, UnsortedCutPoints) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry cuts = section(bytes, fm::kCuts);
  // attempts: cuts 0, 3 (min and max_attempts); swap them.
  ASSERT_EQ(get<int64_t>(bytes, cuts.offset), 0);
  ASSERT_EQ(get<int64_t>(bytes, cuts.offset + 8), 3);
  set<int64_t>(bytes, cuts.offset, 3);
  set<int64_t>(bytes, cuts.offset + 8, 0);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed, "field 2 cut points are not sorted");
}

TEST(Load, DictionarySlotOutOfRange) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry slots = section(bytes, fm::kDictSlots);
  size_t at = slots.offset;
  while (get<uint32_t>(bytes, at) == 0) at += 4;  // the first occupied slot (field topic)
  set<uint32_t>(bytes, at, 500);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "field 0 index slot");
}

TEST(Load, DictionaryEntryMissingFromIndex) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry slots = section(bytes, fm::kDictSlots);
  size_t at = slots.offset;
  while (get<uint32_t>(bytes, at) == 0) at += 4;
  set<uint32_t>(bytes, at, 0);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed, "field 0 index holds 3 entries, expected 4");
}

TEST(Load, RowSlotOutOfRange) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry slots = section(bytes, fm::kRowSlots);
  size_t at = slots.offset;
  while (get<uint32_t>(bytes, at) == 0) at += 4;
  set<uint32_t>(bytes, at, 10);  // nine rows: slot values 1..9
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "rule 4 mask 0 slot");
}

TEST(Load, RowKeyAtomOutOfRange) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry keys = section(bytes, fm::kRowKeys);
  set<uint32_t>(bytes, keys.offset + 4, 1000);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "rule 4 row 0 key 1 atom 1000 out of range");
}

TEST(Load, ConditionFieldOutOfRange) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry conditions = section(bytes, fm::kConditions);
  set<uint32_t>(bytes, conditions.offset + offsetof(fm::ConditionRecord, field), 6);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset, "condition 0 field index 6 out of range");
}

TEST(Load, BadFieldType) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry fields = section(bytes, fm::kFields);
  set<uint8_t>(bytes, fields.offset + offsetof(fm::FieldRecord, type), 9);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed, "field 0 has a bad type or flag byte");
}

TEST(Load, DecisionDigestIsVerified) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry verbs = section(bytes, fm::kVerbs);
  fm::SectionEntry strings = section(bytes, fm::kStrings);
  // Change one byte of a verb description: structurally fine, but the digest no longer matches.
  uint32_t description = get<uint32_t>(bytes, verbs.offset + offsetof(fm::VerbRecord, description));
  bytes[strings.offset + description] ^= 0x20;
  reseal_checksum(bytes);
  expect_load_error(bytes, LoadError::kBadChecksum, "bad decision digest");
}

TEST(Load, ProvenanceDigestIsVerified) {
  Bytes bytes = reference_bytes();
  fm::SectionEntry prov = section(bytes, fm::kProvenance);
  bytes[prov.offset + sizeof(fm::ProvenanceHeader)] ^= 1;  // first source line
  reseal_checksum(bytes);
  expect_load_error(bytes, LoadError::kBadChecksum, "bad provenance digest");
}

// Every truncation and every resealed single-byte change either loads or fails cleanly; a table
// that still loads still decides without crashing. Two passes: with only the checksum resealed
// (edits then meet the digests: only unused bytes survive), and with every digest resealed as a
// forger would (edits then meet the structural checks alone).
TEST(Load, EveryByteCorruptionFailsCleanly) {
  const Bytes original = reference_bytes();
  for (size_t size = 0; size < original.size(); size += 7) {
    Bytes cut(original.begin(), original.begin() + static_cast<long>(size));
    EXPECT_FALSE(load_status(cut).ok()) << size;
  }
  for (const bool forge : {false, true}) {
    size_t loaded = 0;
    for (size_t at = 0; at < original.size(); ++at) {
      for (uint8_t delta : {uint8_t{1}, uint8_t{0x80}, uint8_t{0xFF}}) {
        Bytes bytes = original;
        bytes[at] ^= delta;
        if (at >= fm::kChecksumOffset + 16) forge ? reseal(bytes) : reseal_checksum(bytes);
        LoadStatus status;
        auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
        if (!table) {
          EXPECT_NE(status.message, "") << at;
          continue;
        }
        ++loaded;
        Input in(*table);
        for (uint32_t f = 0; f < table->field_count(); ++f) in.set_string(f, "payment.capture");
        Decision d = table->decide(in);
        EXPECT_LT(d.verb, table->verb_count());
        (void)table->dump();
      }
    }
    // Only changes in unused bytes (padding, reserved fields) survive every check.
    if (!forge) {
      EXPECT_LT(loaded, original.size());
    }
  }
}

}  // namespace
}  // namespace replaygate
