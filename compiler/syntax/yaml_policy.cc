// YAML front-end: yaml::Node tree -> ast::Policy, reporting shape problems (see yaml_policy.h).
#include "compiler/syntax/yaml_policy.h"

#include <string>
#include <utility>

#include "compiler/syntax/policy_keys.h"

namespace replaygate::yaml {
namespace {

const char* kind_name(const Node& node) {
  switch (node.kind) {
    case Node::Kind::kNull:
      return "nothing";
    case Node::Kind::kScalar:
      return "a scalar";
    case Node::Kind::kSequence:
      return "a list";
    case Node::Kind::kMapping:
      return "a mapping";
  }
  return "?";
}

class AstBuilder {
 public:
  AstBuilder(std::string_view path, std::vector<Diagnostic>& diagnostics)
      : path_(path), diagnostics_(diagnostics) {}

  ast::Policy build(const Node& root) {
    ast::Policy policy;
    policy.span = root.span;
    if (root.is_null()) {
      error("RG100", "the policy file is empty", {},
            "a policy is a mapping with the keys policy, revision, inputs, verbs, default and "
            "rules (see docs/policy-language.md)");
      return policy;
    }
    if (!root.is_mapping()) {
      error("RG100", std::string("the policy must be a mapping of keys, not ") + kind_name(root),
            root.span, "start with 'policy: NAME' and 'revision: 1' (see docs/policy-language.md)");
      return policy;
    }
    for (const auto& [key, value] : root.entries) {
      const std::string& k = key.scalar;
      if (k == "policy") {
        policy.id = scalar(value, key, "policy");
        policy.id_span = key.span;
      } else if (k == "revision") {
        policy.revision = scalar(value, key, "revision");
      } else if (k == "description") {
        policy.description = scalar(value, key, "description");
      } else if (k == "inputs") {
        policy.inputs = inputs(key, value);
      } else if (k == "verbs") {
        policy.verbs = verbs(key, value);
      } else if (k == "default") {
        policy.default_verb = name_value(value, key, "default");
      } else if (k == "default_reason") {
        policy.default_reason = scalar(value, key, "default_reason");
      } else if (k == "constants") {
        policy.constants = constants(key, value);
      } else if (k == "rules") {
        policy.rules = rules(key, value);
      } else if (k == "sensitive") {
        policy.sensitive = literal_list(value, key, "'sensitive'");
      } else if (k == "invariants") {
        policy.invariants = invariants(key, value);
      } else {
        unknown_key(key, "top-level key", policy_keys::kTop);
      }
    }
    return policy;
  }

 private:
  void error(std::string code, std::string message, Span span, std::string hint = {}) {
    diagnostics_.push_back(Diagnostic{Severity::kError, std::move(code), std::move(message),
                                      std::string(path_), span, std::move(hint)});
  }

  void unknown_key(const Node& key, const std::string& what,
                   const std::vector<std::string>& known) {
    const std::string suggestion = closest_match(key.scalar, known);
    std::string hint;
    if (!suggestion.empty()) {
      hint = "did you mean '" + suggestion + "'?";
    } else {
      hint = "expected one of:";
      for (size_t i = 0; i < known.size(); ++i) hint += (i == 0 ? " " : ", ") + known[i];
    }
    error("RG101", "unknown " + what + " '" + key.scalar + "'", key.span, hint);
  }

  void wrong_shape(const Node& value, const Node& key, const std::string& what,
                   const std::string& expected) {
    const Span span = value.is_null() ? key.span : value.span;
    error("RG103", what + " must be " + expected + ", not " + kind_name(value), span);
  }

  static ast::Name name_of(const Node& node) { return ast::Name{node.scalar, node.span}; }

  static ast::Literal literal_of(const Node& node) {
    ast::Literal literal;
    literal.kind = node.is_null() ? ast::Literal::Kind::kNull
                   : node.quoted  ? ast::Literal::Kind::kQuoted
                                  : ast::Literal::Kind::kBare;
    literal.text = node.scalar;
    literal.span = node.span;
    return literal;
  }

