"""Checks run in the grader; the student's kernel only answers calls: how a verdict avoids trusting it.

A check is ordinary Python that calls the student's functions (``f(u, mu, b)``) and inspects the
student's values (``verdicts``).  When grading, every check runs **in the grader's process** (a
worker thread of :func:`grade_question`), never in the kernel:

- Hidden parameters, seeds and random generators are drawn in the grader, fresh for every
  question (:mod:`secrets`); they never appear in a cell the kernel runs.
- A call of a student function is a *proxy*: the grader writes the call's inputs as plain data
  (an ``.npz`` of numeric arrays plus one JSON string: arrays, numbers, strings, the state of a
  ``numpy.random.Generator``) to a file with a random name, and runs a cell that loads them, calls
  the function from the cell itself (no grader frame on the stack, the same call shape as the
  student's own cells) and writes what it returned or raised, the arrays it modified, the state it
  left in a generator and whether it read a spy array element by element.  A check may send many
  calls in one cell (:func:`call_many`).
- The answer file is parsed strictly (regular file, size limits, stored zip members, numeric
  dtypes, every field type-checked) and compared with the request (one result per call; changed
  arguments have the argument's shape; generator states are valid states of the generator sent).
  Values are rebuilt only as plain data or as one of the types the assignment declares in its
  ``RECORD_TYPES`` allow-list (through the grader's own constructor); the grader never imports a
  module or resolves a name taken from the kernel's data.  NaN and infinity are data like any
  other number: the check judges them.
- Timing (:func:`measure`): each repeat is a cell of its own on fresh inputs drawn in the grader,
  timed by the grader's clock from outside the kernel; the reference runs the same harness (load
  the input file, call, save the output) in the grader's process (:func:`reference_seconds`).
- The grader's own work is bounded: every check makes a fixed number of cells, each under the
  runner's time limit, and replays of student evidence check their size before they start and
  their time while they run (see :mod:`dptutor.assignments.audit`).

Nothing the kernel concludes is used, and the kernel never sees a cell whose outcome it could
change by knowing what comes next: it learns the inputs of each call when it has to answer it.

Without a grading session (the notebook's feedback) the same checks call the functions directly.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import io
import json
import math
import os
import re
import secrets
import stat
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dptutor._validate import (check_callable, check_float_array, check_int, check_path, check_positive, check_sequence,
                               is_bool)
from dptutor.assignments.feedback import SpyArray, call

__all__ = [
    "RecordError",
    "MAX_RECORD_BYTES",
    "MAX_ARRAY_ELEMENTS",
    "MAX_CALLS_PER_CELL",
    "call_many",
    "measure",
    "reference_seconds",
    "flag_for_review",
    "grading",
    "grade_question",
    "grade_in_process",
    "KernelCalls",
    "kernel_needs",
]

#: The largest answer file the grader reads (bytes), and the largest array in it (elements).
MAX_RECORD_BYTES = 160 * 2**20
MAX_ARRAY_ELEMENTS = 2**23
#: Calls one cell may carry, and cells (call batches and timed repeats) one question may make.
MAX_CALLS_PER_CELL = 2000
MAX_CELLS_PER_QUESTION = 64
_MAX_TEXT = 4000
_DEPTH = 5
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_MEMBER = re.compile(r"^(meta|a[0-9]{1,6})\.npy$")
_FLOAT_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


class RecordError(ValueError):
    """The data a kernel wrote cannot be parsed or does not answer the grader's request."""


class _Abort(BaseException):
    """Stops a check in the grader when the kernel's answer is unusable (a BaseException: no check's
    ``except Exception`` swallows it)."""


_SESSION: contextvars.ContextVar[Any] = contextvars.ContextVar("dptutor_grading_session", default=None)


# ---------------------------------------------------------------------------------------------
# the helpers checks use: call_many, measure, reference_seconds, flag_for_review
# ---------------------------------------------------------------------------------------------


def call_many(f: Callable, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]]) -> list[tuple[Any, BaseException | None]]:
    """``[call(f, *args, **kwargs) for args, kwargs in calls]``, sent to the kernel as one cell when grading.

    ``NotImplementedError`` propagates (the stub is still in place), as in :func:`~dptutor.assignments.feedback.call`.
    """
    check_callable(f, "f")
    calls = list(check_sequence(calls, "calls", min_len=0))
    for item in calls:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping)):
            raise TypeError("calls must be a sequence of (args, kwargs) pairs")
    if isinstance(f, _Proxy):
        return f.session.calls(f.name, calls)
    return [call(f, *args, **kwargs) for args, kwargs in calls]


def flag_for_review(text: str) -> None:
    """Note, for the instructor, something a human should look at (not a score change).

    Only recorded while grading; the feedback in the notebook never shows it.
    """
    if not isinstance(text, str) or not text:
        raise TypeError("text must be a non-empty str")
    session = _SESSION.get()
    if isinstance(session, _Remote) and text[:_MAX_TEXT] not in session.flags:
        session.flags.append(text[:_MAX_TEXT])


def grading() -> bool:
    """Whether the current check runs for grading (in the grader) rather than as notebook feedback."""
    return isinstance(_SESSION.get(), _Remote)


def _input_file(path: str, u: np.ndarray) -> None:
    writer = _Writer()
    writer.save(path, {"version": 2, "calls": [{"fn": "_", "args": [writer.encode(u)], "kwargs": []}]})


