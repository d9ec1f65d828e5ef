# Writes examples/ dump for --input-format kafka-connect to stdout (deterministic, invented values; python3 stdlib only).
# Run from the repository root: python3 tools/example_dumps/kafka_connect.py > examples/kafka-connect-dlq.kcat.jsonl; the trap records are commented.
import json, sys
EXC = {'timeout': 'java.net.SocketTimeoutException',
       'insufficient_funds': 'com.acme.payments.gateway.InsufficientFundsException',
       'duplicate': 'com.acme.payments.gateway.DuplicateCaptureException',
       'lock_timeout': 'org.apache.kafka.connect.errors.RetriableException',
       'overbook': 'com.acme.inventory.OverbookedException',
       'http_503': 'io.confluent.connect.http.sink.HttpServerErrorException',
       'http_400': 'io.confluent.connect.http.sink.HttpClientErrorException',
       'smtp_421': 'com.acme.mail.SmtpServiceNotAvailableException',
       'unknown_recipient': 'com.acme.mail.UnknownRecipientException',
       'convert': 'org.apache.kafka.connect.errors.DataException'}
off = [200]
def rec(topic, errs, key='k', committed=False, replay=None, payload=None, extra=(), drop=()):
    # one error context per failure (Connect appends them; a replayed record keeps its first)
    h = []
    for i, e in enumerate(errs):
        ctx = [('__connect.errors.topic', topic if i == 0 else topic + '.replay'),
               ('__connect.errors.partition', str(i % 3)), ('__connect.errors.offset', str(5000 + 11 * off[0] + i)),
               ('__connect.errors.connector.name', topic.replace('.', '-') + '-sink'), ('__connect.errors.task.id', '0'),
               ('__connect.errors.stage', 'TASK_PUT'), ('__connect.errors.class.name', 'org.apache.kafka.connect.sink.SinkTask'),
               ('__connect.errors.exception.class.name', EXC[e]), ('__connect.errors.exception.message', e.replace('_', ' '))]
        h += [c for c in ctx if c[0] not in drop]
    if replay is not None: h.append(('x-replay', replay))
    h += list(extra)
    if payload is None:
        d = {}
        if key: d['idempotency_key'] = key
        d['committed'] = committed
        d['amount_cents'] = 100 + off[0]
        payload = json.dumps(d, separators=(',', ':'))
    r = {'topic': 'connect-dlq', 'partition': 0, 'offset': off[0], 'tstype': 'create',
         'ts': 1764403200000 + 1000 * off[0], 'broker': 1, 'headers': [x for kv in h for x in kv],
         'key': key, 'payload': payload}
    off[0] += 1
    return json.dumps(r, separators=(',', ':'))
R = [
 rec('payment.capture', ['timeout'], 'cap_c101'),
 rec('payment.capture', ['insufficient_funds'], 'cap_c102'),
 rec('payment.capture', ['timeout', 'duplicate'], 'cap_c103'),
 rec('inventory.reserve', ['lock_timeout'], 'res_c201'),
 rec('inventory.reserve', ['overbook'], 'res_c202'),
 rec('webhook.partner', ['http_503'], 'wh_c301'),
 rec('webhook.partner', ['http_400'], 'wh_c302'),
 rec('mail.receipt', ['smtp_421', 'smtp_421'], 'mail_c401'),
 rec('mail.receipt', ['unknown_recipient'], 'mail_c402'),
 rec('payment.capture', ['timeout'], None),                          # no_idempotency_key
 rec('payment.capture', ['timeout'], 'cap_c104', committed=True),    # already_committed
 rec('payment.capture', ['timeout', 'timeout', 'timeout'], 'cap_c105'),  # 3 contexts: attempts_exhausted
 rec('mail.receipt', ['smtp_421'], 'mail_c403', replay='1'),         # already_replayed
 rec('mail.receipt', ['timeout'], 'mail_c404'),                      # no rule: default
 rec('payment.capture', ['timeout'], 'cap_c101'),                    # same key: maybe-duplicate
 rec('payment.capture', ['convert'], 'cap_c106'),                    # unmapped exception class
 rec('payment.capture', ['timeout'], 'cap_c107', drop=('__connect.errors.exception.class.name',)),  # no error context
 rec('payment.capture', ['timeout'], 'cap_c108', payload='Struct{idempotency_key=cap_c108}'),  # not JSON
 rec('payment.capture', ['timeout'], 'cap_c109', extra=[('x-replay', None)]),  # null header
]
sys.stdout.write('\n'.join(R) + '\n')
