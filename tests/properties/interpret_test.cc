// Hand-picked cases for the reference interpreter (compiler/interpret.h): validation, absent,
// byte-exact strings, int edges, rule order, table specificity and catalog numbering.
#include "compiler/interpret.h"

#include <gtest/gtest.h>

#include <limits>

#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using ir::Op;
using ir::Value;
using LV = LetterValue;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

InterpretResult rule(uint32_t verb, uint32_t catalog) {
  return {verb, InterpretKind::kRule, catalog, 0};
}
InterpretResult by_default(uint32_t verb) { return {verb, InterpretKind::kDefault, 0, 0}; }
InterpretResult invalid(uint32_t verb, uint32_t field) {
  return {verb, InterpretKind::kInvalidInput, 0, field};
}

// Fields: 0 s (string), 1 o (optional string, "" is absent), 2 n (int in [0, 10]),
// 3 b (bool), 4 e (enum red/green), 5 m (optional int, no bounds).
// Verbs: 0 hold (default), 1 park, 2 replay.
ir::Policy base_policy() {
  ir::Policy p;
  p.id = "t";
  auto add = [&](std::string name, ir::FieldType type) {
    ir::Field f;
    f.name = std::move(name);
    f.type = type;
    p.fields.push_back(f);
    return &p.fields.back();
  };
  add("s", ir::FieldType::kString);
  auto* o = add("o", ir::FieldType::kString);
  o->optional = true;
  o->empty_means_absent = true;
  auto* n = add("n", ir::FieldType::kInt);
  n = &p.fields[2];
  n->min = 0;
  n->max = 10;
  add("b", ir::FieldType::kBool);
  add("e", ir::FieldType::kEnum);
  p.fields[4].enum_values = {"red", "green"};
  add("m", ir::FieldType::kInt);
  p.fields[5].optional = true;
  p.verbs = {{"hold", ir::Effect::kNone, ""},
             {"park", ir::Effect::kNone, ""},
             {"replay", ir::Effect::kCreate, ""}};
  p.default_verb = 0;
  return p;
}

Letter good_letter() {
  return {LV::String("a"), LV::String("k"),   LV::Int(5),
          LV::Bool(false), LV::String("red"), LV::Int(0)};
}

ir::Guard guard(std::string id, std::vector<ir::Condition> conditions, uint32_t verb) {
  return ir::Guard{std::move(id), "r", std::move(conditions), verb};
}

TEST(InterpretTest, NoRulesGivesDefault) {
  EXPECT_EQ(interpret(base_policy(), good_letter()), by_default(0));
}

TEST(InterpretTest, RequiredMissingNullOrWrongTypeIsInvalid) {
  auto p = base_policy();
  p.rules.emplace_back(guard("any", {{0, Op::kNe, {Value::String("zz")}, ""}}, 2));
  ASSERT_EQ(interpret(p, good_letter()), rule(2, 0));
  struct Case {
    uint32_t field;
    LV value;
  };
  const Case cases[] = {
      {0, LV::Missing()},
      {0, LV::Null()},
      {0, LV::Int(1)},
      {0, LV::Bool(true)},
      {0, LV::Invalid()},
      {2, LV::String("5")},
      {2, LV::Bool(true)},
      {2, LV::Int(-1)},
      {2, LV::Int(11)},
      {2, LV::Int(kMin)},
      {2, LV::Int(kMax)},
      {3, LV::Int(1)},
      {3, LV::String("true")},
      {4, LV::String("blue")},
      {4, LV::String("Red")},
      {4, LV::String("")},
      {4, LV::Int(0)},
      {4, LV::String(std::string("red\0", 4))},
      // Optional fields: absent is fine, a wrong type or an unreadable value is not.
      {1, LV::Int(3)},
      {1, LV::Invalid()},
      {5, LV::String("1")},
      {5, LV::Bool(false)},
      {5, LV::Invalid()},
  };
  for (const auto& c : cases) {
    Letter letter = good_letter();
    letter[c.field] = c.value;
    EXPECT_EQ(interpret(p, letter), invalid(0, c.field)) << describe_letter(p, letter);
  }
}

TEST(InterpretTest, BoundsAreInclusive) {
  auto p = base_policy();
  p.rules.emplace_back(guard("any", {{0, Op::kNe, {Value::String("zz")}, ""}}, 2));
  for (int64_t n : {0, 10}) {
    Letter letter = good_letter();
    letter[2] = LV::Int(n);
    EXPECT_EQ(interpret(p, letter), rule(2, 0)) << n;
  }
}

TEST(InterpretTest, FirstInvalidFieldInDeclarationOrder) {
  auto p = base_policy();
  Letter letter = good_letter();
  letter[4] = LV::String("blue");
  letter[2] = LV::Missing();
  EXPECT_EQ(interpret(p, letter), invalid(0, 2));
}

