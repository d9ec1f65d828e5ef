// Analysis stage: a checked policy in, RG2xx diagnostics out; the interface is analyze().
//
// Every guard and table row becomes a box over the partition's atoms
// (compiler/analysis/partition.h), restricted to the atoms a valid input can take. Then, in rule
// order:
//   RG201 a guard whose box is empty (a condition, or several together, never true);
//   RG205 a row whose keys never occur in a valid input ("" on an empty_means_absent field, ...);
//   RG203 a row with the same key tuple as an earlier row of its table;
//   RG204 two rows of one table, equally specific, different verbs, overlapping on inputs that no
//         more specific row decides;
//   RG202 a guard or row that no input reaches (usefulness, compiler/analysis/usefulness.h);
//   RG206 (warning) a '*' key on an optional field lets absent inputs reach a row whose verb
//         does something (effect above none);
//   RG207 (info) two crossing wildcard rows with different verbs overlap: which decides there;
//   RG209 (info) the work budget ran out, so some of the checks above were skipped.
// Rows are indexed by their key tuples (one hash index per table, wildcard pattern and key
// subset), so a table of exact rows costs a few hash lookups per row, never a pass over the table.
// Before the full usefulness search, each rule is probed at one point (the last uncovered tuple
// found); most rules are reachable and the probe shows it. A shadowed rule names a minimal subset
// of the overlapping earlier rules that still covers it.
#include "compiler/analysis/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compiler/analysis/classifiers.h"
#include "compiler/analysis/invariants.h"
#include "compiler/analysis/partition.h"
#include "compiler/analysis/usefulness.h"

namespace replaygate {
namespace {

constexpr uint32_t kWildcardAtom = std::numeric_limits<uint32_t>::max();
constexpr size_t kNamedShadowers = 3;
// Shadowed rules with more overlapping boxes than this name them all instead of a minimal cover.
constexpr size_t kMaxMinimizedShadowers = 32;
constexpr uint64_t kNamingBudget = 5'000'000;  // for the whole policy
constexpr size_t kMaxOverlapReports = 20;      // RG207 infos per policy

using Domains = std::vector<std::vector<uint32_t>>;

struct TupleHash {
  size_t operator()(const std::vector<uint32_t>& tuple) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the atoms: fixed, no seed
    for (uint32_t atom : tuple) {
      h ^= atom;
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};
using Buckets = std::unordered_map<std::vector<uint32_t>, std::vector<uint32_t>, TupleHash>;

struct RowInfo {
  Box box;
  std::vector<uint32_t> constrained;  // fields where `box` is not the whole domain
  bool never_true = false;
  bool duplicate = false;
  std::vector<uint32_t> tuple;  // per key position: the key's atom, or kWildcardAtom
  uint32_t mask = 0;            // bit p set: key position p is concrete
  int concrete = 0;             // number of concrete keys
};

// The rows of one table that share a wildcard pattern, with hash indexes on key subsets.
struct RowGroup {
  uint32_t mask = 0;
  int concrete = 0;
  std::vector<uint32_t> rows;                        // increasing row indices
  std::unordered_map<uint32_t, Buckets> by_submask;  // built on first use
};

struct TableInfo {
  std::vector<RowInfo> rows;
  std::vector<RowGroup> groups;  // by increasing mask
};

struct GuardInfo {
  Box box;
  std::vector<uint32_t> constrained;  // fields where `box` is not the whole domain
  bool never_true = false;
};

// An earlier guard or row that shares inputs with a candidate.
struct Hit {
  uint32_t rule = 0;
  uint32_t row = 0;
  const Box* box = nullptr;
};

// Which rows of a table may take inputs from a candidate.
struct RowFilter {
  int min_concrete = 0;     // groups with fewer concrete keys are skipped
  int tie_concrete = -1;    // rows with exactly this many concrete keys must come before...
  uint32_t tie_before = 0;  // ...this row index
};

// Whether a stored (non-empty) box meets a non-empty query box. Only the stored box's
// constrained fields can miss: elsewhere it holds the whole domain.
bool meets(const Box& stored, const std::vector<uint32_t>& constrained, const Box& query) {
  for (uint32_t f : constrained) {
    if (query[f].all) continue;
    const auto& a = stored[f].atoms;
    const auto& b = query[f].atoms;
    const auto& small = a.size() <= b.size() ? a : b;
    const auto& large = a.size() <= b.size() ? b : a;
    bool shared = false;
    for (uint32_t atom : small) {
      if (std::binary_search(large.begin(), large.end(), atom)) {
        shared = true;
        break;
      }
    }
    if (!shared) return false;
  }
  return true;
}

std::vector<uint32_t> constrained_fields(const Box& box) {
  std::vector<uint32_t> out;
  for (uint32_t f = 0; f < box.size(); ++f) {
    if (!box[f].all) out.push_back(f);
  }
  return out;
}

std::string quote_id(const std::string& id) { return fmt::format("'{}'", id); }

bool is_plain_scalar(const std::string& s) {
  static const char* const kKeywords[] = {"absent", "present", "true", "false", "null", "yes",
                                          "no",     "on",      "off",  "y",     "n",    "~"};
  if (s.empty()) return false;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-' || c == '/';
    if (!ok) return false;
  }
  for (const char* keyword : kKeywords) {
    if (s == keyword) return false;
  }
  return true;
}

std::string render_string(const std::string& s) {
  if (is_plain_scalar(s)) return s;
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string render_value(const ir::Value& value) {
  switch (value.kind) {
    case ir::Value::Kind::kInt:
      return fmt::format("{}", value.i);
    case ir::Value::Kind::kBool:
      return value.b ? "true" : "false";
    case ir::Value::Kind::kString:
      return render_string(value.str);
  }
  return "?";
}

std::string render_operand(const ir::Condition& c) {
  if (!c.constant.empty()) return c.constant;
  if (c.values.empty()) return "?";
  return render_value(c.values[0]);
}

std::string render_list(const ir::Condition& c) {
  std::string out = "[";
  for (size_t i = 0; i < c.values.size(); ++i) {
    if (i > 0) out += ", ";
    out += render_value(c.values[i]);
  }
  return out + "]";
}

// The condition as a policy author writes it: `attempts: {ge: max_attempts}`.
std::string render_condition(const ir::Policy& policy, const ir::Condition& c) {
  const std::string& field = policy.fields.at(c.field).name;
  switch (c.op) {
    case ir::Op::kAbsent:
      return fmt::format("`{}: absent`", field);
    case ir::Op::kPresent:
      return fmt::format("`{}: present`", field);
    case ir::Op::kEq:
      return fmt::format("`{}: {}`", field, render_operand(c));
    case ir::Op::kIn:
      return fmt::format("`{}: {}`", field, render_list(c));
    case ir::Op::kNotIn:
      return fmt::format("`{}: {{not_in: {}}}`", field, render_list(c));
    default:
      return fmt::format("`{}: {{{}: {}}}`", field, ir::op_name(c.op), render_operand(c));
  }
}

std::string render_tuple(const std::vector<std::optional<ir::Value>>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) out += ", ";
    out += keys[i] ? render_value(*keys[i]) : "'*'";
  }
  return out + "]";
}

// "'a'", "'a' and 'b'", "'a', 'b' and 'c'", "'a', 'b', 'c' and 4 more".
std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  size_t shown = std::min(names.size(), kNamedShadowers);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) out += (i + 1 == shown && names.size() == shown) ? " and " : ", ";
    out += quote_id(names[i]);
  }
  if (names.size() > shown) out += fmt::format(" and {} more", names.size() - shown);
  return out;
}

