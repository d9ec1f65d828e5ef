// Value decodings (see decoding.h).
#include "inputs/decoding.h"

#include "common/utf8.h"
#include "inputs/mapping.h"

namespace replaygate::inputs {

bool decode_be_int(std::string_view bytes, int64_t* value, std::string* why) {
  const size_t n = bytes.size();
  if (n != 1 && n != 2 && n != 4 && n != 8) {
    *why = "be-int takes 1, 2, 4 or 8 bytes, not " + std::to_string(n);
    return false;
  }
  uint64_t bits = 0;
  for (const char c : bytes) bits = (bits << 8) | static_cast<uint8_t>(c);
  // Sign-extend from n bytes.
  if (n < 8 && (bits >> (8 * n - 1)) != 0) bits |= ~uint64_t{0} << (8 * n);
  *value = static_cast<int64_t>(bits);
  return true;
}

bool decode_decimal(std::string_view text, int64_t* value, std::string* why) {
  if (parse_int64_strict(text, value)) return true;
  bool digits = !text.empty();
  for (size_t i = text.starts_with('-') ? 1 : 0; i < text.size(); ++i) {
    digits = digits && text[i] >= '0' && text[i] <= '9';
  }
  *why = digits && text != "-" ? "a decimal integer beyond int64"
                               : "not a decimal integer (" + std::to_string(text.size()) +
                                     (text.size() == 1 ? " byte)" : " bytes)");
  return false;
}

std::string encode_base64(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63],
            kAlphabet[n & 63]};
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    uint32_t n = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
    if (rest == 2) n |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
    out += kAlphabet[n >> 18];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

bool decode_base64(std::string_view text, std::string* bytes, std::string* why) {
  bytes->clear();
  if (text.size() % 4 != 0) {
    *why = "not base64: a length of " + std::to_string(text.size()) + ", not a multiple of 4";
    return false;
  }
  const auto sextet = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int pads = 0;
    if (last && text[i + 3] == '=') pads = text[i + 2] == '=' ? 2 : 1;
    uint32_t group = 0;
    for (size_t j = 0; j < 4; ++j) {
      const char c = text[i + j];
      int v = 0;
      if (j >= 4 - static_cast<size_t>(pads)) {
        if (c != '=') v = -1;
      } else {
        v = sextet(c);
      }
      if (v < 0) {
        *why = "not base64: byte " + std::to_string(i + j) + " is not in the base64 alphabet";
        return false;
      }
      group = (group << 6) | static_cast<uint32_t>(v);
    }
    bytes->push_back(static_cast<char>(group >> 16));
    if (pads < 2) bytes->push_back(static_cast<char>((group >> 8) & 0xFF));
    if (pads < 1) bytes->push_back(static_cast<char>(group & 0xFF));
    // Non-canonical padding bits (e.g. "QR==") are refused: one text, one value.
    if ((pads == 2 && (group & 0xFFFF) != 0) || (pads == 1 && (group & 0xFF) != 0)) {
      *why = "not base64: non-zero padding bits";
      return false;
    }
  }
  return true;
}

bool check_utf8(std::string_view bytes, std::string* why) {
  const size_t bad = first_invalid_utf8(bytes);
  if (bad == std::string_view::npos) return true;
  *why = "not valid UTF-8 (byte " + std::to_string(bad) + ")";
  return false;
}

}  // namespace replaygate::inputs
