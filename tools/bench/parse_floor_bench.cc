// The I/O floor for `replaygate decide`: read a JSON Lines dump and parse every line with simdjson
// On Demand, touching every value, without deciding or writing anything. The dump path comes from
// $RG_BENCH_DUMP (tools/bench/run.sh writes one). Reports records/s.
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace {

void BM_ParseFloor(benchmark::State& state) {
  const char* path = std::getenv("RG_BENCH_DUMP");
  if (path == nullptr) {
    state.SkipWithError("set RG_BENCH_DUMP to a JSON Lines dump");
    return;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  simdjson::ondemand::parser parser;
  std::string line;
  size_t records = 0;
  for (auto _ : state) {
    size_t at = 0, sum = 0;
    records = 0;
    while (at < data.size()) {
      size_t nl = data.find('\n', at);
      if (nl == std::string::npos) nl = data.size();
      line.assign(data, at, nl - at);
      const size_t length = line.size();
      line.append(simdjson::SIMDJSON_PADDING, ' ');
      at = nl + 1;
      auto doc = parser.iterate(line.data(), length, line.size());
      for (auto field : doc.get_object()) {
        simdjson::ondemand::value v = field.value();
        switch (v.type()) {
          case simdjson::ondemand::json_type::string:
            sum += std::string_view(v.get_string()).size();
            break;
          case simdjson::ondemand::json_type::number:
            sum += static_cast<size_t>(int64_t(v.get_int64()));
            break;
          case simdjson::ondemand::json_type::boolean:
            sum += bool(v.get_bool());
            break;
          default:
            break;
        }
      }
      ++records;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(records) * state.iterations(), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_ParseFloor)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_MAIN();
