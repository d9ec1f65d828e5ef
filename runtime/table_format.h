// The frozen decision-table format: constants, record structs and the layout, shared by the
// compiler's lower() (writer) and the runtime's loader (reader). Standard library only.
//
// Design constraints
//  * Little-endian, fixed-width integers, no pointers: the file is a value. Records are read with
//    memcpy into the structs below (the build asserts a little-endian host; a big-endian port
//    byte-swaps in the loader).
//  * Found through a fixed header, then a section directory; every section starts 8-byte aligned,
//    sections appear once each, in ascending kind order and ascending offsets, never overlapping.
//    Bytes between sections are zero padding.
//  * Every reference is an index or an (offset, length) into another section; the loader checks
//    each one and decodes into validated native structures, so decide() never meets a bad index.
//  * Size caps: a table is at most kMaxTableBytes (runtime/table.h, 1 GiB); a policy has at most
//    kMaxFields fields (decide() keeps one atom per field on the stack) and a table at most
//    kMaxKeys key fields.
//
// Layout (all offsets from the start of the file)
//   Header            80 bytes, struct Header below
//   SectionEntry[N]   24 bytes each, directly after the header (at header_size); N is
//                     section_count: 16, or 17 when the policy has derived fields, or 18 when
//                     it has classifiers
//   sections          in kind order 1..N, each 8-byte aligned
//
// Digests (XXH3-128, stored as low 64 bits then high 64 bits, both little-endian; printed as 32 hex
// digits, high half first, like XXH128_canonical):
//   checksum          over the whole file [0, total_size) with the 16 checksum bytes taken as zero.
//   decision_digest   over every section except kProvenance, in directory order, each preceded by
//                     its kind (u32) and length (u64): fields, verbs, dictionaries, cuts, guards,
//                     tables and rows, rule catalog with ids and reasons, meta (policy id,
//                     revision, description, default verb and reason), derivations (when there
//                     are any, after provenance in the directory), classifiers (when there are
//                     any). Provenance-independent: the
//                     same IR gives the same decision digest whatever file it came from.
//   provenance_digest over the kProvenance section bytes.
//
// Atoms (see compiler/analysis/partition.h; the runtime interns every input field to one u32 atom):
//   0 absent; string: 1 other, 2 + i = i-th dictionary string (sorted bytewise);
//   enum: 1 + i = i-th value (declaration order); bool: 1 false, 2 true;
//   int: 1 + (number of cut points <= value), cut points sorted ascending and unique.
//
// String dictionaries: per string or enum field, entries sorted as above, plus an open-addressing
// index of slot_count (a power of two, > entry count, or 0 for no entries) u32 slots, each 0
// (empty) or an atom. A value's probe starts at XXH3_64bits_withSeed(bytes, kStringHashSeed) &
// (slot_count - 1) and goes on linearly; a hit must compare equal byte for byte.
//
// Tables: for each distinct wildcard mask (bit k set = key k concrete) a MaskRecord with an
// open-addressing index of row slots (power of two, > rows under that mask), each 0 (empty) or
// local row index + 1, keyed by key_tuple_hash() of the concrete key atoms. Masks are sorted by
// concrete_count descending, then mask ascending. Decide probes the masks of the highest count
// first; among masks of equal count the lowest row index wins; the first count with a hit decides.
// A row whose keys repeat an earlier row with the same mask is unreachable and is not indexed.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace replaygate::format {

static_assert(std::endian::native == std::endian::little,
              "the table format is little-endian; add byte swapping to port");

inline constexpr char kMagic[8] = {'R', 'G', 'T', 'A', 'B', 'L', 'E', '\0'};
inline constexpr uint16_t kVersion = 1;
inline constexpr uint32_t kMaxFields = 1024;
inline constexpr uint32_t kMaxKeys = 8;
inline constexpr uint64_t kStringHashSeed = 0x5247544142u;  // "RGTAB"
inline constexpr uint32_t kWildcard = 0xFFFFFFFFu;          // a row key that is `*`
inline constexpr size_t kAlign = 8;

