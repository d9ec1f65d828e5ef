// The console's users file: Argon2id hashes, the disabled flag, atomic 0600 writes, the plans
// reading the same file, and `replaygate console user add|disable|passwd`.
#include "console/users.h"

#include <gtest/gtest.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "redrive/plan/approval.h"
#include "support/cli_runner.h"

namespace replaygate::console {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::run_cli;
using testing::run_cli_args;
using testing::write_file;

class UsersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rg_console_users_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string public_key_hex() {
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_keypair(pk, sk);
  char hex[2 * sizeof pk + 1];
  sodium_bin2hex(hex, sizeof hex, pk, sizeof pk);
  return hex;
}

TEST_F(UsersTest, AHashIsArgon2idAndVerifiesOnlyItsPassword) {
  std::string hash;
  ASSERT_EQ(hash_password("correct horse battery", &hash), "");
  EXPECT_EQ(hash.rfind("$argon2id$", 0), 0u) << hash;
  EXPECT_TRUE(verify_password(hash, "correct horse battery"));
  EXPECT_FALSE(verify_password(hash, "correct horse batterz"));
  EXPECT_FALSE(verify_password("$2y$10$notargon", "correct horse battery"));
  EXPECT_FALSE(verify_password("", ""));
}

TEST_F(UsersTest, PasswordsHaveLimitsAndGeneratedOnesDiffer) {
  EXPECT_EQ(password_problem("short"), "the password is shorter than 12 bytes");
  EXPECT_EQ(password_problem(std::string(1025, 'a')), "the password is longer than 1024 bytes");
  EXPECT_EQ(password_problem(std::string("twelve bytes\0x", 14)),
            "the password contains a NUL byte");
  const std::string a = generate_password(), b = generate_password();
  EXPECT_EQ(a.size(), 24u);
  EXPECT_NE(a, b);
  EXPECT_EQ(password_problem(a), "");
}

TEST_F(UsersTest, AddWritesA0600FileThePlansRead) {
  UsersFile f;
  ASSERT_EQ(load_users(path("users.json"), true, &f), "");
  std::string hash;
  ASSERT_EQ(hash_password("a password of bob", &hash), "");
  const std::string key = public_key_hex();
  ASSERT_EQ(add_user(&f, {"bob", "approver", key, hash}), "");
  ASSERT_EQ(add_user(&f, {"vera", "viewer", std::nullopt, hash}), "");
  EXPECT_EQ(add_user(&f, {"bob", "viewer", std::nullopt, hash}),
            "'bob' is listed in " + path("users.json") + " already");
  EXPECT_EQ(add_user(&f, {"eve", "admin", std::nullopt, hash}),
            "role 'admin' is not one of viewer, operator, approver");
  EXPECT_EQ(add_user(&f, {"a\nb", "viewer", std::nullopt, hash}),
            "the name contains the control character U+000A (byte 2)");
  ASSERT_EQ(save_users(f), "");
  struct stat st {};
  ASSERT_EQ(::stat(path("users.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(fs::exists(path("users.json.tmp")));

  plan::Users users;
  ASSERT_EQ(plan::read_users_file(path("users.json"), &users), "");
  ASSERT_EQ(users.users.size(), 2u);
  EXPECT_EQ(users.users[0].name, "bob");
  EXPECT_EQ(users.users[0].password_hash, hash);
  EXPECT_FALSE(users.users[0].disabled);
  EXPECT_TRUE(users.users[0].has_key);

  ASSERT_EQ(load_users(path("users.json"), false, &f), "");
  ASSERT_EQ(disable_user(&f, "bob"), "");
  EXPECT_EQ(disable_user(&f, "nobody"), "'nobody' is not listed in " + path("users.json"));
  ASSERT_EQ(save_users(f), "");
  ASSERT_EQ(plan::read_users_file(path("users.json"), &users), "");
  EXPECT_TRUE(users.users[0].disabled);
}

TEST_F(UsersTest, TheUsersReaderRefusesBadLoginFields) {
  plan::Users users;
  std::istringstream bad_hash(
      R"({"format_version":1,"users":[{"name":"a","role":"viewer","password_hash":"$2y$10$x"}]})");
  EXPECT_EQ(plan::read_users(bad_hash, "u.json", "", &users),
            "u.json: user 1: \"password_hash\" is not an Argon2id hash string "
            "(\"$argon2id$...\", as 'replaygate console user add' writes it)");
  std::istringstream bad_flag(
      R"({"format_version":1,"users":[{"name":"a","role":"viewer","disabled":"yes"}]})");
  EXPECT_EQ(plan::read_users(bad_flag, "u.json", "", &users),
            "u.json: user 1: \"disabled\" is not true or false");
  // A file written before the console (no password, no flag) still reads.
  std::istringstream old(R"({"format_version":1,"users":[{"name":"a","role":"viewer"}]})");
  EXPECT_EQ(plan::read_users(old, "u.json", "", &users), "");
}

TEST_F(UsersTest, ADisabledApproverNeitherApprovesNorCounts) {
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  verify::SecretKey key;
  crypto_sign_keypair(pk, key.key.data());
  char hex[2 * sizeof pk + 1];
  sodium_bin2hex(hex, sizeof hex, pk, sizeof pk);
  const std::string text = std::string(R"({"format_version":1,"users":[{"name":"bob",)") +
                           R"("role":"approver","disabled":true,"public_key":")" + hex + "\"}]}";
  std::istringstream in(text);
  plan::Users users;
  ASSERT_EQ(plan::read_users(in, "u.json", "", &users), "");
  key.id = users.users[0].key.id;
  plan::PlanHeader header;
  header.author = "alice";
  EXPECT_EQ(plan::approve_refusal(header, "bob", key, users, "u.json"),
            "'bob' is disabled in u.json");
  const plan::Approval a =
      plan::sign_approval(key, "blake2b:00", "bob", "ok", "2026-12-07T00:00:00Z");
  EXPECT_EQ(plan::approval_problem(a, users), "approver 'bob' is disabled in the users file");
}

TEST_F(UsersTest, TheCliAddsDisablesAndResetsPasswords) {
  const std::string users = path("users.json");
  testing::CliResult r = run_cli_args(
      dir_, {"console", "user", "add", "alice", "--role", "operator", "--users", users});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.out.size(), 25u) << r.out;  // the password, once, and a newline
  const std::string password = r.out.substr(0, 24);
  plan::Users read;
  ASSERT_EQ(plan::read_users_file(users, &read), "");
  EXPECT_TRUE(verify_password(read.users[0].password_hash, password));

  testing::CliRun run;
  run.args = {"console",         "user", "add", "bob", "--role", "viewer", "--users", users,
              "--password-stdin"};
  run.stdin_text = "bob's own password\n";
  r = run_cli(dir_, run);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  ASSERT_EQ(plan::read_users_file(users, &read), "");
  EXPECT_TRUE(verify_password(read.users[1].password_hash, "bob's own password"));

  run.stdin_text = "short\n";
  run.args = {"console", "user", "passwd", "bob", "--users", users, "--password-stdin"};
  r = run_cli(dir_, run);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate console: error: the password is shorter than 12 bytes\n");

  r = run_cli_args(dir_, {"console", "user", "add", "alice", "--role", "viewer", "--users", users});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate console: refused: 'alice' is listed in " + users +
                       " already; nothing written\n");
  EXPECT_EQ(r.out, "");

  r = run_cli_args(dir_, {"console", "user", "passwd", "alice", "--users", users});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(plan::read_users_file(users, &read), "");
  EXPECT_FALSE(verify_password(read.users[0].password_hash, password));
  EXPECT_TRUE(verify_password(read.users[0].password_hash, r.out.substr(0, 24)));

  r = run_cli_args(dir_, {"console", "user", "disable", "alice", "--users", users});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(plan::read_users_file(users, &read), "");
  EXPECT_TRUE(read.users[0].disabled);
  r = run_cli_args(dir_, {"console", "user", "disable", "carol", "--users", users});
  EXPECT_EQ(r.exit_code, 1);
  r = run_cli_args(dir_, {"console", "user", "disable", "carol", "--users", path("none.json")});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace replaygate::console
