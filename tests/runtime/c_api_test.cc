// The C API (runtime/replaygate.h): the reference gate's five seed cases, by name and by index,
// the batch call against single decisions, every error code a caller can provoke, and that
// strings are copied and decisions name their table.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/lower.h"
#include "runtime/replaygate.h"
#include "runtime/table.h"
#include "tests/support/paths.h"
#include "tests/support/test_policies.h"

namespace replaygate {
namespace {

using namespace replaygate::testing;  // NOLINT: test vocabulary

std::string s(rg_str v) { return std::string(v.data, v.size); }

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    bytes_ = lower(reference_gate());
    rg_error err;
    ASSERT_EQ(rg_table_load_bytes(bytes_.data(), bytes_.size(), &table_, &err), RG_OK)
        << err.message;
    ASSERT_EQ(rg_input_new(table_, &in_), RG_OK);
    // The seed letter: payment.capture / timeout, first attempt, key persisted, not committed.
    ASSERT_EQ(rg_input_set_string_by_name(in_, "topic", "payment.capture", 15), RG_OK);
    ASSERT_EQ(rg_input_set_string_by_name(in_, "error_class", "timeout", 7), RG_OK);
    ASSERT_EQ(rg_input_set_int_by_name(in_, "attempts", 1), RG_OK);
    ASSERT_EQ(rg_input_set_string_by_name(in_, "idempotency_key", "cap_9f3a", 8), RG_OK);
    ASSERT_EQ(rg_input_set_bool_by_name(in_, "already_committed", 0), RG_OK);
  }
  void TearDown() override {
    rg_input_free(in_);
    rg_table_free(table_);
  }
  // "verb rule kind" of the current input.
  std::string decide() {
    rg_decision d;
    EXPECT_EQ(rg_decide(table_, in_, &d), RG_OK);
    return s(rg_table_verb_name(table_, d.verb)) + " " + s(rg_table_rule_name(table_, &d)) + " " +
           std::to_string(d.kind);
  }

  std::vector<uint8_t> bytes_;
  rg_table* table_ = nullptr;
  rg_input* in_ = nullptr;
};

TEST_F(CApi, FiveSeedCases) {
  EXPECT_EQ(decide(), "replay_once known_failures:payment.capture/timeout 0");
  ASSERT_EQ(rg_input_set_bool(in_, kAlreadyCommitted, 1), RG_OK);
  EXPECT_EQ(decide(), "never already_committed 0");
  ASSERT_EQ(rg_input_set_bool(in_, kAlreadyCommitted, 0), RG_OK);
  ASSERT_EQ(rg_input_set_string(in_, kErrorClass, "weird_partner_code", 18), RG_OK);
  EXPECT_EQ(decide(), "hold default 1");
  ASSERT_EQ(rg_input_set_string(in_, kErrorClass, "insufficient_funds", 18), RG_OK);
  EXPECT_EQ(decide(), "never known_failures:payment.capture/insufficient_funds 0");
  ASSERT_EQ(rg_input_set_string(in_, kErrorClass, "timeout", 7), RG_OK);
  ASSERT_EQ(rg_input_set_string(in_, kIdempotencyKey, "", 0), RG_OK);
  EXPECT_EQ(decide(), "hold no_idempotency_key 0");
}

TEST_F(CApi, DecisionCarriesEffectReasonAndTableChecksum) {
  rg_decision d;
  ASSERT_EQ(rg_decide(table_, in_, &d), RG_OK);
  EXPECT_EQ(d.effect, static_cast<uint32_t>(RG_EFFECT_CREATE));
  EXPECT_EQ(s(rg_table_reason(table_, &d)),
            "the capture timed out before an answer; the idempotency key makes one requeue safe");
  LoadStatus status;
  auto table = Table::load_bytes(bytes_.data(), bytes_.size(), &status);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(std::string(d.table_checksum), table->checksum_hex());
  EXPECT_EQ(std::string(rg_table_checksum(table_)), table->checksum_hex());
  EXPECT_EQ(s(rg_table_policy_id(table_)), "dlq-replay-gate");
  EXPECT_EQ(rg_table_revision(table_), 1);
}