def _harness(fn: Callable, path: str, out: str, args: Sequence[Any]) -> tuple[Any, BaseException | None]:
    """What a timed cell does, in one place for the kernel and the grader's reference: load the
    input file, call, save the output."""
    with open(path, "rb") as fh:
        u = np.load(fh)["a0"]
    value, exc = call(fn, u, *args)
    writer = _Writer()
    writer.save(out, {"version": 2, "value": writer.encode(value)})
    return value, exc


def measure(f: Callable, inputs: Sequence[np.ndarray], *args: Any,
            cap: float = 5.0) -> tuple[list[tuple[Any, BaseException | None]], float]:
    """Time ``f(u, *args)`` for each ``u`` in ``inputs``: ``(results, best seconds)``.

    Each ``u`` is one timed repeat: give fresh inputs to each (identical inputs let a memoising
    function look fast).  When grading, each repeat is a cell of its own, timed from outside the
    kernel, and stops counting at ``cap`` seconds; in the feedback, it runs here (a first run on
    1 % of the input, scaled up, stops a hopeless case early).  A repeat that raises ends the
    series.
    """
    check_callable(f, "f")
    cap = check_positive(cap, "cap")
    inputs = _timing_inputs(inputs)
    args = tuple(_plain(args))
    if isinstance(f, _Proxy):
        return f.session.timed(f.name, inputs, args, cap)
    results: list[tuple[Any, BaseException | None]] = []
    with tempfile.TemporaryDirectory(prefix="dptutor-time-") as tmp:
        src, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        small = inputs[0][: max(1, inputs[0].size // 100)]
        _input_file(src, small)
        t0 = time.perf_counter()
        value, exc = _harness(f, src, out, args)
        scaled = (time.perf_counter() - t0) * inputs[0].size / max(1, small.size)
        if exc is not None or scaled > cap:
            return [(value, exc)], scaled
        best = math.inf
        for u in inputs:
            _input_file(src, u)
            t0 = time.perf_counter()
            value, exc = _harness(f, src, out, args)
            best = min(best, time.perf_counter() - t0)
            results.append((value, exc))
            if exc is not None or best > cap:
                break
    return results, best


def reference_seconds(reference: Callable, inputs: Sequence[np.ndarray], *args: Any) -> float:
    """Best time of the same harness as :func:`measure` with ``reference`` (trusted code), here."""
    check_callable(reference, "reference")
    inputs = _timing_inputs(inputs)
    args = tuple(_plain(args))
    best = math.inf
    with tempfile.TemporaryDirectory(prefix="dptutor-time-") as tmp:
        src, out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
        for u in inputs:
            _input_file(src, u)
            t0 = time.perf_counter()
            _harness(reference, src, out, args)
            best = min(best, time.perf_counter() - t0)
    return best


def _timing_inputs(inputs: Any) -> list[np.ndarray]:
    """The inputs of the timed repeats: 1-D float arrays of at most MAX_ARRAY_ELEMENTS numbers."""
    out = [check_float_array(u, "inputs", allow_nan=True, ndim=1) for u in check_sequence(inputs, "inputs", min_len=1)]
    if any(u.size > MAX_ARRAY_ELEMENTS for u in out):
        raise ValueError(f"inputs: at most {MAX_ARRAY_ELEMENTS:,} numbers per timed call")
    return [np.array(u, dtype=np.float64) for u in out]


def _plain(args: Sequence[Any]) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, (bool, np.bool_)):
            out.append(bool(a))
        elif isinstance(a, (int, float, np.integer, np.floating)):
            out.append(float(a))
        else:
            raise TypeError("args: a timed call takes plain numbers only")
    return out


# ---------------------------------------------------------------------------------------------
# encoding: plain data both ways (the grader's requests, the kernel's answers)
# ---------------------------------------------------------------------------------------------


def _float_tree(x: float) -> dict[str, Any]:
    x = float(x)
    if math.isnan(x):
        return {"k": "float", "v": "nan"}
    if math.isinf(x):
        return {"k": "float", "v": "inf" if x > 0 else "-inf"}
    return {"k": "float", "v": x}


class _Writer:
    """Collects arrays (``a0.npy``, ``a1.npy``, ...) and encodes values as JSON trees."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []

    def array(self, arr: np.ndarray) -> int:
        self.arrays.append(np.array(np.asarray(arr).view(np.ndarray), order="C", copy=True))
        return len(self.arrays) - 1

    def encode(self, value: Any, depth: int = 0) -> dict[str, Any]:
        try:
            return self._encode(value, depth)
        except Exception as exc:  # a student object whose repr or conversion fails
            return {"k": "opaque", "type": "object", "repr": f"<unreadable: {type(exc).__name__}>"}

    def _encode(self, value: Any, depth: int) -> dict[str, Any]:
        if value is None:
            return {"k": "none"}
        if isinstance(value, (bool, np.bool_)):
            return {"k": "bool", "v": bool(value)}
        if isinstance(value, SpyArray):
            return {"k": "spy", "a": self.array(value)}
        if isinstance(value, np.random.Generator):
            return {"k": "rng", "state": json.dumps(value.bit_generator.state)}
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            return {"k": "ndarray", "a": self.array(value)}
        if isinstance(value, np.generic) and np.asarray(value).dtype.kind in "biuf":
            return {"k": "npscalar", "a": self.array(np.asarray(value))}
        if isinstance(value, int):
            return {"k": "int", "v": int(value)} if abs(value) < 2**63 else _float_tree(float(value))
        if isinstance(value, float):
            return _float_tree(value)
        if isinstance(value, str):
            return {"k": "str", "v": str(value)[:_MAX_TEXT]}
        if depth < _DEPTH - 1 and dataclasses.is_dataclass(value) and not isinstance(value, type):
            # Data only: the type's bare name and its fields.  The grader rebuilds it only if the
            # assignment allows that name, with its own constructor; otherwise it stays opaque.
            return {"k": "object", "type": str(type(value).__name__)[:100],
                    "fields": [[f.name, self.encode(getattr(value, f.name), depth + 1)]
                               for f in dataclasses.fields(value)][:100]}
        if depth < _DEPTH - 1 and isinstance(value, (list, tuple)):
            kind = "list" if isinstance(value, list) else "tuple"
            try:
                arr = np.asarray(value)
            except Exception:
                arr = None
            if arr is not None and arr.dtype.kind in "iuf" and arr.ndim >= 1:
                return {"k": kind, "a": self.array(arr)}
            return {"k": kind, "items": [self.encode(v, depth + 1) for v in list(value)[:1000]]}
        if depth < _DEPTH - 1 and isinstance(value, Mapping):
            items = list(value.items())[:1000]
            if all(isinstance(k, str) for k, _ in items):
                return {"k": "dict", "items": [[k[:200], self.encode(v, depth + 1)] for k, v in items]}
        if callable(value):
            return {"k": "function", "name": _identifier(getattr(value, "__name__", "function"))}
        return {"k": "opaque", "type": _identifier(type(value).__name__), "repr": repr(value)[:200]}

    def save(self, path: str, meta: Mapping[str, Any]) -> None:
        members = {"meta": np.array(json.dumps(meta))}
        members.update({f"a{i}": a for i, a in enumerate(self.arrays)})
        tmp = f"{path}.part"
        with open(tmp, "wb") as fh:
            np.savez(fh, **members)
        os.replace(tmp, path)


def _identifier(text: Any) -> str:
    text = str(text)[:100]
    return text if _IDENTIFIER.match(text) else "object"


# ---------------------------------------------------------------------------------------------
# the kernel's side (runs in the student's kernel: trusted by nobody, it only has to be useful)
# ---------------------------------------------------------------------------------------------


def _kernel_decode(tree: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> Any:
    k = tree["k"]
    if k == "none":
        return None
    if k in ("bool", "int", "str"):
        return tree["v"]
    if k == "float":
        return _FLOAT_WORDS.get(tree["v"], tree["v"]) if isinstance(tree["v"], str) else tree["v"]
    if k == "ndarray":
        return np.array(arrays[f"a{tree['a']}"])
    if k == "npscalar":
        return np.array(arrays[f"a{tree['a']}"])[()]
    if k == "spy":
        spy = np.array(arrays[f"a{tree['a']}"]).view(SpyArray)
        spy._flag = [False]
        return spy
    if k == "rng":
        state = json.loads(tree["state"])
        name = state["bit_generator"]
        if name not in _BIT_GENERATORS:
            raise ValueError(f"unknown bit generator {name!r}")
        bitgen = getattr(np.random, name)()
        bitgen.state = state
        return np.random.Generator(bitgen)
    if k in ("list", "tuple"):
        items = np.array(arrays[f"a{tree['a']}"]).tolist() if "a" in tree else [
            _kernel_decode(t, arrays) for t in tree["items"]]
        return items if k == "list" else tuple(items)
    if k == "dict":
        return {key: _kernel_decode(t, arrays) for key, t in tree["items"]}
    raise ValueError(f"the grader does not send values of kind {k!r}")


class _KernelCall:
    """One call the grader asked for: ``fn(*args, **kwargs)``; the cell sets ``value`` or ``raised``."""

    _UNSET = object()

    def __init__(self, fn: Callable, args: list[Any], kwargs: dict[str, Any]) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.value: Any = self._UNSET
        self.raised: BaseException | None = None


class KernelCalls:
    """Kernel side of a grader cell: iterate to get the calls, set each one's ``value`` or ``raised``.

    The grader's cell is::

        _io = KernelCalls(globals(), request_path, answer_path)
        with _io:
            for _c in _io:
                try:
                    _c.value = _c.fn(*_c.args, **_c.kwargs)
                except Exception as _e:
                    _c.raised = _e

    so the student's function is called from the cell itself, like in the student's own cells.
    On leaving the ``with`` block without an exception the answers are written to ``answer_path``.
    """

    def __init__(self, namespace: Mapping[str, Any], request: str, answer: str) -> None:
        if not isinstance(namespace, Mapping):
            raise TypeError(f"namespace must be a mapping (globals()), got {type(namespace).__name__}")
        request, answer = _kernel_file(request, "request"), _kernel_file(answer, "answer")
        if not os.path.isfile(request):
            raise ValueError(f"request: no file at {request}")
        self._namespace, self._answer = namespace, answer
        with np.load(request, allow_pickle=False) as npz:
            self._arrays = {name: npz[name] for name in npz.files if name != "meta"}
            self._meta = json.loads(str(npz["meta"][()]))
        self._writer = _Writer()
        self._results: list[dict[str, Any]] = []
        self._stack: Any = None

    def __enter__(self) -> "KernelCalls":
        import contextlib

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        self._stack.enter_context(np.errstate(all="ignore"))
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        self._stack.close()
        if kind is None:
            self._writer.save(self._answer, {"version": 2, "results": self._results})

    def __iter__(self) -> Iterator[_KernelCall]:
        for spec in self._meta["calls"]:
            fn = self._namespace.get(spec["fn"])
            args = [_kernel_decode(t, self._arrays) for t in spec["args"]]
            kwargs = {key: _kernel_decode(t, self._arrays) for key, t in spec["kwargs"]}
            before = {key: np.array(a, copy=True) for key, a in _array_args(args, kwargs)
                      if not isinstance(a, SpyArray)}
            c = _KernelCall(fn, args, kwargs)
            if not callable(fn):
                c.raised = NameError(f"{spec['fn']} is not a function")
            else:
                yield c
            self._results.append(self._result(c, before))

    def _result(self, c: _KernelCall, before: Mapping[str, np.ndarray]) -> dict[str, Any]:
        entry: dict[str, Any] = {}
        if c.raised is not None or c.value is _KernelCall._UNSET:
            exc = c.raised if c.raised is not None else RuntimeError("the call was not made")
            if isinstance(exc, KeyboardInterrupt):
                raise exc
            entry["raised"] = {"type": _identifier(type(exc).__name__), "value_error": isinstance(exc, ValueError),
                               "not_implemented": isinstance(exc, NotImplementedError), "message": str(exc)[:_MAX_TEXT]}
        else:
            entry["value"] = self._writer.encode(c.value)
        changed = {}
        for key, arr in _array_args(c.args, c.kwargs):
            old = before.get(key)
            if old is None:
                continue
            try:
                same = arr.shape == old.shape and np.array_equal(arr, old, equal_nan=arr.dtype.kind == "f")
            except Exception:
                same = False
            if not same:
                changed[key] = self._writer.array(np.asarray(arr))
        entry["changed"] = changed
        entry["touched"] = any(isinstance(a, SpyArray) and a.touched for _, a in _array_args(c.args, c.kwargs))
        entry["rng"] = {key: json.dumps(g.bit_generator.state) for key, g in _generator_args(c.args, c.kwargs)}
        return entry


def kernel_needs(namespace: Mapping[str, Any], names: Sequence[str], answer: str) -> None:
    """Kernel side of the first cell of a question: which names exist, which are functions, and the
    values of the others (as data)."""
    if not isinstance(namespace, Mapping):
        raise TypeError(f"namespace must be a mapping (globals()), got {type(namespace).__name__}")
    answer = _kernel_file(answer, "answer")
    names = check_sequence(names, "names", min_len=0)
    if not all(isinstance(n, str) for n in names):
        raise TypeError("names must be a sequence of str")
    writer = _Writer()
    needs, missing = {}, []
    for name in names:
        if name not in namespace:
            missing.append(name)
            continue
        obj = namespace[name]
        if callable(obj) and not isinstance(obj, type) and not isinstance(obj, Mapping):
            needs[name] = {"k": "function"}
        else:
            needs[name] = writer.encode(obj)
    writer.save(answer, {"version": 2, "needs": needs, "missing": missing})


def _kernel_file(name: Any, label: str) -> str:
    """A file the grader exchanges with the kernel: a bare name in the kernel's working folder.

    By design the grader names these files without a folder: the kernel's working folder is the
    submission's work folder in every case (bubblewrap and the container engines mount it and start
    the kernel in it; without a sandbox the kernel is started there), so the kernel needs no path of
    the grader's, and a path in a cell could only point somewhere else.
    """
    name = str(check_path(name, label))
    if name in (".", "..") or os.path.basename(name) != name or (os.altsep and os.altsep in name):
        raise ValueError(f"{label} must be a file name in the working folder, without a folder, got {name!r}")
    return name


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


# ---------------------------------------------------------------------------------------------
# parsing (in the grader): nothing from the file is trusted
# ---------------------------------------------------------------------------------------------


def _read_regular(path: str, limit: int) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise RecordError("no answer file was written") from None
    except OSError as exc:
        raise RecordError(f"the answer file cannot be opened ({exc.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RecordError("the answer is not a regular file")
        if info.st_size > limit:
            raise RecordError(f"the answer file has {info.st_size:,} bytes, more than the limit of {limit:,}")
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise RecordError("the answer file grew beyond the size limit while being read")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _parse_npz(data: bytes) -> tuple[dict[str, Any], dict[int, np.ndarray]]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise RecordError(f"the answer file is not a valid archive ({exc})") from None
    total = 0
    names = set()
    for info in infos:
        if not _MEMBER.match(info.filename) or info.filename in names:
            raise RecordError(f"unexpected member {info.filename[:60]!r} in the answer file")
        if info.compress_type != zipfile.ZIP_STORED:
            raise RecordError("compressed members are not accepted in the answer file")
        names.add(info.filename)
        total += info.file_size
    if total > MAX_RECORD_BYTES or "meta.npy" not in names:
        raise RecordError("the answer file is too large or has no metadata")
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
    except (TypeError, ValueError, RecursionError) as exc:
        raise RecordError(f"the metadata is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(meta, dict) or meta.get("version") != 2:
        raise RecordError("the metadata has the wrong format")
    return meta, arrays


def _load(path: str) -> tuple[dict[str, Any], dict[int, np.ndarray]]:
    return _parse_npz(_read_regular(path, MAX_RECORD_BYTES))


def _expect(cond: bool, what: str) -> None:
    if not cond:
        raise RecordError(what)


def _check_raised(raised: Any) -> None:
    _expect(isinstance(raised, dict) and isinstance(raised.get("type"), str)
            and bool(_IDENTIFIER.match(raised["type"])) and isinstance(raised.get("message"), str)
            and len(raised["message"]) <= _MAX_TEXT and type(raised.get("value_error")) is bool
            and type(raised.get("not_implemented")) is bool, "a recorded exception is malformed")


def _check_value(tree: Any, arrays: Mapping[int, np.ndarray], depth: int = 0) -> None:
    _expect(isinstance(tree, dict) and isinstance(tree.get("k"), str) and depth <= _DEPTH, "a recorded value is malformed")
    k = tree["k"]
    if k in ("ndarray", "npscalar") or (k in ("list", "tuple") and "a" in tree):
        a = tree.get("a")
        _expect(type(a) is int and a in arrays, "a recorded value refers to a missing array")
        if k == "npscalar":
            _expect(arrays[a].ndim == 0, "a recorded scalar is not 0-d")
        if k in ("list", "tuple"):
            _expect(arrays[a].ndim >= 1, "a recorded list is 0-d")
        return
    if k == "none":
        return
    if k == "bool":
        _expect(type(tree.get("v")) is bool, "a recorded bool is malformed")
    elif k == "int":
        _expect(type(tree.get("v")) is int and abs(tree["v"]) < 2**63, "a recorded int is malformed")
    elif k == "float":
        v = tree.get("v")
        _expect(type(v) is float or v in _FLOAT_WORDS, "a recorded float is malformed")
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
    elif k == "object":
        fields = tree.get("fields")
        _expect(isinstance(tree.get("type"), str) and bool(_IDENTIFIER.match(tree["type"]))
                and isinstance(fields, list) and len(fields) <= 100, "a recorded object is malformed")
        for pair in fields:
            _expect(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                    and bool(_IDENTIFIER.match(pair[0])), "a recorded object's field is malformed")
            _check_value(pair[1], arrays, depth + 1)
    elif k == "function":
        _expect(isinstance(tree.get("name"), str) and bool(_IDENTIFIER.match(tree["name"])), "a recorded function is malformed")
    elif k == "opaque":
        _expect(isinstance(tree.get("type"), str) and bool(_IDENTIFIER.match(tree["type"]))
                and isinstance(tree.get("repr"), str) and len(tree["repr"]) <= 200, "a recorded object is malformed")
    else:
        raise RecordError(f"unknown kind of recorded value {k[:20]!r}")


def _named_class(name: str, base: type) -> type:
    return type(name, (base,), {"__module__": "student"})


def _opaque(type_name: str, text: str) -> Any:
    cls = type(type_name, (), {"__repr__": lambda self: text, "__module__": "student"})
    return cls()


def _decode(tree: dict[str, Any], arrays: Mapping[int, np.ndarray], types: Mapping[str, Callable[[dict], Any]]) -> Any:
    """A validated tree as a grader-side value; objects only through the allow-list ``types``."""
    k = tree["k"]
    if k == "none":
        return None
    if k in ("bool", "int", "str"):
        return tree["v"]
    if k == "float":
        v = tree["v"]
        return _FLOAT_WORDS[v] if isinstance(v, str) else v
    if k == "ndarray":
        return arrays[tree["a"]].copy()
    if k == "npscalar":
        return arrays[tree["a"]][()]
    if k in ("list", "tuple"):
        items = arrays[tree["a"]].tolist() if "a" in tree else [_decode(t, arrays, types) for t in tree["items"]]
        return items if k == "list" else tuple(items)
    if k == "dict":
        return {key: _decode(t, arrays, types) for key, t in tree["items"]}
    if k == "object":
        name = tree["type"]
        build = types.get(name)
        if build is None:
            return _opaque(name, f"<a {name}: not a type this assignment accepts>")
        try:
            return build({field: _decode(sub, arrays, types) for field, sub in tree["fields"]})
        except Exception as exc:  # noqa: BLE001 -- the student's data did not make a valid object
            return _opaque(name, f"<a {name} that is not valid: {type(exc).__name__}: {exc}>"[:200])
    if k == "function":
        return _opaque("function", f"<function {tree['name']}>")
    return _opaque(tree["type"], tree["repr"])


def _raise(raised: dict[str, Any]) -> None:
    if raised["not_implemented"]:
        raise NotImplementedError(raised["message"])
    base = ValueError if raised["value_error"] else Exception
    raise _named_class(raised["type"], base)(raised["message"])


# ---------------------------------------------------------------------------------------------
# the grader's side: proxies, the session, the driver
# ---------------------------------------------------------------------------------------------


class _Proxy:
    """Stands for a student function in the grader: each call is answered by the kernel."""

    def __init__(self, name: str, session: "_Remote") -> None:
        self.name, self.session = name, session
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        value, exc = self.session.calls(self.name, [(args, kwargs)], reraise=True)[0]
        return value


class _Remote:
    """A grading session: a check thread asks, the driver (on the event loop) runs kernel cells."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: "asyncio.Queue[Any]", types: Mapping[str, Callable]) -> None:
        self.loop, self.queue, self.types = loop, queue, types
        self.flags: list[str] = []
        self.cells = 0

    def _ask(self, kind: str, payload: Any) -> Any:
        self.cells += 1
        if self.cells > MAX_CELLS_PER_QUESTION:
            raise RuntimeError("a check made more kernel cells than MAX_CELLS_PER_QUESTION")  # a grader bug
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (kind, payload, fut))
        return fut.result()

    def calls(self, name: str, calls: Sequence[tuple[Sequence[Any], Mapping[str, Any]]], *,
              reraise: bool = False) -> list[tuple[Any, BaseException | None]]:
        out: list[tuple[Any, BaseException | None]] = []
        for start in range(0, len(calls), MAX_CALLS_PER_CELL):
            chunk = [(tuple(a), dict(k)) for a, k in calls[start:start + MAX_CALLS_PER_CELL]]
            results = self._ask("calls", (name, chunk))
            for (args, kwargs), entry in zip(chunk, results):
                out.append(self._apply(args, kwargs, entry, reraise))
        return out

    def _apply(self, args: tuple, kwargs: dict, entry: dict[str, Any], reraise: bool) -> tuple[Any, BaseException | None]:
        arrays = dict(_array_args(args, kwargs))
        for key, new in entry["changed"].items():
            with np.errstate(all="ignore"):
                np.copyto(arrays[key], new, casting="unsafe")
        if entry["touched"]:
            for arr in arrays.values():
                if isinstance(arr, SpyArray):
                    arr.mark_touched()
        gens = dict(_generator_args(args, kwargs))
        for key, state in entry["rng"].items():
            gens[key].bit_generator.state = state
        if "raised" in entry:
            try:
                _raise(entry["raised"])
            except NotImplementedError:
                raise
            except Exception as exc:
                if reraise:
                    raise
                return None, exc
        return _decode(entry["value"], entry["arrays"], self.types), None

    def timed(self, name: str, inputs: list[np.ndarray], args: tuple, cap: float) -> tuple[list[tuple[Any, BaseException | None]], float]:
        results: list[tuple[Any, BaseException | None]] = []
        best = math.inf
        for u in inputs:
            seconds, entry = self._ask("timed", (name, u, args, cap))
            best = min(best, seconds)
            if entry is None:  # stopped at the cap
                results.append((None, None))
                return results, max(best, cap)
            value, exc = self._apply((u,), {}, entry, False)
            results.append((value, exc))
            if exc is not None or seconds > cap:
                break
        return results, best


