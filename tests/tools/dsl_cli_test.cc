// `replaygate fmt` and `replaygate convert` end to end (the binary, exit codes, files on disk),
// plus `compile`/`test` on the shipped .policy form.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;

class DslCliTest : public CliFixture {};

constexpr const char* kMessy =
    "policy  p revision 1 # head\n"
    "input x:\tbool\n"
    "verb h effect none; verb go effect create\n"
    "default h\n"
    "rule r: when x -> go \"x\"\n";
constexpr const char* kCanonical =
    "policy p revision 1 # head\n"
    "\n"
    "input x: bool\n"
    "\n"
    "verb h effect none\n"
    "verb go effect create\n"
    "\n"
    "default h\n"
    "\n"
    "rule r: when x -> go \"x\"\n";

TEST_F(DslCliTest, FmtPrintsChecksAndWrites) {
  const fs::path file = dir_ / "p.policy";
  write_file(file, kMessy);
  CliResult r = run({"fmt", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, kCanonical);
  EXPECT_EQ(read_file(file), kMessy);

  r = run({"fmt", "--check", file.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, file.string() + "\n");

  r = run({"fmt", "--write", file.string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "formatted " + file.string() + "\n");
  EXPECT_EQ(read_file(file), kCanonical);
  // No temporary file is left behind.
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    entries += entry.path().filename().string().find("p.policy") != std::string::npos;
  }
  EXPECT_EQ(entries, 1u);

  r = run({"fmt", "--check", file.string()});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
}

TEST_F(DslCliTest, FmtErrors) {
  const fs::path bad = dir_ / "bad.policy";
  write_file(bad, "policy p revision 1\ninput x bool\n");
  CliResult r = run({"fmt", "--write", bad.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("error[RG014]: expected ':' after the name"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(bad), "policy p revision 1\ninput x bool\n");

  r = run({"fmt", kSourceDir + "/policies/replay_gate.yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fmt formats .policy files only; YAML comments cannot be kept"),
            std::string::npos)
      << r.err;

  r = run({"fmt", "--write", "--check", bad.string()});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"fmt", (dir_ / "missing.policy").string()});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(DslCliTest, ShippedPolicyIsCanonicalAndPassesItsCases) {
  CliResult r = run({"fmt", "--check", kSourceDir + "/policies/replay_gate.policy"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run({"test", kSourceDir + "/policies/replay_gate.policy"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(" passed, 0 failed"), std::string::npos) << r.out;
}

TEST_F(DslCliTest, ConvertBothWays) {
  const fs::path policy = dir_ / "gate.policy";
  const fs::path yaml = dir_ / "gate.yaml";
  CliResult r = run({"convert", kSourceDir + "/policies/replay_gate.yaml", "-o", policy.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The shipped .policy is the converted YAML plus its header comments.
  std::string shipped = read_file(kSourceDir + "/policies/replay_gate.policy");
  shipped = shipped.substr(shipped.find("policy dlq-replay-gate"));
  EXPECT_EQ(read_file(policy), shipped);

  r = run({"convert", policy.string(), "-o", yaml.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run({"convert", yaml.string(), "--to", "policy"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, shipped);

  r = run({"compile", policy.string(), "-o", (dir_ / "a.rgt").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  r = run({"convert", policy.string(), "--to", "xml"});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"convert", policy.string(), "-o", (dir_ / "x.yaml").string(), "--to", "policy"});
  EXPECT_EQ(r.exit_code, 2);
  write_file(dir_ / "bad.policy", "policy p revision 1\ninput x: bool\n");
  r = run({"convert", (dir_ / "bad.policy").string(), "-o", (dir_ / "bad.yaml").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(fs::exists(dir_ / "bad.yaml"));
}

}  // namespace
