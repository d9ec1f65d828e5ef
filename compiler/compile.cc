// PLACEHOLDER until the YAML front-end lands (owner: front-end helper). Replace wholesale.
#include "compiler/compile.h"
namespace replaygate {
LoadedPolicy load_policy_file(const std::string& path) {
  LoadedPolicy out;
  out.io_error = true;
  out.io_message = "front-end not built yet: " + path;
  return out;
}
LoadedPolicy load_policy_text(std::string_view, const std::string& path) {
  return load_policy_file(path);
}
}  // namespace replaygate
