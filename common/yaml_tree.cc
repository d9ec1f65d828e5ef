// Strict YAML reader: the one translation unit that includes yaml-cpp (see yaml_tree.h).
//
// parse() first screens the bytes (size, BOM, UTF-8, NUL and control bytes), then drives
// YAML::Parser with a TreeBuilder event handler that builds yaml::Node values on an explicit
// stack. Problems that make the rest of the file meaningless (anchors and aliases, excessive
// depth, syntax errors) abort parsing at once by throwing StopParsing from the handler; the
// others (duplicate keys, tags, non-scalar keys) are recorded and parsing continues.
#include "common/yaml_tree.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/source.h"

namespace replaygate::yaml {

Node::Node() = default;
Node::Node(const Node&) = default;
Node::Node(Node&&) noexcept = default;
Node& Node::operator=(const Node&) = default;
Node& Node::operator=(Node&&) noexcept = default;
Node::~Node() = default;

const Node* Node::find(std::string_view key) const {
  if (kind != Kind::kMapping) return nullptr;
  for (const auto& [k, v] : entries) {
    if (k.scalar == key) return &v;
  }
  return nullptr;
}

bool Node::is_plain_bool() const {
  return kind == Kind::kScalar && !quoted && (scalar == "true" || scalar == "false");
}

namespace {

// Thrown from the event handler to stop yaml-cpp at the first fatal problem.
struct StopParsing {};

// Maps byte offsets to 1-based line and column (column counts bytes).
class LineIndex {
 public:
  explicit LineIndex(std::string_view text) : text_(text) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') line_starts_.push_back(i + 1);
    }
  }
  Span span_at(size_t offset, size_t length = 1) const {
    if (offset >= text_.size()) return span_in_text(text_, offset, length);  // never past the end
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    Span span;
    span.line = static_cast<uint32_t>(line);
    span.column = static_cast<uint32_t>(offset - line_starts_[line - 1] + 1);
    span.offset = static_cast<uint32_t>(offset);
    span.length = static_cast<uint32_t>(length);
    return span;
  }
  std::string_view text() const { return text_; }
  // Bytes from `offset` to the end of its line (without the line break).
  std::string_view rest_of_line(size_t offset) const {
    if (offset >= text_.size()) return {};
    size_t end = text_.find('\n', offset);
    if (end == std::string_view::npos) end = text_.size();
    std::string_view rest = text_.substr(offset, end - offset);
    if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
    return rest;
  }

 private:
  std::string_view text_;
  std::vector<size_t> line_starts_;
};

// A word as written at `offset` (tag, anchor or alias name), for messages.
std::string word_at(const LineIndex& lines, size_t offset) {
  std::string_view rest = lines.rest_of_line(offset);
  size_t end = 0;
  while (end < rest.size() && rest[end] != ' ' && rest[end] != '\t' && rest[end] != ',' &&
         rest[end] != ']' && rest[end] != '}') {
    ++end;
  }
  return std::string(rest.substr(0, std::min<size_t>(end, 40)));
}

// How many bytes of the source line the scalar starting at `offset` occupies (for the caret).
size_t scalar_extent(const LineIndex& lines, size_t offset, const std::string& value) {
  std::string_view rest = lines.rest_of_line(offset);
  if (rest.empty()) return 1;
  const char first = rest[0];
  if (first == '\'' || first == '"') {
    for (size_t i = 1; i < rest.size(); ++i) {
      if (first == '"' && rest[i] == '\\') {
        ++i;
        continue;
      }
      if (rest[i] == first) {
        if (first == '\'' && i + 1 < rest.size() && rest[i + 1] == '\'') {
          ++i;
          continue;
        }
        return i + 1;
      }
    }
    return rest.size();
  }
  if (first == '|' || first == '>') return 1;
  if (rest.substr(0, value.size()) == value) return std::max<size_t>(value.size(), 1);
  // A plain scalar folded over several lines: underline its first line.
  size_t end = rest.size();
  while (end > 0 && (rest[end - 1] == ' ' || rest[end - 1] == '\t')) --end;
  return std::max<size_t>(end, 1);
}

