// Reader results -> JSON documents of the YAML files' shape (see json_export.h).
#include "checks/json_export.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "compiler/key_text.h"

namespace replaygate::checks {
namespace {

using Json = nlohmann::ordered_json;

Json value_json(const ir::Value& v) {
  switch (v.kind) {
    case ir::Value::Kind::kString:
      return v.str;
    case ir::Value::Kind::kInt:
      return v.i;
    case ir::Value::Kind::kBool:
      return v.b;
  }
  return nullptr;
}

// One condition's operand: its constant's name when it named one (as the YAML form writes it),
// else the value, or the list for in / not_in.
Json operand_json(const ir::Condition& c) {
  if (c.op == ir::Op::kIn || c.op == ir::Op::kNotIn) {
    Json list = Json::array();
    for (const ir::Value& v : c.values) list.push_back(value_json(v));
    return list;
  }
  if (!c.constant.empty()) return c.constant;
  return c.values.empty() ? Json(nullptr) : value_json(c.values.front());
}

// `{field: matcher, ...}`: a field's conditions share its key. One condition is written in the
// short forms the docs use (`field: absent`, `field: value`, `field: [a, b]`) unless the short
// form would read as something else (an eq on the string "absent" is the keyword's spelling).
Json when_json(const ir::Policy& p, const std::vector<ir::Condition>& conditions) {
  std::vector<uint32_t> order;
  for (const ir::Condition& c : conditions) {
    bool seen = false;
    for (uint32_t f : order) seen = seen || f == c.field;
    if (!seen) order.push_back(c.field);
  }
  Json when = Json::object();
  for (uint32_t f : order) {
    std::vector<const ir::Condition*> mine;
    for (const ir::Condition& c : conditions) {
      if (c.field == f) mine.push_back(&c);
    }
    Json& matcher = when[p.fields.at(f).name];
    if (mine.size() == 1) {
      const ir::Condition& c = *mine[0];
      if (c.op == ir::Op::kAbsent || c.op == ir::Op::kPresent) {
        matcher = ir::op_name(c.op);
        continue;
      }
      if (c.op == ir::Op::kIn) {
        matcher = operand_json(c);
        continue;
      }
      // A string "absent" or "present" (or a constant so named) would read as the keyword.
      Json operand = operand_json(c);
      const bool keyword_text = operand == "absent" || operand == "present";
      if (c.op == ir::Op::kEq && !keyword_text) {
        matcher = std::move(operand);
        continue;
      }
    }
    matcher = Json::object();
    for (const ir::Condition* c : mine) matcher[ir::op_name(c->op)] = operand_json(*c);
  }
  return when;
}

Json classify_json(const ir::Policy& policy, const ir::Field& f) {
  const ir::Classifier& c = *f.classify;
  Json out;
  out["from"] = policy.fields.at(c.from).name;
  Json rows = Json::array();
  for (const ir::ClassifyRow& row : c.rows) {
    Json values = Json::array();
    for (const ir::Value& v : row.values) values.push_back(value_json(v));
    const char* kind = row.kind == ir::ClassifyRow::Kind::kIn       ? "in"
                       : row.kind == ir::ClassifyRow::Kind::kPrefix ? "prefix"
                                                                    : "range";
    Json r;
    r["class"] = f.enum_values.at(row.cls);
    r[kind] = std::move(values);
    rows.push_back(std::move(r));
  }
  out["rows"] = std::move(rows);
  out["fallback"] = f.enum_values.at(c.fallback);
  return out;
}

Json input_json(const ir::Policy& policy, const ir::Field& f) {
  Json out;
  out["type"] = ir::field_type_name(f.type);
  if (f.optional) out["optional"] = true;
  if (f.empty_means_absent) out["empty_means_absent"] = true;
  if (f.min) out["min"] = *f.min;
  if (f.max) out["max"] = *f.max;
  if (f.type == ir::FieldType::kEnum) out["values"] = f.enum_values;
  if (!f.domain.empty()) out["domain"] = f.domain;
  if (f.derived) {
    out["derived"][ir::op_name(f.derived->op)] =
        Json::array({policy.fields.at(f.derived->lhs).name, policy.fields.at(f.derived->rhs).name});
  }
  if (f.classify) out["classify"] = classify_json(policy, f);
  if (f.source != ir::InputSource::kLetter) out["source"] = ir::input_source_name(f.source);
  if (f.idempotency_key) out["idempotency_key"] = true;
  if (!f.description.empty()) out["description"] = f.description;
  return out;
}

Json table_json(const ir::Policy& policy, const ir::Table& table) {
  Json out;
  out["table"] = table.id;
  Json keys = Json::array();
  for (uint32_t k : table.key_fields) keys.push_back(policy.fields.at(k).name);
  out["keys"] = std::move(keys);
  Json rows = Json::array();
  for (const ir::Row& row : table.rows) {
    Json values = Json::array();
    std::string derived = table.id + ":";
    for (size_t k = 0; k < row.keys.size(); ++k) {
      values.push_back(row.keys[k] ? value_json(*row.keys[k]) : Json("*"));
      derived += (k ? "/" : "") + ir::key_text(row.keys[k]);
    }
    const std::string& verb = policy.verbs.at(row.verb).name;
    if (row.id == derived && row.reason.empty()) {  // the list form: keys..., then the verb
      values.push_back(verb);
      rows.push_back(std::move(values));
      continue;
    }
    Json r;
    r["keys"] = std::move(values);
    r["verb"] = verb;
    if (row.id != derived) r["id"] = row.id;
    if (!row.reason.empty()) r["reason"] = row.reason;
    rows.push_back(std::move(r));
  }
  out["rows"] = std::move(rows);
  return out;
}

Json invariant_json(const ir::Policy& policy, const ir::Invariant& n) {
  Json out;
  out["invariant"] = n.id;
  if (!n.conditions.empty()) out["when"] = when_json(policy, n.conditions);
  Json& require = out["require"][ir::invariant_op_name(n.op)];
  if (n.op == ir::InvariantOp::kVerbIn || n.op == ir::InvariantOp::kVerbNotIn) {
    require = Json::array();
    for (uint32_t v : n.verbs) require.push_back(policy.verbs.at(v).name);
  } else {
    require = ir::effect_name(n.effect);
  }
  if (!n.reason.empty()) out["reason"] = n.reason;
  return out;
}

// A YAML node as a JSON letter carries it (letter_value()), element by element in a list or a
// mapping: what a case input that is invalid on purpose (a list, an int beyond int64) holds. The
// recursion is bounded: the strict reader refuses nesting deeper than yaml::kMaxDepth (RG005).
Json letter_json(const yaml::Node& node) {
  if (node.is_sequence()) {
    Json list = Json::array();
    for (const yaml::Node& item : node.items) list.push_back(letter_json(item));
    return list;
  }
  if (node.is_mapping()) {
    Json object = Json::object();
    for (const auto& [key, value] : node.entries) object[key.scalar] = letter_json(value);
    return object;
  }
  const LetterValue v = letter_value(node);
  switch (v.kind) {
    case LetterValue::Kind::kString:
      return v.s;
    case LetterValue::Kind::kInt:
      return v.i;
    case LetterValue::Kind::kBool:
      return v.b;
    case LetterValue::Kind::kInvalid:  // a plain decimal int beyond int64: the number it spells
      return Json::parse(node.scalar, nullptr, /*allow_exceptions=*/false);
    case LetterValue::Kind::kNull:
    case LetterValue::Kind::kMissing:
      break;
  }
  return nullptr;
}

// One case input value as the reader typed it for its input (case_value()); {json: VALUE} stays
// that form, and a value that is invalid on purpose is written as a letter would carry it.
Json case_input_json(const yaml::Node& value, FieldType type) {
  if (const yaml::Node* inner = explicit_json(value)) return Json{{"json", letter_json(*inner)}};
  const LetterValue v = case_value(value, type);
  switch (v.kind) {
    case LetterValue::Kind::kString:
      return v.s;
    case LetterValue::Kind::kInt:
      return v.i;
    case LetterValue::Kind::kBool:
      return v.b;
    case LetterValue::Kind::kInvalid:
      return letter_json(value);
    case LetterValue::Kind::kNull:
    case LetterValue::Kind::kMissing:
      break;
  }
  return nullptr;
}

// Text the mapping reader checked against the input's type (a constant, a default, a map
// target), as that type's JSON value.
Json typed_text(const std::string& text, FieldType type) {
  int64_t i = 0;
  bool b = false;
  if (type == FieldType::kInt && inputs::parse_int64_strict(text, &i)) return i;
  if (type == FieldType::kBool && inputs::parse_bool_strict(text, &b)) return b;
  return text;
}

// The source keys of an input or a metadata value. A constant is typed by the input's type
// unless a map translates it (then it is the raw text the map reads).
void source_json(const inputs::ValueSource& source, FieldType type, bool has_map, Json& out) {
  switch (source.kind) {
    case inputs::SourceKind::kHeader:
      out["header"] = source.name;
      break;
    case inputs::SourceKind::kPayload:
      out["payload"] = source.name;
      break;
    case inputs::SourceKind::kRecord:
      out["record"] = inputs::kRecordPartNames.at(static_cast<size_t>(source.part));
      break;
    case inputs::SourceKind::kConstant:
      if (!source.constant_from.empty()) {
        out["queue_attribute"] = source.constant_from;
      } else {
        out["constant"] = has_map ? Json(source.name) : typed_text(source.name, type);
      }
      break;
  }
  if (source.decoding != inputs::Decoding::kText) {
    out["decode"] = inputs::kDecodingNames.at(static_cast<size_t>(source.decoding) - 1);
  }
  if (source.occurrence != inputs::Occurrence::kOnly) {
    out["occurrence"] = inputs::kOccurrenceNames.at(static_cast<size_t>(source.occurrence) - 1);
  }
}

}  // namespace

nlohmann::ordered_json policy_json(const ir::Policy& policy) {
  Json out;
  out["policy"] = policy.id;
  out["revision"] = policy.revision;
  if (!policy.description.empty()) out["description"] = policy.description;
  if (!policy.sensitive.empty()) out["sensitive"] = policy.sensitive;
  Json& inputs = out["inputs"] = Json::object();
  for (const ir::Field& f : policy.fields) inputs[f.name] = input_json(policy, f);
  Json& verbs = out["verbs"] = Json::object();
  for (const ir::Verb& v : policy.verbs) {
    Json verb;
    verb["effect"] = ir::effect_name(v.effect);
    if (!v.description.empty()) verb["description"] = v.description;
    verbs[v.name] = std::move(verb);
  }
  out["default"] = policy.verbs.at(policy.default_verb).name;
  if (policy.default_reason != "no rule matched") out["default_reason"] = policy.default_reason;
  if (!policy.constants.empty()) {
    Json& constants = out["constants"] = Json::object();
    for (const ir::Constant& k : policy.constants) constants[k.name] = k.value;
  }
  Json& rules = out["rules"] = Json::array();
  for (const ir::Rule& rule : policy.rules) {
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      Json g;
      g["guard"] = guard->id;
      g["when"] = when_json(policy, guard->conditions);
      g["verb"] = policy.verbs.at(guard->verb).name;
      g["reason"] = guard->reason;
      rules.push_back(std::move(g));
    } else {
      rules.push_back(table_json(policy, std::get<ir::Table>(rule)));
    }
  }
  if (!policy.invariants.empty()) {
    Json& invariants = out["invariants"] = Json::array();
    for (const ir::Invariant& n : policy.invariants) {
      invariants.push_back(invariant_json(policy, n));
    }
  }
  return out;
}

