"""Threads and lifetimes in the ctypes binding: a Table shared between threads, close() while
another thread decides, SharedTable/Reader/pin lifetimes, reader slots, closed-handle errors.
Run by CTest (python_binding) with test_replaygate.py's environment."""
import enum
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import replaygate  # noqa: E402
from test_replaygate import SEED, SOURCE, TABLE  # noqa: E402

COMMITTED = dict(SEED, already_committed=True)  # must be `never`


def compile_variant(directory: str) -> str:
    """A table reload-compatible with TABLE (same fields and verbs) whose seed letter is `never`
    instead of `replay_once`: a reload to it shows in every verdict."""
    with open(os.path.join(SOURCE, "policies", "replay_gate.policy")) as f:
        text = f.read()
    old = "payment.capture, timeout -> replay_once"
    assert old in text
    policy = os.path.join(directory, "variant.policy")
    with open(policy, "w") as f:
        f.write(text.replace(old, "payment.capture, timeout -> never"))
    out = os.path.join(directory, "variant.rgt")
    subprocess.run([os.environ["RG_CLI"], "compile", policy, "-o", out], check=True,
                   capture_output=True)
    return out


class Switchy:
    """Hands the GIL over as often as possible, so threads interleave between any two ctypes
    calls (each releases the GIL anyway)."""

    def __enter__(self):
        self.old = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)

    def __exit__(self, *exc):
        sys.setswitchinterval(self.old)


class SharedTableObjectTest(unittest.TestCase):
    """find1: Table.decide() from several threads at once."""

    def test_threads_sharing_a_table_each_get_their_own_verdict(self):
        table = replaygate.Table.load(TABLE)
        wrong, done = [], []
        deadline = time.monotonic() + 2

        def work(record, want):
            n = 0
            while n < 20000 and time.monotonic() < deadline:
                n += 1
                d = table.decide(**record)
                if (d.verb, d.kind) != (want, "rule"):
                    wrong.append((want, d.verb, d.rule))
            done.append(n)

        # Long keys make the setters reallocate; `replays` set by one thread only.
        replayable = [dict(SEED, idempotency_key="k" * (1 + 1000 * i), replays=None)
                      for i in range(2)]
        threads = [threading.Thread(target=work, args=(COMMITTED, "never")) for _ in range(2)]
        threads += [threading.Thread(target=work, args=(r, "replay_once")) for r in replayable]
        with Switchy():
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        self.assertEqual(wrong[:5], [])
        self.assertEqual(len(done), 4)
        self.assertGreater(min(done), 100)

    def test_a_closed_table_says_so(self):
        table = replaygate.Table.load(TABLE)
        table.close()
        table.close()  # twice is fine
        for call in (lambda: table.decide(**SEED),
                     lambda: table.decide_columns({k: [v] for k, v in SEED.items()})):
            with self.assertRaises(replaygate.ReplaygateError) as cm:
                call()
            self.assertEqual(str(cm.exception), "argument: table is closed")
        self.assertEqual(table.checksum, replaygate.Table.load(TABLE).checksum)  # still readable

    def test_close_while_another_thread_decides(self):
        # The call in flight finishes on live memory; the next call says the table is closed.
        columns = {k: [v] * 50 for k, v in SEED.items()}
        for _ in range(30):
            table = replaygate.Table.load(TABLE)
            results, started = [], threading.Event()

            def work():
                try:
                    while True:
                        results.append(table.decide_columns(columns) == ["replay_once"] * 50)
                        results.append(table.decide(**COMMITTED).verb == "never")
                        started.set()
                except replaygate.ReplaygateError as e:
                    results.append(str(e))
                started.set()

            t = threading.Thread(target=work)
            with Switchy():
                t.start()
                started.wait(10)
                table.close()
                t.join(10)
            self.assertEqual(results[-1], "argument: table is closed")
            self.assertTrue(all(r is True for r in results[:-1]), results[-5:])
            self.assertGreater(len(results), 1)


