// `replaygate graph (--policy P | --table T) [-o FILE] [--format dot|svg]`: the decision structure
// as a Graphviz picture for reviewers.
//
// DOT layout: a `letter` start node; an edge "invalid input" from it to the default; the rules in
// evaluation order, each guard a box with its conditions (one per line) whose `true` edge goes to
// its verb and whose `false` edge goes to the next rule; each table a box with its keys and row
// count, one edge per verb its rows give (labelled with the row count) and a `no row` edge to the
// next rule; the default last. Verbs are ellipses filled by effect (none green, read blue, copy
// yellow, create red). The text is deterministic (golden-tested). `--format svg` pipes it through
// `dot -Tsvg` (Graphviz), which must be installed (exit 2 with a clear message otherwise).
// With --policy the structure comes from the IR; with --table from runtime/trace.h's outline().
#include <stdio.h>
#include <sys/wait.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/explain.h"
#include "compiler/lower.h"
#include "runtime/table.h"
#include "runtime/trace.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/output.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

struct GraphOptions {
  TrustFlags trust;
  std::string policy;
  std::string table;
  std::string output;
  std::string format = "dot";
};

struct GraphVerb {
  std::string name, effect, description;
};

struct GraphRule {
  bool is_table = false;
  std::string id;
  std::vector<std::string> conditions;  // guards
  uint32_t verb = 0;                    // guards
  std::vector<std::string> keys;        // tables
  std::vector<uint32_t> row_verbs;      // tables: per row
};

struct GraphModel {
  std::string policy_id;
  int64_t revision = 0;
  std::vector<GraphVerb> verbs;
  uint32_t default_verb = 0;
  std::vector<GraphRule> rules;
};

GraphModel from_policy(const ir::Policy& policy) {
  GraphModel m;
  m.policy_id = policy.id;
  m.revision = policy.revision;
  for (const ir::Verb& v : policy.verbs) {
    m.verbs.push_back({v.name, ir::effect_name(v.effect), v.description});
  }
  m.default_verb = policy.default_verb;
  for (const ir::Rule& rule : policy.rules) {
    GraphRule g;
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      g.id = guard->id;
      for (const auto& c : guard->conditions) g.conditions.push_back(describe_condition(policy, c));
      g.verb = guard->verb;
    } else {
      const auto& t = std::get<ir::Table>(rule);
      g.is_table = true;
      g.id = t.id;
      for (uint32_t f : t.key_fields) g.keys.push_back(policy.fields.at(f).name);
      for (const ir::Row& row : t.rows) g.row_verbs.push_back(row.verb);
    }
    m.rules.push_back(std::move(g));
  }
  return m;
}

GraphModel from_table(const Table& table) {
  GraphModel m;
  m.policy_id = table.policy_id();
  m.revision = table.revision();
  for (uint32_t v = 0; v < table.verb_count(); ++v) {
    m.verbs.push_back({std::string(table.verb_name(v)), effect_name(table.verb_effect(v)),
                       std::string(table.verb_description(v))});
  }
  m.default_verb = table.default_verb();
  for (const OutlineRule& o : outline(table)) {
    GraphRule g;
    g.is_table = o.is_table;
    g.id = o.id;
    for (const TraceCondition& c : o.conditions) {
      std::string text = std::string(table.field(c.field).name) + " " + op_word_symbol(c.op);
      if (!c.operand.empty()) text += " " + c.operand;
      g.conditions.push_back(std::move(text));
    }
    if (!o.is_table) g.verb = table.rule_verb(o.catalog_begin);
    for (uint32_t f : o.key_fields) g.keys.emplace_back(table.field(f).name);
    for (uint32_t r = 0; o.is_table && r < o.catalog_count; ++r) {
      g.row_verbs.push_back(table.rule_verb(o.catalog_begin + r));
    }
    m.rules.push_back(std::move(g));
  }
  return m;
}

// A DOT string literal: quotes, backslashes and newlines escaped (\l ends a left-aligned line).
std::string dot_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

const char* effect_colour(const std::string& effect) {
  if (effect == "create") return "#f4cccc";
  if (effect == "copy") return "#fff2cc";
  if (effect == "read") return "#cfe2f3";
  return "#d9ead3";
}

