// Semantic policy diff over a joint partition and a two-list decision tree (see diff.h).
#include "compiler/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "compiler/invariants.h"

namespace replaygate {
namespace {

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

std::string describe_field_change(const ir::Field& a, const ir::Field& b) {
  std::vector<std::string> parts;
  if (a.optional != b.optional) parts.push_back(b.optional ? "now optional" : "now required");
  if (a.min != b.min || a.max != b.max) {
    const auto bound = [](const std::optional<int64_t>& v) {
      return v ? fmt::format("{}", *v) : std::string("none");
    };
    parts.push_back(fmt::format("bounds [{}, {}] -> [{}, {}]", bound(a.min), bound(a.max),
                                bound(b.min), bound(b.max)));
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

}  // namespace

bool PolicyDiff::any_more_dangerous() const {
  return std::any_of(verb_changes.begin(), verb_changes.end(),
                     [](const DiffGroup& g) { return g.more_dangerous(); });
}

PolicyDiff diff_policies(const ir::Policy& old_policy, const ir::Policy& new_policy,
                         uint64_t budget) {
  PolicyDiff out;
  // ---- joint columns ----
  std::vector<Column> columns;
  ir::Policy joint;
  Side old_side, new_side;
  old_side.policy = &old_policy;
  new_side.policy = &new_policy;
  for (uint32_t f = 0; f < old_policy.fields.size(); ++f) {
    const ir::Field& field = old_policy.fields[f];
    old_side.columns.push_back(static_cast<uint32_t>(columns.size()));
    columns.push_back(Column{f, kNone});
    ir::Field j = field;
    j.optional = true;
    j.min.reset();
    j.max.reset();
    j.empty_means_absent = false;
    j.derived.reset();
    joint.fields.push_back(std::move(j));
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
      const std::string change =
          describe_field_change(old_policy.fields[columns[*match].old_field], field);
      if (!change.empty()) out.fields.push_back({field.name, change});
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
    ir::Field j = field;
    j.optional = true;
    j.min.reset();
    j.max.reset();
    j.empty_means_absent = false;
    j.derived.reset();
    joint.fields.push_back(std::move(j));
  }
  for (const Column& c : columns) {
    if (c.old_field == kNone) continue;
    const std::string& name = old_policy.fields[c.old_field].name;
    const bool kept = std::any_of(new_policy.fields.begin(), new_policy.fields.end(),
                                  [&](const ir::Field& f) { return f.name == name; });
    if (!kept) out.fields.push_back({name, "removed"});
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
  const Partition partition = analysis_partition(joint);
  Domains domains(columns.size());
  for (uint32_t c = 0; c < columns.size(); ++c) {
    domains[c] = partition.fields[c].domain();
    // An empty string that one side reads as absent is left out of the comparison.
    const bool empty_is_absent = (columns[c].old_field != kNone &&
                                  old_policy.fields[columns[c].old_field].empty_means_absent) ||
                                 (columns[c].new_field != kNone &&
                                  new_policy.fields[columns[c].new_field].empty_means_absent);
    if (empty_is_absent && partition.fields[c].type == ir::FieldType::kString) {
      const uint32_t empty = partition.fields[c].atom_of(ir::Value::String(""));
      if (empty != kAtomOther) std::erase(domains[c], empty);
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
        if (atom == kAtomAbsent) {
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
    for (Clause& clause : rules) side->clauses.push_back(std::move(clause));
    for (const ir::CatalogEntry& entry : ir::rule_catalog(p)) {
      const ir::Rule& r = p.rules[entry.rule];
      if (const auto* g = std::get_if<ir::Guard>(&r)) {
        side->rule_ids.push_back(g->id);
      } else {
        side->rule_ids.push_back(std::get<ir::Table>(r).rows[entry.row].id);
      }
    }
  }

  // ---- the joint decision tree ----
  std::map<std::pair<std::string, std::string>, size_t> verb_index;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> provenance_index;
  const std::vector<ClauseList> lists = {{&old_side.clauses, old_policy.default_verb},
                                         {&new_side.clauses, new_policy.default_verb}};
  const auto note = [&](DiffGroup& group, const Box& box, const std::string& old_rule,
                        const std::string& new_rule) {
    if (group.regions++ == 0) {
      group.example = example_letter(joint, partition, domains, box);
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
        if (old_verb.name != new_verb.name || old_verb.effect != new_verb.effect) {
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
