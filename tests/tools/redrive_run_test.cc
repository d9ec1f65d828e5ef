// The broker-neutral redrive loop (redrive/run.h) through a port of letters in memory, with a real
// SQLite ledger and audit log: the order move -> settle, the dry run, --max, a filter, the held
// depths read and the unroutable replay's fallback to the hold place. The live gate suite
// (tests/gate/) is the test of a real broker; this one pins what the loop asks of any port.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "inputs/formats.h"
#include "inputs/mapping.h"
#include "redrive/port.h"
#include "redrive/redrive.h"
#include "redrive/run.h"
#include "runtime/reload.h"
#include "runtime/table.h"
#include "support/cli_runner.h"

namespace replaygate::testing {
namespace {

// A queue of `rabbitmq` records; every move is answered by `answer`.
class ListPort final : public redrive::Port {
 public:
  explicit ListPort(std::vector<std::string> records) {
    for (std::string& r : records) {
      r.append(inputs::LineReader::kPadding, '\0');
      records_.push_back(std::move(r));
    }
  }
  std::function<redrive::MoveAnswer(const redrive::Move&)> answer = [](const redrive::Move&) {
    redrive::MoveAnswer a;
    a.outcome = redrive::MoveAnswer::Outcome::kDone;
    a.result = "confirmed";
    a.detail = "stored";
    return a;
  };
  std::vector<std::string> log;  // "move N ACTION", "settle N"
  // What held_depth() answers, and how often it was asked.
  HeldDepth held;
  int held_reads = 0;
  // Letters (by handle) whose replay marker says a gate replayed them before.
  std::vector<uint64_t> replayed;

  std::string open() override { return ""; }
  bool up() const override { return true; }
  std::string lost_reason(bool) const override { return ""; }
  void close() override {}
  std::string describe() const override { return "list://"; }
  const std::string& queue() const override { return name_; }
  Next next(size_t n, int, int, std::vector<redrive::Letter>* out, std::string*) override {
    out->clear();
    if (next_ == records_.size()) return Next::kTimeout;
    while (out->size() < n && next_ < records_.size()) {
      const std::string& r = records_[next_];
      redrive::Letter& letter = out->emplace_back();
      letter.slot = static_cast<uint32_t>(out->size() - 1);
      letter.handle = ++next_;
      letter.dead.record = std::string_view(r).substr(0, r.size() - inputs::LineReader::kPadding);
      letter.dead.message_id = "m-" + std::to_string(letter.handle);
      if (std::count(replayed.begin(), replayed.end(), letter.handle) > 0) letter.dead.replays = 1;
    }
    return Next::kLetters;
  }
  void wait(int, const std::function<void()>&) override {}
  std::string target(const redrive::Letter&, redrive::Action action) const override {
    return std::string(redrive::action_name(action)) + " place";
  }
  const std::string& hold_name() const override { return hold_; }
  std::optional<std::string> refuse_move(const redrive::Letter&, redrive::Action) const override {
    return std::nullopt;
  }
  std::vector<redrive::MoveAnswer> act(const std::vector<redrive::Move>& block) override {
    std::vector<redrive::MoveAnswer> answers;
    for (const redrive::Move& m : block) {
      log.push_back("move " + std::to_string(m.letter->handle) + " " +
                    std::string(redrive::action_name(m.action)));
      answers.push_back(answer(m));
    }
    return answers;
  }
  std::vector<std::string> settle(const std::vector<const redrive::Letter*>& block) override {
    for (const redrive::Letter* l : block) log.push_back("settle " + std::to_string(l->handle));
    return std::vector<std::string>(block.size());
  }
  void give_back(const redrive::Letter& l) override {
    log.push_back("give back " + std::to_string(l.handle));
  }
  std::optional<uint32_t> depth() override {
    return static_cast<uint32_t>(records_.size() - next_);
  }
  std::optional<TargetDepth> replay_target_depth(const redrive::Letter&) override {
    return std::nullopt;
  }
  std::string pass_over_cost() const override { return ""; }
  HeldDepth held_depth() override {
    ++held_reads;
    return held;
  }

