// The whole path a real letter takes, against the interpreter: generated policies written as YAML,
// generated letters written as JSON Lines (NUL bytes as \u0000, missing keys, nulls, wrong JSON
// types, floats and objects for unreadable values), decided by `replaygate decide --policy` in a
// separate process. Every output line must name the interpreter's verb, rule and invalid field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/interpret.h"
#include "tests/properties/policy_gen.h"
#include "tests/support/cli_runner.h"

namespace replaygate::testing {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// One JSON Lines record; an unreadable value is a float, an object or an array by turns.
std::string json_letter(const ir::Policy& policy, const Letter& letter, int salt) {
  std::string out = "{";
  bool first = true;
  for (size_t f = 0; f < letter.size(); ++f) {
    const LetterValue& v = letter[f];
    if (v.kind == LetterValue::Kind::kMissing) continue;
    if (!first) out += ",";
    first = false;
    out += json_string(policy.fields[f].name) + ":";
    switch (v.kind) {
      case LetterValue::Kind::kMissing:
        break;
      case LetterValue::Kind::kNull:
        out += "null";
        break;
      case LetterValue::Kind::kString:
        out += json_string(v.s);
        break;
      case LetterValue::Kind::kInt:
        out += std::to_string(v.i);
        break;
      case LetterValue::Kind::kBool:
        out += v.b ? "true" : "false";
        break;
      case LetterValue::Kind::kInvalid: {
        const char* unreadable[] = {"1.5", "{}", "[1]", "18446744073709551616"};
        out += unreadable[(salt + f) % 4];
        break;
      }
    }
  }
  return out + "}";
}

TEST(CliOracleTest, DecideAgreesWithTheInterpreter) {
  const ScratchDir scratch("rg_cli_oracle");
  const std::filesystem::path& dir = scratch.path();
  rc::Random random(20261129);
  size_t compared = 0, invalid = 0;
  for (int i = 0; i < 15; ++i) {
    const ir::CheckedPolicy generated = gen_policy()(random.split(), rc::kNominalSize).value();
    const ir::Policy& policy = generated.policy;
    std::vector<Letter> letters;
    std::string jsonl;
    for (int l = 0; l < 40; ++l) {
      letters.push_back(gen_letter(policy)(random.split(), rc::kNominalSize).value());
      jsonl += json_letter(policy, letters.back(), l) + "\n";
    }
    std::ofstream(dir / "gen.yaml", std::ios::binary) << to_yaml(policy);
    std::ofstream(dir / "letters.jsonl", std::ios::binary) << jsonl;
    const CliResult r = run_cli_args(
        dir, {"decide", "--policy", (dir / "gen.yaml").string(), (dir / "letters.jsonl").string()});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;

    std::istringstream out(r.out);
    const auto catalog = ir::rule_catalog(policy);
    std::string line;
    size_t n = 0;
    bool any_invalid = false;
    while (std::getline(out, line)) {
      ASSERT_LT(n, letters.size());
      const nlohmann::json got = nlohmann::json::parse(line);
      const InterpretResult want = interpret(policy, letters[n]);
      std::string want_rule = "default";
      if (want.kind == InterpretKind::kRule) {
        const ir::CatalogEntry e = catalog[want.rule];
        const ir::Rule& rule = policy.rules[e.rule];
        want_rule = std::holds_alternative<ir::Guard>(rule)
                        ? std::get<ir::Guard>(rule).id
                        : std::get<ir::Table>(rule).rows[e.row].id;
      }
      const bool want_invalid = want.kind == InterpretKind::kInvalidInput;
      const std::string context = describe_letter(policy, letters[n]) + "\n  json: " +
                                  json_letter(policy, letters[n], static_cast<int>(n)) +
                                  "\n  output: " + line + "\n" + to_yaml(policy);
      EXPECT_EQ(got.at("verb").get<std::string>(), policy.verbs[want.verb].name) << context;
      EXPECT_EQ(got.at("rule").get<std::string>(), want_rule) << context;
      EXPECT_EQ(got.at("invalid").get<bool>(), want_invalid) << context;
      if (want_invalid) {
        EXPECT_EQ(got.at("reason").get<std::string>(),
                  "invalid input: " + policy.fields[want.invalid_field].name)
            << context;
      }
      any_invalid |= want_invalid;
      invalid += want_invalid;
      ++n;
      ++compared;
    }
    ASSERT_EQ(n, letters.size()) << r.err;
    EXPECT_EQ(r.exit_code, any_invalid ? 1 : 0);
  }
  EXPECT_EQ(compared, 15u * 40u);
  EXPECT_GT(invalid, 0u);
}

}  // namespace
}  // namespace replaygate::testing
