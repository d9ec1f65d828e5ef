// Does a table decide exactly as a checked policy: lift it, compare what decides nothing per
// region directly, then every region of the joint decision tree (compiler/analysis/diff.h).
#include "compiler/equivalence.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/escape.h"
#include "compiler/analysis/diff.h"
#include "compiler/lift.h"
#include "compiler/lower.h"

namespace replaygate {
namespace {

// The id, reason and verb a policy's catalog entry stores (what lower() writes).
struct Entry {
  std::string id, reason;
  uint32_t verb = 0;
};
Entry catalog_entry(const ir::Policy& policy, const ir::CatalogEntry& e) {
  const ir::Rule& rule = policy.rules[e.rule];
  if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
    return {guard->id, guard->reason, guard->verb};
  }
  const auto& table = std::get<ir::Table>(rule);
  return {table.rows[e.row].id, effective_row_reason(table, e.row), table.rows[e.row].verb};
}

std::string quoted(std::string_view s) { return "\"" + escape_control(s) + "\""; }

// A letter that the policy decides with catalog entry `rule`, or "" when none is found within a
// small budget (for a difference that is not a verb: a reason or an id).
std::string letter_reaching(const ir::Policy& policy, uint32_t rule) {
  const RegionResult regions = decision_regions(policy, kRegionBudget / 100);
  for (const Region& r : regions.regions) {
    if (r.rule == rule) return example_letter(policy, regions.partition, regions.domains, r.box);
  }
  return "";
}

Equivalence differ(std::string mismatch, std::string counterexample = "") {
  Equivalence out;
  out.status = Equivalence::Status::kDiffer;
  out.mismatch = std::move(mismatch);
  out.counterexample = std::move(counterexample);
  return out;
}

// What decides nothing per region: identity, default, verbs, the catalog. The first difference.
std::optional<Equivalence> compare_tables_of_contents(const ir::Policy& p, const Table& t) {
  if (t.policy_id() != p.id) {
    return differ("policy id: the policy says " + quoted(p.id) + ", the table " +
                  quoted(t.policy_id()));
  }
  if (t.revision() != p.revision) {
    return differ(
        fmt::format("revision: the policy says {}, the table {}", p.revision, t.revision()));
  }
  if (t.verb_count() != p.verbs.size()) {
    return differ(
        fmt::format("verbs: the policy has {}, the table {}", p.verbs.size(), t.verb_count()));
  }
  for (uint32_t v = 0; v < t.verb_count(); ++v) {
    if (t.verb_name(v) != p.verbs[v].name || t.verb_effect(v) != p.verbs[v].effect) {
      return differ(fmt::format("verb {}: the policy has {} (effect {}), the table {} (effect {})",
                                v, quoted(p.verbs[v].name), effect_name(p.verbs[v].effect),
                                quoted(t.verb_name(v)), effect_name(t.verb_effect(v))));
    }
  }
  if (t.default_verb() != p.default_verb || t.default_reason() != p.default_reason) {
    return differ("default: the policy gives " + quoted(p.verbs[p.default_verb].name) +
                  " with reason " + quoted(p.default_reason) + ", the table " +
                  quoted(t.verb_name(t.default_verb())) + " with reason " +
                  quoted(t.default_reason()));
  }
  const std::vector<ir::CatalogEntry> catalog = ir::rule_catalog(p);
  if (t.rule_count() != catalog.size()) {
    return differ(fmt::format("rule catalog: the policy has {} guards and rows, the table {}",
                              catalog.size(), t.rule_count()));
  }
  for (uint32_t c = 0; c < catalog.size(); ++c) {
    const Entry e = catalog_entry(p, catalog[c]);
    const char* what = nullptr;
    std::string mine, theirs;
    if (t.rule_id(c) != e.id) {
      what = "id";
      mine = quoted(e.id);
      theirs = quoted(t.rule_id(c));
    } else if (t.rule_verb(c) != e.verb) {
      what = "verb";
      mine = quoted(p.verbs[e.verb].name);
      theirs = quoted(t.verb_name(t.rule_verb(c)));
    } else if (t.rule_reason(c) != e.reason) {
      what = "reason";
      mine = quoted(e.reason);
      theirs = quoted(t.rule_reason(c));
    }
    if (what != nullptr) {
      return differ(fmt::format("rule {} ({}) {}: the policy says {}, the table {}", c,
                                quoted(e.id), what, mine, theirs),
                    letter_reaching(p, c));
    }
  }
  return std::nullopt;
}

}  // namespace

Equivalence check_equivalence(const ir::CheckedPolicy& policy, const Table& table,
                              uint64_t budget) {
  const ir::Policy& p = policy.policy;
  if (auto difference = compare_tables_of_contents(p, table)) return *difference;
  const LiftResult lifted = lift(table);
  if (!lifted.policy)
    return differ("the table cannot be lifted back into a policy: " + lifted.error);
  const PolicyDiff diff = diff_policies(p, lifted.policy->policy, budget);
  if (!diff.fields.empty()) {
    const FieldChange& f = diff.fields.front();
    return differ("field " + quoted(f.name) + ": the table's is " + f.change);
  }
  const std::vector<DiffGroup>& groups =
      !diff.verb_changes.empty() ? diff.verb_changes : diff.provenance_changes;
  if (!groups.empty()) {
    const DiffGroup& g = groups.front();
    const auto rules = [](const std::vector<std::string>& ids) {
      return ids.empty() ? std::string("?") : ids.front();
    };
    Equivalence out = differ(
        fmt::format("{} region(s) decided differently, first {}: the policy decides {} (rule "
                    "{}), the table {} (rule {})",
                    g.regions, g.description, quoted(g.old_verb), quoted(rules(g.old_rules)),
                    quoted(g.new_verb), quoted(rules(g.new_rules))),
        g.example);
    out.regions = diff.regions;
    return out;
  }
  Equivalence out;
  out.regions = diff.regions;
  if (!diff.complete) {
    out.status = Equivalence::Status::kUnknown;
    out.mismatch = fmt::format(
        "the comparison gave up after {} regions (the region budget ran out); no difference "
        "found in them",
        diff.regions);
    return out;
  }
  out.status = Equivalence::Status::kEqual;
  return out;
}

}  // namespace replaygate
