// The baselines the decide benchmarks time beside replaygate: the seed article's gate written by
// hand in C++, and the same checks followed by an unordered_map lookup (of string views, or of a
// std::string key built per call or in a reused buffer), plus how a letter fills an Input and
// the equivalence check that every gate decides every letter alike. Shared by decide_bench.cc
// and stream_bench.cc; benchmarks only, never linked into the product.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/table.h"

namespace replaygate::bench {

enum Verb : uint32_t { kNeverV = 0, kReplayOnceV = 1, kHoldV = 2 };

// A letter as the benchmarks generate it (strings owned).
struct Letter {
  std::string topic, error_class, key;
  int64_t attempts = 1;
  bool committed = false;
  std::optional<int64_t> replays;  // absent unless set
};

// What a hand-written gate takes: a typed struct. The types already guarantee what the policy's
// `type` and required checks do (every required field is present and of its type); what they do
// not guarantee, the gate checks itself: the int bounds (attempts >= 0, replays >= 0) and
// empty_means_absent on idempotency_key.
struct GateInput {
  std::string_view topic, error_class, idempotency_key;
  int64_t attempts = 0;
  bool already_committed = false;
  std::optional<int64_t> replays;
};

template <typename L>
GateInput gate_input(const L& l) {
  return GateInput{l.topic, l.error_class, l.key, l.attempts, l.committed, l.replays};
}

// A baseline's answer: the verb and which rule decided, in the table's terms: a catalog index
// (guards 0..3, then the table rows in order), kDefaultRule, or kInvalidRule + field index.
struct Answer {
  uint32_t verb;
  uint32_t rule;
  bool operator==(const Answer&) const = default;
};
inline constexpr uint32_t kDefaultRule = 1u << 30, kInvalidRule = 1u << 31;
inline constexpr uint32_t kAttemptsField = 2, kReplaysField = 5;  // field order of the policy

inline Answer answer(const Decision& d) {
  switch (d.kind) {
    case DecisionKind::kRule:
      return {d.verb, d.rule};
    case DecisionKind::kDefault:
      return {d.verb, kDefaultRule};
    case DecisionKind::kInvalidInput:
      break;
  }
  return {d.verb, kInvalidRule | d.invalid_field};
}

// The seed article's replay_gate.py written by hand in C++, with the same rules as
// policies/replay_gate.yaml: bounds first (fail closed: an out-of-range value decides the default
// before any rule), then the four guards in order, then an if chain over the seed table. Not
// inlined into the benchmark loop: like decide(), it is one call per letter.
[[gnu::noinline]] inline Answer hand_written(const GateInput& in) {
  if (in.attempts < 0) return {kHoldV, kInvalidRule | kAttemptsField};
  if (in.replays && *in.replays < 0) return {kHoldV, kInvalidRule | kReplaysField};
  if (in.idempotency_key.empty()) return {kHoldV, 0};
  if (in.already_committed) return {kNeverV, 1};
  if (in.attempts >= 3) return {kHoldV, 2};
  if (in.replays.value_or(0) >= 1) return {kHoldV, 3};
  const std::string_view t = in.topic, e = in.error_class;
  if (t == "payment.capture") {
    if (e == "timeout") return {kReplayOnceV, 4};
    if (e == "insufficient_funds") return {kNeverV, 5};
    if (e == "duplicate") return {kNeverV, 6};
  } else if (t == "inventory.reserve") {
    if (e == "lock_timeout") return {kReplayOnceV, 7};
    if (e == "overbook") return {kNeverV, 8};
  } else if (t == "webhook.partner") {
    if (e == "http_503") return {kReplayOnceV, 9};
    if (e == "http_400") return {kNeverV, 10};
  } else if (t == "mail.receipt") {
    if (e == "smtp_421") return {kReplayOnceV, 11};
    if (e == "unknown_recipient") return {kNeverV, 12};
  }
  return {kHoldV, kDefaultRule};
}

// The bounds and guards every map gate checks first (nullopt: the map decides).
[[gnu::always_inline]] inline std::optional<Answer> map_guards(const GateInput& in) {
  if (in.attempts < 0) return Answer{kHoldV, kInvalidRule | kAttemptsField};
  if (in.replays && *in.replays < 0) return Answer{kHoldV, kInvalidRule | kReplaysField};
  if (in.idempotency_key.empty()) return Answer{kHoldV, 0};
  if (in.already_committed) return Answer{kNeverV, 1};
  if (in.attempts >= 3) return Answer{kHoldV, 2};
  if (in.replays.value_or(0) >= 1) return Answer{kHoldV, 3};
  return std::nullopt;
}

struct PairHash {
  size_t operator()(const std::pair<std::string_view, std::string_view>& p) const noexcept {
    size_t a = std::hash<std::string_view>{}(p.first), b = std::hash<std::string_view>{}(p.second);
    return a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  }
};
using PairMap = std::unordered_map<std::pair<std::string_view, std::string_view>, Answer, PairHash>;

// The same bounds and guards, then a plain unordered_map lookup of the key pair (string views
// into the map's own strings: no allocation).
[[gnu::noinline]] inline Answer map_gate(const PairMap& map, const GateInput& in) {
  if (auto g = map_guards(in)) return *g;
  auto it = map.find({in.topic, in.error_class});
  return it == map.end() ? Answer{kHoldV, kDefaultRule} : it->second;
}

// A map keyed by one std::string, topic '\0' error_class (the bench letters hold no NUL), as a
// worker keyed by a joined string would write it.
using StringMap = std::unordered_map<std::string, Answer>;
inline void append_key(std::string& key, std::string_view topic, std::string_view error_class) {
  key.append(topic);
  key.push_back('\0');
  key.append(error_class);
}

// The key built per call: allocates whenever it is over the small-string capacity (15 bytes).
[[gnu::noinline]] inline Answer map_gate_alloc(const StringMap& map, const GateInput& in) {
  if (auto g = map_guards(in)) return *g;
  std::string key;
  append_key(key, in.topic, in.error_class);
  auto it = map.find(key);
  return it == map.end() ? Answer{kHoldV, kDefaultRule} : it->second;
}

// The key built in a buffer the caller reuses (no allocation once it has grown).
[[gnu::noinline]] inline Answer map_gate_reused(const StringMap& map, std::string& key,
                                                const GateInput& in) {
  if (auto g = map_guards(in)) return *g;
  key.clear();
  append_key(key, in.topic, in.error_class);
  auto it = map.find(key);
  return it == map.end() ? Answer{kHoldV, kDefaultRule} : it->second;
}

// Fills a reused Input from a letter as a worker does (inputs/letters.cc): every field unset,
// then each present field's setter.
template <typename L>
void fill(Input& in, const L& l) {
  in.clear();
  in.set_string(0, l.topic);
  in.set_string(1, l.error_class);
  in.set_int(2, l.attempts);
  in.set_string(3, l.key);
  in.set_bool(4, l.committed);
  if (l.replays) in.set_int(5, *l.replays);
}

// Letters for the agreement check beyond the bench stream: every guard and bound edge (negative
// and extreme ints, replays absent / below its bound / 0 / 1, empty key, committed) on every seed
// pair, an unknown pair and an empty topic.
inline std::vector<Letter> edge_letters(
    const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<std::pair<std::string, std::string>> keys(
      pairs.begin(), pairs.begin() + std::min<size_t>(pairs.size(), 32));
  keys.emplace_back("payment.capture", "no_such_error");
  keys.emplace_back("", "timeout");
  keys.emplace_back("payment.captur", "timeou");
  std::vector<Letter> out;
  const int64_t ints[] = {INT64_MIN, -1, 0, 1, 2, 3, 4, INT64_MAX};
  const std::optional<int64_t> replays[] = {std::nullopt, INT64_MIN, -1, 0, 1, 2};
  for (const auto& [t, e] : keys) {
    for (int64_t a : ints) {
      for (const auto& r : replays) {
        for (const char* key : {"", "k"}) {
          for (bool committed : {false, true}) out.push_back(Letter{t, e, key, a, committed, r});
        }
      }
    }
  }
  return out;
}

// Exits 2 with the letter when two answers differ: a faster baseline that decides differently
// would not be a baseline.
template <typename L>
void require_same(const char* bench, const char* what, const L& l, const Answer& want,
                  const Answer& got) {
  if (got == want) return;
  std::fprintf(stderr,
               "%s: %s disagrees with decide() on (%.*s, %.*s, attempts %lld, key '%.*s', "
               "committed %d): decide verb %u rule %#x, %s verb %u rule %#x\n",
               bench, what, static_cast<int>(std::string_view(l.topic).size()),
               std::string_view(l.topic).data(),
               static_cast<int>(std::string_view(l.error_class).size()),
               std::string_view(l.error_class).data(), static_cast<long long>(l.attempts),
               static_cast<int>(std::string_view(l.key).size()), std::string_view(l.key).data(),
               l.committed ? 1 : 0, want.verb, want.rule, what, got.verb, got.rule);
  std::exit(2);
}

}  // namespace replaygate::bench
