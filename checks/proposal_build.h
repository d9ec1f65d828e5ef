// A proposal file (docs/proposals.md) built from dead-letter records: the records a table sends
// to its default, grouped by key values, with evidence. In: the records one at a time; out: the
// proposal's JSON text, the counts and the raw values a mapping's map: has no entry for, as data.
// `replaygate propose` reads the dumps and prints; the web console can build one the same way.
// Order-independent within a group and deterministic: the same records give the same bytes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inputs/mapping.h"
#include "inputs/records.h"
#include "runtime/table.h"

namespace replaygate::checks {

struct ProposalCounts {
  uint64_t records = 0;     // every record but blank lines
  uint64_t decided = 0;     // by a rule (not proposed)
  uint64_t invalid = 0;     // an invalid input, or a mapped value the mapping cannot read
  uint64_t unreadable = 0;  // too large, or not a record of the format
  uint64_t proposed() const { return records - decided - invalid - unreadable; }
};

class ProposalBuilder {
 public:
  // `table` decides the records (it must outlive the builder); groups are keyed by `key_fields`,
  // named `key_names` in the entries; inputs named in `redacted` show "<redacted>" in a sample;
  // `timestamp_ms` is the format's milliseconds per `timestamp` part (0: none, no first_seen /
  // last_seen); `mapping` (null for letters) is the one the parser reads through.
  ProposalBuilder(const Table& table, std::vector<uint32_t> key_fields,
                  std::vector<std::string> key_names, std::set<std::string> redacted,
                  int64_t timestamp_ms, const inputs::Mapping* mapping);
  ~ProposalBuilder();
  ProposalBuilder(const ProposalBuilder&) = delete;
  ProposalBuilder& operator=(const ProposalBuilder&) = delete;

  // A record too large to read: counted unreadable.
  void add_unreadable();
  // One record of dump `dump` (padded, as inputs::LineReader gives it), parsed by `parser` and
  // decided: a default decision joins its group; the rest are counted.
  void add(std::string_view record, const std::string& dump, inputs::RecordParser& parser);

  // The proposal: an array of entries sorted by count (ties by key values' JSON text), each with
  // the key values, the default verb, an empty rationale and its evidence; "\n"-terminated.
  std::string document() const;
  const ProposalCounts& counts() const;
  size_t group_count() const;
  std::string default_verb() const;
  // (input name, raw header value) -> records whose key input a map: has no entry for.
  const std::map<std::pair<std::string, std::string>, uint64_t>& unmapped() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace replaygate::checks