TEST_F(CApi, MissingRequiredFieldFailsClosed) {
  ASSERT_EQ(rg_input_unset(in_, kAttempts), RG_OK);
  rg_decision d;
  ASSERT_EQ(rg_decide(table_, in_, &d), RG_OK);
  EXPECT_EQ(d.kind, static_cast<uint32_t>(RG_KIND_INVALID_INPUT));
  EXPECT_EQ(d.invalid_field, static_cast<uint32_t>(kAttempts));
  EXPECT_EQ(s(rg_table_verb_name(table_, d.verb)), "hold");
  EXPECT_EQ(s(rg_table_reason(table_, &d)), "invalid input: attempts");
  // Wrong type for the field: also the default.
  ASSERT_EQ(rg_input_set_string(in_, kAttempts, "1", 1), RG_OK);
  EXPECT_EQ(decide(), "hold default 2");
  rg_input_clear(in_);
  EXPECT_EQ(decide(), "hold default 2");
}

TEST_F(CApi, StringsAreCopiedIntoTheInput) {
  std::string topic = "payment.capture";
  ASSERT_EQ(rg_input_set_string(in_, kTopic, topic.data(), topic.size()), RG_OK);
  topic.assign("xxxxxxx.xxxxxxx");  // the caller reuses its buffer before deciding
  EXPECT_EQ(decide(), "replay_once known_failures:payment.capture/timeout 0");
}

TEST_F(CApi, FieldAndVerbLookups) {
  EXPECT_EQ(rg_table_field_count(table_), 6u);
  EXPECT_EQ(rg_table_field_index(table_, "replays", 7), static_cast<uint32_t>(kReplays));
  EXPECT_EQ(rg_table_field_index(table_, "nope", 4), RG_NO_INDEX);
  EXPECT_EQ(s(rg_table_field_name(table_, kAttempts)), "attempts");
  EXPECT_EQ(rg_table_field_type(table_, kAttempts), static_cast<uint32_t>(RG_FIELD_INT));
  EXPECT_EQ(rg_table_field_type(table_, 99), RG_NO_INDEX);
  EXPECT_EQ(s(rg_table_field_name(table_, 99)), "");
  EXPECT_EQ(rg_table_verb_count(table_), 3u);
  EXPECT_EQ(rg_table_verb_index(table_, "hold", 4), static_cast<uint32_t>(kHold));
  EXPECT_EQ(rg_table_verb_effect(table_, kReplayOnce), static_cast<uint32_t>(RG_EFFECT_CREATE));
  EXPECT_EQ(s(rg_table_verb_name(table_, 3)), "");
  EXPECT_STREQ(rg_status_name(RG_ERR_INCOMPATIBLE), "incompatible");
  EXPECT_STREQ(rg_status_name(static_cast<rg_status>(77)), "unknown");
}

TEST_F(CApi, ArgumentErrors) {
  EXPECT_EQ(rg_input_set_string_by_name(in_, "nope", "x", 1), RG_ERR_UNKNOWN_FIELD);
  // A NULL name is a NULL pointer, not a name the table lacks.
  EXPECT_EQ(rg_input_set_int_by_name(in_, nullptr, 1), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_string_by_name(in_, nullptr, "x", 1), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_bool_by_name(in_, nullptr, 1), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_null_by_name(in_, nullptr), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_int(in_, 6, 1), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_string(in_, kTopic, nullptr, 3), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_bool(nullptr, 0, 1), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_invalid(in_, 6), RG_ERR_ARGUMENT);
  ASSERT_EQ(rg_input_set_invalid(in_, kIdempotencyKey), RG_OK);
  EXPECT_EQ(decide(), "hold default 2");  // present but unreadable is not absent
  rg_decision d;
  EXPECT_EQ(rg_decide(nullptr, in_, &d), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_decide(table_, nullptr, &d), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_decide(table_, in_, nullptr), RG_ERR_ARGUMENT);
  rg_input* other = in_;  // any non-null value: *out must be reset on error
  EXPECT_EQ(rg_input_new(nullptr, &other), RG_ERR_ARGUMENT);
  EXPECT_EQ(other, nullptr);
  rg_table_free(nullptr);
  rg_input_free(nullptr);
}

