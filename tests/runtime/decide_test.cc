// decide() on lowered hand-built policies: the reference gate's seed cases, validation (fail
// closed), wildcard specificity, exact string matching with NUL bytes, enums and int bounds.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "compiler/lower.h"
#include "runtime/table.h"
#include "tests/support/table_bytes.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

// What a decision looks like from outside: verb name, rule name, reason, kind.
struct Outcome {
  std::string verb, rule, reason;
  DecisionKind kind;
  bool operator==(const Outcome&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << "{" << o.verb << ", " << o.rule << ", \"" << o.reason << "\", "
            << static_cast<int>(o.kind) << "}";
}

Outcome outcome(const Table& table, const Decision& d) {
  return {std::string(table.verb_name(d.verb)), std::string(table.rule_name(d)),
          std::string(table.reason(d)), d.kind};
}

class ReferenceGate : public ::testing::Test {
 protected:
  void SetUp() override {
    table_ = load_lowered(reference_gate());
    ASSERT_NE(table_, nullptr);
    in_ = std::make_unique<Input>(*table_);
    // The seed letter: payment.capture / timeout, first attempt, key persisted, not committed.
    in_->set_string(kTopic, "payment.capture");
    in_->set_string(kErrorClass, "timeout");
    in_->set_int(kAttempts, 1);
    in_->set_string(kIdempotencyKey, "cap_9f3a");
    in_->set_bool(kAlreadyCommitted, false);
  }
  Outcome decide() { return outcome(*table_, table_->decide(*in_)); }

