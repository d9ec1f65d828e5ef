# Writes examples/ dump for --input-format spring-kafka to stdout (deterministic, invented values; python3 stdlib only).
# Counts as Spring writes them: a -dlt record has retry_topic-attempts maxAttempts + 1 (4).
# Run from the repository root: python3 tools/example_dumps/spring_kafka.py > examples/<name>; the trap records are commented.
import json, struct, sys
def esc(b):
    out = bytearray(b'"')
    for c in b:
        if c == 0x22: out += b'\\"'
        elif c == 0x5c: out += b'\\\\'
        elif c == 0x0a: out += b'\\n'
        elif c == 0x09: out += b'\\t'
        elif c == 0x0d: out += b'\\r'
        elif c == 0x08: out += b'\\b'
        elif c == 0x0c: out += b'\\f'
        elif c < 0x20: out += b'\\u%04x' % c
        else: out.append(c)
    return bytes(out + b'"')
def s(x): return esc(x.encode() if isinstance(x, str) else x)
be4 = lambda n: struct.pack('>i', n)
be8 = lambda n: struct.pack('>q', n)
CAUSE = {
 'timeout': 'java.net.SocketTimeoutException',
 'insufficient_funds': 'com.acme.payments.gateway.InsufficientFundsException',
 'duplicate': 'com.acme.payments.gateway.DuplicateCaptureException',
 'lock_timeout': 'org.springframework.dao.CannotAcquireLockException',
 'overbook': 'com.acme.inventory.OverbookedException',
 'http_503': 'org.springframework.web.client.HttpServerErrorException$ServiceUnavailable',
 'http_400': 'org.springframework.web.client.HttpClientErrorException$BadRequest',
 'smtp_421': 'com.acme.mail.SmtpServiceNotAvailableException',
 'unknown_recipient': 'org.eclipse.angus.mail.smtp.SMTPAddressFailedException',
 'illegal': 'java.lang.IllegalStateException',
}
LEFE = 'org.springframework.kafka.listener.ListenerExecutionFailedException'
offset = [100]
def rec(main, causes, attempts=be4(1), payload=None, key='k', replay=None, extra=(), dlt=True, hops=None, drop_attempts=False):
    # one kafka_original-* set per hop (Spring appends), newest last
    hops = hops or len(causes)
    topics = [main] + ['%s-retry-%d' % (main, i) for i in range(hops - 1)]
    h = []
    for i, t in enumerate(topics):
        h += [('kafka_original-topic', t), ('kafka_original-partition', be4(i % 3)),
              ('kafka_original-offset', be8(4100 + 7 * i)), ('kafka_original-timestamp-type', 'CreateTime'),
              ('kafka_exception-fqcn', LEFE), ('kafka_exception-cause-fqcn', CAUSE[causes[i]]),
              ('kafka_exception-message', causes[i].replace('_', ' '))]
    if not drop_attempts:
        h += [('retry_topic-attempts', attempts)]
    h += [('retry_topic-backoff-timestamp', be8(1764403200000 + 1000 * offset[0] % 100))]
    if replay is not None: h += [('x-replay', replay)]
    h += list(extra)
    topic = main + ('-dlt' if dlt else '-retry-%d' % (hops - 1))
    parts = [b'"topic":' + s(topic), b'"partition":0', b'"offset":%d' % offset[0], b'"tstype":"create"',
             b'"ts":%d' % (1764403200000 + 60000 * (offset[0] - 100)), b'"broker":1']
    hb = []
    for n, v in h:
        hb += [s(n), b'null' if v is None else s(v)]
    parts.append(b'"headers":[' + b','.join(hb) + b']')
    parts.append(b'"key":' + s(key))
    parts.append(b'"payload":' + (b'null' if payload is None else s(payload)))
    offset[0] += 1
    return b'{' + b','.join(parts) + b'}'
def pl(key, committed=False, attempts=1, **kw):
    d = {}
    if key is not None: d['idempotency_key'] = key
    d['committed'] = committed
    d.update(kw)
    return json.dumps(d, separators=(',', ':'))
R = [
 rec('payment.capture', ['timeout'], be4(4), pl('cap_7d01', amount_cents=1200)),
 rec('payment.capture', ['insufficient_funds'], be4(4), pl('cap_7d02')),
 rec('payment.capture', ['timeout', 'duplicate'], be4(4), pl('cap_7d03')),
 rec('inventory.reserve', ['timeout', 'lock_timeout'], be4(2), pl('res_51a0'), dlt=False),
 rec('inventory.reserve', ['overbook'], be8(1), pl('res_51a1')),
 rec('webhook.partner', ['http_503'], b'\x01', pl('wh_0c11')),  # Spring 2.7.5: 1 byte
 rec('webhook.partner', ['http_400'], be4(4), pl('wh_0c12')),
 rec('mail.receipt', ['smtp_421'], be4(4), pl('mail_3e01')),
 rec('mail.receipt', ['unknown_recipient'], be4(4), pl('mail_3e02')),
 rec('payment.capture', ['timeout'], be4(4), pl(None)),                      # no_idempotency_key
 rec('payment.capture', ['timeout'], be4(4), pl('cap_7d05', committed=True)),  # already_committed
 rec('payment.capture', ['timeout', 'timeout', 'timeout'], be4(4), pl('cap_7d06'), replay='3'),  # 3 redrives: attempts_exhausted
 rec('mail.receipt', ['smtp_421'], be4(4), pl('mail_3e03'), replay='1'),     # already_replayed
 rec('mail.receipt', ['timeout'], be4(4), pl('mail_3e04')),                  # no rule: default
 rec('payment.capture', ['timeout'], be4(4), pl('cap_7d01')),                # same key: maybe-duplicate
 rec('webhook.partner', ['http_503'], b'1', pl('wh_0c13')),                  # 1 byte 0x31 = 49, not "1" (the counter is not mapped: explain shows it)
 rec('webhook.partner', ['http_503'], b'\x00\x00\x01', pl('wh_0c14')),      # 3 bytes: does not decode (the counter is not mapped: explain shows it)
 rec('webhook.partner', ['http_503'], None, pl('wh_0c15')),                  # null header (the counter is not mapped: explain shows it)
 rec('payment.capture', ['timeout'], be4(4), pl('cap_7d07'), drop_attempts=True),  # missing counter (the counter is not mapped: explain shows it)
 rec('payment.capture', ['timeout'], be4(4), pl('cap_7d08'), extra=[('retry_topic-attempts', be4(4))]),  # repeated (the counter is not mapped: explain shows it)
 rec('payment.capture', ['illegal'], be4(4), pl('cap_7d09')),                # unmapped cause
 rec('payment.capture', ['timeout'], be4(4), 'capture cap_7d10 amount=1200'),  # payload not JSON
 rec('mail.receipt', ['smtp_421'], be4(4), pl('mail_3e05'), replay='one'),   # string count
 rec('inventory.reserve', ['lock_timeout'], be4(-1), pl('res_51a2')),        # negative: 0xFF bytes, not UTF-8 in kcat (the counter is not mapped: explain shows it)
]
sys.stdout.buffer.write(b'\n'.join(R) + b'\n')
