// Per-stage wall and CPU times of one compile, for `replaygate compile --timings` and benchmarks.
//
// Recording costs one steady_clock read per stage, so the compiler always records; the CLI prints.
#pragma once

#include <chrono>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace replaygate {

struct StageTime {
  std::string stage;
  double wall_seconds = 0;
  double cpu_seconds = 0;  // process CPU time (std::clock): robust on a loaded machine
};
// Stages in the order they ran.
using StageTimings = std::vector<StageTime>;

// Measures consecutive stages: lap(name) records the time since the previous lap (or since
// construction) under `name`. A null sink records nothing.
class StageClock {
 public:
  explicit StageClock(StageTimings* sink)
      : sink_(sink), last_(std::chrono::steady_clock::now()), last_cpu_(std::clock()) {}

  void lap(const char* name) {
    const auto now = std::chrono::steady_clock::now();
    const std::clock_t cpu = std::clock();
    if (sink_ != nullptr) {
      sink_->push_back(StageTime{name, std::chrono::duration<double>(now - last_).count(),
                                 static_cast<double>(cpu - last_cpu_) / CLOCKS_PER_SEC});
    }
    last_ = now;
    last_cpu_ = cpu;
  }
  // Starts the next stage now, without recording the time since the last lap.
  void skip() {
    last_ = std::chrono::steady_clock::now();
    last_cpu_ = std::clock();
  }

 private:
  StageTimings* sink_;
  std::chrono::steady_clock::time_point last_;
  std::clock_t last_cpu_;
};

}  // namespace replaygate
