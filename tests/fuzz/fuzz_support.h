// What the libFuzzer targets of tests/fuzz share: the shipped policy compiled once into a table
// (the fixture every reader, mapping and case-file target decides with), the whole of a source
// file, and fuzz bytes as a file descriptor (the readers read dumps from one).
//
// A fixture that cannot be built is a broken tree, not a finding: it traps at once, before the
// first input. Header-only; one fixture per process, built on first use (not thread-safe).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "runtime/table.h"
#include "tests/support/paths.h"

namespace replaygate::fuzz {

// The file at RG_SOURCE_DIR/`relative`, whole; traps when it cannot be read.
inline std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(RG_SOURCE_DIR) + "/" + relative, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz fixture: cannot read %s\n", relative.c_str());
    __builtin_trap();
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// policies/replay_gate.yaml compiled, lowered and loaded (the policy the example mappings map to).
struct PolicyFixture {
  std::optional<ir::CheckedPolicy> policy;
  std::unique_ptr<Table> table;
  PolicyFixture() {
    LoadedPolicy loaded =
        load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml");
    if (!loaded.policy) __builtin_trap();
    policy = std::move(loaded.policy);
    const std::vector<uint8_t> bytes = lower(*policy);
    LoadStatus status;
    table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    if (!table) __builtin_trap();
  }
};

// `data` in an anonymous in-memory file, positioned at its start (the caller closes it); traps
// when the kernel refuses (not a finding).
inline int memory_file(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz-input", 0);
  if (fd < 0) __builtin_trap();
  size_t done = 0;
  while (done < size) {
    const ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) __builtin_trap();
    done += static_cast<size_t>(n);
  }
  if (lseek(fd, 0, SEEK_SET) != 0) __builtin_trap();
  return fd;
}

}  // namespace replaygate::fuzz
