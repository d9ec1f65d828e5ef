// render_matrix() (views/matrix.h): the grid of a table's first two keys, then its HTML or SVG.
#include "views/matrix.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/diagnostic.h"
#include "compiler/explain.h"

namespace replaygate::views {
namespace {

constexpr const char* kPalette[] = {"#b6d7a8", "#ea9999", "#a4c2f4", "#ffe599",
                                    "#d5a6bd", "#a2c4c9", "#f9cb9c", "#b4a7d6"};

struct Cell {
  std::optional<uint32_t> row;  // the deciding row
  std::vector<std::string> may_guards;
  std::string pre_empted_by;  // a guard that takes every input of the cell
  uint32_t pre_empt_verb = 0;
};

struct Grid {
  const ir::Table* table = nullptr;
  std::vector<std::optional<ir::Value>> a, b;  // nullopt: "any other"
  std::vector<std::vector<Cell>> cells;        // [a][b]
  std::vector<uint32_t> skipped_rows;          // rows with a concrete third+ key
};

std::string label(const std::optional<ir::Value>& v) {
  return v ? describe_literal(*v) : "any other";
}

FieldValue field_value(const ir::Value& v) {
  switch (v.kind) {
    case ir::Value::Kind::kString:
      return LetterValue::String(v.str);
    case ir::Value::Kind::kInt:
      return LetterValue::Int(v.i);
    case ir::Value::Kind::kBool:
      return LetterValue::Bool(v.b);
  }
  return std::nullopt;
}

Grid build_grid(const ir::Policy& policy, size_t table_rule) {
  Grid g;
  const auto& t = std::get<ir::Table>(policy.rules[table_rule]);
  g.table = &t;
  auto add = [](std::vector<std::optional<ir::Value>>& list, const std::optional<ir::Value>& v) {
    if (!v) return;
    for (const auto& e : list) {
      if (e == v) return;
    }
    list.push_back(v);
  };
  for (uint32_t r = 0; r < t.rows.size(); ++r) {
    bool extra = false;
    for (size_t k = 2; k < t.rows[r].keys.size(); ++k)
      extra = extra || t.rows[r].keys[k].has_value();
    if (extra) {
      g.skipped_rows.push_back(r);
      continue;
    }
    add(g.a, t.rows[r].keys[0]);
    add(g.b, t.rows[r].keys[1]);
  }
  g.a.push_back(std::nullopt);
  g.b.push_back(std::nullopt);
  const uint32_t fa = t.key_fields[0], fb = t.key_fields[1];
  g.cells.assign(g.a.size(), std::vector<Cell>(g.b.size()));
  for (size_t i = 0; i < g.a.size(); ++i) {
    for (size_t j = 0; j < g.b.size(); ++j) {
      Cell& cell = g.cells[i][j];
      size_t best_concrete = 0;
      for (uint32_t r = 0; r < t.rows.size(); ++r) {
        const ir::Row& row = t.rows[r];
        bool extra = false;
        for (size_t k = 2; k < row.keys.size(); ++k) extra = extra || row.keys[k].has_value();
        if (extra) continue;
        // A concrete key matches only its own value; "any other" matches only wildcards.
        if (row.keys[0] && (!g.a[i] || !(*row.keys[0] == *g.a[i]))) continue;
        if (row.keys[1] && (!g.b[j] || !(*row.keys[1] == *g.b[j]))) continue;
        size_t concrete = 0;
        for (const auto& k : row.keys) concrete += k ? 1 : 0;
        if (!cell.row || concrete > best_concrete) {
          cell.row = r;
          best_concrete = concrete;
        }
      }
      // Guards before the table.
      std::vector<FieldValue> values(policy.fields.size());
      if (g.a[i]) values[fa] = field_value(*g.a[i]);
      if (g.b[j]) values[fb] = field_value(*g.b[j]);
      for (size_t r = 0; r < table_rule; ++r) {
        const auto* guard = std::get_if<ir::Guard>(&policy.rules[r]);
        if (guard == nullptr) continue;
        bool fails = false, certain = true;
        for (const ir::Condition& c : guard->conditions) {
          const bool known = (c.field == fa && g.a[i]) || (c.field == fb && g.b[j]);
          // "any other" on a key: an eq/in that names only listed values never holds there.
          const auto* listed = c.field == fa && !g.a[i]   ? &g.a
                               : c.field == fb && !g.b[j] ? &g.b
                                                          : nullptr;
          if (listed != nullptr && (c.op == ir::Op::kEq || c.op == ir::Op::kIn)) {
            bool all_listed = true;
            for (const ir::Value& v : c.values) {
              bool found = false;
              for (const auto& e : *listed) found = found || (e && *e == v);
              all_listed = all_listed && found;
            }
            if (all_listed) {
              fails = true;
              continue;
            }
          }
          if (!known) {
            certain = false;
            continue;
          }
          if (check_condition(policy, c, values) != FailWhy::kHolds) fails = true;
        }
        if (fails) continue;
        if (certain && cell.pre_empted_by.empty()) {
          cell.pre_empted_by = guard->id;
          cell.pre_empt_verb = guard->verb;
        } else if (!certain && cell.pre_empted_by.empty()) {
          cell.may_guards.push_back(guard->id);
        }
      }
    }
  }
  return g;
}

std::string escape_xml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
    }
  }
  return out;
}

