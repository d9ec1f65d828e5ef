// UTF-8 validation shared by the front-ends' byte screening, diagnostic rendering and the CLI's
// JSON escaping: one definition of which bytes are UTF-8.
//
// Header-only and inline: the CLI's JSON writer calls it per non-ASCII byte on its hot path.
// runtime/ does not use it (runtime/ depends on nothing outside it and compares bytes only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace replaygate {

// Length (1 to 4) of the valid UTF-8 sequence that starts at text[i], or 0 when the bytes there
// are not UTF-8: a stray continuation byte, a sequence cut short by the end of `text`, an overlong
// form (C0, C1, E0 80..9F, F0 80..8F), a surrogate (ED A0..BF) or a code point above U+10FFFF
// (F4 90.. and F5..FF). `i` must be below text.size().
inline size_t utf8_sequence_length(std::string_view text, size_t i) {
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

// The code point of the valid UTF-8 sequence of `length` bytes (utf8_sequence_length()) at text[i].
inline uint32_t decode_utf8(std::string_view text, size_t i, size_t length) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  if (length == 1) return byte(i);
  uint32_t code = byte(i) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < length; ++k) code = (code << 6) | (byte(i + k) & 0x3F);
  return code;
}

// The offset of the first byte of `text` where no valid UTF-8 sequence starts (see
// utf8_sequence_length()), or std::string_view::npos when all of `text` is valid UTF-8.
inline size_t first_invalid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace replaygate
