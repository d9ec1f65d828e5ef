// DSL front-end (see dsl_policy.h): the PEGTL grammar, its error messages and the actions that
// fill an ast::Policy. One translation unit on purpose: the grammar and its messages stay together.
//
// The grammar has no recursive rule (conditions are a flat conjunction, lists are flat), so the
// nesting of the input cannot grow the parser's stack; very long input is bounded by the file size
// and line length limits checked before parsing.
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <tao/pegtl.hpp>
#include <tao/pegtl/contrib/analyze.hpp>
#include <utility>

#include "common/source.h"
#include "common/yaml_tree.h"
#include "compiler/ir.h"
#include "compiler/syntax/dsl_policy.h"

namespace replaygate::dsl {
namespace {

namespace pegtl = tao::pegtl;

// ---------------------------------------------------------------------------------------------
// Grammar
// ---------------------------------------------------------------------------------------------
namespace g {
using namespace pegtl;

// Blanks, line ends and comments. A bare CR (not before LF) is no line end.
struct blank : one<' ', '\t'> {};
struct line_end : sor<one<'\n'>, seq<one<'\r'>, one<'\n'>>> {};
struct comment : seq<one<'#'>, star<not_one<'\r', '\n'>>> {};
struct _ : star<sor<blank, line_end, comment>> {};
struct inline_blanks : star<blank> {};  // within one line (before a row's reason)

struct name_first : sor<alpha, one<'_'>> {};
struct name_rest : sor<alnum, one<'_', '.'>, seq<one<'-'>, not_at<one<'>'>>>> {};
struct name : seq<name_first, star<name_rest>> {};
// A bare value: a name, or a number-like word (7, -3, +5, 2xx).
struct bare_word : seq<sor<name_first, digit, seq<one<'-', '+'>, digit>>, star<name_rest>> {};

template <typename Str>
struct kw : seq<Str, not_at<name_rest>> {};
#define RG_KW(id, text) \
  struct id : kw<TAO_PEGTL_STRING(text)> {}
RG_KW(kw_policy, "policy");
RG_KW(kw_revision, "revision");
RG_KW(kw_description, "description");
RG_KW(kw_input, "input");
RG_KW(kw_optional, "optional");
RG_KW(kw_string, "string");
RG_KW(kw_int, "int");
RG_KW(kw_bool, "bool");
RG_KW(kw_enum, "enum");
RG_KW(kw_empty, "empty");
RG_KW(kw_means, "means");
RG_KW(kw_absent, "absent");
RG_KW(kw_present, "present");
RG_KW(kw_domain, "domain");
RG_KW(kw_source, "source");
RG_KW(kw_idempotency, "idempotency");
RG_KW(kw_key, "key");
RG_KW(kw_verb, "verb");
RG_KW(kw_effect, "effect");
RG_KW(kw_default, "default");
RG_KW(kw_const, "const");
RG_KW(kw_rule, "rule");
RG_KW(kw_when, "when");
RG_KW(kw_and, "and");
RG_KW(kw_not, "not");
RG_KW(kw_in, "in");
RG_KW(kw_is, "is");
RG_KW(kw_table, "table");
RG_KW(kw_by, "by");
RG_KW(kw_as, "as");
RG_KW(kw_invariant, "invariant");
RG_KW(kw_sensitive, "sensitive");
RG_KW(kw_classify, "classify");
RG_KW(kw_prefix, "prefix");
RG_KW(kw_range, "range");
RG_KW(kw_fallback, "fallback");
#undef RG_KW

// Strings: double quotes, on one line, escapes \" \\ \n \t \xHH.
struct escape_code : sor<one<'"', '\\', 'n', 't'>, seq<one<'x'>, xdigit, xdigit>> {};
struct escape : seq<one<'\\'>, must<escape_code>> {};
struct string_char : sor<escape, not_one<'"', '\\', '\n', '\r', '\t'>> {};
struct close_quote : one<'"'> {};
struct no_raw_tab : not_at<one<'\t'>> {};
struct quoted : seq<one<'"'>, star<string_char>, must<no_raw_tab, close_quote>> {};

// Literals. lit_* actions set State::literal; the enclosing rule's action takes it.
struct lit_quoted : quoted {};
struct lit_bare : bare_word {};
struct wildcard : one<'*'> {};
struct value : sor<lit_quoted, lit_bare> {};

// Parenthesised lists of values: `(a, "b", 3)`.
struct list_open : one<'('> {};
struct list_item : value {};
struct list_close : one<')'> {};
struct value_list : seq<list_open, _, opt<list_item, star<_, one<','>, _, must<list_item>>>, _,
                        must<list_close>> {};

struct colon : one<':'> {};
struct equals : one<'='> {};
struct arrow : string<'-', '>'> {};

// policy NAME revision N
struct policy_id : sor<lit_quoted, name> {};
struct revision_value : bare_word {};
struct header : seq<kw_policy, _, must<policy_id>, _, must<kw_revision>, _, must<revision_value>> {
};

struct policy_description : quoted {};
struct description_item : seq<kw_description, _, must<policy_description>> {};

// input NAME: [optional] TYPE ["description"]
struct input_name : name {};
struct optional_flag : kw_optional {};
struct type_string : kw_string {};
struct type_int : kw_int {};
struct type_bool : kw_bool {};
struct type_enum : kw_enum {};
struct empty_means_absent : seq<kw_empty, _, kw_means, _, kw_absent> {};
struct domain_list : value_list {};
struct string_type : seq<type_string, opt<_, one<','>, _, must<empty_means_absent>>,
                         opt<_, kw_domain, _, must<domain_list>>> {};
struct min_value : bare_word {};
struct max_value : bare_word {};
struct min_bound : seq<string<'>', '='>, _, must<min_value>> {};
struct max_bound : seq<string<'<', '='>, _, must<max_value>> {};
struct int_type : seq<type_int, opt<_, min_bound>, opt<_, max_bound>> {};
struct derive_lhs : name {};
struct derive_op : sor<string<'=', '='>, string<'!', '='>, string<'<', '='>, string<'>', '='>,
                       one<'<'>, one<'>'>> {};
struct derive_rhs : name {};
struct derivation : seq<derive_lhs, _, must<derive_op>, _, must<derive_rhs>> {};
struct derived_part : seq<equals, _, must<derivation>> {};
struct bool_type : seq<type_bool, opt<_, derived_part>> {};
struct enum_values : value_list {};
// classify RAW { in|prefix|range (VALUE, ...) -> CLASS ... fallback CLASS } after an enum's
// values (ast::Classifier; the fallback is optional here so that check() reports it, RG155).
struct classify_keyword : kw_classify {};
struct classify_from : name {};
struct classify_open : one<'{'> {};
struct classify_close : one<'}'> {};
struct classify_kind : sor<kw_in, kw_prefix, kw_range> {};
struct classify_values : value_list {};
struct classify_class : value {};  // a class: a word or a quoted string
struct classify_arrow : arrow {};
struct classify_row : seq<classify_kind, _, must<classify_values>, _, must<classify_arrow>, _,
                          must<classify_class>> {};
struct classify_fallback : value {};
struct classify_end : seq<kw_fallback, _, must<classify_fallback>> {};
struct classify_part : seq<classify_keyword, _, must<classify_from>, _, must<classify_open>, _,
                           star<classify_row, _>, opt<classify_end, _>, must<classify_close>> {};
struct enum_type : seq<type_enum, _, must<enum_values>, opt<_, classify_part>> {};
struct input_type : sor<string_type, int_type, bool_type, enum_type> {};
// `source operator`: only an operator sets the input (ast::Input::source; check() reads the name).
struct source_name : name {};
struct input_source : seq<kw_source, _, must<source_name>> {};
// `idempotency key`: the input is the letter's idempotency key (ast::Input::idempotency_key).
struct idempotency_key_word : kw_key {};
struct idempotency_key_flag : seq<kw_idempotency, _, must<idempotency_key_word>> {};
struct input_description : quoted {};
struct input_item
    : seq<kw_input, _, must<input_name>, _, must<colon>, _, opt<optional_flag, _>, must<input_type>,
          opt<_, input_source>, opt<_, idempotency_key_flag>, opt<_, input_description>> {};

// verb NAME effect EFFECT ["description"]
struct verb_name : name {};
struct effect_name : name {};
struct verb_description : quoted {};
struct verb_item : seq<kw_verb, _, must<verb_name>, _, must<kw_effect>, _, must<effect_name>,
                       opt<_, verb_description>> {};

// default VERB ["reason"]
struct default_verb : name {};
struct default_reason : quoted {};
struct default_item : seq<kw_default, _, must<default_verb>, opt<_, default_reason>> {};

// const NAME = VALUE
struct const_name : name {};
struct const_value : value {};
struct const_item : seq<kw_const, _, must<const_name>, _, must<equals>, _, must<const_value>> {};

// Conditions: FIELD OP VALUE | FIELD [not] in (...) | FIELD is absent|present | [not] FIELD
struct cond_field : name {};
struct not_field : name {};
struct cmp_op : sor<string<'=', '='>, string<'!', '='>, string<'<', '='>, string<'>', '='>,
                    one<'<'>, one<'>'>> {};
struct cond_value : value {};
struct cmp_tail : seq<cmp_op, _, must<cond_value>> {};
struct op_in : kw_in {};
struct op_not_in : seq<kw_not, _, kw_in> {};
struct in_list : value_list {};
struct in_tail : seq<sor<op_in, op_not_in>, _, must<in_list>> {};
struct absent_or_present : sor<kw_absent, kw_present> {};
struct is_tail : seq<kw_is, _, must<absent_or_present>> {};
struct cond_tail : sor<cmp_tail, in_tail, is_tail> {};
struct negated : seq<kw_not, _, must<not_field>> {};
struct plain : seq<cond_field, opt<_, cond_tail>> {};
struct condition : sor<negated, plain> {};
struct conditions : seq<condition, star<_, kw_and, _, must<condition>>> {};

// rule ID: when CONDITIONS -> VERB ["reason"]
struct rule_keyword : kw_rule {};
struct rule_id : name {};
struct when_keyword : kw_when {};
struct rule_verb : name {};
struct rule_reason : quoted {};
struct rule_item : seq<rule_keyword, _, must<rule_id>, _, must<colon>, _, must<when_keyword>, _,
                       must<conditions>, _, must<arrow>, _, must<rule_verb>, opt<_, rule_reason>> {
};

// table ID by (FIELD, ...) { ROW ... }   ROW: KEY, ... -> VERB [as ID] ["reason"]
struct table_keyword : kw_table {};
struct table_id : name {};
struct table_keys : value_list {};
struct table_open : one<'{'> {};
struct table_close : one<'}'> {};
struct row_key : sor<wildcard, lit_quoted, lit_bare> {};
struct row_keys : seq<row_key, star<_, one<','>, _, must<row_key>>> {};
struct row_verb : name {};
struct row_id : name {};
struct row_reason : quoted {};
struct row : seq<row_keys, _, must<arrow>, _, must<row_verb>,
                 opt<inline_blanks, kw_as, _, must<row_id>>, opt<inline_blanks, row_reason>> {};
struct table_item : seq<table_keyword, _, must<table_id>, _, must<kw_by>, _, must<table_keys>, _,
                        must<table_open>, _, star<row, _>, must<table_close>> {};

// invariant ID: [when CONDITIONS ->] verb [not] in (VERB, ...) | effect <= EFFECT | effect !=
// EFFECT ["reason"]
struct invariant_keyword : kw_invariant {};
struct invariant_id : name {};
struct require_verb_in : kw_in {};
struct require_verb_not_in : seq<kw_not, _, kw_in> {};
struct require_verbs : value_list {};
struct require_verb
    : seq<kw_verb, _, must<sor<require_verb_in, require_verb_not_in>>, _, must<require_verbs>> {};
struct require_at_most : string<'<', '='> {};
struct require_not : string<'!', '='> {};
struct require_effect_value : name {};
struct require_effect
    : seq<kw_effect, _, must<sor<require_at_most, require_not>>, _, must<require_effect_value>> {};
struct requirement : sor<require_verb, require_effect> {};
struct invariant_premise : seq<when_keyword, _, must<conditions>, _, must<arrow>> {};
struct invariant_reason : quoted {};
struct invariant_item
    : seq<invariant_keyword, _, must<invariant_id>, _, must<colon>, _, opt<invariant_premise, _>,
          must<requirement>, opt<_, invariant_reason>> {};

// sensitive (FIELD, ...): letter fields whose values tools never print
struct sensitive_list : value_list {};
struct sensitive_item : seq<kw_sensitive, _, must<sensitive_list>> {};

struct item : sor<description_item, sensitive_item, input_item, verb_item, default_item, const_item,
                  rule_item, table_item, invariant_item> {};
struct end_of_file : eof {};
struct file : seq<_, must<header>, _, star<item, _, opt<one<';'>, _>>, must<end_of_file>> {};

}  // namespace g

// ---------------------------------------------------------------------------------------------
// Error messages: "message\nhint" for every rule that appears inside a must<>.
// ---------------------------------------------------------------------------------------------
template <typename Rule>
inline constexpr const char* message = nullptr;
#define RG_MSG(rule, text) \
  template <>              \
  inline constexpr const char* message<g::rule> = text
RG_MSG(escape_code, "unknown escape in a string\nthe escapes are \\\", \\\\, \\n, \\t and \\xHH");
RG_MSG(no_raw_tab,
       "a tab inside a string\nwrite \\t for a tab in a string (tabs between words are fine)");
RG_MSG(close_quote,
       "unterminated string\na string ends on the line it starts; write \\n for a line break, "
       "\\t for a tab, \\\" for a quote");
RG_MSG(list_item, "expected a value in the list\nwrite the values as (a, b, \"c d\")");
RG_MSG(list_close, "expected ',' or ')' in the list\nwrite the values as (a, b, \"c d\")");
RG_MSG(header,
       "a .policy file starts with 'policy NAME revision N'\nfor example: policy dlq-replay-gate "
       "revision 1");
RG_MSG(policy_id,
       "expected the policy's name after 'policy'\nfor example: policy dlq-replay-gate "
       "revision 1");
RG_MSG(kw_revision,
       "expected 'revision N' after the policy's name\nfor example: policy "
       "dlq-replay-gate revision 1");
RG_MSG(revision_value, "expected the revision number after 'revision'\nfor example: revision 1");
RG_MSG(policy_description,
       "expected a quoted text after 'description'\nfor example: description "
       "\"what the policy decides\"");
RG_MSG(input_name, "expected the input's name after 'input'\nfor example: input topic: string");
RG_MSG(colon,
       "expected ':' after the name\nfor example: input topic: string, or rule ID: when ...");
RG_MSG(input_type,
       "expected the input's type: string, int, bool or enum (...)\nfor example: "
       "input attempts: int >= 0");
RG_MSG(empty_means_absent,
       "expected 'empty means absent' after ','\nfor example: input key: "
       "optional string, empty means absent");
RG_MSG(domain_list,
       "expected the list of known values after 'domain'\nfor example: input topic: "
       "string domain (payment.capture, mail.receipt)");
RG_MSG(min_value, "expected the lower bound after '>='\nfor example: input attempts: int >= 0");
RG_MSG(max_value,
       "expected the upper bound after '<='\nfor example: input attempts: int >= 0 <= "
       "100");
RG_MSG(derivation,
       "expected a comparison of two int inputs after '='\nfor example: input stale: "
       "bool = message_revision < record_revision");
RG_MSG(derive_op,
       "expected a comparison operator (==, !=, <, <=, >, >=)\nfor example: input "
       "stale: bool = message_revision < record_revision");
RG_MSG(derive_rhs,
       "expected the name of an int input after the operator\nfor example: input "
       "stale: bool = message_revision < record_revision");
RG_MSG(source_name,
       "expected who sets the input after 'source'\nfor example: input confirmed: optional bool "
       "source operator");
RG_MSG(idempotency_key_word,
       "expected 'key' after 'idempotency'\nfor example: input request_id: string idempotency "
       "key");
RG_MSG(enum_values,
       "expected the enum's values in parentheses\nfor example: input kind: enum (a, b, c)");
RG_MSG(classify_from,
       "expected the raw input's name after 'classify'\nfor example: input http_class: enum "
       "(retryable, permanent, unknown) classify http_status { ... }");
RG_MSG(classify_open,
       "expected '{' after the raw input\nfor example: classify http_status { in (503) -> "
       "retryable fallback unknown }");
RG_MSG(classify_values,
       "expected the values in parentheses\nfor example: in (408, 429) -> retryable, prefix "
       "(\"5.\") -> permanent, range (500, 599) -> retryable");
RG_MSG(classify_arrow, "expected '->' and the class\nfor example: in (408, 429) -> retryable");
RG_MSG(classify_class, "expected the class after '->'\nfor example: in (408, 429) -> retryable");
RG_MSG(classify_fallback,
       "expected the fallback class after 'fallback'\nfor example: fallback unknown");
RG_MSG(classify_close,
       "expected a row (in, prefix, range), 'fallback CLASS' or '}'\nfor example: classify "
       "http_status { range (500, 599) -> retryable fallback unknown }");
RG_MSG(verb_name, "expected the verb's name after 'verb'\nfor example: verb hold effect none");
RG_MSG(kw_effect, "expected 'effect' after the verb's name\nfor example: verb hold effect none");
RG_MSG(effect_name,
       "expected the effect: none, read, copy or create\nfor example: verb hold "
       "effect none");
RG_MSG(default_verb,
       "expected a verb after 'default'\nfor example: default hold \"no rule "
       "matches\"");
RG_MSG(const_name,
       "expected the constant's name after 'const'\nfor example: const "
       "max_attempts = 3");
RG_MSG(equals, "expected '='\nfor example: const max_attempts = 3");
RG_MSG(const_value, "expected the constant's value after '='\nfor example: const max_attempts = 3");
RG_MSG(rule_id,
       "expected the rule's id after 'rule'\nfor example: rule exhausted: when attempts "
       ">= 3 -> hold \"reason\"");
RG_MSG(when_keyword,
       "expected 'when' after 'rule ID:'\nfor example: rule exhausted: when "
       "attempts >= 3 -> hold \"reason\"");
RG_MSG(conditions,
       "expected a condition after 'when'\nfor example: attempts >= 3, topic in (a, "
       "b), key is absent, committed, not committed");
RG_MSG(condition,
       "expected a condition after 'and'\nfor example: attempts >= 3, topic in (a, b), "
       "key is absent, committed, not committed");
RG_MSG(not_field, "expected a bool input after 'not'\nfor example: when not already_committed");
RG_MSG(cond_value,
       "expected a value after the operator\nfor example: attempts >= 3, topic == "
       "payment.capture");
RG_MSG(in_list, "expected the values in parentheses after 'in'\nfor example: topic in (a, b)");
RG_MSG(absent_or_present, "expected 'absent' or 'present' after 'is'\nfor example: key is absent");
RG_MSG(arrow,
       "expected 'and' and another condition, or '->' and the verb\nfor example: when a "
       ">= 3 and b -> hold \"reason\"");
RG_MSG(rule_verb, "expected the verb after '->'\nfor example: -> hold \"reason\"");
RG_MSG(table_id,
       "expected the table's id after 'table'\nfor example: table known by (topic, "
       "error_class) { ... }");
RG_MSG(kw_by,
       "expected 'by (FIELD, ...)' after the table's id\nfor example: table known by "
       "(topic, error_class) { ... }");
RG_MSG(table_keys,
       "expected the key fields in parentheses after 'by'\nfor example: table known "
       "by (topic, error_class) { ... }");
RG_MSG(table_open,
       "expected '{' to open the table's rows\nfor example: table known by (topic) "
       "{ payment.capture -> replay_once }");
RG_MSG(row_key,
       "expected a key value after ','\nwrite one value per key field, '*' for any "
       "value: payment.capture, * -> hold");
RG_MSG(row_verb,
       "expected the row's verb after '->'\nfor example: payment.capture, timeout -> "
       "replay_once \"reason\"");
RG_MSG(row_id,
       "expected the row's id after 'as'\nfor example: payment.capture, timeout -> "
       "replay_once as capture_timeout");
RG_MSG(table_close,
       "expected a row or '}' to close the table\na row is KEY, ... -> VERB [as ID] "
       "[\"reason\"], on one line from the verb on");
RG_MSG(invariant_id,
       "expected the invariant's id after 'invariant'\nfor example: invariant "
       "safe: when committed -> effect != create \"reason\"");
RG_MSG(requirement,
       "expected what the invariant requires: verb in (...), verb not in (...), "
       "effect <= EFFECT or effect != EFFECT\nfor example: invariant safe: when "
       "committed -> effect != create \"reason\"");
RG_MSG(require_verbs, "expected the verbs in parentheses\nfor example: verb in (hold, never)");
RG_MSG(require_effect_value,
       "expected an effect: none, read, copy or create\nfor example: effect "
       "!= create");
RG_MSG(sensitive_list,
       "expected the sensitive field names in parentheses\nfor example: sensitive (prompt, "
       "signed_url)");
RG_MSG(end_of_file,
       "expected an item: description, sensitive, input, verb, default, const, rule, table or "
       "invariant\neach item starts with its keyword; see docs/policy-language.md");
#undef RG_MSG
// Inner sor<> operands of must<> in require_verb / require_effect.
template <>
inline constexpr const char* message<pegtl::sor<g::require_verb_in, g::require_verb_not_in>> =
    "expected 'in' or 'not in' after 'verb'\nfor example: verb in (hold, never)";
template <>
inline constexpr const char* message<pegtl::sor<g::require_at_most, g::require_not>> =
    "expected '<=' or '!=' after 'effect'\nfor example: effect != create";

struct Errors {
  template <typename Rule>
  static constexpr const char* message = dsl::message<Rule>;
  // Raise only at must<> points, never when a rule with a message fails inside an opt<>/sor<>.
  template <typename Rule>
  static constexpr bool raise_on_failure = false;
};
template <typename Rule>
using Control = pegtl::must_if<Errors>::control<Rule>;

// ---------------------------------------------------------------------------------------------
// Actions
// ---------------------------------------------------------------------------------------------
struct State {
  ast::Policy policy;
  std::map<uint32_t, Comment> comments;  // by offset: backtracking may match a comment twice
  std::vector<uint32_t> table_close_lines;
  std::string_view text;

