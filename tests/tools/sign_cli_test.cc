// Signed tables through the CLI (issue 22, docs/signing.md): key generate, compile --sign-key,
// sign, verify --trusted-key, the pinning rules on every command that loads a table, rollback
// state on decide and its audited reset. The attacks on the envelope itself are in
// tests/verify/signed_table_test.cc.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

const std::string kPolicy = kSourceDir + "/policies/replay_gate.yaml";
const std::string kLetter =
    R"({"message_id":"m1","topic":"payment.capture","error_class":"timeout","attempts":1,)"
    R"("idempotency_key":"k1","already_committed":false})"
    "\n";

class SignCli : public CliFixture {
 protected:
  void SetUp() override {
    ASSERT_EQ(run({"key", "generate", "--secret", p("a.key"), "--public", p("a.pub")}).exit_code,
              0);
    ASSERT_EQ(run({"key", "generate", "--secret", p("b.key"), "--public", p("b.pub")}).exit_code,
              0);
    write_file(dir_ / "l.jsonl", kLetter);
  }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }
  // The policy at `revision` (the shipped one with its revision line replaced), compiled.
  std::string compile_revision(int revision, const std::string& name,
                               const std::vector<std::string>& extra = {}) {
    std::string text = read_file(kPolicy);
    const size_t at = text.find("revision: 1\n");
    EXPECT_NE(at, std::string::npos);
    text.replace(at, 12, "revision: " + std::to_string(revision) + "\n");
    write_file(dir_ / ("r" + std::to_string(revision) + ".yaml"), text);
    std::vector<std::string> args = {"compile", p("r" + std::to_string(revision) + ".yaml"), "-o",
                                     p(name)};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliResult r = run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return p(name);
  }
};