  // A scalar (or null) value; a collection is RG103 and gives nullopt.
  std::optional<ast::Literal> scalar(const Node& value, const Node& key, const std::string& what) {
    if (value.is_sequence() || value.is_mapping()) {
      wrong_shape(value, key, "'" + what + "'", "a single value");
      return std::nullopt;
    }
    return literal_of(value);
  }

  // A name written as a scalar; a collection is RG103. Null gives nullopt quietly: check()
  // reports the missing name once.
  std::optional<ast::Name> name_value(const Node& value, const Node& key, const std::string& what) {
    if (value.is_null()) return std::nullopt;
    if (!value.is_scalar()) {
      wrong_shape(value, key, "'" + what + "'", "a name");
      return std::nullopt;
    }
    return name_of(value);
  }

  // A list of scalars; a scalar or mapping is RG103.
  // `*bad_item` (if given) is set when an item was dropped for being a collection.
  std::optional<ast::LiteralList> literal_list(const Node& value, const Node& key,
                                               const std::string& what, bool in_row = false,
                                               bool* bad_item = nullptr) {
    if (!value.is_sequence()) {
      wrong_shape(value, key, what, "a list");
      return std::nullopt;
    }
    ast::LiteralList list;
    list.span = value.span;
    for (const Node& item : value.items) {
      if (item.is_sequence() || item.is_mapping()) {
        error("RG103", "each item of " + what + " must be a single value, not " + kind_name(item),
              item.span);
        if (bad_item != nullptr) *bad_item = true;
        continue;
      }
      list.items.push_back(in_row ? row_key(item) : literal_of(item));
    }
    return list;
  }

  static ast::Literal row_key(const Node& item) {
    ast::Literal literal = literal_of(item);
    if (item.quoted && item.scalar == "*") literal.kind = ast::Literal::Kind::kWildcard;
    return literal;
  }

  // Entries of a mapping value; null counts as an empty mapping. Not a mapping: RG103, nullptr.
  const std::vector<std::pair<Node, Node>>* entries(const Node& value, const Node& key,
                                                    const std::string& what) {
    static const std::vector<std::pair<Node, Node>> kEmpty;
    if (value.is_null()) return &kEmpty;
    if (!value.is_mapping()) {
      wrong_shape(value, key, what, "a mapping");
      return nullptr;
    }
    return &value.entries;
  }

  std::optional<std::vector<ast::Input>> inputs(const Node& key, const Node& value) {
    const auto* list = entries(value, key, "'inputs'");
    if (list == nullptr) return std::vector<ast::Input>{};
    std::vector<ast::Input> out;
    for (const auto& [name, props] : *list) {
      ast::Input input;
      input.name = name_of(name);
      input.span = name.span;
      const auto* prop_list = entries(props, name, "input '" + name.scalar + "'");
      if (prop_list == nullptr) {
        out.push_back(std::move(input));
        continue;
      }
      for (const auto& [prop, prop_value] : *prop_list) {
        const std::string& p = prop.scalar;
        if (p == "type") {
          input.type = name_value(prop_value, prop, "type");
        } else if (p == "optional") {
          input.optional_flag = scalar(prop_value, prop, "optional");
        } else if (p == "empty_means_absent") {
          input.empty_means_absent = scalar(prop_value, prop, "empty_means_absent");
        } else if (p == "min") {
          input.min = scalar(prop_value, prop, "min");
        } else if (p == "max") {
          input.max = scalar(prop_value, prop, "max");
        } else if (p == "values") {
          input.values = literal_list(prop_value, prop, "'values'");
        } else if (p == "domain") {
          input.domain = literal_list(prop_value, prop, "'domain'");
        } else if (p == "description") {
          input.description = scalar(prop_value, prop, "description");
        } else if (p == "derived") {
          input.derived = derivation(prop, prop_value);
        } else if (p == "idempotency_key") {
          input.idempotency_key = scalar(prop_value, prop, "idempotency_key");
        } else if (p == "classify") {
          input.classify = classifier(prop, prop_value);
        } else if (p == "source") {
          // `source: ~` names no source: check() reports it (RG144) rather than let it mean
          // the default, `letter`, which is the permissive one.
          if (prop_value.is_null()) {
            input.source = ast::Name{"", prop_value.span.line > 0 ? prop_value.span : prop.span};
          } else {
            input.source = name_value(prop_value, prop, "source");
          }
        } else {
          unknown_key(prop, "input property", policy_keys::kInput);
        }
      }
      out.push_back(std::move(input));
    }
    return out;
  }

