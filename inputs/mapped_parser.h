// The mapping engine: a dumped record, as a BrokerRecordReader reads it (broker_record.h: kcat -J
// lines in kafka.cc, rabbitmq, sqs, pubsub, servicebus, sidekiq), -> Input through the reviewed
// mapping file (mapping.h, docs/input-mapping.md): header / payload / record / constant sources,
// decode:, occurrence:, map:, defaults. Every mapped format runs it; a new format is its reader.
//
// Unreadable: whatever the reader refuses ("invalid record: REASON").
// A mapped value that is missing (and neither optional nor defaulted), unmapped by `map:`, of the
// wrong type, in a payload that is not JSON, in a header that appears more than once, or in a
// header that is present with a null value (kcat -J `["x-replay", null]`: only a missing header is
// absent) makes the record invalid with "invalid input: FIELD (what went wrong)".
//
// Header names match exactly (Kafka header keys are case-sensitive). A record with a header that
// differs from a mapped one only in ASCII case (`X-Replay` for `x-replay`) is invalid input, as
// for a null header: "invalid input: replays (header 'X-Replay' differs from the mapped header
// 'x-replay' only in ASCII case: header names match exactly, so the record's value for it is
// unknown; fix the producer or the mapping)" (for message_id or body_hash: the record is
// unreadable), never decided as if the header were missing.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/broker_record.h"
#include "inputs/header_names.h"
#include "inputs/mapping.h"
#include "inputs/records.h"
#include "runtime/table.h"

namespace replaygate::inputs {

class MappedParser : public RecordParser {
 public:
  // Receives one warning line (no trailing newline), already escaped for a terminal.
  using WarningSink = std::function<void(const std::string& warning)>;
  // `mapping` must have been checked against `table` without errors and outlive the parser;
  // `reader` reads each record. An empty `warn` prints each warning on stderr (a header one edit
  // away from a mapped header's skeleton, once per name).
  MappedParser(const Table& table, const Mapping& mapping,
               std::unique_ptr<BrokerRecordReader> reader, WarningSink warn = {});
  ~MappedParser() override;
  bool parse(std::string_view line, Input& input, RecordMeta* meta, std::string* problem) override;
  // For explain (records.h): topic, partition, offset, timestamp (when the record has one), key,
  // each header in order, the broker's delivery count (when it has one), and the payload's size
  // (its fields are shown only as mapped inputs).
  std::vector<RecordPartValue> record_parts() const override;
  // The mapping entry's source, and what the record held there (read again: explain only).
  std::optional<InputOrigin> input_origin(uint32_t field) const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace replaygate::inputs
