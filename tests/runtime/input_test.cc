// Input: the one contiguous block of states and cells decide() reads, copied and moved intact,
// read back through slot(), and the heap block of a policy of more than kInlineFields fields.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/lower.h"
#include "runtime/table.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using State = Input::Slot::State;

std::unique_ptr<Table> load(const std::vector<uint8_t>& bytes) {
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  EXPECT_TRUE(table) << status.message;
  return table;
}

// A policy of `n` optional string fields f0..f{n-1}, no rules: every letter takes the default.
std::vector<uint8_t> wide_policy(uint32_t n) {
  ir::CheckedPolicy c;
  c.policy.id = "wide";
  c.policy.revision = 1;
  for (uint32_t f = 0; f < n; ++f) {
    c.policy.fields.push_back(testing::string_field("f" + std::to_string(f), true));
  }
  c.policy.verbs = {testing::verb("hold", ir::Effect::kNone, "")};
  c.policy.default_verb = 0;
  c.policy.default_reason = "none";
  return lower(c);
}

TEST(Input, SlotReadsBackEveryStateAndItsValue) {
  auto table = load(lower(testing::reference_gate()));
  Input in(*table);
  ASSERT_EQ(in.size(), 6u);
  in.set_string(0, "payment.capture");
  in.set_int(2, -7);
  in.set_bool(4, true);
  in.set_null(5);
  in.set_invalid(3);
  EXPECT_EQ(in.slot(0).state, State::kString);
  EXPECT_EQ(in.slot(0).s, "payment.capture");
  EXPECT_EQ(in.slot(0).i, 15);
  EXPECT_EQ(in.slot(1).state, State::kUnset);
  EXPECT_EQ(in.slot(2).state, State::kInt);
  EXPECT_EQ(in.slot(2).i, -7);
  EXPECT_TRUE(in.slot(2).s.empty());
  EXPECT_EQ(in.slot(4).state, State::kBool);
  EXPECT_TRUE(in.slot(4).b);
  EXPECT_EQ(in.slot(4).i, 1);
  EXPECT_EQ(in.slot(5).state, State::kNull);
  EXPECT_EQ(in.slot(3).state, State::kInvalid);
  EXPECT_EQ(in.slot(3).i, 0);
  // The contiguous states agree with slot(), and are padded with unset to 8 bytes.
  for (uint32_t f = 0; f < 8; ++f) {
    EXPECT_EQ(static_cast<State>(in.states()[f]), f < 6 ? in.slot(f).state : State::kUnset) << f;
  }
  // Past the table's fields: ignored by the setters, unset when read.
  in.set_int(6, 1);
  in.set_string(1000, "x");
  EXPECT_EQ(in.slot(6).state, State::kUnset);
  EXPECT_EQ(in.state(1000), State::kUnset);
  EXPECT_EQ(in.states()[6], 0);
  // A bool set false reads false with i 0; a string set empty has size 0 and no bytes read.
  in.set_bool(4, false);
  EXPECT_FALSE(in.slot(4).b);
  EXPECT_EQ(in.slot(4).i, 0);
  in.set_string(0, std::string_view());
  EXPECT_EQ(in.slot(0).state, State::kString);
  EXPECT_EQ(in.slot(0).i, 0);
  in.set_unset(0);
  EXPECT_EQ(in.slot(0).state, State::kUnset);
  in.clear();
  for (uint32_t f = 0; f < 6; ++f) {
    EXPECT_EQ(in.slot(f).state, State::kUnset);
    EXPECT_EQ(in.cells()[f].i, 0);
    EXPECT_EQ(in.cells()[f].bytes, nullptr);
  }
}

// The states and cells of a policy of at most kInlineFields fields live in the object itself.
TEST(Input, SmallPolicyIsOneBlockInsideTheObject) {
  auto table = load(lower(testing::reference_gate()));
  Input in(*table);
  const char* begin = reinterpret_cast<const char*>(&in);
  const char* end = begin + sizeof(Input);
  for (const char* p : {reinterpret_cast<const char*>(in.states()),
                        reinterpret_cast<const char*>(in.cells() + in.size() - 1)}) {
    EXPECT_GE(p, begin);
    EXPECT_LT(p, end);
  }
}

// Copies and moves keep every value and point at their own storage, inline or on the heap; the
// decisions of the copy, the moved-to Input and the original agree.
TEST(Input, CopiesAndMovesKeepValuesAndOwnStorage) {
  for (uint32_t n : {1u, 6u, 8u, 9u, 40u}) {
    SCOPED_TRACE(n);
    auto table = load(wide_policy(n));
    Input in(*table);
    ASSERT_EQ(in.size(), n);
    std::vector<std::string> values;
    for (uint32_t f = 0; f < n; ++f) values.push_back("v" + std::to_string(f));
    for (uint32_t f = 0; f < n; f += 2) in.set_string(f, values[f]);
    auto same = [&](const Input& x) {
      ASSERT_EQ(x.size(), n);
      for (uint32_t f = 0; f < n; ++f) {
        EXPECT_EQ(x.slot(f).state, f % 2 == 0 ? State::kString : State::kUnset) << f;
        if (f % 2 == 0) {
          EXPECT_EQ(x.slot(f).s, values[f]) << f;
        }
      }
      const char* begin = reinterpret_cast<const char*>(&x);
      const bool inside = reinterpret_cast<const char*>(x.states()) >= begin &&
                          reinterpret_cast<const char*>(x.states()) < begin + sizeof(Input);
      EXPECT_EQ(inside, n <= Input::kInlineFields);
    };
    Input copy(in);
    same(copy);
    copy.set_string(0, "changed");  // a copy owns its slots
    EXPECT_EQ(in.slot(0).s, "v0");
    Input assigned(*table);
    assigned = in;
    same(assigned);
    Input moved(std::move(copy));
    EXPECT_EQ(moved.slot(0).s, "changed");
    EXPECT_EQ(copy.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from has no fields
    copy.set_string(0, "ignored");
    EXPECT_EQ(copy.state(0), State::kUnset);
    Input move_assigned(*table);
    move_assigned = std::move(assigned);
    same(move_assigned);
    EXPECT_EQ(table->decide(move_assigned).verb, table->decide(in).verb);
    // Assigning a table's Input of another width resizes the storage.
    auto other = load(wide_policy(n == 9 ? 3 : 9));
    Input resized(*other);
    resized = in;
    same(resized);
    std::vector<Input> many;
    for (int k = 0; k < 50; ++k) many.push_back(in);  // reallocations move them
    for (const Input& x : many) same(x);
  }
}

}  // namespace
}  // namespace replaygate
