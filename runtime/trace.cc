// trace(): the per-rule trace of one decision (see trace.h). Reads Table::Impl, never changes it.
#include "runtime/trace.h"

#include "runtime/internal/table_impl.h"
#include "runtime/problems.h"
#include "runtime/table_format.h"

namespace replaygate {

// Table's friend: the one door from trace() into the loaded table's internals.
struct TableTraceAccess {
  static const Table::Impl& impl(const Table& table) { return *table.impl_; }
};

namespace {

using Slot = Input::Slot;

// The same validation and interning as decide(), written out with the reason for a failure.
TraceField intern(const Table::Impl& t, const Table::Impl::Field& f, const Slot& slot) {
  TraceField out;
  auto fail = [&out](std::string problem) {
    out.valid = false;
    out.problem = std::move(problem);
    return out;
  };
  auto absent = [&](const char* problem) {
    if (!f.optional) return fail(problem);
    out.absent = true;
    out.atom = 0;
    return out;
  };
  switch (slot.state) {
    case Slot::State::kUnset:
      return absent(problem::kMissing);
    case Slot::State::kNull:
      return absent(problem::kNull);
    case Slot::State::kInvalid:
      return fail(problem::kUnreadableValue);
    case Slot::State::kString:
      if (f.type == FieldType::kString) {
        if (slot.s.empty() && f.empty_means_absent) return absent(problem::kEmptyCountsAsAbsent);
        const uint32_t atom = t.lookup(f, slot.s, string_hash(slot.s));
        out.atom = atom == 0 ? 1 : atom;  // not mentioned by the policy: "other"
        return out;
      }
      if (f.type == FieldType::kEnum) {
        const uint32_t atom = t.lookup(f, slot.s, string_hash(slot.s));
        if (atom == 0) return fail(problem::kNotAnEnumValue);
        out.atom = atom;
        return out;
      }
      return fail(problem::wrong_type(f.type));
    case Slot::State::kInt:
      if (f.type != FieldType::kInt) return fail(problem::wrong_type(f.type));
      if (f.has_min && slot.i < f.min) return fail(problem::below_min(f.min));
      if (f.has_max && slot.i > f.max) return fail(problem::above_max(f.max));
      out.atom = t.int_atom(f, slot.i);
      return out;
    case Slot::State::kBool:
      if (f.type != FieldType::kBool) return fail(problem::wrong_type(f.type));
      out.atom = slot.b ? 2 : 1;
      return out;
  }
  return fail(problem::kUnreadable);
}

}  // namespace

Trace trace(const Table& table, const Input& input) {
  const Table::Impl& t = TableTraceAccess::impl(table);
  Trace out;
  out.decision.verb = t.default_verb;
  out.decision.kind = DecisionKind::kDefault;

  std::vector<uint32_t> atoms(t.fields.size(), 0);
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    const Slot slot = input.slot(f);
    if (t.fields[f].derived) {  // computed below, after every field is valid; never read
      TraceField field;
      field.derived = true;
      out.fields.push_back(std::move(field));
      continue;
    }
    TraceField field = intern(t, t.fields[f], slot);
    if (field.valid) field.atom_label = table.atom_label(f, field.atom);
    const bool valid = field.valid;
    atoms[f] = field.atom;
    out.fields.push_back(std::move(field));
    if (!valid) {
      out.decision.kind = DecisionKind::kInvalidInput;
      out.decision.invalid_field = f;
      return out;
    }
  }
  // Both operands are required ints that passed validation (the loader checked that).
  for (const format::DerivationRecord& d : t.derivations) {
    const uint32_t atom = derived_atom(d, input.cells()[d.lhs].i, input.cells()[d.rhs].i);
    atoms[d.field] = atom;
    out.fields[d.field].atom = atom;
    out.fields[d.field].atom_label = table.atom_label(d.field, atom);
  }
  // Classified enums, from their raw field's validated atom and value, as decide() computes them.
  for (const format::ClassifierRecord& c : t.classifiers) {
    const uint32_t atom = classified_atom(t, c, atoms[c.raw], input.slot(c.raw));
    atoms[c.field] = atom;
    out.fields[c.field].atom = atom;
    out.fields[c.field].atom_label = table.atom_label(c.field, atom);
  }

