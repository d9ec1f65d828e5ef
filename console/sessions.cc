// Sessions and the login limiter (console/sessions.h).
#include "console/sessions.h"

#include <sodium.h>

#include <algorithm>

namespace replaygate::console {

std::string random_token() {
  if (sodium_init() < 0) return "";
  unsigned char bytes[32];
  randombytes_buf(bytes, sizeof bytes);
  char hex[2 * sizeof bytes + 1];
  sodium_bin2hex(hex, sizeof hex, bytes, sizeof bytes);
  return hex;
}

bool tokens_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && !a.empty() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

Session SessionStore::create(const std::string& user, const std::string& role, int64_t now) {
  Session s{random_token(), random_token(), user, role, now, now};
  std::lock_guard lock(mu_);
  if (sessions_.size() >= max_) {
    // Anonymous sessions go first: anyone can make them, so they must not push out a user's.
    auto victim = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (victim == sessions_.end() || (it->second.user.empty() && !victim->second.user.empty()) ||
          (it->second.user.empty() == victim->second.user.empty() &&
           it->second.last_seen < victim->second.last_seen)) {
        victim = it;
      }
    }
    sessions_.erase(victim);
  }
  sessions_[s.id] = s;
  return s;
}

std::optional<Session> SessionStore::touch(const std::string& id, int64_t now) {
  std::lock_guard lock(mu_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.last_seen >= idle_ || now - it->second.created >= max_age_) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.last_seen = now;
  return it->second;
}

void SessionStore::remove(const std::string& id) {
  std::lock_guard lock(mu_);
  sessions_.erase(id);
}

size_t SessionStore::revoke_user(const std::string& user) {
  std::lock_guard lock(mu_);
  return std::erase_if(sessions_, [&](const auto& kv) { return kv.second.user == user; });
}

size_t SessionStore::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

size_t LoginLimiter::count(std::vector<int64_t>& times, int64_t now) {
  std::erase_if(times, [&](int64_t t) { return now - t >= window_; });
  return times.size();
}

std::string LoginLimiter::allowed(const std::string& user, const std::string& address,
                                  int64_t now) {
  std::lock_guard lock(mu_);
  if (count(users_[user], now) >= static_cast<size_t>(per_user_)) {
    return "too many failed logins for this name; try again later";
  }
  if (count(addresses_[address], now) >= static_cast<size_t>(per_address_)) {
    return "too many failed logins from this address; try again later";
  }
  return "";
}

void LoginLimiter::failed(const std::string& user, const std::string& address, int64_t now) {
  std::lock_guard lock(mu_);
  // Bounded: a flood of names must not grow the maps without end (entries whose failures all
  // left the window go; live ones stay, so a flood cannot reset a limit).
  for (auto* m : {&users_, &addresses_}) {
    if (m->size() <= 10000) continue;
    for (auto it = m->begin(); it != m->end();) {
      it = count(it->second, now) == 0 ? m->erase(it) : std::next(it);
    }
  }
  users_[user].push_back(now);
  addresses_[address].push_back(now);
}

}  // namespace replaygate::console
