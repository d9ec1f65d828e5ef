// Control characters from policy text, case files and file names never reach a terminal or a CI log
// raw in any text output (lint, compile, explain, test, diff): each is escaped (escape_control,
// common/escape.h), so a pull request cannot forge log lines or drive the terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

namespace fs = std::filesystem;

class ControlTextTest : public CliFixture {};

// The first raw control byte of `text` (C0 but '\n', DEL, a C1 control in UTF-8, a byte that is not
// UTF-8 such as 0xff, or U+2028/U+2029), as "0xNN at OFFSET"; "" when there is none.
std::string raw_control(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    const auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    const bool c0 = (b < 0x20 && b != '\n') || b == 0x7f;
    const bool c1 = b == 0xc2 && next >= 0x80 && next <= 0x9f;
    const bool separator = b == 0xe2 && next == 0x80 && i + 2 < text.size() &&
                           (text[i + 2] == '\xa8' || text[i + 2] == '\xa9');
    if (c0 || c1 || separator || b == 0xff) {
      return "0x" + std::to_string(b) + " at " + std::to_string(i);
    }
  }
  return "";
}

// A .policy file whose strings hold control characters where the grammar lets them: a reason, a
// verb description, an enum value and a string compared in a guard.
const char* const kEscPolicy =
    "policy esc revision 1\n"
    "input topic: string\n"
    "input level: enum (low, \"hi\\x1b[2Jgh\")\n"
    "verb hold effect none \"waits\\x1b[31m\"\n"
    "verb never effect none \"parks\"\n"
    "default hold \"no rule\"\n"
    "rule bad: when topic == \"a\\x00b\" -> never \"evil\\x1b[31m\\nFAKE\\xff\"\n"
    "rule lvl: when level == \"hi\\x1b[2Jgh\" -> never \"level\"\n";

