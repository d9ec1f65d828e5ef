// decide()'s load-time index: cheaper equivalents of the table's general lookups, built once at
// the end of load from the already-verified Table::Impl, read by runtime/decide.cc.
//
// Nothing here changes a decision: each structure is a different way to reach the same answer as
// the general path (XXH3 dictionary probes, key-tuple hash probes per wildcard mask), which
// decide() still uses wherever an index is not built. tests/runtime/decide_index_test.cc and
// tests/properties/decide_index_test.cc check decide() against decide_unindexed() on random and
// edge inputs. Private to the runtime (like table_impl.h; tests and benches may include it for
// decide_unindexed() and decide_index_stats()); not installed.
//
//  * Per-field plans: the Input slot state that takes the fast path and what it costs (a string
//    field without dictionary entries is never hashed: its atom is "other" or absent).
//  * Small string dictionaries: an open-addressing index keyed by a cheap hash of the length and
//    two 8-byte (or smaller) loads, with a load-time-chosen seed (the first of a fixed sequence
//    that places every entry without a collision, when one does: then a lookup reads only the
//    home slot). A hit compares the length and three loaded words (which cover every byte of a
//    value up to 24 bytes) plus the middle bytes of longer values: the bytes decide, the hash
//    only picks where to look.
//  * Guard masks: per field and atom, the set of rules (up to 64) whose conditions on that field
//    the atom satisfies, ANDed while interning; the first set bit is the deciding guard or the
//    next table to look up, in rule order.
//  * Dense tables: for a decision table whose key-atom product is small, a matrix from the key
//    atoms (every combination, absent and "other" included) to the deciding row, with wildcards
//    and first-match-in-the-most-specific-group resolved at load. Capped in size (see
//    kDenseMaxCells); bigger tables keep the hash probes.
//  * Fast path (fast_path): per-8-field state words and per-kind work lists, so decide() checks
//    slot states eight at a time and defers the lookup of string fields only tables read
//    (Kind::kStringLazy).
//  * Kernel (kernel): the fast path for policies of at most 8 fields of simple kinds, in one
//    fixed-size struct: one state word, one op per bool, int and undictionaried string, the
//    first two-key dense table read inline.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/table.h"
#include "runtime/table_format.h"

