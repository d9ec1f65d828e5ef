// Replays files (or every file in given directories) through LLVMFuzzerTestOneInput without
// libFuzzer, so crashes found by fuzzing become ordinary regression runs under sanitizers. A
// directory that does not exist is skipped with a note (a target without regressions has no
// regressions/ directory); a file that cannot be read fails the run (exit 2).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int replay_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 2;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  std::printf("ok %s (%zu bytes)\n", path.c_str(), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (!std::filesystem::exists(argv[i], ec)) {
      std::printf("skip %s (absent)\n", argv[i]);
    } else if (std::filesystem::is_directory(argv[i], ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
        if (entry.is_regular_file() && replay_file(entry.path()) != 0) status = 2;
      }
    } else if (replay_file(argv[i]) != 0) {
      status = 2;
    }
  }
  return status;
}
