// Table::dump() against golden listings in tests/data/tables/. To update on purpose, run with
// RG_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/lower.h"
#include "runtime/table.h"
#include "tests/support/paths.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

std::string golden_path(const std::string& name) {
  return std::string(RG_SOURCE_DIR) + "/tests/data/tables/" + name;
}

void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = golden_path(name);
  if (std::getenv("RG_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << "; actual:\n" << actual;
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "golden " << path << " differs; actual:\n" << actual;
}

std::string dump_of(const ir::CheckedPolicy& policy) {
  std::vector<uint8_t> bytes = lower(policy);
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  EXPECT_TRUE(status.ok()) << status.message;
  return table ? table->dump() : "";
}

TEST(Dump, ReferenceGate) { expect_golden("replay_gate.dump", dump_of(testing::reference_gate())); }

TEST(Dump, SmallPolicy) { expect_golden("small.dump", dump_of(testing::small_policy())); }

TEST(Dump, IsDeterministic) {
  EXPECT_EQ(dump_of(testing::small_policy()), dump_of(testing::small_policy()));
}

}  // namespace
}  // namespace replaygate