TEST_F(CApi, InputOfAnotherTableIsRejected) {
  std::vector<uint8_t> other = lower(small_policy());
  rg_table* small = nullptr;
  ASSERT_EQ(rg_table_load_bytes(other.data(), other.size(), &small, nullptr), RG_OK);
  rg_decision d;
  EXPECT_EQ(rg_decide(small, in_, &d), RG_ERR_ARGUMENT);
  rg_table_free(small);
}

// An input carries the field layout it was made for: the same field count is not enough. A table
// whose field 4 is renamed, retyped or derived refuses it (its values would land in the wrong
// fields: already_committed = true read as another flag), and *out is untouched; a table with the
// same layout (other rules, another revision) decides it.
TEST_F(CApi, InputOfAnotherLayoutWithTheSameFieldCountIsRejected) {
  auto load = [](const ir::CheckedPolicy& policy) {
    const std::vector<uint8_t> bytes = lower(policy);
    rg_table* t = nullptr;
    EXPECT_EQ(rg_table_load_bytes(bytes.data(), bytes.size(), &t, nullptr), RG_OK);
    return t;
  };
  ASSERT_EQ(rg_input_set_bool(in_, kAlreadyCommitted, 1), RG_OK);
  ir::CheckedPolicy renamed = reference_gate();
  renamed.policy.fields[kAlreadyCommitted].name = "retry_safe";
  ir::CheckedPolicy retyped = reference_gate();
  retyped.policy.fields[kReplays] = string_field("replays", true);
  ir::CheckedPolicy derived = reference_gate();
  derived.policy.fields[kAlreadyCommitted].derived =
      ir::Derivation{kAttempts, ir::Op::kGe, kAttempts};
  for (const ir::CheckedPolicy* policy : {&renamed, &retyped, &derived}) {
    rg_table* other = load(*policy);
    ASSERT_NE(other, nullptr);
    ASSERT_EQ(rg_table_field_count(other), rg_table_field_count(table_));
    rg_decision d;
    d.verb = 77;
    EXPECT_EQ(rg_decide(other, in_, &d), RG_ERR_ARGUMENT) << s(rg_table_field_name(other, 4));
    EXPECT_EQ(d.verb, 77u);
    // Its own inputs still work on it.
    rg_input* own = nullptr;
    ASSERT_EQ(rg_input_new(other, &own), RG_OK);
    EXPECT_EQ(rg_decide(other, own, &d), RG_OK);
    rg_input_free(own);
    rg_table_free(other);
  }
  ir::CheckedPolicy same_layout = reference_gate();
  same_layout.policy.revision = 2;
  same_layout.policy.description = "another revision, same fields";
  rg_table* next = load(same_layout);
  ASSERT_NE(next, nullptr);
  EXPECT_NE(std::string(rg_table_checksum(next)), rg_table_checksum(table_));
  rg_decision d;
  ASSERT_EQ(rg_decide(next, in_, &d), RG_OK);
  EXPECT_EQ(s(rg_table_verb_name(next, d.verb)), "never");
  rg_table_free(next);
}

// Empty results are a static "", never a NULL pointer (a Rust or Go binding builds a slice from
// it): a rule index out of range gives an empty reason.
TEST_F(CApi, EmptyResultsAreNeverNullPointers) {
  rg_decision d;
  ASSERT_EQ(rg_decide(table_, in_, &d), RG_OK);
  d.kind = RG_KIND_RULE;
  d.rule = 100000;
  const rg_str reason = rg_table_reason(table_, &d);
  EXPECT_NE(reason.data, nullptr);
  EXPECT_EQ(reason.size, 0u);
  EXPECT_EQ(s(rg_table_rule_name(table_, &d)), "default");
  EXPECT_NE(rg_table_rule_name(table_, &d).data, nullptr);
  EXPECT_NE(rg_table_verb_name(table_, 99).data, nullptr);
  EXPECT_NE(rg_table_field_name(table_, 99).data, nullptr);
  EXPECT_NE(rg_table_reason(nullptr, &d).data, nullptr);
}

