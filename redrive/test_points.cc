// The redrive loop's test crash and pause points (test_points.h).
#include "redrive/test_points.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace replaygate::redrive {

std::string TestPoints::from_environment() {
  if (const char* crash = std::getenv("REPLAYGATE_TEST_CRASH_AT")) crash_at = crash;
  if (const char* pause = std::getenv("REPLAYGATE_TEST_PAUSE_AT")) {
    const std::string_view text = pause;
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon + 1 == text.size()) {
      return "REPLAYGATE_TEST_PAUSE_AT must be STEP:FILE";
    }
    pause_at = std::string(text.substr(0, colon));
    pause_file = std::string(text.substr(colon + 1));
  }
  return "";
}

void TestPoints::at(std::string_view step) const {
  if (!crash_at.empty() && crash_at == step) ::kill(::getpid(), SIGKILL);
  static bool paused = false;  // the first STEP only, in the whole process
  if (paused || pause_at.empty() || pause_at != step) return;
  paused = true;
  std::ofstream(pause_file).put('\n');
  using Clock = std::chrono::steady_clock;
  const auto give_up = Clock::now() + std::chrono::seconds(120);
  while (std::filesystem::exists(pause_file) && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace replaygate::redrive
