// The `kafka` record format: Kafka records as `kcat -C -J` prints them, one JSON object per line:
//   {"topic":"payments.DLT","partition":0,"offset":17,"tstype":"create","ts":1764403200000,
//    "broker":1,"headers":["kafka_dlt-exception-cause-fqcn","java.net.SocketTimeoutException",...],
//    "key":"cap_9f3a","payload":"{\"idempotency_key\":\"cap_9f3a\",...}"}
// (kcat omits tstype/ts when the broker has no timestamp and headers when there are none; header
// values and key/payload may be null). Which record part feeds which policy input is the mapping
// file's business (mapping.h); the payload, when the mapping reads it, must be a JSON document.
//
// Unreadable: anything LetterParser rejects at the line level, a key kcat does not print, a
// duplicate key, a field of the wrong JSON type, headers not a flat [name, value, ...] array.
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
// The mapping application here (header / payload / record sources, decode:, occurrence:, map:,
// defaults) also serves every other mapped format: make_mapped_parser() (broker_record.h) runs it
// on records a BrokerRecordReader reads (rabbitmq, sqs, pubsub, servicebus, sidekiq). Moving it
// into inputs/broker_record.cc, with the kcat reader as one more BrokerRecordReader, is the next
// step of that split.
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

class KafkaParser : public RecordParser {
 public:
  // Receives one warning line (no trailing newline), already escaped for a terminal.
  using WarningSink = std::function<void(const std::string& warning)>;
  // `mapping` must have been checked against `table` without errors and outlive the parser.
  // An empty `warn` prints each warning on stderr (a header one edit away from a mapped header's
  // skeleton, once per name).
  KafkaParser(const Table& table, const Mapping& mapping, WarningSink warn = {});
  // The same mapping application on records that `reader` reads instead of kcat -J lines
  // (make_mapped_parser(), broker_record.h).
  KafkaParser(const Table& table, const Mapping& mapping,
              std::unique_ptr<BrokerRecordReader> reader);
  ~KafkaParser() override;
  bool parse(std::string_view line, Input& input, RecordMeta* meta, std::string* problem) override;
  // For explain (records.h): topic, partition, offset, timestamp (when kcat printed one), key,
  // each header in order, and the payload's size (its fields are shown only as mapped inputs).
  std::vector<RecordPartValue> record_parts() const override;
  // The mapping entry's source, and what the record held there (read again: explain only).
  std::optional<InputOrigin> input_origin(uint32_t field) const override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace replaygate::inputs
