// ProposalBuilder (checks/proposal_build.h): the default-decided records grouped by key values,
// with their evidence, and the proposal document.
#include "checks/proposal_build.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>

namespace replaygate::checks {
namespace {

using nlohmann::ordered_json;

constexpr size_t kSamples = 5;

// One group's evidence, kept order-independent: the smallest message ids, the dumps it was seen
// in, and the inputs of the record with the smallest message id (or the first one read).
struct Group {
  std::vector<ordered_json> key;
  uint64_t count = 0;
  std::set<std::string> message_ids;  // at most kSamples, the smallest
  std::set<std::string> dumps;
  std::optional<std::string> sample_id;
  ordered_json sample_inputs;
  std::optional<int64_t> first_ms, last_ms;  // the records' timestamps, when the format has them
};

// Milliseconds since the epoch as RFC 3339 UTC: "2025-11-29T08:00:00.000Z".
std::string utc_text(int64_t ms) {
  const int64_t seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
  const time_t t = static_cast<time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms - seconds * 1000));
  return text;
}

ordered_json slot_json(const Input::Slot& slot) {
  switch (slot.state) {
    case Input::Slot::State::kString:
      return std::string(slot.s);
    case Input::Slot::State::kInt:
      return slot.i;
    case Input::Slot::State::kBool:
      return slot.b;
    default:
      return nullptr;
  }
}

// After a record failed with "invalid input: ...": for each key input read through a map: from a
// header, the header's raw value when the map has no entry for it.
void count_unmapped(const inputs::RecordParser& parser, const inputs::Mapping* mapping,
                    const std::vector<uint32_t>& key_fields, const Table& table,
                    std::map<std::pair<std::string, std::string>, uint64_t>* unmapped) {
  if (mapping == nullptr) return;
  const std::vector<inputs::RecordPartValue> parts = parser.record_parts();
  for (uint32_t f : key_fields) {
    const inputs::FieldMapping* field = nullptr;
    for (const inputs::FieldMapping& m : mapping->fields) {
      if (m.field == f && m.has_map) field = &m;
    }
    if (field == nullptr) continue;
    const std::optional<inputs::InputOrigin> origin = parser.input_origin(f);
    if (!origin || origin->part != "header") continue;
    for (const inputs::RecordPartValue& part : parts) {
      if (part.label != "header" || part.name != origin->header ||
          part.kind != inputs::RecordPartValue::Kind::kText) {
        continue;
      }
      if (field->map.find(part.text) == field->map.end()) {
        ++(*unmapped)[{std::string(table.field(f).name), std::string(part.text)}];
      }
      break;
    }
  }
}

}  // namespace

struct ProposalBuilder::State {
  const Table& table;
  std::vector<uint32_t> key_fields;
  std::vector<std::string> key_names;
  std::set<std::string> redacted;
  int64_t timestamp_ms;
  const inputs::Mapping* mapping;
  Input input;
  ProposalCounts counts;
  std::map<std::string, Group> groups;                               // by the key values' JSON text
  std::map<std::pair<std::string, std::string>, uint64_t> unmapped;  // (input, raw value) -> n

  // A record the table sent to its default: joins the group of its key values.
  void group(const std::string& dump, const inputs::RecordMeta& meta,
             const inputs::RecordParser& parser);
};

ProposalBuilder::ProposalBuilder(const Table& table, std::vector<uint32_t> key_fields,
                                 std::vector<std::string> key_names, std::set<std::string> redacted,
                                 int64_t timestamp_ms, const inputs::Mapping* mapping)
    : state_(new State{table,
                       std::move(key_fields),
                       std::move(key_names),
                       std::move(redacted),
                       timestamp_ms,
                       mapping,
                       Input(table),
                       {},
                       {},
                       {}}) {}

ProposalBuilder::~ProposalBuilder() = default;

void ProposalBuilder::add_unreadable() {
  ++state_->counts.records;
  ++state_->counts.unreadable;
}

