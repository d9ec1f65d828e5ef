// Signed tables: the envelope check, signing, verified loads and a verifying SharedTable source
// (see signed_table.h and docs/signing.md).
#include "runtime/verify/signed_table.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

#include "runtime/table_format.h"
#include "runtime/verify/trust_state.h"

namespace replaygate::verify {
namespace {

namespace fm = replaygate::format;
constexpr size_t kEnvelopeBytes = sizeof(fm::SignedEnvelope);
constexpr size_t kMaxFileBytes = Table::kMaxTableBytes + kEnvelopeBytes;

bool refuse(LoadStatus* status, LoadError error, std::string message) {
  *status = {error, std::move(message)};
  return false;
}

std::string digest_of(const uint8_t* data, size_t size) {
  uint8_t out[32];
  crypto_generichash(out, sizeof out, data, size, nullptr, 0);
  return hex(out, sizeof out);
}

std::string pinned_list(const TrustOptions& trust) {
  std::string out;
  for (const PublicKey& k : trust.keys) out += (out.empty() ? "" : ", ") + hex(k.id);
  return out;
}

// The Ed25519ph signature over the domain tag, the envelope's first 64 bytes and the payload.
void start_message(crypto_sign_state* state, const uint8_t* header, const uint8_t* payload,
                   size_t payload_size) {
  crypto_sign_init(state);
  crypto_sign_update(state, reinterpret_cast<const unsigned char*>(fm::kSignedDomain),
                     sizeof fm::kSignedDomain);
  crypto_sign_update(state, header, fm::kSignedSignatureOffset);
  crypto_sign_update(state, payload, payload_size);
}

// The policy binding and the signing key's policy list (docs/signing.md, "Policy binding"): a
// table signed by a trusted key is still refused for a policy the key may not sign or the worker
// is not bound to.
bool policy_allowed(const TrustOptions& trust, const Verified& info, const Table& table,
                    LoadStatus* status) {
  const std::string policy(table.policy_id());
  if (!trust.policy_id.empty() && policy != trust.policy_id) {
    *status = {LoadError::kRollback, "policy binding: this table is policy " + policy +
                                         ", and this worker is bound to policy " + trust.policy_id +
                                         " (a reload never changes the policy)"};
    return false;
  }
  if (!info.checked) return true;
  for (const PublicKey& key : trust.keys) {
    if (key.id != info.key_id || key.policies.empty()) continue;
    if (std::find(key.policies.begin(), key.policies.end(), policy) != key.policies.end()) break;
    std::string list;
    for (const std::string& p : key.policies) list += (list.empty() ? "" : ", ") + p;
    *status = {LoadError::kSignature, "key " + hex(key.id) + " (" + key.path +
                                          ") may sign only policy " + list +
                                          ", and this table is policy " + policy};
    return false;
  }
  return true;
}

// Admits what it loaded: the digest of each table it returned, until admit() or forget().
class VerifyingSource final : public TableSource {
 public:
  explicit VerifyingSource(TrustOptions trust) : trust_(std::move(trust)) {
    state_dir_ = trust_.trust_state;
    trust_.trust_state.clear();  // activation happens in admit(), not at load
  }

  std::unique_ptr<Table> load_file(const std::string& path, LoadStatus* status) override {
    std::vector<uint8_t> bytes;
    if (!read_table_file(path, &bytes, status)) return nullptr;
    return load_bytes(bytes.data(), bytes.size(), status);
  }

  std::unique_ptr<Table> load_bytes(const void* data, size_t size, LoadStatus* status) override {
    Verified info;
    std::unique_ptr<Table> table = load_table_bytes(data, size, trust_, &info, status);
    if (table != nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_[table.get()] = info.digest;
    }
    return table;
  }

  bool admit(const Table& next, LoadStatus* status) override {
    std::string digest;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const auto it = pending_.find(&next);
      if (it == pending_.end()) {
        return refuse(status, LoadError::kSignature,
                      "not loaded through the verifier: this shared table takes only tables its "
                      "pinned keys verified");
      }
      digest = it->second;
      pending_.erase(it);
    }
    if (state_dir_.empty()) return true;
    return activate(state_dir_, next.policy_id(), next.revision(), digest, status,
                    trust_.policy_id);
  }

  void forget(const Table& table) noexcept override {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.erase(&table);
  }

 private:
  TrustOptions trust_;
  std::string state_dir_;
  std::mutex mutex_;
  std::map<const Table*, std::string> pending_;
};

}  // namespace

