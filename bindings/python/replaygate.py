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
linker path (libreplaygate_runtime.so); JsonlGate's libreplaygate_jsonl.so through
$RG_JSONL_LIBRARY, else next to the runtime library, else build/bindings/jsonl/ of a build tree,
else the system linker path.
Every failure raises ReplaygateError with .status (e.g. "bad_checksum") and .message.

Signed tables (docs/signing.md): Table.load, SharedTable and JsonlGate take trusted_keys (public
key files of `replaygate key generate`; with any, a signature is required and an unsigned or
forged table raises ReplaygateError("signature")), require_signed (refuse every table while no key
is pinned) and trust_state (a directory of rollback state, for a worker that acts: a lower
revision raises ReplaygateError("rollback")). Those loads go through libreplaygate_verify.so
($RG_VERIFY_LIBRARY, else next to the runtime library, else build/runtime/verify/ of a build tree,
else the system linker path), which carries the whole C API; a table loaded there is used and
freed through it. Table.from_bytes takes no keys: load a signed table from its file.

Operator-only fields (Table.operator_only, policy `source: operator`, e.g. operator_confirmed):
decide(**fields) and decide_columns() refuse them (ReplaygateError, status "operator_only"), so a
worker that passes a message's fields straight through (decide(**msg)) cannot be made to confirm
by the message; a message that says "operator_confirmed": true proves nothing. An operator's own
act (a confirmation you recorded) is passed separately:
table.decide_operator({"operator_confirmed": True}, **fields). JsonlGate ignores them in records.

Record-only fields (Table.record_only, policy `source: record`, e.g. generation_recovery's phase
and allowance facts; rg_table_field_source == RG_SOURCE_RECORD): decide(**fields) and
decide_columns() refuse them too (ReplaygateError, status "record_only", code -1: the binding's
own check; the C API's generic setters are also the record's channel), so a message cannot
supply the facts that gate a create. The worker passes its durable operation record's values
separately: table.decide_record({"phase": rec["phase"], ...}, **fields), or with an operator's
values too: table.decide_record(record_values, {"operator_confirmed": True}, **fields).
JsonlGate ignores them in records.

