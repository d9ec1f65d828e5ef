#!/usr/bin/env python3
"""Python: the reference gate (replay_gate.py from the seed article, a CPython dict lookup) against
the replaygate ctypes binding, per record call and batch call, on the same letters.

Usage (from the repository root, after building): tools/bench/python_gate_bench.py TABLE.rgt [N]
Needs RG_LIBRARY or build/runtime/libreplaygate_runtime.so. Prints one line per measurement:
CPU ns per record (time.process_time), median of 5 runs taken in turns. Every gate must pass the
reference gate's five cases first.
"""
import array
import json
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass
from enum import Enum
from typing import Mapping, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
os.environ.setdefault("RG_LIBRARY", os.path.join(ROOT, "build", "runtime",
                                                 "libreplaygate_runtime.so"))
import replaygate  # noqa: E402


# ---- replay_gate.py, as published in the seed article ----
class Verb(str, Enum):
    NEVER = "never"
    REPLAY_ONCE = "replay_once"
    HOLD = "hold"


@dataclass(frozen=True)
class DeadLetter:
    topic: str
    error_class: str
    attempts: int
    idempotency_key: str
    body_hash: str
    already_committed: bool


PolicyKey = Tuple[str, str]
POLICY: Mapping[PolicyKey, Verb] = {
    ("payment.capture", "timeout"): Verb.REPLAY_ONCE,
    ("payment.capture", "insufficient_funds"): Verb.NEVER,
    ("payment.capture", "duplicate"): Verb.NEVER,
    ("inventory.reserve", "lock_timeout"): Verb.REPLAY_ONCE,
    ("inventory.reserve", "overbook"): Verb.NEVER,
    ("webhook.partner", "http_503"): Verb.REPLAY_ONCE,
    ("webhook.partner", "http_400"): Verb.NEVER,
    ("mail.receipt", "smtp_421"): Verb.REPLAY_ONCE,
    ("mail.receipt", "unknown_recipient"): Verb.NEVER,
}
MAX_ATTEMPTS = 3


def decide(letter: DeadLetter, policy: Mapping[PolicyKey, Verb] = POLICY) -> Verb:
    if not letter.idempotency_key:
        return Verb.HOLD
    if letter.already_committed:
        return Verb.NEVER
    if letter.attempts >= MAX_ATTEMPTS:
        return Verb.HOLD
    verb = policy.get((letter.topic, letter.error_class))
    if verb is None:
        return Verb.HOLD
    return verb
# ---- end of replay_gate.py ----


SEED = dict(topic="payment.capture", error_class="timeout", attempts=1,
            idempotency_key="cap_9f3a", body_hash="sha256:abc", already_committed=False)
CASES = [({}, "replay_once"), ({"already_committed": True}, "never"),
         ({"error_class": "weird_partner_code"}, "hold"), ({"idempotency_key": ""}, "hold"),
         ({"error_class": "insufficient_funds"}, "never")]
FIELDS = ["topic", "error_class", "attempts", "idempotency_key", "already_committed"]


def letters(n):
    rng = random.Random(20261129)
    pairs = list(POLICY)
    out = []
    for i in range(n):
        t, e = pairs[rng.randrange(len(pairs))]
        kind = rng.randrange(10)
        if kind < 2:
            e = f"unknown_{rng.randrange(50)}"
        out.append(dict(message_id=f"m-{i}", topic=t, error_class=e, attempts=rng.randrange(3),
                        idempotency_key="" if kind == 2 else f"key_{rng.randrange(100000)}",
                        body_hash="sha256:abc", already_committed=kind == 3))
    return out


def timed_round_robin(harnesses, n, runs=5):
    """CPU ns per record, median of `runs`. The harnesses take turns (one run of each per round)
    so that load on a shared machine affects them alike and their ratios stay meaningful."""
    samples = {name: [] for name in harnesses}
    for _ in range(runs):
        for name, fn in harnesses.items():
            start = time.process_time()
            fn()
            samples[name].append((time.process_time() - start) * 1e9 / n)
    return {name: statistics.median(s) for name, s in samples.items()}


