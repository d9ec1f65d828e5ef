// Building the operator review record (see record.h).
#include "review/record.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>

#include "audit/audit_log.h"
#include "common/escape.h"
#include "common/utf8.h"
#include "compiler/explain.h"
#include "runtime/trace.h"

namespace replaygate::review {

using nlohmann::json;

namespace {

// The JSON kind of a value that cannot identify anything, for the error message.
const char* non_scalar_kind(const json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  if (value.is_boolean()) return "a boolean";
  // nlohmann reads an integer beyond uint64 as a double: say so, not "a fraction".
  return std::fabs(value.get<double>()) >= 9.2e18 ? "a number beyond the 64-bit integer range"
                                                  : "a number with a fraction";
}

// What a string value of `name` shows as under --table (see Documents::table_only).
std::string table_redacted(const std::string& name) {
  return "<redacted: field " + name +
         " (--table: a table does not record which fields are sensitive; review with --policy "
         "to see it)>";
}

bool redacted_for_table(const Documents& r, const std::string& name, const json* value) {
  return r.table_only && value != nullptr && value->is_string() && name != "message_id" &&
         name != "operation_id";
}

// The shown value of an identifying field: its text, or a reference when it is sensitive.
std::string shown(const Documents& r, const std::string& name, const json* value) {
  if (r.sensitive.count(name)) return "<redacted: field " + name + ">";
  if (redacted_for_table(r, name, value)) return table_redacted(name);
  return text_of(value);
}

// The value as JSON (numbers stay numbers, missing is null), or a reference when it is sensitive.
json shown_json(const Documents& r, const std::string& name, const json* value) {
  if (r.sensitive.count(name)) return "<redacted: field " + name + ">";
  if (redacted_for_table(r, name, value)) return table_redacted(name);
  return value == nullptr ? json() : *value;
}

void set_slot(Input& input, uint32_t field, const json* value, std::vector<std::string>& keep) {
  if (value == nullptr) return;  // missing
  if (value->is_null()) {
    input.set_null(field);
  } else if (value->is_string()) {
    keep.push_back(value->get<std::string>());
    input.set_string(field, keep.back());
  } else if (value->is_boolean()) {
    input.set_bool(field, value->get<bool>());
  } else if (value->is_number_integer()) {
    if (value->is_number_unsigned() && value->get<uint64_t>() > uint64_t{INT64_MAX}) {
      input.set_invalid(field);
    } else {
      input.set_int(field, value->get<int64_t>());
    }
  } else {
    input.set_invalid(field);
  }
}

const InputUse* find_use(const std::vector<InputUse>& uses, std::string_view name) {
  for (const InputUse& use : uses) {
    if (use.name == name) return &use;
  }
  return nullptr;
}

// An input's value as the review record shows it: redacted when the input (or the key it was
// read from) is sensitive, and an object or array only by its kind (it is invalid input, and it
// may hold anything).
json value_for_record(const Documents& r, const std::string& name, const std::string& from,
                      const json& value) {
  const std::string leaf = from.substr(from.rfind('.') + 1);
  if (r.sensitive.count(name)) return "<redacted: field " + name + ">";
  if (r.sensitive.count(leaf)) return "<redacted: field " + from + ">";
  if (r.table_only && value.is_string()) return table_redacted(name);
  if (value.is_object() || value.is_array()) {
    return std::string("<") + non_scalar_kind(value) + ">";
  }
  return value;
}

// "message_revision < record_revision" for each derived field (index: field), "" otherwise.
std::vector<std::string> derived_formulas(const Table& table) {
  std::vector<std::string> out(table.field_count());
  for (const TraceDerivation& d : derivations(table)) {
    out[d.field] = std::string(table.field(d.lhs).name) + " " + op_word_symbol(op_code_name(d.op)) +
                   " " + std::string(table.field(d.rhs).name);
  }
  return out;
}

// Why a value a file offered was not used, by the input's source.
const char* ignored_because(const InputUse& use) {
  return use.source == FieldSource::kRecord ? "only the operation record supplies it"
                                            : "only --confirm sets it";
}

// For every input, in field order, the value the policy used (null when missing or not
// computed), where it came from, and the values it ignored.
std::vector<InputLine> input_lines(const Documents& r, const Table& table, const Input& input,
                                   const std::vector<InputUse>& uses) {
  const Trace traced = trace(table, input);
  const std::vector<std::string> formulas = derived_formulas(table);
  std::vector<InputLine> out;
  for (const InputUse& use : uses) {
    InputLine item;
    item.name = use.name;
    item.source = use.derived ? "derived" : field_source_name(use.source);
    if (use.derived) {
      // Computed after validation; not computed when the input is invalid.
      const bool computed =
          use.field < traced.fields.size() && !traced.fields[use.field].atom_label.empty();
      item.value = computed ? json(traced.fields[use.field].atom_label == "true") : json();
      item.missing = !computed;
      item.from = "derived";
      item.formula = formulas[use.field];
    } else {
      item.value =
          use.value != nullptr ? value_for_record(r, use.name, use.from, *use.value) : json();
      item.missing = use.value == nullptr;
      item.from = use.from;
      item.unset_because = use.unset_because;
    }
    for (const IgnoredOffer& offer : use.ignored) {
      item.ignored.push_back({offer.from, value_for_record(r, use.name, offer.from, *offer.value),
                              ignored_because(use)});
    }
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace

const json* member(const json& object, const std::string& key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string text_of(const json* value) {
  if (value == nullptr || value->is_null()) return "";
  if (value->is_string()) return value->get<std::string>();
  return value->dump();
}

DocumentProblem parse_document(std::string_view text, json* out) {
  const auto at = [](size_t offset, std::string what) {
    return DocumentProblem{std::move(what), offset};
  };
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return {"empty, not a JSON object", kNoOffset};
  }
  // nlohmann would skip a byte-order mark silently; the dump readers name it, and so does this one.
  if (text.starts_with(kUtf8ByteOrderMark)) return at(0, std::string(kByteOrderMarkProblem));
  // The same structural bound as dump records: no deep nesting reaches the parser.
  size_t shape_at = 0;
  switch (scan_json_shape(text, kMaxJsonDepth, &shape_at)) {
    case JsonShape::kTooDeep:
      return at(shape_at, "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    case JsonShape::kTrailing:
      return at(shape_at, "trailing content after the JSON object");
    case JsonShape::kOk:
      break;
  }
  // A key given twice is refused, as in dump records.
  audit::DuplicateKeyWatch watch;
  if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    return at(bad, "not valid UTF-8");
  }
  *out = json::parse(text, watch.callback(), /*allow_exceptions=*/false);
  if (out->is_discarded()) {
    // Where and why, from a second parse that builds nothing (an error path only). Well-formed
    // JSON with a number no double holds (1e400) is refused too, but by its name: nlohmann reports
    // it as out_of_range 406 ("number overflow"), after the number.
    const JsonError error = locate_json_error(text);
    if (error.what == kJsonNumberOutOfRange) {
      size_t start = std::min(error.offset, text.size());
      while (start > 0 &&
             std::string_view("0123456789+-.eE").find(text[start - 1]) != std::string_view::npos) {
        --start;
      }
      const std::string where =
          watch.last_key().empty() ? "" : " for " + quote_for_reason(watch.last_key());
      return at(start, "number out of range" + where);
    }
    if (error.offset != kNoOffset) return at(error.offset, "bad JSON (" + error.what + ")");
  }
  if (out->is_discarded() || !out->is_object()) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    return at(first == std::string_view::npos ? text.size() : first, "not a JSON object");
  }
  if (!watch.duplicate().empty()) {
    // At the second one, when it can be found again.
    return at(locate_duplicate_key(text),
              "has the key " + quote_for_reason(watch.duplicate()) + " twice");
  }
  return {};
}

void name_redacted(Documents* docs) {
  for (const auto* doc : {&docs->message, &docs->record}) {
    const char* where = doc == &docs->message ? "message" : "record";
    for (const auto& [key, value] : doc->items()) {
      if (docs->sensitive.count(key)) docs->redacted.push_back(std::string(where) + "." + key);
    }
    if (const json* e = member(*doc, "error"); e && e->is_object()) {
      for (const auto& [key, value] : e->items()) {
        if (docs->sensitive.count(key)) {
          docs->redacted.push_back(std::string(where) + ".error." + key);
        }
      }
    }
  }
}

std::string non_scalar_identifier(const json& doc, bool is_message,
                                  std::vector<std::string>* where) {
  static constexpr const char* kScalarRule =
      "; an identifying field must be a string or an integer";
  static const char* const kMessageKeys[] = {"message_id",          "operation_id", "action_type",
                                             "attempt_count",       "attempt",      "revision",
                                             "last_error_category", "remote_job_id"};
  static const char* const kRecordKeys[] = {"operation_id", "phase", "revision", "remote_job_id"};
  auto bad = [](const json* v) {
    return v != nullptr && !v->is_null() && !v->is_string() && !v->is_number_integer();
  };
  for (const char* key : is_message ? std::span<const char* const>(kMessageKeys)
                                    : std::span<const char* const>(kRecordKeys)) {
    if (const json* v = member(doc, key); bad(v)) {
      *where = {key};
      return "'" + std::string(key) + "' is " + non_scalar_kind(*v) + kScalarRule;
    }
  }
  if (const json* e = member(doc, "error"); is_message && e && !e->is_null()) {
    // The error envelope may hold the remote job id (inputs.h): a stringified or listed
    // envelope must not read as "no job id".
    if (!e->is_object()) {
      *where = {"error"};
      return std::string("'error' is ") +
             (e->is_string()   ? "a string"
              : e->is_number() ? "a number"
                               : non_scalar_kind(*e)) +
             "; the error envelope must be an object";
    }
    if (const json* v = member(*e, "job_id"); bad(v)) {
      *where = {"error", "job_id"};
      return std::string("'error.job_id' is ") + non_scalar_kind(*v) + kScalarRule;
    }
  }
  return "";
}

void set_inputs(const std::vector<InputUse>& uses, Input* input, std::vector<std::string>* keep) {
  for (const InputUse& use : uses) set_slot(*input, use.field, use.value, *keep);
}

std::string plain_words(Effect effect) {
  switch (effect) {
    case Effect::kNone:
      return "no remote call: it reads no status, copies no output and submits no new work";
    case Effect::kRead:
      return "it will read status only: no output is copied and no new work is submitted";
    case Effect::kCopy:
      return "it will copy an existing output: no new work is submitted";
    case Effect::kCreate:
      return "it will SUBMIT NEW WORK (a new generation request)";
  }
  return "?";
}

ReviewRecord build_record(const Table& table, const Documents& r, const Input& input,
                          const std::vector<InputUse>& uses, uint32_t verb, const std::string& rule,
                          const std::string& reason) {
  // The identifying job id and phase are the values the policy used, when it has such inputs.
  const InputUse* job_use = find_use(uses, "remote_job_id");
  const json* job = job_use != nullptr ? job_use->value : review_job_id(r.message, r.record);
  const InputUse* phase_use = find_use(uses, "phase");
  const json* phase = phase_use != nullptr ? phase_use->value : member(r.record, "phase");
  const json* attempts = member(r.message, "attempt_count");
  if (attempts == nullptr) attempts = member(r.message, "attempt");
  const json* operation = member(r.record, "operation_id") != nullptr
                              ? member(r.record, "operation_id")
                              : member(r.message, "operation_id");
  ReviewRecord out;
  out.message_id = shown(r, "message_id", member(r.message, "message_id"));
  out.operation_id = shown(r, "operation_id", operation);
  out.action_type = shown(r, "action_type", member(r.message, "action_type"));
  out.attempt_count = shown_json(r, "attempt_count", attempts);
  out.last_error_category =
      shown(r, "last_error_category", member(r.message, "last_error_category"));
  out.remote_job_id = shown(r, "remote_job_id", job);
  // record.phase is checked to be a scalar (non_scalar_identifier); a phase a letter-source
  // policy took from the message is not, so an object or array shows only its kind.
  const json phase_kind = phase != nullptr && (phase->is_object() || phase->is_array())
                              ? json(std::string("<") + non_scalar_kind(*phase) + ">")
                              : json();
  out.phase = shown(r, "phase", phase_kind.is_null() ? phase : &phase_kind);
  // The record must never hide that the decision used a phase that is not the record's own.
  if (phase_use != nullptr && phase_use->value != nullptr && phase_use->from != "record.phase") {
    out.phase_from = phase_use->from;
  }
  out.message_revision = shown_json(r, "revision", member(r.message, "revision"));
  out.record_revision = shown_json(r, "revision", member(r.record, "revision"));
  out.redacted = r.redacted;
  out.inputs = input_lines(r, table, input, uses);
  const Effect effect = table.verb_effect(verb);
  out.verb = verb;
  out.action = std::string(table.verb_name(verb));
  out.effect = effect_name(effect);
  out.plain = plain_words(effect);
  out.verb_description = std::string(table.verb_description(verb));
  out.rule = rule;
  out.reason = reason;
  out.policy = std::string(table.policy_id());
  out.policy_revision = table.revision();
  out.table_checksum = table.checksum_hex();
  return out;
}

EarlierCreates earlier_creates(std::string_view bytes, const std::string& message_id,
                               const std::string& operation_id) {
  EarlierCreates out;
  const auto same = [](const json& value, const std::string& id) {
    return !id.empty() && value.is_string() && value.get_ref<const std::string&>() == id;
  };
  audit::EntryReader reader(bytes, audit::EntryReader::Lines::kAll);
  audit::ReadEntry entry;
  while (reader.next(&entry)) {
    if (entry.kind == audit::ReadEntry::Kind::kDecision && entry.decision.effect == "create" &&
        (same(entry.decision.message_id, message_id) ||
         same(entry.decision.operation_id, operation_id))) {
      out.decisions.push_back(std::move(entry));
    } else if (entry.kind == audit::ReadEntry::Kind::kResult) {
      for (const audit::ReadEntry& decision : out.decisions) {
        if (entry.result.decision != 0 && decision.seq == entry.result.decision) {
          out.results.push_back("entry " + std::to_string(entry.result.decision) + ": " +
                                escape_control(entry.result.outcome));
        }
      }
    }
  }
  out.same_message =
      !out.decisions.empty() && same(out.decisions.front().decision.message_id, message_id);
  return out;
}

}  // namespace replaygate::review