void ProposalBuilder::add(std::string_view record, const std::string& dump,
                          inputs::RecordParser& parser) {
  State& s = *state_;
  ++s.counts.records;
  s.input.clear();
  inputs::RecordMeta meta;
  std::string problem;
  if (!parser.parse(record, s.input, &meta, &problem)) {
    // A mapped value the mapping cannot read ("invalid input: ...") is not an unknown pair: its
    // mapping needs the entry first. Its raw value is counted, by key input, so the reviewer sees
    // which map: entries are missing (reported, not proposed).
    if (problem.rfind("invalid input: ", 0) == 0) {
      ++s.counts.invalid;
      count_unmapped(parser, s.mapping, s.key_fields, s.table, &s.unmapped);
    } else {
      ++s.counts.unreadable;
    }
    return;
  }
  const Decision d = s.table.decide(s.input);
  if (d.kind == DecisionKind::kInvalidInput) {
    ++s.counts.invalid;
    return;
  }
  if (d.kind != DecisionKind::kDefault) {
    ++s.counts.decided;
    return;
  }
  s.group(dump, meta, parser);
}

void ProposalBuilder::State::group(const std::string& dump, const inputs::RecordMeta& meta,
                                   const inputs::RecordParser& parser) {
  std::vector<ordered_json> key;
  for (uint32_t f : key_fields) key.push_back(slot_json(input.slot(f)));
  const std::string id = ordered_json(key).dump();
  Group& g = groups[id];
  if (g.count == 0) g.key = key;
  ++g.count;
  if (timestamp_ms > 0) {
    for (const inputs::RecordPartValue& part : parser.record_parts()) {
      if (part.label != "timestamp" || part.kind != inputs::RecordPartValue::Kind::kInt) continue;
      const int64_t ms = part.number * timestamp_ms;
      g.first_ms = std::min(g.first_ms.value_or(ms), ms);
      g.last_ms = std::max(g.last_ms.value_or(ms), ms);
    }
  }
  g.dumps.insert(dump);
  std::optional<std::string> message_id;
  if (meta.has_message_id) message_id = std::string(meta.message_id);
  if (message_id) {
    g.message_ids.insert(*message_id);
    if (g.message_ids.size() > kSamples) g.message_ids.erase(std::prev(g.message_ids.end()));
  }
  // The sample: the record with the smallest message id (the first one without ids).
  if (g.count == 1 || (message_id && (!g.sample_id || *message_id < *g.sample_id))) {
    g.sample_id = message_id;
    g.sample_inputs = ordered_json::object();
    for (uint32_t f = 0; f < table.field_count(); ++f) {
      const std::string name(table.field(f).name);
      if (std::find(key_fields.begin(), key_fields.end(), f) != key_fields.end()) continue;
      g.sample_inputs[name] =
          redacted.count(name) > 0 ? ordered_json("<redacted>") : slot_json(input.slot(f));
    }
  }
}

std::string ProposalBuilder::document() const {
  const State& s = *state_;
  std::vector<const Group*> sorted;
  for (const auto& [id, g] : s.groups) sorted.push_back(&g);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Group* a, const Group* b) { return a->count > b->count; });
  ordered_json proposal = ordered_json::array();
  const std::string verb = default_verb();
  for (const Group* g : sorted) {
    ordered_json entry;
    for (size_t k = 0; k < s.key_names.size(); ++k) entry[s.key_names[k]] = g->key[k];
    entry["verb"] = verb;
    entry["rationale"] = "";
    ordered_json evidence;
    evidence["count"] = g->count;
    if (g->first_ms) {
      evidence["first_seen"] = utc_text(*g->first_ms);
      evidence["last_seen"] = utc_text(*g->last_ms);
    }
    evidence["dumps"] = std::vector<std::string>(g->dumps.begin(), g->dumps.end());
    evidence["sample_message_ids"] =
        std::vector<std::string>(g->message_ids.begin(), g->message_ids.end());
    evidence["sample_inputs"] = g->sample_inputs;
    entry["evidence"] = evidence;
    proposal.push_back(entry);
  }
  return proposal.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

const ProposalCounts& ProposalBuilder::counts() const { return state_->counts; }

size_t ProposalBuilder::group_count() const { return state_->groups.size(); }

std::string ProposalBuilder::default_verb() const {
  return std::string(state_->table.verb_name(state_->table.default_verb()));
}

const std::map<std::pair<std::string, std::string>, uint64_t>& ProposalBuilder::unmapped() const {
  return state_->unmapped;
}

}  // namespace replaygate::checks
