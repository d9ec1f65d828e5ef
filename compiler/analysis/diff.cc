// Semantic policy diff over a joint partition and a two-list decision tree (see diff.h).
#include "compiler/analysis/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "common/json.h"
#include "compiler/analysis/invariants.h"

namespace replaygate {
namespace {

// A column of the joint policy: any value either side's field may see, so optional, unbounded,
// "" kept as a string, and not derived (each side's bounds, absence and derivation are applied
// when that side is evaluated).
ir::Field joint_field(const ir::Field& field, std::string name) {
  ir::Field j = field;
  j.name = std::move(name);
  j.optional = true;
  j.min.reset();
  j.max.reset();
  j.empty_means_absent = false;
  j.derived.reset();
  return j;
}

constexpr uint32_t kNone = 0xFFFFFFFFu;

struct Column {
  uint32_t old_field = kNone;
  uint32_t new_field = kNone;
};

// A side's guard or table, with its field indices moved to joint columns.
ir::Rule remap_rule(const ir::Rule& rule, const std::vector<uint32_t>& columns) {
  if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
    ir::Guard g = *guard;
    for (auto& c : g.conditions) c.field = columns[c.field];
    return g;
  }
  ir::Table t = std::get<ir::Table>(rule);
  for (auto& k : t.key_fields) k = columns[k];
  return t;
}

// A guard whose only job is to cut an int column at a side's declared bounds.
void add_bound_cuts(ir::Policy& joint, uint32_t column, const ir::Field& field) {
  ir::Guard g;
  if (field.min) g.conditions.push_back({column, ir::Op::kGe, {ir::Value::Int(*field.min)}, ""});
  if (field.max) g.conditions.push_back({column, ir::Op::kLe, {ir::Value::Int(*field.max)}, ""});
  if (!g.conditions.empty()) joint.rules.emplace_back(std::move(g));
}

// Whether joint atom `atom` of an int column lies inside `field`'s bounds (the joint cuts
// include both sides' bounds, so an interval is wholly inside or outside).
bool int_atom_valid(const FieldPartition& part, uint32_t atom, const ir::Field& field) {
  const size_t k = atom - 1;
  const bool unbounded_below = k == 0;
  const bool unbounded_above = k == part.cuts.size();
  if (field.min && (unbounded_below || part.cuts[k - 1] < *field.min)) return false;
  if (field.max && (unbounded_above || part.cuts[k] - 1 > *field.max)) return false;
  return true;
}

struct Side {
  const ir::Policy* policy = nullptr;
  std::vector<uint32_t> columns;      // per side field: joint column
  std::vector<Clause> clauses;        // pseudo-clauses for invalid inputs first, then the policy
  std::vector<std::string> rule_ids;  // per catalog index

