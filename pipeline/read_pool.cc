// Stage 1 on worker threads, stage 2 in input order on the caller's (see read_pool.h).
#include "pipeline/read_pool.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace replaygate::pipeline {

using inputs::LineReader;

ReadPool::Options ReadPool::for_input(size_t threads, int fd) {
  Options options;
  options.threads = threads;
  struct stat input {};
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  options.source_thread = ::fstat(fd, &input) == 0 && S_ISREG(input.st_mode) &&
                          online >= static_cast<long>(threads + 2);
  return options;
}

std::unique_ptr<ReadPool> ReadPool::open(SharedTable& shared, const Gate& judge, ReplayGuard& guard,
                                         std::vector<std::unique_ptr<inputs::RecordParser>> parsers,
                                         Options options, std::string* error) {
  if (options.threads < 1 || options.threads > kMaxThreads) {
    *error = "threads must be 1 to " + std::to_string(kMaxThreads) + ", not " +
             std::to_string(options.threads);
    return nullptr;
  }
  if (parsers.size() != options.threads) {
    *error = "one parser per thread: " + std::to_string(parsers.size()) + " parsers for " +
             std::to_string(options.threads) + " threads";
    return nullptr;
  }
  if (judge.has_stages() && !judge.keeps_records()) {
    *error =
        "the judging gate has stages but no keep_records: its stage 2 would take a record's "
        "metadata from its own parser";
    return nullptr;
  }
  std::unique_ptr<ReadPool> pool(new ReadPool());
  // A Claimer's block is one transaction: the pool's blocks are exactly its blocks.
  pool->block_records_ = judge.claims_blocks() ? judge.batch_size() : options.block_records;
  pool->block_records_ = std::max<size_t>(pool->block_records_, 1);
  pool->block_bytes_ = judge.claims_blocks() ? 0 : options.block_bytes;
  // Each worker one block, one waiting for the judge, one being filled, and (byte-cut blocks)
  // two more queued so that a worker that finishes finds the next one ready.
  pool->max_blocks_ = options.threads + (pool->block_bytes_ == 0 ? 2 : 4);
  pool->source_thread_ = options.source_thread;
  // A reading gate reads as the judge would: the same options, but never a Claimer (claims are
  // stage 2's).
  Gate::Options reading = judge.options();
  reading.claimer = nullptr;
  pool->parsers_ = std::move(parsers);
  for (size_t i = 0; i < options.threads; ++i) {
    std::unique_ptr<Gate> gate = Gate::open(shared, *pool->parsers_[i], guard, reading);
    if (gate == nullptr) {
      *error = "the shared table has no free reader slot for reading thread " +
               std::to_string(i + 1) + " (it needs threads + 1)";
      return nullptr;
    }
    if (&gate->table() != &judge.table()) {
      *error = "the shared table was reloaded: the reading gates would decide on another table";
      return nullptr;
    }
    pool->gates_.push_back(std::move(gate));
  }
  for (size_t i = 0; i < options.threads; ++i) {
    pool->threads_.emplace_back([p = pool.get(), i] { p->work(i); });
  }
  return pool;
}

ReadPool::~ReadPool() {
  stop();
  for (std::thread& t : threads_) t.join();
}

void ReadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    stopping_.store(true, std::memory_order_relaxed);
  }
  work_ready_.notify_all();
  free_ready_.notify_all();
}

void ReadPool::work(size_t worker) {
  Gate& gate = *gates_[worker];
  while (true) {
    Block* block = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      block = queue_.front();
      queue_.pop_front();
    }
    try {
      for (const Line& line : block->lines) {
        gate.read(block->batch, line.number, line.status,
                  std::string_view(block->text.data() + line.at, line.size), block->max_line);
      }
    } catch (...) {
      block->error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      block->done = true;
    }
    block_done_.notify_one();  // only the calling thread waits on it
  }
}

ReadPool::Block* ReadPool::take_free() {
  if (!free_.empty()) {
    Block* block = free_.back();
    free_.pop_back();
    return block;
  }
  if (blocks_.size() >= max_blocks_) return nullptr;
  blocks_.push_back(std::make_unique<Block>(block_records_));
  blocks_.back()->text.reserve(block_bytes_ > 0 ? block_bytes_ + (block_bytes_ >> 2) : 0);
  return blocks_.back().get();
}

void ReadPool::add(Block* block, uint64_t number, LineReader::Status status,
                   std::string_view line) {
  Line entry;
  entry.number = number;
  entry.status = status;
  entry.at = block->text.size();
  if (status == LineReader::Status::kLine) {
    entry.size = line.size();
    block->text.append(line);
    block->text.append(LineReader::kPadding, ' ');
  }
  block->lines.push_back(entry);
}

void ReadPool::submit(Block* block) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    block->done = false;
    in_flight_.push_back(block);
    queue_.push_back(block);
  }
  work_ready_.notify_one();
}

