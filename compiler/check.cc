// The checker: ast::Policy -> ir::CheckedPolicy + diagnostics (see check.h; codes in
// docs/diagnostics.md). One pass per section in dependency order: inputs, verbs, constants,
// default, rules. Names are resolved through small maps built from the declarations.
#include "compiler/check.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "common/names.h"
#include "compiler/key_text.h"
#include "compiler/syntax/policy_keys.h"
#include "runtime/checked_codes.h"

namespace replaygate {
namespace {

using ast::Literal;

// The words each place accepts (compiler/syntax/policy_keys.h, which the schema test reads).
using policy_keys::kEffects;
using policy_keys::kTypes;
// The operators a condition spells with `op:` (absent and present are whole matchers).
const std::vector<std::string>& kOps = policy_keys::kConditionOps;
constexpr size_t kMaxTableKeys = 8;
constexpr size_t kMaxInputs = 1024;  // runtime/table_format.h kMaxFields
constexpr const char* kDefaultReason = "no rule matched";

// One grammar for names and ids, shared with the tools that read them back (common/names.h).
using names::has_space_or_control;
using names::is_name;

// YAML 1.1 spellings of booleans that YAML 1.2 (and this checker) reads as plain words.
bool looks_like_yaml11_bool(std::string_view text) {
  static const char* const kWords[] = {"yes", "no",  "on",   "off",   "y",    "n",    "Yes",
                                       "No",  "On",  "Off",  "Y",     "N",    "YES",  "NO",
                                       "ON",  "OFF", "True", "False", "TRUE", "FALSE"};
  for (const char* word : kWords) {
    if (text == word) return true;
  }
  return false;
}

std::string quote(std::string_view text) { return "'" + std::string(text) + "'"; }

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates,
                         const std::string& fallback = {}) {
  const std::string match = closest_match(word, candidates);
  if (!match.empty()) return "did you mean " + quote(match) + "?";
  if (!fallback.empty()) return fallback;
  if (candidates.empty()) return {};
  std::string hint = "expected one of:";
  for (size_t i = 0; i < candidates.size(); ++i) hint += (i == 0 ? " " : ", ") + candidates[i];
  return hint;
}

std::string int_text(int64_t value) { return std::to_string(value); }

class Checker {
 public:
  Checker(std::string_view path, std::vector<Diagnostic>& diagnostics)
      : path_(path), diagnostics_(diagnostics) {}

  ir::CheckedPolicy run(const ast::Policy& policy) {
    dsl_ = policy.syntax == ast::Syntax::kDsl;
    ir::CheckedPolicy out;
    out.source.path = std::string(path_);
    out.source.policy = policy.id_span.line > 0 ? policy.id_span : policy.span;
    ir::Policy& p = out.policy;

    if (!policy.id) {
      missing("policy", policy.span, "write 'policy: NAME' (the policy's id)");
    } else if (policy.id->kind == Literal::Kind::kNull || policy.id->text.empty()) {
      error("RG108", "the policy id must be a non-empty string", policy.id->span);
    } else {
      // The id is printed in summaries, tables and audit entries: one word, so it cannot forge a
      // line or hide behind a space.
      if (has_space_or_control(policy.id->text)) {
        error("RG127",
              "policy id " + quote(policy.id->text) + " contains spaces or control characters",
              policy.id->span, "a policy id is one word, e.g. dlq-replay-gate");
      }
      p.id = policy.id->text;
    }
    if (!policy.revision) {
      missing("revision", policy.span, "write 'revision: 1' and raise it on every change");
    } else if (auto revision = int_literal(*policy.revision, "revision")) {
      if (*revision < 0) {
        error("RG108", "revision must not be negative", policy.revision->span);
      } else {
        p.revision = *revision;
      }
    }
    if (policy.description) p.description = string_literal(*policy.description, "description");

    if (!policy.inputs) {
      missing("inputs", policy.span,
              pick("declare the fields a decision reads under 'inputs'",
                   "declare the fields a decision reads, one per line: input NAME: TYPE, e.g. "
                   "input topic: string"));
    } else {
      for (const ast::Input& input : *policy.inputs) {
        p.fields.push_back(field(input));
        out.source.fields.push_back(input.span);
      }
      // decide() keeps one atom per field on the stack; the table format caps the field count.
      if (p.fields.size() > kMaxInputs) {
        error("RG129",
              "the policy declares " + std::to_string(p.fields.size()) + " inputs; at most " +
                  std::to_string(kMaxInputs) + " are supported",
              policy.span, "split the policy, or map several broker fields onto one input");
      }
    }
    for (uint32_t i = 0; i < p.fields.size(); ++i) {
      field_index_.emplace(p.fields[i].name, i);
      field_names_.push_back(p.fields[i].name);
    }
    if (policy.inputs) derivations(*policy.inputs, p);
    if (policy.inputs) one_idempotency_key(*policy.inputs, p);
    if (policy.sensitive) sensitive(*policy.sensitive, p);

    if (!policy.verbs) {
      missing("verbs", policy.span,
              pick("declare the verbs (never, replay_once, hold, ...)",
                   "declare the verbs, one per line: verb NAME effect EFFECT, e.g. verb hold "
                   "effect none"));
    } else {
      for (const ast::Verb& verb : *policy.verbs) {
        p.verbs.push_back(this->verb(verb));
        out.source.verbs.push_back(verb.span);
      }
    }
    for (uint32_t i = 0; i < p.verbs.size(); ++i) {
      verb_index_.emplace(p.verbs[i].name, i);
      verb_names_.push_back(p.verbs[i].name);
    }

    for (const ast::Constant& constant : policy.constants) {
      if (!is_name(constant.name.text)) invalid_name("constant", constant.name);
      ir::Constant c;
      c.name = constant.name.text;
      if (auto value = int_literal(constant.value, "constant " + quote(constant.name.text))) {
        c.value = *value;
      }
      constant_values_.emplace(c.name, c.value);
      constant_names_.push_back(c.name);
      p.constants.push_back(std::move(c));
      out.source.constants.push_back(constant.span);
    }

    // After the constants: a classifier's int operands may name one.
    if (policy.inputs) classifiers(*policy.inputs, p, out.source);

    if (!policy.default_verb) {
      missing("default", policy.span,
              std::string("write '") + pick("default: VERB", "default VERB") +
                  "' naming a verb with effect none (what happens when no rule matches)");
    } else {
      out.source.default_verb = policy.default_verb->span;
      if (auto index = resolve_verb(*policy.default_verb)) {
        p.default_verb = *index;
        const ir::Verb& verb = p.verbs[*index];
        if (verb.effect != ir::Effect::kNone) {
          std::string safe;
          for (const ir::Verb& candidate : p.verbs) {
            if (candidate.effect == ir::Effect::kNone) {
              safe += (safe.empty() ? "" : ", ") + quote(candidate.name);
            }
          }
          error("RG124",
                "the default verb " + quote(verb.name) + " has effect " +
                    ir::effect_name(verb.effect) + "; the default must have effect none",
                policy.default_verb->span,
                safe.empty()
                    ? std::string("declare a verb with '") + pick("effect: none", "effect none") +
                          "' (fail closed) and use it"
                    : "fail closed: use a verb with effect none (" + safe + ")");
        }
      }
    }
    p.default_reason = kDefaultReason;
    if (policy.default_reason) {
      p.default_reason = string_literal(*policy.default_reason, "default_reason");
    }

    if (!policy.rules) {
      missing("rules", policy.span, "write 'rules:' with a list of guards and tables");
    } else {
      for (const ast::Rule& rule : *policy.rules) {
        if (rule.kind == ast::Rule::Kind::kGuard) {
          std::vector<ir::Span> spans;
          p.rules.emplace_back(guard(rule.guard, p, spans));
          out.source.rules.push_back(rule.guard.span);
          out.source.conditions.push_back(std::move(spans));
          out.source.rows.emplace_back();
        } else {
          std::vector<ir::Span> spans;
          p.rules.emplace_back(table(rule.table, p, spans));
          out.source.rules.push_back(rule.table.span);
          out.source.conditions.emplace_back();
          out.source.rows.push_back(std::move(spans));
        }
      }
    }
    for (const ast::Invariant& invariant : policy.invariants) {
      std::vector<ir::Span> spans;
      p.invariants.push_back(this->invariant(invariant, p, spans));
      out.source.invariants.push_back(invariant.span);
      out.source.invariant_conditions.push_back(std::move(spans));
    }
    return out;
  }

