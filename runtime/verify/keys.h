// Ed25519 key files for signed tables (docs/signing.md): generate, read, and the key id.
//
// Two small text files, each exactly three lines:
//   replaygate-public-key v1        replaygate-secret-key v1
//   key-id <32 hex>                 key-id <32 hex>
//   ed25519 <64 hex>                ed25519-secret <128 hex: libsodium's seed || public key>
// The key id is BLAKE2b-128 (libsodium crypto_generichash) of "replaygate key id v1" and the
// 32-byte public key; a file whose key id does not match its key is refused. A secret key file
// must not be readable or writable by group or others (it is created mode 0600).
//
// Thread safety: every function may be called from any thread (init() is sodium_init(), which is
// thread-safe and idempotent).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace replaygate::verify {

inline constexpr size_t kKeyIdBytes = 16;
inline constexpr size_t kPublicKeyBytes = 32;
inline constexpr size_t kSecretKeyBytes = 64;
using KeyId = std::array<uint8_t, kKeyIdBytes>;

// sodium_init(); false when libsodium cannot start (then nothing here works).
bool init();

// Lowercase hex of `size` bytes.
std::string hex(const uint8_t* data, size_t size);
inline std::string hex(const KeyId& id) { return hex(id.data(), id.size()); }
// The `size` bytes of `text`, exactly 2 * size lowercase hex digits, into `out`; false (with
// `out` partly written) for anything else.
bool unhex(std::string_view text, uint8_t* out, size_t size);

// The key id of a 32-byte Ed25519 public key.
KeyId key_id_of(const uint8_t* public_key);

struct PublicKey {
  std::array<uint8_t, kPublicKeyBytes> key{};
  KeyId id{};
  std::string path;  // where it was read from (for messages)
  // The policy ids this key may sign for (an optional fourth line `policies ID...` the worker's
  // operator adds to the pinned file); empty: any policy.
  std::vector<std::string> policies;
};

// Wiped (sodium_memzero) when destroyed.
struct SecretKey {
  std::array<uint8_t, kSecretKeyBytes> key{};
  KeyId id{};
  SecretKey() = default;
  SecretKey(const SecretKey&) = delete;
  SecretKey& operator=(const SecretKey&) = delete;
  ~SecretKey();
};

// Read and check a key file. False with *error ("cannot read public key P: ...", "P is not a
// replaygate public key file: line 2 ...", "secret key file S is readable by group or others
// (mode 0644); chmod 600 it") on any problem; the secret's bytes are never put in a message.
bool read_public_key(const std::string& path, PublicKey* out, std::string* error);
bool read_secret_key(const std::string& path, SecretKey* out, std::string* error);

// Generates a key pair and writes both files, each created with O_EXCL (an existing file is
// never overwritten: refused before anything is written), fsynced, the secret mode 0600, the
// public 0644. On failure nothing is left behind. *out gets the public key.
bool generate_key_files(const std::string& secret_path, const std::string& public_path,
                        PublicKey* out, std::string* error);

}  // namespace replaygate::verify
