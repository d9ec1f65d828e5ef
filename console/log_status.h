// The audit page's verdict on each audit log, verified again only when the file changed.
//
// In: a log's path. Out: whether it could be read and, when it could, audit::verify_bytes' report
// on it as it is now. A page view costs one stat per log; a log is read and verified again only
// when its inode, size, mtime or ctime moved (ctime too, so that a rewrite whose mtime was set
// back is still seen), one verification at a time (each holds a whole log in memory).
//
// Threads: any; calls are serialized.
#pragma once

#include <sys/stat.h>

#include <map>
#include <mutex>
#include <string>

#include "audit/audit_log.h"

namespace replaygate::console {

struct LogStatus {
  bool readable = false;
  audit::VerifyReport report;
};

class LogStatusCache {
 public:
  LogStatus get(const std::string& path);
  // How many times a log was read and verified (for tests).
  uint64_t verifications() const { return verifications_; }

 private:
  struct Seen {
    struct stat at {};
    LogStatus status;
  };
  std::mutex mu_;
  std::map<std::string, Seen> seen_;
  uint64_t verifications_ = 0;
};

}  // namespace replaygate::console