 private:
  void error(std::string code, std::string message, ir::Span span, std::string hint = {}) {
    diagnostics_.push_back(Diagnostic{Severity::kError, std::move(code), std::move(message),
                                      std::string(path_), span, std::move(hint)});
  }

  // `yaml` or `dsl`: a hint in the syntax of the file being checked.
  const char* pick(const char* yaml, const char* dsl) const { return dsl_ ? dsl : yaml; }

  // A value quoted as the file's syntax quotes it: 'true' in YAML, "true" in a .policy file.
  std::string quoted_in_syntax(const std::string& text) const {
    return dsl_ ? "\"" + text + "\"" : "'" + text + "'";
  }

  void missing(const std::string& key, ir::Span span, std::string hint) {
    error("RG102", "missing required key " + quote(key), span, std::move(hint));
  }

  void invalid_name(const std::string& what, const ast::Name& name) {
    error("RG127", "invalid " + what + " name " + quote(name.text), name.span,
          "names start with a letter or '_' and hold letters, digits, '_', '.', '-'");
  }

  // A string property (description, reason): bare or quoted text; null gives "".
  std::string string_literal(const Literal& literal, const std::string& what) {
    if (literal.kind == Literal::Kind::kNull) {
      error("RG108", quote(what) + " is empty", literal.span, "write the text, or remove the key");
      return {};
    }
    return literal.text;
  }

  // A strict decimal int (read_decimal_int()). Reports RG109.
  std::optional<int64_t> parse_int(const Literal& literal) {
    const std::string& text = literal.text;
    int64_t value = 0;
    switch (read_decimal_int(text, &value)) {
      case IntText::kOk:
        return value;
      case IntText::kNotDecimal: {
        std::string hint = "write a decimal integer such as 3 or -1";
        if (text.size() > 1 && (text.substr(0, 2) == "0x" || text.substr(0, 2) == "0o")) {
          hint = "only decimal ints are accepted: write the value in decimal";
        }
        error("RG109", quote(text) + " is not a decimal integer", literal.span, hint);
        return std::nullopt;
      }
      case IntText::kLeadingZero:
        error("RG109", quote(text) + " has a leading zero", literal.span,
              "write it without leading zeros (YAML 1.1 would read it as octal)");
        return std::nullopt;
      case IntText::kOutOfRange:
        break;
    }
    error("RG109", quote(text) + " does not fit in a 64-bit integer", literal.span,
          "ints range from -9223372036854775808 to 9223372036854775807");
    return std::nullopt;
  }

  // An int property (revision, min, max, a constant): bare decimal only.
  std::optional<int64_t> int_literal(const Literal& literal, const std::string& what) {
    if (literal.kind == Literal::Kind::kNull) {
      error("RG108", what + " needs an int value", literal.span);
      return std::nullopt;
    }
    if (literal.kind == Literal::Kind::kQuoted) {
      error("RG108", what + " must be an int, not the quoted string " + quote(literal.text),
            literal.span, "remove the quotes");
      return std::nullopt;
    }
    return parse_int(literal);
  }

  // A bool property (optional, empty_means_absent): only bare true/false.
  std::optional<bool> bool_literal(const Literal& literal, const std::string& what) {
    if (literal.bare("true")) return true;
    if (literal.bare("false")) return false;
    std::string found = literal.kind == Literal::Kind::kNull ? "nothing"
                        : literal.kind == Literal::Kind::kQuoted
                            ? "the quoted string " + quote(literal.text)
                            : quote(literal.text);
    error("RG108", quote(what) + " must be true or false, not " + found, literal.span,
          "write true or false");
    return std::nullopt;
  }

