// decide() on traffic the branch predictor cannot learn: 200,000 distinct random letters (the mix
// is documented in docs/benchmarks.md, "Streaming"), each decided once per pass in stream order,
// beside the hand-written gate and the unordered_map gates, in one binary and one run; with the
// same letters sorted (every branch predictable) and the 4,096-letter loop of rg_decide_bench
// (every input cached) as controls, and optionally a table of N rows (--rows) against maps of the
// same rows. Run by tools/bench/run.sh; never from ctest.
//
// Two layouts of the same kind of stream (issue 43), so no single layout is what the figures are
// tuned to: `stream` (and `sorted`, `cached`) keep the letters' strings as views into one arena in
// stream order and load the table from bytes; `owned` is a worker's batch as a harness written
// outside the project holds it: the letters written as JSON Lines, parsed (nlohmann::json) into
// plain structs owning their std::strings, shuffled, and the table read by Table::load_file.
//
// Every timed job (a gate on one order of the letters) runs once per pass, the jobs of a pass in
// a shuffled order, so all of them share the host's drifts; the figures are medians over the
// passes, and each ratio is the median of the per-pass ratios (both sides from the same pass).
// Before anything is timed, every gate must give decide()'s verb and rule on every letter (and
// on the edge letters of gates.h), else the bench exits 2.
//
// Usage: rg_stream_bench [--letters N] [--passes P] [--rows R] [--only JOB] [--dump FILE]
//   --only JOB (e.g. shipped/stream/decide) times that job alone, for perf stat or callgrind;
//   --only none builds everything and times nothing (the setup cost to subtract);
//   --dump FILE writes the shipped policy's N letters (the stream's mix, its seed) to FILE as a
//   `letters` dump, one JSON line each with "message_id":"m-I", and times nothing: the input of
//   `decide`'s end-to-end runs (docs/benchmarks.md, "decide --threads").
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "runtime/internal/decide_index.h"
#include "runtime/table.h"
#include "tests/support/test_policies.h"
#include "tools/bench/gates.h"

namespace rg = replaygate;
namespace ir = replaygate::ir;
using namespace replaygate::bench;  // NOLINT: the shared baselines