// rg_shared_open refuses more than 4096 reader slots instead of silently giving fewer.
TEST(CApiShared, MaxReadersOverTheLimitIsRefused) {
  const std::string path = std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt";
  for (uint32_t n : {4097u, 5000u, UINT32_MAX}) {
    rg_shared* shared = reinterpret_cast<rg_shared*>(1);
    rg_error err;
    EXPECT_EQ(rg_shared_open(path.c_str(), n, &shared, &err), RG_ERR_ARGUMENT) << n;
    EXPECT_EQ(shared, nullptr);
    EXPECT_EQ(std::string(err.message),
              "max_readers " + std::to_string(n) + " is over the limit of 4096");
  }
  rg_shared* shared = nullptr;
  ASSERT_EQ(rg_shared_open(path.c_str(), 4096, &shared, nullptr), RG_OK);
  std::vector<rg_reader*> readers(4096, nullptr);
  for (rg_reader*& r : readers) ASSERT_EQ(rg_reader_new(shared, &r), RG_OK);
  rg_reader* extra = nullptr;
  EXPECT_EQ(rg_reader_new(shared, &extra), RG_ERR_NO_READER_SLOT);
  for (rg_reader* r : readers) rg_reader_free(r);
  rg_shared_free(shared);
}

TEST(CApiLoad, ErrorsComeWithCodesAndMessages) {
  rg_table* t = reinterpret_cast<rg_table*>(1);
  rg_error err;
  EXPECT_EQ(rg_table_load_file("/nonexistent/gate.rgt", &t, &err), RG_ERR_IO);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(err.status, RG_ERR_IO);
  EXPECT_NE(std::string(err.message).find("cannot open /nonexistent/gate.rgt"), std::string::npos)
      << err.message;

  std::vector<uint8_t> bytes = lower(reference_gate());
  EXPECT_EQ(rg_table_load_bytes(bytes.data(), 40, &t, &err), RG_ERR_TRUNCATED);
  bytes[bytes.size() - 9] ^= 0x01;
  EXPECT_EQ(rg_table_load_bytes(bytes.data(), bytes.size(), &t, &err), RG_ERR_BAD_CHECKSUM);
  EXPECT_EQ(std::string(err.message).rfind("bad checksum", 0), 0u) << err.message;
  const char junk[] =
      "not a table at all, just some bytes that are long enough for a header....."
      "......";
  EXPECT_EQ(rg_table_load_bytes(junk, sizeof junk, &t, nullptr), RG_ERR_BAD_MAGIC);
  EXPECT_EQ(rg_table_load_bytes(nullptr, 10, &t, &err), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_table_load_file(nullptr, &t, &err), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_table_load_file("x", nullptr, &err), RG_ERR_ARGUMENT);
  EXPECT_EQ(t, nullptr);
}

