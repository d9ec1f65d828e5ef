// Key files and key ids for signed tables (see keys.h).
#include "runtime/verify/keys.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace replaygate::verify {
namespace {

constexpr size_t kMaxKeyFileBytes = 4096;
constexpr char kPublicMagic[] = "replaygate-public-key v1";
constexpr char kSecretMagic[] = "replaygate-secret-key v1";
constexpr char kKeyIdDomain[] = "replaygate key id v1";

// The whole file (at most kMaxKeyFileBytes); *st gets its fstat.
bool read_small(const std::string& path, const char* what, std::string* text, struct stat* st,
                std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    *error = std::string("cannot read ") + what + " " + path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = ::fstat(fd, st) == 0 && S_ISREG(st->st_mode);
  if (!ok) *error = std::string("cannot read ") + what + " " + path + ": not a regular file";
  char buffer[kMaxKeyFileBytes + 1];
  size_t got = 0;
  while (ok && got < sizeof buffer) {
    const ssize_t n = ::read(fd, buffer + got, sizeof buffer - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = std::string("cannot read ") + what + " " + path + ": " + std::strerror(errno);
      ok = false;
    } else if (n == 0) {
      break;
    } else {
      got += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  if (ok && got > kMaxKeyFileBytes) {
    *error =
        path + " is not a replaygate key file: over " + std::to_string(kMaxKeyFileBytes) + " bytes";
    ok = false;
  }
  if (ok) text->assign(buffer, got);
  sodium_memzero(buffer, sizeof buffer);
  return ok;
}

// Splits the three lines "MAGIC\nkey-id HEX\nLABEL HEX\n" and decodes them.
bool parse_key_file(const std::string& text, const std::string& path, const char* magic,
                    const char* label, KeyId* id, uint8_t* key, size_t key_size,
                    std::string* error) {
  const std::string bad = path + " is not a replaygate " +
                          (std::strcmp(magic, kPublicMagic) == 0 ? "public" : "secret") +
                          " key file: ";
  std::string_view rest = text;
  std::string_view lines[3];
  for (auto& line : lines) {
    const size_t end = rest.find('\n');
    if (end == std::string_view::npos) {
      *error = bad + "expected three lines, each ending in a newline";
      return false;
    }
    line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
  }
  if (!rest.empty()) {
    *error = bad + "bytes after the third line";
    return false;
  }
  if (lines[0] != magic) {
    *error = bad + "line 1 must be '" + magic + "'";
    return false;
  }
  const std::string id_prefix = "key-id ";
  if (lines[1].substr(0, id_prefix.size()) != id_prefix ||
      !unhex(lines[1].substr(id_prefix.size()), id->data(), id->size())) {
    *error = bad + "line 2 must be 'key-id' and 32 lowercase hex digits";
    return false;
  }
  const std::string key_prefix = std::string(label) + " ";
  if (lines[2].substr(0, key_prefix.size()) != key_prefix ||
      !unhex(lines[2].substr(key_prefix.size()), key, key_size)) {
    *error = bad + "line 3 must be '" + label + "' and " + std::to_string(2 * key_size) +
             " lowercase hex digits";
    return false;
  }
  return true;
}

std::string key_file_text(const char* magic, const char* label, const KeyId& id, const uint8_t* key,
                          size_t key_size) {
  return std::string(magic) + "\nkey-id " + hex(id) + "\n" + label + " " + hex(key, key_size) +
         "\n";
}

// Creates `path` with O_EXCL and `mode`, writes `text` and fsyncs it.
bool write_new_file(const std::string& path, const std::string& text, mode_t mode,
                    std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno) +
             (errno == EEXIST ? " (an existing key file is never overwritten)" : "");
    return false;
  }
  bool ok = ::fchmod(fd, mode) == 0;  // the umask must not widen or narrow it
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
  if (!ok) *error = "cannot write " + path + ": " + std::strerror(errno);
  ok = ::close(fd) == 0 && ok;
  if (!ok) ::unlink(path.c_str());
  return ok;
}

// fsyncs the directory holding `path`, so that a created file's name is durable.
void sync_parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

bool unhex(std::string_view text, uint8_t* out, size_t size) {
  if (text.size() != 2 * size) return false;
  for (size_t i = 0; i < size; ++i) {
    int v = 0;
    for (int k = 0; k < 2; ++k) {
      const char c = text[2 * i + k];
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else {
        return false;
      }
      v = v * 16 + d;
    }
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

bool init() { return sodium_init() >= 0; }

std::string hex(const uint8_t* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

KeyId key_id_of(const uint8_t* public_key) {
  KeyId id{};
  crypto_generichash_state state;
  crypto_generichash_init(&state, nullptr, 0, id.size());
  crypto_generichash_update(&state, reinterpret_cast<const unsigned char*>(kKeyIdDomain),
                            sizeof kKeyIdDomain - 1);
  crypto_generichash_update(&state, public_key, kPublicKeyBytes);
  crypto_generichash_final(&state, id.data(), id.size());
  return id;
}

SecretKey::~SecretKey() { sodium_memzero(key.data(), key.size()); }

bool read_public_key(const std::string& path, PublicKey* out, std::string* error) {
  if (!init()) {
    *error = "libsodium cannot be initialised";
    return false;
  }
  std::string text;
  struct stat st;
  if (!read_small(path, "public key", &text, &st, error)) return false;
  PublicKey key;
  // An optional fourth line restricts the key to policy ids: `policies ID [ID...]`.
  size_t third_end = std::string::npos;
  for (size_t line = 0, from = 0; line < 3; ++line) {
    third_end = text.find('\n', from);
    if (third_end == std::string::npos) break;
    from = third_end + 1;
  }
  if (third_end != std::string::npos && third_end + 1 < text.size() &&
      text.compare(third_end + 1, 9, "policies ") == 0) {
    const std::string line = text.substr(third_end + 10);
    if (line.empty() || line.back() != '\n' || line.find('\n') != line.size() - 1) {
      *error = path +
               " is not a replaygate public key file: line 4 must be 'policies' and one or "
               "more policy ids, ending in a newline";
      return false;
    }
    size_t start = 0;
    while (start < line.size() - 1) {
      const size_t end = std::min(line.find(' ', start), line.size() - 1);
      if (end > start) key.policies.push_back(line.substr(start, end - start));
      start = end + 1;
    }
    if (key.policies.empty()) {
      *error = path + " is not a replaygate public key file: line 4 names no policy id";
      return false;
    }
    text.resize(third_end + 1);
  }
  if (!parse_key_file(text, path, kPublicMagic, "ed25519", &key.id, key.key.data(), key.key.size(),
                      error)) {
    return false;
  }
  if (key_id_of(key.key.data()) != key.id) {
    *error = path + " is not a valid public key file: its key-id does not match its key";
    return false;
  }
  key.path = path;
  *out = key;
  return true;
}

bool read_secret_key(const std::string& path, SecretKey* out, std::string* error) {
  if (!init()) {
    *error = "libsodium cannot be initialised";
    return false;
  }
  std::string text;
  struct stat st;
  if (!read_small(path, "secret key", &text, &st, error)) return false;
  if ((st.st_mode & 077) != 0) {
    sodium_memzero(text.data(), text.size());
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    *error = "secret key file " + path + " is accessible by group or others (mode " + mode +
             "); chmod 600 it";
    return false;
  }
  const bool parsed = parse_key_file(text, path, kSecretMagic, "ed25519-secret", &out->id,
                                     out->key.data(), out->key.size(), error);
  sodium_memzero(text.data(), text.size());
  if (!parsed) return false;
  // The secret key's second half is its public key: check it and the id against the seed.
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(pk, sk, out->key.data());
  const bool consistent = sodium_memcmp(sk, out->key.data(), sizeof sk) == 0;
  sodium_memzero(sk, sizeof sk);
  if (!consistent || key_id_of(pk) != out->id) {
    *error = path + " is not a valid secret key file: its key-id or public half does not match";
    return false;
  }
  return true;
}

bool generate_key_files(const std::string& secret_path, const std::string& public_path,
                        PublicKey* out, std::string* error) {
  if (!init()) {
    *error = "libsodium cannot be initialised";
    return false;
  }
  struct stat st;
  for (const std::string* path : {&secret_path, &public_path}) {
    if (::lstat(path->c_str(), &st) == 0) {
      *error = "refusing to create " + *path + ": it exists (an existing key file is never " +
               "overwritten)";
      return false;
    }
  }
  if (secret_path == public_path) {
    *error = "--secret and --public name the same file";
    return false;
  }
  PublicKey pub;
  SecretKey secret;
  crypto_sign_keypair(pub.key.data(), secret.key.data());
  pub.id = key_id_of(pub.key.data());
  secret.id = pub.id;
  std::string secret_text = key_file_text(kSecretMagic, "ed25519-secret", secret.id,
                                          secret.key.data(), secret.key.size());
  const bool wrote_secret = write_new_file(secret_path, secret_text, 0600, error);
  sodium_memzero(secret_text.data(), secret_text.size());
  if (!wrote_secret) return false;
  if (!write_new_file(
          public_path,
          key_file_text(kPublicMagic, "ed25519", pub.id, pub.key.data(), pub.key.size()), 0644,
          error)) {
    ::unlink(secret_path.c_str());
    return false;
  }
  sync_parent(secret_path);
  sync_parent(public_path);
  pub.path = public_path;
  *out = pub;
  return true;
}

}  // namespace replaygate::verify
