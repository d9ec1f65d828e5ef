// Column-by-column usefulness check over boxes of atoms (see compiler/analysis/usefulness.h).
#include "compiler/analysis/usefulness.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace replaygate {
namespace {

const std::vector<uint32_t>& atoms_of(const std::vector<std::vector<uint32_t>>& domains,
                                      size_t field, const AtomSet& set) {
  return set.all ? domains[field] : set.atoms;
}

bool sorted_intersect(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  // Binary-search the smaller set's atoms in the larger one: rows are usually singletons.
  const auto& small = a.size() <= b.size() ? a : b;
  const auto& large = a.size() <= b.size() ? b : a;
  for (uint32_t atom : small) {
    if (std::binary_search(large.begin(), large.end(), atom)) return true;
  }
  return false;
}

// One pending class: the columns before `column` are decided, `rows` are the rows that contain
// every atom chosen so far, `witness` holds the chosen atoms.
struct Frame {
  size_t column = 0;
  std::vector<uint32_t> rows;
  std::vector<uint32_t> witness;
};

}  // namespace

AtomSet intersect_sets(const AtomSet& a, const AtomSet& b) {
  if (a.all) return b;
  if (b.all) return a;
  AtomSet out;
  out.all = false;
  std::set_intersection(a.atoms.begin(), a.atoms.end(), b.atoms.begin(), b.atoms.end(),
                        std::back_inserter(out.atoms));
  return out;
}

bool box_is_empty(const std::vector<std::vector<uint32_t>>& domains, const Box& box) {
  for (size_t f = 0; f < box.size(); ++f) {
    if (atoms_of(domains, f, box[f]).empty()) return true;
  }
  return false;
}

bool boxes_intersect(const std::vector<std::vector<uint32_t>>& domains, const Box& a,
                     const Box& b) {
  for (size_t f = 0; f < a.size(); ++f) {
    if (a[f].all && b[f].all) {
      if (domains[f].empty()) return false;
      continue;
    }
    if (!sorted_intersect(atoms_of(domains, f, a[f]), atoms_of(domains, f, b[f]))) return false;
  }
  return true;
}