// " (line 12)", or "" when the position is unknown.
std::string line_note(const ir::Span& span) {
  return span.line == 0 ? std::string() : fmt::format(" (line {})", span.line);
}

std::string describe_bounds(const ir::Field& field) {
  if (field.min && field.max) {
    return fmt::format("{} is between {} and {}", field.name, *field.min, *field.max);
  }
  if (field.min) return fmt::format("{} is at least {}", field.name, *field.min);
  if (field.max) return fmt::format("{} is at most {}", field.name, *field.max);
  return fmt::format("no valid value of {} satisfies it", field.name);
}

class Analyzer {
 public:
  Analyzer(const ir::CheckedPolicy& checked, const AnalysisBudget& budget)
      : checked_(checked),
        policy_(checked.policy),
        partition_(partition_policy(policy_)),
        budget_(budget.rows),
        region_budget_(budget.regions) {}

  std::vector<Diagnostic> run(StageClock* clock = nullptr) {
    if (!build_domains()) return {};  // no valid input exists; check() reports why
    guards_.resize(policy_.rules.size());
    tables_.resize(policy_.rules.size());
    for (uint32_t r = 0; r < policy_.rules.size(); ++r) {
      if (const auto* guard = std::get_if<ir::Guard>(&policy_.rules[r])) {
        analyze_guard(r, *guard);
      } else {
        analyze_table(r, std::get<ir::Table>(policy_.rules[r]));
      }
    }
    if (clock != nullptr) clock->lap("analysis: rows");
    // Invariants and gaps need every decision region (compiler/analysis/invariants.h).
    for (Diagnostic& d : region_diagnostics(checked_, region_budget_)) out_.push_back(std::move(d));
    for (Diagnostic& d : classifier_diagnostics(checked_, region_budget_)) {
      out_.push_back(std::move(d));
    }
    if (clock != nullptr) clock->lap("analysis: regions");
    return std::move(out_);
  }

