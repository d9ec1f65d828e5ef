// `replaygate review`: the operator review record for one dead-lettered message (issue 5).
//
// Reads the message (a JSON file, or with --input-format F --mapping M one broker record read
// through the mapping: review_mapped.h) and the durable operation record (a JSON file), builds the
// policy's input from them (mapping below and in docs/recovery.md), decides, and prints the review
// record: the message's identifiers, the chosen action and, in plain words, whether carrying it out
// reads status, copies an existing output or submits new work. `--confirm` sets the
// operator_confirmed input and appends the decision to the audit log (audit/audit_log.h) before
// anything is printed: when the append fails, nothing is reported as taken (exit 2).
//
// Input mapping: tools/cli/review_inputs.h (where each input may come from, by the policy's
// `source:`: a record-only input never falls back to the message, an operator-only one is never
// read from the files; what the wrong file offered is reported as ignored). The record shows,
// for every input, the value the policy used and where it came from.
// JSON strings, integers, booleans and null become the matching input values; any other JSON
// value makes the input invalid (the policy default, fail closed). A non-object `error` in the
// message is an invalid message.
// With --ledger L (docs/ledger.md), a create decision is claimed by the policy's idempotency key
// (the recovery policy's operation id) before it is recorded or printed
// (tools/cli/review_ledger.h): a key already claimed gets the default with rule
// ledger:already_replayed, no key ledger:no_key, a ledger error ledger:unavailable and exit 2.
// Without --confirm the ledger is only consulted. With --confirm, a create decision warns on stderr
// when the audit log already records a create decision for the same message id or operation id
// (when and by whom): the second one would submit the work again. The identifying fields the record
// prints and the audit log keeps must be strings or integers: another JSON value there makes the
// message or record invalid (exit 1, nothing recorded). Every value the text record prints is
// escaped (escape_control, common/escape.h).
//
// Secrets: values of sensitive fields (the policy's `sensitive` list plus a built-in list of
// common secret names) are never printed, logged or written to the audit log; the record names
// the fields as `<redacted: field NAME>`. With --table there is no `sensitive` list (a table does
// not record it), so every string value from the message or the record is redacted (`<redacted:
// field NAME (--table: ...)>`), but message_id and operation_id.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "audit/audit_log.h"
#include "audit/entry.h"
#include "common/utf8.h"
#include "compiler/compile.h"
#include "compiler/explain.h"
#include "compiler/lower.h"
#include "inputs/formats.h"
#include "inputs/records.h"
#include "pipeline/audit_stage.h"
#include "pipeline/gate.h"
#include "runtime/table.h"
#include "runtime/trace.h"
#include "tools/cli/audit_signing.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/review_inputs.h"
#include "tools/cli/review_ledger.h"
#include "tools/cli/review_mapped.h"
#include "tools/cli/sensitive.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {

using inputs::JsonError;
using inputs::JsonShape;
using inputs::kByteOrderMarkProblem;
using inputs::kJsonNumberOutOfRange;
using inputs::kMaxJsonDepth;
using inputs::kUtf8ByteOrderMark;
using inputs::locate_duplicate_key;
using inputs::locate_json_error;
using inputs::locate_member_value;
using inputs::position_of;
using inputs::quote_for_reason;
using inputs::RecordParser;
using inputs::scan_json_shape;
using inputs::TextPosition;

