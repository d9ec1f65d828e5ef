// decide(): validates and interns an Input against a loaded table, then runs the rules in order.
//
// Works only on the validated structures in Table::Impl (runtime/internal/table_impl.h) and the
// load-time index built from them (runtime/internal/decide_index.h). No allocation, no I/O, no
// exceptions: the interned atoms live in a stack array of format::kMaxFields. Every field is
// validated before any rule runs, and the first bad field (in field order) is the one reported.
//
// Table::decide() calls the body chosen at load (DecideIndex::entry, select_decide()). Four paths
// with the same decisions: the kernel (decide_kernel, for policies of at most eight
// simple fields: decide_fast's checks in one fixed-size struct, one uniform op per field); the
// indexed one (decide_with<true>) plans each field at
// load (the Input slot state that takes the fast path; strings without dictionary entries are
// not hashed; small dictionaries use a cheap hash whose hit is confirmed byte for byte) and reads
// a dense (key atoms -> row) matrix for small tables; the fast path (decide_fast, for policies
// with guard masks and no derived fields) does the same work with the slot states checked eight
// at a time, per-field work grouped by kind, and the lookup of table-only string keys deferred
// until a table reads them, and hands any input that is not plainly valid to the indexed path;
// the general one (decide_unindexed(), and decide() wherever no index was built) hashes strings
// with XXH3 and probes each table once per wildcard mask, however many rows the table has.
#include <algorithm>
#include <bit>

#include "runtime/internal/table_impl.h"
#include "runtime/table.h"
#include "runtime/table_format.h"

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

// The private parts decide() reads: a table's Impl (decide_unindexed(), decide_index_stats()) and
// the inline block of an Input of at most Input::kInlineFields fields (the kernel reads it without
// the cells_ and states_ pointers, which sit on a cache line of their own: see Input).
struct DecideIndexAccess {
  static const Table::Impl& impl(const Table& table) noexcept { return *table.impl_; }
  static const Input::Cell* inline_cells(const Input& input) noexcept {
    return input.inline_cells_;
  }
  static const uint8_t* inline_states(const Input& input) noexcept { return input.inline_states_; }
};