enum SectionKind : uint32_t {
  kMeta = 1,         // one MetaRecord
  kStrings = 2,      // raw bytes; StrRef points here
  kFields = 3,       // FieldRecord[field_count], declaration order
  kDictEntries = 4,  // DictEntry[], per field a contiguous run
  kDictSlots = 5,    // u32[], per field a contiguous run (0 empty, else an atom)
  kCuts = 6,         // i64[], per int field a contiguous sorted run
  kVerbs = 7,        // VerbRecord[verb_count]
  kRules = 8,        // RuleRecord[rule_count], evaluation order
  kConditions = 9,   // ConditionRecord[], per guard a contiguous run
  kBitsets = 10,     // u64[], per condition ceil(atom_count / 64) words: bit a = atom a accepted
  kTableKeys = 11,   // u32[] field indices, per table a contiguous run
  kMasks = 12,       // MaskRecord[], per table a contiguous run
  kRowSlots = 13,    // u32[], per mask a contiguous run (0 empty, else local row + 1)
  kRowKeys = 14,     // u32[] atoms or kWildcard, per table rows x keys, row-major
  kCatalog = 15,     // CatalogRecord[catalog_count] = ir::rule_catalog() order
  kProvenance = 16,  // ProvenanceHeader, u32 line[catalog_count], name bytes, digest bytes
  // DerivationRecord[], one per derived field, ascending field index. Present only when the policy
  // has derived fields (section_count 17); a policy without any keeps the 16-section layout, so
  // its bytes (and digests) are the same as before derived fields existed.
  kDerivations = 17,
  // ClassifierHeader, ClassifierRecord[classifier_count], ClassifierMatcher[matcher_count]: the
  // classified enum fields (issue 20 §3). Present only when the policy has classifiers
  // (section_count 18; kDerivations is then present too and may be empty); a policy without any
  // keeps its 16- or 17-section layout and its bytes.
  kClassifiers = 18,
};
inline constexpr uint32_t kSectionCount = 16;             // sections every table has
inline constexpr uint32_t kDerivationsSectionCount = 17;  // with the kDerivations section
inline constexpr uint32_t kMaxSectionCount = 18;          // with kDerivations and kClassifiers

// Header flags. A loader rejects any bit it does not know, so a flag is how a table says "you
// must understand this to read me": a loader that predates operator-only (or record-only) fields
// refuses a table with one (it would otherwise pass the field's letter value on as an ordinary
// input).
// kFlagOperatorFields: some FieldRecord has source = kSourceOperator (set exactly then).
// kFlagRecordFields: some FieldRecord has source = kSourceRecord (set exactly then); a loader that
// knows only kFlagOperatorFields refuses the bit (and the source byte 2).
// A policy without either marker has flags 0, so its bytes are the same as before the markers
// existed; one with operator-only fields only has the bytes it had before record-only fields.
inline constexpr uint32_t kFlagOperatorFields = 1u;
inline constexpr uint32_t kFlagRecordFields = 2u;
inline constexpr uint32_t kKnownFlags = kFlagOperatorFields | kFlagRecordFields;

struct Header {
  char magic[8];
  uint16_t version;
  uint16_t header_size;  // sizeof(Header); the directory starts here
  uint32_t flags;        // kFlag* bits; 0 for a policy without operator- or record-only fields
  uint64_t total_size;   // the file's size in bytes
  uint32_t section_count;
  uint32_t reserved;
  uint8_t checksum[16];
  uint8_t decision_digest[16];
  uint8_t provenance_digest[16];
};
static_assert(sizeof(Header) == 80);
inline constexpr size_t kChecksumOffset = offsetof(Header, checksum);

struct SectionEntry {
  uint32_t kind;
  uint32_t reserved;
  uint64_t offset;
  uint64_t length;  // bytes of content, without the padding that follows
};
static_assert(sizeof(SectionEntry) == 24);

struct StrRef {  // bytes [offset, offset + length) of the kStrings section
  uint32_t offset;
  uint32_t length;
};

struct MetaRecord {
  StrRef policy_id;
  int64_t revision;
  StrRef description;
  StrRef default_reason;
  uint32_t default_verb;
  uint32_t field_count;
  uint32_t verb_count;
  uint32_t rule_count;
  uint32_t catalog_count;
  uint32_t reserved;
};
static_assert(sizeof(MetaRecord) == 56);

// FieldRecord::source (ir::InputSource): who may supply the field's value.
enum FieldSourceCode : uint8_t { kSourceLetter = 0, kSourceOperator = 1, kSourceRecord = 2 };

