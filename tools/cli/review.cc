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
// The record is built as data by review/record.h (review/inputs.h, review/mapped.h); this file
// reads the files, claims in the ledger, appends to the audit log, renders the record as text or
// JSON and owns the messages and exit codes.
//
// Input mapping: review/inputs.h (where each input may come from, by the policy's
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
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "audit/entry.h"
#include "common/escape.h"
#include "compiler/compile.h"
#include "compiler/lower.h"
#include "inputs/formats.h"
#include "pipeline/audit_stage.h"
#include "pipeline/gate.h"
#include "review/inputs.h"
#include "review/record.h"
#include "review/sensitive.h"
#include "runtime/table.h"
#include "tools/cli/audit_signing.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/options.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/review_ledger.h"
#include "tools/cli/review_mapped.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

using nlohmann::json;
using review::Documents;
using review::InputLine;
using review::InputUse;
using review::member;
using review::ReviewRecord;
using review::text_of;

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

// "PATH:LINE:COLUMN" of `offset` in `text` (the compiler's diagnostics' form), or PATH when the
// offset is kNoOffset.
std::string place(const std::string& path, std::string_view text, size_t offset) {
  if (offset == kNoOffset) return path;
  const TextPosition at = position_of(text, offset);
  return path + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
}

// Reads a JSON object from `path` into *out (review::parse_document()), and its text into
// *text_out. Returns 0, 1 (not a JSON object: an invalid record) or 2 (I/O).
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
  if (const review::DocumentProblem problem = review::parse_document(text, out);
      !problem.what.empty()) {
    std::fprintf(stderr, "replaygate: invalid %s: %s: %s\n", what,
                 place(path, text, problem.offset).c_str(), problem.what.c_str());
    return kExitFindings;
  }
  *text_out = std::move(text);
  return kExitOk;
}

// The text record's "inputs" section: one line per input with the value the policy used and
// where it came from, and a line for each ignored value.
std::string inputs_text(const std::vector<InputLine>& inputs) {
  size_t width = 22;
  for (const InputLine& item : inputs) width = std::max(width, item.name.size() + 3);
  const auto shown_value = [](const json& v) {
    return v.is_string() && v.get_ref<const std::string&>().starts_with("<") ? v.get<std::string>()
                                                                             : v.dump();
  };
  std::string out = "inputs (the value the policy used, and where it came from)\n";
  for (const InputLine& item : inputs) {
    const std::string label = item.name + ":";
    const std::string only = item.source == "record"     ? "; record-only"
                             : item.source == "operator" ? "; operator-only"
                                                         : "";
    std::string line;
    if (item.source == "derived") {
      line =
          (item.missing ? std::string("<not computed: the input is invalid>") : item.value.dump()) +
          " (derived: " + item.formula + ")";
    } else if (item.missing) {
      line = "<missing> (" + (only.empty() ? std::string() : only.substr(2) + "; ") +
             item.unset_because + ")";
    } else if (item.from == "--confirm" && item.value == false) {
      line = "false (no --confirm" + only + ")";
    } else {
      line = shown_value(item.value) + " (from " + item.from + only + ")";
    }
    out += "  " + label + std::string(width - label.size(), ' ') + escape_control(line) + "\n";
    for (const review::IgnoredValue& offer : item.ignored) {
      out += "  " + std::string(width, ' ') +
             escape_control("ignored: " + offer.from + " = " + shown_value(offer.value) + " (" +
                            offer.why + ")") +
             "\n";
    }
  }
  return out;
}

