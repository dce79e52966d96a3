"""The call protocol's data format, shared by the student's kernel and the grader: plain data both ways.

A request (the grader's calls) and an answer (what the kernel's calls returned) are each an ``.npz``
file: numeric arrays ``a0.npy``, ``a1.npy``, ... and one JSON string ``meta.npy`` whose values are
trees (``{"k": kind, ...}``) referring to the arrays by index.  :class:`Writer` writes both; the
kernel reads requests with :mod:`dptutor.assignments.kernel`, the grader reads answers with
``dptutor.course.answers``, which trusts nothing in them.  The limits below bound both.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from dptutor.assignments.feedback import SpyArray, student_error

#: The limits are the module's API.  :class:`Writer`, :func:`float_tree`, ``array_extent``, :func:`identifier`,
#: :func:`array_args` and :func:`generator_args` are shared by the protocol's two halves only (their
#: inputs are the protocol's own values, not a user's), hence public names outside ``__all__``.
__all__ = [
    "MAX_RECORD_BYTES",
    "MAX_META_CHARS",
    "MAX_ARRAY_ELEMENTS",
    "MAX_CALLS_PER_CELL",
    "MAX_CELLS_PER_QUESTION",
    "MAX_ANSWER_ARRAYS",
    "MAX_VALUE_ARRAYS",
    "MAX_TEXT",
    "MAX_DEPTH",
]

#: The largest answer file the grader reads (bytes), and the largest array in it (elements).
MAX_RECORD_BYTES = 160 * 2**20
MAX_ARRAY_ELEMENTS = 2**23
#: The most characters of JSON text in a file's metadata. :class:`Writer` never writes more (a value past the room
#: it keeps for values becomes a placeholder, long exception messages are cut, else it refuses before writing) and
#: the grader refuses more before parsing it (4 Mi characters take 16 MiB in ``meta.npy``, parsed at most about
#: 130 MB of the grader's memory; the file's cap alone let 40 Mi characters, over 1 GB, through).
MAX_META_CHARS = 2**22
#: The characters of metadata one file's values may take. The rest of ``MAX_META_CHARS`` is left for what
#: every call records whatever its value (its changed arguments, its generators' states, a cut message).
VALUE_ROOM = 2**21
#: The characters kept of each exception message when an answer's messages are cut to fit ``MAX_META_CHARS``.
CUT_MESSAGE = 40
_SMALL = 200  # a value whose JSON is at most this long is never replaced by a placeholder (characters)
#: Calls one cell may carry, and cells (call batches and timed repeats) one question may make.
MAX_CALLS_PER_CELL = 2000
MAX_CELLS_PER_QUESTION = 64
#: The most arrays one answer file may hold (the grader reads each member on its own clock, not the sandbox's),
#: and the most of them that hold returned values (the rest is room for changed arguments: a few per call).
MAX_ANSWER_ARRAYS = 2**15
MAX_VALUE_ARRAYS = 2**14
#: The longest text a value carries, and the deepest nesting of values.
MAX_TEXT = 4000
MAX_DEPTH = 5
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
FLOAT_WORDS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


def array_extent(shape: tuple[int, ...]) -> int:
    """The elements of an array of ``shape`` with each empty axis counted as one: what its lists, rows and
    loops cost (``tolist()`` of an empty array of shape ``(10**9, 0)`` makes 10**9 lists), bounded by
    ``MAX_ARRAY_ELEMENTS`` like its size."""
    return math.prod(max(1, int(d)) for d in shape)


def float_tree(x: float) -> dict[str, Any]:
    x = float(x)
    if math.isnan(x):
        return {"k": "float", "v": "nan"}
    if math.isinf(x):
        return {"k": "float", "v": "inf" if x > 0 else "-inf"}
    return {"k": "float", "v": x}


class Writer:
    """Collects arrays (``a0.npy``, ``a1.npy``, ...) and encodes values as JSON trees."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.values = 0  # arrays that hold returned values (at most MAX_VALUE_ARRAYS)
        self.room = VALUE_ROOM  # the metadata's characters the values may still take

    def array(self, arr: np.ndarray) -> int:
        self.arrays.append(np.array(np.asarray(arr).view(np.ndarray), order="C", copy=True))
        return len(self.arrays) - 1

    def _value(self, kind: str, arr: np.ndarray) -> dict[str, Any]:
        """``{"k": kind, "a": index}`` for an array of a returned value, or an inert placeholder once the answer holds
        ``MAX_VALUE_ARRAYS`` of them (the grader refuses an answer of too many arrays; so only this value is lost)."""
        if self.values >= MAX_VALUE_ARRAYS:
            return {"k": "opaque", "type": "ndarray", "repr": f"<an array past the {MAX_VALUE_ARRAYS:,} one answer holds>"}
        self.values += 1
        return {"k": kind, "a": self.array(arr)}

    def encode(self, value: Any, depth: int = 0) -> dict[str, Any]:
        """``value`` as a tree; at ``depth`` 0, a placeholder instead if its JSON does not fit in the room left
        (``VALUE_ROOM`` in all: the grader reads at most ``MAX_META_CHARS`` of metadata)."""
        arrays, values = len(self.arrays), self.values
        try:
            tree = self._encode(value, depth)
        except BaseException as exc:  # a student object whose repr or conversion fails (or exits)
            if not student_error(exc):
                raise
            tree = {"k": "opaque", "type": "object", "repr": f"<unreadable: {type(exc).__name__}>"}
        if depth:
            return tree
        size = len(json.dumps(tree))
        if size <= max(self.room, _SMALL):  # a small value is kept even so: its placeholder would take more room
            self.room = max(0, self.room - size)
            return tree
        del self.arrays[arrays:]  # its arrays are not written either
        self.values = values
        return {"k": "opaque", "type": "object",
                "repr": f"<a value of {size:,} characters of data: past the {VALUE_ROOM:,} one answer holds>"}

    def _encode(self, value: Any, depth: int) -> dict[str, Any]:
        if value is None:
            return {"k": "none"}
        if isinstance(value, (bool, np.bool_)):
            return {"k": "bool", "v": bool(value)}
        if isinstance(value, np.ndarray) and array_extent(value.shape) > MAX_ARRAY_ELEMENTS:  # never copied (a view is free)
            return _too_large(value)
        if isinstance(value, SpyArray):
            return self._value("spy", value)
        if isinstance(value, np.random.Generator):
            return {"k": "rng", "state": json.dumps(value.bit_generator.state)}
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            return self._value("ndarray", value)
        if isinstance(value, np.generic) and np.asarray(value).dtype.kind in "biuf":
            return self._value("npscalar", np.asarray(value))
        if isinstance(value, int):
            return {"k": "int", "v": int(value)} if abs(value) < 2**63 else float_tree(float(value))
        if isinstance(value, float):
            return float_tree(value)
        if isinstance(value, str):
            return {"k": "str", "v": str(value)[:MAX_TEXT]}
        if depth < MAX_DEPTH - 1 and dataclasses.is_dataclass(value) and not isinstance(value, type):
            # Data only: the type's bare name and its fields.  The grader rebuilds it only if the
            # assignment allows that name, with its own constructor; otherwise it stays opaque.
            return {"k": "object", "type": str(type(value).__name__)[:100],
                    "fields": [[f.name, self.encode(getattr(value, f.name), depth + 1)]
                               for f in dataclasses.fields(value)[:100]]}
        if depth < MAX_DEPTH - 1 and isinstance(value, (list, tuple)):
            kind = "list" if isinstance(value, list) else "tuple"
            try:
                arr = np.asarray(value)
            except Exception:
                arr = None
            if arr is not None and arr.dtype.kind in "iuf" and arr.ndim >= 1:
                return self._value(kind, arr) if array_extent(arr.shape) <= MAX_ARRAY_ELEMENTS else _too_large(arr)
            return {"k": kind, "items": [self.encode(v, depth + 1) for v in list(value)[:1000]]}
        if depth < MAX_DEPTH - 1 and isinstance(value, Mapping):
            items = list(value.items())[:1000]
            if all(isinstance(k, str) for k, _ in items):
                return {"k": "dict", "items": [[k[:200], self.encode(v, depth + 1)] for k, v in items]}
        if callable(value):
            return {"k": "function", "name": identifier(getattr(value, "__name__", "function"))}
        return {"k": "opaque", "type": identifier(type(value).__name__), "repr": repr(value)[:200]}

    def save(self, path: str, meta: Mapping[str, Any]) -> None:
        """Write ``meta`` and the arrays to ``path`` (through a temporary file); ``ValueError`` before writing if
        the metadata's JSON is over ``MAX_META_CHARS`` characters even with its exception messages cut."""
        members = {"meta": np.array(_meta_text(meta))}
        members.update({f"a{i}": a for i, a in enumerate(self.arrays)})
        tmp = f"{path}.part"
        with open(tmp, "wb") as fh:
            np.savez(fh, **members)
        os.replace(tmp, path)


