// The printable, unambiguous form of a string the table dump and the compiler's lowering show:
// quoted, with \\, \" and every byte outside printable ASCII as \xNN (a NUL byte is \x00). One
// spelling for both (it cannot live in common/: the runtime links nothing of ours). Not installed;
// the C++ standard library only.
#pragma once

#include <string>
#include <string_view>

namespace replaygate {

inline std::string quoted_bytes(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace replaygate
