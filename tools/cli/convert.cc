// `replaygate convert IN [-o OUT] [--to yaml|policy|json] [--kind policy|cases|mapping]
// [--policy P]`: a policy in one syntax -> the other, or a policy, a test-case file or a mapping
// file -> the JSON document of what replaygate's reader understood (checks/json_export.h).
// The input is compiled first (front-end, check, analysis); the output is printed from the IR and
// read back in memory through the other front-end before anything is written: a text that would
// not compile to the same IR (an id the policy language cannot write, a line over the length
// limit, bytes YAML refuses) is refused. YAML comments are lost (yaml-cpp does not report them).
// A JSON export is not read back (replaygate reads no JSON policy); what YAML cannot hold, JSON
// cannot either, and is refused alike. Case and mapping files are read against --policy, as
// `test` and `decide --mapping` read them: a file with errors exports nothing (exit 1).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "checks/case_file.h"
#include "checks/json_export.h"
#include "common/utf8.h"
#include "common/yaml_tree.h"
#include "compiler/lower.h"
#include "compiler/syntax/dsl_policy.h"
#include "compiler/syntax/print_dsl.h"
#include "compiler/syntax/print_yaml.h"
#include "runtime/table_format.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"

namespace replaygate::cli {

using checks::CaseFile;
using checks::cases_json;
using checks::kMaxCaseFileBytes;
using checks::mapping_json;
using checks::policy_json;
using checks::read_case_file;
namespace {

struct ConvertOptions {
  std::string input;
  std::string output;
  std::string to;
  std::string kind = "policy";
  std::string policy;  // --kind cases|mapping: the policy the file is read against
};

std::string kind_of(const std::string& path) {
  const std::string extension = std::filesystem::path(path).extension().string();
  if (extension == ".policy") return "policy";
  if (extension == ".yaml" || extension == ".yml") return "yaml";
  if (extension == ".json") return "json";
  return "";
}

// Writes `document` (2-space indents, UTF-8 kept) to `output`, or to standard output when empty.
int write_json(const nlohmann::ordered_json& document, const std::string& output,
               const char* what) {
  const std::string text =
      document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  if (output.empty()) return print_to_stdout(text, what) ? kExitOk : kExitUsage;
  std::string error;
  if (!write_file_atomically(output, text, &error)) {
    std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
    return kExitUsage;
  }
  return kExitOk;
}

// The policy a case or mapping file is read against, compiled and lowered as `test` and `decide
// --policy` do; its diagnostics are reported. Returns the exit code (0: *checked and *table set).
int load_policy_and_table(const std::string& path, LoadedPolicy* loaded,
                          std::unique_ptr<Table>* table) {
  const int code = load_policy_reporting(path, DiagnosticFormat::kText, loaded);
  if (code != kExitOk) return code;
  const std::vector<uint8_t> bytes = lower(*loaded->policy);
  LoadStatus status;
  *table = Table::load_bytes(bytes.data(), bytes.size(), &status);
  if (*table == nullptr) {
    std::fprintf(stderr, "replaygate: internal error: the table compiled from %s does not load\n",
                 path.c_str());
    return kExitUsage;
  }
  return kExitOk;
}

// `convert --kind cases --to json FILE --policy P`: the case file as `test P FILE` reads it.
int export_cases(const ConvertOptions& options) {
  LoadedPolicy loaded;
  std::unique_ptr<Table> table;
  if (const int code = load_policy_and_table(options.policy, &loaded, &table); code != kExitOk) {
    return code;
  }
  std::string text, io_error;
  if (!read_whole_file(options.input, kMaxCaseFileBytes, &text, &io_error)) {
    std::fprintf(stderr, "replaygate: %s\n", io_error.c_str());
    return kExitUsage;
  }
  const yaml::Document document = yaml::parse(text, options.input);
  std::vector<Diagnostic> diagnostics = document.diagnostics;
  CaseFile file;
  if (document.ok()) {
    file = read_case_file(document.root, options.input, options.policy, *table,
                          loaded.policy->policy, &diagnostics);
  }
  sort_diagnostics(diagnostics);
  report_diagnostics(diagnostics, text, DiagnosticFormat::kText);
  if (has_errors(diagnostics)) return kExitFindings;
  return write_json(cases_json(file, *table), options.output, "the exported case file");
}

// `convert --kind mapping --to json FILE --policy P`: the mapping as `decide --mapping` reads it.
int export_mapping(const ConvertOptions& options) {
  LoadedPolicy loaded;
  std::unique_ptr<Table> table;
  if (const int code = load_policy_and_table(options.policy, &loaded, &table); code != kExitOk) {
    return code;
  }
  const LoadedMapping mapping = load_mapping_file(options.input, *table);
  if (mapping.io_error) {
    std::fprintf(stderr, "replaygate: %s\n", mapping.io_message.c_str());
    return kExitUsage;
  }
  report_diagnostics(mapping.diagnostics, mapping.source_text, DiagnosticFormat::kText);
  if (has_errors(mapping.diagnostics)) return kExitFindings;
  return write_json(mapping_json(mapping.mapping), options.output, "the exported mapping");
}

// "t.yaml:14:9": where `span` is in the input (the path alone when the position is unknown).
std::string where(const ir::SourceMap& source, const std::vector<ir::Span>& spans, size_t i) {
  const ir::Span span = i < spans.size() ? spans[i] : ir::Span{};
  if (span.line == 0) return source.path;
  return source.path + ":" + std::to_string(span.line) + ":" + std::to_string(span.column);
}
std::string where(const ir::SourceMap& source, const ir::Span& span) {
  return where(source, std::vector<ir::Span>{span}, 0);
}
const std::vector<ir::Span>& spans_of(const std::vector<std::vector<ir::Span>>& spans, size_t i) {
  static const std::vector<ir::Span> kNone;
  return i < spans.size() ? spans[i] : kNone;
}

// The policy language writes rule, table, row and invariant ids as bare names (it has no quoted
// form for them), so an id the YAML front-end accepts, such as 'r#x' or 'a:b', would read back as
// another id or not at all. The first such id print_dsl() would write, named with its position.
std::string id_the_dsl_cannot_write(const ir::CheckedPolicy& checked) {
  const ast::Policy printed = to_ast(checked.policy);
  const ir::SourceMap& s = checked.source;
  const auto quoted = [](const std::string& id) { return "'" + id + "'"; };
  const std::string cannot = " cannot be written in the policy language as it is";
  for (size_t r = 0; printed.rules && r < printed.rules->size(); ++r) {
    const ast::Rule& rule = (*printed.rules)[r];
    if (rule.kind == ast::Rule::Kind::kGuard) {
      if (!dsl::is_name_token(rule.guard.id.text)) {
        return "rule id " + quoted(rule.guard.id.text) + " (" + where(s, s.rules, r) + ")" + cannot;
      }
      continue;
    }
    if (!dsl::is_name_token(rule.table.id.text)) {
      return "table id " + quoted(rule.table.id.text) + " (" + where(s, s.rules, r) + ")" + cannot;
    }
    for (size_t i = 0; rule.table.rows && i < rule.table.rows->size(); ++i) {
      const std::optional<ast::Name>& id = (*rule.table.rows)[i].id;
      if (id && !dsl::is_name_token(id->text)) {
        return "row id " + quoted(id->text) + " (" + where(s, spans_of(s.rows, r), i) + ")" +
               cannot;
      }
    }
  }
  for (size_t n = 0; n < printed.invariants.size(); ++n) {
    if (!dsl::is_name_token(printed.invariants[n].id.text)) {
      return "invariant id " + quoted(printed.invariants[n].id.text) + " (" +
             where(s, s.invariants, n) + ")" + cannot;
    }
  }
  return "";
}

// YAML files must be UTF-8 (RG009), while a .policy string may hold any byte (the \xHH escape).
// The first text of the policy that is not UTF-8, named with its position and the bad byte.
std::string text_yaml_cannot_hold(const ir::CheckedPolicy& checked) {
  const ir::Policy& p = checked.policy;
  const ir::SourceMap& s = checked.source;
  std::string found;
  const auto check = [&](const std::string& text, const std::string& what, const std::string& at) {
    if (!found.empty()) return;
    const size_t bad = first_invalid_utf8(text);
    if (bad == std::string::npos) return;
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(text[bad]));
    found = what + " (" + at + ") is not valid UTF-8 (byte " + hex + "), which YAML cannot hold";
  };
  const auto check_values = [&](const std::vector<ir::Condition>& conditions,
                                const std::string& what, const std::vector<ir::Span>& spans,
                                const std::string& fallback) {
    for (size_t c = 0; c < conditions.size(); ++c) {
      const std::string at = c < spans.size() && spans[c].line > 0 ? where(s, spans, c) : fallback;
      for (const ir::Value& v : conditions[c].values) check(v.str, "a value in " + what, at);
    }
  };
  const std::string header = where(s, s.policy);
  check(p.id, "the policy id", header);
  check(p.description, "the policy's description", header);
  for (const std::string& name : p.sensitive) check(name, "a sensitive field name", header);
  for (size_t f = 0; f < p.fields.size(); ++f) {
    const ir::Field& field = p.fields[f];
    const std::string at = where(s, s.fields, f);
    check(field.description, "the description of input '" + field.name + "'", at);
    for (const std::string& v : field.enum_values)
      check(v, "a value of input '" + field.name + "'", at);
    for (const std::string& v : field.domain) check(v, "a value of input '" + field.name + "'", at);
  }
  for (size_t v = 0; v < p.verbs.size(); ++v) {
    check(p.verbs[v].description, "the description of verb '" + p.verbs[v].name + "'",
          where(s, s.verbs, v));
  }
  check(p.default_reason, "the default reason", where(s, s.default_verb));
  for (size_t r = 0; r < p.rules.size(); ++r) {
    const std::string at = where(s, s.rules, r);
    if (const auto* g = std::get_if<ir::Guard>(&p.rules[r])) {
      check(g->reason, "the reason of rule '" + g->id + "'", at);
      check_values(g->conditions, "rule '" + g->id + "'", spans_of(s.conditions, r), at);
      continue;
    }
    const auto& t = std::get<ir::Table>(p.rules[r]);
    for (size_t i = 0; i < t.rows.size(); ++i) {
      const std::string row_at = where(s, spans_of(s.rows, r), i);
      for (const auto& key : t.rows[i].keys) {
        if (key) check(key->str, "a key of row '" + t.rows[i].id + "'", row_at);
      }
      check(t.rows[i].reason, "the reason of row '" + t.rows[i].id + "'", row_at);
    }
  }
  for (size_t n = 0; n < p.invariants.size(); ++n) {
    const ir::Invariant& inv = p.invariants[n];
    const std::string at = where(s, s.invariants, n);
    check(inv.reason, "the reason of invariant '" + inv.id + "'", at);
    check_values(inv.conditions, "invariant '" + inv.id + "'", spans_of(s.invariant_conditions, n),
                 at);
  }
  return found;
}

// print_yaml() groups the conditions of a guard or an invariant on one field under that field,
// in the order of the field's first condition (see print_yaml.h): the IR the YAML form reads back
// as. Every other part of the policy reads back unchanged.
void group_conditions_by_field(std::vector<ir::Condition>& conditions) {
  std::vector<uint32_t> order;
  for (const ir::Condition& c : conditions) {
    if (std::find(order.begin(), order.end(), c.field) == order.end()) order.push_back(c.field);
  }
  std::stable_sort(conditions.begin(), conditions.end(),
                   [&](const ir::Condition& a, const ir::Condition& b) {
                     return std::find(order.begin(), order.end(), a.field) <
                            std::find(order.begin(), order.end(), b.field);
                   });
}
ir::Policy as_yaml_reads_it(ir::Policy policy) {
  for (ir::Rule& rule : policy.rules) {
    if (auto* g = std::get_if<ir::Guard>(&rule)) group_conditions_by_field(g->conditions);
  }
  for (ir::Invariant& n : policy.invariants) group_conditions_by_field(n.conditions);
  return policy;
}

// The first part of `want` (the input, with its positions) that `got` (the converted text read
// back) differs in, in source order: "row id 'r#x' (t.yaml:14:9) would read back as 'r'".
std::string first_difference(const ir::CheckedPolicy& checked, const ir::Policy& want,
                             const ir::Policy& got) {
  const ir::SourceMap& s = checked.source;
  const auto renamed = [](const std::string& what, const std::string& id, const std::string& at,
                          const std::string& other) {
    return what + " '" + id + "' (" + at + ") would read back as '" + other + "'";
  };
  const auto changed = [](const std::string& what, const std::string& at) {
    return what + " (" + at + ") would read back differently";
  };
  if (want.id != got.id || want.revision != got.revision || want.description != got.description ||
      want.sensitive != got.sensitive) {
    return changed("the policy header", where(s, s.policy));
  }
  for (size_t f = 0; f < want.fields.size(); ++f) {
    if (f >= got.fields.size() || !(want.fields[f] == got.fields[f])) {
      return changed("input '" + want.fields[f].name + "'", where(s, s.fields, f));
    }
  }
  for (size_t v = 0; v < want.verbs.size(); ++v) {
    if (v >= got.verbs.size() || !(want.verbs[v] == got.verbs[v])) {
      return changed("verb '" + want.verbs[v].name + "'", where(s, s.verbs, v));
    }
  }
  if (want.default_verb != got.default_verb || want.default_reason != got.default_reason) {
    return changed("the default", where(s, s.default_verb));
  }
  for (size_t c = 0; c < want.constants.size(); ++c) {
    if (c >= got.constants.size() || !(want.constants[c] == got.constants[c])) {
      return changed("constant '" + want.constants[c].name + "'", where(s, s.constants, c));
    }
  }
  for (size_t r = 0; r < want.rules.size(); ++r) {
    const std::string at = where(s, s.rules, r);
    const auto* wg = std::get_if<ir::Guard>(&want.rules[r]);
    const auto* wt = std::get_if<ir::Table>(&want.rules[r]);
    const std::string& id = wg != nullptr ? wg->id : wt->id;
    const std::string what = wg != nullptr ? "rule" : "table";
    if (r >= got.rules.size() || got.rules[r].index() != want.rules[r].index()) {
      return changed(what + " '" + id + "'", at);
    }
    if (wg != nullptr) {
      const auto& gg = std::get<ir::Guard>(got.rules[r]);
      if (gg.id != wg->id) return renamed("rule id", wg->id, at, gg.id);
      if (!(gg == *wg)) return changed("rule '" + id + "'", at);
      continue;
    }
    const auto& gt = std::get<ir::Table>(got.rules[r]);
    if (gt.id != wt->id) return renamed("table id", wt->id, at, gt.id);
    for (size_t i = 0; i < wt->rows.size(); ++i) {
      const std::string row_at = where(s, spans_of(s.rows, r), i);
      if (i >= gt.rows.size()) return changed("row '" + wt->rows[i].id + "'", row_at);
      if (gt.rows[i].id != wt->rows[i].id) {
        return renamed("row id", wt->rows[i].id, row_at, gt.rows[i].id);
      }
      if (!(gt.rows[i] == wt->rows[i])) return changed("row '" + wt->rows[i].id + "'", row_at);
    }
    if (!(gt == *wt)) return changed("table '" + id + "'", at);
  }
  for (size_t n = 0; n < want.invariants.size(); ++n) {
    if (n >= got.invariants.size() || !(want.invariants[n] == got.invariants[n])) {
      return changed("invariant '" + want.invariants[n].id + "'", where(s, s.invariants, n));
    }
  }
  return changed("the policy", s.path);
}

std::array<uint8_t, 16> decision_digest(const ir::CheckedPolicy& checked) {
  const std::vector<uint8_t> bytes = lower(checked);
  format::Header header;
  std::memcpy(&header, bytes.data(), sizeof header);
  std::array<uint8_t, 16> digest;
  std::memcpy(digest.data(), header.decision_digest, digest.size());
  return digest;
}

// Reads `text` (the converted policy, in syntax `to`) back through the other front-end and checks
// it is the input's policy: no error, the same IR (up to the YAML grouping of conditions) and the
// same decision digest. On a mismatch `*problem` says what would change and where.
bool reads_back(const ir::CheckedPolicy& checked, const std::string& to, const std::string& text,
                const std::string& output, std::string* problem) {
  const std::string extension = to == "yaml" ? ".yaml" : ".policy";
  const LoadedPolicy back = load_policy_text(text, "converted" + extension);
  for (const Diagnostic& d : back.diagnostics) {
    if (d.severity != Severity::kError) continue;
    std::string at = output.empty() ? "line " : output + ":";
    if (d.span.line > 0) {
      at += std::to_string(d.span.line) + ":" + std::to_string(d.span.column);
    } else if (output.empty()) {
      at = "(stdout)";
    }
    *problem =
        "the converted text does not read back: " + at + ": error[" + d.code + "]: " + d.message;
    return false;
  }
  if (!back.policy) {  // an error-free load always has a policy; refuse rather than trust it
    *problem = "the converted text does not read back";
    return false;
  }
  ir::CheckedPolicy want = checked;
  if (to == "yaml") want.policy = as_yaml_reads_it(std::move(want.policy));
  if (!(back.policy->policy == want.policy)) {
    *problem = first_difference(checked, want.policy, back.policy->policy);
    return false;
  }
  if (decision_digest(*back.policy) != decision_digest(want)) {
    *problem = "the converted text reads back with another decision digest";
    return false;
  }
  return true;
}

int run_convert(const ConvertOptions& options) {
  std::string to = options.to;
  if (!to.empty() && to != "yaml" && to != "policy" && to != "json") {
    std::fprintf(stderr, "replaygate: error: --to must be yaml, policy or json, not '%s'\n",
                 to.c_str());
    return kExitUsage;
  }
  const std::string& kind = options.kind;
  if (kind != "policy" && kind != "cases" && kind != "mapping") {
    std::fprintf(stderr, "replaygate: error: --kind must be policy, cases or mapping, not '%s'\n",
                 kind.c_str());
    return kExitUsage;
  }
  if (kind != "policy") {
    // A case or mapping file has one export: what its reader understood, as JSON.
    if (!to.empty() && to != "json") {
      std::fprintf(stderr,
                   "replaygate: error: --kind %s converts only --to json, not '%s'\n"
                   "      = hint: case and mapping files are YAML already; --to json exports "
                   "what replaygate reads in them\n",
                   kind.c_str(), to.c_str());
      return kExitUsage;
    }
    to = "json";
    if (options.policy.empty()) {
      std::fprintf(stderr,
                   "replaygate: error: --kind %s needs --policy FILE: the %s file is read "
                   "against the policy's inputs, verbs and rules\n",
                   kind.c_str(), kind == "cases" ? "case" : "mapping");
      return kExitUsage;
    }
  } else if (!options.policy.empty()) {
    std::fprintf(stderr,
                 "replaygate: error: --policy applies to --kind cases and --kind mapping; a "
                 "policy converts on its own\n");
    return kExitUsage;
  }
  if (!options.output.empty()) {
    const std::string by_extension = kind_of(options.output);
    if (by_extension.empty()) {
      std::fprintf(stderr,
                   "replaygate: error: the output '%s' must end in .policy, .yaml, .yml or "
                   ".json\n",
                   options.output.c_str());
      return kExitUsage;
    }
    if (kind != "policy" && by_extension != "json") {
      std::fprintf(stderr,
                   "replaygate: error: --kind %s writes JSON: the output '%s' must end in "
                   ".json\n",
                   kind.c_str(), options.output.c_str());
      return kExitUsage;
    }
    if (!to.empty() && to != by_extension) {
      std::fprintf(stderr, "replaygate: error: --to %s contradicts the output file name '%s'\n",
                   to.c_str(), options.output.c_str());
      return kExitUsage;
    }
    to = by_extension;
  }
  if (to.empty()) {
    const std::string from = kind_of(options.input);
    to = from == "policy" ? "yaml" : "policy";
  }
  // convert would replace the input (and drop its comments): 'fmt --write' reformats in place.
  if (!options.output.empty()) {
    std::vector<InputFile> inputs;
    inputs.push_back(InputFile{options.input, "the input file"});
    if (!options.policy.empty()) inputs.push_back(InputFile{options.policy, "the policy"});
    std::string error;
    if (!check_output_file(options.output, inputs,
                           " (to reformat in place, use 'replaygate fmt --write')", &error)) {
      std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
      return kExitUsage;
    }
  }
  // `convert IN >> IN` would append the other form to the policy it reads.
  std::vector<InputFile> read_files = {InputFile{options.input, "the input file"}};
  if (!options.policy.empty()) read_files.push_back(InputFile{options.policy, "the policy"});
  if (const std::string same = stdout_is_input(read_files);
      options.output.empty() && !same.empty()) {
    std::fprintf(stderr,
                 "replaygate: error: %s (input file is output file); redirect standard output "
                 "to another file, or give -o FILE\n",
                 same.c_str());
    return kExitUsage;
  }
  if (kind == "cases") return export_cases(options);
  if (kind == "mapping") return export_mapping(options);
  LoadedPolicy loaded;
  const int code = load_policy_reporting(options.input, DiagnosticFormat::kText, &loaded);
  if (code != kExitOk) return code;
  const ir::Policy& policy = loaded.policy->policy;
  if (to == "yaml" || to == "json") {
    // YAML reads any quoted '*' in a row's keys as the wildcard, so a literal "*" key (which the
    // policy language can say) cannot be written there without changing decisions.
    for (const ir::Rule& rule : policy.rules) {
      const auto* table = std::get_if<ir::Table>(&rule);
      if (table == nullptr) continue;
      for (const ir::Row& row : table->rows) {
        for (const auto& key : row.keys) {
          if (key && key->kind == ir::Value::Kind::kString && key->str == "*") {
            std::fprintf(stderr,
                         "replaygate: error: row '%s' of table '%s' has the literal key \"*\", "
                         "which %s can only read as the wildcard; not converted\n"
                         "      = hint: keep this policy in the .policy form, or rename the "
                         "value\n",
                         row.id.c_str(), table->id.c_str(),
                         to == "yaml" ? "YAML" : "the YAML form's JSON");
            return kExitFindings;
          }
        }
      }
    }
  }
  // Named before printing: the read-back would only see an RG014 or another id.
  // JSON, like YAML, holds UTF-8 text only.
  const std::string problem_before = to == "policy" ? id_the_dsl_cannot_write(*loaded.policy)
                                                    : text_yaml_cannot_hold(*loaded.policy);
  if (!problem_before.empty()) {
    std::fprintf(stderr,
                 "replaygate: error: %s; not converted\n"
                 "      = hint: %s\n",
                 problem_before.c_str(),
                 to == "policy" ? "rename it: an id in the policy language is a letter or '_', "
                                  "then letters, digits, '_', '.' or '-'"
                                : "YAML files are UTF-8: write that text in UTF-8, or keep this "
                                  "policy in the .policy form");
    return kExitFindings;
  }
  if (to == "json") return write_json(policy_json(policy), options.output, "the exported policy");
  const std::string text = to == "yaml" ? print_yaml(policy) : print_dsl(policy);
  std::string problem;
  if (!reads_back(*loaded.policy, to, text, options.output, &problem)) {
    std::fprintf(stderr,
                 "replaygate: error: %s; not converted\n"
                 "      = hint: change that part of %s (for example shorten a long reason, or "
                 "split a long 'in (...)' list into a table), or keep the policy in its current "
                 "syntax\n",
                 problem.c_str(), options.input.c_str());
    return kExitFindings;
  }
  if (options.output.empty()) {
    return print_to_stdout(text, "the converted policy") ? kExitOk : kExitUsage;
  }
  std::string error;
  if (!write_file_atomically(options.output, text, &error)) {
    std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
    return kExitUsage;
  }
  return kExitOk;
}

}  // namespace

