// Where `replaygate decide`'s time goes, stage by stage, on the end-to-end dump ($RG_BENCH_DUMP,
// letters format, decided by the table $RG_BENCH_TABLE; tools/bench/run.sh sets both). Each
// benchmark adds one stage to the one before, so the differences are the stages' costs:
//   BM_Read:   the dump read as decide reads it (open, LineReader), no parsing;
//   BM_Parse:  + the strict letter reader (LetterParser::parse into the Input);
//   BM_Decide: + Table::decide().
// The whole command (rules, output) is measured end to end by run.sh; the parse floor by
// rg_parse_floor_bench.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "inputs/letters.h"
#include "inputs/records.h"
#include "runtime/table.h"

namespace {

using replaygate::Input;
using replaygate::Table;
using replaygate::inputs::LetterParser;
using replaygate::inputs::LineReader;
using replaygate::inputs::RecordMeta;

enum class Stage { kRead, kParse, kDecide };

void run(benchmark::State& state, Stage stage) {
  const char* dump = std::getenv("RG_BENCH_DUMP");
  const char* table_path = std::getenv("RG_BENCH_TABLE");
  if (dump == nullptr || table_path == nullptr) {
    state.SkipWithError("set RG_BENCH_DUMP (a letters dump) and RG_BENCH_TABLE (its table)");
    return;
  }
  replaygate::LoadStatus status;
  const std::unique_ptr<Table> table = Table::load_file(table_path, &status);
  if (table == nullptr) {
    state.SkipWithError("cannot load $RG_BENCH_TABLE");
    return;
  }
  LetterParser parser(*table);
  Input input(*table);
  RecordMeta meta;
  std::string problem;
  size_t records = 0;
  for (auto _ : state) {
    const int fd = ::open(dump, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      state.SkipWithError("cannot open $RG_BENCH_DUMP");
      return;
    }
    LineReader reader(fd);
    std::string_view line;
    uint64_t sum = 0;
    records = 0;
    while (reader.next(&line) == LineReader::Status::kLine) {
      ++records;
      sum += line.size();
      if (stage == Stage::kRead) continue;
      if (!parser.parse(line, input, &meta, &problem)) continue;
      if (stage == Stage::kDecide) sum += table->decide(input).verb;
    }
    ::close(fd);
    benchmark::DoNotOptimize(sum);
  }
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(records) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_Read(benchmark::State& state) { run(state, Stage::kRead); }
void BM_Parse(benchmark::State& state) { run(state, Stage::kParse); }
void BM_Decide(benchmark::State& state) { run(state, Stage::kDecide); }

}  // namespace

BENCHMARK(BM_Read)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Parse)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_Decide)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_MAIN();
