// replaygate::verify against each attack of issue 22: key files, the signed envelope (stripped,
// zeroed, foreign-key, swapped-key-id, bit-flipped, padded, truncated, overflowing, reserved,
// downgraded), pinning rules (the file never decides whether it is checked), expiry, rollback
// and equivocation across restarts, a verifying SharedTable and the C API's verified loads.
#include "runtime/verify/signed_table.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "compiler/lower.h"
#include "runtime/replaygate.h"
#include "runtime/table_format.h"
#include "runtime/verify/keys.h"
#include "runtime/verify/replaygate_verify.h"
#include "runtime/verify/trust_state.h"
#include "support/test_policies.h"

namespace replaygate::verify {
namespace {

namespace fs = std::filesystem;
namespace fm = replaygate::format;
using Bytes = std::vector<uint8_t>;

class SignedTable : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rg-verify-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::string error;
    ASSERT_TRUE(generate_key_files(path("a.key"), path("a.pub"), &pub_a_, &error)) << error;
    ASSERT_TRUE(generate_key_files(path("b.key"), path("b.pub"), &pub_b_, &error)) << error;
    ASSERT_TRUE(read_secret_key(path("a.key"), &sec_a_, &error)) << error;
    ASSERT_TRUE(read_secret_key(path("b.key"), &sec_b_, &error)) << error;
    ASSERT_TRUE(read_public_key(path("a.pub"), &pub_a_, &error)) << error;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static Bytes small(int64_t revision = 7, const std::string& description = "") {
    ir::CheckedPolicy p = testing::small_policy();
    p.policy.revision = revision;
    if (!description.empty()) p.policy.description = description;
    return lower(p);
  }
  Bytes sign(const Bytes& table, const SecretKey& key, int64_t expires_at = 0) {
    Bytes out;
    std::string error;
    EXPECT_TRUE(sign_table(table.data(), table.size(), key, expires_at, &out, &error)) << error;
    return out;
  }
  TrustOptions pinned_a() const {
    TrustOptions t;
    t.keys.push_back(pub_a_);
    return t;
  }
  // The load's status ("" when it loaded); a loaded table must come with an ok status.
  static std::string load(const Bytes& bytes, const TrustOptions& trust, Verified* info = nullptr) {
    LoadStatus status;
    const auto table = load_table_bytes(bytes.data(), bytes.size(), trust, info, &status);
    EXPECT_EQ(table != nullptr, status.ok()) << status.message;
    if (table != nullptr) return "";
    return std::string(load_error_name(status.error)) + ": " + status.message;
  }
  static void write(const std::string& p, const Bytes& bytes) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }

  fs::path dir_;
  PublicKey pub_a_, pub_b_;
  SecretKey sec_a_, sec_b_;
};

// ---- key files ----

