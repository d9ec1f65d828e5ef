// Property 4: the shipped policy agrees with the seed's Python reference gate on every combination
// of known and unknown topics and error classes, attempts 0..5, key present / empty / missing and
// committed or not, with replays absent (the seed has no replay counter). Enumerated, not sampled.
// Checked three ways: the interpreter over the hand-built IR, the runtime over the hand-built IR
// lowered, and the runtime over the YAML front-end's IR of policies/replay_gate.yaml (which must
// also equal the hand-built IR).
#include "tests/properties/reference_gate.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/interpret.h"
#include "tests/properties/policy_gen.h"
#include "tests/support/diagnostics.h"
#include "tests/support/paths.h"

namespace replaygate::testing {
namespace {

const std::string kShippedPolicy = std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml";

std::vector<std::string> topics() {
  std::vector<std::string> out;
  for (const auto& [key, verb] : seed_policy()) {
    if (out.empty() || out.back() != key.first) out.push_back(key.first);
  }
  // Unknown ones: new, case, NUL, trailing space, empty.
  for (std::string t :
       {std::string("unknown.topic"), std::string("Payment.capture"),
        std::string("payment.capture\0", 16), std::string("payment.capture "), std::string("")}) {
    out.push_back(t);
  }
  return out;
}

std::vector<std::string> error_classes() {
  std::vector<std::string> out;
  for (const auto& [key, verb] : seed_policy()) out.push_back(key.second);
  for (std::string e : {std::string("weird_partner_code"), std::string("Timeout"),
                        std::string("timeout\0", 8), std::string("")}) {
    out.push_back(e);
  }
  return out;
}

struct Case {
  SeedDeadLetter ref;
  Letter letter;  // the same record for the shipped policy's fields
  std::string text;
};

// Every combination; replays is missing or null (both absent).
std::vector<Case> all_cases() {
  std::vector<Case> out;
  const std::vector<std::optional<std::string>> keys = {std::string("cap_9f3a"), std::string(""),
                                                        std::nullopt};
  for (const auto& topic : topics()) {
    for (const auto& error : error_classes()) {
      for (int64_t attempts = 0; attempts <= 5; ++attempts) {
        for (const auto& key : keys) {
          for (bool committed : {false, true}) {
            for (bool null_replays : {false, true}) {
              Case c;
              c.ref = {topic, error, attempts, key, committed};
              c.letter = {LetterValue::String(topic),
                          LetterValue::String(error),
                          LetterValue::Int(attempts),
                          key ? LetterValue::String(*key) : LetterValue::Missing(),
                          LetterValue::Bool(committed),
                          null_replays ? LetterValue::Null() : LetterValue::Missing()};
              out.push_back(std::move(c));
            }
          }
        }
      }
    }
  }
  return out;
}

TEST(ReferenceGateTest, TranscriptionPassesTheSeedsOwnTests) {
  // test_replay_gate.py, with letter(**kwargs) defaults.
  auto letter = [] {
    return SeedDeadLetter{"payment.capture", "timeout", 1, std::string("cap_9f3a"), false};
  };
  EXPECT_EQ(seed_decide(letter()), SeedVerb::kReplayOnce);
  auto committed = letter();
  committed.already_committed = true;
  EXPECT_EQ(seed_decide(committed), SeedVerb::kNever);
  auto unknown = letter();
  unknown.error_class = "weird_partner_code";
  EXPECT_EQ(seed_decide(unknown), SeedVerb::kHold);
  auto no_key = letter();
  no_key.idempotency_key = "";
  EXPECT_EQ(seed_decide(no_key), SeedVerb::kHold);
  auto funds = letter();
  funds.error_class = "insufficient_funds";
  EXPECT_EQ(seed_decide(funds), SeedVerb::kNever);
}

TEST(ReferenceGateTest, InterpreterOverHandBuiltIrAgreesEverywhere) {
  const ir::Policy policy = reference_gate().policy;
  const auto cases = all_cases();
  ASSERT_EQ(cases.size(), 9u * 13u * 6u * 3u * 2u * 2u);
  size_t replays = 0;
  for (const Case& c : cases) {
    const SeedVerb want = seed_decide(c.ref);
    const InterpretResult got = interpret(policy, c.letter);
    ASSERT_NE(got.kind, InterpretKind::kInvalidInput) << describe_letter(policy, c.letter);
    ASSERT_EQ(policy.verbs[got.verb].name, seed_verb_name(want))
        << describe_letter(policy, c.letter);
    replays += want == SeedVerb::kReplayOnce;
  }
  EXPECT_EQ(replays, 4u * 3u * 2u);  // 4 replayable pairs x attempts 0..2 x replays missing/null
}

// Runs every case through a loaded table built from `checked`.
void expect_runtime_agrees(const ir::CheckedPolicy& checked) {
  const BuiltTable built = build_table(checked);
  ASSERT_NE(built.table, nullptr) << built.status.message;
  const Table& table = *built.table;
  Input input(table);
  for (const Case& c : all_cases()) {
    const SeedVerb want = seed_decide(c.ref);
    const InterpretResult got = runtime_decide(table, c.letter, &input);
    ASSERT_EQ(table.verb_name(got.verb), seed_verb_name(want))
        << describe_letter(checked.policy, c.letter);
    ASSERT_EQ(got, interpret(checked.policy, c.letter))
        << describe_letter(checked.policy, c.letter);
  }
  // The shipped policy's own addition: a letter the gate already requeued is held.
  for (const Case& c : all_cases()) {
    Letter letter = c.letter;
    for (int64_t replays : {1, 2, 1000}) {
      letter[5] = LetterValue::Int(replays);
      const InterpretResult got = runtime_decide(table, letter, &input);
      if (seed_decide(c.ref) == SeedVerb::kReplayOnce) {
        ASSERT_EQ(table.verb_name(got.verb), "hold") << describe_letter(checked.policy, letter);
        ASSERT_EQ(table.rule_id(got.rule), "already_replayed");
      }
    }
  }
}

TEST(ReferenceGateTest, RuntimeOverHandBuiltIrAgreesEverywhere) {
  expect_runtime_agrees(reference_gate());
}

TEST(ReferenceGateTest, FrontEndBuildsTheHandBuiltIr) {
  const LoadedPolicy loaded = load_policy_file(kShippedPolicy);
  if (loaded.io_error && loaded.io_message.find("not built yet") != std::string::npos) {
    GTEST_SKIP() << loaded.io_message;
  }
  ASSERT_FALSE(loaded.io_error) << loaded.io_message;
  ASSERT_TRUE(loaded.policy.has_value()) << diagnostics_text(loaded);
  const ir::Policy expected = reference_gate().policy;
  const ir::Policy& actual = loaded.policy->policy;
  EXPECT_EQ(actual.fields, expected.fields);
  EXPECT_EQ(actual.verbs, expected.verbs);
  EXPECT_EQ(actual.constants, expected.constants);
  ASSERT_EQ(actual.rules.size(), expected.rules.size());
  for (size_t r = 0; r < expected.rules.size(); ++r) {
    EXPECT_TRUE(actual.rules[r] == expected.rules[r]) << "rule " << r;
  }
  EXPECT_TRUE(actual == expected) << "front-end IR:\n"
                                  << to_yaml(actual) << "hand-built IR:\n"
                                  << to_yaml(expected);
  EXPECT_EQ(loaded.policy->source_base_name, "replay_gate.yaml");
}

TEST(ReferenceGateTest, RuntimeOverFrontEndIrAgreesEverywhere) {
  const LoadedPolicy loaded = load_policy_file(kShippedPolicy);
  if (loaded.io_error && loaded.io_message.find("not built yet") != std::string::npos) {
    GTEST_SKIP() << loaded.io_message;
  }
  ASSERT_TRUE(loaded.policy.has_value()) << diagnostics_text(loaded);
  expect_runtime_agrees(*loaded.policy);
}

}  // namespace
}  // namespace replaygate::testing
