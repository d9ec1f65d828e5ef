// Table::decide_many() (runtime/table.h) against decide(): the same decision for every input of a
// batch, in order, over a contiguous array and over an array of pointers, on the shipped gate (the
// kernel's pair path) and on a wide policy (the indexed path, Inputs on the heap); batches shorter
// and longer than its prefetch distance, Inputs made for shorter and longer layouts, strings of
// every size class (the kernel reads a key's bytes only when the table is reached); and the
// Input layout decide() relies on (64-byte aligned, its inline block first).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/table.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

bool same(const Decision& a, const Decision& b) {
  return a.verb == b.verb && a.rule == b.rule && a.kind == b.kind &&
         a.invalid_field == b.invalid_field;
}

// The reference gate with `extra` more int fields (0..9) no rule reads.
ir::CheckedPolicy wide_gate(int extra) {
  ir::CheckedPolicy wide = reference_gate();
  for (int i = 0; i < extra; ++i)
    wide.policy.fields.push_back(int_field("x" + std::to_string(i), 0, 9));
  wide.source.rules.clear();
  wide.source.conditions.clear();
  wide.source.rows.clear();
  return wide;
}

// Random letters over the reference gate's fields: known pairs, near misses, long and short and
// empty strings, every state (unset, null, invalid, a value of the wrong type), ints at and past
// the bounds. `strings` keeps the bytes the Inputs point at.
std::vector<Input> random_inputs(const Table& table, size_t n, uint64_t seed,
                                 std::vector<std::unique_ptr<std::string>>& strings) {
  std::mt19937_64 rng(seed);
  auto text = [&](std::string s) {
    strings.push_back(std::make_unique<std::string>(std::move(s)));
    return std::string_view(*strings.back());
  };
  auto value = [&](bool topic) -> std::string {
    const auto& pair = kKnownFailureKeys[rng() % std::size(kKnownFailureKeys)];
    std::string s = topic ? pair.first : pair.second;
    switch (rng() % 6) {
      case 0:
        s[rng() % s.size()] ^= 1;
        break;
      case 1:
        s = std::string(rng() % 4, 'a');  // 0..3 bytes
        break;
      case 2:
        s += std::string(10 + rng() % 40, 'z');  // past the 24 bytes the words cover
        break;
      default:
        break;
    }
    return s;
  };
  const int64_t ints[] = {INT64_MIN, -1, 0, 1, 2, 3, 4, 100, INT64_MAX};
  std::vector<Input> out;
  for (size_t i = 0; i < n; ++i) {
    Input in(table);
    for (uint32_t f = 0; f < in.size(); ++f) {
      const unsigned how = static_cast<unsigned>(rng() % 20);
      if (how == 0) continue;  // unset
      if (how == 1) {
        in.set_null(f);
      } else if (how == 2) {
        in.set_invalid(f);
      } else if (how == 3) {
        in.set_int(f, 1);  // wrong type for the strings and the bool
      } else if (f == kTopic || f == kErrorClass) {
        in.set_string(f, text(value(f == kTopic)));
      } else if (f == kIdempotencyKey) {
        in.set_string(f, text(rng() % 4 == 0 ? "" : "k-" + std::to_string(rng())));
      } else if (f == kAlreadyCommitted) {
        in.set_bool(f, rng() % 4 == 0);
      } else {
        const int64_t extra = rng() % 20 == 0 ? 10 : static_cast<int64_t>(rng() % 10);  // 10: out
        in.set_int(f, f >= 6 ? extra : ints[rng() % 9]);
      }
    }
    out.push_back(std::move(in));
  }
  return out;
}

void expect_batch_agrees(const Table& table, const std::vector<Input>& inputs) {
  std::vector<Decision> many(inputs.size());
  table.decide_many(inputs.data(), inputs.size(), many.data());
  std::vector<const Input*> pointers;
  for (const Input& in : inputs) pointers.push_back(&in);
  std::vector<Decision> by_pointer(inputs.size());
  table.decide_many(pointers.data(), pointers.size(), by_pointer.data());
  size_t rules = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Decision one = table.decide(inputs[i]);
    EXPECT_TRUE(same(one, many[i])) << "input " << i << " of " << inputs.size();
    EXPECT_TRUE(same(one, by_pointer[i])) << "input " << i << " of " << inputs.size();
    rules += one.kind == DecisionKind::kRule;
  }
  if (inputs.size() >= 1000) {
    EXPECT_GT(rules, inputs.size() / 20);  // not all invalid
  }
}

