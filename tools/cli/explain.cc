// `replaygate explain (--policy P | --table T) [LETTER_FILE|-]`: why one letter gets its verb.
//
// Reads one JSON letter (the `letters` record format of `decide`, inputs/letters.h; it may span
// several lines) and prints, in order, each rule considered: for a guard each condition evaluated
// up to the first that fails, with the field's value and why it failed (absent, value, bound); for
// a table the key tuple looked up and the row that hit, or none. Then the decision, the verb's
// effect class and description (what it will do), the deciding rule and its reason. An invalid
// input names the field and why it is invalid, and says that the default applies.
//
// With --policy the walk runs over the checked IR (compiler/explain.h, the interpreter's
// semantics); with --table over the frozen table (runtime/trace.h). Both build the same Report, so
// the two print the same text for the same policy; both are checked against decide().
// The letter section shows a derived field (compiler/ir.h Derivation) with the value the rules saw,
// the computed one, and its formula; a value the letter gave for it is shown as ignored. So is a
// value the letter gave for an operator-only or record-only field (ir::InputSource): as in
// decide, the field stays unset (the rules see it absent; a required one makes the input invalid).
// With --input-format kafka --mapping M the input is one kcat -J record (input_formats.h): the
// record section shows its coordinates, key and headers (escaped, long values cut), then each
// mapped input with its value and where it came from (KafkaParser::input_origin()).
// Values of sensitive fields (sensitive.h: the built-in names, plus the policy's list with
// --policy; a table does not keep that list) are shown as <redacted>, and so is a header that
// feeds one.
// Exit: 0 explained (whatever the verb), 1 policy errors or an unreadable letter, 2 usage/I/O.
#include "compiler/explain.h"

#include <simdjson.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "common/escape.h"
#include "compiler/explain.h"
#include "compiler/interpret.h"
#include "compiler/ir.h"
#include "compiler/lower.h"
#include "inputs/formats.h"
#include "inputs/letters.h"
#include "inputs/records.h"
#include "runtime/table.h"
#include "runtime/trace.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/sensitive.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {

using inputs::choose_input_format;
using inputs::input_format_names;
using inputs::InputFormat;
using inputs::InputFormatOptions;
using inputs::InputOrigin;
using inputs::kMaxRecordBytes;
using inputs::LetterParser;
using inputs::LineReader;
using inputs::position_of;
using inputs::record_too_large;
using inputs::RecordMeta;
using inputs::RecordParser;
using inputs::RecordPartValue;
using inputs::TextPosition;

