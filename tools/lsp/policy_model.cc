// One open policy: lint's diagnostics, its names and its outline (see policy_model.h).
#include "tools/lsp/policy_model.h"

#include <algorithm>
#include <map>
#include <utility>

#include "compiler/compile.h"
#include "compiler/syntax/ast.h"

namespace replaygate::lsp {
namespace {

bool known(const Span& span) { return span.line != 0; }

// The bytes from the first to the end of the last of the spans added (unknown spans are skipped).
class Extent {
 public:
  void add(const Span& span) {
    if (!known(span)) return;
    begin_ = std::min<size_t>(begin_, span.offset);
    end_ = std::max<size_t>(end_, size_t{span.offset} + span.length);
  }
  void add(const std::optional<ast::Literal>& literal) {
    if (literal) add(literal->span);
  }
  void add(const std::optional<ast::Name>& name) {
    if (name) add(name->span);
  }
  void add(const Symbol& symbol) {
    if (symbol.length == 0) return;
    begin_ = std::min(begin_, symbol.offset);
    end_ = std::max(end_, symbol.offset + symbol.length);
  }
  void set(Symbol* symbol) const {
    if (end_ == 0 && begin_ == kNone) return;
    symbol->offset = begin_;
    symbol->length = end_ - begin_;
  }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);
  size_t begin_ = kNone;
  size_t end_ = 0;
};

std::string text_of(const std::optional<ast::Literal>& literal) {
  return literal ? literal->text : std::string();
}

std::string join(const std::vector<ast::Literal>& items) {
  std::string out;
  for (const ast::Literal& item : items) out += (out.empty() ? "" : ", ") + item.text;
  return out;
}

class Indexer {
 public:
  explicit Indexer(const ast::Policy& policy) : policy_(policy) {
    if (policy.inputs) {
      for (const ast::Input& input : *policy.inputs) {
        if (input.type) input_types_.emplace(input.name.text, input.type->text);
      }
    }
    for (const ast::Constant& constant : policy.constants) constants_.push_back(constant.name.text);
    if (policy.verbs) {
      for (const ast::Verb& verb : *policy.verbs) {
        verb_effects_.emplace(verb.name.text, verb.effect ? verb.effect->text : "?");
      }
    }
  }

  void run(PolicyModel* model) {
    model_ = model;
    if (policy_.inputs) {
      for (const ast::Input& input : *policy_.inputs) index_input(input);
    }
    if (policy_.verbs) {
      for (const ast::Verb& verb : *policy_.verbs) index_verb(verb);
    }
    if (policy_.default_verb) use(NameKind::kVerb, *policy_.default_verb);
    for (const ast::Constant& constant : policy_.constants) index_constant(constant);
    if (policy_.rules) {
      for (const ast::Rule& rule : *policy_.rules) {
        if (rule.kind == ast::Rule::Kind::kGuard) {
          index_guard(rule.guard);
        } else {
          index_table(rule.table);
        }
      }
    }
    for (const ast::Invariant& invariant : policy_.invariants) index_invariant(invariant);
    std::stable_sort(
        model->occurrences.begin(), model->occurrences.end(),
        [](const Occurrence& a, const Occurrence& b) { return a.span.offset < b.span.offset; });
  }

 private:
  void add(NameKind kind, const ast::Name& name, bool definition) {
    if (!known(name.span) || name.text.empty()) return;
    model_->occurrences.push_back(Occurrence{kind, name.text, name.span, definition});
  }
  void use(NameKind kind, const ast::Name& name) { add(kind, name, false); }

  // The outline entry of a declaration (an input, verb or constant): its name is its definition.
  Symbol declared(NameKind kind, const ast::Name& name, SymbolKind symbol_kind,
                  std::string detail) {
    add(kind, name, true);
    Symbol symbol;
    symbol.name = name.text;
    symbol.kind = symbol_kind;
    symbol.selection = name.span;
    symbol.detail = std::move(detail);
    return symbol;
  }

  void finish(Symbol symbol, const Extent& extent) {
    extent.set(&symbol);
    model_->symbols.push_back(std::move(symbol));
  }