  ast::Literal literal;  // the last literal matched
  ast::LiteralList list;
  ast::Input input;
  ast::ClassifyRow classify_row;
  ast::Verb verb;
  ast::Condition condition;
  std::vector<ast::Condition> conditions;
  ast::Guard guard;
  ast::Table table;
  ast::Row row;
  ast::Invariant invariant;
};

template <typename Input>
Span span_of(const Input& in) {
  const auto position = in.position();
  return Span{static_cast<uint32_t>(position.line), static_cast<uint32_t>(position.column),
              static_cast<uint32_t>(position.byte), static_cast<uint32_t>(in.size())};
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// The text of a quoted string that matched g::quoted (so every escape is valid).
std::string unquote(std::string_view quoted) {
  std::string out;
  for (size_t i = 1; i + 1 < quoted.size(); ++i) {
    if (quoted[i] != '\\') {
      out += quoted[i];
      continue;
    }
    const char c = quoted[++i];
    if (c == 'n') {
      out += '\n';
    } else if (c == 't') {
      out += '\t';
    } else if (c == 'x') {
      out += static_cast<char>(hex_digit(quoted[i + 1]) * 16 + hex_digit(quoted[i + 2]));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

template <typename Input>
ast::Literal quoted_literal(const Input& in) {
  return ast::Literal{ast::Literal::Kind::kQuoted, unquote(in.string_view()), span_of(in)};
}
template <typename Input>
ast::Name name_of(const Input& in) {
  return ast::Name{in.string(), span_of(in)};
}
ast::Literal bare_true(Span span) { return ast::Literal{ast::Literal::Kind::kBare, "true", span}; }

const char* op_for(std::string_view symbol) {
  if (symbol == "==") return "eq";
  if (symbol == "!=") return "ne";
  if (symbol == "<") return "lt";
  if (symbol == "<=") return "le";
  if (symbol == ">") return "gt";
  return "ge";
}

template <typename Rule>
struct Action : pegtl::nothing<Rule> {};

template <>
struct Action<g::comment> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    const Span span = span_of(in);
    Comment comment;
    comment.line = span.line;
    comment.offset = span.offset;
    comment.text = in.string().substr(1);
    comment.own_line = true;
    for (size_t i = span.offset; i > 0 && s.text[i - 1] != '\n'; --i) {
      if (s.text[i - 1] != ' ' && s.text[i - 1] != '\t') comment.own_line = false;
    }
    s.comments[span.offset] = std::move(comment);
  }
};

template <>
struct Action<g::lit_quoted> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.literal = quoted_literal(in);
  }
};
template <>
struct Action<g::lit_bare> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.literal = ast::Literal{ast::Literal::Kind::kBare, in.string(), span_of(in)};
  }
};
template <>
struct Action<g::wildcard> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.literal = ast::Literal{ast::Literal::Kind::kWildcard, "*", span_of(in)};
  }
};
template <>
struct Action<g::list_open> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.list = ast::LiteralList{{}, span_of(in)};
  }
};
template <>
struct Action<g::list_item> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.list.items.push_back(s.literal);
  }
};

