// The LSP base protocol's framing: each message is a header block ("Content-Length: N\r\n",
// optionally "Content-Type: ...\r\n", then "\r\n") followed by exactly N bytes of JSON.
//
// MessageReader cuts a byte stream into message bodies, within budgets: a header block is at most
// kMaxHeaderBytes, a body at most the reader's cap. It never trusts Content-Length for memory: a
// body grows only as its bytes arrive, so a length larger than the stream ends in kTruncated, not
// in a large allocation or a hang once the stream ends. frame() writes the header for a body.
// Single-threaded; the reader owns nothing but its buffer (the source outlives it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/source.h"

namespace replaygate::lsp {

// One header block: a few short lines; anything longer is not an LSP client talking.
inline constexpr size_t kMaxHeaderBytes = 8 * 1024;
// The largest body read: a document at the compiler's limit (kMaxSourceBytes, 64 MiB) with every
// byte escaped in two (\n, \", \\) still fits, so a document too large for the compiler is read
// and reported as the compiler's RG007, not dropped by the framing.
inline constexpr size_t kMaxMessageBytes = 2 * kMaxSourceBytes + 64 * 1024;

// Where the bytes come from: a file descriptor (FdSource) or memory (the fuzz target, tests).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `size` bytes into `buffer`: the count read, 0 at the end of the stream, or -1 on
  // a read error (errno set).
  virtual long read(char* buffer, size_t size) = 0;
};

// Reads a file descriptor (again after EINTR). Does not own or close it.
class FdSource : public ByteSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  long read(char* buffer, size_t size) override;

 private:
  int fd_;
};

// Reads a block of memory the caller keeps alive.
class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  long read(char* buffer, size_t size) override;

 private:
  std::string_view bytes_;
};

struct Frame {
  enum class Kind {
    kMessage,    // `body` holds one message's bytes (not yet checked to be JSON)
    kEnd,        // the stream ended between messages
    kBadHeader,  // a header block without a usable Content-Length (`problem` says why); it was
                 // consumed up to its blank line, so the next message can still be read
    kTooLarge,   // Content-Length above the cap: the body was read and thrown away (`problem`)
    kTruncated,  // the stream ended inside a header block or a body (`problem`): framing is lost
    kLost,       // a header block over kMaxHeaderBytes (`problem`): framing is lost
    kReadError,  // the source failed (`problem` has strerror)
  };
  Kind kind = Kind::kEnd;
  std::string body;
  std::string problem;
};

class MessageReader {
 public:
  // `max_body`: the largest body kept (kMaxMessageBytes; tests pass less).
  explicit MessageReader(ByteSource& source, size_t max_body = kMaxMessageBytes)
      : source_(source), max_body_(max_body) {}

  // The next frame. After kEnd, kTruncated, kLost or kReadError every call returns the same kind
  // again (with no body); the caller stops reading.
  Frame next();

 private:
  // Reads more bytes into buffer_; false at the end of the stream or on an error (error_ set).
  bool fill();
  Frame finish(Frame::Kind kind, std::string problem);

  ByteSource& source_;
  size_t max_body_;
  std::string buffer_;  // bytes read and not yet consumed, from begin_
  size_t begin_ = 0;
  bool done_ = false;
  Frame::Kind final_kind_ = Frame::Kind::kEnd;
  std::string error_;  // set by fill() on a read error
};

// "Content-Length: N\r\n\r\n" followed by `body`.
std::string frame(std::string_view body);

}  // namespace replaygate::lsp
