# Writes examples/ dump for --input-format servicebus to stdout (deterministic, invented values; python3 stdlib only).
# Counts as Service Bus writes them: deliveryCount is MaxDeliveryCount (10) for MaxDeliveryCountExceeded.
# Run from the repository root: python3 tools/example_dumps/servicebus.py > examples/servicebus-dlq.jsonl; the trap records are commented.
import json, sys
n = [0]
def msg(queue, err, count=10, key='k', committed=False, replay=None, body=None, props=None, drop=(), source=True, reason='MaxDeliveryCountExceeded', noerr=False):
    n[0] += 1
    if body is None:
        d = {}
        if key: d['idempotency_key'] = key
        d['committed'] = committed
        d['amount_cents'] = 300 + n[0]
        body = json.dumps(d, separators=(',', ':'))
    p = {'DeadLetterReason': reason,
         'DeadLetterErrorDescription': 'Message could not be consumed after %s delivery attempts.' % count,
         'error-class': err}
    if noerr: p.pop('error-class')
    if replay is not None: p['x-replay'] = replay
    if props: p.update(props)
    m = {'messageId': 'sb-%04d' % n[0], 'sequenceNumber': 1000 + n[0],
         'enqueuedTimeUtc': '2025-11-29T08:%02d:00Z' % n[0], 'deliveryCount': count,
         'deadLetterSource': queue, 'subject': 'work', 'contentType': 'application/json',
         'correlationId': None, 'sessionId': None, 'applicationProperties': p, 'body': body}
    if not source: m.pop('deadLetterSource')
    for k in drop: m.pop(k, None)
    return json.dumps(m, separators=(',', ':'))
M = [
 msg('payment-capture', 'timeout', 10, 'cap_b101'),
 msg('payment-capture', 'insufficient_funds', 10, 'cap_b102'),
 msg('payment-capture', 'duplicate', 10, 'cap_b103'),
 msg('inventory-reserve', 'lock_timeout', 10, 'res_b201'),
 msg('inventory-reserve', 'overbook', 10, 'res_b202'),
 msg('webhook-partner', 'http_503', 10, 'wh_b301'),
 msg('webhook-partner', 'http_400', 10, 'wh_b302'),
 msg('mail-receipt', 'smtp_421', 10, 'mail_b401'),
 msg('mail-receipt', 'unknown_recipient', 10, 'mail_b402'),
 msg('payment-capture', 'timeout', 10, None),                       # no_idempotency_key
 msg('payment-capture', 'timeout', 10, 'cap_b104', committed=True), # already_committed
 msg('payment-capture', 'timeout', 10, 'cap_b105', replay=3),      # 3 redrives: attempts_exhausted
 msg('mail-receipt', 'smtp_421', 10, 'mail_b403', replay=1),        # already_replayed
 msg('mail-receipt', 'timeout', 10, 'mail_b404'),                   # no rule: default
 msg('payment-capture', 'timeout', 10, 'cap_b101'),                 # same key: maybe-duplicate
 msg('payment-capture', 'timeout', 10, 'cap_b106', drop=('deliveryCount',)),  # no count (the counter is not mapped: explain shows it)
 msg('payment-capture', 'timeout', '1', 'cap_b107'),               # a string count (the counter is not mapped: explain shows it)
 msg('payment-capture', 'timeout', 10, 'cap_b108', source=False),   # no deadLetterSource
 msg('payment-capture', 'timeout', 10, 'cap_b109', body='<capture id="cap_b109"/>'),  # body not JSON
 msg('mail-receipt', 'smtp_421', 10, 'mail_b405', props={'x-replay': None}),  # null property
 msg('payment-capture', 'timeout', 0, 'cap_b110', reason='TTLExpiredException', noerr=True),  # expired, never tried: no error class
]
sys.stdout.write('\n'.join(M) + '\n')