template <>
struct Action<g::policy_id> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    const bool is_quoted = in.size() > 0 && in.begin()[0] == '"';
    s.policy.id = is_quoted ? quoted_literal(in)
                            : ast::Literal{ast::Literal::Kind::kBare, in.string(), span_of(in)};
    s.policy.id_span = span_of(in);
  }
};
template <>
struct Action<g::revision_value> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.policy.revision = ast::Literal{ast::Literal::Kind::kBare, in.string(), span_of(in)};
  }
};
template <>
struct Action<g::policy_description> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.policy.description = quoted_literal(in);
  }
};

template <>
struct Action<g::sensitive_list> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    if (!s.policy.sensitive) {
      s.policy.sensitive = s.list;
    } else {
      for (const ast::Literal& item : s.list.items) s.policy.sensitive->items.push_back(item);
    }
  }
};

// Inputs.
template <>
struct Action<g::input_name> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input = ast::Input{};
    s.input.name = name_of(in);
    s.input.span = span_of(in);
  }
};
template <>
struct Action<g::optional_flag> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.optional_flag = bare_true(span_of(in));
  }
};
template <typename Rule>
struct TypeAction {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.type = name_of(in);
  }
};
template <>
struct Action<g::type_string> : TypeAction<g::type_string> {};
template <>
struct Action<g::type_int> : TypeAction<g::type_int> {};
template <>
struct Action<g::type_bool> : TypeAction<g::type_bool> {};
template <>
struct Action<g::type_enum> : TypeAction<g::type_enum> {};
template <>
struct Action<g::empty_means_absent> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.empty_means_absent = bare_true(span_of(in));
  }
};
template <>
struct Action<g::domain_list> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.input.domain = s.list;
  }
};
template <>
struct Action<g::min_value> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.min = ast::Literal{ast::Literal::Kind::kBare, in.string(), span_of(in)};
  }
};
template <>
struct Action<g::max_value> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.max = ast::Literal{ast::Literal::Kind::kBare, in.string(), span_of(in)};
  }
};
template <>
struct Action<g::derive_lhs> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.derived = ast::Derivation{{}, {name_of(in)}, span_of(in)};
  }
};
template <>
struct Action<g::derive_op> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.derived->op = ast::Name{op_for(in.string_view()), span_of(in)};
  }
};
template <>
struct Action<g::derive_rhs> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.derived->operands.push_back(name_of(in));
  }
};
template <>
struct Action<g::enum_values> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.input.values = s.list;
  }
};
template <>
struct Action<g::classify_keyword> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.classify = ast::Classifier{};
    s.input.classify->span = span_of(in);
  }
};
template <>
struct Action<g::classify_from> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.classify->from = name_of(in);
  }
};
template <>
struct Action<g::classify_kind> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.classify_row = ast::ClassifyRow{};
    s.classify_row.kind = name_of(in);
    s.classify_row.span = span_of(in);
  }
};
template <>
struct Action<g::classify_values> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.classify_row.operands = s.list.items;
  }
};
template <>
struct Action<g::classify_class> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.classify_row.cls = ast::Name{s.literal.text, span_of(in)};
    s.input.classify->rows.push_back(std::move(s.classify_row));
  }
};
template <>
struct Action<g::classify_fallback> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.classify->fallback = ast::Name{s.literal.text, span_of(in)};
  }
};
template <>
struct Action<g::source_name> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.source = name_of(in);
  }
};
template <>
struct Action<g::idempotency_key_flag> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.idempotency_key = bare_true(span_of(in));
  }
};
template <>
struct Action<g::input_description> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.input.description = quoted_literal(in);
  }
};
template <>
struct Action<g::input_item> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    if (!s.policy.inputs) s.policy.inputs.emplace();
    s.policy.inputs->push_back(std::move(s.input));
  }
};