namespace {

constexpr size_t kMaxLetterBytes = kMaxRecordBytes;  // a letter is one record

struct ExplainOptions {
  TrustFlags trust;
  std::string policy;
  std::string table;
  std::string letter = "-";
  std::string format = "text";
  InputFormatOptions input;  // --input-format and --mapping (explain has no alias: --format is
                             // its output's)
};

struct ConditionStep {
  std::string text;   // "attempts >= max_attempts (3)"
  std::string field;  // "attempts"
  std::string value;  // the field's value: "1", "\"cap\"", "absent"
  bool holds = false;
  std::string why;  // when it fails: "absent", "value", "bound"
};

struct RuleStep {
  bool is_table = false;
  std::string id;
  bool matched = false;
  std::vector<ConditionStep> conditions;  // guards
  std::vector<std::string> key_fields;    // tables
  std::vector<std::string> key_values;    // tables: the tuple looked up
  std::string row;                        // tables: the row that hit, or ""
};

// A derived field (compiler/ir.h Derivation): how it is computed and the value the walk used.
struct DerivedField {
  bool derived = false;
  bool classified = false;  // a classified enum (ir::Classifier): `formula` says which row took it
  std::string formula;      // "message_revision < record_revision"
  std::string computed;     // "true", "false"; "" when not computed (invalid input)
};

struct LetterLine {
  std::string field;
  std::string value;  // as read ("<missing>" when the letter has none); derived: the computed one
  DerivedField derived;
  // kOperator or kRecord: only an operator (the operation record) sets it: the letter's value is
  // never used.
  FieldSource source = FieldSource::kLetter;
  // Derived, operator- and record-only fields: the letter's own value, ignored ("" if none).
  std::string letter_value;
  // A format read through a mapping: where the value came from, as shown after it ("from header
  // 'x' = \"3\""); "" for letters.
  std::string origin;
};

// A part of a record read through a mapping (RecordPartValue), as shown: `header "x-replay" = "2"`.
struct RecordLine {
  std::string part;   // "topic", "header", ...
  std::string name;   // a header's name as given (any bytes); "" for the others
  std::string value;  // shown: "\"payments.DLT\"", "17", "null", "<redacted>", "52 bytes"
};

struct Report {
  std::string at;  // a record of an array dump: its JSON pointer ("/Messages/3"); else ""
  std::string policy_id;
  int64_t revision = 0;
  std::string input_format = "letters";  // a format read through a mapping has `record` and origins
  std::string mapping;                   // its mapping file
  std::vector<RecordLine> record;
  std::vector<LetterLine> letter;
  std::vector<DerivedField> derived;  // per field, filled by the walk
  bool valid = true;
  std::string invalid_field, invalid_why, invalid_value;
  std::vector<RuleStep> steps;
  std::string verb, effect, description, kind, rule, reason;
  uint32_t line = 0;  // of the deciding rule; 0 for the default
};

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

// The letter section's line for one field. A derived field shows the value the rules saw (the
// computed one) and its formula; a value the letter gave for it is named as ignored, since
// decide() never reads it.
std::string letter_line_text(const LetterLine& line) {
  if (!line.origin.empty()) return line.value + " (" + line.origin + ")";
  if (line.source != FieldSource::kLetter) {
    const std::string who = line.source == FieldSource::kOperator
                                ? "set only by an operator"
                                : "read only from the operation record";
    if (line.letter_value.empty()) return line.value + " (" + who + ")";
    return line.value + " (" + who + "; the letter's value " + line.letter_value + " is ignored)";
  }
  if (!line.derived.derived) return line.value;
  std::string out = line.value + (line.derived.classified ? " (classified: " : " (derived: ") +
                    line.derived.formula;
  if (line.derived.computed.empty()) out += "; the input is invalid";
  if (!line.letter_value.empty()) {
    out += "; the letter's value " + line.letter_value + " is ignored";
  }
  return out + ")";
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
void fill_decision(const Table& table, const Decision& d, uint32_t line, Report* report) {
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

Report explain_policy(const ir::CheckedPolicy& checked, const Table& table, const Letter& letter) {
  const ir::Policy& policy = checked.policy;
  Report report;
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

Report explain_table(const Table& table, const Input& input, const Letter& letter) {
  Report report;
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

// Text from the policy or the table (ids, names, reasons, descriptions, the source path): any
// character the author or a crafted table put there is escaped, so the report keeps its lines.
std::string shown(std::string_view text) { return escape_control(text); }

// Text that quotes string values already escaped (describe_value(), the table's atom labels and
// condition text) but may hold an enum value as written: made safe without doubling the escapes.
std::string safe(std::string_view text) { return escape_control(text, Backslash::kKeep); }

std::string render_text(const Report& r, const std::string& source) {
  std::string out = r.at.empty() ? "" : "message " + r.at + " of the dump\n";
  out += "policy " + shown(r.policy_id) + " revision " + std::to_string(r.revision) + " (" +
         escape_control(source, Backslash::kKeep) + ")\n";
  if (r.mapping.empty()) {
    out += "letter:\n";
  } else {
    out += "record (" + r.input_format + ", mapping " +
           escape_control(r.mapping, Backslash::kKeep) + "):\n";
    for (const RecordLine& line : r.record) {
      const bool named = line.part == "header";
      out += "  " + line.part +
             (named ? " " + describe_value(LetterValue::String(line.name)) : std::string()) +
             " = " + safe(line.value) + "\n";
    }
    out += "inputs:\n";
  }
  for (const LetterLine& line : r.letter) {
    out += "  " + shown(line.field) + " = " + safe(letter_line_text(line)) + "\n";
  }
  if (!r.valid) {
    // An unreadable value has nothing to show beyond the why.
    const std::string value =
        r.invalid_value == "<invalid>" ? "" : " (value " + safe(r.invalid_value) + ")";
    out += "\ninvalid input: " + shown(r.invalid_field) + " is " + safe(r.invalid_why) + value +
           "; no rule is considered and the default applies\n";
  } else {
    out += "\nrules, in order:\n";
    size_t n = 0;
    for (const RuleStep& s : r.steps) {
      ++n;
      out +=
          "  " + std::to_string(n) + ". " + (s.is_table ? "table " : "guard ") + shown(s.id) + ": ";
      if (s.is_table) {
        out += s.matched ? "row " + shown(s.row) + " hit\n" : "no row hit\n";
        std::string fields, values;
        for (size_t k = 0; k < s.key_fields.size(); ++k) {
          fields += (k ? ", " : "") + shown(s.key_fields[k]);
          values += (k ? ", " : "") + safe(s.key_values[k]);
        }
        out += "       looked up (" + fields + ") = (" + values + ")\n";
        continue;
      }
      out += s.matched ? "matched\n" : "no match\n";
      for (const ConditionStep& c : s.conditions) {
        out += "       " + safe(c.text) + ": ";
        out += c.holds ? "holds (" + shown(c.field) + " = " + safe(c.value) + ")\n"
                       : "fails (" + shown(c.field) + " = " + safe(c.value) + ", " + c.why + ")\n";
      }
    }
    if (r.steps.empty()) out += "  (the policy has no rules)\n";
    if (r.kind == "default") out += "  no rule matched\n";
  }
  out += "\ndecision: " + shown(r.verb) + " (effect " + r.effect + ")\n";
  out += "  rule: " + shown(r.rule);
  if (r.line > 0) out += " (line " + std::to_string(r.line) + ")";
  out += "\n  reason: " + shown(r.reason) + "\n";
  out += "  what it will do: " + shown(r.description) + "\n";
  return out;
}

std::string render_json(const Report& r, const std::string& source) {
  using Json = nlohmann::ordered_json;
  Json doc;
  if (!r.at.empty()) doc["at"] = r.at;
  doc["policy"] = {{"id", r.policy_id}, {"revision", r.revision}, {"source", source}};
  if (!r.mapping.empty()) {
    Json parts = Json::array();
    for (const RecordLine& line : r.record) {
      Json part = {{"part", line.part}};
      if (line.part == "header") part["name"] = line.name;
      part["value"] = line.value;
      parts.push_back(std::move(part));
    }
    doc["record"] = {
        {"format", r.input_format}, {"mapping", r.mapping}, {"parts", std::move(parts)}};
    Json origins = Json::object();
    for (const LetterLine& line : r.letter) {
      if (!line.origin.empty()) origins[line.field] = line.origin;
    }
    doc["origins"] = std::move(origins);
  }
  Json letter = Json::object();
  Json derived = Json::object();
  Json operator_only = Json::object();
  Json record_only = Json::object();
  for (const LetterLine& line : r.letter) {
    letter[line.field] = line.value;
    if (line.source != FieldSource::kLetter) {
      // The letter's value for a field only an operator (the record) sets: decide() never sees it.
      (line.source == FieldSource::kOperator ? operator_only : record_only)[line.field] = {
          {"ignored_letter_value",
           line.letter_value.empty() ? Json(nullptr) : Json(line.letter_value)}};
      continue;
    }
    if (!line.derived.derived) continue;
    Json d = {
        {"formula", line.derived.formula},
        {"computed", line.derived.computed.empty() ? Json(nullptr) : Json(line.derived.computed)}};
    // The letter's own value for the field, which decide() ignores (null when it gave none).
    d["ignored_letter_value"] = line.letter_value.empty() ? Json(nullptr) : Json(line.letter_value);
    derived[line.field] = std::move(d);
  }
  doc["letter"] = std::move(letter);
  if (!derived.empty()) doc["derived"] = std::move(derived);
  if (!operator_only.empty()) doc["operator_only"] = std::move(operator_only);
  if (!record_only.empty()) doc["record_only"] = std::move(record_only);
  doc["valid"] = r.valid;
  if (!r.valid) {
    doc["invalid"] = {
        {"field", r.invalid_field}, {"why", r.invalid_why}, {"value", r.invalid_value}};
  }
  Json steps = Json::array();
  for (const RuleStep& s : r.steps) {
    Json step;
    step["kind"] = s.is_table ? "table" : "guard";
    step["id"] = s.id;
    step["matched"] = s.matched;
    if (s.is_table) {
      step["keys"] = s.key_fields;
      step["lookup"] = s.key_values;
      step["row"] = s.matched ? Json(s.row) : Json(nullptr);
    } else {
      Json conditions = Json::array();
      for (const ConditionStep& c : s.conditions) {
        Json cj = {
            {"condition", c.text}, {"field", c.field}, {"value", c.value}, {"holds", c.holds}};
        if (!c.holds) cj["why"] = c.why;
        conditions.push_back(std::move(cj));
      }
      step["conditions"] = std::move(conditions);
    }
    steps.push_back(std::move(step));
  }
  doc["rules"] = std::move(steps);
  doc["decision"] = {{"verb", r.verb}, {"effect", r.effect}, {"description", r.description},
                     {"kind", r.kind}, {"rule", r.rule},     {"reason", r.reason},
                     {"line", r.line}};
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

constexpr std::string_view kRedacted = "<redacted>";
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
void redact(Report& r, const std::set<std::string>& sensitive) {
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

// Whether `text`, for an array format (rabbitmq, sqs, pubsub), is a whole dump rather than one
// message: a JSON array for a top-level array format; an object with the array's member
// ("Messages") for the others. One message object is neither.
bool is_array_dump(const InputFormat& format, std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  if (format.array_member.empty()) return text[first] == '[';
  // Nesting is screened first (as every reader does), so the parse below stays shallow.
  if (text[first] != '{' ||
      inputs::scan_json_shape(text, inputs::kMaxJsonDepth) != inputs::JsonShape::kOk) {
    return false;
  }
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return doc.is_object() && doc.contains(std::string(format.array_member));
}

int run_explain(const ExplainOptions& options) {
  if (options.policy.empty() == options.table.empty()) {
    std::fprintf(stderr,
                 "replaygate explain: error: give exactly one of --policy POLICY.yaml or --table "
                 "TABLE.rgt\nRun 'replaygate explain --help' for usage.\n");
    return kExitUsage;
  }
  if (options.format != "text" && options.format != "json") {
    std::fprintf(stderr, "replaygate explain: error: --format must be text or json, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  std::string format_error;
  const InputFormat* format = choose_input_format(options.input, &format_error);
  if (format == nullptr) {
    std::fprintf(stderr,
                 "replaygate explain: error: %s\nRun 'replaygate explain --help' for usage.\n",
                 format_error.c_str());
    return kExitUsage;
  }
  // What one record is called in the messages: a letter, or a broker record.
  const char* const noun = format->mapping_format.empty() ? "letter" : "record";
  std::optional<ir::CheckedPolicy> checked;
  std::unique_ptr<Table> table;
  std::vector<std::string> policy_sensitive;  // a table does not keep the list: built-ins only
  if (!options.policy.empty()) {
    LoadedPolicy loaded;
    if (const int code = load_policy_reporting(options.policy, DiagnosticFormat::kText, &loaded);
        code != kExitOk) {
      return code;
    }
    checked = std::move(*loaded.policy);
    policy_sensitive = checked->policy.sensitive;
    const std::vector<uint8_t> bytes = lower(*checked);
    LoadStatus status;
    table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    if (table == nullptr) {
      std::fprintf(stderr, "replaygate: internal error: the table compiled from %s does not load\n",
                   options.policy.c_str());
      return kExitUsage;
    }
  } else if (const int code = open_table("", options.table, &table, nullptr, &options.trust);
             code != kExitOk) {
    return code;
  }

  // A letter over the limit is a letter that cannot be read (exit 1), as `decide` makes such a
  // line an invalid record, not an I/O error.
  const auto too_large = [noun](const std::string& where) {
    std::fprintf(stderr, "replaygate explain: %s: unreadable %s: %s\n", where.c_str(), noun,
                 record_too_large(kMaxLetterBytes).c_str());
    return kExitFindings;
  };
  std::string text, io_error;
  if (options.letter == "-") {
    char buffer[65536];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0) {
      text.append(buffer, n);
      if (text.size() > kMaxLetterBytes) break;
    }
    if (std::ferror(stdin)) {
      std::fprintf(stderr, "replaygate: cannot read standard input\n");
      return kExitUsage;
    }
    if (text.size() > kMaxLetterBytes) return too_large("<stdin>");
  } else if (struct stat st; ::stat(options.letter.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                             static_cast<uint64_t>(st.st_size) > kMaxLetterBytes) {
    return too_large(options.letter);
  } else if (!read_whole_file(options.letter, kMaxLetterBytes, &text, &io_error)) {
    std::fprintf(stderr, "replaygate: %s\n", io_error.c_str());
    return kExitUsage;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.pop_back();
  }
  const size_t length = text.size();
  text.append(LineReader::kPadding, '\0');  // what every record parser reads past the end
  RecordReading reading;
  if (format->name == "letters") {
    // Operator-only fields are read here only to show the letter's value as ignored (below).
    reading.parser = std::make_unique<LetterParser>(*table, LetterParser::OperatorFields::kKeep);
  } else if (const int code = open_record_parser(*format, options.input.mapping, *table,
                                                 "nothing explained", &reading);
             code != kExitOk) {
    return code;
  }
  RecordParser& parser = *reading.parser;
  const std::string source = options.policy.empty() ? options.table : options.policy;
  const std::string input_name = options.letter == "-" ? "<stdin>" : options.letter;
  const std::set<std::string> sensitive = sensitive_names(policy_sensitive);

  // One record (`record`, padded as a reader hands it out; `at` its JSON pointer in an array
  // dump, else ""): kExitOk with its explanation in *out, kExitFindings when it cannot be read
  // (said on stderr), kExitUsage on an internal error.
  const auto explain_record = [&](std::string_view record, const std::string& at,
                                  std::string* out) -> int {
    Input input(*table);
    RecordMeta meta;
    std::string problem;
    if (!parser.parse(record, input, &meta, &problem)) {
      // FILE:LINE:COLUMN, as the compiler's diagnostics, when the problem has one place; in an
      // array dump, the record's JSON pointer.
      std::string where = input_name;
      if (!at.empty()) {
        where += " at " + at;
      } else if (parser.problem_offset() != RecordParser::kNoOffset) {
        const TextPosition place = position_of(record, parser.problem_offset());
        where += ":" + std::to_string(place.line) + ":" + std::to_string(place.column);
      }
      std::fprintf(stderr, "replaygate explain: %s: unreadable %s: %s\n", where.c_str(), noun,
                   problem.c_str());
      return kExitFindings;
    }
    Letter letter(table->field_count());
    // Operator- and record-only fields: the letter's value.
    std::vector<std::string> ignored(table->field_count());
    for (uint32_t f = 0; f < table->field_count() && f < input.size(); ++f) {
      letter[f] = slot_value(input.slot(f));
      if (table->field(f).source != FieldSource::kLetter) {
        // As decide does (letters.h): the field stays unset whatever the letter said.
        if (letter[f].kind != LetterValue::Kind::kMissing) ignored[f] = describe_value(letter[f]);
        letter[f] = LetterValue::Missing();
        input.set_unset(f);
      }
    }
    Report report =
        checked ? explain_policy(*checked, *table, letter) : explain_table(*table, input, letter);
    for (uint32_t f = 0; f < table->field_count(); ++f) {
      LetterLine line;
      line.field = table->field(f).name;
      line.value = describe_value(letter[f]);
      if (table->field(f).source != FieldSource::kLetter) {
        line.source = table->field(f).source;
        line.letter_value = ignored[f];
      } else if (f < report.derived.size() && report.derived[f].derived) {
        line.derived = report.derived[f];
        if (letter[f].kind != LetterValue::Kind::kMissing) line.letter_value = line.value;
        line.value = line.derived.computed.empty() ? "<not computed>" : line.derived.computed;
      }
      report.letter.push_back(std::move(line));
    }
    report.at = at;
    if (!format->mapping_format.empty()) {
      report.input_format = format->name;
      report.mapping = options.input.mapping;
      // A header is secret by its own name, or when it feeds a sensitive input; another part of
      // the record (its key, say) when it feeds one.
      std::set<std::string> secret_headers = sensitive;
      std::set<std::string> secret_parts;
      for (uint32_t f = 0; f < table->field_count(); ++f) {
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
    // The explanation must name the verb and rule decide() gives; anything else is a bug.
    const Decision d = table->decide(input);
    if (std::string(table->verb_name(d.verb)) != report.verb ||
        std::string(table->rule_name(d)) != report.rule) {
      std::fprintf(stderr, "replaygate: internal error: explain and decide disagree (%s vs %s)\n",
                   report.verb.c_str(), std::string(table->verb_name(d.verb)).c_str());
      return kExitUsage;
    }
    *out = options.format == "json" ? render_json(report, source) : render_text(report, source);
    return kExitOk;
  };

  if (!format->mapping_format.empty() && !checked) {
    std::fprintf(stderr,
                 "replaygate explain: note: a table does not keep the policy's sensitive list: "
                 "only the built-in secret names (token, authorization, ...) are redacted; "
                 "explain with --policy to redact the policy's own\n");
  }
  const std::string_view whole(text.data(), length);
  if (!format->json_array || !is_array_dump(*format, whole)) {
    std::string out;
    const int code = explain_record(whole, "", &out);
    if (code != kExitOk) return code;
    return print_to_stdout(out, "the explanation") ? kExitOk : kExitUsage;
  }
  // A whole array dump: every message, in order (text: one explanation after another; json: an
  // array of them, each with its "at"). An unreadable message is said on stderr and skipped.
  const int fd = memfd_create("explain-dump", 0);
  if (fd < 0 || ::write(fd, whole.data(), whole.size()) != static_cast<ssize_t>(whole.size()) ||
      ::lseek(fd, 0, SEEK_SET) != 0) {
    if (fd >= 0) ::close(fd);
    std::fprintf(stderr, "replaygate: cannot buffer %s: %s\n", input_name.c_str(),
                 std::strerror(errno));
    return kExitUsage;
  }
  inputs::JsonArrayReader reader(fd, kMaxLetterBytes, std::string(format->array_member));
  const std::string prefix = format->array_member.empty()
                                 ? std::string("/")
                                 : "/" + std::string(format->array_member) + "/";
  int exit_code = kExitOk;
  std::string all = options.format == "json" ? "[\n" : "";
  size_t explained = 0;
  std::string_view element;
  while (true) {
    const LineReader::Status status = reader.next(&element);
    if (status == LineReader::Status::kEnd) break;
    if (status == LineReader::Status::kError) {
      std::fprintf(stderr, "replaygate: cannot read %s: %s\n", input_name.c_str(),
                   reader.error_text().c_str());
      exit_code = kExitUsage;
      break;
    }
    const std::string at = prefix + std::to_string(reader.line_number() - 1);
    if (status == LineReader::Status::kTooLarge) {
      std::fprintf(stderr, "replaygate explain: %s at %s: unreadable %s: %s\n", input_name.c_str(),
                   at.c_str(), noun, record_too_large(kMaxLetterBytes).c_str());
      exit_code = std::max(exit_code, kExitFindings);
      continue;
    }
    std::string out;
    const int code = explain_record(element, at, &out);
    if (code == kExitUsage) {
      ::close(fd);
      return code;
    }
    if (code != kExitOk) {
      exit_code = std::max(exit_code, code);
      continue;
    }
    if (options.format == "json") {
      all += (explained > 0 ? ",\n" : "") + out.substr(0, out.size() - 1);  // without its '\n'
    } else {
      all += (explained > 0 ? "\n" : "") + out;
    }
    ++explained;
  }
  ::close(fd);
  if (options.format == "json") all += "\n]\n";
  if (explained == 0 && exit_code == kExitOk) {
    std::fprintf(stderr, "replaygate explain: %s holds no message\n", input_name.c_str());
  }
  if (!print_to_stdout(all, "the explanation")) return kExitUsage;
  return exit_code;
}

}  // namespace

Runner setup_explain(CLI::App& sub) {
  auto options = std::make_shared<ExplainOptions>();
  sub.footer(
      "Explain the decision for one letter (a JSON object as in decide's letters format; it may\n"
      "span lines): each rule considered in order, each guard's conditions up to the first that\n"
      "fails (field, value, and why: absent, value, bound), each table's key tuple and the row\n"
      "that hit; then the verb, its effect, what it will do, the rule and the reason.\n"
      "With --input-format kafka --mapping MAPPING.yaml it reads one kcat -J record instead and\n"
      "shows its headers and, for each input, the value and the header or field it came from.\n"
      "Exit: 0 explained, 1 policy errors or an unreadable letter, 2 usage/I/O.");
  sub.add_option("--policy", options->policy, "Policy file (.yaml), walked over its IR");
  sub.add_option("--table", options->table, "Frozen table (.rgt), walked with runtime/trace.h");
  sub.add_option("LETTER", options->letter,
                 "Letter (or record) file, or - for standard input (default)");
  sub.add_option("--format", options->format, "Output: text (default) or json");
  CLI::Option* input_format = sub.add_option(
      "--input-format", options->input.input_format,
      "Record format: " + input_format_names() + " (default letters; as decide's --input-format)");
  sub.add_option("--mapping", options->input.mapping,
                 "Mapping file for every --input-format but letters (docs/input-mapping.md)");
  add_trust_options(sub, &options->trust, /*acting=*/false);
  return [options, input_format] {
    options->input.input_format_set = input_format->count() > 0;
    return run_explain(*options);
  };
}

}  // namespace replaygate::cli