namespace {

constexpr const char* kName = "stream_bench";

// A letter whose strings are views into its corpus's arena, laid out in stream order as a dump's
// lines are (a worker's parser hands decide() views into the message it read).
struct ViewLetter {
  std::string_view topic, error_class, key;
  int64_t attempts = 0;
  bool committed = false;
  std::optional<int64_t> replays;
};

// One order of the letters, built for every gate: the arena, the views, one prefilled Input per
// letter (decide() alone), one GateInput per letter (the baselines).
struct Corpus {
  std::string arena;
  std::vector<ViewLetter> letters;
  std::vector<rg::Input> inputs;
  std::vector<GateInput> gates;
  size_t repeat = 1;  // the cached loop decides its 4,096 letters this many times per pass
};

// The `owned` layout: a letter parsed from one JSON line into a plain struct that owns its strings
// (the short ones inside the struct, the others each in a heap block of its own), as a harness
// written outside the project holds them; the structs are shuffled after parsing, so a letter's
// heap strings are not next to its neighbours'. `inputs` holds one prefilled Input per letter.
struct OwnedLetter {
  std::string message_id, topic, error_class, key;
  int64_t attempts = 0;
  bool committed = false;
  std::optional<int64_t> replays;
};

struct OwnedCorpus {
  std::vector<OwnedLetter> letters;
  std::vector<rg::Input> inputs;
};

struct Policy {
  std::vector<uint8_t> bytes;
  std::unique_ptr<rg::Table> table;
  std::vector<std::pair<std::string, std::string>> pairs;  // the table's rows' keys, row order
  PairMap pair_map;
  StringMap string_map;
};

// The shipped policy (rows == 0) or the reference gate with `rows` rows: the nine seed rows,
// then synthetic (topic.I, error_J) pairs, as rg_decide_bench builds them.
std::unique_ptr<Policy> make_policy(size_t rows) {
  auto p = std::make_unique<Policy>();
  if (rows == 0) {
    rg::LoadedPolicy loaded = rg::load_policy_file("policies/replay_gate.yaml");
    if (!loaded.policy) {
      std::fprintf(stderr, "%s: cannot compile the shipped policy (run from the repo root)\n",
                   kName);
      std::exit(2);
    }
    p->bytes = rg::lower(*loaded.policy);
    for (auto [t, e] : rg::testing::kKnownFailureKeys) p->pairs.emplace_back(t, e);
  } else {
    ir::CheckedPolicy c = rg::testing::reference_gate();
    ir::Table& t = std::get<ir::Table>(c.policy.rules[4]);
    for (auto [topic, error] : rg::testing::kKnownFailureKeys) p->pairs.emplace_back(topic, error);
    size_t side = 1;
    while (side * side < rows) ++side;
    for (size_t i = 0; p->pairs.size() < rows; ++i) {
      p->pairs.emplace_back("topic." + std::to_string(i / side),
                            "error_" + std::to_string(i % side));
      t.rows.push_back(rg::testing::row(
          t.id, {rg::testing::S(p->pairs.back().first), rg::testing::S(p->pairs.back().second)},
          i % 3 == 0 ? kNeverV : kReplayOnceV));
    }
    t.rows.resize(rows);
    p->pairs.resize(rows);
    c.source.rows.clear();
    p->bytes = rg::lower(c);
  }
  rg::LoadStatus status;
  p->table = rg::Table::load_bytes(p->bytes.data(), p->bytes.size(), &status);
  if (!p->table) {
    std::fprintf(stderr, "%s: %s\n", kName, status.message.c_str());
    std::exit(2);
  }
  // The maps hold the answer the table gives each row's pair on a letter no guard stops.
  rg::Input in(*p->table);
  p->pair_map.reserve(p->pairs.size());
  p->string_map.reserve(p->pairs.size());
  for (const auto& [topic, error] : p->pairs) {
    Letter l{topic, error, "k", 1, false, std::nullopt};
    fill(in, l);
    const Answer a = answer(p->table->decide(in));
    p->pair_map.emplace(std::pair<std::string_view, std::string_view>(topic, error), a);
    std::string key;
    append_key(key, topic, error);
    p->string_map.emplace(std::move(key), a);
  }
  return p;
}

// A string near `s`: one byte changed, one dropped, one appended, or the case of the first byte
// flipped (what a typo, a truncation or a version suffix gives).
std::string near_miss(const std::string& s, std::mt19937_64& rng) {
  std::string out = s;
  const size_t at = rng() % out.size();
  switch (rng() % 4) {
    case 0:
      out[at] = out[at] == 'x' ? 'y' : 'x';
      break;
    case 1:
      out.erase(at, 1);
      break;
    case 2:
      out.push_back("_2sv"[rng() % 4]);
      break;
    default:
      out[0] = static_cast<char>(out[0] ^ 0x20);
      break;
  }
  return out;
}

std::string random_word(std::mt19937_64& rng, size_t min, size_t max) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz_.0123456789";
  std::string out(min + rng() % (max - min + 1), 'a');
  for (char& c : out) c = kAlphabet[rng() % (sizeof kAlphabet - 1)];
  out[0] = static_cast<char>('a' + rng() % 26);
  return out;
}