_CALL_CELL = """\
__dptutor_io = __import__('dptutor.assignments.record', fromlist=['KernelCalls']).KernelCalls(globals(), {request!r}, {answer!r})
with __dptutor_io:
    for __dptutor_c in __dptutor_io:
        try:
            __dptutor_c.value = __dptutor_c.fn(*__dptutor_c.args, **__dptutor_c.kwargs)
        except Exception as __dptutor_e:
            __dptutor_c.raised = __dptutor_e
"""
_NEEDS_CELL = "__import__('dptutor.assignments.record', fromlist=['kernel_needs']).kernel_needs(globals(), {names!r}, {answer!r})"

#: ``run_cell(source, time_limit) -> (cell, seconds)``: the runner executes one cell in the kernel.
RunCell = Callable[[str, float], Awaitable[tuple[Any, float]]]


def _cell_failure(cell: Any, limit: float) -> str | None:
    outputs = cell.get("outputs", []) if isinstance(cell, Mapping) else getattr(cell, "outputs", [])
    err = next((o for o in outputs if o.get("output_type") == "error"), None)
    if err is None:
        return None
    if err.get("ename") in ("CellTimeoutError", "KeyboardInterrupt"):
        return "timeout"
    return f"{err.get('ename')}: {str(err.get('evalue'))[:300]}"