TEST(InterpretTest, ShortLetterMeansMissingFields) {
  auto p = base_policy();
  EXPECT_EQ(interpret(p, Letter{}), invalid(0, 0));
  Letter letter = good_letter();
  letter.resize(5);  // m (optional) missing: still valid
  EXPECT_EQ(interpret(p, letter), by_default(0));
  letter.resize(4);  // e (required) missing
  EXPECT_EQ(interpret(p, letter), invalid(0, 4));
}

TEST(InterpretTest, EmptyMeansAbsent) {
  auto p = base_policy();
  p.rules.emplace_back(guard("o_absent", {{1, Op::kAbsent, {}, ""}}, 1));
  Letter letter = good_letter();
  for (const LV& absent : {LV::Missing(), LV::Null(), LV::String("")}) {
    letter[1] = absent;
    EXPECT_EQ(interpret(p, letter), rule(1, 0)) << describe_letter(p, letter);
  }
  letter[1] = LV::String(" ");
  EXPECT_EQ(interpret(p, letter), by_default(0));
  // A required string with empty_means_absent: "" is a missing required field.
  p.fields[0].empty_means_absent = true;
  letter[0] = LV::String("");
  EXPECT_EQ(interpret(p, letter), invalid(0, 0));
  // Without the flag, "" is an ordinary present value.
  p.fields[0].empty_means_absent = false;
  p.rules.clear();
  p.rules.emplace_back(guard("s_empty", {{0, Op::kEq, {Value::String("")}, ""}}, 2));
  EXPECT_EQ(interpret(p, letter), rule(2, 0));
}

TEST(InterpretTest, AbsentSatisfiesOnlyAbsent) {
  auto p = base_policy();
  const ir::Condition on_absent[] = {
      {5, Op::kEq, {Value::Int(0)}, ""},
      {5, Op::kNe, {Value::Int(0)}, ""},
      {5, Op::kIn, {Value::Int(0)}, ""},
      {5, Op::kNotIn, {Value::Int(0)}, ""},
      {5, Op::kLt, {Value::Int(kMax)}, ""},
      {5, Op::kLe, {Value::Int(kMax)}, ""},
      {5, Op::kGt, {Value::Int(kMin)}, ""},
      {5, Op::kGe, {Value::Int(kMin)}, ""},
      {5, Op::kPresent, {}, ""},
  };
  Letter letter = good_letter();
  letter[5] = LV::Null();
  for (const auto& c : on_absent) {
    p.rules.clear();
    p.rules.emplace_back(guard("g", {c}, 2));
    EXPECT_EQ(interpret(p, letter), by_default(0)) << ir::op_name(c.op);
  }
  p.rules.clear();
  p.rules.emplace_back(guard("g", {{5, Op::kAbsent, {}, ""}}, 2));
  EXPECT_EQ(interpret(p, letter), rule(2, 0));
  letter[5] = LV::Int(0);
  EXPECT_EQ(interpret(p, letter), by_default(0));
}

TEST(InterpretTest, StringsMatchByteForByte) {
  auto p = base_policy();
  p.rules.emplace_back(guard("eq", {{0, Op::kEq, {Value::String("payment.capture")}, ""}}, 2));
  Letter letter = good_letter();
  letter[0] = LV::String("payment.capture");
  EXPECT_EQ(interpret(p, letter), rule(2, 0));
  for (const std::string& other :
       {std::string("payment.capture\0", 16), std::string("Payment.capture"),
        std::string("payment.captur"), std::string("payment.capture "), std::string("")}) {
    letter[0] = LV::String(other);
    EXPECT_EQ(interpret(p, letter), by_default(0)) << describe_letter(p, letter);
  }
  // A NUL inside a policy literal is an ordinary byte too.
  p.rules.clear();
  p.rules.emplace_back(
      guard("nul", {{0, Op::kEq, {Value::String(std::string("a\0b", 3))}, ""}}, 2));
  letter[0] = LV::String(std::string("a\0b", 3));
  EXPECT_EQ(interpret(p, letter), rule(2, 0));
  letter[0] = LV::String("a");
  EXPECT_EQ(interpret(p, letter), by_default(0));
}