def _meta_text(meta: Mapping[str, Any]) -> str:
    """The JSON text of ``meta``, at most ``MAX_META_CHARS`` characters: if it is longer, the exception messages of
    its results are cut to ``CUT_MESSAGE`` characters; if it still is, ``ValueError`` (nothing is written)."""
    text = json.dumps(meta)
    results = meta.get("results")
    if len(text) > MAX_META_CHARS and isinstance(results, list):
        cut = [{**r, "raised": {**r["raised"], "message": _cut(r["raised"].get("message"))}}
               if isinstance(r, dict) and isinstance(r.get("raised"), dict) else r for r in results]
        text = json.dumps({**meta, "results": cut})
    if len(text) > MAX_META_CHARS:
        raise ValueError(f"the answer's data takes {len(text):,} characters, more than the {MAX_META_CHARS:,} the "
                         "grader reads: return smaller values")
    return text


def _cut(message: Any) -> Any:
    """An exception message cut to ``CUT_MESSAGE`` characters, saying so."""
    if not isinstance(message, str) or len(message) <= CUT_MESSAGE:
        return message
    return message[:CUT_MESSAGE] + " [cut: the answer's messages were too long]"


def _too_large(arr: np.ndarray) -> dict[str, Any]:
    """What an array of more than ``MAX_ARRAY_ELEMENTS`` elements encodes to: an inert placeholder (the
    grader refuses an answer holding such an array, so the one call fails instead of the whole answer)."""
    text = f"<an array of shape {arr.shape}: more than {MAX_ARRAY_ELEMENTS:,} elements>"
    return {"k": "opaque", "type": "ndarray", "repr": text if len(text) <= 200 else text[:196] + "...>"}


def identifier(text: Any) -> str:
    text = str(text)[:100]
    return text if IDENTIFIER.match(text) else "object"



def array_args(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Iterator[tuple[str, np.ndarray]]:
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            yield str(i), a
    for k, a in kwargs.items():
        if isinstance(a, np.ndarray):
            yield k, a


def generator_args(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Iterator[tuple[str, np.random.Generator]]:
    for i, a in enumerate(args):
        if isinstance(a, np.random.Generator):
            yield str(i), a
    for k, a in kwargs.items():
        if isinstance(a, np.random.Generator):
            yield k, a


# ---------------------------------------------------------------------------------------------
# parsing (in the grader): nothing from the file is trusted
# ---------------------------------------------------------------------------------------------
