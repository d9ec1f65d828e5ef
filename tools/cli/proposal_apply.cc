// `replaygate proposal apply`: a reviewed proposal as rows at the end of the policy's first
// decision table, in the policy's own source text, every other byte kept; linted, its invariants
// proven, and its semantic diff printed (docs/proposals.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "common/plural.h"
#include "compiler/compile.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/policy_diff.h"
#include "tools/cli/proposal.h"

namespace replaygate::cli {
namespace {

using nlohmann::json;

constexpr int kExitRefused = 4;  // the proposal is refused: nothing is written

struct ApplyOptions {
  std::string proposal, policy, output, format = "text";
  bool write = false;
};

bool is_yaml(const std::string& path) { return path.ends_with(".yaml") || path.ends_with(".yml"); }

size_t line_start(std::string_view text, size_t at) {
  const size_t nl = text.rfind('\n', at == 0 ? 0 : at - 1);
  return at == 0 || nl == std::string_view::npos ? 0 : nl + 1;
}
size_t next_line(std::string_view text, size_t at) {
  const size_t nl = text.find('\n', at);
  return nl == std::string_view::npos ? text.size() : nl + 1;
}
size_t indent_of(std::string_view text, size_t start) {
  size_t i = start;
  while (i < text.size() && text[i] == ' ') ++i;
  return i - start;
}

// Where the row that starts at `at` ends: after the line its flow collection ('{' or '[') closes
// on, or, for a block row, after the last line more indented than its '-'. A YAML row.
size_t yaml_row_end(std::string_view text, size_t at) {
  if (at < text.size() && (text[at] == '{' || text[at] == '[')) {
    int depth = 0;
    for (size_t i = at; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '"') {
        for (++i; i < text.size() && text[i] != '"'; ++i) {
          if (text[i] == '\\') ++i;
        }
      } else if (c == '\'') {
        for (++i; i < text.size(); ++i) {
          if (text[i] == '\'' && (i + 1 >= text.size() || text[i + 1] != '\'')) break;
          if (text[i] == '\'') ++i;
        }
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return next_line(text, i);
      }
    }
    return text.size();
  }
  const size_t dash = indent_of(text, line_start(text, at));
  size_t end = next_line(text, at);
  while (end < text.size()) {
    const size_t start = end;
    const size_t indent = indent_of(text, start);
    const bool blank = start + indent >= text.size() || text[start + indent] == '\n';
    if (!blank && indent <= dash) break;
    end = next_line(text, start);
  }
  return end;
}

std::string yaml_value(const json& v) {
  if (v.is_string()) return v.dump(-1, ' ', false, json::error_handler_t::replace);
  return v.dump();
}

std::string dsl_value(const json& v) {
  if (!v.is_string()) return v.dump();
  static const std::regex bare("[A-Za-z_][A-Za-z0-9_.:/-]*");
  const std::string s = v.get<std::string>();
  // Words the language reads as something else bare (absent, present: matchers) stay quoted.
  if (std::regex_match(s, bare) && s != "true" && s != "false" && s != "absent" && s != "present") {
    return s;
  }
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

int run_apply(const ApplyOptions& o) {
  if (o.write && !o.output.empty()) {
    std::fprintf(stderr, "replaygate proposal apply: give -o OUT or --write, not both\n");
    return kExitUsage;
  }
  std::string proposal_text, error;
  if (!read_whole_file(o.proposal, size_t{64} << 20, &proposal_text, &error)) {
    std::fprintf(stderr, "replaygate proposal apply: %s\n", error.c_str());
    return kExitUsage;
  }
  const LoadedPolicy old_policy = load_policy_file(o.policy);
  if (old_policy.io_error) {
    std::fprintf(stderr, "replaygate proposal apply: %s\n", old_policy.io_message.c_str());
    return kExitUsage;
  }
  if (!old_policy.policy) {
    std::fputs(render_text(old_policy.diagnostics, old_policy.source_text).c_str(), stderr);
    std::fprintf(stderr,
                 "replaygate proposal apply: %s has errors; fix the policy first (nothing was "
                 "written)\n",
                 o.policy.c_str());
    return kExitUsage;
  }
  const ir::Policy& policy = old_policy.policy->policy;
  const auto refuse = [&](const std::string& why) {
    std::fprintf(stderr, "replaygate proposal apply: refused: %s; nothing was written\n",
                 why.c_str());
    return kExitRefused;
  };
  const std::vector<Diagnostic> problems = check_proposal(proposal_text, o.proposal, policy);
  if (has_errors(problems)) {
    std::fputs(render_text(problems, proposal_text).c_str(), stderr);
    return refuse(plural(problems.size(), "problem") + " in " + o.proposal +
                  " (replaygate proposal check)");
  }
  const json entries = json::parse(proposal_text);
  // Where the rows go: after the last row of the first decision table.
  size_t table_index = 0;
  while (table_index < policy.rules.size() &&
         !std::holds_alternative<ir::Table>(policy.rules[table_index])) {
    ++table_index;
  }
  const ir::Table& table = std::get<ir::Table>(policy.rules[table_index]);
  const std::vector<Span>& row_spans = old_policy.policy->source.rows[table_index];
  if (row_spans.empty()) return refuse("the table '" + table.id + "' has no row to add after");
  const std::string& text = old_policy.source_text;
  const size_t last = row_spans.back().offset;
  const bool yaml = is_yaml(o.policy);
  size_t insert_at = yaml ? yaml_row_end(text, last) : next_line(text, last);
  const std::string indent(indent_of(text, line_start(text, last)), ' ');
  std::vector<std::string> key_names;
  for (uint32_t f : table.key_fields) key_names.push_back(policy.fields[f].name);
  const std::string digest = hex_digest(proposal_text);
  std::string rows;
  if (insert_at > 0 && text[insert_at - 1] != '\n') rows += '\n';
  for (size_t i = 0; i < entries.size(); ++i) {
    const json& e = entries[i];
    const std::string rationale = e.value("rationale", "");
    if (rationale.find_first_not_of(" \t") == std::string::npos) {
      return refuse("entry " + std::to_string(i + 1) +
                    " has no rationale: a row needs the reviewer's reason (write it in the "
                    "entry's \"rationale\")");
    }
    const std::string verb = e["verb"].get<std::string>();
    const std::string reason = json(rationale).dump(-1, ' ', false, json::error_handler_t::replace);
    rows += indent + "# proposed: " + o.proposal.substr(o.proposal.rfind('/') + 1) + " entry " +
            std::to_string(i + 1) + ", digest " + digest + "\n";
    if (yaml) {
      std::string keys;
      for (const std::string& k : key_names) keys += (keys.empty() ? "" : ", ") + yaml_value(e[k]);
      rows += indent + "- {keys: [" + keys + "], verb: " + verb +
              (e.contains("row_id") ? ", id: " + e["row_id"].get<std::string>() : "") +
              ", reason: " + reason + "}\n";
    } else {
      std::string keys;
      for (const std::string& k : key_names) keys += (keys.empty() ? "" : ", ") + dsl_value(e[k]);
      rows += indent + keys + " -> " + verb +
              (e.contains("row_id") ? " as " + e["row_id"].get<std::string>() : "") + " " + reason +
              "\n";
    }
  }
  const std::string patched = text.substr(0, insert_at) + rows + text.substr(insert_at);
  const LoadedPolicy new_policy = load_policy_text(patched, o.policy);
  if (!new_policy.policy) {
    std::fputs(render_text(new_policy.diagnostics, patched).c_str(), stderr);
    return refuse(
        "the patched policy has errors (above; their lines are the patched text's, which was "
        "not written; an invariant the rows break shows its counterexample)");
  }
  const int code = print_policy_diff(policy, new_policy.policy->policy, o.policy,
                                     o.policy + " + " + o.proposal, o.format);
  if (code == kExitUsage) return code;
  const std::string target = o.write ? o.policy : o.output;
  if (!target.empty()) {
    if (!write_file_atomically(target, patched, &error)) {
      std::fprintf(stderr, "replaygate proposal apply: %s\n", error.c_str());
      return kExitUsage;
    }
    std::fprintf(stderr, "replaygate proposal apply: wrote %s (%s)\n", target.c_str(),
                 plural(entries.size(), "row").c_str());
  } else {
    std::fprintf(stderr,
                 "replaygate proposal apply: nothing written (give -o OUT or --write to write "
                 "the patched policy)\n");
  }
  return code;
}

}  // namespace

CLI::App* add_proposal_apply(CLI::App& sub, Runner* runner) {
  auto o = std::make_shared<ApplyOptions>();
  CLI::App* a = sub.add_subcommand(
      "apply", "Add a reviewed proposal's entries as rows of the policy, and show the diff");
  a->add_option("PROPOSAL", o->proposal, "The reviewed proposal (JSON)")->required();
  a->add_option("--policy", o->policy, "The policy (.yaml or .policy) to add the rows to")
      ->required();
  a->add_option("-o,--output", o->output, "Write the patched policy here (atomically)");
  a->add_flag("--write", o->write, "Replace the policy itself (atomically)");
  a->add_option("--format", o->format, "The diff: text (default), json or markdown")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  a->footer(
      "Inserts each entry as a row at the end of the policy's first decision table, in the\n"
      "policy's own form, every other byte as it was, with a '# proposed:' comment naming the\n"
      "proposal and its digest; the rationale becomes the row's reason. The patched policy is\n"
      "linted and its invariants proven before anything is written, and the semantic diff is\n"
      "printed as `replaygate diff` prints it. Without -o or --write nothing is written.\n"
      "Exit: 0 no verb changes, 1 verbs change but nothing gets more dangerous, 3 some input\n"
      "gets a more dangerous effect (a second reviewer for a proposal that adds a replay),\n"
      "4 refused (bad entries, an empty rationale, lint errors, a broken invariant: nothing\n"
      "written), 2 usage or I/O errors.");
  *runner = [o] { return run_apply(*o); };
  return a;
}

}  // namespace replaygate::cli
