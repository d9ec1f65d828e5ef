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
// What a mapped value read from it may be is the mapping engine's (mapped_parser.h): this file is
// the kcat reader, one more BrokerRecordReader (broker_record.h).
#pragma once

#include "inputs/mapped_parser.h"
#include "inputs/mapping.h"
#include "runtime/table.h"

namespace replaygate::inputs {

// The mapping engine on kcat -J lines.
class KafkaParser : public MappedParser {
 public:
  // `mapping` must have been checked against `table` without errors and outlive the parser.
  // An empty `warn` prints each warning on stderr (a header one edit away from a mapped header's
  // skeleton, once per name).
  KafkaParser(const Table& table, const Mapping& mapping, WarningSink warn = {});
};

}  // namespace replaygate::inputs
