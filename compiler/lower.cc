// Lowering: turns a checked policy into frozen decision-table bytes (runtime/table_format.h).
//
// The one entry point is lower(). It partitions the input space (compiler/analysis/partition.h),
// writes each section into its own byte buffer in a fixed order, then lays the sections out behind
// the header and seals the file with the decision digest, the provenance digest and the checksum.
// Everything iterates vectors in IR order or sorted order, so the output is byte-identical for the
// same CheckedPolicy on every run and machine.
#include "compiler/lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "compiler/analysis/partition.h"
#include "compiler/key_text.h"
#include "runtime/quoted.h"
#include "runtime/table_format.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace replaygate {
namespace {

namespace fmtx = replaygate::format;

// An append-only little-endian byte buffer for one section.
class Section {
 public:
  template <typename T>
  void put(const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_bytes(std::string_view s) { bytes_.insert(bytes_.end(), s.begin(), s.end()); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<uint8_t> bytes_;
};

// The string pool with exact-bytes deduplication; offsets follow first use, so they are
// deterministic.
class StringPool {
 public:
  fmtx::StrRef add(const std::string& s) {
    auto it = offsets_.find(s);
    if (it == offsets_.end()) {
      it = offsets_.emplace(s, static_cast<uint32_t>(section_.size())).first;
      section_.put_bytes(s);
    }
    return {it->second, static_cast<uint32_t>(s.size())};
  }
  const Section& section() const { return section_; }

 private:
  std::map<std::string, uint32_t> offsets_;
  Section section_;
};

uint32_t slot_count_for(size_t entries) {
  if (entries == 0) return 0;
  return static_cast<uint32_t>(std::bit_ceil(entries * 2));
}

std::string value_text(const ir::Value& v, ir::FieldType type) {
  switch (v.kind) {
    case ir::Value::Kind::kString:
      return type == ir::FieldType::kEnum ? v.str : quoted_bytes(v.str);
    case ir::Value::Kind::kInt:
      return fmt::format("{}", v.i);
    case ir::Value::Kind::kBool:
      return v.b ? "true" : "false";
  }
  return "?";
}

// The operand as the author wrote it, for dump: "max_attempts (3)", "\"a\"", "[\"a\", \"b\"]".
std::string condition_text(const ir::Condition& c, ir::FieldType type) {
  if (c.op == ir::Op::kAbsent || c.op == ir::Op::kPresent) return "";
  if (!c.constant.empty() && c.values.size() == 1) {
    return fmt::format("{} ({})", c.constant, value_text(c.values[0], type));
  }
  if (c.op == ir::Op::kIn || c.op == ir::Op::kNotIn) {
    std::string out = "[";
    for (size_t i = 0; i < c.values.size(); ++i) {
      if (i) out += ", ";
      out += value_text(c.values[i], type);
    }
    return out + "]";
  }
  return c.values.empty() ? "" : value_text(c.values[0], type);
}

uint8_t type_code(ir::FieldType t) { return static_cast<uint8_t>(t); }
static_assert(static_cast<uint8_t>(ir::InputSource::kLetter) == fmtx::kSourceLetter &&
              static_cast<uint8_t>(ir::InputSource::kOperator) == fmtx::kSourceOperator &&
              static_cast<uint8_t>(ir::InputSource::kRecord) == fmtx::kSourceRecord);

void put_digest(uint8_t out[16], XXH128_hash_t h) {
  std::memcpy(out, &h.low64, 8);
  std::memcpy(out + 8, &h.high64, 8);
}

struct Lowering {
  const ir::CheckedPolicy& checked;
  const ir::Policy& policy;
  Partition partition;
  std::vector<ir::CatalogEntry> catalog;
  StringPool pool;
  std::array<Section, fmtx::kMaxSectionCount + 1> sections;  // indexed by kind; [0] unused
  uint32_t section_count = fmtx::kSectionCount;

  Section& sec(fmtx::SectionKind kind) { return sections[kind]; }

  void write_meta() {
    fmtx::MetaRecord m{};
    m.policy_id = pool.add(policy.id);
    m.revision = policy.revision;
    m.description = pool.add(policy.description);
    m.default_reason = pool.add(policy.default_reason);
    m.default_verb = policy.default_verb;
    m.field_count = static_cast<uint32_t>(policy.fields.size());
    m.verb_count = static_cast<uint32_t>(policy.verbs.size());
    m.rule_count = static_cast<uint32_t>(policy.rules.size());
    m.catalog_count = static_cast<uint32_t>(catalog.size());
    sec(fmtx::kMeta).put(m);
  }

  void write_fields() {
    uint32_t dict_next = 0, slot_next = 0, cut_next = 0;
    for (size_t f = 0; f < policy.fields.size(); ++f) {
      const ir::Field& field = policy.fields[f];
      const FieldPartition& part = partition.fields[f];
      fmtx::FieldRecord r{};
      r.name = pool.add(field.name);
      r.invalid_reason = pool.add("invalid input: " + field.name);
      r.type = type_code(field.type);
      r.optional = field.optional ? 1 : 0;
      r.empty_means_absent =
          field.type == ir::FieldType::kString && field.empty_means_absent ? 1 : 0;
      r.source = static_cast<uint8_t>(field.source);  // fmtx::FieldSourceCode, same values
      r.idempotency_key = field.idempotency_key ? 1 : 0;
      if (field.type == ir::FieldType::kInt) {
        r.has_min = field.min.has_value();
        r.has_max = field.max.has_value();
        r.min = field.min.value_or(0);
        r.max = field.max.value_or(0);
      }
      r.atom_count = part.atom_count;
      if (field.type == ir::FieldType::kString || field.type == ir::FieldType::kEnum) {
        uint32_t first_atom = field.type == ir::FieldType::kString ? 2 : 1;
        std::vector<uint64_t> hashes;
        for (const std::string& s : part.strings) {
          uint64_t h = XXH3_64bits_withSeed(s.data(), s.size(), fmtx::kStringHashSeed);
          hashes.push_back(h);
          sec(fmtx::kDictEntries).put(fmtx::DictEntry{h, pool.add(s)});
        }
        uint32_t slots = slot_count_for(part.strings.size());
        std::vector<uint32_t> table(slots, 0);
        for (size_t i = 0; i < hashes.size(); ++i) {
          size_t at = hashes[i] & (slots - 1);
          while (table[at] != 0) at = (at + 1) & (slots - 1);
          table[at] = first_atom + static_cast<uint32_t>(i);
        }
        for (uint32_t atom : table) sec(fmtx::kDictSlots).put(atom);
        r.dict_begin = dict_next;
        r.dict_count = static_cast<uint32_t>(part.strings.size());
        r.slot_begin = slot_next;
        r.slot_count = slots;
        dict_next += r.dict_count;
        slot_next += slots;
      }
      if (field.type == ir::FieldType::kInt) {
        for (int64_t cut : part.cuts) sec(fmtx::kCuts).put(cut);
        r.cut_begin = cut_next;
        r.cut_count = static_cast<uint32_t>(part.cuts.size());
        cut_next += r.cut_count;
      }
      sec(fmtx::kFields).put(r);
    }
  }

  void write_verbs() {
    for (const ir::Verb& v : policy.verbs) {
      fmtx::VerbRecord r{};
      r.name = pool.add(v.name);
      r.description = pool.add(v.description);
      r.effect = static_cast<uint32_t>(v.effect);
      sec(fmtx::kVerbs).put(r);
    }
  }

  void write_rules() {
    uint32_t catalog_next = 0, cond_next = 0, bits_next = 0, key_next = 0, mask_next = 0,
             slot_next = 0, row_key_next = 0;
    for (uint32_t ri = 0; ri < policy.rules.size(); ++ri) {
      fmtx::RuleRecord r{};
      r.catalog_begin = catalog_next;
      if (const auto* guard = std::get_if<ir::Guard>(&policy.rules[ri])) {
        r.id = pool.add(guard->id);
        r.kind = fmtx::kRuleGuard;
        r.catalog_count = 1;
        r.item_begin = cond_next;
        r.item_count = static_cast<uint32_t>(guard->conditions.size());
        for (const ir::Condition& c : guard->conditions) {
          const FieldPartition& part = partition.fields[c.field];
          uint32_t words = (part.atom_count + 63) / 64;
          std::vector<uint64_t> bits(words, 0);
          for (uint32_t atom : condition_atoms(part, c))
            bits[atom / 64] |= uint64_t{1} << (atom % 64);
          for (uint64_t w : bits) sec(fmtx::kBitsets).put(w);
          fmtx::ConditionRecord cr{};
          cr.field = c.field;
          cr.op = static_cast<uint32_t>(c.op);
          cr.bits_begin = bits_next;
          cr.bits_count = words;
          cr.text = pool.add(condition_text(c, policy.fields[c.field].type));
          sec(fmtx::kConditions).put(cr);
          bits_next += words;
          ++cond_next;
        }
        write_catalog_entry(ri, 0, guard->id, guard->reason, guard->verb);
        ++catalog_next;
      } else {
        const auto& table = std::get<ir::Table>(policy.rules[ri]);
        const uint32_t keys = static_cast<uint32_t>(table.key_fields.size());
        r.id = pool.add(table.id);
        r.kind = fmtx::kRuleTable;
        r.catalog_count = static_cast<uint32_t>(table.rows.size());
        r.item_begin = key_next;
        r.item_count = keys;
        for (uint32_t f : table.key_fields) sec(fmtx::kTableKeys).put(f);
        key_next += keys;
        r.row_key_begin = row_key_next;
        // Row keys as atoms, and the set of masks in use.
        // Flat, `keys` atoms per row: one allocation instead of one per row.
        std::vector<uint32_t> row_atoms;
        row_atoms.reserve(table.rows.size() * keys);
        const auto atoms_of_row = [&](size_t row) { return row_atoms.data() + row * keys; };
        std::vector<uint32_t> row_mask(table.rows.size(), 0);
        for (size_t row = 0; row < table.rows.size(); ++row) {
          for (uint32_t k = 0; k < keys; ++k) {
            const auto& key = table.rows[row].keys[k];
            uint32_t atom = fmtx::kWildcard;
            if (key) {
              atom = partition.fields[table.key_fields[k]].atom_of(*key);
              row_mask[row] |= 1u << k;
            }
            row_atoms.push_back(atom);
            sec(fmtx::kRowKeys).put(atom);
          }
          row_key_next += keys;
        }
        std::vector<uint32_t> masks = row_mask;
        std::sort(masks.begin(), masks.end(), [](uint32_t a, uint32_t b) {
          int ca = std::popcount(a), cb = std::popcount(b);
          return ca != cb ? ca > cb : a < b;
        });
        masks.erase(std::unique(masks.begin(), masks.end()), masks.end());
        r.mask_begin = mask_next;
        r.mask_count = static_cast<uint32_t>(masks.size());
        for (uint32_t mask : masks) {
          std::vector<uint32_t> members;
          for (uint32_t row = 0; row < table.rows.size(); ++row) {
            if (row_mask[row] == mask) members.push_back(row);
          }
          uint32_t slots = slot_count_for(members.size());
          std::vector<uint32_t> index(slots, 0);
          for (uint32_t row : members) {
            size_t at = fmtx::key_tuple_hash(atoms_of_row(row), keys, mask) & (slots - 1);
            bool duplicate = false;
            while (index[at] != 0) {
              if (std::equal(atoms_of_row(index[at] - 1), atoms_of_row(index[at] - 1) + keys,
                             atoms_of_row(row))) {
                duplicate = true;
              }
              at = (at + 1) & (slots - 1);
            }
            if (!duplicate) index[at] = row + 1;  // a repeated key tuple: the earlier row wins
          }
          for (uint32_t v : index) sec(fmtx::kRowSlots).put(v);
          sec(fmtx::kMasks)
              .put(fmtx::MaskRecord{mask, static_cast<uint32_t>(std::popcount(mask)), slot_next,
                                    slots});
          slot_next += slots;
          ++mask_next;
        }
        for (uint32_t row = 0; row < table.rows.size(); ++row) {
          write_catalog_entry(ri, row, table.rows[row].id, effective_row_reason(table, row),
                              table.rows[row].verb);
        }
        catalog_next += r.catalog_count;
      }
      sec(fmtx::kRules).put(r);
    }
  }

  void write_catalog_entry(uint32_t rule, uint32_t row, const std::string& id,
                           const std::string& reason, uint32_t verb) {
    fmtx::CatalogRecord c{};
    c.id = pool.add(id);
    c.reason = pool.add(reason);
    c.verb = verb;
    c.rule = rule;
    c.row = row;
    sec(fmtx::kCatalog).put(c);
  }

  uint32_t source_line(const ir::CatalogEntry& e) const {
    const ir::SourceMap& src = checked.source;
    if (std::holds_alternative<ir::Table>(policy.rules[e.rule])) {
      if (e.rule < src.rows.size() && e.row < src.rows[e.rule].size()) {
        return src.rows[e.rule][e.row].line;
      }
    }
    if (e.rule < src.rules.size()) return src.rules[e.rule].line;
    return 0;
  }

  // Only a policy with derived fields gets the kDerivations section (and section_count 17).
  void write_derivations() {
    for (uint32_t f = 0; f < policy.fields.size(); ++f) {
      const auto& d = policy.fields[f].derived;
      if (!d) continue;
      sec(fmtx::kDerivations)
          .put(fmtx::DerivationRecord{f, static_cast<uint32_t>(d->op), d->lhs, d->rhs});
      section_count = fmtx::kDerivationsSectionCount;
    }
  }

  // Only a policy with classified fields gets the kClassifiers section (and section_count 18,
  // with a kDerivations section that may be empty). Each `in` value is a matcher of its own.
  void write_classifiers() {
    std::vector<fmtx::ClassifierRecord> records;
    std::vector<fmtx::ClassifierMatcher> matchers;
    for (uint32_t f = 0; f < policy.fields.size(); ++f) {
      const auto& c = policy.fields[f].classify;
      if (!c) continue;
      fmtx::ClassifierRecord r{};
      r.field = f;
      r.raw = c->from;
      r.fallback = c->fallback;
      r.matcher_begin = static_cast<uint32_t>(matchers.size());
      for (uint32_t row = 0; row < c->rows.size(); ++row) {
        const ir::ClassifyRow& cr = c->rows[row];
        const auto matcher = [&](uint32_t kind) {
          fmtx::ClassifierMatcher m{};
          m.kind = kind;
          m.cls = cr.cls;
          m.row = row;
          return m;
        };
        if (cr.kind == ir::ClassifyRow::Kind::kRange) {
          fmtx::ClassifierMatcher m = matcher(fmtx::kMatchRange);
          m.lo = cr.values.at(0).i;
          m.hi = cr.values.at(1).i;
          matchers.push_back(m);
          continue;
        }
        for (const ir::Value& v : cr.values) {
          const bool is_int = v.kind == ir::Value::Kind::kInt;
          fmtx::ClassifierMatcher m =
              matcher(is_int                                      ? fmtx::kMatchInt
                      : cr.kind == ir::ClassifyRow::Kind::kPrefix ? fmtx::kMatchPrefix
                                                                  : fmtx::kMatchExact);
          if (is_int) {
            m.lo = m.hi = v.i;
          } else {
            m.text = pool.add(v.str);
          }
          matchers.push_back(m);
        }
      }
      r.matcher_count = static_cast<uint32_t>(matchers.size()) - r.matcher_begin;
      records.push_back(r);
    }
    if (records.empty()) return;
    Section& s = sec(fmtx::kClassifiers);
    s.put(fmtx::ClassifierHeader{static_cast<uint32_t>(records.size()),
                                 static_cast<uint32_t>(matchers.size())});
    for (const auto& r : records) s.put(r);
    for (const auto& m : matchers) s.put(m);
    section_count = fmtx::kMaxSectionCount;
  }

  void write_provenance() {
    Section& s = sec(fmtx::kProvenance);
    fmtx::ProvenanceHeader h{};
    h.line_count = static_cast<uint32_t>(catalog.size());
    h.name_length = static_cast<uint32_t>(checked.source_base_name.size());
    h.digest_length = static_cast<uint32_t>(checked.source_digest.size());
    s.put(h);
    for (const auto& e : catalog) s.put(source_line(e));
    s.put_bytes(checked.source_base_name);
    s.put_bytes(checked.source_digest);
  }

  std::vector<uint8_t> assemble() {
    sections[fmtx::kStrings] = pool.section();
    const size_t directory = sizeof(fmtx::Header);
    size_t offset = fmtx::align_up(directory + section_count * sizeof(fmtx::SectionEntry));
    std::vector<fmtx::SectionEntry> entries;
    for (uint32_t kind = 1; kind <= section_count; ++kind) {
      entries.push_back({kind, 0, offset, sections[kind].size()});
      offset = fmtx::align_up(offset + sections[kind].size());
    }
    std::vector<uint8_t> out(offset, 0);
    fmtx::Header h{};
    std::memcpy(h.magic, fmtx::kMagic, sizeof(h.magic));
    h.version = fmtx::kVersion;
    h.header_size = sizeof(fmtx::Header);
    // The flags make a loader that predates operator-only (record-only) fields refuse the table.
    h.flags = 0;
    for (const ir::Field& f : policy.fields) {
      if (f.source == ir::InputSource::kOperator) h.flags |= fmtx::kFlagOperatorFields;
      if (f.source == ir::InputSource::kRecord) h.flags |= fmtx::kFlagRecordFields;
    }
    h.total_size = out.size();
    h.section_count = section_count;

    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    for (const auto& e : entries) {
      const auto& bytes = sections[e.kind].bytes();
      if (!bytes.empty()) std::memcpy(out.data() + e.offset, bytes.data(), bytes.size());
      if (e.kind == fmtx::kProvenance) continue;
      uint32_t kind = e.kind;
      uint64_t length = e.length;
      XXH3_128bits_update(&state, &kind, sizeof(kind));
      XXH3_128bits_update(&state, &length, sizeof(length));
      XXH3_128bits_update(&state, bytes.data(), bytes.size());
    }
    put_digest(h.decision_digest, XXH3_128bits_digest(&state));
    const auto& prov = sections[fmtx::kProvenance].bytes();
    put_digest(h.provenance_digest, XXH3_128bits(prov.data(), prov.size()));
    std::memcpy(out.data(), &h, sizeof(h));
    std::memcpy(out.data() + directory, entries.data(),
                entries.size() * sizeof(fmtx::SectionEntry));
    // Checksum field is still zero here, which is exactly what the definition hashes.
    put_digest(h.checksum, XXH3_128bits(out.data(), out.size()));
    std::memcpy(out.data(), &h, sizeof(h));
    return out;
  }
};

}  // namespace

std::string effective_row_reason(const ir::Table& table, size_t row) {
  const ir::Row& r = table.rows.at(row);
  if (!r.reason.empty()) return r.reason;
  std::string keys;
  for (size_t k = 0; k < r.keys.size(); ++k) {
    if (k) keys += '/';
    keys += ir::key_text(r.keys[k]);
  }
  return fmt::format("table {} row {}", table.id, keys);
}

std::vector<uint8_t> lower(const ir::CheckedPolicy& checked) {
  Lowering l{checked,
             checked.policy,
             partition_policy(checked.policy),
             ir::rule_catalog(checked.policy),
             {},
             {}};
  l.write_meta();
  l.write_fields();
  l.write_verbs();
  l.write_rules();
  l.write_provenance();
  l.write_derivations();
  l.write_classifiers();
  return l.assemble();
}

}  // namespace replaygate