  for (uint32_t r = 0; r < t.rules.size(); ++r) {
    const Table::Impl::Rule& rule = t.rules[r];
    TraceRule step;
    step.rule = r;
    step.is_table = rule.is_table;
    if (!rule.is_table) {
      step.id = std::string(t.catalog_id(rule.catalog_begin));
      bool holds = true;
      for (uint32_t c = 0; c < rule.item_count && holds; ++c) {
        const Table::Impl::Condition& cond = t.conditions[rule.item_begin + c];
        const uint32_t atom = atoms[cond.field];
        holds = (t.bitsets[cond.bits_begin + atom / 64] >> (atom % 64)) & 1u;
        step.conditions.push_back(
            {cond.field, op_code_name(cond.op), std::string(cond.text), holds});
      }
      step.matched = holds;
      step.catalog = rule.catalog_begin;
    } else {
      step.id = std::string(rule.id);
      for (uint32_t k = 0; k < rule.item_count; ++k) {
        const uint32_t field = t.table_keys[rule.item_begin + k];
        step.key_fields.push_back(field);
        step.key_labels.push_back(table.atom_label(field, atoms[field]));
      }
      uint32_t best = 0, best_concrete = 0;
      bool found = false;
      for (uint32_t row = 0; row < rule.catalog_count; ++row) {
        const uint32_t* keys = t.row_keys.data() + rule.row_key_begin + row * rule.item_count;
        bool match = true;
        uint32_t concrete = 0;
        for (uint32_t k = 0; k < rule.item_count && match; ++k) {
          if (keys[k] == format::kWildcard) continue;
          ++concrete;
          match = keys[k] == atoms[step.key_fields[k]];
        }
        if (!match) continue;
        ++step.candidate_rows;
        if (!found || concrete > best_concrete) {  // a tie keeps the earlier row
          found = true;
          best = row;
          best_concrete = concrete;
        }
      }
      step.matched = found;
      step.catalog = found ? rule.catalog_begin + best : 0;
    }
    const bool matched = step.matched;
    const uint32_t catalog = step.catalog;
    out.rules.push_back(std::move(step));
    if (matched) {
      out.decision.kind = DecisionKind::kRule;
      out.decision.rule = catalog;
      out.decision.verb = t.catalog[catalog].verb;
      return out;
    }
  }
  return out;
}

std::vector<OutlineRule> outline(const Table& table) {
  const Table::Impl& t = TableTraceAccess::impl(table);
  std::vector<OutlineRule> out;
  for (const Table::Impl::Rule& rule : t.rules) {
    OutlineRule o;
    o.is_table = rule.is_table;
    o.catalog_begin = rule.catalog_begin;
    o.catalog_count = rule.catalog_count;
    if (!rule.is_table) {
      o.id = std::string(t.catalog_id(rule.catalog_begin));
      for (uint32_t c = 0; c < rule.item_count; ++c) {
        const Table::Impl::Condition& cond = t.conditions[rule.item_begin + c];
        o.conditions.push_back({cond.field, op_code_name(cond.op), std::string(cond.text), false});
      }
    } else {
      o.id = std::string(rule.id);
      for (uint32_t k = 0; k < rule.item_count; ++k) {
        o.key_fields.push_back(t.table_keys[rule.item_begin + k]);
      }
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<TraceDerivation> derivations(const Table& table) {
  std::vector<TraceDerivation> out;
  for (const format::DerivationRecord& d : TableTraceAccess::impl(table).derivations) {
    out.push_back({d.field, d.op, d.lhs, d.rhs});
  }
  return out;
}

static_assert(kStructureWildcard == format::kWildcard);

Structure structure(const Table& table) {
  const Table::Impl& t = TableTraceAccess::impl(table);
  Structure out;
  for (const Table::Impl::Field& f : t.fields) {
    StructureField s;
    for (uint32_t i = 0; i < f.dict_count; ++i) {
      s.dictionary.emplace_back(t.dict[f.dict_begin + i].bytes);
    }
    s.cuts.assign(t.cuts.begin() + f.cut_begin, t.cuts.begin() + f.cut_begin + f.cut_count);
    s.atom_count = f.atom_count;
    out.fields.push_back(std::move(s));
  }
  for (const format::DerivationRecord& d : t.derivations) {
    StructureField& s = out.fields[d.field];
    s.derived = true;
    s.derived_op = d.op;
    s.derived_lhs = d.lhs;
    s.derived_rhs = d.rhs;
  }
  for (const format::ClassifierRecord& c : t.classifiers) {
    StructureField& s = out.fields[c.field];
    s.classified = true;
    s.classified_raw = c.raw;
    s.classified_fallback = c.fallback;
    for (uint32_t m = 0; m < c.matcher_count; ++m) {
      const format::ClassifierMatcher& x = t.classifier_matchers[c.matcher_begin + m];
      s.matchers.push_back({x.kind, x.cls, x.row, std::string(t.str(x.text)), x.lo, x.hi});
    }
  }
  for (const Table::Impl::Rule& rule : t.rules) {
    StructureRule r;
    r.is_table = rule.is_table;
    r.id = std::string(rule.id);
    r.catalog_begin = rule.catalog_begin;
    r.catalog_count = rule.catalog_count;
    if (!rule.is_table) {
      for (uint32_t c = 0; c < rule.item_count; ++c) {
        const Table::Impl::Condition& cond = t.conditions[rule.item_begin + c];
        StructureCondition sc{cond.field, cond.op, std::string(cond.text), {}};
        const uint32_t atoms = t.fields[cond.field].atom_count;
        for (uint32_t a = 0; a < atoms; ++a) {
          if ((t.bitsets[cond.bits_begin + a / 64] >> (a % 64)) & 1u) sc.atoms.push_back(a);
        }
        r.conditions.push_back(std::move(sc));
      }
    } else {
      r.key_fields.assign(t.table_keys.begin() + rule.item_begin,
                          t.table_keys.begin() + rule.item_begin + rule.item_count);
      for (uint32_t row = 0; row < rule.catalog_count; ++row) {
        const uint32_t* keys = t.row_keys.data() + rule.row_key_begin + row * rule.item_count;
        r.row_keys.emplace_back(keys, keys + rule.item_count);
      }
    }
    out.rules.push_back(std::move(r));
  }
  return out;
}

}  // namespace replaygate
