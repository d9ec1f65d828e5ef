// Writes tests/data/inputs/servicebus/js-sdk.jsonl: what JSON.stringify makes of peeked dead-letter
// messages in @azure/service-bus 7.x, with the SDK's own conversion (fromRheaMessage, as
// peekMessages uses it) of AMQP messages encoded and decoded by rhea. Offline, in a scratch dir:
//   npm install @azure/service-bus@7   (7.9.5 made the committed file)
//   sed 's/^exports\.ServiceBusClient = ServiceBusClient;/&exports.__fromRheaMessage = fromRheaMessage;/' \
//     node_modules/@azure/service-bus/dist/index.js > node_modules/@azure/service-bus/dist/index_rg.js
//   node servicebus_js_sdk.js > js-sdk.jsonl
const sb = require('./node_modules/@azure/service-bus/dist/index_rg.js');
const rhea = require('rhea');
const exceeded = {DeadLetterReason: 'MaxDeliveryCountExceeded',
                  DeadLetterErrorDescription: 'Message could not be consumed after 10 delivery attempts.'};
function peeked(o) {
  const m = {
    message_id: o.id, content_type: 'application/json', subject: 'work',
    delivery_count: o.count === undefined ? 10 : o.count, ttl: 1209600000,
    application_properties: {...exceeded, ...o.props},
    message_annotations: {
      'x-opt-enqueued-time': new Date(Date.UTC(2025, 10, 29, 8, o.minute)),
      'x-opt-sequence-number': rhea.types.wrap_long(o.seq),
      'x-opt-enqueue-sequence-number': rhea.types.wrap_long(0),
      'x-opt-locked-until': new Date(Date.UTC(2025, 10, 29, 8, o.minute)),
      'x-opt-deadletter-source': o.source || 'payment-capture',
    },
    body: rhea.message.data_section(Buffer.from(o.body)),
  };
  const decoded = rhea.message.decode(rhea.message.encode(m));
  return JSON.stringify(sb.__fromRheaMessage(decoded, {skipParsingBodyAsJson: false, skipConvertingDate: false}));
}
const out = [
  // A JSON body: the SDK decodes it, so "body" is the object itself.
  peeked({id: 'sb-js-0001', seq: 2001, minute: 1, props: {'error-class': 'timeout'},
          body: '{"idempotency_key":"cap_j101","committed":false}'}),
  peeked({id: 'sb-js-0002', seq: 2002, minute: 2, source: 'inventory-reserve', props: {'error-class': 'overbook'},
          body: '{"idempotency_key":"res_j201","committed":false}'}),
  // Replayed once already (x-replay, an application property): already_replayed.
  peeked({id: 'sb-js-0003', seq: 2003, minute: 3, props: {'error-class': 'timeout', 'x-replay': 1},
          body: '{"idempotency_key":"cap_j102","committed":false}'}),
  // A body that is not JSON: a Node.js Buffer, {"type":"Buffer","data":[...]}.
  peeked({id: 'sb-js-0004', seq: 2004, minute: 4, props: {'error-class': 'timeout'},
          body: 'capture cap_j103'}),
  // A numeric AMQP message id stays a number; the sequence number beyond 2^32 is a Long.
  peeked({id: 4242, seq: 4294967298, minute: 5, source: 'mail-receipt', props: {'error-class': 'smtp_421'},
          body: '{"idempotency_key":"mail_j401","committed":false}'}),
];
process.stdout.write(out.join('\n') + '\n');
