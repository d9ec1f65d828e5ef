// `replaygate verify TABLE [--policy POLICY]` and compile's self-check: a valid table, an
// equivalent one (text and JSON, with the real checksum, digest and region count), tables that
// differ from the policy in the catalog, a rule id and in regions only (with the counterexample),
// a forged table, every exit-2 case, and compile refusing a lowering broken through its test seam.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "compiler/compile.h"
#include "runtime/table.h"
#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using replaygate::LoadStatus;
using replaygate::Table;

const std::string kBase = kSourceDir + "/tests/data/diff/base.yaml";

class Verify : public CliFixture {
 protected:
  // Compiles kBase to DIR/base.rgt and returns its path.
  std::string compiled_base() {
    const std::string table = (dir_ / "base.rgt").string();
    const CliResult r = run({"compile", kBase, "-o", table});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return table;
  }
  // kBase with `from` replaced by `to` (once), written to DIR/NAME.
  std::string edited_base(const std::string& name, const std::string& from, const std::string& to) {
    std::string text = read_file(kBase);
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    const std::string path = (dir_ / name).string();
    write_file(path, text);
    return path;
  }
  static std::string checksum(const std::string& table) {
    LoadStatus status;
    const std::unique_ptr<Table> t = Table::load_file(table, &status);
    EXPECT_NE(t, nullptr) << status.message;
    return t ? t->checksum_hex() : "";
  }
  static std::string digest(const std::string& policy) {
    const replaygate::LoadedPolicy loaded = replaygate::load_policy_file(policy);
    EXPECT_TRUE(loaded.policy.has_value());
    return loaded.policy ? loaded.policy->source_digest : "";
  }
};

TEST_F(Verify, ValidTableReportsItsIdentity) {
  const std::string table = compiled_base();
  const CliResult r = run({"verify", table});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "valid: " + table + " (policy dlq-replay-gate revision 1, table checksum " +
                       checksum(table) + ", unsigned)\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(Verify, EquivalentToItsPolicyInTextAndJson) {
  const std::string table = compiled_base();
  const std::string identity = "policy digest " + digest(kBase) +
                               ", policy dlq-replay-gate revision 1, table checksum " +
                               checksum(table) + ", unsigned, 18 regions compared";
  CliResult r = run({"verify", table, "--policy", kBase});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "equivalent: " + table + " decides exactly as " + kBase + " (" + identity + ")\n");
  r = run({"verify", table, "--policy", kBase, "--format", "json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"table\": \"" + table + "\", \"policy\": \"" + kBase +
                "\", \"valid\": true, \"equivalent\": true, \"policy_id\": "
                "\"dlq-replay-gate\", \"revision\": 1, \"table_checksum\": \"" +
                checksum(table) +
                "\", \"signed\": false, \"signature_checked\": false, \"policy_digest\": \"" +
                digest(kBase) + "\", \"regions\": 18}\n");
}

