// The load path for large tables and odd files: a table of several MiB is read and hashed in
// pieces (and lives in its own huge-page mapping), so corruption in any piece must still fail;
// files that are not plain files, or that change size while being read, fail cleanly.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "compiler/lower.h"
#include "runtime/table.h"
#include "runtime/table_format.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

namespace fm = replaygate::format;
using Bytes = testing::TableBytes;
using namespace testing;  // NOLINT: table-bytes test vocabulary
using testing::S;

constexpr uint32_t kExtraRows = 40000;  // ~5 MiB: over 2 x 2 MiB, and about 20 read pieces

// The reference gate with kExtraRows more rows in its table (rule 4), all concrete.
const Bytes& large_bytes() {
  static const Bytes bytes = [] {
    ir::CheckedPolicy checked = testing::reference_gate();
    ir::Table& table = std::get<ir::Table>(checked.policy.rules[4]);
    for (uint32_t i = 0; i < kExtraRows; ++i) {
      table.rows.push_back(testing::row(
          table.id, {S("topic." + std::to_string(i / 200)), S("error_" + std::to_string(i % 200))},
          i % 3 == 0 ? 0u : 1u));
    }
    return lower(checked);
  }();
  return bytes;
}

TEST(LoadLarge, FromBytesAndFromFileAlike) {
  const Bytes& bytes = large_bytes();
  ASSERT_GT(bytes.size(), size_t{5} << 20);
  LoadStatus status;
  auto from_bytes = Table::load_bytes(bytes.data(), bytes.size(), &status);
  ASSERT_TRUE(status.ok()) << status.message;
  const std::string path = write_temp_table(bytes, "rg_load_large.rgt");
  auto from_file = Table::load_file(path, &status);
  ASSERT_TRUE(status.ok()) << status.message;
  std::remove(path.c_str());

  for (const Table* t : {from_bytes.get(), from_file.get()}) {
    EXPECT_EQ(t->rule_count(), 4u + 9u + kExtraRows);
    EXPECT_EQ(t->checksum_hex(), from_bytes->checksum_hex());
    EXPECT_EQ(t->decision_digest_hex(), from_bytes->decision_digest_hex());
    // The last row, whose catalog entry, keys and slots lie in late pieces of the table.
    Input in(*t);
    in.set_string(t->field_index("topic"), "topic.199");
    in.set_string(t->field_index("error_class"), "error_199");
    in.set_int(t->field_index("attempts"), 0);
    in.set_string(t->field_index("idempotency_key"), "k");
    in.set_bool(t->field_index("already_committed"), false);
    in.set_int(t->field_index("replays"), 0);
    Decision d = t->decide(in);
    ASSERT_EQ(d.kind, DecisionKind::kRule) << t->reason(d);
    EXPECT_EQ(t->rule_name(d), "known_failures:topic.199/error_199");
    EXPECT_EQ(d.rule, t->rule_count() - 1);
    EXPECT_EQ(t->verb_name(d.verb), t->verb_name((kExtraRows - 1) % 3 == 0 ? 0u : 1u));
    EXPECT_EQ(t->rule_id(d.rule), "known_failures:topic.199/error_199");
    EXPECT_NE(t->rule_reason(d.rule), "");
  }
}

// The checksum is computed piece by piece while the bytes arrive: a flip on either side of a
// piece boundary, and in the last byte, is caught.
TEST(LoadLarge, FlipInAnyPieceFailsTheChecksum) {
  const Bytes& original = large_bytes();
  std::vector<size_t> offsets = {original.size() - 1, original.size() / 2};
  for (size_t boundary = size_t{256} << 10; boundary < original.size(); boundary *= 4) {
    offsets.push_back(boundary - 1);
    offsets.push_back(boundary);
  }
  for (size_t at : offsets) {
    Bytes bytes = original;
    bytes[at] ^= 0x10;
    expect_load_error(bytes, LoadError::kBadChecksum, "bad checksum");
  }
}

