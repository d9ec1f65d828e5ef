// The finite partition of a policy's input space: each field's values fall into a few atoms.
//
// Input: a checked ir::Policy. Output: per field, the atoms its values intern to, and for every
// guard condition and table key the set of atoms it accepts. Lowering uses the same numbering for
// the runtime's interning, and the analysis uses it to reason over all inputs at once.
//
// Atom numbering per field (the same in the table format, see runtime/table_format.h):
//   0            absent (only reachable for optional fields)
//   string:  1 = any string the policy does not mention ("other"), 2 + i = mentioned[i] (sorted
//            bytewise)
//   enum:    1 + i = enum_values[i] (declaration order)
//   bool:    1 = false, 2 = true
//   int:     1 + i = the i-th interval cut by the sorted cut points c0 < c1 < ...:
//            interval 0 = (-inf, c0), interval k = [c(k-1), ck), last = [c(n-1), +inf)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir.h"

namespace replaygate {

inline constexpr uint32_t kAtomAbsent = 0;
inline constexpr uint32_t kAtomOther = 1;  // strings only

struct FieldPartition {
  ir::FieldType type = ir::FieldType::kString;
  bool optional = false;
  std::vector<std::string> strings;  // kString: mentioned values, sorted; kEnum: enum values
  std::vector<int64_t> cuts;         // kInt: sorted, unique (declared bounds included)
  std::optional<int64_t> min, max;   // kInt: declared bounds
  uint32_t atom_count = 1;           // including the absent atom 0

  // Atoms a valid input can take: absent only when optional, int intervals only inside the
  // declared bounds. Sorted.
  std::vector<uint32_t> domain() const;
  // The atom a concrete value interns to (the value must have the field's type).
  uint32_t atom_of(const ir::Value& value) const;
  // A readable name for an atom: "absent", "<other>", "\"payment.capture\"", "[0, 3)", "true".
  // Strings are JSON string literals (common/json.h, JsonText::kBytes), and an enum value that is
  // not a plain word is one too: a policy's text never reaches a message with raw quotes or control
  // bytes.
  std::string atom_label(uint32_t atom) const;
};

struct Partition {
  std::vector<FieldPartition> fields;  // per Policy::fields
};

// The atoms the decisions need: values and thresholds the rules mention. Lowering uses it, so
// the table's atoms depend on the rules only.
Partition partition_policy(const ir::Policy& policy);

// The atoms the analysis needs: partition_policy() plus the strings listed in fields' `domain`
// and the values and thresholds of invariant premises, so that every decision region lies wholly
// inside or outside each premise and each domain value is an atom of its own.
Partition analysis_partition(const ir::Policy& policy);

// The atoms (sorted) of `field` for which `condition` holds. Absent satisfies only kAbsent.
std::vector<uint32_t> condition_atoms(const FieldPartition& field, const ir::Condition& condition);

// The atoms a table key accepts: one atom for a concrete value, every atom (absent included)
// for the wildcard.
std::vector<uint32_t> key_atoms(const FieldPartition& field, const std::optional<ir::Value>& key);

}  // namespace replaygate
