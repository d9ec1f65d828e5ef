// libFuzzer target for test-case files (`replaygate test POLICY CASES.yaml`, RG401-RG407): any
// bytes, as the case file of policies/replay_gate.yaml, run through the whole command in this
// process (tools/cli/commands.h run()) must end with exit 0 (every case passed), 1 (findings: a
// failed case or a diagnostic) or 2 (the file cannot be read as one); never a crash, a hang or a
// leak. The command prints: run it with -close_fd_mask=3 (tools/fuzz.sh does).
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/test_cases/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
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
  std::string program = "replaygate", command = "test";
  std::string policy = std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml";
  std::string cases = "/proc/self/fd/" + std::to_string(fd);
  std::vector<char*> argv = {program.data(), command.data(), policy.data(), cases.data(), nullptr};
  const int code = replaygate::cli::run(static_cast<int>(argv.size()) - 1, argv.data());
  close(fd);
  if (code < 0 || code > 2) __builtin_trap();
  return 0;
}
