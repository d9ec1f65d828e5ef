// Test-case files: strict YAML tree -> cases checked against a policy (see case_file.h).
#include "checks/case_file.h"

#include <limits.h>
#include <stdlib.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/explain.h"
#include "inputs/mapping.h"

namespace replaygate::checks {

using inputs::parse_bool_strict;
using inputs::parse_int64_strict;

namespace {
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

}  // namespace

// The explicit form {json: VALUE} (a mapping with the key json), or nullptr: its VALUE.
const yaml::Node* explicit_json(const yaml::Node& value) {
  return value.is_mapping() ? value.find("json") : nullptr;
}

namespace {

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

  // The `description:` of mapping `node` (the file or a case): text for people, never read, but
  // text, so that what a schema-aware editor says of the file is what this reader says.
  std::optional<std::string> text(const yaml::Node& node, const char* where) {
    const yaml::Node* description = node.find("description");
    if (description == nullptr) return std::nullopt;
    if (!description->is_scalar()) {
      error(*description, "RG401", std::string("the description of ") + where + " must be text");
      return std::nullopt;
    }
    return description->scalar;
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

  CaseFile read(const yaml::Node& root, const std::string& policy_path) {
    CaseFile file;
    std::vector<Case>& cases = file.cases;
    if (!root.is_mapping()) {
      error(root, "RG401", "a case file must be a mapping with a cases: list");
      return file;
    }
    unknown_keys(root, kCaseFileKeys, "the case file");
    file.description = text(root, "the case file");
    if (const yaml::Node* policy = root.find("policy")) {
      if (!policy->is_scalar()) {
        error(*policy, "RG401", "policy must be a path");
      } else {
        file.policy = policy->scalar;
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
      return file;
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
      unknown_keys(item, kCaseKeys, "a case");
      Case c;
      c.description = text(item, "a case");
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
    return file;
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

}  // namespace

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

CaseFile read_case_file(const yaml::Node& root, const std::string& path,
                        const std::string& policy_path, const Table& table,
                        const ir::Policy& policy, std::vector<Diagnostic>* diagnostics) {
  CaseReader reader(path, table, policy);
  CaseFile file = reader.read(root, policy_path);
  diagnostics->insert(diagnostics->end(), reader.diagnostics.begin(), reader.diagnostics.end());
  return file;
}

}  // namespace replaygate::checks