def _validate_answer(meta: dict[str, Any], arrays: Mapping[int, np.ndarray],
                     chunk: Sequence[tuple[tuple, dict]]) -> list[dict[str, Any]]:
    results = meta.get("results")
    _expect(isinstance(results, list) and len(results) == len(chunk), "the answer does not have one result per call")
    for entry, (args, kwargs) in zip(results, chunk):
        _expect(isinstance(entry, dict) and type(entry.get("touched")) is bool and isinstance(entry.get("changed"), dict)
                and isinstance(entry.get("rng"), dict), "a recorded call is malformed")
        _expect(("raised" in entry) != ("value" in entry), "a recorded call has neither or both of a value and an exception")
        if "raised" in entry:
            _check_raised(entry["raised"])
        else:
            _check_value(entry["value"], arrays)
        sent = dict(_array_args(args, kwargs))
        changed = {}
        for key, a in entry["changed"].items():
            _expect(isinstance(key, str) and key in sent and not isinstance(sent[key], SpyArray) and type(a) is int
                    and a in arrays and arrays[a].shape == sent[key].shape, "a recorded change of an argument does not fit it")
            changed[key] = arrays[a]
        entry["changed"] = changed
        gens = dict(_generator_args(args, kwargs))
        states = {}
        for key, text in entry["rng"].items():
            _expect(isinstance(key, str) and key in gens and isinstance(text, str) and len(text) < 2000,
                    "a recorded generator state does not fit the arguments")
            try:
                state = json.loads(text)
                probe = type(gens[key].bit_generator)()
                probe.state = state
            except Exception:  # noqa: BLE001 -- any failure means the state is not valid
                raise RecordError("a recorded generator state is not valid") from None
            states[key] = probe.state
        entry["rng"] = states
        entry["arrays"] = arrays
    return results


