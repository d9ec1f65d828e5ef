// Escaping untrusted text for plain-text output (see escape.h).
#include "common/escape.h"

#include "common/utf8.h"

namespace replaygate {

std::string escape_control(std::string_view text, Backslash backslash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7f) {
        out += "\\u00";
        out += kHex[b >> 4];
        out += kHex[b & 15];
      } else if (b == '\\' && backslash == Backslash::kDouble) {
        out += "\\\\";
      } else {
        out += static_cast<char>(b);
      }
      ++i;
      continue;
    }
    const size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
      ++i;
      continue;
    }
    const unsigned char next = static_cast<unsigned char>(text[i + 1]);
    if (b == 0xC2 && next <= 0x9F) {
      // C1 controls (U+0080..U+009F: CSI, NEL, ...) act on terminals like C0 ones.
      out += "\\u00";
      out += kHex[next >> 4];
      out += kHex[next & 15];
    } else if (b == 0xE2 && next == 0x80 && (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      // U+2028 / U+2029, line and paragraph separators: line breaks to some readers.
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace replaygate
