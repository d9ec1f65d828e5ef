// libFuzzer target for the plan file reader (redrive/plan/plan.h read_plan()): any bytes, read as
// a plan, must give either an error or a plan whose summary counts the letters handed out and
// whose computed digest is well formed; never a crash, a hang or a leak. The same bytes read as an
// unfinished build's PLAN.tmp (plan.h unfinished_header()) give a header or an error.
//
// Built by the fuzz tree (cmake -DREPLAYGATE_FUZZ=ON, tools/fuzz.sh); the normal build replays
// tests/data/fuzz/plan/{corpus,regressions} through replay_main.cc (ctest -L fuzz).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "redrive/plan/plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  int64_t letters = 0, copies = 0;
  const replaygate::plan::PlanRead read =
      replaygate::plan::read_plan(in, [&](const replaygate::plan::PlanLetter& letter) {
        if (letter.count < 1 || !replaygate::plan::is_digest(letter.identity)) __builtin_trap();
        ++letters;
        copies += letter.count;
        return true;
      });
  if (read.ok == !read.error.empty()) __builtin_trap();
  if (read.ok) {
    if (read.summary.letters != letters || read.summary.copies != copies) __builtin_trap();
    if (!replaygate::plan::is_digest(read.computed_digest)) __builtin_trap();
  }
  std::istringstream again(std::string(reinterpret_cast<const char*>(data), size));
  std::string error;
  const std::optional<replaygate::plan::PlanHeader> header =
      replaygate::plan::unfinished_header(again, "fuzz", &error);
  if (header.has_value() == !error.empty()) __builtin_trap();
  return 0;
}
