// Classifier analysis: fallback reaching a create verb (RG215), shadowed rows (RG216), classes no
// rule mentions (RG217). See classifiers.h.
#include "compiler/analysis/classifiers.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "compiler/analysis/partition.h"
#include "compiler/analysis/regions.h"

namespace replaygate {
namespace {

using Interval = std::pair<int64_t, int64_t>;  // inclusive

// Whether the union of `covers` holds every int of [lo, hi].
bool covered(int64_t lo, int64_t hi, std::vector<Interval> covers) {
  std::sort(covers.begin(), covers.end());
  int64_t next = lo;  // the lowest value not yet known covered
  for (const auto& [a, b] : covers) {
    if (a > next) break;
    if (b >= next) {
      if (b >= hi) return true;
      next = b + 1;
    }
  }
  return false;
}

// The ints row `r` takes, as intervals.
std::vector<Interval> intervals_of(const ir::ClassifyRow& r) {
  if (r.kind == ir::ClassifyRow::Kind::kRange) return {{r.values.at(0).i, r.values.at(1).i}};
  std::vector<Interval> out;
  for (const ir::Value& v : r.values) out.emplace_back(v.i, v.i);
  return out;
}

std::string class_name(const ir::Field& f, uint32_t cls) {
  return "'" + f.enum_values.at(cls) + "'";
}

}  // namespace

bool classify_row_reachable(const ir::Classifier& c, const ir::Field& raw, size_t row) {
  const ir::ClassifyRow& r = c.rows.at(row);
  if (raw.type == ir::FieldType::kInt) {
    std::vector<Interval> earlier;
    for (size_t e = 0; e < row; ++e) {
      for (const Interval& i : intervals_of(c.rows[e])) earlier.push_back(i);
    }
    const int64_t min = raw.min.value_or(std::numeric_limits<int64_t>::min());
    const int64_t max = raw.max.value_or(std::numeric_limits<int64_t>::max());
    for (auto [lo, hi] : intervals_of(r)) {
      lo = std::max(lo, min);
      hi = std::min(hi, max);
      if (lo <= hi && !covered(lo, hi, earlier)) return true;
    }
    return false;
  }
  for (const ir::Value& v : r.values) {
    bool shadowed = false;
    for (size_t e = 0; e < row && !shadowed; ++e) {
      const ir::ClassifyRow& x = c.rows[e];
      if (r.kind == ir::ClassifyRow::Kind::kIn) {
        shadowed = ir::classify_row_takes(x, v);
      } else if (x.kind == ir::ClassifyRow::Kind::kPrefix) {
        // A prefix row takes infinitely many strings: only an earlier, shorter-or-equal prefix
        // of it takes them all.
        shadowed = std::any_of(x.values.begin(), x.values.end(),
                               [&](const ir::Value& p) { return v.str.starts_with(p.str); });
      }
    }
    if (v.str.empty() && raw.empty_means_absent && r.kind == ir::ClassifyRow::Kind::kIn) {
      shadowed = true;  // "" is read as absent, which gets the fallback
    }
    if (!shadowed) return true;
  }
  return false;
}

std::vector<Diagnostic> classifier_diagnostics(const ir::CheckedPolicy& checked, uint64_t budget) {
  const ir::Policy& policy = checked.policy;
  std::vector<Diagnostic> out;
  const auto spans = [&](size_t f) -> ir::ClassifierSpans {
    if (f < checked.source.classifiers.size()) return checked.source.classifiers[f];
    ir::ClassifierSpans s;
    if (f < checked.source.fields.size()) s.classifier = checked.source.fields[f];
    return s;
  };
  const auto report = [&](Severity severity, const char* code, ir::Span span, std::string message,
                          std::string hint) {
    out.push_back(
        Diagnostic{severity, code, std::move(message), checked.source.path, span, std::move(hint)});
  };
  bool any = false;
  for (size_t f = 0; f < policy.fields.size(); ++f) {
    const ir::Field& field = policy.fields[f];
    if (!field.classify) continue;
    any = true;
    const ir::Classifier& c = *field.classify;
    const ir::Field& raw = policy.fields.at(c.from);
    const ir::ClassifierSpans where = spans(f);
    // RG216: rows whose every value an earlier row takes.
    for (size_t r = 0; r < c.rows.size(); ++r) {
      if (classify_row_reachable(c, raw, r)) continue;
      const ir::Span span = r < where.rows.size() ? where.rows[r] : where.classifier;
      report(Severity::kWarning, "RG216", span,
             fmt::format("classifier row {} of '{}' is never reached: earlier rows (or the "
                         "bounds of '{}') take every value it lists",
                         r + 1, field.name, raw.name),
             "remove the row, or move it above the row that takes its values");
    }
    // RG217: classes no guard condition or table key mentions (the fallback excepted: leaving
    // the unknown to the default is the usual, safe design).
    std::vector<bool> mentioned(field.enum_values.size(), false);
    for (const ir::Rule& rule : policy.rules) {
      if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
        for (const ir::Condition& cond : guard->conditions) {
          if (cond.field != f) continue;
          for (const ir::Value& v : cond.values) {
            const auto at = std::find(field.enum_values.begin(), field.enum_values.end(), v.str);
            if (at != field.enum_values.end()) mentioned[at - field.enum_values.begin()] = true;
          }
        }
        continue;
      }
      const auto& table = std::get<ir::Table>(rule);
      for (size_t k = 0; k < table.key_fields.size(); ++k) {
        if (table.key_fields[k] != f) continue;
        for (const ir::Row& row : table.rows) {
          if (!row.keys[k]) continue;
          const auto at =
              std::find(field.enum_values.begin(), field.enum_values.end(), row.keys[k]->str);
          if (at != field.enum_values.end()) mentioned[at - field.enum_values.begin()] = true;
        }
      }
    }
    for (uint32_t k = 0; k < field.enum_values.size(); ++k) {
      if (mentioned[k] || k == c.fallback) continue;
      report(Severity::kWarning, "RG217",
             f < checked.source.fields.size() ? checked.source.fields[f] : where.classifier,
             fmt::format("class {} of '{}' is never mentioned by a rule", class_name(field, k),
                         field.name),
             "decide it with a guard or table row, or fold it into another class");
    }
  }
  if (!any) return out;

