// The JSON Lines binding (bindings/jsonl/replaygate_jsonl.h) through its C API: its `invalid`
// count is the CLI's (`replaygate decide` on the same bytes), record-level and field-level
// failures alike.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bindings/jsonl/replaygate_jsonl.h"
#include "tests/support/cli_runner.h"
#include "tests/support/paths.h"

namespace replaygate {
namespace {

using testing::CliRun;
using testing::ScratchDir;

const std::string kTable = std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt";

std::string letter(const std::string& attempts, const std::string& committed) {
  return R"({"topic":"payment.capture","error_class":"timeout","attempts":)" + attempts +
         R"(,"idempotency_key":"cap_9f3a","already_committed":)" + committed + "}";
}

TEST(JsonlBinding, AVerifiedOpenRefusesBadTrustArgumentsAndAnUnsignedTableUnderAKey) {
  rgj_gate* gate = reinterpret_cast<rgj_gate*>(1);
  rg_error err;
  EXPECT_EQ(rgj_open_verified(kTable.c_str(), nullptr, 1, nullptr, 0, &gate, &err),
            RG_ERR_ARGUMENT);
  EXPECT_STREQ(err.message, "trusted_keys is NULL");
  EXPECT_EQ(gate, nullptr);
  EXPECT_EQ(rgj_open_verified(kTable.c_str(), nullptr, 0, nullptr, 2, &gate, &err),
            RG_ERR_ARGUMENT);
  EXPECT_STREQ(err.message, "unknown flags 2");
  const char* const missing[] = {"/nonexistent/k.pub"};
  EXPECT_EQ(rgj_open_verified(kTable.c_str(), missing, 1, nullptr, 0, &gate, &err),
            RG_ERR_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("/nonexistent/k.pub"), std::string::npos) << err.message;
  // RG_TRUST_REQUIRE_SIGNED (1) with no key: the unsigned golden table is refused, fail closed.
  EXPECT_EQ(rgj_open_verified(kTable.c_str(), nullptr, 0, nullptr, 1, &gate, &err),
            RG_ERR_SIGNATURE);
  EXPECT_EQ(gate, nullptr);
  // No key, no flag: the table loads as rgj_open loads it.
  ASSERT_EQ(rgj_open_verified(kTable.c_str(), nullptr, 0, nullptr, 0, &gate, &err), RG_OK)
      << err.message;
  EXPECT_EQ(rgj_verb_count(gate), 3u);
  rgj_free(gate);
}

TEST(JsonlBinding, InvalidCountsFieldLevelFailuresLikeTheCli) {
  // 2 valid records, 3 records that are not records (blank, bad JSON, duplicate key) and 3 whose
  // field values fail validation (a string for an int, a null bool, an int below its bound).
  const std::vector<std::string> lines = {
      letter("1", "false"),
      "",
      letter("1", "true"),
      "{not json",
      R"({"topic":"a","topic":"b"})",
      letter("\"1\"", "false"),
      letter("1", "null"),
      letter("-1", "false"),
  };
  std::string text;
  for (const std::string& l : lines) text += l + "\n";

  rgj_gate* gate = nullptr;
  rg_error err;
  ASSERT_EQ(rgj_open(kTable.c_str(), &gate, &err), RG_OK) << err.message;
  std::vector<uint32_t> verbs(lines.size(), 99);
  size_t count = 0, invalid = 0, consumed = 0;
  ASSERT_EQ(rgj_decide_lines(gate, text.data(), text.size(), verbs.data(), verbs.size(), &count,
                             &invalid, &consumed, nullptr),
            RG_OK);
  EXPECT_EQ(count, lines.size());
  EXPECT_EQ(consumed, text.size());
  EXPECT_EQ(invalid, 6u);
  std::vector<std::string> names;
  for (uint32_t v : verbs) {
    const rg_str name = rgj_verb_name(gate, v);
    names.emplace_back(name.data, name.size);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"replay_once", "hold", "never", "hold", "hold", "hold",
                                             "hold", "hold"}));

