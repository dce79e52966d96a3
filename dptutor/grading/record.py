"""Record in the student's kernel, replay in the grader: how a verdict avoids trusting the kernel.

A check is ordinary Python that calls the student's functions (``f(u, mu, b)``) and inspects the
student's values (``verdicts``).  When grading, the same check runs twice:

1. **Record** (in the student's kernel, :func:`record_cell`).  The check drives the calls; every
   call of a student function is wrapped so that its inputs' digest, its return value or exception,
   the arrays it modified, the state it left in a ``numpy.random.Generator`` argument and whether it
   touched a :func:`~dptutor.grading.feedback.spy_array` element by element are written as *plain
   data* (an ``.npz`` of numeric arrays plus one JSON string, no pickle) to a path the grader
   chose for that cell.  Values the question needs (a dict of verdicts, an ``AuditResult``) are
   written as data too.  Nothing the check *concludes* in the kernel is kept.
2. **Replay** (in the grader's process, :func:`replay_question`).  The grader parses the file
   strictly (:func:`load_record`: regular file, size limit, stored zip members only, numeric dtypes,
   every field type-checked), then runs the check again with *proxies* for the student's functions:
   each proxy call checks that the grader's own inputs have the recorded digest and returns the
   recorded result.  So the verdict is computed in the grader, with the grader's references, on
   inputs the grader chose (hidden ones drawn fresh for each submission); the kernel contributed
   only data, and any data it writes is judged as if the student's function had returned it.

Timing (:func:`measure`) is the one thing a kernel cannot report: the check asks for a call on
seeded uniforms, the record lists the request, the runner executes it in a cell of its own and
times that cell from outside the kernel (:mod:`dptutor.grading.runner`); the reference time is
measured in the grader's process (:func:`reference_seconds`).

Without a grading session (the notebook's feedback) both helpers measure in-process.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import importlib
import io
import json
import math
import os
import re
import stat
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_callable, check_int, check_path, check_positive, check_sequence
from dptutor.grading.feedback import SpyArray, call, uniforms

__all__ = [
    "RecordError",
    "RecordMismatch",
    "MAX_RECORD_BYTES",
    "MAX_ARRAY_ELEMENTS",
    "measure",
    "reference_seconds",
    "make_uniforms",
    "record_cell",
    "timed_cell",
    "load_record",
    "load_timed",
    "replay_question",
    "Record",
]

#: The largest record file the grader reads (bytes), and the largest array in it (elements).
MAX_RECORD_BYTES = 96 * 2**20
MAX_ARRAY_ELEMENTS = 2**23
#: Timed requests one question may make.
MAX_TIMED_REQUESTS = 4
_MAX_CALLS = 20_000
_MAX_TEXT = 4000
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_MEMBER = re.compile(r"^(meta|a[0-9]{1,6})\.npy$")
# Result objects are rebuilt only from dataclasses of dptutor's own modules.
_DATACLASS_MODULE = re.compile(r"^dptutor(\.[A-Za-z_][A-Za-z0-9_]*){1,3}$")


class RecordError(ValueError):
    """The data a kernel wrote cannot be parsed or fails validation (the question scores 0)."""


class RecordMismatch(BaseException):
    """A replayed call does not match the record (tampering): a BaseException so that no check's
    ``except Exception`` can swallow it."""


# ---------------------------------------------------------------------------------------------
# sessions: direct (feedback), record (kernel), replay (grader)
# ---------------------------------------------------------------------------------------------

_SESSION: contextvars.ContextVar[Any] = contextvars.ContextVar("dptutor_grading_session", default=None)


def _check_spec(spec: Any) -> list[tuple[int, int]]:
    if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence):
        raise TypeError(f"spec must be a list of (seed, count) pairs, got {type(spec).__name__}")
    parts = []
    for part in spec:
        if isinstance(part, (str, bytes)) or not isinstance(part, Sequence) or len(part) != 2:
            raise TypeError("spec must be a list of (seed, count) pairs")
        parts.append((check_int(part[0], "spec seed", minimum=0), check_int(part[1], "spec count", minimum=0)))
    if sum(c for _, c in parts) > MAX_ARRAY_ELEMENTS:
        raise ValueError(f"spec asks for more than {MAX_ARRAY_ELEMENTS:,} uniforms")
    return parts


def make_uniforms(spec: Sequence[Sequence[int]]) -> NDArray[np.float64]:
    """The uniforms of a timed request: ``spec`` is a list of ``(seed, count)`` parts, concatenated."""
    parts = [uniforms(seed, count) for seed, count in _check_spec(spec)]
    return np.concatenate(parts) if parts else np.empty(0)


def _harness(fn: Callable, spec: Sequence[Sequence[int]], args: Sequence[Any], path: str) -> tuple[Any, BaseException | None]:
    """What a timed cell does, in one place for the kernel and the grader's reference."""
    u = make_uniforms(spec)
    value, exc = call(fn, u, *args)
    try:
        np.save(path, np.asarray(value, dtype=np.float64))
    except Exception:
        pass
    return value, exc