// The JSON record (one object; nlohmann writes its keys sorted).
json record_json(const ReviewRecord& rec) {
  json out;
  out["message_id"] = rec.message_id;
  out["operation_id"] = rec.operation_id;
  out["action_type"] = rec.action_type;
  out["attempt_count"] = rec.attempt_count;
  out["last_error_category"] = rec.last_error_category;
  out["remote_job_id"] = rec.remote_job_id;
  out["phase"] = rec.phase;
  out["message_revision"] = rec.message_revision;
  out["record_revision"] = rec.record_revision;
  out["redacted"] = rec.redacted;
  json inputs = json::array();
  for (const InputLine& item : rec.inputs) {
    json j;
    j["name"] = item.name;
    j["source"] = item.source;
    j["value"] = item.value;
    j["missing"] = item.missing;
    j["from"] = item.from.empty() ? json() : json(item.from);
    if (item.source == "derived") j["formula"] = item.formula;
    if (item.source != "derived" && !item.unset_because.empty()) {
      j["unset_because"] = item.unset_because;
    }
    json ignored = json::array();
    for (const review::IgnoredValue& offer : item.ignored) {
      ignored.push_back({{"from", offer.from}, {"value", offer.value}, {"why", offer.why}});
    }
    j["ignored"] = std::move(ignored);
    inputs.push_back(std::move(j));
  }
  out["inputs"] = std::move(inputs);
  out["action"] = rec.action;
  out["effect"] = rec.effect;
  out["plain"] = rec.plain;
  out["verb_description"] = rec.verb_description;
  out["rule"] = rec.rule;
  out["reason"] = rec.reason;
  if (rec.claimed) out["claimed"] = *rec.claimed;
  out["policy"] = rec.policy;
  out["policy_revision"] = rec.policy_revision;
  out["table_checksum"] = rec.table_checksum;
  out["confirmed"] = rec.confirmed;
  if (rec.mapped) {
    out["input_format"] = rec.input_format;
    out["mapping"] = rec.mapping;
    if (!rec.invalid_message.empty()) out["invalid_message"] = rec.invalid_message;
  }
  if (rec.audit_entry) {
    out["audit_entry"] = *rec.audit_entry;
    out["audit_hash"] = rec.audit_hash;
  }
  return out;
}

// A printable form of a JSON value for the text record ("" for null).
std::string text_of_json(const json& value) { return text_of(&value); }

// The text record. Every value is escaped (escape_control): a message field holding a newline or
// an escape sequence cannot add a line to the record or drive the terminal.
std::string record_text(const ReviewRecord& rec, const ReviewClaim& claim, const Options& o) {
  std::string text;
  auto row = [&text](const char* label, const std::string& value) {
    text += std::string("  ") + label + std::string(22 - std::string(label).size(), ' ') +
            (value.empty() ? "-" : escape_control(value)) + "\n";
  };
  text += "review record\n";
  row("message id:", rec.message_id);
  row("operation id:", rec.operation_id);
  row("action type:", rec.action_type);
  row("attempt count:", text_of_json(rec.attempt_count));
  row("last error category:", rec.last_error_category);
  row("known remote job id:", rec.remote_job_id);
  row("operation phase:",
      rec.phase + (rec.phase_from.empty() ? std::string() : " (from " + rec.phase_from + ")"));
  row("revisions:", "message " + text_of_json(rec.message_revision) + ", record " +
                        text_of_json(rec.record_revision));
  std::string secrets;
  for (const std::string& name : rec.redacted) {
    secrets += (secrets.empty() ? "" : ", ") + ("<redacted: field " + name + ">");
  }
  row("sensitive fields:", secrets.empty() ? "none present" : secrets);
  text += inputs_text(rec.inputs);
  text += "decision\n";
  row("action:", rec.action + " (effect " + rec.effect + ")");
  row("in plain words:", rec.plain);
  row("what it does:", rec.verb_description);
  row("rule:", rec.rule);
  row("reason:", rec.reason);
  if (rec.claimed) {
    row("ledger:",
        (claim.claimed ? "claimed by input " : "not claimed by anyone yet (no --confirm), input ") +
            claim.key_input + " in " + claim.ledger);
  }
  row("policy:", rec.policy + " revision " + std::to_string(rec.policy_revision) + ", table " +
                     rec.table_checksum);
  if (rec.audit_entry) {
    row("confirmed:", "yes, by " + o.operator_name + "; audit entry " +
                          std::to_string(*rec.audit_entry) + " (hash " + rec.audit_hash + ") in " +
                          o.audit);
  } else {
    row("confirmed:", "no (review only; nothing recorded; --confirm to record and act)");
  }
  return text;
}