// Verbs, default, constants.
template <>
struct Action<g::verb_name> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.verb = ast::Verb{};
    s.verb.name = name_of(in);
    s.verb.span = span_of(in);
  }
};
template <>
struct Action<g::effect_name> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.verb.effect = name_of(in);
  }
};
template <>
struct Action<g::verb_description> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.verb.description = quoted_literal(in);
  }
};
template <>
struct Action<g::verb_item> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    if (!s.policy.verbs) s.policy.verbs.emplace();
    s.policy.verbs->push_back(std::move(s.verb));
  }
};
template <>
struct Action<g::default_verb> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.policy.default_verb = name_of(in);
  }
};
template <>
struct Action<g::default_reason> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.policy.default_reason = quoted_literal(in);
  }
};
template <>
struct Action<g::const_name> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.policy.constants.push_back(ast::Constant{name_of(in), {}, span_of(in)});
  }
};
template <>
struct Action<g::const_value> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.policy.constants.back().value = s.literal;
  }
};

// Conditions.
template <>
struct Action<g::cond_field> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.condition = ast::Condition{};
    s.condition.field = name_of(in);
    s.condition.span = span_of(in);
    s.condition.op = ast::Name{"eq", span_of(in)};  // a bare bool field: field == true
    s.condition.operands = {bare_true(span_of(in))};
  }
};
template <>
struct Action<g::not_field> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.condition = ast::Condition{};
    s.condition.field = name_of(in);
    s.condition.span = span_of(in);
    s.condition.op = ast::Name{"eq", span_of(in)};
    s.condition.operands = {ast::Literal{ast::Literal::Kind::kBare, "false", span_of(in)}};
  }
};
template <>
struct Action<g::cmp_op> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.condition.op = ast::Name{op_for(in.string_view()), span_of(in)};
    s.condition.operands.clear();
  }
};
template <>
struct Action<g::cond_value> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.condition.operands = {s.literal};
  }
};
template <>
struct Action<g::op_in> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.condition.op = ast::Name{"in", span_of(in)};
  }
};
template <>
struct Action<g::op_not_in> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.condition.op = ast::Name{"not_in", span_of(in)};
  }
};
template <>
struct Action<g::in_list> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.condition.operand_is_list = true;
    s.condition.operands = s.list.items;
  }
};
template <>
struct Action<g::absent_or_present> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.condition.op = name_of(in);
    s.condition.operands.clear();
  }
};
template <>
struct Action<g::condition> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.conditions.push_back(std::move(s.condition));
  }
};

