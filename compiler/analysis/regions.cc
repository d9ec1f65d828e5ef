// Decision-region engine (see regions.h): first-match clause lists and a Maranget decision tree.
#include "compiler/analysis/regions.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "common/json.h"

namespace replaygate {
namespace {

const std::vector<uint32_t>& atoms_of(const Domains& domains, size_t field, const AtomSet& set) {
  return set.all ? domains[field] : set.atoms;
}

// `atoms` (sorted) restricted to `domain`; `all` when it holds the whole domain.
AtomSet restrict_to(const std::vector<uint32_t>& domain, const std::vector<uint32_t>& atoms) {
  AtomSet out;
  out.all = false;
  std::set_intersection(atoms.begin(), atoms.end(), domain.begin(), domain.end(),
                        std::back_inserter(out.atoms));
  if (out.atoms.size() == domain.size()) return AtomSet{};
  return out;
}

// One pending node of the decision tree: the region's box and, per list, its live clauses in
// priority order (flattened: list k's clauses are live[begin[k], begin[k+1])).
struct Node {
  Box box;
  std::vector<uint32_t> live;
  std::vector<uint32_t> begin;
};

// A clause, named by its list and index, that touches some atoms of the split column.
struct Touch {
  uint32_t atom;
  uint32_t list;
  uint32_t clause;
  bool operator<(const Touch& o) const {
    return std::tie(atom, list, clause) < std::tie(o.atom, o.list, o.clause);
  }
};

}  // namespace

Domains valid_domains(const ir::Policy& policy, const Partition& partition) {
  Domains domains(policy.fields.size());
  for (size_t f = 0; f < policy.fields.size(); ++f) {
    const FieldPartition& part = partition.fields[f];
    domains[f] = part.domain();
    if (policy.fields[f].empty_means_absent && part.type == ir::FieldType::kString) {
      uint32_t empty = part.atom_of(ir::Value::String(""));
      if (empty != kAtomOther) std::erase(domains[f], empty);
    }
  }
  return domains;
}

std::vector<Clause> first_match_clauses(const ir::Policy& policy, const Partition& partition,
                                        const Domains& domains,
                                        const std::vector<uint32_t>& columns) {
  const auto column = [&](uint32_t field) { return columns.empty() ? field : columns[field]; };
  const size_t width = partition.fields.size();
  std::vector<Clause> out;
  uint32_t catalog = 0;
  std::vector<uint32_t> key_atom(1);
  // Narrows `box` on one column; false when no valid atom is left.
  const auto narrow = [&](Box& box, uint32_t col, const std::vector<uint32_t>& atoms) {
    AtomSet restricted = restrict_to(domains[col], atoms);
    AtomSet set = box[col].all ? std::move(restricted) : intersect_sets(box[col], restricted);
    if (!set.all && set.atoms.empty()) return false;
    if (!set.all && set.atoms.size() == domains[col].size()) set = AtomSet{};
    box[col] = std::move(set);
    return true;
  };
  for (const ir::Rule& rule : policy.rules) {
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      Clause clause{Box(width), guard->verb, catalog++};
      bool possible = true;
      for (const ir::Condition& c : guard->conditions) {
        const uint32_t col = column(c.field);
        possible = possible && narrow(clause.box, col, condition_atoms(partition.fields[col], c));
      }
      if (possible) out.push_back(std::move(clause));
      continue;
    }
    const auto& table = std::get<ir::Table>(rule);
    // Most concrete keys first, ties by row order: the table's hit policy as a first match.
    std::vector<std::pair<int, uint32_t>> order;
    for (uint32_t i = 0; i < table.rows.size(); ++i) {
      int concrete = 0;
      for (const auto& key : table.rows[i].keys) concrete += key.has_value();
      order.emplace_back(-concrete, i);
    }
    std::stable_sort(order.begin(), order.end());
    for (const auto& [negative, i] : order) {
      const ir::Row& row = table.rows[i];
      Clause clause{Box(width), row.verb, catalog + i};
      bool possible = true;
      for (size_t k = 0; k < table.key_fields.size() && k < row.keys.size(); ++k) {
        if (!row.keys[k]) continue;
        const uint32_t f = table.key_fields[k];
        const uint32_t col = column(f);
        const ir::Field& field = policy.fields[f];
        // An enum key outside the enum (check() rejects it) must not read as absent.
        if (field.type == ir::FieldType::kEnum &&
            std::find(field.enum_values.begin(), field.enum_values.end(), row.keys[k]->str) ==
                field.enum_values.end()) {
          possible = false;
          break;
        }
        // key_atoms() of a concrete key is its one atom; skip the temporary vector.
        key_atom[0] = partition.fields[col].atom_of(*row.keys[k]);
        possible = possible && narrow(clause.box, col, key_atom);
      }
      if (possible) out.push_back(std::move(clause));
    }
    catalog += static_cast<uint32_t>(table.rows.size());
  }
  return out;
}

