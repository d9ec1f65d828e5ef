// Condition-level evaluation over the checked IR, for the commands that explain a decision
// (`explain --policy`) or measure what test cases exercised (`test` coverage).
//
// Next to the reference interpreter on purpose: compiler/interpret.h decides a letter; this file
// says *why*: for one validated letter, whether
// each condition holds and, when it does not, what made it fail. It follows the semantics of
// compiler/ir.h exactly (absent satisfies only `absent`; a derived bool is computed from its two
// int fields, never read from the letter). The entry points are validate_letter() and
// check_condition(); tests compare its verdicts with interpret(). Its problem texts are the runtime
// trace's (runtime/problems.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/interpret.h"
#include "compiler/ir.h"

namespace replaygate {

// One field after validation: nullopt is absent.
using FieldValue = std::optional<LetterValue>;

struct ValidatedLetter {
  bool valid = false;
  uint32_t invalid_field = 0;  // when !valid: the first field, in declaration order, that failed
  std::string invalid_why;     // when !valid: "missing", "null", "not an int", "below min 0", ...
  std::vector<FieldValue> values;  // when valid: one per ir::Policy::fields
};

// Validates `letter` field by field in declaration order (the same rules as interpret()).
// Derived bools get their computed value. Never throws for a checked policy.
ValidatedLetter validate_letter(const ir::Policy& policy, const Letter& letter);

// Why a condition did not hold.
enum class FailWhy : uint8_t {
  kHolds = 0,   // it held
  kAbsent = 1,  // the field is absent (only `absent` accepts that)
  kValue = 2,   // the value is not (or is) one of the listed values, or `absent` saw a value
  kBound = 3,   // an int comparison failed
};
const char* fail_why_name(FailWhy why);  // "holds", "absent", "value", "bound"

// Evaluates one condition on validated values.
FailWhy check_condition(const ir::Policy& policy, const ir::Condition& condition,
                        const std::vector<FieldValue>& values);

// True when every condition holds (an empty list holds).
bool conditions_hold(const ir::Policy& policy, const std::vector<ir::Condition>& conditions,
                     const std::vector<FieldValue>& values);

// True when the row's keys all match (a wildcard matches anything, absent included).
bool row_matches(const ir::Policy& policy, const ir::Table& table, const ir::Row& row,
                 const std::vector<FieldValue>& values);

// Readable forms: `attempts >= max_attempts (3)`, `idempotency_key is absent`,
// `topic in ["a", "b"]` (enum values bare: `severity == high`); a literal as text
// ("payment.capture" quoted, 3, true).
std::string describe_condition(const ir::Policy& policy, const ir::Condition& condition);
std::string describe_literal(const ir::Value& value);
// The symbol for an op's word as the table stores it ("ge" -> ">=", "absent" -> "is absent"), the
// same symbols describe_condition() uses; "?" for an unknown word.
const char* op_word_symbol(std::string_view word);
// A validated value: `"payment.capture"`, `3`, `true`, or `absent`.
std::string describe_field_value(const FieldValue& value);

}  // namespace replaygate
