// The audit logs' verdicts, kept until a log changes (log_status.h).
#include "console/log_status.h"

#include <fstream>
#include <sstream>

namespace replaygate::console {
namespace {

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
         a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

}  // namespace

LogStatus LogStatusCache::get(const std::string& path) {
  std::lock_guard lock(mu_);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    seen_.erase(path);
    return {};
  }
  if (const auto it = seen_.find(path); it != seen_.end() && same_file(it->second.at, st)) {
    return it->second.status;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    seen_.erase(path);
    return {};
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  Seen fresh;
  fresh.at = st;
  fresh.status.readable = true;
  fresh.status.report = audit::verify_bytes(bytes.str());
  ++verifications_;
  // A write during the read moves the stat: the next view verifies again.
  struct stat after {};
  if (::stat(path.c_str(), &after) == 0 && same_file(after, st)) {
    seen_[path] = fresh;
  } else {
    seen_.erase(path);
  }
  return fresh.status;
}

}  // namespace replaygate::console
