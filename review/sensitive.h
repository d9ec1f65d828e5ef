// Which field names carry secrets, for the commands that print or log field values (review,
// explain, decide --show-inputs): the policy's `sensitive` list (docs/policy-language.md) plus a
// built-in list of common secret names that is secret whatever the policy says. A value of such a
// field is never printed or logged; the field is named instead.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace replaygate::review {

// "prompt", "token", "password", ...: compared exactly (lower case).
const std::set<std::string>& builtin_sensitive_names();

// The built-in names plus `policy_names` (a policy's `sensitive` list; empty for a frozen table,
// which does not keep it).
std::set<std::string> sensitive_names(const std::vector<std::string>& policy_names);

}  // namespace replaygate::review
