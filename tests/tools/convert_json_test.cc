// `replaygate convert --to json`: what the policy, case and mapping readers understood, typed as
// they typed it (the documents schemas/*.schema.json describe; tests/scripts/schemas.py validates
// the shipped files' exports).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary
using nlohmann::json;

// Runs in the scratch directory, so paths in messages are the short names the tests give.
class ConvertJsonTest : public CliFixture {
 protected:
  ConvertJsonTest() { cwd_ = dir_.string(); }
};

// Plain and quoted scalars, a constant, the keywords and their quoted words, a wildcard, a row
// with an id of its own and one whose id is derived.
constexpr const char* kPolicy =
    "policy: t\n"
    "revision: 2\n"
    "inputs:\n"
    "  topic: {type: string, domain: [a, \"429\"]}\n"
    "  code: {type: string, optional: true}\n"
    "  attempts: {type: int, min: 0}\n"
    "  committed: {type: bool}\n"
    "verbs: {hold: {effect: none}, go: {effect: create, description: requeue}}\n"
    "default: hold\n"
    "constants: {max: 3}\n"
    "rules:\n"
    "  - guard: done\n"
    "    when: {committed: true, code: absent}\n"
    "    verb: hold\n"
    "    reason: committed\n"
    "  - guard: worded\n"
    "    when: {code: 'absent', attempts: {ge: max, lt: 100}}\n"
    "    verb: hold\n"
    "    reason: the word\n"
    "  - table: t\n"
    "    keys: [topic, attempts]\n"
    "    rows:\n"
    "      - [429, 1, go]\n"
    "      - ['*', 2, hold]\n"
    "      - {keys: [a, 3], verb: go, id: r3, reason: ok}\n";