void ReadPool::recycle(Block* block) {
  block->batch.clear();
  block->lines.clear();
  block->error = nullptr;
  // A block that held a few huge lines gives their memory back.
  const size_t keep = std::max<size_t>(block_bytes_ * 2, inputs::kMaxRecordBytes);
  if (block->text.capacity() > 2 * keep) {
    std::string().swap(block->text);
  } else {
    block->text.clear();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(block);
  }
  free_ready_.notify_one();
}

ReadPool::Step ReadPool::judge_oldest(const Judge& judge, bool wait) {
  Block* block = nullptr;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (in_flight_.empty()) return Step::kNone;
    block = in_flight_.front();
    if (!block->done) {
      if (!wait) return Step::kNone;
      block_done_.wait(lock, [block] { return block->done; });
    }
    in_flight_.pop_front();
  }
  // Free again whatever happens below: the block is the pool's.
  struct Recycle {
    ReadPool* pool;
    Block* block;
    ~Recycle() { pool->recycle(block); }
  } recycle{this, block};
  if (block->error) std::rethrow_exception(block->error);
  if (!judge(block->batch)) {
    stop();
    return Step::kStopped;
  }
  return Step::kJudged;
}

LineReader::Status ReadPool::run(const Source& source, size_t max_line, const Judge& judge) {
  return source_thread_ ? run_with_source_thread(source, max_line, judge)
                        : run_inline(source, max_line, judge);
}

LineReader::Status ReadPool::run_inline(const Source& source, size_t max_line, const Judge& judge) {
  Block* block = nullptr;
  LineReader::Status status = LineReader::Status::kEnd;
  std::string_view line;
  uint64_t number = 0;
  while (true) {
    status = source(&line, &number);
    if (status == LineReader::Status::kEnd || status == LineReader::Status::kError) break;
    while (block == nullptr) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        block = take_free();
      }
      // Every block is in flight: the oldest is judged (once read) before the source goes on.
      if (block == nullptr && judge_oldest(judge, /*wait=*/true) == Step::kStopped) {
        return LineReader::Status::kLine;
      }
    }
    block->max_line = max_line;
    add(block, number, status, line);
    if (full(*block)) {
      submit(block);
      block = nullptr;
      // Judge what is read already, without waiting: the workers have the rest.
      for (Step step = Step::kJudged; step == Step::kJudged;) {
        step = judge_oldest(judge, /*wait=*/false);
        if (step == Step::kStopped) return LineReader::Status::kLine;
      }
    }
  }
  if (block != nullptr) submit(block);
  for (Step step = Step::kJudged; step != Step::kNone;) {
    step = judge_oldest(judge, /*wait=*/true);
    if (step == Step::kStopped) return LineReader::Status::kLine;
  }
  return status;
}

void ReadPool::fill(const Source& source, size_t max_line) {
  LineReader::Status status = LineReader::Status::kEnd;
  std::exception_ptr error;
  try {
    Block* block = nullptr;
    std::string_view line;
    uint64_t number = 0;
    while (!stopping_.load(std::memory_order_relaxed)) {
      status = source(&line, &number);
      if (status == LineReader::Status::kEnd || status == LineReader::Status::kError) break;
      if (block == nullptr) {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!stop_ && (block = take_free()) == nullptr) free_ready_.wait(lock);
        if (block == nullptr) break;  // stopped
      }
      block->max_line = max_line;
      add(block, number, status, line);
      if (full(*block)) {
        submit(block);
        block = nullptr;
      }
    }
    if (block != nullptr) submit(block);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    source_done_ = true;
    source_status_ = status;
    source_error_ = error;
  }
  block_done_.notify_one();
}

LineReader::Status ReadPool::run_with_source_thread(const Source& source, size_t max_line,
                                                    const Judge& judge) {
  std::thread filler([this, &source, max_line] { fill(source, max_line); });
  // Stopped, or leaving by an exception: the source thread ends at its next record and is joined
  // before `source` goes.
  struct Join {
    ReadPool* pool;
    std::thread& thread;
    ~Join() {
      if (thread.joinable()) {
        pool->stop();
        thread.join();
      }
    }
  } join{this, filler};
  while (true) {
    {
      // The oldest block once read; or the end, once the source is done and all is judged.
      std::unique_lock<std::mutex> lock(mutex_);
      block_done_.wait(lock, [this] {
        return (!in_flight_.empty() && in_flight_.front()->done) ||
               (in_flight_.empty() && source_done_) || source_error_ != nullptr;
      });
      if (source_error_ != nullptr || in_flight_.empty()) break;
    }
    if (judge_oldest(judge, /*wait=*/true) == Step::kStopped) return LineReader::Status::kLine;
  }
  filler.join();
  if (source_error_) std::rethrow_exception(source_error_);
  return source_status_;
}

}  // namespace replaygate::pipeline
