// The I/O floor for `replaygate decide`: the least work any decide of a JSON Lines dump must do,
// measured on the same dump ($RG_BENCH_DUMP; tools/bench/run.sh writes one). Reports records/s.
//
// BM_ParseFloor (the floor docs/benchmarks.md compares against) reads the dump exactly as decide
// does: open(2), the CLI's LineReader (read(2) in 64 KiB blocks, memchr for newlines, each line
// copied into one padded buffer), then simdjson On Demand on each line, fetching every key
// unescaped and every value as decide's reader does (strings as views, integers as int64, bools).
// It leaves out what decide adds on top: the strict checks (known keys, duplicates, metadata
// types, trailing content), filling the Input, decide(), the dump rules, and formatting and
// writing the output line.
//
// BM_ParseInMemory is the looser figure the first benchmark used: the dump already in memory,
// each line copied into a padded std::string, the same values touched.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "inputs/records.h"

namespace {

namespace od = simdjson::ondemand;

// Touches every key and value of one padded line; returns a sum so nothing is optimized away.
size_t touch(od::parser& parser, std::string_view line, size_t capacity) {
  size_t sum = 0;
  auto doc = parser.iterate(line.data(), line.size(), capacity);
  for (auto field : doc.get_object()) {
    std::string_view key = field.unescaped_key();
    sum += key.size();
    od::value v = field.value();
    switch (v.type()) {
      case od::json_type::string:
        sum += std::string_view(v.get_string()).size();
        break;
      case od::json_type::number:
        sum += static_cast<size_t>(int64_t(v.get_int64()));
        break;
      case od::json_type::boolean:
        sum += bool(v.get_bool());
        break;
      default:
        break;
    }
  }
  return sum;
}

const char* dump_path(benchmark::State& state) {
  const char* path = std::getenv("RG_BENCH_DUMP");
  if (path == nullptr) state.SkipWithError("set RG_BENCH_DUMP to a JSON Lines dump");
  return path;
}

void BM_ParseFloor(benchmark::State& state) {
  const char* path = dump_path(state);
  if (path == nullptr) return;
  // decide's parser is sized for its 1 MiB line cap; so is this one.
  od::parser parser(replaygate::inputs::kMaxRecordBytes + 64);
  size_t records = 0;
  for (auto _ : state) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      state.SkipWithError("cannot open $RG_BENCH_DUMP");
      return;
    }
    replaygate::inputs::LineReader reader(fd);
    std::string_view line;
    size_t sum = 0;
    records = 0;
    while (reader.next(&line) == replaygate::inputs::LineReader::Status::kLine) {
      sum += touch(parser, line, line.size() + replaygate::inputs::LineReader::kPadding);
      ++records;
    }
    ::close(fd);
    benchmark::DoNotOptimize(sum);
  }
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(records) * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_ParseInMemory(benchmark::State& state) {
  const char* path = dump_path(state);
  if (path == nullptr) return;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  od::parser parser;
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
      sum += touch(parser, std::string_view(line.data(), length), line.size());
      ++records;
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["records_per_s"] = benchmark::Counter(
      static_cast<double>(records) * state.iterations(), benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_ParseFloor)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ParseInMemory)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_MAIN();
