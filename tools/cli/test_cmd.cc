// `replaygate test POLICY [CASES.yaml ...]`: run example letters through the policy's table.
//
// Case file (docs/cli.md):
//   policy: replay_gate.yaml          # optional; relative to the case file; must be POLICY
//   cases:
//     - name: timeout on first attempt replays
//       input: {topic: payment.capture, error_class: timeout, attempts: 1, ...}
//       expect: replay_once           # verb
//       rule: known_failures:payment.capture/timeout   # optional
//       reason: ...                   # optional
// Input values are read by the input's declared type, as policy rows read them: for a string or
// enum input a plain scalar is its text (`429` is "429", `007` is "007"), except plain true/false,
// which are refused (RG108: quote them, or use {json: ...}). For an int or bool input (and under
// {json: VALUE}) a value is typed the way JSON letters are: quoted scalars are strings; plain
// true/false are booleans; plain decimal integers are ints; other plain scalars are strings.
// Everywhere plain null/~ or an empty value is null (absent), and a sequence or another mapping is
// an invalid value. {json: VALUE} (a mapping with the one key json) gives VALUE as a JSON letter
// carries it, so `{json: 429}` tests the int 429 where a string belongs. A value of the wrong type
// for its field is passed to the runtime as invalid (so invalid inputs can be tested).
// Problems in the case file are diagnostics RG401-RG407 (RG407: a value for a derived input,
// which is computed, never read), RG108 (above), and RG109 for a plain scalar YAML reads as a
// number other than a decimal int (`01`, `+1`, `0x1`, `0o7`, `0b1`, `1_000`, `1e3`, `.5`) given
// to an int or bool input or under {json: ...}, as in a policy (exit 1, no case runs).
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/escape.h"
#include "common/yaml_tree.h"
#include "compiler/check.h"
#include "compiler/explain.h"
#include "compiler/interpret.h"
#include "compiler/lower.h"
#include "inputs/mapping.h"
#include "runtime/table.h"
#include "tools/cli/commands.h"
#include "tools/cli/coverage.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"

namespace replaygate::cli {

using inputs::parse_bool_strict;
using inputs::parse_int64_strict;

namespace {

constexpr size_t kMaxCaseFileBytes = size_t{16} << 20;

struct TestOptions {
  std::string policy;
  std::vector<std::string> case_files;
  std::string format = "text";
  bool coverage = false;
  double min_coverage = -1;  // < 0: no threshold
};

struct Case {
  std::string name;
  const yaml::Node* input = nullptr;
  uint32_t expect_verb = 0;
  std::string expect_verb_name;
  bool has_rule = false;
  std::string rule;
  bool has_reason = false;
  std::string reason;
};

std::string default_case_file(const std::string& policy) {
  for (const char* ext : {".yaml", ".yml"}) {
    const std::string e = ext;
    if (policy.size() > e.size() && policy.compare(policy.size() - e.size(), e.size(), e) == 0) {
      return policy.substr(0, policy.size() - e.size()) + ".test" + e;
    }
  }
  // A .policy file shares the YAML form's cases: X.policy -> X.test.yaml.
  const std::string dsl = ".policy";
  if (policy.size() > dsl.size() &&
      policy.compare(policy.size() - dsl.size(), dsl.size(), dsl) == 0) {
    return policy.substr(0, policy.size() - dsl.size()) + ".test.yaml";
  }
  return policy + ".test.yaml";
}

// `path` without a policy extension (.yaml, .yml, .policy): the two forms of one policy share it.
std::string policy_stem(const std::string& path) {
  for (const std::string ext : {".yaml", ".yml", ".policy"}) {
    if (path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0) {
      return path.substr(0, path.size() - ext.size());
    }
  }
  return path;
}

std::string real_path(const std::string& path) {
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) == nullptr) return "";
  return buffer;
}

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

// How a plain case-input scalar that YAML (1.1 or 1.2) reads as a number is not a decimal int:
// what it is ("has a leading zero", "is hexadecimal", ...) and the fix.
struct NumberForm {
  std::string what, hint;
};

