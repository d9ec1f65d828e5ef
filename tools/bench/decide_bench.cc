// decide() latency: the shipped policy and synthetic 100 / 10,000 / 1,000,000-row policies,
// against a hand-written C++ gate (an if chain over the seed table) and an unordered_map lookup
// of the (topic, error_class) pair, in the same binary and on the same letters; and decide
// through a SharedTable while another thread reloads it. Run by tools/bench/run.sh (see
// docs/benchmarks.md); never from ctest.
//
// Each benchmark decides a stream of 4096 prebuilt letters (60% known pairs, 20% unknown pairs,
// 20% stopped by a guard) in a loop. The timed loop is symmetric: BM_Replaygate calls decide() on
// an Input filled per letter beforehand, the baselines call their (not inlined) function on a
// GateInput struct built per letter beforehand; BM_ReplaygateFill adds filling a reused Input
// (what a worker does per message). Before timing, every letter (and a set of edge letters: bounds,
// guards, unknown and empty strings) must get the same verb and the same rule from decide() and
// each baseline, else the bench exits 2. Besides Google Benchmark's mean per iteration (one
// iteration = one letter), the counters p50_ns and p99_ns are percentiles of per-decision
// latency, measured in batches of 16 decisions timed with steady_clock (clock overhead
// subtracted), 20,000 batches.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "runtime/internal/decide_index.h"
#include "runtime/reload.h"
#include "runtime/table.h"
#include "tests/support/test_policies.h"
#include "tools/bench/gates.h"

namespace rg = replaygate;
namespace ir = replaygate::ir;
using namespace replaygate::testing;  // NOLINT: IR builders shared with the tests
using namespace replaygate::bench;    // NOLINT: the baselines shared with stream_bench.cc

