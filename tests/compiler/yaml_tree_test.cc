// Tests for the strict YAML reader: tree shape, spans, quoting, and every rejection (RG0xx).
#include "common/yaml_tree.h"

#include <gtest/gtest.h>

#include <string>

namespace replaygate::yaml {
namespace {

std::string codes(const Document& document) {
  std::string out;
  for (const auto& d : document.diagnostics) {
    out += (out.empty() ? "" : " ") + d.code + "@" + std::to_string(d.span.line) + ":" +
           std::to_string(d.span.column);
  }
  return out;
}

TEST(YamlTree, BuildsMappingsSequencesAndScalarsWithSpans) {
  const Document doc = parse("a: 1\nb:\n  - x\n  - 'y'\nc: {d: e}\n", "t.yaml");
  ASSERT_TRUE(doc.ok()) << codes(doc);
  const Node& root = doc.root;
  ASSERT_TRUE(root.is_mapping());
  ASSERT_EQ(root.entries.size(), 3u);
  EXPECT_EQ(root.entries[0].first.scalar, "a");
  EXPECT_EQ(root.entries[0].second.scalar, "1");
  EXPECT_EQ(root.entries[0].second.span, (Span{1, 4, 3, 1}));
  const Node* b = root.find("b");
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->is_sequence());
  ASSERT_EQ(b->items.size(), 2u);
  EXPECT_FALSE(b->items[0].quoted);
  EXPECT_TRUE(b->items[1].quoted);
  EXPECT_EQ(b->items[1].scalar, "y");
  EXPECT_EQ(b->items[1].span, (Span{4, 5, 18, 3}));  // the quotes are underlined too
  const Node* c = root.find("c");
  ASSERT_NE(c, nullptr);
  ASSERT_NE(c->find("d"), nullptr);
  EXPECT_EQ(c->find("d")->scalar, "e");
  EXPECT_EQ(root.find("zz"), nullptr);
  EXPECT_EQ(b->find("x"), nullptr);  // not a mapping
}

TEST(YamlTree, QuotedAndBlockScalarsAreNotPlain) {
  const Document doc =
      parse("p: true\nq: 'true'\nr: \"false\"\ns: |\n  true\nt: >\n  x\nu: yes\nv: no\n", "t.yaml");
  ASSERT_TRUE(doc.ok()) << codes(doc);
  const Node& root = doc.root;
  EXPECT_TRUE(root.find("p")->is_plain_bool());
  EXPECT_FALSE(root.find("q")->is_plain_bool());
  EXPECT_TRUE(root.find("q")->quoted);
  EXPECT_TRUE(root.find("r")->quoted);
  EXPECT_TRUE(root.find("s")->quoted);
  EXPECT_EQ(root.find("s")->scalar, "true\n");
  EXPECT_TRUE(root.find("t")->quoted);
  // YAML 1.1 booleans stay the words the author wrote.
  EXPECT_FALSE(root.find("u")->is_plain_bool());
  EXPECT_EQ(root.find("u")->scalar, "yes");
  EXPECT_EQ(root.find("v")->scalar, "no");
  EXPECT_FALSE(root.find("v")->quoted);
}

TEST(YamlTree, NullsAndEmptyValuesPointAtTheirKey) {
  const Document doc = parse("a:\nb: ~\nc: null\n", "t.yaml");
  ASSERT_TRUE(doc.ok()) << codes(doc);
  EXPECT_TRUE(doc.root.find("a")->is_null());
  EXPECT_EQ(doc.root.find("a")->span.line, 1u);
  EXPECT_TRUE(doc.root.find("b")->is_null());
  EXPECT_EQ(doc.root.find("b")->span, (Span{2, 4, 6, 0}));
  EXPECT_TRUE(doc.root.find("c")->is_null());
}

TEST(YamlTree, EmptyAndCommentOnlyFilesHaveANullRoot) {
  EXPECT_TRUE(parse("", "t.yaml").root.is_null());
  EXPECT_TRUE(parse("", "t.yaml").ok());
  EXPECT_TRUE(parse("# nothing\n", "t.yaml").root.is_null());
}

TEST(YamlTree, CrlfLineEndings) {
  const Document doc = parse("a: 1\r\nb: \"x\"\r\n", "t.yaml");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc.root.find("b")->span, (Span{2, 4, 9, 3}));
}

