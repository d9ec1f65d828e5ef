// YAML front-end, second half: a strict yaml::Node tree (common/yaml_tree.h) in, an ast::Policy
// (compiler/syntax/ast.h) out.
//
// Interface: build_ast(). It knows the YAML shape of a policy (which keys exist where, which
// values are mappings, lists or scalars) and reports:
//   RG100 the document is empty or not a mapping
//   RG101 an unknown key (top level, input property, verb property, rule, row), with a suggestion
//   RG103 a value of the wrong shape (a list where a scalar belongs, a rule that is neither or
//         both of guard/table, a condition without a matcher, ...)
// Names, types and values are left to check(); required keys that are missing are left as
// nullopt in the AST and reported by check() too.
#pragma once

#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "common/yaml_tree.h"
#include "compiler/syntax/ast.h"

namespace replaygate::yaml {

struct AstResult {
  ast::Policy policy;
  std::vector<Diagnostic> diagnostics;
};

// `root` is Document::root from parse(); `path` is copied into diagnostics. Never throws.
AstResult build_ast(const Node& root, std::string_view path);

}  // namespace replaygate::yaml
