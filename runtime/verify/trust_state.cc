// Durable rollback state per policy id (see trust_state.h).
#include "runtime/verify/trust_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <vector>

#include "runtime/verify/keys.h"

namespace replaygate::verify {
namespace {

constexpr char kMagic[] = "replaygate-trust-state v1";

std::string state_path(const std::string& dir, std::string_view policy_id) {
  return dir + "/policy-" +
         hex(reinterpret_cast<const uint8_t*>(policy_id.data()), policy_id.size()) + ".state";
}

// An exclusive flock on DIR/.lock, released when destroyed.
class DirLock {
 public:
  DirLock(const std::string& dir, std::string* error) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = "cannot create trust state directory " + dir + ": " + std::strerror(errno);
      return;
    }
    const std::string path = dir + "/.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) {
      *error = "cannot open trust state lock " + path + ": " + std::strerror(errno);
      return;
    }
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      *error = "cannot lock " + path + ": " + std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
      return;
    }
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

bool fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

// Reads a small state file (at most about 64 KiB are kept; the parsers refuse what is cut).
// false when it cannot be opened (*missing when it does not exist; else *error names `what`).
bool read_state_file(const std::string& path, const char* what, std::string* text, bool* missing,
                     std::string* error) {
  *missing = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *missing = errno == ENOENT;
    if (!*missing)
      *error = std::string("cannot read ") + what + " " + path + ": " + std::strerror(errno);
    return false;
  }
  char buffer[1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || text->size() > 64 * 1024) break;
    text->append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

// Requires the lock. found = false when the file does not exist.
bool read_locked(const std::string& dir, std::string_view policy_id, TrustRecord* out, bool* found,
                 std::string* error) {
  *found = false;
  const std::string path = state_path(dir, policy_id);
  std::string text;
  bool missing = false;
  if (!read_state_file(path, "trust state", &text, &missing, error)) return missing;
  const std::string id_hex =
      hex(reinterpret_cast<const uint8_t*>(policy_id.data()), policy_id.size());
  const std::string head = std::string(kMagic) + "\npolicy-hex " + id_hex + "\nrevision ";
  const std::string corrupt =
      "trust state " + path + " is corrupt; inspect it, then `replaygate trust reset` it";
  if (text.compare(0, head.size(), head) != 0) {
    *error = corrupt;
    return false;
  }
  const char* p = text.data() + head.size();
  const char* end = text.data() + text.size();
  int64_t revision = 0;
  const auto [after, ec] = std::from_chars(p, end, revision);
  const std::string_view tail(after, static_cast<size_t>(end - after));
  if (ec != std::errc() || tail.size() != 8 + 64 + 1 || tail.substr(0, 8) != "\ndigest " ||
      tail.back() != '\n') {
    *error = corrupt;
    return false;
  }
  out->policy_id = std::string(policy_id);
  out->revision = revision;
  out->digest = std::string(tail.substr(8, 64));
  for (char c : out->digest) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      *error = corrupt;
      return false;
    }
  }
  *found = true;
  return true;
}

bool write_locked(const std::string& dir, const TrustRecord& record, std::string* error) {
  const std::string path = state_path(dir, record.policy_id);
  const std::string temp = path + ".tmp";
  const std::string text =
      std::string(kMagic) + "\npolicy-hex " +
      hex(reinterpret_cast<const uint8_t*>(record.policy_id.data()), record.policy_id.size()) +
      "\nrevision " + std::to_string(record.revision) + "\ndigest " + record.digest + "\n";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  bool ok = fd >= 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<size_t>(n);
  }
  ok = ok && ::fsync(fd) == 0;
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  ok = ok && ::rename(temp.c_str(), path.c_str()) == 0 && fsync_dir(dir);
  if (!ok) {
    *error = "cannot write trust state " + path + ": " + std::strerror(errno);
    ::unlink(temp.c_str());
  }
  return ok;
}

constexpr char kBindingMagic[] = "replaygate-trust-binding v1";

std::string binding_path(const std::string& dir) { return dir + "/binding"; }

// Requires the lock. *bound empty: no binding file.
bool read_binding_locked(const std::string& dir, std::string* bound, std::string* error) {
  bound->clear();
  const std::string path = binding_path(dir);
  std::string text;
  bool missing = false;
  if (!read_state_file(path, "trust state binding", &text, &missing, error)) return missing;
  const std::string head = std::string(kBindingMagic) + "\npolicy-hex ";
  const size_t hex_size = text.size() - std::min(text.size(), head.size() + 1);
  std::string id(hex_size / 2, '\0');
  if (text.compare(0, head.size(), head) != 0 || text.back() != '\n' || hex_size == 0 ||
      hex_size % 2 != 0 ||
      !unhex(std::string_view(text).substr(head.size(), hex_size),
             reinterpret_cast<uint8_t*>(id.data()), id.size())) {
    *error = "trust state binding " + path +
             " is corrupt; inspect it, then `replaygate trust reset` the policy it names";
    return false;
  }
  *bound = std::move(id);
  return true;
}