  ir::Field field(const ast::Input& input) {
    ir::Field f;
    f.name = input.name.text;
    if (!is_name(f.name)) invalid_name("input", input.name);
    const std::string label = "input " + quote(f.name);
    bool type_known = false;
    if (!input.type) {
      error("RG102", label + " has no 'type'", input.span,
            "add 'type: string', 'type: int', 'type: bool' or 'type: enum'");
    } else {
      const std::string& type = input.type->text;
      if (type == "string") {
        f.type = ir::FieldType::kString, type_known = true;
      } else if (type == "int") {
        f.type = ir::FieldType::kInt, type_known = true;
      } else if (type == "bool") {
        f.type = ir::FieldType::kBool, type_known = true;
      } else if (type == "enum") {
        f.type = ir::FieldType::kEnum, type_known = true;
      } else {
        error("RG112", "unknown type " + quote(type) + " for " + label, input.type->span,
              did_you_mean(type, kTypes));
      }
    }
    if (input.optional_flag) {
      if (auto value = bool_literal(*input.optional_flag, "optional")) f.optional = *value;
    }
    if (input.description) f.description = string_literal(*input.description, "description");
    const auto not_for_type = [&](const char* property, ir::Span span, const char* only) {
      if (!type_known) return;
      error("RG115",
            std::string("'") + property + "' does not apply to " + label + " of type " +
                ir::field_type_name(f.type),
            span, std::string("'") + property + "' is for " + only + " inputs only");
    };
    if (input.empty_means_absent) {
      if (f.type != ir::FieldType::kString) {
        not_for_type("empty_means_absent", input.empty_means_absent->span, "string");
      } else if (auto value = bool_literal(*input.empty_means_absent, "empty_means_absent")) {
        f.empty_means_absent = *value;
      }
    }
    if (input.min) {
      if (f.type != ir::FieldType::kInt) {
        not_for_type("min", input.min->span, "int");
      } else {
        f.min = int_literal(*input.min, "min");
      }
    }
    if (input.max) {
      if (f.type != ir::FieldType::kInt) {
        not_for_type("max", input.max->span, "int");
      } else {
        f.max = int_literal(*input.max, "max");
      }
    }
    if (f.min && f.max && *f.min > *f.max) {
      error(
          "RG114",
          "min " + int_text(*f.min) + " is greater than max " + int_text(*f.max) + " for " + label,
          input.min->span, "swap them, or fix the bound");
    }
    if (input.values) {
      if (f.type != ir::FieldType::kEnum) {
        not_for_type("values", input.values->span, "enum");
      } else {
        enum_values(*input.values, label, f);
      }
    } else if (type_known && f.type == ir::FieldType::kEnum) {
      error("RG102", label + " is an enum but has no 'values'", input.type->span,
            "list the allowed values: values: [a, b, c]");
    }
    if (input.domain) {
      if (f.type != ir::FieldType::kString) {
        not_for_type("domain", input.domain->span, "string");
      } else {
        domain_values(*input.domain, label, f);
      }
    }
    if (input.source) {
      const std::vector<std::string>& kSources = policy_keys::kSources;
      const std::string how = std::string("write '") + pick("source: operator", "source operator") +
                              "' (only an operator sets it), '" +
                              pick("source: record", "source record") +
                              "' (only the operation record supplies it) or leave it out";
      if (input.source->text == "operator") {
        f.source = ir::InputSource::kOperator;
      } else if (input.source->text == "record") {
        f.source = ir::InputSource::kRecord;
      } else if (input.source->text.empty()) {
        error("RG144", "empty source for " + label, input.source->span, how);
      } else if (input.source->text != "letter") {
        error("RG144", "unknown source " + quote(input.source->text) + " for " + label,
              input.source->span, did_you_mean(input.source->text, kSources, how));
      }
      // A derived or classified input is computed from others, so nobody sets it.
      if (f.source != ir::InputSource::kLetter && (input.derived || input.classify)) {
        error("RG145",
              label + " is derived, so it cannot be " +
                  (f.source == ir::InputSource::kOperator ? "set by an operator"
                                                          : "read from the operation record"),
              input.source->span,
              "a derived input is computed, so nobody sets it: remove the source or the "
              "derivation");
      }
    }
    if (input.idempotency_key) {
      if (auto value = bool_literal(*input.idempotency_key, "idempotency_key"); value && *value) {
        if (type_known && f.type != ir::FieldType::kString) {
          error("RG139",
                label + " is of type " + ir::field_type_name(f.type) +
                    ", so it cannot be the idempotency key",
                input.idempotency_key->span,
                "the idempotency key is a string input: declare it 'type: string', or mark "
                "the string input that carries the key");
        } else {
          f.idempotency_key = true;
        }
      }
    }
    return f;
  }

  // At most one input is the idempotency key (the ledger claims one value per letter).
  void one_idempotency_key(const std::vector<ast::Input>& inputs, const ir::Policy& p) {
    const ir::Field* first = nullptr;
    for (uint32_t i = 0; i < inputs.size() && i < p.fields.size(); ++i) {
      if (!p.fields[i].idempotency_key) continue;
      if (first == nullptr) {
        first = &p.fields[i];
        continue;
      }
      error("RG139",
            "input " + quote(p.fields[i].name) + " cannot be a second idempotency key: input " +
                quote(first->name) + " already is",
            inputs[i].idempotency_key->span,
            std::string("a letter has one idempotency key: remove '") +
                pick("idempotency_key: true", "idempotency key") + "' from all inputs but one");
    }
  }

  // Derived bools (ir::Derivation): `derived` only on a required bool; the op one of eq, ne, lt,
  // le, gt, ge; two operands naming required int inputs declared before the derived one, so a
  // derivation never depends on another derivation or on an absent value.
  void derivations(const std::vector<ast::Input>& inputs, ir::Policy& p) {
    const std::vector<std::string>& kDerivationOps = policy_keys::kDerivedOps;
    for (uint32_t i = 0; i < inputs.size() && i < p.fields.size(); ++i) {
      if (!inputs[i].derived) continue;
      const ast::Derivation& d = *inputs[i].derived;
      ir::Field& f = p.fields[i];
      const std::string label = "input " + quote(f.name);
      if (!inputs[i].type || f.type != ir::FieldType::kBool || f.optional) {
        if (inputs[i].type && f.type != ir::FieldType::kBool) {
          error("RG140",
                "'derived' applies to bool inputs only; " + label + " has type " +
                    ir::field_type_name(f.type),
                d.span, "declare it 'type: bool'");
        } else if (f.optional) {
          error("RG140", "derived " + label + " cannot be optional: it is always computed", d.span,
                pick("remove 'optional: true'", "remove 'optional'"));
        }
        continue;
      }
      ir::Derivation out;
      bool ok = true;
      const auto op = std::find(kDerivationOps.begin(), kDerivationOps.end(), d.op.text);
      if (op == kDerivationOps.end()) {
        error("RG141", "unknown operator " + quote(d.op.text) + " in the derivation of " + label,
              d.op.span, did_you_mean(d.op.text, kDerivationOps));
        ok = false;
      } else {
        static const ir::Op kIrOps[] = {ir::Op::kEq, ir::Op::kNe, ir::Op::kLt,
                                        ir::Op::kLe, ir::Op::kGt, ir::Op::kGe};
        out.op = kIrOps[op - kDerivationOps.begin()];
      }
      if (d.operands.size() != 2) {
        error("RG141",
              "the derivation of " + label + " needs two input names, not " +
                  std::to_string(d.operands.size()),
              d.op.span, "write e.g. derived: {lt: [message_revision, record_revision]}");
        continue;
      }
      uint32_t operand_index[2] = {0, 0};
      for (size_t k = 0; k < 2; ++k) {
        const ast::Name& name = d.operands[k];
        const auto it = field_index_.find(name.text);
        if (it == field_index_.end()) {
          error("RG105", "unknown field " + quote(name.text) + " in the derivation of " + label,
                name.span,
                did_you_mean(name.text, field_names_,
                             pick("declare it under 'inputs'", "declare it: input NAME: TYPE")));
          ok = false;
          continue;
        }
        const ir::Field& operand = p.fields[it->second];
        if (it->second >= i || operand.type != ir::FieldType::kInt || operand.optional) {
          const std::string why = it->second >= i ? "is not declared before it"
                                  : operand.type != ir::FieldType::kInt
                                      ? std::string("has type ") + ir::field_type_name(operand.type)
                                      : "is optional";
          error("RG142",
                "operand " + quote(name.text) + " of the derivation of " + label + " " + why,
                name.span, "a derivation compares two required int inputs declared above it");
          ok = false;
          continue;
        }
        operand_index[k] = it->second;
      }
      if (!ok) continue;
      out.lhs = operand_index[0];
      out.rhs = operand_index[1];
      f.derived = out;
    }
  }

