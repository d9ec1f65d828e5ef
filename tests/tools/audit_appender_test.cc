// audit::Appender (audit_log.h), the long-running gate's writer: the same bytes as append(), a
// verified open, a torn tail removed at the first write, results checked against its decisions,
// signed checkpoints, and a file replaced or grown behind its lock refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/checkpoint.h"
#include "audit/entry.h"
#include "runtime/verify/keys.h"
#include "support/audit_entries.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

using nlohmann::json;

// The appender tests write create-verb decisions.
json decision_create(int n) { return decision(n, "replay_once", "create"); }

json result(const std::string& outcome, uint64_t decision_seq) {
  audit::ResultEntry r;
  r.decision = decision_seq;
  r.time = "2026-12-01T00:00:09Z";
  r.outcome = outcome;
  r.operator_name = "ana";
  return audit::to_json(r);
}

class AuditAppender : public ::testing::Test {
 protected:
  std::string p(const std::string& name) const { return (scratch_.path() / name).string(); }
  ScratchDir scratch_{"rg_appender"};
};

TEST_F(AuditAppender, WritesTheBytesAppendWrites) {
  // The same entries through append() and through one Appender give the same file.
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(audit::append(p("a.log"), decision_create(i)).ok);
    ASSERT_TRUE(
        audit::append(p("a.log"), result("done " + std::to_string(i), 2 * i - 1), 2 * i - 1).ok);
  }
  std::string error;
  {
    std::unique_ptr<audit::Appender> appender = audit::Appender::open(p("b.log"), nullptr, &error);
    ASSERT_TRUE(appender) << error;
    for (int i = 1; i <= 3; ++i) {
      const audit::AppendResult d = appender->append(decision_create(i));
      ASSERT_TRUE(d.ok) << d.error;
      EXPECT_EQ(d.seq, static_cast<uint64_t>(2 * i - 1));
      const audit::AppendResult r =
          appender->append(result("done " + std::to_string(i), d.seq), d.seq);
      ASSERT_TRUE(r.ok) << r.error;
      EXPECT_EQ(r.seq, static_cast<uint64_t>(2 * i));
    }
  }
  EXPECT_EQ(read_file(p("a.log")), read_file(p("b.log")));
  // And it continues a log append() wrote, as append() would.
  {
    std::unique_ptr<audit::Appender> appender = audit::Appender::open(p("b.log"), nullptr, &error);
    ASSERT_TRUE(appender) << error;
    ASSERT_TRUE(appender->append(decision_create(7)).ok);
  }
  ASSERT_TRUE(audit::append(p("a.log"), decision_create(7)).ok);
  EXPECT_EQ(read_file(p("a.log")), read_file(p("b.log")));
  EXPECT_TRUE(audit::verify_bytes(read_file(p("b.log"))).ok());
}

TEST_F(AuditAppender, ChecksResultsAgainstItsOwnDecisions) {
  std::string error;
  std::unique_ptr<audit::Appender> appender = audit::Appender::open(p("a.log"), nullptr, &error);
  ASSERT_TRUE(appender) << error;
  const audit::AppendResult d = appender->append(decision_create(1));
  ASSERT_TRUE(d.ok);
  EXPECT_FALSE(appender->append(result("x", d.seq + 5), d.seq + 5).ok);
  ASSERT_TRUE(appender->append(result("first", d.seq), d.seq).ok);
  const audit::AppendResult twice = appender->append(result("second", d.seq), d.seq);
  EXPECT_FALSE(twice.ok);
  EXPECT_NE(twice.error.find("already has its result"), std::string::npos) << twice.error;
  // A refused append changed nothing: the log holds two entries and verifies.
  const std::string bytes = read_file(p("a.log"));
  EXPECT_EQ(lines_of(bytes).size(), 2u);
  EXPECT_TRUE(audit::verify_bytes(bytes).ok());
}

