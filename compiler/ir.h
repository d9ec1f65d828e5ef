// The checked policy (IR): the one type every stage after `check` reads, front-end independent.
//
// Produced by check() (compiler/check.h) from a front-end's AST; consumed by the analysis
// (compiler/analysis/analysis.h), the lowering to table bytes (compiler/lower.h) and the reference
// interpreter (compiler/interpret.h). The IR holds no source text: spans live in the side table
// `SourceMap`, indexed by the same positions as the IR vectors.
//
// Semantics (the contract, see ../shared/DESIGN.md and docs/policy-language.md):
//  * Inputs are validated first: a required field missing, null, of the wrong type, out of its int
//    bounds or outside its enum makes the decision the policy default ("invalid input: FIELD").
//  * An optional field may be absent (missing, JSON null, or "" when `empty_means_absent`).
//    A present optional field is validated like a required one: a wrong type, an out-of-bounds
//    int or a value outside its enum is invalid input, never "absent".
//    Absent satisfies only Op::kAbsent; every other condition is false on an absent value.
//  * Rules are evaluated in order; the first that matches decides. A guard matches when all its
//    conditions hold. A table matches when its key tuple hits a row; the row with the most concrete
//    (non-wildcard) keys wins, ties go to the earlier row (the checker rejects ties with different
//    verbs). A wildcard key matches any value, absent included. No row: evaluation goes on.
//  * Nothing matched: the default verb (effect must be kNone).
//  * Strings match exactly, byte for byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/span.h"
#include "runtime/codes.h"

namespace replaygate::ir {

// The on-disk codes are the table format's (runtime/codes.h): the IR uses the same enums.
using FieldType = ::replaygate::FieldType;
using Effect = ::replaygate::Effect;  // danger order: none < read < copy < create
using Op = ::replaygate::Op;
using ::replaygate::effect_name;
using ::replaygate::field_type_name;
using ::replaygate::op_name;

// A literal of a field's type. Enum values are strings.
struct Value {
  enum class Kind : uint8_t { kString = 0, kInt = 1, kBool = 2 };
  Kind kind = Kind::kString;
  std::string str;
  int64_t i = 0;
  bool b = false;
  bool operator==(const Value&) const = default;

