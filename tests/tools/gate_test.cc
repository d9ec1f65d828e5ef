// The gate (pipeline/gate.h) through its interface, as a consumer other than decide would use it:
// records in one at a time, verdicts out to a stage between decide and print, a reload picked up.
#include "pipeline/gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "inputs/letters.h"
#include "runtime/reload.h"
#include "tests/support/paths.h"

namespace replaygate::pipeline {
namespace {

const std::string kTable = std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt";

// Keeps what it is given; commit() succeeds unless told to fail (a ledger that cannot write).
class RecordingStage : public Stage {
 public:
  void add(const Table& table, const Verdict& v) override {
    added.push_back(std::string(table.verb_name(v.verb)) + " " + std::string(v.rule(table)));
  }
  bool commit() override {
    if (fail) {
      error_ = "the ledger is full";
      return false;
    }
    committed += added.size() - committed_upto;
    committed_upto = added.size();
    return true;
  }
  const std::string& error() const override { return error_; }
  std::vector<std::string> added;
  size_t committed = 0, committed_upto = 0;
  bool fail = false;

 private:
  std::string error_;
};

// One record as a LineReader hands it out: with simdjson's padding after it.
struct PaddedLine {
  explicit PaddedLine(std::string text)
      : bytes(text + std::string(inputs::LineReader::kPadding, ' ')), size(text.size()) {}
  std::string_view view() const { return std::string_view(bytes.data(), size); }
  std::string bytes;
  size_t size;
};

std::unique_ptr<SharedTable> open_shared() {
  LoadStatus status;
  std::unique_ptr<SharedTable> shared = SharedTable::open(kTable, &status);
  EXPECT_NE(shared, nullptr) << status.message;
  return shared;
}

std::string letter(const std::string& id, const std::string& key) {
  return R"({"message_id":")" + id +
         R"(","topic":"payment.capture","error_class":"timeout","attempts":1,)"
         R"("idempotency_key":")" +
         key + R"(","already_committed":false})";
}

TEST(Gate, OneRecordAtATimeThroughAStage) {
  std::unique_ptr<SharedTable> shared = open_shared();
  ASSERT_NE(shared, nullptr);
  SharedTable::Reader reader(*shared);
  const Table& table = reader.acquire().table();
  inputs::LetterParser parser(table);
  ReplayGuard guard(-1, 1000, 1 << 20);
  Gate::Options options;
  options.dedupe_field = table.field_index("idempotency_key");
  std::unique_ptr<Gate> gate = Gate::open(*shared, parser, guard, options);
  ASSERT_NE(gate, nullptr);
  RecordingStage stage;
  gate->add_stage(&stage);
  EXPECT_EQ(gate->batch_size(), 1u);

  ByteBuffer out;
  Batch batch(gate->batch_size());
  const std::vector<std::string> records = {letter("m-1", "k1"), letter("m-2", "k1"), "{"};
  for (size_t n = 0; n < records.size(); ++n) {
    const PaddedLine line(records[n]);
    gate->read(batch, n + 1, inputs::LineReader::Status::kLine, line.view(),
               inputs::kMaxRecordBytes);
    gate->judge(batch, 0, out);
    batch.count = 0;
    batch.scratch.clear();
    const Stage* failed = nullptr;
    ASSERT_TRUE(gate->commit(&failed));
  }
  EXPECT_EQ(stage.committed, 3u);
  ASSERT_EQ(stage.added.size(), 3u);
  EXPECT_EQ(stage.added[0], "replay_once known_failures:payment.capture/timeout");
  EXPECT_EQ(stage.added[1], "hold dump:maybe_duplicate");  // the key was replayed already
  EXPECT_EQ(stage.added[2], "hold default");               // not JSON: fails closed
  const std::string lines(out.data(), out.size());
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 3);
  EXPECT_NE(lines.find(R"({"n":1,"message_id":"m-1","verb":"replay_once")"), std::string::npos);
  EXPECT_NE(lines.find(R"("rule":"dump:maybe_duplicate")"), std::string::npos);
  EXPECT_EQ(gate->counts().total, 3u);
  EXPECT_EQ(gate->counts().maybe_duplicate_holds, 1u);
  EXPECT_EQ(gate->counts().invalid, 1u);
}

TEST(Gate, AFailedCommitNamesItsStage) {
  std::unique_ptr<SharedTable> shared = open_shared();
  ASSERT_NE(shared, nullptr);
  SharedTable::Reader reader(*shared);
  inputs::LetterParser parser(reader.acquire().table());
  ReplayGuard guard(-1, 1000, 1 << 20);
  std::unique_ptr<Gate> gate = Gate::open(*shared, parser, guard, Gate::Options{});
  ASSERT_NE(gate, nullptr);
  RecordingStage first, second;
  second.fail = true;
  gate->add_stage(&first);
  gate->add_stage(&second);
  ByteBuffer out;
  Batch batch(1);
  const PaddedLine line(letter("m-1", "k1"));
  gate->read(batch, 1, inputs::LineReader::Status::kLine, line.view(), inputs::kMaxRecordBytes);
  gate->judge(batch, 0, out);
  const Stage* failed = nullptr;
  EXPECT_FALSE(gate->commit(&failed));
  EXPECT_EQ(failed, &second);
  EXPECT_EQ(failed->error(), "the ledger is full");
}

TEST(Gate, RepinPicksUpAReload) {
  std::unique_ptr<SharedTable> shared = open_shared();
  ASSERT_NE(shared, nullptr);
  SharedTable::Reader reader(*shared);
  inputs::LetterParser parser(reader.acquire().table());
  ReplayGuard guard(-1, 1000, 1 << 20);
  std::unique_ptr<Gate> gate = Gate::open(*shared, parser, guard, Gate::Options{});
  ASSERT_NE(gate, nullptr);
  const Table* before = &gate->table();
  LoadStatus status;
  ASSERT_TRUE(shared->reload(kTable, &status)) << status.message;
  EXPECT_EQ(&gate->table(), before);  // pinned until repin()
  ASSERT_TRUE(gate->repin());
  EXPECT_NE(&gate->table(), before);
  ByteBuffer out;
  Batch batch(1);
  const PaddedLine line(letter("m-1", "k1"));
  gate->read(batch, 1, inputs::LineReader::Status::kLine, line.view(), inputs::kMaxRecordBytes);
  gate->judge(batch, 0, out);
  EXPECT_NE(std::string(out.data(), out.size()).find(R"("verb":"replay_once")"), std::string::npos);
}

}  // namespace
}  // namespace replaygate::pipeline
