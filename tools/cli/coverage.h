// Test coverage for `replaygate test`: which guards, table rows and invariants the cases exercised.
//
// Computed on the checked IR with the reference interpreter (compiler/interpret.h), so it does not
// depend on the table. Definitions (docs/cli.md, "test"):
//  * a guard or a table row (a rule catalog entry, ir::rule_catalog) is covered when some case's
//    decision came from it;
//  * an invariant is covered when some case's input is valid and satisfies its premise (an empty
//    premise: any valid input);
//  * rule coverage in percent = covered (guards + rows) / (guards + rows) * 100; 100 for a policy
//    without rules. --min-coverage compares against this number; invariants are reported apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/interpret.h"
#include "compiler/ir.h"

namespace replaygate::cli {

struct Coverage {
  std::vector<bool> rules;       // per catalog entry
  std::vector<bool> invariants;  // per ir::Policy::invariants
  std::vector<bool> is_guard;    // per catalog entry
  size_t guards_total = 0, guards_covered = 0, rows_total = 0, rows_covered = 0;

  size_t rules_covered() const { return guards_covered + rows_covered; }
  size_t rules_total() const { return guards_total + rows_total; }
  double percent() const;
  size_t invariants_covered() const;
};

// Nothing covered yet, sized for `policy`.
Coverage empty_coverage(const ir::Policy& policy);

// Records one case: `decision` is interpret(policy, letter) (the caller has it already).
void record_case(const ir::Policy& policy, const Letter& letter, const InterpretResult& decision,
                 Coverage* coverage);

// One uncovered item, for `--coverage`: kind "guard", "row" or "invariant", its id and the
// 1-based source line (0 when unknown). Order: catalog order, then invariants in source order.
struct Uncovered {
  std::string kind;
  std::string id;
  uint32_t line = 0;
};
std::vector<Uncovered> uncovered_items(const ir::CheckedPolicy& checked, const Coverage& coverage);

}  // namespace replaygate::cli
