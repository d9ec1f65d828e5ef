// A loaded table's accessors, its dump, and Input. Loading and verifying: runtime/load.cc.
#include "runtime/table.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/internal/table_hash.h"
#include "runtime/internal/table_impl.h"
#include "runtime/quoted.h"
#include "runtime/table_format.h"

namespace replaygate {
namespace {

namespace fm = replaygate::format;
using detail::hex128;

std::string num(uint64_t v) { return std::to_string(v); }

}  // namespace

const char* field_source_name(FieldSource source) {
  switch (source) {
    case FieldSource::kLetter:
      return "letter";
    case FieldSource::kOperator:
      return "operator";
    case FieldSource::kRecord:
      return "record";
  }
  return "?";
}

Table::Table(std::unique_ptr<Impl> impl) : impl_(std::move(impl)), decide_(impl_->fast.entry) {}
Table::~Table() = default;

std::string_view Table::policy_id() const noexcept { return impl_->policy_id; }
int64_t Table::revision() const noexcept { return impl_->revision; }
std::string_view Table::description() const noexcept { return impl_->description; }
std::string Table::checksum_hex() const { return hex128(impl_->header.checksum); }
std::string Table::decision_digest_hex() const { return hex128(impl_->header.decision_digest); }
std::string Table::provenance_digest_hex() const { return hex128(impl_->header.provenance_digest); }
uint16_t Table::format_version() const noexcept { return impl_->header.version; }

uint32_t Table::field_count() const noexcept { return static_cast<uint32_t>(impl_->fields.size()); }
uint32_t Table::field_index(std::string_view name) const noexcept {
  for (uint32_t f = 0; f < impl_->fields.size(); ++f) {
    if (impl_->fields[f].name == name) return f;
  }
  return kNoField;
}
FieldInfo Table::field(uint32_t index) const noexcept {
  if (index >= impl_->fields.size()) {
    return FieldInfo{{},    FieldType::kString,  false, false, false, false, 0, 0,
                     false, FieldSource::kLetter};
  }
  const Impl::Field& f = impl_->fields[index];
  return FieldInfo{f.name,
                   f.type,
                   f.optional,
                   f.empty_means_absent,
                   f.has_min,
                   f.has_max,
                   f.min,
                   f.max,
                   f.source == FieldSource::kOperator,
                   f.source};
}

uint32_t Table::idempotency_key_field() const noexcept { return impl_->idempotency_key_field; }

bool Table::field_derived(uint32_t index) const noexcept {
  return index < impl_->fields.size() && impl_->fields[index].derived;
}

uint32_t Table::verb_count() const noexcept { return static_cast<uint32_t>(impl_->verbs.size()); }
std::string_view Table::verb_name(uint32_t verb) const noexcept {
  return verb < impl_->verbs.size() ? impl_->verbs[verb].name : std::string_view();
}
Effect Table::verb_effect(uint32_t verb) const noexcept {
  return verb < impl_->verbs.size() ? impl_->verbs[verb].effect : Effect::kNone;
}
std::string_view Table::verb_description(uint32_t verb) const noexcept {
  return verb < impl_->verbs.size() ? impl_->verbs[verb].description : std::string_view();
}
uint32_t Table::verb_index(std::string_view name) const noexcept {
  for (uint32_t v = 0; v < impl_->verbs.size(); ++v) {
    if (impl_->verbs[v].name == name) return v;
  }
  return kNoField;
}
uint32_t Table::default_verb() const noexcept { return impl_->default_verb; }
std::string_view Table::default_reason() const noexcept { return impl_->default_reason; }

uint32_t Table::rule_count() const noexcept { return static_cast<uint32_t>(impl_->catalog.size()); }
std::string_view Table::rule_id(uint32_t rule) const noexcept {
  return rule < impl_->catalog.size() ? impl_->catalog_id(rule) : std::string_view();
}
std::string_view Table::rule_reason(uint32_t rule) const noexcept {
  return rule < impl_->catalog.size() ? impl_->catalog_reason(rule) : std::string_view();
}
uint32_t Table::rule_verb(uint32_t rule) const noexcept {
  return rule < impl_->catalog.size() ? impl_->catalog[rule].verb : impl_->default_verb;
}
uint32_t Table::rule_source_line(uint32_t rule) const noexcept {
  return rule < impl_->source_lines.size() ? impl_->source_lines[rule] : 0;
}
std::string_view Table::source_name() const noexcept { return impl_->source_name; }
std::string_view Table::source_digest() const noexcept { return impl_->source_digest; }

std::string_view Table::rule_name(const Decision& d) const noexcept {
  if (d.kind == DecisionKind::kRule && d.rule < impl_->catalog.size()) {
    return impl_->catalog_id(d.rule);
  }
  return "default";
}

std::string_view Table::reason(const Decision& d) const noexcept {
  switch (d.kind) {
    case DecisionKind::kRule:
      return rule_reason(d.rule);
    case DecisionKind::kInvalidInput:
      return d.invalid_field < impl_->fields.size() ? impl_->fields[d.invalid_field].invalid_reason
                                                    : std::string_view("invalid input");
    case DecisionKind::kDefault:
      break;
  }
  return impl_->default_reason;
}

std::string Table::atom_label(uint32_t field, uint32_t atom) const {
  if (field >= impl_->fields.size()) return "?";
  const Impl::Field& f = impl_->fields[field];
  if (atom >= f.atom_count) return "?";
  if (atom == 0) return "absent";
  switch (f.type) {
    case FieldType::kString:
      if (atom == 1) return "<other>";
      return quoted_bytes(impl_->dict[f.dict_begin + atom - 2].bytes);
    case FieldType::kEnum:
      return std::string(impl_->dict[f.dict_begin + atom - 1].bytes);
    case FieldType::kBool:
      return atom == 2 ? "true" : "false";
    case FieldType::kInt: {
      const size_t k = atom - 1;
      std::string lo = k == 0 ? "-inf" : std::to_string(impl_->cuts[f.cut_begin + k - 1]);
      std::string hi = k == f.cut_count ? "+inf" : std::to_string(impl_->cuts[f.cut_begin + k]);
      return "[" + lo + ", " + hi + ")";
    }
  }
  return "?";
}

std::string Table::dump() const {
  const Impl& t = *impl_;
  std::string out;
  auto line = [&out](const std::string& s) { out += s + "\n"; };
  line("replaygate table, format version " + num(t.header.version));
  line("  size: " + num(t.header.total_size) + " bytes");
  line("  checksum: " + checksum_hex());
  line("  decision digest: " + decision_digest_hex());
  line("  provenance digest: " + provenance_digest_hex());
  line("policy: " + quoted_bytes(t.policy_id));
  line("revision: " + std::to_string(t.revision));
  line("description: " + quoted_bytes(t.description));
  line("default: " + std::string(verb_name(t.default_verb)) + ", reason " +
       quoted_bytes(t.default_reason));
  line("fields: " + num(t.fields.size()));
  for (uint32_t f = 0; f < t.fields.size(); ++f) {
    const Impl::Field& field = t.fields[f];
    std::string s = "  #" + num(f) + " " + std::string(field.name) + ": " +
                    field_type_name(field.type) + (field.optional ? ", optional" : ", required");
    if (field.empty_means_absent) s += ", empty means absent";
    if (field.has_min) s += ", min " + std::to_string(field.min);
    if (field.has_max) s += ", max " + std::to_string(field.max);
    for (const fm::DerivationRecord& d : t.derivations) {
      if (d.field == f) {
        s += ", derived " + std::string(t.fields[d.lhs].name) + " " + op_code_name(d.op) + " " +
             std::string(t.fields[d.rhs].name);
      }
    }
    const fm::ClassifierRecord* classifier = nullptr;
    for (const fm::ClassifierRecord& c : t.classifiers) {
      if (c.field == f) classifier = &c;
    }
    if (classifier != nullptr) {
      s += ", classified from " + std::string(t.fields[classifier->raw].name) + ", fallback " +
           atom_label(f, 1 + classifier->fallback);
    }
    if (field.source == FieldSource::kOperator) s += ", set by an operator only";
    if (field.source == FieldSource::kRecord) s += ", read from the operation record only";
    if (f == t.idempotency_key_field) s += ", idempotency key";
    line(s);
    std::string atoms = "      atoms:";
    for (uint32_t a = field.optional ? 0 : 1; a < field.atom_count; ++a) {
      atoms += (a == (field.optional ? 0u : 1u) ? " " : ", ") + num(a) + " " + atom_label(f, a);
    }
    line(atoms);
    for (uint32_t m = 0; classifier != nullptr && m < classifier->matcher_count; ++m) {
      const fm::ClassifierMatcher& x = t.classifier_matchers[classifier->matcher_begin + m];
      std::string what;
      switch (x.kind) {
        case fm::kMatchExact:
          what = "exact " + quoted_bytes(t.str(x.text));
          break;
        case fm::kMatchPrefix:
          what = "prefix " + quoted_bytes(t.str(x.text));
          break;
        case fm::kMatchInt:
          what = "int " + std::to_string(x.lo);
          break;
        default:
          what = "range " + std::to_string(x.lo) + ".." + std::to_string(x.hi);
          break;
      }
      line("      classify row " + num(x.row) + ": " + what + " -> " + atom_label(f, 1 + x.cls));
    }
  }
  line("verbs: " + num(t.verbs.size()));
  for (uint32_t v = 0; v < t.verbs.size(); ++v) {
    line("  #" + num(v) + " " + std::string(t.verbs[v].name) + " (effect " +
         effect_name(t.verbs[v].effect) + "): " + std::string(t.verbs[v].description));
  }
  line("rules: " + num(t.rules.size()) + ", catalog entries: " + num(t.catalog.size()));
  auto entry_text = [&](uint32_t c, const std::string& keys) {
    const fm::CatalogRecord& e = t.catalog[c];
    return "[" + num(c) + "] " + std::string(t.catalog_id(c)) + keys + " -> " +
           std::string(verb_name(e.verb)) + ", reason " + quoted_bytes(t.catalog_reason(c)) +
           ", line " + num(rule_source_line(c));
  };
  // A row key: "*", or the atom's label, with a one-value int interval shown as the value.
  auto key_label = [&](uint32_t field, uint32_t atom) {
    if (atom == fm::kWildcard) return std::string("*");
    const Impl::Field& f = t.fields[field];
    if (f.type == FieldType::kInt && atom >= 2 && atom - 1 < f.cut_count) {
      int64_t lo = t.cuts[f.cut_begin + atom - 2];
      if (lo != INT64_MAX && t.cuts[f.cut_begin + atom - 1] == lo + 1) return std::to_string(lo);
    }
    return atom_label(field, atom);
  };
  for (const Impl::Rule& rule : t.rules) {
    if (!rule.is_table) {
      line("  guard " + entry_text(rule.catalog_begin, ""));
      for (uint32_t c = 0; c < rule.item_count; ++c) {
        const Impl::Condition& cond = t.conditions[rule.item_begin + c];
        std::string s =
            "    when " + std::string(t.fields[cond.field].name) + " " + op_code_name(cond.op);
        if (!cond.text.empty()) s += " " + std::string(cond.text);
        s += "  atoms {";
        bool first = true;
        for (uint32_t a = 0; a < t.fields[cond.field].atom_count; ++a) {
          if ((t.bitsets[cond.bits_begin + a / 64] >> (a % 64)) & 1u) {
            s += (first ? "" : ", ") + atom_label(cond.field, a);
            first = false;
          }
        }
        line(s + "}");
      }
      continue;
    }
    std::string keys;
    for (uint32_t k = 0; k < rule.item_count; ++k) {
      keys += (k ? ", " : "") + std::string(t.fields[t.table_keys[rule.item_begin + k]].name);
    }
    line("  table " + std::string(rule.id) + " keys (" + keys + "), rows " +
         num(rule.catalog_count));
    for (uint32_t m = 0; m < rule.mask_count; ++m) {
      const fm::MaskRecord& mask = t.masks[rule.mask_begin + m];
      std::string pattern;
      for (uint32_t k = 0; k < rule.item_count; ++k) pattern += (mask.mask >> k) & 1u ? 'K' : '*';
      uint32_t used = 0;
      for (uint32_t s = 0; s < mask.slot_count; ++s) used += t.row_slots[mask.slot_begin + s] != 0;
      line("    mask " + pattern + ": " + num(mask.concrete_count) + " concrete, " + num(used) +
           (used == 1 ? " row in " : " rows in ") + num(mask.slot_count) +
           (mask.slot_count == 1 ? " slot" : " slots"));
    }
    for (uint32_t row = 0; row < rule.catalog_count; ++row) {
      std::string keys = " (";
      for (uint32_t k = 0; k < rule.item_count; ++k) {
        uint32_t atom = t.row_keys[rule.row_key_begin + row * rule.item_count + k];
        keys += (k ? ", " : "") + key_label(t.table_keys[rule.item_begin + k], atom);
      }
      line("    row " + entry_text(rule.catalog_begin + row, keys + ")"));
    }
  }
  line("provenance:");
  line("  source: " + quoted_bytes(t.source_name));
  line("  source digest: " + quoted_bytes(t.source_digest));
  return out;
}

Input::Input(const Table& table) : size_(table.field_count()) {
  if (size_ > kInlineFields) {
    const size_t padded = (size_t{size_} + 7) / 8 * 8;
    heap_cells_ = std::make_unique<Cell[]>(size_);
    heap_states_ = std::make_unique<uint8_t[]>(padded);  // value-initialized: every field unset
  }
  point_at_storage();
}

void Input::point_at_storage() noexcept {
  if (size_ > kInlineFields) {
    cells_ = heap_cells_.get();
    states_ = heap_states_.get();
  } else {
    cells_ = inline_cells_;
    states_ = inline_states_;
  }
}

void Input::copy_from(const Input& other) {
  const size_t padded = (size_t{other.size_} + 7) / 8 * 8;
  if (other.size_ > kInlineFields) {
    if (size_ != other.size_) {
      heap_cells_ = std::make_unique<Cell[]>(other.size_);
      heap_states_ = std::make_unique<uint8_t[]>(padded);
    }
  } else {
    heap_cells_.reset();
    heap_states_.reset();
  }
  size_ = other.size_;
  point_at_storage();
  std::copy(other.cells_, other.cells_ + size_, cells_);
  std::copy(other.states_, other.states_ + (size_ > kInlineFields ? padded : kInlineFields),
            states_);
}

Input::Input(const Input& other) { copy_from(other); }

Input& Input::operator=(const Input& other) {
  if (this != &other) copy_from(other);
  return *this;
}

Input::Input(Input&& other) noexcept
    : size_(other.size_),
      heap_cells_(std::move(other.heap_cells_)),
      heap_states_(std::move(other.heap_states_)) {
  std::copy(other.inline_states_, other.inline_states_ + kInlineFields, inline_states_);
  std::copy(other.inline_cells_, other.inline_cells_ + kInlineFields, inline_cells_);
  point_at_storage();
  other.size_ = 0;  // a moved-from Input has no fields: every setter ignores its index
  other.point_at_storage();
}

Input& Input::operator=(Input&& other) noexcept {
  if (this == &other) return *this;
  size_ = other.size_;
  heap_cells_ = std::move(other.heap_cells_);
  heap_states_ = std::move(other.heap_states_);
  std::copy(other.inline_states_, other.inline_states_ + kInlineFields, inline_states_);
  std::copy(other.inline_cells_, other.inline_cells_ + kInlineFields, inline_cells_);
  point_at_storage();
  other.size_ = 0;
  other.point_at_storage();
  return *this;
}

void Input::clear_heap() noexcept {
  std::fill(cells_, cells_ + size_, Cell{});
  std::fill(states_, states_ + (size_t{size_} + 7) / 8 * 8, uint8_t{0});
}

}  // namespace replaygate
