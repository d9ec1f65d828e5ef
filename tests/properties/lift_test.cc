// Properties of lifting a table back into a policy (compiler/lift.h), on random valid policies:
//  * lift(load(lower(ir))) succeeds and decides every random letter exactly like `ir` (verb, kind,
//    deciding catalog index, invalid field), by the reference interpreter and by the runtime on
//    the lifted policy's own table;
//  * region by region: diff(ir, lifted) finds no verb change, no provenance change, no field
//    change, and visits every region;
//  * the lifted policy's table stores the same atoms (dictionaries, cuts, condition atom sets, row
//    keys) and the same provenance as the original table, and lifting is idempotent;
//  * never a wrong lift: a table with random bytes changed (checksum resealed) that still loads
//    either fails to lift with a message, or lifts to a policy that decides random letters exactly
//    like that table's decide().
#include "compiler/lift.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/analysis/diff.h"
#include "compiler/interpret.h"
#include "runtime/table_format.h"
#include "runtime/trace.h"
#include "tests/properties/policy_gen.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate::testing {
namespace {

constexpr size_t kLettersPerPolicy = 40;

bool same_structure(const Structure& a, const Structure& b) {
  if (a.fields.size() != b.fields.size() || a.rules.size() != b.rules.size()) return false;
  for (size_t f = 0; f < a.fields.size(); ++f) {
    const StructureField& x = a.fields[f];
    const StructureField& y = b.fields[f];
    if (x.dictionary != y.dictionary || x.cuts != y.cuts || x.atom_count != y.atom_count ||
        x.derived != y.derived || x.derived_op != y.derived_op || x.derived_lhs != y.derived_lhs ||
        x.derived_rhs != y.derived_rhs) {
      return false;
    }
  }
  for (size_t r = 0; r < a.rules.size(); ++r) {
    const StructureRule& x = a.rules[r];
    const StructureRule& y = b.rules[r];
    if (x.is_table != y.is_table || x.id != y.id || x.catalog_begin != y.catalog_begin ||
        x.catalog_count != y.catalog_count || x.key_fields != y.key_fields ||
        x.row_keys != y.row_keys || x.conditions.size() != y.conditions.size()) {
      return false;
    }
    for (size_t c = 0; c < x.conditions.size(); ++c) {
      if (x.conditions[c].field != y.conditions[c].field ||
          x.conditions[c].atoms != y.conditions[c].atoms) {
        return false;
      }
    }
  }
  return true;
}

RC_GTEST_PROP(LiftTest, LiftedTableDecidesLikeThePolicy, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    tag_policy(checked.policy);
    const BuiltTable built = build_table_or_fail(checked);
    const LiftResult lifted = lift(*built.table);
    if (!lifted.policy) RC_FAIL("lift failed: " + lifted.error);
    const ir::Policy& original = checked.policy;
    const ir::Policy& policy = lifted.policy->policy;

    // What a table keeps is kept exactly.
    RC_ASSERT(policy.id == original.id);
    RC_ASSERT(policy.verbs == original.verbs);
    RC_ASSERT(policy.default_verb == original.default_verb);
    RC_ASSERT(policy.rules.size() == original.rules.size());
    RC_ASSERT(policy.fields.size() == original.fields.size());
    for (size_t f = 0; f < policy.fields.size(); ++f) {
      ir::Field expected = original.fields[f];
      expected.description.clear();
      expected.domain.clear();
      if (expected.type != ir::FieldType::kString) expected.empty_means_absent = false;
      RC_ASSERT(policy.fields[f] == expected);
    }

    // Letter by letter: the interpreter on both IRs, and the runtime on the lifted table.
    const BuiltTable relowered = build_table(*lifted.policy);
    if (!relowered.table) RC_FAIL("lifted table does not load: " + relowered.status.message);
    Input scratch(*relowered.table);
    const auto letters = gen_letters(original, kLettersPerPolicy);
    for (const Letter& letter : letters) {
      const InterpretResult want = interpret(original, letter);
      RC_ASSERT(interpret(policy, letter) == want);
      RC_ASSERT(runtime_decide(*relowered.table, letter, &scratch) == want);
    }

    // Region by region.
    const PolicyDiff diff = diff_policies(original, policy);
    RC_ASSERT(diff.complete);
    RC_ASSERT(diff.regions > 0u);
    RC_ASSERT(diff.fields.empty());
    RC_ASSERT(diff.verb_changes.empty());
    RC_ASSERT(diff.provenance_changes.empty());

    // The same atoms and provenance; a second lift gives the same policy.
    RC_ASSERT(same_structure(structure(*built.table), structure(*relowered.table)));
    RC_ASSERT(relowered.table->provenance_digest_hex() == built.table->provenance_digest_hex());
    const LiftResult again = lift(*relowered.table);
    if (!again.policy) RC_FAIL("second lift failed: " + again.error);
    RC_ASSERT(again.policy->policy == policy);
  });
}

// Recomputes the header checksum so that an edit reaches the loader's structural checks.
void reseal(std::vector<uint8_t>& bytes) {
  std::memset(bytes.data() + format::kChecksumOffset, 0, 16);
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  std::memcpy(bytes.data() + format::kChecksumOffset, &h.low64, 8);
  std::memcpy(bytes.data() + format::kChecksumOffset + 8, &h.high64, 8);
}

RC_GTEST_PROP(LiftTest, EditedTablesLiftExactlyOrNotAtAll, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    std::vector<uint8_t> bytes = lower(checked);
    const size_t edits = *rc::gen::inRange<size_t>(1, 4);
    for (size_t i = 0; i < edits; ++i) {
      // Past the header and directory: the sections' contents.
      const size_t at = *rc::gen::inRange<size_t>(sizeof(format::Header), bytes.size());
      bytes[at] = *rc::gen::arbitrary<uint8_t>();
    }
    reseal(bytes);
    LoadStatus status;
    const std::unique_ptr<Table> table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    RC_CLASSIFY(table != nullptr, "loads");
    if (table == nullptr) return;  // the loader's business (tests/runtime), not the lift's
    const LiftResult lifted = lift(*table);
    RC_CLASSIFY(lifted.policy.has_value(), "lifted");
    if (!lifted.policy) {
      RC_ASSERT(!lifted.error.empty());
      return;
    }
    Input scratch(*table);
    const auto letters = gen_letters(checked.policy, kLettersPerPolicy);
    for (const Letter& letter : letters) {
      RC_ASSERT(interpret(lifted.policy->policy, letter) ==
                runtime_decide(*table, letter, &scratch));
    }
  });
}

}  // namespace
}  // namespace replaygate::testing
