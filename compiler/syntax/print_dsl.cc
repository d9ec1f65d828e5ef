// The canonical .policy printer (see print_dsl.h): AST -> text with comments, IR -> AST.
#include "compiler/syntax/print_dsl.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "compiler/key_text.h"

namespace replaygate {
namespace {

using ast::Literal;

// Where comments go: keyed by the item they belong to.
struct Leading {
  std::string text;
  uint32_t line = 0;
  bool blank_after = false;  // the source has a blank line between it and what follows it
};
struct Attached {
  std::vector<Leading> leading;
  std::vector<std::string> trailing;
};

// An item of the printed text with the source line it came from (0: none, e.g. from the IR).
struct Anchor {
  uint32_t line = 0;
  std::string key;
};

class Printer {
 public:
  Printer(const ast::Policy& policy, const std::vector<dsl::Comment>& comments,
          const std::vector<uint32_t>& table_close_lines)
      : policy_(policy) {
    place(comments, table_close_lines);
  }

  std::string run() {
    const ast::Policy& p = policy_;
    std::string header = "policy " + (p.id ? literal_or_name(*p.id) : std::string("\"\"")) +
                         " revision " + (p.revision ? literal(*p.revision) : std::string("0"));
    emit("header", header);
    if (p.description) emit("description", "description " + literal(*p.description));
    if (p.sensitive) emit("sensitive", "sensitive " + list(p.sensitive->items));
    if (p.inputs && !p.inputs->empty()) {
      out_ += "\n";
      for (size_t i = 0; i < p.inputs->size(); ++i)
        emit("i" + std::to_string(i), input((*p.inputs)[i]));
    }
    if (p.verbs && !p.verbs->empty()) {
      out_ += "\n";
      for (size_t i = 0; i < p.verbs->size(); ++i) {
        const ast::Verb& v = (*p.verbs)[i];
        std::string line =
            "verb " + v.name.text + " effect " + (v.effect ? v.effect->text : "none");
        if (v.description) line += " " + literal(*v.description);
        emit("v" + std::to_string(i), line);
      }
    }
    if (p.default_verb) {
      out_ += "\n";
      std::string line = "default " + p.default_verb->text;
      if (p.default_reason) line += " " + literal(*p.default_reason);
      emit("default", line);
    }
    if (!p.constants.empty()) {
      out_ += "\n";
      for (size_t i = 0; i < p.constants.size(); ++i) {
        const ast::Constant& c = p.constants[i];
        emit("c" + std::to_string(i), "const " + c.name.text + " = " + literal(c.value));
      }
    }
    if (p.rules && !p.rules->empty()) {
      out_ += "\n";
      bool after_table = false;
      for (size_t r = 0; r < p.rules->size(); ++r) {
        const ast::Rule& rule = (*p.rules)[r];
        const std::string key = "r" + std::to_string(r);
        if (rule.kind == ast::Rule::Kind::kGuard) {
          if (after_table) out_ += "\n";
          after_table = false;
          emit(key, guard(rule.guard));
          continue;
        }
        if (r > 0) out_ += "\n";
        const ast::Table& t = rule.table;
        std::string line = "table " + t.id.text + " by (";
        if (t.keys) {
          for (size_t k = 0; k < t.keys->size(); ++k) line += (k ? ", " : "") + (*t.keys)[k].text;
        }
        emit(key, line + ") {");
        if (t.rows) {
          for (size_t i = 0; i < t.rows->size(); ++i) {
            emit(key + "." + std::to_string(i), row((*t.rows)[i]), "  ");
          }
        }
        emit(key + ".close", "}", "", "  ");
        after_table = true;
      }
    }
    if (!p.invariants.empty()) {
      out_ += "\n";
      for (size_t i = 0; i < p.invariants.size(); ++i) {
        emit("n" + std::to_string(i), invariant(p.invariants[i]));
      }
    }
    const auto it = attached_.find("eof");
    if (it != attached_.end()) {
      out_ += "\n";
      for (const Leading& c : it->second.leading) {
        out_ += "#" + c.text + "\n";
        if (c.blank_after) out_ += "\n";
      }
    }
    return out_;
  }

