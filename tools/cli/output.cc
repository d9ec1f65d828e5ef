// JSON string escaping with UTF-8 validation, and the block-buffered writer (see output.h).
#include "tools/cli/output.h"

#include <cstdint>

namespace replaygate::cli {
namespace {

constexpr char kHex[] = "0123456789abcdef";

}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  const size_t left = text.size() - i;
  const auto continuation = [&](size_t k) { return (byte(k) & 0xC0) == 0x80; };
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return left >= 2 && continuation(i + 1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (left < 3 || !continuation(i + 1) || !continuation(i + 2)) return 0;
    if (lead == 0xE0 && byte(i + 1) < 0xA0) return 0;   // overlong
    if (lead == 0xED && byte(i + 1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (left < 4 || !continuation(i + 1) || !continuation(i + 2) || !continuation(i + 3)) return 0;
    if (lead == 0xF0 && byte(i + 1) < 0x90) return 0;   // overlong
    if (lead == 0xF4 && byte(i + 1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    // Copy the longest run of printable ASCII other than '"' and '\\' in one append (most text
    // is exactly that), then handle the one byte that ended it.
    size_t run = i;
    while (run < text.size()) {
      const auto c = static_cast<uint8_t>(text[run]);
      if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
      ++run;
    }
    if (run > i) {
      out.append(text.data() + i, run - i);
      i = run;
      continue;
    }
    const auto c = static_cast<uint8_t>(text[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      out += "\\u00";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xF]);
      ++i;
      continue;
    }
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\\ufffd";  // not UTF-8: never emit invalid JSON text
      ++i;
      continue;
    }
    out.append(text.substr(i, length));
    i += length;
  }
  out.push_back('"');
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

bool BlockWriter::flush() {
  if (!buffer_.empty() && ok_) {
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), stream_) != buffer_.size()) ok_ = false;
  }
  buffer_.clear();
  if (ok_ && std::fflush(stream_) != 0) ok_ = false;
  return ok_;
}

}  // namespace replaygate::cli