namespace replaygate {

struct DecideIndex;

// The general path (decide.cc): every field interned and every table probed without the index.
Decision decide_general(const Table::Impl& t, const Input& input) noexcept;

struct DecideIndex {
  enum class Kind : uint8_t {
    kGeneral = 0,   // no plan: the general intern() (never built today; kept as the safe default)
    kStringNoDict,  // string field with no dictionary entries: atom 1 ("other") or absent
    kStringDict,    // string field: the small-dictionary index; a miss is 1 ("other")
    kStringLazy,    // kStringDict for a field only tables read (no guard mask): decide()'s fast
                    // path validates it in field order but looks it up only when a table needs it
    kEnum,          // enum field: the small-dictionary index; a miss is invalid
    kInt,           // int field: bounds, then a linear scan of at most kMaxLinearCuts cuts
    kIntSearch,     // int field: bounds, then binary search over the cuts
    kBool,          // bool field: 1 false, 2 true
    kDerived,       // derived bool: skipped here, computed after validation
  };
  struct FieldPlan {
    Kind kind = Kind::kGeneral;
    uint8_t want_state = 0;    // the Input::Slot::State that takes the fast path
    uint32_t absent_atom = 0;  // an unset or null slot: 0 (absent) when optional, else invalid
    // Strings: the atom of an empty value when empty_means_absent (0 when optional, else
    // kInvalidAtom), or kNoEmptyRule when empty is an ordinary value.
    uint32_t empty_atom = 0;
    uint32_t slot_begin = 0, slot_mask = 0;  // string index: str_slots[slot_begin, +mask+1)
    uint32_t slot_shift = 63;                // home slot: small_string_hash() >> slot_shift
    // Every entry of the string index sits in its home slot: a lookup reads one slot, and a
    // mismatch there is a miss (no probe loop).
    bool perfect = false;
    uint64_t seed = 0;
    int64_t min = INT64_MIN, max = INT64_MAX;  // ints: inclusive bounds
    uint32_t cut_begin = 0, cut_count = 0;
    // rule_masks[mask_begin + atom]: the rules this atom leaves possible (see rule_masks), or
    // kNoMask when no guard has a condition on the field.
    uint32_t mask_begin = kNoMask;
  };
  // One entry of a small-dictionary index (32 bytes); atom 0 marks an empty slot, whose words
  // and size are 0. The bytes of an entry over kWordBytes long are in str_data (same index).
  struct StrSlot {
    uint64_t a = 0, b = 0, c = 0;  // string_words() of the entry
    uint32_t size = 0;
    uint32_t atom = 0;
  };
  // decide()'s fast path (decide.cc, decide_fast), built when fast_path. Its first check covers
  // every field's slot state, eight fields per 64-bit word of Input::states(): per word, the
  // planned state of each field (FieldPlan::want_state; 0 in padding bytes), 0x80 in the byte of
  // each optional field (an unset or null slot is absent there, invalid elsewhere), and 0x80 in
  // the byte of each field (padding bytes are ignored).
  std::vector<uint64_t> want_states, optional_bytes, field_bytes;
  // Then the per-field work, grouped by kind (no dispatch per field); each entry names a field.
  // kFixedString (kStringNoDict, and kStringLazy when an empty value is invalid): absent 0, empty
  // empty_atom, else present_atom (1; kLazyAtom for a lazy field, whose atom is not kept).
  struct FastString {
    uint32_t field = 0, mask_begin = kNoMask, empty_atom = 0, present_atom = 0;
  };
  struct FastBool {  // absent 0, false 1, true 2
    uint32_t field = 0, mask_begin = kNoMask;
  };
  std::vector<FastString> fast_strings;
  std::vector<FastBool> fast_bools;
  std::vector<uint32_t> fast_ints;     // kInt and kIntSearch: bounds, then the cuts
  std::vector<uint32_t> fast_planned;  // kStringDict and kEnum: the small-dictionary lookup
  // The kernel (decide.cc, decide_kernel): decide_fast's work for a policy of at most
  // kKernelFields fields and fewer than 64 rules whose fields are all bools, ints with at most
  // kKernelCuts cuts above their min and up to their max, and strings without guard-read
  // dictionaries (kStringNoDict, kStringLazy), in one fixed-size struct (no vector to reload, no
  // per-kind lists, no 4 KiB atoms array). Every bool, int and undictionaried string is the same
  // operation on one number, Slot::i (an int's value, a bool's 0 or 1, a string's size): absent
  // (an unset or null slot) is kernel atom 0; else it must lie in [lo, lo + span] (one unsigned
  // compare: an int's bounds, a bool's [0, 1], a string's [1, max] when an empty value is
  // invalid, else [0, max]) and its kernel atom is 1 + the number of cuts <= it. A bool is an
  // int with the cut 1, a string its size with the cut 1 (empty, then not), so the one operation
  // covers them. Cuts at or below lo (every valid value is past them: the table's atom is
  // shifted instead) and above the upper bound (no valid value reaches them) are left out, and
  // decide() compares only cut_width cuts per op (1, 2 or 4, the most any op keeps; padding cuts
  // are INT64_MAX, which only INT64_MAX reaches: its kernel atom maps to the last atom).
  static constexpr uint32_t kKernelFields = 8, kKernelCuts = 4, kKernelAtoms = kKernelCuts + 2;
  struct KernelOp {
    uint32_t field = 0;
    int64_t lo = 0;
    uint64_t span = 0;
    int64_t cut[kKernelCuts] = {};
    // By kernel atom: the rules it leaves possible (all bits set when no guard reads the field),
    // and the table's atom of the field (what a table key reads).
    uint64_t mask[kKernelAtoms] = {};
    uint32_t atom[kKernelAtoms] = {};
  };
  // The first table rule with a dense matrix of two keys (the shipped policy's only table): the
  // kernel reads its keys' atoms (a lookup of a kStringLazy key, else the op's atom) and its
  // cell inline, when the masks leave it the lowest live rule; other tables are looked up out of
  // line. (Reading them before the masks were combined, so the
  // loads would overlap the guard work, measured ~2 ns slower: letters a guard decides then
  // pay both lookups.)
  struct KernelTable {
    uint32_t rule = kNoRule;  // kNoRule: no such table
    uint32_t cell_begin = 0, stride = 0;
    uint32_t key_field[2] = {};
    bool key_lazy[2] = {};
    // A lazy key's plan (its small-dictionary index) and the atom of an empty value: the plan's
    // empty_atom, 0 in place of kInvalidAtom (the field's op then fails validation, and the
    // cell read stays in bounds), or kNoEmptyRule.
    FieldPlan key_plan[2];
    uint32_t key_empty[2] = {};
    // The pair index (pair_slots), when built: both keys lazy strings, and every nonzero cell at
    // two dictionary values (nonempty, at most kWordBytes bytes), each pair in its home slot.
    // Then one probe keyed by both values' words replaces the two dictionary lookups and the
    // dependent cell read, and a miss is cell 0 (no row: the next live rule decides).
    bool pair = false;
    uint32_t pair_shift = 63;  // home slot: pair_hash() >> pair_shift
    uint64_t pair_seed = 0;
  };
  // One pair of the kernel table's keys (64 bytes, one cache line): both values' string_words()
  // and sizes, and the pair's cell; an empty slot is all 0 (a 0 size never matches a value: the
  // pairs' values are nonempty).
  struct PairSlot {
    uint64_t w0[3] = {}, w1[3] = {};
    uint32_t size0 = 0, size1 = 0;
    uint32_t cell = 0, unused = 0;
  };
  struct Kernel {
    bool enabled = false;
    uint32_t cut_width = 0;  // cuts compared per op: 1, 2 or 4
    uint32_t field_count = 0;
    // The slot-state check of decide_fast for the one state word (see want_states).
    uint64_t want_states = 0, optional_bytes = 0, field_bytes = 0;
    uint64_t all_rules = 0;  // the rule bits and a sentinel bit at the rule count
    uint32_t op_count = 0;
    // ops[0, required_count) are required fields' ops: once the state word passed, each of their
    // slots holds its planned state, so they skip the presence test the optional fields' ops make.
    uint32_t required_count = 0;
    // The kernel table has a pair index and is the only table rule: no rule reads the ops'
    // table atoms, so decide() neither stores them nor keeps the out-of-line lookup.
    bool pair_only = false;
    KernelOp ops[kKernelFields];
    KernelTable table;
    // By rule index: a guard's packed decision (as a dense cell), 0 for a table rule (look it
    // up); at the rule count (the sentinel bit), kDefaultCell.
    uint32_t hot[65] = {};
    uint32_t default_verb = 0;
  };
  static constexpr uint32_t kNoRule = 0xFFFFFFFFu;
  // The kernel's packed "no rule matched: the default verb" (never a dense cell: see
  // kCellVerbBits).
  static constexpr uint32_t kDefaultCell = 0xFFFFFFFFu;