// Guards.
template <>
struct Action<g::rule_keyword> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.guard = ast::Guard{};
    s.guard.span = span_of(in);
    s.conditions.clear();
  }
};
template <>
struct Action<g::rule_id> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.guard.id = name_of(in);
  }
};
template <>
struct Action<g::when_keyword> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.guard.when_span = span_of(in);
    s.invariant.when_span = span_of(in);
  }
};
template <>
struct Action<g::rule_verb> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.guard.verb = name_of(in);
  }
};
template <>
struct Action<g::rule_reason> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.guard.reason = quoted_literal(in);
  }
};
template <>
struct Action<g::rule_item> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.guard.when = std::move(s.conditions);
    s.conditions.clear();
    ast::Rule rule;
    rule.kind = ast::Rule::Kind::kGuard;
    rule.guard = std::move(s.guard);
    if (!s.policy.rules) s.policy.rules.emplace();
    s.policy.rules->push_back(std::move(rule));
  }
};

// Tables.
template <>
struct Action<g::table_keyword> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.table = ast::Table{};
    s.table.span = span_of(in);
  }
};
template <>
struct Action<g::table_id> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.table.id = name_of(in);
  }
};
template <>
struct Action<g::table_keys> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    std::vector<ast::Name> keys;
    for (const ast::Literal& literal : s.list.items) keys.push_back({literal.text, literal.span});
    s.table.keys = std::move(keys);
    s.table.keys_span = s.list.span;
  }
};
template <>
struct Action<g::table_open> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.table.rows.emplace();
    s.table.rows_span = span_of(in);
    s.row = ast::Row{};
  }
};
template <>
struct Action<g::row_key> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    if (s.row.keys.empty()) {
      s.row.span = s.literal.span;
      s.row.keys_span = s.literal.span;
    }
    s.row.keys.push_back(s.literal);
  }
};
template <>
struct Action<g::row_verb> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.row.verb = name_of(in);
  }
};
template <>
struct Action<g::row_id> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.row.id = name_of(in);
  }
};
template <>
struct Action<g::row_reason> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.row.reason = quoted_literal(in);
  }
};
template <>
struct Action<g::row> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.table.rows->push_back(std::move(s.row));
    s.row = ast::Row{};
  }
};
template <>
struct Action<g::table_close> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.table_close_lines.push_back(static_cast<uint32_t>(in.position().line));
  }
};
template <>
struct Action<g::table_item> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    ast::Rule rule;
    rule.kind = ast::Rule::Kind::kTable;
    rule.table = std::move(s.table);
    if (!s.policy.rules) s.policy.rules.emplace();
    s.policy.rules->push_back(std::move(rule));
  }
};

