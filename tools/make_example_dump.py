#!/usr/bin/env python3
"""Writes the example dead-letter dumps in examples/ (deterministic; python3 stdlib only).

  examples/payments-dlt.kcat.jsonl  Kafka DLT records as `kcat -C -J` prints them, with the
                                    headers Spring Kafka's DeadLetterPublishingRecoverer adds
  examples/letters.jsonl            the same kind of letters in the `letters` format

Every value is invented. Run from the repository root: python3 tools/make_example_dump.py
"""
import json
import struct

BASE_TS = 1764403200000  # 2025-11-29T08:00:00Z, fixed so the output never changes

# Exception classes (as the mapping file maps them) per normalised error class.
FQCN = {
    "timeout": "java.net.SocketTimeoutException",
    "insufficient_funds": "com.acme.payments.gateway.InsufficientFundsException",
    "duplicate": "com.acme.payments.gateway.DuplicateCaptureException",
    "lock_timeout": "org.springframework.dao.CannotAcquireLockException",
    "overbook": "com.acme.inventory.OverbookedException",
    "http_503": "org.springframework.web.client.HttpServerErrorException$ServiceUnavailable",
    "http_400": "org.springframework.web.client.HttpClientErrorException$BadRequest",
    "smtp_421": "com.acme.mail.SmtpServiceNotAvailableException",
    "unknown_recipient": "org.eclipse.angus.mail.smtp.SMTPAddressFailedException",
    "unmapped": "java.lang.IllegalStateException",
}
MESSAGE = {
    "timeout": "Read timed out",
    "insufficient_funds": "card declined: insufficient funds",
    "duplicate": "capture already exists for this authorization",
    "lock_timeout": "could not obtain lock on row in relation \"stock\"",
    "overbook": "requested 3, available 1",
    "http_503": "503 Service Unavailable from POST https://partner.example/hooks",
    "http_400": "400 Bad Request from POST https://partner.example/hooks",
    "smtp_421": "421 4.7.0 Try again later, closing connection",
    "unknown_recipient": "550 5.1.1 recipient address rejected",
    "unmapped": "listener container is stopping",
}
LISTENER = "org.springframework.kafka.listener.ListenerExecutionFailedException"

