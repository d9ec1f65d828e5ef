// A per-rule trace of one decision over a loaded table, for people (`replaygate explain --table`).
//
// trace(table, input) walks the table the slow, obvious way and records every step: each field's
// validation and interned atom, then each rule in order until one decides: for a guard every
// condition evaluated (up to the first that fails) with the atom it saw, for a table the key tuple
// looked up and the row that hit, found by a linear scan of the rows (most concrete keys wins, ties
// go to the earlier row) rather than decide()'s hash probes. Its decision equals decide()'s for
// every input (tested on the shipped policy and random inputs); decide() itself is untouched.
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
Trace trace(const Table& table, const Input& input);

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

}  // namespace replaygate
