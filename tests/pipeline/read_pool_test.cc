// pipeline::ReadPool (pipeline/read_pool.h): stage 1 on N threads gives the judge the batches one
// gate would read, in input order, so the lines, the claims (per block), the stages' verdicts and
// the commit points are the same bytes as one gate reading and judging alone, for any thread count
// and block size; a judge that stops stops the run; a reader's exception reaches the caller in
// order; the blocks in flight stay bounded. Small and linked against the gate library only, so that
// tools/test.sh runs it under ThreadSanitizer too.
#include "pipeline/read_pool.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "inputs/letters.h"
#include "pipeline/gate.h"
#include "runtime/reload.h"
#include "tests/support/paths.h"
#include "tests/support/shipped_letter.h"

namespace replaygate::pipeline {
namespace {

using inputs::LineReader;
using replaygate::testing::shipped_letter;

const std::string kTable = std::string(RG_SOURCE_DIR) + "/tests/data/tables/replay_gate.rgt";

// A record of a test dump: a line, or a record over the size cap (kTooLarge).
struct Record {
  std::string line;
  bool too_large = false;
};

// Everything a run showed the outside: the lines, each stage verdict, each claim request (per
// block) and where the stages were committed.
struct Seen {
  std::string out;
  std::vector<std::string> verdicts, claims, commits;
  GateCounts counts;
  bool stopped = false;
};

// What the audit stage sees of a verdict: everything a decision entry is made of.
class RecordingStage : public Stage {
 public:
  explicit RecordingStage(Seen* seen) : seen_(seen) {}
  void add(const Table& table, const Verdict& v) override {
    std::string text = std::to_string(v.record->line_number) + " " +
                       std::string(table.verb_name(v.verb)) + " " + std::string(v.rule(table)) +
                       " key=" + std::string(v.key) + " gen=" + std::to_string(v.claim_generation) +
                       (v.invalid ? " invalid" : "");
    if (v.meta != nullptr && v.meta->has_message_id)
      text += " id=" + std::string(v.meta->message_id);
    if (v.meta != nullptr && v.meta->has_body_hash)
      text += " body=" + std::string(v.meta->body_hash);
    seen_->verdicts.push_back(std::move(text));
    ++added_;
  }
  bool commit() override {
    seen_->commits.push_back(std::to_string(added_));
    return true;
  }
  const std::string& error() const override { return error_; }

 private:
  Seen* seen_;
  uint64_t added_ = 0;
  std::string error_;
};

// An in-memory ledger: the first claim of a key wins, later ones are held; every request is
// logged with its block.
class RecordingClaimer : public Claimer {
 public:
  explicit RecordingClaimer(Seen* seen) : seen_(seen) {}
  void claim_block(const Table&, const std::vector<Request>& requests,
                   std::vector<Answer>& answers) override {
    ++blocks_;
    answers.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      const Request& r = requests[i];
      seen_->claims.push_back(std::to_string(blocks_) + ":" +
                              std::to_string(r.record->line_number) + ":" +
                              (r.keyed ? std::string(r.key) : "<none>") + ":" +
                              (r.meta.has_message_id ? std::string(r.meta.message_id) : "-"));
      Answer& a = answers[i];
      a = Answer{};
      if (!r.keyed) {
        a.rule = "ledger:no_key";
        a.reason = "no key";
      } else if (!claimed_.insert(std::string(r.key)).second) {
        a.rule = "ledger:already_replayed";
        a.reason = "claimed in block " + std::to_string(blocks_);
      } else {
        a.granted = a.claimed = true;
        a.generation = static_cast<int64_t>(claimed_.size());
      }
    }
  }

