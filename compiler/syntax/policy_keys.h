// The words of a YAML policy, one list per place: the keys the YAML front-end (yaml_policy.cc)
// accepts in each mapping, and the operator, requirement and value words the checker (check.cc)
// accepts. Both read these lists and keep no copy of their own, so that the JSON Schema of the YAML
// form (schemas/policy.schema.json) can be checked against them: tests/tools/schema_keys_test.cc
// fails when a key is accepted here and missing from the schema, or the reverse.
//
// Header-only; the standard library only. The lists are immutable after static initialisation
// and safe to read from any thread.
#pragma once

#include <string>
#include <vector>

namespace replaygate::policy_keys {

// The top-level keys (policy, revision, inputs, ...).
inline const std::vector<std::string> kTop = {"policy", "revision",  "description",    "inputs",
                                              "verbs",  "default",   "default_reason", "constants",
                                              "rules",  "sensitive", "invariants"};
// The properties of one input under `inputs:`.
inline const std::vector<std::string> kInput = {"type",
                                                "optional",
                                                "empty_means_absent",
                                                "min",
                                                "max",
                                                "values",
                                                "domain",
                                                "description",
                                                "derived",
                                                "source",
                                                "idempotency_key",
                                                "classify"};
// `classify: {from, rows, fallback}`.
inline const std::vector<std::string> kClassify = {"from", "rows", "fallback"};
// The matchers of a classify row (exactly one per row, beside `class`).
inline const std::vector<std::string> kClassifyMatchers = {"in", "prefix", "range"};
// A classify row: `class` and one matcher.
inline const std::vector<std::string> kClassifyRow = {"class", "in", "prefix", "range"};
// The properties of one verb under `verbs:`.
inline const std::vector<std::string> kVerb = {"effect", "description"};
// A guard rule.
inline const std::vector<std::string> kGuard = {"guard", "when", "verb", "reason"};
// A table rule.
inline const std::vector<std::string> kTable = {"table", "keys", "rows"};
// A table row written as a mapping (the other form is a list: keys..., verb).
inline const std::vector<std::string> kRow = {"keys", "verb", "id", "reason"};
// An invariant.
inline const std::vector<std::string> kInvariant = {"invariant", "when", "require", "reason"};
// The requirements of an invariant's `require:` (exactly one).
inline const std::vector<std::string> kRequire = {"verb_in", "verb_not_in", "effect_at_most",
                                                  "effect_not"};
// The operators of a condition written as a mapping, `field: {op: operand, ...}` (`absent` and
// `present` are whole matchers, `field: absent`, never operators). The names of ir::Op kEq..kGe.
inline const std::vector<std::string> kConditionOps = {"eq", "ne", "in", "not_in",
                                                       "lt", "le", "gt", "ge"};
// The operators of a derived bool, `derived: {op: [a, b]}`.
inline const std::vector<std::string> kDerivedOps = {"eq", "ne", "lt", "le", "gt", "ge"};
// The whole-matcher keywords of a condition (plain words only).
inline const std::vector<std::string> kKeywordMatchers = {"absent", "present"};

// Values: an input's `type`, a verb's `effect` (danger order), an input's `source`.
inline const std::vector<std::string> kTypes = {"string", "int", "bool", "enum"};
inline const std::vector<std::string> kEffects = {"none", "read", "copy", "create"};
inline const std::vector<std::string> kSources = {"letter", "operator", "record"};

}  // namespace replaygate::policy_keys