  std::unique_ptr<Table> table_;
  std::unique_ptr<Input> in_;
};

TEST_F(ReferenceGate, FieldIndicesFollowDeclarationOrder) {
  EXPECT_EQ(table_->field_index("topic"), kTopic);
  EXPECT_EQ(table_->field_index("replays"), kReplays);
  EXPECT_EQ(table_->field_index("nope"), Table::kNoField);
  EXPECT_EQ(table_->policy_id(), "dlq-replay-gate");
  EXPECT_EQ(table_->revision(), 1);
  EXPECT_EQ(table_->rule_count(), 13u);
  EXPECT_EQ(table_->verb_index("hold"), kHold);
}

TEST_F(ReferenceGate, SeedTimeoutReplaysOnce) {
  EXPECT_EQ(
      decide(),
      (Outcome{"replay_once", "known_failures:payment.capture/timeout",
               "the capture timed out before an answer; the idempotency key makes one requeue safe",
               DecisionKind::kRule}));
  EXPECT_EQ(table_->rule_source_line(4), 81u);
}

TEST_F(ReferenceGate, SeedCommittedIsNever) {
  in_->set_bool(kAlreadyCommitted, true);
  EXPECT_EQ(decide(), (Outcome{"never", "already_committed",
                               "the work already committed; replaying would repeat a side effect",
                               DecisionKind::kRule}));
}

TEST_F(ReferenceGate, SeedUnknownErrorClassHoldsByDefault) {
  in_->set_string(kErrorClass, "weird_partner_code");
  EXPECT_EQ(decide(), (Outcome{"hold", "default", "no rule matches this (topic, error_class) pair",
                               DecisionKind::kDefault}));
}

TEST_F(ReferenceGate, SeedEmptyIdempotencyKeyIsAbsent) {
  in_->set_string(kIdempotencyKey, "");
  EXPECT_EQ(decide(),
            (Outcome{"hold", "no_idempotency_key",
                     "cannot replay safely without an idempotency key", DecisionKind::kRule}));
  in_->set_null(kIdempotencyKey);
  EXPECT_EQ(decide().rule, "no_idempotency_key");
  in_->set_invalid(kIdempotencyKey);  // present but unreadable is not absent
  EXPECT_EQ(decide().kind, DecisionKind::kInvalidInput);
}

TEST_F(ReferenceGate, SeedInsufficientFundsIsNever) {
  in_->set_string(kErrorClass, "insufficient_funds");
  EXPECT_EQ(
      decide(),
      (Outcome{"never", "known_failures:payment.capture/insufficient_funds",
               "the card was declined; a retry cannot succeed and would only repeat the attempt",
               DecisionKind::kRule}));
}

TEST_F(ReferenceGate, ReplayedOnceHolds) {
  in_->set_int(kReplays, 1);
  EXPECT_EQ(decide(), (Outcome{"hold", "already_replayed",
                               "replay_once means once; this letter was already requeued by the "
                               "gate",
                               DecisionKind::kRule}));
  in_->set_int(kReplays, 0);
  EXPECT_EQ(decide().verb, "replay_once");
  in_->set_null(kReplays);
  EXPECT_EQ(decide().verb, "replay_once");
}

TEST_F(ReferenceGate, AttemptBudget) {
  in_->set_int(kAttempts, 2);
  EXPECT_EQ(decide().verb, "replay_once");
  in_->set_int(kAttempts, 3);
  EXPECT_EQ(decide().rule, "attempts_exhausted");
  in_->set_int(kAttempts, INT64_MAX);
  EXPECT_EQ(decide().rule, "attempts_exhausted");
  in_->set_int(kAttempts, 0);
  EXPECT_EQ(decide().verb, "replay_once");
}

TEST_F(ReferenceGate, OtherTableRows) {
  in_->set_string(kTopic, "mail.receipt");
  in_->set_string(kErrorClass, "smtp_421");
  EXPECT_EQ(decide().rule, "known_failures:mail.receipt/smtp_421");
  in_->set_string(kErrorClass, "timeout");  // exists for another topic only
  EXPECT_EQ(decide().kind, DecisionKind::kDefault);
}

Outcome invalid(const char* field) {
  return {"hold", "default", std::string("invalid input: ") + field, DecisionKind::kInvalidInput};
}

TEST_F(ReferenceGate, MissingRequiredFieldIsInvalid) {
  in_->clear();
  in_->set_string(kTopic, "payment.capture");
  in_->set_string(kErrorClass, "timeout");
  in_->set_string(kIdempotencyKey, "k");
  in_->set_bool(kAlreadyCommitted, false);
  EXPECT_EQ(decide(), invalid("attempts"));
  EXPECT_EQ(table_->decide(*in_).invalid_field, kAttempts);
}

TEST_F(ReferenceGate, NegativeAttemptsIsInvalid) {
  in_->set_int(kAttempts, -1);
  EXPECT_EQ(decide(), invalid("attempts"));
  in_->set_int(kAttempts, INT64_MIN);
  EXPECT_EQ(decide(), invalid("attempts"));
}

TEST_F(ReferenceGate, WrongTypesAreInvalid) {
  in_->set_string(kAttempts, "1");
  EXPECT_EQ(decide(), invalid("attempts"));
  in_->set_int(kAttempts, 1);
  in_->set_int(kTopic, 7);
  EXPECT_EQ(decide(), invalid("topic"));
  in_->set_string(kTopic, "payment.capture");
  in_->set_string(kAlreadyCommitted, "true");
  EXPECT_EQ(decide(), invalid("already_committed"));
  in_->set_bool(kAlreadyCommitted, false);
  in_->set_bool(kIdempotencyKey, true);  // optional, but present with the wrong type
  EXPECT_EQ(decide(), invalid("idempotency_key"));
  in_->set_string(kIdempotencyKey, "k");
  in_->set_int(kReplays, -3);  // optional, but out of bounds
  EXPECT_EQ(decide(), invalid("replays"));
}

TEST_F(ReferenceGate, MissingCommittedIsNotSkipped) {
  // Without validation the committed guard would be false and the row would replay.
  in_->set_null(kAlreadyCommitted);
  EXPECT_EQ(decide(), invalid("already_committed"));
  in_->clear();
  in_->set_string(kTopic, "payment.capture");
  in_->set_string(kErrorClass, "timeout");
  in_->set_int(kAttempts, 1);
  in_->set_string(kIdempotencyKey, "k");
  EXPECT_EQ(decide(), invalid("already_committed"));
}

TEST_F(ReferenceGate, FirstInvalidFieldInDeclarationOrderWins) {
  in_->set_invalid(kAlreadyCommitted);
  in_->set_int(kAttempts, -5);
  in_->set_bool(kErrorClass, true);
  EXPECT_EQ(decide(), invalid("error_class"));
}

TEST_F(ReferenceGate, StringsMatchByteForByte) {
  in_->set_string(kTopic, std::string_view("payment.capture\0", 16));
  EXPECT_EQ(decide().kind, DecisionKind::kDefault);
  in_->set_string(kTopic, "Payment.capture");
  EXPECT_EQ(decide().kind, DecisionKind::kDefault);
  in_->set_string(kTopic, "payment.captur");
  EXPECT_EQ(decide().kind, DecisionKind::kDefault);
  in_->set_string(kTopic, "payment.capture");
  EXPECT_EQ(decide().verb, "replay_once");
}

TEST_F(ReferenceGate, ShortInputCountsAsUnset) {
  auto other = load_lowered(small_policy());
  Input small(*other);  // 4 slots for a 6-field table
  small.set_string(0, "payment.capture");
  small.set_string(1, "timeout");
  small.set_int(2, 1);
  small.set_string(3, "k");
  EXPECT_EQ(outcome(*table_, table_->decide(small)), invalid("already_committed"));
}

TEST_F(ReferenceGate, SettersIgnoreOutOfRangeFields) {
  in_->set_int(99, 1);
  in_->set_string(Table::kNoField, "x");
  EXPECT_EQ(decide().verb, "replay_once");
}

TEST_F(ReferenceGate, ConcurrentDecisionsAgree) {
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Input in(*table_);
      for (int i = 0; i < 2000; ++i) {
        in.set_string(kTopic, "payment.capture");
        in.set_string(kErrorClass, i % 2 ? "timeout" : "duplicate");
        in.set_int(kAttempts, i % 4);
        in.set_string(kIdempotencyKey, "k");
        in.set_bool(kAlreadyCommitted, false);
        Decision d = table_->decide(in);
        const char* want = i % 4 == 3 ? "hold" : (i % 2 ? "replay_once" : "never");
        if (table_->verb_name(d.verb) != want) ++wrong[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

class SmallPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    table_ = load_lowered(small_policy());
    ASSERT_NE(table_, nullptr);
    in_ = std::make_unique<Input>(*table_);
  }
  Outcome decide(const char* region, int64_t tier, const char* partner, int vip = -1) {
    in_->clear();
    if (region) in_->set_string(kRegion, region);
    in_->set_int(kTier, tier);
    if (partner) in_->set_string(kPartner, partner);
    if (vip >= 0) in_->set_bool(kVip, vip == 1);
    return outcome(*table_, table_->decide(*in_));
  }
  std::unique_ptr<Table> table_;
  std::unique_ptr<Input> in_;
};

TEST_F(SmallPolicy, MoreConcreteKeysWin) {
  EXPECT_EQ(decide("us", 2, "acme").rule, "routes:us/2/acme");
  EXPECT_EQ(decide("ap", 2, "acme"),
            (Outcome{"deny", "routes:*/*/acme", "table routes row */*/acme", DecisionKind::kRule}));
  EXPECT_EQ(decide("eu", 5, "acme").rule, "routes:eu/*/acme");
  EXPECT_EQ(decide("eu", 1, nullptr).rule, "routes:eu/1/*");
  EXPECT_EQ(decide("us", 1, "zzz"),
            (Outcome{"deny", "routes:*/1/*", "tier one elsewhere", DecisionKind::kRule}));
}

TEST_F(SmallPolicy, EqualCountTiesGoToTheEarlierRow) {
  EXPECT_EQ(decide("eu", 1, "acme").rule, "routes:eu/1/*");  // rows 0 and 2, two keys each
  EXPECT_EQ(decide("us", 1, "acme").rule, "routes:*/1/*");   // rows 1 and 3, one key each
}

TEST_F(SmallPolicy, WildcardMatchesAbsent) {
  EXPECT_EQ(decide(nullptr, 1, nullptr).rule, "routes:*/1/*");
  EXPECT_EQ(decide(nullptr, 4, "acme").rule, "routes:*/*/acme");
}

TEST_F(SmallPolicy, NoRowFallsThroughToLaterRules) {
  EXPECT_EQ(decide("us", 2, nullptr, 1).rule, "vip_low_tier");
  EXPECT_EQ(decide("us", 3, nullptr, 1).kind, DecisionKind::kDefault);
  EXPECT_EQ(decide("us", 2, nullptr, 0).kind, DecisionKind::kDefault);
  EXPECT_EQ(decide("us", 2, nullptr).kind, DecisionKind::kDefault);  // vip absent
}

TEST_F(SmallPolicy, NulBytesAreOrdinaryBytes) {
  in_->clear();
  in_->set_int(kTier, 5);
  in_->set_string(kPartner, std::string_view("evil\0", 5));
  EXPECT_EQ(outcome(*table_, table_->decide(*in_)).rule, "blocked");
  in_->set_string(kPartner, "evil");
  EXPECT_EQ(outcome(*table_, table_->decide(*in_)).kind, DecisionKind::kDefault);
  in_->set_string(kPartner, std::string_view("evil\0\0", 6));
  EXPECT_EQ(outcome(*table_, table_->decide(*in_)).kind, DecisionKind::kDefault);
  in_->set_string(kPartner, "bad");
  EXPECT_EQ(outcome(*table_, table_->decide(*in_)).rule, "blocked");
}

TEST_F(SmallPolicy, EnumValuesAreValidated) {
  EXPECT_EQ(decide("EU", 1, nullptr).reason, "invalid input: region");
  EXPECT_EQ(decide("", 1, nullptr).reason, "invalid input: region");
  in_->clear();
  in_->set_int(kTier, 1);
  in_->set_int(kRegion, 0);
  EXPECT_EQ(outcome(*table_, table_->decide(*in_)).reason, "invalid input: region");
}

TEST_F(SmallPolicy, IntBoundsAreInclusive) {
  EXPECT_EQ(decide("us", 9, nullptr).kind, DecisionKind::kDefault);
  EXPECT_EQ(decide("us", 10, nullptr).reason, "invalid input: tier");
  EXPECT_EQ(decide("us", 0, nullptr, 1).rule, "vip_low_tier");
  EXPECT_EQ(decide("us", -1, nullptr).reason, "invalid input: tier");
}

TEST_F(SmallPolicy, EmptyStringIsAStringWithoutEmptyMeansAbsent) {
  EXPECT_EQ(decide(nullptr, 4, "").kind, DecisionKind::kDefault);  // "" is <other>, not absent
}

TEST_F(SmallPolicy, AtomLabels) {
  EXPECT_EQ(table_->atom_label(kPartner, 0), "absent");
  EXPECT_EQ(table_->atom_label(kPartner, 1), "<other>");
  EXPECT_EQ(table_->atom_label(kPartner, 2), "\"acme\"");
  EXPECT_EQ(table_->atom_label(kPartner, 4), "\"evil\\x00\"");
  EXPECT_EQ(table_->atom_label(kRegion, 3), "ap");
  EXPECT_EQ(table_->atom_label(kVip, 2), "true");
  EXPECT_EQ(table_->atom_label(kTier, 1), "[-inf, 0)");
  EXPECT_EQ(table_->atom_label(kPartner, 99), "?");
}

}  // namespace
}  // namespace replaygate

