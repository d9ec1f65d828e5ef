// Mapping defaults against the policy: does a default open a create verb? (mapping_check.h)
#include "checks/mapping_check.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "compiler/analysis/partition.h"
#include "compiler/analysis/regions.h"
#include "compiler/lift.h"
#include "inputs/records.h"

namespace replaygate::checks {

using inputs::FieldMapping;
using inputs::kAcknowledgeOpensCreate;
using inputs::LoadedMapping;
using inputs::Mapping;
using inputs::parse_bool_strict;
using inputs::parse_int64_strict;
using inputs::parse_mapping;
using inputs::quote_for_reason;
using inputs::SourceKind;

namespace {

// What an input becomes for a record that lacks its source.
struct Outcome {
  enum class Kind { kInvalid, kAbsent, kAtom };
  Kind kind = Kind::kInvalid;
  uint32_t atom = kAtomAbsent;  // kAtom
};

// What the policy value `text` (a default, or a `map:` target) becomes after validation, as the
// runtime validates it: invalid, absent, or an atom of `domain`.
Outcome outcome_of_text(const std::string& text, const ir::Field& field, const FieldPartition& part,
                        const std::vector<uint32_t>& domain) {
  ir::Value value;
  switch (field.type) {
    case ir::FieldType::kInt: {
      int64_t number = 0;
      if (!parse_int64_strict(text, &number)) return {};
      if ((field.min && number < *field.min) || (field.max && number > *field.max)) return {};
      value = ir::Value::Int(number);
      break;
    }
    case ir::FieldType::kBool: {
      bool flag = false;
      if (!parse_bool_strict(text, &flag)) return {};
      value = ir::Value::Bool(flag);
      break;
    }
    case ir::FieldType::kEnum:
      if (std::find(field.enum_values.begin(), field.enum_values.end(), text) ==
          field.enum_values.end()) {
        return {};
      }
      value = ir::Value::String(text);
      break;
    case ir::FieldType::kString:
      if (text.empty() && field.empty_means_absent) {
        return field.optional ? Outcome{Outcome::Kind::kAbsent} : Outcome{};
      }
      value = ir::Value::String(text);
      break;
  }
  const uint32_t atom = part.atom_of(value);
  if (std::find(domain.begin(), domain.end(), atom) == domain.end()) return {};
  return {Outcome::Kind::kAtom, atom};
}

// A value the mapping puts where the record's own would be: a `default:` (for a record without
// the source) or a constant (`constant:`, `queue_attribute:`: for every record, whatever it says).
// Both are checked alike: a constant is a default that always applies, so `already_committed:
// {constant: false}` opens a create verb exactly as `{header: x, default: false}` does.
struct Fixed {
  const FieldMapping* m = nullptr;
  std::string text;
  Span span;
  bool constant = false;
};

std::optional<Fixed> fixed_value(const FieldMapping& m) {
  if (m.source.kind == SourceKind::kConstant) return Fixed{&m, m.source.name, m.source_span, true};
  if (m.default_text) return Fixed{&m, *m.default_text, m.default_span, false};
  return std::nullopt;
}

// The value the parser gives with the fixed text (kafka.cc: the text goes through `map:` first,
// then the strict conversion).
Outcome with_fixed(const Fixed& fixed, const ir::Field& field, const FieldPartition& part,
                   const std::vector<uint32_t>& domain) {
  const FieldMapping& m = *fixed.m;
  const auto hit = m.map.find(fixed.text);
  if (m.has_map && hit == m.map.end()) return {};  // "no mapping for ...": invalid input
  return outcome_of_text(m.has_map ? hit->second : fixed.text, field, part, domain);
}

// The first rule (or derivation) that reads field `f`, as words; "" when none does.
std::string first_reader(const ir::Policy& policy, uint32_t f) {
  for (const ir::Rule& rule : policy.rules) {
    if (const auto* guard = std::get_if<ir::Guard>(&rule)) {
      for (const ir::Condition& c : guard->conditions) {
        if (c.field == f) return "guard '" + guard->id + "' compares it";
      }
      continue;
    }
    const auto& table = std::get<ir::Table>(rule);
    for (size_t k = 0; k < table.key_fields.size(); ++k) {
      if (table.key_fields[k] != f) continue;
      for (const ir::Row& row : table.rows) {
        if (k < row.keys.size() && row.keys[k]) return "table '" + table.id + "' keys on it";
      }
    }
  }
  for (const ir::Field& field : policy.fields) {
    if (field.derived && (field.derived->lhs == f || field.derived->rhs == f)) {
      return "derived input '" + field.name + "' is computed from it";
    }
  }
  return "";
}

// A witness: a region of the other inputs where the default gives a create verb and its absence
// does not.
struct Witness {
  Box box;
  uint32_t verb_with = 0, verb_without = 0;
  std::optional<uint32_t> rule_with, rule_without;  // catalog indices; nullopt: the default
};

// Does `with` open a create verb over `without` for field `f`? nullopt in *witness: no.
// Returns false when the region budget ran out before an answer.
bool find_opening(const ir::Policy& policy, const Domains& domains,
                  const std::vector<Clause>& clauses, uint32_t f, Outcome with, Outcome without,
                  uint64_t& budget, std::optional<Witness>* witness) {
  witness->reset();
  // The clauses that can hold a record whose field f has `outcome`, with f's column opened up: the
  // walk below then ranges over the other inputs only, and both lists are decided in each region.
  const auto restricted = [&](Outcome outcome) {
    std::vector<Clause> out;
    if (outcome.kind == Outcome::Kind::kInvalid) return out;  // validation fails first: default
    const uint32_t atom = outcome.kind == Outcome::Kind::kAbsent ? kAtomAbsent : outcome.atom;
    for (const Clause& c : clauses) {
      const AtomSet& set = c.box[f];
      if (!set.all && !std::binary_search(set.atoms.begin(), set.atoms.end(), atom)) continue;
      out.push_back(c);
      out.back().box[f] = AtomSet{};
    }
    return out;
  };
  const std::vector<Clause> list_with = restricted(with);
  const std::vector<Clause> list_without = restricted(without);
  const std::vector<ClauseList> lists = {{&list_with, policy.default_verb},
                                         {&list_without, policy.default_verb}};
  Domains others = domains;
  others[f] = {domains[f].front()};  // one stand-in atom: f is fixed by the outcome
  const auto verb_of = [&](const std::vector<Clause>& list, const std::optional<uint32_t>& c) {
    return c ? list[*c].verb : policy.default_verb;
  };
  const RegionStatus status =
      visit_regions(others, lists, budget, [&](const Box& box, const Decided& decided) {
        const uint32_t verb_with = verb_of(list_with, decided[0]);
        const uint32_t verb_without = verb_of(list_without, decided[1]);
        if (policy.verbs[verb_with].effect != ir::Effect::kCreate ||
            policy.verbs[verb_without].effect == ir::Effect::kCreate) {
          return true;
        }
        Witness w{box, verb_with, verb_without, std::nullopt, std::nullopt};
        if (decided[0]) w.rule_with = list_with[*decided[0]].rule;
        if (decided[1]) w.rule_without = list_without[*decided[1]].rule;
        *witness = std::move(w);
        return false;
      });
  return status != RegionStatus::kGaveUp || witness->has_value();
}

class DefaultChecker {
 public:
  DefaultChecker(const Table& table, const std::string& path) : table_(table), path_(path) {}