 private:
  // Attaches each comment to an anchor (see print_dsl.h).
  void place(const std::vector<dsl::Comment>& comments,
             const std::vector<uint32_t>& table_close_lines) {
    if (comments.empty()) return;
    std::vector<Anchor> anchors;
    const ast::Policy& p = policy_;
    const auto add = [&](ir::Span span, std::string key) {
      if (span.line > 0) anchors.push_back({span.line, std::move(key)});
    };
    add(p.id_span, "header");
    if (p.description) add(p.description->span, "description");
    if (p.sensitive) add(p.sensitive->span, "sensitive");
    if (p.inputs) {
      for (size_t i = 0; i < p.inputs->size(); ++i)
        add((*p.inputs)[i].span, "i" + std::to_string(i));
    }
    if (p.verbs) {
      for (size_t i = 0; i < p.verbs->size(); ++i) add((*p.verbs)[i].span, "v" + std::to_string(i));
    }
    if (p.default_verb) add(p.default_verb->span, "default");
    for (size_t i = 0; i < p.constants.size(); ++i)
      add(p.constants[i].span, "c" + std::to_string(i));
    size_t table_index = 0;
    if (p.rules) {
      for (size_t r = 0; r < p.rules->size(); ++r) {
        const ast::Rule& rule = (*p.rules)[r];
        const std::string key = "r" + std::to_string(r);
        if (rule.kind == ast::Rule::Kind::kGuard) {
          add(rule.guard.span, key);
          continue;
        }
        add(rule.table.span, key);
        if (rule.table.rows) {
          for (size_t i = 0; i < rule.table.rows->size(); ++i) {
            add((*rule.table.rows)[i].span, key + "." + std::to_string(i));
          }
        }
        if (table_index < table_close_lines.size()) {
          anchors.push_back({table_close_lines[table_index], key + ".close"});
        }
        ++table_index;
      }
    }
    for (size_t i = 0; i < p.invariants.size(); ++i)
      add(p.invariants[i].span, "n" + std::to_string(i));
    std::stable_sort(anchors.begin(), anchors.end(),
                     [](const Anchor& a, const Anchor& b) { return a.line < b.line; });
    for (const dsl::Comment& comment : comments) {
      if (!comment.own_line) {
        // The last item starting on or before the comment's line.
        const Anchor* owner = nullptr;
        for (const Anchor& anchor : anchors) {
          if (anchor.line <= comment.line) owner = &anchor;
        }
        if (owner != nullptr) {
          attached_[owner->key].trailing.push_back(comment.text);
          continue;
        }
      }
      const auto next = std::find_if(anchors.begin(), anchors.end(),
                                     [&](const Anchor& a) { return a.line > comment.line; });
      attached_[next == anchors.end() ? "eof" : next->key].leading.push_back(
          {comment.text, comment.line});
    }
    // A blank line after an own-line comment (before the next comment of its block, or before
    // its item) is kept, as one: it sets a comment about a whole section apart from the item.
    for (const Anchor& anchor : anchors) {
      const auto it = attached_.find(anchor.key);
      if (it == attached_.end()) continue;
      std::vector<Leading>& leading = it->second.leading;
      for (size_t i = 0; i < leading.size(); ++i) {
        const uint32_t next_line = i + 1 < leading.size() ? leading[i + 1].line : anchor.line;
        leading[i].blank_after = next_line > leading[i].line + 1;
      }
    }
    // The same between the comments at the end of the file (none after the last: the file ends).
    if (const auto it = attached_.find("eof"); it != attached_.end()) {
      std::vector<Leading>& leading = it->second.leading;
      for (size_t i = 0; i + 1 < leading.size(); ++i) {
        leading[i].blank_after = leading[i + 1].line > leading[i].line + 1;
      }
    }
  }

  void emit(const std::string& key, const std::string& line, const std::string& indent = "",
            const std::string& comment_indent = "") {
    const auto it = attached_.find(key);
    if (it != attached_.end()) {
      const std::string& lead = comment_indent.empty() ? indent : comment_indent;
      for (const Leading& c : it->second.leading) {
        out_ += lead + "#" + c.text + "\n";
        if (c.blank_after) out_ += "\n";
      }
    }
    out_ += indent + line;
    if (it != attached_.end()) {
      // Several trailing comments (an item over several lines) join into one.
      std::string trailing;
      for (const std::string& c : it->second.trailing)
        trailing += (trailing.empty() ? "" : " ") + c;
      if (!it->second.trailing.empty()) out_ += " #" + trailing;
    }
    out_ += "\n";
  }

  static std::string literal(const Literal& l) {
    switch (l.kind) {
      case Literal::Kind::kWildcard:
        return "*";
      case Literal::Kind::kNull:
        return "\"\"";
      case Literal::Kind::kQuoted:
        return dsl::quote(l.text);
      case Literal::Kind::kBare:
        if (dsl::is_bare_word(l.text) || l.text == "true" || l.text == "false" ||
            l.text == "absent" || l.text == "present") {
          return l.text;
        }
        return dsl::quote(l.text);
    }
    return dsl::quote(l.text);
  }

