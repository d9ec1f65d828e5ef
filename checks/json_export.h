// What replaygate's own readers understood of a policy, a test-case file or a mapping file, as a
// JSON document of the YAML file's shape: `replaygate convert --to json` (docs/cli.md). The JSON
// Schemas in schemas/ describe these documents, and the schema tests validate every shipped and
// golden file's export against them, so the schemas are checked against the real parser rather
// than against another YAML library's reading of the file.
//
// Each document is built from the reader's result, never from the YAML text: values are typed the
// way the reader typed them (ints as numbers, booleans as booleans, a string input's plain `429` as
// the string "429"), and a policy exports the same document from its YAML and its .policy form
// (it is printed from the checked IR). Parts the reader derives are left out as print_yaml() leaves
// them out (a row's derived id, the default reason "no rule matched", false flags). The documents
// are for tools and schemas: replaygate does not read JSON policies.
//
// Nothing prints; thread-compatible. Strings are kept as bytes: the caller dumps the document
// with an error handler (a .policy string need not be UTF-8: convert refuses that first).
#pragma once

#include <nlohmann/json.hpp>

#include "checks/case_file.h"
#include "compiler/ir.h"
#include "inputs/mapping.h"
#include "runtime/table.h"

namespace replaygate::checks {

// The policy as a document of its YAML form's shape (schemas/policy.schema.json).
nlohmann::ordered_json policy_json(const ir::Policy& policy);

// A case file read without errors (read_case_file()) as a document of its own shape
// (schemas/cases.schema.json); `table` is the table the cases were read against. The yaml nodes
// the cases point into must still live.
nlohmann::ordered_json cases_json(const CaseFile& file, const Table& table);

// A mapping file read without errors (load_mapping_file()) as a document of its own shape
// (schemas/mapping.schema.json); its values are typed by the inputs' types it was read with.
nlohmann::ordered_json mapping_json(const inputs::Mapping& mapping);

}  // namespace replaygate::checks