# (topic, error_class, attempts, key, committed, x-replay, note) for every letter; key None means
# "not in the payload", "" an empty key. The note says what the letter is there to show.
LETTERS = [
    # every table row, some several times
    ("payment.capture", "timeout", 1, "cap_9f3a", False, None, "row: replay"),
    ("payment.capture", "timeout", 2, "cap_1b77", False, None, "row: replay"),
    ("payment.capture", "timeout", 1, "cap_52d0", False, None, "row: replay"),
    ("payment.capture", "insufficient_funds", 1, "cap_a0c1", False, None, "row: never"),
    ("payment.capture", "insufficient_funds", 2, "cap_a0c2", False, None, "row: never"),
    ("payment.capture", "duplicate", 1, "cap_d001", False, None, "row: never"),
    ("payment.capture", "duplicate", 1, "cap_d002", False, None, "row: never"),
    ("inventory.reserve", "lock_timeout", 1, "res_7731", False, None, "row: replay"),
    ("inventory.reserve", "lock_timeout", 2, "res_7732", False, None, "row: replay"),
    ("inventory.reserve", "lock_timeout", 1, "res_7733", False, None, "row: replay"),
    ("inventory.reserve", "overbook", 1, "res_8801", False, None, "row: never"),
    ("inventory.reserve", "overbook", 2, "res_8802", False, None, "row: never"),
    ("webhook.partner", "http_503", 1, "whk_0a11", False, None, "row: replay"),
    ("webhook.partner", "http_503", 2, "whk_0a12", False, None, "row: replay"),
    ("webhook.partner", "http_503", 1, "whk_0a13", False, None, "row: replay"),
    ("webhook.partner", "http_400", 1, "whk_0b21", False, None, "row: never"),
    ("webhook.partner", "http_400", 1, "whk_0b22", False, None, "row: never"),
    ("mail.receipt", "smtp_421", 1, "rcpt_3301", False, None, "row: replay"),
    ("mail.receipt", "smtp_421", 2, "rcpt_3302", False, None, "row: replay"),
    ("mail.receipt", "unknown_recipient", 1, "rcpt_4401", False, None, "row: never"),
    ("mail.receipt", "unknown_recipient", 1, "rcpt_4402", False, None, "row: never"),
    ("payment.capture", "timeout", 1, "cap_60e4", False, None, "row: replay"),
    ("inventory.reserve", "lock_timeout", 1, "res_7734", False, None, "row: replay"),
    ("webhook.partner", "http_503", 1, "whk_0a14", False, None, "row: replay"),
    ("mail.receipt", "smtp_421", 1, "rcpt_3303", False, None, "row: replay"),
    # guard no_idempotency_key: missing, empty
    ("payment.capture", "timeout", 1, None, False, None, "guard: no key"),
    ("webhook.partner", "http_503", 1, None, False, None, "guard: no key"),
    ("payment.capture", "timeout", 1, "", False, None, "guard: empty key"),
    # guard already_committed
    ("payment.capture", "timeout", 1, "cap_c001", True, None, "guard: committed"),
    ("inventory.reserve", "lock_timeout", 2, "res_c002", True, None, "guard: committed"),
    ("payment.capture", "insufficient_funds", 1, "cap_c003", True, None, "guard: committed"),
    # guard attempts_exhausted
    ("payment.capture", "timeout", 3, "cap_e003", False, None, "guard: attempts"),
    ("webhook.partner", "http_503", 5, "whk_e005", False, None, "guard: attempts"),
    ("mail.receipt", "smtp_421", 7, "rcpt_e007", False, None, "guard: attempts"),
    # guard already_replayed (x-replay header)
    ("payment.capture", "timeout", 1, "cap_r001", False, "1", "guard: replayed"),
    ("inventory.reserve", "lock_timeout", 1, "res_r002", False, "2", "guard: replayed"),
    ("mail.receipt", "smtp_421", 1, "rcpt_r003", False, "1", "guard: replayed"),
    ("webhook.partner", "http_503", 2, "whk_r000", False, "0", "x-replay 0: not replayed yet"),
    # pairs no row covers: the default (hold)
    ("inventory.reserve", "timeout", 1, "res_u001", False, None, "unknown pair"),
    ("webhook.partner", "insufficient_funds", 1, "whk_u002", False, None, "unknown pair"),
    ("mail.receipt", "http_503", 1, "rcpt_u003", False, None, "unknown pair"),
    ("payment.capture", "lock_timeout", 1, "cap_u004", False, None, "unknown pair"),
    ("ledger.post", "timeout", 1, "led_u005", False, None, "unknown topic"),
    ("payment.refund", "timeout", 2, "ref_u006", False, None, "unknown topic"),
    # duplicate idempotency key within the dump: only the first may replay
    ("payment.capture", "timeout", 1, "cap_dup7", False, None, "duplicate key (first)"),
    ("payment.capture", "timeout", 2, "cap_dup7", False, None, "duplicate key (second)"),
    ("webhook.partner", "http_503", 1, "whk_dup8", False, None, "duplicate key (first)"),
    ("webhook.partner", "http_503", 1, "whk_dup8", False, None, "duplicate key (second)"),
    # more ordinary traffic
    ("payment.capture", "insufficient_funds", 1, "cap_a0c3", False, None, "row: never"),
    ("inventory.reserve", "overbook", 1, "res_8803", False, None, "row: never"),
    ("webhook.partner", "http_400", 2, "whk_0b23", False, None, "row: never"),
    ("mail.receipt", "unknown_recipient", 2, "rcpt_4403", False, None, "row: never"),
    ("payment.capture", "duplicate", 2, "cap_d003", False, None, "row: never"),
    ("payment.capture", "timeout", 2, "cap_77aa", False, None, "row: replay"),
    ("inventory.reserve", "lock_timeout", 2, "res_7735", False, None, "row: replay"),
    ("mail.receipt", "smtp_421", 2, "rcpt_3304", False, None, "row: replay"),
]

