#!/usr/bin/env python3
"""An example DLQ worker: reads dead letters as JSON Lines, decides them in batches through the
replaygate C API (one call per batch), and writes one JSON object per letter to stdout.

    RG_LIBRARY=build/runtime/libreplaygate_runtime.so \\
      python3 bindings/python/example_worker.py --table gate.rgt examples/letters.jsonl

The table is shared and hot-reloaded: when its file changes (publish it by atomic rename), the
worker reloads it before the next batch; a corrupt or incompatible file is reported on stderr and
the old table keeps deciding. Each output line names the table (checksum) that decided it.
Letters are read as strictly as `replaygate decide` reads them: a line that is not a JSON
object, has a key twice (json.loads alone would keep the last one, so `"already_committed":
true, "already_committed": false` would read as not committed) or a key that is neither a
policy input nor message_id/body_hash is invalid and gets the table's default (every field
missing), never a replay.
Exit codes: 0 success, 1 some letters were invalid, 2 usage or table errors.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import replaygate  # noqa: E402


METADATA = ("message_id", "body_hash")


def _no_duplicate_keys(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def read_letter(line, fields):
    """The letter on `line` as a dict, or None when it is invalid (see the module doc)."""
    try:
        rec = json.loads(line, object_pairs_hook=_no_duplicate_keys)
    except ValueError:  # bad JSON, a duplicate key, or bad UTF-8 (UnicodeDecodeError)
        return None
    if not isinstance(rec, dict) or any(k not in fields and k not in METADATA for k in rec):
        return None
    return rec


def batches(lines, size):
    batch = []
    for line in lines:
        if line.strip():
            batch.append(line)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", required=True, help="the frozen table (.rgt)")
    ap.add_argument("--batch", type=int, default=1024, help="letters per C call (default 1024)")
    ap.add_argument("letters", nargs="?", help="JSON Lines file (default stdin)")
    args = ap.parse_args(argv)
    try:
        shared = replaygate.SharedTable(args.table)
    except (replaygate.ReplaygateError, OSError) as e:
        print(f"example_worker: {args.table}: {e}", file=sys.stderr)
        return 2
    reader = shared.reader()
    mtime = os.stat(args.table).st_mtime_ns
    bad_json = 0
    # Bytes, not text: a line that is not UTF-8 is one invalid letter (json.loads decodes each
    # line and refuses it), not an exception that stops the worker.
    src = open(args.letters, "rb") if args.letters else sys.stdin.buffer
    with src:
        for batch in batches(src, args.batch):
            try:
                now = os.stat(args.table).st_mtime_ns
                if now != mtime:
                    mtime = now
                    shared.reload(args.table)
            except (replaygate.ReplaygateError, OSError) as e:
                print(f"example_worker: reload rejected, keeping the old table: {e}",
                      file=sys.stderr)
            with reader.pin() as table:
                records = []
                fields = set(table.fields)
                for line in batch:
                    rec = read_letter(line, fields)
                    if rec is None:
                        bad_json += 1
                        rec = {}  # every field missing: the table's default
                    records.append(rec)
                # Columns: every declared field, None (null) where a letter lacks it; a field
                # missing from every letter is left out (= missing, which fails closed).
                columns = {}
                for name in table.fields:
                    col = [r.get(name) for r in records]
                    if any(name in r for r in records):
                        columns[name] = col
                verbs = table.decide_columns(columns)
                for rec, verb in zip(records, verbs):
                    print(json.dumps({"message_id": rec.get("message_id"), "verb": verb,
                                      "table": table.checksum}))
    reader.close()
    shared.close()
    return 1 if bad_json else 0


if __name__ == "__main__":
    sys.exit(main())