  static std::string literal_or_name(const Literal& l) {
    if (l.kind == Literal::Kind::kQuoted && dsl::is_name_token(l.text)) return l.text;
    if (l.kind != Literal::Kind::kQuoted && !dsl::is_name_token(l.text)) return dsl::quote(l.text);
    return literal(l);
  }

  static std::string list(const std::vector<Literal>& items) {
    std::string out = "(";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + literal(items[i]);
    return out + ")";
  }

  static std::string input(const ast::Input& in) {
    std::string line = "input " + in.name.text + ": ";
    if (in.optional_flag && in.optional_flag->bare("true")) line += "optional ";
    const std::string type = in.type ? in.type->text : "string";
    line += type;
    if (type == "string") {
      if (in.empty_means_absent && in.empty_means_absent->bare("true")) {
        line += ", empty means absent";
      }
      if (in.domain) line += " domain " + list(in.domain->items);
    } else if (type == "int") {
      if (in.min) line += " >= " + literal(*in.min);
      if (in.max) line += " <= " + literal(*in.max);
    } else if (type == "bool") {
      if (in.derived && in.derived->operands.size() == 2) {
        line += " = " + in.derived->operands[0].text + " " + op_symbol(in.derived->op.text) + " " +
                in.derived->operands[1].text;
      }
    } else if (type == "enum") {
      line += " " + list(in.values ? in.values->items : std::vector<Literal>{});
      if (in.classify) line += classifier(*in.classify);
    }
    if (in.source) line += " source " + in.source->text;
    if (in.idempotency_key && in.idempotency_key->bare("true")) line += " idempotency key";
    if (in.description) line += " " + literal(*in.description);
    return line;
  }

  // ` classify RAW {`, one row per line, `fallback CLASS`, `}`.
  static std::string classifier(const ast::Classifier& c) {
    const auto word = [](const std::string& text) {
      return dsl::is_name_token(text) ? text : dsl::quote(text);
    };
    std::string out = " classify " + (c.from ? c.from->text : std::string("?")) + " {\n";
    for (const ast::ClassifyRow& row : c.rows) {
      out += "  " + (row.kind ? row.kind->text : std::string("in")) + " " + list(row.operands) +
             " -> " + (row.cls ? word(row.cls->text) : std::string("?")) + "\n";
    }
    if (c.fallback) out += "  fallback " + word(c.fallback->text) + "\n";
    return out + "}";
  }

  static std::string op_symbol(const std::string& op) {
    if (op == "eq") return "==";
    if (op == "ne") return "!=";
    if (op == "lt") return "<";
    if (op == "le") return "<=";
    if (op == "gt") return ">";
    if (op == "ge") return ">=";
    return op;
  }

  static std::string condition(const ast::Condition& c) {
    const std::string& op = c.op.text;
    const std::string& field = c.field.text;
    if (op == "absent" || op == "present") return field + " is " + op;
    if (op == "in") return field + " in " + list(c.operands);
    if (op == "not_in") return field + " not in " + list(c.operands);
    if (op == "eq" && c.operands.size() == 1 && c.operands[0].bare("true")) return field;
    if (op == "eq" && c.operands.size() == 1 && c.operands[0].bare("false")) return "not " + field;
    return field + " " + op_symbol(op) + " " +
           (c.operands.empty() ? std::string("\"\"") : literal(c.operands[0]));
  }

  static std::string conditions(const std::vector<ast::Condition>& list) {
    std::string out;
    for (size_t i = 0; i < list.size(); ++i) out += (i ? " and " : "") + condition(list[i]);
    return out;
  }

  static std::string guard(const ast::Guard& g) {
    std::string line = "rule " + g.id.text + ": when " +
                       conditions(g.when ? *g.when : std::vector<ast::Condition>{}) + " -> " +
                       (g.verb ? g.verb->text : std::string("?"));
    if (g.reason) line += " " + literal(*g.reason);
    return line;
  }

  static std::string row(const ast::Row& r) {
    std::string line;
    for (size_t i = 0; i < r.keys.size(); ++i) line += (i ? ", " : "") + literal(r.keys[i]);
    line += " -> " + (r.verb ? r.verb->text : std::string("?"));
    if (r.id) line += " as " + r.id->text;
    if (r.reason) line += " " + literal(*r.reason);
    return line;
  }

