// Table load time (read + verify + decode: Table::load_file) for each table named in
// $RG_BENCH_TABLES (space-separated paths; tools/bench/compile_scaling.sh writes them).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "runtime/table.h"

int main(int argc, char** argv) {
  const char* tables = std::getenv("RG_BENCH_TABLES");
  std::istringstream paths(tables ? tables : "tests/data/tables/replay_gate.rgt");
  std::string path;
  while (paths >> path) {
    benchmark::RegisterBenchmark(("BM_Load/" + path.substr(path.find_last_of('/') + 1)).c_str(),
                                 [path](benchmark::State& state) {
                                   replaygate::LoadStatus status;
                                   for (auto _ : state) {
                                     auto t = replaygate::Table::load_file(path, &status);
                                     if (!t) state.SkipWithError(status.message.c_str());
                                     benchmark::DoNotOptimize(t);
                                   }
                                 })
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
