// The `sqs` record format: `aws sqs receive-message --attribute-names All
// --message-attribute-names All` output, {"Messages":[...]} (decide streams the array, one message
// at a time; an empty output, as aws prints when the queue had nothing, is no message). One
// message:
//   {"MessageId":"5fea7756-...","ReceiptHandle":"AQEB...","MD5OfBody":"...","Body":"{...}",
//    "Attributes":{"ApproximateReceiveCount":"4","SentTimestamp":"1764403200000",
//                  "DeadLetterQueueSourceArn":"arn:aws:sqs:eu-west-1:123456789012:payment-capture",
//                  ...},
//    "MD5OfMessageAttributes":"...",
//    "MessageAttributes":{"x-replay":{"StringValue":"1","DataType":"Number"},
//                         "trace":{"BinaryValue":"AAEC","DataType":"Binary"}}}
// As a broker-neutral record (broker_record.h): headers = MessageAttributes (a StringValue as its
// text, a BinaryValue as its base64 text: map it with decode: base64); payload = Body (the
// mapping's payload pointers read it as JSON); key = MessageId; topic = the queue name at the end
// of Attributes.DeadLetterQueueSourceArn (missing without it); timestamp =
// Attributes.SentTimestamp; delivery-count = Attributes.ApproximateReceiveCount (strict decimal);
// offset = the 0-based position. All attribute values are strings, as SQS returns them.
//
// Unreadable: not an object, a key receive-message does not print, a duplicate key or attribute, a
// field of the wrong JSON type, a message attribute without exactly one of StringValue and
// BinaryValue (StringListValues / BinaryListValues are reserved by SQS and refused).
#pragma once

#include <memory>

#include "inputs/broker_record.h"

namespace replaygate::inputs {

std::unique_ptr<BrokerRecordReader> make_sqs_reader();

}  // namespace replaygate::inputs
