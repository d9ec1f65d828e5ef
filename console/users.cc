// The console's users file: Argon2id hashes (libsodium) and atomic writes (console/users.h).
#include "console/users.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "audit/operator_name.h"
#include "redrive/plan/approval.h"

namespace replaygate::console {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxNameBytes = 128;

bool init_sodium() { return sodium_init() >= 0; }

json* find_user(UsersFile* file, std::string_view name) {
  for (json& u : file->doc["users"]) {
    if (u.is_object() && u.value("name", "") == name) return &u;
  }
  return nullptr;
}

std::string write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::strerror(errno);
    done += static_cast<size_t>(n);
  }
  return "";
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

std::string password_problem(std::string_view password) {
  if (password.size() < kMinPasswordBytes) {
    return "the password is shorter than " + std::to_string(kMinPasswordBytes) + " bytes";
  }
  if (password.size() > kMaxPasswordBytes) {
    return "the password is longer than " + std::to_string(kMaxPasswordBytes) + " bytes";
  }
  if (password.find('\0') != std::string_view::npos) return "the password contains a NUL byte";
  return "";
}

std::string hash_password(std::string_view password, std::string* hash) {
  if (!init_sodium()) return "libsodium did not initialise";
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str_alg(out, password.data(), password.size(),
                            crypto_pwhash_OPSLIMIT_INTERACTIVE, crypto_pwhash_MEMLIMIT_INTERACTIVE,
                            crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return "cannot hash the password (out of memory)";
  }
  *hash = out;
  return "";
}

bool verify_password(const std::string& hash, std::string_view password) {
  if (!init_sodium() || hash.rfind("$argon2id$", 0) != 0) return false;
  return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

std::string generate_password() {
  init_sodium();
  // 32 symbols: 5 bits each; no 0/o, 1/l/i.
  static constexpr char kAlphabet[] = "abcdefghjkmnpqrstuvwxyz23456789";
  std::string p;
  for (int i = 0; i < 24; ++i) {
    p.push_back(kAlphabet[randombytes_uniform(sizeof kAlphabet - 1)]);
  }
  return p;
}

std::string load_users(const std::string& path, bool may_be_missing, UsersFile* out) {
  out->path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT && may_be_missing) {
      out->doc = json{{"format_version", 1}, {"users", json::array()}};
      return "";
    }
    return "cannot read users file " + path + ": " + std::strerror(errno);
  }
  std::stringstream bytes;
  bytes << in.rdbuf();
  // Checked as the plans read it, so an edit never starts from a file they refuse.
  plan::Users users;
  std::istringstream check(bytes.str());
  if (const std::string why = plan::read_users(check, path, folder_of(path), &users);
      !why.empty()) {
    return why;
  }
  out->doc = json::parse(bytes.str());
  return "";
}

std::string add_user(UsersFile* file, const NewUser& user) {
  if (const std::string why = audit::operator_name_problem(user.name); !why.empty()) {
    return "the name " + why;
  }
  if (user.name.size() > kMaxNameBytes) {
    return "the name is longer than " + std::to_string(kMaxNameBytes) + " bytes";
  }
  if (user.role != "viewer" && user.role != "operator" && user.role != "approver") {
    return "role '" + user.role + "' is not one of viewer, operator, approver";
  }
  if (find_user(file, user.name) != nullptr) {
    return "'" + user.name + "' is listed in " + file->path + " already";
  }
  json u{{"name", user.name}, {"role", user.role}, {"password_hash", user.password_hash}};
  if (user.public_key) u["public_key"] = *user.public_key;
  file->doc["users"].push_back(std::move(u));
  return "";
}

std::string disable_user(UsersFile* file, std::string_view name) {
  json* u = find_user(file, name);
  if (u == nullptr) return "'" + std::string(name) + "' is not listed in " + file->path;
  (*u)["disabled"] = true;
  return "";
}

std::string set_password_hash(UsersFile* file, std::string_view name, const std::string& hash) {
  json* u = find_user(file, name);
  if (u == nullptr) return "'" + std::string(name) + "' is not listed in " + file->path;
  (*u)["password_hash"] = hash;
  return "";
}

std::string save_users(const UsersFile& file) {
  const std::string bytes = file.doc.dump(2) + "\n";
  plan::Users users;
  std::istringstream check(bytes);
  if (const std::string why = plan::read_users(check, file.path, folder_of(file.path), &users);
      !why.empty()) {
    return why + "; nothing written";
  }
  const std::string tmp = file.path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot write " + tmp + ": " + std::strerror(errno);
  // An existing .tmp keeps its mode under O_CREAT: the hashes are secrets, so 0600 always.
  std::string why;
  if (::fchmod(fd, 0600) != 0) why = std::strerror(errno);
  if (why.empty()) why = write_all(fd, bytes);
  if (why.empty() && ::fsync(fd) != 0) why = std::strerror(errno);
  if (::close(fd) != 0 && why.empty()) why = std::strerror(errno);
  if (!why.empty()) {
    ::unlink(tmp.c_str());
    return "cannot write " + tmp + ": " + why;
  }
  if (::rename(tmp.c_str(), file.path.c_str()) != 0) {
    why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot rename " + tmp + " to " + file.path + ": " + why;
  }
  // The rename is durable once the folder is.
  const int dir = ::open(folder_of(file.path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return "";
}

}  // namespace replaygate::console