  // Classified enums (ir::Classifier): `classify` only on a required enum whose values are the
  // classes; `from` a string or int input declared before it that is not itself computed; rows
  // of kind in (values of the raw type), prefix (strings, on a string raw input only) or range
  // (two ints lo <= hi, on an int raw input only), each naming a class; a mandatory fallback.
  void classifiers(const std::vector<ast::Input>& inputs, ir::Policy& p, ir::SourceMap& src) {
    for (uint32_t i = 0; i < inputs.size() && i < p.fields.size(); ++i) {
      if (!inputs[i].classify) continue;
      const ast::Classifier& c = *inputs[i].classify;
      ir::Field& f = p.fields[i];
      const std::string label = "input " + quote(f.name);
      if (!inputs[i].type || f.type != ir::FieldType::kEnum || f.optional) {
        if (inputs[i].type && f.type != ir::FieldType::kEnum) {
          error("RG150",
                "'classify' applies to enum inputs only; " + label + " has type " +
                    ir::field_type_name(f.type),
                c.span,
                pick("declare it 'type: enum' with its classes as 'values'",
                     "declare it 'enum (CLASS, ...)' with its classes"));
        } else if (f.optional) {
          error("RG150", "classified " + label + " cannot be optional: it is always computed",
                c.span, pick("remove 'optional: true'", "remove 'optional'"));
        }
        continue;
      }
      if (f.enum_values.empty()) continue;  // RG102/RG116 said why
      ir::Classifier out;
      bool ok = true;
      const ir::Field* raw = nullptr;
      if (!c.from) {
        error("RG151", label + " is classified from nothing", c.span,
              pick("name the raw input: from: http_status",
                   "name the raw input: classify "
                   "http_status { ... }"));
        ok = false;
      } else {
        const auto it = field_index_.find(c.from->text);
        if (it == field_index_.end()) {
          error("RG151",
                "unknown raw input " + quote(c.from->text) + " for the classifier of " + label,
                c.from->span,
                did_you_mean(c.from->text, field_names_,
                             pick("declare it under 'inputs'", "declare it: input NAME: TYPE")));
          ok = false;
        } else {
          const ir::Field& candidate = p.fields[it->second];
          const bool computed = candidate.derived || inputs[it->second].classify;
          if (it->second >= i || computed ||
              (candidate.type != ir::FieldType::kString && candidate.type != ir::FieldType::kInt)) {
            const std::string why =
                it->second >= i ? "is not declared before it"
                : computed      ? "is computed itself"
                                : std::string("has type ") + ir::field_type_name(candidate.type);
            error("RG151",
                  "raw input " + quote(c.from->text) + " of the classifier of " + label + " " + why,
                  c.from->span,
                  "a classifier reads a string or int input (not a computed one) declared above "
                  "it");
            ok = false;
          } else {
            out.from = it->second;
            raw = &candidate;
          }
        }
      }
      const auto class_of = [&](const ast::Name& name,
                                const char* what) -> std::optional<uint32_t> {
        const auto at = std::find(f.enum_values.begin(), f.enum_values.end(), name.text);
        if (at != f.enum_values.end()) return static_cast<uint32_t>(at - f.enum_values.begin());
        error("RG153", std::string(what) + " " + quote(name.text) + " is not a class of " + label,
              name.span, did_you_mean(name.text, f.enum_values, "the classes are its values"));
        return std::nullopt;
      };
      if (!c.fallback) {
        error("RG155", "the classifier of " + label + " has no fallback class", c.span,
              pick("add 'fallback: CLASS': the class of a raw value no row takes (make it one "
                   "that fails closed)",
                   "add 'fallback CLASS' before '}': the class of a raw value no row takes (make "
                   "it one that fails closed)"));
        ok = false;
      } else if (auto cls = class_of(*c.fallback, "fallback")) {
        out.fallback = *cls;
      } else {
        ok = false;
      }
      for (const ast::ClassifyRow& row : c.rows) {
        ir::ClassifyRow r;
        if (!row.cls) {
          error("RG152", "a classifier row of " + label + " names no class", row.span,
                pick("add 'class: CLASS'", "end the row with '-> CLASS'"));
          ok = false;
        } else if (auto cls = class_of(*row.cls, "class")) {
          r.cls = *cls;
        } else {
          ok = false;
        }
        if (!row.kind) {
          error("RG152", "a classifier row of " + label + " has no matcher", row.span,
                pick("add one of in: [...], prefix: [...], range: [LO, HI]",
                     "start the row with in (...), prefix (...) or range (LO, HI)"));
          ok = false;
          continue;
        }
        const std::string& kind = row.kind->text;
        if (kind == "in") {
          r.kind = ir::ClassifyRow::Kind::kIn;
        } else if (kind == "prefix") {
          r.kind = ir::ClassifyRow::Kind::kPrefix;
        } else if (kind == "range") {
          r.kind = ir::ClassifyRow::Kind::kRange;
        } else {
          error("RG152", "unknown classifier matcher " + quote(kind), row.kind->span,
                did_you_mean(kind, policy_keys::kClassifyMatchers));
          ok = false;
          continue;
        }
        if (row.operands.empty()) {
          error("RG152", "classifier matcher " + quote(kind) + " of " + label + " has no values",
                row.kind->span, "list at least one value");
          ok = false;
          continue;
        }
        if (raw == nullptr) continue;
        if ((r.kind == ir::ClassifyRow::Kind::kPrefix && raw->type != ir::FieldType::kString) ||
            (r.kind == ir::ClassifyRow::Kind::kRange && raw->type != ir::FieldType::kInt)) {
          error("RG152",
                "'" + kind + "' does not apply to raw input " + quote(raw->name) + " of type " +
                    ir::field_type_name(raw->type),
                row.kind->span,
                r.kind == ir::ClassifyRow::Kind::kPrefix
                    ? "prefixes match strings; on an int use a range"
                    : "ranges match ints; on a string use in or prefix");
          ok = false;
          continue;
        }
        if (r.kind == ir::ClassifyRow::Kind::kRange && row.operands.size() != 2) {
          error("RG154",
                "a range needs two ints LO and HI, not " + std::to_string(row.operands.size()) +
                    " values",
                row.kind->span, pick("write range: [500, 599]", "write range (500, 599)"));
          ok = false;
          continue;
        }
        bool row_ok = true;
        for (const Literal& operand : row.operands) {
          auto value = typed_value(*raw, operand, nullptr);
          if (!value) {
            row_ok = false;
            continue;
          }
          if (r.kind == ir::ClassifyRow::Kind::kPrefix && value->str.empty()) {
            error("RG152", "an empty prefix takes every string", operand.span,
                  "write the prefix, or make the fallback the class you meant");
            row_ok = false;
            continue;
          }
          r.values.push_back(std::move(*value));
        }
        if (row_ok && r.kind == ir::ClassifyRow::Kind::kRange && r.values[0].i > r.values[1].i) {
          error("RG154",
                "empty range: " + int_text(r.values[0].i) + " is greater than " +
                    int_text(r.values[1].i),
                row.kind->span, "swap them, or fix the bound");
          row_ok = false;
        }
        if (!row_ok) {
          ok = false;
          continue;
        }
        out.rows.push_back(std::move(r));
      }
      if (!ok) continue;
      f.classify = std::move(out);
      src.classifiers.resize(p.fields.size());
      ir::ClassifierSpans& spans = src.classifiers[i];
      spans.classifier = c.span;
      spans.fallback = c.fallback->span;
      for (const ast::ClassifyRow& row : c.rows) spans.rows.push_back(row.span);
    }
  }

