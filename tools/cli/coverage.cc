// Test coverage over the IR (see coverage.h).
#include "tools/cli/coverage.h"

#include <variant>

#include "compiler/explain.h"

namespace replaygate::cli {

double Coverage::percent() const {
  return rules_total() == 0
             ? 100.0
             : 100.0 * static_cast<double>(rules_covered()) / static_cast<double>(rules_total());
}

size_t Coverage::invariants_covered() const {
  size_t n = 0;
  for (bool b : invariants) n += b ? 1 : 0;
  return n;
}

Coverage empty_coverage(const ir::Policy& policy) {
  Coverage cov;
  for (const ir::CatalogEntry& e : ir::rule_catalog(policy)) {
    const bool guard = std::holds_alternative<ir::Guard>(policy.rules.at(e.rule));
    cov.is_guard.push_back(guard);
    (guard ? cov.guards_total : cov.rows_total)++;
  }
  cov.rules.assign(cov.is_guard.size(), false);
  cov.invariants.assign(policy.invariants.size(), false);
  return cov;
}

void record_case(const ir::Policy& policy, const Letter& letter, const InterpretResult& decision,
                 Coverage* cov) {
  if (decision.kind == InterpretKind::kRule && decision.rule < cov->rules.size() &&
      !cov->rules[decision.rule]) {
    cov->rules[decision.rule] = true;
    (cov->is_guard[decision.rule] ? cov->guards_covered : cov->rows_covered)++;
  }
  if (decision.kind == InterpretKind::kInvalidInput) return;  // invariants speak of valid inputs
  const ValidatedLetter valid = validate_letter(policy, letter);
  if (!valid.valid) return;
  for (size_t i = 0; i < policy.invariants.size() && i < cov->invariants.size(); ++i) {
    if (!cov->invariants[i] &&
        conditions_hold(policy, policy.invariants[i].conditions, valid.values)) {
      cov->invariants[i] = true;
    }
  }
}

std::vector<Uncovered> uncovered_items(const ir::CheckedPolicy& checked, const Coverage& cov) {
  const ir::Policy& policy = checked.policy;
  const ir::SourceMap& source = checked.source;
  std::vector<Uncovered> out;
  const std::vector<ir::CatalogEntry> catalog = ir::rule_catalog(policy);
  for (size_t i = 0; i < catalog.size() && i < cov.rules.size(); ++i) {
    if (cov.rules[i]) continue;
    const ir::CatalogEntry& e = catalog[i];
    Uncovered u;
    if (const auto* guard = std::get_if<ir::Guard>(&policy.rules[e.rule])) {
      u.kind = "guard";
      u.id = guard->id;
      if (e.rule < source.rules.size()) u.line = source.rules[e.rule].line;
    } else {
      u.kind = "row";
      u.id = std::get<ir::Table>(policy.rules[e.rule]).rows.at(e.row).id;
      if (e.rule < source.rows.size() && e.row < source.rows[e.rule].size()) {
        u.line = source.rows[e.rule][e.row].line;
      }
    }
    out.push_back(std::move(u));
  }
  for (size_t i = 0; i < policy.invariants.size() && i < cov.invariants.size(); ++i) {
    if (cov.invariants[i]) continue;
    out.push_back({"invariant", policy.invariants[i].id,
                   i < source.invariants.size() ? source.invariants[i].line : 0});
  }
  return out;
}

}  // namespace replaygate::cli