async def _run_calls(run_cell: RunCell, workdir: str, name: str, chunk: Sequence[tuple[tuple, dict]],
                     timeout: float) -> list[dict[str, Any]]:
    writer = _Writer()
    calls = [{"fn": name, "args": [writer.encode(a) for a in args],
              "kwargs": [[k, writer.encode(v)] for k, v in kwargs.items()]} for args, kwargs in chunk]
    request = os.path.join(workdir, f"in-{secrets.token_hex(16)}.npz")
    answer = os.path.join(workdir, f"out-{secrets.token_hex(16)}.npz")
    writer.save(request, {"version": 2, "calls": calls})
    try:
        cell, _ = await run_cell(_CALL_CELL.format(request=os.path.basename(request), answer=os.path.basename(answer)),
                                 timeout)
        failure = _cell_failure(cell, timeout)
        if failure == "timeout":
            raise RecordError(f"checking it ran longer than {timeout:g} s (an endless loop?)")
        try:
            meta, arrays = _load(answer)
        except RecordError as exc:
            if failure:
                raise RecordError(f"the check cell crashed with {failure}") from None
            raise exc
        return _validate_answer(meta, arrays, chunk)
    finally:
        _unlink(request)
        _unlink(answer)


async def _run_timed(run_cell: RunCell, workdir: str, name: str, u: np.ndarray, args: tuple,
                     cap: float) -> tuple[float, dict[str, Any] | None]:
    writer = _Writer()
    request = os.path.join(workdir, f"in-{secrets.token_hex(16)}.npz")
    answer = os.path.join(workdir, f"out-{secrets.token_hex(16)}.npz")
    writer.save(request, {"version": 2, "calls": [{"fn": name, "args": [writer.encode(u)] + [
        writer.encode(a) for a in args], "kwargs": []}]})
    try:
        cell, seconds = await run_cell(_CALL_CELL.format(request=os.path.basename(request),
                                                         answer=os.path.basename(answer)), cap)
        if _cell_failure(cell, cap) == "timeout":
            return max(seconds, cap), None
        meta, arrays = _load(answer)
        return seconds, _validate_answer(meta, arrays, [((u, *args), {})])[0]
    finally:
        _unlink(request)
        _unlink(answer)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


