// Property 3: the frozen-table runtime (lower -> Table::load_bytes -> Input -> decide) agrees with
// the reference interpreter on random valid policies and random letters: verb, kind, catalog
// index of the deciding rule and invalid field. Also: the table carries the policy's names.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <sstream>
#include <string>

#include "compiler/interpret.h"
#include "tests/properties/policy_gen.h"

namespace replaygate::testing {
namespace {

constexpr size_t kLettersPerPolicy = 40;

std::string show(const InterpretResult& r) {
  std::ostringstream os;
  showValue(r, os);
  return os.str();
}

RC_GTEST_PROP(OracleTest, RuntimeAgreesWithInterpreter, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const ir::Policy& policy = checked.policy;
    const BuiltTable built = build_table_or_fail(checked);
    const Table& table = *built.table;
    for (uint32_t f = 0; f < policy.fields.size(); ++f) {
      RC_ASSERT(table.field_index(policy.fields[f].name) == f);
    }
    const auto letters = gen_letters(policy, kLettersPerPolicy);
    Input input(table);
    bool kinds[3] = {false, false, false};
    for (const Letter& letter : letters) {
      const InterpretResult expected = interpret(policy, letter);
      const InterpretResult actual = runtime_decide(table, letter, &input);
      kinds[static_cast<int>(expected.kind)] = true;
      if (expected != actual) {
        RC_FAIL("letter " + describe_letter(policy, letter) + "\n  interpreter: " + show(expected) +
                "\n  runtime:     " + show(actual));
      }
    }
    RC_CLASSIFY(kinds[0] && kinds[1] && kinds[2],
                "letters reached a rule, the default, invalid input");
  });
}

RC_GTEST_PROP(OracleTest, TableCarriesThePolicysNames, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const ir::Policy& p = checked.policy;
    const BuiltTable built = build_table_or_fail(checked);
    const Table& t = *built.table;
    RC_ASSERT(t.policy_id() == p.id);
    RC_ASSERT(t.revision() == p.revision);
    RC_ASSERT(t.field_count() == p.fields.size());
    for (uint32_t f = 0; f < p.fields.size(); ++f) {
      const FieldInfo info = t.field(f);
      RC_ASSERT(info.name == p.fields[f].name);
      RC_ASSERT(static_cast<int>(info.type) == static_cast<int>(p.fields[f].type));
      RC_ASSERT(info.optional == p.fields[f].optional);
      RC_ASSERT(info.empty_means_absent == p.fields[f].empty_means_absent);
      RC_ASSERT(info.has_min == p.fields[f].min.has_value());
      RC_ASSERT(info.has_max == p.fields[f].max.has_value());
      if (info.has_min) RC_ASSERT(info.min == *p.fields[f].min);
      if (info.has_max) RC_ASSERT(info.max == *p.fields[f].max);
    }
    RC_ASSERT(t.field_index("no such field") == Table::kNoField);
    RC_ASSERT(t.verb_count() == p.verbs.size());
    for (uint32_t v = 0; v < p.verbs.size(); ++v) {
      RC_ASSERT(t.verb_name(v) == p.verbs[v].name);
      RC_ASSERT(static_cast<int>(t.verb_effect(v)) == static_cast<int>(p.verbs[v].effect));
    }
    RC_ASSERT(t.default_verb() == p.default_verb);
    const auto catalog = ir::rule_catalog(p);
    RC_ASSERT(t.rule_count() == catalog.size());
    for (uint32_t r = 0; r < catalog.size(); ++r) {
      const ir::Rule& rule = p.rules[catalog[r].rule];
      if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
        RC_ASSERT(t.rule_id(r) == guard->id);
        RC_ASSERT(t.rule_reason(r) == guard->reason);
      } else {
        const ir::Row& row = std::get<ir::Table>(rule).rows[catalog[r].row];
        RC_ASSERT(t.rule_id(r) == row.id);
      }
    }
    RC_ASSERT(t.source_name() == checked.source_base_name);
    RC_ASSERT(t.source_digest() == checked.source_digest);
  });
}

}  // namespace
}  // namespace replaygate::testing