class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(const LineIndex& lines, std::string_view path, std::vector<Diagnostic>& diagnostics)
      : lines_(lines), path_(path), diagnostics_(diagnostics) {}

  bool has_root() const { return has_root_; }
  Node take_root() { return std::move(root_); }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override {
    Node node;
    node.kind = Node::Kind::kNull;
    node.span = span_of(mark, 0);
    add(std::move(node));
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    const size_t offset = offset_of(mark);
    error("RG003", "aliases are not allowed ('" + word_at(lines_, offset) + "')",
          lines_.span_at(offset, word_at(lines_, offset).size()),
          "write the value out in full: policies do not share or repeat nodes");
    throw StopParsing{};
  }

  void OnAnchor(const YAML::Mark& mark, const std::string& name) override {
    const size_t offset = offset_of(mark);
    error("RG003", "anchors are not allowed ('&" + name + "')",
          lines_.span_at(offset, name.size() + 1),
          "write the value out in full: policies do not share or repeat nodes");
    throw StopParsing{};
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                const std::string& value) override {
    const size_t offset = offset_of(mark);
    const bool explicit_tag = check_tag(tag, offset);
    if (!explicit_tag && tag == "!" && !quote_is_closed(offset)) {
      error("RG001", "YAML syntax error: unterminated quoted string", lines_.span_at(offset, 1),
            "add the closing quote");
      throw StopParsing{};
    }
    Node node;
    node.kind = Node::Kind::kScalar;
    node.scalar = value;
    // yaml-cpp reports "?" for plain scalars and "!" for quoted and block scalars.
    node.quoted = tag == "!" && !explicit_tag;
    node.span = lines_.span_at(offset, explicit_tag ? 1 : scalar_extent(lines_, offset, value));
    add(std::move(node));
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    open(mark, tag, Node::Kind::kSequence);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    open(mark, tag, Node::Kind::kMapping);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    Node node;
    bool has_key = false;
    Node key;
    std::unordered_map<std::string, uint32_t> key_lines;  // kMapping: key -> line of first use
  };

  size_t offset_of(const YAML::Mark& mark) const {
    return mark.pos < 0 ? 0 : static_cast<size_t>(mark.pos);
  }
  Span span_of(const YAML::Mark& mark, size_t length) const {
    return lines_.span_at(offset_of(mark), length);
  }

  void error(std::string code, std::string message, Span span, std::string hint) {
    diagnostics_.push_back(Diagnostic{Severity::kError, std::move(code), std::move(message),
                                      std::string(path_), span, std::move(hint)});
  }

  // yaml-cpp accepts a quoted scalar that runs to the end of the file; we do not.
  bool quote_is_closed(size_t offset) const {
    const std::string_view text = lines_.text();
    if (offset >= text.size() || (text[offset] != '\'' && text[offset] != '"')) return true;
    const char quote = text[offset];
    for (size_t i = offset + 1; i < text.size(); ++i) {
      if (quote == '"' && text[i] == '\\') {
        ++i;
      } else if (text[i] == quote) {
        if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i;
        } else {
          return true;
        }
      }
    }
    return false;
  }

  // Records RG004 for an explicit tag; returns whether there was one. A quoted scalar also has
  // tag "!" in yaml-cpp, so "!" counts as a tag only when the source shows one at the node.
  bool check_tag(const std::string& tag, size_t offset) {
    if (tag.empty() || tag == "?") return false;
    std::string_view rest = lines_.rest_of_line(offset);
    if (tag == "!" && (rest.empty() || rest[0] != '!')) return false;
    const std::string written = word_at(lines_, offset);
    error("RG004", "explicit tags are not allowed ('" + written + "')",
          lines_.span_at(offset, written.size()),
          "remove the tag; the policy schema decides each value's type");
    return true;
  }

  void open(const YAML::Mark& mark, const std::string& tag, Node::Kind kind) {
    const size_t offset = offset_of(mark);
    check_tag(tag, offset);
    if (stack_.size() + 1 > kMaxDepth) {
      error("RG005", "nesting is deeper than " + std::to_string(kMaxDepth) + " levels",
            lines_.span_at(offset, 1), "a policy needs only a few levels; flatten the structure");
      throw StopParsing{};
    }
    Frame frame;
    frame.node.kind = kind;
    frame.node.span = lines_.span_at(offset, 1);
    stack_.push_back(std::move(frame));
  }

  void close() {
    Node node = std::move(stack_.back().node);
    stack_.pop_back();
    add(std::move(node));
  }

  // Attaches a finished node to its parent (or makes it the root).
  void add(Node node) {
    if (stack_.empty()) {
      root_ = std::move(node);
      has_root_ = true;
      return;
    }
    Frame& parent = stack_.back();
    if (parent.node.kind == Node::Kind::kSequence) {
      parent.node.items.push_back(std::move(node));
      return;
    }
    if (!parent.has_key) {
      parent.key = std::move(node);
      parent.has_key = true;
      return;
    }
    parent.has_key = false;
    Node key = std::move(parent.key);
    if (!key.is_scalar()) {
      error("RG008", "a mapping key must be a scalar",
            key.span.length == 0 ? Span{key.span.line, key.span.column, key.span.offset, 1}
                                 : key.span,
            "write the key as a plain or quoted name");
      return;
    }
    // An empty value (`key:`) is reported by yaml-cpp at the next token: point at the key.
    if (node.is_null() && node.span.line != key.span.line) node.span = key.span;
    const auto [it, inserted] = parent.key_lines.emplace(key.scalar, key.span.line);
    if (!inserted) {
      error("RG002", "duplicate key '" + key.scalar + "'", key.span,
            "'" + key.scalar + "' is already defined at line " + std::to_string(it->second) +
                "; YAML keeps only one of them, so remove or rename one");
      return;
    }
    parent.node.entries.emplace_back(std::move(key), std::move(node));
  }

  const LineIndex& lines_;
  std::string_view path_;
  std::vector<Diagnostic>& diagnostics_;
  std::vector<Frame> stack_;
  Node root_;
  bool has_root_ = false;
};

