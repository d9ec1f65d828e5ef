// Decision regions: the valid input space of one or more policies cut into disjoint boxes, each
// with the rule that decides every input in it.
//
// A policy is first flattened into a first-match list of clauses (guards in rule order; a table's
// rows sorted most concrete first, ties by row order, which is exactly its most-specific-row hit
// policy). The engine then builds a decision tree over the pattern matrix (Maranget, "Compiling
// pattern matching to good decision trees", ML 2008): at each node it takes the first live clause
// of an undecided list, splits the node's atoms on one column that clause needs into classes of
// atoms that lie in exactly the same live clauses, and recurses on each class (an explicit stack,
// never the C++ stack). A leaf is emitted when, in every list, no clause is live (the default) or
// the first live clause holds the whole node. Columns no clause needs are never split, so they
// stay `all`, and atoms with the same clauses stay in one region: the cross product of the
// fields' atoms is never enumerated.
//
// Several clause lists are decided at once for `replaygate diff` (compiler/analysis/diff.h): the
// leaves are then the regions where both policies' deciding rules are constant.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/analysis/partition.h"
#include "compiler/analysis/usefulness.h"
#include "compiler/ir.h"

namespace replaygate {

using Domains = std::vector<std::vector<uint32_t>>;

// Each field's atoms a valid input can take (FieldPartition::domain(), minus the atom of "" on
// an empty_means_absent string field: an empty string is read as absent).
Domains valid_domains(const ir::Policy& policy, const Partition& partition);

// One entry of a first-match list: inputs in `box` that no earlier clause holds are decided by
// `verb`, with `rule` the catalog index (ir::rule_catalog()), or kNoRule for a pseudo-clause that
// stands for the default (an invalid input, in diff).
inline constexpr uint32_t kNoRule = 0xFFFFFFFFu;
struct Clause {
  Box box;
  uint32_t verb = 0;
  uint32_t rule = kNoRule;
};

// The policy as a first-match list over `partition`'s atoms, restricted to `domains`. Clauses that
// hold no valid input (never-true guards and rows) are left out. `columns[f]` is the partition
// field of policy field f (empty: the identity), so two policies can share one joint partition.
// Precondition: the policy passed check(); every value it mentions has an atom in the partition.
std::vector<Clause> first_match_clauses(const ir::Policy& policy, const Partition& partition,
                                        const Domains& domains,
                                        const std::vector<uint32_t>& columns = {});

// A clause list plus the verb an input gets when no clause holds it.
struct ClauseList {
  const std::vector<Clause>* clauses = nullptr;
  uint32_t default_verb = 0;
};

// What one list decides in a region: the clause index into its list, or nullopt for the default.
using Decided = std::vector<std::optional<uint32_t>>;

// Called once per leaf region with its box (one AtomSet per column, `all` = the whole domain)
// and, per list, the deciding clause. Return false to stop early.
using RegionVisitor = std::function<bool(const Box& box, const Decided& decided)>;

enum class RegionStatus : uint8_t {
  kComplete = 0,  // every valid input lies in exactly one visited region
  kStopped = 1,   // the visitor returned false
  kGaveUp = 2,    // the budget ran out; the visited regions cover only part of the space
};

// Visits the leaf regions of the joint decision tree of `lists` over `domains`, in a fixed
// (deterministic) order. `budget` counts units of work (live clauses examined per node); it is
// decremented and the walk stops with kGaveUp when it runs out. Never throws except bad_alloc.
RegionStatus visit_regions(const Domains& domains, const std::vector<ClauseList>& lists,
                           uint64_t& budget, const RegionVisitor& visit);

// The whole-policy API for the CLI and the analysis.
struct Region {
  Box box;                       // one AtomSet per field of the partition
  uint32_t verb = 0;             // index into Policy::verbs
  std::optional<uint32_t> rule;  // catalog index of the deciding guard or row; nullopt: default
};

struct RegionResult {
  Partition partition;  // analysis_partition(policy): what the boxes' atoms mean
  Domains domains;      // valid_domains(policy, partition)
  std::vector<Region> regions;
  bool complete = true;  // false: the budget ran out and `regions` covers only part of the space
};

inline constexpr uint64_t kRegionBudget = 400'000'000;

// Every decision region of `policy` (precondition: it passed check()). Regions are disjoint and,
// when `complete`, cover every valid input. An empty valid domain (no valid input) gives no region.
RegionResult decision_regions(const ir::Policy& policy, uint64_t budget = kRegionBudget);

// One concrete value per field drawn from `box` (a classified field is given as the raw value
// that lands in its class, never as the class: the runtime computes it) (atoms chosen
// deterministically: present before absent, a mentioned string before any other, an interval's
// lowest valid int), as a JSON object with the policy's field names; an absent field is left out.
// Fields whose set is empty are left out too. Example: {"topic": "payment.capture", "attempts": 0,
// "already_committed": true}.
//
// `overrides` (field index, value; nullopt: absent) replace the values picked for those fields,
// e.g. operands that `replaygate diff` solved so that both policies' derived bools hold.
using ValueOverrides = std::vector<std::pair<size_t, std::optional<ir::Value>>>;
std::string example_letter(const ir::Policy& policy, const Partition& partition,
                           const Domains& domains, const Box& box,
                           const ValueOverrides& overrides = {});

// Raw values of field `raw` among the atoms `raw_atoms` (in `partition`) that between them reach
// every combination of classes the policy's classifiers of `raw` give to values of those atoms
// (exact for ints: each class's values there are intervals whose ends are tried; for strings
// the mentioned strings and, for "other", a few strings built from the rows' values). nullopt
// stands for absent (when atom 0 is among `raw_atoms`). Readable values first per atom.
std::vector<std::optional<ir::Value>> raw_candidates(const ir::Policy& policy,
                                                     const Partition& partition, uint32_t raw,
                                                     const std::vector<uint32_t>& raw_atoms);

// A raw value that the classifier of classified field `field` puts in class `cls`, among the
// values whose atoms (of the classifier's raw field in `partition`) are in `raw_atoms`. The outer
// nullopt: no such value; an inner nullopt: an absent raw value (which gets the fallback). Exact
// for ints (every boundary of the class's values is tried) and for mentioned strings; for the
// "other" string atom it tries a few strings nothing mentions.
std::optional<std::optional<ir::Value>> raw_value_in_class(const ir::Policy& policy,
                                                           const Partition& partition,
                                                           uint32_t field,
                                                           const std::vector<uint32_t>& raw_atoms,
                                                           uint32_t cls);

// The atom example_letter() picks from one field's set.
uint32_t example_atom(const FieldPartition& field, const std::vector<uint32_t>& atoms);

// A concrete value inside interval atom `atom` of an int field (within min/max), or a string
// value of `atom` of a string field ("other" atoms get a string the policy does not mention).
ir::Value example_value(const FieldPartition& field, uint32_t atom, bool empty_means_absent);

}  // namespace replaygate
