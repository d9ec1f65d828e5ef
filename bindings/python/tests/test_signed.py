"""Signed tables through the Python binding (issue 22, docs/signing.md): Table.load, SharedTable
and JsonlGate with trusted_keys, require_signed and trust_state. Keys and tables are made with the
real CLI ($RG_CLI); run by CTest (python_binding) with test_replaygate.py's environment."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import replaygate  # noqa: E402
from test_replaygate import SEED, SOURCE, TABLE  # noqa: E402

CLI = os.environ.get("RG_CLI", "")
POLICY = os.path.join(SOURCE, "policies", "replay_gate.policy")
LETTER = (b'{"message_id":"m1","topic":"payment.capture","error_class":"timeout","attempts":1,'
          b'"idempotency_key":"k1","already_committed":false}\n')


def cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True)


@unittest.skipUnless(CLI, "needs $RG_CLI")
class SignedTables(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rg_py_signed")
        self.addCleanup(shutil.rmtree, self.dir)
        for name in ("a", "b"):
            r = cli("key", "generate", "--secret", self.p(name + ".key"), "--public",
                    self.p(name + ".pub"))
            self.assertEqual(r.returncode, 0, r.stderr)
        self.signed = self.compile(1, "signed.rgt", "a")
        self.other = self.compile(1, "other.rgt", "b")

    def p(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def compile(self, revision: int, name: str, key: str) -> str:
        with open(POLICY) as f:
            text = f.read()
        assert "revision 1" in text
        policy = self.p(f"r{revision}.policy")
        with open(policy, "w") as f:
            f.write(text.replace("revision 1", f"revision {revision}", 1))
        r = cli("compile", policy, "-o", self.p(name), "--sign-key", self.p(key + ".key"))
        self.assertEqual(r.returncode, 0, r.stderr)
        return self.p(name)

    def assert_refused(self, status: str, load):
        with self.assertRaises(replaygate.ReplaygateError) as caught:
            load()
        self.assertEqual(caught.exception.status, status, str(caught.exception))
        return caught.exception

    def test_a_signed_table_loads_only_under_its_key(self):
        table = replaygate.Table.load(self.signed, trusted_keys=[self.p("a.pub")])
        self.assertEqual(table.decide(**SEED).verb, "replay_once")
        self.assertEqual(table.revision, 1)
        # One key file given as a plain string is one key, not its characters.
        self.assertEqual(replaygate.Table.load(self.signed, trusted_keys=self.p("a.pub")).revision,
                         1)
        # Rotation: either key of the pinned set may have signed.
        replaygate.Table.load(self.other, trusted_keys=[self.p("a.pub"), self.p("b.pub")])
        self.assert_refused("signature", lambda: replaygate.Table.load(
            self.other, trusted_keys=[self.p("a.pub")]))
        # The unsigned golden table: with a key pinned the file never decides it is not checked.
        self.assert_refused("signature", lambda: replaygate.Table.load(
            TABLE, trusted_keys=[self.p("a.pub")]))
        self.assert_refused("signature", lambda: replaygate.Table.load(
            TABLE, require_signed=True))
        # With no key pinned the unsigned table loads as before, through the runtime library.
        self.assertEqual(replaygate.Table.load(TABLE).decide(**SEED).verb, "replay_once")

    def test_a_tampered_or_unreadable_key_is_refused(self):
        with open(self.signed, "rb") as f:
            data = bytearray(f.read())
        data[-1] ^= 1
        forged = self.p("forged.rgt")
        with open(forged, "wb") as f:
            f.write(data)
        self.assert_refused("signature", lambda: replaygate.Table.load(
            forged, trusted_keys=[self.p("a.pub")]))
        error = self.assert_refused("argument", lambda: replaygate.Table.load(
            self.signed, trusted_keys=[self.p("missing.pub")]))
        self.assertIn("missing.pub", str(error))
        # A secret key is not a public key.
        self.assert_refused("argument", lambda: replaygate.Table.load(
            self.signed, trusted_keys=[self.p("a.key")]))

    def test_rollback_state_refuses_an_older_revision_also_after_a_restart(self):
        state = self.p("trust")
        newer = self.compile(2, "r2.rgt", "a")
        t = replaygate.Table.load(newer, trusted_keys=[self.p("a.pub")], trust_state=state)
        self.assertEqual(t.revision, 2)
        self.assert_refused("rollback", lambda: replaygate.Table.load(
            self.signed, trusted_keys=[self.p("a.pub")], trust_state=state))
        # Without the state (a read-only tool) the older table is not a rollback.
        self.assertEqual(replaygate.Table.load(self.signed, trusted_keys=[self.p("a.pub")])
                         .revision, 1)

    def test_a_shared_table_verifies_every_reload_and_keeps_serving_on_refusal(self):
        shared = replaygate.SharedTable(self.signed, trusted_keys=[self.p("a.pub")])
        reader = shared.reader()
        with reader.pin() as table:
            self.assertEqual(table.decide(**SEED).verb, "replay_once")
        generation = shared.generation
        self.assert_refused("signature", lambda: shared.reload(TABLE))
        self.assert_refused("signature", lambda: shared.reload(self.other))
        self.assertEqual(shared.generation, generation)
        with reader.pin() as table:
            self.assertEqual(table.decide(**SEED).verb, "replay_once")
            self.assertEqual(table.checksum, replaygate.Table.load(
                self.signed, trusted_keys=[self.p("a.pub")]).checksum)
        shared.reload(self.compile(2, "r2.rgt", "a"))
        self.assertEqual(shared.generation, generation + 1)
        reader.close()
        shared.close()
        self.assert_refused("signature", lambda: replaygate.SharedTable(
            TABLE, trusted_keys=[self.p("a.pub")]))

    def test_the_jsonl_gate_takes_the_same_keys(self):
        gate = replaygate.JsonlGate(self.signed, trusted_keys=[self.p("a.pub")])
        verbs, invalid, _checksum = gate.decide_lines(LETTER)
        self.assertEqual(list(verbs), ["replay_once"])
        self.assertEqual(invalid, 0)
        self.assert_refused("signature", lambda: gate.reload(TABLE))
        gate.close()
        self.assert_refused("signature", lambda: replaygate.JsonlGate(
            TABLE, trusted_keys=[self.p("a.pub")]))
        self.assert_refused("signature", lambda: replaygate.JsonlGate(
            self.other, trusted_keys=[self.p("a.pub")]))
        self.assert_refused("signature", lambda: replaygate.JsonlGate(TABLE, require_signed=True))


if __name__ == "__main__":
    unittest.main()
