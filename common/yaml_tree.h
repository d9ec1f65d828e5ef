// Strict YAML reader: YAML text in, our own node tree with spans out. The only user of yaml-cpp.
//
// yaml-cpp (0.7) is used through its event API (YAML::Parser + YAML::EventHandler) in
// yaml_tree.cc only; nothing else in the project includes a yaml-cpp header. The reader is strict
// where yaml-cpp is lax (see ../shared/LIBRARIES.md):
//   * duplicate mapping keys are an error (yaml-cpp keeps one silently)      RG002
//   * anchors and aliases are an error (billion laughs, self-reference)     RG003
//   * explicit tags are an error                                            RG004
//   * nesting deeper than kMaxDepth is an error, found without recursion    RG005
//   * more than one document, or a file over kMaxBytes, is an error         RG006 / RG007
//   * syntax errors carry yaml-cpp's mark converted to 1-based line:col      RG001
//   * a non-scalar mapping key is an error                                  RG008
// Scalars stay text. Whether a scalar was quoted is kept, so that the callers decode strictly:
// only plain `true`/`false` are booleans, `no`/`off`/`yes` stay the strings the author wrote.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/diagnostic.h"
#include "common/source.h"
#include "common/span.h"

namespace replaygate::yaml {

inline constexpr size_t kMaxDepth = 64;
inline constexpr size_t kMaxBytes = kMaxSourceBytes;  // 64 MiB (common/source.h)

struct Node {
  enum class Kind : uint8_t { kNull = 0, kScalar = 1, kSequence = 2, kMapping = 3 };
  Kind kind = Kind::kNull;
  std::string scalar;       // kScalar: the text as written (after YAML unescaping)
  bool quoted = false;      // kScalar: single- or double-quoted, or a block scalar (| >)
  Span span;                // where the node starts
  std::vector<Node> items;  // kSequence
  std::vector<std::pair<Node, Node>> entries;  // kMapping, source order; keys are scalars, unique

  // Defined in yaml_tree.cc, where Node is complete: clang with libstdc++ refuses to instantiate
  // the members of std::pair<Node, Node> inside Node's own definition (the fuzz build uses clang).
  Node();
  Node(const Node&);
  Node(Node&&) noexcept;
  Node& operator=(const Node&);
  Node& operator=(Node&&) noexcept;
  ~Node();

  bool is_null() const { return kind == Kind::kNull; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_mapping() const { return kind == Kind::kMapping; }
  // kMapping: the value for `key`, or nullptr.
  const Node* find(std::string_view key) const;
  // A plain (unquoted) scalar spelled exactly `true` or `false`.
  bool is_plain_bool() const;
};

struct Document {
  Node root;  // kNull for an empty file
  std::vector<Diagnostic> diagnostics;
  bool ok() const { return !has_errors(diagnostics); }
};

// Parses `text` (the whole file). `path` is copied into diagnostics. Never throws; never recurses
// on the input's nesting (the tree is built with an explicit stack).
Document parse(std::string_view text, std::string_view path);

}  // namespace replaygate::yaml
