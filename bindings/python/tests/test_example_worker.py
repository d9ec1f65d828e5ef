"""example_worker.py reads letters as strictly as `replaygate decide` (find2), never skips a
line, tells a crash from invalid letters by its exit code, and retries a failed reload (find10).
Run by CTest (python_binding)."""
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import example_worker  # noqa: E402
import replaygate  # noqa: E402
from test_lifetimes import compile_variant  # noqa: E402
from test_replaygate import TABLE  # noqa: E402

WORKER = os.path.join(os.path.dirname(HERE), "example_worker.py")
OK = ('"topic":"payment.capture","error_class":"timeout","attempts":1,'
      '"already_committed":false')


def letter(mid, key="k1", extra=""):
    return ('{"message_id":"%s",%s,"idempotency_key":"%s"%s}' % (mid, OK, key, extra)).encode()


class StrictWorkerTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_worker(self, data: bytes, *args):
        path = os.path.join(self.dir, "letters.jsonl")
        with open(path, "wb") as f:
            f.write(data)
        worker = subprocess.run([sys.executable, WORKER, "--table", TABLE, *args, path],
                                capture_output=True, check=False)
        cli = subprocess.run([os.environ["RG_CLI"], "decide", "--table", TABLE, path],
                             capture_output=True, check=False)
        return (worker.returncode, [json.loads(x) for x in worker.stdout.splitlines()],
                worker.stderr.decode(), cli)

    def test_every_line_gets_the_cli_verdict(self):
        deep = b'{"message_id":"m-deep","topic":' + b"[" * 1000 + b"]" * 1000 + b"}"
        lines = [
            letter("a"),                                         # valid: replays
            deep,                                                # nested 1000 deep
            letter("u16", "k2").decode().encode("utf-16"),       # not UTF-8 (json.loads takes it)
            letter("u32", "k3").decode().encode("utf-32-le"),
            letter("bh", "k4", ',"body_hash":5'),                # metadata of the wrong type
            b'{"message_id":7,%s,"idempotency_key":"k5"}' % OK.encode(),
            b"",                                                 # blank lines are letters too
            b"  \t",
            letter("b", "k6"),
            letter("dup", "k7", ',"already_committed":true'),    # a key twice
            letter("c", "k8"),
        ]
        code, out, err, cli = self.run_worker(b"\n".join(lines) + b"\n", "--batch", "4")
        self.assertEqual((code, err), (1, ""))  # invalid letters: findings
        self.assertEqual(cli.returncode, 1)
        want = [json.loads(x)["verb"] for x in cli.stdout.splitlines()]
        self.assertEqual(len(want), len(lines))
        self.assertEqual([x["verb"] for x in out], want)
        self.assertEqual(want, ["replay_once"] + ["hold"] * 7 + ["replay_once", "hold",
                                                                 "replay_once"])
        self.assertEqual([x["message_id"] for x in out],
                         ["a", None, None, None, "bh", None, None, None, "b", "dup", "c"])
        checksum = replaygate.Table.load(TABLE).checksum
        self.assertEqual({x["table"] for x in out}, {checksum})

    def test_valid_letters_exit_0_and_a_last_line_without_newline_counts(self):
        code, out, err, _ = self.run_worker(letter("a") + b"\n" + letter("b", "k2"))
        self.assertEqual((code, err), (0, ""))
        self.assertEqual([(x["message_id"], x["verb"]) for x in out],
                         [("a", "replay_once"), ("b", "replay_once")])

    def test_a_crash_exits_2_not_1(self):
        # An unexpected exception is an internal error (2), never "some letters invalid" (1).
        stdout, stderr = io.StringIO(), io.StringIO()
        path = os.path.join(self.dir, "one.jsonl")
        with open(path, "wb") as f:
            f.write(letter("a") + b"\n")
        with mock.patch.object(replaygate.JsonlGate, "decide_lines",
                               side_effect=RecursionError("boom")), \
                mock.patch.object(sys, "stdout", stdout), mock.patch.object(sys, "stderr", stderr):
            code = example_worker.main(["--table", TABLE, path])
        self.assertEqual(code, 2)
        self.assertEqual(stderr.getvalue(),
                         "example_worker: internal error: RecursionError: boom\n")
        self.assertEqual(stdout.getvalue(), "")

    def test_usage_and_io_errors_exit_2(self):
        out = subprocess.run([sys.executable, WORKER, "--table", TABLE, self.dir],
                             capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 2)
        self.assertIn("example_worker: ", out.stderr)
        self.assertIn("Is a directory", out.stderr)
        out = subprocess.run([sys.executable, WORKER, "--table", TABLE, "--batch", "0"],
                             capture_output=True, text=True, check=False)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--batch must be at least 1", out.stderr)


