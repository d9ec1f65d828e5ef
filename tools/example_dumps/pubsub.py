# Writes examples/ dump for --input-format pubsub to stdout (deterministic, invented values; python3 stdlib only).
# Counts as Pub/Sub writes them: the source delivery count is maxDeliveryAttempts (5) on arrival.
# Run from the repository root: python3 tools/example_dumps/pubsub.py > examples/pubsub-dlq.json; the trap records are commented.
import json, base64, sys
SUB = {'payment.capture': 'payment-capture-worker', 'inventory.reserve': 'inventory-reserve-worker',
       'webhook.partner': 'webhook-partner-worker', 'mail.receipt': 'mail-receipt-worker'}
n = [0]
def msg(topic, err, count='5', key='k', committed=False, replay=None, data=None, attrs=None, drop=(), attempt=1):
    n[0] += 1
    if data is None:
        d = {}
        if key: d['idempotency_key'] = key
        d['committed'] = committed
        d['amount_cents'] = 500 + n[0]
        data = base64.b64encode(json.dumps(d, separators=(',', ':')).encode()).decode()
    a = {'CloudPubSubDeadLetterSourceDeliveryCount': count,
         'CloudPubSubDeadLetterSourceSubscription': SUB.get(topic, topic),
         'CloudPubSubDeadLetterSourceSubscriptionProject': 'acme-payments',
         'CloudPubSubDeadLetterSourceTopicPublishTime': '2025-11-29T08:%02d:00.250Z' % n[0],
         'error-class': err}
    if replay is not None: a['x-replay'] = replay
    if attrs: a.update(attrs)
    for k in drop: a.pop(k, None)
    m = {'ackId': 'RkhRNxkIaFEOT14jPzUgKEUSAgdOBH%04d' % n[0], 'message': {
        'data': data, 'attributes': a, 'messageId': str(9160000000000000 + n[0]),
        'publishTime': '2025-11-29T09:%02d:01.500Z' % n[0]}, 'deliveryAttempt': attempt}
    return m
M = [
 msg('payment.capture', 'timeout', '5', 'cap_p101'),
 msg('payment.capture', 'insufficient_funds', '5', 'cap_p102'),
 msg('payment.capture', 'duplicate', '5', 'cap_p103'),
 msg('inventory.reserve', 'lock_timeout', '5', 'res_p201'),
 msg('inventory.reserve', 'overbook', '5', 'res_p202'),
 msg('webhook.partner', 'http_503', '1', 'wh_p301'),
 msg('webhook.partner', 'http_400', '1', 'wh_p302'),
 msg('mail.receipt', 'smtp_421', '1', 'mail_p401'),
 msg('mail.receipt', 'unknown_recipient', '5', 'mail_p402'),
 msg('payment.capture', 'timeout', '5', None),                        # no_idempotency_key
 msg('payment.capture', 'timeout', '5', 'cap_p104', committed=True),  # already_committed
 msg('payment.capture', 'timeout', '5', 'cap_p105', replay='3'),     # 3 redrives: attempts_exhausted
 msg('mail.receipt', 'smtp_421', '1', 'mail_p403', replay='1'),       # already_replayed
 msg('mail.receipt', 'timeout', '5', 'mail_p404'),                    # no rule: default
 msg('payment.capture', 'timeout', '5', 'cap_p101'),                  # same key: maybe-duplicate
 msg('payment.capture', 'timeout', '5', 'cap_p106', data='eyJpZGVtcG90ZW5jeV9rZXkiOiJjYXBfcDEwNiJ9!!'),  # data not base64
 msg('payment.capture', 'timeout', None, 'cap_p107', drop=('CloudPubSubDeadLetterSourceDeliveryCount',)),  # no count (the counter is not mapped: explain shows it)
 msg('payment.capture', 'timeout', 'five', 'cap_p108'),               # a string count (the counter is not mapped: explain shows it)
 msg('payment.capture', 'timeout', '5', 'cap_p109', data=base64.b64encode(b'capture cap_p109').decode()),  # body not JSON
 msg('payment.capture', 'timeout', '5', 'cap_p110', attrs={'CloudPubSubDeadLetterSourceSubscription': 'payment-capture-canary'}),  # unknown subscription
 msg('payment.capture', 'timeout', '5', 'cap_p111', attrs={'x-replay': ''}),  # empty replay marker
]
sys.stdout.write(json.dumps({'receivedMessages': M}, indent=2) + '\n')