struct FieldRecord {
  StrRef name;
  StrRef invalid_reason;  // "invalid input: NAME"
  uint8_t type;           // FieldType (runtime/codes.h)
  uint8_t optional;       // 0 or 1
  uint8_t empty_means_absent;
  uint8_t has_min;
  uint8_t has_max;
  // FieldSourceCode (ir::Field::source): 0 letters set it; 1 only an operator, 2 only the
  // operation record (tools that read letters leave both unset). 1 needs kFlagOperatorFields in
  // the header, 2 kFlagRecordFields; neither on a derived field. (Format version 1 had 0 or 1
  // here, named operator_only: the same bytes.)
  uint8_t source;
  // 1: the field is the letter's idempotency key (ir::Field::idempotency_key), the value the
  // replay ledger claims; on a string field only, on at most one field. Formerly the first pad
  // byte (always 0), so a table without a key has the bytes it had before.
  uint8_t idempotency_key;
  uint8_t pad;  // 0 (the loader rejects anything else)
  int64_t min;
  int64_t max;
  uint32_t atom_count;  // including absent (0)
  uint32_t dict_begin;  // string/enum: entries (atom_count - 2 resp. - 1 of them)
  uint32_t dict_count;
  uint32_t slot_begin;  // string/enum: dictionary index slots
  uint32_t slot_count;
  uint32_t cut_begin;  // int: cut points (atom_count - 2 of them)
  uint32_t cut_count;
  uint32_t reserved;
};
static_assert(sizeof(FieldRecord) == 72);

struct DictEntry {
  uint64_t hash;  // XXH3_64bits_withSeed(bytes, kStringHashSeed)
  StrRef bytes;
};
static_assert(sizeof(DictEntry) == 16);

struct VerbRecord {
  StrRef name;
  StrRef description;
  uint32_t effect;  // Effect (runtime/codes.h)
  uint32_t reserved;
};
static_assert(sizeof(VerbRecord) == 24);

enum RuleKind : uint32_t { kRuleGuard = 0, kRuleTable = 1 };

struct RuleRecord {
  StrRef id;               // guard id or table id
  uint32_t kind;           // RuleKind
  uint32_t catalog_begin;  // the guard's entry, or the table's first row's
  uint32_t catalog_count;  // 1 for a guard, the row count for a table
  uint32_t item_begin;     // guard: first condition; table: first kTableKeys entry
  uint32_t item_count;     // guard: conditions (>= 1); table: keys (1..kMaxKeys)
  uint32_t mask_begin;     // table only (0 for guards)
  uint32_t mask_count;
  uint32_t row_key_begin;  // table only: row r's keys at row_key_begin + r * item_count
};
static_assert(sizeof(RuleRecord) == 40);

// Op codes mirror ir::Op: eq ne in not_in lt le gt ge absent present.

struct ConditionRecord {
  uint32_t field;
  uint32_t op;          // for dump; decide uses the bitset only
  uint32_t bits_begin;  // kBitsets word index
  uint32_t bits_count;  // == ceil(atom_count / 64) of the field
  StrRef text;          // the operand as written, e.g. "max_attempts (3)", for dump
};
static_assert(sizeof(ConditionRecord) == 24);

struct MaskRecord {
  uint32_t mask;            // bit k set: key k concrete
  uint32_t concrete_count;  // popcount(mask)
  uint32_t slot_begin;      // kRowSlots index
  uint32_t slot_count;      // power of two
};
static_assert(sizeof(MaskRecord) == 16);

struct CatalogRecord {
  StrRef id;      // guard id or row id
  StrRef reason;  // never empty: rows without a reason get a derived one (docs/table-format.md)
  uint32_t verb;
  uint32_t rule;  // index into kRules
  uint32_t row;   // row within the table, 0 for guards
  uint32_t reserved;
};
static_assert(sizeof(CatalogRecord) == 32);

// A derived bool field (ir::Derivation): after validation its atom is 2 (true) when
// `value(lhs) op value(rhs)`, else 1 (false). The field is FieldType::kBool and required; lhs and
// rhs are required FieldType::kInt fields with smaller indices; op is an Op code (runtime/codes.h)
// among eq ne lt le gt ge.
struct DerivationRecord {
  uint32_t field;
  uint32_t op;
  uint32_t lhs;
  uint32_t rhs;
};
static_assert(sizeof(DerivationRecord) == 16);

// The kClassifiers section. A classified field is a required FieldType::kEnum field whose atom is
// computed after validation (never read from the input): 1 + the class of the first matcher, in
// order, that takes the raw field's value, else 1 + fallback; an absent raw value gets the
// fallback. The raw field is a FieldType::kString or kInt field with a smaller index that is not
// computed itself. Matchers are in evaluation order; `row` groups the matchers of one policy row
// (an `in` row with three values is three matchers with the same row), ascending from 0 per
// classifier, for lifting and dumps only.
struct ClassifierHeader {
  uint32_t classifier_count;  // >= 1
  uint32_t matcher_count;     // total over all classifiers
};
static_assert(sizeof(ClassifierHeader) == 8);

