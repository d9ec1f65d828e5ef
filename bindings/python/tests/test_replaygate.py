"""Tests of the ctypes binding (run by CTest: python_binding). Needs $RG_LIBRARY (the shared
library), $RG_SOURCE_DIR (the repository, for the golden table and the example letters) and
$RG_CLI (the replaygate executable, to compare JsonlGate with `replaygate decide`)."""
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import replaygate  # noqa: E402

SOURCE = os.environ.get("RG_SOURCE_DIR", os.path.join(HERE, "..", "..", ".."))
TABLE = os.path.join(SOURCE, "tests", "data", "tables", "replay_gate.rgt")
LETTERS = os.path.join(SOURCE, "examples", "letters.jsonl")

# The reference gate (replay_gate.py from the seed article), as the oracle.
POLICY = {
    ("payment.capture", "timeout"): "replay_once",
    ("payment.capture", "insufficient_funds"): "never",
    ("payment.capture", "duplicate"): "never",
    ("inventory.reserve", "lock_timeout"): "replay_once",
    ("inventory.reserve", "overbook"): "never",
    ("webhook.partner", "http_503"): "replay_once",
    ("webhook.partner", "http_400"): "never",
    ("mail.receipt", "smtp_421"): "replay_once",
    ("mail.receipt", "unknown_recipient"): "never",
}


def reference(topic, error_class, attempts, idempotency_key, already_committed):
    if not idempotency_key:
        return "hold"
    if already_committed:
        return "never"
    if attempts >= 3:
        return "hold"
    return POLICY.get((topic, error_class), "hold")


SEED = dict(topic="payment.capture", error_class="timeout", attempts=1,
            idempotency_key="cap_9f3a", already_committed=False)


class TableTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.table = replaygate.Table.load(TABLE)

    def test_five_seed_cases(self):
        t = self.table
        self.assertEqual(t.decide(**SEED).verb, "replay_once")
        self.assertEqual(t.decide(**{**SEED, "already_committed": True}).verb, "never")
        self.assertEqual(t.decide(**{**SEED, "error_class": "weird_partner_code"}).verb, "hold")
        self.assertEqual(t.decide(**{**SEED, "idempotency_key": ""}).verb, "hold")
        self.assertEqual(t.decide(**{**SEED, "error_class": "insufficient_funds"}).verb, "never")

    def test_decision_details(self):
        d = self.table.decide(**SEED)
        self.assertEqual(d.rule, "known_failures:payment.capture/timeout")
        self.assertEqual(d.kind, "rule")
        self.assertEqual(d.effect, "create")
        self.assertEqual(d.table_checksum, self.table.checksum)
        self.assertEqual(len(d.table_checksum), 32)
        self.assertEqual(self.table.policy_id, "dlq-replay-gate")
        self.assertEqual(self.table.verbs, ["never", "replay_once", "hold"])

    def test_bad_values_fail_closed(self):
        for bad in [dict(attempts="1"), dict(attempts=1.0), dict(attempts=1 << 70),
                    dict(attempts=True), dict(already_committed="false"), dict(attempts=None)]:
            d = self.table.decide(**{**SEED, **bad})
            self.assertEqual((d.verb, d.kind), ("hold", "invalid_input"), bad)
        missing = dict(SEED)
        del missing["topic"]
        d = self.table.decide(**missing)
        self.assertEqual((d.verb, d.kind, d.reason), ("hold", "invalid_input",
                                                      "invalid input: topic"))

    def test_unknown_field_raises(self):
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            self.table.decide(**SEED, colour="red")
        self.assertEqual(cm.exception.status, "unknown_field")

    def test_load_errors(self):
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            replaygate.Table.load("/nonexistent/gate.rgt")
        self.assertEqual(cm.exception.status, "io")
        self.assertIn("cannot open /nonexistent/gate.rgt", cm.exception.message)
        with open(TABLE, "rb") as f:
            data = bytearray(f.read())
        data[len(data) // 2] ^= 1
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            replaygate.Table.from_bytes(bytes(data))
        self.assertEqual(cm.exception.status, "bad_checksum")
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            replaygate.Table.from_bytes(b"")
        self.assertEqual(cm.exception.status, "truncated")

    def test_batch_matches_the_reference_gate_on_every_combination(self):
        topics = ["payment.capture", "inventory.reserve", "webhook.partner", "mail.receipt", "x"]
        errors = ["timeout", "insufficient_funds", "duplicate", "lock_timeout", "overbook",
                  "http_503", "http_400", "smtp_421", "unknown_recipient", "weird"]
        rows = list(itertools.product(topics, errors, [0, 2, 3, 7], ["", "k1"], [False, True]))
        cols = {name: [r[i] for r in rows] for i, name in enumerate(
            ["topic", "error_class", "attempts", "idempotency_key", "already_committed"])}
        got = self.table.decide_columns(cols)
        self.assertEqual(got, [reference(*r) for r in rows])
        # One record at a time agrees too.
        for r, verb in zip(rows[:50], got):
            self.assertEqual(self.table.decide(**dict(zip(cols, r))).verb, verb)

    def test_batch_nulls_and_bad_values(self):
        n = 4
        cols = {k: [v] * n for k, v in SEED.items()}
        cols["idempotency_key"] = ["k", None, "k", "k"]        # null key: absent -> hold
        cols["attempts"] = [1, 1, "1", 1 << 64]                 # wrong type, overflow: invalid
        cols["replays"] = [None, None, None, 1]
        self.assertEqual(self.table.decide_columns(cols),
                         ["replay_once", "hold", "hold", "hold"])
        # Strings are str: bytes (even valid UTF-8) and a str with a lone surrogate (not Unicode
        # text) are invalid, in a batch as one at a time, so they can never replay.
        for field, bad in [("topic", b"payment.capture"), ("idempotency_key", b"\xff"),
                           ("idempotency_key", "k\ud800"), ("topic", "payment.capture\udfff")]:
            cols = {k: [v] * 3 for k, v in SEED.items()}
            cols[field] = [cols[field][0], bad, cols[field][0]]
            self.assertEqual(self.table.decide_columns(cols), ["replay_once", "hold", "replay_once"],
                             (field, bad))
            d = self.table.decide(**dict(SEED, **{field: bad}))
            self.assertEqual((d.verb, d.kind), ("hold", "invalid_input"), (field, bad))
        raw = self.table.decide_columns_raw({k: [v] for k, v in SEED.items()})
        self.assertEqual(list(raw), [1])
        self.assertEqual(self.table.decide_columns({}), [])
        with self.assertRaises(ValueError):
            self.table.decide_columns({"topic": ["a"], "attempts": [1, 2]})


class SharedTableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "gate.rgt")
        shutil.copy(TABLE, self.path)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_reload_rejects_corrupt_and_keeps_serving(self):
        shared = replaygate.SharedTable(self.path)
        reader = shared.reader()
        corrupt = os.path.join(self.dir, "corrupt.rgt")
        with open(TABLE, "rb") as f:
            data = bytearray(f.read())
        data[300] ^= 1
        with open(corrupt, "wb") as f:
            f.write(data)
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            shared.reload(corrupt)
        self.assertEqual(cm.exception.status, "bad_checksum")
        with reader.pin() as table:
            self.assertEqual(table.decide(**SEED).verb, "replay_once")
        shared.reload(self.path)  # the same table again is compatible
        self.assertEqual(shared.generation, 1)
        shared.close()

    def test_threads_decide_while_reloading(self):
        shared = replaygate.SharedTable(self.path)
        errors = []
        stop = threading.Event()

        def work():
            reader = shared.reader()
            try:
                while not stop.is_set():
                    with reader.pin() as table:
                        if table.decide(**SEED).verb != "replay_once":
                            errors.append("wrong verb")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for _ in range(200):
            shared.reload(self.path)
        stop.set()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        shared.close()


