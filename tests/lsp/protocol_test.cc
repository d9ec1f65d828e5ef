// The language server's protocol parts on their own: framing (MessageReader over memory, with a
// small cap), JSON-RPC parsing (depth, ids, batches) and positions (bytes <-> UTF-16 / UTF-8).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/lsp/framing.h"
#include "tools/lsp/jsonrpc.h"
#include "tools/lsp/positions.h"

namespace replaygate::lsp {
namespace {

std::vector<Frame> frames_of(const std::string& bytes, size_t cap = kMaxMessageBytes) {
  MemorySource source(bytes);
  MessageReader reader(source, cap);
  std::vector<Frame> out;
  for (;;) {
    Frame frame = reader.next();
    const Frame::Kind kind = frame.kind;
    out.push_back(std::move(frame));
    if (kind == Frame::Kind::kEnd || kind == Frame::Kind::kTruncated ||
        kind == Frame::Kind::kLost || kind == Frame::Kind::kReadError) {
      return out;
    }
  }
}

TEST(LspFraming, ReadsMessagesBackToBackWithContentTypeAndCaseInsensitiveNames) {
  const std::string bytes = frame("{\"a\":1}") +
                            "content-length: 2\r\nContent-Type: application/vscode-jsonrpc; "
                            "charset=utf-8\r\n\r\n[]" +
                            frame("");
  const std::vector<Frame> frames = frames_of(bytes);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].kind, Frame::Kind::kMessage);
  EXPECT_EQ(frames[0].body, "{\"a\":1}");
  EXPECT_EQ(frames[1].body, "[]");
  EXPECT_EQ(frames[2].kind, Frame::Kind::kMessage);
  EXPECT_EQ(frames[2].body, "");
  EXPECT_EQ(frames[3].kind, Frame::Kind::kEnd);
}

TEST(LspFraming, ABodyCutShortByTheEndOfTheStreamIsTruncatedNotAWait) {
  const std::vector<Frame> frames = frames_of("Content-Length: 1000\r\n\r\n{\"jsonrpc\":");
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Frame::Kind::kTruncated);
  EXPECT_EQ(frames[0].problem,
            "the input ended 11 bytes into a message of 1000 bytes (Content-Length)");
}

TEST(LspFraming, AHeaderWithoutLengthIsReportedAndTheNextMessageStillRead) {
  const std::vector<Frame> frames =
      frames_of("Content-Type: x\r\n\r\n" + std::string("Content-Length: 1x\r\n\r\n") +
                "garbage line\r\n\r\n" + frame("{}"));
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[0].kind, Frame::Kind::kBadHeader);
  EXPECT_EQ(frames[0].problem, "a header block without Content-Length");
  EXPECT_EQ(frames[1].kind, Frame::Kind::kBadHeader);
  EXPECT_EQ(frames[1].problem, "Content-Length is not a decimal number (\" 1x\")");
  EXPECT_EQ(frames[2].kind, Frame::Kind::kBadHeader);
  EXPECT_EQ(frames[2].problem, "a header line without ':' (\"garbage line\")");
  EXPECT_EQ(frames[3].body, "{}");
  EXPECT_EQ(frames[4].kind, Frame::Kind::kEnd);
}

TEST(LspFraming, ABodyOverTheCapIsSkippedWithoutKeepingIt) {
  const std::vector<Frame> frames = frames_of(frame(std::string(100, 'x')) + frame("{}"), 64);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].kind, Frame::Kind::kTooLarge);
  EXPECT_EQ(frames[0].body, "");
  EXPECT_EQ(frames[0].problem, "a message of 100 bytes is over the limit of 64 bytes");
  EXPECT_EQ(frames[1].body, "{}");
  EXPECT_EQ(frames[2].kind, Frame::Kind::kEnd);
}

TEST(LspFraming, AnAbsurdLengthIsSkippedUntilTheStreamEnds) {
  const std::vector<Frame> frames =
      frames_of("Content-Length: 99999999999999999999999999\r\n\r\n{}", 64);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Frame::Kind::kTruncated);
}

TEST(LspFraming, AnEndlessHeaderLosesTheFraming) {
  const std::vector<Frame> frames = frames_of(std::string(kMaxHeaderBytes + 10, 'a'));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].kind, Frame::Kind::kLost);
  std::string many;  // short lines, but more of them than a header block may hold
  for (int i = 0; i < 5; ++i) many += std::string(2000, 'X') + ": y\r\n";
  const std::vector<Frame> lines = frames_of(many + "\r\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].kind, Frame::Kind::kLost);
}