namespace {

// A policy of `rows` table rows: the reference gate's guards and nine seed rows, then synthetic
// rows (topic tI, error_class eJ). rows == 0 means the shipped policy, compiled from YAML.
struct Setup {
  std::vector<uint8_t> bytes;
  std::unique_ptr<rg::Table> table;
  std::vector<std::string> strings;  // owns the synthetic key strings the map points into
  PairMap map;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<Letter> letters;
  // The letters, prebuilt for each side: an Input filled per letter for decide(), a GateInput per
  // letter for the baselines. The timed loops only decide (see BM_ReplaygateFill for the cost of
  // filling an Input).
  std::vector<rg::Input> inputs;
  std::vector<GateInput> gate_inputs;
};

// Fills every field (replays null when absent), without clear(): the figures recorded for
// BM_ReplaygateFill are this path (gates.h's fill() is the worker's: clear() first).
void fill_all(rg::Input& in, const Letter& l) {
  in.set_string(0, l.topic);
  in.set_string(1, l.error_class);
  in.set_int(2, l.attempts);
  in.set_string(3, l.key);
  in.set_bool(4, l.committed);
  if (l.replays) {
    in.set_int(5, *l.replays);
  } else {
    in.set_null(5);  // absent: the Input may be reused
  }
}

// Before anything is timed: every bench letter and edge letter gets the same verb and the same
// rule from decide(), decide_unindexed() and each baseline, else the bench aborts (a faster
// baseline that decides differently would not be a baseline).
void check_agreement(Setup& s, bool with_hand_written) {
  std::vector<Letter> letters = edge_letters(s.pairs);
  letters.insert(letters.end(), s.letters.begin(), s.letters.end());
  rg::Input in(*s.table);
  for (const Letter& l : letters) {
    in.clear();
    fill_all(in, l);
    const Answer want = answer(s.table->decide(in));
    if (!(answer(rg::decide_unindexed(*s.table, in)) == want)) {
      std::fprintf(stderr, "decide_bench: decide() and decide_unindexed() disagree on (%s, %s)\n",
                   l.topic.c_str(), l.error_class.c_str());
      std::exit(2);
    }
    const GateInput g = gate_input(l);
    const Answer map = map_gate(s.map, g);
    const Answer hand = with_hand_written ? hand_written(g) : want;
    if (!(map == want) || !(hand == want)) {
      std::fprintf(stderr,
                   "decide_bench: baselines disagree with decide() on (%s, %s, attempts %lld, "
                   "key '%s', committed %d): decide verb %u rule %#x, unordered_map verb %u rule "
                   "%#x, hand-written verb %u rule %#x\n",
                   l.topic.c_str(), l.error_class.c_str(), static_cast<long long>(l.attempts),
                   l.key.c_str(), l.committed ? 1 : 0, want.verb, want.rule, map.verb, map.rule,
                   hand.verb, hand.rule);
      std::exit(2);
    }
  }
}

std::string synthetic_topic(size_t i) { return "topic." + std::to_string(i); }
std::string synthetic_error(size_t j) { return "error_" + std::to_string(j); }

Setup& setup(size_t rows) {
  static std::unordered_map<size_t, std::unique_ptr<Setup>> cache;
  auto& slot = cache[rows];
  if (slot) return *slot;
  slot = std::make_unique<Setup>();
  Setup& s = *slot;
  if (rows == 0) {
    const char* path = std::getenv("RG_BENCH_POLICY");
    rg::LoadedPolicy loaded = rg::load_policy_file(path ? path : "policies/replay_gate.yaml");
    if (!loaded.policy) {
      std::fprintf(stderr,
                   "decide_bench: cannot compile the shipped policy (run from the repo root)\n");
      std::exit(2);
    }
    s.bytes = rg::lower(*loaded.policy);
    for (auto [t, e] : kKnownFailureKeys) s.pairs.emplace_back(t, e);
  } else {
    ir::CheckedPolicy p = reference_gate();
    ir::Table& t = std::get<ir::Table>(p.policy.rules[4]);
    for (auto [topic, error] : kKnownFailureKeys) s.pairs.emplace_back(topic, error);
    size_t side = 1;
    while (side * side < rows) ++side;
    for (size_t i = 0; s.pairs.size() < rows; ++i) {
      s.pairs.emplace_back(synthetic_topic(i / side), synthetic_error(i % side));
      t.rows.push_back(row(t.id, {S(s.pairs.back().first), S(s.pairs.back().second)},
                           i % 3 == 0 ? kNeverV : kReplayOnceV));
    }
    t.rows.resize(rows);
    s.pairs.resize(rows);
    p.source.rows.clear();
    s.bytes = rg::lower(p);
  }
  rg::LoadStatus status;
  s.table = rg::Table::load_bytes(s.bytes.data(), s.bytes.size(), &status);
  if (!s.table) {
    std::fprintf(stderr, "decide_bench: %s\n", status.message.c_str());
    std::exit(2);
  }
  // The baseline map, with the verbs the table gives each pair.
  rg::Input in(*s.table);
  s.strings.reserve(s.pairs.size() * 2);
  for (const auto& [topic, error] : s.pairs) {
    Letter l{topic, error, "k", 1, false, std::nullopt};
    in.clear();
    in.set_string(0, l.topic);
    in.set_string(1, l.error_class);
    in.set_int(2, 1);
    in.set_string(3, "k");
    in.set_bool(4, false);
    s.map.emplace(std::pair<std::string_view, std::string_view>(topic, error),
                  answer(s.table->decide(in)));
  }
  std::mt19937_64 rng(20261129);
  for (int i = 0; i < 4096; ++i) {
    Letter l;
    const auto& pr = s.pairs[rng() % s.pairs.size()];
    l.topic = pr.first;
    l.error_class = pr.second;
    l.key = "key_" + std::to_string(rng() % 100000);
    l.attempts = static_cast<int64_t>(rng() % 3);
    const int kind = static_cast<int>(rng() % 10);
    if (kind < 2) l.error_class = "unknown_" + std::to_string(rng() % 50);
    if (kind == 2) l.key.clear();
    if (kind == 3) l.committed = true;
    if (kind == 4 && (rng() & 1)) l.attempts = 5;
    s.letters.push_back(std::move(l));
  }
  check_agreement(s, rows == 0);
  s.inputs.reserve(s.letters.size());
  for (const Letter& l : s.letters) {
    s.inputs.emplace_back(*s.table);
    fill_all(s.inputs.back(), l);
    s.gate_inputs.push_back(gate_input(l));
  }
  return s;
}

// Per-decision p50/p99 from timed batches of 16 decisions.
template <typename F>
void percentiles(benchmark::State& state, F&& decide_one) {
  using clock = std::chrono::steady_clock;
  constexpr int kBatch = 16, kBatches = 20000;
  auto t0 = clock::now();
  for (int i = 0; i < 1000; ++i) benchmark::DoNotOptimize(clock::now());
  const double clock_ns =
      std::chrono::duration<double, std::nano>(clock::now() - t0).count() / 1000.0;
  std::vector<double> ns(kBatches);
  size_t at = 0;
  for (int b = 0; b < kBatches; ++b) {
    auto start = clock::now();
    for (int k = 0; k < kBatch; ++k) {
      benchmark::DoNotOptimize(decide_one(at));
      at = (at + 1) & 4095;
    }
    auto end = clock::now();
    ns[b] = (std::chrono::duration<double, std::nano>(end - start).count() - clock_ns) / kBatch;
  }
  std::sort(ns.begin(), ns.end());
  state.counters["p50_ns"] = ns[kBatches / 2];
  state.counters["p99_ns"] = ns[kBatches * 99 / 100];
}

// The timed loop every decide benchmark shares: one decision per iteration over the 4,096 letters
// in turn, then the percentiles from batches.
template <typename F>
void time_stream(benchmark::State& state, F&& decide_one) {
  size_t at = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(decide_one(at));
    at = (at + 1) & 4095;
  }
  percentiles(state, decide_one);
}