// The form of `text` (a plain scalar) when it is a number other than a strict decimal int:
// a leading zero (01), a plus sign (+1), 0x/0o/0b prefixes, digit separators (1_000, YAML 1.1) or
// a float (1e3, 1.5, .5, 1., .inf, .nan, as YAML 1.2's core schema reads them). nullopt for a
// decimal int (even one beyond int64: an invalid int) and for anything that is no number (a
// string). The hint gives the decimal int when there is one ("write 1000, not 1e3").
std::optional<NumberForm> non_decimal_number(const std::string& text) {
  const bool has_sign = !text.empty() && (text[0] == '+' || text[0] == '-');
  const bool negative = has_sign && text[0] == '-';
  const std::string body = has_sign ? text.substr(1) : text;
  const auto all_of = [](const std::string& s, const char* chars) {
    return !s.empty() && s.find_first_not_of(chars) == std::string::npos;
  };
  const std::string quoted = " (or quote it for a string: '" + text + "')";
  // The int `digits` in base `base` (with `negative`) as a decimal text, or "" when it does not
  // fit in 64 bits.
  const auto decimal = [&](const std::string& digits, int base) -> std::string {
    if (base == 10) {  // by text: a leading zero on a number beyond int64 still has its fix
      const size_t first = digits.find_first_not_of('0');
      return (negative && first != std::string::npos ? "-" : "") +
             (first == std::string::npos ? "0" : digits.substr(first));
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long magnitude = std::strtoull(digits.c_str(), &end, base);
    if (errno == ERANGE || *end != '\0') return "";
    if (!negative && magnitude > static_cast<unsigned long long>(INT64_MAX)) return "";
    if (negative && magnitude > static_cast<unsigned long long>(INT64_MAX) + 1) return "";
    if (magnitude == 0) return "0";
    return (negative ? "-" : "") + std::to_string(magnitude);
  };
  const auto form = [&](const std::string& what, const std::string& fixed) {
    return NumberForm{what, fixed.empty() ? "write the value as a decimal int" + quoted
                                          : "write " + fixed + ", not " + text + quoted};
  };
  if (all_of(body, "0123456789")) {
    if (body.size() > 1 && body[0] == '0') return form("has a leading zero", decimal(body, 10));
    if (has_sign && !negative) return form("has a plus sign", decimal(body, 10));
    return std::nullopt;  // a decimal int
  }
  const std::string prefix = body.size() > 2 ? body.substr(0, 2) : "";
  const std::string digits = body.size() > 2 ? body.substr(2) : "";
  if ((prefix == "0x" || prefix == "0X") && all_of(digits, "0123456789abcdefABCDEF")) {
    return form("is hexadecimal", decimal(digits, 16));
  }
  if ((prefix == "0o" || prefix == "0O") && all_of(digits, "01234567")) {
    return form("is octal", decimal(digits, 8));
  }
  if ((prefix == "0b" || prefix == "0B") && all_of(digits, "01")) {
    return form("is binary", decimal(digits, 2));
  }
  if (body[0] >= '0' && body[0] <= '9' && all_of(body, "0123456789_")) {
    std::string joined;
    for (const char c : body) {
      if (c != '_') joined += c;
    }
    return form("has digit separators ('_')", decimal(joined, 10));
  }
  for (const char* special : {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"}) {
    if (body == special && (!has_sign || (body[1] != 'n' && body[1] != 'N'))) {
      return NumberForm{"is a float",
                        "inputs have no floats: quote it for a string: '" + text + "'"};
    }
  }
  // YAML 1.2 core floats: (\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? after the sign.
  size_t i = 0;
  const auto digit_run = [&] {
    const size_t from = i;
    while (i < body.size() && body[i] >= '0' && body[i] <= '9') ++i;
    return i - from;
  };
  bool mantissa = false;
  if (body[0] == '.') {
    ++i;
    mantissa = digit_run() > 0;
  } else if (digit_run() > 0) {
    mantissa = true;
    if (i < body.size() && body[i] == '.') {
      ++i;
      digit_run();
    }
  }
  if (!mantissa) return std::nullopt;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    if (digit_run() == 0) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  // A whole number written as a float (1e3, 1.0) has a decimal int to suggest.
  errno = 0;
  const double value = std::strtod(text.c_str(), nullptr);
  if (errno != ERANGE && std::isfinite(value) && value == std::floor(value) &&
      std::fabs(value) < 9.0e15) {
    return form("is a float", std::to_string(static_cast<int64_t>(value)));
  }
  return NumberForm{"is a float", "inputs have no floats: write a whole number" + quoted};
}

// The explicit form {json: VALUE} (a mapping with the key json), or nullptr: its VALUE.
const yaml::Node* explicit_json(const yaml::Node& value) {
  return value.is_mapping() ? value.find("json") : nullptr;
}

class CaseReader {
 public:
  // `table` is `policy` lowered (the same field indices).
  CaseReader(const std::string& path, const Table& table, const ir::Policy& policy)
      : path_(path), table_(table), policy_(policy) {}

  void error(const yaml::Node& node, const char* code, std::string message, std::string hint = "") {
    Diagnostic d;
    d.code = code;
    d.message = std::move(message);
    d.path = path_;
    d.span = node.span;
    d.hint = std::move(hint);
    diagnostics.push_back(std::move(d));
  }

  void unknown_keys(const yaml::Node& node, const std::vector<std::string>& allowed,
                    const char* where) {
    for (const auto& [key, value] : node.entries) {
      bool known = false;
      for (const auto& a : allowed) known = known || a == key.scalar;
      if (known) continue;
      const std::string suggestion = closest_match(key.scalar, allowed);
      error(key, "RG401", "unknown key '" + key.scalar + "' in " + where,
            suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
    }
  }

  std::vector<Case> read(const yaml::Node& root, const std::string& policy_path) {
    std::vector<Case> cases;
    if (!root.is_mapping()) {
      error(root, "RG401", "a case file must be a mapping with a cases: list");
      return cases;
    }
    unknown_keys(root, {"policy", "description", "cases"}, "the case file");
    if (const yaml::Node* policy = root.find("policy")) {
      if (!policy->is_scalar()) {
        error(*policy, "RG401", "policy must be a path");
      } else {
        const std::string named = policy->scalar.empty() || policy->scalar[0] == '/'
                                      ? policy->scalar
                                      : directory_of(path_) + "/" + policy->scalar;
        const std::string a = real_path(named), b = real_path(policy_path);
        // The YAML and the DSL form of one policy (same directory and stem) share their cases.
        if (a.empty() || (a != b && (b.empty() || policy_stem(a) != policy_stem(b)))) {
          error(*policy, "RG402",
                "these cases are for '" + policy->scalar + "', not for " + policy_path,
                "run them against the policy they name, or fix the policy: key");
        }
      }
    }
    const yaml::Node* list = root.find("cases");
    if (list == nullptr || !list->is_sequence()) {
      error(list ? *list : root, "RG401", "the case file needs a cases: list");
      return cases;
    }
    std::vector<std::string> field_names;
    for (uint32_t i = 0; i < table_.field_count(); ++i)
      field_names.emplace_back(table_.field(i).name);
    std::vector<std::string> verb_names;
    for (uint32_t v = 0; v < table_.verb_count(); ++v) verb_names.emplace_back(table_.verb_name(v));
    std::set<std::string> rule_ids = {"default"};
    for (uint32_t r = 0; r < table_.rule_count(); ++r) rule_ids.emplace(table_.rule_id(r));
    std::set<std::string> names;
    for (const yaml::Node& item : list->items) {
      if (!item.is_mapping()) {
        error(item, "RG401", "a case must be a mapping with name, input and expect");
        continue;
      }
      unknown_keys(item, {"name", "description", "input", "expect", "rule", "reason"}, "a case");
      Case c;
      const yaml::Node* name = item.find("name");
      if (name == nullptr || !name->is_scalar() || name->scalar.empty()) {
        error(name ? *name : item, "RG401", "a case needs a name");
        continue;
      }
      c.name = name->scalar;
      if (!names.insert(c.name).second) {
        error(*name, "RG405", "duplicate case name '" + c.name + "'");
      }
      c.input = item.find("input");
      if (c.input == nullptr || !(c.input->is_mapping() || c.input->is_null())) {
        error(c.input ? *c.input : item, "RG401", "case '" + c.name + "' needs an input: mapping");
        continue;
      }
      if (c.input->is_mapping()) {
        for (const auto& [key, value] : c.input->entries) {
          check_value(table_.field_index(key.scalar), key.scalar, value);
          if (const uint32_t f = table_.field_index(key.scalar); f != Table::kNoField) {
            // A derived input is computed from two others (as in letters and mapping files): a
            // value given for it would be ignored, so the case would not test what it says.
            if (const std::optional<ir::Derivation>& d = policy_.fields.at(f).derived) {
              const std::string& lhs = policy_.fields.at(d->lhs).name;
              const std::string& rhs = policy_.fields.at(d->rhs).name;
              error(key, "RG407",
                    "input '" + key.scalar + "' is derived; it is computed, never read",
                    "remove it, and set " + lhs + " and " + rhs + " instead (" + key.scalar +
                        " = " + lhs + " " + op_word_symbol(ir::op_name(d->op)) + " " + rhs + ")");
            }
            continue;
          }
          const std::string suggestion = closest_match(key.scalar, field_names);
          error(key, "RG403", "'" + key.scalar + "' is not an input of the policy",
                suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
        }
      }
      const yaml::Node* expect = item.find("expect");
      if (expect == nullptr || !expect->is_scalar()) {
        error(expect ? *expect : item, "RG401", "case '" + c.name + "' needs expect: VERB");
        continue;
      }
      c.expect_verb_name = expect->scalar;
      c.expect_verb = UINT32_MAX;
      for (uint32_t v = 0; v < verb_names.size(); ++v) {
        if (verb_names[v] == expect->scalar) c.expect_verb = v;
      }
      if (c.expect_verb == UINT32_MAX) {
        const std::string suggestion = closest_match(expect->scalar, verb_names);
        error(*expect, "RG404", "unknown verb '" + expect->scalar + "'",
              suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
        // The rule and reason are still checked: an unknown verb says nothing about the rule id,
        // so both mistakes are reported in one run. The case itself is dropped below.
      }
      if (const yaml::Node* rule = item.find("rule")) {
        if (!rule->is_scalar()) {
          error(*rule, "RG401", "rule must be a rule id");
        } else if (rule_ids.count(rule->scalar) == 0) {
          const std::vector<std::string> ids(rule_ids.begin(), rule_ids.end());
          const std::string suggestion = closest_match(rule->scalar, ids);
          error(*rule, "RG406", "the policy has no rule '" + rule->scalar + "'",
                suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
        } else {
          c.has_rule = true;
          c.rule = rule->scalar;
        }
      }
      if (const yaml::Node* reason = item.find("reason")) {
        if (!reason->is_scalar()) {
          error(*reason, "RG401", "reason must be text");
        } else {
          c.has_reason = true;
          c.reason = reason->scalar;
        }
      }
      if (c.expect_verb == UINT32_MAX) continue;
      cases.push_back(std::move(c));
    }
    return cases;
  }

  std::vector<Diagnostic> diagnostics;

 private:
  // The diagnostics for the value of input `f` (kNoField when the key is not an input: RG403
  // is reported apart, and the value is then read as a letter would carry it). See case_value().
  void check_value(uint32_t f, const std::string& key, const yaml::Node& value) {
    const bool textual = f != Table::kNoField && (table_.field(f).type == FieldType::kString ||
                                                  table_.field(f).type == FieldType::kEnum);
    if (const yaml::Node* inner = explicit_json(value)) {
      if (value.entries.size() != 1) {
        for (const auto& [k, v] : value.entries) {
          if (k.scalar != "json") {
            error(k, "RG401", "unknown key '" + k.scalar + "' in {json: VALUE}",
                  "{json: VALUE} takes the one key json");
          }
        }
        return;
      }
      // Typed as a JSON letter is: the policy's rule for int text holds (RG109).
      if (inner->is_scalar() && !inner->quoted) {
        if (const std::optional<NumberForm> form = non_decimal_number(inner->scalar)) {
          error(*inner, "RG109", "'" + inner->scalar + "' " + form->what, form->hint);
        }
      }
      return;
    }
    if (!value.is_scalar() || value.quoted) return;
    if (textual) {
      // A plain scalar is the input's text, as in a policy row: `429` is "429". Only true and
      // false are refused, as a row refuses them: the text or the boolean? Say which.
      if (value.scalar == "true" || value.scalar == "false") {
        const char* type = table_.field(f).type == FieldType::kEnum ? "an enum" : "a string";
        error(value, "RG108",
              value.scalar + " is a boolean, but '" + key + "' is " + type + " input",
              "quote it for the text, '" + value.scalar + "', or write {json: " + value.scalar +
                  "} to test a boolean where " + type + " belongs");
      }
      return;
    }
    // An int or bool input (or no input): the policy's rule for int text (RG109): `01`, `+1`,
    // `0x1`, `1_000` or `1e3` is neither an int nor a string here (YAML would read each as a
    // number).
    if (const std::optional<NumberForm> form = non_decimal_number(value.scalar)) {
      error(value, "RG109", "'" + value.scalar + "' " + form->what, form->hint);
    }
  }

  const std::string& path_;
  const Table& table_;
  const ir::Policy& policy_;
};

// A case input value as a JSON letter would carry it: quoted scalars are strings, plain true and
// false booleans, a plain -?[0-9]+ an int (one beyond int64 an invalid int), plain null, ~ or
// nothing null, other plain scalars strings; a sequence or mapping is an invalid value.
LetterValue letter_value(const yaml::Node& value) {
  if (value.is_null() ||
      (value.is_scalar() && !value.quoted &&
       (value.scalar == "null" || value.scalar == "~" || value.scalar.empty()))) {
    return LetterValue::Null();
  }
  if (!value.is_scalar()) return LetterValue::Invalid();
  const std::string& text = value.scalar;
  bool flag = false;
  int64_t number = 0;
  const size_t digits_from = !text.empty() && text[0] == '-' ? 1 : 0;
  const bool looks_int = !value.quoted && text.size() > digits_from &&
                         text.find_first_not_of("0123456789", digits_from) == std::string::npos;
  if (!value.quoted && parse_bool_strict(text, &flag)) return LetterValue::Bool(flag);
  if (looks_int) {
    return parse_int64_strict(text, &number) ? LetterValue::Int(number) : LetterValue::Invalid();
  }
  return LetterValue::String(text);
}

// A case input value for an input of type `type`, read by that type as a policy row reads it
// (the header comment has the rules): for a string or enum input a plain scalar is its text
// (`429` is "429"); {json: VALUE} is VALUE as a JSON letter carries it (letter_value), to test
// a value of the wrong type.
LetterValue case_value(const yaml::Node& value, FieldType type) {
  if (const yaml::Node* inner = explicit_json(value)) return letter_value(*inner);
  const LetterValue letter = letter_value(value);
  const bool textual = type == FieldType::kString || type == FieldType::kEnum;
  if (textual && value.is_scalar() && !value.quoted && letter.kind != LetterValue::Kind::kNull) {
    return LetterValue::String(value.scalar);
  }
  return letter;
}

// Hands a letter to the runtime. A value of the wrong kind for its field makes the field invalid
// there, exactly as interpret() treats it. The strings must outlive decide().
void set_input(const Letter& letter, Input& input) {
  input.clear();
  for (uint32_t f = 0; f < letter.size(); ++f) {
    const LetterValue& v = letter[f];
    switch (v.kind) {
      case LetterValue::Kind::kMissing:
        break;
      case LetterValue::Kind::kNull:
        input.set_null(f);
        break;
      case LetterValue::Kind::kString:
        input.set_string(f, v.s);
        break;
      case LetterValue::Kind::kInt:
        input.set_int(f, v.i);
        break;
      case LetterValue::Kind::kBool:
        input.set_bool(f, v.b);
        break;
      case LetterValue::Kind::kInvalid:
        input.set_invalid(f);
        break;
    }
  }
}

struct CaseResult {
  std::string file;
  std::string name;
  bool passed = false;
  std::string expect_verb;
  std::string expect_rule;    // "" when the case names none
  std::string expect_reason;  // "" when the case names none
  bool has_expect_rule = false, has_expect_reason = false;
  std::string verb, rule, reason;
  std::string failure;  // the text form of the mismatch
};

std::string percent_text(double percent) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%%", percent);
  return buffer;
}

// The --min-coverage failure, with both numbers true and told apart: the coverage as its exact
// fraction and a percentage with as many decimals (at least one) as keep it below the
// threshold, and the threshold as its shortest decimal form. "3/16 (18.75%) is below
// --min-coverage 18.8%", not "18.8% is below 18.8%".
std::string below_min_text(const Coverage& cov, double threshold) {
  const double percent = cov.percent();
  char text[64] = "";
  for (int decimals = 1; decimals <= 15; ++decimals) {
    std::snprintf(text, sizeof text, "%.*f", decimals, percent);
    if (std::strtod(text, nullptr) < threshold) break;
  }
  char limit[64];
  const std::to_chars_result end = std::to_chars(limit, limit + sizeof limit - 1, threshold);
  *end.ptr = '\0';
  return "rule coverage " + std::to_string(cov.rules_covered()) + "/" +
         std::to_string(cov.rules_total()) + " (" + text + "%) is below --min-coverage " + limit +
         "%";
}

std::string json_document(const std::string& policy_path, const std::vector<CaseResult>& results,
                          const std::vector<Diagnostic>& case_diagnostics, size_t passed,
                          size_t failed, bool case_file_errors, const Coverage& cov,
                          const std::vector<Uncovered>& uncovered, const TestOptions& options) {
  using Json = nlohmann::ordered_json;
  Json doc;
  doc["policy"] = policy_path;
  Json cases = Json::array();
  for (const CaseResult& r : results) {
    Json c;
    c["file"] = r.file;
    c["name"] = r.name;
    c["status"] = r.passed ? "pass" : "fail";
    Json expected;
    expected["verb"] = r.expect_verb;
    if (r.has_expect_rule) expected["rule"] = r.expect_rule;
    if (r.has_expect_reason) expected["reason"] = r.expect_reason;
    c["expected"] = expected;
    c["actual"] = {{"verb", r.verb}, {"rule", r.rule}, {"reason", r.reason}};
    cases.push_back(std::move(c));
  }
  doc["cases"] = std::move(cases);
  // The case files' diagnostics, as lint --format json writes them (its renderer, parsed back).
  doc["diagnostics"] = Json::parse(render_json(case_diagnostics));
  doc["summary"] = {{"passed", passed}, {"failed", failed}, {"case_file_errors", case_file_errors}};
  Json coverage;
  coverage["rules"] = {{"covered", cov.rules_covered()},
                       {"total", cov.rules_total()},
                       {"percent", std::round(cov.percent() * 10) / 10}};
  coverage["guards"] = {{"covered", cov.guards_covered}, {"total", cov.guards_total}};
  coverage["rows"] = {{"covered", cov.rows_covered}, {"total", cov.rows_total}};
  coverage["invariants"] = {{"covered", cov.invariants_covered()},
                            {"total", cov.invariants.size()}};
  Json list = Json::array();
  for (const Uncovered& u : uncovered) {
    list.push_back({{"kind", u.kind}, {"id", u.id}, {"path", policy_path}, {"line", u.line}});
  }
  coverage["uncovered"] = std::move(list);
  if (options.min_coverage >= 0) {
    coverage["min_coverage"] = options.min_coverage;
    coverage["below_min"] = cov.percent() < options.min_coverage;
  }
  doc["coverage"] = std::move(coverage);
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

int run_test(const TestOptions& options) {
  if (options.format != "text" && options.format != "json") {
    std::fprintf(stderr, "replaygate test: error: --format must be text or json, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  const bool json = options.format == "json";
  LoadedPolicy loaded;
  if (const int code = load_policy_reporting(options.policy, DiagnosticFormat::kText, &loaded);
      code != kExitOk) {
    return code;
  }
  const ir::CheckedPolicy& checked = *loaded.policy;
  const ir::Policy& policy = checked.policy;
  std::unique_ptr<Table> table;
  {
    const std::vector<uint8_t> bytes = lower(checked);
    LoadStatus status;
    table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    if (table == nullptr) {
      std::fprintf(stderr, "replaygate: internal error: the table compiled from %s does not load\n",
                   options.policy.c_str());
      return kExitUsage;
    }
  }
  Coverage cov = empty_coverage(policy);

  std::vector<std::string> files = options.case_files;
  if (files.empty()) files.push_back(default_case_file(options.policy));

  size_t passed = 0, failed = 0;
  bool case_file_errors = false;
  std::vector<CaseResult> results;
  std::vector<Diagnostic> case_diagnostics;  // --format json: reported in the document
  Input input(*table);
  for (const std::string& path : files) {
    std::string text, io_error;
    if (!read_whole_file(path, kMaxCaseFileBytes, &text, &io_error)) {
      std::fprintf(stderr, "replaygate: %s\n", io_error.c_str());
      return kExitUsage;
    }
    const yaml::Document document = yaml::parse(text, path);
    CaseReader reader(path, *table, policy);
    std::vector<Case> cases;
    if (document.ok()) cases = reader.read(document.root, options.policy);
    std::vector<Diagnostic> diagnostics = document.diagnostics;
    diagnostics.insert(diagnostics.end(), reader.diagnostics.begin(), reader.diagnostics.end());
    sort_diagnostics(diagnostics);
    if (json) {
      case_diagnostics.insert(case_diagnostics.end(), diagnostics.begin(), diagnostics.end());
    } else {
      report_diagnostics(diagnostics, text, DiagnosticFormat::kText);
    }
    if (has_errors(diagnostics)) {
      std::fprintf(stderr, "%s: errors found; its cases were not run\n",
                   escape_control(path, Backslash::kKeep).c_str());
      case_file_errors = true;
      continue;
    }
    for (const Case& c : cases) {
      Letter letter(policy.fields.size());
      if (c.input->is_mapping()) {
        for (const auto& [key, value] : c.input->entries) {
          const uint32_t f = table->field_index(key.scalar);
          letter.at(f) = case_value(value, table->field(f).type);
        }
      }
      set_input(letter, input);
      const Decision d = table->decide(input);
      const InterpretResult oracle = interpret(policy, letter);
      if (oracle.verb != d.verb ||
          static_cast<uint8_t>(oracle.kind) != static_cast<uint8_t>(d.kind) ||
          oracle.rule != d.rule) {
        std::fprintf(stderr,
                     "replaygate: internal error: case '%s': the table and the interpreter "
                     "disagree\n",
                     escape_control(c.name).c_str());
        return kExitUsage;
      }
      record_case(policy, letter, oracle, &cov);
      CaseResult r;
      r.file = path;
      r.name = c.name;
      r.expect_verb = c.expect_verb_name;
      r.has_expect_rule = c.has_rule;
      r.expect_rule = c.rule;
      r.has_expect_reason = c.has_reason;
      r.expect_reason = c.reason;
      r.verb = table->verb_name(d.verb);
      r.rule = table->rule_name(d);
      r.reason = table->reason(d);
      if (d.verb != c.expect_verb || (c.has_rule && r.rule != c.rule)) {
        r.failure = "expected " + c.expect_verb_name +
                    (c.has_rule ? " (rule " + c.rule + ")" : "") + ", got " + r.verb + " (rule " +
                    r.rule + ", reason \"" + r.reason + "\")";
      } else if (c.has_reason && r.reason != c.reason) {
        r.failure = "expected reason \"" + c.reason + "\", got \"" + r.reason + "\"";
      }
      r.passed = r.failure.empty();
      // Case names, verbs, rule ids and reasons come from the case file and the policy: escaped,
      // so each case stays one line of the CI log.
      if (r.passed) {
        ++passed;
        if (!json) std::printf("PASS %s\n", escape_control(c.name).c_str());
      } else {
        ++failed;
        if (!json) {
          std::printf("FAIL %s: %s\n", escape_control(c.name).c_str(),
                      escape_control(r.failure).c_str());
        }
      }
      results.push_back(std::move(r));
    }
  }
  const std::vector<Uncovered> uncovered = uncovered_items(checked, cov);
  const bool below = options.min_coverage >= 0 && cov.percent() < options.min_coverage;
  if (json) {
    const std::string doc = json_document(options.policy, results, case_diagnostics, passed, failed,
                                          case_file_errors, cov, uncovered, options);
    if (!print_to_stdout(doc, "the test report")) return kExitUsage;
  } else {
    std::printf("%zu passed, %zu failed\n", passed, failed);
    std::printf("coverage: rules %zu/%zu (%s), invariants %zu/%zu\n", cov.rules_covered(),
                cov.rules_total(), percent_text(cov.percent()).c_str(), cov.invariants_covered(),
                cov.invariants.size());
    if (options.coverage) {
      for (const Uncovered& u : uncovered) {
        std::printf("uncovered: %s:%u: %s %s\n",
                    escape_control(options.policy, Backslash::kKeep).c_str(), u.line,
                    u.kind.c_str(), escape_control(u.id).c_str());
      }
    }
  }
  if (below) {
    std::fprintf(stderr, "replaygate test: %s\n",
                 below_min_text(cov, options.min_coverage).c_str());
  }
  // The text report went through stdio: print_to_stdout() flushes it and names the cause.
  if (!print_to_stdout("", "the test report")) return kExitUsage;
  if (std::ferror(stdout)) {  // an earlier flush failed (its errno is gone)
    std::fprintf(stderr, "replaygate: cannot write the test report to %s\n",
                 describe_stream(STDOUT_FILENO, "standard output").c_str());
    return kExitUsage;
  }
  return failed > 0 || case_file_errors || below ? kExitFindings : kExitOk;
}

}  // namespace

Runner setup_test(CLI::App& sub) {
  auto options = std::make_shared<TestOptions>();
  sub.footer(
      "Run test cases against POLICY (compiled in memory). Without CASES, reads POLICY's\n"
      "sibling .test.yaml (policies/x.yaml -> policies/x.test.yaml). Prints PASS/FAIL per case,\n"
      "'N passed, N failed' and a coverage line: rules (guards + table rows) that decided some\n"
      "case, and invariants whose premise some valid case satisfies.\n"
      "Exit: 0 all pass, 1 failures, case-file errors or coverage below --min-coverage,\n"
      "2 usage/I/O.");
  sub.add_option("POLICY", options->policy, "Policy file (.policy or .yaml)")->required();
  sub.add_option("CASES", options->case_files, "Case files (default: POLICY's .test.yaml)");
  sub.add_option("--format", options->format, "text (default) or json (one document on stdout)");
  sub.add_flag("--coverage", options->coverage,
               "List every uncovered guard, row and invariant with file:line");
  sub.add_option("--min-coverage", options->min_coverage,
                 "Fail (exit 1) when rule coverage, in percent of guards + rows, is below PCT")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            // CLI::Range lets "nan" through (every comparison with NaN is false), which would
            // turn the gate off; accept only a plain decimal number in [0, 100].
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !(v >= 0.0 && v <= 100.0) ||
                text.find_first_not_of("0123456789.") != std::string::npos) {
              return "expected a percentage between 0 and 100, e.g. 80 or 92.5; "
                     "got '" +
                     text + "'";
            }
            return std::string();
          },
          "PCT"));
  return [options] { return run_test(*options); };
}

}  // namespace replaygate::cli
