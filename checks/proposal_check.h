// A proposal file (docs/proposals.md, schemas/proposal.schema.json) checked against the policy it
// proposes rows for: RG501-RG509 at JSON positions (file:line:column). In: the proposal's text,
// the checked policy; out: diagnostics, as data. `proposal check` prints them, `proposal apply`
// refuses on an error, and the language server can report them. Thread-compatible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/ir.h"

namespace replaygate::checks {

// The members of a proposal entry that are not key values; every other member is one. `proposal
// check` refuses any other member that names no table key; tests/tools/schema_keys_test.cc checks
// schemas/proposal.schema.json against this list.
inline constexpr const char* kProposalEntryKeys[] = {"verb", "rationale", "evidence", "row_id"};

// The problems of the proposal `text` (read from `path`) for `policy`'s first decision table,
// RG501-RG509 at JSON positions, sorted. Empty: every entry names the table's keys with values of
// their inputs' types, a declared verb, no unknown key, no duplicate or conflicting entry, and no
// pair a row already decides.
std::vector<Diagnostic> check_proposal(std::string_view text, const std::string& path,
                                       const ir::Policy& policy);

}  // namespace replaygate::checks