// The decision and provenance digests follow the sections across pieces.
TEST(LoadLarge, DigestsCoverLatePieces) {
  const Bytes& original = large_bytes();
  Bytes bytes = original;
  const fm::SectionEntry strings = section(bytes, fm::kStrings);
  const fm::SectionEntry catalog = section(bytes, fm::kCatalog);
  // The reason of the last catalog entry, far into the string section.
  const uint32_t reason =
      get<uint32_t>(bytes, catalog.offset + catalog.length - sizeof(fm::CatalogRecord) +
                               offsetof(fm::CatalogRecord, reason));
  bytes[strings.offset + reason] ^= 0x20;
  reseal_checksum(bytes);
  expect_load_error(bytes, LoadError::kBadChecksum, "bad decision digest");

  bytes = original;
  const fm::SectionEntry prov = section(bytes, fm::kProvenance);
  bytes[prov.offset + prov.length - 1] ^= 1;  // the last byte of the source digest
  reseal_checksum(bytes);
  expect_load_error(bytes, LoadError::kBadChecksum, "bad provenance digest");
}

// Every row of the large table is concrete in both keys, so the loader checks its slots without
// looking rows up; a slot naming a row past the end is still found.
TEST(LoadLarge, RowSlotOutOfRangeInAUniformTable) {
  Bytes bytes = large_bytes();
  const fm::SectionEntry slots = section(bytes, fm::kRowSlots);
  size_t at = slots.offset + slots.length - 4;
  while (get<uint32_t>(bytes, at) == 0) at -= 4;
  set<uint32_t>(bytes, at, 9 + kExtraRows + 1);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kBadOffset,
                    "names row " + std::to_string(9 + kExtraRows) + ", out of range");
}

// A catalog entry far into the table that names the wrong row.
TEST(LoadLarge, LateCatalogEntryMustMatchItsRule) {
  Bytes bytes = large_bytes();
  const fm::SectionEntry catalog = section(bytes, fm::kCatalog);
  const size_t last = catalog.length / sizeof(fm::CatalogRecord) - 1;
  set<uint32_t>(
      bytes, catalog.offset + last * sizeof(fm::CatalogRecord) + offsetof(fm::CatalogRecord, row),
      7);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed,
                    "catalog entry " + std::to_string(last) + " does not match rule 4");
}

// In a table with wildcards, a slot of one mask must name a row with exactly that mask.
TEST(LoadLarge, SlotNamingARowWithOtherWildcardsIsMalformed) {
  Bytes bytes = lower(testing::small_policy());
  const fm::SectionEntry masks = section(bytes, fm::kMasks);
  const fm::SectionEntry slots = section(bytes, fm::kRowSlots);
  const auto first = get<fm::MaskRecord>(bytes, masks.offset);  // [us, 2, acme]: all concrete
  ASSERT_EQ(first.mask, 7u);
  size_t at = slots.offset + first.slot_begin * 4;
  while (get<uint32_t>(bytes, at) == 0) at += 4;
  ASSERT_EQ(get<uint32_t>(bytes, at), 5u);  // row 4, + 1
  set<uint32_t>(bytes, at, 1);              // row 0: [eu, 1, *]
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed, "mask 0 indexes row 0 whose wildcards differ");
}

// The first used slot of `mask` followed by `empties` empty slots (the index is at most half
// full), as a byte offset into `bytes`. No row's probe passes it: clearing or moving it on
// affects its own row only.
size_t used_slot_before_empty_ones(const Bytes& bytes, const fm::MaskRecord& mask,
                                   uint32_t empties) {
  const fm::SectionEntry slots = section(bytes, fm::kRowSlots);
  for (uint32_t s = 0; s + empties < mask.slot_count; ++s) {
    const size_t at = slots.offset + (mask.slot_begin + s) * 4;
    bool found = get<uint32_t>(bytes, at) != 0;
    for (uint32_t e = 1; e <= empties; ++e) found &= get<uint32_t>(bytes, at + 4 * e) == 0;
    if (found) return at;
  }
  ADD_FAILURE() << "no used slot before " << empties << " empty ones";
  return slots.offset;
}