struct ClassifierRecord {  // ascending `field`
  uint32_t field;          // the classified enum field
  uint32_t raw;            // the raw field, < field
  uint32_t fallback;       // class index, < the field's enum value count
  uint32_t matcher_begin;  // index into the matchers; this classifier's run is contiguous
  uint32_t matcher_count;  // may be 0 (everything gets the fallback)
  uint32_t reserved;       // 0
};
static_assert(sizeof(ClassifierRecord) == 24);

enum ClassifierMatcherKind : uint32_t {
  kMatchExact = 0,   // string raw field: the value equals `text` byte for byte
  kMatchPrefix = 1,  // string raw field: the value starts with `text` (non-empty)
  kMatchInt = 2,     // int raw field: the value equals lo (== hi): one value of an `in` row
  kMatchRange = 3,   // int raw field: lo <= value <= hi (lo <= hi)
};

struct ClassifierMatcher {
  uint32_t kind;      // ClassifierMatcherKind
  uint32_t cls;       // class index, < the field's enum value count
  uint32_t row;       // the policy row it belongs to (non-decreasing within a classifier)
  uint32_t reserved;  // 0
  StrRef text;        // kMatchExact, kMatchPrefix; {0, 0} otherwise
  int64_t lo;         // kMatchInt, kMatchRange; 0 otherwise
  int64_t hi;
};
static_assert(sizeof(ClassifierMatcher) == 40);

struct ProvenanceHeader {
  uint32_t line_count;  // == catalog_count
  uint32_t name_length;
  uint32_t digest_length;
  uint32_t reserved;
  // then u32 line[line_count] (0 = unknown), name bytes, digest bytes
};
static_assert(sizeof(ProvenanceHeader) == 16);

// The signed envelope (docs/signing.md): a signed table is this 128-byte header followed by the
// table's bytes exactly as compile writes them (the payload, a whole unsigned table). The runtime's
// own loader recognises the magic only to refuse it with a pointer to replaygate::verify
// (runtime/verify/), which checks the signature before it reads anything in the payload:
// Ed25519ph (libsodium crypto_sign_init/update/final_verify) over kSignedDomain, then the
// envelope's first kSignedSignatureOffset bytes, then the payload. One algorithm, one version.
inline constexpr char kSignedMagic[8] = {'R', 'G', 'S', 'I', 'G', 'N', 'E', 'D'};
inline constexpr uint16_t kSignedVersion = 1;
// The domain tag, 32 bytes with its trailing NULs: a signature over a table can never be taken
// for one over anything else the same key signs (an audit checkpoint has its own tag).
inline constexpr char kSignedDomain[32] = "replaygate signed table v1";

struct SignedEnvelope {
  char magic[8];          // kSignedMagic
  uint16_t version;       // kSignedVersion
  uint16_t header_size;   // sizeof(SignedEnvelope); the payload starts here
  uint32_t flags;         // 0 (reserved: a loader refuses any bit)
  uint64_t payload_size;  // the table's bytes; the file is exactly header_size + payload_size
  int64_t expires_at;     // Unix seconds (UTC) after which the table is refused; 0: never
  uint8_t key_id[16];     // which pinned key signed it (keys.h: BLAKE2b-128 of the public key)
  uint64_t reserved[2];   // 0, 0
  uint8_t signature[64];  // Ed25519ph over kSignedDomain, bytes [0, 64) of this header, payload
};
static_assert(sizeof(SignedEnvelope) == 128);
inline constexpr size_t kSignedSignatureOffset = offsetof(SignedEnvelope, signature);
static_assert(kSignedSignatureOffset == 64);

// Hash of the concrete key atoms of a table row or an input under `mask` (bit k = key k).
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
inline uint64_t key_tuple_hash(const uint32_t* key_atoms, uint32_t key_count, uint32_t mask) {
  uint64_t h = mix64(0x9E3779B97F4A7C15ULL ^ mask);
  for (uint32_t k = 0; k < key_count; ++k) {
    if ((mask >> k) & 1u) h = mix64(h ^ ((uint64_t{k} << 32) | key_atoms[k]));
  }
  return h;
}

inline constexpr size_t align_up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

}  // namespace replaygate::format