namespace {

using Slot = Input::Slot;
using Cell = Input::Cell;
using Index = DecideIndex;
constexpr uint8_t kStringState = static_cast<uint8_t>(Slot::State::kString);
constexpr uint8_t kIntState = static_cast<uint8_t>(Slot::State::kInt);
constexpr uint8_t kBoolState = static_cast<uint8_t>(Slot::State::kBool);
constexpr uint32_t kInvalid = 0xFFFFFFFFu;
static_assert(Index::kInvalidAtom == kInvalid);

// The decision a nonzero dense-matrix cell holds: (catalog index + 1) << kCellVerbBits | verb.
[[gnu::always_inline]] inline Decision rule_of_cell(uint32_t cell) noexcept {
  Decision d;
  d.kind = DecisionKind::kRule;
  d.rule = (cell >> Index::kCellVerbBits) - 1;
  d.verb = cell & ((1u << Index::kCellVerbBits) - 1);
  return d;
}

// The atom of one field's input value, or kInvalid: the general path.
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

// The atom of `value` in a small-dictionary index, or 0. A hit needs the same size and words,
// and for values over kWordBytes bytes (which the words do not cover) the same bytes. In a
// perfect index (every entry in its home slot) the home slot decides, without a branch on the
// comparison; otherwise the probe ends at an empty slot (the index is at most half full). An
// empty slot has atom 0, so matching one (the empty value) is a miss too.
[[gnu::always_inline]] inline uint32_t small_lookup(const Index& x, const Index::FieldPlan& p,
                                                    std::string_view value) noexcept {
  uint64_t a, b, c;
  string_words(value.data(), value.size(), &a, &b, &c);
  const Index::StrSlot* slots = x.str_slots.data() + p.slot_begin;
  uint32_t at =
      static_cast<uint32_t>(small_string_hash(a, b, value.size(), p.seed) >> p.slot_shift);
  if (p.perfect && value.size() <= kWordBytes) [[likely]] {
    const Index::StrSlot& e = slots[at];
    const bool hit = ((e.a ^ a) | (e.b ^ b) | (e.c ^ c) | (e.size ^ value.size())) == 0;
    return hit ? e.atom : 0;
  }
  for (;;) {
    const Index::StrSlot& e = slots[at];
    if (e.atom == 0) return 0;
    if (e.a == a && e.b == b && e.c == c && e.size == value.size() &&
        (value.size() <= kWordBytes ||
         same_middle(x.str_data[p.slot_begin + at], value.data(), value.size()))) {
      return e.atom;
    }
    at = (at + 1) & p.slot_mask;
  }
}

// The atom of one field's value through its load-time plan, or kInvalid. An unset or null slot
// is absent (or invalid when required); any other state than the plan's (invalid, wrong type)
// takes the general path, as does a field without a plan.
inline uint32_t intern_planned(const Table::Impl& t, const Index::FieldPlan& p,
                               const Table::Impl::Field& f, const Slot& slot) noexcept {
  if (static_cast<uint8_t>(slot.state) != p.want_state) {
    static_assert(Slot::State::kUnset == Slot::State{0} && Slot::State::kNull == Slot::State{1});
    if (slot.state <= Slot::State::kNull) return p.absent_atom;
    return intern(t, f, slot);
  }
  switch (p.kind) {
    case Index::Kind::kStringNoDict:
      if (slot.s.empty() && p.empty_atom != Index::kNoEmptyRule) return p.empty_atom;
      return 1;
    case Index::Kind::kStringDict:
    case Index::Kind::kStringLazy: {  // looked up here: this path interns every field
      if (slot.s.empty() && p.empty_atom != Index::kNoEmptyRule) return p.empty_atom;
      const uint32_t atom = small_lookup(t.fast, p, slot.s);
      return atom == 0 ? 1 : atom;
    }
    case Index::Kind::kEnum: {
      const uint32_t atom = small_lookup(t.fast, p, slot.s);
      return atom == 0 ? kInvalid : atom;
    }
    case Index::Kind::kInt: {
      if (slot.i < p.min || slot.i > p.max) return kInvalid;
      const int64_t* cuts = t.cuts.data() + p.cut_begin;
      uint32_t atom = 1;
      for (uint32_t c = 0; c < p.cut_count; ++c) atom += cuts[c] <= slot.i;
      return atom;
    }
    case Index::Kind::kIntSearch:
      if (slot.i < p.min || slot.i > p.max) return kInvalid;
      return t.int_atom(f, slot.i);
    case Index::Kind::kBool:
      return slot.b ? 2 : 1;
    case Index::Kind::kGeneral:
    case Index::Kind::kDerived:
      break;
  }
  return intern(t, f, slot);
}

// The deciding row of table rule `rule` for `atoms` through the general path: one probe
// sequence per wildcard mask, the most specific group with a hit, its lowest row. kInvalid when
// no row matches.
uint32_t probe_table(const Table::Impl& t, const Table::Impl::Rule& rule,
                     const uint32_t* atoms) noexcept {
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
  return best;
}

// The derived bools: both operands are required ints that passed validation, so their slots
// hold ints (the loader checked the field kinds and that the operands come first).
inline void derive(const Table::Impl& t, const Input& input, uint32_t* atoms) noexcept {
  for (const format::DerivationRecord& dr : t.derivations) {
    atoms[dr.field] = derived_atom(dr, input.cells()[dr.lhs].i, input.cells()[dr.rhs].i);
  }
}

inline Decision by_rule(const Table::Impl& t, uint32_t catalog) noexcept {
  Decision d;
  d.kind = DecisionKind::kRule;
  d.rule = catalog;
  d.verb = t.catalog[catalog].verb;
  return d;
}

// Table rule r through its dense matrix (kIndexed and built) or the probes: a decision, or
// kind kDefault when no row matches.
template <bool kIndexed>
inline Decision lookup_table(const Table::Impl& t, uint32_t r, const uint32_t* atoms) noexcept {
  const Table::Impl::Rule& rule = t.rules[r];
  Decision d;
  d.kind = DecisionKind::kDefault;
  if (kIndexed && t.fast.dense[r].enabled) {
    const Index::Dense& dense = t.fast.dense[r];
    uint32_t at = dense.cell_begin;
    if (dense.key_count == 2) {  // the common shape, unrolled (the last stride is 1: row-major)
      at += atoms[dense.key_field[0]] * dense.stride[0] + atoms[dense.key_field[1]];
    } else {
      for (uint32_t k = 0; k < dense.key_count; ++k) {
        at += atoms[dense.key_field[k]] * dense.stride[k];
      }
    }
    const uint32_t cell = t.fast.dense_cells[at];
    return cell != 0 ? rule_of_cell(cell) : d;
  }
  const uint32_t best = probe_table(t, rule, atoms);
  return best == kInvalid ? d : by_rule(t, rule.catalog_begin + best);
}

template <bool kIndexed>
Decision decide_with(const Table::Impl& t, const Input& input) noexcept {
  Decision d;
  d.verb = t.default_verb;
  d.kind = DecisionKind::kDefault;

  uint32_t atoms[format::kMaxFields];
  const uint32_t field_count = static_cast<uint32_t>(t.fields.size());
  // With guard masks: the rules still possible after the fields seen so far.
  const bool masked = kIndexed && t.fast.masked;
  uint64_t live = kIndexed ? t.fast.all_rules : 0;
  for (uint32_t f = 0; f < field_count; ++f) {
    // An Input made for another table may be shorter: the missing slots count as unset.
    const Slot slot = input.slot(f);
    uint32_t atom;
    if constexpr (kIndexed) {
      const Index::FieldPlan& p = t.fast.fields[f];
      if (p.kind == Index::Kind::kDerived) continue;  // computed below; the input's is ignored
      atom = intern_planned(t, p, t.fields[f], slot);
      if (atom != kInvalid && p.mask_begin != Index::kNoMask) {
        live &= t.fast.rule_masks[p.mask_begin + atom];
      }
    } else {
      if (t.fields[f].derived) continue;  // computed below; the input's value is ignored
      atom = intern(t, t.fields[f], slot);
    }
    if (atom == kInvalid) {
      d.kind = DecisionKind::kInvalidInput;
      d.invalid_field = f;
      return d;
    }
    atoms[f] = atom;
  }
  if (!t.derivations.empty()) {
    derive(t, input, atoms);
    if (masked) {
      for (const format::DerivationRecord& dr : t.derivations) {
        const Index::FieldPlan& p = t.fast.fields[dr.field];
        if (p.mask_begin != Index::kNoMask)
          live &= t.fast.rule_masks[p.mask_begin + atoms[dr.field]];
      }
    }
  }
  if (!t.classifiers.empty()) {
    for (const format::ClassifierRecord& c : t.classifiers) {
      // The raw field passed validation (it has a smaller index): its atom says absent or not,
      // its slot holds the value.
      atoms[c.field] = classified_atom(t, c, atoms[c.raw], input.slot(c.raw));
      if (masked) {
        const Index::FieldPlan& p = t.fast.fields[c.field];
        if (p.mask_begin != Index::kNoMask)
          live &= t.fast.rule_masks[p.mask_begin + atoms[c.field]];
      }
    }
  }

  if (masked) {
    // The lowest live rule: a guard whose conditions all hold, or a table to look up.
    while (live != 0) {
      const uint32_t r = static_cast<uint32_t>(std::countr_zero(live));
      if (!((t.fast.table_rules >> r) & 1u)) return by_rule(t, t.rules[r].catalog_begin);
      const Decision row = lookup_table<true>(t, r, atoms);
      if (row.kind == DecisionKind::kRule) return row;
      live &= live - 1;
    }
    return d;
  }

  for (uint32_t r = 0; r < t.rules.size(); ++r) {
    const Table::Impl::Rule& rule = t.rules[r];
    if (!rule.is_table) {
      bool holds = true;
      for (uint32_t c = 0; c < rule.item_count && holds; ++c) {
        const Table::Impl::Condition& cond = t.conditions[rule.item_begin + c];
        uint32_t atom = atoms[cond.field];
        holds = (t.bitsets[cond.bits_begin + atom / 64] >> (atom % 64)) & 1u;
      }
      if (holds) return by_rule(t, rule.catalog_begin);
      continue;
    }
    const Decision row = lookup_table<kIndexed>(t, r, atoms);
    if (row.kind == DecisionKind::kRule) return row;
  }
  return d;
}

// The indexed path as a function of its own: the fast path's and the kernel's way out for an
// input that is not plainly valid is a tail call here, so their own paths keep few registers.
[[gnu::noinline]] Decision decide_indexed(const Table::Impl& t, const Input& input) noexcept {
  return decide_with<true>(t, input);
}

// The fast path (DecideIndex::fast_path: guard masks, every field planned, no derived fields).
// Same contract and decisions as decide_with<true>, which it falls back to for any input that is
// not plainly valid (a slot of the wrong state, a value out of bounds, an empty value that is
// invalid, an unknown enum value, an Input shorter than the table): that path validates in
// field order and names the first bad field. So when a rule is reached here, every field passed
// validation. It differs in how, not in what:
//  * every field's slot state is checked first, eight at a time (Input::states() against
//    DecideIndex::want_states), then the per-field work runs in lists grouped by kind;
//  * a kStringLazy field (read only by tables) gets no per-field work: its slot state was
//    checked with the others, and its dictionary lookup, which cannot fail, waits until a table
//    reads its atom: a letter a guard decides never hashes the table keys;
//  * a guard's decision is one load (DecideIndex::guards), a two-key dense table one matrix read.
constexpr uint64_t kHighBits = 0x8080808080808080ull, kLowBits = 0x7F7F7F7F7F7F7F7Full;

// 0x80 in each nonzero byte of x, 0 in each zero byte.
inline uint64_t nonzero_bytes(uint64_t x) noexcept {
  return (((x & kLowBits) + kLowBits) | x) & kHighBits;
}

// The atom of a kStringLazy field whose slot passed validation: absent (0) or an empty value
// that means absent (0), else its dictionary atom or 1 ("other").
[[gnu::always_inline]] inline uint32_t resolve_lazy(const Index& x, const Input& input,
                                                    uint32_t f) noexcept {
  const Cell& cell = input.cells()[f];
  const Index::FieldPlan& p = x.fields[f];
  if (input.states()[f] != kStringState) return 0;
  if (cell.i == 0 && p.empty_atom != Index::kNoEmptyRule) return p.empty_atom;
  const uint32_t atom =
      small_lookup(x, p, std::string_view(cell.bytes, static_cast<size_t>(cell.i)));
  return atom == 0 ? 1 : atom;
}

[[gnu::always_inline]] inline uint32_t key_atom(const Index& x, const Input& input,
                                                const uint32_t* atoms, uint32_t f) noexcept {
  return x.fields[f].kind == Index::Kind::kStringLazy ? resolve_lazy(x, input, f) : atoms[f];
}

// A table rule other than a two-key dense one: its lazy keys resolved into atoms, then the
// general lookup. Out of line: the common shape does not need its registers.
[[gnu::noinline]] Decision lookup_table_fast(const Table::Impl& t, uint32_t r, const Input& input,
                                             uint32_t* atoms) noexcept {
  const Table::Impl::Rule& rule = t.rules[r];
  for (uint32_t k = 0; k < rule.item_count; ++k) {
    const uint32_t f = t.table_keys[rule.item_begin + k];
    atoms[f] = key_atom(t.fast, input, atoms, f);
  }
  return lookup_table<true>(t, r, atoms);
}

Decision decide_fast(const Table::Impl& t, const Input& input) noexcept {
  const Index& x = t.fast;
  const uint32_t field_count = static_cast<uint32_t>(x.fields.size());
  if (input.size() < field_count) [[unlikely]] {
    return decide_indexed(t, input);
  }
  // Every slot state at once: a field whose state differs from its plan's is absent (unset or
  // null, state <= 1) in an optional field, else invalid.
  const uint8_t* states = input.states();
  uint64_t bad = 0;
  for (uint32_t w = 0; w < x.want_states.size(); ++w) {
    uint64_t st;
    __builtin_memcpy(&st, states + 8 * w, 8);
    const uint64_t differs = nonzero_bytes(st ^ x.want_states[w]);
    const uint64_t present = nonzero_bytes(st & ~0x0101010101010101ull);  // state >= 2
    bad |= differs & (present | ~x.optional_bytes[w]) & x.field_bytes[w];
  }
  if (bad != 0) [[unlikely]] {
    return decide_indexed(t, input);
  }

  // Every slot now holds its planned state or is absent in an optional field.
  const Cell* cells = input.cells();
  const uint64_t* masks = x.rule_masks.data();
  uint32_t atoms[format::kMaxFields];  // kStringLazy fields' entries are set only when resolved
  uint64_t live = x.all_rules;
  for (const Index::FastBool& e : x.fast_bools) {
    const uint32_t atom =
        states[e.field] == kBoolState ? 1u + static_cast<uint32_t>(cells[e.field].i != 0) : 0u;
    atoms[e.field] = atom;
    if (e.mask_begin != Index::kNoMask) live &= masks[e.mask_begin + atom];
  }
  for (const Index::FastString& e : x.fast_strings) {
    uint32_t atom = cells[e.field].i == 0 ? e.empty_atom : e.present_atom;
    if (states[e.field] != kStringState) atom = 0;
    if (atom == kInvalid) [[unlikely]] {
      return decide_indexed(t, input);
    }
    atoms[e.field] = atom;
    if (e.mask_begin != Index::kNoMask) live &= masks[e.mask_begin + atom];
  }
  for (const uint32_t f : x.fast_ints) {
    const int64_t value = cells[f].i;
    const Index::FieldPlan& p = x.fields[f];
    uint32_t atom = 0;
    if (states[f] == kIntState) {
      if (value < p.min || value > p.max) [[unlikely]] {
        return decide_indexed(t, input);
      }
      if (p.kind == Index::Kind::kInt) {
        const int64_t* cuts = t.cuts.data() + p.cut_begin;
        atom = 1;
        for (uint32_t c = 0; c < p.cut_count; ++c) atom += cuts[c] <= value;
      } else {
        atom = t.int_atom(t.fields[f], value);
      }
    }
    atoms[f] = atom;
    if (p.mask_begin != Index::kNoMask) live &= masks[p.mask_begin + atom];
  }
  for (const uint32_t f : x.fast_planned) {
    const Index::FieldPlan& p = x.fields[f];
    const uint32_t atom = intern_planned(t, p, t.fields[f], input.slot(f));
    if (atom == kInvalid) [[unlikely]] {
      return decide_indexed(t, input);
    }
    atoms[f] = atom;
    if (p.mask_begin != Index::kNoMask) live &= masks[p.mask_begin + atom];
  }

  // The lowest live rule: a guard whose conditions all hold, or a table to look up.
  while (live != 0) {
    const uint32_t r = static_cast<uint32_t>(std::countr_zero(live));
    if (!((x.table_rules >> r) & 1u)) {
      Decision d;
      d.kind = DecisionKind::kRule;
      d.rule = x.guards[r].catalog;
      d.verb = x.guards[r].verb;
      return d;
    }
    const Index::Dense& dense = x.dense[r];
    if (dense.enabled && dense.key_count == 2) {
      const uint32_t a0 = key_atom(x, input, atoms, dense.key_field[0]);
      const uint32_t a1 = key_atom(x, input, atoms, dense.key_field[1]);
      const uint32_t cell = x.dense_cells[dense.cell_begin + a0 * dense.stride[0] + a1];
      if (cell != 0) return rule_of_cell(cell);
    } else {
      const Decision row = lookup_table_fast(t, r, input, atoms);
      if (row.kind == DecisionKind::kRule) return row;
    }
    live &= live - 1;
  }
  Decision d;
  d.verb = t.default_verb;
  d.kind = DecisionKind::kDefault;
  return d;
}

// The kernel (DecideIndex::Kernel: at most eight fields, each a bool, an int of a few cuts or a
// string no guard compares). Same contract and decisions as decide_fast, which it mirrors: one
// state word checks every slot; one operation per bool, int and undictionaried string reads
// Slot::i, folds its bounds into `bad` (one unsigned compare) and ANDs its guard mask; any input
// that is not plainly valid then goes to decide_with<true>, before any rule's result is used;
// else the lowest live rule picks a guard's packed decision, the first table's dense cell (its
// lazy keys looked up only then), another table's lookup, or the default (a sentinel bit past
// the last rule). kCuts: the cuts compared per op (DecideIndex::Kernel::cut_width). kPairOnly
// (Kernel::pair_only: the pair-indexed table is the only table): the ops store no table atoms,
// the pair probe runs only when the table is reached (its keys' bytes are prefetched first
// thing: in a caller's batch of separately allocated strings they are a cache miss per letter,
// which a letter a guard decides should not wait for; issue 43), and the deciding rule is picked
// without a branch. Measured on the shipped policy (docs/benchmarks.md): the required fields' ops
// without the presence test, the tail calls through DecideIndex::entry and the branch-free pair
// pick took decide() from ~17.2 to ~15.3 ns against the hand-written 9.7 ns.
[[gnu::always_inline]] inline uint32_t kernel_key_atom(const Index& x, const Index::KernelTable& kt,
                                                       uint32_t key, const Cell* cells,
                                                       const uint8_t* states,
                                                       const uint32_t* atoms) noexcept {
  if (!kt.key_lazy[key]) return atoms[kt.key_field[key]];
  const Cell& cell = cells[kt.key_field[key]];
  const uint32_t hit =
      small_lookup(x, kt.key_plan[key], std::string_view(cell.bytes, static_cast<size_t>(cell.i)));
  uint32_t atom = hit == 0 ? 1 : hit;
  if (cell.i == 0 && kt.key_empty[key] != Index::kNoEmptyRule) atom = kt.key_empty[key];
  return states[kt.key_field[key]] == kStringState ? atom : 0;
}

// The kernel table's cell for the keys' values through its pair index (KernelTable::pair): the
// home slot of both values holds them (same words, same sizes, both slots strings) or the cell is
// 0. Validation passed, so a key slot is a string or absent; an absent one has no bytes (size 0),
// like an empty value, and no pair's value is empty. Called only when the table is reached: in a
// caller's batch of separately allocated strings, reading the values is a cache miss per letter
// (docs/benchmarks.md, "Two layouts"), which a letter a guard decides should not pay.
[[gnu::always_inline]] inline uint32_t kernel_pair_cell(const Index& x,
                                                        const Index::KernelTable& kt,
                                                        const Cell* cells) noexcept {
  const Cell& s0 = cells[kt.key_field[0]];
  const Cell& s1 = cells[kt.key_field[1]];
  const uint64_t n0 = static_cast<uint64_t>(s0.i), n1 = static_cast<uint64_t>(s1.i);
  uint64_t a0, b0, c0, a1, b1, c1;
  string_words(s0.bytes, n0, &a0, &b0, &c0);
  string_words(s1.bytes, n1, &a1, &b1, &c1);
  const Index::PairSlot& e =
      x.pair_slots[pair_hash(a0, b0, c0, n0, a1, b1, c1, n1, kt.pair_seed) >> kt.pair_shift];
  const uint64_t differ = (e.w0[0] ^ a0) | (e.w0[1] ^ b0) | (e.w0[2] ^ c0) | (e.w1[0] ^ a1) |
                          (e.w1[1] ^ b1) | (e.w1[2] ^ c1) | (e.size0 ^ n0) | (e.size1 ^ n1);
  // A mask, not a branch: whether the pair is a row's varies letter by letter.
  return e.cell & (0u - static_cast<uint32_t>(differ == 0));
}

// The eight state bytes of an inline Input (padded with kUnset) as one word, read byte by byte.
// Not one 8-byte load: the setters store each state as a byte (and clear() the eight as a word),
// and a load that spans several pending stores cannot take its value from them; it waits until
// they are written to the cache, that is until every older instruction retired, a previous
// decision's cache miss included. A worker that fills one reused Input and decides it (fill,
// decide, fill, ...) then decides one letter at a time, its misses never overlapping (issue 43).
// A byte load takes its value from the byte store. The empty asm keeps GCC from merging the eight
// loads back into one.
[[gnu::always_inline]] inline uint64_t state_word(const uint8_t* states) noexcept {
  uint64_t st = 0;
#pragma GCC unroll 8
  for (uint32_t f = 0; f < Input::kInlineFields; ++f) {
    uint64_t b = states[f];
    asm("" : "+r"(b));
    st |= b << (8 * f);
  }
  return st;
}

template <uint32_t kCuts, bool kPairOnly>
[[gnu::noinline]] Decision decide_kernel(const Table::Impl& t, const Input& input) noexcept {
  const Index& x = t.fast;
  const Index::Kernel& k = x.kernel;
  // The kernel's policies have at most Input::kInlineFields fields, whose Input keeps them in
  // its inline block (an Input made for a larger layout takes the indexed path).
  if (input.size() < k.field_count || input.size() > Input::kInlineFields) [[unlikely]] {
    return decide_indexed(t, input);
  }
  const Cell* cells = DecideIndexAccess::inline_cells(input);
  const uint8_t* states = DecideIndexAccess::inline_states(input);
  if constexpr (kPairOnly) {
    // The pair keys' bytes are read only when the table is reached (kernel_pair_cell); their
    // fetch starts here, where it blocks nothing, so it overlaps the guards' work.
    __builtin_prefetch(cells[k.table.key_field[0]].bytes);
    __builtin_prefetch(cells[k.table.key_field[1]].bytes);
  }
  const uint64_t st = state_word(states);
  const uint64_t present = nonzero_bytes(st & ~0x0101010101010101ull);  // 0x80: state >= 2
  uint64_t bad = nonzero_bytes(st ^ k.want_states) & (present | ~k.optional_bytes) & k.field_bytes;

  uint32_t atoms[Index::kKernelFields];  // the table's atoms of the ops' fields
  uint64_t live = k.all_rules;
  const Index::KernelOp* op_at = k.ops;
  // A required field: `bad` already holds any slot not in its planned state, so the value is
  // read as present; a bad slot's value (still in bounds of the arrays) is never used.
  for (const Index::KernelOp* req_end = k.ops + k.required_count; op_at != req_end; ++op_at) {
    const Index::KernelOp& op = *op_at;
    const uint64_t v = static_cast<uint64_t>(cells[op.field].i);
    uint32_t atom = 1;
#pragma GCC unroll 8
    for (uint32_t c = 0; c < kCuts; ++c) {
      atom += static_cast<int64_t>(v) >= op.cut[c];
    }
    bad += op.span < v - static_cast<uint64_t>(op.lo);  // a compare and an add with carry
    live &= op.mask[atom];
    if (!kPairOnly) atoms[op.field] = op.atom[atom];
  }
  for (const Index::KernelOp* op_end = k.ops + k.op_count; op_at != op_end; ++op_at) {
    const Index::KernelOp& op = *op_at;
    const uint64_t v = static_cast<uint64_t>(cells[op.field].i);
    const uint64_t here = states[op.field] >= kStringState;
    uint32_t atom = 1;
#pragma GCC unroll 8
    for (uint32_t c = 0; c < kCuts; ++c) {
      atom += static_cast<int64_t>(v) >= op.cut[c];
    }
    atom &= 0u - static_cast<uint32_t>(here);  // absent: 0 (no branch: presence varies)
    bad += op.span < ((v - static_cast<uint64_t>(op.lo)) & (0 - here));  // absent: in bounds
    live &= op.mask[atom];
    if (!kPairOnly) atoms[op.field] = op.atom[atom];
  }

  const Index::KernelTable& kt = k.table;
  if (bad != 0) [[unlikely]] {
    return decide_indexed(t, input);
  }

  if constexpr (kPairOnly) {
    // In rule order: the first live guard before the table; else the table's cell when the
    // table is live and holds the pair; else the first live guard after it, or the default (the
    // sentinel bit). Chosen without a branch: which one decides varies letter by letter.
    const uint64_t table_bit = uint64_t{1} << kt.rule;
    const uint32_t first = static_cast<uint32_t>(std::countr_zero(live & ~table_bit));
    // Bitwise, not &&: short-circuit evaluation compiles to branches that the stream mispredicts.
    const uint32_t table_reached =
        static_cast<uint32_t>(first > kt.rule) & static_cast<uint32_t>((live >> kt.rule) & 1u);
    // The letter's strings are read only when the table is reached (issue 43): a branch, which
    // the stream mispredicts for about a third of the letters; probing a zero buffer unless
    // reached (a mask) kept the reached letters' loads waiting for the guards and measured
    // slower where the strings are in cache.
    uint32_t pc = 0;
    if (table_reached) pc = kernel_pair_cell(x, kt, cells);
    const uint32_t table_decides = table_reached & static_cast<uint32_t>(pc != 0);
    const uint32_t pick_table = 0u - table_decides;
    const uint32_t c = (pc & pick_table) | (k.hot[first] & ~pick_table);
    // Masks again: which of a rule and the default decides varies letter by letter.
    const uint32_t by_default = 0u - static_cast<uint32_t>(c == Index::kDefaultCell);
    Decision d;
    d.kind = static_cast<DecisionKind>(static_cast<uint32_t>(DecisionKind::kDefault) & by_default);
    d.rule = ((c >> Index::kCellVerbBits) - 1) & ~by_default;
    d.verb = (k.default_verb & by_default) | (c & ((1u << Index::kCellVerbBits) - 1) & ~by_default);
    return d;
  }

  // The lowest live rule: a guard (its packed decision), the first dense table (its cell), another
  // table (looked up out of line), or the sentinel bit after the last rule (the default). A table
  // without a matching row (cell 0) passes on to the next live rule.
  for (;;) {
    const uint32_t r = static_cast<uint32_t>(std::countr_zero(live));
    uint32_t c = k.hot[r];
    if (r == kt.rule && kt.pair) {
      c = kernel_pair_cell(x, kt, cells);
    } else if (r == kt.rule) {
      const uint32_t a0 = kernel_key_atom(x, kt, 0, cells, states, atoms);
      const uint32_t a1 = kernel_key_atom(x, kt, 1, cells, states, atoms);
      c = x.dense_cells[kt.cell_begin + a0 * kt.stride + a1];
    }
    if (c == Index::kDefaultCell) {
      Decision d;
      d.verb = k.default_verb;
      d.kind = DecisionKind::kDefault;
      return d;
    }
    if (c != 0) return rule_of_cell(c);
    if (r != kt.rule) {
      const Decision row = lookup_table_fast(t, r, input, atoms);
      if (row.kind == DecisionKind::kRule) return row;
    }
    live &= live - 1;
  }
}

}  // namespace