// The stderr warning, "" when none, for the create decisions the audit log at `path` already
// holds for the message or operation of `rec` (review::earlier_creates()): a second create would
// submit the work again. It names the first such entry (when and by whom), any later ones and the
// results recorded for them. A log that cannot be read gives no warning here (the append reports
// it).
std::string earlier_create_warning(const std::string& path, const ReviewRecord& rec) {
  std::string text, error;
  if (!read_whole_file(path, size_t{1} << 30, &text, &error)) return "";
  const review::EarlierCreates found =
      review::earlier_creates(text, rec.message_id, rec.operation_id);
  if (found.decisions.empty()) return "";
  const audit::ReadEntry& first = found.decisions.front();
  const auto value = [](const json& v) {
    if (v.is_null()) return std::string("-");
    return escape_control(v.is_string() ? v.get<std::string>() : v.dump());
  };
  const auto word = [](const std::string& s) { return s.empty() ? "-" : escape_control(s); };
  const auto seq = [](const audit::ReadEntry& e) {
    return e.seq ? std::to_string(*e.seq) : std::string("null");
  };
  std::string w = "replaygate: warning: " + escape_control(path) +
                  " already records a create decision for this " +
                  (found.same_message ? "message" : "operation") + " (message " +
                  value(first.decision.message_id) + ", operation " +
                  value(first.decision.operation_id) + "): entry " +
                  (first.seq ? seq(first) : std::string("-")) + ", " + word(first.decision.action) +
                  " (rule " + word(first.decision.rule) + "), recorded " +
                  word(first.decision.time) + " by " + word(first.decision.operator_name);
  if (found.decisions.size() > 1) {
    w += "; later also entries";
    for (size_t i = 1; i < found.decisions.size(); ++i) {
      w += (i > 1 ? ", " : " ") + seq(found.decisions[i]);
    }
  }
  w += found.results.empty() ? std::string("; no result is recorded for ") +
                                   (found.decisions.size() > 1 ? "them" : "it")
                             : "; results recorded: ";
  for (size_t i = 0; i < found.results.size(); ++i) w += (i ? "; " : "") + found.results[i];
  w += "\nreplaygate: warning: this review records another create decision: acting on it "
       "submits the work again; check the operation record and the audit log before acting\n";
  return w;
}

// The checks of the options alone. Returns 0 with *format chosen, or 2 (said on stderr).
int check_options(const Options& o, const inputs::InputFormat** format) {
  if (o.format != "text" && o.format != "json") {
    std::fprintf(stderr, "replaygate: error: --format must be text or json\n");
    return kExitUsage;
  }
  if (o.policy.empty() == o.table.empty()) {
    std::fprintf(stderr, "replaygate: error: give exactly one of --policy and --table\n");
    return kExitUsage;
  }
  std::string format_error;
  *format = inputs::choose_input_format(o.input, &format_error);
  if (*format == nullptr) {
    std::fprintf(stderr, "replaygate: error: %s\nRun 'replaygate review --help' for usage.\n",
                 format_error.c_str());
    return kExitUsage;
  }
  const bool mapped_format = !(*format)->mapping_format.empty();
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
  return kExitOk;
}

// As for decide --audit: an append into the message or record file would first take its
// unterminated last line for a torn entry. Refused (2) before anything is read.
int check_audit_file(const Options& o) {
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
  return kExitOk;
}

// Loads the policy (adding its `sensitive` names to docs->sensitive) or the table into *table.
int load_table(const Options& o, std::unique_ptr<Table>* table, Documents* docs) {
  if (!o.policy.empty()) {
    LoadedPolicy loaded;
    const int code = load_policy_reporting(o.policy, DiagnosticFormat::kText, &loaded);
    if (code != kExitOk) return code;
    for (const std::string& name : loaded.policy->policy.sensitive) docs->sensitive.insert(name);
    const std::vector<uint8_t> bytes = lower(*loaded.policy);
    LoadStatus status;
    *table = Table::load_bytes(bytes.data(), bytes.size(), &status);
    if (*table == nullptr) {
      std::fprintf(stderr, "%s\n", describe_load_failure(o.policy, status).c_str());
      return kExitUsage;
    }
  } else if (const int code = open_table("", o.table, table, nullptr, &o.trust); code != kExitOk) {
    return code;
  } else {
    docs->table_only = true;  // no `sensitive` list: redact every string (Documents::table_only)
  }
  return kExitOk;
}