  void add(Severity severity, const char* code, const ir::Span& span, std::string message,
           std::string hint) {
    Diagnostic d;
    d.severity = severity;
    d.code = code;
    d.message = std::move(message);
    d.path = path_;
    d.span = span;
    d.hint = std::move(hint);
    out_.push_back(std::move(d));
  }

  static std::string acknowledge_hint(const FieldMapping& m) {
    return "remove the default so that a record without it fails closed, or, once reviewed, add "
           "`acknowledge: " +
           std::string(kAcknowledgeOpensCreate) + "` to input '" + m.input + "'";
  }

  // "the default '0'", "the constant 'false'", "the queue attribute 'RedrivePolicy.x' ('5')".
  static std::string shown(const Fixed& f) {
    const std::string value = quote_for_reason(f.text);
    if (!f.constant) return "the default " + value;
    if (f.m->source.constant_from.empty()) return "the constant " + value;
    return "the queue attribute '" + f.m->source.constant_from + "' (" + value + ")";
  }

  // What a record is decided with: "a record without header 'x'", or for a constant every record.
  static std::string who(const Fixed& f) {
    return f.constant ? "every record, whatever the message says,"
                      : "a record without " + f.m->source.describe();
  }

  static std::string fix_hint(const Fixed& f) {
    if (!f.constant) return acknowledge_hint(*f.m);
    return "map input '" + f.m->input +
           "' from the message (header:, payload: or record:) so that each record says it, or, "
           "once reviewed (a setting no message carries, such as a queue's maxReceiveCount), "
           "add `acknowledge: " +
           std::string(kAcknowledgeOpensCreate) + "` to input '" + f.m->input + "'";
  }