  // The policy's sensitive field names: non-empty words, each once.
  void sensitive(const ast::LiteralList& list, ir::Policy& p) {
    std::map<std::string, uint32_t> seen;
    for (const Literal& item : list.items) {
      if (item.kind == Literal::Kind::kNull || item.text.empty() ||
          has_space_or_control(item.text)) {
        error("RG143", "a sensitive field name must be a non-empty name without spaces", item.span,
              "write the letter or record field's name, e.g. prompt");
        continue;
      }
      const auto [it, inserted] = seen.emplace(item.text, item.span.line);
      if (!inserted) {
        error("RG143", "sensitive field " + quote(item.text) + " is listed twice", item.span,
              "already listed at line " + std::to_string(it->second));
        continue;
      }
      p.sensitive.push_back(item.text);
    }
  }

  // RG131: a string field's declared known values: a non-empty list of distinct strings (bare
  // or quoted, not null, not a bare boolean); "" is not allowed when it means absent.
  void domain_values(const ast::LiteralList& values, const std::string& label, ir::Field& f) {
    if (values.items.empty()) {
      error("RG131", label + " has an empty 'domain'", values.span,
            "list the values the field is known to take, or remove 'domain'");
      return;
    }
    std::map<std::string, uint32_t> seen;
    for (const Literal& value : values.items) {
      if (value.kind == Literal::Kind::kNull) {
        error("RG131", label + " has an empty value in its 'domain'", value.span,
              "remove it, or write the value");
        continue;
      }
      if (value.bare("true") || value.bare("false")) {
        error("RG108", "domain value " + value.text + " of " + label + " is a boolean", value.span,
              "quote it to use the word as a value: " + quoted_in_syntax(value.text));
        continue;
      }
      if (value.text.empty() && f.empty_means_absent) {
        error("RG131",
              label + " lists \"\" in its 'domain', but an empty " + f.name + " is read as absent",
              value.span, "remove \"\" from the domain");
        continue;
      }
      const auto [it, inserted] = seen.emplace(value.text, value.span.line);
      if (!inserted) {
        error("RG131", "duplicate domain value " + quote(value.text) + " in " + label, value.span,
              "already listed at line " + std::to_string(it->second));
        continue;
      }
      f.domain.push_back(value.text);
    }
  }

  // An invariant: id, premise (guard conditions, possibly none), one requirement, reason.
  // RG102 (no require), RG104 (unknown verb), RG113 (unknown effect), RG130 (bad requirement).
  ir::Invariant invariant(const ast::Invariant& invariant, const ir::Policy& p,
                          std::vector<ir::Span>& spans) {
    ir::Invariant inv;
    inv.id = invariant.id.text;
    claim_id(inv.id, invariant.id.span, "invariant");
    const std::string label = "invariant " + quote(inv.id);
    if (invariant.when) {
      for (const ast::Condition& condition : *invariant.when) {
        if (condition.malformed) continue;
        if (auto c = this->condition(condition, p)) {
          inv.conditions.push_back(std::move(*c));
          spans.push_back(condition.span);
        }
      }
    }
    if (invariant.reason) inv.reason = string_literal(*invariant.reason, "reason");
    if (!invariant.require_op) {
      error("RG102", label + " has no 'require'", invariant.span,
            "add e.g. 'require: {verb_in: [hold, never]}' or 'require: {effect_not: create}'");
      return inv;
    }
    const ast::Name& op = *invariant.require_op;
    if (op.text.empty()) return inv;  // the front-end reported a malformed requirement
    static const std::map<std::string, ir::InvariantOp> kRequireOps = {
        {"verb_in", ir::InvariantOp::kVerbIn},
        {"verb_not_in", ir::InvariantOp::kVerbNotIn},
        {"effect_at_most", ir::InvariantOp::kEffectAtMost},
        {"effect_not", ir::InvariantOp::kEffectNot}};
    const std::vector<std::string>& kRequireNames = policy_keys::kRequire;
    const auto it = kRequireOps.find(op.text);
    if (it == kRequireOps.end()) {
      error("RG130", "unknown requirement " + quote(op.text) + " in " + label, op.span,
            did_you_mean(op.text, kRequireNames));
      return inv;
    }
    inv.op = it->second;
    const bool on_verbs =
        inv.op == ir::InvariantOp::kVerbIn || inv.op == ir::InvariantOp::kVerbNotIn;
    if (on_verbs) {
      if (invariant.operands.empty()) {
        error("RG130", "'" + op.text + "' of " + label + " lists no verb", op.span,
              "list at least one verb: " +
                  (dsl_ ? std::string(inv.op == ir::InvariantOp::kVerbIn ? "verb in"
                                                                         : "verb not in") +
                              " (hold, never)"
                        : op.text + ": [hold, never]"));
        return inv;
      }
      std::map<std::string, uint32_t> seen;
      for (const ast::Name& name : invariant.operands) {
        auto index = resolve_verb(name);
        if (!index) continue;
        if (!seen.emplace(name.text, name.span.line).second) {
          error("RG130", "verb " + quote(name.text) + " is listed twice in " + label, name.span,
                "list each verb once");
          continue;
        }
        inv.verbs.push_back(*index);
      }
      return inv;
    }
    if (invariant.operands.size() != 1) {
      error("RG130", "'" + op.text + "' of " + label + " takes one effect, not a list", op.span,
            "write e.g. " + op.text + ": create");
      return inv;
    }
    const ast::Name& effect = invariant.operands.front();
    static const std::map<std::string, ir::Effect> kEffectByName = {
        {"none", ir::Effect::kNone},
        {"read", ir::Effect::kRead},
        {"copy", ir::Effect::kCopy},
        {"create", ir::Effect::kCreate}};
    const auto e = kEffectByName.find(effect.text);
    if (e == kEffectByName.end()) {
      error("RG113", "unknown effect " + quote(effect.text) + " in " + label, effect.span,
            did_you_mean(effect.text, kEffects));
      return inv;
    }
    inv.effect = e->second;
    return inv;
  }