 private:
  std::vector<std::string> records_;
  size_t next_ = 0;
  std::string name_ = "dlq", hold_ = "dlq.hold";
};

class RedriveRun : public CliFixture {
 protected:
  void SetUp() override {
    std::unique_ptr<Table> table = shipped_table();
    ASSERT_TRUE(table);
    const std::string path = kSourceDir + "/examples/rabbitmq.mapping.yaml";
    mapping_ = inputs::parse_mapping(read_file(path), path, *table);
    for (const inputs::InputFormat& f : inputs::input_formats()) {
      if (f.name == "rabbitmq") format_ = &f;
    }
    ASSERT_NE(format_, nullptr);
    actions_ = redrive::ActionMap::defaults(*table);
    shared_ = std::make_unique<SharedTable>(std::move(table));
    // The example dump's letters, one JSON object a line.
    std::ifstream in(kSourceDir + "/examples/rabbitmq-dlq.json");
    for (std::string line; std::getline(in, line) && records_.size() < 12;) {
      if (line.empty() || line[0] != '{') continue;
      if (line.back() == ',') line.pop_back();
      records_.push_back(line);
    }
    ASSERT_EQ(records_.size(), 12u);
  }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }

  // Runs the loop over `port`; the reports land in reports_.
  int run_loop(ListPort& port, redrive::RunOptions options, redrive::RunStats* stats) {
    redrive::Redrive::Options ro;
    ro.actions = actions_;
    ro.dry_run = !options.apply;
    if (options.apply) {
      ro.ledger_url = p("ledger.db");
      ro.audit_path = p("audit.log");
    }
    ro.operator_name = "ops";
    ro.source = "test";
    redrive::Redrive redrive(ro);
    EXPECT_EQ(redrive.open(), "");
    redrive::RunHooks hooks;
    hooks.letter = [this](const redrive::LetterReport& r) { reports_.push_back(r); };
    options.max_rate = 0;
    options.idle_exit_ms = 0;
    const inputs::Mapping* mapping = &mapping_.mapping;
    const inputs::InputFormat* format = format_;
    return redrive::run(
        *shared_, [&](const Table& t) { return format->make_parser(t, mapping); }, redrive, port,
        options, hooks, stats);
  }

