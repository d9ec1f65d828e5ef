// The policy AST: what the author wrote, with spans, independent of the surface syntax.
//
// A front-end (YAML: compiler/syntax/yaml_policy.h; the .policy language:
// compiler/syntax/dsl_policy.h) produces an ast::Policy and reports only syntax and shape problems.
// Everything that needs the policy's meaning — resolving names, typing literals against fields,
// bounds, enums, required keys, ids — is check()'s job (compiler/check.h), so both front-ends get
// the same diagnostics for the same mistakes (with hints in the file's own syntax, Policy::syntax).
//
// Conventions:
//  * Optional members are std::optional when "not written" must be told apart from "written
//    empty"; check() reports missing required parts at the enclosing element's span. A part the
//    front-end found malformed (and reported) is left empty or marked, so check() stays quiet.
//  * Scalars stay text (Literal). Whether a literal was quoted matters: only bare `true`/`false`
//    are booleans, only bare `absent`/`present` are keywords, only bare words name constants.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/span.h"

namespace replaygate::ast {

// A name the author wrote (input, verb, constant, operator, type, effect, id).
struct Name {
  std::string text;
  Span span;
};

// A scalar value as written.
struct Literal {
  enum class Kind : uint8_t {
    kBare = 0,      // unquoted word or number: typed by where it is used
    kQuoted = 1,    // quoted text: always a string
    kNull = 2,      // an explicit or empty null (YAML `~`, `null`, `key:`)
    kWildcard = 3,  // the table-row wildcard (YAML: a quoted '*' in a row's keys)
  };
  Kind kind = Kind::kBare;
  std::string text;
  Span span;

