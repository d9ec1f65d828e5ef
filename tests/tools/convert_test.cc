// `replaygate convert` refuses a conversion that would not read back as the same policy: the
// converted text is read back through the other front-end before anything is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;

// Runs in the scratch directory, so paths in messages are the short names the tests give.
class ConvertTest : public CliFixture {
 protected:
  ConvertTest() { cwd_ = dir_.string(); }
};

// The break-it tester's policy: a guard, then a table whose row id holds a '#'.
std::string yaml_policy(const std::string& guard_id, const std::string& row_id,
                        const std::string& reason) {
  return "policy: t\n"
         "revision: 1\n"
         "inputs: {topic: {type: string}, committed: {type: bool}}\n"
         "verbs: {hold: {effect: none}, go: {effect: create}}\n"
         "default: hold\n"
         "rules:\n"
         "  - guard: " +
         guard_id +
         "\n"
         "    when: {committed: true}\n"
         "    verb: hold\n"
         "    reason: committed\n"
         "  - table: t\n"
         "    keys: [topic]\n"
         "    rows:\n"
         "      - {id: " +
         row_id + ", keys: [orders], verb: go, reason: " + reason + "}\n";
}

constexpr const char* kIdHint =
    "      = hint: rename it: an id in the policy language is a letter or '_', then letters, "
    "digits, '_', '.' or '-'\n";

