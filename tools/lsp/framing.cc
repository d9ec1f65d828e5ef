// The base protocol's framing (see framing.h): header blocks in, bodies out, within budgets.
#include "tools/lsp/framing.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

namespace replaygate::lsp {
namespace {

constexpr size_t kChunkBytes = 64 * 1024;

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A decimal length; one that does not fit a size_t comes back as SIZE_MAX (skipped until the
// stream ends: no stream holds that many bytes).
bool parse_length(std::string_view text, size_t* out) {
  if (text.empty()) return false;
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  size_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const size_t digit = static_cast<size_t>(c - '0');
    value = value > (kMax - digit) / 10 ? kMax : value * 10 + digit;
  }
  *out = value;
  return true;
}

// `text` cut to a short printable excerpt for an error message.
std::string excerpt(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) {
    out += (c >= 0x20 && c < 0x7F) ? c : '?';
  }
  return text.size() > 40 ? out + "..." : out;
}

}  // namespace

long FdSource::read(char* buffer, size_t size) {
  for (;;) {
    const ssize_t n = ::read(fd_, buffer, size);
    if (n >= 0 || errno != EINTR) return static_cast<long>(n);
  }
}

long MemorySource::read(char* buffer, size_t size) {
  const size_t n = std::min(size, bytes_.size());
  std::memcpy(buffer, bytes_.data(), n);
  bytes_.remove_prefix(n);
  return static_cast<long>(n);
}

bool MessageReader::fill() {
  char chunk[kChunkBytes];
  const long n = source_.read(chunk, sizeof chunk);
  if (n < 0) {
    error_ = std::strerror(errno);
    return false;
  }
  if (n == 0) return false;
  // Drop what was consumed before growing: the buffer holds one message at most.
  if (begin_ > 0) {
    buffer_.erase(0, begin_);
    begin_ = 0;
  }
  buffer_.append(chunk, static_cast<size_t>(n));
  return true;
}

Frame MessageReader::finish(Frame::Kind kind, std::string problem) {
  done_ = true;
  final_kind_ = kind;
  buffer_.clear();
  begin_ = 0;
  if (!error_.empty()) {
    final_kind_ = Frame::Kind::kReadError;
    return Frame{Frame::Kind::kReadError, {}, "cannot read the input: " + error_};
  }
  return Frame{kind, {}, std::move(problem)};
}

Frame MessageReader::next() {
  if (done_) return Frame{final_kind_, {}, {}};
  bool have_length = false;
  size_t length = 0;
  std::string bad;  // why the block has no usable Content-Length
  bool any_line = false;
  size_t header_bytes = 0;
  for (;;) {
    size_t newline = buffer_.find('\n', begin_);
    while (newline == std::string::npos) {
      if (buffer_.size() - begin_ + header_bytes > kMaxHeaderBytes) {
        return finish(Frame::Kind::kLost, "a header block longer than " +
                                              std::to_string(kMaxHeaderBytes) +
                                              " bytes (is the client speaking LSP?)");
      }
      const size_t scanned = buffer_.size() - begin_;
      if (!fill()) {
        const bool blank = std::all_of(buffer_.begin() + static_cast<long>(begin_), buffer_.end(),
                                       [](char c) { return c == '\r' || c == ' '; });
        if (!any_line && blank) return finish(Frame::Kind::kEnd, "");
        return finish(Frame::Kind::kTruncated, "the input ended inside a message header");
      }
      newline = buffer_.find('\n', begin_ + scanned);
    }
    std::string_view line(buffer_.data() + begin_, newline - begin_);
    header_bytes += line.size() + 1;
    begin_ = newline + 1;
    if (header_bytes > kMaxHeaderBytes) {
      return finish(Frame::Kind::kLost, "a header block longer than " +
                                            std::to_string(kMaxHeaderBytes) +
                                            " bytes (is the client speaking LSP?)");
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      if (!any_line) continue;  // blank lines between messages
      break;
    }
    any_line = true;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      if (bad.empty()) bad = "a header line without ':' (\"" + excerpt(line) + "\")";
      continue;
    }
    if (lowercase(trim(line.substr(0, colon))) != "content-length") continue;  // Content-Type
    size_t value = 0;
    if (!parse_length(trim(line.substr(colon + 1)), &value)) {
      if (bad.empty()) {
        bad =
            "Content-Length is not a decimal number (\"" + excerpt(line.substr(colon + 1)) + "\")";
      }
      continue;
    }
    if (have_length && value != length && bad.empty()) bad = "two different Content-Length headers";
    have_length = true;
    length = value;
  }
  if (bad.empty() && !have_length) bad = "a header block without Content-Length";
  if (!bad.empty()) return Frame{Frame::Kind::kBadHeader, {}, bad};

  if (length > max_body_) {
    // Skip the body as it arrives, keeping none of it.
    size_t left = length;
    for (;;) {
      const size_t have = std::min(left, buffer_.size() - begin_);
      begin_ += have;
      left -= have;
      if (left == 0) break;
      buffer_.clear();
      begin_ = 0;
      if (!fill()) {
        return finish(Frame::Kind::kTruncated,
                      "the input ended inside a message over the limit of " +
                          std::to_string(max_body_) + " bytes");
      }
    }
    return Frame{Frame::Kind::kTooLarge,
                 {},
                 "a message of " + std::to_string(length) + " bytes is over the limit of " +
                     std::to_string(max_body_) + " bytes"};
  }
  while (buffer_.size() - begin_ < length) {
    if (!fill()) {
      return finish(Frame::Kind::kTruncated,
                    "the input ended " + std::to_string(buffer_.size() - begin_) +
                        " bytes into a message of " + std::to_string(length) +
                        " bytes (Content-Length)");
    }
  }
  Frame frame{Frame::Kind::kMessage, {}, {}};
  if (begin_ == 0 && buffer_.size() == length) {
    frame.body = std::move(buffer_);  // a large body: no copy
    buffer_.clear();
  } else {
    frame.body = buffer_.substr(begin_, length);
    begin_ += length;
  }
  return frame;
}

std::string frame(std::string_view body) {
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

}  // namespace replaygate::lsp