Decision decide_general(const Table::Impl& t, const Input& input) noexcept {
  return decide_with<false>(t, input);
}

DecideIndex::DecideFn select_decide(const DecideIndex& x) noexcept {
  if (!x.built) return &decide_general;
  if (x.kernel.enabled) {
    const bool pair_only = x.kernel.pair_only;
    switch (x.kernel.cut_width) {
      case 1:
        return pair_only ? &decide_kernel<1, true> : &decide_kernel<1, false>;
      case 2:
        return pair_only ? &decide_kernel<2, true> : &decide_kernel<2, false>;
      default:
        return pair_only ? &decide_kernel<Index::kKernelCuts, true>
                         : &decide_kernel<Index::kKernelCuts, false>;
    }
  }
  if (x.fast_path) return &decide_fast;
  return &decide_indexed;
}

Decision decide_unindexed(const Table& table, const Input& input) noexcept {
  return decide_with<false>(DecideIndexAccess::impl(table), input);
}

namespace {

// decide_many()'s distance, in inputs: the values of input i + kAhead are prefetched while input i
// is decided. At ~25 ns per decision, 8 inputs cover a miss to memory (~100-200 ns in this VM, a
// TLB walk included) with room to spare; more would only evict sooner.
constexpr size_t kAhead = 8;

// The first line of each value decide() may read (DecideIndex::prefetch_fields): the words it
// compares lie in a value's first kWordBytes bytes, mostly on that line. A field whose state is
// not a string has a null `bytes`; its prefetch is dropped by the hardware.
[[gnu::always_inline]] inline void prefetch_cells(const Index& x, const Cell* cells,
                                                  size_t size) noexcept {
  for (uint32_t k = 0; k < x.prefetch_count; ++k) {
    const uint32_t f = x.prefetch_fields[k];
    if (f >= size) break;  // fields ascend: an Input made for a shorter layout
    __builtin_prefetch(cells[f].bytes);
  }
}

// An inline Input's cells are read where they are, not through its cells_ pointer (on the line
// after them: see Input).
[[gnu::always_inline]] inline void prefetch_values(const Index& x, const Input& input) noexcept {
  const size_t size = input.size();
  if (size <= Input::kInlineFields) {
    prefetch_cells(x, DecideIndexAccess::inline_cells(input), size);
  } else {
    prefetch_cells(x, input.cells(), size);
  }
}

// kScattered: the Inputs are reached through pointers, so the lines of input i + 2 * kAhead that
// decide() reads are prefetched too (so reading its cells at i + kAhead hits). Contiguous Inputs
// are a sequential stream the hardware prefetcher already follows.
template <bool kScattered, typename At>
void decide_batch(const Table::Impl& t, Index::DecideFn decide, size_t count, At at,
                  Decision* out) noexcept {
  const Index& x = t.fast;
  // An inline Input's size, states and cells (16 bytes per field), else the whole object (its
  // pointers to the heap blocks, which decide() then reads).
  const size_t fields = t.fields.size();
  const size_t bytes = fields <= Input::kInlineFields ? 16 + 16 * fields : sizeof(Input);
  for (size_t i = 0; i < count; ++i) {
    if (kScattered && i + 2 * kAhead < count) {
      const char* object = reinterpret_cast<const char*>(&at(i + 2 * kAhead));
      for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(object + off);
    }
    if (i + kAhead < count) prefetch_values(x, at(i + kAhead));
    out[i] = decide(t, at(i));
  }
}

}  // namespace

