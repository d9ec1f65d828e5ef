// Test helper: frozen tables as bytes for the runtime tests. Compile an IR policy to a loaded
// table; read and patch a table's header, section entries and fields in place; reseal the
// checksum so an edit reaches the structural checks; expect a load to fail with a given error.
#pragma once

#include <gtest/gtest.h>

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

// Recomputes the header checksum, so that a deliberate edit reaches the structural checks.
inline void reseal(TableBytes& bytes) {
  std::memset(bytes.data() + format::kChecksumOffset, 0, 16);
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  std::memcpy(bytes.data() + format::kChecksumOffset, &h.low64, 8);
  std::memcpy(bytes.data() + format::kChecksumOffset + 8, &h.high64, 8);
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