RegionStatus visit_regions(const Domains& domains, const std::vector<ClauseList>& lists,
                           uint64_t& budget, const RegionVisitor& visit) {
  const size_t width = domains.size();
  for (const auto& domain : domains) {
    if (domain.empty()) return RegionStatus::kComplete;  // no valid input at all
  }
  Node root;
  root.box.assign(width, AtomSet{});
  root.begin.push_back(0);
  for (const ClauseList& list : lists) {
    for (uint32_t i = 0; i < list.clauses->size(); ++i) root.live.push_back(i);
    root.begin.push_back(static_cast<uint32_t>(root.live.size()));
  }
  const auto clause_of = [&](uint32_t list, uint32_t index) -> const Clause& {
    return (*lists[list].clauses)[index];
  };
  // Whether `clause` holds every atom of `box` on column `col`.
  const auto holds_column = [&](const Clause& clause, const Box& box, size_t col) {
    const AtomSet& need = clause.box[col];
    if (need.all) return true;
    if (box[col].all) return false;  // clause sets are never the whole domain unless `all`
    return std::includes(need.atoms.begin(), need.atoms.end(), box[col].atoms.begin(),
                         box[col].atoms.end());
  };

  std::vector<Node> stack;
  stack.push_back(std::move(root));
  Decided decided(lists.size());
  std::vector<Touch> touches;
  std::vector<uint32_t> full_positions;
  std::vector<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> classes;  // (sig, atoms)
  std::vector<std::pair<std::vector<uint32_t>, uint32_t>> by_atom;               // (sig, atom)
  while (!stack.empty()) {
    Node node = std::move(stack.back());
    stack.pop_back();
    const uint64_t cost = 1 + node.live.size();
    if (budget <= cost) {
      budget = 0;
      return RegionStatus::kGaveUp;
    }
    budget -= cost;
    // Decide each list, and find the column the first undecided list's first clause needs.
    std::optional<size_t> split;
    for (uint32_t k = 0; k < lists.size(); ++k) {
      if (node.begin[k] == node.begin[k + 1]) {
        decided[k].reset();
        continue;
      }
      const uint32_t first = node.live[node.begin[k]];
      const Clause& clause = clause_of(k, first);
      std::optional<size_t> needed;
      for (size_t col = 0; col < width && !needed; ++col) {
        if (!holds_column(clause, node.box, col)) needed = col;
      }
      if (!needed) {
        decided[k] = first;
        continue;
      }
      if (!split) split = needed;
    }
    if (!split) {
      if (!visit(node.box, decided)) return RegionStatus::kStopped;
      continue;
    }
    const size_t col = *split;
    const std::vector<uint32_t>& atoms = atoms_of(domains, col, node.box[col]);
    // Per live clause: holds every atom of the column (stays live in every class), some of them
    // (a touch per atom), or none (dropped).
    touches.clear();
    std::vector<uint8_t> full(node.live.size(), 0);
    for (uint32_t k = 0; k < lists.size(); ++k) {
      for (uint32_t p = node.begin[k]; p < node.begin[k + 1]; ++p) {
        const AtomSet& set = clause_of(k, node.live[p]).box[col];
        if (set.all) {
          full[p] = 1;
          continue;
        }
        size_t shared = 0;
        if (node.box[col].all) {
          shared = set.atoms.size();
          for (uint32_t atom : set.atoms) touches.push_back({atom, k, p});
        } else {
          for (uint32_t atom : set.atoms) {
            if (std::binary_search(atoms.begin(), atoms.end(), atom)) {
              touches.push_back({atom, k, p});
              ++shared;
            }
          }
        }
        if (shared == atoms.size()) {
          full[p] = 1;
          touches.resize(touches.size() - shared);
        }
      }
    }
    const uint64_t extra = touches.size();
    if (budget <= extra) {
      budget = 0;
      return RegionStatus::kGaveUp;
    }
    budget -= extra;
    std::sort(touches.begin(), touches.end());
    // Classes: atoms with the same touching clauses. Signature = the positions p, in order.
    // Only touched atoms get a signature of their own; the untouched atoms (often most of a wide
    // column) form one class with the empty signature, found without a vector per atom.
    classes.clear();
    {
      by_atom.clear();
      std::vector<uint32_t> untouched;
      size_t t = 0;
      for (uint32_t atom : atoms) {
        while (t < touches.size() && touches[t].atom < atom) ++t;
        if (t == touches.size() || touches[t].atom != atom) {
          untouched.push_back(atom);
          continue;
        }
        std::vector<uint32_t> sig;
        while (t < touches.size() && touches[t].atom == atom) sig.push_back(touches[t++].clause);
        std::sort(sig.begin(), sig.end());
        by_atom.emplace_back(std::move(sig), atom);
      }
      if (!untouched.empty()) classes.emplace_back(std::vector<uint32_t>{}, std::move(untouched));
      std::stable_sort(by_atom.begin(), by_atom.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t i = 0; i < by_atom.size();) {
        size_t j = i;
        std::vector<uint32_t> members;
        while (j < by_atom.size() && by_atom[j].first == by_atom[i].first) {
          members.push_back(by_atom[j].second);
          ++j;
        }
        std::sort(members.begin(), members.end());
        classes.emplace_back(std::move(by_atom[i].first), std::move(members));
        i = j;
      }
    }
    // Children in order of their smallest atom; pushed in reverse so the smallest comes first.
    std::sort(classes.begin(), classes.end(),
              [](const auto& a, const auto& b) { return a.second.front() < b.second.front(); });
    // The positions that stay live in every class, in order; each child merges them with its
    // signature, so building a child costs its own size, not the node's (a wide split of a long
    // list would otherwise cost classes x live).
    full_positions.clear();
    for (uint32_t p = 0; p < node.live.size(); ++p) {
      if (full[p]) full_positions.push_back(p);
    }
    for (auto it = classes.rbegin(); it != classes.rend(); ++it) {
      const auto& [sig, members] = *it;
      Node child;
      child.box = node.box;
      if (members.size() == domains[col].size()) {
        child.box[col] = AtomSet{};
      } else {
        child.box[col] = AtomSet{false, members};
      }
      child.begin.push_back(0);
      child.live.reserve(full_positions.size() + sig.size());
      size_t s = 0, f = 0;
      for (uint32_t k = 0; k < lists.size(); ++k) {
        const uint32_t end = node.begin[k + 1];
        // Positions of list k in increasing order: the union of the full ones and the signature.
        while (true) {
          const bool has_f = f < full_positions.size() && full_positions[f] < end;
          const bool has_s = s < sig.size() && sig[s] < end;
          if (!has_f && !has_s) break;
          uint32_t p;
          if (has_f && (!has_s || full_positions[f] <= sig[s])) {
            p = full_positions[f++];
            if (has_s && sig[s] == p) ++s;
          } else {
            p = sig[s++];
          }
          child.live.push_back(node.live[p]);
        }
        child.begin.push_back(static_cast<uint32_t>(child.live.size()));
      }
      stack.push_back(std::move(child));
    }
  }
  return RegionStatus::kComplete;
}