namespace {

using nlohmann::json;

constexpr size_t kMaxDocumentBytes = size_t{1} << 20;

struct Options {
  TrustFlags trust;
  AuditSignFlags audit_sign;  // --audit-sign-key, --checkpoint-every (with --confirm)
  std::string policy, table, message, record, operator_name, audit, format = "text";
  std::string ledger, ledger_scope = "default";  // --ledger, --ledger-scope
  bool ledger_scope_set = false;
  bool confirm = false;
  bool operator_set = false;         // --operator was on the command line (even as "")
  inputs::InputFormatOptions input;  // --input-format, --mapping (review_mapped.h)
  std::string message_id;            // --message-id: the record of a mapped dump to review
};

// Reads a JSON object from `path` into *out, and its text into *text_out. Returns 0, 1 (not a JSON
// object: an invalid record) or 2 (I/O).
int read_object(const std::string& path, const char* what, json* out, std::string* text_out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replaygate: cannot read %s file %s\n", what, path.c_str());
    return kExitUsage;
  }
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxDocumentBytes) {
      std::fprintf(stderr, "replaygate: %s file %s is over 1 MiB\n", what, path.c_str());
      return kExitFindings;
    }
  }
  if (in.bad()) {
    std::fprintf(stderr, "replaygate: cannot read %s file %s\n", what, path.c_str());
    return kExitUsage;
  }
  // Problems with one place are reported as PATH:LINE:COLUMN, as the compiler's diagnostics.
  const auto invalid_at = [&](size_t offset, const std::string& problem) {
    const TextPosition at = position_of(text, offset);
    std::fprintf(stderr, "replaygate: invalid %s: %s:%zu:%zu: %s\n", what, path.c_str(), at.line,
                 at.column, problem.c_str());
    return kExitFindings;
  };
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    std::fprintf(stderr, "replaygate: invalid %s: %s: empty, not a JSON object\n", what,
                 path.c_str());
    return kExitFindings;
  }
  // nlohmann would skip a byte-order mark silently; the dump readers name it, and so does this one.
  if (std::string_view(text).starts_with(kUtf8ByteOrderMark)) {
    return invalid_at(0, std::string(kByteOrderMarkProblem));
  }
  // The same structural bound as dump records: no deep nesting reaches the parser.
  size_t shape_at = 0;
  switch (scan_json_shape(text, kMaxJsonDepth, &shape_at)) {
    case JsonShape::kTooDeep:
      return invalid_at(shape_at,
                        "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    case JsonShape::kTrailing:
      return invalid_at(shape_at, "trailing content after the JSON object");
    case JsonShape::kOk:
      break;
  }
  // A key given twice is refused, as in dump records: with nlohmann's default the last one would
  // win, so `"already_committed": true, "already_committed": false` would read as false.
  audit::DuplicateKeyWatch watch;
  if (const size_t bad = first_invalid_utf8(text); bad != std::string_view::npos) {
    return invalid_at(bad, "not valid UTF-8");
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
      return invalid_at(start, "number out of range" + where);
    }
    if (error.offset != RecordParser::kNoOffset) {
      return invalid_at(error.offset, "bad JSON (" + error.what + ")");
    }
  }
  if (out->is_discarded() || !out->is_object()) {
    const size_t first = text.find_first_not_of(" \t\r\n");
    return invalid_at(first == std::string::npos ? text.size() : first, "not a JSON object");
  }
  if (!watch.duplicate().empty()) {
    const std::string problem = "has the key " + quote_for_reason(watch.duplicate()) + " twice";
    if (const size_t at = locate_duplicate_key(text); at != RecordParser::kNoOffset) {
      return invalid_at(at, problem);  // at the second one
    }
    std::fprintf(stderr, "replaygate: invalid %s: %s: %s\n", what, path.c_str(), problem.c_str());
    return kExitFindings;
  }
  *text_out = std::move(text);
  return kExitOk;
}

