// The stream driver (stream.h): decide's loop, its batches, prefetch, commit-then-flush and failure
// accounting, for every caller.
#include "pipeline/stream.h"

#include <cstring>

namespace replaygate::pipeline {

using inputs::LineReader;

FileSource::FileSource(int fd, bool json_array, std::string_view array_member) {
  if (json_array) {
    array_.emplace(fd, inputs::kMaxRecordBytes, std::string(array_member));
  } else {
    lines_.emplace(fd);
  }
}

std::string FileSource::error_text() const {
  return array_ ? array_->error_text() : std::strerror(lines_->error_number());
}

LineReader::Status BufferSource::next(SourceRecord* record) {
  if (at_ >= size_ || records_ >= max_records_) return LineReader::Status::kEnd;
  const char* nl = static_cast<const char*>(std::memchr(buf_ + at_, '\n', size_ - at_));
  const size_t end = nl == nullptr ? size_ : static_cast<size_t>(nl - buf_);
  std::string_view text(buf_ + at_, end - at_);
  at_ = nl == nullptr ? size_ : end + 1;
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  record->number = ++records_;
  if (text.size() > inputs::kMaxRecordBytes) return LineReader::Status::kTooLarge;
  // simdjson reads up to kPadding bytes past the line; their content does not matter (simdjson.h:
  // "It does not matter what those bytes are initialized to, as long as they are allocated").
  if (static_cast<size_t>(buf_ + size_ - (text.data() + text.size())) < LineReader::kPadding) {
    pad_->assign(text);
    pad_->append(LineReader::kPadding, ' ');
    text = std::string_view(pad_->data(), text.size());
  }
  record->text = text;
  return LineReader::Status::kLine;
}

namespace {

// One run: the two batches, the failure state and the records flushed so far. `Source` is the
// source's own class when the driver knows it (FileSource, final: its next() is inlined into the
// loop, as decide's loop had it), else RecordSource.
template <class Source>
class Stream {
 public:
  Stream(Gate& gate, Source& source, Sink& sink)
      : gate_(gate),
        source_(source),
        sink_(sink),
        out_(sink.buffer()),
        flush_at_(sink.flush_at()),
        batch_size_(gate.batch_size()),
        batches_{Batch(batch_size_), Batch(gate.claims_blocks() ? 1 : batch_size_)} {}

  StreamResult run(ReadPool* pool) {
    if (pool != nullptr) {
      run_pool(*pool);
    } else {
      run_inline();
    }
    if (result_.failed_stage == nullptr && sink_.ok()) emit_all();
    if (result_.failed_stage == nullptr && sink_.ok()) commit();
    if (result_.failed_stage != nullptr) {
      out_.clear();
      return result_;
    }
    result_.written = flush();
    return result_;
  }

 private:
  // The gate's stages commit what is buffered; false (and the block dropped) when one failed.
  bool commit() {
    const Stage* failed = nullptr;
    if (gate_.commit(&failed)) return true;
    out_.clear();
    result_.failed_stage = failed;
    return false;
  }
  // Writes what is buffered (every record so far); false once a write failed.
  bool flush() {
    if (sink_.flush()) result_.flushed = gate_.counts().total;
    return sink_.ok();
  }
  bool commit_and_flush() { return commit() && flush(); }
  bool full() const { return out_.size() >= flush_at_; }

  // Stage 2 for a batch: false when the run must stop (a failed write or commit).
  bool emit_batch(Batch& batch) {
    bool ok = true;
    if (gate_.claims_blocks()) {
      if (batch.count > 0) {
        gate_.judge_block(batch, out_);
        ok = commit_and_flush();
      }
    } else {
      for (size_t i = 0; i < batch.count && ok; ++i) {
        gate_.judge(batch, i, out_);
        if (full() && !commit_and_flush()) ok = false;
      }
    }
    batch.clear();
    return ok;
  }
  // Stage 2 for every batch not yet written, oldest first.
  bool emit_all() { return emit_batch(batches_[1 - current_]) && emit_batch(batches_[current_]); }

  void run_inline() {
    const size_t max_line = source_.max_line();
    SourceRecord record;
    while (true) {
      const LineReader::Status status = source_.next(&record);
      if (status == LineReader::Status::kEnd) break;
      if (status == LineReader::Status::kError) {
        if (emit_all() && commit()) flush();
        result_.read_error = true;
        break;
      }
      Batch& batch = batches_[current_];
      gate_.read(batch, record.number, status, record.text, max_line);
      if (batch.count < batch_size_) continue;
      if (gate_.has_stages()) {
        if (!emit_batch(batch)) break;
        continue;
      }
      gate_.prefetch(batch);
      current_ = 1 - current_;
      if (!emit_batch(batches_[current_])) break;  // the batch before: its blocks have arrived
    }
  }

  // The pool reads and decides blocks on its threads; this thread judges each block in input order
  // as emit_batch judges a batch (with a Claimer a block is one ledger block), committing and
  // flushing at the same points, so the same lines are written before a failure stops the run.
  bool judge_pooled(Batch& batch) {
    if (gate_.claims_blocks()) {
      gate_.judge_block(batch, out_);
      return commit_and_flush();
    }
    constexpr size_t kAhead = 16;  // records whose filter blocks are fetched ahead of the guard
    gate_.prefetch(batch, 0, kAhead);
    for (size_t i = 0; i < batch.count; ++i) {
      gate_.prefetch(batch, i + kAhead, i + kAhead + 1);
      gate_.judge(batch, i, out_);
      if (full() && !commit_and_flush()) return false;
    }
    return true;
  }

  void run_pool(ReadPool& pool) {
    auto next = [this](std::string_view* text, uint64_t* number) {
      SourceRecord record;
      const LineReader::Status status = source_.next(&record);
      *text = record.text;
      *number = record.number;
      return status;
    };
    auto judge = [this](Batch& batch) { return judge_pooled(batch); };
    // kError: every record before the error was judged (kLine: the judge stopped the run).
    if (pool.run(next, source_.max_line(), judge) == LineReader::Status::kError) {
      if (result_.failed_stage == nullptr && sink_.ok() && commit()) flush();
      result_.read_error = true;
    }
  }

  Gate& gate_;
  Source& source_;
  Sink& sink_;
  ByteBuffer& out_;
  const size_t flush_at_;
  const size_t batch_size_;
  Batch batches_[2];
  int current_ = 0;  // the batch being filled; the other one waits for stage 2
  StreamResult result_;
};

}  // namespace

StreamResult run_stream(Gate& gate, ReadPool* pool, RecordSource& source, Sink& sink) {
  if (auto* file = dynamic_cast<FileSource*>(&source); file != nullptr) {
    return Stream<FileSource>(gate, *file, sink).run(pool);
  }
  return Stream<RecordSource>(gate, source, sink).run(pool);
}

}  // namespace replaygate::pipeline