// Stops at the start of a second document.
class SecondDocumentProbe : public YAML::EventHandler {
 public:
  bool started = false;
  YAML::Mark mark;
  void OnDocumentStart(const YAML::Mark& m) override {
    started = true;
    mark = m;
    throw StopParsing{};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Byte-level screening yaml-cpp does not do (common/source.h): BOM, invalid UTF-8, NUL and control
// bytes. Returns false (with one diagnostic) when the bytes are not a text file we accept.
bool screen_bytes(std::string_view text, const LineIndex& lines, std::string_view path,
                  std::vector<Diagnostic>& diagnostics) {
  std::optional<SourceProblem> problem = screen_source(text, SourceRules{});
  if (!problem) return true;
  diagnostics.push_back(Diagnostic{Severity::kError, std::move(problem->code),
                                   std::move(problem->message), std::string(path),
                                   lines.span_at(problem->offset, 1), std::move(problem->hint)});
  return false;
}

}  // namespace

Document parse(std::string_view text, std::string_view path) {
  Document document;
  auto& diagnostics = document.diagnostics;
  if (text.size() > kMaxBytes) {
    diagnostics.push_back(
        Diagnostic{Severity::kError,
                   "RG007",
                   "the file is larger than the limit of " + std::to_string(kMaxBytes) + " bytes",
                   std::string(path),
                   {},
                   "a policy file must be at most 64 MiB"});
    return document;
  }
  const LineIndex lines(text);
  if (!screen_bytes(text, lines, path, diagnostics)) return document;

  std::istringstream stream{std::string(text)};
  const auto syntax_error = [&](const YAML::Mark& mark, const std::string& what) {
    Span span =
        mark.is_null() || mark.pos < 0 ? Span{} : lines.span_at(static_cast<size_t>(mark.pos));
    std::string hint = "check indentation, brackets, quotes and ':' after keys";
    if (what.find("alias") != std::string::npos) {
      hint = "'*' starts an alias in YAML: write the table wildcard quoted, '*'";
    } else if (what.find("flow") != std::string::npos) {
      hint = "a '[' or '{' is not closed (or a ',' is missing) before this point";
    }
    diagnostics.push_back(Diagnostic{Severity::kError, "RG001", "YAML syntax error: " + what,
                                     std::string(path), span, hint});
  };
  try {
    YAML::Parser parser(stream);
    TreeBuilder builder(lines, path, diagnostics);
    try {
      parser.HandleNextDocument(builder);
    } catch (const StopParsing&) {
      return document;
    }
    if (builder.has_root()) document.root = builder.take_root();
    SecondDocumentProbe probe;
    try {
      parser.HandleNextDocument(probe);
    } catch (const StopParsing&) {
    }
    if (probe.started) {
      diagnostics.push_back(Diagnostic{
          Severity::kError, "RG006", "the file holds more than one YAML document",
          std::string(path), lines.span_at(static_cast<size_t>(std::max(probe.mark.pos, 0)), 3),
          "a policy is one document: remove the '---' separator and what follows"});
    }
  } catch (const YAML::DeepRecursion& e) {
    diagnostics.push_back(Diagnostic{
        Severity::kError, "RG005",
        "nesting is deeper than " + std::to_string(kMaxDepth) + " levels", std::string(path),
        e.mark.pos < 0 ? Span{} : lines.span_at(static_cast<size_t>(e.mark.pos)),
        "a policy needs only a few levels; flatten the structure"});
    document.root = Node{};
  } catch (const YAML::Exception& e) {
    syntax_error(e.mark, e.msg);
    document.root = Node{};
  } catch (const std::exception& e) {
    syntax_error(YAML::Mark::null_mark(), e.what());
    document.root = Node{};
  }
  return document;
}

}  // namespace replaygate::yaml
