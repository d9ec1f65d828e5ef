// How much memory this process can still take, for options that size memory up front
// (decide --replayed-keys-memory): a value above it is refused before any work, instead of
// failing (or being killed by the OOM killer) in the middle of a run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace replaygate::pipeline {

// The tightest of the limits this process can read, and which one it is:
//   * MemAvailable in /proc/meminfo (free memory plus what the kernel can reclaim);
//   * the memory cgroup's limit (cgroup v2 memory.max, cgroup v1 memory.limit_in_bytes, as seen
//     under /sys/fs/cgroup), when there is one;
//   * the address-space limit (RLIMIT_AS, `ulimit -v`) less the address space in use already,
//     and the data-segment limit (RLIMIT_DATA, `ulimit -d`, which counts private mappings) less
//     the data in use (memory mapped up front counts in full against both).
// `bytes` is UINT64_MAX when none can be read (then nothing is refused). Reads /proc and /sys
// each call; thread-safe.
struct MemoryHeadroom {
  uint64_t bytes = UINT64_MAX;
  std::string what;  // "MemAvailable in /proc/meminfo", ...; "" when nothing is known
};
MemoryHeadroom memory_headroom();

// The usage message when `mib` MiB (the value of `option`) is more than memory_headroom(), ""
// when it fits: "--replayed-keys-memory 65536 MiB is more than the memory available (19870 MiB:
// MemAvailable in /proc/meminfo); give at most 19870".
std::string memory_option_error(std::string_view option, uint64_t mib);

}  // namespace replaygate::pipeline
