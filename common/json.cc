// The JSON string writer (see json.h): the CLI's fast UTF-8 path and the two other rules.
#include "common/json.h"

#include <cstdio>
#include <cstring>

#include "common/utf8.h"

namespace replaygate {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// True when one of the 8 bytes of `word` needs more than a copy in a JSON string: below 0x20,
// '"', '\\' or 0x80 and above (bit tricks from "Bit Twiddling Hacks", haszero/hasless).
inline bool needs_care(uint64_t word) {
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  const auto has_zero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
  const uint64_t below_space = (word - kOnes * 0x20) & ~word & kHigh;
  return (below_space | has_zero(word ^ (kOnes * '"')) | has_zero(word ^ (kOnes * '\\')) |
          (word & kHigh)) != 0;
}

void append_ascii(std::string& out, std::string_view s) {
  out += '"';
  char buffer[16];
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n", ++i;
    } else if (c == '\t') {
      out += "\\t", ++i;
    } else if (c == '\r') {
      out += "\\r", ++i;
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
      out += buffer;
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      // Non-ASCII: escaped so the output is plain ASCII; invalid bytes become U+FFFD.
      const size_t length = utf8_sequence_length(s, i);
      if (length == 0) {
        out += "\\ufffd";
        ++i;
        continue;
      }
      const uint32_t code = decode_utf8(s, i, length);
      if (code >= 0x10000) {
        const uint32_t v = code - 0x10000;
        std::snprintf(buffer, sizeof buffer, "\\u%04x\\u%04x", 0xD800 + (v >> 10),
                      0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buffer, sizeof buffer, "\\u%04x", code);
      }
      out += buffer;
      i += length;
    }
  }
  out += '"';
}

void append_bytes(std::string& out, std::string_view text) {
  out += '"';
  for (const char byte : text) {
    const auto c = static_cast<unsigned char>(byte);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += byte;
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    } else {
      out += byte;
    }
  }
  out += '"';
}

}  // namespace

char* write_json_string(char* out, std::string_view text) {
  *out++ = '"';
  const char* const begin = text.data();
  const size_t size = text.size();
  size_t i = 0;
  while (i < size) {
    // Eight plain bytes at a time (most text is printable ASCII), then one byte at a time.
    if (size - i >= 8) {
      uint64_t word;
      std::memcpy(&word, begin + i, 8);
      if (!needs_care(word)) {
        std::memcpy(out, &word, 8);
        out += 8;
        i += 8;
        continue;
      }
    }
    const auto c = static_cast<uint8_t>(begin[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *out++ = static_cast<char>(c);
      ++i;
      continue;
    }
    switch (c) {
      case '"':
        *out++ = '\\';
        *out++ = '"';
        ++i;
        continue;
      case '\\':
        *out++ = '\\';
        *out++ = '\\';
        ++i;
        continue;
      case '\n':
        *out++ = '\\';
        *out++ = 'n';
        ++i;
        continue;
      case '\r':
        *out++ = '\\';
        *out++ = 'r';
        ++i;
        continue;
      case '\t':
        *out++ = '\\';
        *out++ = 't';
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      std::memcpy(out, "\\u00", 4);
      out[4] = kHex[c >> 4];
      out[5] = kHex[c & 0xF];
      out += 6;
      ++i;
      continue;
    }
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      std::memcpy(out, "\\ufffd", 6);  // not UTF-8: never emit invalid JSON text
      out += 6;
      ++i;
      continue;
    }
    std::memcpy(out, begin + i, length);
    out += length;
    i += length;
  }
  *out++ = '"';
  return out;
}

void append_json_string(std::string& out, std::string_view text, JsonText rule) {
  switch (rule) {
    case JsonText::kAscii:
      append_ascii(out, text);
      return;
    case JsonText::kBytes:
      append_bytes(out, text);
      return;
    case JsonText::kUtf8:
      break;
  }
  const size_t old = out.size();
  out.resize(old + json_string_bound(text));
  char* const end = write_json_string(out.data() + old, text);
  out.resize(static_cast<size_t>(end - out.data()));
}

std::string json_string(std::string_view text, JsonText rule) {
  std::string out;
  append_json_string(out, text, rule);
  return out;
}

}  // namespace replaygate