// Invariants.
template <>
struct Action<g::invariant_keyword> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.invariant = ast::Invariant{};
    s.invariant.span = span_of(in);
    s.conditions.clear();
  }
};
template <>
struct Action<g::invariant_id> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.invariant.id = name_of(in);
  }
};
template <>
struct Action<g::invariant_premise> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.invariant.when = std::move(s.conditions);
    s.conditions.clear();
  }
};
template <typename Rule>
struct RequireAction {
  static const char* op_name() {
    if constexpr (std::is_same_v<Rule, g::require_verb_in>) return "verb_in";
    if constexpr (std::is_same_v<Rule, g::require_verb_not_in>) return "verb_not_in";
    if constexpr (std::is_same_v<Rule, g::require_at_most>) return "effect_at_most";
    return "effect_not";
  }
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.invariant.require_op = ast::Name{op_name(), span_of(in)};
    s.invariant.require_span = span_of(in);
  }
};
template <>
struct Action<g::require_verb_in> : RequireAction<g::require_verb_in> {};
template <>
struct Action<g::require_verb_not_in> : RequireAction<g::require_verb_not_in> {};
template <>
struct Action<g::require_at_most> : RequireAction<g::require_at_most> {};
template <>
struct Action<g::require_not> : RequireAction<g::require_not> {};
template <>
struct Action<g::require_verbs> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    for (const ast::Literal& literal : s.list.items) {
      s.invariant.operands.push_back({literal.text, literal.span});
    }
  }
};
template <>
struct Action<g::require_effect_value> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.invariant.operands.push_back(name_of(in));
  }
};
template <>
struct Action<g::invariant_reason> {
  template <typename Input>
  static void apply(const Input& in, State& s) {
    s.invariant.reason = quoted_literal(in);
  }
};
template <>
struct Action<g::invariant_item> {
  template <typename Input>
  static void apply(const Input&, State& s) {
    s.policy.invariants.push_back(std::move(s.invariant));
  }
};