 private:
  Seen* seen_;
  uint64_t blocks_ = 0;
  std::set<std::string> claimed_;
};

struct Pipeline {
  bool stage = false;    // an audit-like stage
  bool claimer = false;  // a ledger-like claimer (stage 2 per block)
  size_t ledger_block = 16;
  int64_t max_replays = -1;
  bool show_inputs = false;
  bool source_error = false;  // the source ends with kError instead of kEnd
  size_t fail_at = 0;         // > 0: the judge stops at its fail_at-th flush (a write error)
  size_t flush_bytes = 2048;  // the judge "writes" whenever this much output is buffered
};

// `line` followed by the padding a LineReader gives, kept in `storage`; the view has the line's
// size.
std::string_view padded_line(const std::string& line, std::string* storage) {
  *storage = line + std::string(LineReader::kPadding, ' ');
  return std::string_view(storage->data(), line.size());
}

// What a pool test sets up around its pool: the shipped table shared (`max_readers` reader slots)
// and loaded once more for the parsers, a replay guard and the judging gate.
struct Judging {
  explicit Judging(uint32_t max_readers = SharedTable::kDefaultMaxReaders)
      : guard(-1, 1000000, 1 << 20) {
    LoadStatus status;
    shared = SharedTable::open(kTable, &status, max_readers);
    EXPECT_NE(shared, nullptr) << status.message;
    table = Table::load_file(kTable, &status);
    EXPECT_NE(table, nullptr) << status.message;
    if (shared == nullptr || table == nullptr) return;
    parser = std::make_unique<inputs::LetterParser>(*table);
    gate = Gate::open(*shared, *parser, guard, Gate::Options{});
  }
  // A pool as `po` says, its readers given `parsers` parsers of type P (po.threads by default).
  template <typename P = inputs::LetterParser>
  std::unique_ptr<ReadPool> pool(const ReadPool::Options& po, std::string* why,
                                 std::optional<size_t> parsers = std::nullopt) {
    std::vector<std::unique_ptr<inputs::RecordParser>> readers;
    for (size_t i = 0; i < parsers.value_or(po.threads); ++i) {
      readers.push_back(std::make_unique<P>(*table));
    }
    return ReadPool::open(*shared, *gate, guard, std::move(readers), po, why);
  }