Runner setup_convert(CLI::App& sub) {
  auto options = std::make_shared<ConvertOptions>();
  sub.footer(
      "Convert a policy between YAML (.yaml/.yml) and the policy language (.policy). The target\n"
      "is --to, else OUT's extension, else the other syntax than IN's. IN is compiled first; on\n"
      "errors nothing is written. The output is read back before it is written: a policy the\n"
      "target syntax cannot say as it is (an id, a line over the length limit) is refused.\n"
      "YAML comments are not carried over.\n"
      "--to json writes what replaygate understood of IN as JSON of the YAML form's shape, the\n"
      "document schemas/*.schema.json describe: a policy (either syntax: the same JSON), or with\n"
      "--kind cases or --kind mapping and --policy P a test-case or mapping file read against P.\n"
      "Exit: 0 converted, 1 errors in IN (or P) or not expressible, 2 usage/I/O.");
  sub.add_option("IN", options->input,
                 "Policy file (.policy, .yaml or .yml), or the case or mapping file of --kind")
      ->required();
  sub.add_option("-o,--output", options->output, "File to write (default, or -: standard output)");
  sub.add_option("--to", options->to, "yaml, policy or json");
  sub.add_option("--kind", options->kind,
                 "What IN is: policy (the default), cases (a test-case file) or mapping (an "
                 "input mapping file); cases and mapping export --to json only");
  sub.add_option("--policy", options->policy,
                 "--kind cases|mapping: the policy the file is read against");
  return [options] {
    if (options->output == "-") options->output.clear();  // -o - is standard output, the default
    return run_convert(*options);
  };
}

}  // namespace replaygate::cli