  // `derived: {OP: [lhs, rhs]}`: one entry whose value is a list of names. The op and the operand
  // count are check()'s business (RG141), so both front-ends report them alike.
  std::optional<ast::Derivation> derivation(const Node& key, const Node& value) {
    if (!value.is_mapping() || value.entries.size() != 1) {
      const std::string expected = "a mapping with one operator, e.g. {lt: [a, b]}";
      if (value.is_mapping()) {
        error("RG103",
              "'derived' must be " + expected + ", not " + std::to_string(value.entries.size()) +
                  " entries",
              value.span);
      } else {
        wrong_shape(value, key, "'derived'", expected);
      }
      return std::nullopt;
    }
    const auto& [op, operands] = value.entries.front();
    if (!operands.is_sequence()) {
      wrong_shape(operands, op, "the operands of 'derived'", "a list of two input names");
      return std::nullopt;
    }
    ast::Derivation d;
    d.op = name_of(op);
    d.span = key.span;
    for (const Node& item : operands.items) {
      if (!item.is_scalar()) {
        error(
            "RG103",
            std::string("each operand of 'derived' must be an input name, not ") + kind_name(item),
            item.span);
        return std::nullopt;
      }
      d.operands.push_back(name_of(item));
    }
    return d;
  }

  // `classify: {from: RAW, rows: [{class: C, in|prefix|range: [..]}, ...], fallback: C}`. Shapes
  // only: names, kinds and operand types are check()'s (RG15x), so both front-ends agree.
  std::optional<ast::Classifier> classifier(const Node& key, const Node& value) {
    const auto* list = entries(value, key, "'classify'");
    if (list == nullptr) return std::nullopt;
    ast::Classifier c;
    c.span = key.span;
    for (const auto& [prop, prop_value] : *list) {
      const std::string& p = prop.scalar;
      if (p == "from") {
        c.from = name_value(prop_value, prop, "from");
      } else if (p == "fallback") {
        c.fallback = name_value(prop_value, prop, "fallback");
      } else if (p == "rows") {
        if (!prop_value.is_sequence()) {
          wrong_shape(prop_value, prop, "'rows' of 'classify'", "a list");
          continue;
        }
        for (const Node& row : prop_value.items) {
          if (auto r = classify_row(row)) c.rows.push_back(std::move(*r));
        }
      } else {
        unknown_key(prop, "classify property", policy_keys::kClassify);
      }
    }
    return c;
  }

  // One row: `{class: C, KIND: OPERANDS}` with KIND one of in, prefix, range; a scalar operand
  // stands for a one-item list.
  std::optional<ast::ClassifyRow> classify_row(const Node& row) {
    if (!row.is_mapping()) {
      error("RG103",
            std::string("a classify row must be a mapping such as {class: retryable, in: [503]}, "
                        "not ") +
                kind_name(row),
            row.span);
      return std::nullopt;
    }
    ast::ClassifyRow r;
    r.span = row.span;
    for (const auto& [prop, prop_value] : row.entries) {
      const std::string& p = prop.scalar;
      if (p == "class") {
        r.cls = name_value(prop_value, prop, "class");
      } else if (p == "in" || p == "prefix" || p == "range") {
        if (r.kind) {
          error("RG103", "a classify row has one matcher; this one also has '" + r.kind->text + "'",
                prop.span, "split it into two rows");
          return std::nullopt;
        }
        r.kind = name_of(prop);
        if (prop_value.is_sequence()) {
          auto items = literal_list(prop_value, prop, "'" + p + "'");
          if (!items) return std::nullopt;
          r.operands = std::move(items->items);
        } else if (auto one = scalar(prop_value, prop, p)) {
          r.operands.push_back(*one);
        } else {
          return std::nullopt;
        }
      } else {
        unknown_key(prop, "classify row key", policy_keys::kClassifyRow);
      }
    }
    return r;
  }