  std::unique_ptr<SharedTable> shared;
  std::unique_ptr<Table> table;
  std::unique_ptr<inputs::LetterParser> parser;
  ReplayGuard guard;
  std::unique_ptr<Gate> gate;  // null when the table did not load
};

// The gate pipeline of decide over `records`: one gate reading and judging (threads == 0), or a
// ReadPool of `threads` readers with blocks of `block_records` / `block_bytes`.
Seen run(const std::vector<Record>& records, const Pipeline& pipeline, size_t threads,
         size_t block_records = 1024, size_t block_bytes = 0, bool source_thread = false) {
  Seen seen;
  LoadStatus status;
  std::unique_ptr<SharedTable> shared = SharedTable::open(kTable, &status);
  EXPECT_NE(shared, nullptr) << status.message;
  if (shared == nullptr) return seen;
  std::unique_ptr<Table> parser_table = Table::load_file(kTable, &status);
  const Table& table = *parser_table;  // same bytes: a parser only resolves field names
  inputs::LetterParser parser(table);
  ReplayGuard guard(pipeline.max_replays, 1000000, 1 << 20);
  RecordingClaimer claimer(&seen);
  RecordingStage stage(&seen);
  const std::set<std::string> redacted = {"idempotency_key"};
  Gate::Options options;
  options.dedupe_field = table.field_index("idempotency_key");
  options.show_inputs_redacted = pipeline.show_inputs ? &redacted : nullptr;
  if (pipeline.claimer) {
    options.claimer = &claimer;
    options.block_records = pipeline.ledger_block;
  }
  options.keep_records = threads > 0 && (pipeline.stage || pipeline.claimer);
  std::unique_ptr<Gate> gate = Gate::open(*shared, parser, guard, options);
  if (pipeline.stage) gate->add_stage(&stage);

  // decide's stage 2: per block with a claimer (then "written"), else per record, "written"
  // whenever flush_bytes are buffered; a write that fails stops the run.
  ByteBuffer out;
  size_t flushes = 0, written = 0;
  auto flush = [&] {
    const Stage* failed = nullptr;
    EXPECT_TRUE(gate->commit(&failed));
    if (pipeline.fail_at > 0 && ++flushes == pipeline.fail_at) return false;
    seen.out.append(out.data(), out.size());
    written += out.size();
    out.clear();
    return true;
  };
  auto judge = [&](Batch& batch) {
    if (gate->claims_blocks()) {
      gate->judge_block(batch, out);
      return flush();
    }
    gate->prefetch(batch, 0, 4);
    for (size_t i = 0; i < batch.count; ++i) {
      gate->prefetch(batch, i + 4, i + 5);
      gate->judge(batch, i, out);
      if (out.size() >= pipeline.flush_bytes && !flush()) return false;
    }
    return true;
  };
  size_t next = 0;
  std::string padded;  // the current line, followed by the padding a LineReader gives
  auto source = [&](std::string_view* line, uint64_t* number) {
    if (next == records.size()) {
      return pipeline.source_error ? LineReader::Status::kError : LineReader::Status::kEnd;
    }
    const Record& r = records[next++];
    *number = next;
    *line = padded_line(r.line, &padded);
    return r.too_large ? LineReader::Status::kTooLarge : LineReader::Status::kLine;
  };
  constexpr size_t kMaxLine = 4096;

  bool stopped = false;
  if (threads == 0) {
    // One gate, as decide's loop without --threads (one batch at a time is enough here).
    Batch batch(gate->batch_size());
    std::string_view line;
    uint64_t number = 0;
    while (true) {
      const LineReader::Status s = source(&line, &number);
      if (s == LineReader::Status::kEnd || s == LineReader::Status::kError) break;
      gate->read(batch, number, s, line, kMaxLine);
      if (batch.count == gate->batch_size()) {
        const bool ok = judge(batch);
        batch.clear();
        if (!ok) {
          stopped = true;
          break;
        }
      }
    }
    if (!stopped && batch.count > 0) stopped = !judge(batch);
  } else {
    std::vector<std::unique_ptr<inputs::RecordParser>> parsers;
    for (size_t i = 0; i < threads; ++i) {
      parsers.push_back(std::make_unique<inputs::LetterParser>(table));
    }
    std::string why;
    ReadPool::Options po;
    po.threads = threads;
    po.block_records = block_records;
    po.block_bytes = block_bytes;
    po.source_thread = source_thread;
    std::unique_ptr<ReadPool> pool =
        ReadPool::open(*shared, *gate, guard, std::move(parsers), po, &why);
    EXPECT_NE(pool, nullptr) << why;
    if (pool == nullptr) return seen;
    const LineReader::Status end = pool->run(source, kMaxLine, judge);
    stopped = end == LineReader::Status::kLine;
    if (!stopped) {
      EXPECT_EQ(end, pipeline.source_error ? LineReader::Status::kError : LineReader::Status::kEnd);
    }
  }
  if (!stopped) flush();
  seen.stopped = stopped;
  seen.counts = gate->counts();
  return seen;
}

// A mixed dump: replays (payment.capture/timeout), parks, holds, duplicate keys far apart,
// unknown pairs, invalid inputs, unreadable lines, blank lines, a record over the cap, a letter
// without a key and one with a body hash.
std::vector<Record> mixed_dump(size_t n) {
  std::vector<Record> records;
  for (size_t i = 0; i < n; ++i) {
    const std::string key = "k" + std::to_string(i % 97);  // each key again 97 records later
    switch (i % 13) {
      case 0:
        records.push_back({"{not json", false});
        break;
      case 1:
        records.push_back(
            {shipped_letter(i, key, "payment.capture", "insufficient_funds", 1, false)});
        break;
      case 2:
        records.push_back(
            {shipped_letter(i, key, "payment.capture", "timeout", -1, false)});  // invalid
        break;
      case 3:
        records.push_back({"", false});
        break;
      case 4:
        records.push_back({"", true});
        break;
      case 5:
        records.push_back({shipped_letter(i, key, "no.such", "topic", 1, false)});
        break;
      case 6:
        records.push_back({R"({"topic":"payment.capture","error_class":"timeout","attempts":1,)"
                           R"("already_committed":false})"});
        break;
      case 7:
        records.push_back({R"({"message_id":"m-)" + std::to_string(i) +
                           R"(","body_hash":"sha256:ab","topic":"payment.capture",)"
                           R"("error_class":"timeout","attempts":1,"idempotency_key":")" +
                           key + R"(","already_committed":false})"});
        break;
      default:
        records.push_back({shipped_letter(i, key, "payment.capture", "timeout", 1, i % 11 == 0)});
        break;
    }
  }
  return records;
}

