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
replay, and every input line gets exactly one output line, in order.

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


def message_id(line: bytes):
    """The letter's message_id for the output, or None. Only echoed, never decided on: the verb
    comes from the strict reader, so a line this lenient look-up reads differently still gets the
    strict reader's verdict."""
    try:
        rec = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # bad UTF-8 or JSON, or nested too deep for Python
        return None
    mid = rec.get("message_id") if isinstance(rec, dict) else None
    return mid if isinstance(mid, str) else None


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


def run(gate: replaygate.JsonlGate, reloader: Reloader, src, out, batch_size: int) -> int:
    """Decides every line of `src` (a binary file) in batches; returns the invalid letter count."""
    invalid = 0
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
        out.write("".join(json.dumps({"message_id": message_id(line), "verb": verb,
                                      "table": checksum}) + "\n"
                          for line, verb in zip(batch, verbs)))
        out.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", required=True, help="the frozen table (.rgt)")
    ap.add_argument("--batch", type=int, default=1024, help="letters per C call (default 1024)")
    ap.add_argument("letters", nargs="?", help="JSON Lines file (default stdin)")
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error("--batch must be at least 1")
    try:
        gate = replaygate.JsonlGate(args.table)
        loaded = table_state(args.table)  # a change since the load is only reloaded again
    except (replaygate.ReplaygateError, OSError, ValueError) as e:
        print(f"example_worker: {args.table}: {e}", file=sys.stderr)
        return 2
    try:
        src = open(args.letters, "rb") if args.letters else sys.stdin.buffer
    except OSError as e:
        print(f"example_worker: {e}", file=sys.stderr)
        return 2
    try:
        with src:
            invalid = run(gate, Reloader(gate, args.table, loaded), src, sys.stdout, args.batch)
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
