// decide() latency: the shipped policy and synthetic 100 / 10,000 / 1,000,000-row policies,
// against a hand-written C++ gate (an if chain over the seed table) and an unordered_map lookup
// of the (topic, error_class) pair, in the same binary and on the same letters; and decide
// through a SharedTable while another thread reloads it. Run by tools/bench/run.sh (see
// docs/benchmarks.md); never from ctest.
//
// Each benchmark decides a stream of 4096 prebuilt letters (60% known pairs, 20% unknown pairs,
// 20% stopped by a guard) in a loop. Besides Google Benchmark's mean per iteration (one
// iteration = one letter, Input filled and decided), the counters p50_ns and p99_ns are
// percentiles of per-decision latency, measured in batches of 16 decisions timed with
// steady_clock (clock overhead subtracted), 20,000 batches.
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
#include "runtime/reload.h"
#include "runtime/table.h"
#include "tests/runtime/test_policies.h"

namespace rg = replaygate;
namespace ir = replaygate::ir;
using namespace replaygate::testing;  // NOLINT: IR builders shared with the tests

namespace {

struct Letter {
  std::string topic, error_class, key;
  int64_t attempts = 1;
  bool committed = false;
};

enum Verb : uint32_t { kNeverV = 0, kReplayOnceV = 1, kHoldV = 2 };

// The seed article's replay_gate.py, written by hand in C++: what a team would write instead.
uint32_t hand_written(const Letter& l) {
  if (l.key.empty()) return kHoldV;
  if (l.committed) return kNeverV;
  if (l.attempts < 0 || l.attempts >= 3) return kHoldV;
  const std::string_view t = l.topic, e = l.error_class;
  if (t == "payment.capture") {
    if (e == "timeout") return kReplayOnceV;
    if (e == "insufficient_funds" || e == "duplicate") return kNeverV;
  } else if (t == "inventory.reserve") {
    if (e == "lock_timeout") return kReplayOnceV;
    if (e == "overbook") return kNeverV;
  } else if (t == "webhook.partner") {
    if (e == "http_503") return kReplayOnceV;
    if (e == "http_400") return kNeverV;
  } else if (t == "mail.receipt") {
    if (e == "smtp_421") return kReplayOnceV;
    if (e == "unknown_recipient") return kNeverV;
  }
  return kHoldV;
}

struct PairHash {
  size_t operator()(const std::pair<std::string_view, std::string_view>& p) const noexcept {
    size_t a = std::hash<std::string_view>{}(p.first), b = std::hash<std::string_view>{}(p.second);
    return a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  }
};
using PairMap = std::unordered_map<std::pair<std::string_view, std::string_view>, uint32_t, PairHash>;

// The same guards, then a plain unordered_map lookup of the key pair.
uint32_t map_gate(const PairMap& map, const Letter& l) {
  if (l.key.empty()) return kHoldV;
  if (l.committed) return kNeverV;
  if (l.attempts < 0 || l.attempts >= 3) return kHoldV;
  auto it = map.find({l.topic, l.error_class});
  return it == map.end() ? kHoldV : it->second;
}

const std::pair<const char*, const char*> kSeedPairs[] = {
    {"payment.capture", "timeout"},       {"payment.capture", "insufficient_funds"},
    {"payment.capture", "duplicate"},     {"inventory.reserve", "lock_timeout"},
    {"inventory.reserve", "overbook"},    {"webhook.partner", "http_503"},
    {"webhook.partner", "http_400"},      {"mail.receipt", "smtp_421"},
    {"mail.receipt", "unknown_recipient"}};

// A policy of `rows` table rows: the reference gate's guards and nine seed rows, then synthetic
// rows (topic tI, error_class eJ). rows == 0 means the shipped policy, compiled from YAML.
struct Setup {
  std::vector<uint8_t> bytes;
  std::unique_ptr<rg::Table> table;
  std::vector<std::string> strings;  // owns the synthetic key strings the map points into
  PairMap map;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<Letter> letters;
};

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
      std::fprintf(stderr, "decide_bench: cannot compile the shipped policy (run from the repo root)\n");
      std::exit(2);
    }
    s.bytes = rg::lower(*loaded.policy);
    for (auto [t, e] : kSeedPairs) s.pairs.emplace_back(t, e);
  } else {
    ir::CheckedPolicy p = reference_gate();
    ir::Table& t = std::get<ir::Table>(p.policy.rules[4]);
    for (auto [topic, error] : kSeedPairs) s.pairs.emplace_back(topic, error);
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
    Letter l{topic, error, "k", 1, false};
    in.clear();
    in.set_string(0, l.topic);
    in.set_string(1, l.error_class);
    in.set_int(2, 1);
    in.set_string(3, "k");
    in.set_bool(4, false);
    s.map.emplace(std::pair<std::string_view, std::string_view>(topic, error),
                  s.table->decide(in).verb);
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
  return s;
}