TEST(ReadPool, SameLinesVerdictsAndClaimsAsOneGate) {
  const std::vector<Record> records = mixed_dump(1500);
  for (const bool stage : {false, true}) {
    for (const bool claimer : {false, true}) {
      Pipeline pipeline;
      pipeline.stage = stage;
      pipeline.claimer = claimer;
      pipeline.ledger_block = 50;
      const Seen one = run(records, pipeline, 0);
      ASSERT_FALSE(one.stopped);
      // The dump has every outcome: replays, holds of every kind, invalid records.
      ASSERT_GT(one.counts.maybe_duplicate_holds, 0u);
      ASSERT_GT(one.counts.invalid, 0u);
      if (stage) {
        ASSERT_EQ(one.verdicts.size(), records.size());
      }
      if (claimer) {
        ASSERT_FALSE(one.claims.empty());
      }
      for (const size_t threads : {1, 2, 3, 8}) {
        for (const size_t block : {1, 7, 1024}) {
          const Seen many =
              run(records, pipeline, threads, block, block == 7 ? 300 : 0, threads % 2 == 0);
          EXPECT_EQ(many.out, one.out) << threads << " threads, blocks of " << block;
          EXPECT_EQ(many.verdicts, one.verdicts);
          EXPECT_EQ(many.claims, one.claims);
          EXPECT_EQ(many.commits, one.commits);
          EXPECT_EQ(many.counts.total, one.counts.total);
          EXPECT_EQ(many.counts.per_verb, one.counts.per_verb);
        }
      }
    }
  }
}

TEST(ReadPool, TheAuditStageGetsEachRecordsOwnKeyAndMetadata) {
  // The key of a non-create verb too, as the gate's own Input gives it without the pool.
  const std::vector<Record> records = mixed_dump(200);
  Pipeline pipeline;
  pipeline.stage = true;
  const Seen many = run(records, pipeline, 3, 5);
  ASSERT_EQ(many.verdicts.size(), records.size());
  EXPECT_EQ(many.verdicts[1],
            "2 never known_failures:payment.capture/insufficient_funds key=k1 gen=0 id=m-1");
  EXPECT_EQ(
      many.verdicts[7],
      "8 replay_once known_failures:payment.capture/timeout key=k7 gen=0 id=m-7 body=sha256:ab");
  EXPECT_EQ(many.verdicts, run(records, pipeline, 0).verdicts);
}

TEST(ReadPool, AStoppedJudgeStopsWhereOneGateStops) {
  const std::vector<Record> records = mixed_dump(3000);
  for (const bool claimer : {false, true}) {
    Pipeline pipeline;
    pipeline.stage = true;
    pipeline.claimer = claimer;
    pipeline.ledger_block = 64;
    pipeline.fail_at = 5;
    const Seen one = run(records, pipeline, 0);
    ASSERT_TRUE(one.stopped);
    for (const bool source_thread : {false, true}) {
      const Seen many = run(records, pipeline, 4, 33, 0, source_thread);
      EXPECT_TRUE(many.stopped);
      EXPECT_EQ(many.out, one.out);
      EXPECT_EQ(many.verdicts, one.verdicts);  // nothing judged past the stop
      EXPECT_EQ(many.claims, one.claims);
      EXPECT_EQ(many.counts.total, one.counts.total);
    }
  }
}

TEST(ReadPool, ASourceErrorComesAfterEveryRecordBeforeItWasJudged) {
  const std::vector<Record> records = mixed_dump(500);
  Pipeline pipeline;
  pipeline.source_error = true;
  const Seen one = run(records, pipeline, 0);
  for (const bool source_thread : {false, true}) {
    const Seen many = run(records, pipeline, 2, 64, 0, source_thread);
    EXPECT_EQ(many.out, one.out);
    EXPECT_EQ(many.counts.total, records.size());
  }
}

// A parser that throws on a line that says "boom" (std::bad_alloc in real life).
class ThrowingParser : public inputs::LetterParser {
 public:
  using LetterParser::LetterParser;
  bool parse(std::string_view line, Input& input, inputs::RecordMeta* meta,
             std::string* problem) override {
    if (line.find("boom") != std::string_view::npos) throw std::runtime_error("boom");
    return LetterParser::parse(line, input, meta, problem);
  }
};

