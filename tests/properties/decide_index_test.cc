// Property: decide() through the load-time index (small-dictionary hashes, per-field plans, dense
// table matrices; runtime/internal/decide_index.h) decides exactly as decide_unindexed(), the
// general path (XXH3 dictionaries, hash probes per wildcard mask), on random valid policies and
// random letters (near-miss and empty strings, NUL bytes, out-of-bound ints, wrong types, missing
// fields): verb, kind, catalog index and invalid field.
#include "runtime/internal/decide_index.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "tests/properties/policy_gen.h"

namespace replaygate::testing {
namespace {

constexpr size_t kLettersPerPolicy = 60;

std::string show(const Decision& d) {
  return "{verb " + std::to_string(d.verb) + ", rule " + std::to_string(d.rule) + ", kind " +
         std::to_string(static_cast<int>(d.kind)) + ", field " + std::to_string(d.invalid_field) +
         "}";
}

RC_GTEST_PROP(DecideIndexTest, IndexedDecideAgreesWithTheGeneralPath, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const ir::Policy& policy = checked.policy;
    const BuiltTable built = build_table_or_fail(checked);
    const Table& table = *built.table;
    const DecideIndexStats stats = decide_index_stats(table);
    // Generated dictionaries are small: every string and enum field gets an index. Tables of
    // three keys are often over the dense cap and keep the probes; both kinds are compared.
    RC_ASSERT(stats.general_fields == 0u);
    RC_CLASSIFY(stats.unhashed_fields > 0, "a string field without dictionary entries");
    RC_CLASSIFY(stats.dense_tables > 0, "a dense table");
    RC_CLASSIFY(stats.probed_tables > 0, "a probed table");
    const auto letters = gen_letters(policy, kLettersPerPolicy);
    Input input(table);
    for (const Letter& letter : letters) {
      input.clear();
      fill_input(letter, &input);
      const Decision fast = table.decide(input);
      const Decision general = decide_unindexed(table, input);
      if (fast.verb != general.verb || fast.rule != general.rule || fast.kind != general.kind ||
          fast.invalid_field != general.invalid_field) {
        RC_FAIL("letter " + describe_letter(policy, letter) + "\n  indexed: " + show(fast) +
                "\n  general: " + show(general));
      }
    }
  });
}

}  // namespace
}  // namespace replaygate::testing
