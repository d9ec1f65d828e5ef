// Builds decide()'s load-time index (runtime/internal/decide_index.h) from a verified Table::Impl.
#include "runtime/internal/decide_index.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "runtime/internal/table_impl.h"

namespace replaygate {

namespace {

using Slot = Input::Slot;
using Index = DecideIndex;

// Dictionaries above this size keep the general XXH3 index (the small index costs 64 bytes per
// entry; this bounds it at 8 MiB per field).
constexpr uint32_t kMaxSmallDict = uint32_t{1} << 16;
// Seeds tried for a collision-free placement (dictionaries up to kSeedSearchMax entries); the
// first that places every entry in its home slot wins, else the one with the fewest extra probes.
constexpr uint32_t kSeedTries = 64;
constexpr uint32_t kSeedSearchMax = 4096;

uint64_t seed_at(uint32_t i) { return (uint64_t{i} + 1) * 0xD6E8FEB86659FD93ull; }

// Inserts every entry of `field`'s dictionary with `seed` into `slots` (size mask + 1, cleared);
// returns the total number of probes beyond the home slot.
uint64_t place(const Table::Impl& t, const Table::Impl::Field& field, uint64_t seed, uint32_t mask,
               uint32_t shift, std::vector<Index::StrSlot>& slots, std::vector<const char*>& data) {
  std::fill(slots.begin(), slots.end(), Index::StrSlot{});
  std::fill(data.begin(), data.end(), nullptr);
  uint64_t extra = 0;
  for (uint32_t i = 0; i < field.dict_count; ++i) {
    const std::string_view bytes = t.dict[field.dict_begin + i].bytes;
    Index::StrSlot e;
    string_words(bytes.data(), bytes.size(), &e.a, &e.b, &e.c);
    e.size = static_cast<uint32_t>(bytes.size());
    e.atom = field.first_atom + i;
    uint32_t at = static_cast<uint32_t>(small_string_hash(e.a, e.b, bytes.size(), seed) >> shift);
    while (slots[at].atom != 0) {
      at = (at + 1) & mask;
      ++extra;
    }
    slots[at] = e;
    data[at] = bytes.data();
  }
  return extra;
}

// The small-dictionary index of a string or enum field; false when the field keeps the general
// index (too many entries, or a value too long for the u32 size).
bool build_string_index(const Table::Impl& t, const Table::Impl::Field& field, Index& x,
                        Index::FieldPlan& plan) {
  if (field.dict_count > kMaxSmallDict) return false;
  for (uint32_t i = 0; i < field.dict_count; ++i) {
    if (t.dict[field.dict_begin + i].bytes.size() > UINT32_MAX) return false;
  }
  // At most half full, so a miss meets an empty slot soon (and always meets one).
  const uint32_t size = std::max<uint32_t>(2, std::bit_ceil(2 * field.dict_count));
  const uint32_t mask = size - 1;
  const uint32_t shift = 64 - static_cast<uint32_t>(std::countr_zero(size));
  std::vector<Index::StrSlot> slots(size), best;
  std::vector<const char*> data(size), best_data;
  uint64_t best_extra = UINT64_MAX, best_seed = 0;
  const uint32_t tries = field.dict_count <= kSeedSearchMax ? kSeedTries : 1;
  for (uint32_t i = 0; i < tries && best_extra != 0; ++i) {
    const uint64_t extra = place(t, field, seed_at(i), mask, shift, slots, data);
    if (extra < best_extra) {
      best_extra = extra;
      best_seed = seed_at(i);
      best = slots;
      best_data = data;
    }
  }
  plan.slot_begin = static_cast<uint32_t>(x.str_slots.size());
  plan.slot_mask = mask;
  plan.slot_shift = shift;
  plan.seed = best_seed;
  plan.perfect = best_extra == 0;
  x.str_slots.insert(x.str_slots.end(), best.begin(), best.end());
  x.str_data.insert(x.str_data.end(), best_data.begin(), best_data.end());
  return true;
}

Index::FieldPlan plan_field(const Table::Impl& t, const Table::Impl::Field& field, Index& x) {
  Index::FieldPlan plan;
  plan.absent_atom = field.optional ? 0 : Index::kInvalidAtom;
  if (field.derived) {
    plan.kind = Index::Kind::kDerived;
    return plan;
  }
  switch (field.type) {
    case FieldType::kString:
      plan.want_state = static_cast<uint8_t>(Slot::State::kString);
      plan.empty_atom = !field.empty_means_absent ? Index::kNoEmptyRule
                        : field.optional          ? 0
                                                  : Index::kInvalidAtom;
      if (field.dict_count == 0) {
        plan.kind = Index::Kind::kStringNoDict;
      } else if (build_string_index(t, field, x, plan)) {
        plan.kind = Index::Kind::kStringDict;
      }
      break;
    case FieldType::kEnum:
      plan.want_state = static_cast<uint8_t>(Slot::State::kString);
      plan.empty_atom = Index::kNoEmptyRule;
      if (build_string_index(t, field, x, plan)) plan.kind = Index::Kind::kEnum;
      break;
    case FieldType::kInt:
      plan.want_state = static_cast<uint8_t>(Slot::State::kInt);
      plan.min = field.has_min ? field.min : INT64_MIN;
      plan.max = field.has_max ? field.max : INT64_MAX;
      plan.cut_begin = field.cut_begin;
      plan.cut_count = field.cut_count;
      plan.kind =
          field.cut_count <= Index::kMaxLinearCuts ? Index::Kind::kInt : Index::Kind::kIntSearch;
      break;
    case FieldType::kBool:
      plan.want_state = static_cast<uint8_t>(Slot::State::kBool);
      plan.kind = Index::Kind::kBool;
      break;
  }
  return plan;
}

// The row the general path finds for `row`'s own keys under `mask` (a probe of the mask's
// index), or UINT32_MAX. A row the general path cannot reach must not be reachable densely either.
uint32_t probe_row(const Table::Impl& t, const Table::Impl::Rule& rule,
                   const format::MaskRecord& mask, const uint32_t* key_atoms) {
  const uint32_t slot_mask = mask.slot_count - 1;
  uint32_t at =
      static_cast<uint32_t>(format::key_tuple_hash(key_atoms, rule.item_count, mask.mask)) &
      slot_mask;
  for (uint32_t probes = 0; probes < mask.slot_count; ++probes) {
    const uint32_t v = t.row_slots[mask.slot_begin + at];
    if (v == 0) return UINT32_MAX;
    const uint32_t* keys =
        t.row_keys.data() + rule.row_key_begin + uint64_t{v - 1} * rule.item_count;
    bool equal = true;
    for (uint32_t k = 0; k < rule.item_count && equal; ++k) {
      if ((mask.mask >> k) & 1u) equal = keys[k] == key_atoms[k];
    }
    if (equal) return v - 1;
    at = (at + 1) & slot_mask;
  }
  return UINT32_MAX;
}

// The dense matrix of table rule `r`, appended to x.dense_cells; false (nothing appended) when
// it is over its caps or the row index holds a row its own probe does not find.
bool build_dense(const Table::Impl& t, uint32_t r, Index& x, uint64_t& total_cells) {
  const Table::Impl::Rule& rule = t.rules[r];
  const uint32_t keys = rule.item_count;
  const uint32_t rows = rule.catalog_count;
  uint64_t atoms[format::kMaxKeys] = {};
  uint64_t cells = 1;
  const uint64_t cap =
      std::min(Index::kDenseMaxCells, std::max(Index::kDenseMinCap, uint64_t{rows} * 4));
  for (uint32_t k = 0; k < keys; ++k) {
    atoms[k] = t.fields[t.table_keys[rule.item_begin + k]].atom_count;
    if (atoms[k] == 0) return false;
    cells *= atoms[k];
    if (cells > cap) return false;
  }
  if (total_cells + cells > Index::kDenseMaxCells) return false;

  // The rows the general path can reach: indexed under their mask, found by their own probe.
  // Also counts the cells their wildcards cover, to bound the build's work.
  std::vector<uint8_t> reachable(rows, 0);
  uint64_t writes = 0;
  uint32_t key_atoms[format::kMaxKeys] = {};
  for (uint32_t m = 0; m < rule.mask_count; ++m) {
    const format::MaskRecord& mask = t.masks[rule.mask_begin + m];
    for (uint32_t s = 0; s < mask.slot_count; ++s) {
      const uint32_t v = t.row_slots[mask.slot_begin + s];
      if (v == 0) continue;
      const uint32_t row = v - 1;
      const uint32_t* row_keys = t.row_keys.data() + rule.row_key_begin + uint64_t{row} * keys;
      uint64_t covered = 1;
      for (uint32_t k = 0; k < keys; ++k) {
        key_atoms[k] = ((mask.mask >> k) & 1u) ? row_keys[k] : 0;
        if (!((mask.mask >> k) & 1u)) covered *= atoms[k];
      }
      if (probe_row(t, rule, mask, key_atoms) != row) return false;
      reachable[row] = 1;
      writes += covered;
      if (writes > 4 * cap) return false;
    }
  }

  Index::Dense& dense = x.dense[r];
  uint64_t stride = 1;
  for (uint32_t k = keys; k-- > 0;) {
    dense.stride[k] = static_cast<uint32_t>(stride);
    stride *= atoms[k];
  }
  dense.cell_begin = static_cast<uint32_t>(x.dense_cells.size());
  dense.key_count = keys;
  for (uint32_t k = 0; k < keys; ++k) dense.key_field[k] = t.table_keys[rule.item_begin + k];
  x.dense_cells.resize(x.dense_cells.size() + cells, 0);
  uint32_t* base = x.dense_cells.data() + dense.cell_begin;

  // Least specific group first and, within a group, the highest row first: a later write wins,
  // so a cell ends with the lowest row of the most specific group that matches it, as the
  // general path's probe order decides.
  for (uint32_t concrete = 0; concrete <= keys; ++concrete) {
    for (uint32_t row = rows; row-- > 0;) {
      if (!reachable[row]) continue;
      const uint32_t* row_keys = t.row_keys.data() + rule.row_key_begin + uint64_t{row} * keys;
      uint32_t count = 0, fixed = 0;
      uint32_t wild[format::kMaxKeys];
      uint32_t wild_count = 0;
      for (uint32_t k = 0; k < keys; ++k) {
        if (row_keys[k] == format::kWildcard) {
          wild[wild_count++] = k;
        } else {
          ++count;
          fixed += row_keys[k] * dense.stride[k];
        }
      }
      if (count != concrete) continue;
      const uint32_t catalog = rule.catalog_begin + row;
      const uint32_t cell = ((catalog + 1) << Index::kCellVerbBits) | t.catalog[catalog].verb;
      // Every combination of atoms of the wildcard keys (an odometer).
      uint32_t digit[format::kMaxKeys] = {};
      for (;;) {
        uint32_t at = fixed;
        for (uint32_t w = 0; w < wild_count; ++w) at += digit[w] * dense.stride[wild[w]];
        base[at] = cell;
        uint32_t w = 0;
        while (w < wild_count && ++digit[w] == atoms[wild[w]]) digit[w++] = 0;
        if (w == wild_count) break;
      }
    }
  }
  dense.enabled = true;
  total_cells += cells;
  return true;
}

// The guard masks (see DecideIndex::rule_masks); leaves x.masked false when the policy has more
// than 64 rules or the masks would be over kMaxMaskEntries.
void build_masks(const Table::Impl& t, Index& x) {
  if (t.rules.size() > 64) return;
  uint64_t entries = 0;
  std::vector<uint8_t> conditioned(t.fields.size(), 0);
  for (const Table::Impl::Rule& rule : t.rules) {
    if (rule.is_table) continue;
    for (uint32_t c = 0; c < rule.item_count; ++c) {
      const uint32_t f = t.conditions[rule.item_begin + c].field;
      if (!conditioned[f]) entries += t.fields[f].atom_count;
      conditioned[f] = 1;
    }
  }
  if (entries > Index::kMaxMaskEntries) return;
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    if (!conditioned[f]) continue;
    x.fields[f].mask_begin = static_cast<uint32_t>(x.rule_masks.size());
    x.rule_masks.resize(x.rule_masks.size() + t.fields[f].atom_count, ~uint64_t{0});
  }
  for (uint32_t r = 0; r < t.rules.size(); ++r) {
    const Table::Impl::Rule& rule = t.rules[r];
    x.all_rules |= uint64_t{1} << r;
    if (rule.is_table) {
      x.table_rules |= uint64_t{1} << r;
      continue;
    }
    for (uint32_t c = 0; c < rule.item_count; ++c) {
      const Table::Impl::Condition& cond = t.conditions[rule.item_begin + c];
      uint64_t* masks = x.rule_masks.data() + x.fields[cond.field].mask_begin;
      for (uint32_t a = 0; a < t.fields[cond.field].atom_count; ++a) {
        if (!((t.bitsets[cond.bits_begin + a / 64] >> (a % 64)) & 1u)) {
          masks[a] &= ~(uint64_t{1} << r);
        }
      }
    }
  }
  x.masked = true;
}

// The fast path's state words and per-kind work lists (DecideIndex::want_states and after).
void build_fast_path(const Table::Impl& t, Index& x) {
  const uint32_t n = static_cast<uint32_t>(x.fields.size());
  const uint32_t words = (n + 7) / 8;
  x.want_states.assign(words, 0);
  x.optional_bytes.assign(words, 0);
  x.field_bytes.assign(words, 0);
  for (uint32_t f = 0; f < n; ++f) {
    const Index::FieldPlan& plan = x.fields[f];
    const uint32_t shift = 8 * (f % 8);
    x.want_states[f / 8] |= uint64_t{plan.want_state} << shift;
    x.field_bytes[f / 8] |= uint64_t{0x80} << shift;
    if (t.fields[f].optional) x.optional_bytes[f / 8] |= uint64_t{0x80} << shift;
    switch (plan.kind) {
      case Index::Kind::kStringNoDict:
      case Index::Kind::kStringLazy: {
        const bool lazy = plan.kind == Index::Kind::kStringLazy;
        // A lazy field needs no work here unless an empty value makes it invalid.
        if (lazy && plan.empty_atom != Index::kInvalidAtom) break;
        Index::FastString e;
        e.field = f;
        e.mask_begin = plan.mask_begin;
        e.present_atom = lazy ? Index::kLazyAtom : 1;
        e.empty_atom = plan.empty_atom == Index::kNoEmptyRule ? e.present_atom : plan.empty_atom;
        x.fast_strings.push_back(e);
        break;
      }
      case Index::Kind::kBool:
        x.fast_bools.push_back(Index::FastBool{f, plan.mask_begin});
        break;
      case Index::Kind::kInt:
      case Index::Kind::kIntSearch:
        x.fast_ints.push_back(f);
        break;
      default:  // kStringDict, kEnum (kGeneral and kDerived do not take the fast path)
        x.fast_planned.push_back(f);
        break;
    }
  }
}

// The pair index of the kernel table (DecideIndex::KernelTable::pair), when it qualifies: both
// keys lazy strings, at most kMaxPairs nonzero cells, each at two dictionary atoms whose values are
// nonempty and at most kWordBytes bytes (so the words and size decide equality), and a seed that
// puts every pair in its home slot within kMaxPairSlots slots. Then a pair the index does not hold
// has cell 0, whichever atoms its values have (absent, empty, "other" or a dictionary pair
// without a row), and a miss is that cell.
void build_pair_index(const Table::Impl& t, Index& x) {
  Index::KernelTable& kt = x.kernel.table;
  if (!kt.key_lazy[0] || !kt.key_lazy[1]) return;
  const Table::Impl::Field& f0 = t.fields[kt.key_field[0]];
  const Table::Impl::Field& f1 = t.fields[kt.key_field[1]];
  const uint32_t atoms0 = f0.atom_count, atoms1 = f1.atom_count;
  if (kt.stride != atoms1) return;  // row-major: dense_cells[a0 * stride + a1]
  std::vector<Index::PairSlot> pairs;
  auto value = [&](const Table::Impl::Field& f, uint32_t atom, std::string_view* bytes) {
    if (atom < f.first_atom || atom - f.first_atom >= f.dict_count) return false;
    *bytes = t.dict[f.dict_begin + (atom - f.first_atom)].bytes;
    return !bytes->empty() && bytes->size() <= kWordBytes;
  };
  for (uint32_t a0 = 0; a0 < atoms0; ++a0) {
    for (uint32_t a1 = 0; a1 < atoms1; ++a1) {
      const uint32_t cell = x.dense_cells[kt.cell_begin + a0 * kt.stride + a1];
      if (cell == 0) continue;
      std::string_view v0, v1;
      if (!value(f0, a0, &v0) || !value(f1, a1, &v1) || pairs.size() == Index::kMaxPairs) return;
      Index::PairSlot e;
      string_words(v0.data(), v0.size(), &e.w0[0], &e.w0[1], &e.w0[2]);
      string_words(v1.data(), v1.size(), &e.w1[0], &e.w1[1], &e.w1[2]);
      e.size0 = static_cast<uint32_t>(v0.size());
      e.size1 = static_cast<uint32_t>(v1.size());
      e.cell = cell;
      pairs.push_back(e);
    }
  }
  if (pairs.empty()) return;
  // The smallest table (at least 4 slots per pair) with a seed that places every pair alone.
  for (uint32_t size = std::bit_ceil(4 * static_cast<uint32_t>(pairs.size()));
       size <= Index::kMaxPairSlots; size *= 2) {
    const uint32_t shift = 64 - static_cast<uint32_t>(std::countr_zero(size));
    std::vector<Index::PairSlot> slots(size);
    for (uint32_t i = 0; i < kSeedTries; ++i) {
      const uint64_t seed = seed_at(i);
      std::fill(slots.begin(), slots.end(), Index::PairSlot{});
      bool alone = true;
      for (const Index::PairSlot& e : pairs) {
        const uint64_t at = pair_hash(e.w0[0], e.w0[1], e.w0[2], e.size0, e.w1[0], e.w1[1], e.w1[2],
                                      e.size1, seed) >>
                            shift;
        if (slots[at].cell != 0) {
          alone = false;
          break;
        }
        slots[at] = e;
      }
      if (!alone) continue;
      kt.pair = true;
      kt.pair_shift = shift;
      kt.pair_seed = seed;
      x.pair_slots = std::move(slots);
      return;
    }
  }
}

// The kernel (DecideIndex::Kernel), when the policy fits it: the fast path's checks and lists
// restated as fixed-size ops. Called after the guard masks, the fast path and the dense matrices.
void build_kernel(const Table::Impl& t, Index& x) {
  Index::Kernel& k = x.kernel;
  const uint32_t n = static_cast<uint32_t>(x.fields.size());
  if (!x.fast_path || n == 0 || n > Index::kKernelFields || t.rules.size() >= 64) return;
  for (const Index::FieldPlan& plan : x.fields) {
    const bool fits =
        plan.kind == Index::Kind::kBool || plan.kind == Index::Kind::kStringNoDict ||
        plan.kind == Index::Kind::kStringLazy ||
        plan.kind == Index::Kind::kInt;  // kIntSearch: more cuts than the kernel takes
    if (!fits) return;
  }
  // Guards' decisions are packed like dense cells; kDefaultCell is never one of them.
  if (t.verbs.size() > (1u << Index::kCellVerbBits) ||
      t.catalog.size() >= (1u << (32 - Index::kCellVerbBits)) - 1) {
    return;
  }
  k.field_count = n;
  k.want_states = x.want_states[0];
  k.optional_bytes = x.optional_bytes[0];
  k.field_bytes = x.field_bytes[0];
  k.all_rules = x.all_rules | uint64_t{1} << t.rules.size();
  k.default_verb = t.default_verb;
  uint32_t width = 0;  // the most cuts an op keeps
  for (uint32_t f = 0; f < n; ++f) {
    const Index::FieldPlan& plan = x.fields[f];
    const bool lazy = plan.kind == Index::Kind::kStringLazy;
    // A lazy field needs an op only to reject an empty value.
    if (lazy && plan.empty_atom != Index::kInvalidAtom) continue;
    Index::KernelOp& op = k.ops[k.op_count++];
    op.field = f;
    // The field as bounds [lo, hi], its cuts and the table's atom of each "virtual" atom
    // (1 + the number of those cuts <= the value), before the cuts at or below lo (every valid
    // value counts them) and above hi (none does) are dropped.
    int64_t hi = INT64_MAX;
    std::vector<int64_t> cuts;
    std::vector<uint32_t> virt;  // the table's atom of virtual atom a >= 1 (index a - 1)
    if (plan.kind == Index::Kind::kInt) {
      op.lo = plan.min;
      hi = plan.max;
      for (uint32_t c = 0; c < plan.cut_count; ++c) cuts.push_back(t.cuts[plan.cut_begin + c]);
      for (uint32_t a = 1; a <= plan.cut_count + 1; ++a) virt.push_back(a);
    } else if (plan.kind == Index::Kind::kBool) {
      op.lo = 0;
      hi = 1;
      cuts = {1};  // false 1, true 2
      virt = {1, 2};
    } else {  // a string's size: empty, then not
      const bool empty_invalid = plan.empty_atom == Index::kInvalidAtom;
      op.lo = empty_invalid ? 1 : 0;
      cuts = {1};
      const uint32_t empty = plan.empty_atom == Index::kNoEmptyRule ? 1
                             : empty_invalid                        ? 0  // never used: invalid
                                                                    : plan.empty_atom;
      virt = {empty, 1};  // 1: "other"
    }
    op.span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(op.lo);
    uint32_t dropped = 0;
    std::vector<int64_t> kept;
    for (const int64_t cut : cuts) {
      if (cut <= op.lo) {
        ++dropped;
      } else if (cut <= hi) {
        kept.push_back(cut);
      }
    }
    if (kept.size() > Index::kKernelCuts) {
      k = Index::Kernel{};
      return;
    }
    width = std::max<uint32_t>(width, static_cast<uint32_t>(kept.size()));
    for (uint32_t c = 0; c < Index::kKernelCuts; ++c)
      op.cut[c] = c < kept.size() ? kept[c] : INT64_MAX;
    // Kernel atom a >= 1 is virtual atom a + dropped; padding cuts (INT64_MAX) count only for
    // INT64_MAX, which every real cut is at most, so larger kernel atoms take the last one.
    for (uint32_t a = 0; a < Index::kKernelAtoms; ++a) {
      const uint32_t atom = a == 0 ? 0 : virt[std::min<size_t>(a - 1 + dropped, virt.size() - 1)];
      op.atom[a] = atom;
      op.mask[a] =
          plan.mask_begin == Index::kNoMask ? ~uint64_t{0} : x.rule_masks[plan.mask_begin + atom];
    }
  }
  // Required fields' ops first (field order kept within each group: the ops are independent).
  std::stable_partition(k.ops, k.ops + k.op_count,
                        [&](const Index::KernelOp& op) { return !t.fields[op.field].optional; });
  k.required_count = static_cast<uint32_t>(
      std::count_if(k.ops, k.ops + k.op_count,
                    [&](const Index::KernelOp& op) { return !t.fields[op.field].optional; }));
  k.cut_width = width <= 1 ? 1 : width <= 2 ? 2 : 4;
  for (uint32_t r = 0; r < t.rules.size(); ++r) {
    if (!t.rules[r].is_table) {
      k.hot[r] = ((x.guards[r].catalog + 1) << Index::kCellVerbBits) | x.guards[r].verb;
      continue;
    }
    if (k.table.rule != Index::kNoRule) continue;
    const Index::Dense& dense = x.dense[r];
    if (!dense.enabled || dense.key_count != 2) continue;
    k.table.rule = r;
    k.table.cell_begin = dense.cell_begin;
    k.table.stride = dense.stride[0];
    for (uint32_t key = 0; key < 2; ++key) {
      const Index::FieldPlan& plan = x.fields[dense.key_field[key]];
      k.table.key_field[key] = dense.key_field[key];
      k.table.key_lazy[key] = plan.kind == Index::Kind::kStringLazy;
      k.table.key_plan[key] = plan;
      k.table.key_empty[key] = plan.empty_atom == Index::kInvalidAtom ? 0 : plan.empty_atom;
    }
  }
  k.hot[t.rules.size()] = Index::kDefaultCell;
  if (k.table.rule != Index::kNoRule) build_pair_index(t, x);
  k.pair_only = k.table.pair && std::count_if(t.rules.begin(), t.rules.end(),
                                              [](const auto& r) { return r.is_table; }) == 1;
  k.enabled = true;
}

}  // namespace