// Runs 200 "{}" records through 3 readers in blocks of 10, record 126 throwing in a reader
// (or, `in_source`, in the source); expects the exception out of run() and returns the records
// judged before it.
size_t judged_before_exception(bool source_thread, bool in_source) {
  Judging judging;
  if (judging.gate == nullptr) return 0;
  Gate* gate = judging.gate.get();
  ReadPool::Options po;
  po.threads = 3;
  po.block_records = 10;
  po.source_thread = source_thread;
  std::string why;
  std::unique_ptr<ReadPool> pool = judging.pool<ThrowingParser>(po, &why);
  EXPECT_NE(pool, nullptr) << why;
  if (pool == nullptr) return 0;
  std::vector<std::string> lines;
  for (int i = 0; i < 200; ++i) lines.push_back(i == 125 ? "boom" : "{}");
  size_t next = 0;
  std::string padded;
  auto source = [&](std::string_view* line, uint64_t* number) {
    if (next == lines.size()) return LineReader::Status::kEnd;
    if (in_source && lines[next] == "boom") throw std::runtime_error("boom");
    *line = padded_line(lines[next], &padded);
    *number = ++next;
    return LineReader::Status::kLine;
  };
  ByteBuffer out;
  size_t judged = 0;
  auto judge = [&](Batch& batch) {
    for (size_t i = 0; i < batch.count; ++i) gate->judge(batch, i, out);
    judged += batch.count;
    return true;
  };
  // The twelve blocks before the one that threw, and none after it.
  EXPECT_THROW(pool->run(source, 4096, judge), std::runtime_error);
  return judged;
}

TEST(ReadPool, AReadersExceptionReachesTheCallerAfterTheBlocksBeforeIt) {
  for (const bool source_thread : {false, true}) {
    SCOPED_TRACE(source_thread ? "source thread" : "source inline");
    EXPECT_EQ(judged_before_exception(source_thread, false), 120u);
    // One from the source comes at once, whatever was read before it.
    EXPECT_LE(judged_before_exception(source_thread, true), 120u);
  }
}

// The source never gets more than max_blocks() blocks ahead of the judge.
size_t most_ahead_of_the_judge(bool source_thread) {
  const std::vector<Record> records = mixed_dump(5000);
  Judging judging;
  if (judging.gate == nullptr) return 0;
  Gate* gate = judging.gate.get();
  ReadPool::Options po;
  po.threads = 2;
  po.block_records = 16;
  po.source_thread = source_thread;
  std::string why;
  std::unique_ptr<ReadPool> pool = judging.pool(po, &why);
  EXPECT_NE(pool, nullptr) << why;
  if (pool == nullptr) return 0;
  EXPECT_EQ(pool->max_blocks(), 6u);  // threads + 4
  size_t read = 0, most_ahead = 0;
  std::atomic<size_t> judged{0};  // the source may run on another thread
  std::string padded;
  auto source = [&](std::string_view* line, uint64_t* number) {
    if (read == records.size()) return LineReader::Status::kEnd;
    most_ahead = std::max(most_ahead, read - judged);
    const Record& r = records[read];
    *line = padded_line(r.line, &padded);
    *number = ++read;
    return r.too_large ? LineReader::Status::kTooLarge : LineReader::Status::kLine;
  };
  ByteBuffer out;
  auto judge = [&](Batch& batch) {
    for (size_t i = 0; i < batch.count; ++i) gate->judge(batch, i, out);
    judged += batch.count;
    out.clear();
    return true;
  };
  EXPECT_EQ(pool->run(source, 4096, judge), LineReader::Status::kEnd);
  EXPECT_EQ(judged, records.size());
  return most_ahead;
}

TEST(ReadPool, BlocksInFlightStayBounded) {
  for (const bool source_thread : {false, true}) {
    const size_t most_ahead = most_ahead_of_the_judge(source_thread);
    EXPECT_LE(most_ahead, 6u * 16) << source_thread;  // max_blocks() blocks of 16 records
    EXPECT_GT(most_ahead, 16u) << source_thread;      // it did read ahead
  }
}

