// audit::EntryReader (audit/reader.h): a log's lines parsed back into typed entries, the lines
// that are no entry skipped, an unterminated last line read only when asked; and review's
// earlier_creates() over it (review/record.h).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "audit/reader.h"
#include "review/record.h"
#include "support/audit_entries.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

using audit::EntryReader;
using audit::ReadEntry;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A log of a create decision (m1), a result for it, a ledger act and a none decision (m2).
std::string sample_log(const std::string& path) {
  EXPECT_TRUE(audit::append(path, decision(1, "replay_once", "create")).ok);
  audit::ResultEntry r;
  r.time = "2026-12-01T00:00:09Z";
  r.decision = 1;
  r.outcome = "done";
  r.operator_name = "ana";
  EXPECT_TRUE(audit::append(path, audit::to_json(r), 1).ok);
  audit::LedgerEntry l;
  l.time = "2026-12-01T00:00:10Z";
  l.operator_name = "ana";
  l.act = "release_requested";
  l.scope = "default";
  l.idempotency_key = "k1";
  l.reason = "retry";
  EXPECT_TRUE(audit::append(path, audit::to_json(l)).ok);
  EXPECT_TRUE(audit::append(path, decision(2)).ok);
  return read_all(path);
}

TEST(AuditReader, EntriesComeBackTyped) {
  ScratchDir scratch{"rg_reader"};
  const std::string bytes = sample_log((scratch.path() / "audit.log").string());
  EntryReader reader(bytes);
  std::vector<ReadEntry> entries;
  for (ReadEntry e; reader.next(&e);) entries.push_back(e);
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].kind, ReadEntry::Kind::kDecision);
  EXPECT_EQ(entries[0].line, 1u);
  EXPECT_EQ(entries[0].seq, 1u);
  EXPECT_EQ(entries[0].decision.effect, "create");
  EXPECT_EQ(entries[0].decision.action, "replay_once");
  EXPECT_EQ(entries[0].decision.message_id, "m1");
  EXPECT_TRUE(entries[0].decision.operation_id.is_null());
  EXPECT_EQ(entries[0].decision.operator_name, "ana");
  EXPECT_EQ(entries[1].kind, ReadEntry::Kind::kResult);
  EXPECT_EQ(entries[1].result.decision, 1u);
  EXPECT_EQ(entries[1].result.outcome, "done");
  EXPECT_EQ(entries[2].kind, ReadEntry::Kind::kLedger);
  EXPECT_EQ(entries[2].ledger.act, "release_requested");
  EXPECT_EQ(entries[2].ledger.idempotency_key, "k1");
  EXPECT_EQ(entries[2].ledger.reason, "retry");
  EXPECT_EQ(entries[3].decision.effect, "none");
  EXPECT_EQ(entries[3].seq, 4u);
}

TEST(AuditReader, LinesThatAreNoEntryAreSkippedAndCounted) {
  const std::string bytes =
      "not json\n" + std::string(40, '[') + std::string(40, ']') +
      "\n[1,2]\n{\"kind\":\"checkpoint\",\"seq\":7,\"key_id\":\"ab\"}\n{\"kind\":\"decision\"}";
  EntryReader complete(bytes);
  ReadEntry e;
  ASSERT_TRUE(complete.next(&e));
  EXPECT_EQ(e.kind, ReadEntry::Kind::kCheckpoint);
  EXPECT_EQ(e.line, 4u);
  EXPECT_EQ(e.checkpoint.seq, 7u);
  EXPECT_EQ(e.checkpoint.key_id, "ab");
  EXPECT_FALSE(complete.next(&e));  // the unterminated last line is a torn tail
  EntryReader all(bytes, EntryReader::Lines::kAll);
  ASSERT_TRUE(all.next(&e));
  ASSERT_TRUE(all.next(&e));
  EXPECT_EQ(e.kind, ReadEntry::Kind::kDecision);
  EXPECT_EQ(e.line, 5u);
  EXPECT_FALSE(e.seq.has_value());
}

TEST(AuditReader, EarlierCreatesFindsTheDecisionAndItsResult) {
  ScratchDir scratch{"rg_reader"};
  const std::string bytes = sample_log((scratch.path() / "audit.log").string());
  const review::EarlierCreates found = review::earlier_creates(bytes, "m1", "");
  ASSERT_EQ(found.decisions.size(), 1u);
  EXPECT_TRUE(found.same_message);
  EXPECT_EQ(found.results, std::vector<std::string>{"entry 1: done"});
  EXPECT_TRUE(review::earlier_creates(bytes, "m2", "").decisions.empty());  // not a create
  EXPECT_TRUE(review::earlier_creates(bytes, "", "").decisions.empty());
}

}  // namespace
}  // namespace replaygate::testing
