// decide(): validates and interns an Input against a loaded table, then runs the rules in order.
//
// Works only on the validated structures in Table::Impl (runtime/table_impl.h). No allocation,
// no I/O, no exceptions: the interned atoms live in a stack array of format::kMaxFields, every
// string is hashed once, and a table lookup costs one probe sequence per wildcard mask, however
// many rows the table has.
#include <algorithm>

#include "runtime/table.h"
#include "runtime/table_format.h"
#include "runtime/table_impl.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate {

uint64_t string_hash(std::string_view bytes) noexcept {
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), format::kStringHashSeed);
}

uint32_t Table::Impl::lookup(const Field& field, std::string_view value,
                             uint64_t hash) const noexcept {
  if (field.slot_count == 0) return 0;
  const uint32_t mask = field.slot_count - 1;
  const uint32_t* slots = dict_slots.data() + field.slot_begin;
  uint32_t at = static_cast<uint32_t>(hash) & mask;
  for (uint32_t probes = 0; probes < field.slot_count; ++probes) {
    uint32_t atom = slots[at];
    if (atom == 0) return 0;
    const DictEntry& entry = dict[field.dict_begin + (atom - field.first_atom)];
    if (entry.hash == hash && entry.bytes == value) return atom;  // bytes decide, not the hash
    at = (at + 1) & mask;
  }
  return 0;
}

uint32_t Table::Impl::int_atom(const Field& field, int64_t value) const noexcept {
  const int64_t* begin = cuts.data() + field.cut_begin;
  const int64_t* end = begin + field.cut_count;
  return 1 + static_cast<uint32_t>(std::upper_bound(begin, end, value) - begin);
}

namespace {

using Slot = Input::Slot;
constexpr uint32_t kInvalid = 0xFFFFFFFFu;

// The atom of one field's input value, or kInvalid.
uint32_t intern(const Table::Impl& t, const Table::Impl::Field& f, const Slot& slot) noexcept {
  switch (slot.state) {
    case Slot::State::kUnset:
    case Slot::State::kNull:
      return f.optional ? 0 : kInvalid;  // 0 = absent
    case Slot::State::kInvalid:
      return kInvalid;
    case Slot::State::kString: {
      if (f.type == FieldType::kString) {
        if (slot.s.empty() && f.empty_means_absent) return f.optional ? 0 : kInvalid;
        uint32_t atom = t.lookup(f, slot.s, string_hash(slot.s));
        return atom == 0 ? 1 : atom;  // not mentioned by the policy: "other"
      }
      if (f.type == FieldType::kEnum) {
        uint32_t atom = t.lookup(f, slot.s, string_hash(slot.s));
        return atom == 0 ? kInvalid : atom;
      }
      return kInvalid;
    }
    case Slot::State::kInt:
      if (f.type != FieldType::kInt) return kInvalid;
      if ((f.has_min && slot.i < f.min) || (f.has_max && slot.i > f.max)) return kInvalid;
      return t.int_atom(f, slot.i);
    case Slot::State::kBool:
      if (f.type != FieldType::kBool) return kInvalid;
      return slot.b ? 2 : 1;
  }
  return kInvalid;
}

}  // namespace

Decision Table::decide(const Input& input) const noexcept {
  const Impl& t = *impl_;
  Decision d;
  d.verb = t.default_verb;
  d.kind = DecisionKind::kDefault;

  uint32_t atoms[format::kMaxFields];
  const uint32_t field_count = static_cast<uint32_t>(t.fields.size());
  const Slot unset{};
  for (uint32_t f = 0; f < field_count; ++f) {
    // An Input made for another table may be shorter: the missing slots count as unset.
    const Slot& slot = f < input.size() ? input.slots()[f] : unset;
    if (t.fields[f].derived) continue;  // computed below; the input's value is ignored
    uint32_t atom = intern(t, t.fields[f], slot);
    if (atom == kInvalid) {
      d.kind = DecisionKind::kInvalidInput;
      d.invalid_field = f;
      return d;
    }
    atoms[f] = atom;
  }

  // Derived bools: both operands are required ints that passed validation, so their slots hold
  // ints (the loader checked the field kinds and that the operands come first).
  for (const format::DerivationRecord& dr : t.derivations) {
    const int64_t lhs = input.slots()[dr.lhs].i, rhs = input.slots()[dr.rhs].i;
    bool b = false;
    switch (dr.op) {
      case 0:  // eq
        b = lhs == rhs;
        break;
      case 1:  // ne
        b = lhs != rhs;
        break;
      case 4:  // lt
        b = lhs < rhs;
        break;
      case 5:  // le
        b = lhs <= rhs;
        break;
      case 6:  // gt
        b = lhs > rhs;
        break;
      default:  // 7, ge (the loader admits no other code)
        b = lhs >= rhs;
        break;
    }
    atoms[dr.field] = b ? 2 : 1;
  }

  for (const Impl::Rule& rule : t.rules) {
    if (!rule.is_table) {
      bool holds = true;
      for (uint32_t c = 0; c < rule.item_count && holds; ++c) {
        const Impl::Condition& cond = t.conditions[rule.item_begin + c];
        uint32_t atom = atoms[cond.field];
        holds = (t.bitsets[cond.bits_begin + atom / 64] >> (atom % 64)) & 1u;
      }
      if (holds) {
        d.kind = DecisionKind::kRule;
        d.rule = rule.catalog_begin;
        d.verb = t.catalog[d.rule].verb;
        return d;
      }
      continue;
    }
    uint32_t key_atoms[format::kMaxKeys];
    for (uint32_t k = 0; k < rule.item_count; ++k) {
      key_atoms[k] = atoms[t.table_keys[rule.item_begin + k]];
    }
    uint32_t best = kInvalid;
    uint32_t group = kInvalid;  // concrete_count of the masks probed so far
    for (uint32_t m = 0; m < rule.mask_count; ++m) {
      const format::MaskRecord& mask = t.masks[rule.mask_begin + m];
      if (mask.concrete_count != group) {
        if (best != kInvalid) break;  // a more specific group already matched
        group = mask.concrete_count;
      }
      const uint32_t slot_mask = mask.slot_count - 1;
      uint32_t at =
          static_cast<uint32_t>(format::key_tuple_hash(key_atoms, rule.item_count, mask.mask)) &
          slot_mask;
      for (uint32_t probes = 0; probes < mask.slot_count; ++probes) {
        uint32_t v = t.row_slots[mask.slot_begin + at];
        if (v == 0) break;
        const uint32_t row = v - 1;
        const uint32_t* keys = t.row_keys.data() + rule.row_key_begin + row * rule.item_count;
        bool equal = true;
        for (uint32_t k = 0; k < rule.item_count && equal; ++k) {
          if ((mask.mask >> k) & 1u) equal = keys[k] == key_atoms[k];
        }
        if (equal) {
          best = std::min(best, row);
          break;
        }
        at = (at + 1) & slot_mask;
      }
    }
    if (best != kInvalid) {
      d.kind = DecisionKind::kRule;
      d.rule = rule.catalog_begin + best;
      d.verb = t.catalog[d.rule].verb;
      return d;
    }
  }
  return d;
}

}  // namespace replaygate
