// Stage 1 on worker threads: ReadPool reads and decides blocks of records (Gate::read) on N
// threads and hands the blocks back to the calling thread in input order, where stage 2
// (Gate::judge / judge_block: the replay guard, the ledger's claims, the stages, the lines) stays
// on that one thread. `decide --threads N` runs through it (docs/cli.md, "Threads").
//
//   calling thread                      worker threads                  calling thread
//   source ─> block (lines copied) ─> queue ─> Gate::read (each its own) ─> in input order:
//             (up to block_records                gate, parser, Input,        judge(batch)
//              or block_bytes)                    pinned table, texts)
//
// The source is read on the calling thread, between judgements, or with Options::source_thread on
// a thread of the pool's, so that reading overlaps stage 2 too. Only for a source whose reads
// never block for long (a regular file): a run that stops waits for that thread's current read.
//
// Entry point: run(). Everything a worker writes is its own (its gate and the block it holds);
// the judging gate's guard is shared only for hash_of(), which reads what never changes (gate.h).
// So the judge sees every record in input order with the batch a single gate would have read,
// and the lines, claims and audit entries are the bytes of a run without the pool, block sizes
// and thread count notwithstanding. A worker's exception (std::bad_alloc) is rethrown on the
// calling thread when run() reaches its block, after every block before it was judged.
//
// Memory: a bounded number of blocks in flight (queued, being read, or waiting for the judge):
// threads + 4 blocks of at most block_records records and about block_bytes of lines, or with
// block_bytes 0 (a Claimer's blocks, which must be exactly its block) threads + 2 blocks. The
// caller judges the oldest block before it reads past that, so memory does not grow with the
// input.
//
// Threads: run() is called from one thread (the judging gate's), which `judge` runs on; `source`
// runs on it too, or on the source thread (joined before run() returns). The pool owns its
// workers and joins them when it is destroyed (blocks not judged then are dropped).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "inputs/records.h"
#include "pipeline/gate.h"
#include "runtime/reload.h"

namespace replaygate::pipeline {

class ReadPool {
 public:
  static constexpr size_t kMaxThreads = 64;  // decide --threads's cap (a hard limit here too)

  struct Options {
    size_t threads = 2;  // worker threads, 1 to kMaxThreads
    // Records per block (at least 1), and the bytes of lines that end a block sooner. Large
    // enough that the hand-offs (a futex wake and often a context switch each, ~3 a block) stay
    // rare: 4,096 records of the benchmark dump (~700 KB) took the context switches of a
    // 1,000,000-record run from ~2,200 (1,024 records) to 300-650 (docs/benchmarks.md).
    size_t block_records = 4096;
    size_t block_bytes = 1 << 20;
    bool source_thread = false;  // read the source on a thread of the pool's (see above)
  };
  // The options for `threads` workers reading file descriptor `fd`: a regular file is read on a
  // thread of its own when a core is left for it (the workers, the judging thread and the
  // reading: more threads than cores would only switch between them, each switch tens of
  // microseconds on a VM), so that reading overlaps stage 2 too. A pipe or terminal is always
  // read on the judging thread, between blocks: a read that waits for a writer must never keep a
  // run that stopped (a write error) from ending.
  static Options for_input(size_t threads, int fd);

  // The next record, as LineReader::next gives it (kLine with *line valid until the next call, or
  // kTooLarge, kEnd, kError) and its 1-based number in the input.
  using Source =
      std::function<inputs::LineReader::Status(std::string_view* line, uint64_t* line_number)>;
  // Stage 2 for one block, on the calling thread, in input order; false stops the run.
  using Judge = std::function<bool(Batch& batch)>;

  // A pool that reads for `judge`, the judging gate: one reading gate per worker on `shared`
  // (which needs a free reader slot for each: construct it with threads + 1 readers), with
  // `parsers[i]` (owned; one per thread, each for shared's table) and `judge`'s options, its
  // guard shared for hash_of(). With a Claimer a block is one of judge's blocks
  // (block_records = judge.batch_size(), never cut by bytes). Null with *error set when the
  // options are out of range, a reader slot is missing, shared's table is not judge's, or judge
  // has stages without keep_records (its stage 2 would take a record's metadata from its own
  // parser, which never saw the record).
  static std::unique_ptr<ReadPool> open(SharedTable& shared, const Gate& judge, ReplayGuard& guard,
                                        std::vector<std::unique_ptr<inputs::RecordParser>> parsers,
                                        Options options, std::string* error);
  ~ReadPool();
  ReadPool(const ReadPool&) = delete;
  ReadPool& operator=(const ReadPool&) = delete;