namespace replaygate {
namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

TEST(EdgePolicies, NoFieldsNoRules) {
  ir::CheckedPolicy checked;
  checked.policy.id = "empty";
  checked.policy.verbs = {verb("hold", ir::Effect::kNone, "")};
  checked.policy.default_reason = "nothing to decide";
  auto table = load_lowered(checked);
  ASSERT_NE(table, nullptr);
  Input in(*table);
  EXPECT_EQ(outcome(*table, table->decide(in)),
            (Outcome{"hold", "default", "nothing to decide", DecisionKind::kDefault}));
}

TEST(EdgePolicies, AllWildcardRowAndEmptyTable) {
  ir::CheckedPolicy checked;
  ir::Policy& p = checked.policy;
  p.id = "wild";
  p.fields = {bool_field("b", true), enum_field("e", {"x", "y"})};
  p.verbs = {verb("no", ir::Effect::kNone, ""), verb("yes", ir::Effect::kRead, "")};
  ir::Table empty;
  empty.id = "empty";
  empty.key_fields = {0};
  p.rules.push_back(empty);
  ir::Table t;
  t.id = "t";
  t.key_fields = {0, 1};
  t.rows.push_back(row("t", {B(true), S("y")}, 0));
  t.rows.push_back(row("t", {std::nullopt, std::nullopt}, 1));
  p.rules.push_back(t);
  auto table = load_lowered(checked);
  ASSERT_NE(table, nullptr);
  Input in(*table);
  in.set_string(1, "y");
  EXPECT_EQ(table->rule_name(table->decide(in)), "t:*/*");  // b absent: only the catch-all
  in.set_bool(0, true);
  EXPECT_EQ(table->rule_name(table->decide(in)), "t:true/y");
  in.set_string(1, "x");
  EXPECT_EQ(table->rule_name(table->decide(in)), "t:*/*");
  EXPECT_EQ(table->rule_count(), 2u);
}

TEST(EdgePolicies, TooManyFieldsIsRejectedAtLoad) {
  ir::CheckedPolicy checked;
  checked.policy.id = "wide";
  checked.policy.verbs = {verb("hold", ir::Effect::kNone, "")};
  for (int f = 0; f < 1025; ++f) {
    checked.policy.fields.push_back(bool_field("f" + std::to_string(f), true));
  }
  std::vector<uint8_t> bytes = lower(checked);
  LoadStatus status;
  EXPECT_EQ(Table::load_bytes(bytes.data(), bytes.size(), &status), nullptr);
  EXPECT_EQ(status.error, LoadError::kMalformed);
  EXPECT_EQ(status.message, "1025 fields, over the limit of 1024");
}

}  // namespace
}  // namespace replaygate