 private:
  // Each field's atoms that a valid input can take. An empty string on an empty_means_absent
  // field interns to absent, so its atom never occurs.
  bool build_domains() {
    domains_.resize(policy_.fields.size());
    for (size_t f = 0; f < policy_.fields.size(); ++f) {
      const FieldPartition& part = partition_.fields[f];
      domains_[f] = part.domain();
      if (policy_.fields[f].empty_means_absent && part.type == ir::FieldType::kString) {
        uint32_t empty = part.atom_of(ir::Value::String(""));
        if (empty != kAtomOther) std::erase(domains_[f], empty);
      }
      if (domains_[f].empty()) return false;
    }
    last_witness_.assign(domains_.size(), kWildcardAtom);
    return true;
  }

  AtomSet restrict_to_domain(uint32_t field, const std::vector<uint32_t>& atoms) const {
    AtomSet out;
    out.all = false;
    const auto& domain = domains_[field];
    std::set_intersection(atoms.begin(), atoms.end(), domain.begin(), domain.end(),
                          std::back_inserter(out.atoms));
    if (out.atoms.size() == domain.size()) out = AtomSet{};
    return out;
  }

  bool empty_set(uint32_t field, const AtomSet& set) const {
    return set.all ? domains_[field].empty() : set.atoms.empty();
  }

  ir::Span rule_span(uint32_t rule) const {
    return rule < checked_.source.rules.size() ? checked_.source.rules[rule] : ir::Span{};
  }
  ir::Span row_span(uint32_t rule, uint32_t row) const {
    if (rule < checked_.source.rows.size() && row < checked_.source.rows[rule].size()) {
      return checked_.source.rows[rule][row];
    }
    return rule_span(rule);
  }
  ir::Span condition_span(uint32_t rule, uint32_t condition) const {
    if (rule < checked_.source.conditions.size() &&
        condition < checked_.source.conditions[rule].size() &&
        checked_.source.conditions[rule][condition].line != 0) {
      return checked_.source.conditions[rule][condition];
    }
    return rule_span(rule);
  }

  void report(Severity severity, const char* code, ir::Span span, std::string message,
              std::string hint) {
    out_.push_back(Diagnostic{severity, code, std::move(message), checked_.source.path, span,
                              std::move(hint)});
  }