class JsonlGateTest(unittest.TestCase):
    def test_lines_decided_in_one_call_agree_with_the_reference_gate(self):
        gate = replaygate.JsonlGate(TABLE)
        with open(LETTERS, "rb") as f:
            verbs, invalid, checksum = gate.decide_lines(f.read())
        # m-018's attempts is out of bounds, m-019 misspells a key and the last line is
        # truncated: all three are invalid (as `replaygate decide` counts them) -> hold.
        self.assertEqual("".join(v[0] for v in verbs), "rnhhnnrnrnrnhhhrhhhh")
        self.assertEqual(invalid, 3)
        self.assertEqual(checksum, replaygate.Table.load(TABLE).checksum)
        rows = [dict(topic=t, error_class=e, attempts=a, idempotency_key=k, already_committed=c)
                for t, e in list(POLICY) + [("x", "y")] for a in (0, 3) for k in ("", "k")
                for c in (False, True)]
        data = "\n".join(json.dumps(r) for r in rows).encode()
        verbs, invalid, _ = gate.decide_lines(data)
        self.assertEqual(invalid, 0)
        self.assertEqual(verbs, [reference(**r) for r in rows])
        # A blank line between records is a record of its own (invalid -> hold), never skipped.
        verbs, invalid, _ = gate.decide_lines(data.replace(b"\n", b"\n\n"))
        self.assertEqual(invalid, len(rows) - 1)
        self.assertEqual(verbs[0::2], [reference(**r) for r in rows])
        self.assertEqual(verbs[1::2], ["hold"] * (len(rows) - 1))
        self.assertEqual(gate.decide_lines(b""), ([], 0, checksum))
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            gate.reload("/nonexistent.rgt")
        self.assertEqual(cm.exception.status, "io")
        gate.close()

    def test_inputs_longer_than_one_call_are_decided_in_several(self):
        gate = replaygate.JsonlGate(TABLE)
        with open(LETTERS, "rb") as f:
            data = f.read()
        whole = gate.decide_lines_raw(data)
        gate._CHUNK = 3  # 20 letters (one truncated): seven C calls
        chunked = gate.decide_lines_raw(data)
        self.assertEqual(list(chunked[0]), list(whole[0]))
        self.assertEqual(chunked[1:], whole[1:])
        self.assertEqual(whole[1], 3)
        self.assertEqual("".join(gate.verbs[v][0] for v in chunked[0]), "rnhhnnrnrnrnhhhrhhhh")
        gate.close()

    def test_bytes_after_a_line_do_not_change_its_decision(self):
        # Lines are parsed in place: what follows a line (the next line, CRLF) is only padding.
        gate = replaygate.JsonlGate(TABLE)
        line = (b'{"topic":"payment.capture","error_class":"timeout","attempts":1,'
                b'"idempotency_key":"k","already_committed":false}')
        cases = [(b"", 0), (b"\n", 0), (b"\r\n", 0), (b"\n2" * 40, 40), (b"\n" + b"}" * 100, 1),
                 (b'\n"' * 50, 50)]  # the extra lines are invalid records of their own
        for after, extra_invalid in cases:
            verbs, invalid, _ = gate.decide_lines(line + after)
            self.assertEqual((verbs[0], invalid), ("replay_once", extra_invalid), after[:4])
        cut = line[:-1]  # no closing brace, then a line of digits
        self.assertEqual(gate.decide_lines(cut + b"\n" + b"1" * 100)[:2], (["hold", "hold"], 2))
        gate.close()