// Requires the lock.
bool write_binding_locked(const std::string& dir, std::string_view policy_id, std::string* error) {
  const std::string path = binding_path(dir);
  const std::string temp = path + ".tmp";
  const std::string text =
      std::string(kBindingMagic) + "\npolicy-hex " +
      hex(reinterpret_cast<const uint8_t*>(policy_id.data()), policy_id.size()) + "\n";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ok && ::fsync(fd) == 0;
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  ok = ok && ::rename(temp.c_str(), path.c_str()) == 0 && fsync_dir(dir);
  if (!ok) {
    *error = "cannot write trust state binding " + path + ": " + std::strerror(errno);
    ::unlink(temp.c_str());
  }
  return ok;
}

// Requires the lock: writes the binding `bind_to` unless the directory has one (`bound`).
bool record_binding(const std::string& dir, const std::string& bound, std::string_view bind_to,
                    LoadStatus* status) {
  if (bind_to.empty() || !bound.empty()) return true;
  std::string error;
  if (!write_binding_locked(dir, bind_to, &error)) {
    *status = {LoadError::kIo, error};
    return false;
  }
  return true;
}

}  // namespace

bool bind_policy(const std::string& dir, std::string_view policy_id, LoadStatus* status) {
  std::string error, bound;
  DirLock lock(dir, &error);
  if (!lock.ok() || !read_binding_locked(dir, &bound, &error)) {
    *status = {LoadError::kIo, error};
    return false;
  }
  if (!bound.empty() && bound != policy_id) {
    *status = {LoadError::kRollback, "policy binding: trust state " + dir + " is bound to policy " +
                                         bound + ", not policy " + std::string(policy_id)};
    return false;
  }
  return record_binding(dir, bound, policy_id, status);
}

bool read_binding(const std::string& dir, std::string* bound, std::string* error) {
  DirLock lock(dir, error);
  return lock.ok() && read_binding_locked(dir, bound, error);
}

bool activate(const std::string& dir, std::string_view policy_id, int64_t revision,
              const std::string& digest, LoadStatus* status, std::string_view bind_to) {
  std::string error;
  DirLock lock(dir, &error);
  if (!lock.ok()) {
    *status = {LoadError::kIo, error};
    return false;
  }
  std::string bound;
  if (!read_binding_locked(dir, &bound, &error)) {
    *status = {LoadError::kIo, error};
    return false;
  }
  if (!bound.empty() && bound != policy_id) {
    const std::string why = "policy binding: trust state " + dir + " is bound to policy " + bound +
                            ", and this table is policy " + std::string(policy_id) +
                            " (a worker runs one policy; `replaygate trust reset --policy " +
                            bound + "` unbinds it)";
    *status = {LoadError::kRollback, why};
    return false;
  }
  TrustRecord record;
  bool found = false;
  if (!read_locked(dir, policy_id, &record, &found, &error)) {
    *status = {LoadError::kIo, error};
    return false;
  }
  const std::string policy = "policy " + std::string(policy_id);
  if (found && revision < record.revision) {
    *status = {LoadError::kRollback, "rollback: " + policy + " revision " +
                                         std::to_string(revision) + " is older than revision " +
                                         std::to_string(record.revision) +
                                         ", activated before (digest " + record.digest + ")"};
    return false;
  }
  if (found && revision == record.revision) {
    if (digest == record.digest) return record_binding(dir, bound, bind_to, status);
    *status = {LoadError::kRollback, "equivocation: " + policy + " revision " +
                                         std::to_string(revision) + " has digest " + digest +
                                         ", but revision " + std::to_string(revision) +
                                         " was activated with digest " + record.digest +
                                         " (two different tables carry one revision)"};
    return false;
  }
  if (!write_locked(dir, TrustRecord{std::string(policy_id), revision, digest}, &error)) {
    *status = {LoadError::kIo, error};
    return false;
  }
  return record_binding(dir, bound, bind_to, status);
}

bool read_record(const std::string& dir, std::string_view policy_id, TrustRecord* out, bool* found,
                 std::string* error) {
  DirLock lock(dir, error);
  return lock.ok() && read_locked(dir, policy_id, out, found, error);
}

bool reset(const std::string& dir, std::string_view policy_id, TrustRecord* previous, bool* found,
           std::string* error) {
  DirLock lock(dir, error);
  if (!lock.ok()) return false;
  std::string ignored;
  // A corrupt record is what a reset is for: it is removed all the same.
  if (!read_locked(dir, policy_id, previous, found, &ignored)) *found = false;
  const std::string path = state_path(dir, policy_id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    *error = "cannot remove trust state " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string bound;
  // A corrupt binding is removed too: a reset is how an operator repairs one.
  if ((!read_binding_locked(dir, &bound, &ignored) || bound == policy_id) &&
      ::unlink(binding_path(dir).c_str()) != 0 && errno != ENOENT) {
    *error = "cannot remove trust state binding " + binding_path(dir) + ": " + std::strerror(errno);
    return false;
  }
  if (!fsync_dir(dir)) {
    *error = "cannot sync trust state directory " + dir + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace replaygate::verify
