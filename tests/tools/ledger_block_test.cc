// Claims per block (pipeline/gate.h judge_block, pipeline/ledger_stage.h): a block's claims are one
// claim_batch transaction made before any line of the block exists, a failed transaction holds the
// whole block (ledger:unavailable) and grants nothing, and the lines are the same bytes for blocks
// of one record and of many, over random dumps and ledgers.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "inputs/letters.h"
#include "ledger/ledger.h"
#include "pipeline/gate.h"
#include "pipeline/ledger_stage.h"
#include "runtime/reload.h"
#include "tests/support/paths.h"

namespace replaygate::pipeline {
namespace {

const std::string kTable = std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt";

// An in-memory ledger with a fixed clock that can fail its Nth claim_batch or lookup call. It
// keeps what it committed, the size of each call and how much output existed at each call.
class ScriptedLedger : public ledger::Ledger {
 public:
  ScriptedLedger() : Ledger("default", "scripted", [] { return ledger::Time{}; }) {}

  int fail_call = 0;                   // 1-based claim_batch/lookup call that fails; 0: none
  const ByteBuffer* output = nullptr;  // the gate's output buffer, to see what exists at a call
  std::vector<size_t> calls;           // keys per call
  std::vector<size_t> output_at_call;  // output bytes when each call was made
  std::map<std::string, ledger::Record> live;  // committed claims
  std::vector<std::pair<std::string, std::int64_t>> marked;

  // A claim committed earlier (by "another run"), before the gate starts.
  void seed(const std::string& key, const std::string& message_id) {
    ledger::Record r;
    r.scope = scope();
    r.key = key;
    r.generation = 1;
    r.policy = "dlq-replay-gate";
    r.rule = "known_failures:payment.capture/timeout";
    r.message_id = message_id;
    r.worker = "other-host:7";
    live[key] = r;
  }

 protected:
  bool next_call_fails(size_t keys) {
    calls.push_back(keys);
    output_at_call.push_back(output != nullptr ? output->size() : 0);
    return fail_call > 0 && static_cast<int>(calls.size()) == fail_call;
  }
  ledger::Error down() const {
    return ledger::Error{ledger::ErrorCode::kUnavailable, "ledger scripted: server stopped"};
  }
  ledger::Result<std::vector<ledger::ClaimOutcome>> do_claim_batch(
      const std::vector<ledger::Claim>& claims) override {
    if (next_call_fails(claims.size())) return down();
    std::vector<ledger::ClaimOutcome> out(claims.size());
    std::map<std::string, ledger::Record> added;  // all or nothing: applied at the end
    for (size_t i = 0; i < claims.size(); ++i) {
      const ledger::Claim& c = claims[i];
      if (auto it = live.find(c.key); it != live.end()) {
        out[i].holder = it->second;
      } else if (auto in = added.find(c.key); in != added.end()) {
        out[i].holder = in->second;
      } else {
        ledger::Record r;
        r.scope = scope();
        r.key = c.key;
        r.generation = 1;
        r.policy = c.policy;
        r.rule = c.rule;
        r.message_id = c.message_id;
        r.worker = c.worker;
        r.claimed_at = r.updated_at = now();
        added[c.key] = r;
        out[i].won = true;
        out[i].holder = r;
      }
    }
    live.insert(added.begin(), added.end());
    return out;
  }
  ledger::Result<std::vector<std::optional<ledger::Record>>> do_lookup(
      const std::vector<std::string>& keys) override {
    if (next_call_fails(keys.size())) return down();
    std::vector<std::optional<ledger::Record>> out(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (auto it = live.find(keys[i]); it != live.end()) out[i] = it->second;
    }
    return out;
  }
  ledger::Status do_mark_batch(const std::vector<std::pair<std::string, std::int64_t>>& claims,
                               ledger::State) override {
    marked.insert(marked.end(), claims.begin(), claims.end());
    return ledger::Ok{};
  }
  ledger::Result<ledger::Record> do_release(std::string_view, std::string_view,
                                            std::string_view) override {
    return down();
  }
  ledger::Result<std::vector<ledger::Record>> do_show(std::string_view) override { return down(); }
  ledger::Result<std::vector<ledger::Record>> do_list(ledger::Time) override { return down(); }
  ledger::Result<ledger::Stats> do_stats() override { return down(); }
  ledger::Result<std::int64_t> do_export_rows(
      const std::function<bool(const ledger::Record&)>&) override {
    return down();
  }
  ledger::Result<ledger::Pruned> do_prune(std::chrono::microseconds, bool) override {
    return down();
  }
  ledger::Result<std::int64_t> do_restore(const std::vector<ledger::Record>&) override {
    return down();
  }
};

// What a stage after decide saw (the audit log's place): verb and rule per verdict.
class SeenStage : public Stage {
 public:
  void add(const Table& table, const Verdict& v) override {
    seen.push_back(std::string(table.verb_name(v.verb)) + " " + std::string(v.rule(table)) + " " +
                   (v.meta != nullptr && v.meta->has_message_id ? std::string(v.meta->message_id)
                                                                : std::string("-")));
  }
  bool commit() override { return true; }
  const std::string& error() const override { return error_; }
  std::vector<std::string> seen;