// The streaming mix (docs/benchmarks.md, "Streaming"): 60% a row's (topic, error_class); 10% a
// known topic with another topic's error class; 10% a known topic and an unknown error class;
// 10% a near miss of a row's pair (one of its two strings changed by one byte); 10% both strings
// unknown (random, 5-30 bytes). attempts uniform over {0, 1, 2, 3, 4, 100}; idempotency_key empty
// in one letter of six, else 'k-' and 16-32 random hex digits (so letters with a key are
// distinct); already_committed 15%; replays absent 70%, 0 15%, 1 10%, 2 5%.
std::vector<Letter> generate(const Policy& p, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Letter> out;
  out.reserve(n);
  static constexpr int64_t kAttempts[] = {0, 1, 2, 3, 4, 100};
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    Letter l;
    const auto& pair = p.pairs[rng() % p.pairs.size()];
    const unsigned kind = static_cast<unsigned>(rng() % 100);
    if (kind < 60) {
      l.topic = pair.first;
      l.error_class = pair.second;
    } else if (kind < 70) {
      l.topic = pair.first;
      l.error_class = p.pairs[rng() % p.pairs.size()].second;
    } else if (kind < 80) {
      l.topic = pair.first;
      l.error_class = random_word(rng, 5, 24);
    } else if (kind < 90) {
      const bool topic = rng() & 1;
      l.topic = topic ? near_miss(pair.first, rng) : pair.first;
      l.error_class = topic ? pair.second : near_miss(pair.second, rng);
    } else {
      l.topic = random_word(rng, 5, 30);
      l.error_class = random_word(rng, 5, 30);
    }
    l.attempts = kAttempts[rng() % 6];
    if (rng() % 6 != 0) {
      l.key = "k-";
      const size_t digits = 16 + rng() % 17;
      for (size_t d = 0; d < digits; ++d) l.key.push_back(kHex[rng() % 16]);
    }
    l.committed = rng() % 100 < 15;
    const unsigned r = static_cast<unsigned>(rng() % 100);
    if (r >= 70) l.replays = r < 85 ? 0 : r < 95 ? 1 : 2;
    out.push_back(std::move(l));
  }
  return out;
}

std::unique_ptr<Corpus> build_corpus(const rg::Table& table, const std::vector<Letter>& letters) {
  auto c = std::make_unique<Corpus>();
  size_t bytes = 0;
  for (const Letter& l : letters) bytes += l.topic.size() + l.error_class.size() + l.key.size();
  c->arena.reserve(bytes);  // the views below stay valid: no reallocation
  c->letters.reserve(letters.size());
  c->inputs.reserve(letters.size());
  c->gates.reserve(letters.size());
  for (const Letter& l : letters) {
    auto view = [&](const std::string& s) {
      const size_t at = c->arena.size();
      c->arena.append(s);
      return std::string_view(c->arena.data() + at, s.size());
    };
    ViewLetter v;
    v.topic = view(l.topic);
    v.error_class = view(l.error_class);
    v.key = view(l.key);
    v.attempts = l.attempts;
    v.committed = l.committed;
    v.replays = l.replays;
    c->letters.push_back(v);
  }
  for (const ViewLetter& v : c->letters) {
    c->inputs.emplace_back(table);
    fill(c->inputs.back(), v);
    c->gates.push_back(gate_input(v));
  }
  return c;
}

// Before timing: every gate decides every letter (the corpus's and the edge letters) as
// decide() does, and decide() as decide_unindexed() does.
void check_agreement(const Policy& p, const Corpus& c, bool hand) {
  rg::Input in(*p.table);
  std::string key;
  auto check = [&](const auto& l, const rg::Input* prefilled) {
    fill(in, l);
    const Answer want = answer(p.table->decide(in));
    require_same(kName, "decide_unindexed()", l, want, answer(rg::decide_unindexed(*p.table, in)));
    if (prefilled != nullptr)
      require_same(kName, "prefilled decide()", l, want, answer(p.table->decide(*prefilled)));
    const GateInput g = gate_input(l);
    if (hand) require_same(kName, "hand-written", l, want, hand_written(g));
    require_same(kName, "unordered_map (views)", l, want, map_gate(p.pair_map, g));
    require_same(kName, "unordered_map (key per call)", l, want, map_gate_alloc(p.string_map, g));
    require_same(kName, "unordered_map (reused key)", l, want,
                 map_gate_reused(p.string_map, key, g));
  };
  for (const Letter& l : edge_letters(p.pairs)) check(l, nullptr);
  for (size_t i = 0; i < c.letters.size(); ++i) check(c.letters[i], &c.inputs[i]);
  std::vector<rg::Decision> many(c.inputs.size());
  p.table->decide_many(c.inputs.data(), c.inputs.size(), many.data());
  for (size_t i = 0; i < c.letters.size(); ++i) {
    require_same(kName, "decide_many()", c.letters[i], answer(p.table->decide(c.inputs[i])),
                 answer(many[i]));
  }
}

