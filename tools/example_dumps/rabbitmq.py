# Writes examples/ dump for --input-format rabbitmq to stdout (deterministic, invented values; python3 stdlib only).
# Counts as RabbitMQ 3.13+ writes them: the x-death count stays 1 across republish cycles.
# Run from the repository root: python3 tools/example_dumps/rabbitmq.py > examples/<name>; the trap records are commented.
import json, base64, sys
CAUSE = {
 'timeout': 'java.net.SocketTimeoutException',
 'insufficient_funds': 'com.acme.payments.gateway.InsufficientFundsException',
 'lock_timeout': 'org.springframework.dao.CannotAcquireLockException',
 'overbook': 'com.acme.inventory.OverbookedException',
 'http_503': 'org.springframework.web.client.HttpServerErrorException$ServiceUnavailable',
 'http_400': 'org.springframework.web.client.HttpClientErrorException$BadRequest',
 'smtp_421': 'com.acme.mail.SmtpServiceNotAvailableException',
 'unknown_recipient': 'org.eclipse.angus.mail.smtp.SMTPAddressFailedException',
 'npe': 'java.lang.NullPointerException',
}
n = [0]
def msg(queue, cause, count=1, key='k', committed=False, replay=None, b64=False, payload=None,
        deaths=None, first=True, encoding=None, extra=None):
    n[0] += 1
    body = payload if payload is not None else json.dumps(
        ({'idempotency_key': key} if key else {}) | {'committed': committed, 'amount_cents': 900 + n[0]},
        separators=(',', ':'))
    t = 1764403200 + 60 * n[0]
    if deaths is None:
        deaths = [{'count': count, 'exchange': '', 'queue': queue, 'reason': 'rejected',
                   'routing-keys': [queue], 'time': t}]
    h = {}
    if deaths != 'none': h['x-death'] = deaths
    h['x-exception-class'] = CAUSE[cause]
    h['x-exception-message'] = cause.replace('_', ' ')
    if first and deaths != 'none':
        h['x-first-death-exchange'] = ''
        h['x-first-death-queue'] = queue
        h['x-first-death-reason'] = 'rejected'
    if replay is not None: h['x-replay'] = replay
    if extra: h.update(extra)
    h = dict(sorted(h.items()))  # 3.10 re-sorts headers
    props = {'content_type': 'application/json', 'delivery_mode': 2, 'headers': h,
             'message_id': 'm-%04d' % n[0], 'timestamp': t}
    enc = encoding or ('base64' if b64 else 'string')
    p = base64.b64encode(body.encode()).decode() if b64 else body
    return {'payload_bytes': len(body.encode()), 'redelivered': True, 'exchange': '',
            'routing_key': queue + '.dlq', 'message_count': 30 - n[0], 'properties': props,
            'payload': p, 'payload_encoding': enc}
M = [
 msg('payment.capture', 'timeout', 1, 'cap_a101'),
 msg('payment.capture', 'insufficient_funds', 1, 'cap_a102'),
 msg('inventory.reserve', 'lock_timeout', 1, 'res_b201', b64=True),
 msg('inventory.reserve', 'overbook', 1, 'res_b202'),
 msg('webhook.partner', 'http_503', 1, 'wh_c301'),
 msg('webhook.partner', 'http_400', 1, 'wh_c302'),
 msg('mail.receipt', 'smtp_421', 1, 'mail_d401'),
 msg('mail.receipt', 'unknown_recipient', 1, 'mail_d402'),
 msg('payment.capture', 'timeout', 1, None),                   # no_idempotency_key
 msg('payment.capture', 'timeout', 1, 'cap_a103', committed=True),  # already_committed
 msg('payment.capture', 'timeout', 1, 'cap_a104', replay=3),   # 3 redrives: attempts_exhausted
 msg('mail.receipt', 'smtp_421', 1, 'mail_d403', replay=1),    # already_replayed (AMQP long)
 msg('mail.receipt', 'timeout', 1, 'mail_d404'),               # no rule: default
 msg('payment.capture', 'timeout', 1, 'cap_a101'),             # same key: maybe-duplicate
 msg('payment.capture', 'timeout', 1, 'cap_a105', payload='eyJpZGVtcG90ZW5jeV9rZXkiOiJjYXBfYTEwNSJ9!', encoding='base64'),  # base64 that does not decode
 msg('payment.capture', 'timeout', 1, 'cap_a106', deaths='none'),   # never dead-lettered by the broker: no count (the counter is not mapped: explain shows it)
 msg('payment.capture', 'timeout', 1, 'cap_a107', deaths=[
     {'count': 1, 'exchange': '', 'queue': 'payment.capture', 'reason': 'rejected', 'routing-keys': ['payment.capture'], 'time': 1764403200},
     {'count': 2, 'exchange': '', 'queue': 'payment.capture', 'reason': 'rejected', 'routing-keys': ['payment.capture.retry'], 'time': 1764403260}]),  # two entries for the first death (the counter is not mapped: explain shows it)
 msg('mail.receipt', 'smtp_421', 1, 'mail_d405', replay=None, extra={'x-replay': None}),  # null header
 msg('mail.receipt', 'smtp_421', 1, 'mail_d406', replay='one'),  # a string count
 msg('webhook.partner', 'http_503', 1, 'wh_c303', encoding='auto'),  # not string or base64
 msg('webhook.partner', 'http_503', 1, 'wh_c304', payload='<partner-event id="wh_c304"/>'),  # body not JSON
 msg('inventory.reserve', 'lock_timeout', 1, 'res_b203', deaths=[{'count': '2', 'exchange': '', 'queue': 'inventory.reserve', 'reason': 'rejected', 'routing-keys': ['inventory.reserve'], 'time': 1764403200}]),  # count is a string (the counter is not mapped: explain shows it)
 msg('payment.capture', 'npe', 1, 'cap_a108'),                 # unmapped exception class
]
out = '[\n' + ',\n'.join(json.dumps(m, separators=(',', ':'), ensure_ascii=False) for m in M) + '\n]\n'
sys.stdout.write(out)