  // A guard's decision, by rule index (guards only): its catalog index and verb.
  struct GuardHot {
    uint32_t catalog = 0, verb = 0;
  };
  // Per rule (index = rule index); enabled only for table rules with a dense matrix.
  struct Dense {
    bool enabled = false;
    uint32_t cell_begin = 0;  // dense_cells index of the all-zero-atoms cell
    uint32_t key_count = 0;
    uint32_t key_field[format::kMaxKeys] = {};  // the field of key k
    uint32_t stride[format::kMaxKeys] = {};     // cell offset per atom of key k
  };

  static constexpr uint32_t kInvalidAtom = 0xFFFFFFFFu;
  // The fast path's placeholder atom of a kStringLazy field (looked up when a table reads it).
  static constexpr uint32_t kLazyAtom = 0xFFFFFFFDu;
  static constexpr uint32_t kNoMask = 0xFFFFFFFFu;
  // Guard masks are built for policies of at most 64 rules, with at most kMaxMaskEntries masks
  // (8 MiB) over all fields.
  static constexpr uint32_t kMaxMaskEntries = uint32_t{1} << 20;
  static constexpr uint32_t kNoEmptyRule = 0xFFFFFFFEu;
  static constexpr uint32_t kMaxLinearCuts = 8;
  // A dense matrix is built when its cells number at most max(kDenseMinCap, 4 x the table's rows)
  // and at most kDenseMaxCells (2 MiB of u32 cells), and all matrices together stay under
  // kDenseMaxCells. The cap keeps load time bounded: building a matrix probes every row once
  // (to include only rows the general path reaches), which at 1,000,000 rows cost ~165 ms of the
  // load, against a 50 ms load target (docs/benchmarks.md).
  static constexpr uint64_t kDenseMinCap = uint64_t{1} << 16;
  static constexpr uint64_t kDenseMaxCells = uint64_t{1} << 19;
  // Cells: 0 = no row matches; else (catalog index + 1) << 8 | verb (verb < 256, catalog index
  // < 2^24; a table outside those bounds keeps the hash probes).
  static constexpr uint32_t kCellVerbBits = 8;

