// The console's sessions and its login rate limit (docs/console.md), in memory.
//
// In: the clock's seconds, a user's name, a session id from a cookie. Out: sessions (a random id
// and a CSRF token, 32 bytes of libsodium randomness each, as 64 hex digits) and whether a login
// may be tried. A session before login is anonymous (it carries the login form's CSRF token);
// login replaces it with a new id (no fixation). A session ends at logout, after `idle` seconds
// unused, `max_age` seconds after it began, or when its user is disabled (revoke_user).
//
// Threads: any (one mutex each).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace replaygate::console {

struct Session {
  std::string id, csrf, user, role;  // user "" : anonymous (the login form's session)
  int64_t created = 0, last_seen = 0;
};

class SessionStore {
 public:
  SessionStore(int64_t idle_seconds, int64_t max_age_seconds, size_t max_sessions = 10000)
      : idle_(idle_seconds), max_age_(max_age_seconds), max_(max_sessions) {}
  // A new session (anonymous when `user` is ""). At max_sessions the oldest one is dropped.
  Session create(const std::string& user, const std::string& role, int64_t now);
  // The live session of `id` (its last_seen set to now), or nullopt: unknown, expired (then
  // removed) or revoked.
  std::optional<Session> touch(const std::string& id, int64_t now);
  void remove(const std::string& id);
  // Ends every session of `user`; returns how many.
  size_t revoke_user(const std::string& user);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Session> sessions_;
  int64_t idle_, max_age_;
  size_t max_;
};

// 32 random bytes as 64 lowercase hex digits (libsodium).
std::string random_token();
// Compares two tokens in constant time (sodium_memcmp); false when the sizes differ.
bool tokens_equal(const std::string& a, const std::string& b);

// Failed logins per user name and per address in a sliding window: allowed() before a password
// is checked, failed() after a wrong one.
class LoginLimiter {
 public:
  LoginLimiter(int64_t per_user, int64_t per_address, int64_t window_seconds)
      : per_user_(per_user), per_address_(per_address), window_(window_seconds) {}
  // "" when a login may be tried, else why not ("too many failed logins for 'bob'").
  std::string allowed(const std::string& user, const std::string& address, int64_t now);
  void failed(const std::string& user, const std::string& address, int64_t now);

 private:
  size_t count(std::vector<int64_t>& times, int64_t now);
  std::mutex mu_;
  std::map<std::string, std::vector<int64_t>> users_, addresses_;
  int64_t per_user_, per_address_, window_;
};

}  // namespace replaygate::console