// A guard whose kind is flipped to "table" has rows that no mask indexes: decide() would never
// reach them while dump and diff read them (found by a break-it test, with the checksum and
// digests recomputed).
TEST(LoadLarge, GuardFlippedToATableIsMalformed) {
  Bytes bytes = lower(reference_gate());
  const fm::SectionEntry rules = section(bytes, fm::kRules);
  ASSERT_EQ(get<uint32_t>(bytes, rules.offset + offsetof(fm::RuleRecord, kind)), fm::kRuleGuard);
  set<uint32_t>(bytes, rules.offset + offsetof(fm::RuleRecord, kind), fm::kRuleTable);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed, "rule 0 row 0 is not indexed");
}

// A row whose slot is cleared is no longer found by decide(): refused.
TEST(LoadLarge, RowMissingFromTheIndexIsMalformed) {
  Bytes bytes = large_bytes();
  const auto mask = get<fm::MaskRecord>(bytes, section(bytes, fm::kMasks).offset);
  const size_t at = used_slot_before_empty_ones(bytes, mask, 1);
  const uint32_t row = get<uint32_t>(bytes, at) - 1;
  set<uint32_t>(bytes, at, 0);
  reseal(bytes);
  expect_load_error(bytes, LoadError::kMalformed,
                    "rule 4 row " + std::to_string(row) + " is not indexed");
}

// The same row in two slots of one mask.
TEST(LoadLarge, RowIndexedTwiceIsMalformed) {
  Bytes bytes = large_bytes();
  const auto first = get<fm::MaskRecord>(bytes, section(bytes, fm::kMasks).offset);
  const size_t at = used_slot_before_empty_ones(bytes, first, 1);
  const uint32_t v = get<uint32_t>(bytes, at);
  set<uint32_t>(bytes, at + 4, v);
  reseal(bytes);
  const LoadStatus status = load_status(bytes);
  EXPECT_EQ(status.error, LoadError::kMalformed);
  EXPECT_NE(status.message.find("indexes row " + std::to_string(v - 1) + " twice"),
            std::string::npos)
      << status.message;
}

// A pipe has no size to read up front: the loader reads it to its end.
TEST(LoadLarge, FromAPipe) {
  const Bytes& bytes = large_bytes();
  const std::string path = ::testing::TempDir() + "rg_load_large.fifo";
  std::remove(path.c_str());
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  // The writer is connected before the load (load_file does not wait for one: a FIFO without a
  // writer reads as empty). Its open needs a reader: a placeholder that never reads, kept open.
  const int placeholder = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(placeholder, 0);
  const int out = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(out, 0);
  std::thread writer([&] {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(out, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(out);
  });
  LoadStatus status;
  auto table = Table::load_file(path, &status);
  writer.join();
  ::close(placeholder);
  std::remove(path.c_str());
  ASSERT_TRUE(status.ok()) << status.message;
  EXPECT_EQ(table->rule_count(), 4u + 9u + kExtraRows);
}

// Files in /proc report size 0 and are read to their end like a pipe: not a table.
TEST(LoadLarge, FileReportingNoSize) {
  expect_file_load_error("/proc/self/status", LoadError::kBadMagic,
                         "bad magic: not a replaygate table");
}

// A file that ends before the size fstat gave (sysfs reports 4096 bytes for a few) is an I/O
// error, not a short table.
TEST(LoadLarge, FileShorterThanItsSize) {
  const char* path = "/sys/devices/system/cpu/online";
  struct stat st {};
  if (stat(path, &st) != 0 || st.st_size != 4096)
    GTEST_SKIP() << path << " is not a 4096-byte file";
  LoadStatus status;
  EXPECT_EQ(Table::load_file(path, &status), nullptr);
  EXPECT_EQ(status.error, LoadError::kIo);
  EXPECT_EQ(status.message.rfind(
                std::string("cannot read ") + path + ": the file shrank from 4096 to ", 0),
            0u)
      << status.message;
}

}  // namespace
}  // namespace replaygate