struct CellView {
  std::string text, colour, title;
};

CellView view(const ir::Policy& policy, const Grid& g, const Cell& cell) {
  CellView v;
  if (!cell.pre_empted_by.empty()) {
    v.text = policy.verbs.at(cell.pre_empt_verb).name + " (guard)";
    v.colour = kPalette[cell.pre_empt_verb % 8];
    v.title = "pre-empted by guard " + cell.pre_empted_by;
    if (cell.row) v.title += "; the table would give row " + g.table->rows[*cell.row].id;
    return v;
  }
  if (cell.row) {
    const ir::Row& row = g.table->rows[*cell.row];
    v.text = policy.verbs.at(row.verb).name;
    const bool wildcard = !row.keys[0] || !row.keys[1];
    if (wildcard) v.text += " *";
    v.colour = kPalette[row.verb % 8];
    v.title = row.id + ": " + row.reason + (wildcard ? " (wildcard row)" : "");
  } else {
    v.text = "-";
    v.colour = "#ffffff";
    v.title = "no row: later rules, else the default " + policy.verbs.at(policy.default_verb).name +
              " (" + policy.default_reason + ")";
  }
  if (!cell.may_guards.empty()) {
    v.title += "; some inputs are decided first by guard";
    v.title += cell.may_guards.size() == 1 ? " " : "s ";
    for (size_t k = 0; k < cell.may_guards.size(); ++k) {
      v.title += (k ? ", " : "") + cell.may_guards[k];
    }
  }
  return v;
}