TEST(LspFraming, TheStreamMayEndInBlankLinesButNotInsideAHeader) {
  EXPECT_EQ(frames_of(frame("{}") + "\r\n").back().kind, Frame::Kind::kEnd);
  EXPECT_EQ(frames_of("Content-Length: 2\r\n").back().kind, Frame::Kind::kTruncated);
  EXPECT_EQ(frames_of("Content-Len").back().kind, Frame::Kind::kTruncated);
}

TEST(LspJsonRpc, SortsRequestsNotificationsAndErrors) {
  ParsedMessage request =
      parse_message(R"({"jsonrpc":"2.0","id":7,"method":"shutdown","params":{}})");
  ASSERT_TRUE(request.message);
  EXPECT_EQ(request.message->method, "shutdown");
  EXPECT_EQ(*request.message->id, 7);
  ParsedMessage note = parse_message(R"({"jsonrpc":"2.0","method":"initialized"})");
  ASSERT_TRUE(note.message);
  EXPECT_FALSE(note.message->id);
  ParsedMessage bad = parse_message("{\"jsonrpc\":");
  EXPECT_EQ(bad.error_code, kParseError);
  EXPECT_TRUE(bad.id.is_null());
  ParsedMessage batch = parse_message("[{}]");
  EXPECT_EQ(batch.error_code, kInvalidRequest);
  ParsedMessage no_version = parse_message(R"({"id":"x","method":"m"})");
  EXPECT_EQ(no_version.error_code, kInvalidRequest);
  EXPECT_EQ(no_version.id, "x");
  ParsedMessage bad_id = parse_message(R"({"jsonrpc":"2.0","id":[1],"method":"m"})");
  EXPECT_EQ(bad_id.error_code, kInvalidRequest);
  ParsedMessage bad_utf8 = parse_message("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}");
  EXPECT_EQ(bad_utf8.error_code, kParseError);
}

TEST(LspJsonRpc, DeepNestingIsRefusedNotRecursedInto) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const ParsedMessage parsed = parse_message(deep);
  EXPECT_EQ(parsed.error_code, kParseError);
  EXPECT_EQ(parsed.error, "the message is nested deeper than 64 levels");
  const std::string ok =
      "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":" + std::string(60, '[') +
      std::string(60, ']') + "}";
  EXPECT_TRUE(parse_message(ok).message);
}

TEST(LspJsonRpc, RepliesAreValidJsonEvenForInvalidUtf8) {
  EXPECT_EQ(error_reply(nullptr, kParseError, "bad \xff byte"),
            "{\"error\":{\"code\":-32700,\"message\":\"bad \xef\xbf\xbd byte\"},\"id\":null,"
            "\"jsonrpc\":\"2.0\"}");
}

// "é" is 2 bytes and 1 UTF-16 unit; "😀" (U+1F600) is 4 bytes and 2 units (a surrogate pair).
TEST(LspPositions, ConvertsBytesToUtf16AndBack) {
  const std::string text = "ab\ncé😀x\r\nlast";
  const LineIndex lines(text);
  const size_t x = text.find('x');
  EXPECT_EQ(lines.position_of(x, Encoding::kUtf16), (Position{1, 4}));
  EXPECT_EQ(lines.position_of(x, Encoding::kUtf8), (Position{1, 7}));
  EXPECT_EQ(lines.offset_of(Position{1, 4}, Encoding::kUtf16), x);
  EXPECT_EQ(lines.offset_of(Position{1, 7}, Encoding::kUtf8), x);
  // Between the halves of the surrogate pair: the emoji's start.
  EXPECT_EQ(lines.offset_of(Position{1, 3}, Encoding::kUtf16), text.find("😀"));
  // Past the end of a line: its end, before "\r\n"'s '\n' (the '\r' is the last character).
  EXPECT_EQ(lines.offset_of(Position{1, 99}, Encoding::kUtf16), text.find('\n', x));
  EXPECT_EQ(lines.offset_of(Position{9, 0}, Encoding::kUtf16), text.size());
  EXPECT_EQ(lines.end(Encoding::kUtf16), (Position{2, 4}));
  // A compiler span (1-based line, byte column, length) as lint reports it.
  const Span span{2, static_cast<uint32_t>(x - 3 + 1), static_cast<uint32_t>(x), 1};
  EXPECT_EQ(lines.range_of(span, Encoding::kUtf16), (Range{{1, 4}, {1, 5}}));
  EXPECT_EQ(lines.range_of(Span{}, Encoding::kUtf16), (Range{}));
  // A span longer than its line ends at the line's end.
  EXPECT_EQ(lines.range_of(Span{1, 2, 1, 50}, Encoding::kUtf16), (Range{{0, 1}, {0, 2}}));
}

}  // namespace
}  // namespace replaygate::lsp
