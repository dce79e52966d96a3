"""The kernel's half of the call protocol: what runs in the student's kernel when the grader asks.

The grader (``dptutor.course.remote``) runs two kinds of cells in the kernel, each naming the
files it exchanges by a bare name in the kernel's working folder: :func:`kernel_needs` reports which
names a question needs exist and the values of those that are not functions, and
:class:`KernelCalls` calls a student function on the inputs of a request file and writes what it
returned, raised or modified.  Nothing here is trusted by anybody: the student can patch it at
will, and the grader parses every answer strictly (``dptutor.course.answers``).  It only has to
be useful to an honest kernel.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dptutor._validate import check_path, check_sequence
from dptutor.assignments.encoding import (BIT_GENERATORS, FLOAT_WORDS, MAX_TEXT, Writer, array_args, generator_args,
                                          identifier)
from dptutor.assignments.feedback import SpyArray, exception_text

__all__ = ["KernelCalls", "kernel_needs"]


def _kernel_decode(tree: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> Any:
    k = tree["k"]
    if k == "none":
        return None
    if k in ("bool", "int", "str"):
        return tree["v"]
    if k == "float":
        return FLOAT_WORDS.get(tree["v"], tree["v"]) if isinstance(tree["v"], str) else tree["v"]
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
        if name not in BIT_GENERATORS:
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

    The grader's cell (``dptutor.course.remote.CALL_CELL``) iterates over this object and sets
    each call's ``value`` to what its ``fn(*args, **kwargs)`` returned, or ``raised`` to what it raised,
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
        self._writer = Writer()
        self._results: list[dict[str, Any]] = []
        self._stack: Any = None

    def __enter__(self) -> "KernelCalls":
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
            before = {key: np.array(a, copy=True) for key, a in array_args(args, kwargs)
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
            entry["raised"] = {"type": identifier(type(exc).__name__), "value_error": isinstance(exc, ValueError),
                               "not_implemented": isinstance(exc, NotImplementedError),
                               "message": exception_text(exc)[:MAX_TEXT]}
        else:
            entry["value"] = self._writer.encode(c.value)
        changed = {}
        for key, arr in array_args(c.args, c.kwargs):
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
        entry["touched"] = any(isinstance(a, SpyArray) and a.touched for _, a in array_args(c.args, c.kwargs))
        entry["rng"] = {key: json.dumps(g.bit_generator.state) for key, g in generator_args(c.args, c.kwargs)}
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
    writer = Writer()
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