void fill(rg::Input& in, const Letter& l) {
  in.set_string(0, l.topic);
  in.set_string(1, l.error_class);
  in.set_int(2, l.attempts);
  in.set_string(3, l.key);
  in.set_bool(4, l.committed);
}

// Per-decision p50/p99 from timed batches of 16 decisions.
template <typename F>
void percentiles(benchmark::State& state, const std::vector<Letter>& letters, F&& decide_one) {
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
      benchmark::DoNotOptimize(decide_one(letters[at]));
      at = (at + 1) & 4095;
    }
    auto end = clock::now();
    ns[b] = (std::chrono::duration<double, std::nano>(end - start).count() - clock_ns) / kBatch;
  }
  std::sort(ns.begin(), ns.end());
  state.counters["p50_ns"] = ns[kBatches / 2];
  state.counters["p99_ns"] = ns[kBatches * 99 / 100];
}

void BM_Replaygate(benchmark::State& state) {
  Setup& s = setup(static_cast<size_t>(state.range(0)));
  rg::Input in(*s.table);
  auto one = [&](const Letter& l) {
    fill(in, l);
    return s.table->decide(in).verb;
  };
  size_t at = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(one(s.letters[at]));
    at = (at + 1) & 4095;
  }
  percentiles(state, s.letters, one);
  state.counters["table_bytes"] = static_cast<double>(s.bytes.size());
}

void BM_HandWritten(benchmark::State& state) {
  Setup& s = setup(0);
  size_t at = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(hand_written(s.letters[at]));
    at = (at + 1) & 4095;
  }
  percentiles(state, s.letters, hand_written);
}

void BM_UnorderedMap(benchmark::State& state) {
  Setup& s = setup(static_cast<size_t>(state.range(0)));
  auto one = [&](const Letter& l) { return map_gate(s.map, l); };
  size_t at = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(one(s.letters[at]));
    at = (at + 1) & 4095;
  }
  percentiles(state, s.letters, one);
}

// decide through SharedTable::Reader (hazard slot, no lock), with state.range(0) == 1 while a
// second thread reloads the shipped table in a loop (each reload reads, verifies and swaps).
void BM_SharedTableDecide(benchmark::State& state) {
  Setup& s = setup(0);
  rg::LoadStatus status;
  rg::SharedTable shared(rg::Table::load_bytes(s.bytes.data(), s.bytes.size(), &status));
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reloads{0};
  std::thread reloader;
  if (state.range(0) == 1) {
    reloader = std::thread([&] {
      rg::LoadStatus st;
      while (!stop.load(std::memory_order_relaxed)) {
        shared.reload_bytes(s.bytes.data(), s.bytes.size(), &st);
        reloads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  rg::SharedTable::Reader reader(shared);
  rg::Input in(reader.acquire().table());
  auto one = [&](const Letter& l) {
    fill(in, l);
    auto guard = reader.acquire();
    return guard.table().decide(in).verb;
  };
  size_t at = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(one(s.letters[at]));
    at = (at + 1) & 4095;
  }
  percentiles(state, s.letters, one);
  stop = true;
  if (reloader.joinable()) reloader.join();
  state.counters["reloads"] = static_cast<double>(reloads.load());
}

}  // namespace

BENCHMARK(BM_HandWritten);
BENCHMARK(BM_Replaygate)->Arg(0)->Arg(100)->Arg(10000)->Arg(1000000);
BENCHMARK(BM_UnorderedMap)->Arg(0)->Arg(100)->Arg(10000)->Arg(1000000);
BENCHMARK(BM_SharedTableDecide)->Arg(0)->Arg(1);
BENCHMARK_MAIN();