bool trust_options_from(const char* const* keys, size_t nkeys, const char* trust_state,
                        uint32_t flags, TrustOptions* out, std::string* error) {
  if (keys == nullptr && nkeys > 0) {
    *error = "trusted_keys is NULL";
    return false;
  }
  if ((flags & ~kRequireSignedFlag) != 0) {
    *error = "unknown flags " + std::to_string(flags);
    return false;
  }
  out->require_signed = (flags & kRequireSignedFlag) != 0;
  out->trust_state = trust_state == nullptr ? "" : trust_state;
  for (size_t i = 0; i < nkeys; ++i) {
    if (keys[i] == nullptr) {
      *error = "trusted_keys holds NULL";
      return false;
    }
    out->keys.emplace_back();
    if (!read_public_key(keys[i], &out->keys.back(), error)) return false;
  }
  return true;
}

std::string utc_text(int64_t seconds) {
  const time_t t = static_cast<time_t>(seconds);
  struct tm tm;
  char buffer[32];
  if (gmtime_r(&t, &tm) == nullptr ||
      std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0) {
    return std::to_string(seconds) + " (Unix seconds)";
  }
  return buffer;
}

bool open_envelope(const uint8_t* data, size_t size, const TrustOptions& trust, Verified* info,
                   const uint8_t** payload, size_t* payload_size, LoadStatus* status) {
  Verified local;
  if (info == nullptr) info = &local;
  *info = Verified{};
  if (!init()) return refuse(status, LoadError::kSignature, "libsodium cannot be initialised");
  const bool pinned = !trust.keys.empty();
  if (trust.require_signed && !pinned) {
    return refuse(status, LoadError::kSignature,
                  "signing is required, but no key is pinned (--trusted-key)");
  }
  if (size < sizeof fm::kSignedMagic || std::memcmp(data, fm::kSignedMagic, 8) != 0) {
    if (pinned) {
      return refuse(
          status, LoadError::kSignature,
          std::string(size >= 8 && std::memcmp(data, fm::kMagic, 8) == 0 ? "unsigned table"
                                                                         : "not a signed table") +
              ", and " + std::to_string(trust.keys.size()) +
              (trust.keys.size() == 1 ? " key is" : " keys are") +
              " pinned: a signature is required");
    }
    *payload = data;
    *payload_size = size;
    info->digest = digest_of(data, size);
    return true;
  }
  info->is_signed = true;
  if (size < kEnvelopeBytes) {
    return refuse(status, LoadError::kSignature,
                  "truncated signed envelope: " + std::to_string(size) +
                      " bytes, its header alone is " + std::to_string(kEnvelopeBytes));
  }
  fm::SignedEnvelope e;
  std::memcpy(&e, data, sizeof e);
  std::memcpy(info->key_id.data(), e.key_id, sizeof e.key_id);
  info->expires_at = e.expires_at;
  if (e.version != fm::kSignedVersion) {
    return refuse(status, LoadError::kSignature,
                  "unsupported signed envelope version " + std::to_string(e.version) +
                      " (this build reads " + std::to_string(fm::kSignedVersion) + ")");
  }
  if (e.header_size != kEnvelopeBytes) {
    return refuse(status, LoadError::kSignature,
                  "bad signed envelope header size " + std::to_string(e.header_size) +
                      " (expected " + std::to_string(kEnvelopeBytes) + ")");
  }
  if (e.flags != 0 || e.reserved[0] != 0 || e.reserved[1] != 0) {
    return refuse(status, LoadError::kSignature,
                  "signed envelope reserved fields are set (flags " + std::to_string(e.flags) +
                      ", reserved " + std::to_string(e.reserved[0]) + " " +
                      std::to_string(e.reserved[1]) + "): they must be 0");
  }
  const uint64_t have = size - kEnvelopeBytes;
  if (e.payload_size > Table::kMaxTableBytes) {
    return refuse(status, LoadError::kSignature,
                  "signed envelope claims a payload of " + std::to_string(e.payload_size) +
                      " bytes, over the limit of " + std::to_string(Table::kMaxTableBytes));
  }
  if (e.payload_size > have) {
    return refuse(status, LoadError::kSignature,
                  "truncated: the signed envelope says " + std::to_string(e.payload_size) +
                      " payload bytes, the file has " + std::to_string(have));
  }
  if (e.payload_size < have) {
    return refuse(status, LoadError::kSignature,
                  "trailing bytes: the signed envelope says " + std::to_string(e.payload_size) +
                      " payload bytes, the file has " + std::to_string(have) + " after its header");
  }
  const uint8_t* body = data + kEnvelopeBytes;
  if (pinned) {
    const PublicKey* key = nullptr;
    for (const PublicKey& k : trust.keys) {
      if (sodium_memcmp(k.id.data(), e.key_id, sizeof e.key_id) == 0) key = &k;
    }
    if (key == nullptr) {
      return refuse(status, LoadError::kSignature,
                    "signed by key " + hex(info->key_id) +
                        ", which is not pinned (pinned: " + pinned_list(trust) + ")");
    }
    crypto_sign_state state;
    start_message(&state, data, body, e.payload_size);
    if (crypto_sign_final_verify(&state, e.signature, key->key.data()) != 0) {
      return refuse(status, LoadError::kSignature,
                    "bad signature: the table does not verify with pinned key " + hex(key->id) +
                        " (" + key->path + "); it was altered or signed by another key");
    }
    info->checked = true;
    info->key_path = key->path;
  }
  if (e.expires_at != 0) {
    const int64_t now = trust.now >= 0 ? trust.now : static_cast<int64_t>(std::time(nullptr));
    if (now >= e.expires_at) {
      return refuse(status, LoadError::kExpired,
                    "expired: the table's signature expired at " + utc_text(e.expires_at) +
                        " (now " + utc_text(now) + ")");
    }
  }
  *payload = body;
  *payload_size = e.payload_size;
  info->digest = digest_of(body, e.payload_size);
  return true;
}

