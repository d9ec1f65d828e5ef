// Signed checkpoints of the audit trail: the digest, the signed message, and what they cover.
#include "audit/checkpoint.h"

#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>

#include "audit/audit_log.h"
#include "common/plural.h"

namespace replaygate::audit {

namespace {
constexpr size_t kDigestBytes = 32;
// Never a prefix of the table signature's domain tag (runtime/verify/signed_table.cc), so no
// message signed for one can be taken for the other.
constexpr std::string_view kDomainTag = "replaygate audit checkpoint v1\n";
}  // namespace

ChainDigest::ChainDigest() {
  verify::init();
  crypto_generichash_init(&state_, nullptr, 0, kDigestBytes);
}

void ChainDigest::update(std::string_view bytes) {
  crypto_generichash_update(&state_, reinterpret_cast<const unsigned char*>(bytes.data()),
                            bytes.size());
}

std::string ChainDigest::hex() const {
  // Finishing consumes the state: finish a copy, so feeding can go on.
  crypto_generichash_state copy;
  std::memcpy(&copy, &state_, sizeof copy);
  std::array<uint8_t, kDigestBytes> digest{};
  crypto_generichash_final(&copy, digest.data(), digest.size());
  return verify::hex(digest.data(), digest.size());
}

std::string checkpoint_message(uint64_t seq, std::string_view prev, std::string_view time,
                               std::string_view key_id, std::string_view chain_digest) {
  std::string message(kDomainTag);
  message += "seq " + std::to_string(seq) + "\n";
  message += "prev " + std::string(prev) + "\n";
  message += "time " + std::string(time) + "\n";
  message += "key_id " + std::string(key_id) + "\n";
  message += "chain_digest " + std::string(chain_digest) + "\n";
  return message;
}

std::string checkpoint_signature(const verify::SecretKey& key, std::string_view message) {
  std::array<uint8_t, crypto_sign_BYTES> signature{};
  crypto_sign_detached(signature.data(), nullptr,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                       key.key.data());
  return verify::hex(signature.data(), signature.size());
}

bool checkpoint_signed_by(const CheckpointSeen& c, const verify::PublicKey& key) {
  std::array<uint8_t, crypto_sign_BYTES> signature{};
  const std::string message = checkpoint_message(c.seq, c.prev, c.time, c.key_id, c.chain_digest);
  return verify::unhex(c.signature, signature.data(), signature.size()) &&
         crypto_sign_verify_detached(signature.data(),
                                     reinterpret_cast<const unsigned char*>(message.data()),
                                     message.size(), key.key.data()) == 0;
}

verify::PublicKey public_half(const verify::SecretKey& key) {
  verify::PublicKey pub;
  crypto_sign_ed25519_sk_to_pk(pub.key.data(), key.key.data());
  pub.id = key.id;
  pub.path = "the --audit-sign-key key";
  return pub;
}

std::string signing_refusal(const VerifyReport& report, const verify::SecretKey& key,
                            const Anchor& anchor, bool accept_repairs) {
  const verify::PublicKey pub = public_half(key);
  const std::string key_id = verify::hex(key.id);
  uint64_t last_signed_line = 0;  // the last checkpoint this key signed (0: none)
  for (const CheckpointSeen& c : report.checkpoints) {
    if (c.key_id != key_id) continue;
    if (!checkpoint_signed_by(c, pub)) {
      return "line " + std::to_string(c.line) + ": the checkpoint names this writer's key " +
             key_id +
             " but its signature does not verify: it was forged or edited, and a signing writer "
             "does not sign over it";
    }
    last_signed_line = c.line;
  }
  if (anchor.seq > 0) {
    bool found = false;
    for (const CheckpointSeen& c : report.checkpoints) {
      found = found || (c.seq == anchor.seq && c.head == anchor.head &&
                        c.chain_digest == anchor.chain_digest);
    }
    // A log damaged below its anchor and repaired: only a person who checked it lets it go on.
    if (!found && !(accept_repairs && !report.repairs.empty())) {
      return "the log no longer holds its entry " + std::to_string(anchor.seq) + " (chain head " +
             anchor.head +
             ") that was recorded for it (the ledger anchor, or the last line this writer saw or "
             "wrote): it was cut back or rewritten below that entry, and a signing writer does "
             "not sign a rewritten log";
    }
  }
  for (const RepairSeen& r : report.repairs) {
    if (r.line > last_signed_line && !accept_repairs) {
      return "line " + std::to_string(r.line) + ": a repair entry (by " + r.operator_name + ", " +
             r.time + ") after " +
             (last_signed_line == 0 ? std::string("every checkpoint of this key (it signed none)")
                                    : "the last checkpoint this key signed (line " +
                                          std::to_string(last_signed_line) + ")") +
             ": a signing writer does not sign over a repair nobody accepted; check the repaired "
             "lines ('replaygate audit verify'), then run once with --accept-repairs";
    }
  }
  return "";
}

std::string anchor_name(const std::string& path) {
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  std::error_code ec;
  std::filesystem::path p = std::filesystem::weakly_canonical(path, ec);
  if (ec) p = std::filesystem::absolute(path, ec).lexically_normal();
  return std::string(host.data()) + ":" + p.string();
}

Coverage check_checkpoints(const VerifyReport& report, const std::vector<verify::PublicKey>& keys) {
  Coverage coverage;
  const CheckpointSeen* last_valid = nullptr;
  for (const CheckpointSeen& c : report.checkpoints) {
    const std::string where = "line " + std::to_string(c.line) + ": checkpoint ";
    const verify::PublicKey* key = nullptr;
    for (const verify::PublicKey& k : keys) {
      if (verify::hex(k.id) == c.key_id) key = &k;
    }
    if (key == nullptr) {
      coverage.problems.push_back(where + "signed by key " + c.key_id +
                                  ", which is not pinned (--trusted-key): it vouches for nothing");
      continue;
    }
    if (!checkpoint_signed_by(c, *key)) {
      coverage.problems.push_back(where + "signature does not verify under key " + c.key_id + " (" +
                                  key->path +
                                  "): the checkpoint was forged or edited, so it vouches for "
                                  "nothing");
      continue;
    }
    ++coverage.valid;
    last_valid = &c;
  }
  if (last_valid == nullptr) {
    if (report.entries > 0) {
      coverage.problems.push_back(
          "no checkpoint signed by a pinned key: nothing signed vouches for the " +
          plural(report.entries, "entry", "entries") +
          " (written without --audit-sign-key, or rewritten and its checkpoints removed)");
    }
    coverage.uncovered_entries = report.entries;
    return coverage;
  }
  coverage.covered_line = last_valid->line;
  coverage.covered_entries = last_valid->entries_before + 1;
  coverage.uncovered_entries = report.entries - coverage.covered_entries;
  coverage.covered_time = last_valid->time;
  for (const verify::PublicKey& k : keys) {
    if (verify::hex(k.id) == last_valid->key_id) coverage.covered_key = k.path;
  }
  if (coverage.uncovered_entries > 0) {
    coverage.problems.push_back(
        "after line " + std::to_string(last_valid->line) + ": " +
        plural(coverage.uncovered_entries, "entry", "entries") +
        " after the last valid checkpoint: nothing signed vouches for them (a writer with "
        "--audit-sign-key ends every append with a checkpoint: they were appended without one, "
        "or the log was changed after line " +
        std::to_string(last_valid->line) + ")");
  }
  return coverage;
}

const CheckpointSeen* checkpoint_before(const VerifyReport& report, uint64_t line) {
  const CheckpointSeen* before = nullptr;
  for (const CheckpointSeen& c : report.checkpoints) {
    if (c.line < line) before = &c;
  }
  return before;
}

std::string describe_checkpoint_before(const VerifyReport& report, const RepairSeen& repair,
                                       const std::vector<verify::PublicKey>& keys) {
  const CheckpointSeen* before = checkpoint_before(report, repair.line);
  if (before == nullptr) {
    return "no checkpoint comes before it: nothing signed vouches for the lines it repairs";
  }
  std::string signer = "its signature was not checked (give --trusted-key P.pub)";
  if (!keys.empty()) {
    signer = "signed by a key that is not pinned, or a signature that does not verify";
    for (const verify::PublicKey& k : keys) {
      if (verify::hex(k.id) == before->key_id && checkpoint_signed_by(*before, k)) {
        signer = "signed by a pinned key";
      }
    }
  }
  return "the last checkpoint before it is line " + std::to_string(before->line) + " (seq " +
         std::to_string(before->seq) + "), " + signer +
         "; the chain_digest of every checkpoint before the repair matches, so the lines it "
         "repairs come after line " +
         std::to_string(before->line);
}

}  // namespace replaygate::audit
