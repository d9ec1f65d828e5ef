// The console's configuration, console.yaml (docs/console.md): what it reads and where it writes.
//
// In: the file's path. Out: a Config with every path resolved from the file's folder, or why the
// file is refused (one sentence naming the file and the key). Read with the project's strict YAML
// reader (common/yaml_tree.h): an unknown key is refused, so a typo never loosens a limit.
//
//   ledger: ledger.db              # required: a ledger URL or SQLite path
//   ledger_scope: default
//   users: users.json              # required: the users file of the plans (console/users.h)
//   policy: policies/replay_gate.yaml   # the policy (or table: T.rgt plus policy: P)
//   audit: console.audit.log       # required: the console's own entries and its acts
//   audit_logs: [gate-a.audit.log] # the gates' logs, shown with their verification status
//   session_idle_minutes: 30       # a session unused this long ends
//   session_max_hours: 8           # a session ends this long after its login, used or not
//   login_failures_per_user: 5     # failed logins of one name in login_window_minutes ...
//   login_failures_per_address: 20 # ... or from one address: then refused until the window ends
//   login_window_minutes: 15
//
// Threads: any.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace replaygate::console {

struct Config {
  std::string path;  // the file read
  std::string ledger, ledger_scope = "default", users, policy, table, audit;
  std::vector<std::string> audit_logs;
  int64_t session_idle_minutes = 30, session_max_hours = 8;
  int64_t login_failures_per_user = 5, login_failures_per_address = 20, login_window_minutes = 15;
};

// Reads console.yaml: "" or why not.
std::string read_config(const std::string& path, Config* out);
// The same on the file's text (`path` names it and resolves relative paths): any bytes in.
std::string parse_config(std::string_view text, const std::string& path, Config* out);

}  // namespace replaygate::console