STACK = ("org.springframework.kafka.listener.ListenerExecutionFailedException: Listener method "
         "'public void com.acme.{svc}.Consumer.onMessage(java.lang.String)' threw exception\n"
         "\tat org.springframework.kafka.listener.KafkaMessageListenerContainer$"
         "ListenerConsumer.decorateException(KafkaMessageListenerContainer.java:2996)\n"
         "Caused by: {cause}: {message}\n\tat com.acme.{svc}.Consumer.onMessage(Consumer.java:57)\n")


def kcat_string(data: bytes) -> str:
    """A JSON string the way kcat (yajl_gen_string) writes bytes: escapes, other bytes as-is."""
    out = ['"']
    for b in data:
        c = chr(b)
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\\\")
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif c == "\r":
            out.append("\\r")
        elif b < 0x20:
            out.append("\\u%04x" % b)
        else:
            out.append(chr(b) if b < 0x80 else None)
            if b >= 0x80:
                out[-1] = b  # raw byte, fixed up below
    out.append('"')
    parts = bytearray()
    for piece in out:
        parts += bytes([piece]) if isinstance(piece, int) else piece.encode("utf-8")
    return parts.decode("latin-1")  # a byte-preserving str; written back with latin-1


def kcat_line(topic, partition, offset, ts, headers, key, payload):
    fields = [
        '"topic":' + json.dumps(topic),
        '"partition":%d' % partition,
        '"offset":%d' % offset,
        '"tstype":"create"',
        '"ts":%d' % ts,
        '"broker":1',
    ]
    hs = []
    for name, value in headers:
        hs.append(kcat_string(name.encode()))
        hs.append("null" if value is None else kcat_string(value))
    fields.append('"headers":[' + ",".join(hs) + "]")
    fields.append('"key":' + ("null" if key is None else kcat_string(key.encode())))
    fields.append('"payload":' + ("null" if payload is None else kcat_string(payload.encode())))
    return "{" + ",".join(fields) + "}"


def spring_headers(topic, partition, offset, ts, error_class, replay):
    svc = topic.split(".")[0]
    cause = FQCN[error_class]
    message = MESSAGE[error_class]
    headers = [
        ("kafka_dlt-original-topic", topic.encode()),
        ("kafka_dlt-original-partition", struct.pack(">i", partition)),
        ("kafka_dlt-original-offset", struct.pack(">q", offset)),
        ("kafka_dlt-original-timestamp", struct.pack(">q", ts - 5000)),
        ("kafka_dlt-original-timestamp-type", b"CreateTime"),
        ("kafka_dlt-original-consumer-group", (svc + "-consumer").encode()),
        ("kafka_dlt-exception-fqcn", LISTENER.encode()),
        ("kafka_dlt-exception-cause-fqcn", cause.encode()),
        ("kafka_dlt-exception-message", message.encode()),
        ("kafka_dlt-exception-stacktrace",
         STACK.format(svc=svc, cause=cause, message=message).encode()),
    ]
    if replay is not None:
        headers.append(("x-replay", replay.encode()))
    return headers


def payload_json(key, committed, attempts, n):
    body = {}
    if key is not None:
        body["idempotency_key"] = key
    body["committed"] = committed
    body["attempts"] = attempts
    body["amount_cents"] = 1000 + 37 * n
    body["currency"] = "EUR"
    return json.dumps(body, separators=(",", ":"))


