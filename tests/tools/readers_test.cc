// Unit tests of the CLI's building blocks: JSON escaping, strict number parsing, the line reader
// and the JSON shape pre-check.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/mapping.h"
#include "inputs/records.h"
#include "tools/cli/output.h"

namespace replaygate::cli {
namespace {

using inputs::JsonShape;
using inputs::LineReader;
using inputs::parse_bool_strict;
using inputs::parse_int64_strict;
using inputs::quote_for_reason;
using inputs::scan_json_shape;

TEST(JsonString, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(json_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_string(std::string_view("x\n\t\r\x01\0y", 7)), "\"x\\n\\t\\r\\u0001\\u0000y\"");
}

TEST(JsonString, KeepsUtf8AndReplacesWhatIsNot) {
  EXPECT_EQ(json_string("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  EXPECT_EQ(json_string("a\xFF"
                        "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(json_string("\xC0\xAF"), "\"\\ufffd\\ufffd\"");             // overlong '/'
  EXPECT_EQ(json_string("\xED\xA0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");  // surrogate
  EXPECT_EQ(json_string("\xE2\x82"), "\"\\ufffd\\ufffd\"");             // cut short
}

TEST(StrictNumbers, Int64) {
  int64_t v = 7;
  EXPECT_TRUE(parse_int64_strict("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(parse_int64_strict("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_TRUE(parse_int64_strict("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "1.0", "1e3", "0x10", "9223372036854775808",
                          "-9223372036854775809", "99999999999999999999", "three"}) {
    EXPECT_FALSE(parse_int64_strict(bad, &v)) << bad;
  }
}

TEST(StrictNumbers, Bool) {
  bool b = false;
  EXPECT_TRUE(parse_bool_strict("true", &b));
  EXPECT_TRUE(b);
  EXPECT_TRUE(parse_bool_strict("false", &b));
  EXPECT_FALSE(b);
  for (const char* bad : {"True", "yes", "no", "1", "", "false "}) {
    EXPECT_FALSE(parse_bool_strict(bad, &b)) << bad;
  }
}

struct Read {
  LineReader::Status status;
  std::string line;
  uint64_t number;
};

std::vector<Read> read_all(const std::string& text, size_t max_line) {
  char path[] = "/tmp/rg_line_reader.XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::unlink(path);
  EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  EXPECT_EQ(::lseek(fd, 0, SEEK_SET), 0);
  LineReader reader(fd, max_line);
  std::vector<Read> out;
  std::string_view line;
  while (true) {
    const LineReader::Status s = reader.next(&line);
    if (s == LineReader::Status::kEnd) break;
    out.push_back(
        {s, s == LineReader::Status::kLine ? std::string(line) : "", reader.line_number()});
    if (s == LineReader::Status::kError || out.size() > 100) break;
  }
  ::close(fd);
  return out;
}

// The size of the file behind `fd` after a BlockWriter on it buffered one line and went out of
// scope, normally or while an exception unwound.
off_t size_after_block_writer(bool throw_before_flush) {
  char path[] = "/tmp/rg_block_writer.XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::unlink(path);
  try {
    BlockWriter out(fd);
    out.buffer().append("decided\n", 8);
    if (throw_before_flush) throw std::runtime_error("the audit append failed");
  } catch (const std::runtime_error&) {
  }
  const off_t size = ::lseek(fd, 0, SEEK_END);
  ::close(fd);
  return size;
}

// decide --audit records a block in the audit log before it prints it: a block whose recording
// threw must not be printed by the writer's destructor on the way out.
TEST(BlockWriter, FlushesOnScopeExitButNotWhileAnExceptionUnwinds) {
  EXPECT_EQ(size_after_block_writer(false), 8);
  EXPECT_EQ(size_after_block_writer(true), 0);
}

TEST(LineReader, SplitsLinesDropsCrAndKeepsTheLastUnterminatedLine) {
  const auto lines = read_all("a\r\nb\n\n  \nlast", 100);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].line, "a");
  EXPECT_EQ(lines[1].line, "b");
  EXPECT_EQ(lines[2].line, "");
  EXPECT_EQ(lines[3].line, "  ");
  EXPECT_EQ(lines[4].line, "last");
  EXPECT_EQ(lines[4].number, 5u);
  for (const auto& l : lines) EXPECT_EQ(l.status, LineReader::Status::kLine);
}

TEST(LineReader, SkipsLinesOverTheCapAndCountsThem) {
  const auto lines = read_all("1234\n12345\n" + std::string(300000, 'x') + "\nok\n123456", 4);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].status, LineReader::Status::kLine);
  EXPECT_EQ(lines[0].line, "1234");
  EXPECT_EQ(lines[1].status, LineReader::Status::kTooLarge);
  EXPECT_EQ(lines[2].status, LineReader::Status::kTooLarge);
  EXPECT_EQ(lines[2].number, 3u);
  EXPECT_EQ(lines[3].status, LineReader::Status::kLine);
  EXPECT_EQ(lines[3].line, "ok");
  EXPECT_EQ(lines[4].status, LineReader::Status::kTooLarge);
  EXPECT_EQ(lines[4].number, 5u);
}

TEST(LineReader, CrLfAtTheCapStillFits) {
  const auto lines = read_all("1234\r\n", 4);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].status, LineReader::Status::kLine);
  EXPECT_EQ(lines[0].line, "1234");
}