  std::string rule_name(const Clause* clause) const {
    if (clause == nullptr) return "default";
    if (clause->rule == kNoRule) return "invalid input";
    return rule_ids[clause->rule];
  }
  const ir::Verb& verb(const Clause* clause) const {
    return policy->verbs[clause == nullptr ? policy->default_verb : clause->verb];
  }
};

void add_unique(std::vector<std::string>& list, const std::string& name) {
  if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

// Whether some guard condition or table key of `policy` reads field `f`.
bool rules_read(const ir::Policy& policy, uint32_t f) {
  for (const ir::Rule& rule : policy.rules) {
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      for (const ir::Condition& c : guard->conditions) {
        if (c.field == f) return true;
      }
    } else {
      const auto& keys = std::get<ir::Table>(rule).key_fields;
      if (std::find(keys.begin(), keys.end(), f) != keys.end()) return true;
    }
  }
  return false;
}

// How strictly an input's source limits who sets it: an operator only, then the operation record
// only, then letters (and, in review, the record, else the message).
int source_strictness(ir::InputSource source) {
  switch (source) {
    case ir::InputSource::kOperator:
      return 2;
    case ir::InputSource::kRecord:
      return 1;
    case ir::InputSource::kLetter:
      break;
  }
  return 0;
}

// The new source lets more writers set the input than the old one: a letter (decide, explain, the
// JSONL binding) may now set what only an operator or the operation record set, or the record
// what only an operator set.
bool looser_source(ir::InputSource old_source, ir::InputSource new_source) {
  return source_strictness(new_source) < source_strictness(old_source);
}

std::string describe_source_change(ir::InputSource a, ir::InputSource b) {
  using S = ir::InputSource;
  if (b == S::kOperator) {
    return a == S::kLetter ? "now set only by an operator (letters no longer set it)"
                           : "now set only by an operator (the operation record no longer sets it)";
  }
  if (b == S::kRecord) {
    return a == S::kLetter ? "now read only from the operation record (letters no longer set it)"
                           : "no longer operator-only: the operation record may now set it";
  }
  return a == S::kOperator ? "no longer operator-only: letters may now set it"
                           : "no longer record-only: letters may now set it";
}

// `op(lhs, rhs)` of a derived bool, with its operands' names, or "" for an input field.
std::string derivation_text(const ir::Policy& policy, const ir::Field& field) {
  if (!field.derived) return "";
  const auto name = [&](uint32_t f) {
    return f < policy.fields.size() ? policy.fields[f].name : std::string("?");
  };
  return fmt::format("{}({}, {})", ir::op_name(field.derived->op), name(field.derived->lhs),
                     name(field.derived->rhs));
}

// How the class of each raw value changes between two classifiers of one raw input: the raw
// values (int ranges, exact strings, prefixes, "other") whose class differs, e.g.
// `http_status 501: permanent -> retryable`. "" when no raw value changes class.
std::string classifier_change_text(const ir::Policy& old_policy, const ir::Field& a,
                                   const ir::Policy& new_policy, const ir::Field& b) {
  const ir::Field& raw_a = old_policy.fields.at(a.classify->from);
  const ir::Field& raw_b = new_policy.fields.at(b.classify->from);
  if (raw_a.name != raw_b.name || raw_a.type != raw_b.type) {
    return fmt::format("classified from {} -> {}", raw_a.name, raw_b.name);
  }
  const auto class_of = [](const ir::Field& f, const std::optional<ir::Value>& v) {
    return f.enum_values.at(ir::classify(*f.classify, v));
  };
  std::vector<std::string> parts;
  const auto note = [&](const std::string& what, const std::optional<ir::Value>& v) {
    const std::string x = class_of(a, v), y = class_of(b, v);
    if (x != y) parts.push_back(fmt::format("{} {}: {} -> {}", raw_b.name, what, x, y));
  };
  if (raw_b.type == ir::FieldType::kInt) {
    std::vector<int64_t> points;  // each a start of a run of constant classes on both sides
    const int64_t lowest = std::max(raw_a.min.value_or(INT64_MIN), raw_b.min.value_or(INT64_MIN));
    const int64_t highest = std::min(raw_a.max.value_or(INT64_MAX), raw_b.max.value_or(INT64_MAX));
    points.push_back(lowest);
    for (const ir::Field* f : {&a, &b}) {
      for (const ir::ClassifyRow& row : f->classify->rows) {
        const int64_t lo = row.values.front().i, hi = row.values.back().i;
        for (const ir::Value& v : row.values) {
          points.push_back(row.kind == ir::ClassifyRow::Kind::kRange ? lo : v.i);
          const int64_t end = row.kind == ir::ClassifyRow::Kind::kRange ? hi : v.i;
          if (end < INT64_MAX) points.push_back(end + 1);
        }
      }
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    std::erase_if(points, [&](int64_t p) { return p < lowest || p > highest; });
    std::string run_old, run_new;
    int64_t run_lo = 0, run_hi = 0;
    bool open = false;
    const auto flush = [&] {
      if (!open) return;
      const std::string what =
          run_lo == run_hi ? fmt::format("{}", run_lo) : fmt::format("{}..{}", run_lo, run_hi);
      parts.push_back(fmt::format("{} {}: {} -> {}", raw_b.name, what, run_old, run_new));
      open = false;
    };
    for (size_t i = 0; i < points.size(); ++i) {
      const int64_t lo = points[i];
      const int64_t hi = i + 1 < points.size() ? points[i + 1] - 1 : highest;
      const std::string x = class_of(a, ir::Value::Int(lo)), y = class_of(b, ir::Value::Int(lo));
      if (x == y) {
        flush();
        continue;
      }
      if (open && x == run_old && y == run_new && run_hi + 1 == lo) {
        run_hi = hi;
        continue;
      }
      flush();
      run_old = x, run_new = y, run_lo = lo, run_hi = hi, open = true;
    }
    flush();
  } else {
    std::vector<std::pair<std::string, ir::Value>> probes;
    for (const ir::Field* f : {&a, &b}) {
      for (const ir::ClassifyRow& row : f->classify->rows) {
        for (const ir::Value& v : row.values) {
          const bool prefix = row.kind == ir::ClassifyRow::Kind::kPrefix;
          const std::string label = json_string(v.str, JsonText::kBytes) + (prefix ? "*" : "");
          if (std::none_of(probes.begin(), probes.end(),
                           [&](const auto& p) { return p.first == label; })) {
            probes.emplace_back(label, prefix ? ir::Value::String(v.str + "\x7f") : v);
          }
        }
      }
    }
    for (const auto& [label, v] : probes) note(label, v);
  }
  if (raw_a.optional || raw_b.optional) note("absent", std::nullopt);
  constexpr size_t kShown = 8;
  std::string out;
  for (size_t i = 0; i < parts.size() && i < kShown; ++i) out += (i ? "; " : "") + parts[i];
  if (parts.size() > kShown) out += fmt::format("; ({} more)", parts.size() - kShown);
  if (out.empty() && a.classify->fallback != b.classify->fallback) out = "fallback changed";
  return out.empty() ? "classifier rewritten, no raw value changes class" : "reclassified " + out;
}

std::string describe_field_change(const ir::Policy& old_policy, const ir::Field& a,
                                  const ir::Policy& new_policy, const ir::Field& b) {
  std::vector<std::string> parts;
  if (a.classify && b.classify && a.classify != b.classify) {
    parts.push_back(classifier_change_text(old_policy, a, new_policy, b));
  } else if (a.classify && !b.classify) {
    parts.push_back("no longer classified");
  } else if (!a.classify && b.classify) {
    parts.push_back("now classified from " + new_policy.fields.at(b.classify->from).name);
  }
  const std::string old_derivation = derivation_text(old_policy, a);
  const std::string new_derivation = derivation_text(new_policy, b);
  if (old_derivation != new_derivation) {
    if (old_derivation.empty()) {
      parts.push_back("now derived " + new_derivation);
    } else if (new_derivation.empty()) {
      parts.push_back("no longer derived (was " + old_derivation + ")");
    } else {
      parts.push_back("derived " + old_derivation + " -> " + new_derivation);
    }
  }
  if (a.optional != b.optional) parts.push_back(b.optional ? "now optional" : "now required");
  if (a.min != b.min || a.max != b.max) {
    const auto bound = [](const std::optional<int64_t>& v) {
      return v ? fmt::format("{}", *v) : std::string("none");
    };
    parts.push_back(fmt::format("bounds [{}, {}] -> [{}, {}]", bound(a.min), bound(a.max),
                                bound(b.min), bound(b.max)));
  }
  if (a.source != b.source) parts.push_back(describe_source_change(a.source, b.source));
  if (a.idempotency_key != b.idempotency_key) {
    parts.push_back(b.idempotency_key ? "now the idempotency key"
                                      : "no longer the idempotency key");
  }
  if (a.enum_values != b.enum_values) parts.push_back("enum values changed");
  if (a.empty_means_absent != b.empty_means_absent) {
    parts.push_back(b.empty_means_absent ? "now empty_means_absent"
                                         : "no longer empty_means_absent");
  }
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

// A derived bool column of the joint partition: its value is `lhs op rhs` over two int columns.
struct DerivedColumn {
  uint32_t column = 0;
  uint32_t lhs = 0;
  uint32_t rhs = 0;
  ir::Op op = ir::Op::kLt;
};

enum class Feasibility : uint8_t { kFeasible, kInfeasible, kUnknown };

// Whether some input of `box` gives every derived column a value its set in `box` allows, i.e.
// whether the region holds a real letter (the tree treats derived bools as free columns, so a
// region may pair values no operands give, such as lt(a, b) true with le(a, b) false). On
// kFeasible, `solution` holds operand values (nullopt: absent) that do. Exact for the
// comparisons a Derivation allows: with n operand columns the constraints are difference
// constraints of constants -1/0/+1 (plus disequalities), so when a solution exists one exists
// within n + 1 of an end of the operands' ranges; those candidates are searched, and a search
// longer than `kSearchLimit` steps gives kUnknown (treated as feasible by the caller).
Feasibility derived_feasible(const std::vector<DerivedColumn>& derived, const Partition& partition,
                             const Domains& domains, const Box& box, ValueOverrides* solution) {
  struct Constraint {
    size_t lhs, rhs;  // indices into `vars`
    ir::Op op;
    bool wanted;
  };
  std::vector<uint32_t> vars;
  std::vector<Constraint> constraints;
  const auto var_of = [&](uint32_t column) {
    auto it = std::find(vars.begin(), vars.end(), column);
    if (it != vars.end()) return static_cast<size_t>(it - vars.begin());
    vars.push_back(column);
    return vars.size() - 1;
  };
  for (const DerivedColumn& d : derived) {
    const auto& atoms = box[d.column].all ? domains[d.column] : box[d.column].atoms;
    if (atoms.size() != 1 || atoms[0] == kAtomAbsent) continue;
    constraints.push_back({var_of(d.lhs), var_of(d.rhs), d.op, atoms[0] == 2});
  }
  solution->clear();
  if (constraints.empty()) return Feasibility::kFeasible;
  // Per operand: its ranges (adjacent interval atoms merged) and whether absent is allowed.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges(vars.size());
  std::vector<bool> may_be_absent(vars.size(), false);
  std::vector<int64_t> ends;
  for (size_t v = 0; v < vars.size(); ++v) {
    const FieldPartition& part = partition.fields[vars[v]];
    const auto& atoms = box[vars[v]].all ? domains[vars[v]] : box[vars[v]].atoms;
    for (uint32_t atom : atoms) {
      if (atom == kAtomAbsent) {
        may_be_absent[v] = true;
        continue;
      }
      const size_t k = atom - 1;
      const int64_t lo = k == 0 ? std::numeric_limits<int64_t>::min() : part.cuts[k - 1];
      const int64_t hi =
          k == part.cuts.size() ? std::numeric_limits<int64_t>::max() : part.cuts[k] - 1;
      if (lo > hi) continue;
      if (!ranges[v].empty() && ranges[v].back().second != std::numeric_limits<int64_t>::max() &&
          ranges[v].back().second + 1 == lo) {
        ranges[v].back().second = hi;
      } else {
        ranges[v].emplace_back(lo, hi);
      }
    }
    for (const auto& [lo, hi] : ranges[v]) {
      ends.push_back(lo);
      ends.push_back(hi);
    }
  }
  const int64_t slack = static_cast<int64_t>(vars.size()) + 1;
  std::vector<std::vector<std::optional<int64_t>>> candidates(vars.size());
  for (size_t v = 0; v < vars.size(); ++v) {
    std::vector<int64_t> values;
    const auto inside = [&](int64_t x) {
      return std::any_of(ranges[v].begin(), ranges[v].end(),
                         [&](const auto& r) { return r.first <= x && x <= r.second; });
    };
    for (int64_t x : {int64_t{0}, int64_t{1}}) {
      if (inside(x)) values.push_back(x);
    }
    for (int64_t end : ends) {
      for (int64_t d = -slack; d <= slack; ++d) {
        int64_t x = 0;
        if (!__builtin_add_overflow(end, d, &x) && inside(x)) values.push_back(x);
      }
    }
    // Readable values first: the smallest magnitudes.
    std::stable_sort(values.begin(), values.end(), [](int64_t a, int64_t b) {
      const uint64_t ma = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
      const uint64_t mb = b < 0 ? 0 - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
      return ma != mb ? ma < mb : a > b;
    });
    values.erase(std::unique(values.begin(), values.end()), values.end());
    for (int64_t x : values) {
      if (std::find(candidates[v].begin(), candidates[v].end(), x) == candidates[v].end()) {
        candidates[v].push_back(x);
      }
    }
    if (may_be_absent[v]) candidates[v].push_back(std::nullopt);
  }
  // Depth-first search; a constraint is checked once both its operands are chosen. An absent
  // operand makes the letter invalid for the side that derives the value, so the value does not
  // matter there: the constraint holds vacuously.
  constexpr uint64_t kSearchLimit = 2'000'000;
  uint64_t steps = 0;
  std::vector<size_t> choice(vars.size(), 0);
  std::vector<std::optional<int64_t>> value(vars.size());
  const auto consistent = [&](size_t upto) {
    for (const Constraint& c : constraints) {
      if (c.lhs > upto || c.rhs > upto) continue;
      if (!value[c.lhs] || !value[c.rhs]) continue;
      if (ir::compare(c.op, *value[c.lhs], *value[c.rhs]) != c.wanted) return false;
    }
    return true;
  };
  size_t v = 0;
  while (true) {
    if (++steps > kSearchLimit) return Feasibility::kUnknown;
    if (choice[v] == candidates[v].size()) {
      if (v == 0) return Feasibility::kInfeasible;
      choice[v] = 0;
      --v;
      ++choice[v];
      continue;
    }
    value[v] = candidates[v][choice[v]];
    if (!consistent(v)) {
      ++choice[v];
      continue;
    }
    if (v + 1 == vars.size()) break;
    ++v;
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    solution->emplace_back(
        vars[i], value[i] ? std::optional<ir::Value>(ir::Value::Int(*value[i])) : std::nullopt);
  }
  return Feasibility::kFeasible;
}

// Whether some raw value gives every classified column of `joint` a class its set in `box`
// allows (the tree treats classified enums as free columns). On true, the raw values found are
// appended to `solution`. Exact: raw_candidates() reaches every class combination.
bool classified_feasible(const ir::Policy& joint, const Partition& partition,
                         const Domains& domains, const Box& box, ValueOverrides* solution) {
  std::vector<uint32_t> raws;
  for (const ir::Field& f : joint.fields) {
    if (f.classify && std::find(raws.begin(), raws.end(), f.classify->from) == raws.end()) {
      raws.push_back(f.classify->from);
    }
  }
  for (uint32_t raw : raws) {
    const auto& atoms = box[raw].all ? domains[raw] : box[raw].atoms;
    bool found = false;
    for (const std::optional<ir::Value>& v : raw_candidates(joint, partition, raw, atoms)) {
      bool fits = true;
      for (uint32_t c = 0; c < joint.fields.size() && fits; ++c) {
        const ir::Field& f = joint.fields[c];
        if (!f.classify || f.classify->from != raw || box[c].all) continue;
        const uint32_t atom = 1 + ir::classify(*f.classify, v);
        fits = std::binary_search(box[c].atoms.begin(), box[c].atoms.end(), atom);
      }
      if (fits) {
        solution->emplace_back(raw, v);
        found = true;
        break;
      }
    }
    if (!found) return false;
  }
  return true;
}

// On the columns where `reads_empty_as_absent(column)`, makes `clause` hold the empty-string
// atom exactly when it holds absent (its side reads "" as absent). False when the clause then
// holds no input.
template <typename Pred>
bool read_empty_as_absent(Clause& clause, const Domains& domains,
                          const std::vector<uint32_t>& empty_atom, Pred reads_empty_as_absent) {
  for (uint32_t c = 0; c < clause.box.size(); ++c) {
    AtomSet& set = clause.box[c];
    if (set.all || empty_atom[c] == kNone || !reads_empty_as_absent(c)) continue;
    const bool absent = std::binary_search(set.atoms.begin(), set.atoms.end(), kAtomAbsent);
    std::erase(set.atoms, empty_atom[c]);
    if (absent)
      set.atoms.insert(std::upper_bound(set.atoms.begin(), set.atoms.end(), empty_atom[c]),
                       empty_atom[c]);
    if (set.atoms.empty()) return false;
    if (set.atoms == domains[c]) set = AtomSet{};
  }
  return true;
}

}  // namespace

bool PolicyDiff::any_more_dangerous() const {
  return std::any_of(verb_changes.begin(), verb_changes.end(),
                     [](const DiffGroup& g) { return g.more_dangerous(); }) ||
         std::any_of(fields.begin(), fields.end(),
                     [](const FieldChange& f) { return f.more_dangerous; });
}

PolicyDiff diff_policies(const ir::Policy& old_policy, const ir::Policy& new_policy,
                         uint64_t budget) {
  PolicyDiff out;
  // ---- joint columns ----
  std::vector<Column> columns;
  ir::Policy joint;
  Side old_side, new_side;
  std::vector<uint32_t> split_columns;  // derived bools whose definition changed
  old_side.policy = &old_policy;
  new_side.policy = &new_policy;
  for (uint32_t f = 0; f < old_policy.fields.size(); ++f) {
    const ir::Field& field = old_policy.fields[f];
    old_side.columns.push_back(static_cast<uint32_t>(columns.size()));
    columns.push_back(Column{f, kNone});
    joint.fields.push_back(joint_field(field, field.name));
  }
  for (uint32_t f = 0; f < new_policy.fields.size(); ++f) {
    const ir::Field& field = new_policy.fields[f];
    std::optional<uint32_t> match;
    bool same_name = false;
    for (uint32_t c = 0; c < columns.size(); ++c) {
      if (columns[c].old_field == kNone || columns[c].new_field != kNone) continue;
      const ir::Field& old_field = old_policy.fields[columns[c].old_field];
      if (old_field.name != field.name) continue;
      same_name = true;
      if (old_field.type == field.type) match = c;
    }
    if (match) {
      // A derived bool whose definition changed (or that became, or stopped being, derived) is
      // two columns, one per side: the joint tree then splits on both values, and each region's
      // combination is checked against both definitions (derived_feasible()).
      const ir::Field& old_field = old_policy.fields[columns[*match].old_field];
      bool same_derivation = !old_field.derived && !field.derived;
      if (old_field.derived && field.derived) {
        same_derivation =
            old_field.derived->op == field.derived->op &&
            old_side.columns[old_field.derived->lhs] == new_side.columns[field.derived->lhs] &&
            old_side.columns[old_field.derived->rhs] == new_side.columns[field.derived->rhs];
      }
      // Likewise a classified enum whose classifier (or classes) changed: one column per side,
      // and classified_feasible() pairs the two classes through a raw value.
      bool same_classifier = !old_field.classify && !field.classify;
      if (old_field.classify && field.classify) {
        same_classifier =
            old_field.enum_values == field.enum_values &&
            old_field.classify->rows == field.classify->rows &&
            old_field.classify->fallback == field.classify->fallback &&
            old_side.columns[old_field.classify->from] == new_side.columns[field.classify->from];
      }
      if (!same_derivation || !same_classifier) {
        out.fields.push_back(
            {field.name, describe_field_change(old_policy, old_field, new_policy, field)});
        joint.fields[*match].name = old_field.name + " (old)";
        split_columns.push_back(*match);
        split_columns.push_back(static_cast<uint32_t>(columns.size()));
        new_side.columns.push_back(static_cast<uint32_t>(columns.size()));
        columns.push_back(Column{kNone, f});
        joint.fields.push_back(joint_field(field, field.name + " (new)"));
        continue;
      }
      columns[*match].new_field = f;
      new_side.columns.push_back(*match);
      ir::Field& j = joint.fields[*match];
      for (const auto& v : field.enum_values) {
        if (std::find(j.enum_values.begin(), j.enum_values.end(), v) == j.enum_values.end()) {
          j.enum_values.push_back(v);
        }
      }
      for (const auto& v : field.domain) {
        if (std::find(j.domain.begin(), j.domain.end(), v) == j.domain.end()) {
          j.domain.push_back(v);
        }
      }
      const std::string change = describe_field_change(old_policy, old_field, new_policy, field);
      if (!change.empty()) {
        out.fields.push_back(
            {field.name, change,
             looser_source(old_field.source, field.source) && rules_read(new_policy, f)});
      }
      continue;
    }
    if (same_name) {
      for (const Column& c : columns) {
        if (c.old_field != kNone && old_policy.fields[c.old_field].name == field.name) {
          out.fields.push_back(
              {field.name, fmt::format("retyped {} -> {}",
                                       ir::field_type_name(old_policy.fields[c.old_field].type),
                                       ir::field_type_name(field.type))});
          break;
        }
      }
    } else {
      out.fields.push_back({field.name, "added"});
    }
    new_side.columns.push_back(static_cast<uint32_t>(columns.size()));
    columns.push_back(Column{kNone, f});
    joint.fields.push_back(joint_field(field, field.name));
  }
  for (const Column& c : columns) {
    if (c.old_field == kNone) continue;
    const std::string& name = old_policy.fields[c.old_field].name;
    const bool kept = std::any_of(new_policy.fields.begin(), new_policy.fields.end(),
                                  [&](const ir::Field& f) { return f.name == name; });
    if (!kept) out.fields.push_back({name, "removed"});
  }
  // A classified column reads its raw input's joint column (one classifier per column: a
  // column both sides share has the same classifier on both).
  for (const Side* side : {&old_side, &new_side}) {
    for (uint32_t f = 0; f < side->policy->fields.size(); ++f) {
      const auto& classify = side->policy->fields[f].classify;
      if (!classify) continue;
      joint.fields[side->columns[f]].classify = classify;
      joint.fields[side->columns[f]].classify->from = side->columns[classify->from];
    }
  }
  for (const ir::Rule& rule : old_policy.rules) {
    joint.rules.push_back(remap_rule(rule, old_side.columns));
  }
  for (const ir::Rule& rule : new_policy.rules) {
    joint.rules.push_back(remap_rule(rule, new_side.columns));
  }
  for (uint32_t f = 0; f < old_policy.fields.size(); ++f) {
    add_bound_cuts(joint, old_side.columns[f], old_policy.fields[f]);
  }
  for (uint32_t f = 0; f < new_policy.fields.size(); ++f) {
    add_bound_cuts(joint, new_side.columns[f], new_policy.fields[f]);
  }
  // The empty string is an atom of its own on a string column that exactly one side reads as
  // absent when empty: that side decides it as absent, the other as the string "" (or "any
  // other"). When both sides do, "" is absent on both and is left out (the absent atom covers it).
  const auto side_field = [&](int s, uint32_t c) -> const ir::Field* {
    const uint32_t f = s == 0 ? columns[c].old_field : columns[c].new_field;
    if (f == kNone) return nullptr;
    return &(s == 0 ? old_policy : new_policy).fields[f];
  };
  const auto empty_is_absent = [&](int s, uint32_t c) {
    const ir::Field* field = side_field(s, c);
    return field != nullptr && field->type == ir::FieldType::kString && field->empty_means_absent;
  };
  for (uint32_t c = 0; c < columns.size(); ++c) {
    if (empty_is_absent(0, c) != empty_is_absent(1, c) &&
        std::find(joint.fields[c].domain.begin(), joint.fields[c].domain.end(), "") ==
            joint.fields[c].domain.end()) {
      joint.fields[c].domain.emplace_back();
    }
  }
  const Partition partition = analysis_partition(joint);
  std::vector<uint32_t> empty_atom(columns.size(), kNone);
  Domains domains(columns.size());
  for (uint32_t c = 0; c < columns.size(); ++c) {
    domains[c] = partition.fields[c].domain();
    if (empty_is_absent(0, c) != empty_is_absent(1, c)) {
      empty_atom[c] = partition.fields[c].atom_of(ir::Value::String(""));
    } else if (empty_is_absent(0, c)) {
      const uint32_t empty = partition.fields[c].atom_of(ir::Value::String(""));
      if (empty != kAtomOther) std::erase(domains[c], empty);
    }
    // A derived bool is computed, never absent: a column only derived fields use has no absent.
    const ir::Field* a = side_field(0, c);
    const ir::Field* b = side_field(1, c);
    if ((a == nullptr || a->derived || a->classify) &&
        (b == nullptr || b->derived || b->classify)) {
      std::erase(domains[c], kAtomAbsent);
    }
  }

  // ---- per side: invalid-input pseudo-clauses, then the policy's first-match list ----
  // Atoms both sides reject are dropped from the joint domain (both decide them the same way);
  // atoms only one side rejects become a first clause of that side deciding its default.
  std::vector<std::vector<uint32_t>> invalid[2];
  for (int s = 0; s < 2; ++s) {
    const Side& side = s == 0 ? old_side : new_side;
    const ir::Policy& p = *side.policy;
    invalid[s].assign(columns.size(), {});
    for (uint32_t f = 0; f < p.fields.size(); ++f) {
      const uint32_t c = side.columns[f];
      const ir::Field& field = p.fields[f];
      const FieldPartition& part = partition.fields[c];
      for (uint32_t atom : domains[c]) {
        bool valid = true;
        if (atom == kAtomAbsent || (atom == empty_atom[c] && field.empty_means_absent)) {
          valid = field.optional;
        } else if (field.type == ir::FieldType::kInt) {
          valid = int_atom_valid(part, atom, field);
        } else if (field.type == ir::FieldType::kEnum) {
          valid = std::find(field.enum_values.begin(), field.enum_values.end(),
                            part.strings[atom - 1]) != field.enum_values.end();
        }
        if (!valid) invalid[s][c].push_back(atom);
      }
    }
  }
  for (uint32_t c = 0; c < columns.size(); ++c) {
    std::vector<uint32_t> both;
    std::set_intersection(invalid[0][c].begin(), invalid[0][c].end(), invalid[1][c].begin(),
                          invalid[1][c].end(), std::back_inserter(both));
    for (uint32_t atom : both) {
      std::erase(domains[c], atom);
      std::erase(invalid[0][c], atom);
      std::erase(invalid[1][c], atom);
    }
  }
  for (int s = 0; s < 2; ++s) {
    Side* side = s == 0 ? &old_side : &new_side;
    const ir::Policy& p = *side->policy;
    for (uint32_t c = 0; c < columns.size(); ++c) {
      if (invalid[s][c].empty()) continue;
      Clause pseudo{Box(columns.size()), p.default_verb, kNoRule};
      pseudo.box[c] = AtomSet{false, invalid[s][c]};
      side->clauses.push_back(std::move(pseudo));
    }
    std::vector<Clause> rules = first_match_clauses(p, partition, domains, side->columns);
    for (Clause& clause : rules) {
      if (read_empty_as_absent(clause, domains, empty_atom,
                               [&](uint32_t c) { return empty_is_absent(s, c); })) {
        side->clauses.push_back(std::move(clause));
      }
    }
    for (const ir::CatalogEntry& entry : ir::rule_catalog(p)) {
      const ir::Rule& r = p.rules[entry.rule];
      if (const auto* g = std::get_if<ir::Guard>(&r)) {
        side->rule_ids.push_back(g->id);
      } else {
        side->rule_ids.push_back(std::get<ir::Table>(r).rows[entry.row].id);
      }
    }
  }

  std::vector<DerivedColumn> derived;
  for (int s = 0; s < 2; ++s) {
    const Side& side = s == 0 ? old_side : new_side;
    for (uint32_t f = 0; f < side.policy->fields.size(); ++f) {
      const auto& d = side.policy->fields[f].derived;
      if (!d) continue;
      const DerivedColumn column{side.columns[f], side.columns[d->lhs], side.columns[d->rhs],
                                 d->op};
      if (std::none_of(derived.begin(), derived.end(),
                       [&](const DerivedColumn& o) { return o.column == column.column; })) {
        derived.push_back(column);
      }
    }
  }
  ValueOverrides solution;

  // ---- the joint decision tree ----
  std::map<std::pair<std::string, std::string>, size_t> verb_index;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> provenance_index;
  const std::vector<ClauseList> lists = {{&old_side.clauses, old_policy.default_verb},
                                         {&new_side.clauses, new_policy.default_verb}};
  const auto note = [&](DiffGroup& group, const Box& box, const std::string& old_rule,
                        const std::string& new_rule) {
    if (group.regions++ == 0) {
      Box shown = box;  // the per-side columns of a changed derived bool are not letter fields
      for (uint32_t c : split_columns) shown[c] = AtomSet{false, {}};
      for (uint32_t c = 0; c < joint.fields.size(); ++c) {
        if (joint.fields[c].classify) shown[c] = AtomSet{false, {}};  // the raw value shows it
      }
      group.example = example_letter(joint, partition, domains, shown, solution);
      group.description = describe_box(joint, partition, box);
    }
    add_unique(group.old_rules, old_rule);
    add_unique(group.new_rules, new_rule);
  };
  const RegionStatus status =
      visit_regions(domains, lists, budget, [&](const Box& box, const Decided& decided) {
        ++out.regions;
        const Clause* old_clause = decided[0] ? &old_side.clauses[*decided[0]] : nullptr;
        const Clause* new_clause = decided[1] ? &new_side.clauses[*decided[1]] : nullptr;
        const ir::Verb& old_verb = old_side.verb(old_clause);
        const ir::Verb& new_verb = new_side.verb(new_clause);
        const std::string old_rule = old_side.rule_name(old_clause);
        const std::string new_rule = new_side.rule_name(new_clause);
        const bool verb_changed =
            old_verb.name != new_verb.name || old_verb.effect != new_verb.effect;
        if (!verb_changed && old_rule == new_rule) return true;
        // Derived bools are free columns in the tree: keep only regions some letter reaches.
        switch (derived_feasible(derived, partition, domains, box, &solution)) {
          case Feasibility::kInfeasible:
            return true;
          case Feasibility::kUnknown:
            ++out.unresolved;
            break;
          case Feasibility::kFeasible:
            break;
        }
        // Classified enums are free columns too: keep only regions a raw value reaches.
        if (!classified_feasible(joint, partition, domains, box, &solution)) return true;
        if (verb_changed) {
          auto [it, inserted] =
              verb_index.try_emplace({old_verb.name, new_verb.name}, out.verb_changes.size());
          if (inserted) {
            DiffGroup group;
            group.old_verb = old_verb.name;
            group.new_verb = new_verb.name;
            group.old_effect = old_verb.effect;
            group.new_effect = new_verb.effect;
            out.verb_changes.push_back(std::move(group));
          }
          note(out.verb_changes[it->second], box, old_rule, new_rule);
        } else if (old_rule != new_rule) {
          auto [it, inserted] = provenance_index.try_emplace({old_verb.name, old_rule, new_rule},
                                                             out.provenance_changes.size());
          if (inserted) {
            DiffGroup group;
            group.old_verb = group.new_verb = old_verb.name;
            group.old_effect = old_verb.effect;
            group.new_effect = new_verb.effect;
            out.provenance_changes.push_back(std::move(group));
          }
          note(out.provenance_changes[it->second], box, old_rule, new_rule);
        }
        return true;
      });
  out.complete = status == RegionStatus::kComplete;
  return out;
}

}  // namespace replaygate