// Reads the message (through the mapping into *mapped, with a mapped --input-format) and the
// operation record into *docs and checks them. Returns 0, 1 (an invalid message or record) or 2.
int read_documents(const Options& o, const inputs::InputFormat& format, const Table& table,
                   Documents* docs, MappedMessage* mapped) {
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
  if (!format.mapping_format.empty()) {
    if (int code =
            read_mapped_message(format, o.input.mapping, o.message, o.message_id, table, mapped);
        code != kExitOk) {
      return code;
    }
    docs->message = mapped->message;
    message_text = docs->message.dump();
  } else if (int code = read_object(o.message, "message", &docs->message, &message_text);
             code != kExitOk) {
    return code;
  }
  if (int code = read_object(o.record, "operation record", &docs->record, &record_text);
      code != kExitOk) {
    return code;
  }
  review::name_redacted(docs);
  for (const auto& [doc, what, path, text] :
       {std::tuple{&docs->message, "message", &o.message, &message_text},
        std::tuple{&docs->record, "operation record", &o.record, &record_text}}) {
    std::vector<std::string> where;
    if (const std::string why = review::non_scalar_identifier(*doc, doc == &docs->message, &where);
        !why.empty()) {
      // At the offending value, found again in the text (an error path).
      const std::string shown = place(*path, *text, locate_member_value(*text, where));
      std::fprintf(stderr, "replaygate: invalid %s: %s: %s (nothing decided, nothing recorded)\n",
                   what, shown.c_str(), why.c_str());
      return kExitFindings;
    }
  }
  const std::string message_op = text_of(member(docs->message, "operation_id"));
  const std::string record_op = text_of(member(docs->record, "operation_id"));
  if (!message_op.empty() && !record_op.empty() && message_op != record_op) {
    std::fprintf(stderr,
                 "replaygate: the message and the operation record name different operations\n");
    return kExitFindings;
  }
  return kExitOk;
}

// The action the record shows, and why.
struct Decided {
  uint32_t verb = 0;
  std::string rule, reason;
};

// The decision for `docs`: the inputs mapped (through the mapping when `mapped_format`) and set
// (*uses, *input, *keep), decided; a mapped record that could not be read gets the policy default,
// as in decide (nothing it holds may choose the action). With --ledger a create decision is then
// claimed (with --confirm) or looked up (*claim) before anything is recorded or printed; a hold
// replaces it with the default (write-ahead, fail closed). Returns 0 or 2 (standard output cannot
// take the record).
int decide_and_claim(const Options& o, const Table& table, const Documents& docs,
                     bool mapped_format, const MappedMessage& mapped, Input* input,
                     std::vector<InputUse>* uses, std::vector<std::string>* keep, Decided* out,
                     ReviewClaim* claim) {
  static const json kConfirmed = true, kNotConfirmed = false;
  *uses = review::map_review_inputs(table, docs.message, docs.record,
                                    o.confirm ? kConfirmed : kNotConfirmed);
  const std::vector<uint32_t> invalid =
      mapped_format ? review::attribute_to_mapping(mapped, uses) : std::vector<uint32_t>{};
  review::set_inputs(*uses, input, keep);
  for (const uint32_t field : invalid) input->set_invalid(field);
  const Decision d = pipeline::decide_one(table, *input);
  out->verb = d.verb;
  out->rule = table.rule_name(d);
  out->reason = table.reason(d);
  if (!mapped.problem.empty()) {
    out->verb = table.default_verb();
    out->rule = "default";
    out->reason = mapped.problem;
  }
  if (o.ledger.empty() || table.verb_effect(out->verb) != Effect::kCreate) return kExitOk;
  if (o.confirm) {
    if (const std::string why = stdout_unwritable(); !why.empty()) {
      std::fprintf(stderr,
                   "replaygate: cannot write the review record to standard output: %s; nothing "
                   "claimed or recorded\n",
                   why.c_str());
      return kExitUsage;
    }
  }
  *claim = claim_review(table, d, *uses, text_of(member(docs.message, "message_id")),
                        {o.ledger, o.ledger_scope, !o.confirm});
  if (!claim->granted) {
    out->verb = table.default_verb();
    out->rule = claim->rule;
    out->reason = claim->reason;
  }
  return kExitOk;
}