std::string render_html(const ir::Policy& policy, const Grid& g) {
  const std::string fa = policy.fields.at(g.table->key_fields[0]).name;
  const std::string fb = policy.fields.at(g.table->key_fields[1]).name;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
      escape_xml(policy.id + ": " + g.table->id) +
      "</title>\n<style>\n"
      "body { font-family: Helvetica, Arial, sans-serif; font-size: 14px; }\n"
      "table { border-collapse: collapse; }\n"
      "th, td { border: 1px solid #999; padding: 4px 8px; text-align: center; }\n"
      "th { background: #eee; }\n"
      "td.pre { outline: 2px dashed #444; outline-offset: -4px; }\n"
      ".legend span { display: inline-block; padding: 2px 8px; margin-right: 6px; "
      "border: 1px solid #999; }\n"
      "</style>\n</head>\n<body>\n";
  out += "<h1>" + escape_xml(policy.id) + " revision " + std::to_string(policy.revision) +
         ": table " + escape_xml(g.table->id) + "</h1>\n";
  out += "<p>Rows: " + escape_xml(fa) + ". Columns: " + escape_xml(fb) +
         ". Hover a cell for the rule and its reason. <code>*</code>: decided by a wildcard row; "
         "<code>-</code>: no row (later rules, else the default); dashed: a guard before the "
         "table decides every input of the cell.</p>\n";
  out += "<table>\n<tr><th>" + escape_xml(fa) + " \\ " + escape_xml(fb) + "</th>";
  for (const auto& b : g.b) out += "<th>" + escape_xml(label(b)) + "</th>";
  out += "</tr>\n";
  for (size_t i = 0; i < g.a.size(); ++i) {
    out += "<tr><th>" + escape_xml(label(g.a[i])) + "</th>";
    for (size_t j = 0; j < g.b.size(); ++j) {
      const Cell& cell = g.cells[i][j];
      const CellView v = view(policy, g, cell);
      out += "<td" + std::string(cell.pre_empted_by.empty() ? "" : " class=\"pre\"") +
             " style=\"background:" + v.colour + "\" title=\"" + escape_xml(v.title) + "\">" +
             escape_xml(v.text) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n<h2>Legend</h2>\n<p class=\"legend\">";
  for (size_t v = 0; v < policy.verbs.size(); ++v) {
    const ir::Verb& verb = policy.verbs[v];
    out += "<span style=\"background:" + std::string(kPalette[v % 8]) + "\" title=\"" +
           escape_xml(verb.description) + "\">" + escape_xml(verb.name) + " (effect " +
           ir::effect_name(verb.effect) + ")</span>";
  }
  out += "</p>\n";
  if (!g.skipped_rows.empty()) {
    out += "<p>Rows that also need a concrete value for a later key (not in the grid):</p>\n<ul>\n";
    for (uint32_t r : g.skipped_rows) {
      out += "<li>" + escape_xml(g.table->rows[r].id) + " &rarr; " +
             escape_xml(policy.verbs.at(g.table->rows[r].verb).name) + "</li>\n";
    }
    out += "</ul>\n";
  }
  out += "</body>\n</html>\n";
  return out;
}

std::string render_svg(const ir::Policy& policy, const Grid& g) {
  constexpr int kCellW = 150, kCellH = 28, kHeadW = 170;
  const int width = kHeadW + kCellW * static_cast<int>(g.b.size()) + 1;
  const int height = kCellH * (static_cast<int>(g.a.size()) + 2) + 24 * 2;
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
                    "\" height=\"" + std::to_string(height) +
                    "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  out += "<title>" + escape_xml(policy.id + ": table " + g.table->id) + "</title>\n";
  auto box = [&](int x, int y, int w, const std::string& fill, const std::string& text,
                 const std::string& title, bool dashed) {
    out += "<g>";
    if (!title.empty()) out += "<title>" + escape_xml(title) + "</title>";
    out += "<rect x=\"" + std::to_string(x) + "\" y=\"" + std::to_string(y) + "\" width=\"" +
           std::to_string(w) + "\" height=\"" + std::to_string(kCellH) + "\" fill=\"" + fill +
           "\" stroke=\"#999\"" + (dashed ? " stroke-dasharray=\"4 2\" stroke-width=\"2\"" : "") +
           "/>";
    out += "<text x=\"" + std::to_string(x + w / 2) + "\" y=\"" + std::to_string(y + 18) +
           "\" text-anchor=\"middle\">" + escape_xml(text) + "</text></g>\n";
  };
  const std::string fa = policy.fields.at(g.table->key_fields[0]).name;
  const std::string fb = policy.fields.at(g.table->key_fields[1]).name;
  box(0, 0, kHeadW, "#eeeeee", fa + " \\ " + fb, "", false);
  for (size_t j = 0; j < g.b.size(); ++j) {
    box(kHeadW + kCellW * static_cast<int>(j), 0, kCellW, "#eeeeee", label(g.b[j]), "", false);
  }
  for (size_t i = 0; i < g.a.size(); ++i) {
    const int y = kCellH * static_cast<int>(i + 1);
    box(0, y, kHeadW, "#eeeeee", label(g.a[i]), "", false);
    for (size_t j = 0; j < g.b.size(); ++j) {
      const CellView v = view(policy, g, g.cells[i][j]);
      box(kHeadW + kCellW * static_cast<int>(j), y, kCellW, v.colour, v.text, v.title,
          !g.cells[i][j].pre_empted_by.empty());
    }
  }
  int x = 0;
  const int y = kCellH * static_cast<int>(g.a.size() + 1) + 12;
  for (size_t v = 0; v < policy.verbs.size(); ++v) {
    const ir::Verb& verb = policy.verbs[v];
    box(x, y, kCellW, kPalette[v % 8], verb.name + " (" + ir::effect_name(verb.effect) + ")",
        verb.description, false);
    x += kCellW + 8;
  }
  out += "</svg>\n";
  return out;
}

}  // namespace

MatrixResult render_matrix(const ir::Policy& policy, const MatrixOptions& options) {
  MatrixResult result;
  std::optional<size_t> chosen;
  std::vector<std::string> ids;
  for (size_t r = 0; r < policy.rules.size(); ++r) {
    const auto* t = std::get_if<ir::Table>(&policy.rules[r]);
    if (t == nullptr) continue;
    ids.push_back(t->id);
    if (!chosen && (options.table_id.empty() || t->id == options.table_id)) chosen = r;
  }
  if (!chosen) {
    result.error = options.table_id.empty() ? "the policy has no table"
                                            : "the policy has no table '" + options.table_id + "'";
    const std::string suggestion = closest_match(options.table_id, ids);
    if (!options.table_id.empty() && !suggestion.empty()) {
      result.error += "; did you mean '" + suggestion + "'?";
    }
    return result;
  }
  const auto& table = std::get<ir::Table>(policy.rules[*chosen]);
  if (table.key_fields.size() < 2) {
    result.error = "table '" + table.id + "' has one key; a matrix needs two";
    return result;
  }
  const Grid grid = build_grid(policy, *chosen);
  result.text =
      options.format == MatrixFormat::kSvg ? render_svg(policy, grid) : render_html(policy, grid);
  return result;
}

}  // namespace replaygate::views