RegionResult decision_regions(const ir::Policy& policy, uint64_t budget) {
  RegionResult out;
  out.partition = analysis_partition(policy);
  out.domains = valid_domains(policy, out.partition);
  const std::vector<Clause> clauses = first_match_clauses(policy, out.partition, out.domains);
  const std::vector<ClauseList> lists = {{&clauses, policy.default_verb}};
  RegionStatus status =
      visit_regions(out.domains, lists, budget, [&](const Box& box, const Decided& decided) {
        Region region;
        region.box = box;
        if (decided[0]) {
          region.verb = clauses[*decided[0]].verb;
          region.rule = clauses[*decided[0]].rule;
        } else {
          region.verb = policy.default_verb;
        }
        out.regions.push_back(std::move(region));
        return true;
      });
  out.complete = status == RegionStatus::kComplete;
  return out;
}

uint32_t example_atom(const FieldPartition& field, const std::vector<uint32_t>& atoms) {
  // Present before absent; for strings a mentioned value before "any other".
  const auto rank = [&](uint32_t atom) {
    if (atom == kAtomAbsent) return 2;
    if (field.type == ir::FieldType::kString && atom == kAtomOther) return 1;
    return 0;
  };
  uint32_t best = atoms.front();
  for (uint32_t atom : atoms) {
    if (rank(atom) < rank(best)) best = atom;
  }
  return best;
}