// ---------------------------------------------------------------------------------------------
// Byte screening (before the grammar): size, BOM, UTF-8, NUL/control bytes, line length.
// ---------------------------------------------------------------------------------------------

bool screen(std::string_view text, std::string_view path, std::vector<Diagnostic>& out) {
  if (text.size() > yaml::kMaxBytes) {
    out.push_back(Diagnostic{
        Severity::kError,
        "RG007",
        "the file is larger than the limit of " + std::to_string(yaml::kMaxBytes) + " bytes",
        std::string(path),
        {},
        "a policy file must be at most 64 MiB"});
    return false;
  }
  std::optional<SourceProblem> problem = screen_source(
      text, SourceRules{.lone_carriage_return_ok = false, .max_line_bytes = kMaxLineBytes});
  if (!problem) return true;
  const Span span{problem->line, problem->column, static_cast<uint32_t>(problem->offset), 1};
  out.push_back(Diagnostic{Severity::kError, std::move(problem->code), std::move(problem->message),
                           std::string(path), span, std::move(problem->hint)});
  return false;
}

bool name_first(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool name_rest(char c) { return name_first(c) || digit(c) || c == '.' || c == '-'; }

}  // namespace

bool is_name_token(std::string_view text) {
  if (text.empty() || !name_first(text[0])) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!name_rest(text[i])) return false;
    if (text[i] == '-' && i + 1 < text.size() && text[i + 1] == '>') return false;
  }
  return true;
}

