// common/utf8.h: the one UTF-8 validator of the front-ends, diagnostics and the CLI, checked
// against its definition (RFC 3629) on every sequence of up to three bytes and on the boundaries of
// the four-byte ones.
#include "common/utf8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace replaygate {
namespace {

// The definition, decoded the slow way: the lead byte gives the length, each continuation adds six
// bits, and the code point must need that length, not be a surrogate and be at most U+10FFFF.
size_t by_definition(const std::string& s) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint32_t code = 0, min_code = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, code = lead & 0x1F, min_code = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, code = lead & 0x0F, min_code = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, code = lead & 0x07, min_code = 0x10000;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(k) & 0x3F);
  }
  if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

TEST(Utf8Test, KnownSequences) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length(std::string_view("\0", 1), 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 0), 2u);          // é
  EXPECT_EQ(utf8_sequence_length("\xE2\x82\xAC", 0), 3u);      // €
  EXPECT_EQ(utf8_sequence_length("\xF0\x9F\x98\x80", 0), 4u);  // U+1F600
  EXPECT_EQ(utf8_sequence_length("\xF4\x8F\xBF\xBF", 0), 4u);  // U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\xC0\xAF", 0), 0u);          // overlong '/'
  EXPECT_EQ(utf8_sequence_length("\xE0\x9F\xBF", 0), 0u);      // overlong U+07FF
  EXPECT_EQ(utf8_sequence_length("\xED\xA0\x80", 0), 0u);      // surrogate U+D800
  EXPECT_EQ(utf8_sequence_length("\xF4\x90\x80\x80", 0), 0u);  // U+110000
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);              // stray continuation
  EXPECT_EQ(utf8_sequence_length("\xE2\x82", 0), 0u);          // cut short
  EXPECT_EQ(utf8_sequence_length("x\xC3\xA9", 1), 2u);         // at an offset
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 1), 0u);
}

TEST(Utf8Test, EverySequenceOfUpToThreeBytesMatchesTheDefinition) {
  std::string s;
  for (uint32_t a = 0; a < 256; ++a) {
    s.assign(1, static_cast<char>(a));
    ASSERT_EQ(utf8_sequence_length(s, 0), by_definition(s)) << a;
    for (uint32_t b = 0; b < 256; ++b) {
      s.assign({static_cast<char>(a), static_cast<char>(b)});
      ASSERT_EQ(utf8_sequence_length(s, 0), by_definition(s)) << a << " " << b;
      if (a < 0xE0) continue;  // shorter sequences do not look at a third byte
      for (uint32_t c = 0; c < 256; ++c) {
        s.assign({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)});
        ASSERT_EQ(utf8_sequence_length(s, 0), by_definition(s)) << a << " " << b << " " << c;
      }
    }
  }
}

TEST(Utf8Test, FourByteSequencesMatchTheDefinition) {
  // Every lead and second byte, with the continuation boundaries (and a non-continuation) after.
  std::string s;
  for (uint32_t a = 0xF0; a < 256; ++a) {
    for (uint32_t b = 0; b < 256; ++b) {
      for (uint32_t c : {0x7Fu, 0x80u, 0xBFu, 0xC0u}) {
        for (uint32_t d : {0x7Fu, 0x80u, 0xBFu, 0xC0u}) {
          s.assign({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c),
                    static_cast<char>(d)});
          ASSERT_EQ(utf8_sequence_length(s, 0), by_definition(s))
              << a << " " << b << " " << c << " " << d;
        }
      }
    }
  }
}

// first_invalid_utf8: the offset where the first sequence that is not UTF-8 starts, npos if none.
TEST(Utf8Test, FirstInvalidOffset) {
  constexpr size_t npos = std::string_view::npos;
  EXPECT_EQ(first_invalid_utf8(""), npos);
  EXPECT_EQ(first_invalid_utf8("plain ascii"), npos);
  EXPECT_EQ(first_invalid_utf8("caf\xC3\xA9 \xF0\x9F\x98\x80"), npos);
  EXPECT_EQ(first_invalid_utf8("\xFF"), 0u);                         // never a lead byte
  EXPECT_EQ(first_invalid_utf8("ab\x80"), 2u);                       // stray continuation
  EXPECT_EQ(first_invalid_utf8("caf\xC3\xA9\xE9t\xE9"), 5u);         // Latin-1 after UTF-8
  EXPECT_EQ(first_invalid_utf8("x\xC0\xAF"), 1u);                    // overlong '/'
  EXPECT_EQ(first_invalid_utf8("x\xED\xA0\x80"), 1u);                // surrogate
  EXPECT_EQ(first_invalid_utf8("\xC3\xA9\xE2\x82"), 2u);             // cut short at the end
  EXPECT_EQ(first_invalid_utf8(std::string_view("a\0b", 3)), npos);  // NUL is UTF-8
}

}  // namespace
}  // namespace replaygate