// One timed job: a gate deciding every letter of one corpus once (the cached loop: `repeat`
// times over its 4,096), returning a sum of verbs so nothing is optimized away.
struct Job {
  std::string name;     // section/order/gate
  std::string section;  // section/order: ratios compare jobs of the same one
  std::string gate;
  size_t decisions = 0;
  std::function<uint64_t()> run;
  std::vector<double> ns;  // per pass, ns per decision
};

template <typename F>
std::function<uint64_t()> loop(const Corpus& c, F one) {
  return [&c, one]() {
    uint64_t sum = 0;
    for (size_t r = 0; r < c.repeat; ++r) {
      for (size_t i = 0; i < c.letters.size(); ++i) sum += one(i);
    }
    return sum;
  };
}

void add_jobs(std::vector<Job>& jobs, const std::string& section, const Policy& p, const Corpus& c,
              bool hand) {
  const rg::Table& table = *p.table;
  auto add = [&](const char* gate, std::function<uint64_t()> run) {
    jobs.push_back(
        Job{section + "/" + gate, section, gate, c.letters.size() * c.repeat, std::move(run), {}});
  };
  if (hand) add("hand_written", loop(c, [&c](size_t i) { return hand_written(c.gates[i]).verb; }));
  add("map_key_per_call",
      loop(c, [&c, &p](size_t i) { return map_gate_alloc(p.string_map, c.gates[i]).verb; }));
  auto key = std::make_shared<std::string>();
  add("map_reused_key", loop(c, [&c, &p, key](size_t i) {
        return map_gate_reused(p.string_map, *key, c.gates[i]).verb;
      }));
  add("map_views", loop(c, [&c, &p](size_t i) { return map_gate(p.pair_map, c.gates[i]).verb; }));
  add("decide", loop(c, [&c, &table](size_t i) { return table.decide(c.inputs[i]).verb; }));
  auto out = std::make_shared<std::vector<rg::Decision>>(c.inputs.size());
  add("decide_many", [&c, &table, out]() {
    uint64_t sum = 0;
    for (size_t r = 0; r < c.repeat; ++r) {
      table.decide_many(c.inputs.data(), c.inputs.size(), out->data());
      for (const rg::Decision& d : *out) sum += d.verb;
    }
    return sum;
  });
  auto in = std::make_shared<rg::Input>(table);
  add("fill_decide", loop(c, [&c, &table, in](size_t i) {
        fill(*in, c.letters[i]);
        return table.decide(*in).verb;
      }));
}

// The `owned` layout's checks: every gate decides every letter as decide() on the table read
// from bytes does, decide() on the file-loaded table included (prefilled and after a fill).
void check_owned(const Policy& p, const rg::Table& table, const OwnedCorpus& c) {
  rg::Input in(*p.table), mine(table);
  std::string key;
  std::vector<rg::Decision> many(c.inputs.size());
  table.decide_many(c.inputs.data(), c.inputs.size(), many.data());
  for (size_t i = 0; i < c.letters.size(); ++i) {
    const OwnedLetter& l = c.letters[i];
    fill(in, l);
    fill(mine, l);
    const Answer want = answer(p.table->decide(in));
    require_same(kName, "owned prefilled decide()", l, want, answer(table.decide(c.inputs[i])));
    require_same(kName, "owned decide()", l, want, answer(table.decide(mine)));
    require_same(kName, "owned decide_many()", l, want, answer(many[i]));
    const GateInput g = gate_input(l);
    require_same(kName, "owned hand-written", l, want, hand_written(g));
    require_same(kName, "owned unordered_map (reused key)", l, want,
                 map_gate_reused(p.string_map, key, g));
  }
}

