// The memory this process can still take (memory_limit.h).
#include "pipeline/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace replaygate::pipeline {
namespace {

// The first whole number in the file at `path`; false when it cannot be read or holds none
// (cgroup v2 writes "max" for no limit).
bool read_number(const char* path, uint64_t* value) {
  std::ifstream in(path);
  unsigned long long n = 0;
  if (!(in >> n)) return false;
  *value = n;
  return true;
}

// MemAvailable from /proc/meminfo, in bytes.
bool mem_available(uint64_t* bytes) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %llu kB", &kib) == 1) {
      *bytes = kib * 1024;
      return true;
    }
  }
  return false;
}

// A "Key:   N kB" line of /proc/self/status (VmSize: address space, VmData: what RLIMIT_DATA
// counts), in bytes.
bool status_bytes(const char* key, uint64_t* bytes) {
  std::ifstream in("/proc/self/status");
  const std::string prefix = std::string(key) + ":";
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    *bytes = std::strtoull(line.c_str() + prefix.size(), nullptr, 10) * 1024;
    return true;
  }
  return false;
}

}  // namespace

MemoryHeadroom memory_headroom() {
  MemoryHeadroom headroom;
  const auto consider = [&](uint64_t bytes, const char* what) {
    if (bytes < headroom.bytes) headroom = {bytes, what};
  };
  uint64_t bytes = 0;
  if (mem_available(&bytes)) consider(bytes, "MemAvailable in /proc/meminfo");
  // A cgroup without a limit reads "max" (v2) or a number near 2^63 (v1): not a limit.
  constexpr uint64_t kNoLimit = uint64_t{1} << 62;
  if (read_number("/sys/fs/cgroup/memory.max", &bytes) && bytes < kNoLimit) {
    consider(bytes, "the cgroup memory limit, /sys/fs/cgroup/memory.max");
  }
  if (read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes", &bytes) && bytes < kNoLimit) {
    consider(bytes, "the cgroup memory limit, /sys/fs/cgroup/memory/memory.limit_in_bytes");
  }
  // The memory is mapped up front (untouched), so both limits on mappings count all of it.
  const auto rlimit_headroom = [&](int resource, const char* used_key, const char* what) {
    struct rlimit limit {};
    uint64_t used = 0;
    if (::getrlimit(resource, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
        status_bytes(used_key, &used)) {
      const uint64_t cap = limit.rlim_cur;
      consider(cap > used ? cap - used : 0, what);
    }
  };
  rlimit_headroom(RLIMIT_AS, "VmSize", "the address-space limit, ulimit -v");
  rlimit_headroom(RLIMIT_DATA, "VmData", "the data-segment limit, ulimit -d");
  return headroom;
}

std::string memory_option_error(std::string_view option, uint64_t mib) {
  const MemoryHeadroom headroom = memory_headroom();
  if (headroom.bytes == UINT64_MAX || mib <= (headroom.bytes >> 20)) return "";
  const std::string most = std::to_string(headroom.bytes >> 20);
  return std::string(option) + " " + std::to_string(mib) +
         " MiB is more than the memory available (" + most + " MiB: " + headroom.what +
         "); give at most " + most;
}

}  // namespace replaygate::pipeline