  // The CLI's summary on the same bytes says the same count.
  ScratchDir dir("rg_jsonl_test");
  CliRun run;
  run.args = {"decide", "--table", kTable};
  run.stdin_text = text;
  const testing::CliResult r = testing::run_cli(dir.path(), run);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("; invalid 6,"), std::string::npos) << r.err;

  // Split so that capacity stops the call: each part's count adds up to the same total.
  size_t total = 0;
  for (size_t at = 0; at < text.size();) {
    ASSERT_EQ(rgj_decide_lines(gate, text.data() + at, text.size() - at, verbs.data(), 3, &count,
                               &invalid, &consumed, nullptr),
              RG_OK);
    total += invalid;
    at += consumed;
  }
  EXPECT_EQ(total, 6u);
  rgj_free(gate);
}

// A record's values for record-only fields (generation_recovery's phase and allowance facts,
// `source: record`) and the operator-only confirmation are ignored, as in `replaygate decide`:
// the required phase is missing, so every record gets the default, never a dispatch.
TEST(JsonlBinding, RecordOnlyAndOperatorOnlyFieldsAreNeverReadFromRecords) {
  const std::string table =
      std::string(RG_SOURCE_DIR) + "/tests/data/tables/generation_recovery.rgt";
  const std::string text =
      R"({"phase":"prepared","message_revision":1,"record_revision":1,)"
      R"("dispatch_confirmed_absent":true,"model_current":true,"spec_current":true,)"
      R"("user_authorized":true,"remaining_budget":40,"operator_confirmed":true})"
      "\n";
  rgj_gate* gate = nullptr;
  rg_error err;
  ASSERT_EQ(rgj_open(table.c_str(), &gate, &err), RG_OK) << err.message;
  uint32_t verb = 99;
  size_t count = 0, invalid = 0, consumed = 0;
  ASSERT_EQ(rgj_decide_lines(gate, text.data(), text.size(), &verb, 1, &count, &invalid, &consumed,
                             nullptr),
            RG_OK);
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(invalid, 1u);  // invalid input: phase
  const rg_str name = rgj_verb_name(gate, verb);
  EXPECT_EQ(std::string(name.data, name.size), "manual_reconciliation");
  rgj_free(gate);
}

// rgj_verb_effects: each verb's effect, the default verb and the checksum, all of one table (the
// run-wide rules need them: only a create verb is ever turned into the default).
TEST(JsonlBinding, VerbEffectsDefaultAndChecksumComeFromTheServedTable) {
  rgj_gate* gate = nullptr;
  rg_error err;
  ASSERT_EQ(rgj_open(kTable.c_str(), &gate, &err), RG_OK) << err.message;
  ASSERT_EQ(rgj_verb_count(gate), 3u);
  uint32_t effects[4] = {99, 99, 99, 99};
  uint32_t default_verb = 99;
  char checksum[33] = {0};
  ASSERT_EQ(rgj_verb_effects(gate, effects, 4, &default_verb, checksum), RG_OK);
  // never (none), replay_once (create), hold (none); the default is hold.
  EXPECT_EQ(effects[0], static_cast<uint32_t>(RG_EFFECT_NONE));
  EXPECT_EQ(effects[1], static_cast<uint32_t>(RG_EFFECT_CREATE));
  EXPECT_EQ(effects[2], static_cast<uint32_t>(RG_EFFECT_NONE));
  EXPECT_EQ(effects[3], 99u);  // past the verbs: untouched
  EXPECT_EQ(default_verb, 2u);
  rg_table* table = nullptr;
  ASSERT_EQ(rg_table_load_file(kTable.c_str(), &table, &err), RG_OK) << err.message;
  EXPECT_STREQ(checksum, rg_table_checksum(table));
  rg_table_free(table);
  // capacity bounds what is written; NULL outputs are skipped.
  effects[1] = 99;
  ASSERT_EQ(rgj_verb_effects(gate, effects, 1, nullptr, nullptr), RG_OK);
  EXPECT_EQ(effects[1], 99u);
  EXPECT_EQ(rgj_verb_effects(gate, nullptr, 0, &default_verb, nullptr), RG_OK);
  EXPECT_EQ(rgj_verb_effects(gate, nullptr, 1, nullptr, nullptr), RG_ERR_ARGUMENT);
  EXPECT_EQ(rgj_verb_effects(nullptr, effects, 4, nullptr, nullptr), RG_ERR_ARGUMENT);
  rgj_free(gate);
}

}  // namespace
}  // namespace replaygate
