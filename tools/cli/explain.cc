// `replaygate explain (--policy P | --table T) [LETTER_FILE|-]`: why one letter gets its verb.
//
// Reads one JSON letter (the `letters` record format of `decide`, inputs/letters.h; it may span
// several lines) and prints, in order, each rule considered: for a guard each condition evaluated
// up to the first that fails, with the field's value and why it failed (absent, value, bound); for
// a table the key tuple looked up and the row that hit, or none. Then the decision, the verb's
// effect class and description (what it will do), the deciding rule and its reason. An invalid
// input names the field and why it is invalid, and says that the default applies.
//
// The report is built as data by review/explain_report.h (with --policy over the checked IR, with
// --table over the frozen table: the same report, checked against decide()); this file reads the
// letter or dump, renders the report as text or JSON, and owns the messages and exit codes.
// The letter section shows a derived field (compiler/ir.h Derivation) with the value the rules saw,
// the computed one, and its formula; a value the letter gave for it is shown as ignored. So is a
// value the letter gave for an operator-only or record-only field (ir::InputSource): as in
// decide, the field stays unset (the rules see it absent; a required one makes the input invalid).
// With --input-format kafka --mapping M the input is one kcat -J record (input_formats.h): the
// record section shows its coordinates, key and headers (escaped, long values cut), then each
// mapped input with its value and where it came from (KafkaParser::input_origin()).
// Values of sensitive fields (review/sensitive.h: the built-in names, plus the policy's list with
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
#include <vector>

#include "common/escape.h"
#include "compiler/ir.h"
#include "compiler/lower.h"
#include "inputs/formats.h"
#include "inputs/letters.h"
#include "inputs/records.h"
#include "review/explain_report.h"
#include "review/sensitive.h"
#include "runtime/table.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {

using inputs::choose_input_format;
using inputs::input_format_names;
using inputs::InputFormat;
using inputs::InputFormatOptions;
using inputs::kMaxRecordBytes;
using inputs::LetterParser;
using inputs::LineReader;
using inputs::position_of;
using inputs::record_too_large;
using inputs::RecordMeta;
using inputs::RecordParser;
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

// The letter section's line for one field. A derived field shows the value the rules saw (the
// computed one) and its formula; a value the letter gave for it is named as ignored, since
// decide() never reads it.
std::string letter_line_text(const review::LetterLine& line) {
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

// Text from the policy or the table (ids, names, reasons, descriptions, the source path): any
// character the author or a crafted table put there is escaped, so the report keeps its lines.
std::string shown(std::string_view text) { return escape_control(text); }

// Text that quotes string values already escaped (describe_value(), the table's atom labels and
// condition text) but may hold an enum value as written: made safe without doubling the escapes.
std::string safe(std::string_view text) { return escape_control(text, Backslash::kKeep); }

std::string render_text(const review::ExplainReport& r, const std::string& source) {
  std::string out = r.at.empty() ? "" : "message " + r.at + " of the dump\n";
  out += "policy " + shown(r.policy_id) + " revision " + std::to_string(r.revision) + " (" +
         escape_control(source, Backslash::kKeep) + ")\n";
  if (r.mapping.empty()) {
    out += "letter:\n";
  } else {
    out += "record (" + r.input_format + ", mapping " +
           escape_control(r.mapping, Backslash::kKeep) + "):\n";
    for (const review::RecordLine& line : r.record) {
      const bool named = line.part == "header";
      out += "  " + line.part +
             (named ? " " + describe_value(LetterValue::String(line.name)) : std::string()) +
             " = " + safe(line.value) + "\n";
    }
    out += "inputs:\n";
  }
  for (const review::LetterLine& line : r.letter) {
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
    for (const review::RuleStep& s : r.steps) {
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
      for (const review::ConditionStep& c : s.conditions) {
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

std::string render_json(const review::ExplainReport& r, const std::string& source) {
  using Json = nlohmann::ordered_json;
  Json doc;
  if (!r.at.empty()) doc["at"] = r.at;
  doc["policy"] = {{"id", r.policy_id}, {"revision", r.revision}, {"source", source}};
  if (!r.mapping.empty()) {
    Json parts = Json::array();
    for (const review::RecordLine& line : r.record) {
      Json part = {{"part", line.part}};
      if (line.part == "header") part["name"] = line.name;
      part["value"] = line.value;
      parts.push_back(std::move(part));
    }
    doc["record"] = {
        {"format", r.input_format}, {"mapping", r.mapping}, {"parts", std::move(parts)}};
    Json origins = Json::object();
    for (const review::LetterLine& line : r.letter) {
      if (!line.origin.empty()) origins[line.field] = line.origin;
    }
    doc["origins"] = std::move(origins);
  }
  Json letter = Json::object();
  Json derived = Json::object();
  Json operator_only = Json::object();
  Json record_only = Json::object();
  for (const review::LetterLine& line : r.letter) {
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
  for (const review::RuleStep& s : r.steps) {
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
      for (const review::ConditionStep& c : s.conditions) {
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
  const std::set<std::string> sensitive = review::sensitive_names(policy_sensitive);

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
    review::ExplainReport report =
        review::explain_record(*table, checked ? &*checked : nullptr, parser, input, *format,
                               options.input.mapping, sensitive);
    report.at = at;
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