  void enum_values(const ast::LiteralList& values, const std::string& label, ir::Field& f) {
    if (values.items.empty()) {
      error("RG116", label + " has an empty list of values", values.span,
            "an enum needs at least one value");
      return;
    }
    std::map<std::string, uint32_t> seen;
    for (const Literal& value : values.items) {
      if (value.kind == Literal::Kind::kNull || value.text.empty()) {
        error("RG116", label + " has an empty enum value", value.span,
              "remove it, or write the value");
        continue;
      }
      if (value.bare("true") || value.bare("false")) {
        error("RG108", "enum value " + value.text + " of " + label + " is a boolean", value.span,
              "quote it to use the word as a value: " + quoted_in_syntax(value.text));
        continue;
      }
      const auto [it, inserted] = seen.emplace(value.text, value.span.line);
      if (!inserted) {
        error("RG116", "duplicate enum value " + quote(value.text) + " in " + label, value.span,
              "already listed at line " + std::to_string(it->second));
        continue;
      }
      f.enum_values.push_back(value.text);
    }
  }

  ir::Verb verb(const ast::Verb& verb) {
    ir::Verb v;
    v.name = verb.name.text;
    if (!is_name(v.name)) invalid_name("verb", verb.name);
    if (verb.description) v.description = string_literal(*verb.description, "description");
    if (!verb.effect) {
      error("RG102", "verb " + quote(v.name) + " has no 'effect'", verb.span,
            "add 'effect: none', 'read', 'copy' or 'create'");
      return v;
    }
    const std::string& effect = verb.effect->text;
    if (effect == "none") {
      v.effect = ir::Effect::kNone;
    } else if (effect == "read") {
      v.effect = ir::Effect::kRead;
    } else if (effect == "copy") {
      v.effect = ir::Effect::kCopy;
    } else if (effect == "create") {
      v.effect = ir::Effect::kCreate;
    } else {
      error("RG113", "unknown effect " + quote(effect) + " for verb " + quote(v.name),
            verb.effect->span, did_you_mean(effect, kEffects));
    }
    return v;
  }

  std::optional<uint32_t> resolve_verb(const ast::Name& name) {
    const auto it = verb_index_.find(name.text);
    if (it != verb_index_.end()) return it->second;
    error("RG104", "unknown verb " + quote(name.text), name.span,
          did_you_mean(name.text, verb_names_));
    return std::nullopt;
  }

  std::optional<uint32_t> resolve_field(const ast::Name& name) {
    const auto it = field_index_.find(name.text);
    if (it != field_index_.end()) return it->second;
    error("RG105", "unknown field " + quote(name.text), name.span,
          did_you_mean(name.text, field_names_,
                       pick("declare it under 'inputs'", "declare it: input NAME: TYPE")));
    return std::nullopt;
  }

  // How a row gets an id of its own instead of the one derived from its keys, in the file's syntax
  // (a YAML row written as a list has no place for one).
  std::string own_id_how() const {
    return dsl_ ? "with 'as NAME' after its verb"
                : "in the mapping form: {keys: [...], verb: VERB, id: NAME}";
  }

  // Records a rule or row id, reporting empty, reserved and repeated ids. `derived`: a row's id
  // that check() made from its keys (row `row` of the current table), not one the author wrote,
  // so the hints say how to give the row an id rather than how to spell one.
  void claim_id(const std::string& id, ir::Span span, const char* what, bool derived = false,
                size_t row = 0) {
    if (id.empty()) {
      error("RG127", std::string("this ") + what + " has an empty id", span,
            "give it a short unique name");
      return;
    }
    if (has_space_or_control(id)) {
      if (derived) {
        error("RG127",
              "the id " + quote(id) +
                  " that this row derives from its keys contains spaces or control characters",
              span, "give the row its own id " + own_id_how());
      } else {
        error("RG127",
              std::string(what) + " id " + quote(id) + " contains spaces or control characters",
              span, "ids are single words, e.g. no_idempotency_key");
      }
    }
    if (id == "default") {
      error("RG122", "the id 'default' is reserved", span,
            "'default' names the policy's default decision; choose another id");
      return;
    }
    const auto [it, inserted] = ids_.emplace(id, IdUse{span.line, derived, table_ordinal_, row});
    if (!inserted) {
      std::string hint = "ids are unique across the policy; " + quote(id) +
                         " is first used at line " + std::to_string(it->second.line);
      if (derived) {
        hint += " (this row's id comes from its keys: give it its own id " + own_id_how() + ")";
      } else if (it->second.derived) {
        hint += ", by the row there (derived from its keys): choose another id";
      }
      error("RG121", "duplicate rule id " + quote(id), span, hint);
    }
  }

  // Whether a row whose derived id is `id` repeats the keys of an earlier row of the current table
  // whose id was derived too. Such a row is a repeated row, not a repeated id: the analysis
  // reports it as one (RG203, naming both verbs), which RG121 would only hide.
  bool repeats_row(const std::string& id, const std::vector<std::optional<ir::Value>>& keys,
                   const ir::Table& t) const {
    const auto it = ids_.find(id);
    return it != ids_.end() && it->second.derived && it->second.table == table_ordinal_ &&
           it->second.row < t.rows.size() && t.rows[it->second.row].keys == keys;
  }

