// The `servicebus` record format: Azure Service Bus dead-letter messages, one JSON object per line,
// as three writers make a received message (docs/input-mapping.md "Azure Service Bus"), each read
// field for field, one writer's names per message:
//   camelCase  a receive-and-print script, or JSON.stringify of @azure/service-bus 7.x's
//              ServiceBusReceivedMessage (body: a string, the SDK's decoded JSON value, or a
//              Node.js Buffer {"type":"Buffer","data":[...]}; sequenceNumber: an integer or
//              a long.js Long {"low","high","unsigned"}; messageId: a string or an integer)
//   .NET       System.Text.Json of Azure.Messaging.ServiceBus's ServiceBusReceivedMessage
//              (PascalCase; Body is BinaryData, written as base64; ApplicationProperties)
//   Explorer   Service Bus Explorer's export (BrokeredMessage names: Label, Properties, Body text)
// Service Bus keeps DeadLetterReason and DeadLetterErrorDescription as application properties.
// As a broker-neutral record (broker_record.h): headers = the application properties (a string as
// its text, an integer as decimal text, a boolean as true/false, null as null, anything else as its
// JSON text); payload = the body; key = the message id; topic = the dead-letter source (missing
// without it: a message dead-lettered in its own queue has none); offset = the sequence number;
// delivery-count = the delivery count.
// Unreadable: a key no writer has, keys of two writers, a PascalCase Body whose writer cannot be
// told, a duplicate key at any depth (json_keys.h), a field of the wrong JSON type.
#pragma once

#include <memory>

#include "inputs/broker_record.h"

namespace replaygate::inputs {

std::unique_ptr<BrokerRecordReader> make_servicebus_reader();

}  // namespace replaygate::inputs