  std::string verb_words(uint32_t verb, const std::optional<uint32_t>& rule) const {
    const std::string name(table_.verb_name(verb));
    if (!rule) return name + " (the default)";
    return name + " (rule '" + std::string(table_.rule_id(*rule)) + "')";
  }

  void opens(const Fixed& f, const ir::Policy& policy, const Partition& partition,
             const Domains& domains, const Witness& w, Outcome without) {
    const FieldMapping& m = *f.m;
    if (m.acknowledged) return;  // reviewed
    ValueOverrides overrides = {{m.field, std::nullopt}};
    for (uint32_t i = 0; i < policy.fields.size(); ++i) {
      // Computed, or never read from a record: not part of what the record says.
      if (policy.fields[i].derived || table_.field(i).operator_only) {
        overrides.emplace_back(i, std::nullopt);
      }
    }
    const std::string example = example_letter(policy, partition, domains, w.box, overrides);
    const std::string instead =
        without.kind == Outcome::Kind::kInvalid
            ? std::string(table_.verb_name(w.verb_without)) + " (invalid input)"
            : verb_words(w.verb_without, w.rule_without);
    add(Severity::kError, "RG309", f.span,
        shown(f) + " of input '" + m.input + "' can open a create verb: " + who(f) + " can get " +
            verb_words(w.verb_with, w.rule_with) + " instead of " + instead,
        "e.g. " + example + (f.constant ? ", whatever it says for " : " without ") + m.input +
            "; " + fix_hint(f));
  }

  void unknown(const Fixed& f, const std::string& why) {
    if (f.m->acknowledged) return;
    add(Severity::kError, "RG309", f.span,
        shown(f) + " of input '" + f.m->input + "' cannot be shown not to open a create verb (" +
            why + ")",
        fix_hint(f));
  }

  void stale(const FieldMapping& m) {
    const std::optional<Fixed> f = fixed_value(m);
    add(Severity::kWarning, "RG310", m.acknowledge_span,
        "input '" + m.input + "' acknowledges a default that opens a create verb, but " +
            (f ? "its " + shown(*f).substr(4) + " cannot" : "it has no default"),
        "remove `acknowledge: " + std::string(kAcknowledgeOpensCreate) +
            "`: a stale acknowledgement would let a later default that does open one pass "
            "unreviewed");
  }

  void read(const Fixed& f, const std::string& reader) {
    const FieldMapping& m = *f.m;
    const std::string value = quote_for_reason(f.text);
    add(Severity::kWarning, "RG308", f.span,
        "input '" + m.input + "' has " + shown(f) + " and " + reader + ": " + who(f) +
            " is decided as if it said " + value,
        f.constant
            ? "it cannot open a create verb under this policy; still, map it from the message "
              "unless it is a setting no message carries (such as a queue's maxReceiveCount)"
            : "it cannot open a create verb under this policy; still, remove it unless the "
              "producer may leave the value out: a record without it is then " +
                  std::string(m.optional ? "decided as absent" : "invalid input (fail closed)"));
  }

  std::vector<Diagnostic> take() { return std::move(out_); }