// The `owned` layout's jobs: the baselines read each letter's struct as they go (string views of
// its std::strings); `decide` runs over the prefilled Inputs, `fill_decide` refills one reused
// Input per letter, as a worker does.
void add_owned_jobs(std::vector<Job>& jobs, const std::string& section, const Policy& p,
                    const rg::Table& table, const OwnedCorpus& c) {
  auto add = [&](const char* gate, std::function<uint64_t()> run) {
    jobs.push_back(Job{section + "/" + gate, section, gate, c.letters.size(), std::move(run), {}});
  };
  add("hand_written", [&c]() {
    uint64_t sum = 0;
    for (const OwnedLetter& l : c.letters) sum += hand_written(gate_input(l)).verb;
    return sum;
  });
  auto key = std::make_shared<std::string>();
  add("map_reused_key", [&c, &p, key]() {
    uint64_t sum = 0;
    for (const OwnedLetter& l : c.letters)
      sum += map_gate_reused(p.string_map, *key, gate_input(l)).verb;
    return sum;
  });
  add("decide", [&c, &table]() {
    uint64_t sum = 0;
    for (const rg::Input& in : c.inputs) sum += table.decide(in).verb;
    return sum;
  });
  auto out = std::make_shared<std::vector<rg::Decision>>(c.inputs.size());
  add("decide_many", [&c, &table, out]() {
    table.decide_many(c.inputs.data(), c.inputs.size(), out->data());
    uint64_t sum = 0;
    for (const rg::Decision& d : *out) sum += d.verb;
    return sum;
  });
  auto in = std::make_shared<rg::Input>(table);
  add("fill_decide", [&c, &table, in]() {
    uint64_t sum = 0;
    for (const OwnedLetter& l : c.letters) {
      fill(*in, l);
      sum += table.decide(*in).verb;
    }
    return sum;
  });
}

// The letters as a `letters` dump: the policy's inputs by name, "replays" only when the letter has
// it, and a message id. The mix's strings are printable ASCII without '"' or '\\' (random_word,
// near_miss), so they go into the JSON as they are.
std::string dump_lines(const std::vector<Letter>& letters) {
  std::string out;
  for (size_t i = 0; i < letters.size(); ++i) {
    const Letter& l = letters[i];
    out += "{\"message_id\":\"m-" + std::to_string(i) + "\",\"topic\":\"" + l.topic +
           "\",\"error_class\":\"" + l.error_class +
           "\",\"attempts\":" + std::to_string(l.attempts) + ",\"idempotency_key\":\"" + l.key +
           "\",\"already_committed\":" + (l.committed ? "true" : "false");
    if (l.replays) out += ",\"replays\":" + std::to_string(*l.replays);
    out += "}\n";
  }
  return out;
}

// dump_lines() to FILE. False when FILE cannot be written.
bool write_dump(const std::string& path, const std::vector<Letter>& letters) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const std::string text = dump_lines(letters);
  std::fwrite(text.data(), 1, text.size(), f);
  const bool written = std::ferror(f) == 0;
  return std::fclose(f) == 0 && written;
}

