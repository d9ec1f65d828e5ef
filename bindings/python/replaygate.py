"""Python binding of the replaygate C API (runtime/replaygate.h) over ctypes; standard library only.

One ctypes call costs several hundred nanoseconds, more than a whole Python dict-lookup gate, so
besides Table.decide() (one record per call) there is Table.decide_columns(): many records,
given as one list of values per field, decided in a single call.

    import replaygate
    table = replaygate.Table.load("gate.rgt")
    d = table.decide(topic="payment.capture", error_class="timeout", attempts=1,
                     idempotency_key="cap_9f3a", already_committed=False)
    d.verb, d.rule, d.reason, d.table_checksum
    table.decide_columns({"topic": [...], "error_class": [...], ...})  # -> ["replay_once", ...]

Hot reload: SharedTable.open(path), .reload(path), .reader() per thread (see docs/embedding.md).
The shared library is found through $RG_LIBRARY, else next to this file, else the system
linker path (libreplaygate_runtime.so).
Every failure raises ReplaygateError with .status (e.g. "bad_checksum") and .message.

Operator-only fields (Table.operator_only, policy `source: operator`, e.g. operator_confirmed):
pass them to decide()/decide_columns() only from your own operator channel (a confirmation you
recorded), never from the message being decided; a message that says "operator_confirmed": true
proves nothing. JsonlGate ignores them in records.
"""
import array
import ctypes
import ctypes.util
import itertools
import os
import threading
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

__all__ = ["ReplaygateError", "Decision", "Table", "SharedTable", "Reader", "JsonlGate",
           "load_library"]

_STRING, _INT, _BOOL, _ENUM = 0, 1, 2, 3
_KINDS = {0: "rule", 1: "default", 2: "invalid_input"}
_EFFECTS = {0: "none", 1: "read", 2: "copy", 3: "create"}


class _Str(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("size", ctypes.c_size_t)]

    def text(self) -> str:
        return ctypes.string_at(self.data, self.size).decode("utf-8", "replace") if self.size else ""


class _Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 256)]


class _Decision(ctypes.Structure):
    _fields_ = [("verb", ctypes.c_uint32), ("rule", ctypes.c_uint32), ("kind", ctypes.c_uint32),
                ("invalid_field", ctypes.c_uint32), ("effect", ctypes.c_uint32),
                ("table_checksum", ctypes.c_char * 33)]


class _Column(ctypes.Structure):
    _fields_ = [("field", ctypes.c_uint32), ("type", ctypes.c_uint32),
                ("present", ctypes.c_void_p), ("bytes", ctypes.c_void_p),
                ("offsets", ctypes.c_void_p), ("ints", ctypes.c_void_p),
                ("bools", ctypes.c_void_p)]


# Per field type: the Python types a column value may have, and the placeholder stored for a
# row that is null or invalid (its `present` marker decides; the placeholder is never read).
_COLUMN_TYPES = {_STRING: ({str}, ""), _ENUM: ({str}, ""), _INT: ({int}, 0),
                 _BOOL: ({bool}, False)}


def _utf8(v: str) -> Optional[bytes]:
    """`v` as UTF-8, or None when it holds a lone surrogate (Python allows one in a str; it is
    not Unicode text, and the CLI's readers refuse its bytes as invalid UTF-8)."""
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _in_range(v) -> bool:
    return type(v) is not int or -(1 << 63) <= v < (1 << 63)


_lib = None


