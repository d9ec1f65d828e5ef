// End-to-end and unit tests of the review and CI commands (issue 3, part B): `test` coverage,
// `lint` formats (text, json, sarif, github), `explain`, `graph`, `matrix`.
//
// Golden files live in tests/data/{test,lint,explain,graph}/; the commands run with the source
// tree as the working directory so paths in the output are stable (tests/data/...). To regenerate
// goldens on purpose, run with RG_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/compile.h"
#include "compiler/interpret.h"
#include "tests/support/cli_runner.h"
#include "tools/cli/coverage.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;

// The commands run in the source tree, so paths in the output are relative (tests/data/...).
class ReviewCliTest : public CliFixture {
 protected:
  ReviewCliTest() : CliFixture(kSourceDir) {}
};

// ---- test: coverage ----

TEST_F(ReviewCliTest, TestCoverageOnTheSmallFixture) {
  const CliResult r = run({"test", "tests/data/test/small.yaml", "--coverage"});
  EXPECT_EQ(r.exit_code, 1);  // one case fails on purpose
  EXPECT_EQ(r.err, "");
  expect_golden(r.out, "test/small.expected.txt");
}

TEST_F(ReviewCliTest, TestCoverageJsonDocument) {
  const CliResult r =
      run({"test", "tests/data/test/small.yaml", "--format", "json", "--min-coverage", "50"});
  EXPECT_EQ(r.exit_code, 1);
  expect_golden(r.out, "test/small.expected.json");
}