nlohmann::ordered_json cases_json(const CaseFile& file, const Table& table) {
  Json out;
  if (file.policy) out["policy"] = *file.policy;
  if (file.description) out["description"] = *file.description;
  Json& cases = out["cases"] = Json::array();
  for (const Case& c : file.cases) {
    Json one;
    one["name"] = c.name;
    if (c.description) one["description"] = *c.description;
    if (c.input == nullptr || c.input->is_null()) {
      one["input"] = nullptr;  // `input:` with nothing: a letter without fields
    } else {
      Json& input = one["input"] = Json::object();
      for (const auto& [key, value] : c.input->entries) {
        const uint32_t f = table.field_index(key.scalar);
        input[key.scalar] = case_input_json(value, table.field(f).type);
      }
    }
    one["expect"] = c.expect_verb_name;
    if (c.has_rule) one["rule"] = c.rule;
    if (c.has_reason) one["reason"] = c.reason;
    cases.push_back(std::move(one));
  }
  return out;
}

nlohmann::ordered_json mapping_json(const inputs::Mapping& mapping) {
  Json out;
  out["format"] = mapping.format;
  if (mapping.description) out["description"] = *mapping.description;
  if (mapping.queue_attributes) out["queue_attributes"] = *mapping.queue_attributes;
  if (mapping.message_id) {
    source_json(*mapping.message_id, FieldType::kString, false, out["message_id"]);
  }
  if (mapping.body_hash) {
    source_json(*mapping.body_hash, FieldType::kString, false, out["body_hash"]);
  }
  Json& inputs = out["inputs"] = Json::object();
  for (const inputs::FieldMapping& f : mapping.fields) {
    Json& one = inputs[f.input] = Json::object();
    source_json(f.source, f.type, f.has_map, one);
    if (f.has_map) {
      Json& map = one["map"] = Json::object();
      for (const auto& [from, to] : f.map) map[from] = typed_text(to, f.type);
    }
    if (f.default_text) one["default"] = typed_text(*f.default_text, f.type);
    if (f.optional) one["optional"] = true;
    one["type"] = field_type_name(f.type);
    if (f.acknowledged) one["acknowledge"] = inputs::kAcknowledgeOpensCreate;
    if (f.description) one["description"] = *f.description;
  }
  return out;
}

}  // namespace replaygate::checks
