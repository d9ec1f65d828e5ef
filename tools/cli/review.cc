// `replaygate review`: the operator review record for one dead-lettered message (issue 5).
//
// Reads the message and the durable operation record (two JSON files), builds the policy's input
// from them (mapping below and in docs/recovery.md), decides, and prints the review record: the
// message's identifiers, the chosen action and, in plain words, whether carrying it out reads
// status, copies an existing output or submits new work. `--confirm` sets the operator_confirmed
// input and appends the decision to the audit log (tools/cli/audit.h) before anything is printed:
// when the append fails, nothing is reported as taken (exit 2).
//
// Input mapping, for each policy input NAME (derived inputs are computed, never read):
//   operator-only       (policy `source: operator`) never read from the files: a bool input is
//                       true with --confirm, else false; any other type stays unset
//   operator_confirmed  true with --confirm, else false (never read from the files)
//   message_revision    message.revision (the record revision the message was produced from)
//   record_revision     record.revision
//   remote_job_id       record.remote_job_id, else message.remote_job_id, else
//                       message.error.job_id (a failed POST's error envelope); null or ""
//                       is "not given" there, and a non-object `error` is an invalid message
//   anything else       record.NAME, else message.NAME, else missing
// JSON strings, integers, booleans and null become the matching input values; any other JSON
// value makes the input invalid (the policy default, fail closed).
// The identifying fields the record prints and the audit log keeps must be strings or integers:
// another JSON value there makes the message or record invalid (exit 1, nothing recorded). Every
// value the text record prints is escaped (escape_control, compiler/escape.h).
//
// Secrets: values of sensitive fields (the policy's `sensitive` list plus a built-in list of
// common secret names) are never printed, logged or written to the audit log; the record names
// the fields as `<redacted: field NAME>`.
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

#include "compiler/compile.h"
#include "compiler/lower.h"
#include "compiler/utf8.h"
#include "runtime/table.h"
#include "tools/cli/audit.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/records.h"
#include "tools/cli/sensitive.h"