class JsonlGateOneVerdictPerLineTest(unittest.TestCase):
    """decide_lines returns exactly one verb per input line, in order: a blank or whitespace-only
    line is an invalid record that gets the default (hold), as `replaygate decide` treats it."""

    REPLAY = (b'{"topic":"payment.capture","error_class":"timeout","attempts":1,'
              b'"idempotency_key":"k1","already_committed":false}')
    NEVER = (b'{"topic":"payment.capture","error_class":"duplicate","attempts":1,'
             b'"idempotency_key":"k2","already_committed":false}')

    def setUp(self):
        self.gate = replaygate.JsonlGate(TABLE)

    def tearDown(self):
        self.gate.close()

    def test_an_empty_kafka_value_does_not_shift_later_verdicts(self):
        values = [self.NEVER, b"", self.REPLAY]  # the documented b"\n".join(kafka_values)
        verbs, invalid, _ = self.gate.decide_lines(b"\n".join(values))
        self.assertEqual(verbs, ["never", "hold", "replay_once"])
        self.assertEqual(invalid, 1)

    def test_blank_and_whitespace_lines_each_get_hold(self):
        cases = [
            (b"\n", ["hold"], 1),
            (b"\n\n", ["hold", "hold"], 2),
            (b" \t", ["hold"], 1),
            (b"\r\n", ["hold"], 1),
            (b" \r\n" + self.REPLAY, ["hold", "replay_once"], 1),
            (self.REPLAY + b"\n\n", ["replay_once", "hold"], 1),
            (self.REPLAY + b"\n \n\t\n" + self.NEVER + b"\n",
             ["replay_once", "hold", "hold", "never"], 2),
            (self.REPLAY + b"\n", ["replay_once"], 0),  # the final newline ends a line
            (b"", [], 0),
        ]
        for data, want, want_invalid in cases:
            verbs, invalid, _ = self.gate.decide_lines(data)
            self.assertEqual((verbs, invalid), (want, want_invalid), data)

    def test_blank_lines_split_over_several_calls_stay_in_place(self):
        data = b"\n".join([self.REPLAY, b"", b"", self.NEVER, b"  ", self.REPLAY, b""] * 5)
        whole = self.gate.decide_lines(data)
        self.gate._CHUNK = 2
        chunked = self.gate.decide_lines(data)
        self.assertEqual(chunked, whole)
        self.assertEqual(len(whole[0]), data.count(b"\n"))  # it ends with a newline: 34 lines
        self.assertEqual(whole[0][:7], ["replay_once", "hold", "hold", "never", "hold",
                                        "replay_once", "hold"])
        self.assertEqual(whole[1], 19)  # 4 blank lines per group, the last group's last is none

    def test_the_same_verbs_as_replaygate_decide_line_for_line(self):
        with open(LETTERS, "rb") as f:
            letters = f.read().split(b"\n")
        data = b"\n".join(letters[:4] + [b"", b" \t", b"\r"] + letters[4:]) + b"\n\n"
        verbs, invalid, checksum = self.gate.decide_lines(data)
        out = subprocess.run([os.environ["RG_CLI"], "decide", "--table", TABLE, "-"],
                             input=data, capture_output=True, check=False)
        self.assertEqual(out.returncode, 1, out.stderr)  # invalid records are findings
        cli = [json.loads(line) for line in out.stdout.decode().splitlines()]
        self.assertEqual(len(cli), len(verbs))
        # The CLI also holds a dump's second replay of a key (rule "dump:..."); a worker decides
        # each letter alone, so those lines are compared by validity only.
        self.assertEqual([v for v, c in zip(verbs, cli) if not c["rule"].startswith("dump:")],
                         [c["verb"] for c in cli if not c["rule"].startswith("dump:")])
        self.assertLessEqual(sum(1 for c in cli if c["rule"].startswith("dump:")), 2)
        # `invalid` counts what the CLI marks invalid: records that do not parse ("invalid
        # record: ...") and records with a value that fails validation ("invalid input: ...").
        self.assertEqual(invalid, sum(1 for c in cli if c["invalid"]))
        self.assertGreater(sum(1 for c in cli if c["reason"].startswith("invalid input:")), 0)
        self.assertEqual([c["n"] for c in cli], list(range(1, len(verbs) + 1)))
        for blank in (cli[4], cli[5], cli[6], cli[-1]):
            self.assertEqual((blank["verb"], blank["invalid"]), ("hold", True))
            self.assertEqual(blank["reason"], "invalid record: blank line")