async def _fetch_needs(run_cell: RunCell, workdir: str, needs: Sequence[str], timeout: float) -> tuple[dict[str, Any], list[str]]:
    answer = os.path.join(workdir, f"needs-{secrets.token_hex(16)}.npz")
    try:
        cell, _ = await run_cell(_NEEDS_CELL.format(names=list(needs), answer=os.path.basename(answer)), timeout)
        failure = _cell_failure(cell, timeout)
        if failure == "timeout":
            raise RecordError(f"the grader's first cell ran longer than {timeout:g} s (is the kernel busy?)")
        try:
            meta, arrays = _load(answer)
        except RecordError:
            if failure:
                raise RecordError(f"the grader's first cell failed ({failure}): was the kernel tampered with?") from None
            raise
    finally:
        _unlink(answer)
    missing = meta.get("missing")
    got = meta.get("needs")
    _expect(isinstance(missing, list) and all(m in needs for m in missing) and isinstance(got, dict)
            and set(got) | set(missing) == set(needs) and not set(got) & set(missing), "the names the kernel reported do not match")
    for tree in got.values():
        if tree != {"k": "function"}:
            _check_value(tree, arrays)
    return {"trees": got, "arrays": arrays}, missing


def _record_types(assignment: str) -> Mapping[str, Callable[[dict], Any]]:
    from dptutor.assignments.registry import record_types

    return record_types(assignment)