  std::optional<std::vector<ast::Verb>> verbs(const Node& key, const Node& value) {
    const auto* list = entries(value, key, "'verbs'");
    if (list == nullptr) return std::vector<ast::Verb>{};
    std::vector<ast::Verb> out;
    for (const auto& [name, props] : *list) {
      ast::Verb verb;
      verb.name = name_of(name);
      verb.span = name.span;
      const auto* prop_list = entries(props, name, "verb '" + name.scalar + "'");
      if (prop_list != nullptr) {
        for (const auto& [prop, prop_value] : *prop_list) {
          if (prop.scalar == "effect") {
            verb.effect = name_value(prop_value, prop, "effect");
          } else if (prop.scalar == "description") {
            verb.description = scalar(prop_value, prop, "description");
          } else {
            unknown_key(prop, "verb property", policy_keys::kVerb);
          }
        }
      }
      out.push_back(std::move(verb));
    }
    return out;
  }

  std::vector<ast::Constant> constants(const Node& key, const Node& value) {
    std::vector<ast::Constant> out;
    const auto* list = entries(value, key, "'constants'");
    if (list == nullptr) return out;
    for (const auto& [name, constant_value] : *list) {
      auto literal = scalar(constant_value, name, "constant '" + name.scalar + "'");
      if (!literal) continue;
      out.push_back(ast::Constant{name_of(name), *literal, name.span});
    }
    return out;
  }

  std::optional<std::vector<ast::Rule>> rules(const Node& key, const Node& value) {
    if (value.is_null()) return std::vector<ast::Rule>{};
    if (!value.is_sequence()) {
      wrong_shape(value, key, "'rules'", "a list of guards and tables");
      return std::vector<ast::Rule>{};
    }
    std::vector<ast::Rule> out;
    for (const Node& item : value.items) {
      if (!item.is_mapping()) {
        error("RG103",
              std::string("each rule must be a mapping ('guard: ID' or 'table: ID'), not ") +
                  kind_name(item),
              item.span);
        continue;
      }
      const Node* guard = item.find("guard");
      const Node* table = item.find("table");
      if (guard != nullptr && table != nullptr) {
        error("RG103", "a rule is either a guard or a table, not both", item.span,
              "split it into two rules");
        continue;
      }
      if (guard == nullptr && table == nullptr) {
        error("RG102", "this rule has neither 'guard: ID' nor 'table: ID'", item.span,
              "start the rule with 'guard: ID' (conditions) or 'table: ID' (rows)");
        continue;
      }
      ast::Rule rule;
      if (guard != nullptr) {
        rule.kind = ast::Rule::Kind::kGuard;
        rule.guard = build_guard(item);
      } else {
        rule.kind = ast::Rule::Kind::kTable;
        rule.table = build_table(item);
      }
      out.push_back(std::move(rule));
    }
    return out;
  }

  // The id of a rule: the `guard:`/`table:` entry's value (RG103 if not a scalar).
  ast::Name rule_id(const Node& key, const Node& value) {
    if (value.is_scalar()) return name_of(value);
    wrong_shape(value, key, "'" + key.scalar + "'", "the rule's id");
    return ast::Name{"", key.span};
  }

  ast::Guard build_guard(const Node& item) {
    ast::Guard guard;
    for (const auto& [key, value] : item.entries) {
      const std::string& k = key.scalar;
      if (k == "guard") {
        guard.id = rule_id(key, value);
        guard.span = key.span;
      } else if (k == "when") {
        guard.when_span = key.span;
        guard.when = conditions(key, value);
      } else if (k == "verb") {
        guard.verb = name_value(value, key, "verb");
      } else if (k == "reason") {
        guard.reason = scalar(value, key, "reason");
      } else {
        unknown_key(key, "guard key", policy_keys::kGuard);
      }
    }
    return guard;
  }