 private:
  std::string error_;
};

struct PaddedLine {
  explicit PaddedLine(std::string text)
      : bytes(text + std::string(inputs::LineReader::kPadding, ' ')), size(text.size()) {}
  std::string_view view() const { return std::string_view(bytes.data(), size); }
  std::string bytes;
  size_t size;
};

std::string letter(const std::string& id, const std::string& key,
                   const std::string& topic = "payment.capture",
                   const std::string& error_class = "timeout", int attempts = 1,
                   bool committed = false) {
  return R"({"message_id":")" + id + R"(","topic":")" + topic + R"(","error_class":")" +
         error_class + R"(","attempts":)" + std::to_string(attempts) + R"(,"idempotency_key":")" +
         key + R"(","already_committed":)" + (committed ? "true" : "false") + "}";
}

struct GateRun {
  std::string out;
  std::vector<std::string> seen;  // the stage's verdicts
  GateCounts counts;
  bool failed = false;
  uint64_t claims = 0, held = 0;
  // The ledger's side, copied when the run ends (the stage owns and deletes the ledger).
  std::vector<size_t> calls, output_at_call;
  std::map<std::string, ledger::Record> live;
  size_t marked = 0;
};

// Decides `records` as decide --ledger does: blocks of `block` records through judge_block, each
// committed (stages) before the next; `per_record`: judge() one record at a time instead.
// `setup` prepares the ledger (seeds, a failing call).
GateRun decide(const std::vector<std::string>& records, size_t block,
               const std::function<void(ScriptedLedger&)>& setup, bool dry_run,
               bool per_record = false) {
  auto owned = std::make_unique<ScriptedLedger>();
  ScriptedLedger& ledger = *owned;
  setup(ledger);
  GateRun run;
  LoadStatus status;
  std::unique_ptr<SharedTable> shared = SharedTable::open(kTable, &status);
  EXPECT_NE(shared, nullptr) << status.message;
  if (shared == nullptr) return run;
  SharedTable::Reader reader(*shared);
  inputs::LetterParser parser(reader.acquire().table());
  ReplayGuard guard(-1, 1000000, 1 << 20);
  LedgerStage::Options lo;
  lo.dry_run = dry_run;
  lo.mark_recorded = true;
  lo.worker = "test:1";
  LedgerStage stage(lo, std::move(owned));
  Gate::Options options;
  options.dedupe_field = reader.acquire().table().field_index("idempotency_key");
  options.claimer = &stage;
  options.block_records = block;
  std::unique_ptr<Gate> gate = Gate::open(*shared, parser, guard, options);
  EXPECT_NE(gate, nullptr);
  if (gate == nullptr) return run;
  SeenStage seen;
  gate->add_stage(&seen);
  gate->add_stage(&stage);
  EXPECT_EQ(gate->batch_size(), block);
  ByteBuffer out;
  ledger.output = &out;
  Batch batch(gate->batch_size());
  auto emit = [&] {
    if (per_record) {
      for (size_t i = 0; i < batch.count; ++i) gate->judge(batch, i, out);
    } else {
      gate->judge_block(batch, out);
    }
    batch.clear();
    const Stage* failed = nullptr;
    EXPECT_TRUE(gate->commit(&failed));
  };
  std::vector<PaddedLine> lines;  // a batch's records stay readable until it is judged
  lines.reserve(records.size());
  for (size_t n = 0; n < records.size(); ++n) {
    lines.emplace_back(records[n]);
    gate->read(batch, n + 1, inputs::LineReader::Status::kLine, lines.back().view(),
               inputs::kMaxRecordBytes);
    if (batch.count == gate->batch_size()) emit();
  }
  if (batch.count > 0) emit();
  ledger.output = nullptr;
  run.out.assign(out.data(), out.size());
  run.seen = seen.seen;
  run.counts = gate->counts();
  run.failed = stage.failed();
  run.claims = stage.claims();
  run.held = stage.held();
  run.calls = ledger.calls;
  run.output_at_call = ledger.output_at_call;
  run.live = ledger.live;
  run.marked = ledger.marked.size();
  return run;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return lines;
}

