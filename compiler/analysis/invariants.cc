// Invariants and gaps over the decision regions (see invariants.h).
#include "compiler/analysis/invariants.h"

#include <fmt/format.h>

#include <algorithm>

namespace replaygate {
namespace {

constexpr size_t kMaxGapReports = 5;

const std::vector<uint32_t>& atoms_of(const Domains& domains, size_t field, const AtomSet& set) {
  return set.all ? domains[field] : set.atoms;
}

Box intersect_boxes(const Box& a, const Box& b) {
  Box out(a.size());
  for (size_t f = 0; f < a.size(); ++f) out[f] = intersect_sets(a[f], b[f]);
  return out;
}

std::string verb_list(const ir::Policy& policy, const std::vector<uint32_t>& verbs) {
  std::string out = "[";
  for (size_t i = 0; i < verbs.size(); ++i) {
    out += (i ? ", " : "") + policy.verbs[verbs[i]].name;
  }
  return out + "]";
}

std::string requirement_text(const ir::Policy& policy, const ir::Invariant& invariant) {
  switch (invariant.op) {
    case ir::InvariantOp::kVerbIn:
      return fmt::format("verb_in: {}", verb_list(policy, invariant.verbs));
    case ir::InvariantOp::kVerbNotIn:
      return fmt::format("verb_not_in: {}", verb_list(policy, invariant.verbs));
    case ir::InvariantOp::kEffectAtMost:
      return fmt::format("effect_at_most: {}", ir::effect_name(invariant.effect));
    case ir::InvariantOp::kEffectNot:
      return fmt::format("effect_not: {}", ir::effect_name(invariant.effect));
  }
  return "?";
}

// The known values of the gap analysis: a string field's declared domain (absent too when the
// field is optional); every other field keeps its whole domain.
Box known_values_box(const ir::Policy& policy, const Partition& partition, const Domains& domains) {
  Box box(policy.fields.size());
  for (size_t f = 0; f < policy.fields.size(); ++f) {
    const ir::Field& field = policy.fields[f];
    if (field.type != ir::FieldType::kString || field.domain.empty()) continue;
    const FieldPartition& part = partition.fields[f];
    std::vector<uint32_t> known;
    for (uint32_t atom : domains[f]) {
      if (atom == kAtomOther) continue;
      if (atom == kAtomAbsent) {
        known.push_back(atom);
        continue;
      }
      const std::string& value = part.strings[atom - 2];
      if (std::find(field.domain.begin(), field.domain.end(), value) != field.domain.end()) {
        known.push_back(atom);
      }
    }
    box[f] = AtomSet{false, std::move(known)};
  }
  return box;
}

}  // namespace

bool invariant_allows(const ir::Policy& policy, const ir::Invariant& invariant, uint32_t verb) {
  const bool listed =
      std::find(invariant.verbs.begin(), invariant.verbs.end(), verb) != invariant.verbs.end();
  const ir::Effect effect = policy.verbs[verb].effect;
  switch (invariant.op) {
    case ir::InvariantOp::kVerbIn:
      return listed;
    case ir::InvariantOp::kVerbNotIn:
      return !listed;
    case ir::InvariantOp::kEffectAtMost:
      return effect <= invariant.effect;
    case ir::InvariantOp::kEffectNot:
      return effect != invariant.effect;
  }
  return false;
}

std::optional<Box> premise_box(const ir::Invariant& invariant, const Partition& partition,
                               const Domains& domains) {
  Box box(partition.fields.size());
  for (const ir::Condition& c : invariant.conditions) {
    std::vector<uint32_t> atoms = condition_atoms(partition.fields[c.field], c);
    AtomSet restricted{false, {}};
    std::set_intersection(atoms.begin(), atoms.end(), domains[c.field].begin(),
                          domains[c.field].end(), std::back_inserter(restricted.atoms));
    box[c.field] = intersect_sets(box[c.field], restricted);
    if (atoms_of(domains, c.field, box[c.field]).empty()) return std::nullopt;
  }
  for (size_t f = 0; f < box.size(); ++f) {
    if (!box[f].all && box[f].atoms.size() == domains[f].size()) box[f] = AtomSet{};
    if (atoms_of(domains, f, box[f]).empty()) return std::nullopt;
  }
  return box;
}

InvariantReport prove_invariants(const ir::Policy& policy, uint64_t budget) {
  InvariantReport report;
  report.verdicts.resize(policy.invariants.size());
  const Partition partition = analysis_partition(policy);
  const Domains domains = valid_domains(policy, partition);
  std::vector<std::optional<Box>> premises;
  for (size_t i = 0; i < policy.invariants.size(); ++i) {
    premises.push_back(premise_box(policy.invariants[i], partition, domains));
    report.verdicts[i].vacuous = !premises.back().has_value();
  }
  const bool want_gaps = std::any_of(policy.fields.begin(), policy.fields.end(),
                                     [](const ir::Field& f) { return !f.domain.empty(); });
  const Box known = want_gaps ? known_values_box(policy, partition, domains) : Box{};
  const std::vector<Clause> clauses = first_match_clauses(policy, partition, domains);
  const std::vector<ClauseList> lists = {{&clauses, policy.default_verb}};
  const RegionStatus status =
      visit_regions(domains, lists, budget, [&](const Box& box, const Decided& decided) {
        ++report.region_count;
        const uint32_t verb = decided[0] ? clauses[*decided[0]].verb : policy.default_verb;
        std::optional<uint32_t> rule;
        if (decided[0]) rule = clauses[*decided[0]].rule;
        for (size_t i = 0; i < policy.invariants.size(); ++i) {
          if (!premises[i] || invariant_allows(policy, policy.invariants[i], verb)) continue;
          if (!boxes_intersect(domains, box, *premises[i])) continue;
          InvariantVerdict& verdict = report.verdicts[i];
          // Name the earliest rule that breaks it (the default last): the likeliest culprit.
          const uint64_t order = rule ? *rule : kNoRule;
          if (verdict.holds || order < (verdict.rule ? *verdict.rule : kNoRule)) {
            verdict.holds = false;
            verdict.counterexample_box = intersect_boxes(box, *premises[i]);
            verdict.counterexample =
                example_letter(policy, partition, domains, verdict.counterexample_box);
            verdict.verb = verb;
            verdict.rule = rule;
          }
          ++verdict.violating_regions;
        }
        if (want_gaps && !decided[0] && boxes_intersect(domains, box, known)) {
          report.gaps.push_back(Region{intersect_boxes(box, known), verb, std::nullopt});
        }
        return true;
      });
  report.complete = status == RegionStatus::kComplete;
  return report;
}

std::string rule_id(const ir::Policy& policy, uint32_t rule) {
  const auto catalog = ir::rule_catalog(policy);
  const ir::CatalogEntry& entry = catalog.at(rule);
  const ir::Rule& r = policy.rules[entry.rule];
  if (const auto* guard = std::get_if<ir::Guard>(&r)) return guard->id;
  return std::get<ir::Table>(r).rows[entry.row].id;
}

std::string describe_rule(const ir::CheckedPolicy& checked, std::optional<uint32_t> rule) {
  if (!rule) return "the default";
  const auto catalog = ir::rule_catalog(checked.policy);
  const ir::CatalogEntry& entry = catalog.at(*rule);
  const ir::Rule& r = checked.policy.rules[entry.rule];
  ir::Span span;
  if (std::holds_alternative<ir::Guard>(r)) {
    if (entry.rule < checked.source.rules.size()) span = checked.source.rules[entry.rule];
  } else if (entry.rule < checked.source.rows.size() &&
             entry.row < checked.source.rows[entry.rule].size()) {
    span = checked.source.rows[entry.rule][entry.row];
  }
  const char* kind = std::holds_alternative<ir::Guard>(r) ? "guard" : "row";
  std::string out = fmt::format("{} '{}'", kind, rule_id(checked.policy, *rule));
  if (span.line != 0) out += fmt::format(" (line {})", span.line);
  return out;
}

std::string describe_box(const ir::Policy& policy, const Partition& partition, const Box& box) {
  std::string out;
  for (size_t f = 0; f < box.size() && f < policy.fields.size(); ++f) {
    if (box[f].all) continue;
    out += out.empty() ? "" : ", ";
    out += policy.fields[f].name + ": ";
    const auto& atoms = box[f].atoms;
    constexpr size_t kShown = 4;
    for (size_t i = 0; i < atoms.size() && i < kShown; ++i) {
      out += (i ? " | " : "") + partition.fields[f].atom_label(atoms[i]);
    }
    if (atoms.size() > kShown) out += fmt::format(" | ({} more)", atoms.size() - kShown);
  }
  return out.empty() ? "any input" : out;
}

std::vector<Diagnostic> region_diagnostics(const ir::CheckedPolicy& checked, uint64_t budget) {
  const ir::Policy& policy = checked.policy;
  std::vector<Diagnostic> out;
  const bool want_gaps = std::any_of(policy.fields.begin(), policy.fields.end(),
                                     [](const ir::Field& f) { return !f.domain.empty(); });
  if (policy.invariants.empty() && !want_gaps) return out;
  const InvariantReport report = prove_invariants(policy, budget);
  const auto report_at = [&](Severity severity, const char* code, ir::Span span,
                             std::string message, std::string hint) {
    out.push_back(
        Diagnostic{severity, code, std::move(message), checked.source.path, span, std::move(hint)});
  };
  for (size_t i = 0; i < policy.invariants.size(); ++i) {
    const ir::Invariant& invariant = policy.invariants[i];
    const InvariantVerdict& verdict = report.verdicts[i];
    const ir::Span span =
        i < checked.source.invariants.size() ? checked.source.invariants[i] : ir::Span{};
    if (verdict.vacuous) {
      report_at(Severity::kWarning, "RG214", span,
                fmt::format("invariant '{}' is vacuous: no valid input satisfies its 'when'",
                            invariant.id),
                "fix the conditions; as written the invariant proves nothing");
      continue;
    }
    if (!verdict.holds) {
      const ir::Verb& verb = policy.verbs[verdict.verb];
      std::string more;
      if (verdict.violating_regions > 1) {
        more = fmt::format(" ({} regions of inputs break it)", verdict.violating_regions);
      }
      report_at(Severity::kError, "RG210", span,
                fmt::format("invariant '{}' does not hold: {} gives '{}' (effect {}) to {}{}",
                            invariant.id, describe_rule(checked, verdict.rule), verb.name,
                            ir::effect_name(verb.effect), verdict.counterexample, more),
                fmt::format(
                    "the invariant requires {}{}; change that rule (or add a guard "
                    "before it), or fix the invariant",
                    requirement_text(policy, invariant),
                    invariant.conditions.empty() ? " for every input" : " when its 'when' holds"));
      continue;
    }
    if (!report.complete) {
      report_at(Severity::kError, "RG213", span,
                fmt::format("invariant '{}' could not be proven: the analysis ran out of its "
                            "work budget",
                            invariant.id),
                "split large wildcard tables or guards so the policy has fewer regions");
    }
  }
  if (!report.complete) {
    report_at(Severity::kInfo, "RG212", checked.source.policy,
              fmt::format("decision regions incomplete: the analysis stopped after {} regions; "
                          "gaps were not all reported",
                          report.region_count),
              "the compiled decisions are not affected");
  }
  const Partition partition = analysis_partition(policy);
  const Domains domains = valid_domains(policy, partition);
  for (size_t g = 0; g < report.gaps.size() && g < kMaxGapReports; ++g) {
    const Region& gap = report.gaps[g];
    std::string count;
    if (g + 1 == kMaxGapReports && report.gaps.size() > kMaxGapReports) {
      count = fmt::format(" ({} more gap regions not shown)", report.gaps.size() - kMaxGapReports);
    }
    report_at(Severity::kInfo, "RG211", checked.source.default_verb,
              fmt::format("known inputs fall to the default '{}': {}; e.g. {}{}",
                          policy.verbs[policy.default_verb].name,
                          describe_box(policy, partition, gap.box),
                          example_letter(policy, partition, domains, gap.box), count),
              "add a row or guard that decides them, or leave them to the default on purpose");
  }
  return out;
}

}  // namespace replaygate
