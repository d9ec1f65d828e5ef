// The compiler's front door (see compile.h): read the file, pick the front-end by extension,
// parse, check, analyse, and hand back the checked policy with every diagnostic, sorted.
#include "compiler/compile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <system_error>

#include "common/source.h"
#include "common/yaml_tree.h"
#include "compiler/analysis/analysis.h"
#include "compiler/check.h"
#include "compiler/syntax/dsl_policy.h"
#include "compiler/syntax/yaml_policy.h"
#include "runtime/table_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate {
namespace {

std::string lowercase_extension(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

std::string base_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  if (name.empty() || name == "." || name == "..") name = "policy";
  return name;
}

// Problems after which the YAML tree is not worth reading further.
bool tree_unusable(const yaml::Document& document) {
  for (const Diagnostic& d : document.diagnostics) {
    if (d.code == "RG001" || d.code == "RG003" || d.code == "RG005" || d.code == "RG007" ||
        d.code == "RG009" || d.code == "RG010" || d.code == "RG011") {
      return true;
    }
  }
  return false;
}

void append(std::vector<Diagnostic>& to, std::vector<Diagnostic> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

std::string hex_digest(std::string_view bytes) {
  const XXH128_hash_t hash = XXH3_128bits(bytes.data(), bytes.size());
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : canonical.digest) {
    out += kHex[byte >> 4];
    out += kHex[byte & 0x0F];
  }
  return out;
}

LoadedPolicy load_policy_text(std::string_view text, const std::string& path,
                              std::optional<ast::Policy>* syntax) {
  if (syntax != nullptr) syntax->reset();
  LoadedPolicy out;
  out.source_text = std::string(text);
  const std::string extension = lowercase_extension(path);
  const auto fail = [&](std::string code, std::string message, std::string hint) {
    out.diagnostics.push_back(Diagnostic{
        Severity::kError, std::move(code), std::move(message), path, {}, std::move(hint)});
    return out;
  };
  if (extension != ".policy" && extension != ".yaml" && extension != ".yml") {
    return fail("RG013",
                "unsupported policy file extension '" + extension +
                    "'; supported: .policy (the policy language), .yaml, .yml (YAML)",
                // A table file given where a policy is expected: say which option takes it.
                text.size() >= sizeof format::kMagic &&
                        text.compare(0, sizeof format::kMagic,
                                     std::string_view(format::kMagic, sizeof format::kMagic)) == 0
                    ? "this is a compiled table: use --table"
                    : "rename the file to end in .policy or .yaml");
  }
  StageClock clock(&out.timings);
  // The YAML tree is released once the AST is built (it is the largest structure of a YAML
  // compile). The AST is kept until the end: freeing it before analysis saves little peak memory
  // and fragments the heap that analysis and lowering then allocate from (measured slower).
  const auto check_and_analyze = [&](const ast::Policy& policy) {
    clock.lap(extension == ".policy" ? "parse" : "ast");
    CheckResult checked = check(policy, path);
    append(out.diagnostics, std::move(checked.diagnostics));
    clock.lap("check");
    if (!has_errors(out.diagnostics)) {
      checked.checked.source_base_name = base_name(path);
      checked.checked.source_digest = hex_digest(text);
      clock.lap("digest");
      append(out.diagnostics, analyze(checked.checked, &out.timings));
      clock.skip();  // analyze() timed its own stages
      if (!has_errors(out.diagnostics)) out.policy = std::move(checked.checked);
    }
  };
  try {
    if (extension == ".policy") {
      dsl::ParseResult parsed = dsl::parse(text, path);
      const bool ok = parsed.ok();
      append(out.diagnostics, std::move(parsed.diagnostics));
      if (ok) {
        check_and_analyze(parsed.policy);
        if (syntax != nullptr) *syntax = std::move(parsed.policy);
      }
      sort_diagnostics(out.diagnostics);
      return out;
    }
    std::optional<yaml::AstResult> ast;
    {
      yaml::Document document = yaml::parse(text, path);
      clock.lap("parse");
      const bool usable = !tree_unusable(document);
      append(out.diagnostics, std::move(document.diagnostics));
      if (usable) ast = yaml::build_ast(document.root, path);
    }
    if (ast) {
      const bool has_root = std::none_of(ast->diagnostics.begin(), ast->diagnostics.end(),
                                         [](const Diagnostic& d) { return d.code == "RG100"; });
      append(out.diagnostics, std::move(ast->diagnostics));
      if (has_root) {
        check_and_analyze(ast->policy);
        if (syntax != nullptr) *syntax = std::move(ast->policy);
      }
    }
  } catch (const std::exception& e) {
    out.policy.reset();
    if (syntax != nullptr) syntax->reset();
    out.diagnostics.push_back(Diagnostic{Severity::kError,
                                         "RG099",
                                         std::string("internal error while compiling: ") + e.what(),
                                         path,
                                         {},
                                         "please report this with the policy file"});
  }
  sort_diagnostics(out.diagnostics);
  return out;
}

LoadedPolicy load_policy_file(const std::string& path) {
  StageTimings read_time;
  StageClock clock(&read_time);
  LoadedPolicy out;
  std::string text;
  if (!read_source_file(path, &text, &out.io_message)) {
    out.io_error = true;
    return out;
  }
  clock.lap("read");
  LoadedPolicy loaded = load_policy_text(text, path);
  loaded.timings.insert(loaded.timings.begin(), read_time.front());
  return loaded;
}

}  // namespace replaygate