  static Value String(std::string s) { return Value{Kind::kString, std::move(s), 0, false}; }
  static Value Int(int64_t v) { return Value{Kind::kInt, {}, v, false}; }
  static Value Bool(bool v) { return Value{Kind::kBool, {}, 0, v}; }
};

// A classifier (issue 20 §3): an enum input computed after validation from a raw string or int
// input by ordered matching; the first row that takes the raw value gives its class, and a raw
// value no row takes (or an absent one) gets `fallback`. No regular expressions: exact values,
// string prefixes, inclusive int ranges.
struct ClassifyRow {
  enum class Kind : uint8_t {
    kIn = 0,      // `values`: exact values (strings, or ints for an int raw input)
    kPrefix = 1,  // `values`: strings; the raw string starts with one of them (byte for byte)
    kRange = 2,   // `values`: two ints lo, hi; lo <= raw <= hi
  };
  Kind kind = Kind::kIn;
  std::vector<Value> values;  // non-empty; kRange exactly two
  uint32_t cls = 0;           // index into the classified field's enum_values
  bool operator==(const ClassifyRow&) const = default;
};

struct Classifier {
  uint32_t from = 0;  // index into Policy::fields: a kString or kInt field declared before this one
  std::vector<ClassifyRow> rows;  // evaluation order; the first that takes the raw value wins
  uint32_t fallback = 0;          // index into the classified field's enum_values
  bool operator==(const Classifier&) const = default;
};

// Whether `row` takes the raw value `raw` (a string for a kString raw input, an int for kInt).
bool classify_row_takes(const ClassifyRow& row, const Value& raw);
// The class index `raw` gets: the first row that takes it, else the fallback; nullopt raw (an
// absent value) gets the fallback.
uint32_t classify(const Classifier& classifier, const std::optional<Value>& raw);

// A derived bool (issue 5): `lhs op rhs` over two required int fields, computed after validation,
// never read from the letter (a letter's value for it is ignored). The analysis treats it as a free
// bool, so the partition stays finite. Example: stale = message_revision < record_revision.
struct Derivation {
  uint32_t lhs = 0;  // index into Policy::fields, a required kInt field declared before this one
  Op op = Op::kLt;   // kEq, kNe, kLt, kLe, kGt, kGe
  uint32_t rhs = 0;  // index into Policy::fields, a required kInt field declared before this one
  bool operator==(const Derivation&) const = default;
};

// Who may supply an input's value. Tools that read letters, dumps or broker records (decide,
// explain, the JSONL binding, the kafka mapping) never take the value of a kOperator or kRecord
// input from them and leave it unset, so the policy's handling of an absent (or, when required,
// missing) value applies: fail closed. Test case files set any input.
enum class InputSource : uint8_t {
  kLetter = 0,    // the default: a letter, or (review) the operation record, else the message
  kOperator = 1,  // only an operator (YAML `source: operator`): `review --confirm` sets a bool one
  kRecord = 2,    // only the durable operation record (YAML `source: record`): review reads it
                  // from the record file and ignores (and reports) a value the message offers
};

struct Field {
  std::string name;
  FieldType type = FieldType::kString;
  bool optional = false;
  bool empty_means_absent = false;       // kString only: "" counts as absent.
  std::optional<int64_t> min;            // kInt only, inclusive.
  std::optional<int64_t> max;            // kInt only, inclusive.
  std::vector<std::string> enum_values;  // kEnum only, declaration order, unique.
  std::string description;
  // kString only: the values the author declares known (sorted order not required, unique). They
  // do not restrict validation (any other string is still a valid "other"); the analysis uses them
  // as a finite domain, so it can report gaps: known combinations that fall to the default.
  std::vector<std::string> domain;
  std::optional<Derivation> derived;  // kBool only, never optional: computed, see Derivation
  // Who may supply the input's value (YAML `source: NAME`, DSL `source NAME`; see InputSource).
  // Never kOperator or kRecord on a derived field (nobody sets a derived one).
  InputSource source = InputSource::kLetter;
  // kString only, at most one field per policy (RG139): the field whose value is the letter's
  // idempotency key, the key the replay ledger claims (docs/ledger.md, "Which key"). It changes no
  // decision; the table stores it (FieldRecord::idempotency_key) for `decide --ledger`.
  bool idempotency_key = false;
  // kEnum only, never optional: computed from another input, see Classifier. Its enum_values are
  // the classes. Last, with an initializer, so aggregate initializers that stop before it stay
  // valid.
  std::optional<Classifier> classify = std::nullopt;
  bool operator==(const Field&) const = default;
};

struct Verb {
  std::string name;
  Effect effect = Effect::kNone;
  std::string description;  // what carrying the verb out does, in plain words.
  bool operator==(const Verb&) const = default;
};

// Only integer constants exist; conditions keep the constant's name for printing (dump, convert).
struct Constant {
  std::string name;
  int64_t value = 0;
  bool operator==(const Constant&) const = default;
};

struct Condition {
  uint32_t field = 0;  // index into Policy::fields
  Op op = Op::kEq;
  std::vector<Value> values;
  std::string constant;  // name of the constant the single operand came from, or "".
  bool operator==(const Condition&) const = default;
};

struct Guard {
  std::string id;
  std::string reason;
  std::vector<Condition> conditions;  // conjunction, never empty
  uint32_t verb = 0;                  // index into Policy::verbs
  bool operator==(const Guard&) const = default;
};

struct Row {
  std::string
      id;  // explicit, or derived by check(): "<table>:<k1>/<k2>/..." with "*" for wildcards
  std::string reason;
  std::vector<std::optional<Value>> keys;  // one per Table::key_fields; nullopt is the wildcard `*`
  uint32_t verb = 0;
  bool operator==(const Row&) const = default;
};

struct Table {
  std::string id;
  std::vector<uint32_t> key_fields;  // indices into Policy::fields, 1..8 keys
  std::vector<Row> rows;             // source order
  bool operator==(const Table&) const = default;
};

using Rule = std::variant<Guard, Table>;

// What an invariant requires of the verb every matching input gets.
enum class InvariantOp : uint8_t {
  kVerbIn = 0,        // the verb is one of `verbs`
  kVerbNotIn = 1,     // the verb is none of `verbs`
  kEffectAtMost = 2,  // the verb's effect is <= `effect` (danger order)
  kEffectNot = 3,     // the verb's effect is not `effect`
};

// A property the compiler proves over every valid input (issue 3): for every input for which all
// `conditions` hold (every valid input when empty), the decided verb satisfies `op`. Invalid
// inputs always get the default verb, whose effect is none (the built-in invariant). Invariants do
// not change any decision and are not part of the table's decision sections.
struct Invariant {
  std::string id;
  std::string reason;
  std::vector<Condition> conditions;  // premise, a conjunction; may be empty
  InvariantOp op = InvariantOp::kVerbIn;
  std::vector<uint32_t> verbs;    // kVerbIn/kVerbNotIn: indices into Policy::verbs, >= 1
  Effect effect = Effect::kNone;  // kEffectAtMost/kEffectNot
  bool operator==(const Invariant&) const = default;
};

struct Policy {
  std::string id;
  int64_t revision = 0;
  std::string description;
  std::vector<Field> fields;
  std::vector<Verb> verbs;
  uint32_t default_verb = 0;
  std::string default_reason;  // reason reported when no rule matches
  std::vector<Constant> constants;
  std::vector<Rule> rules;
  std::vector<Invariant> invariants;  // source order
  // Names of letter or record fields (inputs or not) that carry secrets: tools never print or log
  // their values, only a reference (`<redacted: field NAME>`). Not part of the table: they do not
  // change any decision. Unique, non-empty, source order.
  std::vector<std::string> sensitive;
  bool operator==(const Policy&) const = default;
};

// The policy's first decision table (the one proposals add rows to: docs/proposals.md), or null.
inline const Table* first_table(const Policy& policy) {
  for (const Rule& rule : policy.rules) {
    if (const Table* table = std::get_if<Table>(&rule)) return table;
  }
  return nullptr;
}

// Source positions (common/span.h), under the IR's name.
using Span = ::replaygate::Span;

// Where a classifier's parts came from (ir::Classifier).
struct ClassifierSpans {
  Span classifier;         // the `classify` key or keyword
  Span fallback;           // the fallback class
  std::vector<Span> rows;  // per ClassifyRow
};

// Where each IR element came from. Indices mirror Policy's vectors.
struct SourceMap {
  std::string path;          // as given on the command line, for diagnostics only
  Span policy;               // the document (or the `policy:` key)
  std::vector<Span> fields;  // per Policy::fields
  std::vector<Span> verbs;   // per Policy::verbs
  Span default_verb;
  std::vector<Span> constants;                // per Policy::constants
  std::vector<Span> rules;                    // per Policy::rules (the guard, or the table header)
  std::vector<std::vector<Span>> conditions;  // per rule: per guard condition (empty for tables)
  std::vector<std::vector<Span>> rows;        // per rule: per table row (empty for guards)
  std::vector<Span> invariants;               // per Policy::invariants
  std::vector<std::vector<Span>> invariant_conditions;  // per invariant: per premise condition
  // Per field (empty, or as long as `fields`): where its classifier's parts are; default spans
  // for a field without one.
  std::vector<ClassifierSpans> classifiers;
};

// What the compiler hands on: the IR, where it came from, and the provenance that goes into the
// table's provenance section.
struct CheckedPolicy {
  Policy policy;
  SourceMap source;
  std::string source_base_name;  // base name only, never a directory (determinism)
  std::string source_digest;     // hex XXH3-128 of the source bytes
};

// The rule catalog: guards and table rows flattened in evaluation order. A decision names its rule
// by catalog index; the table format, the runtime and the interpreter all use this numbering.
struct CatalogEntry {
  uint32_t rule = 0;  // index into Policy::rules
  uint32_t row = 0;   // row index for tables, 0 for guards
};
std::vector<CatalogEntry> rule_catalog(const Policy& policy);

const char* input_source_name(InputSource source);  // "letter", "operator", "record"
// `a op b` for the comparison ops kEq, kNe, kLt, kLe, kGt and kGe on ints: how a condition's
// bound and a Derivation's value are evaluated. false
// for every other op (kIn, kNotIn, kAbsent, kPresent do not compare two ints).
bool compare(Op op, int64_t a, int64_t b);
// "verb_in", "verb_not_in", "effect_at_most", "effect_not" (the YAML spelling).
const char* invariant_op_name(InvariantOp op);

}  // namespace replaygate::ir
