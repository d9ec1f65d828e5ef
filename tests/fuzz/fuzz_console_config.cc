// libFuzzer target for the console's configuration reader (console/config.h parse_config()): any
// bytes, read as console.yaml, give an error or a Config naming a ledger, a users file, an audit
// log and a policy, with every limit from 1; never a crash, a hang or a leak.
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/console_config/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "console/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  replaygate::console::Config c;
  const std::string error = replaygate::console::parse_config(
      std::string_view(reinterpret_cast<const char*>(data), size), "cfg/console.yaml", &c);
  if (!error.empty()) return 0;
  if (c.ledger.empty() || c.users.empty() || c.audit.empty() || c.policy.empty()) __builtin_trap();
  if (c.session_idle_minutes < 1 || c.session_max_hours < 1 || c.login_failures_per_user < 1 ||
      c.login_failures_per_address < 1 || c.login_window_minutes < 1) {
    __builtin_trap();
  }
  return 0;
}