def measure(f: Callable, spec: Sequence[Sequence[int]], *args: Any,
            cap: float = 5.0) -> tuple[Any, BaseException | None, float]:
    """Call ``f(make_uniforms(spec), *args)`` and time it: ``(value, exception, seconds)``.

    In the feedback, in this process (best of up to 3 runs; a first run on 1 % of the input,
    scaled up, stops a hopeless case at ``cap`` seconds).  While recording, nothing runs (the
    runner times the call in a cell of its own); in the replay, the runner's measurement is used.
    """
    check_callable(f, "f")
    spec = _check_spec(spec)
    cap = check_positive(cap, "cap")
    session = _SESSION.get()
    if isinstance(session, _Recorder):
        return session.request_timing(f, spec, args)
    if isinstance(session, _Replayer):
        return session.timing(f, spec, args)
    total = sum(int(c) for _, c in spec)
    small_spec = _truncate(spec, max(1, total // 100))
    with tempfile.TemporaryDirectory(prefix="dptutor-time-") as tmp:
        path = os.path.join(tmp, "out.npy")
        t0 = time.perf_counter()
        value, exc = _harness(f, small_spec, args, path)
        small = time.perf_counter() - t0
        if exc is not None or small * total / max(1, total // 100) > cap:
            return value, exc, small * total / max(1, total // 100)
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            value, exc = _harness(f, spec, args, path)
            best = min(best, time.perf_counter() - t0)
            if exc is not None or best > cap:
                break
        return value, exc, best


def _truncate(spec: Sequence[Sequence[int]], n: int) -> list[tuple[int, int]]:
    out = []
    for seed, count in spec:
        take = min(int(count), n - sum(c for _, c in out))
        if take <= 0:
            break
        out.append((int(seed), take))
    return out


def reference_seconds(reference: Callable, spec: Sequence[Sequence[int]], *args: Any) -> float:
    """Best of 3 times of the same harness as :func:`measure` with ``reference`` (trusted code).

    While recording in a kernel it returns NaN without running (the replay measures it again).
    """
    check_callable(reference, "reference")
    spec = _check_spec(spec)
    if isinstance(_SESSION.get(), _Recorder):
        return math.nan
    best = math.inf
    with tempfile.TemporaryDirectory(prefix="dptutor-time-") as tmp:
        path = os.path.join(tmp, "out.npy")
        for _ in range(3):
            t0 = time.perf_counter()
            _harness(reference, spec, args, path)
            best = min(best, time.perf_counter() - t0)
    return best


# ---------------------------------------------------------------------------------------------
# digests and encodings (the same code in the kernel and in the grader)
# ---------------------------------------------------------------------------------------------


def _digest_into(h: Any, obj: Any) -> None:
    if isinstance(obj, np.random.Generator):
        h.update(b"G" + json.dumps(obj.bit_generator.state, sort_keys=True).encode())
    elif isinstance(obj, np.ndarray):
        arr = np.array(obj.view(np.ndarray), order="C", copy=True)
        h.update(b"A" + arr.dtype.str.encode() + repr(arr.shape).encode() + arr.tobytes())
    elif isinstance(obj, (list, tuple)):
        h.update(b"L" + str(len(obj)).encode())
        for item in obj:
            _digest_into(h, item)
    elif isinstance(obj, dict):
        h.update(b"D" + str(len(obj)).encode())
        for key in sorted(obj, key=repr):
            h.update(repr(key).encode())
            _digest_into(h, obj[key])
    elif obj is None or isinstance(obj, (bool, int, float, str, np.generic)):
        h.update(b"S" + type(obj).__name__.encode() + repr(obj).encode())
    else:
        h.update(b"O" + type(obj).__name__.encode())


def _digest(args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    h = hashlib.sha256()
    _digest_into(h, list(args))
    _digest_into(h, dict(kwargs))
    return h.hexdigest()


class _Writer:
    """Collects arrays (``a0.npy``, ``a1.npy``, ...) and encodes values as JSON-able trees."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []

    def array(self, arr: np.ndarray) -> int:
        self.arrays.append(np.array(arr.view(np.ndarray), order="C", copy=True))
        return len(self.arrays) - 1

    def encode(self, value: Any, depth: int = 0) -> dict[str, Any]:
        try:
            return self._encode(value, depth)
        except Exception as exc:  # a student object whose repr or conversion fails
            return {"k": "opaque", "type": "object", "repr": f"<unreadable: {type(exc).__name__}>"}

    def _encode(self, value: Any, depth: int) -> dict[str, Any]:
        from dptutor.audit import AuditResult

        if value is None:
            return {"k": "none"}
        if isinstance(value, (bool, np.bool_)):
            return {"k": "bool", "v": bool(value)}
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            return {"k": "ndarray", "a": self.array(value)}
        if isinstance(value, np.generic) and np.asarray(value).dtype.kind in "biuf":
            return {"k": "npscalar", "a": self.array(np.asarray(value))}
        if isinstance(value, int):
            return {"k": "int", "v": value} if abs(value) < 2**63 else {"k": "float", "v": float(value)}
        if isinstance(value, float):
            return {"k": "float", "v": value}
        if isinstance(value, str):
            return {"k": "str", "v": value[:_MAX_TEXT]}
        if isinstance(value, AuditResult):
            seed = list(value.seed) if isinstance(value.seed, tuple) else value.seed
            return {"k": "audit", "a": self.array(np.asarray(value.counts, dtype=np.int64)), "n": int(value.n),
                    "epsilon": float(value.epsilon), "seed": seed, "mechanism": str(value.mechanism)[:200]}
        if (dataclasses.is_dataclass(value) and not isinstance(value, type) and depth < 4
                and _DATACLASS_MODULE.match(type(value).__module__) and _IDENTIFIER.match(type(value).__qualname__)):
            # A result object of dptutor (an assignment's answer, say): its fields, rebuilt by the grader
            # through the class's own constructor (and its checks).
            return {"k": "dataclass", "module": type(value).__module__, "name": type(value).__qualname__,
                    "fields": [[f.name, self.encode(getattr(value, f.name), depth + 1)]
                               for f in dataclasses.fields(value) if f.init]}
        if depth < 4 and isinstance(value, (list, tuple)):
            kind = "list" if isinstance(value, list) else "tuple"
            try:
                arr = np.asarray(value)
            except Exception:
                arr = None
            if arr is not None and arr.dtype.kind in "iuf" and arr.ndim >= 1:
                return {"k": kind, "a": self.array(arr)}
            return {"k": kind, "items": [self.encode(v, depth + 1) for v in list(value)[:1000]]}
        if depth < 4 and isinstance(value, Mapping):
            items = list(value.items())[:1000]
            if all(isinstance(k, str) for k, _ in items):
                return {"k": "dict", "items": [[k[:200], self.encode(v, depth + 1)] for k, v in items]}
        if callable(value):
            return {"k": "function", "name": str(getattr(value, "__name__", "function"))[:100]}
        return {"k": "opaque", "type": type(value).__name__[:100], "repr": repr(value)[:200]}

    def save(self, path: str, meta: Mapping[str, Any]) -> None:
        members = {"meta": np.array(json.dumps(meta))}
        members.update({f"a{i}": a for i, a in enumerate(self.arrays)})
        tmp = f"{path}.part"
        with open(tmp, "wb") as fh:
            np.savez(fh, **members)
        os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# record (runs in the student's kernel)
# ---------------------------------------------------------------------------------------------


class _Recorded:
    """A student function wrapped so that every call is written down."""

    def __init__(self, fn: Callable, name: str, recorder: "_Recorder") -> None:
        self._fn, self.name, self._recorder = fn, name, recorder
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        rec = self._recorder
        entry: dict[str, Any] = {"fn": self.name, "digest": _digest(args, kwargs)}
        arrays = [(i, a, np.array(a, copy=True)) for i, a in _array_args(args, kwargs)]
        try:
            value = self._fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 -- recorded, then re-raised unchanged
            entry["raised"] = {"type": type(exc).__name__[:100], "value_error": isinstance(exc, ValueError),
                               "not_implemented": isinstance(exc, NotImplementedError),
                               "message": str(exc)[:_MAX_TEXT]}
            rec.finish(entry, args, kwargs, arrays)
            raise
        entry["value"] = rec.writer.encode(value)
        rec.finish(entry, args, kwargs, arrays)
        return value


def _array_args(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Iterator[tuple[str, np.ndarray]]:
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            yield str(i), a
    for k, a in kwargs.items():
        if isinstance(a, np.ndarray):
            yield k, a


def _generator_args(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Iterator[tuple[str, np.random.Generator]]:
    for i, a in enumerate(args):
        if isinstance(a, np.random.Generator):
            yield str(i), a
    for k, a in kwargs.items():
        if isinstance(a, np.random.Generator):
            yield k, a


class _Recorder:
    def __init__(self) -> None:
        self.writer = _Writer()
        self.calls: list[dict[str, Any]] = []
        self.timed: list[dict[str, Any]] = []

    def finish(self, entry: dict[str, Any], args: Sequence[Any], kwargs: Mapping[str, Any],
               arrays: list[tuple[str, np.ndarray, np.ndarray]]) -> None:
        changed = {}
        for key, arr, before in arrays:
            if isinstance(arr, SpyArray):
                continue
            try:
                same = arr.shape == before.shape and np.array_equal(arr, before, equal_nan=arr.dtype.kind == "f")
            except Exception:
                same = False
            if not same:
                changed[key] = self.writer.array(np.asarray(arr))
        entry["changed"] = changed
        entry["touched"] = any(isinstance(a, SpyArray) and a.touched for _, a in _array_args(args, kwargs))
        entry["rng"] = {key: json.dumps(g.bit_generator.state) for key, g in _generator_args(args, kwargs)}
        if len(self.calls) < _MAX_CALLS:
            self.calls.append(entry)

    def request_timing(self, f: Callable, spec: Sequence[Sequence[int]], args: Sequence[Any]) -> tuple[Any, None, float]:
        name = f.name if isinstance(f, _Recorded) else getattr(f, "__name__", "function")
        self.timed.append({"fn": name, "spec": [[int(s), int(c)] for s, c in spec], "args": _plain(args)})
        return None, None, math.nan


def _plain(args: Sequence[Any]) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, (bool, np.bool_)):
            out.append(bool(a))
        elif isinstance(a, (int, float, np.integer, np.floating)):
            out.append(float(a))
        else:
            raise TypeError("args: a timed request takes plain numbers only")
    return out


def _check_namespace_and_path(namespace: Any, path: Any) -> None:
    if not isinstance(namespace, Mapping):
        raise TypeError(f"namespace must be a mapping (globals()), got {type(namespace).__name__}")
    check_path(path, "path")


def record_cell(namespace: Mapping[str, Any], assignment: str, question: str, hidden: int, path: str) -> None:
    """Kernel side of one hidden check: drive the check, write what the student's code did to ``path``."""
    from dptutor.grading.registry import get_assignment

    q = get_assignment(assignment).question(question)
    _check_namespace_and_path(namespace, path)
    hidden = check_int(hidden, "hidden", minimum=0)
    recorder = _Recorder()
    meta: dict[str, Any] = {"version": 1, "question": question, "needs": {}, "calls": recorder.calls,
                            "timed": recorder.timed}
    missing = [n for n in q.needs if n not in namespace]
    objects = []
    for name in q.needs:
        if name in missing:
            continue
        obj = namespace[name]
        if callable(obj) and not isinstance(obj, type) and not isinstance(obj, Mapping):
            meta["needs"][name] = {"k": "function"}
            objects.append(_Recorded(obj, name, recorder))
        else:
            meta["needs"][name] = recorder.writer.encode(obj)
            objects.append(obj)
    meta["missing"] = missing
    if not missing:
        token = _SESSION.set(recorder)
        try:
            q.check(*objects, hidden=hidden)
        except KeyboardInterrupt:  # the runner's time limit
            raise
        except BaseException:  # noqa: BLE001 -- the verdict is the grader's; only the calls matter here
            pass
        finally:
            _SESSION.reset(token)
    recorder.writer.save(path, meta)


def timed_cell(namespace: Mapping[str, Any], name: str, spec: Sequence[Sequence[int]], args: Sequence[Any],
               path: str) -> None:
    """Kernel side of a timed request: ``namespace[name](uniforms, *args)``, the output written to ``path``."""
    _check_namespace_and_path(namespace, path)
    if not isinstance(name, str) or name not in namespace:
        raise ValueError(f"name must be a name defined in namespace, got {name!r}")
    args = _plain(tuple(check_sequence(args, "args", min_len=0)))
    writer = _Writer()
    u = make_uniforms(spec)
    entry: dict[str, Any] = {"version": 1}
    try:
        value = namespace[name](u, *args)
    except KeyboardInterrupt:  # the runner's time limit: it knows, nothing to write
        raise
    except BaseException as exc:  # noqa: BLE001 -- reported as data
        entry["raised"] = {"type": type(exc).__name__[:100], "value_error": isinstance(exc, ValueError),
                           "not_implemented": isinstance(exc, NotImplementedError), "message": str(exc)[:_MAX_TEXT]}
    else:
        entry["value"] = writer.encode(value)
    writer.save(path, entry)


# ---------------------------------------------------------------------------------------------
# parsing (in the grader): nothing from the file is trusted
# ---------------------------------------------------------------------------------------------


@dataclass
class Record:
    """A parsed record: the needs, the calls, the timed requests, and the arrays they refer to."""

    meta: dict[str, Any]
    arrays: dict[int, np.ndarray]
    timings: list[tuple[float, dict[str, Any], "Record"]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.meta, dict):
            raise TypeError(f"meta must be a dict (from load_record), got {type(self.meta).__name__}")
        try:
            json.dumps(self.meta, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"meta must be plain JSON data without NaN ({exc})") from None
        if not isinstance(self.arrays, dict) or not all(
                isinstance(k, int) and isinstance(v, np.ndarray) for k, v in self.arrays.items()):
            raise TypeError("arrays must be a dict from int to numpy arrays")
        if not isinstance(self.timings, list):
            raise TypeError(f"timings must be a list, got {type(self.timings).__name__}")


def _read_regular(path: str, limit: int) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise RecordError(f"path: no result file was written at {path}") from None
    except OSError as exc:
        raise RecordError(f"the result file cannot be opened ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RecordError("the result is not a regular file")
        if info.st_size > limit:
            raise RecordError(f"the result file has {info.st_size:,} bytes, more than the limit of {limit:,}")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise RecordError("the result file grew beyond the size limit while being read")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _parse_npz(data: bytes) -> tuple[dict[str, Any], dict[int, np.ndarray]]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise RecordError(f"the result file is not a valid archive ({exc})") from None
    total = 0
    names = set()
    for info in infos:
        if not _MEMBER.match(info.filename) or info.filename in names:
            raise RecordError(f"unexpected member {info.filename[:60]!r} in the result file")
        if info.compress_type != zipfile.ZIP_STORED:
            raise RecordError("compressed members are not accepted in the result file")
        names.add(info.filename)
        total += info.file_size
    if total > MAX_RECORD_BYTES or "meta.npy" not in names:
        raise RecordError("the result file is too large or has no metadata")
    arrays: dict[int, np.ndarray] = {}
    meta_text = None
    for info in infos:
        try:
            arr = np.load(io.BytesIO(zf.read(info)), allow_pickle=False)
        except Exception as exc:
            raise RecordError(f"member {info.filename} is not a valid .npy array ({type(exc).__name__})") from None
        if info.filename == "meta.npy":
            if arr.dtype.kind != "U" or arr.ndim != 0:
                raise RecordError("the metadata is not a string")
            meta_text = str(arr[()])
            continue
        if arr.dtype.kind not in "biuf" or arr.size > MAX_ARRAY_ELEMENTS:
            raise RecordError(f"member {info.filename} has dtype {arr.dtype} or {arr.size:,} elements")
        arrays[int(info.filename[1:-4])] = arr
    try:
        meta = json.loads(meta_text)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"the metadata is not valid JSON ({exc})") from None
    if not isinstance(meta, dict) or meta.get("version") != 1:
        raise RecordError("the metadata has the wrong format")
    return meta, arrays


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise RecordError(what)


def _check_raised(raised: Any) -> None:
    _expect(isinstance(raised, dict) and isinstance(raised.get("type"), str)
            and bool(_IDENTIFIER.match(raised["type"])) and isinstance(raised.get("message"), str)
            and len(raised["message"]) <= _MAX_TEXT and type(raised.get("value_error")) is bool
            and type(raised.get("not_implemented")) is bool, "a recorded exception is malformed")


def _check_value(tree: Any, arrays: Mapping[int, np.ndarray], depth: int = 0) -> None:
    _expect(isinstance(tree, dict) and isinstance(tree.get("k"), str) and depth <= 5, "a recorded value is malformed")
    k = tree["k"]
    if k in ("ndarray", "npscalar", "audit") or (k in ("list", "tuple") and "a" in tree):
        a = tree.get("a")
        _expect(type(a) is int and a in arrays, "a recorded value refers to a missing array")
        if k == "npscalar":
            _expect(arrays[a].ndim == 0, "a recorded scalar is not 0-d")
        if k in ("list", "tuple"):
            _expect(arrays[a].ndim >= 1, "a recorded list is 0-d")
        if k == "audit":
            _expect(arrays[a].shape == (2, 2) and arrays[a].dtype.kind in "iu", "recorded audit counts are not 2x2 integers")
            _expect(type(tree.get("n")) is int and type(tree.get("epsilon")) is float
                    and isinstance(tree.get("mechanism"), str), "a recorded audit is malformed")
            seed = tree.get("seed")
            _expect(seed is None or type(seed) is int or (isinstance(seed, list) and 0 < len(seed) <= 64
                                                        and all(type(s) is int for s in seed)), "a recorded seed is malformed")
        return
    if k == "none":
        return
    if k == "bool":
        _expect(type(tree.get("v")) is bool, "a recorded bool is malformed")
    elif k == "int":
        _expect(type(tree.get("v")) is int and abs(tree["v"]) < 2**63, "a recorded int is malformed")
    elif k == "float":
        _expect(type(tree.get("v")) is float, "a recorded float is malformed")
    elif k == "str":
        _expect(isinstance(tree.get("v"), str) and len(tree["v"]) <= _MAX_TEXT, "a recorded string is malformed")
    elif k in ("list", "tuple"):
        items = tree.get("items")
        _expect(isinstance(items, list) and len(items) <= 1000, "a recorded list is malformed")
        for item in items:
            _check_value(item, arrays, depth + 1)
    elif k == "dict":
        items = tree.get("items")
        _expect(isinstance(items, list) and len(items) <= 1000, "a recorded dict is malformed")
        for pair in items:
            _expect(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and len(pair[0]) <= 200,
                    "a recorded dict key is malformed")
            _check_value(pair[1], arrays, depth + 1)
    elif k == "dataclass":
        fields = tree.get("fields")
        _expect(isinstance(tree.get("module"), str) and bool(_DATACLASS_MODULE.match(tree["module"]))
                and isinstance(tree.get("name"), str) and bool(_IDENTIFIER.match(tree["name"]))
                and isinstance(fields, list) and len(fields) <= 100, "a recorded result object is malformed")
        for pair in fields:
            _expect(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                    and bool(_IDENTIFIER.match(pair[0])), "a recorded result object's field is malformed")
            _check_value(pair[1], arrays, depth + 1)
    elif k in ("function", "opaque"):
        _expect(isinstance(tree.get("name", tree.get("type")), str) and len(str(tree.get("repr", ""))) <= 200
                and bool(_IDENTIFIER.match(tree.get("name", tree.get("type")) or "_")), "a recorded object is malformed")
    else:
        raise RecordError(f"unknown kind of recorded value {k[:20]!r}")


def _validate_record(meta: dict[str, Any], arrays: Mapping[int, np.ndarray], needs: Sequence[str]) -> None:
    _expect(isinstance(meta.get("missing"), list) and all(m in needs for m in meta["missing"]), "bad 'missing' list")
    got = meta.get("needs")
    _expect(isinstance(got, dict) and set(got) | set(meta["missing"]) == set(needs), "needs: the recorded names do not match")
    for tree in got.values():
        if tree != {"k": "function"}:
            _check_value(tree, arrays)
    calls = meta.get("calls")
    _expect(isinstance(calls, list) and len(calls) <= _MAX_CALLS, "the recorded calls are malformed")
    for entry in calls:
        _expect(isinstance(entry, dict) and entry.get("fn") in needs and isinstance(entry.get("digest"), str)
                and type(entry.get("touched")) is bool and isinstance(entry.get("changed"), dict)
                and isinstance(entry.get("rng"), dict), "a recorded call is malformed")
        _expect(("raised" in entry) != ("value" in entry), "a recorded call has neither or both of a value and an exception")
        if "raised" in entry:
            _check_raised(entry["raised"])
        else:
            _check_value(entry["value"], arrays)
        for key, a in entry["changed"].items():
            _expect(isinstance(key, str) and type(a) is int and a in arrays, "a recorded changed argument is malformed")
        for key, state in entry["rng"].items():
            _expect(isinstance(key, str) and isinstance(state, str) and len(state) < 2000, "a recorded rng state is malformed")
    timed = meta.get("timed")
    _expect(isinstance(timed, list) and len(timed) <= MAX_TIMED_REQUESTS, "the timed requests are malformed")
    for req in timed:
        _check_request(req, needs)


def _check_request(req: Any, needs: Sequence[str]) -> None:
    _expect(isinstance(req, dict) and req.get("fn") in needs and isinstance(req.get("spec"), list)
            and isinstance(req.get("args"), list) and len(req["args"]) <= 8
            and all(type(a) in (float, bool) for a in req["args"]), "a timed request is malformed")
    total = 0
    for part in req["spec"]:
        _expect(isinstance(part, list) and len(part) == 2 and all(type(x) is int and 0 <= x < 2**63 for x in part),
                "a timed request's input is malformed")
        total += part[1]
    _expect(0 < total <= MAX_ARRAY_ELEMENTS and len(req["spec"]) <= 8, "a timed request's input is too large")


def load_record(path: str, needs: Sequence[str]) -> Record:
    """Parse and validate the file a record cell wrote (:class:`RecordError` if anything is off)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    if not all(isinstance(n, str) for n in check_sequence(needs, "needs", min_len=0)):
        raise TypeError("needs must be a sequence of names")
    meta, arrays = _parse_npz(_read_regular(path, MAX_RECORD_BYTES))
    _validate_record(meta, arrays, needs)
    return Record(meta, arrays)


def load_timed(path: str) -> Record:
    """Parse and validate the file a timed cell wrote."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a path, got {type(path).__name__}")
    meta, arrays = _parse_npz(_read_regular(path, MAX_RECORD_BYTES))
    _expect(("raised" in meta) != ("value" in meta), "the timed result has neither or both of a value and an exception")
    if "raised" in meta:
        _check_raised(meta["raised"])
    else:
        _check_value(meta["value"], arrays)
    return Record(meta, arrays)


# ---------------------------------------------------------------------------------------------
# replay (in the grader)
# ---------------------------------------------------------------------------------------------


def _named_class(name: str, base: type) -> type:
    return type(name, (base,), {"__module__": "student"})


def _opaque(type_name: str, text: str) -> Any:
    cls = type(type_name, (), {"__repr__": lambda self: text, "__module__": "student"})
    return cls()


def _decode(tree: dict[str, Any], arrays: Mapping[int, np.ndarray]) -> Any:
    from dptutor.audit import AuditResult

    k = tree["k"]
    if k == "none":
        return None
    if k in ("bool", "int", "float", "str"):
        return tree["v"]
    if k == "ndarray":
        return arrays[tree["a"]].copy()
    if k == "npscalar":
        return arrays[tree["a"]][()]
    if k in ("list", "tuple"):
        items = arrays[tree["a"]].tolist() if "a" in tree else [_decode(t, arrays) for t in tree["items"]]
        return items if k == "list" else tuple(items)
    if k == "dict":
        return {key: _decode(t, arrays) for key, t in tree["items"]}
    if k == "audit":
        seed = tuple(tree["seed"]) if isinstance(tree["seed"], list) else tree["seed"]
        try:
            return AuditResult.from_counts(arrays[tree["a"]], n=tree["n"], epsilon=tree["epsilon"], seed=seed,
                                           mechanism=tree["mechanism"])
        except (TypeError, ValueError) as exc:
            return _opaque("AuditResult", f"<an AuditResult that is not valid: {exc}>")
    if k == "dataclass":
        try:
            module = importlib.import_module(tree["module"])
            cls = getattr(module, tree["name"])
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                raise TypeError("not a dataclass")
            return cls(**{name: _decode(sub, arrays) for name, sub in tree["fields"]})
        except Exception as exc:  # noqa: BLE001 -- the student's data did not make a valid object
            return _opaque(tree["name"], f"<a {tree['name']} that is not valid: {type(exc).__name__}: {exc}>"[:200])
    if k == "function":
        return _opaque("function", f"<function {tree['name']}>")
    return _opaque(tree["type"], tree["repr"])


def _raise(raised: dict[str, Any]) -> None:
    if raised["not_implemented"]:
        raise NotImplementedError(raised["message"])
    base = ValueError if raised["value_error"] else Exception
    raise _named_class(raised["type"], base)(raised["message"])


class _Proxy:
    """Stands for a student function in the replay: returns what the record says it returned."""

    def __init__(self, name: str, replayer: "_Replayer") -> None:
        self.name, self._replayer = name, replayer
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._replayer.next_call(self.name, args, kwargs)


class _Replayer:
    def __init__(self, record: Record) -> None:
        self.record = record
        self.position = 0
        self.timed_position = 0

    def next_call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        calls = self.record.meta["calls"]
        if self.position >= len(calls):
            raise RecordMismatch("the record has fewer calls than the check makes")
        entry = calls[self.position]
        self.position += 1
        if entry["fn"] != name or entry["digest"] != _digest(args, kwargs):
            raise RecordMismatch("a recorded call's inputs differ from the grader's")
        arrays = dict(_array_args(args, kwargs))
        for key, index in entry["changed"].items():
            target, new = arrays.get(key), self.record.arrays[index]
            if target is None or target.shape != new.shape:
                raise RecordMismatch("a recorded change of an argument does not fit it")
            with np.errstate(all="ignore"):
                np.copyto(target, new, casting="unsafe")
        if entry["touched"]:
            for arr in arrays.values():
                if isinstance(arr, SpyArray):
                    arr.mark_touched()
        gens = dict(_generator_args(args, kwargs))
        for key, state in entry["rng"].items():
            if key not in gens:
                raise RecordMismatch("a recorded generator state does not fit the arguments")
            try:
                gens[key].bit_generator.state = json.loads(state)
            except (TypeError, ValueError, KeyError, OverflowError) as exc:
                raise RecordMismatch(f"a recorded generator state is not valid ({exc})") from None
        if "raised" in entry:
            _raise(entry["raised"])
        return _decode(entry["value"], self.record.arrays)

    def timing(self, f: Callable, spec: Sequence[Sequence[int]], args: Sequence[Any]) -> tuple[Any, BaseException | None, float]:
        name = getattr(f, "name", None)
        if self.timed_position >= len(self.record.timings):
            raise RecordMismatch("a timed call the check makes was not measured")
        seconds, request, result = self.record.timings[self.timed_position]
        self.timed_position += 1
        if request != {"fn": name, "spec": [[int(s), int(c)] for s, c in spec], "args": _plain(args)}:
            raise RecordMismatch("a measured call differs from the grader's request")
        if "raised" in result.meta:
            try:
                _raise(result.meta["raised"])
            except NotImplementedError:
                raise
            except Exception as exc:
                return None, exc, seconds
        return _decode(result.meta["value"], result.arrays), None, seconds


def replay_question(assignment: str, question: str, record: Record, hidden: int) -> Any:
    """The grader's verdict: the check run in this process on the recorded data (a Feedback)."""
    from dptutor.grading.feedback import Feedback, Finding
    from dptutor.grading.registry import check, get_assignment

    a = get_assignment(assignment)
    q = a.question(question)
    if not isinstance(record, Record):
        raise TypeError(f"record must be a Record (from load_record), got {type(record).__name__}")
    hidden = check_int(hidden, "hidden", minimum=0)
    missing = record.meta["missing"]
    if missing:
        return Feedback(a.name, q.name, q.title, 0.0, q.points, status="missing", findings=(Finding(
            False, f"{', '.join(missing)} is not defined in your notebook: keep the template's names, and "
                   "check that the cell defining it runs without error"),))
    replayer = _Replayer(record)
    objects = []
    for name in q.needs:
        tree = record.meta["needs"][name]
        objects.append(_Proxy(name, replayer) if tree == {"k": "function"} else _decode(tree, record.arrays))
    token = _SESSION.set(replayer)
    try:
        fb = check(a.name, q.name, *objects, hidden=hidden)
    except RecordMismatch as exc:
        return Feedback(a.name, q.name, q.title, 0.0, q.points, status="error", findings=(Finding(
            False, f"not graded: the grading record does not match the grader's own run ({exc}); "
                   "was the grader patched from the notebook?"),))
    finally:
        _SESSION.reset(token)
    return fb
