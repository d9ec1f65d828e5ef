// Tests for diagnostic rendering (text and JSON), ordering and "did you mean" suggestions.
#include "common/diagnostic.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace replaygate {
namespace {

Diagnostic make(std::string code, std::string message, uint32_t line, uint32_t column,
                uint32_t length, std::string hint = {}, std::string path = "p.yaml") {
  Diagnostic d;
  d.code = std::move(code);
  d.message = std::move(message);
  d.path = std::move(path);
  d.span = Span{line, column, 0, length};
  d.hint = std::move(hint);
  return d;
}

TEST(RenderText, ExcerptCaretTildesAndHint) {
  const std::string source = "policy: x\n    verb: replay_onec\n";
  const auto text = render_text(
      {make("RG104", "unknown verb 'replay_onec'", 2, 11, 11, "did you mean 'replay_once'?")},
      source);
  EXPECT_EQ(text,
            "p.yaml:2:11: error[RG104]: unknown verb 'replay_onec'\n"
            "    2 |     verb: replay_onec\n"
            "      |           ^~~~~~~~~~~\n"
            "      = hint: did you mean 'replay_once'?\n");
}

TEST(RenderText, HugeLinesAreCutAroundTheColumn) {
  // One diagnostic on a 100 KB line must stay one screen: a window with "..." at each cut.
  const std::string line = std::string(50000, 'a') + "BAD" + std::string(50000, 'b');
  const auto text = render_text({make("RG005", "too deep", 1, 50001, 3)}, line + "\n");
  const std::string expected_line =
      "    1 | ..." + std::string(80, 'a') + "BAD" + std::string(77, 'b') + "...\n";
  const std::string expected_caret = "      |    " + std::string(80, ' ') + "^~~\n";
  EXPECT_EQ(text, "p.yaml:1:50001: error[RG005]: too deep\n" + expected_line + expected_caret);
  EXPECT_LT(text.size(), 400u);
}

TEST(RenderText, BlankLineBetweenBlocksAndNoHintLineWithoutHint) {
  const std::string source = "a: 1\nb: 2\n";
  Diagnostic warning = make("RG201", "second", 2, 1, 1);
  warning.severity = Severity::kWarning;
  const auto text = render_text({make("RG101", "first", 1, 1, 0), warning}, source);
  EXPECT_EQ(text,
            "p.yaml:1:1: error[RG101]: first\n"
            "    1 | a: 1\n"
            "      | ^\n"
            "\n"
            "p.yaml:2:1: warning[RG201]: second\n"
            "    2 | b: 2\n"
            "      | ^\n");
}

TEST(RenderText, WithoutLineOrSourceThereIsNoExcerpt) {
  EXPECT_EQ(render_text({make("RG100", "the policy file is empty", 0, 0, 0, "write keys")}, ""),
            "p.yaml: error[RG100]: the policy file is empty\n"
            "      = hint: write keys\n");
  // A line the source does not have: the header only.
  EXPECT_EQ(render_text({make("RG001", "bad", 9, 2, 1)}, "a: 1\n"),
            "p.yaml:9:2: error[RG001]: bad\n");
  // No path at all.
  EXPECT_EQ(render_text({make("RG001", "bad", 0, 0, 0, "", "")}, ""), "error[RG001]: bad\n");
}

TEST(RenderText, TabsAreCopiedIntoTheCaretLine) {
  const std::string source = "\tkey:\tvalue\n";
  EXPECT_EQ(render_text({make("RG101", "m", 1, 7, 5)}, source),
            "p.yaml:1:7: error[RG101]: m\n"
            "    1 | \tkey:\tvalue\n"
            "      | \t    \t^~~~~\n");
}

TEST(RenderText, MultiByteCharactersTakeOneCellAndCrIsStripped) {
  // "é" is two bytes: column 8 (bytes) is the 7th character.
  const std::string source = "k: \"caf\xC3\xA9\" x\r\n";
  EXPECT_EQ(render_text({make("RG101", "m", 1, 11, 1)}, source),
            "p.yaml:1:11: error[RG101]: m\n"
            "    1 | k: \"caf\xC3\xA9\" x\n"
            "      |          ^\n");
}

TEST(RenderText, UnprintableBytesAreShownAsQuestionMarks) {
  const std::string source = std::string("a: \x01\xFF", 5) + "z\n";
  EXPECT_EQ(render_text({make("RG009", "m", 1, 6, 1)}, source),
            "p.yaml:1:6: error[RG009]: m\n"
            "    1 | a: ??z\n"
            "      |      ^\n");
}

TEST(RenderText, InvisibleAndBidiCodePointsAreShownAsQuestionMarks) {
  // U+202E (right-to-left override) and U+FEFF (BOM) are each one '?' and one caret cell.
  const std::string source =
      "a: \xE2\x80\xAE"
      "b\xEF\xBB\xBF"
      "c\n";
  EXPECT_EQ(render_text({make("RG101", "m", 1, 11, 1)}, source),
            "p.yaml:1:11: error[RG101]: m\n"
            "    1 | a: ?b?c\n"
            "      |       ^\n");
}

TEST(RenderText, LineAndParagraphSeparatorsInTheExcerptAreQuestionMarks) {
  // U+2028 / U+2029 break lines for some readers; NEL (U+0085) is a C1 control. One cell each.
  const std::string source =
      "a: \xE2\x80\xA8"
      "b\xE2\x80\xA9"
      "c\xC2\x85"
      "d\n";
  EXPECT_EQ(render_text({make("RG101", "m", 1, 14, 1)}, source),
            "p.yaml:1:14: error[RG101]: m\n"
            "    1 | a: ?b?c?d\n"
            "      |         ^\n");
}

TEST(RenderText, ControlCharactersInPathMessageAndHintAreEscaped) {
  // A key or value the author wrote, quoted in a message, cannot cut or forge a line of the log or
  // drive the terminal: C0, DEL, C1, U+2028 and bytes that are not UTF-8 are escaped; backslashes
  // stay single (hints show escapes to type).
  const std::string message = std::string("unknown key '\x1b[31mred\n\rx\0y\x7f", 27) + "\xC2\x9B" +
                              "\xE2\x80\xA8" + "\xFF" + "\\t'";
  const auto text = render_text(
      {make("RG101", message, 1, 1, 1, "write \\t\nnot this", "dir/a\nb.yaml")}, "k: 1\n");
  EXPECT_EQ(text,
            "dir/a\\u000ab.yaml:1:1: error[RG101]: unknown key "
            "'\\u001b[31mred\\u000a\\u000dx\\u0000y\\u007f\\u009b\\u2028\\xff\\t'\n"
            "    1 | k: 1\n"
            "      | ^\n"
            "      = hint: write \\t\\u000anot this\n");
}

TEST(RenderText, CaretPastTheEndOfTheLine) {
  EXPECT_EQ(render_text({make("RG001", "m", 1, 5, 1)}, "ab\n"),
            "p.yaml:1:5: error[RG001]: m\n"
            "    1 | ab\n"
            "      |     ^\n");
}

TEST(RenderText, EmptyListIsEmptyText) { EXPECT_EQ(render_text({}, "x"), ""); }

TEST(RenderJson, FixedKeyOrderAndEscaping) {
  Diagnostic d = make("RG104", "say \"hi\"\\\n\t\x01", 3, 4, 2, "caf\xC3\xA9 \xF0\x9F\x98\x80");
  d.severity = Severity::kWarning;
  EXPECT_EQ(render_json({d}),
            "[\n"
            "  {\"severity\":\"warning\",\"code\":\"RG104\",\"message\":\"say \\\"hi\\\"\\\\\\n\\t"
            "\\u0001\",\"path\":\"p.yaml\",\"line\":3,\"column\":4,\"hint\":\"caf\\u00e9 "
            "\\ud83d\\ude00\"}\n"
            "]\n");
}

TEST(RenderJson, InvalidUtf8BecomesReplacementCharacter) {
  const auto json = render_json({make("RG009", std::string("a\xFF\xC0\x80z"), 1, 1, 1)});
  EXPECT_NE(json.find("\"message\":\"a\\ufffd\\ufffd\\ufffdz\""), std::string::npos) << json;
  for (char c : json) EXPECT_LT(static_cast<unsigned char>(c), 0x80);
}

TEST(RenderJson, EmptyArray) { EXPECT_EQ(render_json({}), "[]\n"); }

TEST(SortDiagnostics, ByPathLineColumnCodeMessage) {
  std::vector<Diagnostic> ds = {make("RG105", "b", 2, 1, 1), make("RG104", "z", 2, 1, 1),
                                make("RG101", "a", 1, 9, 1), make("RG101", "a", 0, 0, 0),
                                make("RG101", "a", 1, 1, 1, "", "a.yaml")};
  sort_diagnostics(ds);
  std::vector<std::string> order;
  for (const auto& d : ds) {
    order.push_back(d.path + ":" + std::to_string(d.span.line) + ":" +
                    std::to_string(d.span.column) + ":" + d.code);
  }
  EXPECT_EQ(order,
            (std::vector<std::string>{"a.yaml:1:1:RG101", "p.yaml:0:0:RG101", "p.yaml:1:9:RG101",
                                      "p.yaml:2:1:RG104", "p.yaml:2:1:RG105"}));
}

TEST(Severity, NamesAndHasErrors) {
  EXPECT_STREQ(severity_name(Severity::kError), "error");
  EXPECT_STREQ(severity_name(Severity::kWarning), "warning");
  EXPECT_STREQ(severity_name(Severity::kInfo), "info");
  Diagnostic warning = make("RG201", "w", 1, 1, 1);
  warning.severity = Severity::kWarning;
  EXPECT_FALSE(has_errors({}));
  EXPECT_FALSE(has_errors({warning}));
  EXPECT_TRUE(has_errors({warning, make("RG101", "e", 1, 1, 1)}));
}

TEST(ClosestMatch, SuggestsTyposOnly) {
  const std::vector<std::string> verbs = {"never", "replay_once", "hold"};
  EXPECT_EQ(closest_match("replay_onec", verbs), "replay_once");  // transposition
  EXPECT_EQ(closest_match("hodl", verbs), "hold");
  EXPECT_EQ(closest_match("nevr", verbs), "never");
  EXPECT_EQ(closest_match("hold", verbs), "hold");
  EXPECT_EQ(closest_match("requeue", verbs), "");
  EXPECT_EQ(closest_match("x", {}), "");
  EXPECT_EQ(closest_match("topik", {"topic", "error_class"}), "topic");
  // Ties go to the earlier candidate.
  EXPECT_EQ(closest_match("ab", {"aa", "bb"}), "aa");
}

// span_in_text never points past the end of the text: the end of a text that ends with a line
// break is shown at the end of its last line, with length 0.
TEST(SpanInText, NeverPastTheEnd) {
  EXPECT_EQ(span_in_text("ab\ncd\n", 4, 1), (Span{2, 2, 4, 1}));
  EXPECT_EQ(span_in_text("ab\ncd\n", 4, 9), (Span{2, 2, 4, 2}));  // cut at the end
  EXPECT_EQ(span_in_text("ab\ncd\n", 6, 1), (Span{2, 3, 5, 0}));  // the end: line 2's break
  EXPECT_EQ(span_in_text("ab\ncd\r\n", 7, 1), (Span{2, 3, 5, 0}));
  EXPECT_EQ(span_in_text("ab\ncd", 99, 1), (Span{2, 3, 5, 0}));  // no break: after "cd"
  EXPECT_EQ(span_in_text("\n\n", 2, 1), (Span{2, 1, 1, 0}));
  EXPECT_EQ(span_in_text("", 0, 1), (Span{1, 1, 0, 0}));
}

}  // namespace
}  // namespace replaygate