void Table::decide_many(const Input* inputs, size_t count, Decision* out) const noexcept {
  decide_batch<false>(
      *impl_, decide_, count, [inputs](size_t i) -> const Input& { return inputs[i]; }, out);
}

void Table::decide_many(const Input* const* inputs, size_t count, Decision* out) const noexcept {
  decide_batch<true>(
      *impl_, decide_, count, [inputs](size_t i) -> const Input& { return *inputs[i]; }, out);
}

DecideIndexStats decide_index_stats(const Table& table) noexcept {
  const Table::Impl& t = DecideIndexAccess::impl(table);
  DecideIndexStats s;
  if (!t.fast.built) return s;
  for (const Index::FieldPlan& p : t.fast.fields) {
    s.small_dict_fields += p.kind == Index::Kind::kStringDict ||
                           p.kind == Index::Kind::kStringLazy || p.kind == Index::Kind::kEnum;
    s.lazy_fields += p.kind == Index::Kind::kStringLazy;
    s.perfect_fields += p.perfect;
    s.unhashed_fields += p.kind == Index::Kind::kStringNoDict;
    s.general_fields += p.kind == Index::Kind::kGeneral;
  }
  for (uint32_t r = 0; r < t.rules.size(); ++r) {
    if (!t.rules[r].is_table) continue;
    s.dense_tables += t.fast.dense[r].enabled;
    s.probed_tables += !t.fast.dense[r].enabled;
  }
  s.dense_cells = t.fast.dense_cells.size();
  s.guard_masks = t.fast.masked;
  s.fast_path = t.fast.fast_path;
  s.kernel = t.fast.kernel.enabled;
  s.kernel_table = t.fast.kernel.enabled && t.fast.kernel.table.rule != Index::kNoRule;
  s.kernel_cuts = t.fast.kernel.cut_width;
  s.kernel_pair = s.kernel_table && t.fast.kernel.table.pair;
  s.kernel_pair_only = s.kernel_pair && t.fast.kernel.pair_only;
  return s;
}

}  // namespace replaygate