TEST_F(ControlTextTest, LintTextEscapesAKeyThatHoldsControlCharacters) {
  const fs::path policy = dir_ / "p.yaml";
  write_file(policy,
             "policy: t\nrevision: 1\ninputs: {a: {type: string}}\nverbs: {hold: {effect: none}}\n"
             "default: hold\nrules: []\n\"\\e[31mred\\n\\rnewline\": 1\n");
  const CliResult r = run({"lint", policy.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, policy.string() +
                       ":7:1: error[RG101]: unknown top-level key "
                       "'\\u001b[31mred\\u000a\\u000dnewline'\n"
                       "    7 | \"\\e[31mred\\n\\rnewline\": 1\n"
                       "      | ^~~~~~~~~~~~~~~~~~~~~~\n"
                       "      = hint: expected one of: policy, revision, description, inputs, "
                       "verbs, default, default_reason, constants, rules, sensitive, invariants\n" +
                       policy.string() + ": 1 error, 0 warnings\n");
  EXPECT_EQ(raw_control(r.err), "");
}

TEST_F(ControlTextTest, APolicyIdWithControlCharactersOrSpacesIsRefused) {
  const fs::path yaml = dir_ / "p.yaml";
  write_file(yaml,
             "policy: \"a\\nb\"\nrevision: 1\ninputs: {a: {type: string}}\n"
             "verbs: {hold: {effect: none}}\ndefault: hold\nrules: []\n");
  CliResult r = run({"compile", yaml.string(), "-o", (dir_ / "t.rgt").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, yaml.string() +
                       ":1:9: error[RG127]: policy id 'a\\u000ab' contains spaces or control "
                       "characters\n"
                       "    1 | policy: \"a\\nb\"\n"
                       "      |         ^~~~~~\n"
                       "      = hint: a policy id is one word, e.g. dlq-replay-gate\n" +
                       yaml.string() + ": errors found; " + (dir_ / "t.rgt").string() +
                       " not written\n");
  EXPECT_FALSE(fs::exists(dir_ / "t.rgt"));

  const fs::path dsl = dir_ / "p.policy";
  write_file(dsl,
             "policy \"dlq gate\" revision 1\ninput a: string\nverb hold effect none\n"
             "default hold\n");
  r = run({"lint", dsl.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.err).at(0), dsl.string() +
                                       ":1:8: error[RG127]: policy id 'dlq gate' contains spaces "
                                       "or control characters");
}

TEST_F(ControlTextTest, CompileSummaryKeepsAFileNameWithANewlineOnOneLine) {
  const fs::path policy = dir_ / "x\ny.policy";
  write_file(policy,
             "policy ok revision 3\ninput a: string\nverb hold effect none\ndefault hold\n");
  const CliResult r = run({"compile", policy.string(), "-o", (dir_ / "t.rgt").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string shown = (dir_ / "x").string() + "\\u000ay.policy";
  ASSERT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_EQ(r.err.rfind(shown + ": wrote " + (dir_ / "t.rgt").string() + " (", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(", policy ok revision 3, checksum "), std::string::npos) << r.err;
}

TEST_F(ControlTextTest, ExplainEscapesReasonsDescriptionsAndEnumValues) {
  const fs::path policy = dir_ / "esc.policy";
  write_file(policy, kEscPolicy);
  for (const std::string& how : {std::string("--policy"), std::string("--table")}) {
    std::string source = policy.string();
    if (how == "--table") {
      source = (dir_ / "esc.rgt").string();
      ASSERT_EQ(run({"compile", policy.string(), "-o", source}).exit_code, 0);
    }
    CliResult r = run({"explain", how, source}, "{\"topic\": \"a\\u0000b\", \"level\": \"low\"}");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(raw_control(r.out), "") << r.out;
    EXPECT_NE(r.out.find("\ndecision: never (effect none)\n"
                         "  rule: bad (line 7)\n"
                         "  reason: evil\\u001b[31m\\u000aFAKE\\xff\n"
                         "  what it will do: parks\n"),
              std::string::npos)
        << how << "\n"
        << r.out;

    r = run({"explain", how, source}, "{\"topic\": \"x\", \"level\": \"hi\\u001b[2Jgh\"}");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(raw_control(r.out), "") << r.out;
    EXPECT_NE(r.out.find("  2. guard lvl: matched\n"
                         "       level == hi\\u001b[2Jgh: holds (level = \"hi\\x1b[2Jgh\")\n"),
              std::string::npos)
        << how << "\n"
        << r.out;

    r = run({"explain", how, source}, "{\"topic\": \"x\", \"level\": \"low\"}");
    EXPECT_EQ(raw_control(r.out), "") << r.out;
    EXPECT_NE(r.out.find("  what it will do: waits\\u001b[31m\n"), std::string::npos) << how << "\n"
                                                                                      << r.out;
  }
}

TEST_F(ControlTextTest, TestKeepsEachCaseOnOneLine) {
  const fs::path policy = dir_ / "esc.policy";
  write_file(policy, kEscPolicy);
  write_file(dir_ / "cases.yaml",
             "cases:\n"
             "  - name: \"one\\nPASS forged\"\n"
             "    input: {topic: \"a\\0b\", level: low}\n"
             "    expect: hold\n"
             "  - name: \"two\\e[2J\"\n"
             "    input: {topic: x, level: low}\n"
             "    expect: hold\n");
  const CliResult r = run({"test", policy.string(), (dir_ / "cases.yaml").string()});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out,
            "FAIL one\\u000aPASS forged: expected hold, got never (rule bad, reason "
            "\"evil\\u001b[31m\\u000aFAKE\\xff\")\n"
            "PASS two\\u001b[2J\n"
            "1 passed, 1 failed\n"
            "coverage: rules 1/2 (50.0%), invariants 0/0\n");
}

TEST_F(ControlTextTest, DiffTextEscapesEnumValuesInRegions) {
  const fs::path before = dir_ / "old.policy";
  const fs::path after = dir_ / "new.policy";
  write_file(before, kEscPolicy);
  std::string text = kEscPolicy;
  const std::string from = "-> never \"level\"";
  text.replace(text.find(from), from.size(), "-> hold \"level\"");
  write_file(after, text);
  const CliResult r = run({"diff", before.string(), after.string()});
  EXPECT_EQ(raw_control(r.out), "") << r.out;
  EXPECT_NE(r.out.find("  never -> hold (effect none -> none): 1 region\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("hi\\u001b[2Jgh"), std::string::npos) << r.out;
}

}  // namespace