class ReaderLifetimeTest(unittest.TestCase):
    """find3 and find6: SharedTable, Reader and pinned Table lifetimes; reader slots."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.variant = compile_variant(cls.dir)
        cls.path = os.path.join(cls.dir, "gate.rgt")
        shutil.copy(TABLE, cls.path)
        cls.checksum = replaygate.Table.load(TABLE).checksum
        cls.variant_checksum = replaygate.Table.load(cls.variant).checksum

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def test_a_reader_keeps_its_shared_table_alive(self):
        reader = replaygate.SharedTable(self.path).reader()  # the SharedTable is not held
        gc.collect()
        with reader.pin() as table:
            self.assertEqual(table.decide(**SEED).verb, "replay_once")

    def test_dropping_the_shared_table_while_a_pin_is_open(self):
        shared = replaygate.SharedTable(self.path)
        reader = shared.reader()
        with reader.pin() as table:
            shared = reader = None
            gc.collect()
            junk = [bytearray(4096) for _ in range(1000)]  # would reuse freed memory
            for _ in range(3):
                d = table.decide(**SEED)
                self.assertEqual((d.verb, d.table_checksum), ("replay_once", self.checksum))
            del junk

    def test_nested_pins_keep_the_outer_table(self):
        shared = replaygate.SharedTable(self.path)
        reader = shared.reader()
        with reader.pin() as outer:
            with reader.pin() as inner:  # e.g. a helper that pins, called inside a batch
                self.assertEqual(inner.checksum, outer.checksum)
            shared.reload(self.variant)
            shared.reload(self.path)
            shared.reload(self.variant)  # the outer table would have been freed by now
            with reader.pin() as again:  # still the outer block's table
                self.assertEqual(again.checksum, self.checksum)
            d = outer.decide(**SEED)
            self.assertEqual((d.verb, d.table_checksum), ("replay_once", self.checksum))
        with reader.pin() as table:  # the outermost block ended: the current table
            self.assertEqual(table.checksum, self.variant_checksum)
            self.assertEqual(table.decide(**SEED).verb, "never")
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            table.decide(**SEED)  # a pinned table after its block
        self.assertEqual(str(cm.exception), "argument: table is closed")
        shared.close()

    def test_close_shared_table_while_another_thread_is_pinned(self):
        for _ in range(20):
            shared = replaygate.SharedTable(self.path)
            reader = shared.reader()
            pinned, closed, results = threading.Event(), threading.Event(), []

            def work():
                with reader.pin() as table:
                    pinned.set()
                    closed.wait(10)
                    for _ in range(50):
                        results.append(table.decide_columns(
                            {k: [v] * 20 for k, v in SEED.items()}) == ["replay_once"] * 20)
                try:
                    with reader.pin():
                        results.append("pinned after close")
                except replaygate.ReplaygateError as e:
                    results.append(str(e))

            t = threading.Thread(target=work)
            t.start()
            pinned.wait(10)
            shared.close()
            with self.assertRaises(replaygate.ReplaygateError) as cm:
                shared.reload(self.variant)
            self.assertEqual(str(cm.exception), "argument: shared table is closed")
            shared = None
            gc.collect()
            closed.set()
            t.join(10)
            self.assertEqual(results, [True] * 50 + ["argument: reader is closed"])

    def test_close_shared_table_while_other_threads_decide(self):
        for _ in range(20):
            shared = replaygate.SharedTable(self.path)
            readers = [shared.reader() for _ in range(2)]
            results, started = [], threading.Barrier(3)

            def work(reader):
                started.wait(10)
                try:
                    while True:
                        with reader.pin() as table:
                            results.append(table.decide(**SEED).verb == "replay_once")
                except replaygate.ReplaygateError as e:
                    results.append(str(e))

            threads = [threading.Thread(target=work, args=(r,)) for r in readers]
            with Switchy():
                for t in threads:
                    t.start()
                started.wait(10)
                shared.close()
                for t in threads:
                    t.join(10)
            errors = [r for r in results if r is not True]
            self.assertEqual(errors, ["argument: reader is closed"] * 2)

    def test_readers_of_finished_threads_release_their_slots(self):
        shared = replaygate.SharedTable(self.path, max_readers=2)
        results = []

        def batch():  # a short-lived worker thread: no explicit close
            try:
                r = shared.reader()
                with r.pin() as t:
                    results.append(t.decide(**SEED).verb)
            except replaygate.ReplaygateError as e:
                results.append(str(e))

        for _ in range(10):
            t = threading.Thread(target=batch)
            t.start()
            t.join()
        self.assertEqual(results, ["replay_once"] * 10)
        # Dropped or closed readers give their slot back; held ones do not.
        a, b = shared.reader(), shared.reader()
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            shared.reader()
        self.assertEqual(cm.exception.status, "no_reader_slot")
        self.assertIn("every reader slot of this SharedTable is taken", cm.exception.message)
        del a
        b.close()
        c, d = shared.reader(), shared.reader()
        with c.pin() as table:
            self.assertEqual(table.decide(**SEED).verb, "replay_once")
        shared.close()
        with self.assertRaises(replaygate.ReplaygateError) as cm:
            d.pin().__enter__()
        self.assertEqual(str(cm.exception), "argument: reader is closed")
        with self.assertRaises(ValueError):  # ctypes would wrap -1 to 4294967295 slots
            replaygate.SharedTable(self.path, max_readers=-1)


class StrictTypesTest(unittest.TestCase):
    """find10: decide() and decide_columns() take exactly bool, int and str; a subclass (an
    IntEnum, a str Enum) is invalid in both, never read as its base type."""

    class Count(enum.IntEnum):
        ONE = 1

    class Topic(str, enum.Enum):
        CAPTURE = "payment.capture"

    class Key(str):
        pass

    @classmethod
    def setUpClass(cls):
        cls.table = replaygate.Table.load(TABLE)

    def test_subclasses_fail_closed_in_decide_and_decide_columns(self):
        for field, bad in [("attempts", self.Count.ONE), ("topic", self.Topic.CAPTURE),
                           ("idempotency_key", self.Key("k1")), ("attempts", True),
                           ("already_committed", 0), ("replays", False)]:
            d = self.table.decide(**dict(SEED, **{field: bad}))
            self.assertEqual((d.verb, d.kind, d.reason),
                             ("hold", "invalid_input", f"invalid input: {field}"), (field, bad))
            cols = {k: [v] * 2 for k, v in SEED.items()}
            cols[field] = [cols.get(field, [None])[0], bad]
            self.assertEqual(self.table.decide_columns(cols), ["replay_once", "hold"],
                             (field, bad))
        # The plain types decide.
        self.assertEqual(self.table.decide(**dict(SEED, replays=0)).verb, "replay_once")

    def test_a_str_is_not_a_column(self):
        with self.assertRaises(TypeError):
            self.table.decide_columns({"topic": "abc"})
        with self.assertRaises(TypeError):
            self.table.decide_columns({"topic": b"abc"})

    def test_a_path_with_a_nul_is_refused(self):
        for load in (replaygate.Table.load, replaygate.SharedTable, replaygate.JsonlGate):
            with self.assertRaises(ValueError):
                load(TABLE + "\0junk")
        shared = replaygate.SharedTable(TABLE)
        with self.assertRaises(ValueError):
            shared.reload(TABLE + "\0junk")
        shared.close()


if __name__ == "__main__":
    unittest.main()