  // Reads `source` to its end (records over `max_line` bytes come as kTooLarge), each block read
  // on a worker and handed to `judge` in input order. Returns the source's last status, kEnd or
  // kError, once every record before it was judged; kLine when `judge` returned false (the run
  // stopped there: no later block is judged, and the source is not read much further). An
  // exception from stage 1 is rethrown on the calling thread when its block's turn comes (the
  // blocks before it judged), one from the source at once. Call it once.
  inputs::LineReader::Status run(const Source& source, size_t max_line, const Judge& judge);

  // Blocks read ahead of the judge, at most (see Memory above).
  size_t max_blocks() const { return max_blocks_; }

 private:
  struct Line {
    uint64_t number = 0;
    inputs::LineReader::Status status = inputs::LineReader::Status::kLine;
    size_t at = 0, size = 0;  // in Block::text
  };
  struct Block {
    explicit Block(size_t records) : batch(records) { lines.reserve(records); }
    std::string text;  // the lines back to back, each followed by LineReader::kPadding spaces
    std::vector<Line> lines;
    size_t max_line = 0;
    Batch batch;               // stage 1's output
    std::exception_ptr error;  // what stage 1 threw
    bool done = false;         // stage 1 is over (guarded by mutex_)
  };
  enum class Step { kNone, kJudged, kStopped };

  ReadPool() = default;
  void work(size_t worker);
  inputs::LineReader::Status run_inline(const Source& source, size_t max_line, const Judge& judge);
  inputs::LineReader::Status run_with_source_thread(const Source& source, size_t max_line,
                                                    const Judge& judge);
  // The source thread: fills and submits blocks until the source ends or the run stops.
  void fill(const Source& source, size_t max_line);
  Block* take_free();  // with mutex_ held: a free block, or a new one below max_blocks_, or null
  static void add(Block* block, uint64_t number, inputs::LineReader::Status status,
                  std::string_view line);
  bool full(const Block& block) const {
    return block.lines.size() >= block_records_ ||
           (block_bytes_ > 0 && block.text.size() >= block_bytes_);
  }
  void submit(Block* block);
  // Judges the oldest block in flight once stage 1 is done with it, waiting for that when `wait`:
  // kNone when there is none (or it is not done yet and !wait); kStopped when `judge` stopped.
  Step judge_oldest(const Judge& judge, bool wait);
  void recycle(Block* block);  // emptied and free again
  void stop();

  size_t block_records_ = 0, block_bytes_ = 0, max_blocks_ = 0;
  bool source_thread_ = false;
  std::vector<std::unique_ptr<inputs::RecordParser>> parsers_;  // before gates_: they use them
  std::vector<std::unique_ptr<Gate>> gates_;                    // one per worker

  std::mutex mutex_;                            // guards everything below but stopping_
  std::condition_variable work_ready_;          // workers wait for queue_ or stop_
  std::condition_variable block_done_;          // the judge waits for the oldest block's `done`
  std::condition_variable free_ready_;          // the source thread waits for a free block
  std::vector<std::unique_ptr<Block>> blocks_;  // every block made
  std::vector<Block*> free_;
  std::deque<Block*> in_flight_;  // submitted, oldest first
  std::deque<Block*> queue_;      // submitted, not yet taken by a worker
  bool stop_ = false;
  std::atomic<bool> stopping_{false};  // stop_, for the source thread's loop without the lock
  bool source_done_ = false;           // the source thread's end: its last status or exception
  inputs::LineReader::Status source_status_ = inputs::LineReader::Status::kEnd;
  std::exception_ptr source_error_;

  std::vector<std::thread> threads_;  // last: joined before anything above goes
};

}  // namespace replaygate::pipeline
