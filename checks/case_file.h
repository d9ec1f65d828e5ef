// The test-case file of `replaygate test` (one YAML document) read into cases, checked against a
// policy: RG401-RG407, RG108, RG109 (docs/diagnostics.md). In: the file's YAML tree, the policy
// and its table; out: the cases and diagnostics, as data. `test` runs the cases; `convert --kind
// cases --to json` writes what this reader understood (checks/json_export.h); the language
// server can report the diagnostics.
//
// Case file (docs/cli.md):
//   policy: replay_gate.yaml          # optional; relative to the case file; must be POLICY
//   cases:
//     - name: timeout on first attempt replays
//       input: {topic: payment.capture, error_class: timeout, attempts: 1, ...}
//       expect: replay_once           # verb
//       rule: known_failures:payment.capture/timeout   # optional
//       reason: ...                   # optional
// Input values are read by the input's declared type, as policy rows read them: for a string or
// enum input a plain scalar is its text (`429` is "429", `007` is "007"), except plain true/false,
// which are refused (RG108: quote them, or use {json: ...}). For an int or bool input (and under
// {json: VALUE}) a value is typed the way JSON letters are: quoted scalars are strings; plain
// true/false are booleans; plain decimal integers are ints; other plain scalars are strings.
// Everywhere plain null/~ or an empty value is null (absent), and a sequence or another mapping is
// an invalid value. {json: VALUE} (a mapping with the one key json) gives VALUE as a JSON letter
// carries it, so `{json: 429}` tests the int 429 where a string belongs. A value of the wrong type
// for its field is passed to the runtime as invalid (so invalid inputs can be tested).
// Problems in the case file are diagnostics RG401-RG407 (RG407: a value for a derived input,
// which is computed, never read), RG108 (above), and RG109 for a plain scalar YAML reads as a
// number other than a decimal int (`01`, `+1`, `0x1`, `0o7`, `0b1`, `1_000`, `1e3`, `.5`) given
// to an int or bool input or under {json: ...}, as in a policy (exit 1, no case runs).
//
// Nothing prints. Thread-compatible (reads its arguments only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/diagnostic.h"
#include "common/yaml_tree.h"
#include "compiler/interpret.h"
#include "compiler/ir.h"
#include "runtime/table.h"

namespace replaygate::checks {

// The largest case file `test` reads (16 MiB).
inline constexpr size_t kMaxCaseFileBytes = size_t{16} << 20;

// The keys each mapping of a case file accepts: the file, one case, and an input value's explicit
// form {json: VALUE}. The reader accepts exactly these; tests/tools/schema_keys_test.cc checks
// schemas/cases.schema.json against them.
inline const std::vector<std::string> kCaseFileKeys = {"policy", "description", "cases"};
inline const std::vector<std::string> kCaseKeys = {"name",   "description", "input",
                                                   "expect", "rule",        "reason"};
inline const std::vector<std::string> kExplicitJsonKeys = {"json"};

struct Case {
  std::string name;
  std::optional<std::string> description;
  const yaml::Node* input = nullptr;  // a mapping or null, inside the caller's yaml::Document
  uint32_t expect_verb = 0;
  std::string expect_verb_name;
  bool has_rule = false;
  std::string rule;
  bool has_reason = false;
  std::string reason;
};

struct CaseFile {
  std::optional<std::string> policy;  // the `policy:` key as written (relative to the file)
  std::optional<std::string> description;
  std::vector<Case> cases;  // those without errors, in file order
};

// Reads the case file whose strict YAML tree is `root` (yaml::parse() without errors), found at
// `path`, as cases for `policy` (checked; its file `policy_path`, which a `policy:` key must name)
// and `table` (`policy` lowered: the same field indices). Appends every problem to *diagnostics
// (unsorted); the file may be run only when none is an error. Each Case::input points into
// `root`, which must outlive the result.
CaseFile read_case_file(const yaml::Node& root, const std::string& path,
                        const std::string& policy_path, const Table& table,
                        const ir::Policy& policy, std::vector<Diagnostic>* diagnostics);

// A case input value for an input of type `type`, read by that type as a policy row reads it
// (the rules above): for a string or enum input a plain scalar is its text (`429` is "429");
// {json: VALUE} is VALUE as a JSON letter carries it, to test a value of the wrong type.
LetterValue case_value(const yaml::Node& value, FieldType type);

// A case input value as a JSON letter would carry it: quoted scalars are strings, plain true and
// false booleans, a plain -?[0-9]+ an int (one beyond int64 an invalid int), plain null, ~ or
// nothing null, other plain scalars strings; a sequence or mapping is an invalid value.
LetterValue letter_value(const yaml::Node& value);

// The explicit form {json: VALUE} (a mapping with the key json): VALUE, else nullptr.
const yaml::Node* explicit_json(const yaml::Node& value);

}  // namespace replaygate::checks