TEST_F(ConvertJsonTest, APolicyExportsWhatTheCheckerTyped) {
  write_file(dir_ / "t.yaml", kPolicy);
  const CliResult r = run({"convert", "--to", "json", "t.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json want = json::parse(R"({
    "policy": "t", "revision": 2,
    "inputs": {
      "topic": {"type": "string", "domain": ["a", "429"]},
      "code": {"type": "string", "optional": true},
      "attempts": {"type": "int", "min": 0},
      "committed": {"type": "bool"}},
    "verbs": {"hold": {"effect": "none"}, "go": {"effect": "create", "description": "requeue"}},
    "default": "hold",
    "constants": {"max": 3},
    "rules": [
      {"guard": "done", "when": {"committed": true, "code": "absent"}, "verb": "hold",
       "reason": "committed"},
      {"guard": "worded", "when": {"code": {"eq": "absent"}, "attempts": {"ge": "max", "lt": 100}},
       "verb": "hold", "reason": "the word"},
      {"table": "t", "keys": ["topic", "attempts"], "rows": [
        ["429", 1, "go"],
        ["*", 2, "hold"],
        {"keys": ["a", 3], "verb": "go", "id": "r3", "reason": "ok"}]}]
  })");
  EXPECT_EQ(json::parse(r.out), want) << r.out;
  // Key order follows the file (ordered output): the document reads like the YAML.
  EXPECT_LT(r.out.find("\"policy\""), r.out.find("\"inputs\""));
  EXPECT_LT(r.out.find("\"topic\""), r.out.find("\"committed\""));
}

TEST_F(ConvertJsonTest, BothFormsOfAPolicyExportTheSameBytes) {
  write_file(dir_ / "t.yaml", kPolicy);
  ASSERT_EQ(run({"convert", "t.yaml", "-o", "t.policy"}).exit_code, 0);
  ASSERT_EQ(run({"convert", "--to", "json", "t.yaml", "-o", "a.json"}).exit_code, 0);
  // The output's extension picks JSON too.
  ASSERT_EQ(run({"convert", "t.policy", "-o", "b.json"}).exit_code, 0);
  EXPECT_EQ(read_file(dir_ / "a.json"), read_file(dir_ / "b.json"));
  EXPECT_NE(read_file(dir_ / "a.json").find("\"worded\""), std::string::npos);
  for (const char* shipped : {"replay_gate", "generation_recovery"}) {
    const std::string stem = kSourceDir + "/policies/" + shipped;
    const CliResult yaml = run({"convert", "--to", "json", stem + ".yaml"});
    const CliResult dsl = run({"convert", "--to", "json", stem + ".policy"});
    ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
    EXPECT_EQ(yaml.out, dsl.out) << shipped;
  }
}

TEST_F(ConvertJsonTest, ACaseFileExportsEachValueAsItsInputReadsIt) {
  write_file(dir_ / "t.yaml", kPolicy);
  write_file(dir_ / "t.test.yaml",
             "policy: t.yaml\n"
             "description: cases for t\n"
             "cases:\n"
             "  - name: plain number is text\n"
             "    description: the string input's 429\n"
             "    input: {topic: 429, attempts: 1, committed: false, code: ~}\n"
             "    expect: go\n"
             "  - name: json form\n"
             "    input: {topic: {json: 429}, attempts: 1, committed: false}\n"
             "    expect: hold\n"
             "    rule: default\n"
             "    reason: 'invalid input: topic'\n"
             "  - name: invalid on purpose\n"
             "    input: {topic: [a], attempts: '1', committed: no}\n"
             "    expect: hold\n"
             "  - name: no fields\n"
             "    input:\n"
             "    expect: hold\n");
  ASSERT_EQ(run({"test", "t.yaml"}).exit_code, 0);
  const CliResult r =
      run({"convert", "--to", "json", "--kind", "cases", "--policy", "t.yaml", "t.test.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json want = json::parse(R"({
    "policy": "t.yaml", "description": "cases for t",
    "cases": [
      {"name": "plain number is text", "description": "the string input's 429",
       "input": {"topic": "429", "attempts": 1, "committed": false, "code": null},
       "expect": "go"},
      {"name": "json form", "input": {"topic": {"json": 429}, "attempts": 1, "committed": false},
       "expect": "hold", "rule": "default", "reason": "invalid input: topic"},
      {"name": "invalid on purpose", "input": {"topic": ["a"], "attempts": "1", "committed": "no"},
       "expect": "hold"},
      {"name": "no fields", "input": null, "expect": "hold"}]
  })");
  EXPECT_EQ(json::parse(r.out), want) << r.out;
  // The policy's own findings are reported as `test` reports them (here: RG211 gaps), no error.
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
}

constexpr const char* kMappingPolicy =
    "policy: m\n"
    "revision: 1\n"
    "inputs: {topic: {type: string}, attempts: {type: int}, flag: {type: bool, optional: true}}\n"
    "verbs: {hold: {effect: none}, never: {effect: none}}\n"
    "default: hold\n"
    "rules:\n"
    "  - guard: flagged\n"
    "    when: {flag: true}\n"
    "    verb: never\n"
    "    reason: flagged\n";

TEST_F(ConvertJsonTest, AMappingExportsItsConstantsDefaultsAndMapTargetsTyped) {
  write_file(dir_ / "m.yaml", kMappingPolicy);
  write_file(
      dir_ / "m.mapping.yaml",
      "format: kcat-json\n"
      "description: for the test\n"
      "message_id: {record: coordinates}\n"
      "body_hash: {header: h, decode: utf8}\n"
      "inputs:\n"
      "  topic: {header: t, occurrence: last, map: {x: '429', y: b}, description: the topic}\n"
      "  attempts: {constant: '3'}\n"
      "  flag: {payload: /f, default: false, optional: true, type: bool}\n");
  const CliResult r =
      run({"convert", "--to", "json", "--kind", "mapping", "--policy", "m.yaml", "m.mapping.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json want = json::parse(R"({
    "format": "kcat-json", "description": "for the test",
    "message_id": {"record": "coordinates"},
    "body_hash": {"header": "h", "decode": "utf8"},
    "inputs": {
      "topic": {"header": "t", "occurrence": "last", "map": {"x": "429", "y": "b"},
                "type": "string", "description": "the topic"},
      "attempts": {"constant": 3, "type": "int"},
      "flag": {"payload": "/f", "default": false, "optional": true, "type": "bool"}}
  })");
  EXPECT_EQ(json::parse(r.out), want) << r.out;
  // The reader's warnings are printed, and the export goes on (as decide goes on).
  EXPECT_NE(r.err.find("warning[RG308]"), std::string::npos) << r.err;
}

TEST_F(ConvertJsonTest, AFileWithErrorsExportsNothing) {
  write_file(dir_ / "m.yaml", kMappingPolicy);
  write_file(dir_ / "m.mapping.yaml",
             "description: [not, text]\n"
             "inputs: {topic: {header: t}, attempts: {header: a}, flag: {header: f}}\n");
  CliResult r = run({"convert", "--kind", "mapping", "--policy", "m.yaml", "m.mapping.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("m.mapping.yaml:1:14: error[RG301]: the description of the mapping file "
                       "must be text"),
            std::string::npos)
      << r.err;
  write_file(dir_ / "m.test.yaml",
             "cases:\n"
             "  - name: a\n"
             "    description: {no: text}\n"
             "    input: {topic: x, attempts: 1}\n"
             "    expect: hold\n");
  r = run({"convert", "--kind", "cases", "--policy", "m.yaml", "m.test.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("m.test.yaml:3:18: error[RG401]: the description of a case must be text"),
            std::string::npos)
      << r.err;
  // `test` refuses the same file: one reader.
  EXPECT_EQ(run({"test", "m.yaml", "m.test.yaml"}).exit_code, 1);
  write_file(dir_ / "bad.yaml", "policy: b\nrevision: 1\n");
  r = run({"convert", "--to", "json", "bad.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
}

TEST_F(ConvertJsonTest, UsageErrorsSayWhatToGive) {
  write_file(dir_ / "m.yaml", kMappingPolicy);
  write_file(dir_ / "m.test.yaml", "cases: []\n");
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"convert", "--kind", "cases", "m.test.yaml"},
       "replaygate: error: --kind cases needs --policy FILE: the case file is read against the "
       "policy's inputs, verbs and rules\n"},
      {{"convert", "--kind", "mapping", "--to", "yaml", "--policy", "m.yaml", "x.yaml"},
       "replaygate: error: --kind mapping converts only --to json, not 'yaml'\n"
       "      = hint: case and mapping files are YAML already; --to json exports what replaygate "
       "reads in them\n"},
      {{"convert", "--policy", "m.yaml", "m.yaml"},
       "replaygate: error: --policy applies to --kind cases and --kind mapping; a policy converts "
       "on its own\n"},
      {{"convert", "--kind", "rules", "m.yaml"},
       "replaygate: error: --kind must be policy, cases or mapping, not 'rules'\n"},
      {{"convert", "--to", "xml", "m.yaml"},
       "replaygate: error: --to must be yaml, policy or json, not 'xml'\n"},
      {{"convert", "--kind", "cases", "--policy", "m.yaml", "m.test.yaml", "-o", "c.yaml"},
       "replaygate: error: --kind cases writes JSON: the output 'c.yaml' must end in .json\n"},
      {{"convert", "--kind", "cases", "--policy", "m.yaml", "m.test.yaml", "-o", "m.yaml"}, ""},
  };
  for (const Case& c : cases) {
    const CliResult r = run(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args.back();
    if (!c.err.empty()) {
      EXPECT_EQ(r.err, c.err);
    }
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(read_file(dir_ / "m.yaml"), kMappingPolicy);
}

}  // namespace