TEST(InterpretTest, OpsOnPresentValues) {
  auto p = base_policy();
  struct Case {
    ir::Condition condition;
    LV value;
    bool holds;
  };
  const Case cases[] = {
      {{2, Op::kLt, {Value::Int(5)}, ""}, LV::Int(4), true},
      {{2, Op::kLt, {Value::Int(5)}, ""}, LV::Int(5), false},
      {{2, Op::kLe, {Value::Int(5)}, ""}, LV::Int(5), true},
      {{2, Op::kLe, {Value::Int(5)}, ""}, LV::Int(6), false},
      {{2, Op::kGt, {Value::Int(5)}, ""}, LV::Int(5), false},
      {{2, Op::kGt, {Value::Int(5)}, ""}, LV::Int(6), true},
      {{2, Op::kGe, {Value::Int(5)}, "five"}, LV::Int(5), true},
      {{2, Op::kGe, {Value::Int(5)}, ""}, LV::Int(4), false},
      {{2, Op::kEq, {Value::Int(5)}, ""}, LV::Int(5), true},
      {{2, Op::kNe, {Value::Int(5)}, ""}, LV::Int(5), false},
      {{2, Op::kIn, {Value::Int(1), Value::Int(5)}, ""}, LV::Int(5), true},
      {{2, Op::kIn, {Value::Int(1), Value::Int(5)}, ""}, LV::Int(3), false},
      {{2, Op::kNotIn, {Value::Int(1), Value::Int(5)}, ""}, LV::Int(3), true},
      {{2, Op::kNotIn, {Value::Int(1), Value::Int(5)}, ""}, LV::Int(1), false},
      {{5, Op::kGe, {Value::Int(kMax)}, ""}, LV::Int(kMax), true},
      {{5, Op::kGt, {Value::Int(kMax)}, ""}, LV::Int(kMax), false},
      {{5, Op::kLe, {Value::Int(kMin)}, ""}, LV::Int(kMin), true},
      {{5, Op::kLt, {Value::Int(kMin)}, ""}, LV::Int(kMin), false},
      {{5, Op::kPresent, {}, ""}, LV::Int(kMin), true},
      {{3, Op::kEq, {Value::Bool(true)}, ""}, LV::Bool(true), true},
      {{3, Op::kEq, {Value::Bool(true)}, ""}, LV::Bool(false), false},
      {{3, Op::kNe, {Value::Bool(true)}, ""}, LV::Bool(false), true},
      {{4, Op::kEq, {Value::String("green")}, ""}, LV::String("green"), true},
      {{4, Op::kNotIn, {Value::String("green")}, ""}, LV::String("red"), true},
      {{4, Op::kIn, {Value::String("green")}, ""}, LV::String("red"), false},
  };
  for (const auto& c : cases) {
    p.rules.clear();
    p.rules.emplace_back(guard("g", {c.condition}, 2));
    Letter letter = good_letter();
    letter[c.condition.field] = c.value;
    EXPECT_EQ(interpret(p, letter), c.holds ? rule(2, 0) : by_default(0))
        << ir::op_name(c.condition.op) << " " << describe_letter(p, letter);
  }
}

TEST(InterpretTest, GuardIsAConjunction) {
  auto p = base_policy();
  p.rules.emplace_back(
      guard("both", {{2, Op::kGe, {Value::Int(3)}, ""}, {2, Op::kLt, {Value::Int(6)}, ""}}, 2));
  Letter letter = good_letter();
  for (int64_t n = 0; n <= 10; ++n) {
    letter[2] = LV::Int(n);
    EXPECT_EQ(interpret(p, letter), n >= 3 && n < 6 ? rule(2, 0) : by_default(0)) << n;
  }
}

// Table on (s, o): rows in source order, catalog numbering after one leading guard.
ir::Policy table_policy() {
  auto p = base_policy();
  p.rules.emplace_back(guard("first", {{3, Op::kEq, {Value::Bool(true)}, ""}}, 1));
  ir::Table t;
  t.id = "t";
  t.key_fields = {0, 1};
  auto row = [](std::optional<Value> a, std::optional<Value> b, uint32_t verb) {
    ir::Row r;
    r.keys = {std::move(a), std::move(b)};
    r.verb = verb;
    return r;
  };
  t.rows.push_back(row(Value::String("a"), std::nullopt, 1));        // catalog 1
  t.rows.push_back(row(std::nullopt, std::nullopt, 0));              // catalog 2
  t.rows.push_back(row(Value::String("a"), Value::String("k"), 2));  // catalog 3
  t.rows.push_back(row(std::nullopt, Value::String("k"), 1));        // catalog 4
  p.rules.emplace_back(std::move(t));
  p.rules.emplace_back(guard("after", {{0, Op::kEq, {Value::String("zz")}, ""}}, 2));  // catalog 5
  return p;
}

