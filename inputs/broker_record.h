// The broker-neutral record: what every mapped reader (spring-kafka, rabbitmq, ...) makes of one
// dumped record before the mapping file applies (docs/input-mapping.md). The mapping reads
//   header: NAME      -> headers (Kafka headers, AMQP headers, ...), each a name and bytes or null
//   payload: /ptr     -> payload (the message body, already decoded from its dump encoding)
//   record: PART      -> topic, partition, offset, key, timestamp, coordinates, delivery-count
// The live gate (redrive/rabbitmq/envelope_record.h) builds the same record from an AMQP
// envelope, as the management API's message object (no broker client in inputs/).
//
// A BrokerRecordReader turns one dumped record (a kcat line, a management-API message object)
// into a BrokerRecord; make_mapped_parser() wraps one into a RecordParser that applies a mapping
// (the mapping engine, inputs/mapped_parser.h; the kcat reader is one more reader, kafka.cc).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "inputs/mapping.h"
#include "inputs/records.h"
#include "runtime/table.h"

namespace replaygate::inputs {

struct BrokerRecord {
  std::string_view topic;      // kafka: the topic; rabbitmq: the routing key; sqs: the source queue
  bool topic_missing = false;  // sqs without DeadLetterQueueSourceArn: `record: topic` is missing
  int64_t partition = 0;
  int64_t offset = 0;  // kafka: the offset; rabbitmq: the message's 0-based position in the dump
  bool has_timestamp = false;
  int64_t timestamp = 0;
  bool key_null = true;  // kafka: the record key; rabbitmq: properties.message_id
  std::string_view key;
  bool payload_null = true;
  std::string_view payload;     // decoded (rabbitmq base64 payloads are decoded by the reader)
  std::string payload_problem;  // why the payload cannot be read ("not base64: ..."), or ""
  // Headers in the record's order (never relied on: RabbitMQ 3.10 re-sorts them); a value is the
  // header's bytes (an AMQP integer or boolean as its decimal / true / false text), or nullopt.
  std::vector<std::pair<std::string_view, std::optional<std::string_view>>> headers;
  // The broker's own delivery counter (`record: delivery-count`): rabbitmq the x-death count of
  // the first death; nullopt when the record has none, with delivery_count_problem set when it has
  // one that cannot be read (two matching x-death entries, a count that is not an integer, ...).
  std::optional<int64_t> delivery_count;
  std::string delivery_count_problem;
  // Bytes were repaired (U+FFFD) while reading: a mapped value with U+FFFD is then refused.
  bool repaired = false;
  // Storage for values the reader made (decoded payloads, integer header texts).
  std::deque<std::string> owned;

  void clear() {
    topic = key = payload = {};
    topic_missing = false;
    partition = offset = timestamp = 0;
    has_timestamp = false;
    key_null = payload_null = true;
    payload_problem.clear();
    headers.clear();
    delivery_count.reset();
    delivery_count_problem.clear();
    repaired = false;
    owned.clear();
  }
};

class BrokerRecordReader {
 public:
  virtual ~BrokerRecordReader() = default;
  // Reads one record (`text` padded as LineReader hands it out) into *record (cleared first).
  // False when it cannot be read, with *problem the reason without the "invalid record: " prefix
  // and *problem_offset the offset in `text` of what is wrong (RecordParser::kNoOffset: none).
  virtual bool read(std::string_view text, BrokerRecord* record, std::string* problem,
                    size_t* problem_offset) = 0;
};

// A RecordParser that reads each record with `reader` and applies `mapping` to it, as the kcat
// reader does (mapped_parser.h): header, payload and record sources, decode:, occurrence:, map:,
// defaults. `mapping` must have been checked against `table` and outlive the parser.
std::unique_ptr<RecordParser> make_mapped_parser(const Table& table, const Mapping& mapping,
                                                 std::unique_ptr<BrokerRecordReader> reader);

}  // namespace replaygate::inputs