def load_library(path: Optional[str] = None) -> ctypes.CDLL:
    """Loads (once) and declares the C API. Raises OSError when the library is not found."""
    global _lib
    if _lib is not None:
        return _lib
    candidates = [path, os.environ.get("RG_LIBRARY"),
                  os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               "libreplaygate_runtime.so"),
                  ctypes.util.find_library("replaygate_runtime")]
    for c in candidates:
        if c and (os.path.exists(c) or c == candidates[-1]):
            lib = ctypes.CDLL(c)
            break
    else:
        raise OSError("libreplaygate_runtime.so not found: set RG_LIBRARY")
    P, U32, I64, SZ = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int64, ctypes.c_size_t
    PP = ctypes.POINTER(ctypes.c_void_p)
    sigs = {
        "rg_status_name": (ctypes.c_char_p, [ctypes.c_int]),
        "rg_table_load_file": (ctypes.c_int, [ctypes.c_char_p, PP, ctypes.POINTER(_Error)]),
        "rg_table_load_bytes": (ctypes.c_int, [ctypes.c_char_p, SZ, PP, ctypes.POINTER(_Error)]),
        "rg_table_free": (None, [P]),
        "rg_table_policy_id": (_Str, [P]),
        "rg_table_revision": (I64, [P]),
        "rg_table_checksum": (ctypes.c_char_p, [P]),
        "rg_table_field_count": (U32, [P]),
        "rg_table_field_name": (_Str, [P, U32]),
        "rg_table_field_type": (U32, [P, U32]),
        "rg_table_field_operator_only": (ctypes.c_int, [P, U32]),
        "rg_table_verb_count": (U32, [P]),
        "rg_table_verb_name": (_Str, [P, U32]),
        "rg_table_rule_name": (_Str, [P, ctypes.POINTER(_Decision)]),
        "rg_table_reason": (_Str, [P, ctypes.POINTER(_Decision)]),
        "rg_input_new": (ctypes.c_int, [P, PP]),
        "rg_input_free": (None, [P]),
        "rg_input_clear": (None, [P]),
        "rg_input_set_string": (ctypes.c_int, [P, U32, ctypes.c_char_p, SZ]),
        "rg_input_set_int": (ctypes.c_int, [P, U32, I64]),
        "rg_input_set_bool": (ctypes.c_int, [P, U32, ctypes.c_int]),
        "rg_input_set_null": (ctypes.c_int, [P, U32]),
        "rg_input_set_invalid": (ctypes.c_int, [P, U32]),
        "rg_decide": (ctypes.c_int, [P, P, ctypes.POINTER(_Decision)]),
        "rg_decide_columns": (ctypes.c_int, [P, P, SZ, SZ, P, P]),
        "rg_shared_open": (ctypes.c_int, [ctypes.c_char_p, U32, PP, ctypes.POINTER(_Error)]),
        "rg_shared_free": (None, [P]),
        "rg_shared_reload": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.POINTER(_Error)]),
        "rg_shared_generation": (ctypes.c_uint64, [P]),
        "rg_reader_new": (ctypes.c_int, [P, PP]),
        "rg_reader_free": (None, [P]),
        "rg_reader_acquire": (ctypes.c_int, [P, PP]),
        "rg_reader_release": (None, [P]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    _lib = lib
    return lib


class ReplaygateError(Exception):
    """A C API error: .status is its name ("io", "bad_checksum", "incompatible", ...)."""

    def __init__(self, code: int, message: str = ""):
        self.code = code
        self.status = load_library().rg_status_name(code).decode()
        self.message = message or self.status
        super().__init__(f"{self.status}: {self.message}")


def _check(code: int, err: Optional[_Error] = None) -> None:
    if code != 0:
        raise ReplaygateError(code, err.message.decode("utf-8", "replace") if err else "")


@dataclass(frozen=True)
class Decision:
    verb: str
    rule: str            # guard or row id; "default" unless kind == "rule"
    reason: str
    kind: str            # "rule", "default" or "invalid_input"
    effect: str          # "none", "read", "copy", "create"
    table_checksum: str  # which table decided (32 hex digits)


class Table:
    """A loaded, verified table (immutable; share it between threads)."""

    def __init__(self, handle: int, owned: bool = True):
        self._lib = load_library()
        self._h = ctypes.c_void_p(handle)
        self._owned = owned
        n = self._lib.rg_table_field_count(self._h)
        self.fields: Dict[str, int] = {}
        self.field_types: List[int] = []
        # Names of the fields only an operator sets (never take them from the message).
        self.operator_only: List[str] = []
        for f in range(n):
            name = self._lib.rg_table_field_name(self._h, f).text()
            self.fields[name] = f
            self.field_types.append(self._lib.rg_table_field_type(self._h, f))
            if self._lib.rg_table_field_operator_only(self._h, f):
                self.operator_only.append(name)
        self.verbs: List[str] = [self._lib.rg_table_verb_name(self._h, v).text()
                                 for v in range(self._lib.rg_table_verb_count(self._h))]
        self.policy_id = self._lib.rg_table_policy_id(self._h).text()
        self.revision = self._lib.rg_table_revision(self._h)
        self.checksum = self._lib.rg_table_checksum(self._h).decode()
        self._input = ctypes.c_void_p()
        _check(self._lib.rg_input_new(self._h, ctypes.byref(self._input)))

    @classmethod
    def load(cls, path: str) -> "Table":
        lib, h, err = load_library(), ctypes.c_void_p(), _Error()
        _check(lib.rg_table_load_file(os.fsencode(path), ctypes.byref(h), ctypes.byref(err)), err)
        return cls(h.value)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Table":
        lib, h, err = load_library(), ctypes.c_void_p(), _Error()
        _check(lib.rg_table_load_bytes(data, len(data), ctypes.byref(h), ctypes.byref(err)), err)
        return cls(h.value)

    def close(self) -> None:
        if self._input:
            self._lib.rg_input_free(self._input)
            self._input = ctypes.c_void_p()
        if self._owned and self._h:
            self._lib.rg_table_free(self._h)
        self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass

    def _field(self, name: str) -> int:
        f = self.fields.get(name)
        if f is None:
            raise ReplaygateError(11, f"unknown field {name!r}")
        return f

    def decide(self, **values) -> Decision:
        """Decides one record: keyword arguments by field name (str, int, bool or None for
        null); fields not given are missing. Fails closed like the runtime: a value of the wrong
        type (or any other Python type, bytes included, or a str with a lone surrogate, which is
        not Unicode text) gives the default verb, kind "invalid_input". Raises
        ReplaygateError("unknown_field") for a name the table does not declare. A field in
        self.operator_only is decided like any other: give it only from your operator channel,
        never copied from the message (leave it out otherwise: the policy then treats it as
        absent, fail closed)."""
        lib, inp = self._lib, self._input
        lib.rg_input_clear(inp)
        for name, value in values.items():
            f = self._field(name)
            if value is None:
                code = lib.rg_input_set_null(inp, f)
            elif isinstance(value, bool):
                code = lib.rg_input_set_bool(inp, f, int(value))
            elif isinstance(value, int):
                code = lib.rg_input_set_int(inp, f, value) if _in_range(value) \
                    else lib.rg_input_set_invalid(inp, f)  # overflow: unreadable, fails closed
            elif isinstance(value, str) and _utf8(value) is not None:
                b = _utf8(value)
                code = lib.rg_input_set_string(inp, f, b, len(b))
            else:  # float, list, ...: unreadable, so the decision fails closed
                code = lib.rg_input_set_invalid(inp, f)
            _check(code)
        d = _Decision()
        _check(lib.rg_decide(self._h, inp, ctypes.byref(d)))
        return self._describe(d)

    def _describe(self, d: _Decision) -> Decision:
        lib = self._lib
        return Decision(self.verbs[d.verb], lib.rg_table_rule_name(self._h, ctypes.byref(d)).text(),
                        lib.rg_table_reason(self._h, ctypes.byref(d)).text(),
                        _KINDS.get(d.kind, "?"), _EFFECTS.get(d.effect, "?"),
                        d.table_checksum.decode())

    def _columns(self, columns: Mapping[str, Sequence]):
        """Packs per-field value lists into rg_column structs (and keeps the buffers alive).
        A value of the wrong Python type for its field (bytes included: strings are str), an int
        outside int64 or a str with a lone surrogate (not Unicode text, so never valid UTF-8) is
        marked invalid, so the record fails closed; None is null."""
        n = None
        packed, keep = [], []
        for name, values in columns.items():
            f = self._field(name)
            if n is None:
                n = len(values)
            elif len(values) != n:
                raise ValueError(f"column {name!r} has {len(values)} rows, expected {n}")
            t = self.field_types[f]
            col = _Column(field=f)
            ok, placeholder = _COLUMN_TYPES[t]
            present = None
            if not all(type(v) in ok for v in values):  # slow path: mark nulls and bad values
                present = bytearray(1 if type(v) in ok and _in_range(v) else 2 if v is None else 3
                                    for v in values)
                values = [v if p == 1 else placeholder for v, p in zip(values, present)]
            if t in (_STRING, _ENUM):
                try:
                    enc = [v.encode("utf-8") for v in values]
                except UnicodeEncodeError:  # a lone surrogate: that value is invalid
                    enc = [_utf8(v) for v in values]
                    present = bytearray(3 if e is None else p for e, p in
                                        zip(enc, present or bytearray(b"\x01" * n)))
                    enc = [b"" if e is None else e for e in enc]
                data = b"".join(enc)
                offsets = array.array("Q", [0])
                offsets.extend(itertools.accumulate(map(len, enc)))
                buf = ctypes.create_string_buffer(data, len(data) + 1)
                keep += [buf, offsets]
                col.type, col.bytes = 0, ctypes.addressof(buf)
                col.offsets = offsets.buffer_info()[0]
            elif t == _INT:
                try:
                    ints = array.array("q", values)
                except OverflowError:
                    present = bytearray(1 if _in_range(v) else 3 for v in values) \
                        if present is None else bytearray(p if p != 1 or _in_range(v) else 3
                                                           for v, p in zip(values, present))
                    ints = array.array("q", (v if p == 1 else 0 for v, p in zip(values, present)))
                keep.append(ints)
                col.type, col.ints = 1, ints.buffer_info()[0] if n else None
            else:
                bools = bytearray(1 if v else 0 for v in values)
                keep.append(bools)
                col.type = 2
                col.bools = ctypes.addressof((ctypes.c_uint8 * n).from_buffer(bools)) if n else None
            if present is not None:
                keep.append(present)
                col.present = ctypes.addressof((ctypes.c_uint8 * n).from_buffer(present))
            packed.append(col)
        cols = (_Column * len(packed))(*packed)
        return cols, len(packed), n or 0, keep

    def decide_columns(self, columns: Mapping[str, Sequence]) -> List[str]:
        """Decides many records in one C call. `columns` maps a field name to its values, one per
        record (None = null); a field without a column is missing. Returns the verb names."""
        return [self.verbs[v] for v in self.decide_columns_raw(columns)]

    def decide_columns_raw(self, columns: Mapping[str, Sequence]) -> array.array:
        """As decide_columns(), returning verb indices (an array of uint32)."""
        cols, ncols, n, _keep = self._columns(columns)
        verbs = array.array("I", bytes(4 * n))
        _check(self._lib.rg_decide_columns(self._h, cols, ncols, n,
                                           verbs.buffer_info()[0] if n else None, None))
        return verbs


class SharedTable:
    """A table workers share and reload while they decide. Use one Reader per thread."""

    def __init__(self, path: str, max_readers: int = 0):
        self._lib = load_library()
        self._h, err = ctypes.c_void_p(), _Error()
        _check(self._lib.rg_shared_open(os.fsencode(path), max_readers, ctypes.byref(self._h),
                                        ctypes.byref(err)), err)
        self._readers: List["Reader"] = []

    def reload(self, path: str) -> None:
        """Verifies `path` completely and swaps it in; raises ReplaygateError (the old table keeps
        serving) when it is corrupt, unreadable or incompatible."""
        err = _Error()
        _check(self._lib.rg_shared_reload(self._h, os.fsencode(path), ctypes.byref(err)), err)

    @property
    def generation(self) -> int:
        return self._lib.rg_shared_generation(self._h)

    def reader(self) -> "Reader":
        r = Reader(self)
        self._readers.append(r)
        return r

    def close(self) -> None:
        for r in self._readers:
            r.close()
        self._readers.clear()
        if self._h:
            self._lib.rg_shared_free(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Reader:
    """One thread's view of a SharedTable. `with reader.pin() as table:` pins the current table
    (a Table) for a batch: every decision in the block uses it, however many reloads happen."""

    def __init__(self, shared: SharedTable):
        self._lib = shared._lib
        self._h = ctypes.c_void_p()
        _check(self._lib.rg_reader_new(shared._h, ctypes.byref(self._h)))

    def pin(self) -> "_Pin":
        return _Pin(self)

    def close(self) -> None:
        if self._h:
            self._lib.rg_reader_release(self._h)
            self._lib.rg_reader_free(self._h)
            self._h = ctypes.c_void_p()


class _Pin:
    def __init__(self, reader: Reader):
        self._reader = reader
        self._table: Optional[Table] = None

    def __enter__(self) -> Table:
        h = ctypes.c_void_p()
        _check(self._reader._lib.rg_reader_acquire(self._reader._h, ctypes.byref(h)))
        self._table = Table(h.value, owned=False)
        return self._table

    def __exit__(self, *exc) -> None:
        if self._table is not None:
            self._table.close()
        self._reader._lib.rg_reader_release(self._reader._h)


class JsonlGate:
    """Decides JSON Lines bytes in one C call per batch (libreplaygate_jsonl.so, found through
    $RG_JSONL_LIBRARY or next to the runtime library). Python does no per-record work: this is
    the path that beats a Python dict-lookup gate. Hot-reloadable; thread-safe.

        gate = JsonlGate("gate.rgt")
        verbs, invalid, checksum = gate.decide_lines(b"\\n".join(messages))
        # len(verbs) == len(messages): verbs[i] is messages[i]'s, an empty message included
        # (invalid -> the default verb), as long as no message holds a raw newline.

    A record's value for an operator-only field (policy `source: operator`) is ignored: the field
    stays unset, so a message cannot confirm itself; the record is still decided.
    """

    def __init__(self, path: str, library: Optional[str] = None):
        base = load_library()
        lib_path = library or os.environ.get("RG_JSONL_LIBRARY") or os.path.join(
            os.path.dirname(os.path.dirname(base._name)), "bindings", "jsonl",
            "libreplaygate_jsonl.so")
        lib = ctypes.CDLL(lib_path)
        P, PP, SZ = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t
        PSZ = ctypes.POINTER(ctypes.c_size_t)
        lib.rgj_open.restype, lib.rgj_open.argtypes = ctypes.c_int, [ctypes.c_char_p, PP,
                                                                    ctypes.POINTER(_Error)]
        lib.rgj_free.restype, lib.rgj_free.argtypes = None, [P]
        lib.rgj_reload.restype = ctypes.c_int
        lib.rgj_reload.argtypes = [P, ctypes.c_char_p, ctypes.POINTER(_Error)]
        lib.rgj_verb_count.restype, lib.rgj_verb_count.argtypes = ctypes.c_uint32, [P]
        lib.rgj_verb_name.restype, lib.rgj_verb_name.argtypes = _Str, [P, ctypes.c_uint32]
        lib.rgj_decide_lines.restype = ctypes.c_int
        lib.rgj_decide_lines.argtypes = [P, P, SZ, P, SZ, PSZ, PSZ, PSZ, ctypes.c_char_p]
        self._lib = lib
        self._scratch = threading.local()  # decide_lines_raw's output buffer, one per thread
        self._h, err = ctypes.c_void_p(), _Error()
        _check(lib.rgj_open(os.fsencode(path), ctypes.byref(self._h), ctypes.byref(err)), err)
        self.verbs = [lib.rgj_verb_name(self._h, v).text()
                      for v in range(lib.rgj_verb_count(self._h))]

    def reload(self, path: str) -> None:
        err = _Error()
        _check(self._lib.rgj_reload(self._h, os.fsencode(path), ctypes.byref(err)), err)

    _CHUNK = 65536  # verbs per C call at most: the per-thread buffer is 256 KiB

    def decide_lines_raw(self, data: bytes):
        """(verb indices as array('I'), invalid record count, table checksum) for `data`: exactly
        one verb per line, in order (lines end at b"\\n"; a last line without it counts; b""
        has none). A line that is not a valid record -- blank or whitespace only, bad JSON, an
        unknown or repeated key -- gets the table's default verb (fail closed) and counts as
        invalid, like `replaygate decide`; it is never skipped, so verbs[i] is always line i's."""
        # Every line takes at least 1 byte (a blank line is its newline), so len bounds the verbs:
        # no pass over `data` to count lines (that cost a sixth of the call). The output buffer is
        # per thread and reused; only the verbs written are copied out. Inputs with more lines
        # than _CHUNK take several calls (one table each; the checksum returned is the last
        # call's).
        scratch = self._scratch
        verbs = getattr(scratch, "verbs", None)
        if verbs is None:
            verbs = scratch.verbs = array.array("I", bytes(4 * self._CHUNK))
            scratch.args = (ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t(),
                            ctypes.create_string_buffer(33))
        count, invalid, consumed, checksum = scratch.args
        base = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
        address = verbs.buffer_info()[0]
        out, bad, at, size = None, 0, 0, len(data)
        while True:
            cap = max(1, min(size - at, self._CHUNK))
            _check(self._lib.rgj_decide_lines(self._h, base + at, size - at, address, cap,
                                              ctypes.byref(count), ctypes.byref(invalid),
                                              ctypes.byref(consumed), checksum))
            if out is None:
                out = verbs[:count.value]
            else:
                out.extend(verbs[:count.value])
            bad += invalid.value
            at += consumed.value
            if at >= size or consumed.value == 0:
                break
        return out, bad, checksum.value.decode()

    def decide_lines(self, data: bytes):
        """As decide_lines_raw(), with verb names."""
        verbs, invalid, checksum = self.decide_lines_raw(data)
        return [self.verbs[v] for v in verbs], invalid, checksum

    def close(self) -> None:
        if self._h:
            self._lib.rgj_free(self._h)
            self._h = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
