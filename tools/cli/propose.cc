// `replaygate propose`: the unknown (key) groups of dead-letter dumps as a proposal file for review
// (docs/proposals.md), and `replaygate proposal compare`: where two proposals give one group
// different verbs. Offline and deterministic: no network, no model, the same dumps give the same
// bytes.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/plural.h"
#include "compiler/ir.h"
#include "inputs/formats.h"
#include "inputs/records.h"
#include "review/sensitive.h"
#include "runtime/table.h"
#include "tools/cli/commands.h"
#include "tools/cli/files.h"
#include "tools/cli/policy_source.h"
#include "tools/cli/record_reading.h"
#include "tools/cli/trust.h"

namespace replaygate::cli {
namespace {

using nlohmann::ordered_json;

constexpr size_t kSamples = 5;

struct ProposeOptions {
  std::string policy, table, output;
  std::vector<std::string> dumps, keys;
  inputs::InputFormatOptions format;
  TrustFlags trust;
};

int usage(const std::string& message) {
  std::fprintf(stderr, "replaygate propose: %s\n", message.c_str());
  return kExitUsage;
}

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

std::string dump_text(const ordered_json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
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

int run_propose(const ProposeOptions& o) {
  if (o.policy.empty() == o.table.empty()) {
    return usage("give exactly one of --policy POLICY or --table TABLE.rgt");
  }
  if (o.dumps.empty()) return usage("give at least one DUMP");
  std::string format_error;
  const InputFormat* format = inputs::choose_input_format(o.format, &format_error);
  if (format == nullptr) return usage(format_error);

  std::unique_ptr<Table> table;
  std::vector<std::string> sensitive;
  if (const int code = open_table(o.policy, o.table, &table, &sensitive, &o.trust);
      code != kExitOk) {
    return code;
  }
  // The key fields: --key, else the policy's first decision table's keys.
  std::vector<std::string> key_names = o.keys;
  if (key_names.empty() && !o.policy.empty()) {
    LoadedPolicy loaded;
    const ir::Table* first = nullptr;
    if (load_policy_reporting(o.policy, DiagnosticFormat::kText, &loaded) == kExitOk &&
        (first = ir::first_table(loaded.policy->policy)) != nullptr) {
      for (uint32_t f : first->key_fields) {
        key_names.emplace_back(loaded.policy->policy.fields[f].name);
      }
    }
  }
  if (key_names.empty()) {
    return usage(
        "name the key fields the entries group by with --key FIELD (repeatable; a compiled table "
        "does not keep its decision tables' keys, and this policy has no decision table)");
  }
  std::vector<uint32_t> key_fields;
  for (const std::string& name : key_names) {
    const uint32_t f = table->field_index(name);
    if (f == Table::kNoField) return usage("--key '" + name + "' is not an input of the policy");
    key_fields.push_back(f);
  }
  const std::set<std::string> redacted = review::sensitive_names(sensitive);

  RecordReading reading;
  if (const int code =
          open_record_parser(*format, o.format.mapping, *table, "no proposal written", &reading);
      code != kExitOk) {
    return code;
  }
  std::map<std::string, Group> groups;  // by the key values' JSON text
  std::map<std::pair<std::string, std::string>, uint64_t>
      unmapped;  // (input, raw value) -> records
  Input input(*table);
  uint64_t records = 0, unreadable = 0, invalid = 0, decided = 0;
  for (const std::string& path : o.dumps) {
    const int fd = path == "-" ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::fprintf(stderr, "replaygate propose: cannot open %s: %s; no proposal written\n",
                   path.c_str(), std::strerror(errno));
      return kExitUsage;
    }
    std::optional<inputs::LineReader> lines;
    std::optional<inputs::JsonArrayReader> array;
    if (format->json_array) {
      array.emplace(fd, inputs::kMaxRecordBytes, std::string(format->array_member));
    } else {
      lines.emplace(fd);
    }
    for (;;) {
      std::string_view record;
      const inputs::LineReader::Status status = array ? array->next(&record) : lines->next(&record);
      if (status == inputs::LineReader::Status::kEnd) break;
      if (status == inputs::LineReader::Status::kError) {
        std::fprintf(stderr, "replaygate propose: cannot read %s: %s; no proposal written\n",
                     path.c_str(),
                     array && !array->error_text().empty()
                         ? array->error_text().c_str()
                         : std::strerror(lines ? lines->error_number() : array->error_number()));
        if (fd != STDIN_FILENO) ::close(fd);
        return kExitUsage;
      }
      ++records;
      if (status == inputs::LineReader::Status::kTooLarge) {
        ++unreadable;
        continue;
      }
      if (!format->json_array && record.find_first_not_of(" \t\r") == std::string_view::npos) {
        --records;  // a blank line holds no record
        continue;
      }
      input.clear();
      inputs::RecordMeta meta;
      std::string problem;
      if (!reading.parser->parse(record, input, &meta, &problem)) {
        // A mapped value the mapping cannot read ("invalid input: ...") is not an unknown pair:
        // its mapping needs the entry first. Its raw value is counted, by key input, so the
        // reviewer sees which map: entries are missing (reported on stderr, not proposed).
        if (problem.rfind("invalid input: ", 0) == 0) {
          ++invalid;
          count_unmapped(*reading.parser, reading.mapping ? &reading.mapping->mapping : nullptr,
                         key_fields, *table, &unmapped);
        } else {
          ++unreadable;
        }
        continue;
      }
      const Decision d = table->decide(input);
      if (d.kind == DecisionKind::kInvalidInput) {
        ++invalid;
        continue;
      }
      if (d.kind != DecisionKind::kDefault) {
        ++decided;
        continue;
      }
      std::vector<ordered_json> key;
      for (uint32_t f : key_fields) key.push_back(slot_json(input.slot(f)));
      const std::string id = ordered_json(key).dump();
      Group& g = groups[id];
      if (g.count == 0) g.key = key;
      ++g.count;
      if (format->timestamp_ms > 0) {
        for (const inputs::RecordPartValue& part : reading.parser->record_parts()) {
          if (part.label != "timestamp" || part.kind != inputs::RecordPartValue::Kind::kInt) {
            continue;
          }
          const int64_t ms = part.number * format->timestamp_ms;
          g.first_ms = std::min(g.first_ms.value_or(ms), ms);
          g.last_ms = std::max(g.last_ms.value_or(ms), ms);
        }
      }
      g.dumps.insert(path);
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
        for (uint32_t f = 0; f < table->field_count(); ++f) {
          const std::string name(table->field(f).name);
          if (std::find(key_fields.begin(), key_fields.end(), f) != key_fields.end()) continue;
          g.sample_inputs[name] =
              redacted.count(name) > 0 ? ordered_json("<redacted>") : slot_json(input.slot(f));
        }
      }
    }
    if (fd != STDIN_FILENO) ::close(fd);
  }