const json* member(const json& object, const std::string& key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A short printable form of an identifying value ("" when missing); never used for secrets.
std::string text_of(const json* value) {
  if (value == nullptr || value->is_null()) return "";
  if (value->is_string()) return value->get<std::string>();
  return value->dump();
}

// The JSON kind of a value that cannot identify anything, for the error message.
const char* non_scalar_kind(const json& value) {
  if (value.is_object()) return "an object";
  if (value.is_array()) return "an array";
  if (value.is_boolean()) return "a boolean";
  // nlohmann reads an integer beyond uint64 as a double: say so, not "a fraction".
  return std::fabs(value.get<double>()) >= 9.2e18 ? "a number beyond the 64-bit integer range"
                                                  : "a number with a fraction";
}

// The identifying fields review prints and records (with the job id candidates and revisions) must
// each be a JSON string or integer, or null/missing: an object or array would be printed and
// written to the audit log as JSON text, whatever it holds; a message's `error`, when given, must
// be an object. Returns the first offender and the rule, as "'message_id' is an object; an
// identifying field must be ...", or "", and sets *where to the offender's keys ({"error",
// "job_id"}).
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
    // The error envelope may hold the remote job id (review_inputs.h): a stringified or listed
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

struct Review {
  json message, record;
  std::set<std::string> sensitive;
  std::vector<std::string> redacted;  // "message.prompt", "record.signed_url", ...
  // Reviewing with --table: a frozen table does not record the policy's `sensitive` list, so any
  // string may be a secret the policy names. Every string value from the message or the record is
  // redacted then (table_redacted()), but message_id and operation_id, which identify what was
  // reviewed and go into the audit log (names on the built-in list stay redacted).
  bool table_only = false;
};

// What a string value of `name` shows as under --table (see Review::table_only).
std::string table_redacted(const std::string& name) {
  return "<redacted: field " + name +
         " (--table: a table does not record which fields are sensitive; review with --policy "
         "to see it)>";
}

bool redacted_for_table(const Review& r, const std::string& name, const json* value) {
  return r.table_only && value != nullptr && value->is_string() && name != "message_id" &&
         name != "operation_id";
}

// The shown value of an identifying field: its text, or a reference when it is sensitive.
std::string shown(const Review& r, const std::string& name, const json* value) {
  if (r.sensitive.count(name)) return "<redacted: field " + name + ">";
  if (redacted_for_table(r, name, value)) return table_redacted(name);
  return text_of(value);
}

// The value as JSON (numbers stay numbers, missing is null), or a reference when it is sensitive.
json shown_json(const Review& r, const std::string& name, const json* value) {
  if (r.sensitive.count(name)) return "<redacted: field " + name + ">";
  if (redacted_for_table(r, name, value)) return table_redacted(name);
  return value == nullptr ? json() : *value;
}

// Printable form of a JSON value for the text record ("" for null).
std::string text_of_json(const json& value) { return text_of(&value); }

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
json value_for_record(const Review& r, const std::string& name, const std::string& from,
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

// The "inputs" of the JSON record: for every input, in field order, the value the policy used
// (null when missing or not computed), where it came from, and the values it ignored.
json inputs_json(const Review& r, const Table& table, const Input& input,
                 const std::vector<InputUse>& uses) {
  const Trace traced = trace(table, input);
  const std::vector<std::string> formulas = derived_formulas(table);
  json out = json::array();
  for (const InputUse& use : uses) {
    json item;
    item["name"] = use.name;
    item["source"] = use.derived ? "derived" : field_source_name(use.source);
    if (use.derived) {
      // Computed after validation; not computed when the input is invalid.
      const bool computed =
          use.field < traced.fields.size() && !traced.fields[use.field].atom_label.empty();
      item["value"] = computed ? json(traced.fields[use.field].atom_label == "true") : json();
      item["missing"] = !computed;
      item["from"] = "derived";
      item["formula"] = formulas[use.field];
    } else {
      item["value"] =
          use.value != nullptr ? value_for_record(r, use.name, use.from, *use.value) : json();
      item["missing"] = use.value == nullptr;
      item["from"] = use.from.empty() ? json() : json(use.from);
      if (!use.unset_because.empty()) item["unset_because"] = use.unset_because;
    }
    json ignored = json::array();
    for (const IgnoredOffer& offer : use.ignored) {
      ignored.push_back({{"from", offer.from},
                         {"value", value_for_record(r, use.name, offer.from, *offer.value)},
                         {"why", ignored_because(use)}});
    }
    item["ignored"] = std::move(ignored);
    out.push_back(std::move(item));
  }
  return out;
}

// The text record's "inputs" section, from inputs_json(): one line per input with the value and
// where it came from, and a line for each ignored value.
std::string inputs_text(const json& inputs) {
  size_t width = 22;
  for (const json& item : inputs) {
    width = std::max(width, item["name"].get_ref<const std::string&>().size() + 3);
  }
  const auto shown_value = [](const json& v) {
    return v.is_string() && v.get_ref<const std::string&>().starts_with("<") ? v.get<std::string>()
                                                                             : v.dump();
  };
  std::string out = "inputs (the value the policy used, and where it came from)\n";
  for (const json& item : inputs) {
    const std::string label = item["name"].get<std::string>() + ":";
    const std::string source = item["source"];
    const std::string only = source == "record"     ? "; record-only"
                             : source == "operator" ? "; operator-only"
                                                    : "";
    std::string line;
    if (source == "derived") {
      line = (item["missing"] ? std::string("<not computed: the input is invalid>")
                              : item["value"].dump()) +
             " (derived: " + item["formula"].get<std::string>() + ")";
    } else if (item["missing"]) {
      line = "<missing> (" + (only.empty() ? std::string() : only.substr(2) + "; ") +
             item["unset_because"].get<std::string>() + ")";
    } else if (item["from"] == "--confirm" && item["value"] == false) {
      line = "false (no --confirm" + only + ")";
    } else {
      line = shown_value(item["value"]) + " (from " + item["from"].get<std::string>() + only + ")";
    }
    out += "  " + label + std::string(width - label.size(), ' ') + escape_control(line) + "\n";
    for (const json& offer : item["ignored"]) {
      out += "  " + std::string(width, ' ') +
             escape_control("ignored: " + offer["from"].get<std::string>() + " = " +
                            shown_value(offer["value"]) + " (" + offer["why"].get<std::string>() +
                            ")") +
             "\n";
    }
  }
  return out;
}

// The stderr warning, "" when none, for the create decisions the audit log at `path` already
// holds for the message or operation of `out` (the review record): a second create would submit
// the work again. It names the first such entry (when and by whom), any later ones and the results
// recorded for them. The log is read without the lock: a warning, not a guard (the durable ledger
// that refuses a second dispatch is not built yet). A log that cannot be read gives no warning
// here (the append reports it), and a line that is not a JSON object is skipped.
std::string earlier_create_warning(const std::string& path, const json& out) {
  std::string text, error;
  if (!read_whole_file(path, size_t{1} << 30, &text, &error)) return "";
  const std::string message_id = out["message_id"], operation_id = out["operation_id"];
  std::vector<json> earlier;         // the matching decision entries, in log order
  std::vector<std::string> results;  // "entry 1: OUTCOME" for results of those
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    json entry = json::parse(std::string_view(text).substr(start, end - start), nullptr, false);
    start = end + 1;
    if (entry.is_discarded() || !entry.is_object()) continue;
    const auto same = [&entry](const char* key, const std::string& id) {
      const auto it = entry.find(key);
      return !id.empty() && it != entry.end() && it->is_string() && *it == id;
    };
    const std::string kind = text_of(member(entry, "kind"));
    if (kind == "decision" && text_of(member(entry, "effect")) == "create" &&
        (same("message_id", message_id) || same("operation_id", operation_id))) {
      earlier.push_back(std::move(entry));
    } else if (kind == "result") {
      for (const json& decision : earlier) {
        if (entry.value("decision", json()) == decision.value("seq", json())) {
          results.push_back("entry " + entry["decision"].dump() + ": " +
                            escape_control(text_of(member(entry, "outcome"))));
        }
      }
    }
  }
  if (earlier.empty()) return "";
  const json& first = earlier.front();
  const auto field = [&first](const char* key) {
    const auto it = first.find(key);
    if (it == first.end() || it->is_null()) return std::string("-");
    return escape_control(it->is_string() ? it->get<std::string>() : it->dump());
  };
  const bool same_message = !message_id.empty() && first.value("message_id", json()) == message_id;
  std::string w = "replaygate: warning: " + escape_control(path) +
                  " already records a create decision for this " +
                  (same_message ? "message" : "operation") + " (message " + field("message_id") +
                  ", operation " + field("operation_id") + "): entry " + field("seq") + ", " +
                  field("action") + " (rule " + field("rule") + "), recorded " + field("time") +
                  " by " + field("operator");
  if (earlier.size() > 1) {
    w += "; later also entries";
    for (size_t i = 1; i < earlier.size(); ++i) {
      w += (i > 1 ? ", " : " ") + earlier[i].value("seq", json()).dump();
    }
  }
  w += results.empty()
           ? std::string("; no result is recorded for ") + (earlier.size() > 1 ? "them" : "it")
           : "; results recorded: ";
  for (size_t i = 0; i < results.size(); ++i) w += (i ? "; " : "") + results[i];
  w += "\nreplaygate: warning: this review records another create decision: acting on it "
       "submits the work again; check the operation record and the audit log before acting\n";
  return w;
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

int run_review(const Options& o) {
  if (o.format != "text" && o.format != "json") {
    std::fprintf(stderr, "replaygate: error: --format must be text or json\n");
    return kExitUsage;
  }
  if (o.policy.empty() == o.table.empty()) {
    std::fprintf(stderr, "replaygate: error: give exactly one of --policy and --table\n");
    return kExitUsage;
  }
  std::string format_error;
  const inputs::InputFormat* format = inputs::choose_input_format(o.input, &format_error);
  if (format == nullptr) {
    std::fprintf(stderr, "replaygate: error: %s\nRun 'replaygate review --help' for usage.\n",
                 format_error.c_str());
    return kExitUsage;
  }
  const bool mapped_format = !format->mapping_format.empty();
  if (!o.message_id.empty() && !mapped_format) {
    std::fprintf(stderr,
                 "replaygate: error: --message-id selects a record of a dump: it applies only "
                 "with --input-format FORMAT --mapping MAPPING, not to letters\n"
                 "Run 'replaygate review --help' for usage.\n");
    return kExitUsage;
  }
  if (o.ledger.empty() && o.ledger_scope_set) {
    std::fprintf(stderr,
                 "replaygate: error: --ledger-scope only applies with --ledger LEDGER\n"
                 "Run 'replaygate review --help' for usage.\n");
    return kExitUsage;
  }
  if (o.confirm && (o.audit.empty() || !o.operator_set)) {
    std::fprintf(stderr,
                 "replaygate: error: --confirm records the decision: give --audit FILE and "
                 "--operator NAME\n");
    return kExitUsage;
  }
  // Given but empty says "--operator is empty", as for decide and audit result.
  if (const std::string why = operator_error(o.operator_name); o.operator_set && !why.empty()) {
    std::fprintf(stderr, "replaygate: error: %s\nRun 'replaygate review --help' for usage.\n",
                 why.c_str());
    return kExitUsage;
  }
  if (!o.confirm && (!o.audit_sign.key_path.empty() || !o.audit_sign.every.empty())) {
    std::fprintf(stderr,
                 "replaygate: error: --audit-sign-key and --checkpoint-every only apply with "
                 "--confirm (which appends to the audit log)\nRun 'replaygate review --help' for "
                 "usage.\n");
    return kExitUsage;
  }
  AuditSigning signing;
  if (!read_audit_signing(o.audit_sign, "review", &signing)) return kExitUsage;
  // As for decide --audit: an append into the message or record file would first take its
  // unterminated last line for a torn entry. Refused before anything is read.
  struct stat log {};
  if (!o.audit.empty() && ::stat(o.audit.c_str(), &log) == 0) {
    const std::vector<InputFile> inputs = {{o.message, "the message file"},
                                           {o.record, "the operation record file"},
                                           {o.policy, "the policy file"},
                                           {o.table, "the table file"},
                                           {o.input.mapping, "the mapping file"}};
    if (const InputFile* same = same_file_as(log, inputs); same != nullptr) {
      std::fprintf(
          stderr,
          "replaygate: error: --audit %s is %s itself; the audit log is a file of its "
          "own (e.g. audit.log)\nRun 'replaygate review --help' for usage.\n",
          o.audit.c_str(),
          (same->path == "-" ? std::string("standard input") : same->what + " " + same->path)
              .c_str());
      return kExitUsage;
    }
  }
  Review r;
  r.sensitive = builtin_sensitive_names();  // names secret whatever the policy says
  std::unique_ptr<Table> table;
  if (!o.policy.empty()) {
    LoadedPolicy loaded;
    const int code = load_policy_reporting(o.policy, DiagnosticFormat::kText, &loaded);
    if (code != kExitOk) return code;
    for (const std::string& name : loaded.policy->policy.sensitive) r.sensitive.insert(name);
    const std::vector<uint8_t> bytes = lower(*loaded.policy);
    LoadStatus status;
    table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    if (table == nullptr) {
      std::fprintf(stderr, "%s\n", describe_load_failure(o.policy, status).c_str());
      return kExitUsage;
    }
  } else if (const int code = open_table("", o.table, &table, nullptr, &o.trust); code != kExitOk) {
    return code;
  } else {
    r.table_only = true;  // no `sensitive` list: redact every string (Review::table_only)
  }
  std::string message_text, record_text;
  // The record is the durable truth the record-only inputs come from: the dead letter itself (the
  // same file, or a hard link to it) named as the record would let the message supply them.
  struct stat message_file {};
  if (::stat(o.message.c_str(), &message_file) == 0) {
    if (same_file_as(message_file, {{o.record, "the operation record file"}}) != nullptr) {
      std::fprintf(stderr,
                   "replaygate: error: --record %s is the message file %s itself; the operation "
                   "record is the durable store's own document, never the dead letter\n"
                   "Run 'replaygate review --help' for usage.\n",
                   o.record.c_str(), o.message.c_str());
      return kExitUsage;
    }
  }
  // With a mapped --input-format the message is one broker record, read through the mapping into
  // the letter-sourced inputs (review_mapped.h); its JSON text is that document's.
  MappedMessage mapped;
  if (mapped_format) {
    if (int code =
            read_mapped_message(*format, o.input.mapping, o.message, o.message_id, *table, &mapped);
        code != kExitOk) {
      return code;
    }
    r.message = mapped.message;
    message_text = r.message.dump();
  } else if (int code = read_object(o.message, "message", &r.message, &message_text);
             code != kExitOk) {
    return code;
  }
  if (int code = read_object(o.record, "operation record", &r.record, &record_text);
      code != kExitOk) {
    return code;
  }
  for (const auto* doc : {&r.message, &r.record}) {
    const char* where = doc == &r.message ? "message" : "record";
    for (const auto& [key, value] : doc->items()) {
      if (r.sensitive.count(key)) r.redacted.push_back(std::string(where) + "." + key);
    }
    if (const json* e = member(*doc, "error"); e && e->is_object()) {
      for (const auto& [key, value] : e->items()) {
        if (r.sensitive.count(key)) r.redacted.push_back(std::string(where) + ".error." + key);
      }
    }
  }
  for (const auto& [doc, what, path, text] :
       {std::tuple{&r.message, "message", &o.message, &message_text},
        std::tuple{&r.record, "operation record", &o.record, &record_text}}) {
    std::vector<std::string> where;
    if (const std::string why = non_scalar_identifier(*doc, doc == &r.message, &where);
        !why.empty()) {
      // At the offending value, found again in the text (an error path).
      std::string shown = *path;
      if (const size_t at = locate_member_value(*text, where); at != RecordParser::kNoOffset) {
        const TextPosition position = position_of(*text, at);
        shown += ":" + std::to_string(position.line) + ":" + std::to_string(position.column);
      }
      std::fprintf(stderr, "replaygate: invalid %s: %s: %s (nothing decided, nothing recorded)\n",
                   what, shown.c_str(), why.c_str());
      return kExitFindings;
    }
  }
  const std::string message_op = text_of(member(r.message, "operation_id"));
  const std::string record_op = text_of(member(r.record, "operation_id"));
  if (!message_op.empty() && !record_op.empty() && message_op != record_op) {
    std::fprintf(stderr,
                 "replaygate: the message and the operation record name different operations\n");
    return kExitFindings;
  }

  Input input(*table);
  std::vector<std::string> keep;
  keep.reserve(table->field_count() + 1);  // string_views into `keep` must not move
  const json confirmed = o.confirm;
  std::vector<InputUse> uses = map_review_inputs(*table, r.message, r.record, confirmed);
  const std::vector<uint32_t> invalid =
      mapped_format ? attribute_to_mapping(mapped, &uses) : std::vector<uint32_t>{};
  for (const InputUse& use : uses) set_slot(input, use.field, use.value, keep);
  for (const uint32_t field : invalid) input.set_invalid(field);
  const Decision d = pipeline::decide_one(*table, input);
  uint32_t verb = d.verb;
  std::string rule(table->rule_name(d)), reason(table->reason(d));
  if (!mapped.problem.empty()) {
    // A record that cannot be read or mapped gets the policy default, as in decide: nothing it
    // holds may choose the action.
    verb = table->default_verb();
    rule = "default";
    reason = mapped.problem;
  }
  Effect effect = table->verb_effect(verb);
  // With --ledger, a create decision is claimed (with --confirm) or looked up before anything is
  // recorded or printed; a hold replaces it with the default (write-ahead, fail closed).
  ReviewClaim claim;
  if (!o.ledger.empty() && effect == Effect::kCreate) {
    if (o.confirm) {
      if (const std::string why = stdout_unwritable(); !why.empty()) {
        std::fprintf(stderr,
                     "replaygate: cannot write the review record to standard output: %s; nothing "
                     "claimed or recorded\n",
                     why.c_str());
        return kExitUsage;
      }
    }
    claim = claim_review(*table, d, uses, text_of(member(r.message, "message_id")),
                         {o.ledger, o.ledger_scope, !o.confirm});
    if (!claim.granted) {
      verb = table->default_verb();
      rule = claim.rule;
      reason = claim.reason;
      effect = table->verb_effect(verb);
    }
  }
  // The identifying job id and phase are the values the policy used, when it has such inputs.
  const InputUse* job_use = find_use(uses, "remote_job_id");
  const json* job = job_use != nullptr ? job_use->value : review_job_id(r.message, r.record);
  const InputUse* phase_use = find_use(uses, "phase");
  const json* phase = phase_use != nullptr ? phase_use->value : member(r.record, "phase");

  const json* attempts = member(r.message, "attempt_count");
  if (attempts == nullptr) attempts = member(r.message, "attempt");
  json out;
  out["message_id"] = shown(r, "message_id", member(r.message, "message_id"));
  out["operation_id"] =
      shown(r, "operation_id",
            member(r.record, "operation_id") != nullptr ? member(r.record, "operation_id")
                                                        : member(r.message, "operation_id"));
  out["action_type"] = shown(r, "action_type", member(r.message, "action_type"));
  out["attempt_count"] = shown_json(r, "attempt_count", attempts);
  out["last_error_category"] =
      shown(r, "last_error_category", member(r.message, "last_error_category"));
  out["remote_job_id"] = shown(r, "remote_job_id", job);
  // record.phase is checked to be a scalar (non_scalar_identifier); a phase a letter-source
  // policy took from the message is not, so an object or array shows only its kind.
  const json phase_kind = phase != nullptr && (phase->is_object() || phase->is_array())
                              ? json(std::string("<") + non_scalar_kind(*phase) + ">")
                              : json();
  out["phase"] = shown(r, "phase", phase_kind.is_null() ? phase : &phase_kind);
  out["message_revision"] = shown_json(r, "revision", member(r.message, "revision"));
  out["record_revision"] = shown_json(r, "revision", member(r.record, "revision"));
  out["redacted"] = r.redacted;
  out["inputs"] = inputs_json(r, *table, input, uses);
  out["action"] = std::string(table->verb_name(verb));
  out["effect"] = effect_name(effect);
  out["plain"] = plain_words(effect);
  out["verb_description"] = std::string(table->verb_description(verb));
  out["rule"] = rule;
  out["reason"] = reason;
  if (claim.stage != nullptr && claim.granted) out["claimed"] = claim.claimed;
  out["policy"] = std::string(table->policy_id());
  out["policy_revision"] = table->revision();
  out["table_checksum"] = table->checksum_hex();
  out["confirmed"] = o.confirm;
  if (mapped_format) {
    out["input_format"] = std::string(format->name);
    out["mapping"] = o.input.mapping;
    if (!mapped.problem.empty()) out["invalid_message"] = mapped.problem;
  }

  // With --confirm the decision is recorded before it is printed: standard output must be open for
  // writing first, so a closed or read-only one records nothing (as for decide --audit).
  if (o.confirm) {
    if (const std::string why = stdout_unwritable(); !why.empty()) {
      std::fprintf(stderr,
                   "replaygate: cannot write the review record to standard output: %s; nothing "
                   "recorded\n",
                   why.c_str());
      return kExitUsage;
    }
    // Read before the append, so that this review's own entry is not the earlier one.
    const std::string repeated =
        effect == Effect::kCreate ? earlier_create_warning(o.audit, out) : std::string();
    // The entry goes through the gate's audit stage, as decide's do (one writer, one append).
    audit::DecisionEntry entry =
        pipeline::decision_entry(*table, verb, rule, table->checksum_hex());
    entry.message_id = out["message_id"];
    entry.operation_id = out["operation_id"];
    entry.record_revision = out["record_revision"];
    pipeline::AuditStage stage(o.audit, o.operator_name, "");
    stage.set_signer(signing.get());
    stage.add_entry(std::move(entry));
    if (!stage.commit()) {
      std::fprintf(stderr,
                   "replaygate: %s\nreplaygate: the decision was NOT recorded and is not "
                   "taken; do not act on it\n",
                   stage.error().c_str());
      return kExitUsage;
    }
    out["audit_entry"] = stage.last_seq();
    out["audit_hash"] = stage.last_hash();
    if (claim.claimed) claim.mark_recorded();  // the claim's audit entry is on record
    std::fputs(repeated.c_str(), stderr);
  }

  std::string text;
  if (o.format == "json") {
    text = out.dump() + "\n";
  } else {
    // Every value is escaped (records.h): a message field holding a newline or an escape sequence
    // cannot add a line to the record or drive the terminal.
    auto row = [&text](const char* label, const std::string& value) {
      text += std::string("  ") + label + std::string(22 - std::string(label).size(), ' ') +
              (value.empty() ? "-" : escape_control(value)) + "\n";
    };
    text += "review record\n";
    row("message id:", out["message_id"]);
    row("operation id:", out["operation_id"]);
    row("action type:", out["action_type"]);
    row("attempt count:", text_of_json(out["attempt_count"]));
    row("last error category:", out["last_error_category"]);
    row("known remote job id:", out["remote_job_id"]);
    // Where the phase came from when it is not the record's own (a policy whose phase input
    // letters may set): the record must never hide that the decision used the message's.
    const bool phase_elsewhere =
        phase_use != nullptr && phase_use->value != nullptr && phase_use->from != "record.phase";
    row("operation phase:",
        out["phase"].get<std::string>() +
            (phase_elsewhere ? " (from " + phase_use->from + ")" : std::string()));
    row("revisions:", "message " + text_of_json(out["message_revision"]) + ", record " +
                          text_of_json(out["record_revision"]));
    std::string secrets;
    for (const std::string& name : r.redacted) {
      secrets += (secrets.empty() ? "" : ", ") + ("<redacted: field " + name + ">");
    }
    row("sensitive fields:", secrets.empty() ? "none present" : secrets);
    text += inputs_text(out["inputs"]);
    text += "decision\n";
    row("action:",
        out["action"].get<std::string>() + " (effect " + out["effect"].get<std::string>() + ")");
    row("in plain words:", out["plain"]);
    row("what it does:", out["verb_description"]);
    row("rule:", out["rule"]);
    row("reason:", out["reason"]);
    if (claim.stage != nullptr && claim.granted) {
      row("ledger:", (claim.claimed ? "claimed by input "
                                    : "not claimed by anyone yet (no --confirm), input ") +
                         claim.key_input + " in " + claim.ledger);
    }
    row("policy:", out["policy"].get<std::string>() + " revision " +
                       std::to_string(table->revision()) + ", table " +
                       out["table_checksum"].get<std::string>());
    if (o.confirm) {
      row("confirmed:", "yes, by " + o.operator_name + "; audit entry " +
                            std::to_string(out["audit_entry"].get<uint64_t>()) + " (hash " +
                            out["audit_hash"].get<std::string>() + ") in " + o.audit);
    } else {
      row("confirmed:", "no (review only; nothing recorded; --confirm to record and act)");
    }
  }
  if (!print_to_stdout(text, "the review record")) {
    if (o.confirm) {
      std::fprintf(stderr,
                   "replaygate: the decision IS recorded, as audit entry %llu in %s, but this "
                   "review record was NOT printed\n",
                   static_cast<unsigned long long>(out["audit_entry"].get<uint64_t>()),
                   o.audit.c_str());
    }
    return kExitUsage;
  }
  if (claim.failed) {
    std::fprintf(stderr,
                 "replaygate: error: the replay ledger is unavailable; the create decision was "
                 "held (rule ledger:unavailable), not taken\n");
    return kExitUsage;
  }
  // A mapped record that could not be read is an invalid message (reviewed: the policy default).
  return mapped.problem.empty() ? kExitOk : kExitFindings;
}

}  // namespace

Runner setup_review(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.footer(
      "Print the operator review record for one dead-lettered message: build the policy's input\n"
      "from MESSAGE and the durable operation RECORD (mapping in docs/recovery.md),\n"
      "decide, and say in plain words whether the action reads status, copies an existing\n"
      "output or submits new work. Sensitive fields are never printed, only named. The record\n"
      "lists every input with the value the policy used and where it came from; an input the\n"
      "policy marks `source: record` is read from RECORD only (the message's value is shown as\n"
      "ignored).\n"
      "MESSAGE is a JSON object keyed by input names (--input-format letters, the default) or,\n"
      "with --input-format FORMAT --mapping MAPPING, one dead-lettered broker record read\n"
      "through the mapping, as decide reads it. A dump of more than one record is refused\n"
      "unless --message-id ID selects one. The mapping supplies only letter-sourced inputs: one\n"
      "that maps a record-only or operator-only input is refused (exit 2). A record that\n"
      "cannot be read or mapped gets the policy default (exit 1). RECORD is a JSON object.\n"
      "--confirm sets the operator_confirmed input and appends the decision to the audit log\n"
      "(--audit FILE, --operator NAME required) before printing it; it warns when the log\n"
      "already holds a create decision for the same message or operation.\n"
      "--ledger L [--ledger-scope S] claims a create decision by the policy's idempotency key\n"
      "(its operation id) before it is recorded or printed (without --confirm: looks it up);\n"
      "a key already claimed gets the default (rule ledger:already_replayed), a ledger error\n"
      "ledger:unavailable and exit 2 (docs/ledger.md).\n"
      "Exit: 0 reviewed (and recorded with --confirm), 1 policy errors or an invalid message or\n"
      "record, 2 usage/I/O errors, mapping errors, the audit append failed (the decision is\n"
      "not taken) or the ledger is unavailable (the create decision is held).");
  sub.add_option("--policy", o->policy, "Policy file, compiled in memory");
  sub.add_option("--table", o->table, "Compiled table file");
  sub.add_option("--message", o->message,
                 "The dead-lettered message (a JSON object, or one record of --input-format)")
      ->required();
  std::string formats;
  for (const inputs::InputFormat& f : inputs::input_formats()) {
    formats += (formats.empty() ? "" : "; ") + std::string(f.name) + ": " + std::string(f.help);
  }
  CLI::Option* input_format =
      sub.add_option("--input-format", o->input.input_format,
                     "Format of the message file, letters by default (" + formats + ")");
  sub.add_option("--mapping", o->input.mapping,
                 "Mapping file for every --input-format but letters (docs/input-mapping.md); "
                 "it may map only letter-sourced inputs");
  sub.add_option("--message-id", o->message_id,
                 "With --input-format: review the record of the dump with this message id");
  sub.add_option("--record", o->record, "The current operation record (JSON object)")->required();
  sub.add_flag("--confirm", o->confirm, "Confirm as operator: sets operator_confirmed, records");
  CLI::Option* operator_option =
      sub.add_option("--operator", o->operator_name, "Operator name for the audit entry");
  sub.add_option("--audit", o->audit, "Audit log (JSON Lines) to append the decision to");
  sub.add_option("--format", o->format, "text (default) or json");
  sub.add_option("--ledger", o->ledger,
                 "Durable replay ledger (a SQLite PATH or a postgresql:// URL, docs/ledger.md)");
  CLI::Option* scope_option =
      sub.add_option("--ledger-scope", o->ledger_scope, "Ledger scope (default \"default\")");
  add_audit_sign_options(sub, &o->audit_sign);
  add_trust_options(sub, &o->trust, /*acting=*/true);
  return [o, operator_option, scope_option, input_format] {
    o->operator_set = operator_option->count() > 0;
    o->input.input_format_set = input_format->count() > 0;
    o->ledger_scope_set = scope_option->count() > 0;
    return run_review(*o);
  };
}

}  // namespace replaygate::cli