# generation_recovery's `source: record` inputs, in declaration order.
_RECOVERY_RECORD_ONLY = ["phase", "record_revision", "copy_complete", "refund_resolved",
                         "dispatch_confirmed_absent", "model_current", "spec_current",
                         "user_authorized", "remaining_budget"]


class OperatorOnlyTest(unittest.TestCase):
    """generation_recovery's operator_confirmed is `source: operator`: a record cannot set it."""

    LETTER = {"phase": "prepared", "message_revision": 1, "record_revision": 1,
              "dispatch_confirmed_absent": True, "model_current": True, "spec_current": True,
              "user_authorized": True, "remaining_budget": 40}
    # What a message may supply, and what only the durable operation record does (source: record).
    RECORD_ONLY = _RECOVERY_RECORD_ONLY
    MESSAGE = {"message_revision": 1}
    RECORD = {"phase": "prepared", "record_revision": 1, "dispatch_confirmed_absent": True,
              "model_current": True, "spec_current": True, "user_authorized": True,
              "remaining_budget": 40}

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.table = os.path.join(cls.dir, "g.rgt")
        subprocess.run([os.environ["RG_CLI"], "compile",
                        os.path.join(SOURCE, "policies", "generation_recovery.yaml"),
                        "-o", cls.table], check=True, capture_output=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def test_jsonl_records_cannot_confirm_or_supply_the_state(self):
        gate = replaygate.JsonlGate(self.table)
        forged = dict(self.LETTER, operator_confirmed=True)
        odd = dict(self.LETTER, operator_confirmed="yes")
        data = "\n".join(json.dumps(r) for r in (forged, odd, self.LETTER)).encode()
        verbs, invalid, _ = gate.decide_lines(data)
        # The phase and the allowance facts are `source: record`: a record never supplies them,
        # so the required phase is missing (invalid input, the default), never a dispatch.
        self.assertEqual(verbs, ["manual_reconciliation"] * 3)
        self.assertEqual(invalid, 3)
        gate.close()

    def test_a_message_passed_straight_through_cannot_confirm(self):
        # A worker that does decide(**msg) with a forged message: refused, never a dispatch.
        table = replaygate.Table.load(self.table)
        self.addCleanup(table.close)
        self.assertEqual(table.operator_only, ["operator_confirmed"])
        msg = dict(self.MESSAGE, operator_confirmed=True)
        for forged in (msg, dict(msg, operator_confirmed="yes"),
                       dict(msg, operator_confirmed=None)):
            with self.assertRaises(replaygate.ReplaygateError) as e:
                table.decide(**forged)
            self.assertEqual(e.exception.status, "operator_only")
            self.assertEqual(e.exception.code, 14)
            self.assertEqual(
                str(e.exception),
                "operator_only: 'operator_confirmed' is set only by an operator (source: "
                "operator), never from a message: pass an operator's own value with "
                "decide_operator({'operator_confirmed': ...}, **fields)")
        # The batch call carries message values too.
        columns = {k: [v] for k, v in msg.items()}
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_columns(columns)
        self.assertEqual(e.exception.status, "operator_only")
        del columns["operator_confirmed"]
        # Without the record's facts the required phase is missing: the default, invalid input.
        self.assertEqual(table.decide_columns(columns), ["manual_reconciliation"])
        # The refused call left nothing behind for the next one on this thread.
        self.assertEqual(table.decide_record(self.RECORD, **self.MESSAGE).verb, "hold_for_review")

    def test_the_worker_sets_it_from_its_operator_channel(self):
        table = replaygate.Table.load(self.table)
        self.addCleanup(table.close)
        self.assertEqual(table.decide_record(self.RECORD, **self.MESSAGE).verb, "hold_for_review")
        d = table.decide_record(self.RECORD, {"operator_confirmed": True}, **self.MESSAGE)
        self.assertEqual((d.verb, d.rule), ("dispatch", "prepared_dispatch_reviewed"))
        self.assertEqual(table.decide_record(self.RECORD, {"operator_confirmed": False},
                                             **self.MESSAGE).verb,
                         "hold_for_review")
        self.assertEqual(table.decide_record(self.RECORD, {"operator_confirmed": None},
                                             **self.MESSAGE).verb,
                         "hold_for_review")  # None: absent
        self.assertEqual(table.decide_record(self.RECORD, {}, **self.MESSAGE).verb, "hold_for_review")
        # Only operator-only names, typed exactly (the worker's own value, not the message's).
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_operator({"phase": "accepted"}, **self.MESSAGE)
        self.assertEqual(str(e.exception),
                         "operator_only: 'phase' is not an operator-only field (source: "
                         "operator): give message fields as keyword arguments, not in `operator`")
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_operator({"operator_confirmd": True}, **self.MESSAGE)
        self.assertEqual(e.exception.status, "unknown_field")
        with self.assertRaises(TypeError) as e:
            table.decide_operator({"operator_confirmed": "yes"}, **self.MESSAGE)
        self.assertEqual(str(e.exception), "operator value for 'operator_confirmed' must be a "
                         "bool or None, not str")
        with self.assertRaises(TypeError):
            table.decide_operator({"operator_confirmed": 1}, **self.MESSAGE)
        # The message still cannot slip it in beside an operator's value.
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_operator({"operator_confirmed": False},
                                  **dict(self.MESSAGE, operator_confirmed=True))
        self.assertEqual(e.exception.status, "operator_only")


    def test_derived_fields_are_refused_not_ignored(self):
        # stale = message_revision < record_revision is computed by the table: a value given for
        # it would be ignored silently, so decide() and decide_columns() refuse it (L5).
        table = replaygate.Table.load(self.table)
        self.addCleanup(table.close)
        self.assertEqual(table.derived, ["stale"])
        for value in (True, False, None, "yes"):
            with self.assertRaises(replaygate.ReplaygateError) as e:
                table.decide(**dict(self.MESSAGE, stale=value))
            self.assertEqual(e.exception.status, "derived")
            self.assertEqual(e.exception.code, -2)
        self.assertEqual(
            str(e.exception),
            "derived: 'stale' is derived (policy `derived:`): the table computes it from its "
            "operands, never from a value given for it; give the operands instead")
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_columns(dict({k: [v] for k, v in self.MESSAGE.items()}, stale=[False]))
        self.assertEqual(e.exception.status, "derived")
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_columns_raw({"stale": [True]})
        self.assertEqual(e.exception.status, "derived")
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_record(self.RECORD, {"operator_confirmed": True},
                                **dict(self.MESSAGE, stale=False))
        self.assertEqual(e.exception.status, "derived")
        # Without it the message still decides (the table derives stale itself).
        table.decide(**self.MESSAGE)

    def test_record_only_fields_come_from_the_record_never_the_message(self):
        # Mirrors rg_table_field_source: the binding lists record-only fields as it lists
        # operator-only ones, and decide(**msg) refuses them as it refuses operator-only ones.
        table = replaygate.Table.load(self.table)
        self.addCleanup(table.close)
        self.assertEqual(table.record_only, self.RECORD_ONLY)
        self.assertEqual(set(table.record_only) & set(table.operator_only), set())
        # The tester's message: it claims the phase and every allowance fact itself.
        for forged in (self.LETTER, dict(self.MESSAGE, phase="prepared"),
                       dict(self.MESSAGE, remaining_budget=1000)):
            with self.assertRaises(replaygate.ReplaygateError) as e:
                table.decide(**forged)
            self.assertEqual(e.exception.status, "record_only")
            self.assertEqual(e.exception.code, -1)
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide(**dict(self.MESSAGE, phase="prepared"))
        self.assertEqual(
            str(e.exception),
            "record_only: 'phase' comes only from the durable operation record (source: record), "
            "never from a message: pass the record's value with decide_record({'phase': ...}, "
            "**fields)")
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_operator({"operator_confirmed": True}, **self.LETTER)
        self.assertEqual(e.exception.status, "record_only")
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_columns({k: [v] for k, v in self.LETTER.items()})
        self.assertEqual(e.exception.status, "record_only")
        # `record` takes record-only names only.
        with self.assertRaises(replaygate.ReplaygateError) as e:
            table.decide_record(dict(self.RECORD, message_revision=1))
        self.assertEqual(str(e.exception),
                         "record_only: 'message_revision' is not a record-only field (source: "
                         "record): give message fields as keyword arguments, not in `record`")
        # A missing record fact is missing (fail closed), never filled from the message.
        d = table.decide_record({k: v for k, v in self.RECORD.items() if k != "phase"},
                                {"operator_confirmed": True}, **self.MESSAGE)
        self.assertEqual((d.verb, d.kind), ("manual_reconciliation", "invalid_input"))
        # A record value of the wrong type fails closed too.
        d = table.decide_record(dict(self.RECORD, remaining_budget="1000"),
                                {"operator_confirmed": True}, **self.MESSAGE)
        self.assertEqual((d.kind, d.effect), ("invalid_input", "none"))

class ExampleWorkerTest(unittest.TestCase):
    def test_worker_decides_the_example_letters(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "..", "example_worker.py"),
                              "--table", TABLE, "--batch", "7", LETTERS],
                             capture_output=True, text=True, check=False)
        # letters.jsonl ends with a truncated line on purpose: exit 1, and that letter holds.
        self.assertEqual(out.returncode, 1, out.stderr)
        lines = [json.loads(x) for x in out.stdout.splitlines()]
        self.assertEqual(len(lines), 20)
        self.assertEqual(lines[0], {"message_id": "m-001", "verb": "replay_once", "held": None,
                                    "table": replaygate.Table.load(TABLE).checksum})
        # m-016 has m-001's idempotency key: held as a duplicate, as `replaygate decide` does.
        self.assertEqual("".join(x["verb"][0] for x in lines), "rnhhnnrnrnrnhhhhhhhh")
        self.assertEqual(lines[15], {"message_id": "m-016", "verb": "hold",
                                     "held": "duplicate_key", "table": lines[0]["table"]})
        self.assertEqual([x["held"] for x in lines].count(None), 19)
        self.assertEqual(lines[19]["message_id"], None)
        cli = subprocess.run([os.environ["RG_CLI"], "decide", "--table", TABLE, LETTERS],
                             capture_output=True, text=True, check=False)
        want = [json.loads(x) for x in cli.stdout.splitlines()]
        self.assertEqual([x["verb"] for x in lines], [x["verb"] for x in want])
        self.assertEqual(want[15]["rule"], "dump:maybe_duplicate")

    def test_worker_reads_letters_as_strictly_as_the_cli(self):
        ok = ('"topic":"payment.capture","error_class":"timeout","attempts":1,'
              '"already_committed":false')
        letters = [
            '{"message_id":"a",%s,"idempotency_key":"k1"}' % ok,  # valid: replays
            # a key twice: json.loads alone keeps the last, which would read as not committed
            '{"message_id":"b","already_committed":true,%s,"idempotency_key":"k2"}' % ok,
            '{"message_id":"c",%s,"idempotency_key":"k3","replayz":3}' % ok,  # unknown key
        ]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "w.jsonl")
            with open(path, "wb") as f:
                f.write("\n".join(letters).encode() + b"\n")
                f.write(b'{"message_id":"d",' + ok.encode() + b',"idempotency_key":"k\xff"}\n')
            out = subprocess.run([sys.executable, os.path.join(HERE, "..", "example_worker.py"),
                                  "--table", TABLE, path],
                                 capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 1, out.stderr)
        verbs = [json.loads(x)["verb"] for x in out.stdout.splitlines()]
        self.assertEqual(verbs, ["replay_once", "hold", "hold", "hold"])

    def test_worker_reports_bad_table(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "..", "example_worker.py"),
                              "--table", "/nonexistent.rgt", LETTERS],
                             capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 2)
        self.assertIn("io: cannot open /nonexistent.rgt", out.stderr)


if __name__ == "__main__":
    unittest.main()
