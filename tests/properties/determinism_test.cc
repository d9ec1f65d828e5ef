// Property 2: determinism. lower() gives identical bytes for the same policy (twice, and for a
// copy); the bytes ignore the source path; provenance (lines, digest) never changes the decision
// digest; two independently loaded copies of a table decide identically. Plus the CLI: two
// separate `replaygate compile` processes write identical tables.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "compiler/interpret.h"
#include "tests/properties/policy_gen.h"

namespace replaygate::testing {
namespace {

RC_GTEST_PROP(DeterminismTest, LowerIsAFunctionOfThePolicy, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const std::vector<uint8_t> first = lower(checked);
    RC_ASSERT(!first.empty());
    RC_ASSERT(lower(checked) == first);
    const ir::CheckedPolicy copy = checked;  // fresh allocations, same meaning
    RC_ASSERT(lower(copy) == first);

    // The path as typed on the command line is for diagnostics only.
    ir::CheckedPolicy moved = checked;
    moved.source.path = "/some/other/dir/gen.yaml";
    RC_ASSERT(lower(moved) == first);
  });
}

RC_GTEST_PROP(DeterminismTest, ProvenanceNeverChangesTheDecisionDigest, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const BuiltTable a = build_table(checked);
    if (!a.table) RC_FAIL("table does not load: " + a.status.message);

    ir::CheckedPolicy shifted = checked;
    shifted.source_digest = std::string(32, 'f');
    shifted.source_base_name = "other.yaml";
    for (auto& spans : shifted.source.rows) {
      for (auto& span : spans) span.line += 7;
    }
    for (auto& span : shifted.source.rules) span.line += 7;
    const BuiltTable b = build_table(shifted);
    if (!b.table) RC_FAIL("table does not load: " + b.status.message);
    RC_ASSERT(a.bytes != b.bytes);  // provenance is in the table...
    RC_ASSERT(a.table->decision_digest_hex() == b.table->decision_digest_hex());  // ...not in this
    RC_ASSERT(a.table->checksum_hex() != b.table->checksum_hex());
  });
}

RC_GTEST_PROP(DeterminismTest, TwoLoadsDecideIdentically, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const std::vector<uint8_t> bytes = lower(checked);
    const std::vector<uint8_t> copy(bytes.begin(), bytes.end());
    LoadStatus status_a, status_b;
    const auto a = Table::load_bytes(bytes.data(), bytes.size(), &status_a);
    const auto b = Table::load_bytes(copy.data(), copy.size(), &status_b);
    if (!a || !b) RC_FAIL("table does not load: " + status_a.message + status_b.message);
    RC_ASSERT(a->dump() == b->dump());
    RC_ASSERT(a->checksum_hex() == b->checksum_hex());
    Input in_a(*a), in_b(*b);
    const auto letters = *rc::gen::container<std::vector<Letter>>(20, gen_letter(checked.policy));
    for (const Letter& letter : letters) {
      const InterpretResult ra = runtime_decide(*a, letter, &in_a);
      const InterpretResult rb = runtime_decide(*b, letter, &in_b);
      RC_ASSERT(ra == rb);
      // Reusing an Input gives the same answer as a fresh one.
      Input fresh(*a);
      RC_ASSERT(runtime_decide(*a, letter, &fresh) == ra);
    }
  });
}

std::vector<char> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `replaygate compile POLICY -o OUT` in two separate processes and compares the outputs.
TEST(DeterminismTest, CliCompilesIdenticallyInSeparateProcesses) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("rg_determinism_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string policy = std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml";
  std::vector<std::vector<char>> outputs;
  for (int run = 0; run < 2; ++run) {
    const auto out = dir / ("run" + std::to_string(run) + ".rgt");
    const std::string command = std::string(RG_BINARY) + " compile " + policy + " -o " +
                                out.string() + " > " + (dir / "log").string() + " 2>&1";
    const int rc = std::system(command.c_str());
    if (run == 0 && rc != 0) {
      std::ifstream log(dir / "log");
      std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
      std::filesystem::remove_all(dir);
      GTEST_SKIP() << "`replaygate compile` is not available yet: " << text;
    }
    ASSERT_EQ(rc, 0) << command;
    outputs.push_back(read_bytes(out));
  }
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(outputs[0].empty());
  EXPECT_TRUE(outputs[0] == outputs[1]) << "two runs wrote different tables";
}

}  // namespace
}  // namespace replaygate::testing
