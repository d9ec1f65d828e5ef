// The `pubsub` record format: Google Cloud Pub/Sub pulled messages, the REST response of
// projects.subscriptions.pull on a dead-letter topic's subscription, {"receivedMessages":[...]}
// (decide streams the array; an empty response `{}` is no message). One message:
//   {"ackId":"RkhRNxkIaFEOT14j...","deliveryAttempt":1,
//    "message":{"data":"eyJpZGVtcG90ZW5jeV9rZXkiOi...","messageId":"9160000000000001",
//               "publishTime":"2025-11-29T08:01:00.123Z","orderingKey":"",
//               "attributes":{"CloudPubSubDeadLetterSourceDeliveryCount":"5",
//                             "CloudPubSubDeadLetterSourceSubscription":"payment-capture-worker",
//                             "CloudPubSubDeadLetterSourceSubscriptionProject":"acme-payments",
//                             "CloudPubSubDeadLetterSourceTopicPublishTime":"2025-11-29T07:59:00Z",
//                             "error-class":"timeout"}}}
// As a broker-neutral record (broker_record.h): headers = message.attributes (strings); payload =
// message.data, base64-decoded (a data that does not decode makes every input read from the
// payload invalid; no data is an empty payload); key = message.messageId; delivery-count =
// deliveryAttempt (present only when the subscription read has a dead-letter policy itself);
// offset = the 0-based position; no topic (`record: topic` is missing) and no timestamp.
// Unreadable: a key the API does not return, a duplicate key or attribute, a field of the wrong
// JSON type, an attribute value that is not a string.
#pragma once

#include <memory>

#include "inputs/broker_record.h"

namespace replaygate::inputs {

std::unique_ptr<BrokerRecordReader> make_pubsub_reader();

}  // namespace replaygate::inputs