  bool built = false;  // false: decide() takes the general path everywhere
  // decide()'s fast path applies (see decide.cc, decide_fast): built, guard masks, no derived
  // fields, every field planned. Otherwise decide() runs the ordered per-field loop.
  bool fast_path = false;
  std::vector<FieldPlan> fields;
  // Guard masks: when `masked`, bit r of rule_masks[fields[f].mask_begin + atom] is clear when
  // rule r is a guard with a condition on field f that `atom` fails. Table rules' bits are always
  // set (table_rules); so the AND over the fields' masks holds exactly the guards whose every
  // condition holds, plus the tables, and the lowest bit is the first rule to try.
  bool masked = false;
  uint64_t all_rules = 0, table_rules = 0;
  std::vector<uint64_t> rule_masks;
  std::vector<StrSlot> str_slots;
  std::vector<const char*> str_data;  // parallel to str_slots: the entry's bytes
  std::vector<GuardHot> guards;       // by rule index; meaningful for guards
  std::vector<Dense> dense;
  std::vector<uint32_t> dense_cells;
  std::vector<PairSlot> pair_slots;  // the kernel table's pair index (KernelTable::pair)
  // The pair index's bounds: at most kMaxPairs pairs in at most kMaxPairSlots slots (64 KiB);
  // bigger tables, and tables whose pairs find no collision-free seed, keep the per-key lookups.
  static constexpr uint32_t kMaxPairs = 64, kMaxPairSlots = 1024;
  Kernel kernel;  // last, so the members above keep decide_fast's layout
  // Table::decide_many()'s prefetch list (decide.cc): the string and enum fields whose bytes
  // decide() may read (the dictionary fields of the plans: kStringDict, kStringLazy, kEnum,
  // kGeneral), the first kPrefetchFields of them in field order. A string without dictionary
  // entries (kStringNoDict, e.g. an idempotency key) is never read, so never prefetched.
  static constexpr uint32_t kPrefetchFields = 4;
  uint32_t prefetch_fields[kPrefetchFields] = {};
  uint32_t prefetch_count = 0;
  // The body Table::decide() runs, chosen once at load (select_decide()): a tail call through
  // one pointer instead of per-decision tests of the flags above, and each body (the kernel's
  // variants, the fast path, the indexed and general paths) compiled as its own function, so
  // none pays for another's registers.
  using DecideFn = Decision (*)(const Table::Impl&, const Input&) noexcept;
  DecideFn entry = &decide_general;
};

// The decide() body for an index that build_decide_index() finished (decide.cc).
DecideIndex::DecideFn select_decide(const DecideIndex& x) noexcept;

// Values up to this many bytes are determined by their size and string_words().
inline constexpr size_t kWordBytes = 24;

// The words a small-dictionary index compares: for size >= 8 the 8 bytes at 0, at size - 8 and at
// min(8, size - 8) (so [0, size) is covered up to 24 bytes), for 4..7 the first and last 4, for
// 1..3 bytes 0, size/2 and size-1, for 0 nothing. With the size they determine every byte of a
// value of at most kWordBytes bytes. Reads only [data, data + size).
inline void string_words(const char* data, size_t size, uint64_t* a, uint64_t* b,
                         uint64_t* c) noexcept {
  if (size >= 8) [[likely]] {
    __builtin_memcpy(a, data, 8);
    __builtin_memcpy(b, data + size - 8, 8);
    __builtin_memcpy(c, data + (size < 16 ? size - 8 : 8), 8);
  } else if (size >= 4) {
    uint32_t x, y;
    __builtin_memcpy(&x, data, 4);
    __builtin_memcpy(&y, data + size - 4, 4);
    *a = x;
    *b = y;
    *c = 0;
  } else if (size > 0) {
    *a = uint64_t{static_cast<uint8_t>(data[0])} |
         uint64_t{static_cast<uint8_t>(data[size / 2])} << 8 |
         uint64_t{static_cast<uint8_t>(data[size - 1])} << 16;
    *b = 0;
    *c = 0;
  } else {
    *a = 0;
    *b = 0;
    *c = 0;
  }
}

// Whether two values of the same size over kWordBytes bytes, whose string_words() are known
// equal, are equal: compares [16, size - 8) in 8-byte loads (the last may overlap the tail).
inline bool same_middle(const char* x, const char* y, size_t size) noexcept {
  for (size_t i = 16; i + 8 < size; i += 8) {
    uint64_t u, v;
    __builtin_memcpy(&u, x + i, 8);
    __builtin_memcpy(&v, y + i, 8);
    if (u != v) return false;
  }
  return true;
}

// Where a small-dictionary index of 2^k slots starts probing: the top k bits (the best-mixed
// bits of the two products; no finalizer, to keep decide()'s dependency chain short).
inline uint64_t small_string_hash(uint64_t a, uint64_t b, uint64_t size, uint64_t seed) noexcept {
  return (a ^ seed) * 0x9E3779B97F4A7C15ull ^ (b + size) * 0xC2B2AE3D27D4EB4Full;
}

// The pair index's hash of two values' string_words() and sizes: like small_string_hash() of
// each (the third word added in, so values that differ only there can still be told apart), with
// different multipliers, XORed: the top bits mix both values.
inline uint64_t pair_hash(uint64_t a0, uint64_t b0, uint64_t c0, uint64_t size0, uint64_t a1,
                          uint64_t b1, uint64_t c1, uint64_t size1, uint64_t seed) noexcept {
  return ((a0 ^ seed) * 0x9E3779B97F4A7C15ull) ^ ((b0 + c0 + size0) * 0xC2B2AE3D27D4EB4Full) ^
         ((a1 + seed) * 0x165667B19E3779F9ull) ^ ((b1 + c1 + size1) * 0xD6E8FEB86659FD93ull);
}

// Builds t.fast from the verified structures of t (called once at the end of load). Allocates;
// throws std::bad_alloc like the rest of load. Leaves t.fast.built false (general path) when a
// structure cannot be indexed.
void build_decide_index(Table::Impl& t);

// decide() without the load-time index: the general path for every field and table. Same
// contract and same decisions as Table::decide(); for the equivalence tests and the bench.
Decision decide_unindexed(const Table& table, const Input& input) noexcept;

// What the load-time index of `table` holds, so tests can tell which path they exercise.
struct DecideIndexStats {
  uint32_t small_dict_fields = 0;  // string and enum fields with a small-dictionary index
  uint32_t lazy_fields = 0;        // of those, string fields looked up only when a table needs them
  uint32_t perfect_fields = 0;     // of those, indexes with every entry in its home slot
  uint32_t unhashed_fields = 0;    // string fields without dictionary entries (never hashed)
  uint32_t general_fields = 0;     // fields left to the general path (big dictionaries)
  uint32_t dense_tables = 0;       // table rules decided by a dense matrix
  uint32_t probed_tables = 0;      // table rules left to the hash probes
  uint64_t dense_cells = 0;
  bool guard_masks = false;       // guards decided by per-field rule masks (at most 64 rules)
  bool fast_path = false;         // decide() takes the fast path (DecideIndex::fast_path)
  bool kernel = false;            // ... through its fixed-size kernel (DecideIndex::Kernel)
  bool kernel_table = false;      // the kernel reads a two-key dense table inline
  bool kernel_pair = false;       // ... through the pair index (one probe for both keys)
  bool kernel_pair_only = false;  // ... which is the only table (Kernel::pair_only)
  uint32_t kernel_cuts = 0;       // cuts the kernel compares per field (1, 2 or 4)
};
DecideIndexStats decide_index_stats(const Table& table) noexcept;

}  // namespace replaygate
