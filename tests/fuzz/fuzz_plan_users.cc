// libFuzzer target for the users file reader (redrive/plan/approval.h read_users()): any bytes,
// read as a users file, give an error or users with unique names, known roles and a key for
// every approver; never a crash, a hang or a leak. Key paths are not followed (no base folder
// is given, and a relative path names no file here).
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/plan_users/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <cstddef>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>

#include "redrive/plan/approval.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  replaygate::plan::Users users;
  const std::string error = replaygate::plan::read_users(in, "users.json", "", &users);
  if (!error.empty()) return 0;
  std::set<std::string> names;
  for (const replaygate::plan::User& u : users.users) {
    if (!names.insert(u.name).second) __builtin_trap();
    if (u.role != "viewer" && u.role != "operator" && u.role != "approver") __builtin_trap();
    if (u.role == "approver" && !u.has_key) __builtin_trap();
    // The console's login: an Argon2id string or none.
    if (!u.password_hash.empty() && u.password_hash.rfind("$argon2id$", 0) != 0) __builtin_trap();
  }
  return 0;
}
