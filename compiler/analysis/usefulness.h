// Usefulness of a box against a list of boxes (Maranget, "Warnings for pattern matching", JFP
// 2007).
//
// The analysis (compiler/analysis/analysis.cc) describes every guard and table row as a box: one
// set of atoms per field (compiler/analysis/partition.h). A box B is useful with respect to boxes P
// iff some atom tuple lies in B and in no box of P, i.e. B \ union(P) is non-empty.
// find_uncovered() decides that column by column: it splits B's atoms on a column into classes
// whose members lie in exactly the same rows of P, and continues with each class and only the rows
// that contain it. It never builds the cross product of the columns and never recurses (an explicit
// stack, bounded by a budget).
#pragma once

#include <cstdint>
#include <vector>

namespace replaygate {

// The atoms a box allows on one field. `all` means the field's whole domain (`atoms` is then
// ignored); otherwise `atoms` is sorted, unique and a subset of the domain (possibly empty).
struct AtomSet {
  bool all = true;
  std::vector<uint32_t> atoms;
  bool operator==(const AtomSet&) const = default;
};

// One AtomSet per field.
using Box = std::vector<AtomSet>;

enum class Coverage : uint8_t {
  kUncovered = 0,  // candidate \ union(rows) is non-empty; `witness` is one tuple in it
  kCovered = 1,  // every tuple of the candidate lies in some row (also when the candidate is empty)
  kGaveUp = 2,   // the budget ran out before an answer (pathological inputs only)
};

struct CoverageResult {
  Coverage coverage = Coverage::kCovered;
  std::vector<uint32_t> witness;  // kUncovered only: one atom per field
};

// Decides whether `candidate` has a tuple outside every box of `rows`.
// Inputs: `domains[f]` the sorted atoms of field f (what a valid input can take); `candidate` and
// each row hold one AtomSet per field that respect AtomSet's invariants for that domain.
// `budget` counts units of work (rows examined per class); it is decremented, and when it reaches
// zero the answer is kGaveUp. Never throws except std::bad_alloc.
CoverageResult find_uncovered(const std::vector<std::vector<uint32_t>>& domains,
                              const Box& candidate, const std::vector<const Box*>& rows,
                              uint64_t& budget);

// Whether two boxes share a tuple (each field's sets intersect). Both follow AtomSet's invariants;
// a field whose domain is empty makes every box empty.
bool boxes_intersect(const std::vector<std::vector<uint32_t>>& domains, const Box& a, const Box& b);

// The set intersection of two AtomSets of the same field.
AtomSet intersect_sets(const AtomSet& a, const AtomSet& b);

// Whether a box holds no tuple: some field's set is empty (or `all` over an empty domain).
bool box_is_empty(const std::vector<std::vector<uint32_t>>& domains, const Box& box);

}  // namespace replaygate
