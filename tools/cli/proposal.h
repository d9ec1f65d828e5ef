// A proposal file against a policy (docs/proposals.md, schemas/proposal.schema.json): the checks
// `proposal check` reports and `proposal apply` refuses on, and the apply itself.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/ir.h"
#include "tools/cli/commands.h"

namespace replaygate::cli {

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

// Adds `proposal apply` to `sub` (tools/cli/proposal_apply.cc); *runner runs it once parsed.
// Exit codes: diff's 0, 1 and 3; 4 when the proposal is refused (nothing written); 2 usage or I/O.
CLI::App* add_proposal_apply(CLI::App& sub, Runner* runner);

}  // namespace replaygate::cli