TEST_F(ConvertTest, RowIdTheLanguageCannotWriteIsRefusedAndNothingIsWritten) {
  write_file(dir_ / "t.yaml", yaml_policy("done", "'r#x'", "ok"));
  ASSERT_EQ(run({"lint", "t.yaml"}).exit_code, 0);
  // The old code wrote `orders -> go as r#x "ok"`: the row id read back as 'r', the reason lost.
  CliResult r = run({"convert", "t.yaml", "-o", "t.policy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "replaygate: error: row id 'r#x' (t.yaml:14:9) cannot be written in the policy "
            "language as it is; not converted\n" +
                std::string(kIdHint));
  EXPECT_FALSE(fs::exists(dir_ / "t.policy"));

  // An existing output keeps its content; stdout gets nothing.
  write_file(dir_ / "old.policy", "# keep me\n");
  r = run({"convert", "t.yaml", "-o", "old.policy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(read_file(dir_ / "old.policy"), "# keep me\n");
  r = run({"convert", "t.yaml", "--to", "policy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
}

TEST_F(ConvertTest, GuardIdsTheYamlFrontEndAcceptsButTheLanguageCannotWriteAreRefused) {
  for (const std::string id : {"a:b", "ü", "1x", "-x", "a/b", "x(y)"}) {
    write_file(dir_ / "g.yaml", yaml_policy("'" + id + "'", "r1", "ok"));
    ASSERT_EQ(run({"lint", "g.yaml"}).exit_code, 0) << id;
    const CliResult r = run({"convert", "g.yaml", "-o", "g.policy"});
    EXPECT_EQ(r.exit_code, 1) << id;
    EXPECT_EQ(r.err, "replaygate: error: rule id '" + id +
                         "' (g.yaml:7:5) cannot be written in the policy language as it is; not "
                         "converted\n" +
                         std::string(kIdHint))
        << id;
    EXPECT_FALSE(fs::exists(dir_ / "g.policy")) << id;
  }
}

TEST_F(ConvertTest, AReasonLongerThanTheLineLimitIsRefused) {
  write_file(dir_ / "lr.yaml", yaml_policy("done", "r1", std::string(17000, 'y')));
  ASSERT_EQ(run({"lint", "lr.yaml"}).exit_code, 0);
  const CliResult r = run({"convert", "lr.yaml", "-o", "lr.policy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "replaygate: error: the converted text does not read back: lr.policy:14:16385: "
            "error[RG015]: line 14 is longer than 16384 bytes; not converted\n"
            "      = hint: change that part of lr.yaml (for example shorten a long reason, or "
            "split a long 'in (...)' list into a table), or keep the policy in its current "
            "syntax\n");
  EXPECT_FALSE(fs::exists(dir_ / "lr.policy"));
}

TEST_F(ConvertTest, ALongInListIsRefusedOnStdoutToo) {
  std::string values;
  for (int i = 0; i < 3000; ++i)
    values += (i ? ", " : "") + std::string("topic") + std::to_string(i);
  write_file(dir_ / "in.yaml",
             "policy: t\nrevision: 1\ninputs: {topic: {type: string}}\n"
             "verbs: {hold: {effect: none}, go: {effect: create}}\ndefault: hold\nrules:\n"
             "  - guard: many\n    when: {topic: {in: [" +
                 values + "]}}\n    verb: go\n    reason: listed\n");
  ASSERT_EQ(run({"lint", "in.yaml"}).exit_code, 0);
  const CliResult r = run({"convert", "in.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("replaygate: error: the converted text does not read back: line 10:16385: "
                        "error[RG015]: line 10 is longer than 16384 bytes; not converted\n",
                        0),
            0u)
      << r.err;
}

TEST_F(ConvertTest, AnInputNamedLikeAKeywordThatDoesNotParseBackIsRefused) {
  // `rule g: when not -> go` is a syntax error: 'not' negates the input after it.
  write_file(dir_ / "k.yaml",
             "policy: t\nrevision: 1\ninputs: {not: {type: bool}}\n"
             "verbs: {hold: {effect: none}, go: {effect: create}}\ndefault: hold\nrules:\n"
             "  - guard: g\n    when: {not: true}\n    verb: go\n    reason: r\n");
  ASSERT_EQ(run({"lint", "k.yaml"}).exit_code, 0);
  const CliResult r = run({"convert", "k.yaml", "-o", "k.policy"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("replaygate: error: the converted text does not read back: k.policy:10:18: "
                        "error[RG014]: expected a bool input after 'not'; not converted\n",
                        0),
            0u)
      << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "k.policy"));
}

TEST_F(ConvertTest, TextThatIsNotUtf8IsRefusedGoingToYaml) {
  write_file(dir_ / "x.policy",
             "policy t revision 1\ninput a: string\nverb hold effect none\n"
             "verb go effect create \"\\xff\"\ndefault hold\n");
  ASSERT_EQ(run({"lint", "x.policy"}).exit_code, 0);
  const CliResult r = run({"convert", "x.policy", "-o", "x.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "replaygate: error: the description of verb 'go' (x.policy:4:6) is not valid UTF-8 "
            "(byte 0xff), which YAML cannot hold; not converted\n"
            "      = hint: YAML files are UTF-8: write that text in UTF-8, or keep this policy in "
            "the .policy form\n");
  EXPECT_FALSE(fs::exists(dir_ / "x.yaml"));
}

TEST_F(ConvertTest, GroupedConditionsAndTheShippedPoliciesStillConvertBothWays) {
  // print_yaml groups conditions on one field; the read-back compares with the grouped policy.
  write_file(dir_ / "grouped.policy",
             "policy g revision 1\ninput n: int\ninput b: bool\n"
             "verb hold effect none\nverb go effect create\ndefault hold\n"
             "rule r: when n >= 1 and b and n < 5 -> go \"in range\"\n");
  CliResult r = run({"convert", "grouped.policy", "-o", "grouped.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run({"convert", "grouped.yaml", "-o", "grouped2.policy"});
  EXPECT_EQ(r.exit_code, 0) << r.err;

  for (const std::string stem : {"replay_gate", "generation_recovery"}) {
    for (const std::string from : {".yaml", ".policy"}) {
      const std::string to = from == ".yaml" ? ".policy" : ".yaml";
      const std::string once = (dir_ / (stem + from + to)).string();
      r = run({"convert", kSourceDir + "/policies/" + stem + from, "-o", once});
      EXPECT_EQ(r.exit_code, 0) << stem << from << r.err;
      r = run({"convert", once, "-o", (dir_ / (stem + from + to + from)).string()});
      EXPECT_EQ(r.exit_code, 0) << stem << from << r.err;
    }
  }
}

}  // namespace