  std::optional<std::vector<ast::Condition>> conditions(const Node& key, const Node& value) {
    std::vector<ast::Condition> out;
    const auto* list = entries(value, key, "'when'");
    if (list == nullptr) return std::nullopt;
    for (const auto& [field, matcher] : *list) {
      ast::Condition base;
      base.field = name_of(field);
      base.span = field.span;
      if (matcher.is_scalar() || matcher.is_null()) {
        ast::Condition condition = base;
        if (!matcher.quoted && (matcher.scalar == "absent" || matcher.scalar == "present")) {
          condition.op = ast::Name{matcher.scalar, matcher.span};
        } else {
          condition.op = ast::Name{"eq", matcher.span};
          condition.operands.push_back(literal_of(matcher));
        }
        out.push_back(std::move(condition));
      } else if (matcher.is_sequence()) {
        ast::Condition condition = base;
        condition.op = ast::Name{"in", matcher.span};
        if (auto operands = literal_list(matcher, field, "the list for '" + field.scalar + "'",
                                         false, &condition.malformed)) {
          condition.operands = std::move(operands->items);
        }
        condition.operand_is_list = true;
        out.push_back(std::move(condition));
      } else {
        for (const auto& [op, operand] : matcher.entries) {
          ast::Condition condition = base;
          condition.op = name_of(op);
          condition.span = op.span;
          if (operand.is_mapping()) {
            wrong_shape(operand, op, "the operand of '" + op.scalar + "'", "a value or a list");
            condition.malformed = true;
            out.push_back(std::move(condition));
            continue;
          }
          if (operand.is_sequence()) {
            if (auto operands = literal_list(operand, op, "the list for '" + op.scalar + "'", false,
                                             &condition.malformed)) {
              condition.operands = std::move(operands->items);
            }
            condition.operand_is_list = true;
          } else {
            condition.operands.push_back(literal_of(operand));
            if (operand.is_null()) condition.operands.back().span = op.span;
          }
          out.push_back(std::move(condition));
        }
      }
    }
    return out;
  }

  // `invariants:` a list of mappings, each `invariant: ID`, optional `when`, `require` (a
  // mapping with one key: the requirement, whose value is a verb, a list of verbs or an effect)
  // and optional `reason`. Only the shape is checked here; names and meaning are check()'s.
  std::vector<ast::Invariant> invariants(const Node& key, const Node& value) {
    std::vector<ast::Invariant> out;
    if (value.is_null()) return out;
    if (!value.is_sequence()) {
      wrong_shape(value, key, "'invariants'", "a list of invariants");
      return out;
    }
    for (const Node& item : value.items) {
      if (!item.is_mapping()) {
        error("RG103",
              std::string("each invariant must be a mapping ('invariant: ID'), not ") +
                  kind_name(item),
              item.span);
        continue;
      }
      if (item.find("invariant") == nullptr) {
        error("RG102", "this invariant has no 'invariant: ID'", item.span,
              "start it with 'invariant: ID', then 'when' and 'require'");
        continue;
      }
      ast::Invariant invariant;
      invariant.span = item.span;
      for (const auto& [k, v] : item.entries) {
        if (k.scalar == "invariant") {
          invariant.id = rule_id(k, v);
          invariant.span = k.span;
        } else if (k.scalar == "when") {
          invariant.when_span = k.span;
          invariant.when = conditions(k, v);
          if (!invariant.when) invariant.when = std::vector<ast::Condition>{};
        } else if (k.scalar == "require") {
          invariant.require_span = k.span;
          requirement(k, v, invariant);
        } else if (k.scalar == "reason") {
          invariant.reason = scalar(v, k, "reason");
        } else {
          unknown_key(k, "invariant key", policy_keys::kInvariant);
        }
      }
      out.push_back(std::move(invariant));
    }
    return out;
  }