  // A bare literal in an int position that is not a number names a constant (check.cc).
  void maybe_constant(const ast::Literal& literal, const std::string& field) {
    if (literal.kind != ast::Literal::Kind::kBare) return;
    const auto type = input_types_.find(field);
    if (type == input_types_.end() || type->second != "int") return;
    if (std::find(constants_.begin(), constants_.end(), literal.text) == constants_.end()) return;
    use(NameKind::kConstant, ast::Name{literal.text, literal.span});
  }

  void index_conditions(const std::vector<ast::Condition>& conditions, Extent* extent) {
    for (const ast::Condition& condition : conditions) {
      use(NameKind::kInput, condition.field);
      extent->add(condition.field.span);
      extent->add(condition.span);
      for (const ast::Literal& operand : condition.operands) {
        maybe_constant(operand, condition.field.text);
        extent->add(operand.span);
      }
    }
  }

  std::string verb_detail(const std::optional<ast::Name>& verb) const {
    if (!verb) return "";
    const auto effect = verb_effects_.find(verb->text);
    return "-> " + verb->text +
           (effect == verb_effects_.end() ? "" : " (effect " + effect->second + ")");
  }

  void index_input(const ast::Input& input) {
    const std::string type = input.type ? input.type->text : "?";
    const bool optional = input.optional_flag && input.optional_flag->bare("true");
    Symbol symbol = declared(NameKind::kInput, input.name, SymbolKind::kVariable,
                             (optional ? "optional " : "") + type);
    symbol.hover.signature = "input " + input.name.text + ": " + symbol.detail;
    std::vector<std::string> facts;
    if (input.min) facts.push_back("min " + input.min->text);
    if (input.max) facts.push_back("max " + input.max->text);
    if (input.values) facts.push_back("values: " + join(input.values->items));
    if (input.domain) facts.push_back("known values: " + join(input.domain->items));
    if (input.empty_means_absent && input.empty_means_absent->bare("true")) {
      facts.push_back("\"\" means absent");
    }
    if (input.derived && input.derived->operands.size() == 2) {
      facts.push_back("derived: " + input.derived->operands[0].text + " " + input.derived->op.text +
                      " " + input.derived->operands[1].text);
    }
    if (input.classify && input.classify->from) {
      facts.push_back("classified from " + input.classify->from->text);
    }
    if (input.source) facts.push_back("source: " + input.source->text);
    if (input.idempotency_key && input.idempotency_key->bare("true")) {
      facts.push_back("the letter's idempotency key");
    }
    for (const std::string& fact : facts) symbol.hover.signature += "\n" + fact;
    symbol.hover.text = text_of(input.description);
    Extent extent;
    extent.add(input.span);
    extent.add(input.name.span);
    extent.add(input.type);
    extent.add(input.description);
    if (input.derived) {
      extent.add(input.derived->span);
      for (const ast::Name& operand : input.derived->operands) {
        use(NameKind::kInput, operand);
        extent.add(operand.span);
      }
    }
    if (input.classify) {
      extent.add(input.classify->span);
      if (input.classify->from) use(NameKind::kInput, *input.classify->from);
      extent.add(input.classify->from);
      extent.add(input.classify->fallback);
      for (const ast::ClassifyRow& row : input.classify->rows) {
        extent.add(row.span);
        for (const ast::Literal& operand : row.operands) {
          if (input.classify->from) maybe_constant(operand, input.classify->from->text);
          extent.add(operand.span);
        }
      }
    }
    finish(std::move(symbol), extent);
  }

  void index_verb(const ast::Verb& verb) {
    Symbol symbol = declared(NameKind::kVerb, verb.name, SymbolKind::kEvent,
                             "effect " + (verb.effect ? verb.effect->text : std::string("?")));
    symbol.hover = {"verb " + verb.name.text + ": " + symbol.detail, text_of(verb.description)};
    Extent extent;
    extent.add(verb.span);
    extent.add(verb.name.span);
    extent.add(verb.effect);
    extent.add(verb.description);
    finish(std::move(symbol), extent);
  }