 private:
  const Table& table_;
  const std::string& path_;
  std::vector<Diagnostic> out_;
};

// The guard that budgets on field `f`, directly or through a derived bool computed from it, as
// words ("guard 'attempts_exhausted' compares it"); "" when no guard does.
std::string guard_reader(const ir::Policy& policy, uint32_t f) {
  for (const ir::Rule& rule : policy.rules) {
    const auto* guard = std::get_if<ir::Guard>(&rule);
    if (guard == nullptr) continue;
    for (const ir::Condition& c : guard->conditions) {
      if (c.field == f) return "guard '" + guard->id + "' compares it";
      const ir::Field& read = policy.fields[c.field];
      if (read.derived && (read.derived->lhs == f || read.derived->rhs == f)) {
        return "guard '" + guard->id + "' compares derived input '" + read.name +
               "', computed from it";
      }
    }
  }
  return "";
}

// Header names and payload keys (the pointer's last token) that brokers and their clients write
// as their own delivery counters, compared without case: RabbitMQ (x-death's count, a quorum
// queue's x-delivery-count), SQS, Pub/Sub, Service Bus, Sidekiq, Spring Kafka and Spring Cloud
// Stream.
constexpr std::string_view kCounterNames[] = {
    "x-death",
    "x-delivery-count",
    "ApproximateReceiveCount",
    "deliveryAttempt",
    "CloudPubSubDeadLetterSourceDeliveryCount",
    "DeliveryCount",
    "retry_count",
    "kafka_deliveryAttempt",
    "retry_topic-attempts",
};

bool same_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_delivery_counter(const inputs::ValueSource& source) {
  std::string_view name;
  switch (source.kind) {
    case SourceKind::kRecord:
      return source.part == inputs::RecordPart::kDeliveryCount;
    case SourceKind::kHeader:
      name = source.name;
      break;
    case SourceKind::kPayload:
      if (source.pointer.empty()) return false;
      name = source.pointer.back();
      if (source.pointer.size() >= 2 && name == "count") name = source.pointer.front();
      break;
    case SourceKind::kConstant:
      return false;
  }
  return std::any_of(std::begin(kCounterNames), std::end(kCounterNames),
                     [&](std::string_view counter) { return same_nocase(name, counter); });
}

}  // namespace

std::vector<Diagnostic> check_delivery_counters(const Mapping& mapping, const Table& table,
                                                const std::string& path) {
  std::vector<const FieldMapping*> counters;
  for (const FieldMapping& m : mapping.fields) {
    if (is_delivery_counter(m.source)) counters.push_back(&m);
  }
  if (counters.empty()) return {};
  const LiftResult lifted = lift(table);
  if (!lifted.policy) return {};  // a warning only: nothing to fail closed on
  const ir::Policy& policy = lifted.policy->policy;
  std::vector<Diagnostic> out;
  for (const FieldMapping* m : counters) {
    if (m->field >= policy.fields.size()) continue;
    const std::string reader = guard_reader(policy, m->field);
    if (reader.empty()) continue;
    Diagnostic d;
    d.severity = Severity::kWarning;
    d.code = "RG312";
    d.path = path;
    d.span = m->source_span;
    d.message = "input '" + m->input + "' reads the broker's delivery counter (" +
                m->source.describe() + ") and " + reader +
                ": a broker dead-letters a message only once that counter has reached its limit "
                "(SQS maxReceiveCount, Service Bus MaxDeliveryCount, Pub/Sub max delivery "
                "attempts, Sidekiq retries), and RabbitMQ's x-death count stays 1 across "
                "republish cycles, so as a budget it holds every letter or never trips";
    d.hint =
        "budget on redrive cycles instead (`replays: {header: x-replay, optional: true}`, or the "
        "key's ledger generations), and map the broker's counter to an input of its own (e.g. "
        "`deliveries`) that no guard budgets on (docs/input-mapping.md)";
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Diagnostic> check_mapping_defaults(const Mapping& mapping, const Table& table,
                                               const std::string& path) {
  std::vector<const FieldMapping*> defaulted;
  for (const FieldMapping& m : mapping.fields) {
    if (fixed_value(m) || m.acknowledged) defaulted.push_back(&m);
  }
  if (defaulted.empty()) return {};
  DefaultChecker checker(table, path);
  const LiftResult lifted = lift(table);
  if (!lifted.policy) {
    for (const FieldMapping* m : defaulted) {
      if (const std::optional<Fixed> f = fixed_value(*m)) {
        checker.unknown(*f, "the table cannot be analysed: " + lifted.error);
      } else {
        checker.stale(*m);
      }
    }
    return checker.take();
  }
  const ir::Policy& policy = lifted.policy->policy;
  const Partition partition = analysis_partition(policy);
  Domains domains = valid_domains(policy, partition);
  for (uint32_t i = 0; i < policy.fields.size(); ++i) {
    // decide never reads an operator-only input from a record: it is unset there, so absent when
    // optional and invalid (no valid record at all) when required.
    if (table.field(i).operator_only) {
      domains[i] =
          policy.fields[i].optional ? std::vector<uint32_t>{kAtomAbsent} : std::vector<uint32_t>{};
    }
  }
  for (const FieldMapping& m : mapping.fields) {
    // A mapped input takes only the map's targets (any other raw value is invalid input), or is
    // absent: fewer cases, and an example a record can really produce.
    if (!m.has_map || m.field >= policy.fields.size()) continue;
    std::vector<uint32_t> atoms;
    if (policy.fields[m.field].optional) atoms.push_back(kAtomAbsent);
    for (const auto& [raw, target] : m.map) {
      const Outcome o = outcome_of_text(target, policy.fields[m.field], partition.fields[m.field],
                                        domains[m.field]);
      if (o.kind != Outcome::Kind::kInvalid) atoms.push_back(o.atom);  // kAbsent: atom 0
    }
    std::sort(atoms.begin(), atoms.end());
    atoms.erase(std::unique(atoms.begin(), atoms.end()), atoms.end());
    domains[m.field] = std::move(atoms);
  }
  const bool any_valid = std::none_of(domains.begin(), domains.end(),
                                      [](const std::vector<uint32_t>& d) { return d.empty(); });
  const std::vector<Clause> clauses =
      any_valid ? first_match_clauses(policy, partition, domains) : std::vector<Clause>{};
  uint64_t budget = kRegionBudget;
  for (const FieldMapping* m : defaulted) {
    const uint32_t f = m->field;
    const std::optional<Fixed> fixed = fixed_value(*m);
    if (!fixed) {
      checker.stale(*m);
      continue;
    }
    if (f >= policy.fields.size() || policy.fields[f].name != m->input) {
      checker.unknown(*fixed, "input '" + m->input + "' is not where the table has it");
      continue;
    }
    const Outcome without = policy.fields[f].optional ? Outcome{Outcome::Kind::kAbsent} : Outcome{};
    const Outcome with = with_fixed(*fixed, policy.fields[f], partition.fields[f], domains[f]);
    std::optional<Witness> witness;
    const bool differs = with.kind != without.kind ||
                         (with.kind == Outcome::Kind::kAtom && with.atom != without.atom);
    if (any_valid && differs &&
        !find_opening(policy, domains, clauses, f, with, without, budget, &witness)) {
      checker.unknown(*fixed, "the analysis ran out of its budget");
      continue;
    }
    if (witness) {
      checker.opens(*fixed, policy, partition, domains, *witness, without);
    } else if (m->acknowledged) {
      checker.stale(*m);
    } else if (const std::string reader = first_reader(policy, f); !reader.empty()) {
      checker.read(*fixed, reader);
    }
  }
  return checker.take();
}

LoadedMapping check_mapping(std::string_view text, const std::string& path, const Table& table) {
  LoadedMapping out = parse_mapping(text, path, table);
  // A file that is not YAML leaves the mapping empty: no default, nothing to check.
  for (auto& d : check_mapping_defaults(out.mapping, table, path)) {
    out.diagnostics.push_back(std::move(d));
  }
  sort_diagnostics(out.diagnostics);
  return out;
}

}  // namespace replaygate::checks
