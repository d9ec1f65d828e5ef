// The secret field names shared by review, explain and decide --show-inputs (see sensitive.h).
#include "review/sensitive.h"

namespace replaygate::review {

const std::set<std::string>& builtin_sensitive_names() {
  static const std::set<std::string> names = {
      "prompt",  "credentials",   "credential", "signed_url", "token",  "access_token",
      "api_key", "authorization", "password",   "secret",     "cookie", "refresh_token"};
  return names;
}

std::set<std::string> sensitive_names(const std::vector<std::string>& policy_names) {
  std::set<std::string> names = builtin_sensitive_names();
  names.insert(policy_names.begin(), policy_names.end());
  return names;
}

}  // namespace replaygate::review