// The `owned` layout: `letters` as JSON Lines, each line parsed into an OwnedLetter (in line
// order, so in allocation order), then the structs shuffled, then one Input per letter filled.
std::unique_ptr<OwnedCorpus> build_owned(const rg::Table& table, const std::vector<Letter>& letters,
                                         uint64_t seed) {
  auto c = std::make_unique<OwnedCorpus>();
  const std::string text = dump_lines(letters);
  c->letters.reserve(letters.size());
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = text.find('\n', at);
    const nlohmann::json j = nlohmann::json::parse(text.begin() + static_cast<ptrdiff_t>(at),
                                                   text.begin() + static_cast<ptrdiff_t>(end));
    OwnedLetter l;
    l.message_id = j.at("message_id").get<std::string>();
    l.topic = j.at("topic").get<std::string>();
    l.error_class = j.at("error_class").get<std::string>();
    l.key = j.at("idempotency_key").get<std::string>();
    l.attempts = j.at("attempts").get<int64_t>();
    l.committed = j.at("already_committed").get<bool>();
    if (j.contains("replays")) l.replays = j.at("replays").get<int64_t>();
    c->letters.push_back(std::move(l));
    at = end + 1;
  }
  std::mt19937_64 rng(seed);
  std::shuffle(c->letters.begin(), c->letters.end(), rng);
  c->inputs.reserve(c->letters.size());
  for (const OwnedLetter& l : c->letters) {
    c->inputs.emplace_back(table);
    fill(c->inputs.back(), l);
  }
  return c;
}

// The shipped policy's table as a worker gets it: its bytes written to a file, read back with
// Table::load_file (its own allocation, as in a worker).
std::unique_ptr<rg::Table> load_through_file(const Policy& p) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("rg_stream_bench_" + std::to_string(::getpid()) + ".rgt"))
                               .string();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(p.bytes.data(), 1, p.bytes.size(), f) != p.bytes.size() ||
      std::fclose(f) != 0) {
    std::fprintf(stderr, "%s: cannot write %s\n", kName, path.c_str());
    std::exit(2);
  }
  rg::LoadStatus status;
  std::unique_ptr<rg::Table> table = rg::Table::load_file(path, &status);
  std::remove(path.c_str());
  if (!table) {
    std::fprintf(stderr, "%s: %s\n", kName, status.message.c_str());
    std::exit(2);
  }
  return table;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const Job* find(const std::vector<Job>& jobs, const std::string& section, const char* gate) {
  for (const Job& j : jobs) {
    if (j.section == section && j.gate == gate) return &j;
  }
  return nullptr;
}

// The median over passes of a / b, both measured in the same pass.
double ratio(const Job& a, const Job& b) {
  std::vector<double> r;
  for (size_t i = 0; i < a.ns.size(); ++i) r.push_back(a.ns[i] / b.ns[i]);
  return median(r);
}

}  // namespace