ir::Value example_value(const FieldPartition& field, uint32_t atom, bool empty_means_absent) {
  switch (field.type) {
    case ir::FieldType::kBool:
      return ir::Value::Bool(atom == 2);
    case ir::FieldType::kEnum:
      return ir::Value::String(field.strings.at(atom - 1));
    case ir::FieldType::kString: {
      if (atom != kAtomOther) return ir::Value::String(field.strings.at(atom - 2));
      // A string the policy does not mention (and not "", which may mean absent).
      std::string candidate = "other";
      for (int n = 1; std::binary_search(field.strings.begin(), field.strings.end(), candidate) ||
                      (empty_means_absent && candidate.empty());
           ++n) {
        candidate = fmt::format("other{}", n);
      }
      return ir::Value::String(candidate);
    }
    case ir::FieldType::kInt: {
      const size_t k = atom - 1;
      int64_t lo = k == 0 ? std::numeric_limits<int64_t>::min() : field.cuts[k - 1];
      int64_t hi_inclusive =
          k == field.cuts.size() ? std::numeric_limits<int64_t>::max() : field.cuts[k] - 1;
      if (field.min) lo = std::max(lo, *field.min);
      if (field.max) hi_inclusive = std::min(hi_inclusive, *field.max);
      // Prefer 0 when the interval holds it (readable), else its end nearest to 0.
      if (lo <= 0 && 0 <= hi_inclusive) return ir::Value::Int(0);
      return ir::Value::Int(lo > 0 ? lo : hi_inclusive);
    }
  }
  return ir::Value::String("");
}

namespace {

// Candidate ints of an int field's interval atom: both ends and their neighbours, inside min/max.
void interval_candidates(const FieldPartition& field, uint32_t atom, std::vector<int64_t>* out) {
  if (atom == kAtomAbsent) return;
  const size_t k = atom - 1;
  int64_t lo = k == 0 ? std::numeric_limits<int64_t>::min() : field.cuts[k - 1];
  int64_t hi = k == field.cuts.size() ? std::numeric_limits<int64_t>::max() : field.cuts[k] - 1;
  if (field.min) lo = std::max(lo, *field.min);
  if (field.max) hi = std::min(hi, *field.max);
  if (lo > hi) return;
  // Small, readable values first.
  if (lo <= 0 && 0 <= hi) out->push_back(0);
  if (lo <= 1 && 1 <= hi) out->push_back(1);
  for (int64_t v : {lo, lo < hi ? lo + 1 : lo, lo < hi ? hi - 1 : hi, hi}) out->push_back(v);
}

}  // namespace

