// Lifts a loaded table back into a checked policy, then proves the lift against the table's atoms.
#include "compiler/lift.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <variant>

#include "compiler/analysis/partition.h"
#include "compiler/lower.h"
#include "runtime/checked_codes.h"
#include "runtime/trace.h"

namespace replaygate {
namespace {

// Why a lift failed; carried out of the helpers as an exception-free value.
struct Failure {
  std::string message;
};

// check()'s rule for names (constants included).
bool is_identifier(std::string_view s) {
  const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (s.empty() || (!alpha(s[0]) && s[0] != '_')) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return alpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// An int operand as lower() writes it: "3" or "NAME (3)" (the constant it came from).
struct IntOperand {
  int64_t value = 0;
  std::string constant;
};
std::optional<IntOperand> parse_int_operand(std::string_view text) {
  if (auto v = parse_int(text)) return IntOperand{*v, ""};
  const size_t open = text.find(" (");
  if (open == std::string_view::npos || text.empty() || text.back() != ')') return std::nullopt;
  const std::string_view name = text.substr(0, open);
  const auto v = parse_int(text.substr(open + 2, text.size() - open - 3));
  if (!v || !is_identifier(name)) return std::nullopt;
  return IntOperand{*v, std::string(name)};
}

// The one int value an interval atom holds, or nullopt when it holds more (or none).
std::optional<int64_t> singleton_value(const std::vector<int64_t>& cuts, uint32_t atom) {
  if (atom < 2) return std::nullopt;  // absent, or (-inf, c0) which holds more than one value
  const size_t k = atom - 1;
  const int64_t lower = cuts[k - 1];
  if (k < cuts.size()) {
    if (lower == std::numeric_limits<int64_t>::max() || cuts[k] != lower + 1) return std::nullopt;
    return lower;
  }
  if (lower != std::numeric_limits<int64_t>::max()) return std::nullopt;
  return lower;  // [INT64_MAX, +inf) holds INT64_MAX only
}

// The value of `field` that a single present atom stands for (an enum value, a dictionary string,
// a bool, a one-value int interval), or nullopt when no literal interns to exactly that atom.
std::optional<ir::Value> atom_value(const ir::Field& field, const StructureField& s,
                                    uint32_t atom) {
  switch (field.type) {
    case ir::FieldType::kString:
      if (atom < 2 || atom - 2 >= s.dictionary.size()) return std::nullopt;
      return ir::Value::String(s.dictionary[atom - 2]);
    case ir::FieldType::kEnum:
      if (atom < 1 || atom - 1 >= s.dictionary.size()) return std::nullopt;
      return ir::Value::String(s.dictionary[atom - 1]);
    case ir::FieldType::kBool:
      if (atom != 1 && atom != 2) return std::nullopt;
      return ir::Value::Bool(atom == 2);
    case ir::FieldType::kInt:
      if (atom >= s.atom_count) return std::nullopt;
      if (auto v = singleton_value(s.cuts, atom)) return ir::Value::Int(*v);
      return std::nullopt;
  }
  return std::nullopt;
}

// The first atom a literal can stand for: strings skip "other" (1), the rest skip absent (0).
uint32_t first_value_atom(ir::FieldType type) { return type == ir::FieldType::kString ? 2 : 1; }

struct Lifter {
  const Table& table;
  Structure structure;
  ir::CheckedPolicy out;

  // Records the constant an int operand was written with, so conditions keep its name.
  std::string note_constant(const IntOperand& operand) {
    if (operand.constant.empty()) return "";
    auto& constants = out.policy.constants;
    for (const ir::Constant& c : constants) {
      if (c.name == operand.constant) return c.value == operand.value ? c.name : "";
    }
    constants.push_back({operand.constant, operand.value});
    return operand.constant;
  }

  std::variant<ir::Condition, Failure> condition(const StructureCondition& sc) {
    const ir::Field& field = out.policy.fields[sc.field];
    const StructureField& s = structure.fields[sc.field];
    const std::optional<ir::Op> op = op_from_code(sc.op);
    if (!op) return Failure{fmt::format("unknown operator code {}", sc.op)};
    ir::Condition c;
    c.field = sc.field;
    c.op = *op;
    switch (c.op) {
      case ir::Op::kAbsent:
      case ir::Op::kPresent:
        if (!field.optional) {
          return Failure{fmt::format("{} on required field '{}'", ir::op_name(c.op), field.name)};
        }
        return c;
      case ir::Op::kLt:
      case ir::Op::kLe:
      case ir::Op::kGt:
      case ir::Op::kGe: {
        if (field.type != ir::FieldType::kInt) {
          return Failure{fmt::format("{} on non-int field '{}'", ir::op_name(c.op), field.name)};
        }
        const auto operand = parse_int_operand(sc.operand);
        if (!operand) return Failure{fmt::format("int operand '{}' unreadable", sc.operand)};
        c.values.push_back(ir::Value::Int(operand->value));
        c.constant = note_constant(*operand);
        return c;
      }
      case ir::Op::kEq:
      case ir::Op::kNe:
      case ir::Op::kIn:
      case ir::Op::kNotIn:
        break;
    }
    // A value test: the accepted atoms (eq/in) or the rejected ones (ne/not_in) are the values.
    if (!sc.atoms.empty() && sc.atoms.front() == kAtomAbsent) {
      return Failure{fmt::format("{} accepts an absent '{}'", ir::op_name(c.op), field.name)};
    }
    const bool negated = c.op == ir::Op::kNe || c.op == ir::Op::kNotIn;
    const bool accepts_other = std::binary_search(sc.atoms.begin(), sc.atoms.end(), kAtomOther);
    if (field.type == ir::FieldType::kString && accepts_other != negated) {
      return Failure{fmt::format("{} {} strings '{}' does not mention", ir::op_name(c.op),
                                 negated ? "rejects" : "accepts", field.name)};
    }
    for (uint32_t atom = first_value_atom(field.type); atom < s.atom_count; ++atom) {
      const bool accepted = std::binary_search(sc.atoms.begin(), sc.atoms.end(), atom);
      if (accepted != negated) {  // a listed value
        auto value = atom_value(field, s, atom);
        if (!value) {
          return Failure{fmt::format("{} of atom {} of '{}', which holds no single value",
                                     negated ? "rejection" : "acceptance", atom, field.name)};
        }
        c.values.push_back(std::move(*value));
      }
    }
    if (c.values.empty()) {
      return Failure{fmt::format("{} {} every value of '{}'", ir::op_name(c.op),
                                 negated ? "accepts" : "rejects", field.name)};
    }
    if (c.values.size() != 1 && c.op == ir::Op::kEq) c.op = ir::Op::kIn;
    if (c.values.size() != 1 && c.op == ir::Op::kNe) c.op = ir::Op::kNotIn;
    if (field.type == ir::FieldType::kInt && c.values.size() == 1) {
      if (const auto operand = parse_int_operand(sc.operand);
          operand && operand->value == c.values[0].i) {
        c.constant = note_constant(*operand);
      }
    }
    return c;
  }

  std::optional<Failure> fields() {
    for (uint32_t f = 0; f < table.field_count(); ++f) {
      const FieldInfo info = table.field(f);
      const StructureField& s = structure.fields[f];
      ir::Field field;
      field.name = std::string(info.name);
      field.type = info.type;
      field.optional = info.optional;
      field.empty_means_absent = info.empty_means_absent;
      field.source = static_cast<ir::InputSource>(info.source);
      field.idempotency_key = f == table.idempotency_key_field();
      if (info.has_min) field.min = info.min;
      if (info.has_max) field.max = info.max;
      if (field.type == ir::FieldType::kEnum) field.enum_values = s.dictionary;
      if (s.derived) {
        const std::optional<ir::Op> op = op_from_code(s.derived_op);
        if (!op || *op == ir::Op::kIn || *op == ir::Op::kNotIn || *op == ir::Op::kAbsent ||
            *op == ir::Op::kPresent) {
          return Failure{fmt::format("derived field '{}' has operator code {}, not a comparison",
                                     field.name, s.derived_op)};
        }
        field.derived = ir::Derivation{s.derived_lhs, *op, s.derived_rhs};
      }
      if (s.classified) {
        ir::Classifier c;
        c.from = s.classified_raw;
        c.fallback = s.classified_fallback;
        for (const StructureField::Matcher& m : s.matchers) {
          // Matchers of one policy row are consecutive; an `in` or `prefix` row holds several.
          const ir::ClassifyRow::Kind kind = m.kind == 1   ? ir::ClassifyRow::Kind::kPrefix
                                             : m.kind == 3 ? ir::ClassifyRow::Kind::kRange
                                                           : ir::ClassifyRow::Kind::kIn;
          if (c.rows.empty() || m.row != c.rows.size() - 1) {
            c.rows.push_back(ir::ClassifyRow{kind, {}, m.cls});
          }
          ir::ClassifyRow& row = c.rows.back();
          if (m.kind == 3) {
            row.values = {ir::Value::Int(m.lo), ir::Value::Int(m.hi)};
          } else if (m.kind == 2) {
            row.values.push_back(ir::Value::Int(m.lo));
          } else {
            row.values.push_back(ir::Value::String(m.text));
          }
        }
        field.classify = std::move(c);
      }
      out.policy.fields.push_back(std::move(field));
    }
    return std::nullopt;
  }

  std::optional<Failure> rules() {
    ir::SourceMap& src = out.source;
    for (uint32_t r = 0; r < structure.rules.size(); ++r) {
      const StructureRule& sr = structure.rules[r];
      src.rules.emplace_back();
      src.conditions.emplace_back();
      src.rows.emplace_back();
      if (!sr.is_table) {
        ir::Guard g;
        g.id = std::string(table.rule_id(sr.catalog_begin));
        g.reason = std::string(table.rule_reason(sr.catalog_begin));
        g.verb = table.rule_verb(sr.catalog_begin);
        for (size_t c = 0; c < sr.conditions.size(); ++c) {
          auto lifted = condition(sr.conditions[c]);
          if (auto* failure = std::get_if<Failure>(&lifted)) {
            return Failure{
                fmt::format("guard '{}' condition {}: {}", g.id, c + 1, failure->message)};
          }
          g.conditions.push_back(std::move(std::get<ir::Condition>(lifted)));
          src.conditions.back().emplace_back();
        }
        src.rules.back().line = table.rule_source_line(sr.catalog_begin);
        out.policy.rules.emplace_back(std::move(g));
        continue;
      }
      ir::Table t;
      t.id = sr.id;
      t.key_fields = sr.key_fields;
      for (uint32_t row = 0; row < sr.row_keys.size(); ++row) {
        const uint32_t entry = sr.catalog_begin + row;
        ir::Row ir_row;
        ir_row.id = std::string(table.rule_id(entry));
        ir_row.reason = std::string(table.rule_reason(entry));
        ir_row.verb = table.rule_verb(entry);
        for (size_t k = 0; k < sr.key_fields.size(); ++k) {
          const uint32_t atom = sr.row_keys[row][k];
          if (atom == kStructureWildcard) {
            ir_row.keys.emplace_back(std::nullopt);
            continue;
          }
          const uint32_t f = sr.key_fields[k];
          auto value = atom_value(out.policy.fields[f], structure.fields[f], atom);
          if (!value) {
            return Failure{
                fmt::format("table '{}' row '{}' key {}: atom {} of '{}' holds no "
                            "single value",
                            t.id, ir_row.id, k + 1, atom, out.policy.fields[f].name)};
          }
          ir_row.keys.emplace_back(std::move(*value));
        }
        t.rows.push_back(std::move(ir_row));
        src.rows.back().emplace_back();
        src.rows.back().back().line = table.rule_source_line(entry);
      }
      // A stored reason that is the derived one was not written by the author: keep it implicit.
      for (size_t row = 0; row < t.rows.size(); ++row) {
        const std::string stored = t.rows[row].reason;
        t.rows[row].reason.clear();
        if (effective_row_reason(t, row) != stored) t.rows[row].reason = stored;
      }
      out.policy.rules.emplace_back(std::move(t));
    }
    return std::nullopt;
  }

  // The proof: the lifted policy's partition and atom sets are exactly the table's.
  std::optional<Failure> verify() const {
    const Partition part = partition_policy(out.policy);
    for (size_t f = 0; f < part.fields.size(); ++f) {
      const FieldPartition& p = part.fields[f];
      const StructureField& s = structure.fields[f];
      const bool same = p.atom_count == s.atom_count &&
                        (p.type == ir::FieldType::kInt    ? p.cuts == s.cuts
                         : p.type == ir::FieldType::kBool ? true
                                                          : p.strings == s.dictionary);
      if (!same) {
        return Failure{fmt::format(
            "field '{}': the lifted rules mention other values or thresholds than the table's "
            "{} atoms",
            out.policy.fields[f].name, s.atom_count)};
      }
    }
    for (size_t r = 0; r < structure.rules.size(); ++r) {
      const StructureRule& sr = structure.rules[r];
      if (const auto* g = std::get_if<ir::Guard>(&out.policy.rules[r])) {
        for (size_t c = 0; c < g->conditions.size(); ++c) {
          const ir::Condition& cond = g->conditions[c];
          const std::vector<uint32_t> atoms = condition_atoms(part.fields[cond.field], cond);
          if (atoms != sr.conditions[c].atoms) {
            return Failure{
                fmt::format("guard '{}' condition {}: the table accepts atoms {{{}}}, "
                            "the lifted {} condition atoms {{{}}}",
                            g->id, c + 1, fmt::join(sr.conditions[c].atoms, ", "),
                            ir::op_name(cond.op), fmt::join(atoms, ", "))};
          }
        }
        continue;
      }
      const auto& t = std::get<ir::Table>(out.policy.rules[r]);
      for (size_t row = 0; row < t.rows.size(); ++row) {
        for (size_t k = 0; k < t.key_fields.size(); ++k) {
          const auto& key = t.rows[row].keys[k];
          if (key && part.fields[t.key_fields[k]].atom_of(*key) != sr.row_keys[row][k]) {
            return Failure{
                fmt::format("table '{}' row '{}' key {} does not intern to the stored "
                            "atom",
                            t.id, t.rows[row].id, k + 1)};
          }
        }
      }
    }
    return std::nullopt;
  }
};

}  // namespace

LiftResult lift(const Table& table) {
  Lifter l{table, structure(table), {}};
  ir::Policy& p = l.out.policy;
  p.id = std::string(table.policy_id());
  p.revision = table.revision();
  p.description = std::string(table.description());
  for (uint32_t v = 0; v < table.verb_count(); ++v) {
    p.verbs.push_back({std::string(table.verb_name(v)), table.verb_effect(v),
                       std::string(table.verb_description(v))});
  }
  p.default_verb = table.default_verb();
  p.default_reason = std::string(table.default_reason());

  LiftResult result;
  std::optional<Failure> failure = l.fields();
  if (!failure) failure = l.rules();
  if (!failure) failure = l.verify();
  if (failure) {
    result.error = fmt::format("table of policy '{}' (checksum {}) cannot be lifted exactly: {}",
                               p.id, table.checksum_hex(), failure->message);
    return result;
  }
  ir::SourceMap& src = l.out.source;
  src.fields.resize(p.fields.size());
  src.verbs.resize(p.verbs.size());
  src.constants.resize(p.constants.size());
  l.out.source_base_name = std::string(table.source_name());
  l.out.source_digest = std::string(table.source_digest());
  src.path = l.out.source_base_name;
  result.policy = std::move(l.out);
  return result;
}

}  // namespace replaygate
