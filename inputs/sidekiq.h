// The `sidekiq` record format: Sidekiq Dead and Retry set entries, one job hash per line (JSON
// Lines), as `redis-cli --raw ZRANGE dead 0 -1` (or `retry`) prints them:
//   {"retry":3,"queue":"payments","class":"CaptureJob","args":[{"idempotency_key":"cap_1"}],
//    "jid":"0b5c...","created_at":1764403000.12,"enqueued_at":1764403100.5,
//    "error_message":"execution expired","error_class":"Net::ReadTimeout","failed_at":1764403101.0,
//    "retry_count":2,"retried_at":1764403200.25}
// As a broker-neutral record (broker_record.h): payload = the whole job hash (so the mapping reads
// `payload: /error_class`, `payload: /args/0/idempotency_key`); key = jid; topic = queue; no
// headers; delivery-count = retry_count + 1 (the failures so far: Sidekiq sets retry_count 0 at the
// first failure); timestamp = failed_at in milliseconds (a float is seconds, as Sidekiq wrote it
// before 8.0; an integer is milliseconds, as since 8.0); offset = the 0-based position. Unreadable:
// what any JSON Lines reader refuses, a job without a string jid, class or queue. A retry_count
// that is not an integer >= 0 makes only the delivery count unreadable.
#pragma once

#include <memory>

#include "inputs/broker_record.h"

namespace replaygate::inputs {

std::unique_ptr<BrokerRecordReader> make_sidekiq_reader();

}  // namespace replaygate::inputs