TEST(LedgerBlocks, ABlocksClaimsAreOneCallMadeBeforeAnyOfItsLines) {
  std::vector<std::string> records;
  for (int i = 0; i < 10; ++i)
    records.push_back(letter("m-" + std::to_string(i), "k" + std::to_string(i)));
  records.insert(records.begin() + 3, letter("m-x", "kx", "payment.capture", "insufficient_funds"));
  const GateRun run = decide(
      records, 4, [](ScriptedLedger&) {}, false);
  // 11 records in blocks of 4, 4, 3: one call per block, with its create verbs only (3 + 4 + 3).
  EXPECT_EQ(run.calls, (std::vector<size_t>{3, 4, 3}));
  // Each call came before its block had a line in the output: 0, 4 and 8 lines were there.
  ASSERT_EQ(run.output_at_call.size(), 3u);
  const std::vector<std::string> lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 11u);
  size_t bytes = 0;
  for (size_t l = 0, call = 0; l <= lines.size(); ++l) {
    if (l % 4 == 0 && call < 3) {
      EXPECT_EQ(run.output_at_call[call++], bytes) << l;
    }
    if (l < lines.size()) bytes += lines[l].size() + 1;
  }
  EXPECT_EQ(run.claims, 10u);
  EXPECT_EQ(run.live.size(), 10u);
  EXPECT_EQ(run.marked, 10u);  // every won claim marked recorded after its block
  EXPECT_EQ(std::count(run.out.begin(), run.out.end(), '\n'), 11);
  for (const std::string& line : lines) {
    if (line.find("insufficient_funds") != std::string::npos) continue;
    EXPECT_NE(line.find(R"("verb":"replay_once")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("claimed":true})"), std::string::npos) << line;
  }
  EXPECT_EQ(run.seen.at(0), "replay_once known_failures:payment.capture/timeout m-0");
  EXPECT_EQ(run.seen.at(3), "never known_failures:payment.capture/insufficient_funds m-x");
}

TEST(LedgerBlocks, AFailedTransactionHoldsTheWholeBlockAndEveryLaterOne) {
  std::vector<std::string> records;
  for (int i = 0; i < 12; ++i)
    records.push_back(letter("m-" + std::to_string(i), "k" + std::to_string(i)));
  const GateRun run = decide(
      records, 4, [](ScriptedLedger& l) { l.fail_call = 2; }, false);
  EXPECT_TRUE(run.failed);
  EXPECT_EQ(run.calls, (std::vector<size_t>{4, 4}));  // no call after the failure
  const std::vector<std::string> lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 12u);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i < 4) {
      EXPECT_NE(lines[i].find(R"("verb":"replay_once")"), std::string::npos) << lines[i];
    } else {
      EXPECT_NE(lines[i].find(R"("verb":"hold","effect":"none")"), std::string::npos) << lines[i];
      EXPECT_NE(lines[i].find(R"("rule":"ledger:unavailable")"), std::string::npos) << lines[i];
      EXPECT_NE(lines[i].find("server stopped"), std::string::npos) << lines[i];
      EXPECT_EQ(run.seen.at(i), "hold ledger:unavailable m-" + std::to_string(i));
    }
  }
  // Nothing printed or recorded as a replay lacks a committed claim.
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool replay = lines[i].find("replay_once") != std::string::npos;
    EXPECT_EQ(replay, run.live.count("k" + std::to_string(i)) == 1) << lines[i];
    EXPECT_EQ(run.seen[i].rfind("replay_once", 0) == 0, replay) << run.seen[i];
  }
  EXPECT_EQ(run.counts.ledger_holds, 8u);
  EXPECT_EQ(run.claims, 4u);
}

