// A per-rule trace of one decision over a loaded table, for people (`replaygate explain --table`).
//
// trace(table, input) walks the table the slow, obvious way and records every step: each field's
// validation and interned atom, then each rule in order until one decides: for a guard every
// condition evaluated (up to the first that fails) with the atom it saw, for a table the key tuple
// looked up and the row that hit, found by a linear scan of the rows (most concrete keys wins, ties
// go to the earlier row) rather than decide()'s hash probes. Its decision equals decide()'s for
// every input (tested on the shipped policy and random inputs); decide() itself is untouched.
// outline() and structure() read the same stored rules without an input: outline() for pictures,
// structure() in full (atoms included) for compiler/lift.h.
//
// Standard library only, like the rest of runtime/. Allocates; never throws (beyond
// std::bad_alloc); never does I/O. Thread-safe like decide(): the Table is only read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/table.h"

namespace replaygate {

struct TraceField {
  bool valid = true;
  bool absent = false;     // valid and absent (optional field: missing, null, or "" when so)
  uint32_t atom = 0;       // interned atom when valid (0 = absent)
  std::string atom_label;  // Table::atom_label(field, atom) when valid
  std::string problem;     // when !valid: "missing", "null", "not an int", "below its min 0", ...
  bool derived = false;    // computed after validation as decide() does, never read from the input
};

struct TraceCondition {
  uint32_t field = 0;
  std::string op;  // "eq", "ne", "in", "not_in", "lt", "le", "gt", "ge", "absent", "present"
  std::string
      operand;  // the condition's operand as the table stores it ("max_attempts (3)"), or ""
  bool holds = false;
};

struct TraceRule {
  uint32_t rule = 0;  // index among the table's rules (guards and tables, in order)
  bool is_table = false;
  std::string id;  // the guard id (catalog entry id) or the table id
  bool matched = false;
  uint32_t catalog = 0;  // when matched: catalog index of the guard or the winning row
  // Guards: the conditions evaluated, in order, ending at the first that does not hold.
  std::vector<TraceCondition> conditions;
  // Tables: the key fields and the labels of the input's atoms for them (the tuple looked up).
  std::vector<uint32_t> key_fields;
  std::vector<std::string> key_labels;
  uint32_t candidate_rows = 0;  // rows whose keys all match (the winner is among them)
};

struct Trace {
  Decision decision;
  std::vector<TraceField> fields;  // validated in declaration order; stops at the first invalid
  std::vector<TraceRule> rules;    // rules considered, in order; empty for invalid input
};

// Traces the decision for `input` (made for `table`; a shorter Input counts as unset there).
// Derived fields are skipped by validation and computed after it, exactly as decide() does: the
// input's value for one is ignored.
Trace trace(const Table& table, const Input& input);

// A derived field's definition as stored (runtime/table_format.h derivations): the bool `field`
// is `lhs op rhs` over two int fields, `op` an ir::Op code among eq ne lt le gt ge.
struct TraceDerivation {
  uint32_t field = 0;
  uint32_t op = 0;
  uint32_t lhs = 0, rhs = 0;
};
// Every derived field of `table`, ascending by field (verified at load). Cheap: no rule is read,
// unlike structure(). `explain --table` shows the formula of each.
std::vector<TraceDerivation> derivations(const Table& table);

// The decision structure of a loaded table, for pictures (`replaygate graph --table`).
struct OutlineRule {
  bool is_table = false;
  std::string id;                          // guard id or table id
  std::vector<TraceCondition> conditions;  // guards: every condition (`holds` unused)
  std::vector<uint32_t> key_fields;        // tables
  uint32_t catalog_begin = 0;              // catalog index of the guard or the first row
  uint32_t catalog_count = 0;              // 1 for a guard, the row count for a table
};
std::vector<OutlineRule> outline(const Table& table);

// The complete stored decision structure of a loaded table, atoms and all (numbering as in
// runtime/table_format.h), for tools that rebuild a policy from a table: compiler/lift.h, which
// `replaygate diff` uses to compare deployed tables. Everything here was verified at load.
struct StructureField {
  // String: the dictionary (strings the rules mention, sorted bytewise; atom 2 + i); enum: the
  // values in declaration order (atom 1 + i). Empty for other types.
  std::vector<std::string> dictionary;
  std::vector<int64_t> cuts;  // int: the cut points, ascending (atom 1 + count of cuts <= value)
  uint32_t atom_count = 0;    // including absent (0)
  bool derived = false;       // computed `lhs op rhs` over two int fields (table_format.h)
  uint32_t derived_op = 0;    // ir::Op code among eq ne lt le gt ge, when derived
  uint32_t derived_lhs = 0, derived_rhs = 0;
  // A classified enum (table_format.h classifiers): computed from field `classified_raw` by the
  // matchers in order, else class `classified_fallback`.
  bool classified = false;
  uint32_t classified_raw = 0;
  uint32_t classified_fallback = 0;
  struct Matcher {
    uint32_t kind = 0;       // format::ClassifierMatcherKind: 0 exact, 1 prefix, 2 int, 3 range
    uint32_t cls = 0;        // class index (the enum's dictionary index)
    uint32_t row = 0;        // the policy row it belongs to
    std::string text;        // exact, prefix
    int64_t lo = 0, hi = 0;  // int, range
  };
  std::vector<Matcher> matchers;  // evaluation order
};

struct StructureCondition {
  uint32_t field = 0;
  uint32_t op = 0;              // ir::Op code as written (decide() reads only `atoms`)
  std::string operand;          // as stored for dump: "3", "max_attempts (3)", ["a", "b"]
  std::vector<uint32_t> atoms;  // the atoms the condition accepts, ascending
};

inline constexpr uint32_t kStructureWildcard = 0xFFFFFFFFu;  // a row key that is `*`

struct StructureRule {
  bool is_table = false;
  std::string id;              // guard id or table id
  uint32_t catalog_begin = 0;  // catalog index of the guard or the table's first row
  uint32_t catalog_count = 0;  // 1 for a guard, the row count for a table
  std::vector<StructureCondition> conditions;   // guards, in order
  std::vector<uint32_t> key_fields;             // tables
  std::vector<std::vector<uint32_t>> row_keys;  // tables: per row, per key an atom or the wildcard
};

struct Structure {
  std::vector<StructureField> fields;  // declaration order
  std::vector<StructureRule> rules;    // evaluation order
};
Structure structure(const Table& table);

}  // namespace replaygate
