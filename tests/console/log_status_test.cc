// The audit page's cache of log verdicts: a log is verified once while it stays the same, and
// again after any change, also one that kept its size and set its mtime back.
#include "console/log_status.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "audit/entry.h"
#include "support/cli_runner.h"

namespace replaygate::console {
namespace {

namespace fs = std::filesystem;

audit::ConsoleEntry entry(const std::string& act) {
  audit::ConsoleEntry e;
  e.operator_name = "olga";
  e.act = act;
  e.scope = "default";
  e.outcome = "allowed";
  e.address = "127.0.0.1";
  return e;
}

TEST(LogStatusCache, VerifiesAgainOnlyWhenTheLogChanged) {
  char tmpl[] = "/tmp/rg_log_status_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const std::string log = (dir / "audit.log").string();
  ASSERT_TRUE(audit::append(log, audit::to_json(entry("login"))).ok);
  ASSERT_TRUE(audit::append(log, audit::to_json(entry("logout"))).ok);

  LogStatusCache cache;
  LogStatus s = cache.get(log);
  ASSERT_TRUE(s.readable);
  EXPECT_TRUE(s.report.ok());
  EXPECT_EQ(s.report.entries, 2u);
  EXPECT_EQ(cache.get(log).report.entries, 2u);
  EXPECT_EQ(cache.verifications(), 1u) << "an unchanged log is not read again";

  // An append: verified again.
  ASSERT_TRUE(audit::append(log, audit::to_json(entry("login"))).ok);
  EXPECT_EQ(cache.get(log).report.entries, 3u);
  EXPECT_EQ(cache.verifications(), 2u);

  // One byte changed in place, the size kept and the mtime set back: still seen (the ctime moved).
  struct stat before {};
  ASSERT_EQ(::stat(log.c_str(), &before), 0);
  std::string bytes = testing::read_file(log);
  const size_t at = bytes.find("\"olga\"");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 1] = 'O';
  testing::write_file(log, bytes);
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, log.c_str(), times, 0), 0);
  s = cache.get(log);
  EXPECT_EQ(cache.verifications(), 3u);
  EXPECT_FALSE(s.report.ok()) << "a tampered log must not keep its old verdict";

  // Gone: not readable, and nothing stale kept.
  fs::remove(log);
  EXPECT_FALSE(cache.get(log).readable);
  EXPECT_FALSE(cache.get((dir / "none").string()).readable);
  EXPECT_FALSE(cache.get(dir.string()).readable) << "a directory is not a log";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace replaygate::console