  void index_constant(const ast::Constant& constant) {
    Symbol symbol = declared(NameKind::kConstant, constant.name, SymbolKind::kConstant,
                             "= " + constant.value.text);
    symbol.hover = {"const " + constant.name.text + " = " + constant.value.text, ""};
    Extent extent;
    extent.add(constant.span);
    extent.add(constant.name.span);
    extent.add(constant.value.span);
    finish(std::move(symbol), extent);
  }

  void index_guard(const ast::Guard& guard) {
    Symbol symbol;
    symbol.name = guard.id.text;
    symbol.kind = SymbolKind::kFunction;
    symbol.selection = known(guard.id.span) ? guard.id.span : guard.span;
    symbol.detail = verb_detail(guard.verb);
    symbol.hover = {"rule " + guard.id.text + " " + symbol.detail, text_of(guard.reason)};
    Extent extent;
    extent.add(guard.span);
    extent.add(guard.id.span);
    if (guard.when) index_conditions(*guard.when, &extent);
    if (guard.verb) use(NameKind::kVerb, *guard.verb);
    extent.add(guard.verb);
    extent.add(guard.reason);
    finish(std::move(symbol), extent);
  }

  void index_table(const ast::Table& table) {
    Symbol symbol;
    symbol.name = table.id.text;
    symbol.kind = SymbolKind::kStruct;
    symbol.selection = known(table.id.span) ? table.id.span : table.span;
    std::vector<std::string> keys;
    if (table.keys) {
      for (const ast::Name& key : *table.keys) {
        use(NameKind::kInput, key);
        keys.push_back(key.text);
      }
    }
    std::string by;
    for (const std::string& key : keys) by += (by.empty() ? "" : ", ") + key;
    symbol.detail = "by (" + by + ")";
    const size_t rows = table.rows ? table.rows->size() : 0;
    symbol.hover = {"table " + table.id.text + " " + symbol.detail + ": " + std::to_string(rows) +
                        (rows == 1 ? " row" : " rows"),
                    ""};
    Extent extent;
    extent.add(table.span);
    extent.add(table.id.span);
    extent.add(table.keys_span);
    extent.add(table.rows_span);
    if (table.rows) {
      for (const ast::Row& row : *table.rows) {
        Symbol child = row_symbol(table, row, keys);
        extent.add(child);
        symbol.children.push_back(std::move(child));
      }
    }
    finish(std::move(symbol), extent);
  }

  Symbol row_symbol(const ast::Table& table, const ast::Row& row,
                    const std::vector<std::string>& keys) {
    Symbol symbol;
    symbol.kind = SymbolKind::kField;
    if (row.id) {
      symbol.name = row.id->text;
    } else {
      // The id check() derives: TABLE:KEY/KEY, with "*" for a wildcard.
      symbol.name = table.id.text + ":";
      for (size_t i = 0; i < row.keys.size(); ++i) {
        symbol.name += (i == 0 ? "" : "/") + row.keys[i].text;
      }
    }
    symbol.selection = row.id ? row.id->span : row.keys_span;
    if (!known(symbol.selection)) symbol.selection = row.span;
    symbol.detail = verb_detail(row.verb);
    symbol.hover = {"row " + symbol.name + " " + symbol.detail, text_of(row.reason)};
    Extent extent;
    extent.add(row.span);
    extent.add(row.keys_span);
    for (size_t i = 0; i < row.keys.size(); ++i) {
      if (i < keys.size()) maybe_constant(row.keys[i], keys[i]);
      extent.add(row.keys[i].span);
    }
    if (row.verb) use(NameKind::kVerb, *row.verb);
    extent.add(row.verb);
    extent.add(row.id);
    extent.add(row.reason);
    extent.set(&symbol);
    return symbol;
  }