TEST_F(ReviewCliTest, TestMinCoverageThreshold) {
  // Only the passing cases, so the exit code depends on coverage alone. Without the wrong case
  // (the one reaching pairs:mail/*) they cover no_key and pairs:pay/timeout: 2 of 5 = 40.0%.
  std::string cases = read_file(kSourceDir + "/tests/data/test/small.test.yaml");
  const size_t from = cases.find("  - name: mail is resent");
  const size_t to = cases.find("  - name: invalid attempts holds");
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  cases.erase(from, to - from);
  cases.replace(cases.find("policy: small.yaml"), 18,
                "policy: " + kSourceDir + "/tests/data/test/small.yaml");
  write_file(dir_ / "pass.yaml", cases);
  const std::string policy = "tests/data/test/small.yaml";
  const std::string file = (dir_ / "pass.yaml").string();

  CliResult r = run({"test", policy, file, "--min-coverage", "60"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("3 passed, 0 failed\ncoverage: rules 2/5 (40.0%), invariants 0/0\n"),
            std::string::npos)
      << r.out;
  r = run({"test", policy, file, "--min-coverage", "40"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  r = run({"test", policy, file, "--min-coverage", "40.1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "replaygate test: rule coverage 2/5 (40.0%) is below --min-coverage 40.1%\n");
  r = run({"test", policy, file, "--min-coverage", "101"});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"test", policy, file, "--format", "xml"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate test: error: --format must be text or json, not 'xml'\n");
}

// 3 of 16 rules is 18.75%: one decimal would print "18.8% is below --min-coverage 18.8%". The
// message gives the fraction and as many decimals as tell the two numbers apart.
TEST_F(ReviewCliTest, TestMinCoverageFailurePrintsNumbersThatDiffer) {
  std::string policy =
      "policy: sixteen\nrevision: 1\ninputs:\n  topic: {type: string}\n"
      "verbs:\n  hold: {effect: none}\n  never: {effect: none}\ndefault: hold\n"
      "default_reason: no rule matches\nrules:\n  - table: topics\n    keys: [topic]\n"
      "    rows:\n";
  for (int i = 0; i < 16; ++i) {
    policy += "      - {keys: [t" + std::to_string(i) + "], verb: never, reason: r}\n";
  }
  std::string cases = "cases:\n";
  for (int i = 0; i < 3; ++i) {
    cases += "  - name: c" + std::to_string(i) + "\n    input: {topic: t" + std::to_string(i) +
             "}\n    expect: never\n";
  }
  write_file(dir_ / "sixteen.yaml", policy);
  write_file(dir_ / "sixteen.test.yaml", cases);
  const std::string path = (dir_ / "sixteen.yaml").string();
  CliResult r = run({"test", path, "--min-coverage", "18.8"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("coverage: rules 3/16 (18.8%)"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "replaygate test: rule coverage 3/16 (18.75%) is below --min-coverage 18.8%\n");
  r = run({"test", path, "--min-coverage", "18.751"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "replaygate test: rule coverage 3/16 (18.75%) is below --min-coverage 18.751%\n");
  r = run({"test", path, "--min-coverage", "18.75"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(ReviewCliTest, TestCoverageOfTheShippedCasesIsComplete) {
  const CliResult r =
      run({"test", "policies/replay_gate.yaml", "--coverage", "--min-coverage", "100"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("41 passed, 0 failed\ncoverage: rules 13/13 (100.0%), invariants "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("uncovered: policies/replay_gate.yaml"), std::string::npos) << r.out;
}

// Invariant coverage on the IR: an invariant is covered when a valid case input satisfies its
// premise. (The YAML front-end fills Policy::invariants from issue 3's analysis part; until then
// the premises are built here.)
TEST(Coverage, InvariantsCoveredByPremise) {
  using replaygate::LetterValue;
  replaygate::LoadedPolicy loaded =
      replaygate::load_policy_file(kSourceDir + "/tests/data/test/small.yaml");
  ASSERT_TRUE(loaded.policy.has_value());
  replaygate::ir::CheckedPolicy checked = *loaded.policy;
  replaygate::ir::Policy& policy = checked.policy;
  // fields: topic 0, error_class 1, attempts 2, key 3; verbs: hold 0, never 1, replay_once 2.
  replaygate::ir::Invariant no_key;
  no_key.id = "no_key_holds";
  no_key.conditions = {{3, replaygate::ir::Op::kAbsent, {}, ""}};
  no_key.op = replaygate::ir::InvariantOp::kVerbIn;
  no_key.verbs = {0};
  replaygate::ir::Invariant exhausted = no_key;
  exhausted.id = "exhausted_holds";
  exhausted.conditions = {
      {2, replaygate::ir::Op::kGe, {replaygate::ir::Value::Int(3)}, "max_attempts"}};
  replaygate::ir::Invariant always;
  always.id = "never_creates_on_mail";
  always.op = replaygate::ir::InvariantOp::kEffectAtMost;
  always.effect = replaygate::ir::Effect::kCreate;
  policy.invariants = {no_key, exhausted, always};
  checked.source.invariants = {{40, 5, 0, 0}, {44, 5, 0, 0}, {48, 5, 0, 0}};

  replaygate::cli::Coverage cov = replaygate::cli::empty_coverage(policy);
  EXPECT_EQ(cov.guards_total, 2u);
  EXPECT_EQ(cov.rows_total, 3u);
  const std::vector<replaygate::Letter> letters = {
      // no key: decided by guard no_key, satisfies no_key_holds and the empty premise
      {LetterValue::String("pay"), LetterValue::String("timeout"), LetterValue::Int(1),
       LetterValue::Missing()},
      // attempts 7 but invalid (negative would be; here topic missing): covers nothing
      {LetterValue::Missing(), LetterValue::String("timeout"), LetterValue::Int(7),
       LetterValue::String("k")},
      // a row: pairs:pay/declined
      {LetterValue::String("pay"), LetterValue::String("declined"), LetterValue::Int(0),
       LetterValue::String("k")},
  };
  for (const auto& letter : letters) {
    replaygate::cli::record_case(policy, letter, replaygate::interpret(policy, letter), &cov);
  }
  EXPECT_EQ(cov.guards_covered, 1u);
  EXPECT_EQ(cov.rows_covered, 1u);
  EXPECT_EQ(cov.rules_covered(), 2u);
  EXPECT_DOUBLE_EQ(cov.percent(), 40.0);
  EXPECT_EQ(cov.invariants, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(cov.invariants_covered(), 2u);
  const auto uncovered = replaygate::cli::uncovered_items(checked, cov);
  ASSERT_EQ(uncovered.size(), 4u);
  EXPECT_EQ(uncovered[0].kind, "guard");
  EXPECT_EQ(uncovered[0].id, "exhausted");
  EXPECT_EQ(uncovered[0].line, 20u);
  EXPECT_EQ(uncovered[1].id, "pairs:pay/timeout");
  EXPECT_EQ(uncovered[1].line, 27u);
  EXPECT_EQ(uncovered[2].id, "pairs:mail/*");
  EXPECT_EQ(uncovered[3].kind, "invariant");
  EXPECT_EQ(uncovered[3].id, "exhausted_holds");
  EXPECT_EQ(uncovered[3].line, 44u);
}

// ---- explain ----

TEST_F(ReviewCliTest, ExplainGoldenSameTextForPolicyAndTable) {
  const std::string table = (dir_ / "gate.rgt").string();
  ASSERT_EQ(run({"compile", "policies/replay_gate.yaml", "-o", table}).exit_code, 0);
  for (const char* name : {"replay", "exhausted", "unknown_pair", "invalid", "below_min"}) {
    SCOPED_TRACE(name);
    const std::string letter = std::string("tests/data/explain/") + name + ".json";
    const CliResult by_policy = run({"explain", "--policy", "policies/replay_gate.yaml", letter});
    EXPECT_EQ(by_policy.exit_code, 0) << by_policy.err;
    EXPECT_EQ(by_policy.err, "");
    expect_golden(by_policy.out, std::string("explain/") + name + ".expected.txt");
    // The table walk (runtime/trace.h) prints the same, but for the source it names.
    const CliResult by_table =
        run({"explain", "--table", table}, read_file(kSourceDir + "/" + letter));
    EXPECT_EQ(by_table.exit_code, 0) << by_table.err;
    std::string expected = by_policy.out;
    const std::string from = "(policies/replay_gate.yaml)";
    ASSERT_NE(expected.find(from), std::string::npos);
    expected.replace(expected.find(from), from.size(), "(" + table + ")");
    EXPECT_EQ(by_table.out, expected);
  }
}

// A derived input (generation_recovery's `stale`) is computed in both walks, as decide() does:
// a stale letter is explained (not "explain and decide disagree"), and a letter's own value for
// the derived input is ignored. The shipped policy takes the revisions' record side from the
// record only (`source: record`, never from a letter), so these letters are explained with a
// copy whose record-only inputs letters may set (tests/support/cli_runner.h); the goldens name
// it letter_state.yaml.
TEST_F(ReviewCliTest, ExplainComputesDerivedInputsForPolicyAndTable) {
  const std::string policy = letter_state_recovery_policy(dir_);
  const std::string table = (dir_ / "recovery.rgt").string();
  ASSERT_EQ(run({"compile", policy, "-o", table}).exit_code, 0);
  for (const char* name :
       {"recovery_stale", "recovery_stale_in_letter", "recovery_invalid_stale_in_letter"}) {
    SCOPED_TRACE(name);
    const std::string letter = std::string("tests/data/explain/") + name + ".json";
    const CliResult by_policy = run({"explain", "--policy", policy, letter});
    EXPECT_EQ(by_policy.exit_code, 0) << by_policy.err;
    EXPECT_EQ(by_policy.err, "");
    std::string shown = by_policy.out;
    shown.replace(shown.find(policy), policy.size(), "letter_state.yaml");
    expect_golden(shown, std::string("explain/") + name + ".expected.txt");
    const CliResult by_table =
        run({"explain", "--table", table}, read_file(kSourceDir + "/" + letter));
    EXPECT_EQ(by_table.exit_code, 0) << by_table.err;
    EXPECT_EQ(by_table.err, "");
    std::string expected = by_policy.out;
    const std::string from = "(" + policy + ")";
    ASSERT_NE(expected.find(from), std::string::npos);
    expected.replace(expected.find(from), from.size(), "(" + table + ")");
    EXPECT_EQ(by_table.out, expected);
  }
  // The JSON form: `letter` holds the computed value, `derived` the formula and the letter's own
  // value, which decide() ignores; the same from the table.
  const std::string letter = "tests/data/explain/recovery_stale_in_letter.json";
  for (const std::vector<std::string>& source :
       {std::vector<std::string>{"--policy", policy}, std::vector<std::string>{"--table", table}}) {
    const CliResult r = run({"explain", source[0], source[1], "--format", "json", letter});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("    \"stale\": \"false\",\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("  \"derived\": {\n    \"stale\": {\n      \"formula\": "
                         "\"message_revision < record_revision\",\n      \"computed\": "
                         "\"false\",\n      \"ignored_letter_value\": \"true\"\n    }\n  },\n"),
              std::string::npos)
        << r.out;
  }
}

TEST_F(ReviewCliTest, ExplainJson) {
  const CliResult r = run({"explain", "--policy", "policies/replay_gate.yaml", "--format", "json",
                           "tests/data/explain/replay.json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "explain/replay.expected.json");
}

TEST_F(ReviewCliTest, ExplainMistakes) {
  const std::string letter = "tests/data/explain/replay.json";
  CliResult r = run({"explain", letter});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate explain: error: give exactly one of --policy POLICY.yaml or --table "
            "TABLE.rgt\nRun 'replaygate explain --help' for usage.\n");
  r = run({"explain", "--policy", "policies/replay_gate.yaml", "--format", "xml", letter});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"explain", "--policy", "policies/replay_gate.yaml", "nope.json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot read nope.json"), std::string::npos) << r.err;
  r = run({"explain", "--policy", "policies/replay_gate.yaml"}, "{\"topik\": \"a\"}\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.err,
      "replaygate explain: <stdin>:1:2: unreadable letter: invalid record: unknown key 'topik' "
      "(did you mean 'topic'?)\n");
  EXPECT_EQ(r.out, "");
  r = run({"explain", "--policy", "policies/replay_gate.yaml"}, "[1, 2]\n");
  EXPECT_EQ(r.exit_code, 1);
  r = run({"explain", "--policy", "policies/replay_gate.yaml"}, "");
  EXPECT_EQ(r.exit_code, 1);
  r = run({"explain", "--table", (dir_ / "missing.rgt").string(), letter});
  EXPECT_EQ(r.exit_code, 2);
}

// ---- the pre-commit hook (tools/pre-commit) ----

TEST_F(ReviewCliTest, PreCommitHook) {
  const std::string hook =
      "cd " + shell_quote(kSourceDir) + " && REPLAYGATE=" + shell_quote(kCliBinary);
  const std::string quiet = " >/dev/null 2>&1";
  EXPECT_EQ(run_shell(hook + " tools/pre-commit policies/replay_gate.yaml README.md" + quiet), 0);
  // A case file maps to its policy; small.yaml's cases fail and cover 60% < 100%.
  EXPECT_EQ(run_shell(hook + " RG_POLICY_DIR=tests/data/test tools/pre-commit " +
                      "tests/data/test/small.test.yaml" + quiet),
            1);
  EXPECT_EQ(run_shell(hook + " RG_POLICY_DIR=tests/data/test tools/pre-commit --lint-only " +
                      "tests/data/test/small.test.yaml" + quiet),
            0);
  EXPECT_EQ(run_shell(hook + " RG_POLICY_DIR=tests/data/lint tools/pre-commit --lint-only " +
                      "tests/data/lint/warnings.yaml" + quiet),
            1);
  EXPECT_EQ(run_shell("cd " + shell_quote(kSourceDir) +
                      " && REPLAYGATE=/nonexistent/replaygate tools/pre-commit "
                      "policies/replay_gate.yaml" +
                      quiet),
            2);
}

// ---- graph ----

TEST_F(ReviewCliTest, GraphDotGoldenSameForPolicyAndTable) {
  const CliResult by_policy = run({"graph", "--policy", "policies/replay_gate.yaml"});
  EXPECT_EQ(by_policy.exit_code, 0) << by_policy.err;
  expect_golden(by_policy.out, "graph/replay_gate.expected.dot");
  const std::string table = (dir_ / "gate.rgt").string();
  ASSERT_EQ(run({"compile", "policies/replay_gate.yaml", "-o", table}).exit_code, 0);
  const CliResult by_table = run({"graph", "--table", table});
  EXPECT_EQ(by_table.exit_code, 0) << by_table.err;
  EXPECT_EQ(by_table.out, by_policy.out);
  const std::string file = (dir_ / "g.dot").string();
  EXPECT_EQ(run({"graph", "--policy", "policies/replay_gate.yaml", "-o", file}).exit_code, 0);
  EXPECT_EQ(read_file(file), by_policy.out);
}

TEST_F(ReviewCliTest, GraphMistakesAndSvg) {
  CliResult r = run({"graph"});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"graph", "--policy", "policies/replay_gate.yaml", "--format", "png"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "replaygate graph: error: --format must be dot or svg, not 'png'\n");
  r = run({"graph", "--policy", "tests/data/lint/policy.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  r = run({"graph", "--policy", "policies/replay_gate.yaml", "--format", "svg"});
  if (run_shell("command -v dot >/dev/null 2>&1") == 0) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("<svg"), std::string::npos);
  } else {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "replaygate graph: --format svg needs Graphviz's dot on PATH (apt-get install "
              "graphviz), or use --format dot\n");
    EXPECT_EQ(r.out, "");
  }
}

// ---- matrix ----

TEST_F(ReviewCliTest, MatrixGoldens) {
  CliResult r = run({"matrix", "tests/data/graph/matrix.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "graph/matrix.expected.html");
  // The guard on a key pre-empts the whole "legacy" row; hover text is escaped.
  EXPECT_NE(r.out.find("<td class=\"pre\" style=\"background:#ea9999\" title=\"pre-empted by "
                       "guard legacy_topic; the table would give row pairs:legacy/timeout/*\">"
                       "never (guard)</td>"),
            std::string::npos);
  EXPECT_NE(r.out.find("timeouts are transient &lt;everywhere&gt; (wildcard row)"),
            std::string::npos);
  EXPECT_NE(r.out.find("<li>pairs:pay/timeout/eu &rarr; hold</li>"), std::string::npos);
  r = run({"matrix", "tests/data/graph/matrix.yaml", "--format", "svg"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "graph/matrix.expected.svg");
  r = run({"matrix", "policies/replay_gate.yaml", "--table-id", "known_failures"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  expect_golden(r.out, "graph/replay_gate.expected.html");
}

TEST_F(ReviewCliTest, MatrixMistakes) {
  CliResult r = run({"matrix", "policies/replay_gate.yaml", "--table-id", "known_failure"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate matrix: error: the policy has no table 'known_failure'; did you mean "
            "'known_failures'?\n");
  r = run({"matrix", "tests/data/test/small.yaml", "--format", "pdf"});
  EXPECT_EQ(r.exit_code, 2);
  r = run({"matrix", "tests/data/lint/policy.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  const std::string out = (dir_ / "m.html").string();
  r = run({"matrix", "tests/data/test/small.yaml", "-o", out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(out).rfind("<!DOCTYPE html>", 0), 0u);
}

// ---- lint formats ----

struct LintCase {
  const char* policy;
  const char* format;
  const char* golden;
  int exit_code;
};

TEST_F(ReviewCliTest, LintGoldenForEveryFormat) {
  const LintCase cases[] = {
      {"policy", "text", "lint/policy.expected.txt", 1},
      {"policy", "json", "lint/policy.expected.json", 1},
      {"policy", "sarif", "lint/policy.expected.sarif", 1},
      {"policy", "github", "lint/policy.expected.github", 1},
      {"warnings", "text", "lint/warnings.expected.txt", 0},
      {"warnings", "json", "lint/warnings.expected.json", 0},
      {"warnings", "sarif", "lint/warnings.expected.sarif", 0},
      {"warnings", "github", "lint/warnings.expected.github", 0},
  };
  for (const LintCase& c : cases) {
    SCOPED_TRACE(std::string(c.policy) + " " + c.format);
    const std::string path = std::string("tests/data/lint/") + c.policy + ".yaml";
    const CliResult r = run({"lint", path, "--format", c.format});
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    // Text goes to stderr (with the summary line); every other format to stdout.
    expect_golden(std::string(c.format) == "text" ? r.err : r.out, c.golden);
  }
}

TEST_F(ReviewCliTest, LintWerrorFailsOnWarningsInEveryFormat) {
  for (const char* format : {"text", "json", "sarif", "github"}) {
    SCOPED_TRACE(format);
    const CliResult r =
        run({"lint", "tests/data/lint/warnings.yaml", "--format", format, "--werror"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("tests/data/lint/warnings.yaml: ok with 2 warnings (failing: --werror)"),
              std::string::npos)
        << r.err;
  }
  const CliResult r = run({"lint", "policies/replay_gate.yaml", "--format", "github", "--werror"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(ReviewCliTest, LintUnknownFormatIsAUsageError) {
  const CliResult r = run({"lint", "policies/replay_gate.yaml", "--format", "junit"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "replaygate: error: --format must be text, json, sarif or github, not 'junit'\n");
  EXPECT_EQ(r.out, "");
}

TEST_F(ReviewCliTest, LintSarifValidatesAgainstTheSchema) {
  const std::string schema = kSourceDir + "/tests/data/lint/sarif-schema-2.1.0.json";
  const std::string validator = kSourceDir + "/tests/scripts/validate_json_schema.py";
  for (const char* policy : {"tests/data/lint/policy.yaml", "tests/data/lint/warnings.yaml",
                             "policies/replay_gate.yaml"}) {
    SCOPED_TRACE(policy);
    const CliResult r = run({"lint", policy, "--format", "sarif"});
    write_file(dir_ / "out.sarif", r.out);
    EXPECT_EQ(run_shell("/usr/bin/python3 " + shell_quote(validator) + " " + shell_quote(schema) +
                        " " + shell_quote((dir_ / "out.sarif").string())),
              0);
  }
  // The validator does reject a log that breaks the schema (so the check above can fail).
  const CliResult r = run({"lint", "tests/data/lint/policy.yaml", "--format", "sarif"});
  std::string broken = r.out;
  broken.replace(broken.find("\"level\": \"error\""), 16, "\"level\": \"fatal\"");
  write_file(dir_ / "broken.sarif", broken);
  EXPECT_EQ(run_shell("/usr/bin/python3 " + shell_quote(validator) + " " + shell_quote(schema) +
                      " " + shell_quote((dir_ / "broken.sarif").string()) + " 2>/dev/null"),
            1);
}

TEST(LintFormats, GithubEscapesPropertiesAndMessages) {
  replaygate::Diagnostic d;
  d.severity = replaygate::Severity::kWarning;
  d.code = "RG202";
  d.message = "100% sure: a, b\r\nnext";
  d.path = "dir,1/a:b.yaml";
  d.span = {3, 7, 0, 1};
  d.hint = "fix it";
  replaygate::Diagnostic info;
  info.severity = replaygate::Severity::kInfo;
  info.code = "RG209";
  info.message = "no position";
  EXPECT_EQ(replaygate::render_github({d, info}),
            "::warning file=dir%2C1/a%3Ab.yaml,line=3,col=7,title=RG202::100%25 sure: a, "
            "b%0D%0Anext%0Ahint: fix it\n"
            "::notice title=RG209::no position\n");
}

TEST(LintFormats, SarifWithoutPathOrDiagnostics) {
  const std::string empty = replaygate::render_sarif({}, "", "1.2.3", "https://x.test");
  EXPECT_NE(empty.find("\"rules\": []"), std::string::npos) << empty;
  EXPECT_NE(empty.find("\"results\": []"), std::string::npos) << empty;
  replaygate::Diagnostic d;
  d.code = "RG999";
  d.message = "new code";
  const std::string one = replaygate::render_sarif({d}, "", "1.2.3", "https://x.test");
  EXPECT_NE(one.find("{\"id\": \"RG999\", \"shortDescription\": {\"text\": \"replaygate "
                     "diagnostic RG999\"}, \"helpUri\": "
                     "\"https://x.test/docs/diagnostics.md#rg999\"}"),
            std::string::npos)
      << one;
  EXPECT_EQ(one.find("locations"), std::string::npos) << one;
}

// The artifact URI is a URI reference (RFC 3986): a space, '%', '#', '?', ':' and non-ASCII bytes
// in the path are percent-encoded, '/' separates segments.
TEST(LintFormats, SarifUriIsPercentEncoded) {
  replaygate::Diagnostic d;
  d.code = "RG104";
  d.message = "unknown verb";
  d.path = "my policies/100%#1?v=2/c:gate \xC3\xA9.yaml";
  const std::string log = replaygate::render_sarif({d}, "", "1.2.3", "https://x.test");
  EXPECT_NE(log.find("{\"uri\": \"my%20policies/100%25%231%3Fv=2/c%3Agate%20%C3%A9.yaml\"}"),
            std::string::npos)
      << log;
  d.path = "policies/replay_gate.yaml";
  EXPECT_NE(replaygate::render_sarif({d}, "", "1.2.3", "https://x.test")
                .find("{\"uri\": \"policies/replay_gate.yaml\"}"),
            std::string::npos);
  // An absolute path is an absolute file URI (SARIF 2.1.0 section 3.10.2), encoded the same way.
  d.path = "/tmp/my policies/x.yaml";
  EXPECT_NE(replaygate::render_sarif({d}, "", "1.2.3", "https://x.test")
                .find("{\"uri\": \"file:///tmp/my%20policies/x.yaml\"}"),
            std::string::npos);
}

// Every code the docs list has a SARIF short description, and nothing else does.
TEST(LintFormats, EveryDocumentedCodeHasATitle) {
  std::set<std::string> documented;
  const std::regex row(R"(^\| (RG\d\d\d) )");
  for (const char* doc : {"docs/diagnostics.md", "docs/input-mapping.md", "docs/cli.md"}) {
    std::istringstream in(read_file(kSourceDir + "/" + doc));
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, row)) documented.insert(m[1]);
    }
  }
  EXPECT_GE(documented.size(), 60u);
  for (const std::string& code : documented) {
    EXPECT_FALSE(replaygate::diagnostic_code_title(code).empty()) << code;
  }
}

// ---- review --table: a table does not record the policy's `sensitive` list ----

// The policy marks remote_job_id sensitive; a table compiled from it does not say so. Review with
// the policy redacts it by name; review with the table redacts every string value from the message
// and the record (but message_id and operation_id), so the secret is never printed.
TEST_F(ReviewCliTest, ReviewWithATableRedactsEveryStringValue) {
  const fs::path dir =
      fs::temp_directory_path() / ("rg_review_table_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string policy = read_file(kSourceDir + "/policies/generation_recovery.yaml");
  const std::string list = "sensitive: [prompt, credentials, signed_url, output_url, token, ";
  ASSERT_NE(policy.find(list), std::string::npos);
  policy.replace(policy.find(list), list.size(), list + "remote_job_id, ");
  write_file(dir / "p.yaml", policy);
  const std::string table = (dir / "p.rgt").string();
  ASSERT_EQ(run({"compile", (dir / "p.yaml").string(), "-o", table}).exit_code, 0);
  write_file(dir / "m.json",
             R"({"message_id":"msg-0210","operation_id":"op-7760","action_type":"generate_image",)"
             R"("attempt_count":1,"last_error_category":"consumer_crash","revision":1,)"
             R"("remote_job_id":"job-SECRET-42"})");
  write_file(dir / "r.json", R"({"operation_id":"op-7760","phase":"accepted","revision":1,)"
                             R"("remote_job_id":"job-SECRET-42"})");
  const std::vector<std::string> files = {"--message", (dir / "m.json").string(), "--record",
                                          (dir / "r.json").string()};
  std::vector<std::string> by_policy = {"review", "--policy", (dir / "p.yaml").string()};
  by_policy.insert(by_policy.end(), files.begin(), files.end());
  CliResult r = run(by_policy);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("job-SECRET-42"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  known remote job id:  <redacted: field remote_job_id>\n"),
            std::string::npos)
      << r.out;
  const std::string redacted =
      "<redacted: field %s (--table: a table does not record which fields are sensitive; review "
      "with --policy to see it)>";
  const auto red = [&](const std::string& name) {
    std::string s = redacted;
    s.replace(s.find("%s"), 2, name);
    return s;
  };
  for (const std::string format : {"text", "json"}) {
    SCOPED_TRACE(format);
    std::vector<std::string> by_table = {"review", "--table", table, "--format", format};
    by_table.insert(by_table.end(), files.begin(), files.end());
    r = run(by_table);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find("job-SECRET-42"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("generate_image"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("consumer_crash"), std::string::npos) << r.out;
    if (format == "text") {
      EXPECT_NE(r.out.find("  message id:           msg-0210\n"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("  operation id:         op-7760\n"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("  known remote job id:  " + red("remote_job_id") + "\n"),
                std::string::npos)
          << r.out;
      EXPECT_NE(r.out.find("  action type:          " + red("action_type") + "\n"),
                std::string::npos)
          << r.out;
      EXPECT_NE(r.out.find("  attempt count:        1\n"), std::string::npos) << r.out;
    } else {
      const nlohmann::json j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["message_id"], "msg-0210");
      EXPECT_EQ(j["operation_id"], "op-7760");
      EXPECT_EQ(j["remote_job_id"], red("remote_job_id"));
      EXPECT_EQ(j["phase"], red("phase"));
      EXPECT_EQ(j["attempt_count"], 1);
      EXPECT_EQ(j["message_revision"], 1);
      // The decision is the policy's: the table decides as the policy does.
      const nlohmann::json p = nlohmann::json::parse(run([&] {
                                                       std::vector<std::string> a = by_policy;
                                                       a.insert(a.end(), {"--format", "json"});
                                                       return a;
                                                     }())
                                                         .out);
      EXPECT_EQ(j["action"], p["action"]);
      EXPECT_EQ(j["rule"], p["rule"]);
    }
  }
  fs::remove_all(dir);
}

}  // namespace