// With --confirm the decision is recorded before it is printed: standard output must be open for
// writing first, so a closed or read-only one records nothing (as for decide --audit). The entry
// goes through the gate's audit stage, as decide's do (one writer, one append). Sets
// rec->audit_entry and audit_hash; returns 0 or 2.
int record_decision(const Options& o, const Table& table, const AuditSigning& signing,
                    ReviewRecord* rec, ReviewClaim* claim) {
  if (const std::string why = stdout_unwritable(); !why.empty()) {
    std::fprintf(stderr,
                 "replaygate: cannot write the review record to standard output: %s; nothing "
                 "recorded\n",
                 why.c_str());
    return kExitUsage;
  }
  // Read before the append, so that this review's own entry is not the earlier one.
  const std::string repeated = table.verb_effect(rec->verb) == Effect::kCreate
                                   ? earlier_create_warning(o.audit, *rec)
                                   : std::string();
  audit::DecisionEntry entry =
      pipeline::decision_entry(table, rec->verb, rec->rule, table.checksum_hex());
  entry.message_id = rec->message_id;
  entry.operation_id = rec->operation_id;
  entry.record_revision = rec->record_revision;
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
  rec->audit_entry = stage.last_seq();
  rec->audit_hash = stage.last_hash();
  if (claim->claimed) claim->mark_recorded();  // the claim's audit entry is on record
  std::fputs(repeated.c_str(), stderr);
  return kExitOk;
}

int run_review(const Options& o) {
  const inputs::InputFormat* format = nullptr;
  if (const int code = check_options(o, &format); code != kExitOk) return code;
  AuditSigning signing;
  if (!read_audit_signing(o.audit_sign, "review", &signing)) return kExitUsage;
  if (const int code = check_audit_file(o); code != kExitOk) return code;
  Documents docs;
  docs.sensitive = review::builtin_sensitive_names();  // secret whatever the policy says
  std::unique_ptr<Table> table;
  if (const int code = load_table(o, &table, &docs); code != kExitOk) return code;
  MappedMessage mapped;
  if (const int code = read_documents(o, *format, *table, &docs, &mapped); code != kExitOk) {
    return code;
  }
  Input input(*table);
  std::vector<std::string> keep;
  keep.reserve(table->field_count() + 1);  // string_views into `keep` must not move
  std::vector<InputUse> uses;
  Decided decided;
  ReviewClaim claim;
  if (const int code = decide_and_claim(o, *table, docs, !format->mapping_format.empty(), mapped,
                                        &input, &uses, &keep, &decided, &claim);
      code != kExitOk) {
    return code;
  }
  ReviewRecord rec =
      review::build_record(*table, docs, input, uses, decided.verb, decided.rule, decided.reason);
  if (claim.stage != nullptr && claim.granted) rec.claimed = claim.claimed;
  rec.confirmed = o.confirm;
  if (!format->mapping_format.empty()) {
    rec.mapped = true;
    rec.input_format = std::string(format->name);
    rec.mapping = o.input.mapping;
    rec.invalid_message = mapped.problem;
  }
  if (o.confirm) {
    if (const int code = record_decision(o, *table, signing, &rec, &claim); code != kExitOk) {
      return code;
    }
  }
  const std::string text =
      o.format == "json" ? record_json(rec).dump() + "\n" : record_text(rec, claim, o);
  if (!print_to_stdout(text, "the review record")) {
    if (o.confirm) {
      std::fprintf(stderr,
                   "replaygate: the decision IS recorded, as audit entry %llu in %s, but this "
                   "review record was NOT printed\n",
                   static_cast<unsigned long long>(*rec.audit_entry), o.audit.c_str());
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