// decide() on prefilled Inputs: the timed loop is the call, as for the baselines on their
// prebuilt GateInputs.
void BM_Replaygate(benchmark::State& state) {
  Setup& s = setup(static_cast<size_t>(state.range(0)));
  auto one = [&](size_t i) { return s.table->decide(s.inputs[i]).verb; };
  time_stream(state, one);
  state.counters["table_bytes"] = static_cast<double>(s.bytes.size());
}

// The same, through decide_unindexed(): the general path without the load-time index (XXH3 for
// every string, a hash probe per wildcard mask), i.e. decide() as it was before the index.
void BM_ReplaygateUnindexed(benchmark::State& state) {
  Setup& s = setup(static_cast<size_t>(state.range(0)));
  auto one = [&](size_t i) { return rg::decide_unindexed(*s.table, s.inputs[i]).verb; };
  time_stream(state, one);
}

// Filling a reused Input from the letter (five setter calls), then decide(): what a worker does
// per message.
void BM_ReplaygateFill(benchmark::State& state) {
  Setup& s = setup(static_cast<size_t>(state.range(0)));
  rg::Input in(*s.table);
  auto one = [&](size_t i) {
    fill_all(in, s.letters[i]);
    return s.table->decide(in).verb;
  };
  time_stream(state, one);
}

void BM_HandWritten(benchmark::State& state) {
  Setup& s = setup(0);
  auto one = [&](size_t i) { return hand_written(s.gate_inputs[i]).verb; };
  time_stream(state, one);
}

void BM_UnorderedMap(benchmark::State& state) {
  Setup& s = setup(static_cast<size_t>(state.range(0)));
  auto one = [&](size_t i) { return map_gate(s.map, s.gate_inputs[i]).verb; };
  time_stream(state, one);
}

// Table::load_bytes of each bench policy (verify and decode, then build the load-time index):
// for the index's share of load time (perf record this benchmark; build_decide_index).
void BM_LoadBytes(benchmark::State& state) {
  Setup& s = setup(static_cast<size_t>(state.range(0)));
  rg::LoadStatus status;
  for (auto _ : state) {
    auto table = rg::Table::load_bytes(s.bytes.data(), s.bytes.size(), &status);
    if (!table) state.SkipWithError(status.message.c_str());
    benchmark::DoNotOptimize(table);
  }
}

// decide through SharedTable::Reader (hazard slot, no lock): state.range(0) == 0 alone, 1 while
// a second thread reloads the shipped table back to back (each reload reads, verifies and swaps;
// on a 2-vCPU VM that thread also competes for the core the decisions run on), 2 while it
// reloads every 100 microseconds (thousands of reloads a run, as a worker fleet rolling out
// tables would never do, without saturating the other vCPU).
void BM_SharedTableDecide(benchmark::State& state) {
  Setup& s = setup(0);
  rg::LoadStatus status;
  rg::SharedTable shared(rg::Table::load_bytes(s.bytes.data(), s.bytes.size(), &status));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reloads{0};
  std::thread reloader;
  const bool paced = state.range(0) == 2;
  if (state.range(0) >= 1) {
    reloader = std::thread([&] {
      rg::LoadStatus st;
      while (!stop.load(std::memory_order_relaxed)) {
        shared.reload_bytes(s.bytes.data(), s.bytes.size(), &st);
        reloads.fetch_add(1, std::memory_order_relaxed);
        if (paced) std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
  }
  rg::SharedTable::Reader reader(shared);
  rg::Input in(reader.acquire().table());
  auto one = [&](size_t i) {
    fill_all(in, s.letters[i]);
    auto guard = reader.acquire();
    return guard.table().decide(in).verb;
  };
  time_stream(state, one);
  stop = true;
  if (reloader.joinable()) reloader.join();
  state.counters["reloads"] = static_cast<double>(reloads.load());
}

}  // namespace

BENCHMARK(BM_HandWritten);
BENCHMARK(BM_Replaygate)->Arg(0)->Arg(100)->Arg(10000)->Arg(1000000);
BENCHMARK(BM_ReplaygateUnindexed)->Arg(0)->Arg(100)->Arg(10000)->Arg(1000000);
BENCHMARK(BM_ReplaygateFill)->Arg(0)->Arg(100)->Arg(10000)->Arg(1000000);
BENCHMARK(BM_UnorderedMap)->Arg(0)->Arg(100)->Arg(10000)->Arg(1000000);
BENCHMARK(BM_LoadBytes)->Arg(0)->Arg(10000)->Arg(1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SharedTableDecide)->Arg(0)->Arg(1)->Arg(2);
BENCHMARK_MAIN();