namespace {

// Reads from `fd` until `bytes` holds `want` bytes or the stream ends. False on a read error.
bool read_to(int fd, size_t want, std::vector<uint8_t>* bytes) {
  size_t got = bytes->size();
  while (got < want) {
    bytes->resize(std::min(want, got + (size_t{1} << 20)));
    const ssize_t n = ::read(fd, bytes->data() + got, bytes->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      bytes->resize(got);
      return false;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  bytes->resize(got);
  return true;
}

// A stream (a pipe, /dev/stdin): read no more than its header says, one byte past it at most, so
// that `cat /dev/zero |` is refused after its first bytes, as Table::load_file refuses it. What
// the header says is read first: the signed envelope's payload size, or the table's total size.
bool read_stream(int fd, const std::string& path, std::vector<uint8_t>* bytes, LoadStatus* status) {
  const auto io = [&] {
    return refuse(status, LoadError::kIo, "cannot read " + path + ": " + std::strerror(errno));
  };
  bytes->clear();
  if (!read_to(fd, 8, bytes)) return io();
  const bool is_signed = bytes->size() == 8 && std::memcmp(bytes->data(), fm::kSignedMagic, 8) == 0;
  const bool is_table = bytes->size() == 8 && std::memcmp(bytes->data(), fm::kMagic, 8) == 0;
  if (!is_signed && !is_table) return true;  // the loader names what is wrong with these bytes
  const size_t header = is_signed ? kEnvelopeBytes : sizeof(fm::Header);
  if (!read_to(fd, header, bytes)) return io();
  if (bytes->size() < header) return true;  // truncated: the loader says so
  uint64_t size = 0;
  if (is_signed) {
    fm::SignedEnvelope e;
    std::memcpy(&e, bytes->data(), sizeof e);
    if (e.payload_size > Table::kMaxTableBytes) return true;  // open_envelope() refuses it
    size = kEnvelopeBytes + e.payload_size;
  } else {
    fm::Header h;
    std::memcpy(&h, bytes->data(), sizeof h);
    if (h.total_size > Table::kMaxTableBytes) {
      return refuse(
          status, LoadError::kTooLarge,
          path + " is over the limit of " + std::to_string(Table::kMaxTableBytes) + " bytes");
    }
    if (h.total_size < header) return true;  // the loader refuses the header
    size = h.total_size;
  }
  if (!read_to(fd, static_cast<size_t>(size), bytes)) return io();
  if (bytes->size() < size) return true;  // truncated: the loader or the envelope check says so
  std::vector<uint8_t> extra;
  if (!read_to(fd, 1, &extra)) return io();
  if (!extra.empty()) {
    return refuse(status, is_signed ? LoadError::kSignature : LoadError::kMalformed,
                  "trailing bytes: " + std::string(is_signed ? "the signed envelope" : "header") +
                      " says " + std::to_string(size) + " bytes, and " + path +
                      " goes on past them");
  }
  return true;
}

}  // namespace

bool read_table_file(const std::string& path, std::vector<uint8_t>* bytes, LoadStatus* status) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    return refuse(status, LoadError::kIo, "cannot open " + path + ": " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return refuse(status, LoadError::kIo, "cannot stat " + path + ": " + std::strerror(errno));
  }
  // As Table::load_file: devices (/dev/zero, a terminal) and sockets are never tables and may
  // never end, so they are refused before any read; a directory's read says EISDIR.
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISDIR(st.st_mode)) {
    const char* kind = S_ISCHR(st.st_mode)    ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return refuse(status, LoadError::kIo,
                  "cannot read " + path + ": " + kind +
                      ", not a table file (a table is read from a regular file or a pipe)");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (!S_ISREG(st.st_mode) || st.st_size <= 0) return read_stream(fd, path, bytes, status);
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) {
    return refuse(status, LoadError::kTooLarge,
                  path + " has " + std::to_string(st.st_size) + " bytes, over the limit of " +
                      std::to_string(kMaxFileBytes));
  }
  // One byte more than fstat said, to see a file that grows while it is read.
  bytes->clear();
  if (!read_to(fd, static_cast<size_t>(st.st_size) + 1, bytes)) {
    return refuse(status, LoadError::kIo, "cannot read " + path + ": " + std::strerror(errno));
  }
  if (bytes->size() != static_cast<size_t>(st.st_size)) {
    return refuse(status, LoadError::kIo, path + " changed while it was read");
  }
  return true;
}