TEST_F(CApi, GoldenTableFileLoads) {
  rg_table* t = nullptr;
  rg_error err;
  ASSERT_EQ(
      rg_table_load_file(
          (std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt").c_str(), &t, &err),
      RG_OK)
      << err.message;
  EXPECT_EQ(err.status, RG_OK);
  EXPECT_EQ(s(rg_table_policy_id(t)), "dlq-replay-gate");
  rg_table_free(t);
}

// The five seed letters (and a null key) as columns, decided in one call, agree with rg_decide.
TEST_F(CApi, BatchColumnsAgreeWithSingleDecisions) {
  const std::vector<std::string> topics = {"payment.capture", "payment.capture", "payment.capture",
                                           "payment.capture", "payment.capture", "payment.capture"};
  const std::vector<std::string> errors = {
      "timeout", "timeout", "weird_partner_code", "timeout", "insufficient_funds", "timeout"};
  const std::vector<std::string> keys = {"cap_9f3a", "cap_9f3a", "cap_9f3a", "", "cap_9f3a", ""};
  const std::vector<uint8_t> key_present = {1, 1, 1, 1, 1, 2};  // last row: null
  const std::vector<int64_t> attempts = {1, 1, 1, 1, 1, 1};
  const std::vector<uint8_t> committed = {0, 1, 0, 0, 0, 0};
  auto pack = [](const std::vector<std::string>& v, std::string* bytes,
                 std::vector<uint64_t>* offsets) {
    offsets->push_back(0);
    for (const std::string& x : v) {
      *bytes += x;
      offsets->push_back(bytes->size());
    }
  };
  std::string tb, eb, kb;
  std::vector<uint64_t> to, eo, ko;
  pack(topics, &tb, &to);
  pack(errors, &eb, &eo);
  pack(keys, &kb, &ko);
  std::vector<rg_column> cols(5);
  cols[0] = {kTopic, RG_COLUMN_STRING, nullptr, tb.data(), to.data(), nullptr, nullptr};
  cols[1] = {kErrorClass, RG_COLUMN_STRING, nullptr, eb.data(), eo.data(), nullptr, nullptr};
  cols[2] = {kIdempotencyKey, RG_COLUMN_STRING, key_present.data(), kb.data(), ko.data(),
             nullptr,         nullptr};
  cols[3] = {kAttempts, RG_COLUMN_INT, nullptr, nullptr, nullptr, attempts.data(), nullptr};
  cols[4] = {kAlreadyCommitted, RG_COLUMN_BOOL, nullptr,         nullptr,
             nullptr,           nullptr,        committed.data()};
  std::vector<uint32_t> verbs(6, 99);
  std::vector<rg_decision> decisions(6);
  ASSERT_EQ(rg_decide_columns(table_, cols.data(), cols.size(), 6, verbs.data(), decisions.data()),
            RG_OK);
  EXPECT_EQ(verbs, (std::vector<uint32_t>{kReplayOnce, kNever, kHold, kHold, kNever, kHold}));
  EXPECT_EQ(s(rg_table_rule_name(table_, &decisions[5])), "no_idempotency_key");
  EXPECT_EQ(std::string(decisions[0].table_checksum), rg_table_checksum(table_));
  for (size_t i = 0; i < 6; ++i) {
    rg_input_clear(in_);
    rg_input_set_string(in_, kTopic, topics[i].data(), topics[i].size());
    rg_input_set_string(in_, kErrorClass, errors[i].data(), errors[i].size());
    if (key_present[i] == 1) {
      rg_input_set_string(in_, kIdempotencyKey, keys[i].data(), keys[i].size());
    } else {
      rg_input_set_null(in_, kIdempotencyKey);
    }
    rg_input_set_int(in_, kAttempts, attempts[i]);
    rg_input_set_bool(in_, kAlreadyCommitted, committed[i]);
    rg_decision d;
    ASSERT_EQ(rg_decide(table_, in_, &d), RG_OK);
    EXPECT_EQ(d.verb, verbs[i]) << i;
    EXPECT_EQ(d.rule, decisions[i].rule) << i;
    EXPECT_EQ(d.kind, decisions[i].kind) << i;
  }
  // An invalid marker (3, or any unknown value) fails closed: hold, kind invalid input.
  const std::vector<uint8_t> committed_present = {1, 3, 1, 1, 9, 1};
  cols[4].present = committed_present.data();
  ASSERT_EQ(rg_decide_columns(table_, cols.data(), cols.size(), 6, nullptr, decisions.data()),
            RG_OK);
  EXPECT_EQ(decisions[1].kind, static_cast<uint32_t>(RG_KIND_INVALID_INPUT));
  EXPECT_EQ(decisions[1].invalid_field, static_cast<uint32_t>(kAlreadyCommitted));
  EXPECT_EQ(decisions[4].kind, static_cast<uint32_t>(RG_KIND_INVALID_INPUT));
  EXPECT_EQ(decisions[0].verb, static_cast<uint32_t>(kReplayOnce));
  cols[4].present = nullptr;

  // A column set without the required fields fails closed row by row.
  ASSERT_EQ(rg_decide_columns(table_, cols.data(), 1, 6, verbs.data(), nullptr), RG_OK);
  EXPECT_EQ(verbs, std::vector<uint32_t>(6, kHold));

  // Bad columns are argument errors.
  std::vector<uint64_t> backwards = {0, 5, 3, 3, 3, 3, 3};
  rg_column bad = {kTopic,           RG_COLUMN_STRING, nullptr, tb.data(),
                   backwards.data(), nullptr,          nullptr};
  EXPECT_EQ(rg_decide_columns(table_, &bad, 1, 6, verbs.data(), nullptr), RG_ERR_ARGUMENT);
  bad = {kAttempts, RG_COLUMN_INT, nullptr, nullptr, nullptr, nullptr, nullptr};
  EXPECT_EQ(rg_decide_columns(table_, &bad, 1, 6, verbs.data(), nullptr), RG_ERR_ARGUMENT);
  bad = {6, RG_COLUMN_BOOL, nullptr, nullptr, nullptr, nullptr, committed.data()};
  EXPECT_EQ(rg_decide_columns(table_, &bad, 1, 6, verbs.data(), nullptr), RG_ERR_ARGUMENT);
  bad = {kTopic, 7, nullptr, nullptr, nullptr, nullptr, nullptr};
  EXPECT_EQ(rg_decide_columns(table_, &bad, 1, 6, verbs.data(), nullptr), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_decide_columns(table_, nullptr, 1, 6, verbs.data(), nullptr), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_decide_columns(nullptr, cols.data(), 1, 6, verbs.data(), nullptr), RG_ERR_ARGUMENT);

  // With no output array nothing is decided: only the columns are checked, so any row count
  // returns at once.
  EXPECT_EQ(rg_decide_columns(table_, nullptr, 0, SIZE_MAX, nullptr, nullptr), RG_OK);
  EXPECT_EQ(rg_decide_columns(table_, &bad, 1, 6, nullptr, nullptr), RG_ERR_ARGUMENT);
}

// Two columns for one field are an argument error, checked before any row is decided: "the last
// column wins" would let a later already_committed = false override an earlier true and replay.
TEST_F(CApi, RepeatedFieldColumnIsRejectedBeforeAnyRow) {
  const std::string topic = "payment.capture", error = "timeout", key = "cap_9f3a";
  const uint64_t topic_offsets[] = {0, topic.size()}, error_offsets[] = {0, error.size()},
                 key_offsets[] = {0, key.size()};
  const int64_t attempts[] = {1};
  const uint8_t committed[] = {1}, not_committed[] = {0};
  std::vector<rg_column> cols = {
      {kTopic, RG_COLUMN_STRING, nullptr, topic.data(), topic_offsets, nullptr, nullptr},
      {kErrorClass, RG_COLUMN_STRING, nullptr, error.data(), error_offsets, nullptr, nullptr},
      {kIdempotencyKey, RG_COLUMN_STRING, nullptr, key.data(), key_offsets, nullptr, nullptr},
      {kAttempts, RG_COLUMN_INT, nullptr, nullptr, nullptr, attempts, nullptr},
      {kAlreadyCommitted, RG_COLUMN_BOOL, nullptr, nullptr, nullptr, nullptr, committed}};
  uint32_t verb = 99;
  rg_decision decision;
  decision.verb = 99;
  ASSERT_EQ(rg_decide_columns(table_, cols.data(), cols.size(), 1, &verb, &decision), RG_OK);
  EXPECT_EQ(verb, static_cast<uint32_t>(kNever));

  cols.push_back(
      {kAlreadyCommitted, RG_COLUMN_BOOL, nullptr, nullptr, nullptr, nullptr, not_committed});
  verb = 99;
  decision.verb = 99;
  EXPECT_EQ(rg_decide_columns(table_, cols.data(), cols.size(), 1, &verb, &decision),
            RG_ERR_ARGUMENT);
  EXPECT_EQ(verb, 99u);  // no row was decided
  EXPECT_EQ(decision.verb, 99u);
  // The repeat need not be adjacent or of the same column type.
  cols.pop_back();
  cols.insert(cols.begin(),
              {kAlreadyCommitted, RG_COLUMN_INT, nullptr, nullptr, nullptr, attempts, nullptr});
  EXPECT_EQ(rg_decide_columns(table_, cols.data(), cols.size(), 1, &verb, nullptr),
            RG_ERR_ARGUMENT);
  EXPECT_EQ(verb, 99u);
}

// generation_recovery's operator_confirmed (`source: operator`): the generic setters and the batch
// call refuse it, so a worker that copies a message's fields into the input (a message saying
// "operator_confirmed": true) cannot confirm; only rg_input_set_operator_* sets it, and those
// refuse every other field. A refused call leaves the slot as it was.
class OperatorOnlyCApi : public ::testing::Test {
 protected:
  void SetUp() override {
    rg_error err;
    ASSERT_EQ(
        rg_table_load_file(
            (std::string(RG_SOURCE_DIR) + "/tests/data/tables/generation_recovery.rgt").c_str(),
            &table_, &err),
        RG_OK)
        << err.message;
    ASSERT_EQ(rg_input_new(table_, &in_), RG_OK);
    confirmed_ = rg_table_field_index(table_, "operator_confirmed", 18);
    phase_ = rg_table_field_index(table_, "phase", 5);
    ASSERT_NE(confirmed_, RG_NO_INDEX);
    ASSERT_EQ(rg_table_field_operator_only(table_, confirmed_), 1);
    // A prepared operation nothing reached, current and authorized, with budget: it dispatches
    // only once an operator confirmed it.
    ASSERT_EQ(rg_input_set_string(in_, phase_, "prepared", 8), RG_OK);
    ASSERT_EQ(rg_input_set_int_by_name(in_, "message_revision", 1), RG_OK);
    ASSERT_EQ(rg_input_set_int_by_name(in_, "record_revision", 1), RG_OK);
    for (const char* name :
         {"dispatch_confirmed_absent", "model_current", "spec_current", "user_authorized"}) {
      ASSERT_EQ(rg_input_set_bool_by_name(in_, name, 1), RG_OK) << name;
    }
    ASSERT_EQ(rg_input_set_int_by_name(in_, "remaining_budget", 40), RG_OK);
  }
  void TearDown() override {
    rg_input_free(in_);
    rg_table_free(table_);
  }
  std::string decide() {
    rg_decision d;
    EXPECT_EQ(rg_decide(table_, in_, &d), RG_OK);
    return s(rg_table_verb_name(table_, d.verb)) + "/" + s(rg_table_rule_name(table_, &d));
  }

  rg_table* table_ = nullptr;
  rg_input* in_ = nullptr;
  uint32_t confirmed_ = RG_NO_INDEX, phase_ = RG_NO_INDEX;
};

TEST_F(OperatorOnlyCApi, GenericSettersRefuseTheFieldAndLeaveItUnset) {
  const std::string unconfirmed = decide();
  EXPECT_EQ(unconfirmed, "hold_for_review/prepared_needs_review");
  EXPECT_EQ(rg_input_set_bool(in_, confirmed_, 1), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_bool_by_name(in_, "operator_confirmed", 1), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_string(in_, confirmed_, "true", 4), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_string_by_name(in_, "operator_confirmed", "true", 4),
            RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_int(in_, confirmed_, 1), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_int_by_name(in_, "operator_confirmed", 1), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_null(in_, confirmed_), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_null_by_name(in_, "operator_confirmed"), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_invalid(in_, confirmed_), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(decide(), unconfirmed);  // still unset: absent, not confirmed
  EXPECT_STREQ(rg_status_name(RG_ERR_OPERATOR_ONLY), "operator_only");
}

TEST_F(OperatorOnlyCApi, OnlyTheExplicitOperatorCallSetsIt) {
  ASSERT_EQ(rg_input_set_operator_bool(in_, confirmed_, 1), RG_OK);
  EXPECT_EQ(decide(), "dispatch/prepared_dispatch_reviewed");
  // A message value arriving afterwards is refused and cannot undo or replace the operator's.
  EXPECT_EQ(rg_input_set_bool(in_, confirmed_, 0), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(decide(), "dispatch/prepared_dispatch_reviewed");
  ASSERT_EQ(rg_input_set_operator_bool(in_, confirmed_, 0), RG_OK);
  EXPECT_EQ(decide(), "hold_for_review/prepared_needs_review");
  ASSERT_EQ(rg_input_set_operator_bool(in_, confirmed_, 1), RG_OK);
  ASSERT_EQ(rg_input_unset(in_, confirmed_), RG_OK);  // unset is always allowed
  EXPECT_EQ(decide(), "hold_for_review/prepared_needs_review");
  ASSERT_EQ(rg_input_set_operator_bool(in_, confirmed_, 1), RG_OK);
  rg_input_clear(in_);  // clear unsets it too
  rg_decision d;
  ASSERT_EQ(rg_decide(table_, in_, &d), RG_OK);
  EXPECT_EQ(d.kind, static_cast<uint32_t>(RG_KIND_INVALID_INPUT));
}

// A value of the wrong type fails closed, as through the generic setters.
TEST_F(OperatorOnlyCApi, AWrongTypedOperatorValueFailsClosed) {
  rg_decision d;
  ASSERT_EQ(rg_input_set_operator_string(in_, confirmed_, "true", 4), RG_OK);
  ASSERT_EQ(rg_decide(table_, in_, &d), RG_OK);
  EXPECT_EQ(d.kind, static_cast<uint32_t>(RG_KIND_INVALID_INPUT));
  EXPECT_EQ(s(rg_table_reason(table_, &d)), "invalid input: operator_confirmed");
  ASSERT_EQ(rg_input_set_operator_int(in_, confirmed_, 1), RG_OK);
  ASSERT_EQ(rg_decide(table_, in_, &d), RG_OK);
  EXPECT_EQ(d.kind, static_cast<uint32_t>(RG_KIND_INVALID_INPUT));
}

TEST_F(OperatorOnlyCApi, TheOperatorCallsRefuseEveryOtherField) {
  const std::string before = decide();
  EXPECT_EQ(rg_input_set_operator_string(in_, phase_, "accepted", 8), RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_operator_int(in_, rg_table_field_index(table_, "remaining_budget", 16), 0),
            RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(rg_input_set_operator_bool(in_, rg_table_field_index(table_, "model_current", 13), 0),
            RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(decide(), before);  // nothing changed
  EXPECT_EQ(rg_input_set_operator_bool(in_, 99, 1), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_operator_bool(nullptr, confirmed_, 1), RG_ERR_ARGUMENT);
  EXPECT_EQ(rg_input_set_operator_string(in_, confirmed_, nullptr, 1), RG_ERR_ARGUMENT);
}

// The batch call carries message values: a column for the field is refused before any row.
TEST_F(OperatorOnlyCApi, ColumnsRefuseTheField) {
  const std::string phase = "prepared";
  const uint64_t offsets[] = {0, phase.size()};
  const uint8_t yes[] = {1};
  std::vector<rg_column> cols = {
      {phase_, RG_COLUMN_STRING, nullptr, phase.data(), offsets, nullptr, nullptr},
      {confirmed_, RG_COLUMN_BOOL, nullptr, nullptr, nullptr, nullptr, yes}};
  uint32_t verb = 99;
  EXPECT_EQ(rg_decide_columns(table_, cols.data(), cols.size(), 1, &verb, nullptr),
            RG_ERR_OPERATOR_ONLY);
  EXPECT_EQ(verb, 99u);
  cols.pop_back();
  EXPECT_EQ(rg_decide_columns(table_, cols.data(), cols.size(), 1, &verb, nullptr), RG_OK);
  EXPECT_NE(verb, 99u);
}

}  // namespace
}  // namespace replaygate