TEST(ReadPool, RefusesWhatCannotWork) {
  Judging judging(3);
  ASSERT_NE(judging.gate, nullptr);
  Seen seen;
  RecordingStage stage(&seen);
  auto open = [&](size_t threads, size_t parser_count, std::string* why) {
    ReadPool::Options po;
    po.threads = threads;
    return judging.pool(po, why, parser_count);
  };
  std::string why;
  EXPECT_EQ(open(0, 0, &why), nullptr);
  EXPECT_EQ(why, "threads must be 1 to 64, not 0");
  EXPECT_EQ(open(65, 65, &why), nullptr);
  EXPECT_EQ(why, "threads must be 1 to 64, not 65");
  EXPECT_EQ(open(2, 1, &why), nullptr);
  EXPECT_EQ(why, "one parser per thread: 1 parsers for 2 threads");
  // Three reader slots: the judge holds one, so two readers fit and a third does not.
  EXPECT_NE(open(2, 2, &why), nullptr) << why;
  EXPECT_EQ(open(3, 3, &why), nullptr);
  EXPECT_EQ(why,
            "the shared table has no free reader slot for reading thread 3 (it needs threads + 1)");
  judging.gate->add_stage(&stage);
  EXPECT_EQ(open(2, 2, &why), nullptr);
  EXPECT_EQ(why,
            "the judging gate has stages but no keep_records: its stage 2 would take a record's "
            "metadata from its own parser");
}

// Random dumps (valid letters, invalid inputs, unreadable lines, oversized records, keys
// repeated near and far), random pipelines (stages, claims and their block size, a replay budget,
// --show-inputs, a stop, a source error) and random pools: the same bytes as one gate.
RC_GTEST_PROP(ReadPool, AnyPoolGivesTheBytesOfOneGate, ()) {
  const size_t n = *rc::gen::inRange<size_t>(0, 400);
  const size_t key_space = *rc::gen::inRange<size_t>(1, 60);
  std::vector<Record> records;
  for (size_t i = 0; i < n; ++i) {
    const int kind = *rc::gen::inRange(0, 100);
    const std::string key = "k" + std::to_string(*rc::gen::inRange<size_t>(0, key_space));
    if (kind < 8) {
      records.push_back({*rc::gen::element<std::string>("", "{", "[]", "{\"topic\":1}",
                                                        "{\"topic\":\"a\",\"topic\":\"b\"}"),
                         false});
    } else if (kind < 11) {
      records.push_back({"", true});
    } else {
      static const std::pair<const char*, const char*> kPairs[] = {
          {"payment.capture", "timeout"},        {"payment.capture", "insufficient_funds"},
          {"inventory.reserve", "lock_timeout"}, {"webhook.partner", "http_503"},
          {"mail.receipt", "smtp_421"},          {"no.such", "pair"}};
      const auto& [topic, error] = kPairs[*rc::gen::inRange(0, 6)];
      const int attempts = *rc::gen::element(-1, 0, 1, 2, 3, 100);
      records.push_back(
          {shipped_letter(i, key, topic, error, attempts, *rc::gen::inRange(0, 10) == 0)});
    }
  }
  Pipeline pipeline;
  pipeline.stage = *rc::gen::arbitrary<bool>();
  pipeline.claimer = *rc::gen::arbitrary<bool>();
  pipeline.ledger_block = *rc::gen::inRange<size_t>(1, 40);
  pipeline.max_replays = *rc::gen::element<int64_t>(-1, -1, 0, 3, 20);
  pipeline.show_inputs = *rc::gen::arbitrary<bool>();
  pipeline.source_error = *rc::gen::inRange(0, 5) == 0;
  pipeline.fail_at = *rc::gen::element<size_t>(0, 0, 0, 1, 2, 4);
  pipeline.flush_bytes = *rc::gen::inRange<size_t>(200, 5000);
  const size_t threads = *rc::gen::inRange<size_t>(1, 9);
  const size_t block_records = *rc::gen::inRange<size_t>(1, 100);
  const size_t block_bytes = *rc::gen::element<size_t>(0, 100, 1000, 1 << 19);
  const bool source_thread = *rc::gen::arbitrary<bool>();
  const Seen one = run(records, pipeline, 0);
  const Seen many = run(records, pipeline, threads, block_records, block_bytes, source_thread);
  RC_ASSERT(many.out == one.out);
  RC_ASSERT(many.verdicts == one.verdicts);
  RC_ASSERT(many.claims == one.claims);
  RC_ASSERT(many.commits == one.commits);
  RC_ASSERT(many.stopped == one.stopped);
  RC_ASSERT(many.counts.total == one.counts.total);
}

}  // namespace
}  // namespace replaygate::pipeline
