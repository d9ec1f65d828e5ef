// Property 1: fail-closed. A letter that no guard and no row matches gets the default; a letter
// with a missing or ill-typed required field gets exactly the default with kInvalidInput, naming
// that field, and so never a create-effect verb.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <limits>
#include <sstream>
#include <string>

#include "compiler/interpret.h"
#include "tests/properties/policy_gen.h"

namespace replaygate::testing {
namespace {

std::string show(const InterpretResult& r) {
  std::ostringstream os;
  showValue(r, os);
  return os.str();
}

rc::Gen<Letter> gen_valid_letter(const ir::Policy& policy) {
  return rc::gen::suchThat(gen_letter(policy), [policy](const Letter& letter) {
    return interpret(policy, letter).kind != InterpretKind::kInvalidInput;
  });
}

// Removes whatever decides `letter` (a guard, or a row; a table left without rows goes too) until
// nothing does. Removing rows never creates a conflict between the rows that remain, so the policy
// stays valid.
size_t strip_matches(ir::Policy* policy, const Letter& letter) {
  size_t removed = 0;
  for (;;) {
    const InterpretResult r = interpret(*policy, letter);
    if (r.kind != InterpretKind::kRule) return removed;
    const ir::CatalogEntry entry = ir::rule_catalog(*policy).at(r.rule);
    auto& rule = policy->rules.at(entry.rule);
    if (auto* table = std::get_if<ir::Table>(&rule); table && table->rows.size() > 1) {
      table->rows.erase(table->rows.begin() + entry.row);
    } else {
      policy->rules.erase(policy->rules.begin() + entry.rule);
    }
    ++removed;
  }
}

RC_GTEST_PROP(FailClosedTest, NoMatchingRuleGivesTheDefault, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy original = *gen_policy();
    const Letter letter = *gen_valid_letter(original.policy);
    ir::Policy stripped = original.policy;
    const size_t removed = strip_matches(&stripped, letter);
    RC_CLASSIFY(removed == 0, "matched nothing as generated");
    RC_CLASSIFY(stripped.rules.empty(), "no rules left");
    const ir::CheckedPolicy checked = with_source_map(stripped, original.source_digest);

    const BuiltTable built = build_table_or_fail(checked);
    Input input(*built.table);
    const InterpretResult actual = runtime_decide(*built.table, letter, &input);
    const InterpretResult expected{stripped.default_verb, InterpretKind::kDefault, 0, 0};
    if (actual != expected) {
      RC_FAIL("letter " + describe_letter(stripped, letter) + "\n  expected " + show(expected) +
              "\n  runtime  " + show(actual) + "\n" + to_yaml(stripped));
    }
    const Decision d = built.table->decide(input);
    RC_ASSERT(built.table->rule_name(d) == std::string_view("default"));
    RC_ASSERT(built.table->reason(d) == stripped.default_reason);
  });
}

// Ways to break a field. Each applies to some fields only (see `corrupt`).
enum class Breakage { kMissing, kNull, kUnreadable, kWrongType, kOutOfBounds, kNotInEnum, kEmpty };

// A value that makes `field` invalid, or nullopt when `how` cannot break this field.
std::optional<LetterValue> corrupt(const ir::Field& field, Breakage how) {
  using FT = ir::FieldType;
  switch (how) {
    case Breakage::kMissing:
      if (field.optional) return std::nullopt;
      return LetterValue::Missing();
    case Breakage::kNull:
      if (field.optional) return std::nullopt;
      return LetterValue::Null();
    case Breakage::kUnreadable:
      return LetterValue::Invalid();
    case Breakage::kWrongType:
      switch (field.type) {
        case FT::kString:
        case FT::kEnum:
          return LetterValue::Int(0);
        case FT::kInt:
          return LetterValue::String("0");
        case FT::kBool:
          return LetterValue::String("false");
      }
      return std::nullopt;
    case Breakage::kOutOfBounds:
      if (field.type != FT::kInt) return std::nullopt;
      if (field.min && *field.min > std::numeric_limits<int64_t>::min()) {
        return LetterValue::Int(*field.min - 1);
      }
      if (field.max && *field.max < std::numeric_limits<int64_t>::max()) {
        return LetterValue::Int(*field.max + 1);
      }
      return std::nullopt;
    case Breakage::kNotInEnum:
      if (field.type != FT::kEnum) return std::nullopt;
      return LetterValue::String(field.enum_values.at(0) + std::string("\0", 1));
    case Breakage::kEmpty:
      if (field.type != FT::kString || !field.empty_means_absent || field.optional) {
        return std::nullopt;
      }
      return LetterValue::String("");
  }
  return std::nullopt;
}

const char* breakage_name(Breakage how) {
  switch (how) {
    case Breakage::kMissing:
      return "missing";
    case Breakage::kNull:
      return "null";
    case Breakage::kUnreadable:
      return "unreadable";
    case Breakage::kWrongType:
      return "wrong type";
    case Breakage::kOutOfBounds:
      return "out of bounds";
    case Breakage::kNotInEnum:
      return "not in enum";
    case Breakage::kEmpty:
      return "empty means absent";
  }
  return "?";
}

RC_GTEST_PROP(FailClosedTest, InvalidFieldGivesExactlyTheDefault, ()) {
  with_shrink_budget([] {
    const ir::CheckedPolicy checked = *gen_policy();
    const ir::Policy& policy = checked.policy;
    Letter letter = *gen_valid_letter(policy);

    // Break 1..3 fields; the first broken one in declaration order is the one reported.
    const size_t count = *rc::gen::inRange<size_t>(1, 4);
    std::optional<uint32_t> first;
    for (size_t i = 0; i < count; ++i) {
      const uint32_t f = *rc::gen::inRange<uint32_t>(0, policy.fields.size());
      const Breakage how = *rc::gen::element(
          Breakage::kMissing, Breakage::kNull, Breakage::kUnreadable, Breakage::kWrongType,
          Breakage::kOutOfBounds, Breakage::kNotInEnum, Breakage::kEmpty);
      const auto bad = corrupt(policy.fields[f], how);
      if (!bad) continue;
      if (policy.fields[f]
              .derived) {  // computed: a letter's value for it is ignored, never invalid
        letter[f] = *bad;
        continue;
      }
      RC_TAG(breakage_name(how), policy.fields[f].optional ? "optional" : "required");
      letter[f] = *bad;
      first = std::min(first.value_or(f), f);
    }
    RC_PRE(first.has_value());

    const InterpretResult expected{policy.default_verb, InterpretKind::kInvalidInput, 0, *first};
    const InterpretResult oracle = interpret(policy, letter);
    RC_ASSERT(oracle == expected);

    const BuiltTable built = build_table_or_fail(checked);
    Input input(*built.table);
    const InterpretResult actual = runtime_decide(*built.table, letter, &input);
    if (actual != expected) {
      RC_FAIL("letter " + describe_letter(policy, letter) + "\n  expected " + show(expected) +
              "\n  runtime  " + show(actual));
    }
    RC_ASSERT(built.table->verb_effect(actual.verb) != Effect::kCreate);
    const Decision d = built.table->decide(input);
    RC_ASSERT(built.table->rule_name(d) == std::string_view("default"));
    RC_ASSERT(built.table->reason(d) == "invalid input: " + policy.fields[*first].name);
  });
}

}  // namespace
}  // namespace replaygate::testing