TEST(InterpretTest, MostConcreteRowWinsThenEarliest) {
  auto p = table_policy();
  Letter letter = good_letter();                // s="a", o="k"
  EXPECT_EQ(interpret(p, letter), rule(2, 3));  // exact row beats earlier wildcard rows
  letter[1] = LV::String("q");
  EXPECT_EQ(interpret(p, letter), rule(1, 1));  // ("a", *) beats (*, *)
  letter[0] = LV::String("b");
  EXPECT_EQ(interpret(p, letter), rule(0, 2));  // only (*, *)
  letter[1] = LV::String("k");
  EXPECT_EQ(interpret(p, letter), rule(1, 4));  // (*, "k") beats (*, *)
  letter[0] = LV::String("a");
  letter[3] = LV::Bool(true);
  EXPECT_EQ(interpret(p, letter), rule(1, 0));  // the guard before the table decides first
}

TEST(InterpretTest, WildcardMatchesAbsentConcreteKeyDoesNot) {
  auto p = table_policy();
  Letter letter = good_letter();
  letter[1] = LV::String("");                   // absent
  EXPECT_EQ(interpret(p, letter), rule(1, 1));  // ("a", *) matches, ("a", "k") does not
  // Without the all-wildcard row, a non-matching tuple falls through to the next rule.
  auto& t = std::get<ir::Table>(p.rules[1]);
  t.rows.erase(t.rows.begin() + 1);
  letter[0] = LV::String("b");
  EXPECT_EQ(interpret(p, letter), by_default(0));
  letter[0] = LV::String("zz");
  EXPECT_EQ(interpret(p, letter), rule(2, 4));  // "after", now catalog 4
}

TEST(InterpretTest, TiesGoToTheEarlierRow) {
  auto p = base_policy();
  ir::Table t;
  t.id = "t";
  t.key_fields = {0, 4};
  ir::Row a{"t:a/*", "", {Value::String("a"), std::nullopt}, 1};
  ir::Row b{"t:*/red", "", {std::nullopt, Value::String("red")}, 1};
  t.rows = {a, b};
  p.rules.emplace_back(t);
  EXPECT_EQ(interpret(p, good_letter()), rule(1, 0));
  std::swap(std::get<ir::Table>(p.rules[0]).rows[0], std::get<ir::Table>(p.rules[0]).rows[1]);
  EXPECT_EQ(interpret(p, good_letter()), rule(1, 0));
}

TEST(InterpretTest, ShippedPolicyByHand) {
  const ir::Policy p = testing::reference_gate().policy;
  auto letter = [](std::string topic, std::string error, int64_t attempts, LV key, bool committed,
                   LV replays) {
    return Letter{LV::String(std::move(topic)),
                  LV::String(std::move(error)),
                  LV::Int(attempts),
                  std::move(key),
                  LV::Bool(committed),
                  std::move(replays)};
  };
  constexpr uint32_t kNever = 0, kReplayOnce = 1, kHold = 2;
  EXPECT_EQ(
      interpret(p, letter("payment.capture", "timeout", 1, LV::String("k"), false, LV::Missing())),
      rule(kReplayOnce, 4));
  EXPECT_EQ(interpret(p, letter("mail.receipt", "unknown_recipient", 0, LV::String("k"), false,
                                LV::Int(0))),
            rule(kNever, 12));
  EXPECT_EQ(
      interpret(p, letter("payment.capture", "timeout", 1, LV::String(""), false, LV::Missing())),
      rule(kHold, 0));
  EXPECT_EQ(
      interpret(p, letter("payment.capture", "timeout", 1, LV::String("k"), true, LV::Missing())),
      rule(kNever, 1));
  EXPECT_EQ(
      interpret(p, letter("payment.capture", "timeout", 3, LV::String("k"), false, LV::Missing())),
      rule(kHold, 2));
  EXPECT_EQ(
      interpret(p, letter("payment.capture", "timeout", 1, LV::String("k"), false, LV::Int(1))),
      rule(kHold, 3));
  EXPECT_EQ(
      interpret(p, letter("payment.capture", "http_503", 1, LV::String("k"), false, LV::Null())),
      by_default(kHold));
  EXPECT_EQ(interpret(p, letter(std::string("payment.capture\0", 16), "timeout", 1, LV::String("k"),
                                false, LV::Null())),
            by_default(kHold));
  EXPECT_EQ(
      interpret(p, letter("payment.capture", "timeout", -1, LV::String("k"), false, LV::Null())),
      invalid(kHold, 2));
  EXPECT_EQ(
      interpret(p, letter("payment.capture", "timeout", 1, LV::String("k"), false, LV::Int(-1))),
      invalid(kHold, 5));
}

TEST(InterpretTest, DescribeLetterEscapesBytes) {
  auto p = base_policy();
  Letter letter = {LV::String(std::string("a\0\"", 3)), LV::Null(), LV::Int(-3), LV::Bool(true),
                   LV::Invalid()};
  EXPECT_EQ(describe_letter(p, letter),
            "{s=\"a\\x00\\\"\", o=null, n=-3, b=true, e=<invalid>, m=<missing>}");
}

}  // namespace
}  // namespace replaygate
