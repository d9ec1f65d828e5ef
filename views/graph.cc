// graph_from_policy(), graph_from_table() and render_dot() (views/graph.h).
#include "views/graph.h"

#include <map>
#include <string>
#include <variant>
#include <vector>

#include "common/plural.h"
#include "compiler/explain.h"
#include "runtime/codes.h"
#include "runtime/trace.h"

namespace replaygate::views {
namespace {

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

}  // namespace

GraphModel graph_from_policy(const ir::Policy& policy) {
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

GraphModel graph_from_table(const Table& table) {
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

}  // namespace replaygate::views
