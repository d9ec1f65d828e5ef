// Output helpers shared by the subcommands: JSON string escaping and a block-buffered writer.
//
// json_escape() never fails: bytes that are not valid UTF-8 are written as U+FFFD, control
// characters as \uXXXX escapes, so every line the CLI prints is valid JSON whatever it echoes.
// BlockWriter collects output in large blocks and writes them with fwrite; it remembers the first
// write error so callers can finish the run and exit 2.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace replaygate::cli {

// Length of the valid UTF-8 sequence that starts at text[i], or 0 when the bytes there are not
// UTF-8 (overlong forms, surrogates and code points above U+10FFFF are not).
size_t utf8_sequence_length(std::string_view text, size_t i);

// Appends `text` to `out` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view text);

// Returns `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text);

class BlockWriter {
 public:
  static constexpr size_t kBlockBytes = size_t{1} << 20;  // 1 MiB

  explicit BlockWriter(std::FILE* stream) : stream_(stream) { buffer_.reserve(kBlockBytes + 4096); }
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;
  ~BlockWriter() { flush(); }

  // The buffer to append to; call maybe_flush() after each record.
  std::string& buffer() { return buffer_; }
  void maybe_flush() {
    if (buffer_.size() >= kBlockBytes) flush();
  }
  // Writes everything buffered and flushes the stream. Returns false once any write failed.
  bool flush();
  bool ok() const { return ok_; }

 private:
  std::FILE* stream_;
  std::string buffer_;
  bool ok_ = true;
};

}  // namespace replaygate::cli