  // `require: {OP: OPERAND}`: exactly one entry; OPERAND a name or a list of names.
  void requirement(const Node& key, const Node& value, ast::Invariant& invariant) {
    if (!value.is_mapping() || value.entries.size() != 1) {
      const Span span = value.is_null() ? key.span : value.span;
      error("RG103",
            value.is_mapping()
                ? "'require' must hold exactly one requirement, not " +
                      std::to_string(value.entries.size())
                : std::string("'require' must be a mapping with one requirement, not ") +
                      kind_name(value),
            span, "write e.g. require: {verb_in: [hold, never]} or require: {effect_not: create}");
      invariant.require_span = {};  // reported here; check() stays quiet
      invariant.require_op = ast::Name{"", span};
      return;
    }
    const auto& [op, operand] = value.entries.front();
    invariant.require_op = name_of(op);
    if (operand.is_scalar()) {
      invariant.operands.push_back(name_of(operand));
    } else if (auto list = literal_list(operand, op, "the list for '" + op.scalar + "'")) {
      for (const ast::Literal& literal : list->items) {
        invariant.operands.push_back(ast::Name{literal.text, literal.span});
      }
    } else {
      invariant.require_op = ast::Name{"", op.span};  // reported; check() stays quiet
    }
  }

  ast::Table build_table(const Node& item) {
    ast::Table table;
    for (const auto& [key, value] : item.entries) {
      const std::string& k = key.scalar;
      if (k == "table") {
        table.id = rule_id(key, value);
        table.span = key.span;
      } else if (k == "keys") {
        table.keys_span = key.span;
        if (auto list = literal_list(value, key, "'keys'")) {
          std::vector<ast::Name> names;
          for (const ast::Literal& literal : list->items) {
            names.push_back(ast::Name{literal.text, literal.span});
          }
          table.keys = std::move(names);
        }
      } else if (k == "rows") {
        table.rows_span = key.span;
        table.rows = rows(key, value);
      } else {
        unknown_key(key, "table key", policy_keys::kTable);
      }
    }
    return table;
  }

  std::optional<std::vector<ast::Row>> rows(const Node& key, const Node& value) {
    if (value.is_null()) return std::vector<ast::Row>{};
    if (!value.is_sequence()) {
      wrong_shape(value, key, "'rows'", "a list of rows");
      return std::nullopt;
    }
    std::vector<ast::Row> out;
    for (const Node& item : value.items) {
      ast::Row row;
      row.span = item.span;
      if (item.is_sequence()) {
        row.flow = true;
        row.keys_span = item.span;
        auto list = literal_list(item, key, "a row", /*in_row=*/true);
        if (!list) continue;
        if (!list->items.empty()) {
          const ast::Literal& last = list->items.back();
          row.verb = ast::Name{last.text, last.span};
          list->items.pop_back();
        }
        row.keys = std::move(list->items);
      } else if (item.is_mapping()) {
        for (const auto& [row_key_node, row_value] : item.entries) {
          const std::string& k = row_key_node.scalar;
          if (k == "keys") {
            row.keys_span = row_key_node.span;
            if (auto list = literal_list(row_value, row_key_node, "'keys'", /*in_row=*/true)) {
              row.keys = std::move(list->items);
            }
          } else if (k == "verb") {
            row.verb = name_value(row_value, row_key_node, "verb");
          } else if (k == "id") {
            row.id = name_value(row_value, row_key_node, "id");
          } else if (k == "reason") {
            row.reason = scalar(row_value, row_key_node, "reason");
          } else {
            unknown_key(row_key_node, "row key", policy_keys::kRow);
          }
        }
        if (row.keys_span.line == 0) {
          error("RG102", "this row has no 'keys'", item.span,
                "write 'keys: [...]' with one value per table key");
          continue;
        }
        if (!row.verb) {
          error("RG102", "this row has no 'verb'", item.span, "write 'verb: NAME'");
          continue;
        }
      } else {
        error("RG103",
              std::string("a row must be a list [keys..., verb] or a mapping, not ") +
                  kind_name(item),
              item.span);
        continue;
      }
      out.push_back(std::move(row));
    }
    return out;
  }

  std::string_view path_;
  std::vector<Diagnostic>& diagnostics_;
};

}  // namespace

AstResult build_ast(const Node& root, std::string_view path) {
  AstResult result;
  AstBuilder builder(path, result.diagnostics);
  result.policy = builder.build(root);
  return result;
}

}  // namespace replaygate::yaml