CoverageResult find_uncovered(const std::vector<std::vector<uint32_t>>& domains,
                              const Box& candidate, const std::vector<const Box*>& rows,
                              uint64_t& budget) {
  CoverageResult result;
  if (box_is_empty(domains, candidate)) return result;  // nothing to cover

  // Per row, the fields where it does not hold every candidate atom (it "splits" them). Rows that
  // miss the candidate on some field never meet it and are dropped; fields no row splits cannot
  // split anything.
  std::vector<uint32_t> live_rows;
  std::vector<uint32_t> split_fields;                  // concatenated per live row
  std::vector<size_t> split_begin = {0};               // per live row: its range in split_fields
  std::vector<size_t> splitting(candidate.size(), 0);  // per field: live rows that split it
  if (budget <= rows.size()) {
    budget = 0;
    result.coverage = Coverage::kGaveUp;
    return result;
  }
  budget -= rows.size();
  for (uint32_t r = 0; r < rows.size(); ++r) {
    const Box& row = *rows[r];
    size_t mark = split_fields.size();
    bool meets = true;
    for (size_t f = 0; f < candidate.size() && meets; ++f) {
      if (row[f].all) continue;
      const auto& cand = atoms_of(domains, f, candidate[f]);
      size_t shared = 0;
      for (uint32_t atom : row[f].atoms) {
        shared += std::binary_search(cand.begin(), cand.end(), atom);
      }
      meets = shared > 0;
      if (shared != cand.size()) split_fields.push_back(static_cast<uint32_t>(f));
    }
    if (!meets) {
      split_fields.resize(mark);
      continue;
    }
    if (split_fields.size() == mark) return result;  // one row holds the whole candidate
    live_rows.push_back(r);
    split_begin.push_back(split_fields.size());
    for (size_t i = mark; i < split_fields.size(); ++i) ++splitting[split_fields[i]];
  }
  // Most-splitting fields first (Maranget's "needed column" heuristic, statically).
  std::vector<size_t> columns;
  for (size_t f = 0; f < candidate.size(); ++f) {
    if (splitting[f] > 0) columns.push_back(f);
  }
  std::stable_sort(columns.begin(), columns.end(),
                   [&](size_t a, size_t b) { return splitting[a] > splitting[b]; });
  std::vector<size_t> position(candidate.size(), 0);
  for (size_t c = 0; c < columns.size(); ++c) position[columns[c]] = c;
  // Per row, one past the last column (in that order) it splits; from there on the row covers
  // every class it belongs to.
  std::vector<size_t> last_split(rows.size(), 0);
  for (size_t i = 0; i < live_rows.size(); ++i) {
    size_t last = 0;
    for (size_t k = split_begin[i]; k < split_begin[i + 1]; ++k) {
      last = std::max(last, position[split_fields[k]] + 1);
    }
    last_split[live_rows[i]] = last;
  }

  Frame start;
  start.rows = std::move(live_rows);
  start.witness.resize(candidate.size());
  for (size_t f = 0; f < candidate.size(); ++f) {
    start.witness[f] = atoms_of(domains, f, candidate[f]).front();
  }
  std::vector<Frame> stack;
  stack.push_back(std::move(start));

  std::vector<uint32_t> full_rows;
  std::vector<std::pair<uint32_t, uint32_t>> touches;  // (atom, row)
  std::vector<uint32_t> intersection;
  while (!stack.empty()) {
    Frame frame = std::move(stack.back());
    stack.pop_back();
    while (true) {
      uint64_t cost = 1 + frame.rows.size();
      if (budget <= cost) {
        budget = 0;
        result.coverage = Coverage::kGaveUp;
        return result;
      }
      budget -= cost;
      if (frame.rows.empty()) {
        result.coverage = Coverage::kUncovered;
        result.witness = std::move(frame.witness);
        return result;
      }
      bool covered = frame.column == columns.size();  // every remaining row covers this class
      for (size_t i = 0; i < frame.rows.size() && !covered; ++i) {
        covered = last_split[frame.rows[i]] <= frame.column;
      }
      if (covered) break;
      size_t field = columns[frame.column];
      const std::vector<uint32_t>& cand = atoms_of(domains, field, candidate[field]);

      full_rows.clear();
      touches.clear();
      for (uint32_t r : frame.rows) {
        const AtomSet& set = (*rows[r])[field];
        if (set.all) {
          full_rows.push_back(r);
          continue;
        }
        intersection.clear();
        if (candidate[field].all) {
          intersection = set.atoms;  // a subset of the domain by the invariant
        } else {
          std::set_intersection(set.atoms.begin(), set.atoms.end(), cand.begin(), cand.end(),
                                std::back_inserter(intersection));
        }
        if (intersection.size() == cand.size()) {
          full_rows.push_back(r);
        } else {
          for (uint32_t atom : intersection) touches.emplace_back(atom, r);
        }
        // A row that misses this column's candidate atoms entirely joins no class.
      }
      budget -= std::min<uint64_t>(budget - 1, touches.size());

      if (touches.empty()) {
        // No row splits this column: one class, the whole candidate set.
        frame.rows = full_rows;
        ++frame.column;
        continue;
      }

      std::sort(touches.begin(), touches.end());
      // The atoms no splitting row mentions form one more class, tried first: it has the fewest
      // rows, so it is the likeliest to be uncovered.
      std::optional<uint32_t> rest_atom;
      {
        size_t t = 0;
        for (uint32_t atom : cand) {
          while (t < touches.size() && touches[t].first < atom) ++t;
          if (t == touches.size() || touches[t].first != atom) {
            rest_atom = atom;
            break;
          }
        }
      }
      if (rest_atom && full_rows.empty()) {
        result.coverage = Coverage::kUncovered;
        result.witness = std::move(frame.witness);
        result.witness[field] = *rest_atom;
        return result;
      }

      // Group touched atoms by the rows that contain them (rows arrive in increasing order).
      std::vector<std::pair<std::vector<uint32_t>, uint32_t>> signatures;  // (rows, atom)
      for (size_t i = 0; i < touches.size();) {
        size_t j = i;
        std::vector<uint32_t> sig;
        while (j < touches.size() && touches[j].first == touches[i].first) {
          sig.push_back(touches[j].second);
          ++j;
        }
        signatures.emplace_back(std::move(sig), touches[i].first);
        i = j;
      }
      std::sort(signatures.begin(), signatures.end());

      std::vector<Frame> classes;
      for (size_t i = 0; i < signatures.size();) {
        size_t j = i;
        uint32_t representative = signatures[i].second;
        while (j < signatures.size() && signatures[j].first == signatures[i].first) {
          representative = std::min(representative, signatures[j].second);
          ++j;
        }
        Frame next;
        next.column = frame.column + 1;
        std::merge(full_rows.begin(), full_rows.end(), signatures[i].first.begin(),
                   signatures[i].first.end(), std::back_inserter(next.rows));
        next.witness = frame.witness;
        next.witness[field] = representative;
        classes.push_back(std::move(next));
        i = j;
      }
      std::sort(classes.begin(), classes.end(), [field](const Frame& a, const Frame& b) {
        return a.witness[field] < b.witness[field];
      });
      if (rest_atom) {
        Frame rest;
        rest.column = frame.column + 1;
        rest.rows = full_rows;
        rest.witness = frame.witness;
        rest.witness[field] = *rest_atom;
        classes.insert(classes.begin(), std::move(rest));
      }
      for (auto it = classes.rbegin(); it != classes.rend(); ++it) stack.push_back(std::move(*it));
      break;
    }
  }
  return result;
}

}  // namespace replaygate