  std::string hit_name(const Hit& hit) const {
    const auto& rule = policy_.rules[hit.rule];
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) return guard->id;
    return std::get<ir::Table>(rule).rows[hit.row].id;
  }

  // ---- guards ----

  void analyze_guard(uint32_t r, const ir::Guard& guard) {
    GuardInfo& info = guards_[r];
    info.box.assign(policy_.fields.size(), AtomSet{});
    for (uint32_t k = 0; k < guard.conditions.size(); ++k) {
      const ir::Condition& c = guard.conditions[k];
      if (c.field >= policy_.fields.size()) continue;  // check() rejects it; stay safe
      AtomSet atoms = restrict_to_domain(c.field, condition_atoms(partition_.fields[c.field], c));
      if (empty_set(c.field, atoms)) {
        report(Severity::kError, "RG201", condition_span(r, k),
               fmt::format("guard '{}' can never match: {} is never true", guard.id,
                           render_condition(policy_, c)),
               never_true_hint(c));
        info.never_true = true;
        return;
      }
      info.box[c.field] = intersect_sets(info.box[c.field], atoms);
      if (empty_set(c.field, info.box[c.field])) {
        std::vector<std::string> together;
        for (uint32_t j = 0; j <= k; ++j) {
          if (guard.conditions[j].field == c.field) {
            together.push_back(render_condition(policy_, guard.conditions[j]));
          }
        }
        std::string listed;
        for (size_t i = 0; i < together.size(); ++i) {
          if (i > 0) listed += i + 1 == together.size() ? " and " : ", ";
          listed += together[i];
        }
        report(
            Severity::kError, "RG201", condition_span(r, k),
            fmt::format("guard '{}' can never match: {} are never true together", guard.id, listed),
            fmt::format("no valid value of {} satisfies all of them; fix the conditions or "
                        "remove the guard",
                        policy_.fields[c.field].name));
        info.never_true = true;
        return;
      }
    }

    info.constrained = constrained_fields(info.box);
    std::vector<Hit> hits;
    if (shadowed(r, nullptr, RowFilter{}, info.box, hits)) {
      hits = shadowers(info.box, std::move(hits));
      report(Severity::kWarning, "RG202", rule_span(r),
             fmt::format("guard '{}' is never reached: every input it matches is taken first by {}",
                         guard.id, names_of(hits)),
             "remove the guard, or move it above the rules that take its inputs");
    }
  }

  std::string never_true_hint(const ir::Condition& c) const {
    const ir::Field& field = policy_.fields[c.field];
    if (c.op == ir::Op::kAbsent)
      return fmt::format("{} is required, so it is never absent", field.name);
    bool only_empty_strings = field.empty_means_absent && !c.values.empty() &&
                              (c.op == ir::Op::kEq || c.op == ir::Op::kIn);
    for (const auto& v : c.values) only_empty_strings = only_empty_strings && v.str.empty();
    if (only_empty_strings) {
      return fmt::format("an empty {} is read as absent; test `{}: absent` instead", field.name,
                         field.name);
    }
    if (c.op == ir::Op::kNe || c.op == ir::Op::kNotIn) {
      return fmt::format("it excludes every value {} can take", field.name);
    }
    if (field.type == ir::FieldType::kInt) return describe_bounds(field);
    return fmt::format("no valid value of {} satisfies it", field.name);
  }

  // ---- tables ----

  void analyze_table(uint32_t r, const ir::Table& table) {
    TableInfo& info = tables_[r];
    build_rows(table, info);
    for (uint32_t i = 0; i < table.rows.size(); ++i) {
      RowInfo& row = info.rows[i];
      if (row.never_true) report_never_true_row(r, table, i);
      find_duplicate(r, table, info, i);
      if (row.never_true || row.duplicate) continue;
      find_conflict(r, table, info, i);
      find_wildcard_overlap(r, table, info, i);
      std::vector<Hit> hits;
      if (!shadowed(r, &info, RowFilter{row.concrete, row.concrete, i}, row.box, hits)) {
        warn_wildcard_takes_absent(r, table, info, i);
        continue;
      }
      hits = shadowers(row.box, std::move(hits));
      bool all_same_table =
          std::all_of(hits.begin(), hits.end(), [r](const Hit& h) { return h.rule == r; });
      report(Severity::kWarning, "RG202", row_span(r, i),
             fmt::format("row '{}' is never reached: every input it matches is taken first by {}",
                         table.rows[i].id, names_of(hits)),
             all_same_table
                 ? fmt::format("remove the row: more specific rows of table '{}' decide all its "
                               "inputs",
                               table.id)
                 : std::string("remove the row, or narrow the earlier rules that take its inputs"));
    }
  }

  // RG206: a '*' key on an optional field matches absent too. When such a row does more than
  // nothing (effect above none) and absent inputs really reach it, say so: an author who wrote '*'
  // for "any key" rarely means "no key at all", and the fail-safe is a guard before the table.
  void warn_wildcard_takes_absent(uint32_t r, const ir::Table& table, TableInfo& info, uint32_t i) {
    const ir::Row& row = table.rows[i];
    if (policy_.verbs[row.verb].effect == ir::Effect::kNone) return;
    const RowInfo& ri = info.rows[i];
    for (uint32_t p = 0; p < table.key_fields.size(); ++p) {
      const uint32_t f = table.key_fields[p];
      if (row.keys[p] || !policy_.fields[f].optional) continue;
      Box only_absent = ri.box;
      only_absent[f] = AtomSet{false, {kAtomAbsent}};
      std::vector<Hit> hits;
      if (shadowed(r, &info, RowFilter{ri.concrete, ri.concrete, i}, only_absent, hits)) continue;
      const std::string& name = policy_.fields[f].name;
      report(Severity::kWarning, "RG206", row_span(r, i),
             fmt::format("row '{}' gives '{}' (effect {}) to inputs without {}: its '*' key "
                         "matches an absent {} too",
                         row.id, policy_.verbs[row.verb].name,
                         ir::effect_name(policy_.verbs[row.verb].effect), name, name),
             fmt::format("decide absent first with a guard `{}: absent` before the table, or "
                         "give the key a value",
                         name));
      return;
    }
  }

  void build_rows(const ir::Table& table, TableInfo& info) {
    info.rows.resize(table.rows.size());
    std::vector<uint32_t> masks;
    for (uint32_t i = 0; i < table.rows.size(); ++i) {
      const ir::Row& source = table.rows[i];
      RowInfo& row = info.rows[i];
      row.box.assign(policy_.fields.size(), AtomSet{});
      row.tuple.assign(table.key_fields.size(), kWildcardAtom);
      for (uint32_t p = 0; p < table.key_fields.size() && p < 32; ++p) {
        uint32_t f = table.key_fields[p];
        if (p >= source.keys.size() || !source.keys[p] || f >= policy_.fields.size()) continue;
        const FieldPartition& part = partition_.fields[f];
        row.tuple[p] = part.atom_of(*source.keys[p]);
        row.mask |= 1u << p;
        ++row.concrete;
        if (!key_is_valid(f, *source.keys[p])) {
          row.never_true = true;
          continue;
        }
        // A concrete key is one atom (key_atoms() of it): build the set in place, without the
        // temporaries, since this runs for every key of every row.
        AtomSet single;
        single.all = false;
        if (std::binary_search(domains_[f].begin(), domains_[f].end(), row.tuple[p])) {
          single.atoms.push_back(row.tuple[p]);
        }
        if (single.atoms.size() == domains_[f].size()) single = AtomSet{};
        row.box[f] = row.box[f].all ? std::move(single) : intersect_sets(row.box[f], single);
        if (empty_set(f, row.box[f])) row.never_true = true;
      }
      row.constrained = constrained_fields(row.box);
      masks.push_back(row.mask);
    }
    std::sort(masks.begin(), masks.end());
    masks.erase(std::unique(masks.begin(), masks.end()), masks.end());
    info.groups.resize(masks.size());
    for (size_t g = 0; g < masks.size(); ++g) {
      info.groups[g].mask = masks[g];
      info.groups[g].concrete = std::popcount(masks[g]);
    }
    for (uint32_t i = 0; i < info.rows.size(); ++i) {
      auto it = std::lower_bound(masks.begin(), masks.end(), info.rows[i].mask);
      info.groups[it - masks.begin()].rows.push_back(i);
    }
  }

  // Enum keys outside the enum intern to no atom of their own; check() rejects them, but the
  // analysis must not read them as absent.
  bool key_is_valid(uint32_t field, const ir::Value& key) const {
    const ir::Field& f = policy_.fields[field];
    if (f.type != ir::FieldType::kEnum) return true;
    return std::find(f.enum_values.begin(), f.enum_values.end(), key.str) != f.enum_values.end();
  }

  void report_never_true_row(uint32_t r, const ir::Table& table, uint32_t i) {
    const ir::Row& row = table.rows[i];
    std::string why = "its keys never occur together in a valid input";
    std::string hint = "remove the row or fix its keys";
    for (size_t p = 0; p < table.key_fields.size() && p < row.keys.size(); ++p) {
      if (!row.keys[p] || table.key_fields[p] >= policy_.fields.size()) continue;
      const ir::Field& field = policy_.fields[table.key_fields[p]];
      const ir::Value& key = *row.keys[p];
      if (field.type == ir::FieldType::kString && field.empty_means_absent && key.str.empty()) {
        why = fmt::format("an empty {} is read as absent, so key \"\" never occurs", field.name);
        hint = fmt::format(
            "use '*' for this key and decide absent with a guard `{}: absent` "
            "before the table",
            field.name);
        break;
      }
      if (!key_is_valid(table.key_fields[p], key)) {
        why = fmt::format("key {} is not a value of enum {}", render_value(key), field.name);
        break;
      }
      if (field.type == ir::FieldType::kInt &&
          ((field.min && key.i < *field.min) || (field.max && key.i > *field.max))) {
        why = fmt::format("key {} is out of bounds ({})", key.i, describe_bounds(field));
        hint = "valid inputs never carry this value; remove the row or fix the key";
        break;
      }
    }
    report(Severity::kError, "RG205", row_span(r, i),
           fmt::format("row '{}' can never match: {}", row.id, why), hint);
  }

  const std::vector<uint32_t>* bucket(TableInfo& info, RowGroup& group, uint32_t submask,
                                      const std::vector<uint32_t>& key) {
    if (submask == 0) return &group.rows;
    auto [it, inserted] = group.by_submask.try_emplace(submask);
    Buckets& buckets = it->second;
    if (inserted) {
      std::vector<uint32_t> projected;
      for (uint32_t i : group.rows) {
        projected.clear();
        for (size_t p = 0; p < info.rows[i].tuple.size(); ++p) {
          if (submask & (1u << p)) projected.push_back(info.rows[i].tuple[p]);
        }
        buckets[projected].push_back(i);
      }
    }
    auto found = buckets.find(key);
    return found == buckets.end() ? nullptr : &found->second;
  }

  void find_duplicate(uint32_t r, const ir::Table& table, TableInfo& info, uint32_t i) {
    RowInfo& row = info.rows[i];
    RowGroup& group = group_of(info, row.mask);
    std::vector<uint32_t> key;
    for (uint32_t atom : row.tuple) {
      if (atom != kWildcardAtom) key.push_back(atom);
    }
    const std::vector<uint32_t>* same = bucket(info, group, row.mask, key);
    if (same == nullptr || same->empty() || same->front() == i) return;
    uint32_t first = same->front();
    row.duplicate = true;
    const ir::Row& a = table.rows[first];
    const ir::Row& b = table.rows[i];
    std::string tuple = render_tuple(b.keys);
    // Rows without ids of their own derive the same id from the same keys: name the earlier row
    // by its line then, not by an id that reads like the row itself.
    const ir::Span first_span = row_span(r, first);
    const std::string earlier =
        a.id != b.id           ? fmt::format("row '{}'{}", a.id, line_note(first_span))
        : first_span.line == 0 ? std::string("an earlier row")
                               : fmt::format("the row at line {}", first_span.line);
    if (a.verb == b.verb) {
      report(Severity::kError, "RG203", row_span(r, i),
             fmt::format("duplicate row '{}' in table '{}': same keys {} as {}", b.id, table.id,
                         tuple, earlier),
             "remove one of the two rows");
    } else {
      report(Severity::kError, "RG203", row_span(r, i),
             fmt::format("conflicting duplicate row '{}' in table '{}': same keys {} as {} but "
                         "verb '{}' instead of '{}'",
                         b.id, table.id, tuple, earlier, verb_name(b.verb), verb_name(a.verb)),
             "keep one of the two rows, with the verb you mean");
    }
  }

  std::string verb_name(uint32_t verb) const {
    return verb < policy_.verbs.size() ? policy_.verbs[verb].name : "?";
  }

  RowGroup& group_of(TableInfo& info, uint32_t mask) {
    auto it = std::lower_bound(info.groups.begin(), info.groups.end(), mask,
                               [](const RowGroup& g, uint32_t m) { return g.mask < m; });
    return *it;
  }

  // RG204: an earlier row with as many concrete keys, another verb, and a shared input that no
  // more specific row decides. One report per row, naming the earliest such row.
  void find_conflict(uint32_t r, const ir::Table& table, TableInfo& info, uint32_t i) {
    const RowInfo& row = info.rows[i];
    uint32_t verb = table.rows[i].verb;
    std::optional<uint32_t> partner;
    std::vector<uint32_t> witness;
    std::vector<uint32_t> key;
    for (RowGroup& group : info.groups) {
      if (group.concrete != row.concrete || group.mask == row.mask) continue;
      uint32_t submask = group.mask & row.mask;
      key.clear();
      for (size_t p = 0; p < row.tuple.size(); ++p) {
        if (submask & (1u << p)) key.push_back(row.tuple[p]);
      }
      const std::vector<uint32_t>* candidates = bucket(info, group, submask, key);
      if (candidates == nullptr) continue;
      for (uint32_t j : *candidates) {
        if (j >= i || (partner && j >= *partner)) break;
        const RowInfo& other = info.rows[j];
        if (other.never_true || table.rows[j].verb == verb) continue;
        Box overlap(row.box.size());
        for (size_t f = 0; f < overlap.size(); ++f) {
          overlap[f] = intersect_sets(row.box[f], other.box[f]);
        }
        if (box_is_empty(domains_, overlap)) continue;
        if (gave_up_) return;
        std::vector<Hit> settlers;
        collect_rows(r, info, overlap, RowFilter{row.concrete + 1, -1, 0}, settlers);
        std::vector<const Box*> boxes;
        for (const Hit& h : settlers) boxes.push_back(h.box);
        CoverageResult result = find_uncovered(domains_, overlap, boxes, budget_);
        if (result.coverage == Coverage::kGaveUp) note_gave_up(r);
        if (result.coverage != Coverage::kUncovered) continue;
        partner = j;
        witness = std::move(result.witness);
        break;
      }
    }
    if (!partner) return;
    const ir::Row& a = table.rows[*partner];
    const ir::Row& b = table.rows[i];
    std::vector<std::optional<ir::Value>> merged(table.key_fields.size());
    bool has_wildcard = false;
    std::string example = "[";
    for (size_t p = 0; p < merged.size(); ++p) {
      if (p < a.keys.size() && a.keys[p]) merged[p] = a.keys[p];
      if (p < b.keys.size() && b.keys[p]) merged[p] = b.keys[p];
      if (p > 0) example += ", ";
      if (merged[p]) {
        example += render_value(*merged[p]);
      } else {
        has_wildcard = true;
        uint32_t f = table.key_fields[p];
        example += partition_.fields[f].atom_label(witness.at(f));
      }
    }
    example += "]";
    std::string tuple = render_tuple(merged);
    report(Severity::kError, "RG204", row_span(r, i),
           fmt::format("row '{}' conflicts with row '{}'{} in table '{}': both match {}{} "
                       "with different verbs ('{}' vs '{}') and neither is more specific",
                       b.id, a.id, line_note(row_span(r, *partner)), table.id, tuple,
                       has_wildcard ? fmt::format(" (e.g. {})", example) : std::string(),
                       verb_name(b.verb), verb_name(a.verb)),
           fmt::format("add {} row for {} to settle it", has_wildcard ? "a" : "an exact", tuple));
  }

  // RG207 (info): two crossing rows with wildcards (each concrete where the other is '*') and
  // different verbs share inputs that no more concrete row settles: the more concrete one decides
  // there, silently. (Equal specificity is RG204's error.) One report per row, naming the
  // earliest partner; at most kMaxOverlapReports per policy.
  void find_wildcard_overlap(uint32_t r, const ir::Table& table, TableInfo& info, uint32_t i) {
    const RowInfo& row = info.rows[i];
    const size_t keys = table.key_fields.size();
    if (overlap_reports_ >= kMaxOverlapReports || row.concrete == static_cast<int>(keys)) return;
    std::vector<uint32_t> key;
    std::optional<uint32_t> partner;
    for (RowGroup& group : info.groups) {
      if (group.concrete == static_cast<int>(keys) || group.mask == row.mask) continue;
      const uint32_t submask = group.mask & row.mask;
      key.clear();
      for (size_t p = 0; p < row.tuple.size(); ++p) {
        if (submask & (1u << p)) key.push_back(row.tuple[p]);
      }
      const std::vector<uint32_t>* candidates = bucket(info, group, submask, key);
      if (candidates == nullptr) continue;
      for (uint32_t j : *candidates) {
        if (j >= i || (partner && j >= *partner)) break;
        const RowInfo& other = info.rows[j];
        if (other.never_true || other.duplicate) continue;
        // Same verb: harmless. Same specificity with another verb: RG204's error.
        if (other.concrete == row.concrete || table.rows[j].verb == table.rows[i].verb) continue;
        // Only crossing rows: each has a concrete key where the other has '*'. A row that is a
        // generalisation of the other (a catch-all, [a, '*'] over [a, x]) is the wildcard's
        // ordinary use.
        if ((other.mask & ~row.mask) == 0 || (row.mask & ~other.mask) == 0) continue;
        if (!meets(other.box, other.constrained, row.box)) continue;
        // Settled when more concrete rows decide every shared input.
        Box overlap(row.box.size());
        for (size_t f = 0; f < overlap.size(); ++f) {
          overlap[f] = intersect_sets(row.box[f], other.box[f]);
        }
        if (box_is_empty(domains_, overlap) || gave_up_) continue;
        std::vector<Hit> settlers;
        collect_rows(r, info, overlap, RowFilter{std::max(row.concrete, other.concrete) + 1, -1, 0},
                     settlers);
        std::vector<const Box*> boxes;
        for (const Hit& h : settlers) boxes.push_back(h.box);
        CoverageResult result = find_uncovered(domains_, overlap, boxes, budget_);
        if (result.coverage == Coverage::kGaveUp) note_gave_up(r);
        if (result.coverage != Coverage::kUncovered) continue;
        partner = j;
        break;
      }
    }
    if (!partner) return;
    const ir::Row& a = table.rows[*partner];
    const ir::Row& b = table.rows[i];
    const RowInfo& other = info.rows[*partner];
    std::vector<std::optional<ir::Value>> merged(keys);
    for (size_t p = 0; p < keys; ++p) {
      if (p < a.keys.size() && a.keys[p]) merged[p] = a.keys[p];
      if (p < b.keys.size() && b.keys[p]) merged[p] = b.keys[p];
    }
    const bool later_wins = row.concrete > other.concrete;
    const ir::Row& winner = later_wins ? b : a;
    const ir::Row& loser = later_wins ? a : b;
    const std::string outcome = fmt::format("'{}' decides there ('{}', not '{}')", winner.id,
                                            verb_name(winner.verb), verb_name(loser.verb));
    ++overlap_reports_;
    report(Severity::kInfo, "RG207", row_span(r, i),
           fmt::format("wildcard rows '{}' and '{}'{} of table '{}' overlap on {}: {} ({})", b.id,
                       a.id, line_note(row_span(r, *partner)), table.id, render_tuple(merged),
                       outcome, "more concrete keys"),
           fmt::format("add an exact row for {} if the overlap should be explicit",
                       render_tuple(merged)));
  }

  // ---- precedence queries ----

  // Guards and table rows of rules before `rule` whose boxes meet `box`.
  void collect_earlier(uint32_t rule, const Box& box, std::vector<Hit>& hits) {
    for (uint32_t e = 0; e < rule; ++e) {
      if (std::holds_alternative<ir::Guard>(policy_.rules[e])) {
        const GuardInfo& guard = guards_[e];
        if (!guard.never_true && meets(guard.box, guard.constrained, box)) {
          hits.push_back(Hit{e, 0, &guard.box});
        }
      } else {
        collect_rows(e, tables_[e], box, RowFilter{}, hits);
      }
    }
  }

  // Rows of table `rule` allowed by `filter` whose boxes meet `box`.
  void collect_rows(uint32_t rule, TableInfo& info, const Box& box, const RowFilter& filter,
                    std::vector<Hit>& hits) {
    const auto& key_fields = std::get<ir::Table>(policy_.rules[rule]).key_fields;
    std::vector<uint32_t> key;
    for (RowGroup& group : info.groups) {
      if (group.concrete < filter.min_concrete) continue;
      // Look up by the concrete keys on which the box allows a single atom.
      uint32_t submask = 0;
      key.clear();
      for (uint32_t p = 0; p < key_fields.size() && p < 32; ++p) {
        if (!(group.mask & (1u << p))) continue;
        const AtomSet& set = box[key_fields[p]];
        if (!set.all && set.atoms.size() == 1) {
          submask |= 1u << p;
          key.push_back(set.atoms[0]);
        }
      }
      const std::vector<uint32_t>* rows = bucket(info, group, submask, key);
      if (rows == nullptr) continue;
      bool tie = group.concrete == filter.tie_concrete;
      for (uint32_t j : *rows) {
        if (tie && j >= filter.tie_before) break;
        const RowInfo& row = info.rows[j];
        if (row.never_true || !meets(row.box, row.constrained, box)) continue;
        hits.push_back(Hit{rule, j, &row.box});
      }
    }
  }

  // Whether every input of `box` is taken by an earlier rule (or, with `table`, by a row of the
  // same table that `filter` lets win). When it is, `hits` lists every box that meets `box`.
  bool shadowed(uint32_t rule, TableInfo* table, const RowFilter& filter, const Box& box,
                std::vector<Hit>& hits) {
    if (gave_up_) return false;  // out of budget: nothing more can be decided
    auto gather = [&](const Box& query, std::vector<Hit>& out) {
      collect_earlier(rule, query, out);
      if (table != nullptr) collect_rows(rule, *table, query, filter, out);
    };
    // Most rules are reachable, and one point shows it: try the point the last search found
    // (or the first atoms) before collecting every overlapping box.
    // The probe and its hits are reused members: this runs once per row, a million times for a
    // million-row table, and allocating them each time cost more than the query.
    Box& probe = probe_;
    probe.resize(box.size());
    for (size_t f = 0; f < box.size(); ++f) {
      const auto& atoms = box[f].all ? domains_[f] : box[f].atoms;
      uint32_t last = last_witness_[f];
      bool reuse = last != kWildcardAtom && std::binary_search(atoms.begin(), atoms.end(), last);
      probe[f].all = false;
      probe[f].atoms.assign(1, reuse ? last : atoms.front());
    }
    probe_hits_.clear();
    gather(probe, probe_hits_);
    if (probe_hits_.empty()) return false;

    gather(box, hits);
    std::vector<const Box*> boxes;
    boxes.reserve(hits.size());
    for (const Hit& h : hits) boxes.push_back(h.box);
    CoverageResult result = find_uncovered(domains_, box, boxes, budget_);
    if (result.coverage == Coverage::kGaveUp) note_gave_up(rule);
    if (result.coverage == Coverage::kUncovered) last_witness_ = result.witness;
    return result.coverage == Coverage::kCovered;
  }

  // The rules to name for a shadowed `box`: of the boxes that meet it, a minimal subset that
  // still covers it (dropping the latest first), so the rule that really shadows it is not lost
  // among guards that only take part of its inputs. Sorted in rule order.
  std::vector<Hit> shadowers(const Box& box, std::vector<Hit> hits) {
    std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
      return std::pair(a.rule, a.row) < std::pair(b.rule, b.row);
    });
    if (hits.size() > kMaxMinimizedShadowers) return hits;
    for (size_t i = hits.size(); i-- > 0;) {
      std::vector<const Box*> others;
      for (size_t j = 0; j < hits.size(); ++j) {
        if (j != i) others.push_back(hits[j].box);
      }
      // Naming has its own budget, so it never starves the checks; when it runs out the names
      // are just less minimal.
      CoverageResult result = find_uncovered(domains_, box, others, naming_budget_);
      if (result.coverage == Coverage::kGaveUp) break;
      if (result.coverage == Coverage::kCovered) hits.erase(hits.begin() + i);
    }
    return hits;
  }

  std::string names_of(const std::vector<Hit>& hits) const {
    std::vector<std::string> names;
    for (size_t i = 0; i < hits.size(); ++i) {
      // Only the first few are shown; the rest are counted.
      names.push_back(i < kNamedShadowers ? hit_name(hits[i]) : std::string());
    }
    return join_names(names);
  }

  void note_gave_up(uint32_t rule) {
    if (gave_up_) return;
    gave_up_ = true;
    const auto& r = policy_.rules[rule];
    const std::string& id = std::holds_alternative<ir::Guard>(r) ? std::get<ir::Guard>(r).id
                                                                 : std::get<ir::Table>(r).id;
    report(Severity::kInfo, "RG209", rule_span(rule),
           fmt::format("analysis stopped early at rule '{}': the policy is too complex to finish "
                       "the shadowing and conflict checks",
                       id),
           "split large wildcard tables or guards; the compiled decisions are not affected");
  }

  const ir::CheckedPolicy& checked_;
  const ir::Policy& policy_;
  Partition partition_;
  Domains domains_;
  std::vector<GuardInfo> guards_;  // per rule index; unused for tables
  std::vector<TableInfo> tables_;  // per rule index; unused for guards
  std::vector<Diagnostic> out_;
  std::vector<uint32_t> last_witness_;  // per field: an atom of the last uncovered tuple found
  Box probe_;                           // shadowed()'s scratch point
  std::vector<Hit> probe_hits_;         // shadowed()'s scratch hits
  uint64_t budget_;                     // usefulness work left (AnalysisBudget::rows)
  uint64_t region_budget_;
  uint64_t naming_budget_ = kNamingBudget;
  bool gave_up_ = false;
  size_t overlap_reports_ = 0;
};

}  // namespace

std::vector<Diagnostic> analyze(const ir::CheckedPolicy& policy, StageTimings* timings) {
  StageClock clock(timings);
  // Ordinary policies use a tiny fraction of the default budgets.
  Analyzer analyzer(policy, AnalysisBudget{});
  clock.lap("analysis: partition");
  return analyzer.run(&clock);
}

std::vector<Diagnostic> analyze_with_budget(const ir::CheckedPolicy& policy,
                                            AnalysisBudget budget) {
  return Analyzer(policy, budget).run();
}

}  // namespace replaygate