  // Types `literal` as a value of field `f`. Ints may name a constant (its name goes to
  // `*constant`). Reports RG106, RG108, RG109, RG111.
  std::optional<ir::Value> typed_value(const ir::Field& f, const Literal& literal,
                                       std::string* constant) {
    // Built only for a diagnostic: typed_value runs once per table key, a million times for a
    // million-row table.
    const auto label = [&f] {
      return ir::field_type_name(f.type) + std::string(" field ") + quote(f.name);
    };
    if (literal.kind == Literal::Kind::kNull) {
      error("RG108", "missing value for " + label(), literal.span,
            "write a value; quote it ('null') if you mean the word");
      return std::nullopt;
    }
    const bool bare_bool = literal.bare("true") || literal.bare("false");
    switch (f.type) {
      case ir::FieldType::kString:
        if (bare_bool) {
          error(
              "RG108", literal.text + " is a boolean, but " + quote(f.name) + " is a string field",
              literal.span, "quote it to compare with the text: " + quoted_in_syntax(literal.text));
          return std::nullopt;
        }
        return ir::Value::String(literal.text);
      case ir::FieldType::kEnum: {
        if (bare_bool) {
          error("RG108", literal.text + " is a boolean, but " + quote(f.name) + " is an enum field",
                literal.span,
                "quote it to compare with the text: " + quoted_in_syntax(literal.text));
          return std::nullopt;
        }
        for (const std::string& value : f.enum_values) {
          if (value == literal.text) return ir::Value::String(literal.text);
        }
        error("RG111", quote(literal.text) + " is not a value of " + label(), literal.span,
              did_you_mean(literal.text, f.enum_values));
        return std::nullopt;
      }
      case ir::FieldType::kBool:
        if (bare_bool) return ir::Value::Bool(literal.text == "true");
        if (literal.kind == Literal::Kind::kBare && looks_like_yaml11_bool(literal.text)) {
          error("RG108",
                quote(literal.text) + " is not a boolean; " + label() + " needs true or false",
                literal.span, "write true or false");
        } else {
          error("RG108",
                (literal.kind == Literal::Kind::kQuoted ? "the quoted string " : "") +
                    quote(literal.text) + " is not a boolean; " + label() + " needs true or false",
                literal.span, "write true or false");
        }
        return std::nullopt;
      case ir::FieldType::kInt: {
        if (literal.kind == Literal::Kind::kQuoted) {
          error("RG108",
                "the quoted string " + quote(literal.text) + " is not an int; " + label() +
                    " needs an int",
                literal.span, "write the number without quotes");
          return std::nullopt;
        }
        if (bare_bool) {
          error("RG108", literal.text + " is a boolean, but " + quote(f.name) + " is an int field",
                literal.span, "write a decimal integer or a constant's name");
          return std::nullopt;
        }
        const char first = literal.text.empty() ? '\0' : literal.text[0];
        if ((first >= '0' && first <= '9') || first == '-' || first == '+') {
          auto value = parse_int(literal);
          if (!value) return std::nullopt;
          return ir::Value::Int(*value);
        }
        const auto it = constant_values_.find(literal.text);
        if (it == constant_values_.end()) {
          error("RG106", "unknown constant " + quote(literal.text), literal.span,
                did_you_mean(literal.text, constant_names_,
                             pick("int operands are decimal integers or names declared under "
                                  "'constants'",
                                  "int operands are decimal integers or names declared with "
                                  "'const NAME = N'")));
          return std::nullopt;
        }
        if (constant != nullptr) *constant = literal.text;
        return ir::Value::Int(it->second);
      }
    }
    return std::nullopt;
  }

  // RG110 when an int value lies outside the field's declared bounds.
  bool within_bounds(const ir::Field& f, const ir::Value& value, ir::Span span) {
    if (f.type != ir::FieldType::kInt) return true;
    if (f.min && value.i < *f.min) {
      error("RG110",
            int_text(value.i) + " is below the minimum " + int_text(*f.min) + " of field " +
                quote(f.name),
            span, "no valid input can have this value");
      return false;
    }
    if (f.max && value.i > *f.max) {
      error("RG110",
            int_text(value.i) + " is above the maximum " + int_text(*f.max) + " of field " +
                quote(f.name),
            span, "no valid input can have this value");
      return false;
    }
    return true;
  }

  ir::Guard guard(const ast::Guard& guard, const ir::Policy& p, std::vector<ir::Span>& spans) {
    ir::Guard g;
    g.id = guard.id.text;
    claim_id(g.id, guard.id.span, "guard");
    const std::string label = "guard " + quote(g.id);
    if (!guard.when) {
      if (guard.when_span.line == 0)
        error("RG102", label + " has no 'when'", guard.span,
              "add 'when:' with at least one condition, e.g. when: {topic: payment.capture}");
    } else if (guard.when->empty()) {
      error("RG119", "the 'when' of " + label + " has no conditions", guard.when_span,
            "a guard needs at least one condition; to change the fallback, edit 'default'");
    } else {
      for (const ast::Condition& condition : *guard.when) {
        if (condition.malformed) continue;
        if (auto c = this->condition(condition, p)) {
          g.conditions.push_back(std::move(*c));
          spans.push_back(condition.span);
        }
      }
    }
    if (!guard.verb) {
      error("RG102", label + " has no 'verb'", guard.span, "add 'verb: NAME'");
    } else if (auto index = resolve_verb(*guard.verb)) {
      g.verb = *index;
    }
    if (!guard.reason) {
      error("RG102", label + " has no 'reason'", guard.span,
            "add 'reason: ...' saying why, in words an operator will read");
    } else {
      g.reason = string_literal(*guard.reason, "reason");
      if (g.reason.empty() && guard.reason->kind != Literal::Kind::kNull) {
        error("RG108", "the reason of " + label + " is empty", guard.reason->span,
              "say why, in words an operator will read");
      }
    }
    return g;
  }

  std::optional<ir::Condition> condition(const ast::Condition& condition, const ir::Policy& p) {
    const auto field_index = resolve_field(condition.field);
    const std::string& op_text = condition.op.text;
    std::optional<ir::Op> op;
    static const std::map<std::string, ir::Op> kOpByName = [] {
      std::map<std::string, ir::Op> by_name;
      for (uint32_t code = 0; code < kOpCount; ++code) {
        if (const std::optional<ir::Op> op = op_from_code(code)) by_name.emplace(op_name(*op), *op);
      }
      return by_name;
    }();
    const bool keyword = op_text == "absent" || op_text == "present";
    if (keyword && (!condition.operands.empty() || condition.operand_is_list)) {
      error("RG107", quote(op_text) + " is not an operator", condition.op.span,
            "write it as the whole matcher: '" + condition.field.text + ": " + op_text + "'");
      return std::nullopt;
    }
    if (const auto it = kOpByName.find(op_text); it != kOpByName.end()) {
      op = it->second;
    } else {
      error("RG107", "unknown operator " + quote(op_text), condition.op.span,
            did_you_mean(op_text, kOps));
    }
    if (!field_index || !op) return std::nullopt;
    const ir::Field& f = p.fields[*field_index];
    ir::Condition c;
    c.field = *field_index;
    c.op = *op;
    if (*op == ir::Op::kAbsent || *op == ir::Op::kPresent) {
      if (!f.optional) {
        error("RG117",
              "field " + quote(f.name) + " is required, so it is never absent; '" + op_text +
                  "' cannot apply",
              condition.op.span,
              (dsl_ ? "declare it optional ('input " + f.name + ": optional " +
                          ir::field_type_name(f.type) + "')"
                    : std::string("declare it 'optional: true'")) +
                  ", or drop the condition (an input without it is invalid and gets the default)");
        return std::nullopt;
      }
      return c;
    }
    const bool ordering =
        *op == ir::Op::kLt || *op == ir::Op::kLe || *op == ir::Op::kGt || *op == ir::Op::kGe;
    if (ordering && f.type != ir::FieldType::kInt) {
      error("RG118",
            "'" + op_text + "' compares order, but " + quote(f.name) + " is a " +
                ir::field_type_name(f.type) + " field",
            condition.op.span, "ordering operators apply to int fields; use eq, ne, in or not_in");
      return std::nullopt;
    }
    const bool list_op = *op == ir::Op::kIn || *op == ir::Op::kNotIn;
    if (list_op && !condition.operand_is_list) {
      error("RG120", "'" + op_text + "' takes a list", condition.op.span,
            "write the values as a list: " + op_text + ": [" +
                (condition.operands.empty() ? std::string("a, b") : condition.operands[0].text) +
                "]");
      return std::nullopt;
    }
    if (!list_op && condition.operand_is_list) {
      error("RG120", "'" + op_text + "' takes a single value, not a list", condition.op.span,
            "use 'in' or 'not_in' to compare with several values");
      return std::nullopt;
    }
    if (list_op && condition.operands.empty()) {
      error("RG120", "the list for '" + op_text + "' on " + quote(f.name) + " is empty",
            condition.op.span, "list at least one value");
      return std::nullopt;
    }
    bool ok = true;
    for (const Literal& operand : condition.operands) {
      std::string constant;
      auto value = typed_value(f, operand, &constant);
      if (!value) {
        ok = false;
        continue;
      }
      // Ordering operands outside the bounds make the condition always or never true: that is
      // the analysis' finding (RG2xx), not a type error.
      if (!ordering && !within_bounds(f, *value, operand.span)) ok = false;
      if (!list_op) c.constant = constant;
      c.values.push_back(std::move(*value));
    }
    if (!ok) return std::nullopt;
    return c;
  }

