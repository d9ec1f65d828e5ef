// RapidCheck generators of random valid policies (checked IR) and of random letters for them.
//
// gen_policy() makes an ir::CheckedPolicy that respects every rule of the checker, so lower() may
// take it as is: unique ids ("default" never used), derived row ids "<table>:<k1>/<k2>" with "*"
// for wildcards, no two rows of a table with identical keys, no two rows with the same number of
// concrete keys that can match one tuple with different verbs, literals inside enum values and int
// bounds, absent/present only on optional fields, lt/le/gt/ge only on ints, a default verb of
// effect none, at least one verb per effect. Every policy has string, int, bool and enum fields,
// optional fields, an empty_means_absent string, bounded ints, constants used by conditions, 3+
// guards that together use every ir::Op, and 2-3 tables of 1-3 keys with wildcard and exact rows.
// Conditions on one field within a guard use distinct ops (absent/present alone), so every
// generated policy can be written as YAML (to_yaml()).
//
// gen_letter() makes letters that mostly use the values the policy mentions (and the ints around
// its cut points), with other strings (empty, NUL bytes, near-misses), out-of-bound ints, missing
// fields, nulls, wrong types and unreadable values mixed in.
#pragma once

#include <rapidcheck.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/interpret.h"
#include "compiler/ir.h"
#include "compiler/lower.h"
#include "runtime/table.h"

namespace replaygate::testing {

rc::Gen<ir::CheckedPolicy> gen_policy();

// Wraps `policy` with a plausible source map (one line per element, in order), base name
// "gen.yaml" and the given digest. Use it again after editing a generated policy's rules.
ir::CheckedPolicy with_source_map(ir::Policy policy,
                                  std::string digest = "0123456789abcdef0123456789abcdef");

// Letters for `policy` (copied into the generator).
rc::Gen<Letter> gen_letter(const ir::Policy& policy);

// The policy in the YAML syntax of policies/replay_gate.yaml (for counterexamples and for feeding
// the YAML front-end): compiler/syntax/print_yaml.h's print_yaml(), shared with `replaygate
// convert`.
std::string to_yaml(const ir::Policy& policy);

// Records the mix of constructs in the current property run (RC_TAG / RC_CLASSIFY).
void tag_policy(const ir::Policy& policy);

// Sets `input` from `letter` by field index (missing fields stay unset). The strings are views into
// `letter`, which must outlive the decision.
void fill_input(const Letter& letter, Input* input);

// lower() then Table::load_bytes(); `table` is nullptr when loading fails (see `status`).
struct BuiltTable {
  std::vector<uint8_t> bytes;
  LoadStatus status;
  std::unique_ptr<Table> table;
};
BuiltTable build_table(const ir::CheckedPolicy& policy);
// build_table() inside a property: the property fails (RC_FAIL, with the loader's message) when
// the table does not load, so `table` is never nullptr.
BuiltTable build_table_or_fail(const ir::CheckedPolicy& policy);

// Inside a property: `count` letters for `policy` (gen_letter).
std::vector<Letter> gen_letters(const ir::Policy& policy, size_t count);

// fill_input() + decide(), translated to the interpreter's result type.
InterpretResult runtime_decide(const Table& table, const Letter& letter, Input* scratch);

// Bounds shrinking of expensive properties (RapidCheck has no shrink limit, and shrinking a policy
// that needs lower() per attempt can take minutes). Wrap the property body:
//   RC_GTEST_PROP(Suite, Name, ()) { with_shrink_budget([] { ... }); }
// Once a case of the current gtest test has failed, cases that start more than
// kShrinkBudgetSeconds later pass without running, so shrinking ends with the smallest
// counterexample found so far (RapidCheck prints it as usual).
inline constexpr double kShrinkBudgetSeconds = 8.0;
bool shrink_budget_spent();
void note_case_failed();

template <typename Body>
void with_shrink_budget(Body&& body) {
  if (shrink_budget_spent()) RC_SUCCEED("shrink time budget spent");
  try {
    body();
  } catch (const rc::detail::CaseResult& result) {
    if (result.type == rc::detail::CaseResult::Type::Failure) note_case_failed();
    throw;
  } catch (...) {
    note_case_failed();
    throw;
  }
}

}  // namespace replaygate::testing

namespace replaygate::ir {
// RapidCheck prints generated policies through this (ADL).
void showValue(const CheckedPolicy& policy, std::ostream& os);
}  // namespace replaygate::ir

namespace replaygate {
void showValue(const LetterValue& value, std::ostream& os);
void showValue(const InterpretResult& result, std::ostream& os);
}  // namespace replaygate