class WorkerDuplicateKeyTest(unittest.TestCase):
    """Within one run only the first letter with a given idempotency key keeps a create verb,
    as `replaygate decide` does (docs/cli.md, "Dump semantics"): the same verbs, line for line."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def both(self, data: bytes, *args, batch="2"):
        path = os.path.join(self.dir, "letters.jsonl")
        with open(path, "wb") as f:
            f.write(data)
        worker = subprocess.run([sys.executable, WORKER, "--table", TABLE, "--batch", batch,
                                 *args, path],
                                capture_output=True, check=False)
        cli = subprocess.run([os.environ["RG_CLI"], "decide", "--table", TABLE, *args, path],
                             capture_output=True, check=False)
        return worker, [json.loads(x) for x in worker.stdout.splitlines()], \
            [json.loads(x) for x in cli.stdout.splitlines()]

    def test_a_second_replay_of_a_key_is_held_like_the_cli(self):
        never = OK.replace('"timeout"', '"insufficient_funds"')
        lines = [
            letter("a", "k1"),                                   # replays: k1 is used up
            letter("b", "k1"),                                   # duplicate: held
            b'{"message_id":"c",%s,"idempotency_key":"k2"}' % never.encode(),  # never: k2 unused
            letter("d", "k2"),                                   # so k2 replays here
            letter("e", "k3").replace(b'"attempts":1', b'"attempts":"1"'),  # invalid: k3 unused
            letter("f", "k3"),                                   # replays
            b'{"message_id":"g",%s,"idempotency_key":"k\\u0031"}' % OK.encode(),  # "k1" escaped
            letter("h", "k1", ',"replays":1'),                   # the policy holds it anyway
            letter("i", "k4"),
        ]
        worker, out, cli = self.both(b"\n".join(lines) + b"\n")  # keys meet across batches
        self.assertEqual(worker.returncode, 1, worker.stderr)  # e is invalid
        self.assertEqual(worker.stderr, b"")
        self.assertEqual([x["verb"] for x in out], [x["verb"] for x in cli])
        self.assertEqual([(x["message_id"], x["verb"], x["held"]) for x in out], [
            ("a", "replay_once", None), ("b", "hold", "duplicate_key"), ("c", "never", None),
            ("d", "replay_once", None), ("e", "hold", None), ("f", "replay_once", None),
            ("g", "hold", "duplicate_key"), ("h", "hold", None), ("i", "replay_once", None)])
        self.assertEqual([x["rule"] for x in cli if x["rule"].startswith("dump:")],
                         ["dump:maybe_duplicate"] * 2)

    def test_the_key_limit_holds_new_keys_and_the_field_can_be_named(self):
        data = b"\n".join([letter("a", "k1"), letter("b", "k2"), letter("c", "k1")]) + b"\n"
        worker, out, cli = self.both(data, "--max-replayed-keys", "1")
        self.assertEqual(worker.returncode, 0, worker.stderr)
        self.assertEqual([x["verb"] for x in out], [x["verb"] for x in cli])
        self.assertEqual([x["held"] for x in out], [None, "key_limit", "duplicate_key"])
        self.assertEqual(cli[1]["rule"], "dump:key_limit")
        # Another string input as the key: every letter has the same topic.
        worker, out, cli = self.both(data, "--dedupe-field", "topic")
        self.assertEqual([x["verb"] for x in out], ["replay_once", "hold", "hold"])
        self.assertEqual([x["verb"] for x in out], [x["verb"] for x in cli])

    def test_a_dedupe_field_that_is_no_string_input_exits_2(self):
        for name in ("idempotency_kye", "attempts"):
            out = subprocess.run([sys.executable, WORKER, "--table", TABLE, "--dedupe-field", name],
                                 input=b"", capture_output=True, check=False)
            self.assertEqual(out.returncode, 2)
            self.assertIn(b"example_worker.py: error: --dedupe-field '%s' is not a string input "
                          b"of the policy" % name.encode(), out.stderr)
            self.assertEqual(out.stdout, b"")

    TICKETS = ("policy: tickets\nrevision: 1\ninputs:\n"
               "  topic: {type: string}\n"
               "  ticket: {type: string, optional: true, source: operator}\n"
               "  case_ref: {type: string, optional: true, source: record}\n"
               "  idempotency_key: {type: string, optional: true}\n"
               "verbs:\n  hold: {effect: none}\n  replay: {effect: create}\n"
               "default: hold\nrules:\n  - guard: any\n    when: {topic: t}\n"
               "    verb: replay\n    reason: replay it\n")

    def test_a_dedupe_field_no_letter_supplies_exits_2_like_the_cli(self):
        # Three identical letters keyed on an operator-only (or record-only) field: the gate
        # leaves it unset, so every letter would replay. Refused, exit 2, as `decide` does.
        policy = os.path.join(self.dir, "t.yaml")
        with open(policy, "w") as f:
            f.write(self.TICKETS)
        table = os.path.join(self.dir, "t.rgt")
        subprocess.run([os.environ["RG_CLI"], "compile", policy, "-o", table], check=True,
                       capture_output=True)
        letters = b'{"topic":"t","ticket":"T-1"}\n' * 3
        for name, why in (("ticket", "is set only by an operator (policy 'source: operator')"),
                          ("case_ref", "is read only from the operation record (policy 'source: "
                                       "record')")):
            out = subprocess.run([sys.executable, WORKER, "--table", table, "--dedupe-field",
                                  name], input=letters, capture_output=True, check=False)
            self.assertEqual(out.returncode, 2, out.stderr)
            self.assertEqual(out.stdout, b"")
            self.assertTrue(out.stderr.decode().endswith(
                f"example_worker.py: error: --dedupe-field {name!r} {why}: no letter supplies "
                "it, so no key would count as replayed and every letter could be replayed; name "
                "a string input that letters set (topic, idempotency_key)\n"), out.stderr)
            cli = subprocess.run([os.environ["RG_CLI"], "decide", "--table", table,
                                  "--dedupe-field", name, "-"], input=letters,
                                 capture_output=True, check=False)
            self.assertEqual(cli.returncode, 2)
        # A field letters set protects as before: one replay, then the repeats are held.
        out = subprocess.run([sys.executable, WORKER, "--table", table, "--dedupe-field",
                              "topic"], input=letters, capture_output=True, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([json.loads(x)["verb"] for x in out.stdout.splitlines()],
                         ["replay", "hold", "hold"])
        # The binding lists who supplies what, as rg_table_field_source says.
        t = replaygate.Table.load(table)
        self.addCleanup(t.close)
        self.assertEqual((t.operator_only, t.record_only, t.derived), (["ticket"], ["case_ref"], []))

    def test_a_policy_without_the_key_says_the_protection_is_off(self):
        table = os.path.join(os.path.dirname(TABLE), "generation_recovery.rgt")
        out = subprocess.run([sys.executable, WORKER, "--table", table], input=b"",
                             capture_output=True, check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stderr.decode(),
                         "example_worker: note: the policy has no string input 'idempotency_key'; "
                         "every letter may be replayed (name one with --dedupe-field)\n")


class WorkerReloadTest(unittest.TestCase):
    """A table caught half-written is reloaded once complete, even within the same mtime."""

    def test_a_failed_reload_is_retried_before_the_next_batch(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        variant = compile_variant(d)
        path = os.path.join(d, "gate.rgt")
        shutil.copy(TABLE, path)
        with open(variant, "rb") as f:
            new = f.read()
        proc = subprocess.Popen([sys.executable, WORKER, "--table", path, "--batch", "1"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        self.addCleanup(proc.kill)

        keys = iter(range(3))

        def decide_one():  # a new key each time: a repeated one would be held as a duplicate
            proc.stdin.write(letter("a", "k%d" % next(keys)) + b"\n")
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        tick = os.stat(path).st_mtime_ns + 10**9
        self.assertEqual(decide_one()["verb"], "replay_once")
        half = new[:len(new) // 2] + bytes(len(new) - len(new) // 2)
        with open(path, "r+b") as f:  # an in-place publish, caught half-written
            f.write(half)
            f.truncate()
        os.utime(path, ns=(tick, tick))
        first = decide_one()
        self.assertEqual(first["verb"], "replay_once")  # the old table keeps deciding
        with open(path, "r+b") as f:  # completed within the same mtime tick: same size too
            f.write(new)
        os.utime(path, ns=(tick, tick))
        second = decide_one()
        self.assertEqual((second["verb"], second["table"]),
                         ("never", replaygate.Table.load(variant).checksum))
        proc.stdin.close()
        self.assertEqual(proc.wait(10), 0)
        err = proc.stderr.read().decode()
        self.assertEqual(err.count("reload rejected, keeping the old table"), 1, err)
        proc.stdout.close()
        proc.stderr.close()


if __name__ == "__main__":
    unittest.main()
