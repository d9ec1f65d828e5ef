// The `servicebus` record format: Azure Service Bus dead-letter messages, one JSON object per line,
// as a dump script writes ServiceBusReceivedMessage fields (names as in the SDKs' JSON, camelCase):
//   {"messageId":"m-1","sequenceNumber":41,"enqueuedTimeUtc":"2025-11-29T08:00:00Z",
//    "deliveryCount":10,"deadLetterSource":"payment-capture","subject":"capture",
//    "contentType":"application/json","correlationId":null,"sessionId":null,
//    "applicationProperties":{"DeadLetterReason":"MaxDeliveryCountExceeded",
//                             "DeadLetterErrorDescription":"Message could not be consumed after 10
//                             delivery attempts.","error-class":"timeout","x-replay":1},
//    "body":"{\"idempotency_key\":\"cap_1\",\"committed\":false}"}
// Service Bus keeps DeadLetterReason and DeadLetterErrorDescription as application properties.
// As a broker-neutral record (broker_record.h): headers = applicationProperties (a string as its
// text, an integer as decimal text, a boolean as true/false, null as null, anything else as its
// JSON text); payload = body (a string; null: a null payload); key = messageId; topic =
// deadLetterSource (missing without it: a message dead-lettered in its own queue has none);
// offset = sequenceNumber; delivery-count = deliveryCount.
// Unreadable: a key not in that list, a duplicate key or property, a field of the wrong JSON type.
#pragma once

#include <memory>

#include "inputs/broker_record.h"

namespace replaygate::inputs {

std::unique_ptr<BrokerRecordReader> make_servicebus_reader();

}  // namespace replaygate::inputs