std::unique_ptr<Table> load_table_bytes(const void* data, size_t size, const TrustOptions& trust,
                                        Verified* info, LoadStatus* status) {
  Verified local;
  if (info == nullptr) info = &local;
  const uint8_t* payload = nullptr;
  size_t payload_size = 0;
  if (!open_envelope(static_cast<const uint8_t*>(data), size, trust, info, &payload, &payload_size,
                     status)) {
    return nullptr;
  }
  std::unique_ptr<Table> table = Table::load_bytes(payload, payload_size, status);
  if (table == nullptr) return nullptr;
  if (!policy_allowed(trust, *info, *table, status)) return nullptr;
  if (!trust.trust_state.empty() &&
      !activate(trust.trust_state, table->policy_id(), table->revision(), info->digest, status,
                trust.policy_id)) {
    return nullptr;
  }
  *status = {};
  return table;
}

std::unique_ptr<Table> load_table_file(const std::string& path, const TrustOptions& trust,
                                       Verified* info, LoadStatus* status) {
  std::vector<uint8_t> bytes;
  if (!read_table_file(path, &bytes, status)) return nullptr;
  return load_table_bytes(bytes.data(), bytes.size(), trust, info, status);
}

bool sign_table(const uint8_t* table, size_t size, const SecretKey& key, int64_t expires_at,
                std::vector<uint8_t>* out, std::string* error) {
  if (!init()) {
    *error = "libsodium cannot be initialised";
    return false;
  }
  const uint8_t* payload = table;
  size_t payload_size = size;
  if (size >= 8 && std::memcmp(table, fm::kSignedMagic, 8) == 0) {
    // Re-signing: check the old envelope's shape (its signature is not ours to trust).
    LoadStatus status;
    Verified info;
    if (!open_envelope(table, size, TrustOptions{}, &info, &payload, &payload_size, &status)) {
      *error = "cannot re-sign: " + status.message;
      return false;
    }
  }
  if (expires_at < 0) {
    *error = "the expiry must be a time after 1970";
    return false;
  }
  LoadStatus status;
  if (Table::load_bytes(payload, payload_size, &status) == nullptr) {
    *error = std::string("refusing to sign something that is not a loadable table: ") +
             load_error_name(status.error) + ": " + status.message;
    return false;
  }
  fm::SignedEnvelope e{};
  std::memcpy(e.magic, fm::kSignedMagic, sizeof e.magic);
  e.version = fm::kSignedVersion;
  e.header_size = kEnvelopeBytes;
  e.payload_size = payload_size;
  e.expires_at = expires_at;
  std::memcpy(e.key_id, key.id.data(), sizeof e.key_id);
  std::vector<uint8_t> result(kEnvelopeBytes + payload_size);
  std::memcpy(result.data(), &e, kEnvelopeBytes);
  std::memcpy(result.data() + kEnvelopeBytes, payload, payload_size);
  crypto_sign_state state;
  start_message(&state, result.data(), result.data() + kEnvelopeBytes, payload_size);
  crypto_sign_final_create(&state, result.data() + fm::kSignedSignatureOffset, nullptr,
                           key.key.data());
  *out = std::move(result);
  return true;
}

std::unique_ptr<SharedTable> open_shared(const std::string& path, const TrustOptions& trust,
                                         uint32_t max_readers, LoadStatus* status) {
  auto source = std::make_shared<VerifyingSource>(trust);
  std::unique_ptr<Table> table = source->load_file(path, status);
  if (table == nullptr) return nullptr;
  if (!source->admit(*table, status)) return nullptr;
  return std::make_unique<SharedTable>(std::move(table), max_readers, std::move(source));
}

}  // namespace replaygate::verify
