// The reference interpreter: the policy's semantics evaluated straight over the checked IR.
//
// Input: a checked ir::Policy (it passed check() without errors) and one letter, a value per
// declared field. Output: the decision, numbered like the table runtime's (verb index, catalog
// index of the deciding rule per ir::rule_catalog(), invalid field index). The one entry point is
// interpret().
//
// This is the oracle the frozen-table runtime is tested against, so it is slow and obvious on
// purpose: it shares no code with compiler/analysis/partition.h, compiler/lower.h or runtime/,
// compares strings byte for byte and ints numerically, walks the rules in order and scans every
// row. The semantics it implements are the ones in compiler/ir.h's header comment and
// shared/DESIGN.md:
//  * Validation first, every field in declaration order; the first invalid field makes the
//    decision the default with kind kInvalidInput. A field is invalid when it is
//      - required and missing or null (or "" with empty_means_absent),
//      - kInvalid (present but unreadable), whether required or optional,
//      - of the wrong kind for its type (an enum takes a string; a bool, an int, a string their
//      own),
//      - an int outside [min, max], or an enum string that is not one of its values.
//    An optional field that is missing, null, or "" with empty_means_absent is absent.
//    A derived field (ir::Field::derived) is not validated: the letter's value is ignored and,
//    after validation, the field is the bool `lhs op rhs` over its two int operands.
//  * Absent satisfies only Op::kAbsent; every other condition is false on it (kNe, kNotIn too).
//  * Guards: all conditions hold. Tables: among rows whose keys all match (a wildcard matches any
//    value, absent included; a concrete key matches an equal present value), the row with the most
//    concrete keys wins, ties go to the earlier row. No row: the next rule.
//  * Nothing matched: the default verb, kind kDefault.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir.h"

namespace replaygate {

// One field's value in a letter, as a reader of the letter's JSON would hand it on.
struct LetterValue {
  enum class Kind : uint8_t {
    kMissing = 0,  // the key is not in the record
    kNull,         // JSON null
    kString,
    kInt,
    kBool,
    kInvalid,  // present but unreadable (an object, a float, an int that overflows, ...)
  };
  Kind kind = Kind::kMissing;
  std::string s;   // kString: any bytes, NUL included
  int64_t i = 0;   // kInt
  bool b = false;  // kBool
  bool operator==(const LetterValue&) const = default;

  static LetterValue Missing() { return {}; }
  static LetterValue Null() { return {Kind::kNull, {}, 0, false}; }
  static LetterValue String(std::string v) { return {Kind::kString, std::move(v), 0, false}; }
  static LetterValue Int(int64_t v) { return {Kind::kInt, {}, v, false}; }
  static LetterValue Bool(bool v) { return {Kind::kBool, {}, 0, v}; }
  static LetterValue Invalid() { return {Kind::kInvalid, {}, 0, false}; }
};

// Indexed by ir::Policy::fields. A letter shorter than the field list has the rest missing;
// entries past the field list are ignored.
using Letter = std::vector<LetterValue>;

enum class InterpretKind : uint8_t {
  kRule = 0,          // a guard or a table row decided; `rule` is its catalog index
  kDefault = 1,       // no rule matched
  kInvalidInput = 2,  // `invalid_field` failed validation
};

struct InterpretResult {
  uint32_t verb = 0;  // index into Policy::verbs
  InterpretKind kind = InterpretKind::kDefault;
  uint32_t rule = 0;           // catalog index when kind == kRule, else 0
  uint32_t invalid_field = 0;  // field index when kind == kInvalidInput, else 0
  bool operator==(const InterpretResult&) const = default;
};

// Decides `letter` under `policy`. Never throws for a checked policy; a policy that violates the
// IR's invariants (an index out of range) is a precondition violation.
InterpretResult interpret(const ir::Policy& policy, const Letter& letter);

// "rule", "default", "invalid_input".
const char* interpret_kind_name(InterpretKind kind);

// A readable form of one value: "a\x00b" (quoted, escaped), 3, true, null, <missing>, <invalid>.
std::string describe_value(const LetterValue& value);

// A readable one-line form of a letter for test failures: {topic="a\x00b", attempts=3,
// key=<missing>}.
std::string describe_letter(const ir::Policy& policy, const Letter& letter);

}  // namespace replaygate