  std::vector<const Group*> sorted;
  for (const auto& [id, g] : groups) sorted.push_back(&g);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Group* a, const Group* b) { return a->count > b->count; });
  ordered_json proposal = ordered_json::array();
  const std::string default_verb(table->verb_name(table->default_verb()));
  for (const Group* g : sorted) {
    ordered_json entry;
    for (size_t k = 0; k < key_names.size(); ++k) entry[key_names[k]] = g->key[k];
    entry["verb"] = default_verb;
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
  const std::string text = dump_text(proposal);
  if (o.output.empty() || o.output == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::string error;
    if (!write_file_atomically(o.output, text, &error)) {
      std::fprintf(stderr, "replaygate propose: cannot write %s: %s\n", o.output.c_str(),
                   error.c_str());
      return kExitUsage;
    }
  }
  const uint64_t proposed = records - decided - invalid - unreadable;
  std::fprintf(stderr,
               "replaygate propose: %s: %llu decided by a rule, %s (%s) go to the default '%s' "
               "and are proposed, %llu with an invalid input, %llu unreadable\n",
               plural(records, "record").c_str(), static_cast<unsigned long long>(decided),
               plural(groups.size(), "group").c_str(), plural(proposed, "record").c_str(),
               default_verb.c_str(), static_cast<unsigned long long>(invalid),
               static_cast<unsigned long long>(unreadable));
  for (const auto& [what, n] : unmapped) {
    std::fprintf(stderr,
                 "replaygate propose: %s: %s %s no entry in the mapping's map: for %s; add one, "
                 "then propose again\n",
                 what.first.c_str(), plural(n, "record").c_str(), n == 1 ? "has" : "have",
                 json_string(what.second).c_str());
  }
  return unreadable > 0 ? kExitFindings : kExitOk;
}

Runner setup_propose(CLI::App& sub) {
  auto o = std::make_shared<ProposeOptions>();
  sub.footer(
      "Reads dead-letter dumps and writes a proposal: one entry per group of records the policy\n"
      "sends to its default (no row, no guard matched), grouped by the key fields (the policy's\n"
      "first decision table's keys, or --key), with the default verb, an empty rationale for the\n"
      "reviewer and evidence (count, dumps, up to five message ids, one record's other inputs,\n"
      "sensitive ones redacted). Sorted by count; the same dumps give the same bytes. Offline: no\n"
      "network, no model. A proposal becomes policy only through review (docs/proposals.md).\n"
      "Exit: 0 written, 1 written but some records were unreadable, 2 usage or I/O errors.");
  sub.add_option("DUMP", o->dumps, "Dumps to read (- for standard input)")->required();
  sub.add_option("--policy", o->policy, "The policy the dumps are decided by");
  sub.add_option("--table", o->table, "A compiled table instead (then give --key)");
  sub.add_option("--input-format", o->format.input_format,
                 "Record format, letters by default (as decide --input-format)")
      ->each([o](const std::string&) { o->format.input_format_set = true; });
  sub.add_option("--mapping", o->format.mapping, "Mapping file for every format but letters");
  sub.add_option("--key", o->keys, "A key field to group by (repeatable; default: the table's)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub.add_option("-o,--output", o->output, "Write the proposal here (atomically), not stdout");
  add_trust_options(sub, &o->trust, /*acting=*/false);
  return [o] { return run_propose(*o); };
}

}  // namespace replaygate::cli