def write_kafka(path):
    lines = []
    offsets = {}
    for n, (topic, error_class, attempts, key, committed, replay, _) in enumerate(LETTERS):
        dlt = topic + ".DLT"
        partition = n % 3
        offsets[(dlt, partition)] = offsets.get((dlt, partition), 40 + 7 * partition) + 1
        offset = offsets[(dlt, partition)]
        original_offset = 18800 + 97 * n  # big-endian bytes >= 0x80 are not UTF-8 in kcat output
        ts = BASE_TS + 60000 * n
        headers = spring_headers(topic, partition, original_offset, ts, error_class, replay)
        lines.append(kcat_line(dlt, partition, offset, ts, headers, key,
                               payload_json(key, committed, attempts, n)))
    ts = BASE_TS + 3600000
    # Records the mapping cannot read: each becomes invalid, naming the input.
    h = spring_headers("payment.capture", 0, 99001, ts, "unmapped", None)
    lines.append(kcat_line("payment.capture.DLT", 0, 90, ts, h, "cap_x001",
                           payload_json("cap_x001", False, 1, 90)))  # unmapped exception class
    h = spring_headers("payment.capture", 1, 99002, ts, "timeout", None)
    lines.append(kcat_line("payment.capture.DLT", 1, 91, ts, h, "cap_x002",
                           '{"idempotency_key":"cap_x002","committed":false}'))  # no attempts
    h = spring_headers("webhook.partner", 2, 99003, ts, "http_503", "one")
    lines.append(kcat_line("webhook.partner.DLT", 2, 92, ts, h, "whk_x003",
                           payload_json("whk_x003", False, 1, 92)))  # x-replay not an integer
    h = spring_headers("mail.receipt", 0, 99004, ts, "smtp_421", None)
    lines.append(kcat_line("mail.receipt.DLT", 0, 93, ts, h, "rcpt_x004",
                           "<receipt id='x004'/>"))  # payload is not JSON
    # Lines that are not records at all.
    lines.append('% Reached end of topic payment.capture.DLT [0] at offset 95')
    whole = kcat_line("payment.capture.DLT", 2, 94, ts, spring_headers(
        "payment.capture", 2, 99005, ts, "timeout", None), "cap_x005",
        payload_json("cap_x005", False, 1, 94))
    lines.append(whole[: len(whole) // 2])  # cut off mid-record (the dump was interrupted)
    with open(path, "w", encoding="latin-1", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")
    return len(lines)


def write_letters(path):
    def letter(message_id, topic, error_class, attempts, key, committed, replays=None,
               body_hash=None):
        d = {"message_id": message_id}
        if body_hash is not None:
            d["body_hash"] = body_hash
        d.update(topic=topic, error_class=error_class, attempts=attempts)
        if key is not ...:
            d["idempotency_key"] = key
        d["already_committed"] = committed
        if replays is not None:
            d["replays"] = replays
        return json.dumps(d, separators=(",", ":"))

    lines = [
        letter("m-001", "payment.capture", "timeout", 1, "cap_9f3a", False, body_hash="sha256:abc"),
        letter("m-002", "payment.capture", "timeout", 1, "cap_9f3a", True, body_hash="sha256:abc"),
        letter("m-003", "payment.capture", "weird_partner_code", 1, "cap_77b1", False),
        letter("m-004", "payment.capture", "timeout", 1, "", False),
        letter("m-005", "payment.capture", "insufficient_funds", 1, "cap_a0c1", False),
        letter("m-006", "payment.capture", "duplicate", 2, "cap_d001", False),
        letter("m-007", "inventory.reserve", "lock_timeout", 1, "res_7731", False),
        letter("m-008", "inventory.reserve", "overbook", 1, "res_8801", False),
        letter("m-009", "webhook.partner", "http_503", 2, "whk_0a11", False),
        letter("m-010", "webhook.partner", "http_400", 1, "whk_0b21", False),
        letter("m-011", "mail.receipt", "smtp_421", 1, "rcpt_3301", False),
        letter("m-012", "mail.receipt", "unknown_recipient", 1, "rcpt_4401", False),
        letter("m-013", "payment.capture", "timeout", 1, ..., False),
        letter("m-014", "payment.capture", "timeout", 3, "cap_e003", False),
        letter("m-015", "payment.capture", "timeout", 1, "cap_r001", False, replays=1),
        letter("m-016", "payment.capture", "timeout", 2, "cap_9f3a", False),
        letter("m-017", "webhook.partner", "http_503", 1, None, False, replays=None),
        '{"message_id":"m-018","topic":"mail.receipt","error_class":"smtp_421","attempts":"2",'
        '"idempotency_key":"rcpt_3309","already_committed":false}',
        '{"message_id":"m-019","topic":"payment.capture","error_class":"timeout","attempts":1,'
        '"idempotency_key":"cap_5150","already_comitted":false}',
        '{"message_id":"m-020","topic":"payment.capture","error_class":"timeout",',
    ]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")
    return len(lines)


if __name__ == "__main__":
    kafka = write_kafka("examples/payments-dlt.kcat.jsonl")
    letters = write_letters("examples/letters.jsonl")
    print("wrote examples/payments-dlt.kcat.jsonl (%d lines), examples/letters.jsonl (%d lines)"
          % (kafka, letters))