class _Deferred:
    """An awaitable that makes its coroutine only when awaited (so that a call never awaited leaves
    no "coroutine was never awaited" warning behind)."""

    def __init__(self, factory: Callable[[], Awaitable[Any]]) -> None:
        self._factory = factory

    def __await__(self) -> Any:
        return self._factory().__await__()


def grade_question(run_cell: RunCell, assignment: str, question: str, workdir: str, *,
                   timeout: float, timed_cap: float = 5.0, hidden: int | None = None,
                   carry_forward: bool = False) -> Awaitable[Any]:
    """Grade one question of a submission whose kernel runs the cells ``run_cell`` is given: await it
    for the Feedback.

    The check runs in a worker thread of this process with hidden parameters drawn here; each call
    of a student function becomes a cell (:data:`_CALL_CELL`) limited to ``timeout`` seconds, each
    timed repeat a cell limited to ``timed_cap``.  The cells name the files they read and write in
    ``workdir`` by their base names only: ``run_cell`` must run them with the kernel's working
    folder being ``workdir`` (as the sandbox mounts it).  An unusable answer scores the question 0 with a
    message.  Exceptions of ``run_cell`` (a dead kernel, a cancellation) propagate, after the check
    thread has been released.  ``hidden`` is the seed of the hidden parameters (an int >= 2; None:
    drawn fresh with :mod:`secrets`); a regrade passes the one saved in the scores CSV to reproduce
    the question exactly.  ``carry_forward`` (error carried forward) also hands the check the
    earlier answers the question names in ``carried``.  The arguments are checked when this is
    called, before anything runs.
    """
    from dptutor.assignments.registry import get_assignment

    a = get_assignment(assignment)
    q = a.question(question)
    if not callable(run_cell):
        raise TypeError(f"run_cell must be callable, got {type(run_cell).__name__}")
    workdir = str(check_path(workdir, "workdir"))
    if not os.path.isdir(workdir):
        raise ValueError(f"workdir: {workdir} is not a folder")
    timeout, timed_cap = check_positive(timeout, "timeout"), check_positive(timed_cap, "timed_cap")
    if hidden is not None:
        hidden = check_int(hidden, "hidden", minimum=2, maximum=2**63 - 1)
    if not is_bool(carry_forward):
        raise TypeError(f"carry_forward must be True or False, got {type(carry_forward).__name__}")
    return _Deferred(lambda: _grade_question(run_cell, a.name, q.name, workdir, timeout, timed_cap, hidden,
                                             bool(carry_forward)))


