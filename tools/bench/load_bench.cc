// Table load time for each table named in $RG_BENCH_TABLES (space-separated paths;
// tools/bench/compile_scaling.sh writes them): BM_Load is Table::load_file (read + verify), and
// BM_ReloadBytes is SharedTable::reload_bytes from bytes already in memory (copy + verify + swap,
// the old table freed as no reader holds it).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/reload.h"
#include "runtime/table.h"

int main(int argc, char** argv) {
  const char* tables = std::getenv("RG_BENCH_TABLES");
  std::istringstream paths(tables ? tables : "tests/data/tables/replay_gate.rgt");
  std::string path;
  while (paths >> path) {
    const std::string name = path.substr(path.find_last_of('/') + 1);
    benchmark::RegisterBenchmark(("BM_Load/" + name).c_str(), [path](benchmark::State& state) {
      replaygate::LoadStatus status;
      for (auto _ : state) {
        auto t = replaygate::Table::load_file(path, &status);
        if (!t) state.SkipWithError(status.message.c_str());
        benchmark::DoNotOptimize(t);
      }
    })->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_ReloadBytes/" + name).c_str(), [path](
                                                                         benchmark::State& state) {
      std::ifstream in(path, std::ios::binary);
      const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
      replaygate::LoadStatus status;
      auto shared = replaygate::SharedTable::open(path, &status);
      if (!shared) {
        state.SkipWithError(status.message.c_str());
        return;
      }
      for (auto _ : state) {
        if (!shared->reload_bytes(bytes.data(), bytes.size(), &status)) {
          state.SkipWithError(status.message.c_str());
        }
      }
    })->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
