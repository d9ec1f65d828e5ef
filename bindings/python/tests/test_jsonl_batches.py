"""JsonlGate batches: one table per returned batch (find5), one verb per message with
decide_messages (find11), close() while another thread decides. Run by CTest (python_binding)."""
import os
import shutil
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import replaygate  # noqa: E402
from test_lifetimes import compile_variant, Switchy  # noqa: E402
from test_replaygate import TABLE  # noqa: E402

REPLAY = (b'{"topic":"payment.capture","error_class":"timeout","attempts":1,'
          b'"idempotency_key":"k1","already_committed":false}')
NEVER = (b'{"topic":"payment.capture","error_class":"duplicate","attempts":1,'
         b'"idempotency_key":"k2","already_committed":false}')


class ReloadBetweenCalls:
    """Wraps the gate's library: reloads the gate (alternating between two tables) after each of
    the first `reloads` rgj_decide_lines calls, i.e. between two calls of one decide_lines."""

    def __init__(self, gate, paths, reloads):
        self._real, self._gate, self._paths, self._left = gate._lib, gate, paths, reloads
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self._real, name)

    def rgj_decide_lines(self, *args):
        code = self._real.rgj_decide_lines(*args)
        self.calls += 1
        if self._left > 0:
            self._left -= 1
            self._gate.reload(self._paths[self._left % 2])  # rgj_reload: __getattr__
        return code


class OneTablePerBatchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.variant = compile_variant(cls.dir)  # says `never` to REPLAY
        cls.checksum = replaygate.Table.load(TABLE).checksum
        cls.variant_checksum = replaygate.Table.load(cls.variant).checksum

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def test_a_reload_between_two_calls_decides_the_batch_again_on_one_table(self):
        gate = replaygate.JsonlGate(TABLE)
        gate._CHUNK = 4  # 10 lines: three C calls
        gate._lib = ReloadBetweenCalls(gate, [self.variant], reloads=1)
        verbs, invalid, checksum = gate.decide_lines(b"\n".join([REPLAY] * 10))
        self.assertEqual((verbs, invalid, checksum), (["never"] * 10, 0, self.variant_checksum))
        self.assertEqual(gate._lib.calls, 2 + 3)  # the 2nd call sees the new table: all again
        gate.close()

    def test_reloads_during_every_try_raise_rather_than_mix_tables(self):
        gate = replaygate.JsonlGate(TABLE)
        gate._CHUNK = 4
        gate._lib = ReloadBetweenCalls(gate, [TABLE, self.variant], reloads=100)
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            gate.decide_lines(b"\n".join([REPLAY] * 10))
        self.assertEqual((cm.exception.status, cm.exception.code), ("table_changed", -1))
        self.assertEqual(gate._lib.calls, 2 * gate._ATTEMPTS)  # each try stops at its 2nd call
        gate._lib = gate._lib._real  # 8 reloads: back on TABLE
        self.assertEqual(gate.decide_lines(b"\n".join([REPLAY] * 10))[0], ["replay_once"] * 10)
        gate.close()

    def test_a_single_call_batch_is_never_retried(self):
        gate = replaygate.JsonlGate(TABLE)
        gate._lib = ReloadBetweenCalls(gate, [self.variant], reloads=1)
        verbs, _, checksum = gate.decide_lines(b"\n".join([REPLAY] * 10))
        self.assertEqual((verbs, checksum), (["replay_once"] * 10, self.checksum))
        self.assertEqual(gate._lib.calls, 1)
        gate.close()


class DecideMessagesTest(unittest.TestCase):
    """decide_messages: len(verbs) == len(messages), an empty message included."""

    def setUp(self):
        self.gate = replaygate.JsonlGate(TABLE)

    def tearDown(self):
        self.gate.close()

    def test_one_verb_per_message_a_last_empty_one_included(self):
        cases = [
            ([REPLAY, b""], ["replay_once", "hold"], 1),
            ([b""], ["hold"], 1),
            ([b"", b""], ["hold", "hold"], 2),
            ([REPLAY, b"", b""], ["replay_once", "hold", "hold"], 2),
            ([b"", REPLAY], ["hold", "replay_once"], 1),
            ([NEVER, b" ", REPLAY + b"\r"], ["never", "hold", "replay_once"], 1),
            ([], [], 0),
        ]
        for messages, want, want_invalid in cases:
            verbs, invalid, checksum = self.gate.decide_messages(messages)
            self.assertEqual((verbs, invalid), (want, want_invalid), messages)
            self.assertEqual(len(checksum), 32)
        raw = self.gate.decide_messages_raw(iter([REPLAY, b""]))  # any iterable
        self.assertEqual((list(raw[0]), raw[1]), ([1, 2], 1))

    def test_a_message_with_a_raw_newline_gets_the_default_and_shifts_nothing(self):
        pretty = b'{"topic":"payment.capture",\n"error_class":"timeout","attempts":1,\n' \
                 b'"idempotency_key":"k3","already_committed":false}'
        messages = [REPLAY, pretty, NEVER, b"\n", REPLAY, b""]
        verbs, invalid, _ = self.gate.decide_messages(messages)
        self.assertEqual(verbs, ["replay_once", "hold", "never", "hold", "replay_once", "hold"])
        self.assertEqual(invalid, 3)
        self.assertEqual(self.gate.decide_messages([memoryview(pretty), REPLAY])[:2],
                         (["hold", "replay_once"], 1))

    def test_close_while_another_thread_decides(self):
        data = b"\n".join([REPLAY] * 200)
        for _ in range(20):
            gate = replaygate.JsonlGate(TABLE)
            results, started = [], threading.Event()

            def work():
                try:
                    while True:
                        results.append(gate.decide_lines(data)[0] == ["replay_once"] * 200)
                        started.set()
                except replaygate.ReplaygateError as e:
                    results.append(str(e))
                started.set()

            t = threading.Thread(target=work)
            with Switchy():
                t.start()
                started.wait(10)
                gate.close()
                t.join(10)
            self.assertEqual(results[-1], "argument: gate is closed")
            self.assertTrue(all(r is True for r in results[:-1]))


if __name__ == "__main__":
    unittest.main()
