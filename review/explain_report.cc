// Building the explain report (see explain_report.h): the two walks, the record's parts and
// origins, and the redaction of secret values.
#include "review/explain_report.h"

#include <optional>
#include <utility>
#include <variant>

#include "common/plural.h"
#include "compiler/explain.h"
#include "compiler/interpret.h"
#include "runtime/trace.h"

namespace replaygate::review {

using inputs::InputOrigin;
using inputs::RecordPartValue;

namespace {

LetterValue slot_value(const Input::Slot& slot) {
  switch (slot.state) {
    case Input::Slot::State::kUnset:
      return LetterValue::Missing();
    case Input::Slot::State::kNull:
      return LetterValue::Null();
    case Input::Slot::State::kString:
      return LetterValue::String(std::string(slot.s));
    case Input::Slot::State::kInt:
      return LetterValue::Int(slot.i);
    case Input::Slot::State::kBool:
      return LetterValue::Bool(slot.b);
    case Input::Slot::State::kInvalid:
      return LetterValue::Invalid();
  }
  return LetterValue::Invalid();
}

// "message_revision < record_revision": a derived field's formula, in describe_condition()'s
// symbols.
std::string derivation_text(const std::string& lhs, const char* op, const std::string& rhs) {
  return lhs + " " + op_word_symbol(op) + " " + rhs;
}

// How a classified input got its class: "http_status 503, row 1 (in)", "http_status absent, the
// fallback", "http_status 507, no row: the fallback"; just the raw input's name when the letter
// is invalid.
std::string classification_text(const ir::Policy& policy, const ir::Classifier& c,
                                const ValidatedLetter& valid) {
  const std::string& raw = policy.fields.at(c.from).name;
  if (!valid.valid) return "from " + raw;
  const FieldValue& value = valid.values.at(c.from);
  if (!value) return raw + " absent: the fallback";
  std::optional<ir::Value> v;
  if (value->kind == LetterValue::Kind::kInt) v = ir::Value::Int(value->i);
  if (value->kind == LetterValue::Kind::kString) v = ir::Value::String(value->s);
  const std::string shown = raw + " " + describe_field_value(value);
  for (size_t r = 0; v && r < c.rows.size(); ++r) {
    if (!ir::classify_row_takes(c.rows[r], *v)) continue;
    const char* kind = c.rows[r].kind == ir::ClassifyRow::Kind::kIn       ? "in"
                       : c.rows[r].kind == ir::ClassifyRow::Kind::kPrefix ? "prefix"
                                                                          : "range";
    return shown + ", row " + std::to_string(r + 1) + " (" + kind + ")";
  }
  return shown + ", no row: the fallback";
}

// The decision part, common to both walks (read from the table, which both have).
void fill_decision(const Table& table, const Decision& d, uint32_t line, ExplainReport* report) {
  report->verb = table.verb_name(d.verb);
  report->effect = effect_name(table.verb_effect(d.verb));
  report->description = table.verb_description(d.verb);
  report->kind = d.kind == DecisionKind::kRule      ? "rule"
                 : d.kind == DecisionKind::kDefault ? "default"
                                                    : "invalid_input";
  report->rule = table.rule_name(d);
  report->reason = table.reason(d);
  report->line = line;
}

ExplainReport explain_policy(const ir::CheckedPolicy& checked, const Table& table,
                             const Letter& letter) {
  const ir::Policy& policy = checked.policy;
  ExplainReport report;
  report.policy_id = policy.id;
  report.revision = policy.revision;
  const ValidatedLetter valid = validate_letter(policy, letter);
  for (uint32_t f = 0; f < policy.fields.size(); ++f) {
    DerivedField derived;
    if (const auto& d = policy.fields[f].derived) {
      derived.derived = true;
      derived.formula = derivation_text(policy.fields.at(d->lhs).name, ir::op_name(d->op),
                                        policy.fields.at(d->rhs).name);
      if (valid.valid) derived.computed = describe_field_value(valid.values.at(f));
    }
    if (const auto& c = policy.fields[f].classify) {
      derived.derived = derived.classified = true;
      derived.formula = classification_text(policy, *c, valid);
      if (valid.valid) derived.computed = describe_field_value(valid.values.at(f));
    }
    report.derived.push_back(std::move(derived));
  }
  if (!valid.valid) {
    report.valid = false;
    report.invalid_field = policy.fields.at(valid.invalid_field).name;
    report.invalid_why = valid.invalid_why;
    report.invalid_value = describe_value(letter.at(valid.invalid_field));
  }
  Decision d;
  d.verb = policy.default_verb;
  d.kind = valid.valid ? DecisionKind::kDefault : DecisionKind::kInvalidInput;
  d.invalid_field = valid.valid ? 0 : valid.invalid_field;
  uint32_t line = 0;
  uint32_t catalog_base = 0;
  for (uint32_t r = 0; valid.valid && r < policy.rules.size(); ++r) {
    RuleStep step;
    if (const auto* guard = std::get_if<ir::Guard>(&policy.rules[r])) {
      step.id = guard->id;
      step.matched = true;
      for (const ir::Condition& c : guard->conditions) {
        const FailWhy why = check_condition(policy, c, valid.values);
        step.conditions.push_back({describe_condition(policy, c), policy.fields.at(c.field).name,
                                   describe_field_value(valid.values.at(c.field)),
                                   why == FailWhy::kHolds,
                                   why == FailWhy::kHolds ? "" : fail_why_name(why)});
        if (why != FailWhy::kHolds) {
          step.matched = false;
          break;
        }
      }
      if (step.matched) {
        d.kind = DecisionKind::kRule;
        d.rule = catalog_base;
        d.verb = guard->verb;
        line = r < checked.source.rules.size() ? checked.source.rules[r].line : 0;
      }
      catalog_base += 1;
    } else {
      const auto& t = std::get<ir::Table>(policy.rules[r]);
      step.is_table = true;
      step.id = t.id;
      for (uint32_t f : t.key_fields) {
        step.key_fields.push_back(policy.fields.at(f).name);
        step.key_values.push_back(describe_field_value(valid.values.at(f)));
      }
      std::optional<uint32_t> best;
      size_t best_concrete = 0;
      for (uint32_t row = 0; row < t.rows.size(); ++row) {
        if (!row_matches(policy, t, t.rows[row], valid.values)) continue;
        size_t concrete = 0;
        for (const auto& key : t.rows[row].keys) concrete += key ? 1 : 0;
        if (!best || concrete > best_concrete) {
          best = row;
          best_concrete = concrete;
        }
      }
      if (best) {
        step.matched = true;
        step.row = t.rows[*best].id;
        d.kind = DecisionKind::kRule;
        d.rule = catalog_base + *best;
        d.verb = t.rows[*best].verb;
        if (r < checked.source.rows.size() && *best < checked.source.rows[r].size()) {
          line = checked.source.rows[r][*best].line;
        }
      }
      catalog_base += static_cast<uint32_t>(t.rows.size());
    }
    const bool matched = step.matched;
    report.steps.push_back(std::move(step));
    if (matched) break;
  }
  fill_decision(table, d, line, &report);
  return report;
}

ExplainReport explain_table(const Table& table, const Input& input, const Letter& letter) {
  ExplainReport report;
  report.policy_id = table.policy_id();
  report.revision = table.revision();
  const Trace tr = trace(table, input);
  report.derived.resize(table.field_count());
  for (const TraceDerivation& d : derivations(table)) {
    DerivedField& derived = report.derived.at(d.field);
    derived.derived = true;
    derived.formula = derivation_text(std::string(table.field(d.lhs).name), op_code_name(d.op),
                                      std::string(table.field(d.rhs).name));
    // trace() computes a derived field only when every field is valid, as decide() does.
    if (tr.decision.kind != DecisionKind::kInvalidInput && d.field < tr.fields.size()) {
      derived.computed = tr.fields[d.field].atom_label;
    }
  }
  if (tr.decision.kind == DecisionKind::kInvalidInput) {
    const uint32_t f = tr.decision.invalid_field;
    report.valid = false;
    report.invalid_field = table.field(f).name;
    report.invalid_why = tr.fields.at(f).problem;
    report.invalid_value = describe_value(f < letter.size() ? letter[f] : LetterValue());
  }
  // A derived field's value is the one trace() computed (as decide() does), never the letter's.
  auto value_of = [&](uint32_t f) {
    const TraceField& value = tr.fields.at(f);
    if (value.derived) return value.atom_label;
    return value.absent ? std::string("absent") : describe_value(letter.at(f));
  };
  for (const TraceRule& tr_rule : tr.rules) {
    RuleStep step;
    step.is_table = tr_rule.is_table;
    step.id = tr_rule.id;
    step.matched = tr_rule.matched;
    for (const TraceCondition& c : tr_rule.conditions) {
      const std::string field(table.field(c.field).name);
      const TraceField& value = tr.fields.at(c.field);
      std::string text = field + " " + op_word_symbol(c.op);
      if (!c.operand.empty()) text += " " + c.operand;
      std::string why;
      if (!c.holds) {
        why = value.absent && c.op != "absent"                                 ? "absent"
              : (c.op == "lt" || c.op == "le" || c.op == "gt" || c.op == "ge") ? "bound"
                                                                               : "value";
      }
      step.conditions.push_back({text, field, value_of(c.field), c.holds, why});
    }
    for (uint32_t f : tr_rule.key_fields) {
      step.key_fields.emplace_back(table.field(f).name);
      step.key_values.push_back(value_of(f));
    }
    if (tr_rule.is_table && tr_rule.matched) step.row = table.rule_id(tr_rule.catalog);
    report.steps.push_back(std::move(step));
  }
  fill_decision(
      table, tr.decision,
      tr.decision.kind == DecisionKind::kRule ? table.rule_source_line(tr.decision.rule) : 0,
      &report);
  return report;
}

// Header values and other record text longer than this are cut when shown (a stack trace header
// runs to kilobytes); the full size is said.
constexpr size_t kMaxShownBytes = 160;

// `text` as explain shows a string value (quoted, escaped: describe_value()), cut to
// kMaxShownBytes at a UTF-8 boundary: "\"Read timed out\"", "\"org.spring...\" (4096 bytes)".
std::string shown_string(std::string_view text) {
  if (text.size() <= kMaxShownBytes) return describe_value(LetterValue::String(std::string(text)));
  size_t cut = kMaxShownBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string out = describe_value(LetterValue::String(std::string(text.substr(0, cut))));
  out.insert(out.size() - 1, "...");
  return out + " (" + std::to_string(text.size()) + " bytes)";
}

// The shown value of a record part (RecordPartValue).
std::string part_value(const RecordPartValue& part) {
  switch (part.kind) {
    case RecordPartValue::Kind::kNull:
      return "null";
    case RecordPartValue::Kind::kText:
      return shown_string(part.text);
    case RecordPartValue::Kind::kInt:
      return std::to_string(part.number);
    case RecordPartValue::Kind::kSize:
      return plural(static_cast<uint64_t>(part.number), "byte") +
             " (read only through the mapping)";
  }
  return "?";
}

// Where a mapped input's value came from, as shown after it: "from header 'x' = \"3\"",
// "from header 'x' = \"java.net.SocketTimeoutException\", through map:", "header 'x' is
// missing: the mapping's default", "header 'x' is missing: optional, so absent". The value the
// source held is `redacted` when it is secret.
std::string origin_text(const InputOrigin& o, bool redacted) {
  std::string raw;
  switch (o.found) {
    case InputOrigin::Found::kMissing:
      if (o.defaulted) {
        return o.source + " is missing: the mapping's default" + (o.mapped ? ", through map:" : "");
      }
      return o.source + (o.optional ? " is missing: optional, so absent" : " is missing");
    case InputOrigin::Found::kNull:
      return "from " + o.source + " = null";
    case InputOrigin::Found::kText:
      raw = shown_string(o.text);
      break;
    case InputOrigin::Found::kInt:
      raw = std::to_string(o.number);
      break;
    case InputOrigin::Found::kBool:
      raw = o.flag ? "true" : "false";
      break;
    case InputOrigin::Found::kOther:
      raw = o.text;
      break;
  }
  return "from " + o.source + " = " + (redacted ? std::string(kRedacted) : raw) +
         (o.mapped ? ", through map:" : "");
}

// Replaces every value of a sensitive input (sensitive.h) that the report shows, in the input
// section, the rule walk and the invalid-input line, by <redacted>; absence stays visible.
void redact(ExplainReport& r, const std::set<std::string>& sensitive) {
  const auto hide = [](std::string& value) {
    if (!value.empty() && value != "<missing>" && value != "absent" && value != "null") {
      value = kRedacted;
    }
  };
  for (LetterLine& line : r.letter) {
    if (sensitive.count(line.field) == 0) continue;
    hide(line.value);
    hide(line.letter_value);
    hide(line.derived.computed);
  }
  for (RuleStep& step : r.steps) {
    for (ConditionStep& c : step.conditions) {
      if (sensitive.count(c.field) > 0) hide(c.value);
    }
    for (size_t k = 0; k < step.key_fields.size() && k < step.key_values.size(); ++k) {
      if (sensitive.count(step.key_fields[k]) > 0) hide(step.key_values[k]);
    }
  }
  if (!r.valid && sensitive.count(r.invalid_field) > 0) hide(r.invalid_value);
}

}  // namespace

ExplainReport explain_record(const Table& table, const ir::CheckedPolicy* checked,
                             const inputs::RecordParser& parser, Input& input,
                             const inputs::InputFormat& format, const std::string& mapping,
                             const std::set<std::string>& sensitive) {
  Letter letter(table.field_count());
  // Operator- and record-only fields: the letter's value.
  std::vector<std::string> ignored(table.field_count());
  for (uint32_t f = 0; f < table.field_count() && f < input.size(); ++f) {
    letter[f] = slot_value(input.slot(f));
    if (table.field(f).source != FieldSource::kLetter) {
      // As decide does (letters.h): the field stays unset whatever the letter said.
      if (letter[f].kind != LetterValue::Kind::kMissing) ignored[f] = describe_value(letter[f]);
      letter[f] = LetterValue::Missing();
      input.set_unset(f);
    }
  }
  ExplainReport report = checked != nullptr ? explain_policy(*checked, table, letter)
                                            : explain_table(table, input, letter);
  for (uint32_t f = 0; f < table.field_count(); ++f) {
    LetterLine line;
    line.field = table.field(f).name;
    line.value = describe_value(letter[f]);
    if (table.field(f).source != FieldSource::kLetter) {
      line.source = table.field(f).source;
      line.letter_value = ignored[f];
    } else if (f < report.derived.size() && report.derived[f].derived) {
      line.derived = report.derived[f];
      if (letter[f].kind != LetterValue::Kind::kMissing) line.letter_value = line.value;
      line.value = line.derived.computed.empty() ? "<not computed>" : line.derived.computed;
    }
    report.letter.push_back(std::move(line));
  }
  if (!format.mapping_format.empty()) {
    report.input_format = format.name;
    report.mapping = mapping;
    // A header is secret by its own name, or when it feeds a sensitive input; another part of
    // the record (its key, say) when it feeds one.
    std::set<std::string> secret_headers = sensitive;
    std::set<std::string> secret_parts;
    for (uint32_t f = 0; f < table.field_count(); ++f) {
      const std::optional<InputOrigin> origin = parser.input_origin(f);
      if (!origin) continue;
      LetterLine& line = report.letter.at(f);
      const bool secret = sensitive.count(line.field) > 0 ||
                          (!origin->header.empty() && sensitive.count(origin->header) > 0);
      line.origin = origin_text(*origin, secret);
      if (secret && !origin->header.empty()) secret_headers.insert(origin->header);
      if (secret && origin->part == "coordinates") {
        secret_parts.insert({"topic", "partition", "offset"});
      } else if (secret && origin->header.empty()) {
        secret_parts.insert(origin->part);
      }
    }
    for (const RecordPartValue& part : parser.record_parts()) {
      RecordLine line;
      line.part = part.label;
      line.name = part.name;
      const bool secret = part.label == "header" ? secret_headers.count(part.name) > 0
                                                 : secret_parts.count(part.label) > 0;
      // The payload is shown by its size only; null stays visible.
      line.value = secret && (part.kind == RecordPartValue::Kind::kText ||
                              part.kind == RecordPartValue::Kind::kInt)
                       ? std::string(kRedacted)
                       : part_value(part);
      report.record.push_back(std::move(line));
    }
  }
  redact(report, sensitive);
  return report;
}

}  // namespace replaygate::review