TEST(YamlTree, DuplicateKeyPointsAtTheSecondAndNamesTheFirstLine) {
  const Document doc = parse("a: 1\nb: 2\na: 3\n", "t.yaml");
  ASSERT_EQ(doc.diagnostics.size(), 1u);
  const Diagnostic& d = doc.diagnostics[0];
  EXPECT_EQ(d.code, "RG002");
  EXPECT_EQ(d.path, "t.yaml");
  EXPECT_EQ(d.span, (Span{3, 1, 10, 1}));
  EXPECT_EQ(d.message, "duplicate key 'a'");
  EXPECT_NE(d.hint.find("line 1"), std::string::npos) << d.hint;
  // The first value is kept; parsing went on.
  EXPECT_EQ(doc.root.entries.size(), 2u);
  EXPECT_EQ(doc.root.find("a")->scalar, "1");
}

TEST(YamlTree, DuplicateKeysAreFoundInNestedFlowMappingsAndQuotedSpellings) {
  const Document doc = parse("x: {a: 1, 'a': 2}\ny: [{b: 1, b: 2}]\n", "t.yaml");
  EXPECT_EQ(codes(doc), "RG002@1:11 RG002@2:12");
}

TEST(YamlTree, AnchorsAndAliasesAreRejectedAtOnce) {
  EXPECT_EQ(codes(parse("a: &x 1\nb: *x\n", "t.yaml")), "RG003@1:4");
  EXPECT_EQ(codes(parse("a: &a [*a]\n", "t.yaml")), "RG003@1:4");
  const Document alias_only = parse("a: [1, *nowhere]\n", "t.yaml");
  ASSERT_FALSE(alias_only.ok());
  EXPECT_TRUE(alias_only.root.is_null());
}

TEST(YamlTree, BillionLaughsStopsAtTheFirstAnchor) {
  std::string text = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char c = 'b'; c <= 'z'; ++c) {
    const char prev = static_cast<char>(c - 1);
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 9; ++i) text += std::string(i ? ", " : "") + "*" + prev;
    text += "]\n";
  }
  const Document doc = parse(text, "t.yaml");
  EXPECT_EQ(codes(doc), "RG003@1:4");
  EXPECT_EQ(doc.diagnostics[0].message, "anchors are not allowed ('&a')");
}

