// The checker: an ast::Policy (from any front-end) in, the IR (ir::Policy + ir::SourceMap) and
// diagnostics out.
//
// Interface: check(). It resolves every name (inputs, verbs, constants, operators, types,
// effects), types every literal against the field it is compared with, checks values against
// enums and int bounds, checks required parts, derives row ids ("<table>:<k1>/<k2>", "*" for a
// wildcard) and checks that rule and row ids are unique (two rows of one table with the same keys
// and no ids of their own are a repeated row, left to the analysis' RG203). Diagnostics are RG102
// and RG104..RG145 (see docs/diagnostics.md), with hints in the syntax of the file's front-end
// (ast::Policy::syntax); every problem is reported, not just the first.
//
// It does not look for rules that shadow each other, conflict or can never match: that is the
// analysis (compiler/analysis/analysis.h, RG2xx), which runs on an error-free result.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/ir.h"
#include "compiler/syntax/ast.h"

namespace replaygate {

struct CheckResult {
  // The policy and its source map. Complete when `diagnostics` holds no error; otherwise a
  // best-effort partial result that later stages must not use.
  ir::CheckedPolicy checked;
  std::vector<Diagnostic> diagnostics;
};

// `path` goes into diagnostics and SourceMap::path. Does not fill source_base_name or
// source_digest (the caller has the bytes). Never throws.
CheckResult check(const ast::Policy& policy, std::string_view path);

// How the text of a plain int literal reads: an optional '-', decimal digits, no leading zero
// (YAML 1.1 reads `010` as octal, YAML 1.2 as 10: neither is what a reader expects), inside int64.
// The one rule for ints written in YAML: check() reports anything but kOk as RG109, and the case
// files of `replaygate test` use it too. *value is set only for kOk. Never throws.
enum class IntText { kOk, kNotDecimal, kLeadingZero, kOutOfRange };
IntText read_decimal_int(std::string_view text, int64_t* value);

}  // namespace replaygate