  ir::Table table(const ast::Table& table, const ir::Policy& p, std::vector<ir::Span>& spans) {
    ir::Table t;
    t.id = table.id.text;
    ++table_ordinal_;
    claim_id(t.id, table.id.span, "table");
    const std::string label = "table " + quote(t.id);
    // Per key column: the field index, or nullopt when the key did not resolve.
    std::vector<std::optional<uint32_t>> columns;
    if (!table.keys) {
      if (table.keys_span.line == 0)
        error("RG102", label + " has no 'keys'", table.span,
              "add 'keys: [FIELD, ...]' naming the fields the rows match");
    } else {
      if (table.keys->empty() || table.keys->size() > kMaxTableKeys) {
        error("RG126",
              label + " has " + std::to_string(table.keys->size()) + " keys; a table has 1 to " +
                  std::to_string(kMaxTableKeys),
              table.keys_span,
              table.keys->empty() ? "name at least one field" : "split it into smaller tables");
      }
      std::map<std::string, uint32_t> seen;
      for (const ast::Name& key : *table.keys) {
        std::optional<uint32_t> index = resolve_field(key);
        if (index && !seen.emplace(key.text, key.span.line).second) {
          error("RG125", "field " + quote(key.text) + " is a key of " + label + " twice", key.span,
                "each field is a key at most once");
        }
        if (index) t.key_fields.push_back(*index);
        columns.push_back(index);
      }
    }
    if (!table.rows) {
      if (table.rows_span.line == 0)
        error("RG102", label + " has no 'rows'", table.span,
              "add 'rows:' with one [key..., verb] list per row");
      return t;
    }
    for (const ast::Row& row : *table.rows) {
      ir::Row r;
      bool ok = true;
      if (table.keys && row.keys.size() != columns.size()) {
        const size_t k = columns.size();
        // "1 key", "2 keys": a count with its noun.
        const auto count = [](size_t n, const char* noun) {
          return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
        };
        if (row.flow) {
          error("RG123",
                "this row has " + count(row.keys.size() + (row.verb ? 1 : 0), "value") + ", but " +
                    label + " has " + count(k, "key") + ", so a row needs " + std::to_string(k + 1),
                row.span, "write the " + count(k, "key value") + ", then the verb");
        } else {
          error("RG123",
                "this row has " + count(row.keys.size(), "key") + ", but " + label + " has " +
                    std::to_string(k),
                row.keys_span, "write one value per table key, in the order of 'keys'");
        }
        ok = false;
      }
      if (ok && table.keys) {
        for (size_t i = 0; i < row.keys.size(); ++i) {
          const Literal& key = row.keys[i];
          if (key.kind == Literal::Kind::kWildcard) {
            r.keys.emplace_back(std::nullopt);
            continue;
          }
          if (key.bare("absent") || key.bare("present")) {
            const std::string field =
                columns[i] ? p.fields[*columns[i]].name : std::string("FIELD");
            error("RG128", "a table row cannot match " + quote(key.text), key.span,
                  dsl_ ? "put a rule before the table: rule ID: when " + field + " is " + key.text +
                             " -> VERB \"REASON\""
                       : "put a guard before the table: when: {" + field + ": " + key.text + "}");
            ok = false;
            continue;
          }
          if (!columns[i]) {
            ok = false;
            continue;
          }
          const ir::Field& f = p.fields[*columns[i]];
          auto value = typed_value(f, key, nullptr);
          if (!value || !within_bounds(f, *value, key.span)) {
            ok = false;
            continue;
          }
          r.keys.push_back(std::move(*value));
        }
      }
      std::optional<uint32_t> verb;
      if (row.verb && (ok || !row.flow)) verb = resolve_verb(*row.verb);
      if (verb) r.verb = *verb;
      if (row.reason) r.reason = string_literal(*row.reason, "reason");
      if (row.id) {
        r.id = row.id->text;
        claim_id(r.id, row.id->span, "row");
      } else if (ok) {
        r.id = t.id + ":";
        for (size_t i = 0; i < r.keys.size(); ++i)
          r.id += (i == 0 ? "" : "/") + ir::key_text(r.keys[i]);
        if (!repeats_row(r.id, r.keys, t)) claim_id(r.id, row.span, "row", true, t.rows.size());
      }
      t.rows.push_back(std::move(r));
      spans.push_back(row.span);
    }
    return t;
  }

  std::string_view path_;
  std::vector<Diagnostic>& diagnostics_;
  std::map<std::string, uint32_t> field_index_;
  std::map<std::string, uint32_t> verb_index_;
  std::map<std::string, int64_t> constant_values_;
  std::vector<std::string> field_names_;
  std::vector<std::string> verb_names_;
  std::vector<std::string> constant_names_;
  // Where an id was first used: its line and, for a row id derived from the row's keys, the
  // table (its ordinal) and the row's index, so a repeated row is told from a repeated id.
  struct IdUse {
    uint32_t line = 0;
    bool derived = false;
    size_t table = 0;
    size_t row = 0;
  };
  std::map<std::string, IdUse> ids_;
  size_t table_ordinal_ = 0;  // tables checked so far (the current one's ordinal, from 1)
  bool dsl_ = false;          // the policy was written in the .policy language: hints in its syntax
};

}  // namespace

IntText read_decimal_int(std::string_view text, int64_t* value) {
  const bool negative = !text.empty() && text[0] == '-';
  const std::string_view digits = text.substr(negative ? 1 : 0);
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return IntText::kNotDecimal;
  }
  if (digits.size() > 1 && digits[0] == '0') return IntText::kLeadingZero;
  int64_t parsed = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (ec != std::errc() || end != text.data() + text.size()) return IntText::kOutOfRange;
  *value = parsed;
  return IntText::kOk;
}

CheckResult check(const ast::Policy& policy, std::string_view path) {
  CheckResult result;
  Checker checker(path, result.diagnostics);
  result.checked = checker.run(policy);
  return result;
}

}  // namespace replaygate