  // RG215: a create verb on a region where the classified input holds its fallback class and
  // some raw value lands there.
  const RegionResult regions = decision_regions(policy, budget);
  for (size_t f = 0; f < policy.fields.size(); ++f) {
    const ir::Field& field = policy.fields[f];
    if (!field.classify) continue;
    const ir::Classifier& c = *field.classify;
    const uint32_t fallback_atom = 1 + c.fallback;
    const ir::ClassifierSpans where = spans(f);
    size_t bad = 0;
    std::string first;
    for (const Region& region : regions.regions) {
      if (policy.verbs.at(region.verb).effect != ir::Effect::kCreate) continue;
      const AtomSet& cls = region.box.at(f);
      if (!cls.all && !std::binary_search(cls.atoms.begin(), cls.atoms.end(), fallback_atom)) {
        continue;
      }
      const AtomSet& raw_set = region.box.at(c.from);
      const std::vector<uint32_t>& raw_atoms =
          raw_set.all ? regions.domains.at(c.from) : raw_set.atoms;
      if (!raw_value_in_class(policy, regions.partition, static_cast<uint32_t>(f), raw_atoms,
                              c.fallback)) {
        continue;
      }
      if (bad++ == 0) {
        Box box = region.box;
        box[f] = AtomSet{false, {fallback_atom}};
        first = fmt::format("'{}' (effect create) for {}", policy.verbs[region.verb].name,
                            example_letter(policy, regions.partition, regions.domains, box));
      }
    }
    if (bad > 0) {
      report(Severity::kError, "RG215", where.fallback.line ? where.fallback : where.classifier,
             fmt::format("the fallback class {} of '{}' can replay: the policy decides {}{}",
                         class_name(field, c.fallback), field.name, first,
                         bad > 1 ? fmt::format(" ({} regions)", bad) : std::string()),
             "a raw value no row knows must fail closed: guard the fallback class with a verb "
             "that creates nothing before the rule that replays, or pick a fallback that no "
             "replaying rule takes");
    } else if (!regions.complete) {
      report(Severity::kError, "RG215", where.classifier,
             fmt::format("could not prove that the fallback class {} of '{}' never replays: the "
                         "analysis ran out of its work budget",
                         class_name(field, c.fallback), field.name),
             "split large wildcard tables or guards so the policy has fewer regions");
    }
  }
  return out;
}

}  // namespace replaygate
