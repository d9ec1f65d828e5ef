// Property of `replaygate proposal apply` (issue 23): a proposal whose entries all carry the
// policy's default verb never makes any input more dangerous, so apply never exits 3 (nor 1: no
// verb changes), in either policy form, for any set of new key pairs.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/support/cli_runner.h"

namespace replaygate::testing {
namespace {

// A key value no row of the shipped policy names: lowercase letters behind a prefix.
rc::Gen<std::string> fresh_value(const char* prefix) {
  return rc::gen::map(rc::gen::container<std::string>(rc::gen::inRange('a', 'z')),
                      [prefix](const std::string& s) { return std::string(prefix) + s; });
}

RC_GTEST_PROP(ProposalApply, DefaultVerbEntriesNeverExitThree, ()) {
  const std::vector<std::pair<std::string, std::string>> pairs =
      *rc::gen::container<std::vector<std::pair<std::string, std::string>>>(
          rc::gen::pair(fresh_value("t."), fresh_value("e_")));
  std::set<std::pair<std::string, std::string>> unique(pairs.begin(), pairs.end());
  RC_PRE(!unique.empty() && unique.size() <= 8);
  nlohmann::json proposal = nlohmann::json::array();
  for (const auto& [topic, error_class] : unique) {
    proposal.push_back({{"topic", topic},
                        {"error_class", error_class},
                        {"verb", "hold"},
                        {"rationale", "wait for an operator"}});
  }
  const bool dsl = *rc::gen::arbitrary<bool>();
  ScratchDir dir("rg_apply_prop");
  const std::string policy = (dir.path() / (dsl ? "gate.policy" : "gate.yaml")).string();
  write_file(policy, read_file(kSourceDir + "/policies/replay_gate" + (dsl ? ".policy" : ".yaml")));
  write_file(dir.path() / "proposal.json", proposal.dump(2));
  const CliResult r = run_cli_args(
      dir.path(), {"proposal", "apply", (dir.path() / "proposal.json").string(), "--policy", policy,
                   "-o", (dir.path() / "out").string() + (dsl ? ".policy" : ".yaml")});
  RC_ASSERT(r.exit_code == 0);
}

}  // namespace
}  // namespace replaygate::testing
