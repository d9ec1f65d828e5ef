// Stage 1 on worker threads, stage 2 in input order on the caller's (see read_pool.h).
#include "gate/read_pool.h"

#include <algorithm>
#include <utility>

namespace replaygate::gate {

using inputs::LineReader;

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
  pool->max_blocks_ = pool->block_bytes_ == 0 ? options.threads + 2 : 2 * options.threads + 2;
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
  }
  work_ready_.notify_all();
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

ReadPool::Block* ReadPool::acquire(const Judge& judge, bool* stopped) {
  *stopped = false;
  if (free_.empty() && blocks_.size() < max_blocks_) {
    blocks_.push_back(std::make_unique<Block>(block_records_));
    blocks_.back()->text.reserve(block_bytes_ > 0 ? block_bytes_ + (block_bytes_ >> 2) : 0);
    return blocks_.back().get();
  }
  while (free_.empty()) {
    bool judged = false;
    if (!judge_oldest(judge, /*wait=*/true, &judged)) {
      *stopped = true;
      return nullptr;
    }
  }
  Block* block = free_.back();
  free_.pop_back();
  return block;
}

void ReadPool::submit(Block* block) {
  in_flight_.push_back(block);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    block->done = false;
    queue_.push_back(block);
  }
  work_ready_.notify_one();
}

bool ReadPool::judge_oldest(const Judge& judge, bool wait, bool* judged) {
  *judged = false;
  if (in_flight_.empty()) return true;
  Block* block = in_flight_.front();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!block->done) {
      if (!wait) return true;
      block_done_.wait(lock, [block] { return block->done; });
    }
  }
  in_flight_.pop_front();
  // Recycled whatever happens below: the block is the pool's again.
  struct Recycle {
    ReadPool* pool;
    Block* block;
    ~Recycle() {
      block->batch.clear();
      block->lines.clear();
      block->error = nullptr;
      // A block that held a few huge lines gives their memory back.
      const size_t keep = std::max<size_t>(pool->block_bytes_ * 2, inputs::kMaxRecordBytes);
      if (block->text.capacity() > 2 * keep) {
        std::string().swap(block->text);
      } else {
        block->text.clear();
      }
      pool->free_.push_back(block);
    }
  } recycle{this, block};
  if (block->error) std::rethrow_exception(block->error);
  *judged = true;
  if (!judge(block->batch)) {
    stop();
    return false;
  }
  return true;
}

LineReader::Status ReadPool::run(const Source& source, size_t max_line, const Judge& judge) {
  Block* block = nullptr;
  LineReader::Status status = LineReader::Status::kEnd;
  std::string_view line;
  uint64_t number = 0;
  while (true) {
    status = source(&line, &number);
    if (status == LineReader::Status::kEnd || status == LineReader::Status::kError) break;
    if (block == nullptr) {
      bool stopped = false;
      block = acquire(judge, &stopped);
      if (stopped) return LineReader::Status::kLine;
      block->max_line = max_line;
    }
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
    if (block->lines.size() >= block_records_ ||
        (block_bytes_ > 0 && block->text.size() >= block_bytes_)) {
      submit(block);
      block = nullptr;
      // Judge what is ready, without waiting: the workers keep the rest.
      for (bool judged = true; judged;) {
        if (!judge_oldest(judge, /*wait=*/false, &judged)) return LineReader::Status::kLine;
      }
    }
  }
  if (block != nullptr) submit(block);
  while (!in_flight_.empty()) {
    bool judged = false;
    if (!judge_oldest(judge, /*wait=*/true, &judged)) return LineReader::Status::kLine;
  }
  return status;
}

}  // namespace replaygate::gate