TEST(LineReader, EmptyInputHasNoLines) { EXPECT_TRUE(read_all("", 10).empty()); }

TEST(JsonShape, DepthAndTrailingContent) {
  EXPECT_EQ(scan_json_shape("{\"a\":[1,{\"b\":2}]}", 3), JsonShape::kOk);
  EXPECT_EQ(scan_json_shape("{\"a\":[1,{\"b\":[]}]}", 3), JsonShape::kTooDeep);
  EXPECT_EQ(scan_json_shape("{\"a\":\"[[[[[[\"}", 2), JsonShape::kOk);    // inside a string
  EXPECT_EQ(scan_json_shape("{\"a\":\"\\\"[[[[\"}", 2), JsonShape::kOk);  // escaped quote
  EXPECT_EQ(scan_json_shape("{} x", 8), JsonShape::kTrailing);
  EXPECT_EQ(scan_json_shape("{}  \t ", 8), JsonShape::kOk);
  EXPECT_EQ(scan_json_shape("% Reached end of topic t [0] at offset 5", 8), JsonShape::kOk);
}

TEST(QuoteForReason, CutsLongTextOnACharacterBoundary) {
  EXPECT_EQ(quote_for_reason("abc"), "'abc'");
  const std::string long_text = std::string(63, 'a') + "\xC3\xA9" + "zzz";
  EXPECT_EQ(quote_for_reason(long_text), "'" + std::string(63, 'a') + "...'");
}

TEST(QuoteForReason, EscapesControlBytesAndBackslashes) {
  EXPECT_EQ(quote_for_reason(std::string("a\x1b[31mRED\x07\nFAKE\0b\x7f\\", 19)),
            "'a\\u001b[31mRED\\u0007\\u000aFAKE\\u0000b\\u007f\\\\'");
  EXPECT_EQ(quote_for_reason("caf\xC3\xA9"), "'caf\xC3\xA9'");  // UTF-8 stays as it is
  // C1 controls (CSI U+009B, NEL U+0085) and the line/paragraph separators are escaped too.
  EXPECT_EQ(quote_for_reason("a\xC2\x9B"
                             "2J\xC2\x85"
                             "b\xE2\x80\xA8"
                             "c\xE2\x80\xA9"
                             "d\xC2\xA0"),
            "'a\\u009b2J\\u0085b\\u2028c\\u2029d\xC2\xA0'");
}

}  // namespace
}  // namespace replaygate::cli
