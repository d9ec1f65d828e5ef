// The `bullmq` record format: BullMQ failed jobs, one per line (JSON Lines), each the job's Redis
// hash as BullMQ stores it (`HGETALL <prefix>:<queue>:<id>`: every field a string) as a JSON
// object, plus `id` (the job id, the member of `<prefix>:<queue>:failed`) and `queue`:
//   {"queue":"payments","id":"job-1","name":"capture","data":"{\"idempotency_key\":\"cap_1\"}",
//    "opts":"{\"attempts\":2}","atm":"2","timestamp":"1796606698320","processedOn":"1796606699000",
//    "finishedOn":"1796606699100","failedReason":"capture timed out","stacktrace":"[\"Error...\"]"}
// As a broker-neutral record (broker_record.h): payload = the job's `data` (the JSON text BullMQ
// stores, so the mapping reads `payload: /idempotency_key`); key = id; topic = queue; headers =
// every other field but id, queue and data (`header: failedReason`, `header: name`,
// `header: rg:replays`, ...); delivery-count = atm (attempts made: the failures so far);
// timestamp = finishedOn (milliseconds); offset = the 0-based position. Unreadable: what any JSON
// Lines reader refuses, a job without a string id, queue or data, a field that is not a string
// (BullMQ's hash fields are strings). An atm that is not an integer >= 0 makes only the delivery
// count unreadable; a finishedOn that is not one leaves the record without a timestamp.
#pragma once

#include <memory>

#include "inputs/broker_record.h"

namespace replaygate::inputs {

std::unique_ptr<BrokerRecordReader> make_bullmq_reader();

}  // namespace replaygate::inputs