std::string render_dot(const GraphModel& m) {
  std::string out = "digraph " + dot_string(m.policy_id) + " {\n";
  out +=
      "  label=" + dot_string("policy " + m.policy_id + " revision " + std::to_string(m.revision)) +
      ";\n";
  out += "  labelloc=t;\n  rankdir=TB;\n";
  out += "  node [fontname=\"Helvetica\", fontsize=11];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  out += "  letter [shape=circle, label=\"letter\"];\n";
  for (size_t v = 0; v < m.verbs.size(); ++v) {
    const GraphVerb& verb = m.verbs[v];
    out += "  verb_" + std::to_string(v) + " [shape=ellipse, style=filled, fillcolor=\"" +
           effect_colour(verb.effect) +
           "\", label=" + dot_string(verb.name + "\n(" + verb.effect + ")") +
           ", tooltip=" + dot_string(verb.description) + "];\n";
  }
  out += "  default [shape=octagon, label=" +
         dot_string("default\n" + m.verbs.at(m.default_verb).name) + "];\n";
  out += "  default -> verb_" + std::to_string(m.default_verb) + ";\n";
  out += "  letter -> default [style=dashed, label=\"invalid input\"];\n";
  std::string previous = "letter";
  std::string previous_label = "valid";
  for (size_t r = 0; r < m.rules.size(); ++r) {
    const GraphRule& rule = m.rules[r];
    const std::string node = "rule_" + std::to_string(r);
    if (!rule.is_table) {
      std::string label = "guard " + rule.id;
      for (const auto& c : rule.conditions) label += "\n" + c;
      out += "  " + node + " [shape=box, label=" + dot_string(label) + "];\n";
    } else {
      std::string keys;
      for (size_t k = 0; k < rule.keys.size(); ++k) keys += (k ? ", " : "") + rule.keys[k];
      out += "  " + node + " [shape=box3d, label=" +
             dot_string("table " + rule.id + "\nkeys (" + keys + ")\n" +
                        plural(rule.row_verbs.size(), "row")) +
             "];\n";
    }
    out += "  " + previous + " -> " + node + " [label=" + dot_string(previous_label) + "];\n";
    if (!rule.is_table) {
      out += "  " + node + " -> verb_" + std::to_string(rule.verb) + " [label=\"true\"];\n";
      previous_label = "false";
    } else {
      std::map<uint32_t, size_t> per_verb;
      for (uint32_t v : rule.row_verbs) ++per_verb[v];
      for (const auto& [v, count] : per_verb) {
        out += "  " + node + " -> verb_" + std::to_string(v) +
               " [label=" + dot_string(plural(count, "row")) + "];\n";
      }
      previous_label = "no row";
    }
    previous = node;
  }
  out += "  " + previous + " -> default [label=" + dot_string(previous_label) + "];\n";
  out += "}\n";
  return out;
}

// Runs `dot -Tsvg` on `dot_text`. Returns false with *error set when dot is missing or fails.
bool run_dot(const std::string& dot_text, std::string* svg, std::string* error) {
  char input_path[] = "/tmp/replaygate_graph.XXXXXX";
  const int fd = ::mkstemp(input_path);
  if (fd < 0) {
    *error = "cannot create a temporary file";
    return false;
  }
  ::close(fd);
  std::string io_error;
  if (!write_file_atomically(input_path, dot_text, &io_error)) {
    ::unlink(input_path);
    *error = io_error;
    return false;
  }
  const std::string command = std::string("dot -Tsvg ") + input_path + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ::unlink(input_path);
    *error = "cannot run dot";
    return false;
  }
  char buffer[65536];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) svg->append(buffer, n);
  const int status = ::pclose(pipe);
  ::unlink(input_path);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = WIFEXITED(status) && WEXITSTATUS(status) == 127
                 ? "--format svg needs Graphviz's dot on PATH (apt-get install graphviz), or "
                   "use --format dot"
                 : "dot -Tsvg failed";
    return false;
  }
  return true;
}

int run_graph(const GraphOptions& options) {
  if (options.policy.empty() == options.table.empty()) {
    std::fprintf(stderr,
                 "replaygate graph: error: give exactly one of --policy POLICY.yaml or --table "
                 "TABLE.rgt\nRun 'replaygate graph --help' for usage.\n");
    return kExitUsage;
  }
  if (options.format != "dot" && options.format != "svg") {
    std::fprintf(stderr, "replaygate graph: error: --format must be dot or svg, not '%s'\n",
                 options.format.c_str());
    return kExitUsage;
  }
  if (!options.output.empty()) {
    std::vector<InputFile> inputs;
    inputs.push_back(InputFile{options.policy, "the policy file"});
    inputs.push_back(InputFile{options.table, "the table file"});
    std::string error;
    if (!check_output_file(options.output, inputs, " (e.g. gate.dot)", &error)) {
      std::fprintf(stderr, "replaygate: error: %s\n", error.c_str());
      return kExitUsage;
    }
  }
  GraphModel model;
  if (!options.policy.empty()) {
    LoadedPolicy loaded;
    if (const int code = load_policy_reporting(options.policy, DiagnosticFormat::kText, &loaded);
        code != kExitOk) {
      return code;
    }
    model = from_policy(loaded.policy->policy);
  } else {
    std::unique_ptr<Table> table;
    if (const int code = open_table("", options.table, &table, nullptr, &options.trust);
        code != kExitOk)
      return code;
    model = from_table(*table);
  }
  std::string out = render_dot(model);
  if (options.format == "svg") {
    std::string svg, error;
    if (!run_dot(out, &svg, &error)) {
      std::fprintf(stderr, "replaygate graph: %s\n", error.c_str());
      return kExitUsage;
    }
    out = std::move(svg);
  }
  if (!options.output.empty()) {
    std::string error;
    if (!write_file_atomically(options.output, out, &error)) {
      std::fprintf(stderr, "replaygate: %s\n", error.c_str());
      return kExitUsage;
    }
    return kExitOk;
  }
  if (!print_to_stdout(out, "the graph")) return kExitUsage;
  return kExitOk;
}

}  // namespace

Runner setup_graph(CLI::App& sub) {
  auto options = std::make_shared<GraphOptions>();
  sub.footer(
      "Write the decision structure as Graphviz DOT: guards in order with their conditions\n"
      "(true -> verb, false -> next rule), tables with their row count and one edge per verb,\n"
      "the default last; verbs coloured by effect. --format svg runs `dot -Tsvg` (Graphviz).\n"
      "Exit: 0 written, 1 policy errors, 2 usage/I/O (or svg without dot).");
  sub.add_option("--policy", options->policy, "Policy file (.yaml)");
  sub.add_option("--table", options->table, "Frozen table (.rgt)");
  sub.add_option("-o,--output", options->output, "Output file (default, or -: standard output)");
  sub.add_option("--format", options->format, "dot (default) or svg");
  add_trust_options(sub, &options->trust, /*acting=*/false);
  return [options] {
    if (options->output == "-") options->output.clear();  // -o - is standard output, the default
    return run_graph(*options);
  };
}

}  // namespace replaygate::cli
