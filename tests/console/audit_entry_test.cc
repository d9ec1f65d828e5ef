// The `console` audit entry kind: what the console writes verifies, a bad one is named, and a
// console line cut by a crash is a torn tail the next append removes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "support/cli_runner.h"

namespace replaygate::audit {
namespace {

namespace fs = std::filesystem;

ConsoleEntry entry(const std::string& act, const std::string& outcome) {
  ConsoleEntry e;
  e.operator_name = "olga";
  e.act = act;
  e.scope = "default";
  e.outcome = outcome;
  e.address = "127.0.0.1";
  return e;
}

class ConsoleAuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rg_console_audit_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    log_ = (dir_ / "audit.log").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string log_;
};

TEST_F(ConsoleAuditTest, EntriesVerifyAndBadOnesAreNamed) {
  ConsoleEntry cancel = entry("plan_cancel", "allowed");
  cancel.target = "blake2b:" + std::string(64, 'a');
  cancel.reason = "the upstream fix landed";
  ASSERT_TRUE(append(log_, to_json(entry("login", "allowed"))).ok);
  ASSERT_TRUE(append(log_, to_json(cancel)).ok);
  const VerifyReport v = verify_bytes(testing::read_file(log_));
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.entries, 2u);

  AppendResult r = append(log_, to_json(entry("Login!", "allowed")));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("'act' is \"Login!\"; expected a lowercase word"), std::string::npos)
      << r.error;
  r = append(log_, to_json(entry("login", "maybe")));
  EXPECT_NE(r.error.find("expected allowed, refused or failed"), std::string::npos) << r.error;
  ConsoleEntry bad_reason = entry("plan_cancel", "refused");
  bad_reason.reason = "two\nlines";
  r = append(log_, to_json(bad_reason));
  EXPECT_NE(r.error.find("'reason' contains the control character U+000A"), std::string::npos)
      << r.error;
  nlohmann::json no_address = to_json(entry("login", "allowed"));
  no_address.erase("address");
  r = append(log_, no_address);
  EXPECT_NE(r.error.find("console entry without 'address'"), std::string::npos) << r.error;
}

TEST_F(ConsoleAuditTest, ACutConsoleLineIsATornTail) {
  ASSERT_TRUE(append(log_, to_json(entry("login", "allowed"))).ok);
  const std::string whole = testing::read_file(log_);
  ConsoleEntry next = entry("logout", "allowed");
  next.time = "2026-12-07T10:00:00Z";
  ASSERT_TRUE(append(log_, to_json(next)).ok);
  const std::string two = testing::read_file(log_);
  const std::string second = two.substr(whole.size());
  for (size_t cut :
       {size_t{3}, size_t{20}, second.find("\"outcome\"") + 4, second.find("\"time\"") + 10}) {
    testing::write_file(log_, whole + second.substr(0, cut));
    EXPECT_TRUE(verify_bytes(testing::read_file(log_)).torn_tail) << cut;
    const AppendResult r = append(log_, to_json(next));
    ASSERT_TRUE(r.ok) << cut << ": " << r.error;
    EXPECT_EQ(r.removed_torn_tail, second.substr(0, cut));
    EXPECT_TRUE(verify_bytes(testing::read_file(log_)).ok());
  }
}

}  // namespace
}  // namespace replaygate::audit
