// Output helpers shared by the subcommands: the JSON string writer (common/json.h), a raw byte
// buffer and a block-buffered writer.
//
// The JSON strings never fail: bytes that are not valid UTF-8 are written as U+FFFD, control
// characters as \uXXXX escapes, so every line the CLI prints is valid JSON whatever it echoes.
// ByteBuffer is written through raw pointers (reserve room, write, commit): `decide` formats a
// million lines a second with it, where each std::string::append is a call and a capacity check.
// BlockWriter collects JSON Lines output in blocks and writes them with write(2); it remembers the
// first write error (and its errno) so callers can finish the run and exit 2, and it never leaves
// half a line in a regular file (see flush()).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include "common/byte_buffer.h"
#include "common/json.h"
#include "common/plural.h"

namespace replaygate::cli {

// The JSON string writer is common/json.h's (JsonText::kUtf8 by default), under the CLI's names.
using ::replaygate::append_json_string;
using ::replaygate::json_string;
using ::replaygate::json_string_bound;
using ::replaygate::write_json_string;

// plural() and ByteBuffer live in common/ (plural.h, byte_buffer.h), under the CLI's names here.
using ::replaygate::ByteBuffer;
using ::replaygate::plural;

// Writes all of `bytes` to `fd`, again after a short write or EINTR. Returns 0, or the errno of
// the write that failed (EBADF for a closed descriptor, ENOSPC for a full disk, EFBIG past the file
// size limit when SIGXFSZ is ignored, EPIPE for a closed pipe when SIGPIPE is). `*written` is
// what was written either way.
int write_fully(int fd, const char* bytes, size_t size, size_t* written);

// What to call descriptor `fd` in an error message: `stream` ("standard output"), followed by the
// file's path in parentheses when it has one ("standard output (/tmp/out)"; not for a pipe).
std::string describe_stream(int fd, const std::string& stream);

// Why standard output cannot be written ("Bad file descriptor" when it is closed or open read
// only), or "" when it is open for writing. Checked before anything is recorded or opened (open()
// would reuse a closed descriptor 1), so no record is logged that no one can print.
std::string stdout_unwritable();

// Writes `text` to standard output and flushes it. On failure prints
// "replaygate: cannot write WHAT to standard output (PATH): STRERROR" to stderr and returns false.
bool print_to_stdout(std::string_view text, std::string_view what);

// Whether writing to `fd` would glue the first byte onto an unfinished last line: `fd` is a
// regular file that is not empty, is written at its end (opened for append, or positioned there),
// and its last byte is not '\n'. False when that cannot be told (e.g. the file cannot be read).
bool ends_mid_line(int fd);

class BlockWriter {
 public:
  // Large blocks: few write(2) calls (each costs microseconds under virtualization); 128 KiB and
  // 256 KiB blocks measured no faster on the end-to-end benchmark.
  static constexpr size_t kBlockBytes = size_t{1} << 20;  // 1 MiB

  // Writes to `fd` (STDOUT_FILENO for decide), which nothing else may write to meanwhile.
  // A regular file's size now is the floor below which flush() never cuts it back.
  explicit BlockWriter(int fd);
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;
  // Flushes what is buffered, except while an exception thrown after construction unwinds: a
  // caller that records each block elsewhere first (decide --audit appends the decisions to the
  // audit log, then prints them) must not have a block it failed to record printed anyway.
  ~BlockWriter() {
    if (std::uncaught_exceptions() == exceptions_at_start_) flush();
  }

  // Makes the first write that has bytes to write start with a '\n' (for ends_mid_line()), so
  // the output starts on a line of its own; nothing is written when nothing else is.
  void start_on_new_line() { newline_first_ = true; }
  // The buffer to write to; after each line, flush() when full().
  ByteBuffer& buffer() { return buffer_; }
  bool full() const { return buffer_.size() >= kBlockBytes; }
  // Writes everything buffered. Returns false once any write failed; then nothing more is
  // written, and when `fd` is a regular file the bytes written after its last '\n' (the start of
  // a line the write cut) are truncated away, so a reader of the file never sees half a line;
  // never below the file's size when the writer was made (bytes already there are kept).
  // Callers that flush only after whole lines thus leave only complete lines behind.
  bool flush();
  bool ok() const { return ok_; }
  // After a failed flush(): the errno of the write that failed.
  int error_number() const { return error_; }
  // After a failed flush(): how many complete lines of the block that failed are in the output.
  uint64_t failed_block_lines() const { return failed_block_lines_; }
  // After a failed flush(): true when part of a line stayed in the output (not a regular file,
  // cutting it back would go below the floor, or the truncation failed).
  bool partial_line_left() const { return partial_line_left_; }

 private:
  ByteBuffer buffer_;
  int fd_;
  off_t floor_ = 0;  // a regular file is never cut back below this size
  bool newline_first_ = false;
  bool ok_ = true;
  int error_ = 0;
  uint64_t failed_block_lines_ = 0;
  bool partial_line_left_ = false;
  int exceptions_at_start_ = std::uncaught_exceptions();
};

}  // namespace replaygate::cli