def main():
    table_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "tests", "data", "tables", "replay_gate.rgt")
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    table = replaygate.Table.load(table_path)
    for change, want in CASES:  # both gates pass the five seed cases before being timed
        rec = {**SEED, **change}
        assert decide(DeadLetter(**rec)).value == want, ("python gate", change)
        assert table.decide(**{k: rec[k] for k in FIELDS}).verb == want, ("replaygate", change)
        assert table.decide_columns({k: [rec[k]] for k in FIELDS}) == [want]
    recs = letters(n)
    objs = [DeadLetter(**{k: v for k, v in r.items() if k != "message_id"}) for r in recs]
    want = [decide(o).value for o in objs]
    assert table.decide_columns({k: [r[k] for r in recs] for k in FIELDS}) == want
    lines = [json.dumps(r) for r in recs]
    jsonl = replaygate.JsonlGate(table_path)
    for change, want_verb in CASES:
        rec = {**SEED, **change}
        got, invalid, _ = jsonl.decide_lines(json.dumps({k: rec[k] for k in FIELDS}).encode())
        assert (got, invalid) == ([want_verb], 0), ("jsonl gate", change)
    blob_lines = [(json.dumps({k: r[k] for k in ["message_id", "body_hash"] + FIELDS}) + "\n")
                  .encode() for r in recs]
    assert jsonl.decide_lines(b"".join(blob_lines))[0] == want
    batch = 4096

    def py_decide_only():
        for o in objs:
            decide(o)

    def rg_per_record():
        d = table.decide
        for r in recs:
            d(topic=r["topic"], error_class=r["error_class"], attempts=r["attempts"],
              idempotency_key=r["idempotency_key"], already_committed=r["already_committed"])

    def rg_columns_prebuilt():
        for i in range(0, n, batch):
            chunk = recs[i:i + batch]
            table.decide_columns_raw({k: [r[k] for r in chunk] for k in FIELDS})

    def py_streaming():
        out = []
        for line in lines:
            r = json.loads(line)
            out.append(decide(DeadLetter(r["topic"], r["error_class"], r["attempts"],
                                         r["idempotency_key"], r["body_hash"],
                                         r["already_committed"])).value)

    def rg_streaming():
        out = []
        for i in range(0, n, batch):
            chunk = [json.loads(line) for line in lines[i:i + batch]]
            out.extend(table.decide_columns({k: [r.get(k) for r in chunk] for k in FIELDS}))

    def rg_jsonl_streaming():
        # Verbs stay a machine array (one C memcpy per batch), never one Python object each.
        out = array.array("I")
        for i in range(0, n, batch):
            out.extend(jsonl.decide_lines_raw(b"".join(blob_lines[i:i + batch]))[0])

    def py_gate_bytes_streaming():
        out = []
        for raw in blob_lines:
            r = json.loads(raw)
            out.append(decide(DeadLetter(r["topic"], r["error_class"], r["attempts"],
                                         r["idempotency_key"], r["body_hash"],
                                         r["already_committed"])).value)

    def parse_only():
        for line in lines:
            json.loads(line)

    print(f"python {sys.version.split()[0]}, {n} letters, batch {batch}, CPU time, median of 5 "
          "runs taken in turns")
    results = timed_round_robin({
        "python gate, decide() on prebuilt DeadLetter objects": py_decide_only,
        "replaygate ctypes, one decide() call per record": rg_per_record,
        "replaygate ctypes, decide_columns() on prebuilt dicts": rg_columns_prebuilt,
        "streaming: json.loads only (floor)": parse_only,
        "streaming: json.loads + DeadLetter + python gate": py_streaming,
        "streaming: json.loads + decide_columns() per 4096": rg_streaming,
        "streaming bytes: json.loads + DeadLetter + python gate": py_gate_bytes_streaming,
        "streaming bytes: JsonlGate.decide_lines() per 4096 lines": rg_jsonl_streaming,
    }, n)
    for name, ns in results.items():
        print(f"{ns:10.1f} ns/record  {name}")
    gate = results["streaming bytes: json.loads + DeadLetter + python gate"]
    jsonl = results["streaming bytes: JsonlGate.decide_lines() per 4096 lines"]
    print(f"JsonlGate is {gate / jsonl:.1f}x faster than the python gate, streaming bytes")


if __name__ == "__main__":
    main()