std::vector<std::optional<ir::Value>> raw_candidates(const ir::Policy& policy,
                                                     const Partition& partition, uint32_t raw,
                                                     const std::vector<uint32_t>& raw_atoms) {
  std::vector<const ir::Classifier*> readers;
  for (const ir::Field& f : policy.fields) {
    if (f.classify && f.classify->from == raw) readers.push_back(&*f.classify);
  }
  const ir::Field& field = policy.fields.at(raw);
  const FieldPartition& part = partition.fields.at(raw);
  std::vector<std::optional<ir::Value>> out;
  for (uint32_t atom : raw_atoms) {
    if (atom == kAtomAbsent) {
      out.emplace_back(std::nullopt);
      continue;
    }
    if (field.type == ir::FieldType::kInt) {
      std::vector<int64_t> candidates;
      interval_candidates(part, atom, &candidates);
      if (candidates.empty()) continue;
      const int64_t lo = *std::min_element(candidates.begin(), candidates.end());
      const int64_t hi = *std::max_element(candidates.begin(), candidates.end());
      // Every class's values inside [lo, hi] form intervals whose ends are lo, hi or a row's
      // bound +-1: those points find each class that occurs there.
      for (const ir::Classifier* c : readers) {
        for (const ir::ClassifyRow& row : c->rows) {
          for (const ir::Value& v : row.values) {
            if (v.i > std::numeric_limits<int64_t>::min()) candidates.push_back(v.i - 1);
            candidates.push_back(v.i);
            if (v.i < std::numeric_limits<int64_t>::max()) candidates.push_back(v.i + 1);
          }
        }
      }
      std::vector<int64_t> seen;
      for (int64_t v : candidates) {
        if (v < lo || v > hi || std::find(seen.begin(), seen.end(), v) != seen.end()) continue;
        seen.push_back(v);
        out.emplace_back(ir::Value::Int(v));
      }
      continue;
    }
    if (field.type != ir::FieldType::kString) continue;
    if (atom >= 2 && atom - 2 < part.strings.size()) {
      out.emplace_back(ir::Value::String(part.strings[atom - 2]));
      continue;
    }
    // "Other": strings the policy does not mention; a listed value or prefix with a suffix lands
    // where the prefixes take it, the others where nothing does.
    std::vector<std::string> candidates = {"unclassified", "", "\x01", "~"};
    for (const ir::Classifier* c : readers) {
      for (const ir::ClassifyRow& row : c->rows) {
        for (const ir::Value& v : row.values) {
          candidates.push_back(v.str + "0");
          candidates.push_back(v.str + "~");
        }
      }
    }
    for (const std::string& text : candidates) {
      if (text.empty() && field.empty_means_absent) continue;
      if (std::binary_search(part.strings.begin(), part.strings.end(), text)) continue;
      out.emplace_back(ir::Value::String(text));
    }
  }
  return out;
}

std::optional<std::optional<ir::Value>> raw_value_in_class(const ir::Policy& policy,
                                                           const Partition& partition,
                                                           uint32_t field,
                                                           const std::vector<uint32_t>& raw_atoms,
                                                           uint32_t cls) {
  const ir::Classifier& c = *policy.fields.at(field).classify;
  // A present value shows more than "absent": try those first.
  const auto candidates = raw_candidates(policy, partition, c.from, raw_atoms);
  for (const std::optional<ir::Value>& v : candidates) {
    if (v && ir::classify(c, v) == cls) return v;
  }
  for (const std::optional<ir::Value>& v : candidates) {
    if (!v && ir::classify(c, v) == cls) return v;
  }
  return std::nullopt;
}

