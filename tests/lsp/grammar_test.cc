// The TextMate grammar editors/policy.tmLanguage.json: valid JSON, every include resolves, every
// pattern compiles (kept to what ECMAScript regexes and Oniguruma read alike), and its
// declarations pick the names out of the shipped policy's lines.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "tests/support/cli_runner.h"

namespace replaygate::testing {
namespace {

using Json = nlohmann::json;

Json grammar() { return Json::parse(read_file(kSourceDir + "/editors/policy.tmLanguage.json")); }

void collect(const Json& node, std::vector<std::string>* regexes, std::set<std::string>* includes) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if ((key == "match" || key == "begin" || key == "end") && value.is_string()) {
        regexes->push_back(value.get<std::string>());
      } else if (key == "include" && value.is_string()) {
        includes->insert(value.get<std::string>());
      } else {
        collect(value, regexes, includes);
      }
    }
  } else if (node.is_array()) {
    for (const Json& item : node) collect(item, regexes, includes);
  }
}

TEST(PolicyGrammar, IsWellFormed) {
  const Json g = grammar();
  EXPECT_EQ(g["scopeName"], "source.replaygate-policy");
  EXPECT_EQ(g["fileTypes"], Json::array({"policy"}));
  std::vector<std::string> regexes;
  std::set<std::string> includes;
  collect(g, &regexes, &includes);
  EXPECT_GT(regexes.size(), 10u);
  for (const std::string& pattern : regexes) {
    EXPECT_NO_THROW(std::regex{pattern}) << pattern;
  }
  for (const std::string& include : includes) {
    ASSERT_EQ(include.rfind('#', 0), 0u) << include;
    EXPECT_TRUE(g["repository"].contains(include.substr(1))) << include;
  }
}

TEST(PolicyGrammar, DeclarationsNameWhatTheyDeclare) {
  const Json g = grammar();
  std::vector<std::string> names;
  for (const Json& pattern : g["repository"]["declaration"]["patterns"]) {
    const std::regex re(pattern["match"].get<std::string>());
    for (const std::string& line :
         lines_of(read_file(kSourceDir + "/policies/replay_gate.policy"))) {
      std::smatch m;
      if (std::regex_search(line, m, re) && m.size() > 2) names.push_back(m[2]);
    }
  }
  const std::set<std::string> got(names.begin(), names.end());
  for (const char* name : {"dlq-replay-gate", "attempts", "replay_once", "max_attempts",
                           "already_committed", "known_failures", "no_key_no_replay"}) {
    EXPECT_EQ(got.count(name), 1u) << name;
  }
  const std::regex number(g["repository"]["number"]["match"].get<std::string>());
  EXPECT_TRUE(std::regex_search(std::string("attempts >= 3"), number));
  EXPECT_FALSE(std::regex_search(std::string("payment.capture, http_503"), number));
}

}  // namespace
}  // namespace replaygate::testing