// Same catalog, different conditions: only the region diff can tell, and it gives a letter.
TEST_F(Verify, RegionDifferenceGivesACounterexample) {
  const std::string table = compiled_base();
  const std::string four = edited_base("four.yaml", "max_attempts: 3", "max_attempts: 4");
  const std::string letter =
      "{\"topic\": \"inventory.reserve\", \"error_class\": \"lock_timeout\", \"attempts\": 3, "
      "\"idempotency_key\": \"other\", \"already_committed\": false, \"replays\": 0}";
  CliResult r = run({"verify", table, "--policy", four});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("not equivalent: " + table + " does not decide as " + four +
                       ": 4 region(s) decided differently, first "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("the policy decides \"replay_once\" (rule "
                       "\"known_failures:inventory.reserve/lock_timeout\"), the table \"hold\" "
                       "(rule \"attempts_exhausted\")"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", 33 regions compared)\n  e.g. " + letter + "\n"), std::string::npos)
      << r.out;
  r = run({"verify", table, "--policy", four, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("\"valid\": true, \"equivalent\": false,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"counterexample\": " + letter + "}\n"), std::string::npos) << r.out;
}

TEST_F(Verify, CatalogAndRuleIdDifferences) {
  const std::string table = compiled_base();
  CliResult r =
      run({"verify", table, "--policy", kSourceDir + "/tests/data/diff/more_dangerous.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(": rule catalog: the policy has 14 guards and rows, the table 13\n"),
            std::string::npos)
      << r.out;
  r = run({"verify", table, "--policy", kSourceDir + "/tests/data/diff/renamed.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(": rule 2 (\"attempt_budget_spent\") id: the policy says "
                       "\"attempt_budget_spent\", the table \"attempts_exhausted\"\n"),
            std::string::npos)
      << r.out;
  // A reason only: same decisions, yet not what was reviewed.
  const std::string reason =
      edited_base("reason.yaml", "reason: attempt budget exhausted", "reason: attempts used up");
  r = run({"verify", table, "--policy", reason});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(": rule 2 (\"attempts_exhausted\") reason: the policy says \"attempts "
                       "used up\", the table \"attempt budget exhausted\"\n"),
            std::string::npos)
      << r.out;
  // The revision.
  const std::string two = edited_base("two.yaml", "revision: 1", "revision: 2");
  r = run({"verify", table, "--policy", two, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("\"reason\": \"revision: the policy says 2, the table 1\", "
                       "\"counterexample\": null}\n"),
            std::string::npos)
      << r.out;
}

TEST_F(Verify, ForgedTableIsInvalid) {
  const std::string table = compiled_base();
  std::string bytes = read_file(table);
  bytes[bytes.size() - 1] ^= 1;
  write_file(table, bytes);
  CliResult r = run({"verify", table});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("invalid: " + table + ": bad_checksum: bad checksum: header says ", 0), 0u)
      << r.out;
  r = run({"verify", table, "--policy", kBase, "--format", "json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("{\"table\": \"" + table + "\", \"policy\": \"" + kBase +
                            "\", \"valid\": false, \"equivalent\": false, \"reason\": "
                            "\"bad_checksum: bad checksum: header says ",
                        0),
            0u)
      << r.out;
  write_file(table, "RGTABLE");
  r = run({"verify", table});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("invalid: " + table + ": truncated: ", 0), 0u) << r.out;
}

TEST_F(Verify, UsageAndIoErrorsAreExitTwo) {
  const std::string table = compiled_base();
  CliResult r = run({"verify", (dir_ / "missing.rgt").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("cannot load table " + (dir_ / "missing.rgt").string() + ": io: "),
            std::string::npos)
      << r.err;
  r = run({"verify", table, "--format", "yaml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate: error: --format must be text or json, not 'yaml'\n");
  r = run({"verify"});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"verify", table, "--policy", (dir_ / "missing.yaml").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  const std::string broken = edited_base("broken.yaml", "default: hold", "default: nothing");
  r = run({"verify", table, "--policy", broken});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("replaygate: error: " + broken +
                       " has errors; a table cannot be verified against it\n"),
            std::string::npos)
      << r.err;
}

// The seam breaks the lowering (the last rule's verb or reason); compile's self-check refuses
// the table with exit 2 and leaves an existing table as it was.
TEST_F(Verify, CompileRefusesABrokenLowering) {
  const std::string table = compiled_base();
  const std::string before = read_file(table);
  for (const char* kind : {"verb", "reason"}) {
    ::setenv("REPLAYGATE_TEST_BREAK_LOWERING", kind, 1);
    const CliResult r = run({"compile", kBase, "-o", table});
    ::unsetenv("REPLAYGATE_TEST_BREAK_LOWERING");
    EXPECT_EQ(r.exit_code, 2) << kind;
    EXPECT_NE(r.err.find("replaygate: internal error: the compiled table does not decide as " +
                         kBase + ": rule 12 ("),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(kind), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("not written (please report this)"), std::string::npos) << r.err;
    EXPECT_EQ(read_file(table), before) << kind;
  }
  // A new output path is not created either.
  ::setenv("REPLAYGATE_TEST_BREAK_LOWERING", "verb", 1);
  const CliResult r = run({"compile", kBase, "-o", (dir_ / "new.rgt").string()});
  ::unsetenv("REPLAYGATE_TEST_BREAK_LOWERING");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "new.rgt"));
  // Without the seam the same command writes the table.
  EXPECT_EQ(run({"compile", kBase, "-o", (dir_ / "new.rgt").string()}).exit_code, 0);
  EXPECT_EQ(read_file(dir_ / "new.rgt"), before);
}

}  // namespace
