# Writes examples/ dump for --input-format sidekiq to stdout (deterministic, invented values; python3 stdlib only).
# Counts as Sidekiq writes them: a job in the Dead set has retry_count == retry (3 here).
# Run from the repository root: python3 tools/example_dumps/sidekiq.py > examples/<name>; the trap records are commented.
import json, sys
n = [0]
ERR = {'timeout': 'Net::ReadTimeout', 'insufficient_funds': 'Payments::InsufficientFunds',
       'duplicate': 'Payments::DuplicateCapture', 'lock_timeout': 'ActiveRecord::LockWaitTimeout',
       'overbook': 'Inventory::Overbooked', 'http_503': 'Faraday::ServerError',
       'http_400': 'Faraday::BadRequestError', 'smtp_421': 'Net::SMTPServerBusy',
       'unknown_recipient': 'Net::SMTPFatalError', 'nomethod': 'NoMethodError'}
JOB = {'payment.capture': 'CaptureJob', 'inventory.reserve': 'ReserveJob', 'webhook.partner': 'PartnerWebhookJob', 'mail.receipt': 'ReceiptMailJob'}
def job(queue, err, retry_count=3, key='k', committed=False, replays=None, v8=False, drop=(), **over):
    n[0] += 1
    arg = {}
    if key: arg['idempotency_key'] = key
    arg['committed'] = committed
    if replays is not None: arg['replays'] = replays
    t = 1764403200 + 61 * n[0]
    j = {'retry': 3, 'queue': queue, 'class': JOB.get(queue, 'UnknownJob'), 'args': [arg],
         'jid': '%024x' % (0xb5c0de000000 + n[0]),
         'created_at': (t - 300) * 1000 if v8 else t - 300 + 0.125,
         'enqueued_at': (t - 60) * 1000 if v8 else t - 60 + 0.5,
         'error_message': err.replace('_', ' '), 'error_class': ERR[err],
         'failed_at': (t - 200) * 1000 if v8 else t - 200 + 0.75,
         'retry_count': retry_count,
         'retried_at': t * 1000 if v8 else t + 0.25}
    for d in drop: j.pop(d, None)
    j.update(over)
    return json.dumps(j, separators=(',', ':'))
J = [
 job('payment.capture', 'timeout', 3, 'cap_q101'),
 job('payment.capture', 'insufficient_funds', 3, 'cap_q102', v8=True),
 job('payment.capture', 'duplicate', 3, 'cap_q103'),
 job('inventory.reserve', 'lock_timeout', 3, 'res_q201', v8=True),
 job('inventory.reserve', 'overbook', 3, 'res_q202'),
 job('webhook.partner', 'http_503', 3, 'wh_q301'),
 job('webhook.partner', 'http_400', 3, 'wh_q302'),
 job('mail.receipt', 'smtp_421', 3, 'mail_q401'),
 job('mail.receipt', 'unknown_recipient', 3, 'mail_q402'),
 job('payment.capture', 'timeout', 3, None),                        # no_idempotency_key
 job('payment.capture', 'timeout', 3, 'cap_q104', committed=True),  # already_committed
 job('payment.capture', 'timeout', 3, 'cap_q105', replays=3),       # 3 redrives: attempts_exhausted
 job('mail.receipt', 'smtp_421', 3, 'mail_q403', replays=1),        # already_replayed
 job('mail.receipt', 'timeout', 3, 'mail_q404'),                    # no rule: default
 job('payment.capture', 'timeout', 3, 'cap_q101'),                  # same key: maybe-duplicate
 job('payment.capture', 'timeout', 3, 'cap_q106', drop=('retry_count',)),  # no retry_count (the counter is not mapped: explain shows it)
 job('payment.capture', 'timeout', '2', 'cap_q107'),  # a string count (the counter is not mapped: explain shows it)
 job('payment.capture', 'nomethod', 3, 'cap_q108'),                 # unmapped error class
 job('payment.capture', 'timeout', 3, 'cap_q109', replays='1'),     # replays as a string
 '{"retry":3,"queue":"payment.capture","class":"CaptureJob","args":[{"idempotency_key":"cap_q110"}],"jid":"0b5c0de0000000000000000c"',  # cut off
 job('payment.capture', 'timeout', 3, 'cap_q111', drop=('jid',)),   # not a Sidekiq job
]
sys.stdout.write('\n'.join(J) + '\n')