async def _grade_question(run_cell: RunCell, assignment: str, question: str, workdir: str, timeout: float,
                          timed_cap: float, hidden: int | None = None, carry_forward: bool = False) -> Any:
    from dptutor.assignments.feedback import UNSCORED, Feedback, Finding
    from dptutor.assignments.registry import check, get_assignment

    a = get_assignment(assignment)
    q = a.question(question)
    base = dict(assignment=a.name, question=q.name, title=q.title, points=q.points)

    def failed(text: str) -> Any:
        return Feedback(**base, score=0.0, status="error", findings=(Finding(False, f"not graded: {text}"),))

    carried = q.carried if carry_forward else ()
    try:
        found, missing = await _fetch_needs(run_cell, workdir, q.needs + carried, timeout)
    except RecordError as exc:
        return failed(str(exc))
    carried = tuple(n for n in carried if n not in missing)  # a missing earlier answer: judged as without it
    missing = [n for n in missing if n in q.needs]
    if missing:
        return Feedback(**base, score=0.0, status="missing", findings=(Finding(
            False, f"{', '.join(missing)} is not defined in your notebook: keep the template's names, and "
                   "check that the cell defining it runs without error"),))
    types = _record_types(a.name)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    session = _Remote(loop, queue, types)
    def rebuilt(name: str) -> Any:
        tree = found["trees"][name]
        return _Proxy(name, session) if tree == {"k": "function"} else _decode(tree, found["arrays"], types)

    objects = [rebuilt(name) for name in q.needs]
    earlier = {name: rebuilt(name) for name in carried}
    if hidden is None:
        hidden = secrets.randbits(62) + 2  # fresh for this question, never sent to the kernel
    outcome: dict[str, Any] = {}

    def work() -> None:
        token = _SESSION.set(session)
        try:
            outcome["feedback"] = check(a.name, q.name, *objects, hidden=hidden,
                                        carried=earlier if carry_forward and q.carried else None)
        except _Abort as exc:
            outcome["abort"] = str(exc)
        except BaseException as exc:  # noqa: BLE001 -- reported below
            outcome["crash"] = exc
        finally:
            _SESSION.reset(token)
            loop.call_soon_threadsafe(queue.put_nowait, None)

    thread = threading.Thread(target=work, name=f"dptutor-check-{a.name}-{q.name}", daemon=True)
    thread.start()
    pending: concurrent.futures.Future | None = None
    try:
        while True:
            item = await queue.get()
            if item is None:
                break
            kind, payload, pending = item
            try:
                if kind == "calls":
                    response = await _run_calls(run_cell, workdir, payload[0], payload[1], timeout)
                else:
                    response = await _run_timed(run_cell, workdir, *payload[:3], min(payload[3], timed_cap))
            except RecordError as exc:
                pending.set_exception(_Abort(str(exc)))
            else:
                pending.set_result(response)
            pending = None
    finally:
        if pending is not None and not pending.done():
            pending.set_exception(_Abort("grading stopped"))
    thread.join()
    if "abort" in outcome:
        return failed(outcome["abort"])
    if "crash" in outcome:
        exc = outcome["crash"]
        return failed(f"the grader's check failed ({type(exc).__name__}: {exc}); please report this")
    fb = outcome["feedback"]
    if session.flags:
        fb = Feedback(**base, score=fb.score, status=fb.status, findings=fb.findings + tuple(
            Finding(False, f"for the instructor (not scored): {text}", UNSCORED) for text in session.flags))
    return fb


def grade_in_process(namespace: Mapping[str, Any], assignment: str, *, timeout: float = 60.0,
                     timed_cap: float = 5.0, carry_forward: bool = False) -> dict[str, Any]:
    """Grade every question of ``assignment`` against the objects in ``namespace``, running the
    kernel's cells here (exec in ``namespace``): the same protocol as the runner, without a kernel
    (``carry_forward``: with error carried forward).

    For tests and for trusted code only: the student's code runs in this process.
    """
    from dptutor.assignments.registry import get_assignment

    a = get_assignment(assignment)
    if not isinstance(namespace, dict):
        raise TypeError(f"namespace must be a dict, got {type(namespace).__name__}")
    timeout, timed_cap = check_positive(timeout, "timeout"), check_positive(timed_cap, "timed_cap")
    if not is_bool(carry_forward):
        raise TypeError(f"carry_forward must be True or False, got {type(carry_forward).__name__}")
    if carry_forward and not a.carry_forward:
        raise ValueError(f"carry_forward: assignment {a.name!r} has no error to carry forward: {a.independent}")

    def cell_runner(workdir: str) -> RunCell:
        async def run_cell(source: str, limit: float) -> tuple[dict[str, Any], float]:
            # As a kernel does, the cell runs in the work folder (the grader names its files there).
            cell: dict[str, Any] = {"outputs": []}
            here = os.getcwd()
            t0 = time.perf_counter()
            try:
                os.chdir(workdir)
                exec(compile(source, "<grader cell>", "exec"), namespace)  # noqa: S102 -- trusted by contract
            except Exception as exc:  # noqa: BLE001 -- a cell error, as a kernel reports it
                cell["outputs"].append({"output_type": "error", "ename": type(exc).__name__, "evalue": str(exc)})
            finally:
                os.chdir(here)
            return cell, time.perf_counter() - t0
        return run_cell

    async def main() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="dptutor-grade-") as workdir:
            run_cell = cell_runner(workdir)
            return {q.name: await grade_question(run_cell, a.name, q.name, workdir, timeout=timeout,
                                                 timed_cap=timed_cap, carry_forward=bool(carry_forward))
                    for q in a.questions}

    return asyncio.run(main())