Derived fields (Table.derived, policy `derived:`, e.g. stale = message_revision <
record_revision): the table computes them from their operands, so decide(stale=...) and
decide_columns({"stale": [...]}) refuse a value for one (ReplaygateError, status "derived", code
-2: the binding's own check) rather than ignore it silently.
"""
import array
import ctypes
import ctypes.util
import itertools
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

__all__ = ["ReplaygateError", "Decision", "Table", "SharedTable", "Reader", "JsonlGate",
           "load_library", "load_verify_library"]

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
    _declare(lib)
    _lib = lib
    return lib


def _declare(lib: ctypes.CDLL) -> None:
    """Declares the C API of runtime/replaygate.h on `lib`."""
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
        "rg_table_field_source": (U32, [P, U32]),
        "rg_table_field_derived": (ctypes.c_int, [P, U32]),
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
        "rg_input_set_operator_string": (ctypes.c_int, [P, U32, ctypes.c_char_p, SZ]),
        "rg_input_set_operator_int": (ctypes.c_int, [P, U32, I64]),
        "rg_input_set_operator_bool": (ctypes.c_int, [P, U32, ctypes.c_int]),
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


_verify_lib = None


def load_verify_library(path: Optional[str] = None) -> ctypes.CDLL:
    """Loads (once) libreplaygate_verify.so, the C API with verified loads (replaygate_verify.h),
    and declares it like load_library(). Raises OSError when it is not found."""
    global _verify_lib
    if _verify_lib is not None:
        return _verify_lib
    found = path or os.environ.get("RG_VERIFY_LIBRARY")
    if not found:
        base = os.path.dirname(os.path.abspath(load_library()._name))
        for candidate in (os.path.join(base, "libreplaygate_verify.so"),
                          os.path.join(base, "verify", "libreplaygate_verify.so")):
            if os.path.exists(candidate):
                found = candidate
                break
    found = found or ctypes.util.find_library("replaygate_verify")
    if not found:
        raise OSError("libreplaygate_verify.so not found: set RG_VERIFY_LIBRARY")
    lib = ctypes.CDLL(found)
    _declare(lib)
    P, U32, PP = ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p)
    keys = ctypes.POINTER(ctypes.c_char_p)
    lib.rg_table_load_verified.restype = ctypes.c_int
    lib.rg_table_load_verified.argtypes = [ctypes.c_char_p, keys, ctypes.c_size_t,
                                           ctypes.c_char_p, U32, PP, ctypes.POINTER(_Error)]
    lib.rg_shared_open_verified.restype = ctypes.c_int
    lib.rg_shared_open_verified.argtypes = [ctypes.c_char_p, keys, ctypes.c_size_t,
                                            ctypes.c_char_p, U32, U32, PP,
                                            ctypes.POINTER(_Error)]
    _verify_lib = lib
    return lib


_REQUIRE_SIGNED = 1  # RG_TRUST_REQUIRE_SIGNED


def _trust_args(trusted_keys, trust_state, require_signed):
    """The (keys array, count, trust state, flags) arguments of a verified load."""
    if isinstance(trusted_keys, (str, bytes, os.PathLike)):
        trusted_keys = [trusted_keys]  # one key file, not its characters
    paths = [_path(k) for k in (trusted_keys or [])]
    keys = (ctypes.c_char_p * max(len(paths), 1))(*paths)
    state = _path(trust_state) if trust_state is not None else None
    return keys, len(paths), state, _REQUIRE_SIGNED if require_signed else 0


def _wants_trust(trusted_keys, trust_state, require_signed) -> bool:
    return bool(trusted_keys) or trust_state is not None or bool(require_signed)


class ReplaygateError(Exception):
    """A C API error: .status is its name ("io", "bad_checksum", "incompatible", ...). Errors of
    the binding itself use the C names where one fits ("argument: table is closed") and
    code -1 otherwise (status "table_changed": JsonlGate.decide_lines)."""

    def __init__(self, code: int, message: str = "", status: Optional[str] = None):
        self.code = code
        self.status = status or load_library().rg_status_name(code).decode()
        self.message = message or self.status
        super().__init__(f"{self.status}: {self.message}")


_ERR_ARGUMENT, _ERR_UNKNOWN_FIELD, _ERR_NO_READER_SLOT, _ERR_OPERATOR_ONLY = 10, 11, 13, 14
# The binding's own error for a record-only field given as a message value (the C API has no
# code for it: its generic setters are also the record's channel, see Table.decide_record()).
_ERR_RECORD_ONLY = -1
# The binding's own error for a value given for a derived field (policy `derived:`, e.g.
# stale = message_revision < record_revision): the table computes it, and a value for it would
# be silently ignored, so it is refused like an operator-only or record-only one.
_ERR_DERIVED = -2
# rg_table_field_source values (runtime/replaygate.h).
_SOURCE_LETTER, _SOURCE_OPERATOR, _SOURCE_RECORD = 0, 1, 2


def _record_only_error(message: str) -> "ReplaygateError":
    return ReplaygateError(_ERR_RECORD_ONLY, message, status="record_only")


def _check(code: int, err: Optional[_Error] = None) -> None:
    if code != 0:
        raise ReplaygateError(code, err.message.decode("utf-8", "replace") if err else "")


def _closed(what: str) -> ReplaygateError:
    return ReplaygateError(_ERR_ARGUMENT, f"{what} is closed")


def _path(path) -> bytes:
    """`path` for the C API: a NUL-terminated string cannot hold a NUL, so one would silently
    cut the path short; refuse it like open() does."""
    p = os.fsencode(path)
    if b"\0" in p:
        raise ValueError(f"embedded null byte in path {path!r}")
    return p


class _Handle:
    """One C object, freed exactly once, when nothing uses it any more.

    A call in flight holds the handle in a local variable, so close() on another thread only
    drops the owner's reference and the call finishes on live memory. Handles that others depend
    on (an rg_shared for its readers, a reader for its pin) also count their dependents
    explicitly: the cycle collector finalizes garbage in no particular order, and an rg_shared
    must not be freed before its readers, nor a reader before its pin is released."""

    __slots__ = ("ptr", "_free", "_parent", "_lock", "_count", "__weakref__")

    def __init__(self, ptr: int, free, parent: Optional["_Handle"] = None):
        self.ptr = ctypes.c_void_p(ptr)
        self._free = free        # free(ptr), or None when the object is not ours to free
        self._parent = parent    # outlives this handle
        self._lock = threading.Lock()
        self._count = 1          # this object, plus one per live dependent
        if parent is not None:
            parent._hold()

    def _hold(self) -> None:
        with self._lock:
            self._count += 1

    def _drop(self) -> None:
        with self._lock:
            self._count -= 1
            if self._count:
                return
        free, self._free = self._free, None
        if free is not None:
            free(self.ptr)
        if self._parent is not None:
            self._parent._drop()

    def __del__(self):
        try:
            self._drop()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass


class _ReaderHandle(_Handle):
    """An rg_reader with a pin count: C keeps the first pin when acquired twice and one release
    drops it, so nested `with reader.pin()` blocks release the C pin only when the outermost
    ends (until then the inner blocks get the outer block's table)."""

    __slots__ = ("_lib", "_depth")

    def __init__(self, ptr: int, lib, parent: _Handle):
        super().__init__(ptr, lib.rg_reader_free, parent)
        self._lib = lib
        self._depth = 0

    def pin(self) -> _Handle:
        """A handle on the pinned table; dropping its last reference unpins."""
        with self._lock:
            t = ctypes.c_void_p()
            _check(self._lib.rg_reader_acquire(self.ptr, ctypes.byref(t)))
            self._depth += 1
        return _Handle(t.value, self._unpin, parent=self)

    def _unpin(self, _table) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self._lib.rg_reader_release(self.ptr)


@dataclass(frozen=True)
class Decision:
    verb: str
    rule: str            # guard or row id; "default" unless kind == "rule"
    reason: str
    kind: str            # "rule", "default" or "invalid_input"
    effect: str          # "none", "read", "copy", "create"
    table_checksum: str  # which table decided (32 hex digits)


class Table:
    """A loaded, verified table (immutable; share it between threads: each thread decides with
    its own input). close() frees it once no call in flight uses it; later calls raise
    ReplaygateError("argument: table is closed")."""

    def __init__(self, handle: int, owned: bool = True, _hh: Optional[_Handle] = None,
                 _lib: Optional[ctypes.CDLL] = None):
        self._lib = _lib or load_library()
        if _hh is None:
            _hh = _Handle(handle, self._lib.rg_table_free if owned else None)
        self._hh: Optional[_Handle] = _hh
        h = _hh.ptr
        n = self._lib.rg_table_field_count(h)
        self.fields: Dict[str, int] = {}
        self.field_types: List[int] = []
        # Names of the fields only an operator sets (never take them from the message).
        self.operator_only: List[str] = []
        # Names of the fields only the durable operation record supplies (policy `source:
        # record`, rg_table_field_source == RG_SOURCE_RECORD): never take them from the message.
        self.record_only: List[str] = []
        # Names of the derived fields (computed by the table, never read from any input).
        self.derived: List[str] = []
        for f in range(n):
            name = self._lib.rg_table_field_name(h, f).text()
            self.fields[name] = f
            self.field_types.append(self._lib.rg_table_field_type(h, f))
            source = self._lib.rg_table_field_source(h, f)
            if source == _SOURCE_OPERATOR:
                self.operator_only.append(name)
            elif source == _SOURCE_RECORD:
                self.record_only.append(name)
            if self._lib.rg_table_field_derived(h, f):
                self.derived.append(name)
        self._operator_set = frozenset(self.operator_only)
        self._record_set = frozenset(self.record_only)
        self._derived_set = frozenset(self.derived)
        self.verbs: List[str] = [self._lib.rg_table_verb_name(h, v).text()
                                 for v in range(self._lib.rg_table_verb_count(h))]
        self.policy_id = self._lib.rg_table_policy_id(h).text()
        self.revision = self._lib.rg_table_revision(h)
        self.checksum = self._lib.rg_table_checksum(h).decode()
        # decide()'s rg_input, one per thread (ctypes releases the GIL in every C call, so a
        # shared input would mix two threads' fields): created on a thread's first decide(),
        # freed when the thread ends or the table goes.
        self._local = threading.local()

    @classmethod
    def load(cls, path: str, trusted_keys: Sequence[str] = (), trust_state: Optional[str] = None,
             require_signed: bool = False) -> "Table":
        """Loads the table at `path`. With trusted_keys (key files), require_signed or
        trust_state the load is verified (see the module's notes on signed tables): raises
        ReplaygateError "signature", "rollback", "expired" or "argument" (a key file that cannot
        be read) besides the load errors."""
        h, err = ctypes.c_void_p(), _Error()
        if not _wants_trust(trusted_keys, trust_state, require_signed):
            lib = load_library()
            _check(lib.rg_table_load_file(_path(path), ctypes.byref(h), ctypes.byref(err)), err)
            return cls(h.value)
        lib = load_verify_library()
        keys, n, state, flags = _trust_args(trusted_keys, trust_state, require_signed)
        _check(lib.rg_table_load_verified(_path(path), keys, n, state, flags, ctypes.byref(h),
                                          ctypes.byref(err)), err)
        return cls(h.value, _lib=lib)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Table":
        lib, h, err = load_library(), ctypes.c_void_p(), _Error()
        _check(lib.rg_table_load_bytes(data, len(data), ctypes.byref(h), ctypes.byref(err)), err)
        return cls(h.value)

    def close(self) -> None:
        self._hh = None  # freed now, or when the last call in flight on another thread returns
        self._local = threading.local()

    def _handle(self) -> _Handle:
        h = self._hh
        if h is None:
            raise _closed("table")
        return h

    def field_type(self, name: str) -> str:
        """"string", "int", "bool" or "enum"; ReplaygateError("unknown_field") for a name the
        table does not declare."""
        return ("string", "int", "bool", "enum")[self.field_types[self._field(name)]]

    def _field(self, name: str) -> int:
        f = self.fields.get(name)
        if f is None:
            raise ReplaygateError(_ERR_UNKNOWN_FIELD, f"unknown field {name!r}")
        return f

    def _message_field(self, name: str) -> int:
        """The index of a field a message may set; operator-only, record-only and derived names
        are refused."""
        f = self._field(name)
        if name in self._derived_set:
            raise ReplaygateError(
                _ERR_DERIVED,
                f"{name!r} is derived (policy `derived:`): the table computes it from its operands, "
                "never from a value given for it; give the operands instead",
                status="derived")
        if name in self._operator_set:
            raise ReplaygateError(
                _ERR_OPERATOR_ONLY,
                f"{name!r} is set only by an operator (source: operator), never from a message: "
                f"pass an operator's own value with decide_operator({{{name!r}: ...}}, **fields)")
        if name in self._record_set:
            raise _record_only_error(
                f"{name!r} comes only from the durable operation record (source: record), never "
                f"from a message: pass the record's value with decide_record({{{name!r}: ...}}, "
                "**fields)")
        return f

    def _new_input(self, h: _Handle) -> _Handle:
        inp = ctypes.c_void_p()
        _check(self._lib.rg_input_new(h.ptr, ctypes.byref(inp)))
        handle = self._local.input = _Handle(inp.value, self._lib.rg_input_free)
        return handle

    def decide(self, **values) -> Decision:
        """Decides one record from a message's fields: keyword arguments by field name (str, int,
        bool or None for null); fields not given are missing. Fails closed like the runtime: a
        value of the wrong type (or any other Python type, bytes included, or a str with a lone
        surrogate, which is not Unicode text) gives the default verb, kind "invalid_input". Types
        are exact, as in decide_columns(): a bool for a bool field, an int that is not a bool for
        an int field, a str for a string; a subclass (an IntEnum, a str Enum, ...) is invalid
        too. Raises ReplaygateError("unknown_field") for a name the table does not declare, and
        ReplaygateError("operator_only") for a name in self.operator_only: those are an
        operator's to set (decide_operator()), so decide(**message) cannot be forged into a
        confirmation; and ReplaygateError("record_only") (code -1) for a name in
        self.record_only: those come from the durable operation record (decide_record()), so a
        message cannot supply the facts that gate a create. Thread-safe."""
        return self._decide(None, values)

    def decide_record(self, record: Mapping[str, object],
                      operator: Optional[Mapping[str, object]] = None, /, **values) -> Decision:
        """As decide(**values), with the record-only fields in `record` (names from
        self.record_only) read from the durable operation record your worker keeps -- never from
        the message -- and, when given, the operator-only fields in `operator` (as
        decide_operator()); both are positional, so a policy input may be called `record` or
        `operator`. Record values are the record's data, so they are read as message
        values are: a value of the wrong type fails closed (the default verb, kind
        "invalid_input"), None is null, a name left out is missing (never filled from the
        message). Raises ReplaygateError("record_only") for a name in `record` that is not
        record-only (message fields are keyword arguments), and as decide() for the keywords."""
        return self._decide(operator, values, record)

    def decide_operator(self, operator: Mapping[str, object], /, **values) -> Decision:
        """As decide(**values), with the operator-only fields in `operator` (names from
        self.operator_only) set from an operator's own act -- a review, a confirmation your
        worker recorded for this record -- never from message content. A value of None leaves
        the field absent (as leaving it out does). Values are typed exactly (a bool for a bool
        field, an int for an int field, a str for a string or enum field): anything else raises
        TypeError, since it is the worker's own value, not the message's. Raises
        ReplaygateError("operator_only") for a name in `operator` that is not operator-only (give
        message fields as keyword arguments) and, as decide(), for one among the keywords."""
        return self._decide(operator, values)

    def _decide(self, operator: Optional[Mapping[str, object]], values,
                record: Optional[Mapping[str, object]] = None) -> Decision:
        h, lib = self._handle(), self._lib
        try:
            inp_h = self._local.input  # held: close() on another thread drops self._local
        except AttributeError:
            inp_h = self._new_input(h)
        inp = inp_h.ptr
        lib.rg_input_clear(inp)
        for name, value in values.items():
            self._set_value(inp, self._message_field(name), value)
        for name, value in (record or {}).items():
            self._set_value(inp, self._record_field(name), value)
        for name, value in (operator or {}).items():
            self._set_operator(inp, name, value)
        d = _Decision()
        _check(lib.rg_decide(h.ptr, inp, ctypes.byref(d)))
        return self._describe(h, d)

    def _set_value(self, inp, f: int, value) -> None:
        """Sets field `f` from a message's or a record's value (generic setters)."""
        lib, t = self._lib, type(value)
        if value is None:
            code = lib.rg_input_set_null(inp, f)
        elif t is bool:
            code = lib.rg_input_set_bool(inp, f, int(value))
        elif t is int and _in_range(value):
            code = lib.rg_input_set_int(inp, f, value)
        elif t is str and (b := _utf8(value)) is not None:
            code = lib.rg_input_set_string(inp, f, b, len(b))
        else:  # float, list, an int beyond int64, a subclass: unreadable, so it fails closed
            code = lib.rg_input_set_invalid(inp, f)
        _check(code)

    def _record_field(self, name: str) -> int:
        f = self._field(name)
        if name not in self._record_set:
            raise _record_only_error(
                f"{name!r} is not a record-only field (source: record): give message fields as "
                "keyword arguments, not in `record`")
        return f

    def _set_operator(self, inp, name: str, value) -> None:
        f = self._field(name)
        if name not in self._operator_set:
            raise ReplaygateError(
                _ERR_OPERATOR_ONLY, f"{name!r} is not an operator-only field (source: operator): "
                "give message fields as keyword arguments, not in `operator`")
        if value is None:
            return  # absent
        lib, t, want = self._lib, type(value), self.field_types[f]
        if want == _BOOL and t is bool:
            code = lib.rg_input_set_operator_bool(inp, f, int(value))
        elif want == _INT and t is int and _in_range(value):
            code = lib.rg_input_set_operator_int(inp, f, value)
        elif want in (_STRING, _ENUM) and t is str and (b := _utf8(value)) is not None:
            code = lib.rg_input_set_operator_string(inp, f, b, len(b))
        else:
            kind = {_BOOL: "a bool", _INT: "an int (int64)", _STRING: "a str",
                    _ENUM: "a str"}.get(want, "?")
            raise TypeError(f"operator value for {name!r} must be {kind} or None, "
                            f"not {t.__name__}")
        _check(code)

    def _describe(self, h: _Handle, d: _Decision) -> Decision:
        lib = self._lib
        return Decision(self.verbs[d.verb], lib.rg_table_rule_name(h.ptr, ctypes.byref(d)).text(),
                        lib.rg_table_reason(h.ptr, ctypes.byref(d)).text(),
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
            f = self._message_field(name)  # columns carry message values
            if isinstance(values, (str, bytes, bytearray)):
                raise TypeError(f"column {name!r} must be a list of values, one per record, "
                                f"not {type(values).__name__}")
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
        record (None = null); a field without a column is missing. Returns the verb names.
        A column for an operator-only field raises ReplaygateError("operator_only"): decide a
        record an operator acted on with decide_operator(); one for a record-only field raises
        ReplaygateError("record_only"): decide with the operation record with decide_record()."""
        return [self.verbs[v] for v in self.decide_columns_raw(columns)]

    def decide_columns_raw(self, columns: Mapping[str, Sequence]) -> array.array:
        """As decide_columns(), returning verb indices (an array of uint32)."""
        h = self._handle()
        cols, ncols, n, _keep = self._columns(columns)
        verbs = array.array("I", bytes(4 * n))
        _check(self._lib.rg_decide_columns(h.ptr, cols, ncols, n,
                                           verbs.buffer_info()[0] if n else None, None))
        return verbs


class SharedTable:
    """A table workers share and reload while they decide. Use one Reader per thread.
    Readers (and tables they pin) keep it alive; close() closes every reader it made (a pin open
    on another thread keeps its table until its block ends) and frees it once none is left."""

    def __init__(self, path: str, max_readers: int = 0, trusted_keys: Sequence[str] = (),
                 trust_state: Optional[str] = None, require_signed: bool = False):
        """Opens the table at `path`; with trusted_keys, require_signed or trust_state the open
        and every later reload() are verified (as Table.load)."""
        trusted = _wants_trust(trusted_keys, trust_state, require_signed)
        self._lib = load_verify_library() if trusted else load_library()
        if max_readers < 0:
            raise ValueError(f"max_readers must be 0 (the default, 64) or more: {max_readers}")
        h, err = ctypes.c_void_p(), _Error()
        if trusted:
            keys, n, state, flags = _trust_args(trusted_keys, trust_state, require_signed)
            _check(self._lib.rg_shared_open_verified(_path(path), keys, n, state, flags,
                                                     max_readers, ctypes.byref(h),
                                                     ctypes.byref(err)), err)
        else:
            _check(self._lib.rg_shared_open(_path(path), max_readers, ctypes.byref(h),
                                            ctypes.byref(err)), err)
        self._hh: Optional[_Handle] = _Handle(h.value, self._lib.rg_shared_free)
        self._lock = threading.Lock()
        self._readers = weakref.WeakSet()  # a Reader nobody holds releases its slot

    def _handle(self) -> _Handle:
        h = self._hh
        if h is None:
            raise _closed("shared table")
        return h

    def reload(self, path: str) -> None:
        """Verifies `path` completely and swaps it in; raises ReplaygateError (the old table keeps
        serving) when it is corrupt, unreadable or incompatible."""
        h, err = self._handle(), _Error()
        _check(self._lib.rg_shared_reload(h.ptr, _path(path), ctypes.byref(err)), err)

    @property
    def generation(self) -> int:
        return self._lib.rg_shared_generation(self._handle().ptr)

    def reader(self) -> "Reader":
        """A new Reader (one of max_readers slots, 64 by default, until it is closed or no
        longer referenced). Raises ReplaygateError("no_reader_slot") when all are taken."""
        r = Reader(self)
        with self._lock:
            if self._hh is None:  # closed on another thread meanwhile
                r.close()
                raise _closed("shared table")
            self._readers.add(r)
        return r

    def close(self) -> None:
        with self._lock:
            readers = list(self._readers)
            self._readers.clear()
            self._hh = None  # freed once its readers (and their pins) are gone
        for r in readers:
            r.close()


class Reader:
    """One thread's view of a SharedTable. `with reader.pin() as table:` pins the current table
    (a Table) for a batch: every decision in the block uses it, however many reloads happen.
    Pins nest: an inner `with reader.pin()` gets the outer block's table, and the pin ends with
    the outermost block. A Reader keeps its SharedTable alive; its slot is released by close()
    or when the Reader is garbage collected (a pinned table keeps it until its block ends)."""

    def __init__(self, shared: SharedTable):
        self._lib = shared._lib
        parent = shared._handle()
        h = ctypes.c_void_p()
        code = self._lib.rg_reader_new(parent.ptr, ctypes.byref(h))
        if code == _ERR_NO_READER_SLOT:
            raise ReplaygateError(code, "every reader slot of this SharedTable is taken "
                                  "(max_readers, 64 by default): a Reader per thread, and "
                                  "close() the ones no longer used")
        _check(code)
        self._hh: Optional[_ReaderHandle] = _ReaderHandle(h.value, self._lib, parent)

    def _handle(self) -> _ReaderHandle:
        h = self._hh
        if h is None:
            raise _closed("reader")
        return h

    def pin(self) -> "_Pin":
        return _Pin(self)

    def close(self) -> None:
        self._hh = None  # the slot is released now, or when an open pin ends


class _Pin:
    def __init__(self, reader: Reader):
        self._reader = reader
        self._tables: List[Table] = []

    def __enter__(self) -> Table:
        h = self._reader._handle().pin()
        table = Table(0, _hh=h, _lib=self._reader._lib)
        self._tables.append(table)
        return table

    def __exit__(self, *exc) -> None:
        self._tables.pop().close()  # unpins once no call in flight uses the table


def _jsonl_library_path(library: Optional[str]) -> str:
    """libreplaygate_jsonl.so: `library`, else $RG_JSONL_LIBRARY, else next to the runtime
    library (an installed tree: both in lib/), else where a build tree puts it
    (build/bindings/jsonl/ beside build/runtime/), else the system linker path."""
    if library:
        return library
    env = os.environ.get("RG_JSONL_LIBRARY")
    if env:
        return env
    base = os.path.dirname(os.path.abspath(load_library()._name))
    for candidate in (os.path.join(base, "libreplaygate_jsonl.so"),
                      os.path.join(os.path.dirname(base), "bindings", "jsonl",
                                   "libreplaygate_jsonl.so")):
        if os.path.exists(candidate):
            return candidate
    found = ctypes.util.find_library("replaygate_jsonl")
    if found is None:
        raise OSError("libreplaygate_jsonl.so not found: set RG_JSONL_LIBRARY")
    return found


class JsonlGate:
    """Decides JSON Lines bytes in one C call per batch (libreplaygate_jsonl.so, found through
    $RG_JSONL_LIBRARY or next to the runtime library: _jsonl_library_path). Python does no
    per-record work: this is the path that beats a Python dict-lookup gate. Hot-reloadable;
    thread-safe; close() frees it once no call in flight uses it.

        gate = JsonlGate("gate.rgt")
        verbs, invalid, checksum = gate.decide_messages(messages)  # e.g. Kafka values
        # len(verbs) == len(messages): verbs[i] is messages[i]'s, an empty message included
        # (invalid -> the default verb); every verb of one call comes from the table `checksum`.

    A record's value for an operator-only field (policy `source: operator`) is ignored: the field
    stays unset, so a message cannot confirm itself; the record is still decided.
    """

    def __init__(self, path: str, library: Optional[str] = None,
                 trusted_keys: Sequence[str] = (), trust_state: Optional[str] = None,
                 require_signed: bool = False):
        """Opens the table at `path`; with trusted_keys, require_signed or trust_state the open
        and every later reload() are verified (rgj_open_verified, as Table.load)."""
        lib = ctypes.CDLL(_jsonl_library_path(library))
        P, PP, SZ = ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t
        PSZ = ctypes.POINTER(ctypes.c_size_t)
        lib.rgj_open.restype, lib.rgj_open.argtypes = ctypes.c_int, [ctypes.c_char_p, PP,
                                                                    ctypes.POINTER(_Error)]
        lib.rgj_open_verified.restype = ctypes.c_int
        lib.rgj_open_verified.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), SZ,
                                          ctypes.c_char_p, ctypes.c_uint32, PP,
                                          ctypes.POINTER(_Error)]
        lib.rgj_free.restype, lib.rgj_free.argtypes = None, [P]
        lib.rgj_reload.restype = ctypes.c_int
        lib.rgj_reload.argtypes = [P, ctypes.c_char_p, ctypes.POINTER(_Error)]
        lib.rgj_verb_count.restype, lib.rgj_verb_count.argtypes = ctypes.c_uint32, [P]
        lib.rgj_verb_name.restype, lib.rgj_verb_name.argtypes = _Str, [P, ctypes.c_uint32]
        lib.rgj_verb_effects.restype = ctypes.c_int
        lib.rgj_verb_effects.argtypes = [P, P, SZ, ctypes.POINTER(ctypes.c_uint32),
                                         ctypes.c_char_p]
        lib.rgj_decide_lines.restype = ctypes.c_int
        lib.rgj_decide_lines.argtypes = [P, P, SZ, P, SZ, PSZ, PSZ, PSZ, ctypes.c_char_p]
        self._lib = lib
        self._scratch = threading.local()  # decide_lines_raw's output buffer, one per thread
        h, err = ctypes.c_void_p(), _Error()
        if _wants_trust(trusted_keys, trust_state, require_signed):
            keys, n, state, flags = _trust_args(trusted_keys, trust_state, require_signed)
            _check(lib.rgj_open_verified(_path(path), keys, n, state, flags, ctypes.byref(h),
                                         ctypes.byref(err)), err)
        else:
            _check(lib.rgj_open(_path(path), ctypes.byref(h), ctypes.byref(err)), err)
        self._hh: Optional[_Handle] = _Handle(h.value, lib.rgj_free)
        self.verbs = [lib.rgj_verb_name(self._hh.ptr, v).text()
                      for v in range(lib.rgj_verb_count(self._hh.ptr))]

    def _handle(self) -> _Handle:
        h = self._hh
        if h is None:
            raise _closed("gate")
        return h

    def reload(self, path: str) -> None:
        h, err = self._handle(), _Error()
        _check(self._lib.rgj_reload(h.ptr, _path(path), ctypes.byref(err)), err)

    def verb_effects(self):
        """(effect name per verb, e.g. ["none", "create", "none"], the default verb's name, the
        table checksum), all of the table served now. A reload keeps the verbs' names and order
        but may change an effect or the default: these belong to the batches decide_lines*()
        reports with the same checksum (what a worker needs to apply the run-wide rules of
        `replaygate decide`, which only ever turn a create verb into the default)."""
        h = self._handle()
        effects = array.array("I", bytes(4 * len(self.verbs)))
        default, checksum = ctypes.c_uint32(), ctypes.create_string_buffer(33)
        _check(self._lib.rgj_verb_effects(h.ptr, effects.buffer_info()[0] if self.verbs else None,
                                          len(self.verbs), ctypes.byref(default), checksum))
        return ([_EFFECTS.get(e, "?") for e in effects], self.verbs[default.value],
                checksum.value.decode())

    _CHUNK = 65536  # verbs per C call at most: the per-thread buffer is 256 KiB
    _ATTEMPTS = 4   # tries at deciding a many-call input on one table before table_changed

    def decide_lines_raw(self, data: bytes):
        """(verb indices as array('I'), invalid record count, table checksum) for `data`: exactly
        one verb per line, in order (lines end at b"\\n"; a last line without it counts; b""
        has none, and a final b"\\n" does not start one: see decide_messages()). A line that is
        not a valid record -- blank or whitespace only, bad JSON, an unknown or repeated key --
        gets the table's default verb (fail closed) and counts as invalid, like `replaygate
        decide`; it is never skipped, so verbs[i] is always line i's. Every verb comes from the
        one table named by the checksum: an input of more than 65,536 lines takes several C calls,
        and when a reload lands between them the whole input is decided again on the new table;
        after 4 tries that each straddle a reload, ReplaygateError (status "table_changed",
        code -1) is raised rather than verbs from two tables."""
        # Every line takes at least 1 byte (a blank line is its newline), so len bounds the verbs:
        # no pass over `data` to count lines (that cost a sixth of the call). The output buffer is
        # per thread and reused; only the verbs written are copied out.
        h = self._handle()
        scratch = self._scratch
        verbs = getattr(scratch, "verbs", None)
        if verbs is None:
            verbs = scratch.verbs = array.array("I", bytes(4 * self._CHUNK))
            scratch.args = (ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t(),
                            ctypes.create_string_buffer(33))
        count, invalid, consumed, checksum = scratch.args
        base = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0
        address = verbs.buffer_info()[0]
        size = len(data)
        for _ in range(self._ATTEMPTS):
            out, bad, at, table = None, 0, 0, None
            while True:
                cap = max(1, min(size - at, self._CHUNK))
                _check(self._lib.rgj_decide_lines(h.ptr, base + at, size - at, address, cap,
                                                  ctypes.byref(count), ctypes.byref(invalid),
                                                  ctypes.byref(consumed), checksum))
                if table is None:
                    table = checksum.value
                elif checksum.value != table:  # reloaded between two calls: start again
                    out = None
                    break
                if out is None:
                    out = verbs[:count.value]
                else:
                    out.extend(verbs[:count.value])
                bad += invalid.value
                at += consumed.value
                if at >= size or consumed.value == 0:
                    break
            if out is not None:
                return out, bad, table.decode()
        raise ReplaygateError(-1, f"the table was reloaded during each of {self._ATTEMPTS} tries "
                              f"at deciding {size} bytes on one table: retry, or pass at most "
                              f"{self._CHUNK} lines per call", status="table_changed")

    def decide_lines(self, data: bytes):
        """As decide_lines_raw(), with verb names."""
        verbs, invalid, checksum = self.decide_lines_raw(data)
        return [self.verbs[v] for v in verbs], invalid, checksum

    def decide_messages_raw(self, messages: Sequence[bytes]):
        """As decide_lines_raw() for a list of messages (bytes, e.g. Kafka values), one verb per
        message: len(verbs) == len(messages), an empty message included (invalid: the default).
        b"\\n".join(messages) alone loses a last empty message, since a final newline does not
        start a line. A message holding a raw newline (pretty-printed JSON) is not one JSON Lines
        record: it gets the default verb and counts as invalid, and never shifts a later verdict."""
        msgs = messages if isinstance(messages, list) else list(messages)
        terminated = itertools.chain(msgs, (b"",))  # every message ends with a newline
        verbs, invalid, checksum = self.decide_lines_raw(b"\n".join(terminated))
        if len(verbs) != len(msgs):  # some message held a newline and made several lines
            msgs = [b"" if b"\n" in bytes(m) else m for m in msgs]
            verbs, invalid, checksum = self.decide_lines_raw(
                b"\n".join(itertools.chain(msgs, (b"",))))
        return verbs, invalid, checksum

    def decide_messages(self, messages: Sequence[bytes]):
        """As decide_messages_raw(), with verb names."""
        verbs, invalid, checksum = self.decide_messages_raw(messages)
        return [self.verbs[v] for v in verbs], invalid, checksum

    def close(self) -> None:
        self._hh = None  # freed now, or when the last call in flight on another thread returns