bool is_bare_word(std::string_view text) {
  static const char* const kKeywords[] = {"true", "false", "absent", "present", "and",
                                          "not",  "in",    "is",     "as"};
  for (const char* keyword : kKeywords) {
    if (text == keyword) return false;
  }
  if (text.empty()) return false;
  size_t start = 0;
  if (text[0] == '-' || text[0] == '+') {
    if (text.size() < 2 || !digit(text[1])) return false;
    start = 1;
  } else if (!name_first(text[0]) && !digit(text[0])) {
    return false;
  }
  for (size_t i = start; i < text.size(); ++i) {
    if (!name_rest(text[i])) return false;
    if (text[i] == '-' && i + 1 < text.size() && text[i + 1] == '>') return false;
  }
  return true;
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

// Whether `text` holds nothing but blanks, line ends and comments: an empty policy.
bool only_blanks_and_comments(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) return true;
    } else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      return false;
    }
  }
  return true;
}

ParseResult parse(std::string_view text, std::string_view path) {
  ParseResult result;
  if (!screen(text, path, result.diagnostics)) return result;
  if (only_blanks_and_comments(text)) {
    // The same message as an empty YAML policy, and no position: there is nothing to point at.
    result.diagnostics.push_back(
        Diagnostic{Severity::kError,
                   "RG100",
                   "the policy file is empty",
                   std::string(path),
                   {},
                   "a .policy file starts with 'policy NAME revision N', for example: policy "
                   "dlq-replay-gate revision 1 (see docs/policy-language.md)"});
    return result;
  }
  State state;
  state.text = text;
  state.policy.span = Span{1, 1, 0, 0};
  state.policy.syntax = ast::Syntax::kDsl;
  try {
    pegtl::memory_input<> in(text.data(), text.size(), std::string(path));
    pegtl::parse<g::file, Action, Control>(in, state);
  } catch (const pegtl::parse_error& e) {
    const std::string what(e.message());
    const size_t split = what.find('\n');
    Span span;
    if (!e.positions().empty()) {
      const auto& position = e.positions().front();
      span = span_in_text(text, position.byte, 1);
    }
    result.diagnostics.push_back(
        Diagnostic{Severity::kError, "RG014", what.substr(0, split), std::string(path), span,
                   split == std::string::npos ? "" : what.substr(split + 1)});
    return result;
  } catch (const std::exception& e) {
    result.diagnostics.push_back(
        Diagnostic{Severity::kError,
                   "RG099",
                   std::string("internal error while parsing: ") + e.what(),
                   std::string(path),
                   {},
                   "please report this with the policy file"});
    return result;
  }
  if (!state.policy.rules) state.policy.rules.emplace();
  result.policy = std::move(state.policy);
  for (auto& [offset, comment] : state.comments) result.comments.push_back(std::move(comment));
  result.table_close_lines = std::move(state.table_close_lines);
  return result;
}

}  // namespace replaygate::dsl

// The grammar, for the analysis unit test (tests/compiler/dsl_test.cc).
namespace replaygate::dsl::testing {
size_t analyze_grammar() { return tao::pegtl::analyze<g::file>(1); }
}  // namespace replaygate::dsl::testing