  static std::string invariant(const ast::Invariant& n) {
    std::string line = "invariant " + n.id.text + ": ";
    if (n.when) line += "when " + conditions(*n.when) + " -> ";
    const std::string op = n.require_op ? n.require_op->text : "";
    std::string operands;
    for (size_t i = 0; i < n.operands.size(); ++i) operands += (i ? ", " : "") + n.operands[i].text;
    if (op == "verb_in") {
      line += "verb in (" + operands + ")";
    } else if (op == "verb_not_in") {
      line += "verb not in (" + operands + ")";
    } else if (op == "effect_at_most") {
      line += "effect <= " + operands;
    } else {
      line += "effect != " + operands;
    }
    if (n.reason) line += " " + literal(*n.reason);
    return line;
  }

  const ast::Policy& policy_;
  std::map<std::string, Attached> attached_;
  std::string out_;
};

Literal bare(std::string text) { return Literal{Literal::Kind::kBare, std::move(text), {}}; }
Literal quoted(std::string text) { return Literal{Literal::Kind::kQuoted, std::move(text), {}}; }
ast::Name name(std::string text) { return ast::Name{std::move(text), {}}; }

// A value as a literal that check() types back to the same value.
Literal value_literal(const ir::Value& v, const std::string& constant = {}) {
  switch (v.kind) {
    case ir::Value::Kind::kInt:
      return bare(constant.empty() ? std::to_string(v.i) : constant);
    case ir::Value::Kind::kBool:
      return bare(v.b ? "true" : "false");
    case ir::Value::Kind::kString:
      return dsl::is_bare_word(v.str) ? bare(v.str) : quoted(v.str);
  }
  return quoted(v.str);
}

std::vector<ast::Condition> to_conditions(const ir::Policy& p,
                                          const std::vector<ir::Condition>& conditions) {
  std::vector<ast::Condition> out;
  for (const ir::Condition& c : conditions) {
    ast::Condition condition;
    condition.field = name(p.fields.at(c.field).name);
    condition.op = name(ir::op_name(c.op));
    condition.operand_is_list = c.op == ir::Op::kIn || c.op == ir::Op::kNotIn;
    for (const ir::Value& v : c.values) {
      condition.operands.push_back(value_literal(v, condition.operand_is_list ? "" : c.constant));
    }
    out.push_back(std::move(condition));
  }
  return out;
}

}  // namespace

std::string print_dsl(const ast::Policy& policy, const std::vector<dsl::Comment>& comments,
                      const std::vector<uint32_t>& table_close_lines) {
  return Printer(policy, comments, table_close_lines).run();
}

ast::Policy to_ast(const ir::Policy& p) {
  ast::Policy out;
  out.id = dsl::is_name_token(p.id) ? bare(p.id) : quoted(p.id);
  out.revision = bare(std::to_string(p.revision));
  if (!p.description.empty()) out.description = quoted(p.description);
  if (!p.sensitive.empty()) {
    out.sensitive.emplace();
    for (const std::string& name : p.sensitive) {
      out.sensitive->items.push_back(dsl::is_bare_word(name) ? bare(name) : quoted(name));
    }
  }
  out.inputs.emplace();
  for (const ir::Field& f : p.fields) {
    ast::Input in;
    in.name = name(f.name);
    in.type = name(ir::field_type_name(f.type));
    if (f.optional) in.optional_flag = bare("true");
    if (f.empty_means_absent) in.empty_means_absent = bare("true");
    if (f.min) in.min = bare(std::to_string(*f.min));
    if (f.max) in.max = bare(std::to_string(*f.max));
    if (f.type == ir::FieldType::kEnum) {
      in.values.emplace();
      for (const std::string& v : f.enum_values) {
        in.values->items.push_back(dsl::is_bare_word(v) ? bare(v) : quoted(v));
      }
    }
    if (!f.domain.empty()) {
      in.domain.emplace();
      for (const std::string& v : f.domain) {
        in.domain->items.push_back(dsl::is_bare_word(v) ? bare(v) : quoted(v));
      }
    }
    if (f.derived) {
      in.derived = ast::Derivation{
          name(ir::op_name(f.derived->op)),
          {name(p.fields.at(f.derived->lhs).name), name(p.fields.at(f.derived->rhs).name)},
          {}};
    }
    if (f.classify) {
      ast::Classifier c;
      c.from = name(p.fields.at(f.classify->from).name);
      for (const ir::ClassifyRow& row : f.classify->rows) {
        ast::ClassifyRow r;
        r.kind = name(row.kind == ir::ClassifyRow::Kind::kIn       ? "in"
                      : row.kind == ir::ClassifyRow::Kind::kPrefix ? "prefix"
                                                                   : "range");
        for (const ir::Value& v : row.values) {
          r.operands.push_back(v.kind == ir::Value::Kind::kInt ? bare(std::to_string(v.i))
                                                               : quoted(v.str));
        }
        r.cls = name(f.enum_values.at(row.cls));
        c.rows.push_back(std::move(r));
      }
      c.fallback = name(f.enum_values.at(f.classify->fallback));
      in.classify = std::move(c);
    }
    if (f.source != ir::InputSource::kLetter) in.source = name(ir::input_source_name(f.source));
    if (f.idempotency_key) in.idempotency_key = bare("true");
    if (!f.description.empty()) in.description = quoted(f.description);
    out.inputs->push_back(std::move(in));
  }
  out.verbs.emplace();
  for (const ir::Verb& v : p.verbs) {
    ast::Verb verb;
    verb.name = name(v.name);
    verb.effect = name(ir::effect_name(v.effect));
    if (!v.description.empty()) verb.description = quoted(v.description);
    out.verbs->push_back(std::move(verb));
  }
  if (p.default_verb < p.verbs.size()) out.default_verb = name(p.verbs[p.default_verb].name);
  if (p.default_reason != "no rule matched") out.default_reason = quoted(p.default_reason);
  for (const ir::Constant& c : p.constants) {
    out.constants.push_back(ast::Constant{name(c.name), bare(std::to_string(c.value)), {}});
  }
  out.rules.emplace();
  for (const ir::Rule& rule : p.rules) {
    ast::Rule r;
    if (const auto* g = std::get_if<ir::Guard>(&rule)) {
      r.kind = ast::Rule::Kind::kGuard;
      r.guard.id = name(g->id);
      r.guard.when = to_conditions(p, g->conditions);
      r.guard.verb = name(p.verbs.at(g->verb).name);
      r.guard.reason = quoted(g->reason);
    } else {
      const auto& t = std::get<ir::Table>(rule);
      r.kind = ast::Rule::Kind::kTable;
      r.table.id = name(t.id);
      r.table.keys.emplace();
      for (uint32_t k : t.key_fields) r.table.keys->push_back(name(p.fields.at(k).name));
      r.table.rows.emplace();
      for (const ir::Row& row : t.rows) {
        ast::Row out_row;
        std::string derived = t.id + ":";
        for (size_t k = 0; k < row.keys.size(); ++k) {
          out_row.keys.push_back(row.keys[k] ? value_literal(*row.keys[k])
                                             : Literal{Literal::Kind::kWildcard, "*", {}});
          derived += (k ? "/" : "") + ir::key_text(row.keys[k]);
        }
        out_row.verb = name(p.verbs.at(row.verb).name);
        if (row.id != derived) out_row.id = name(row.id);
        if (!row.reason.empty()) out_row.reason = quoted(row.reason);
        r.table.rows->push_back(std::move(out_row));
      }
    }
    out.rules->push_back(std::move(r));
  }
  for (const ir::Invariant& n : p.invariants) {
    ast::Invariant invariant;
    invariant.id = name(n.id);
    if (!n.conditions.empty()) invariant.when = to_conditions(p, n.conditions);
    invariant.require_op = name(ir::invariant_op_name(n.op));
    if (n.op == ir::InvariantOp::kVerbIn || n.op == ir::InvariantOp::kVerbNotIn) {
      for (uint32_t v : n.verbs) invariant.operands.push_back(name(p.verbs.at(v).name));
    } else {
      invariant.operands.push_back(name(ir::effect_name(n.effect)));
    }
    if (!n.reason.empty()) invariant.reason = quoted(n.reason);
    out.invariants.push_back(std::move(invariant));
  }
  return out;
}

std::string print_dsl(const ir::Policy& policy) { return print_dsl(to_ast(policy)); }

FormatResult format_dsl(std::string_view text, std::string_view path) {
  FormatResult result;
  dsl::ParseResult parsed = dsl::parse(text, path);
  if (!parsed.ok()) {
    result.diagnostics = std::move(parsed.diagnostics);
    return result;
  }
  result.text = print_dsl(parsed.policy, parsed.comments, parsed.table_close_lines);
  return result;
}

FormatResult format_dsl_checked(std::string_view text, std::string_view path) {
  FormatResult formatted = format_dsl(text, path);
  if (!formatted.text) return formatted;
  const FormatResult reparsed = format_dsl(*formatted.text, path);
  if (reparsed.text && *reparsed.text == *formatted.text) return formatted;
  formatted.unstable =
      !reparsed.text && !reparsed.diagnostics.empty()
          ? reparsed.diagnostics.front().code + ": " + reparsed.diagnostics.front().message
          : "it is not stable under a second fmt";
  formatted.text.reset();
  return formatted;
}

}  // namespace replaygate