TEST(DecideMany, ShippedGateAgreesWithDecideOnEveryBatchSize) {
  auto table = load_lowered(reference_gate());
  ASSERT_NE(table, nullptr);
  std::vector<std::unique_ptr<std::string>> strings;
  const std::vector<Input> inputs = random_inputs(*table, 5000, 43, strings);
  expect_batch_agrees(*table, inputs);
  // Around the prefetch distance (8 and 16 ahead): every prefix.
  for (size_t n = 0; n <= 40; ++n) {
    expect_batch_agrees(*table, std::vector<Input>(inputs.begin(), inputs.begin() + n));
  }
}

TEST(DecideMany, EmptyBatchWritesNothing) {
  auto table = load_lowered(reference_gate());
  ASSERT_NE(table, nullptr);
  Decision untouched;
  untouched.verb = 77;
  table->decide_many(static_cast<const Input*>(nullptr), 0, &untouched);
  table->decide_many(static_cast<const Input* const*>(nullptr), 0, &untouched);
  EXPECT_EQ(untouched.verb, 77u);
}

// A policy of more than Input::kInlineFields fields: its Inputs keep their cells on the heap, and
// decide() takes the fast path, not the kernel.
TEST(DecideMany, WidePolicyAgreesWithDecide) {
  auto table = load_lowered(wide_gate(5));
  ASSERT_NE(table, nullptr);
  ASSERT_GT(table->field_count(), Input::kInlineFields);
  std::vector<std::unique_ptr<std::string>> strings;
  expect_batch_agrees(*table, random_inputs(*table, 3000, 7, strings));
}

// Inputs made for other layouts in one batch (longer ones on the heap, shorter ones missing the
// last fields): each decided as decide() decides it.
TEST(DecideMany, InputsOfOtherLayoutsAgree) {
  auto gate = load_lowered(reference_gate());
  auto wide = load_lowered(wide_gate(5));
  ir::CheckedPolicy narrow_policy = reference_gate();
  narrow_policy.policy.fields.resize(3);  // topic, error_class, attempts only: for the Inputs
  narrow_policy.policy.rules.clear();
  narrow_policy.source.rules.clear();
  narrow_policy.source.conditions.clear();
  narrow_policy.source.rows.clear();
  auto narrow = load_lowered(narrow_policy);
  ASSERT_NE(gate, nullptr);
  ASSERT_NE(wide, nullptr);
  ASSERT_NE(narrow, nullptr);
  std::vector<std::unique_ptr<std::string>> strings;
  std::vector<Input> a = random_inputs(*gate, 200, 1, strings);
  std::vector<Input> b = random_inputs(*wide, 200, 2, strings);
  std::vector<Input> c = random_inputs(*narrow, 200, 3, strings);
  std::vector<Input> mixed;
  for (size_t i = 0; i < 200; ++i) {
    mixed.push_back(a[i]);
    mixed.push_back(b[i]);
    mixed.push_back(c[i]);
  }
  expect_batch_agrees(*gate, mixed);
}

// The layout decide() relies on: a 64-byte aligned Input (also in a vector), whose states and
// cells are its inline block for a policy of at most kInlineFields fields.
TEST(DecideMany, InputIsCacheLineAlignedWithItsInlineBlockFirst) {
  auto table = load_lowered(reference_gate());
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(alignof(Input), 64u);
  std::vector<Input> inputs(3, Input(*table));
  for (const Input& in : inputs) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(&in) % 64, 0u);
    const char* base = reinterpret_cast<const char*>(&in);
    EXPECT_EQ(reinterpret_cast<const char*>(in.states()), base + 8);
    EXPECT_EQ(reinterpret_cast<const char*>(in.cells()), base + 16);
  }
  auto heap = std::make_unique<Input>(*table);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(heap.get()) % 64, 0u);
}

}  // namespace
}  // namespace replaygate
