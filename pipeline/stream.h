// The stream driver: every record of a source through a Gate into a sink, the one loop that
// `decide` and the JSON Lines binding share (docs/architecture.md, "The dump pipeline").
//
//   RecordSource ─> Gate::read (stage 1, batches) ─> Gate::judge (stage 2) ─> Sink::buffer()
//                                                     stages' commit() ─> Sink::flush()
//
// What goes in: a RecordSource hands out one record at a time (a file or pipe as JSON Lines or one
// JSON array: FileSource; a caller's buffer of lines: BufferSource). What comes out: each record's
// decision line appended to the sink's buffer, in input order, and a StreamResult (how the run
// ended, the records whose lines the sink took whole); the gate's counts() and stages hold the
// rest. The driver prints nothing: the caller says what the result means.
//
// The loop, as decide has always run it:
//   * without stages, records go through in batches, two at a time: a batch is read and decided,
//     its records' filter blocks are prefetched together (stage 1), then the batch before it is
//     judged and appended (stage 2), so a block has a batch's time to arrive from memory;
//   * with stages (the audit log) a batch is one record; with a Claimer (the replay ledger) one
//     block, claimed in one transaction before its lines exist;
//   * commit then flush: whenever the sink is full (and at the end) every stage commits what is
//     buffered before the sink writes it; a failed commit drops the buffer unwritten and stops the
//     run, and so does a failed write;
//   * with a ReadPool (decide --threads) stage 1 runs on its threads and this loop judges each
//     block in input order, committing and flushing at the same points: the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/byte_buffer.h"
#include "inputs/records.h"
#include "pipeline/gate.h"
#include "pipeline/read_pool.h"

namespace replaygate::pipeline {

// One record as a source hands it out.
struct SourceRecord {
  std::string_view text;  // kLine: the record, followed by LineReader::kPadding readable bytes
  uint64_t number = 0;    // its 1-based position in the source
};

// What goes in: the records, one at a time.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // The next record: kLine (text valid until the next call), kTooLarge (a record over max_line()
  // bytes, skipped), kEnd, or kError (error_text() says why).
  virtual inputs::LineReader::Status next(SourceRecord* record) = 0;
  virtual size_t max_line() const = 0;
  virtual std::string error_text() const = 0;
};

// A file descriptor (not owned) in a record format: one JSON array whose elements are the
// records (`array_member` "" for a top-level array, else the member holding it), or JSON Lines.
class FileSource final : public RecordSource {
 public:
  FileSource(int fd, bool json_array, std::string_view array_member);
  inputs::LineReader::Status next(SourceRecord* record) override {
    const inputs::LineReader::Status status =
        array_ ? array_->next(&record->text) : lines_->next(&record->text);
    record->number = array_ ? array_->line_number() : lines_->line_number();
    return status;
  }
  size_t max_line() const override { return array_ ? array_->max_line() : lines_->max_line(); }
  std::string error_text() const override;

 private:
  std::optional<inputs::LineReader> lines_;
  std::optional<inputs::JsonArrayReader> array_;
};

// A caller's buffer of JSON Lines (the binding's rgj_decide_lines), at most `max_records` of
// them. Every line is a record, a blank one included (the parser rejects it, as decide does), a
// trailing "\r" cut. The buffer itself is the padding of every line that ends at least
// LineReader::kPadding bytes before it does; a line closer to its end is copied into `pad`.
class BufferSource final : public RecordSource {
 public:
  BufferSource(const char* buf, size_t size, size_t max_records, std::string* pad)
      : buf_(buf), size_(size), max_records_(max_records), pad_(pad) {}
  inputs::LineReader::Status next(SourceRecord* record) override;
  size_t max_line() const override { return inputs::kMaxRecordBytes; }
  std::string error_text() const override { return ""; }
  size_t consumed() const { return at_; }  // bytes of the buffer handed out, newlines included
  size_t records() const { return records_; }

 private:
  const char* buf_;
  size_t size_;
  size_t max_records_;
  std::string* pad_;
  size_t at_ = 0;
  size_t records_ = 0;
};

// What comes out: the decision lines, appended to buffer(); flush() once it holds `flush_at`
// bytes or more, and at the end. buffer() must be the same buffer for the sink's life.
class Sink {
 public:
  explicit Sink(size_t flush_at) : flush_at_(flush_at) {}
  virtual ~Sink() = default;
  virtual ByteBuffer& buffer() = 0;
  // Not virtual: the driver asks after every record.
  size_t flush_at() const { return flush_at_; }
  // Takes everything buffered. False once a write failed: nothing more is taken.
  virtual bool flush() = 0;
  virtual bool ok() const = 0;

 private:
  size_t flush_at_;
};

struct StreamResult {
  bool read_error = false;              // the source failed (its error_text()); the run ended there
  const Stage* failed_stage = nullptr;  // a commit failed (its error()): its block was dropped
  bool written = true;                  // false: a write of the sink failed
  uint64_t flushed = 0;  // records whose lines the sink took whole (the first `flushed`)
};

// Runs every record of `source` through `gate` (and `pool`'s threads, when not null) into `sink`,
// then commits and flushes what is left (unless a commit or a write failed).
StreamResult run_stream(Gate& gate, ReadPool* pool, RecordSource& source, Sink& sink);

}  // namespace replaygate::pipeline
