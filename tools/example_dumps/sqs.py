# Writes examples/ dump for --input-format sqs to stdout (deterministic, invented values; python3 stdlib only).
# Counts as SQS writes them: ApproximateReceiveCount is above maxReceiveCount (3) on arrival.
# Run from the repository root: python3 tools/example_dumps/sqs.py > examples/<name>; the trap records are commented.
import json, base64, sys, uuid, hashlib
CAUSE = ['timeout','insufficient_funds','lock_timeout','overbook','http_503','http_400','smtp_421','unknown_recipient']
n = [0]
ACCT = 'arn:aws:sqs:eu-west-1:123456789012:'
def msg(queue, error, count='4', key='k', committed=False, replay=None, body=None, attrs=None, src=True, extra_ma=None):
    n[0] += 1
    if body is None:
        d = {}
        if key: d['idempotency_key'] = key
        d['committed'] = committed
        d['error'] = error
        d['amount_cents'] = 700 + n[0]
        body = json.dumps(d, separators=(',', ':'))
    mid = str(uuid.UUID(int=0x5fea7756_0000_4000_8000_000000000000 + n[0]))
    a = {'SenderId': 'AIDAEXAMPLEID0000', 'ApproximateFirstReceiveTimestamp': str(1764403200000 + 1000 * n[0]),
         'SentTimestamp': str(1764403100000 + 1000 * n[0])}
    if count is not None: a['ApproximateReceiveCount'] = count
    if src: a['DeadLetterQueueSourceArn'] = ACCT + queue
    if attrs: a.update(attrs)
    ma = {}
    if replay is not None: ma['x-replay'] = {'StringValue': replay, 'DataType': 'Number'}
    ma['trace-id'] = {'StringValue': 'tr-%04d' % n[0], 'DataType': 'String'}
    if extra_ma: ma.update(extra_ma)
    m = {'MessageId': mid, 'ReceiptHandle': 'AQEB' + base64.b64encode(hashlib.sha256(mid.encode()).digest()).decode(),
         'MD5OfBody': hashlib.md5(body.encode()).hexdigest(), 'Body': body, 'Attributes': a,
         'MD5OfMessageAttributes': hashlib.md5(json.dumps(ma).encode()).hexdigest(), 'MessageAttributes': ma}
    return m
M = [
 msg('payment-capture', 'timeout', '4', 'cap_s101'),
 msg('payment-capture', 'insufficient_funds', '5', 'cap_s102'),
 msg('payment-capture', 'duplicate', '4', 'cap_s103'),
 msg('inventory-reserve', 'lock_timeout', '5', 'res_s201'),
 msg('inventory-reserve', 'overbook', '4', 'res_s202'),
 msg('webhook-partner', 'http_503', '1', 'wh_s301'),
 msg('webhook-partner', 'http_400', '1', 'wh_s302'),
 msg('mail-receipt', 'smtp_421', '1', 'mail_s401'),
 msg('mail-receipt', 'unknown_recipient', '4', 'mail_s402'),
 msg('payment-capture', 'timeout', '4', None),                 # no_idempotency_key
 msg('payment-capture', 'timeout', '4', 'cap_s104', committed=True),  # already_committed
 msg('payment-capture', 'timeout', '4', 'cap_s105', replay='3'),  # 3 redrives: attempts_exhausted
 msg('mail-receipt', 'smtp_421', '1', 'mail_s403', replay='1'),  # already_replayed
 msg('mail-receipt', 'timeout', '4', 'mail_s404'),             # no rule: default
 msg('payment-capture', 'timeout', '4', 'cap_s101'),           # same key: maybe-duplicate
 msg('payment-capture', 'timeout', None, 'cap_s106'),          # no receive count (the counter is not mapped: explain shows it)
 msg('payment-capture', 'timeout', 'three', 'cap_s107'),       # a receive count that is not a number (the counter is not mapped: explain shows it)
 msg('payment-capture', 'timeout', '4', 'cap_s108', src=False),  # no source queue
 msg('webhook-partner', 'http_503', '1', 'wh_s303', body='partner=wh_s303&status=503'),  # body not JSON
 msg('mail-receipt', 'smtp_421', '1', 'mail_s405', replay='one'),  # a string count
 msg('payment-capture', 'timeout', '4', 'cap_s109', extra_ma={'x-replay': {'StringValue': '0', 'BinaryValue': 'MA==', 'DataType': 'Number'}}),  # two values
 msg('payment-capture', 'gateway_exploded', '4', 'cap_s110'),  # unmapped error
]
sys.stdout.write(json.dumps({'Messages': M}, indent=4) + '\n')