void build_decide_index(Table::Impl& t) {
  Index& x = t.fast;
  x = Index{};
  x.fields.reserve(t.fields.size());
  for (const Table::Impl::Field& field : t.fields) x.fields.push_back(plan_field(t, field, x));

  build_masks(t, x);
  // A string field no guard mask reads is needed only by table lookups: the fast path defers its
  // lookup (it cannot make the field invalid: a miss is "other").
  bool all_planned = true;
  for (Index::FieldPlan& plan : x.fields) {
    if (x.masked && plan.kind == Index::Kind::kStringDict && plan.mask_begin == Index::kNoMask) {
      plan.kind = Index::Kind::kStringLazy;
    }
    all_planned =
        all_planned && plan.kind != Index::Kind::kGeneral && plan.kind != Index::Kind::kDerived;
  }
  x.guards.resize(t.rules.size());
  for (uint32_t r = 0; r < t.rules.size(); ++r) {
    if (t.rules[r].is_table) continue;
    x.guards[r].catalog = t.rules[r].catalog_begin;
    x.guards[r].verb = t.catalog[t.rules[r].catalog_begin].verb;
  }
  x.fast_path = x.masked && all_planned && t.derivations.empty() && t.classifiers.empty();
  if (x.fast_path) build_fast_path(t, x);
  x.dense.resize(t.rules.size());
  const bool packable = t.verbs.size() <= (1u << Index::kCellVerbBits) &&
                        t.catalog.size() < (1u << (32 - Index::kCellVerbBits)) - 1;
  uint64_t total_cells = 0;
  for (uint32_t r = 0; r < t.rules.size() && packable; ++r) {
    if (t.rules[r].is_table) build_dense(t, r, x, total_cells);
  }
  build_kernel(t, x);
  for (uint32_t f = 0; f < x.fields.size() && x.prefetch_count < Index::kPrefetchFields; ++f) {
    const Index::Kind kind = x.fields[f].kind;
    const bool string =
        t.fields[f].type == FieldType::kString || t.fields[f].type == FieldType::kEnum;
    if (string && kind != Index::Kind::kStringNoDict && kind != Index::Kind::kDerived)
      x.prefetch_fields[x.prefetch_count++] = f;
  }
  x.built = true;
  x.entry = select_decide(x);
}

}  // namespace replaygate
