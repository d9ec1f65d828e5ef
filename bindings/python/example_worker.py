#!/usr/bin/env python3
"""An example DLQ worker: reads dead letters as JSON Lines, decides them in batches through
replaygate's JSON Lines library (one C call per batch), and writes one JSON object per letter to
stdout.

    RG_LIBRARY=build/runtime/libreplaygate_runtime.so \\
    RG_JSONL_LIBRARY=build/bindings/jsonl/libreplaygate_jsonl.so \\
      python3 bindings/python/example_worker.py --table gate.rgt examples/letters.jsonl

Letters are read by the same strict reader as `replaygate decide` (JsonlGate: the library parses
each line, Python never interprets a letter's fields): a line that is blank, not UTF-8, not a
JSON object, nested too deep, has a key twice, a key that is neither a policy input nor
message_id/body_hash, or metadata of the wrong type gets the table's default verb, never a
replay, and every input line gets exactly one output line, in order. An operator-only input
(policy `source: operator`, e.g. operator_confirmed) is never taken from a letter: this worker has
no operator channel, so such a field stays unset (absent) and whatever needs it does not happen.

Like `replaygate decide` (docs/cli.md, "Dump semantics"), within one run only the first letter
with a given idempotency key may keep a create-effect verb (replay_once): a later letter with the
same key (examples/letters.jsonl: m-016 has m-001's key) gets the table's default verb instead,
with "held": "duplicate_key". The key is the string value of --dedupe-field (default
idempotency_key, when the policy has it as a string input); a letter without one is not held.
A --dedupe-field that no letter supplies (an operator-only, record-only or derived field: the
gate leaves it unset in every letter, so no key would ever count) is refused, exit 2, naming the
string inputs letters do set, as `replaygate decide --dedupe-field` refuses it.
Only create verbs are ever turned into the default, never anything else; letters held, parked or
invalid do not use up their key. The keys replayed are kept exactly, in memory, for the whole run
(reloads included), at most --max-replayed-keys of them (default 1,000,000, about 100 bytes
each plus the key): after that a create verb for a new key is held too ("held": "key_limit"),
never replayed unchecked. `replaygate decide` keeps them in a fixed-size filter instead and can
also hold a few first occurrences (dump:maybe_duplicate); a key it holds as a duplicate this
worker holds too. The CLI's --max-replays budget is not implemented here.

The table is hot-reloaded: when its file changes (publish it by atomic rename), the worker
reloads it before the next batch; a corrupt or incompatible file is reported on stderr, the old
table keeps deciding, and the reload is tried again before every batch until one succeeds (a file
caught half-written is picked up once complete, even within the same mtime tick). Each output
line names the table (checksum) that decided it; all letters of a batch come from one table.

Exit codes (as the CLI's): 0 every letter was valid, 1 some letters were invalid (they got the
default), 2 usage, table or I/O errors, or an internal error (the worker stopped; lines already
printed stand).
"""
import argparse
import itertools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replaygate  # noqa: E402


def read_letter(line: bytes):
    """The letter as a dict, or None. Only for echoing its message_id and reading the key of a
    letter the strict reader gave a create verb (so a valid one-object JSON record, which Python
    reads the same way); never decided on: the verb comes from the strict reader."""
    try:
        rec = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # bad UTF-8 or JSON, or nested too deep for Python
        return None
    return rec if isinstance(rec, dict) else None


def message_id(rec):
    mid = rec.get("message_id") if rec is not None else None
    return mid if isinstance(mid, str) else None


class ReplayedKeys:
    """One replay per idempotency key within one run, as `replaygate decide` does: judge() is
    asked for every letter whose verb has effect create, and says whether it may keep it."""

    def __init__(self, field, max_keys: int):
        self.field = field  # None: no dedupe field, only create verbs without a key
        self.max_keys = max_keys
        self.keys = set()

    def judge(self, rec):
        """None when the letter may keep its create verb (its key is then remembered), else why
        it is held: "duplicate_key", "key_limit", or "unreadable_key" (fail closed: a letter the
        strict reader accepted always reads here; should one not, it is held, never replayed)."""
        if self.field is None:
            return None
        if rec is None:
            return "unreadable_key"
        key = rec.get(self.field)
        if key is None:  # absent or null: no key (the policy decides whether that may replay)
            return None
        if not isinstance(key, str):  # the strict reader makes such a value invalid: held
            return "unreadable_key"
        if key in self.keys:
            return "duplicate_key"
        if len(self.keys) >= self.max_keys:
            return "key_limit"
        self.keys.add(key)
        return None


