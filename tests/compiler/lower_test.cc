// lower(): deterministic bytes, a golden digest of the reference gate's table, and the split
// between the decision digest and provenance.
#include "compiler/lower.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "runtime/table.h"
#include "runtime/table_format.h"
#include "tests/support/paths.h"
#include "tests/support/test_policies.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate {
namespace {

std::string hex_digest(const std::vector<uint8_t>& bytes) {
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

std::unique_ptr<Table> load(const std::vector<uint8_t>& bytes) {
  LoadStatus status;
  auto table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  EXPECT_TRUE(status.ok()) << status.message;
  return table;
}

TEST(Lower, ByteIdenticalAcrossRuns) {
  EXPECT_EQ(lower(testing::reference_gate()), lower(testing::reference_gate()));
  EXPECT_EQ(lower(testing::small_policy()), lower(testing::small_policy()));
}

// Catches any change of the format or of lowering on any machine. If the change is intended,
// bump the format version when old readers would misread the new bytes, then update these.
TEST(Lower, GoldenDigestOfTheReferenceGate) {
  std::vector<uint8_t> bytes = lower(testing::reference_gate());
  EXPECT_EQ(bytes.size(), 4512u);
  EXPECT_EQ(hex_digest(bytes), "f0e792be6305cd8bb2f9ae8ebe387b5f");
  auto table = load(bytes);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->decision_digest_hex(), "73ce8dafd5f99df8e3ac5616e15d10a0");
}

// The committed binary tests/data/tables/replay_gate.rgt is what lower() produces today (the
// runtime tests load that file). RG_UPDATE_GOLDEN=1 rewrites it.
TEST(Lower, GoldenTableFile) {
  std::vector<uint8_t> bytes = lower(testing::reference_gate());
  const std::string path = std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt";
  if (std::getenv("RG_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << path;
  std::vector<uint8_t> golden((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  EXPECT_TRUE(golden == bytes) << "lower() output differs from " << path;
}

// The shipped policy compiled by the real front-end lowers to the same decisions as the hand-built
// IR the runtime tests use: same decision digest, same provenance lines.
TEST(Lower, ShippedPolicyMatchesTheHandBuiltReference) {
  LoadedPolicy loaded = load_policy_file(std::string(RG_SOURCE_DIR) + "/policies/replay_gate.yaml");
  ASSERT_TRUE(loaded.policy.has_value()) << loaded.io_message;
  auto compiled = load(lower(*loaded.policy));
  auto reference = load(lower(testing::reference_gate()));
  ASSERT_TRUE(compiled && reference);
  EXPECT_EQ(compiled->decision_digest_hex(), reference->decision_digest_hex());
  EXPECT_EQ(compiled->decision_digest_hex(), "73ce8dafd5f99df8e3ac5616e15d10a0");
  EXPECT_EQ(compiled->source_name(), "replay_gate.yaml");
  ASSERT_EQ(compiled->rule_count(), reference->rule_count());
  for (uint32_t r = 0; r < reference->rule_count(); ++r) {
    EXPECT_EQ(compiled->rule_source_line(r), reference->rule_source_line(r)) << r;
  }
}

TEST(Lower, HeaderFields) {
  std::vector<uint8_t> bytes = lower(testing::reference_gate());
  format::Header h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  EXPECT_EQ(std::string(h.magic, 7), "RGTABLE");
  EXPECT_EQ(h.magic[7], '\0');
  EXPECT_EQ(h.version, 1);
  EXPECT_EQ(h.header_size, 80);
  EXPECT_EQ(h.total_size, bytes.size());
  EXPECT_EQ(h.section_count, 16u);
}

TEST(Lower, ProvenanceDoesNotTouchTheDecisionDigest) {
  ir::CheckedPolicy a = testing::reference_gate();
  ir::CheckedPolicy b = a;
  b.source_base_name = "elsewhere.policy";
  b.source_digest = "ffff";
  b.source.rules.clear();
  b.source.rows.clear();
  auto ta = load(lower(a));
  auto tb = load(lower(b));
  ASSERT_TRUE(ta && tb);
  EXPECT_EQ(ta->decision_digest_hex(), tb->decision_digest_hex());
  EXPECT_NE(ta->checksum_hex(), tb->checksum_hex());
  EXPECT_NE(ta->provenance_digest_hex(), tb->provenance_digest_hex());
  EXPECT_EQ(tb->source_name(), "elsewhere.policy");
  EXPECT_EQ(tb->rule_source_line(0), 0u);
  EXPECT_EQ(ta->rule_source_line(0), 54u);
  EXPECT_EQ(ta->rule_source_line(12), 97u);
}

TEST(Lower, MeaningChangesTheDecisionDigest) {
  ir::CheckedPolicy a = testing::reference_gate();
  ir::CheckedPolicy b = a;
  std::get<ir::Table>(b.policy.rules[4]).rows[0].verb = testing::kNever;
  ir::CheckedPolicy c = a;
  c.policy.revision = 2;
  auto ta = load(lower(a)), tb = load(lower(b)), tc = load(lower(c));
  ASSERT_TRUE(ta && tb && tc);
  EXPECT_NE(ta->decision_digest_hex(), tb->decision_digest_hex());
  EXPECT_NE(ta->decision_digest_hex(), tc->decision_digest_hex());
  EXPECT_EQ(tc->revision(), 2);
}

TEST(Lower, RowReasons) {
  ir::Table t;
  t.id = "routes";
  t.rows.push_back(testing::row("routes", {testing::S("eu"), std::nullopt, testing::I(-4)}, 0));
  t.rows.push_back(testing::row("routes", {testing::B(true)}, 0, "explicit reason"));
  EXPECT_EQ(effective_row_reason(t, 0), "table routes row eu/*/-4");
  EXPECT_EQ(effective_row_reason(t, 1), "explicit reason");
}

TEST(Lower, DuplicateRowKeysKeepTheEarlierRow) {
  ir::CheckedPolicy p = testing::reference_gate();
  auto& table = std::get<ir::Table>(p.policy.rules[4]);
  ir::Row dup = table.rows[0];
  dup.id = "dup";
  dup.verb = testing::kNever;
  table.rows.push_back(dup);
  auto t = load(lower(p));
  ASSERT_NE(t, nullptr);
  Input in(*t);
  in.set_string(testing::kTopic, "payment.capture");
  in.set_string(testing::kErrorClass, "timeout");
  in.set_int(testing::kAttempts, 0);
  in.set_string(testing::kIdempotencyKey, "k");
  in.set_bool(testing::kAlreadyCommitted, false);
  EXPECT_EQ(t->rule_name(t->decide(in)), "known_failures:payment.capture/timeout");
}

TEST(Lower, ManyRowsAndKeys) {
  // 500 rows over 3 int keys with a few wildcard patterns: every row is found by its own keys.
  ir::CheckedPolicy p;
  p.policy.id = "many";
  p.policy.fields = {testing::int_field("a", 0, 1000), testing::int_field("b", 0, 1000),
                     testing::int_field("c", 0, 1000, true)};
  p.policy.verbs = {testing::verb("no", ir::Effect::kNone, ""),
                    testing::verb("yes", ir::Effect::kRead, "")};
  ir::Table t;
  t.id = "grid";
  t.key_fields = {0, 1, 2};
  for (int i = 0; i < 500; ++i) {
    std::optional<ir::Value> c;
    if (i % 3 != 0) c = testing::I(i % 7);
    t.rows.push_back(testing::row("grid", {testing::I(i), testing::I(2 * i), c}, i % 2));
  }
  p.policy.rules.push_back(t);
  auto table = load(lower(p));
  ASSERT_NE(table, nullptr);
  Input in(*table);
  for (int i = 0; i < 500; ++i) {
    in.clear();
    in.set_int(0, i);
    in.set_int(1, 2 * i);
    in.set_int(2, i % 7);
    Decision d = table->decide(in);
    ASSERT_EQ(d.kind, DecisionKind::kRule) << i;
    EXPECT_EQ(d.rule, static_cast<uint32_t>(i));
    EXPECT_EQ(d.verb, static_cast<uint32_t>(i % 2));
  }
  in.clear();
  in.set_int(0, 1);
  in.set_int(1, 3);
  EXPECT_EQ(table->decide(in).kind, DecisionKind::kDefault);
}

}  // namespace
}  // namespace replaygate