TEST(LedgerBlocks, ADryRunLooksEachBlockUpOnceAndClaimsNothing) {
  std::vector<std::string> records;
  for (int i = 0; i < 6; ++i)
    records.push_back(letter("m-" + std::to_string(i), "k" + std::to_string(i)));
  const GateRun run = decide(
      records, 3, [](ScriptedLedger& l) { l.seed("k2", "m-first"); }, true);
  EXPECT_EQ(run.calls, (std::vector<size_t>{3, 3}));
  EXPECT_EQ(run.live.size(), 1u);  // still only the seeded claim
  const std::vector<std::string> lines = lines_of(run.out);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[0].find(R"("claimed":false})"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find(R"("rule":"ledger:already_replayed")"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("by other-host:7 (message m-first, rule"), std::string::npos) << lines[2];
  EXPECT_EQ(run.held, 1u);
  EXPECT_EQ(run.claims, 0u);
}

// Random dumps: letters that replay, park or hold, with keys from a small pool (duplicates in
// the dump and keys another run claimed), unreadable lines; a ledger that may fail at some call.
// Blocks of one record (judge(), the per-record path) and blocks of many print the same bytes and
// hand the stages the same verdicts, as long as the ledger does not fail (a failure holds a whole
// block, so there the block size matters by design).
RC_GTEST_PROP(LedgerBlocks, LinesAreTheSameForBlocksOfOneAndOfMany, ()) {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"payment.capture", "timeout"},        {"payment.capture", "insufficient_funds"},
      {"inventory.reserve", "lock_timeout"}, {"webhook.partner", "http_503"},
      {"mail.receipt", "smtp_421"},          {"nowhere", "unknown"}};
  const int pool = *rc::gen::inRange(1, 40);
  const size_t count = *rc::gen::inRange<size_t>(0, 200);
  std::vector<std::string> records;
  for (size_t i = 0; i < count; ++i) {
    if (*rc::gen::inRange(0, 20) == 0) {
      records.push_back("{\"message_id\":");  // unreadable
      continue;
    }
    const auto& [topic, error_class] = pairs[*rc::gen::inRange<size_t>(0, pairs.size())];
    const int k = *rc::gen::inRange(0, pool);
    records.push_back(letter("m-" + std::to_string(i), k == 0 ? "" : "k" + std::to_string(k), topic,
                             error_class, *rc::gen::inRange(0, 4), *rc::gen::inRange(0, 8) == 0));
  }
  const std::vector<int> seeded = *rc::gen::container<std::vector<int>>(rc::gen::inRange(1, 40));
  const bool dry_run = *rc::gen::arbitrary<bool>();
  const size_t block = *rc::gen::inRange<size_t>(2, 300);
  auto setup = [&](ScriptedLedger& l) {
    for (int k : seeded) l.seed("k" + std::to_string(k), "m-seed-" + std::to_string(k));
  };
  const GateRun one = decide(records, 1, setup, dry_run, true);
  const GateRun many = decide(records, block, setup, dry_run);
  RC_ASSERT(one.out == many.out);
  RC_ASSERT(one.seen == many.seen);
  RC_ASSERT(one.counts.total == many.counts.total);
  RC_ASSERT(one.counts.ledger_holds == many.counts.ledger_holds);
  RC_ASSERT(one.claims == many.claims);
  RC_ASSERT(one.held == many.held);
  RC_ASSERT(std::count(one.out.begin(), one.out.end(), '\n') == static_cast<long>(count));
  RC_TAG(one.claims > 0);
}

}  // namespace
}  // namespace replaygate::pipeline