namespace replaygate::cli {
namespace {

using nlohmann::json;

constexpr size_t kMaxDocumentBytes = size_t{1} << 20;

struct Options {
  std::string policy, table, message, record, operator_name, audit, format = "text";
  bool confirm = false;
  bool operator_set = false;  // --operator was on the command line (even as "")
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
    if (error.what.find("number overflow") != std::string::npos) {
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
      return invalid_at(error.offset, "bad JSON (" + escape_control(error.what) + ")");
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
    // The error envelope may hold the remote job id (job_id_source): a stringified or listed
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
  std::string known_job_id;
};

// The shown value of an identifying field: its text, or a reference when it is sensitive.
std::string shown(const Review& r, const std::string& name, const json* value) {
  if (r.sensitive.count(name)) return "<redacted: field " + name + ">";
  return text_of(value);
}

// The value as JSON (numbers stay numbers, missing is null), or a reference when it is sensitive.
json shown_json(const Review& r, const std::string& name, const json* value) {
  if (r.sensitive.count(name)) return "<redacted: field " + name + ">";
  return value == nullptr ? json() : *value;
}

// Printable form of a JSON value for the text record ("" for null).
std::string text_of_json(const json& value) { return text_of(&value); }

// The first job id given: null and "" are "not given here" and the search goes on, so an empty
// record.remote_job_id cannot hide the job id of a failed POST's error envelope (which would
// make a known job look absent and let the policy dispatch it again).
const json* job_id_source(const Review& r) {
  auto given = [](const json* v) {
    return v != nullptr && !v->is_null() &&
           !(v->is_string() && v->get_ref<const std::string&>().empty());
  };
  if (const json* v = member(r.record, "remote_job_id"); given(v)) return v;
  if (const json* v = member(r.message, "remote_job_id"); given(v)) return v;
  if (const json* e = member(r.message, "error"); e && e->is_object()) {
    if (const json* v = member(*e, "job_id"); given(v)) return v;
  }
  return nullptr;
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
  // As for decide --audit: an append into the message or record file would first take its
  // unterminated last line for a torn entry. Refused before anything is read.
  struct stat log {};
  if (!o.audit.empty() && ::stat(o.audit.c_str(), &log) == 0) {
    const std::vector<InputFile> inputs = {{o.message, "the message file"},
                                           {o.record, "the operation record file"},
                                           {o.policy, "the policy file"},
                                           {o.table, "the table file"}};
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
  } else if (const int code = open_table("", o.table, &table); code != kExitOk) {
    return code;
  }
  std::string message_text, record_text;
  if (int code = read_object(o.message, "message", &r.message, &message_text); code != kExitOk) {
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
  const json* job = job_id_source(r);
  for (uint32_t f = 0; f < table->field_count(); ++f) {
    if (table->field_derived(f)) continue;
    const FieldInfo info = table->field(f);
    const std::string name(info.name);
    const json* value = nullptr;
    if (info.operator_only) {
      // Only an operator sets it: a bool is this review's --confirm, anything else stays unset.
      if (info.type == FieldType::kBool) value = &confirmed;
    } else if (name == "operator_confirmed") {
      value = &confirmed;
    } else if (name == "message_revision") {
      value = member(r.message, "revision");
    } else if (name == "record_revision") {
      value = member(r.record, "revision");
    } else if (name == "remote_job_id") {
      value = job;
    } else {
      value = member(r.record, name);
      if (value == nullptr) value = member(r.message, name);
    }
    set_slot(input, f, value, keep);
  }
  const Decision d = table->decide(input);
  const Effect effect = table->verb_effect(d.verb);

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
  out["phase"] = shown(r, "phase", member(r.record, "phase"));
  out["message_revision"] = shown_json(r, "revision", member(r.message, "revision"));
  out["record_revision"] = shown_json(r, "revision", member(r.record, "revision"));
  out["redacted"] = r.redacted;
  out["action"] = std::string(table->verb_name(d.verb));
  out["effect"] = effect_name(effect);
  out["plain"] = plain_words(effect);
  out["verb_description"] = std::string(table->verb_description(d.verb));
  out["rule"] = std::string(table->rule_name(d));
  out["reason"] = std::string(table->reason(d));
  out["policy"] = std::string(table->policy_id());
  out["policy_revision"] = table->revision();
  out["table_checksum"] = table->checksum_hex();
  out["confirmed"] = o.confirm;

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
    json entry;
    entry["kind"] = "decision";
    entry["time"] = audit::utc_now();
    entry["operator"] = o.operator_name;
    for (const char* key : {"message_id", "operation_id", "action", "effect", "rule", "policy",
                            "policy_revision", "table_checksum"}) {
      entry[key] = out[key];
    }
    entry["record_revision"] = out["record_revision"];
    const audit::AppendResult appended = audit::append(o.audit, entry);
    std::fputs(audit::removed_tail_note(o.audit, appended).c_str(), stderr);
    if (!appended.ok) {
      std::fprintf(stderr,
                   "replaygate: %s\nreplaygate: the decision was NOT recorded and is not "
                   "taken; do not act on it\n",
                   appended.error.c_str());
      return kExitUsage;
    }
    out["audit_entry"] = appended.seq;
    out["audit_hash"] = appended.hash;
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
    row("operation phase:", out["phase"]);
    row("revisions:", "message " + text_of_json(out["message_revision"]) + ", record " +
                          text_of_json(out["record_revision"]));
    std::string secrets;
    for (const std::string& name : r.redacted) {
      secrets += (secrets.empty() ? "" : ", ") + ("<redacted: field " + name + ">");
    }
    row("sensitive fields:", secrets.empty() ? "none present" : secrets);
    text += "decision\n";
    row("action:",
        out["action"].get<std::string>() + " (effect " + out["effect"].get<std::string>() + ")");
    row("in plain words:", out["plain"]);
    row("what it does:", out["verb_description"]);
    row("rule:", out["rule"]);
    row("reason:", out["reason"]);
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
  return kExitOk;
}

}  // namespace

Runner setup_review(CLI::App& sub) {
  auto o = std::make_shared<Options>();
  sub.footer(
      "Print the operator review record for one dead-lettered message: build the policy's input\n"
      "from MESSAGE and the durable operation RECORD (JSON files; mapping in docs/recovery.md),\n"
      "decide, and say in plain words whether the action reads status, copies an existing\n"
      "output or submits new work. Sensitive fields are never printed, only named.\n"
      "MESSAGE and RECORD are single JSON documents, not a dump: review takes no --input-format\n"
      "(decide and explain do) and no --mapping.\n"
      "--confirm sets the operator_confirmed input and appends the decision to the audit log\n"
      "(--audit FILE, --operator NAME required) before printing it.\n"
      "Exit: 0 reviewed (and recorded with --confirm), 1 policy errors or an invalid message or\n"
      "record, 2 usage/I/O errors, or the audit append failed (the decision is not taken).");
  sub.add_option("--policy", o->policy, "Policy file, compiled in memory");
  sub.add_option("--table", o->table, "Compiled table file");
  sub.add_option("--message", o->message, "The dead-lettered message (JSON object)")->required();
  sub.add_option("--record", o->record, "The current operation record (JSON object)")->required();
  sub.add_flag("--confirm", o->confirm, "Confirm as operator: sets operator_confirmed, records");
  CLI::Option* operator_option =
      sub.add_option("--operator", o->operator_name, "Operator name for the audit entry");
  sub.add_option("--audit", o->audit, "Audit log (JSON Lines) to append the decision to");
  sub.add_option("--format", o->format, "text (default) or json");
  return [o, operator_option] {
    o->operator_set = operator_option->count() > 0;
    return run_review(*o);
  };
}

}  // namespace replaygate::cli