TEST_F(SignCli, KeyGeneratePrintsTheKeyIdAndNeverOverwrites) {
  const CliResult r = run({"key", "generate", "--secret", p("c.key"), "--public", p("c.pub")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("key-id ", 0), 0u);
  EXPECT_EQ(r.out.size(), 7u + 32u + 1u) << r.out;
  EXPECT_EQ(read_file(dir_ / "c.key").find(r.out.substr(7, 32)) != std::string::npos, true);
  EXPECT_EQ(r.out.find("ed25519"), std::string::npos) << "no key material on stdout";
  struct stat st {};
  ASSERT_EQ(::stat(p("c.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string before = read_file(dir_ / "c.key");
  const CliResult again = run({"key", "generate", "--secret", p("c.key"), "--public", p("d.pub")});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("never overwritten"), std::string::npos) << again.err;
  EXPECT_EQ(read_file(dir_ / "c.key"), before);
  EXPECT_EQ(run({"key", "generate", "--secret", p("x"), "--public", p("x")}).exit_code, 2);
}

TEST_F(SignCli, ASignedTableVerifiesOnlyWithItsKey) {
  const std::string table = compile_revision(1, "g.rgt", {"--sign-key", p("a.key")});
  CliResult r = run({"verify", table, "--trusted-key", p("a.pub")});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verified"), std::string::npos) << r.out;
  r = run({"verify", table, "--trusted-key", p("b.pub")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("which is not pinned"), std::string::npos) << r.out;
  // Rotation: both keys pinned.
  r = run({"verify", table, "--trusted-key", p("b.pub"), "--trusted-key", p("a.pub")});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // Without a key the signature is reported as unchecked, never as verified.
  r = run({"verify", table, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("\"signed\": true, \"signature_checked\": false"), std::string::npos)
      << r.out;
  r = run({"verify", table, "--require-signed"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no key is pinned"), std::string::npos) << r.out;
}

TEST_F(SignCli, WithAKeyPinnedEveryLoaderRefusesAnUnsignedOrForeignTable) {
  const std::string unsigned_table = compile_revision(1, "u.rgt");
  const std::string foreign = compile_revision(1, "f.rgt", {"--sign-key", p("b.key")});
  const std::string good = compile_revision(1, "g.rgt", {"--sign-key", p("a.key")});
  const std::string key = p("a.pub");
  const std::vector<std::vector<std::string>> commands = {
      {"decide", "--table", "TABLE", p("l.jsonl")},
      {"dump", "TABLE"},
      {"explain", "--table", "TABLE", p("l.jsonl")},
      {"graph", "--table", "TABLE"},
      {"diff", "TABLE", good},
  };
  for (std::vector<std::string> args : commands) {
    for (const std::string& table : {unsigned_table, foreign}) {
      std::vector<std::string> with = args;
      for (std::string& a : with) {
        if (a == "TABLE") a = table;
      }
      with.insert(with.end(), {"--trusted-key", key});
      const CliResult r = run(with);
      EXPECT_EQ(r.exit_code, 2) << args[0] << " " << table << ": " << r.out << r.err;
      EXPECT_NE(r.err.find("signature: "), std::string::npos) << args[0] << ": " << r.err;
      EXPECT_EQ(r.out.find("replay_once"), std::string::npos) << args[0];
    }
    std::vector<std::string> with = args;
    for (std::string& a : with) {
      if (a == "TABLE") a = good;
    }
    with.insert(with.end(), {"--trusted-key", key});
    const CliResult r = run(with);
    EXPECT_TRUE(r.exit_code == 0 || (args[0] == "diff" && r.exit_code == 0))
        << args[0] << ": " << r.exit_code << " " << r.err;
  }
  // A signed table still loads where no key is pinned (its signature unchecked).
  EXPECT_EQ(run({"dump", good}).exit_code, 0);
}

// A table read from a pipe is verified the same way, and an endless pipe is refused at once.
TEST_F(SignCli, APipedTableIsVerifiedAndAnEndlessPipeRefusedAtOnce) {
  const std::string good = compile_revision(1, "g.rgt", {"--sign-key", p("a.key")});
  CliRun how;
  how.args = {"dump", "/dev/stdin", "--trusted-key", p("a.pub")};
  how.stdin_command = "cat " + shell_quote(good);
  CliResult r = run_cli(dir_, how);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("replaygate table"), std::string::npos);
  how.stdin_command = "cat /dev/zero";
  how.timeout_seconds = 20;
  r = run_cli(dir_, how);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a signed table"), std::string::npos) << r.err;
  how.stdin_command = "cat " + shell_quote(good) + " /dev/zero";
  r = run_cli(dir_, how);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("trailing bytes: the signed envelope says"), std::string::npos) << r.err;
}

TEST_F(SignCli, APolicyCompiledInMemoryCannotStandInForASignedTable) {
  const CliResult r =
      run({"decide", "--policy", kPolicy, "--trusted-key", p("a.pub"), p("l.jsonl")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--table"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(SignCli, SignReplacesTheTableAtomicallyAndRefusesWhatIsNotATable) {
  const std::string table = compile_revision(1, "t.rgt");
  const std::string before = read_file(table);
  CliResult r = run({"sign", table, "--sign-key", p("a.key")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(table).size(), before.size() + 128);
  EXPECT_EQ(run({"verify", table, "--trusted-key", p("a.pub")}).exit_code, 0);
  // Re-signed by b: a's pin refuses it, b's accepts.
  r = run({"sign", table, "--sign-key", p("b.key"), "-o", p("t2.rgt")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(run({"verify", p("t2.rgt"), "--trusted-key", p("a.pub")}).exit_code, 1);
  EXPECT_EQ(run({"verify", p("t2.rgt"), "--trusted-key", p("b.pub")}).exit_code, 0);
  write_file(dir_ / "junk.rgt", "not a table at all");
  r = run({"sign", p("junk.rgt"), "--sign-key", p("a.key")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a loadable table"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(dir_ / "junk.rgt"), "not a table at all");
  // A secret key readable by others is refused, and nothing is written.
  ASSERT_EQ(::chmod(p("a.key").c_str(), 0644), 0);
  const std::string signed_before = read_file(table);
  r = run({"sign", table, "--sign-key", p("a.key")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(table), signed_before);
}

TEST_F(SignCli, ExpiryIsCheckedAndBadTimesAreUsageErrors) {
  const std::string past = compile_revision(
      1, "old.rgt", {"--sign-key", p("a.key"), "--expires", "2020-01-01T00:00:00Z"});
  CliResult r = run({"verify", past, "--trusted-key", p("a.pub")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("expired at 2020-01-01T00:00:00Z"), std::string::npos) << r.out;
  r = run({"decide", "--table", past, "--trusted-key", p("a.pub"), p("l.jsonl")});
  EXPECT_EQ(r.exit_code, 2);
  for (const char* bad :
       {"tomorrow", "2027-02-31T00:00:00Z", "2027-01-01", "1969-12-31T23:59:59Z"}) {
    r = run({"compile", kPolicy, "-o", p("x.rgt"), "--sign-key", p("a.key"), "--expires", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--expires takes a UTC time"), std::string::npos) << bad << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "x.rgt"));
  r = run({"compile", kPolicy, "-o", p("x.rgt"), "--expires", "2030-01-01T00:00:00Z"});
  EXPECT_EQ(r.exit_code, 2) << "--expires without --sign-key";
}

TEST_F(SignCli, DecideRefusesARollbackUntilAnAuditedReset) {
  const std::string r1 = compile_revision(1, "r1.rgt", {"--sign-key", p("a.key")});
  const std::string r2 = compile_revision(2, "r2.rgt", {"--sign-key", p("a.key")});
  const std::vector<std::string> trust = {"--trusted-key", p("a.pub"), "--trust-state", p("ts")};
  const auto decide = [&](const std::string& table) {
    std::vector<std::string> args = {"decide", "--table", table, p("l.jsonl")};
    args.insert(args.end(), trust.begin(), trust.end());
    return run(args);
  };
  ASSERT_EQ(decide(r2).exit_code, 0);
  CliResult r = decide(r1);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("rollback: policy dlq-replay-gate revision 1 is older than revision 2"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  // A read-only tool never refuses the older table as a rollback.
  EXPECT_EQ(run({"dump", r1, "--trusted-key", p("a.pub")}).exit_code, 0);
  r = run({"trust", "show", "--trust-state", p("ts"), "--policy", "dlq-replay-gate"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("revision 2 digest "), std::string::npos) << r.out;
  // The reset is audited before it happens; a log that cannot be appended means no reset.
  write_file(dir_ / "broken.log", "not an audit log\n");
  r = run({"trust", "reset", "--trust-state", p("ts"), "--policy", "dlq-replay-gate", "--operator",
           "ana", "--audit", p("broken.log"), "--reason", "CHG-1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(decide(r1).exit_code, 2) << "still refused";
  r = run({"trust", "reset", "--trust-state", p("ts"), "--policy", "dlq-replay-gate", "--operator",
           "ana", "--audit", p("a.log"), "--reason", "CHG-1 rollback approved"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run({"audit", "verify", p("a.log")});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(read_file(dir_ / "a.log").find("\"act\":\"trust_reset\""), std::string::npos);
  EXPECT_NE(read_file(dir_ / "a.log").find("revision 2 digest"), std::string::npos);
  EXPECT_EQ(decide(r1).exit_code, 0);
  // Nothing left to reset.
  r = run({"trust", "reset", "--trust-state", p("ts"), "--policy", "other", "--operator", "ana",
           "--audit", p("a.log"), "--reason", "x"});
  EXPECT_EQ(r.exit_code, 1);
}

}  // namespace
}  // namespace replaygate::testing