  std::vector<std::string> records_;
  inputs::LoadedMapping mapping_;
  const inputs::InputFormat* format_ = nullptr;
  redrive::ActionMap actions_;
  std::unique_ptr<SharedTable> shared_;
  std::vector<redrive::LetterReport> reports_;
};

TEST_F(RedriveRun, EachLetterIsMovedThenSettledInOrder) {
  ListPort port(records_);
  redrive::RunOptions options;
  options.apply = true;
  options.block_max = 1;
  redrive::RunStats stats;
  EXPECT_EQ(run_loop(port, options, &stats), 0) << stats.stop_reason;
  EXPECT_EQ(stats.handled, records_.size());
  EXPECT_GT(stats.republished, 0u);
  EXPECT_GT(stats.parked + stats.held, 0u);
  EXPECT_EQ(stats.republished + stats.parked + stats.held + stats.acked_only, stats.handled);
  ASSERT_EQ(reports_.size(), records_.size());
  // Blocks of one: every letter's move, then its settle, before the next letter is taken.
  std::vector<std::string> want;
  for (const redrive::LetterReport& r : reports_) {
    EXPECT_FALSE(r.dry_run);
    if (r.action != "ack") want.push_back("move " + std::to_string(r.ordinal) + " " + r.action);
    want.push_back("settle " + std::to_string(r.ordinal));
    EXPECT_NE(r.outcome.find(", stored"), std::string::npos) << r.outcome;
  }
  EXPECT_EQ(port.log, want);
  EXPECT_EQ(stats.stop_reason, "no letter for 0 ms: the queue is drained");
}

TEST_F(RedriveRun, ABlockMovesEveryLetterThenSettlesThemAndDecidesAsBlocksOfOne) {
  const auto run_blocks = [&](size_t block_max, std::vector<std::string>* log) {
    std::filesystem::remove(p("ledger.db"));
    std::filesystem::remove(p("audit.log"));
    reports_.clear();
    ListPort port(records_);
    redrive::RunOptions options;
    options.apply = true;
    options.block_max = block_max;
    redrive::RunStats stats;
    EXPECT_EQ(run_loop(port, options, &stats), 0) << stats.stop_reason;
    EXPECT_EQ(stats.handled, records_.size());
    *log = port.log;
    std::vector<std::string> lines;
    for (const redrive::LetterReport& r : reports_) {
      lines.push_back(std::to_string(r.ordinal) + " " + r.verb + " " + r.rule + " " + r.action);
    }
    return lines;
  };
  std::vector<std::string> one_log, block_log;
  const std::vector<std::string> by_one = run_blocks(1, &one_log);
  const std::vector<std::string> by_block = run_blocks(5, &block_log);
  EXPECT_EQ(by_one, by_block);
  ASSERT_EQ(block_log.size(), one_log.size());
  // Blocks of 5 (5, 5, 2): the block's moves, then its settles.
  std::vector<std::string> want;
  for (size_t start = 0; start < reports_.size(); start += 5) {
    const size_t end = std::min(start + 5, reports_.size());
    for (size_t i = start; i < end; ++i) {
      if (reports_[i].action != "ack") {
        want.push_back("move " + std::to_string(reports_[i].ordinal) + " " + reports_[i].action);
      }
    }
    for (size_t i = start; i < end; ++i) {
      want.push_back("settle " + std::to_string(reports_[i].ordinal));
    }
  }
  EXPECT_EQ(block_log, want);
  const audit::VerifyReport verified = audit::verify_bytes(read_file(p("audit.log")));
  EXPECT_TRUE(verified.problems.empty());
  EXPECT_EQ(verified.decisions, records_.size());
  EXPECT_EQ(verified.results, records_.size());
}

TEST_F(RedriveRun, ADryRunMovesAndSettlesNothingAndMaxBoundsIt) {
  ListPort port(records_);
  redrive::RunOptions options;
  options.max = 3;
  redrive::RunStats stats;
  EXPECT_EQ(run_loop(port, options, &stats), 0) << stats.stop_reason;
  EXPECT_TRUE(port.log.empty());
  EXPECT_EQ(stats.handled, 3u);
  EXPECT_EQ(stats.stop_reason, "handled 3 letters (--max)");
  for (const redrive::LetterReport& r : reports_) {
    EXPECT_TRUE(r.dry_run);
    EXPECT_EQ(r.outcome, "dry run: nothing published, claimed or acked");
  }
}

TEST_F(RedriveRun, AFilterPassesLettersOverUnsettled) {
  ListPort port(records_);
  redrive::RunOptions options;
  options.apply = true;
  options.message_id = "m-4";
  redrive::RunStats stats;
  EXPECT_EQ(run_loop(port, options, &stats), 0) << stats.stop_reason;
  EXPECT_EQ(stats.skipped, 3u);
  EXPECT_EQ(stats.handled, 1u);
  ASSERT_EQ(reports_.size(), 1u);
  EXPECT_EQ(reports_[0].message_id, "m-4");
  EXPECT_EQ(stats.stop_reason, "handled message m-4");
  EXPECT_EQ(port.log.back(), "settle 4");
}

// Issue 40 (Watch): the park and hold places' depths are asked for only when the metrics want
// them, with the queue depth (about once a second and at the end, never per letter); unknown
// stays unknown and never stops the run; a letter carrying a replay marker counts as died again
// once it is settled, whatever its verb.
TEST_F(RedriveRun, HeldDepthsAreReadOnlyWhenAskedAndNeverPerLetterAndDiedAgainIsCounted) {
  const auto run_with = [&](bool apply, bool held_depth, ListPort& port, redrive::RunStats* stats) {
    std::filesystem::remove(p("ledger.db"));
    std::filesystem::remove(p("audit.log"));
    redrive::RunOptions options;
    options.apply = apply;
    options.block_max = 1;  // a read per letter would be 12
    options.held_depth = held_depth;
    return run_loop(port, options, stats);
  };
  {
    ListPort port(records_);
    port.held = {5, 2, 61.5};
    redrive::RunStats stats;
    EXPECT_EQ(run_with(true, false, port, &stats), 0) << stats.stop_reason;
    EXPECT_EQ(port.held_reads, 0) << "no --metrics: the broker is not asked";
    EXPECT_FALSE(stats.held_letters);
  }
  {
    ListPort port(records_);
    port.held = {5, 2, 61.5};
    port.replayed = {2, 5};
    redrive::RunStats stats;
    EXPECT_EQ(run_with(true, true, port, &stats), 0) << stats.stop_reason;
    EXPECT_EQ(stats.handled, records_.size());
    EXPECT_GE(port.held_reads, 1) << "at the end at least";
    EXPECT_LT(port.held_reads, 4) << "about once a second, not per letter";
    EXPECT_EQ(stats.held_letters, 5u);
    EXPECT_EQ(stats.parked_letters, 2u);
    EXPECT_EQ(stats.oldest_held_seconds, 61.5);
    EXPECT_EQ(stats.died_again, 2u);
  }
  {
    ListPort port(records_);  // the broker cannot say (or the read failed)
    port.replayed = {2, 5};
    redrive::RunStats stats;
    EXPECT_EQ(run_with(false, true, port, &stats), 0) << stats.stop_reason;
    EXPECT_EQ(stats.handled, records_.size()) << "a failed read never stops the run";
    EXPECT_GE(port.held_reads, 1);
    EXPECT_FALSE(stats.held_letters);
    EXPECT_FALSE(stats.oldest_held_seconds);
    EXPECT_EQ(stats.died_again, 0u) << "a dry run settles nothing, so counts no action";
  }
}

TEST_F(RedriveRun, AnUnroutableReplayIsMovedToTheHoldPlaceInstead) {
  ListPort port(records_);
  port.answer = [](const redrive::Move& m) {
    redrive::MoveAnswer a;
    if (m.action == redrive::Action::kRepublish) {
      a.outcome = redrive::MoveAnswer::Outcome::kNotDone;
      a.unroutable = true;
      a.result = "returned";
      a.detail = "312 NO_ROUTE";
    } else {
      a.outcome = redrive::MoveAnswer::Outcome::kDone;
      a.result = "confirmed";
      a.detail = "stored";
    }
    return a;
  };
  redrive::RunOptions options;
  options.apply = true;
  redrive::RunStats stats;
  EXPECT_EQ(run_loop(port, options, &stats), 0) << stats.stop_reason;
  EXPECT_EQ(stats.republished, 0u);
  size_t unroutable = 0;
  for (const redrive::LetterReport& r : reports_) {
    if (r.rule != "gate:unroutable") continue;
    ++unroutable;
    EXPECT_EQ(r.action, "hold");
    EXPECT_EQ(r.target, "hold place");
    EXPECT_EQ(r.outcome.rfind("the replay to republish place was returned (312 NO_ROUTE): no "
                              "queue took it; moved to hold place, stored",
                              0),
              0u)
        << r.outcome;
  }
  EXPECT_GT(unroutable, 0u);
  EXPECT_EQ(stats.handled, records_.size());
}

}  // namespace
}  // namespace replaygate::testing