TEST_F(SignedTable, KeyFilesHaveTheirModesAndAreNeverOverwritten) {
  struct stat st {};
  ASSERT_EQ(::stat(path("a.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(path("a.pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  const std::string before = std::to_string(fs::file_size(path("a.key")));
  PublicKey again;
  std::string error;
  EXPECT_FALSE(generate_key_files(path("a.key"), path("new.pub"), &again, &error));
  EXPECT_NE(error.find("a.key"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(path("new.pub"))) << "nothing is written when one file exists";
  EXPECT_FALSE(generate_key_files(path("new.key"), path("a.pub"), &again, &error));
  EXPECT_FALSE(fs::exists(path("new.key"))) << "the secret written first is removed again";
  EXPECT_EQ(std::to_string(fs::file_size(path("a.key"))), before);
  EXPECT_EQ(pub_a_.id, sec_a_.id);
  EXPECT_NE(pub_a_.id, pub_b_.id);
  EXPECT_EQ(pub_a_.id, key_id_of(pub_a_.key.data()));
}

TEST_F(SignedTable, ASecretKeyReadableByOthersIsRefused) {
  ASSERT_EQ(::chmod(path("a.key").c_str(), 0644), 0);
  SecretKey key;
  std::string error;
  EXPECT_FALSE(read_secret_key(path("a.key"), &key, &error));
  EXPECT_NE(error.find("chmod 600"), std::string::npos) << error;
}

TEST_F(SignedTable, AKeyFileWhoseIdDoesNotMatchItsKeyIsRefused) {
  std::ifstream in(path("a.pub"));
  std::string magic, id_line, key_line;
  std::getline(in, magic);
  std::getline(in, id_line);
  std::getline(in, key_line);
  std::ifstream inb(path("b.pub"));
  std::string b_magic, b_id;
  std::getline(inb, b_magic);
  std::getline(inb, b_id);
  std::ofstream(path("mixed.pub")) << magic << "\n" << b_id << "\n" << key_line << "\n";
  PublicKey key;
  std::string error;
  EXPECT_FALSE(read_public_key(path("mixed.pub"), &key, &error));
  EXPECT_FALSE(error.empty());
  std::ofstream(path("junk.pub")) << "not a key\n";
  EXPECT_FALSE(read_public_key(path("junk.pub"), &key, &error));
  EXPECT_FALSE(read_public_key(path("missing.pub"), &key, &error));
  EXPECT_NE(error.find("missing.pub"), std::string::npos) << error;
}

// ---- the envelope ----

TEST_F(SignedTable, ASignedTableLoadsWithItsKeyPinned) {
  const Bytes table = small();
  const Bytes signed_table = sign(table, sec_a_);
  ASSERT_EQ(signed_table.size(), table.size() + sizeof(fm::SignedEnvelope));
  Verified info;
  EXPECT_EQ(load(signed_table, pinned_a(), &info), "");
  EXPECT_TRUE(info.is_signed);
  EXPECT_TRUE(info.checked);
  EXPECT_EQ(info.key_id, pub_a_.id);
  EXPECT_EQ(info.key_path, path("a.pub"));
  // The digest names the table's bytes, signed or not: re-signing is not a new table.
  Verified unsigned_info;
  EXPECT_EQ(load(table, TrustOptions{}, &unsigned_info), "");
  EXPECT_EQ(info.digest, unsigned_info.digest);
  EXPECT_EQ(info.digest.size(), 64u);
  // Rotation: either pinned key may have signed.
  TrustOptions both = pinned_a();
  both.keys.push_back(pub_b_);
  EXPECT_EQ(load(sign(table, sec_b_), both), "");
}

TEST_F(SignedTable, TheRuntimeAloneNeverLoadsASignedTable) {
  const Bytes signed_table = sign(small(), sec_a_);
  LoadStatus status;
  EXPECT_EQ(Table::load_bytes(signed_table.data(), signed_table.size(), &status), nullptr);
  EXPECT_EQ(status.error, LoadError::kBadMagic);
  EXPECT_NE(status.message.find("replaygate::verify"), std::string::npos) << status.message;
}

TEST_F(SignedTable, WithAKeyPinnedAnUnsignedTableIsRefused) {
  EXPECT_EQ(load(small(), pinned_a()),
            "signature: unsigned table, and 1 key is pinned: a signature is required");
  EXPECT_EQ(load(Bytes{}, pinned_a()),
            "signature: not a signed table, and 1 key is pinned: a signature is required");
  EXPECT_EQ(load(Bytes(200, 0), pinned_a()),
            "signature: not a signed table, and 1 key is pinned: a signature is required");
}

TEST_F(SignedTable, AStrippedOrZeroedSignatureIsRefused) {
  Bytes s = sign(small(), sec_a_);
  std::memset(s.data() + fm::kSignedSignatureOffset, 0, 64);
  EXPECT_NE(load(s, pinned_a()).find("signature: bad signature"), std::string::npos);
  // The envelope without its signature bytes: the payload starts where the signature was.
  Bytes stripped = sign(small(), sec_a_);
  stripped.erase(stripped.begin() + fm::kSignedSignatureOffset,
                 stripped.begin() + fm::kSignedSignatureOffset + 64);
  EXPECT_NE(load(stripped, pinned_a()).find("signature: "), std::string::npos);
  // Only the header.
  Bytes header_only(s.begin(), s.begin() + sizeof(fm::SignedEnvelope));
  EXPECT_NE(load(header_only, pinned_a()).find("signature: truncated"), std::string::npos);
  Bytes cut(s.begin(), s.begin() + 20);
  EXPECT_NE(load(cut, pinned_a()).find("signature: truncated signed envelope"), std::string::npos);
}

TEST_F(SignedTable, AnotherKeysSignatureIsRefused) {
  const Bytes by_b = sign(small(), sec_b_);
  EXPECT_NE(load(by_b, pinned_a()).find("which is not pinned"), std::string::npos);
  // Signed by b, but claiming a's key id: the signature does not verify with a's key.
  Bytes swapped = by_b;
  fm::SignedEnvelope e;
  std::memcpy(&e, swapped.data(), sizeof e);
  std::memcpy(e.key_id, pub_a_.id.data(), sizeof e.key_id);
  std::memcpy(swapped.data(), &e, sizeof e);
  EXPECT_NE(load(swapped, pinned_a()).find("signature: bad signature"), std::string::npos);
}

TEST_F(SignedTable, EverySingleBitFlipIsRefused) {
  const Bytes s = sign(small(), sec_a_);
  const TrustOptions trust = pinned_a();
  size_t refused = 0;
  for (size_t byte = 0; byte < s.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      Bytes flipped = s;
      flipped[byte] ^= static_cast<uint8_t>(1u << bit);
      LoadStatus status;
      const auto t = load_table_bytes(flipped.data(), flipped.size(), trust, nullptr, &status);
      ASSERT_EQ(t, nullptr) << "byte " << byte << " bit " << bit;
      ASSERT_EQ(status.error, LoadError::kSignature) << byte << ": " << status.message;
      ++refused;
    }
  }
  EXPECT_EQ(refused, s.size() * 8);
}

TEST_F(SignedTable, TrailingBytesAndALyingLengthAreRefused) {
  Bytes padded = sign(small(), sec_a_);
  padded.push_back(0);
  EXPECT_NE(load(padded, pinned_a()).find("signature: trailing bytes"), std::string::npos);
  for (const uint64_t size : {uint64_t{UINT64_MAX}, uint64_t{1} << 63, uint64_t{0}}) {
    Bytes lying = sign(small(), sec_a_);
    fm::SignedEnvelope e;
    std::memcpy(&e, lying.data(), sizeof e);
    e.payload_size = size;
    std::memcpy(lying.data(), &e, sizeof e);
    EXPECT_NE(load(lying, pinned_a()).find("signature: "), std::string::npos) << size;
    EXPECT_EQ(load(lying, TrustOptions{}).rfind("signature: ", 0), 0u) << size;
  }
}

TEST_F(SignedTable, ReservedFieldsAndOtherVersionsAreRefused) {
  const Bytes s = sign(small(), sec_a_);
  const auto edited = [&](auto edit) {
    Bytes b = s;
    fm::SignedEnvelope e;
    std::memcpy(&e, b.data(), sizeof e);
    edit(e);
    std::memcpy(b.data(), &e, sizeof e);
    return b;
  };
  EXPECT_NE(load(edited([](fm::SignedEnvelope& e) { e.flags = 1; }), pinned_a())
                .find("reserved fields are set"),
            std::string::npos);
  EXPECT_NE(load(edited([](fm::SignedEnvelope& e) { e.reserved[1] = 1; }), pinned_a())
                .find("reserved fields are set"),
            std::string::npos);
  EXPECT_NE(load(edited([](fm::SignedEnvelope& e) { e.version = 0; }), pinned_a())
                .find("unsupported signed envelope version 0"),
            std::string::npos);
  EXPECT_NE(load(edited([](fm::SignedEnvelope& e) { e.version = 2; }), pinned_a())
                .find("unsupported signed envelope version 2"),
            std::string::npos);
  EXPECT_NE(load(edited([](fm::SignedEnvelope& e) { e.header_size = 64; }), pinned_a())
                .find("bad signed envelope header size 64"),
            std::string::npos);
}

// ---- who decides whether a table is checked: the caller ----

TEST_F(SignedTable, WithNoKeyPinnedTablesLoadUncheckedUnlessSigningIsRequired) {
  Verified info;
  EXPECT_EQ(load(small(), TrustOptions{}, &info), "");
  EXPECT_FALSE(info.is_signed);
  EXPECT_EQ(load(sign(small(), sec_b_), TrustOptions{}, &info), "");
  EXPECT_TRUE(info.is_signed);
  EXPECT_FALSE(info.checked);
  TrustOptions required;
  required.require_signed = true;
  EXPECT_EQ(load(small(), required),
            "signature: signing is required, but no key is pinned (--trusted-key)");
  EXPECT_EQ(load(sign(small(), sec_a_), required),
            "signature: signing is required, but no key is pinned (--trusted-key)");
  TrustOptions required_and_pinned = pinned_a();
  required_and_pinned.require_signed = true;
  EXPECT_EQ(load(sign(small(), sec_a_), required_and_pinned), "");
}

TEST_F(SignedTable, SomethingThatIsNotATableIsNeverSigned) {
  Bytes out;
  std::string error;
  const Bytes junk(300, 7);
  EXPECT_FALSE(sign_table(junk.data(), junk.size(), sec_a_, 0, &out, &error));
  EXPECT_NE(error.find("not a loadable table"), std::string::npos) << error;
  EXPECT_TRUE(out.empty());
  // Re-signing replaces the envelope and keeps the payload.
  const Bytes by_b = sign(small(), sec_b_);
  const Bytes by_a = sign(by_b, sec_a_);
  EXPECT_EQ(by_a.size(), by_b.size());
  EXPECT_EQ(load(by_a, pinned_a()), "");
}

TEST_F(SignedTable, AnExpiredTableIsRefused) {
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  EXPECT_EQ(load(sign(small(), sec_a_, now + 3600), pinned_a()), "");
  const std::string expired = load(sign(small(), sec_a_, now - 1), pinned_a());
  EXPECT_EQ(expired.rfind("expired: expired: the table's signature expired at ", 0), 0u) << expired;
  TrustOptions before = pinned_a();
  before.now = now - 10;
  EXPECT_EQ(load(sign(small(), sec_a_, now - 1), before), "");
}

// ---- rollback ----

TEST_F(SignedTable, AnOlderRevisionIsARollbackAlsoAfterARestart) {
  TrustOptions trust = pinned_a();
  trust.trust_state = path("trust");
  EXPECT_EQ(load(sign(small(5), sec_a_), trust), "");
  EXPECT_EQ(load(sign(small(6), sec_a_), trust), "");
  EXPECT_EQ(load(sign(small(6), sec_a_), trust), "") << "the same table again is fine";
  const std::string older = load(sign(small(5), sec_a_), trust);
  EXPECT_EQ(older.rfind("rollback: rollback: policy small revision 5 is older than revision 6", 0),
            0u)
      << older;
  // A new process: only the directory carries over.
  TrustOptions restarted = pinned_a();
  restarted.trust_state = path("trust");
  EXPECT_EQ(load(sign(small(5), sec_a_), restarted).rfind("rollback: ", 0), 0u);
  TrustRecord record;
  bool found = false;
  std::string error;
  ASSERT_TRUE(read_record(path("trust"), "small", &record, &found, &error)) << error;
  ASSERT_TRUE(found);
  EXPECT_EQ(record.revision, 6);
  // A read-only tool (no trust state) still loads the older table.
  EXPECT_EQ(load(sign(small(5), sec_a_), pinned_a()), "");
}

TEST_F(SignedTable, TwoTablesWithOneRevisionAreEquivocation) {
  TrustOptions trust = pinned_a();
  trust.trust_state = path("trust");
  EXPECT_EQ(load(sign(small(7), sec_a_), trust), "");
  const std::string other = load(sign(small(7, "another table, same revision"), sec_a_), trust);
  EXPECT_NE(other.find("equivocation: policy small revision 7"), std::string::npos) << other;
  // Another policy id has its own record.
  EXPECT_EQ(load(sign(lower(testing::reference_gate()), sec_a_), trust), "");
}

TEST_F(SignedTable, AResetAllowsAnOlderRevisionAndACorruptStateFailsClosed) {
  TrustOptions trust = pinned_a();
  trust.trust_state = path("trust");
  EXPECT_EQ(load(sign(small(9), sec_a_), trust), "");
  TrustRecord previous;
  bool found = false;
  std::string error;
  ASSERT_TRUE(reset(path("trust"), "small", &previous, &found, &error)) << error;
  EXPECT_TRUE(found);
  EXPECT_EQ(previous.revision, 9);
  EXPECT_EQ(load(sign(small(3), sec_a_), trust), "");
  // Corrupt every state file: activation refuses (I/O), never accepts.
  for (const auto& entry : fs::directory_iterator(path("trust"))) {
    if (entry.path().filename().string().rfind("policy-", 0) == 0) {
      std::ofstream(entry.path()) << "garbage\n";
    }
  }
  EXPECT_EQ(load(sign(small(4), sec_a_), trust).rfind("io: ", 0), 0u);
}

// Issue 42 item 3: a table of another policy, signed by the same key, never replaces the one a
// worker is bound to, and a key restricted to policy ids signs for those only.
TEST_F(SignedTable, BindingRefusesAnotherPolicyAndAKeyMayBeRestricted) {
  const Bytes other = sign(lower(testing::reference_gate()), sec_a_);  // another policy id
  TrustOptions trust = pinned_a();
  trust.trust_state = path("trust");
  trust.policy_id = "small";
  EXPECT_EQ(load(sign(small(5), sec_a_), trust), "");
  std::string bound;
  std::string error;
  ASSERT_TRUE(read_binding(path("trust"), &bound, &error)) << error;
  EXPECT_EQ(bound, "small");
  const std::string refused = load(other, trust);
  EXPECT_EQ(refused.rfind("rollback: policy binding: this table is policy ", 0), 0u) << refused;
  // A new process that does not say which policy: the trust state's binding refuses it.
  TrustOptions restarted = pinned_a();
  restarted.trust_state = path("trust");
  const std::string again = load(other, restarted);
  EXPECT_NE(again.find("policy binding: trust state"), std::string::npos) << again;
  EXPECT_NE(again.find("is bound to policy small"), std::string::npos) << again;
  LoadStatus status;
  EXPECT_FALSE(bind_policy(path("trust"), "reference", &status));
  EXPECT_TRUE(bind_policy(path("trust"), "small", &status)) << status.message;
  // A reset of the bound policy removes the binding: the other policy loads.
  TrustRecord previous;
  bool found = false;
  ASSERT_TRUE(reset(path("trust"), "small", &previous, &found, &error)) << error;
  EXPECT_EQ(load(other, restarted), "");
  // Without a trust state the binding still refuses another policy.
  TrustOptions bare = pinned_a();
  bare.policy_id = "small";
  EXPECT_EQ(load(other, bare).rfind("rollback: policy binding", 0), 0u);

  // A key file with a fourth line `policies small`: the other policy is refused, small loads.
  std::ifstream in(path("a.pub"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(path("a-small.pub")) << text << "policies small other\n";
  PublicKey restricted;
  ASSERT_TRUE(read_public_key(path("a-small.pub"), &restricted, &error)) << error;
  EXPECT_EQ(restricted.policies, (std::vector<std::string>{"small", "other"}));
  TrustOptions only_small;
  only_small.keys.push_back(restricted);
  EXPECT_EQ(load(sign(small(5), sec_a_), only_small), "");
  const std::string not_allowed = load(other, only_small);
  EXPECT_EQ(not_allowed.rfind("signature: key ", 0), 0u) << not_allowed;
  EXPECT_NE(not_allowed.find("may sign only policy small, other"), std::string::npos)
      << not_allowed;
  // A bad fourth line is still refused.
  std::ofstream(path("a-bad.pub")) << text << "policies \n";
  EXPECT_FALSE(read_public_key(path("a-bad.pub"), &restricted, &error));
  std::ofstream(path("a-junk.pub")) << text << "junk\n";
  EXPECT_FALSE(read_public_key(path("a-junk.pub"), &restricted, &error));
}

// The file is read once and the bytes checked are the bytes loaded: while another thread keeps
// renaming a forged table and the signed one over the path, every load is the signed table or a
// refusal, never the forged one.
TEST_F(SignedTable, AFileReplacedBetweenReadsNeverLoadsTheForgedTable) {
  const Bytes good = sign(small(5), sec_a_);
  // A valid table signed by a key that is not pinned: it would load if the bytes parsed were
  // not the bytes verified.
  const Bytes forged = sign(small(9), sec_b_);
  const Bytes unsigned_table = small(6);
  write(path("good.tmp"), good);
  write(path("t.rgt"), good);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      const std::string temp = path("w" + std::to_string(i % 3) + ".tmp");
      write(temp, i % 3 == 0 ? good : i % 3 == 1 ? forged : unsigned_table);
      std::filesystem::rename(temp, path("t.rgt"));
    }
  });
  const TrustOptions trust = pinned_a();
  int loaded = 0, refused = 0;
  for (int i = 0; i < 600; ++i) {
    LoadStatus status;
    Verified info;
    const auto table = load_table_file(path("t.rgt"), trust, &info, &status);
    if (table == nullptr) {
      ++refused;
      EXPECT_TRUE(status.error == LoadError::kSignature) << status.message;
      continue;
    }
    ++loaded;
    EXPECT_TRUE(info.checked);
    EXPECT_EQ(table->revision(), 5);
  }
  stop = true;
  writer.join();
  EXPECT_EQ(loaded + refused, 600);
}

// ---- a verifying shared table ----

TEST_F(SignedTable, AFailedVerifiedReloadKeepsTheOldTableServing) {
  TrustOptions trust = pinned_a();
  trust.trust_state = path("trust");
  write(path("t.rgt"), sign(small(5), sec_a_));
  LoadStatus status;
  const auto shared = open_shared(path("t.rgt"), trust, 4, &status);
  ASSERT_NE(shared, nullptr) << status.message;
  const auto revision = [&] {
    SharedTable::Reader reader(*shared);
    return reader.acquire().table().revision();
  };
  EXPECT_EQ(revision(), 5);
  write(path("t.rgt"), small(6));  // unsigned
  EXPECT_FALSE(shared->reload(path("t.rgt"), &status));
  EXPECT_EQ(status.error, LoadError::kSignature);
  write(path("t.rgt"), sign(small(6), sec_b_));  // another key
  EXPECT_FALSE(shared->reload(path("t.rgt"), &status));
  EXPECT_EQ(status.error, LoadError::kSignature);
  write(path("t.rgt"), sign(small(4), sec_a_));  // older
  EXPECT_FALSE(shared->reload(path("t.rgt"), &status));
  EXPECT_EQ(status.error, LoadError::kRollback);
  EXPECT_EQ(revision(), 5);
  // replace() with a table the verifier did not load is refused too.
  const Bytes plain = small(8);
  EXPECT_FALSE(shared->replace(Table::load_bytes(plain.data(), plain.size(), &status), &status));
  EXPECT_EQ(status.error, LoadError::kSignature);
  EXPECT_EQ(revision(), 5);
  write(path("t.rgt"), sign(small(6), sec_a_));
  EXPECT_TRUE(shared->reload(path("t.rgt"), &status)) << status.message;
  EXPECT_EQ(revision(), 6);
  TrustRecord record;
  bool found = false;
  std::string error;
  ASSERT_TRUE(read_record(path("trust"), "small", &record, &found, &error));
  EXPECT_EQ(record.revision, 6);
}

// ---- the C API ----

TEST_F(SignedTable, TheCApiVerifiesWithPinnedKeys) {
  write(path("signed.rgt"), sign(small(), sec_a_));
  write(path("unsigned.rgt"), small());
  const std::string a = path("a.pub");
  const char* keys[] = {a.c_str()};
  rg_table* table = nullptr;
  rg_error err;
  ASSERT_EQ(rg_table_load_verified(path("signed.rgt").c_str(), keys, 1, nullptr, 0, &table, &err),
            RG_OK)
      << err.message;
  ASSERT_NE(table, nullptr);
  rg_table_free(table);
  table = nullptr;
  EXPECT_EQ(rg_table_load_verified(path("unsigned.rgt").c_str(), keys, 1, nullptr, 0, &table, &err),
            RG_ERR_SIGNATURE);
  EXPECT_EQ(table, nullptr);
  EXPECT_STREQ(rg_status_name(RG_ERR_SIGNATURE), "signature");
  EXPECT_EQ(rg_table_load_verified(path("unsigned.rgt").c_str(), nullptr, 0, nullptr,
                                   RG_TRUST_REQUIRE_SIGNED, &table, &err),
            RG_ERR_SIGNATURE);
  const std::string missing = path("missing.pub");
  const char* bad_keys[] = {missing.c_str()};
  EXPECT_EQ(
      rg_table_load_verified(path("signed.rgt").c_str(), bad_keys, 1, nullptr, 0, &table, &err),
      RG_ERR_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("missing.pub"), std::string::npos) << err.message;
  EXPECT_EQ(rg_table_load_verified(path("signed.rgt").c_str(), keys, 1, nullptr, 8, &table, &err),
            RG_ERR_ARGUMENT);
  // The plain loader refuses a signed table rather than skip its signature.
  EXPECT_EQ(rg_table_load_file(path("signed.rgt").c_str(), &table, &err), RG_ERR_BAD_MAGIC);
  // Rollback through the C API's trust state.
  const std::string state = path("trust");
  write(path("new.rgt"), sign(small(9), sec_a_));
  ASSERT_EQ(
      rg_table_load_verified(path("new.rgt").c_str(), keys, 1, state.c_str(), 0, &table, &err),
      RG_OK)
      << err.message;
  rg_table_free(table);
  EXPECT_EQ(
      rg_table_load_verified(path("signed.rgt").c_str(), keys, 1, state.c_str(), 0, &table, &err),
      RG_ERR_ROLLBACK);
  EXPECT_EQ(table, nullptr);
}

}  // namespace
}  // namespace replaygate::verify