  bool bare(std::string_view word) const { return kind == Kind::kBare && text == word; }
};

// A list of literals as written (enum values, `in` operands, table keys).
struct LiteralList {
  std::vector<Literal> items;
  Span span;
};

// A derived bool's definition. YAML: `derived: {lt: [message_revision, record_revision]}`
// (one op among eq, ne, lt, le, gt, ge, with two input names).
struct Derivation {
  Name op;
  std::vector<Name> operands;  // two input names, as written
  Span span;
};

// A classifier row. YAML: `{class: retryable, in: [408, 429]}`, `{class: c, prefix: ["5."]}`,
// `{class: c, range: [500, 599]}`; .policy: `in (408, 429) -> retryable`, `prefix ("5.") -> c`,
// `range (500, 599) -> c`.
struct ClassifyRow {
  std::optional<Name> cls;
  std::optional<Name> kind;  // "in" | "prefix" | "range" (check() reports any other)
  std::vector<Literal> operands;
  Span span;
};

// A classified input's definition (ir::Classifier). YAML:
//   classify: {from: http_status, rows: [...], fallback: unknown}
// .policy: `classify http_status { ROW... fallback unknown }` after the enum type.
struct Classifier {
  std::optional<Name> from;
  std::vector<ClassifyRow> rows;
  std::optional<Name> fallback;
  Span span;  // the `classify` key or keyword
};

struct Input {
  Name name;
  std::optional<Name> type;  // "string" | "int" | "bool" | "enum"
  std::optional<Literal> optional_flag;
  std::optional<Literal> empty_means_absent;
  std::optional<Literal> min;
  std::optional<Literal> max;
  std::optional<LiteralList> values;
  std::optional<LiteralList> domain;   // kString only: declared known values (ir::Field::domain)
  std::optional<Derivation> derived;   // kBool only (ir::Field::derived)
  std::optional<Classifier> classify;  // kEnum only (ir::Field::classify)
  // Who sets the input: "letter" (the default) or "operator" (ir::Field::operator_only). YAML
  // `source: operator`, DSL `source operator` after the type.
  std::optional<Name> source;
  // The letter's idempotency key (ir::Field::idempotency_key): YAML `idempotency_key: true`, DSL
  // `idempotency key` after the type and source (a bare `true` spanning the two words).
  std::optional<Literal> idempotency_key;
  std::optional<Literal> description;
  Span span;  // the input's definition (its name)
};

struct Verb {
  Name name;
  std::optional<Name> effect;  // "none" | "read" | "copy" | "create"
  std::optional<Literal> description;
  Span span;
};

struct Constant {
  Name name;
  Literal value;
  Span span;
};

// One condition on one field: `field: x` is op "eq", `field: [..]` is op "in", bare
// `field: absent` / `field: present` are ops "absent" / "present", and `field: {op: x, ...}`
// gives one Condition per op, in source order.
struct Condition {
  Name field;
  Name op;                        // as written, or implied by the shorthand
  bool operand_is_list = false;   // operands came from a list (`[a, b]`)
  std::vector<Literal> operands;  // empty for absent/present
  Span span;                      // the op (or the field for the shorthand forms)
  bool malformed = false;         // the front-end reported a problem here; check() skips it quietly
};

struct Guard {
  Name id;
  std::optional<std::vector<Condition>> when;  // nullopt: not written (or malformed, when_span set)
  Span when_span;
  std::optional<Name> verb;
  std::optional<Literal> reason;
  Span span;  // the `guard:` entry
};

struct Row {
  std::vector<Literal> keys;  // Kind::kWildcard for `*`
  std::optional<Name> verb;   // nullopt only when the row was too short to hold one
  std::optional<Name> id;
  std::optional<Literal> reason;
  Span span;
  Span keys_span;     // the keys (the row itself for the flow form)
  bool flow = false;  // written as one list: keys, then the verb
};

struct Table {
  Name id;
  std::optional<std::vector<Name>> keys;  // nullopt: not written (or malformed, keys_span set)
  Span keys_span;
  std::optional<std::vector<Row>> rows;  // nullopt: not written (or malformed, rows_span set)
  Span rows_span;
  Span span;  // the `table:` entry
};

struct Rule {
  enum class Kind : uint8_t { kGuard = 0, kTable = 1 };
  Kind kind = Kind::kGuard;
  Guard guard;  // kGuard
  Table table;  // kTable
};

// An invariant (ir::Invariant). YAML:
//   - invariant: committed_never_creates
//     when: {already_committed: true}     # optional; same condition syntax as a guard
//     require: {effect_not: create}       # exactly one of verb_in, verb_not_in (verb list or one
//                                         # verb), effect_at_most, effect_not (one effect)
//     reason: ...
struct Invariant {
  Name id;
  std::optional<std::vector<Condition>> when;  // nullopt: not written (every input)
  Span when_span;
  std::optional<Name> require_op;  // "verb_in" | "verb_not_in" | "effect_at_most" | "effect_not"
  std::vector<Name> operands;      // verb names, or one effect name
  Span require_span;
  std::optional<Literal> reason;
  Span span;  // the `invariant:` entry
};

// Which front-end read the policy: the checker words its hints in the file's own syntax
// (`default: hold` in YAML, `default hold` in a .policy file).
enum class Syntax : uint8_t { kYaml = 0, kDsl = 1 };

struct Policy {
  Syntax syntax = Syntax::kYaml;
  std::optional<Literal> id;
  std::optional<Literal> revision;
  std::optional<Literal> description;
  std::optional<std::vector<Input>> inputs;
  std::optional<std::vector<Verb>> verbs;
  std::optional<Name> default_verb;
  std::optional<Literal> default_reason;
  std::vector<Constant> constants;
  std::optional<std::vector<Rule>> rules;
  std::vector<Invariant> invariants;
  // Names of letter or record fields that carry secrets (prompts, credentials, signed URLs,
  // tokens). YAML: `sensitive: [prompt, signed_url]`. See ir::Policy::sensitive.
  std::optional<LiteralList> sensitive;
  Span span;  // the document (where missing top-level keys are reported)
  Span id_span;
};

}  // namespace replaygate::ast