TEST(YamlTree, ExplicitTagsAreRejectedButQuotedBangIsText) {
  EXPECT_EQ(codes(parse("a: !!str x\nb: !foo y\nc: ! z\nd: !!map {e: 1}\n", "t.yaml")),
            "RG004@1:4 RG004@2:4 RG004@3:4 RG004@4:4");
  const Document quoted = parse("a: '!x'\nb: \"!!str\"\n", "t.yaml");
  ASSERT_TRUE(quoted.ok()) << codes(quoted);
  EXPECT_EQ(quoted.root.find("a")->scalar, "!x");
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(YamlTree, DepthLimit) {
  // The root counts as one level.
  EXPECT_TRUE(parse(nested(kMaxDepth), "t.yaml").ok());
  const Document deep = parse(nested(kMaxDepth + 1), "t.yaml");
  EXPECT_EQ(codes(deep), "RG005@1:65");
  // Far beyond yaml-cpp's own recursion limit: still a clean RG005.
  EXPECT_EQ(codes(parse(nested(100000), "t.yaml")), "RG005@1:65");
  std::string block;
  for (size_t i = 0; i < 70; ++i) block += std::string(i * 2, ' ') + "k:\n";
  EXPECT_EQ(parse(block, "t.yaml").diagnostics.at(0).code, "RG005");
}

TEST(YamlTree, MultipleDocuments) {
  const Document doc = parse("a: 1\n---\nb: 2\n", "t.yaml");
  EXPECT_EQ(codes(doc), "RG006@2:1");
  EXPECT_EQ(doc.root.find("a")->scalar, "1");
  // One explicit document with an end marker is fine.
  EXPECT_TRUE(parse("---\na: 1\n...\n", "t.yaml").ok());
}

TEST(YamlTree, FileTooLarge) {
  const std::string big(kMaxBytes + 1, ' ');
  const Document doc = parse(big, "t.yaml");
  EXPECT_EQ(codes(doc), "RG007@0:0");
}

TEST(YamlTree, NonScalarKeys) {
  EXPECT_EQ(codes(parse("? [a]\n: 1\n{b: 1}: 2\nok: 3\n", "t.yaml")), "RG008@1:3 RG008@3:1");
  EXPECT_EQ(codes(parse("~: 1\n", "t.yaml")), "RG008@1:1");
}

TEST(YamlTree, SyntaxErrorsCarryOneBasedMarks) {
  const Document doc = parse("a: [1, 2\nb: 3\n", "t.yaml");
  ASSERT_EQ(doc.diagnostics.size(), 1u);
  EXPECT_EQ(doc.diagnostics[0].code, "RG001");
  EXPECT_EQ(doc.diagnostics[0].message, "YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(doc.diagnostics[0].span.line, 2u);
  EXPECT_EQ(doc.diagnostics[0].span.column, 2u);
  EXPECT_TRUE(doc.root.is_null());
  EXPECT_EQ(parse("a: 'unterminated\n", "t.yaml").diagnostics.at(0).code, "RG001");
  EXPECT_EQ(parse("a: b: c\n", "t.yaml").diagnostics.at(0).code, "RG001");
}

TEST(YamlTree, EncodingProblems) {
  EXPECT_EQ(codes(parse("\xEF\xBB\xBF"
                        "a: 1\n",
                        "t.yaml")),
            "RG010@1:1");
  EXPECT_EQ(codes(parse(std::string("a: 1\nb: \0\n", 10), "t.yaml")), "RG011@2:4");
  EXPECT_EQ(codes(parse("a: \x01\n", "t.yaml")), "RG011@1:4");
  EXPECT_EQ(codes(parse("a: caf\xE9\n", "t.yaml")), "RG009@1:7");
  EXPECT_EQ(codes(parse("a: \xC0\x80\n", "t.yaml")), "RG009@1:4");          // overlong NUL
  EXPECT_EQ(codes(parse("a: \xED\xA0\x80\n", "t.yaml")), "RG009@1:4");      // surrogate
  EXPECT_EQ(codes(parse("a: \xF4\x90\x80\x80\n", "t.yaml")), "RG009@1:4");  // > U+10FFFF
  EXPECT_EQ(codes(parse("a: \xE2\x82", "t.yaml")), "RG009@1:4");            // truncated
  // Valid multi-byte text and tabs are fine.
  const Document ok = parse("a: \"caf\xC3\xA9 \xF0\x9F\x98\x80\"\n", "t.yaml");
  ASSERT_TRUE(ok.ok()) << codes(ok);
  EXPECT_EQ(ok.root.find("a")->scalar, "caf\xC3\xA9 \xF0\x9F\x98\x80");
}

TEST(YamlTree, CollectsSeveralNonFatalProblems) {
  const Document doc = parse("a: 1\na: 2\nb: !!int 3\nb: 4\n", "t.yaml");
  EXPECT_EQ(codes(doc), "RG002@2:1 RG004@3:4 RG002@4:1");
}

TEST(YamlTree, TruncatedInputsNeverCrash) {
  const std::string text =
      "policy: x\nrules:\n  - guard: g\n    when: {a: [1, 'b', \"c\"]}\n    verb: v\n"
      "  - table: t\n    rows:\n      - ['*', x, y]\n";
  for (size_t n = 0; n <= text.size(); ++n) {
    const Document doc = parse(text.substr(0, n), "t.yaml");
    for (const auto& d : doc.diagnostics) EXPECT_FALSE(d.code.empty());
  }
}

}  // namespace
}  // namespace replaygate::yaml