std::string example_letter(const ir::Policy& policy, const Partition& partition,
                           const Domains& domains, const Box& box,
                           const ValueOverrides& overrides) {
  const size_t n = std::min(policy.fields.size(), box.size());
  std::vector<std::optional<ir::Value>> values(n);
  for (size_t f = 0; f < n; ++f) {
    const auto& atoms = atoms_of(domains, f, box[f]);
    if (atoms.empty()) continue;
    const FieldPartition& part = partition.fields[f];
    const uint32_t atom = example_atom(part, atoms);
    if (atom == kAtomAbsent) continue;
    values[f] = example_value(part, atom, policy.fields[f].empty_means_absent);
  }
  // A derived bool is computed from its operands, so pick operand values (inside the region)
  // that make it the value the region needs; otherwise the letter would not reproduce.
  for (size_t f = 0; f < n; ++f) {
    const auto& derived = policy.fields[f].derived;
    if (!derived || !values[f] || derived->lhs >= n || derived->rhs >= n) continue;
    const bool wanted = values[f]->b;
    if (values[derived->lhs] && values[derived->rhs] &&
        ir::compare(derived->op, values[derived->lhs]->i, values[derived->rhs]->i) == wanted) {
      continue;
    }
    std::vector<int64_t> left, right;
    for (uint32_t atom : atoms_of(domains, derived->lhs, box[derived->lhs])) {
      interval_candidates(partition.fields[derived->lhs], atom, &left);
    }
    for (uint32_t atom : atoms_of(domains, derived->rhs, box[derived->rhs])) {
      interval_candidates(partition.fields[derived->rhs], atom, &right);
    }
    bool found = false;
    for (size_t i = 0; i < left.size() && !found; ++i) {
      for (size_t j = 0; j < right.size() && !found; ++j) {
        if (ir::compare(derived->op, left[i], right[j]) == wanted) {
          values[derived->lhs] = ir::Value::Int(left[i]);
          values[derived->rhs] = ir::Value::Int(right[j]);
          found = true;
        }
      }
    }
  }
  // A classified enum is computed from its raw input: show a raw value (inside the region) that
  // lands in the region's class instead of the class, so that the letter reproduces.
  for (size_t f = 0; f < n; ++f) {
    const auto& classify = policy.fields[f].classify;
    if (!classify || !values[f] || classify->from >= n) continue;
    const auto& classes = policy.fields[f].enum_values;
    const auto at = std::find(classes.begin(), classes.end(), values[f]->str);
    if (at == classes.end()) continue;
    const uint32_t cls = static_cast<uint32_t>(at - classes.begin());
    auto raw = raw_value_in_class(policy, partition, static_cast<uint32_t>(f),
                                  atoms_of(domains, classify->from, box[classify->from]), cls);
    if (!raw) continue;
    values[classify->from] = *raw;
    values[f].reset();
  }
  for (const auto& [f, value] : overrides) {
    if (f < n) values[f] = value;
  }
  std::string out = "{";
  bool first = true;
  std::vector<std::string> printed;  // a retyped field appears twice in diff's joint policy
  for (size_t f = 0; f < n; ++f) {
    if (!values[f]) continue;
    const std::string& name = policy.fields[f].name;
    if (std::find(printed.begin(), printed.end(), name) != printed.end()) continue;
    printed.push_back(name);
    const ir::Value& value = *values[f];
    out += first ? "" : ", ";
    first = false;
    out += json_string(name, JsonText::kBytes) + ": ";
    switch (value.kind) {
      case ir::Value::Kind::kString:
        out += json_string(value.str, JsonText::kBytes);
        break;
      case ir::Value::Kind::kInt:
        out += fmt::format("{}", value.i);
        break;
      case ir::Value::Kind::kBool:
        out += value.b ? "true" : "false";
        break;
    }
  }
  return out + "}";
}

}  // namespace replaygate