def table_state(path: str):
    """What identifies a published table file: an atomic rename changes the inode, an in-place
    write the size or mtime."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns


class Reloader:
    """Reloads the table when its file changed since the last successful (re)load, and retries a
    failed reload before every batch. Each distinct failure is reported once on stderr."""

    def __init__(self, gate: replaygate.JsonlGate, path: str, loaded):
        self.gate, self.path, self.loaded = gate, path, loaded
        self.failed = False
        self.reported = None

    def maybe_reload(self) -> None:
        try:
            now = table_state(self.path)
            if now == self.loaded and not self.failed:
                return
            self.gate.reload(self.path)
            self.loaded, self.failed, self.reported = now, False, None
        except (replaygate.ReplaygateError, OSError) as e:
            self.failed = True
            if str(e) != self.reported:
                self.reported = str(e)
                print(f"example_worker: reload rejected, keeping the old table: {e}",
                      file=sys.stderr, flush=True)


def run(gate: replaygate.JsonlGate, reloader: Reloader, src, out, batch_size: int,
        replayed: ReplayedKeys) -> int:
    """Decides every line of `src` (a binary file) in batches; returns the invalid letter count."""
    invalid = 0
    facts = None  # (effect per verb, default verb, checksum) of the table that decided
    while True:
        # Lines as read, each with its b"\n" (the last maybe without): joined, they are exactly
        # len(batch) lines for the library, blank ones included.
        batch = list(itertools.islice(src, batch_size))
        if not batch:
            return invalid
        reloader.maybe_reload()
        verbs, bad, checksum = gate.decide_lines(b"".join(batch))
        if len(verbs) != len(batch):
            raise RuntimeError(f"{len(batch)} lines but {len(verbs)} verbs")
        invalid += bad
        if facts is None or facts[2] != checksum:
            effects, default, served = gate.verb_effects()
            if served != checksum:  # only this thread reloads: cannot happen
                raise RuntimeError(f"table {checksum} decided the batch but {served} is served")
            facts = (dict(zip(gate.verbs, effects)), default, served)
        effect_of, default, _ = facts
        lines = []
        for line, verb in zip(batch, verbs):
            rec = read_letter(line)
            held = None
            if effect_of[verb] == "create":
                held = replayed.judge(rec)
                if held is not None:
                    verb = default
            lines.append(json.dumps({"message_id": message_id(rec), "verb": verb, "held": held,
                                     "table": checksum}) + "\n")
        out.write("".join(lines))
        out.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", required=True, help="the frozen table (.rgt)")
    ap.add_argument("--batch", type=int, default=1024, help="letters per C call (default 1024)")
    ap.add_argument("--dedupe-field", help="the string input that names a letter's idempotency "
                    "key (default idempotency_key, when the policy has it)")
    ap.add_argument("--max-replayed-keys", type=int, default=1_000_000,
                    help="keys remembered at most; later new keys are held (default 1000000)")
    ap.add_argument("letters", nargs="?", help="JSON Lines file (default stdin)")
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error("--batch must be at least 1")
    if args.max_replayed_keys < 0:
        ap.error("--max-replayed-keys must be 0 or more")
    try:
        gate = replaygate.JsonlGate(args.table)
        loaded = table_state(args.table)  # a change since the load is only reloaded again
        # Field names and types: a reload keeps them (an incompatible table is refused).
        table = replaygate.Table.load(args.table)
        strings = [f for f in table.fields if table.field_type(f) == "string"]
        # What no letter supplies (JsonlGate leaves them unset whatever a letter says): keyed
        # on one of them, no key would ever count as replayed, and every letter could replay.
        not_from_letters = {
            **{f: "is set only by an operator (policy 'source: operator')"
               for f in table.operator_only},
            **{f: "is read only from the operation record (policy 'source: record')"
               for f in table.record_only},
            **{f: "is derived (computed, never read)" for f in table.derived}}
        table.close()
    except (replaygate.ReplaygateError, OSError, ValueError) as e:
        print(f"example_worker: {args.table}: {e}", file=sys.stderr)
        return 2
    field = args.dedupe_field if args.dedupe_field is not None else "idempotency_key"
    if field in strings and field in not_from_letters:
        # As `replaygate decide --dedupe-field` does: refused (exit 2) when named, a note when
        # it is the default name.
        usable = [f for f in strings if f not in not_from_letters]
        what = (f"--dedupe-field {field!r}" if args.dedupe_field is not None
                else "the policy's idempotency_key")
        problem = (f"{what} {not_from_letters[field]}: no letter supplies it, so no key would "
                   "count as replayed and every letter could be replayed; name a string input "
                   "that letters set" + (f" ({', '.join(usable)})" if usable else ""))
        if args.dedupe_field is not None:
            gate.close()
            ap.error(problem)
        print(f"example_worker: note: {problem} (--dedupe-field)", file=sys.stderr)
        field = None
    elif field not in strings:
        if args.dedupe_field is not None:  # a typo must not switch the protection off
            gate.close()
            ap.error(f"--dedupe-field {field!r} is not a string input of the policy")
        print("example_worker: note: the policy has no string input 'idempotency_key'; every "
              "letter may be replayed (name one with --dedupe-field)", file=sys.stderr)
        field = None
    replayed = ReplayedKeys(field, args.max_replayed_keys)
    try:
        src = open(args.letters, "rb") if args.letters else sys.stdin.buffer
    except OSError as e:
        print(f"example_worker: {e}", file=sys.stderr)
        return 2
    try:
        with src:
            invalid = run(gate, Reloader(gate, args.table, loaded), src, sys.stdout, args.batch,
                          replayed)
    except OSError as e:
        print(f"example_worker: I/O error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - a crash must not look like "some letters invalid"
        print(f"example_worker: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    finally:
        gate.close()
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main())