int main(int argc, char** argv) {
  size_t letters = 200000, passes = 7, rows = 0;
  std::string only, dump;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 < argc && a == "--letters") {
      letters = std::strtoull(argv[++i], nullptr, 10);
    } else if (i + 1 < argc && a == "--passes") {
      passes = std::strtoull(argv[++i], nullptr, 10);
    } else if (i + 1 < argc && a == "--rows") {
      rows = std::strtoull(argv[++i], nullptr, 10);
    } else if (i + 1 < argc && a == "--only") {
      only = argv[++i];
    } else if (i + 1 < argc && a == "--dump") {
      dump = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--letters N] [--passes P] [--rows R] [--only SECTION/ORDER/GATE] "
                   "[--dump FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  if (letters < 4096 || passes == 0) {
    std::fprintf(stderr, "%s: --letters must be at least 4096 and --passes at least 1\n", kName);
    return 2;
  }
  constexpr size_t kCached = 4096;
  std::vector<std::unique_ptr<Policy>> policies;
  std::vector<std::unique_ptr<Corpus>> corpora;
  std::vector<Job> jobs;
  std::unique_ptr<rg::Table> owned_table;
  std::unique_ptr<OwnedCorpus> owned;
  auto section = [&](const std::string& name, const Policy& p, const char* order,
                     std::vector<Letter> ls, bool hand) {
    if (std::string_view(order) == "sorted") {
      std::sort(ls.begin(), ls.end(), [](const Letter& a, const Letter& b) {
        return std::tuple(a.topic, a.error_class, a.attempts, a.committed, a.key.empty()) <
               std::tuple(b.topic, b.error_class, b.attempts, b.committed, b.key.empty());
      });
    }
    size_t repeat = 1;
    if (std::string_view(order) == "cached") {
      repeat = ls.size() / kCached;
      ls.resize(kCached);
    }
    corpora.push_back(build_corpus(*p.table, ls));
    corpora.back()->repeat = repeat;
    check_agreement(p, *corpora.back(), hand);
    add_jobs(jobs, name + "/" + order, p, *corpora.back(), hand);
  };
  policies.push_back(make_policy(0));
  if (!dump.empty()) {
    if (!write_dump(dump, generate(*policies.back(), letters, 20261203))) {
      std::fprintf(stderr, "%s: cannot write %s\n", kName, dump.c_str());
      return 2;
    }
    std::fprintf(stderr, "%s: %zu letters written to %s\n", kName, letters, dump.c_str());
    return 0;
  }
  {
    const Policy& shipped = *policies.back();
    const std::vector<Letter> ls = generate(shipped, letters, 20261203);
    for (const char* order : {"stream", "sorted", "cached"})
      section("shipped", shipped, order, ls, true);
    // The second layout, on letters of the same mix from another seed.
    owned_table = load_through_file(shipped);
    owned = build_owned(*owned_table, generate(shipped, letters, 20261207), 43);
    check_owned(shipped, *owned_table, *owned);
    add_owned_jobs(jobs, "shipped/owned", shipped, *owned_table, *owned);
  }
  const std::string big = "rows" + std::to_string(rows);
  if (rows > 0) {
    policies.push_back(make_policy(rows));
    const Policy& p = *policies.back();
    const std::vector<Letter> ls = generate(p, letters, 20261204);
    for (const char* order : {"stream", "cached"}) section(big, p, order, ls, false);
  }
  std::fprintf(stderr, "%s: every gate agrees with decide() on every letter\n", kName);

  if (!only.empty()) {
    for (Job& j : jobs) {
      if (j.name != only) continue;
      uint64_t sum = 0;
      for (size_t i = 0; i < passes; ++i) sum += j.run();
      std::printf("%s: %zu decisions, sum %llu\n", j.name.c_str(), j.decisions * passes,
                  static_cast<unsigned long long>(sum));
      return 0;
    }
    if (only != "none") {
      std::fprintf(stderr, "%s: no job %s\n", kName, only.c_str());
      return 2;
    }
    return 0;
  }

  std::mt19937_64 rng(7);
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  volatile uint64_t sink = 0;
  for (size_t pass = 0; pass <= passes; ++pass) {  // pass 0 warms up and is not recorded
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t k : order) {
      Job& j = jobs[k];
      const auto t0 = std::chrono::steady_clock::now();
      sink = sink + j.run();
      const auto t1 = std::chrono::steady_clock::now();
      if (pass > 0) {
        j.ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                       static_cast<double>(j.decisions));
      }
    }
  }

  std::printf("letters %zu, passes %zu (medians; ratios are medians of same-pass ratios)\n\n",
              letters, passes);
  std::printf("| job | ns/decision | min | / hand_written | / map_reused_key |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const Job& j : jobs) {
    const Job* hand = find(jobs, j.section, "hand_written");
    const Job* reused = find(jobs, j.section, "map_reused_key");
    char h[32] = "", r[32] = "";
    if (hand != nullptr) std::snprintf(h, sizeof h, "%.2f", ratio(j, *hand));
    if (reused != nullptr) std::snprintf(r, sizeof r, "%.2f", ratio(j, *reused));
    std::printf("| %s | %.1f | %.1f | %s | %s |\n", j.name.c_str(), median(j.ns),
                *std::min_element(j.ns.begin(), j.ns.end()), h, r);
  }
  if (rows > 0) {
    const Job* a = find(jobs, big + "/cached", "decide");
    const Job* b = find(jobs, "shipped/cached", "decide");
    std::printf("\ncached loop, decide(): %zu rows / 9 rows = %.2f\n", rows, ratio(*a, *b));
  }
  return 0;
}