  void index_invariant(const ast::Invariant& invariant) {
    Symbol symbol;
    symbol.name = invariant.id.text;
    symbol.kind = SymbolKind::kProperty;
    symbol.selection = known(invariant.id.span) ? invariant.id.span : invariant.span;
    const std::string op = invariant.require_op ? invariant.require_op->text : "?";
    std::string operands;
    for (const ast::Name& operand : invariant.operands) {
      operands += (operands.empty() ? "" : ", ") + operand.text;
    }
    symbol.detail = "requires " + op + " " + operands;
    symbol.hover = {"invariant " + invariant.id.text + ": " + symbol.detail,
                    text_of(invariant.reason)};
    Extent extent;
    extent.add(invariant.span);
    extent.add(invariant.id.span);
    if (invariant.when) index_conditions(*invariant.when, &extent);
    extent.add(invariant.require_span);
    const bool verbs = op == "verb_in" || op == "verb_not_in";
    for (const ast::Name& operand : invariant.operands) {
      if (verbs) use(NameKind::kVerb, operand);
      extent.add(operand.span);
    }
    extent.add(invariant.reason);
    finish(std::move(symbol), extent);
  }

  const ast::Policy& policy_;
  PolicyModel* model_ = nullptr;
  std::map<std::string, std::string> input_types_;
  std::map<std::string, std::string> verb_effects_;
  std::vector<std::string> constants_;
};

bool contains(const Span& span, size_t offset) {
  return offset >= span.offset && offset <= size_t{span.offset} + span.length;
}

// The innermost symbol (a row inside its table) whose bytes hold `offset`.
const Symbol* symbol_at(const std::vector<Symbol>& symbols, size_t offset) {
  for (const Symbol& symbol : symbols) {
    if (offset < symbol.offset || offset > symbol.offset + symbol.length) continue;
    if (const Symbol* inner = symbol_at(symbol.children, offset)) return inner;
    return &symbol;
  }
  return nullptr;
}

const Symbol* definition_symbol(const std::vector<Symbol>& symbols, const Occurrence& definition) {
  for (const Symbol& symbol : symbols) {
    if (symbol.selection == definition.span) return &symbol;
  }
  return nullptr;
}

}  // namespace

PolicyModel analyze_policy(std::string_view text, const std::string& path) {
  PolicyModel model;
  std::optional<ast::Policy> syntax;
  LoadedPolicy loaded = load_policy_text(text, path, &syntax);
  model.diagnostics = std::move(loaded.diagnostics);
  if (syntax) {
    model.indexed = true;
    Indexer(*syntax).run(&model);
  }
  return model;
}

const Occurrence* occurrence_at(const PolicyModel& model, size_t offset) {
  for (const Occurrence& occurrence : model.occurrences) {
    if (contains(occurrence.span, offset)) return &occurrence;
  }
  return nullptr;
}

const Occurrence* definition_of(const PolicyModel& model, const Occurrence& occurrence) {
  for (const Occurrence& candidate : model.occurrences) {
    if (candidate.definition && candidate.kind == occurrence.kind &&
        candidate.name == occurrence.name) {
      return &candidate;
    }
  }
  return nullptr;
}

std::vector<const Occurrence*> references_of(const PolicyModel& model, const Occurrence& occurrence,
                                             bool include_definition) {
  std::vector<const Occurrence*> out;
  for (const Occurrence& candidate : model.occurrences) {
    if (candidate.kind != occurrence.kind || candidate.name != occurrence.name) continue;
    if (candidate.definition && !include_definition) continue;
    out.push_back(&candidate);
  }
  return out;
}

std::optional<HoverText> hover_at(const PolicyModel& model, size_t offset) {
  if (const Occurrence* occurrence = occurrence_at(model, offset)) {
    if (const Occurrence* definition = definition_of(model, *occurrence)) {
      if (const Symbol* symbol = definition_symbol(model.symbols, *definition)) {
        return symbol->hover;
      }
    }
    const char* kind = occurrence->kind == NameKind::kInput  ? "input"
                       : occurrence->kind == NameKind::kVerb ? "verb"
                                                             : "constant";
    return HoverText{std::string(kind) + " " + occurrence->name + ": not declared", ""};
  }
  if (const Symbol* symbol = symbol_at(model.symbols, offset)) return symbol->hover;
  return std::nullopt;
}

}  // namespace replaygate::lsp
