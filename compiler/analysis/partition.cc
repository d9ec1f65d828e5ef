// Computes each field's atoms from the values and thresholds the policy mentions.
#include "compiler/analysis/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_set>

#include "common/json.h"
#include "compiler/analysis/regions.h"

namespace replaygate {
namespace {

void add_cut(std::vector<int64_t>& cuts, int64_t value) { cuts.push_back(value); }

// value + 1 without overflow; INT64_MAX has no successor, so no cut is needed above it.
void add_cut_after(std::vector<int64_t>& cuts, int64_t value) {
  if (value < std::numeric_limits<int64_t>::max()) cuts.push_back(value + 1);
}

void note_int_condition(std::vector<int64_t>& cuts, const ir::Condition& c) {
  for (const auto& v : c.values) {
    switch (c.op) {
      case ir::Op::kLt:
      case ir::Op::kGe:
        add_cut(cuts, v.i);
        break;
      case ir::Op::kLe:
      case ir::Op::kGt:
        add_cut_after(cuts, v.i);
        break;
      case ir::Op::kEq:
      case ir::Op::kNe:
      case ir::Op::kIn:
      case ir::Op::kNotIn:
        add_cut(cuts, v.i);
        add_cut_after(cuts, v.i);
        break;
      case ir::Op::kAbsent:
      case ir::Op::kPresent:
        break;
    }
  }
}

template <typename T>
void sort_unique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

std::vector<uint32_t> FieldPartition::domain() const {
  std::vector<uint32_t> out;
  for (uint32_t a = optional ? 0 : 1; a < atom_count; ++a) {
    if (type == ir::FieldType::kInt && a != kAtomAbsent) {
      size_t k = a - 1;
      // Interval k is [lo, hi); it is in range iff it lies inside [min, max].
      bool below = min && k < cuts.size() && cuts[k] <= *min;
      // (-inf, INT64_MIN) holds no int64 value at all.
      bool empty = k == 0 && !cuts.empty() && cuts[0] == std::numeric_limits<int64_t>::min();
      if (empty) continue;
      bool above = max && k > 0 && cuts[k - 1] > *max;
      if (below || above) continue;
    }
    out.push_back(a);
  }
  return out;
}

uint32_t FieldPartition::atom_of(const ir::Value& value) const {
  switch (type) {
    case ir::FieldType::kString: {
      auto it = std::lower_bound(strings.begin(), strings.end(), value.str);
      if (it == strings.end() || *it != value.str) return kAtomOther;
      return 2 + static_cast<uint32_t>(it - strings.begin());
    }
    case ir::FieldType::kEnum: {
      auto it = std::find(strings.begin(), strings.end(), value.str);
      // Values outside the enum are rejected by check(); map them to absent defensively.
      if (it == strings.end()) return kAtomAbsent;
      return 1 + static_cast<uint32_t>(it - strings.begin());
    }
    case ir::FieldType::kBool:
      return value.b ? 2 : 1;
    case ir::FieldType::kInt:
      return 1 + static_cast<uint32_t>(std::upper_bound(cuts.begin(), cuts.end(), value.i) -
                                       cuts.begin());
  }
  return kAtomAbsent;
}

std::string FieldPartition::atom_label(uint32_t atom) const {
  if (atom == kAtomAbsent) return "absent";
  switch (type) {
    case ir::FieldType::kString:
      if (atom == kAtomOther) return "<other>";
      return json_string(strings.at(atom - 2), JsonText::kBytes);
    case ir::FieldType::kEnum: {
      const std::string& value = strings.at(atom - 1);
      const bool plain = std::all_of(value.begin(), value.end(), [](unsigned char c) {
        return c > ' ' && c != '"' && c != '\\' && c != 0x7f;
      });
      return plain && !value.empty() ? value : json_string(value, JsonText::kBytes);
    }
    case ir::FieldType::kBool:
      return atom == 2 ? "true" : "false";
    case ir::FieldType::kInt: {
      size_t k = atom - 1;
      std::string lo = k == 0 ? "-inf" : fmt::format("{}", cuts[k - 1]);
      std::string hi = k == cuts.size() ? "+inf" : fmt::format("{}", cuts[k]);
      return fmt::format("[{}, {})", lo, hi);
    }
  }
  return "?";
}

namespace {

// Per string field, the strings already noted: a million-row table mentions the same key value
// many times, and copying and sorting every mention costs more than the hash lookups. The views
// point into the policy, which outlives the build. Only the sorted result is observable.
using Seen = std::vector<std::unordered_set<std::string_view>>;

void note_string(Partition& out, Seen& seen, uint32_t field, const std::string& value) {
  if (seen[field].insert(value).second) out.fields[field].strings.push_back(value);
}

// Notes the strings and int cuts a conjunction of conditions mentions.
void note_conditions(Partition& out, Seen& seen, const std::vector<ir::Condition>& conditions) {
  for (const auto& c : conditions) {
    auto& p = out.fields[c.field];
    if (p.type == ir::FieldType::kInt) {
      note_int_condition(p.cuts, c);
    } else if (p.type == ir::FieldType::kString) {
      for (const auto& v : c.values) note_string(out, seen, c.field, v.str);
    }
  }
}

Partition build_partition(const ir::Policy& policy, bool for_analysis) {
  Partition out;
  out.fields.resize(policy.fields.size());
  Seen seen(policy.fields.size());
  for (size_t f = 0; f < policy.fields.size(); ++f) {
    const auto& field = policy.fields[f];
    auto& p = out.fields[f];
    p.type = field.type;
    p.optional = field.optional;
    p.min = field.min;
    p.max = field.max;
    if (field.type == ir::FieldType::kEnum) p.strings = field.enum_values;
    // Cut at the declared bounds so that out-of-range intervals are atoms of their own, which
    // domain() leaves out: validation rejects those values before any rule runs.
    if (field.type == ir::FieldType::kInt) {
      if (field.min) add_cut(p.cuts, *field.min);
      if (field.max) add_cut_after(p.cuts, *field.max);
    }
    if (for_analysis && field.type == ir::FieldType::kString) {
      for (const std::string& value : field.domain) note_string(out, seen, f, value);
    }
  }
  for (const auto& rule : policy.rules) {
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      note_conditions(out, seen, guard->conditions);
    } else {
      const auto& table = std::get<ir::Table>(rule);
      for (const auto& row : table.rows) {
        for (size_t k = 0; k < table.key_fields.size(); ++k) {
          if (!row.keys[k]) continue;
          uint32_t f = table.key_fields[k];
          if (out.fields[f].type == ir::FieldType::kInt) {
            ir::Condition eq{f, ir::Op::kEq, {*row.keys[k]}, ""};
            note_int_condition(out.fields[f].cuts, eq);
          } else if (out.fields[f].type == ir::FieldType::kString) {
            note_string(out, seen, f, row.keys[k]->str);
          }
        }
      }
    }
  }
  if (for_analysis) {
    for (const auto& invariant : policy.invariants)
      note_conditions(out, seen, invariant.conditions);
    // A classifier's boundaries cut its raw field, so that every region's raw values land in
    // one class per exact value and int range (prefixes: the prefix itself is an atom; the other
    // strings it takes stay in "other", which raw_value_in_class() searches).
    for (const auto& field : policy.fields) {
      if (!field.classify || field.classify->from >= policy.fields.size()) continue;
      const uint32_t raw = field.classify->from;
      for (const ir::ClassifyRow& row : field.classify->rows) {
        if (out.fields[raw].type == ir::FieldType::kInt) {
          if (row.kind == ir::ClassifyRow::Kind::kRange) {
            add_cut(out.fields[raw].cuts, row.values.at(0).i);
            add_cut_after(out.fields[raw].cuts, row.values.at(1).i);
          } else {
            for (const ir::Value& v : row.values) {
              add_cut(out.fields[raw].cuts, v.i);
              add_cut_after(out.fields[raw].cuts, v.i);
            }
          }
        } else if (out.fields[raw].type == ir::FieldType::kString) {
          for (const ir::Value& v : row.values) note_string(out, seen, raw, v.str);
        }
      }
    }
  }
  for (auto& p : out.fields) {
    switch (p.type) {
      case ir::FieldType::kString:
        sort_unique(p.strings);
        p.atom_count = 2 + static_cast<uint32_t>(p.strings.size());
        break;
      case ir::FieldType::kEnum:
        p.atom_count = 1 + static_cast<uint32_t>(p.strings.size());
        break;
      case ir::FieldType::kBool:
        p.atom_count = 3;
        break;
      case ir::FieldType::kInt:
        sort_unique(p.cuts);
        p.atom_count = 2 + static_cast<uint32_t>(p.cuts.size());
        break;
    }
  }
  return out;
}

}  // namespace

Partition partition_policy(const ir::Policy& policy) { return build_partition(policy, false); }

Partition analysis_partition(const ir::Policy& policy) { return build_partition(policy, true); }

std::vector<uint32_t> condition_atoms(const FieldPartition& field, const ir::Condition& c) {
  std::vector<uint32_t> out;
  if (c.op == ir::Op::kAbsent) return {kAtomAbsent};
  if (c.op == ir::Op::kPresent) {
    for (uint32_t a = 1; a < field.atom_count; ++a) out.push_back(a);
    return out;
  }
  if (field.type == ir::FieldType::kInt &&
      (c.op == ir::Op::kLt || c.op == ir::Op::kLe || c.op == ir::Op::kGt || c.op == ir::Op::kGe)) {
    // An interval atom lies wholly on one side of every cut, so test its lower end (or, for the
    // first interval, any value below the first cut).
    int64_t t = c.values.at(0).i;
    for (uint32_t a = 1; a < field.atom_count; ++a) {
      size_t k = a - 1;
      int64_t probe = k == 0 ? std::numeric_limits<int64_t>::min() : field.cuts[k - 1];
      bool holds = false;
      switch (c.op) {
        case ir::Op::kLt:
          holds = probe < t;
          break;
        case ir::Op::kLe:
          holds = probe <= t;
          break;
        case ir::Op::kGt:
          holds = probe > t;
          break;
        case ir::Op::kGe:
          holds = probe >= t;
          break;
        default:
          break;
      }
      if (holds) out.push_back(a);
    }
    return out;
  }
  std::vector<uint32_t> listed;
  for (const auto& v : c.values) listed.push_back(field.atom_of(v));
  sort_unique(listed);
  bool negate = c.op == ir::Op::kNe || c.op == ir::Op::kNotIn;
  if (!negate) {
    // A string value that the partition maps to "other" cannot happen (every mentioned string is
    // an atom); an int eq atom is exactly [v, v+1).
    return listed;
  }
  for (uint32_t a = 1; a < field.atom_count; ++a) {
    if (!std::binary_search(listed.begin(), listed.end(), a)) out.push_back(a);
  }
  return out;
}

std::vector<uint32_t> key_atoms(const FieldPartition& field, const std::optional<ir::Value>& key) {
  if (key) return {field.atom_of(*key)};
  std::vector<uint32_t> out;
  for (uint32_t a = 0; a < field.atom_count; ++a) out.push_back(a);
  return out;
}

}  // namespace replaygate