TEST_F(AuditAppender, RefusesALogThatDoesNotVerifyAndRemovesATornTail) {
  write_file(p("bad.log"), "not an audit log\n");
  std::string error;
  EXPECT_FALSE(audit::Appender::open(p("bad.log"), nullptr, &error));
  EXPECT_NE(error.find("not an audit log"), std::string::npos) << error;
  EXPECT_EQ(read_file(p("bad.log")), "not an audit log\n");

  ASSERT_TRUE(audit::append(p("t.log"), decision_create(1)).ok);
  const std::string good = read_file(p("t.log"));
  write_file(p("t.log"), good + "{\"action\":\"nev");  // a crash mid-append
  std::unique_ptr<audit::Appender> appender = audit::Appender::open(p("t.log"), nullptr, &error);
  ASSERT_TRUE(appender) << error;
  const audit::AppendResult appended = appender->append(decision_create(2));
  ASSERT_TRUE(appended.ok) << appended.error;
  EXPECT_EQ(appended.removed_torn_tail, "{\"action\":\"nev");
  const std::string bytes = read_file(p("t.log"));
  EXPECT_EQ(bytes.substr(0, good.size()), good);
  EXPECT_EQ(lines_of(bytes).size(), 2u);
  EXPECT_TRUE(audit::verify_bytes(bytes).ok());
}

TEST_F(AuditAppender, ContinuesOtherAppendersAndRefusesABrokenOrReplacedFile) {
  std::string error;
  std::unique_ptr<audit::Appender> appender = audit::Appender::open(p("a.log"), nullptr, &error);
  ASSERT_TRUE(appender) << error;
  ASSERT_TRUE(appender->append(decision_create(1)).ok);
  // Another appender writes between two of ours (the lock is held per append only).
  ASSERT_TRUE(audit::append(p("a.log"), decision_create(2)).ok);
  const audit::AppendResult third = appender->append(decision_create(3));
  ASSERT_TRUE(third.ok) << third.error;
  EXPECT_EQ(third.seq, 3u);
  EXPECT_TRUE(audit::verify_bytes(read_file(p("a.log"))).ok());
  // A writer that does not keep the format adds a line: refused, and nothing is written.
  const std::string before = read_file(p("a.log"));
  write_file(p("a.log"), before + "{}\n");
  audit::AppendResult refused = appender->append(decision_create(4));
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("does not verify"), std::string::npos) << refused.error;
  EXPECT_EQ(read_file(p("a.log")), before + "{}\n");
  // An editor's save: a new file renamed over the path.
  write_file(p("edited.log"), before);
  std::filesystem::rename(p("edited.log"), p("a.log"));
  refused = appender->append(decision_create(4));
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("replaced"), std::string::npos) << refused.error;
  EXPECT_EQ(read_file(p("a.log")), before);
}

TEST_F(AuditAppender, SignsCheckpointsThatVerify) {
  verify::PublicKey pub;
  std::string error;
  ASSERT_TRUE(verify::generate_key_files(p("k.key"), p("k.pub"), &pub, &error)) << error;
  verify::SecretKey key;
  ASSERT_TRUE(verify::read_secret_key(p("k.key"), &key, &error)) << error;
  audit::CheckpointSigner signer{&key, 2};
  {
    std::unique_ptr<audit::Appender> appender = audit::Appender::open(p("s.log"), &signer, &error);
    ASSERT_TRUE(appender) << error;
    for (int i = 1; i <= 5; ++i) ASSERT_TRUE(appender->append(decision_create(i)).ok);
  }
  const std::string bytes = read_file(p("s.log"));
  const audit::VerifyReport report = audit::verify_bytes(bytes);
  ASSERT_TRUE(report.ok());
  const std::vector<verify::PublicKey> keys = {pub};
  const audit::Coverage coverage = audit::check_checkpoints(report, keys);
  EXPECT_TRUE(coverage.problems.empty());
  EXPECT_EQ(coverage.valid, 5u);  // one at the end of each append, as append() writes them
  EXPECT_EQ(coverage.uncovered_entries, 0u);
  // Every entry is covered: the last line is a checkpoint.
  EXPECT_EQ(json::parse(lines_of(bytes).back())["kind"], "checkpoint");
}

}  // namespace
}  // namespace replaygate::testing
