// Test helper: frozen tables as bytes for the runtime tests. Compile an IR policy to a loaded
// table; read and patch a table's header, section entries and fields in place; reseal every digest
// (or only the checksum) so an edit reaches the structural checks; expect a load to fail with a
// given error.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir.h"
#include "compiler/lower.h"
#include "runtime/table.h"
#include "runtime/table_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate::testing {

using TableBytes = std::vector<uint8_t>;

// lower() then Table::load_bytes(); a failed load is a test failure (and nullptr).
inline std::unique_ptr<Table> load_lowered(const ir::CheckedPolicy& policy) {
  const TableBytes bytes = lower(policy);
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  EXPECT_TRUE(status.ok()) << status.message;
  return table;
}

// Table::load_bytes()'s status for `bytes`; checks that a table is returned exactly when it is ok.
inline LoadStatus load_status(const TableBytes& bytes) {
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  EXPECT_EQ(table == nullptr, !status.ok());
  return status;
}

// Loading `bytes` fails with `error`, and the message contains `message_part`.
// "" when `bytes` load, else "LOAD_ERROR_NAME: message".
inline std::string load_error(const TableBytes& bytes) {
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  return table ? "" : std::string(load_error_name(status.error)) + ": " + status.message;
}

inline void expect_load_error(const TableBytes& bytes, LoadError error,
                              const std::string& message_part) {
  const LoadStatus s = load_status(bytes);
  EXPECT_EQ(load_error_name(s.error), std::string(load_error_name(error))) << s.message;
  EXPECT_NE(s.message.find(message_part), std::string::npos) << s.message;
}

// Table::load_file(path) fails with `error` and exactly `message`.
inline void expect_file_load_error(const std::string& path, LoadError error,
                                   const std::string& message) {
  LoadStatus status;
  EXPECT_EQ(Table::load_file(path, &status), nullptr) << path;
  EXPECT_EQ(load_error_name(status.error), std::string(load_error_name(error))) << path;
  EXPECT_EQ(status.message, message) << path;
}

// Recomputes only the header checksum: an edit then reaches the structural checks but still
// fails on the decision or provenance digest unless it is structurally invalid first (for the
// tests of the digests themselves).
inline void reseal_checksum(TableBytes& bytes) {
  std::memset(bytes.data() + format::kChecksumOffset, 0, 16);
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  std::memcpy(bytes.data() + format::kChecksumOffset, &h.low64, 8);
  std::memcpy(bytes.data() + format::kChecksumOffset + 8, &h.high64, 8);
}

// Recomputes every digest a forger can (docs/table-format.md, "Digests"): the decision digest
// over every section but provenance, each preceded by its kind (u32) and length (u64), the
// provenance digest, then the checksum over the whole file. So a forged edit meets the loader's
// structural checks and nothing else: it loads unless one of them refuses it. The directory is
// read as the header states it; sections it places outside the bytes are skipped (the loader
// refuses such a directory before it compares a digest).
inline void reseal(TableBytes& bytes) {
  if (bytes.size() >= sizeof(format::Header)) {
    format::Header h;
    std::memcpy(&h, bytes.data(), sizeof(h));
    XXH3_state_t decision, provenance;
    XXH3_128bits_reset(&decision);
    XXH3_128bits_reset(&provenance);
    const uint32_t count = std::min<uint32_t>(h.section_count, format::kMaxSectionCount);
    for (uint32_t i = 0; i < count; ++i) {
      const size_t at = sizeof(format::Header) + i * sizeof(format::SectionEntry);
      if (at + sizeof(format::SectionEntry) > bytes.size()) break;
      format::SectionEntry e;
      std::memcpy(&e, bytes.data() + at, sizeof(e));
      if (e.offset > bytes.size() || e.length > bytes.size() - e.offset) continue;
      if (e.kind == format::kProvenance) {
        XXH3_128bits_update(&provenance, bytes.data() + e.offset, e.length);
        continue;
      }
      XXH3_128bits_update(&decision, &e.kind, sizeof(e.kind));
      XXH3_128bits_update(&decision, &e.length, sizeof(e.length));
      XXH3_128bits_update(&decision, bytes.data() + e.offset, e.length);
    }
    const XXH128_hash_t d = XXH3_128bits_digest(&decision);
    const XXH128_hash_t p = XXH3_128bits_digest(&provenance);
    std::memcpy(bytes.data() + offsetof(format::Header, decision_digest), &d.low64, 8);
    std::memcpy(bytes.data() + offsetof(format::Header, decision_digest) + 8, &d.high64, 8);
    std::memcpy(bytes.data() + offsetof(format::Header, provenance_digest), &p.low64, 8);
    std::memcpy(bytes.data() + offsetof(format::Header, provenance_digest) + 8, &p.high64, 8);
  }
  reseal_checksum(bytes);
}

inline format::Header header_of(const TableBytes& bytes) {
  format::Header h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  return h;
}
inline void put_header(TableBytes& bytes, const format::Header& h) {
  std::memcpy(bytes.data(), &h, sizeof(h));
}

// The byte offset of section `kind`'s entry in the section directory after the header.
inline size_t entry_offset(uint32_t kind) {
  return sizeof(format::Header) + (kind - 1) * sizeof(format::SectionEntry);
}

inline format::SectionEntry section(const TableBytes& bytes, uint32_t kind) {
  format::SectionEntry e;
  std::memcpy(&e, bytes.data() + entry_offset(kind), sizeof(e));
  return e;
}

// Reads / writes a T at `offset` (unaligned, native byte order like the format).
template <typename T>
T get(const TableBytes& bytes, size_t offset) {
  T v;
  std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}
template <typename T>
void set(TableBytes& bytes, size_t offset, const T& v) {
  std::memcpy(bytes.data() + offset, &v, sizeof(T));
}

// Writes `bytes` to ::testing::TempDir() + name and returns the path.
inline std::string write_temp_table(const TableBytes& bytes, const std::string& name) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace replaygate::testing
