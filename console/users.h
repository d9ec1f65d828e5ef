// The console's users (docs/console.md): the users file of the plans (redrive/plan/approval.h)
// with Argon2id password hashes and the disabled flag, edited as JSON and written atomically.
//
// In: a users file's path, a name, a role, a password. Out: the file rewritten (mode 0600,
// tmp + fsync + rename + fsync of its folder, so it is the old file or the new one after a crash),
// or why not, as one sentence. Every write is read back by plan::read_users first, so the file
// stays one `plan approve` and `plan verify` read. Fields this code does not know are kept.
//
// Threads: any (no shared state; libsodium is initialised on first use).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace replaygate::console {

// A password is 12 to 1024 bytes (a generated one is 24 characters).
inline constexpr size_t kMinPasswordBytes = 12;
inline constexpr size_t kMaxPasswordBytes = 1024;

// "" or why `password` is refused (too short, too long, NUL).
std::string password_problem(std::string_view password);
// The Argon2id string of `password` (crypto_pwhash_str_alg, libsodium's interactive limits) in
// *hash: "" or why not (out of memory).
std::string hash_password(std::string_view password, std::string* hash);
// Whether `password` matches `hash` (an Argon2id string); false for anything else.
bool verify_password(const std::string& hash, std::string_view password);
// A new random password: 24 characters of [a-z2-9] without look-alikes (about 120 bits).
std::string generate_password();

// A users file as JSON, with where it is.
struct UsersFile {
  std::string path;
  nlohmann::json doc;  // {"format_version":1,"users":[...]}
};

// Reads `path` into *out. A missing file is an empty users list when `may_be_missing` (`user
// add` creates the file), else an error. "" or why not (not JSON, not a users file).
std::string load_users(const std::string& path, bool may_be_missing, UsersFile* out);

struct NewUser {
  std::string name, role;                 // role: viewer|operator|approver
  std::optional<std::string> public_key;  // 64 hex digits or a key file's path
  std::string password_hash;
};
// Adds a user: "" or why not (a name listed already, a bad role or name).
std::string add_user(UsersFile* file, const NewUser& user);
// Sets `disabled` on a listed user: "" or why not (not listed).
std::string disable_user(UsersFile* file, std::string_view name);
// Replaces a listed user's password hash (a disabled user stays disabled): "" or why not.
std::string set_password_hash(UsersFile* file, std::string_view name, const std::string& hash);
// Checks the file as the plans read it (plan::read_users), then writes it atomically, mode
// 0600: "" or why not (nothing written then).
std::string save_users(const UsersFile& file);

}  // namespace replaygate::console
