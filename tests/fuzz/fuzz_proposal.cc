// libFuzzer target for proposal files (`replaygate proposal check PROPOSAL --policy P`,
// RG501-RG509, docs/proposals.md): any bytes, as a proposal for policies/replay_gate.yaml, run
// through the whole command in this process (tools/cli/commands.h run()) must end with exit 0 (a
// valid proposal), 1 (diagnostics) or 2 (the file cannot be read); and `proposal compare` of the
// bytes with themselves must end with 0, 1 only when check found a conflict (RG508: the file
// gives one group two verbs), or 2 (not a proposal).
// Never a crash, a hang or a leak. The commands print: run with -close_fd_mask=3 (tools/fuzz.sh).
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/proposal/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_support.h"
#include "tests/support/paths.h"
#include "tools/cli/commands.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = replaygate::fuzz::memory_file(data, size);
  std::string program = "replaygate", proposal = "proposal", check = "check", compare = "compare",
              flag = "--policy", format = "--format", json = "json";
  std::string policy = std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml";
  std::string file = "/proc/self/fd/" + std::to_string(fd);
  std::vector<char*> argv = {program.data(), proposal.data(), check.data(),
                             file.data(),    flag.data(),     policy.data(),
                             format.data(),  json.data(),     nullptr};
  const int checked = replaygate::cli::run(static_cast<int>(argv.size()) - 1, argv.data());
  if (checked < 0 || checked > 2) __builtin_trap();
  std::vector<char*> same = {program.data(), proposal.data(), compare.data(),
                             file.data(),    file.data(),     nullptr};
  const int compared = replaygate::cli::run(static_cast<int>(same.size()) - 1, same.data());
  close(fd);
  if (compared != 0 && compared != 2 && !(compared == 1 && checked == 1)) __builtin_trap();
  return 0;
}
