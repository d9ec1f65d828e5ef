// Classifier properties (issue 20 §3): on random classifiers (int ranges and values, string
// values and prefixes) and random raw values, the frozen runtime, the reference interpreter and
// the IR explainer give the same class; every raw value lands in exactly one class, the first
// row that takes it or else the fallback; and the lowered table lifts back to the same classifier.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "compiler/explain.h"
#include "compiler/interpret.h"
#include "compiler/lift.h"
#include "tests/properties/policy_gen.h"
#include "tests/support/test_policies.h"

namespace replaygate::testing {
namespace {

constexpr uint32_t kClasses = 4;

// Raw ints cluster in a small window so rows overlap and values hit their edges.
rc::Gen<int64_t> gen_raw_int() { return rc::gen::inRange<int64_t>(-3, 40); }
// Raw strings over a tiny alphabet, so prefixes and exact values collide often.
rc::Gen<std::string> gen_raw_string() {
  return rc::gen::container<std::string>(rc::gen::element('4', '5', '.', 'x'));
}

rc::Gen<ir::ClassifyRow> gen_int_row() {
  return rc::gen::exec([] {
    ir::ClassifyRow row;
    row.cls = *rc::gen::inRange<uint32_t>(0, kClasses);
    if (*rc::gen::arbitrary<bool>()) {
      row.kind = ir::ClassifyRow::Kind::kRange;
      const int64_t lo = *gen_raw_int();
      const int64_t hi = lo + *rc::gen::inRange<int64_t>(0, 12);
      row.values = {ir::Value::Int(lo), ir::Value::Int(hi)};
    } else {
      row.kind = ir::ClassifyRow::Kind::kIn;
      for (int64_t v :
           *rc::gen::nonEmpty(rc::gen::container<std::vector<int64_t>>(gen_raw_int()))) {
        row.values.push_back(ir::Value::Int(v));
      }
    }
    return row;
  });
}

rc::Gen<ir::ClassifyRow> gen_string_row() {
  return rc::gen::exec([] {
    ir::ClassifyRow row;
    row.cls = *rc::gen::inRange<uint32_t>(0, kClasses);
    row.kind =
        *rc::gen::arbitrary<bool>() ? ir::ClassifyRow::Kind::kPrefix : ir::ClassifyRow::Kind::kIn;
    const auto texts = *rc::gen::nonEmpty(
        rc::gen::container<std::vector<std::string>>(rc::gen::nonEmpty(gen_raw_string())));
    for (const std::string& t : texts) row.values.push_back(ir::Value::String(t));
    return row;
  });
}

// Fields: 0 n (optional int), 1 nc (classified from n), 2 s (optional string, "" absent),
// 3 sc (classified from s). One table by (nc, sc) with a row per class pair, each its own verb,
// so the verb names both classes.
ir::CheckedPolicy classify_policy(std::vector<ir::ClassifyRow> int_rows,
                                  std::vector<ir::ClassifyRow> string_rows, uint32_t int_fallback,
                                  uint32_t string_fallback) {
  ir::Policy p;
  p.id = "classify-property";
  p.revision = 1;
  const std::vector<std::string> classes = {"c0", "c1", "c2", "c3"};
  p.fields.push_back(int_field("n", std::nullopt, std::nullopt, true));
  p.fields.push_back(enum_field("nc", classes));
  p.fields[1].classify = ir::Classifier{0, std::move(int_rows), int_fallback};
  p.fields.push_back(string_field("s", true, true));
  p.fields.push_back(enum_field("sc", classes));
  p.fields[3].classify = ir::Classifier{2, std::move(string_rows), string_fallback};
  p.verbs.push_back(verb("hold", ir::Effect::kNone, ""));
  ir::Table t;
  t.id = "by_class";
  t.key_fields = {1, 3};
  for (uint32_t a = 0; a < kClasses; ++a) {
    for (uint32_t b = 0; b < kClasses; ++b) {
      p.verbs.push_back(verb("v" + std::to_string(a) + std::to_string(b), ir::Effect::kNone, ""));
      t.rows.push_back(row("by_class",
                           {ir::Value::String(classes[a]), ir::Value::String(classes[b])},
                           static_cast<uint32_t>(p.verbs.size() - 1)));
    }
  }
  p.rules.emplace_back(std::move(t));
  p.default_reason = "no rule matched";
  return with_source_map(std::move(p));
}

// The class a raw value gets, computed from the rows' definition: the lowest row that takes it.
uint32_t expected_class(const ir::Classifier& c, const LetterValue& raw) {
  if (raw.kind == LetterValue::Kind::kMissing || raw.kind == LetterValue::Kind::kNull ||
      (raw.kind == LetterValue::Kind::kString && raw.s.empty())) {
    return c.fallback;
  }
  std::vector<size_t> taking;
  for (size_t r = 0; r < c.rows.size(); ++r) {
    const ir::ClassifyRow& row = c.rows[r];
    bool takes = false;
    for (const ir::Value& v : row.values) {
      switch (row.kind) {
        case ir::ClassifyRow::Kind::kIn:
          takes |= raw.kind == LetterValue::Kind::kInt ? v.i == raw.i : v.str == raw.s;
          break;
        case ir::ClassifyRow::Kind::kPrefix:
          takes |= raw.s.rfind(v.str, 0) == 0;
          break;
        case ir::ClassifyRow::Kind::kRange:
          takes |= row.values[0].i <= raw.i && raw.i <= row.values[1].i;
          break;
      }
    }
    if (takes) taking.push_back(r);
  }
  return taking.empty() ? c.fallback : c.rows[taking.front()].cls;
}

RC_GTEST_PROP(ClassifyProperty, RuntimeInterpreterAndExplainerAgree, ()) {
  const auto int_rows = *rc::gen::container<std::vector<ir::ClassifyRow>>(gen_int_row());
  const auto string_rows = *rc::gen::container<std::vector<ir::ClassifyRow>>(gen_string_row());
  const uint32_t int_fallback = *rc::gen::inRange<uint32_t>(0, kClasses);
  const uint32_t string_fallback = *rc::gen::inRange<uint32_t>(0, kClasses);
  const ir::CheckedPolicy checked =
      classify_policy(int_rows, string_rows, int_fallback, string_fallback);
  const ir::Policy& policy = checked.policy;
  const BuiltTable built = build_table_or_fail(checked);
  Input scratch(*built.table);
  for (int i = 0; i < 30; ++i) {
    Letter letter(4);
    letter[0] = *rc::gen::oneOf(rc::gen::map(gen_raw_int(), &LetterValue::Int),
                                rc::gen::just(LetterValue::Missing()));
    letter[2] = *rc::gen::oneOf(rc::gen::map(gen_raw_string(), &LetterValue::String),
                                rc::gen::just(LetterValue::Null()));
    // A letter's value for a classified input is ignored, whatever it is.
    letter[1] =
        *rc::gen::element(LetterValue::String("c3"), LetterValue::Int(7), LetterValue::Missing());
    const uint32_t a = expected_class(*policy.fields[1].classify, letter[0]);
    const uint32_t b = expected_class(*policy.fields[3].classify, letter[2]);
    const InterpretResult oracle = interpret(policy, letter);
    RC_ASSERT(oracle.kind == InterpretKind::kRule);
    // Exactly one class per classifier: the verb is the one row of the pair (a, b).
    RC_ASSERT(oracle.verb == 1 + a * kClasses + b);
    RC_ASSERT(runtime_decide(*built.table, letter, &scratch) == oracle);
    const ValidatedLetter explained = validate_letter(policy, letter);
    RC_ASSERT(explained.valid);
    RC_ASSERT(explained.values[1]->s == policy.fields[1].enum_values[a]);
    RC_ASSERT(explained.values[3]->s == policy.fields[3].enum_values[b]);
  }
}

RC_GTEST_PROP(ClassifyProperty, TheTableLiftsBackToTheSameClassifiers, ()) {
  const auto int_rows = *rc::gen::container<std::vector<ir::ClassifyRow>>(gen_int_row());
  const auto string_rows = *rc::gen::container<std::vector<ir::ClassifyRow>>(gen_string_row());
  const ir::CheckedPolicy checked = classify_policy(int_rows, string_rows, 3, 0);
  const BuiltTable built = build_table_or_fail(checked);
  const LiftResult lifted = lift(*built.table);
  RC_ASSERT(lifted.policy.has_value());
  RC_ASSERT(lifted.policy->policy.fields[1].classify == checked.policy.fields[1].classify);
  RC_ASSERT(lifted.policy->policy.fields[3].classify == checked.policy.fields[3].classify);
}

}  // namespace
}  // namespace replaygate::testing
