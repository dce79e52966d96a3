"""The grader's reading of a kernel's answer file: nothing from the file is trusted.

The answer is read as a regular file under a size limit, parsed as an archive of stored ``.npy``
members of numeric dtypes, every field of its JSON metadata type-checked (:func:`check_value`) and
compared with the request (:func:`validate_answer`: one result per call, changed arguments of the
argument's shape, valid generator states).  Values are rebuilt (:func:`decode`) only as plain data
or through the allow-list of constructors the assignment declares; the grader never imports a
module or resolves a name taken from the kernel's data.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dptutor.assignments.encoding import (FLOAT_WORDS, IDENTIFIER, MAX_ANSWER_ARRAYS, MAX_ARRAY_ELEMENTS, MAX_DEPTH,
                                          MAX_META_CHARS, MAX_RECORD_BYTES, MAX_TEXT, array_args, array_extent,
                                          generator_args)
from dptutor.assignments.feedback import SpyArray
from dptutor.course.intake import read_named

#: :func:`load_answer`, :func:`check_value`, :func:`decode`, :func:`raise_recorded`, :func:`validate_answer` and
#: :func:`expect` serve :mod:`dptutor.course.remote` only (their inputs are the protocol's own data), hence
#: outside ``__all__``.
__all__ = ["RecordError"]

_MEMBER = re.compile(r"^(meta|a[0-9]{1,6})\.npy$")
#: The most bytes of ``meta.npy`` read, enough for ``MAX_META_CHARS`` characters of 4 bytes (a ``U`` string) and a version 1
#: ``.npy`` header (at most 10 + 65,535 bytes); checked before the member is read.
_MAX_META_MEMBER = 4 * MAX_META_CHARS + 10 + 65_535


class RecordError(ValueError):
    """The data a kernel wrote cannot be parsed or does not answer the grader's request."""


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
        if info.filename == "meta.npy" and info.file_size > _MAX_META_MEMBER:  # not read: parsed, up to 30 bytes a character
            raise RecordError(f"the answer file's metadata takes {info.file_size:,} bytes, more than {_MAX_META_MEMBER:,} "
                              f"({MAX_META_CHARS:,} characters)")
        names.add(info.filename)
        total += info.file_size
    if total > MAX_RECORD_BYTES or "meta.npy" not in names:
        raise RecordError("the answer file is too large or has no metadata")
    if len(infos) > MAX_ANSWER_ARRAYS + 1:  # each member costs the grader's own time to read (tiny ones too)
        raise RecordError(f"the answer file holds {len(infos) - 1:,} arrays, more than {MAX_ANSWER_ARRAYS:,}")
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
            if len(meta_text) > MAX_META_CHARS:  # bounded by the member's size already; checked on the text itself too
                raise RecordError(f"the answer file's metadata has {len(meta_text):,} characters, more than "
                                  f"{MAX_META_CHARS:,}")
            continue
        if arr.dtype.kind not in "biuf" or array_extent(arr.shape) > MAX_ARRAY_ELEMENTS:
            raise RecordError(f"member {info.filename} has dtype {arr.dtype} or shape {str(arr.shape)[:100]}, over "
                              f"{MAX_ARRAY_ELEMENTS:,} elements")
        arrays[int(info.filename[1:-4])] = arr
    try:
        meta = json.loads(meta_text)
    except (TypeError, ValueError, RecursionError) as exc:
        raise RecordError(f"the metadata is not valid JSON ({type(exc).__name__})") from None
    if not isinstance(meta, dict) or meta.get("version") != 2:
        raise RecordError("the metadata has the wrong format")
    return meta, arrays


def load_answer(path: str) -> tuple[dict[str, Any], dict[int, np.ndarray]]:
    """The metadata and arrays of the answer file ``path`` (never through a link; RecordError for any fault)."""
    try:
        data = read_named(path, MAX_RECORD_BYTES, role="the answer file", missing_ok=True,
                          shown=os.path.basename(path))  # the student reads it: not the grader's folder
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    if data is None:
        raise RecordError("no answer file was written")
    return _parse_npz(data)


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise RecordError(what)


def check_raised(raised: Any) -> None:
    expect(isinstance(raised, dict) and isinstance(raised.get("type"), str)
            and bool(IDENTIFIER.match(raised["type"])) and isinstance(raised.get("message"), str)
            and len(raised["message"]) <= MAX_TEXT and type(raised.get("value_error")) is bool
            and type(raised.get("not_implemented")) is bool, "a recorded exception is malformed")


def check_value(tree: Any, arrays: Mapping[int, np.ndarray], depth: int = 0, seen: set[int] | None = None) -> None:
    """Check a recorded value; ``seen`` collects the arrays the answer refers to, each at most once (the
    kernel's writer stores every value anew, and an array named many times would be copied many times)."""
    seen = set() if seen is None else seen
    expect(isinstance(tree, dict) and isinstance(tree.get("k"), str) and depth <= MAX_DEPTH, "a recorded value is malformed")
    k = tree["k"]
    if k in ("ndarray", "npscalar") or (k in ("list", "tuple") and "a" in tree):
        a = tree.get("a")
        expect(type(a) is int and a in arrays, "a recorded value refers to a missing array")
        expect(a not in seen, "a recorded value refers to an array that another value uses")
        seen.add(a)
        if k == "npscalar":
            expect(arrays[a].ndim == 0, "a recorded scalar is not 0-d")
        if k in ("list", "tuple"):
            expect(arrays[a].ndim >= 1, "a recorded list is 0-d")
        return
    if k == "none":
        return
    if k == "bool":
        expect(type(tree.get("v")) is bool, "a recorded bool is malformed")
    elif k == "int":
        expect(type(tree.get("v")) is int and abs(tree["v"]) < 2**63, "a recorded int is malformed")
    elif k == "float":
        v = tree.get("v")
        expect(type(v) is float or (type(v) is str and v in FLOAT_WORDS), "a recorded float is malformed")
    elif k == "str":
        expect(isinstance(tree.get("v"), str) and len(tree["v"]) <= MAX_TEXT, "a recorded string is malformed")
    elif k in ("list", "tuple"):
        items = tree.get("items")
        expect(isinstance(items, list) and len(items) <= 1000, "a recorded list is malformed")
        for item in items:
            check_value(item, arrays, depth + 1, seen)
    elif k == "dict":
        items = tree.get("items")
        expect(isinstance(items, list) and len(items) <= 1000, "a recorded dict is malformed")
        for pair in items:
            expect(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and len(pair[0]) <= 200,
                    "a recorded dict key is malformed")
            check_value(pair[1], arrays, depth + 1, seen)
    elif k == "object":
        fields = tree.get("fields")
        expect(isinstance(tree.get("type"), str) and bool(IDENTIFIER.match(tree["type"]))
                and isinstance(fields, list) and len(fields) <= 100, "a recorded object is malformed")
        for pair in fields:
            expect(isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                    and bool(IDENTIFIER.match(pair[0])), "a recorded object's field is malformed")
            check_value(pair[1], arrays, depth + 1, seen)
    elif k == "function":
        expect(isinstance(tree.get("name"), str) and bool(IDENTIFIER.match(tree["name"])), "a recorded function is malformed")
    elif k == "opaque":
        expect(isinstance(tree.get("type"), str) and bool(IDENTIFIER.match(tree["type"]))
                and isinstance(tree.get("repr"), str) and len(tree["repr"]) <= 200, "a recorded object is malformed")
    else:
        raise RecordError(f"unknown kind of recorded value {k[:20]!r}")


def _named_class(name: str, base: type) -> type:
    return type(name, (base,), {"__module__": "student"})


def _opaque(type_name: str, text: str) -> Any:
    cls = type(type_name, (), {"__repr__": lambda self: text, "__module__": "student"})
    return cls()


def decode(tree: dict[str, Any], arrays: Mapping[int, np.ndarray], types: Mapping[str, Callable[[dict], Any]]) -> Any:
    """A validated tree as a grader-side value; objects only through the allow-list ``types``."""
    k = tree["k"]
    if k == "none":
        return None
    if k in ("bool", "int", "str"):
        return tree["v"]
    if k == "float":
        v = tree["v"]
        return FLOAT_WORDS[v] if isinstance(v, str) else v
    if k == "ndarray":
        return arrays[tree["a"]].copy()
    if k == "npscalar":
        return arrays[tree["a"]][()]
    if k in ("list", "tuple"):
        items = arrays[tree["a"]].tolist() if "a" in tree else [decode(t, arrays, types) for t in tree["items"]]
        return items if k == "list" else tuple(items)
    if k == "dict":
        return {key: decode(t, arrays, types) for key, t in tree["items"]}
    if k == "object":
        name = tree["type"]
        build = types.get(name)
        if build is None:
            return _opaque(name, f"<a {name}: not a type this assignment accepts>")
        try:
            return build({field: decode(sub, arrays, types) for field, sub in tree["fields"]})
        except Exception as exc:  # noqa: BLE001 -- the student's data did not make a valid object
            return _opaque(name, f"<a {name} that is not valid: {type(exc).__name__}: {exc}>"[:200])
    if k == "function":
        return _opaque("function", f"<function {tree['name']}>")
    return _opaque(tree["type"], tree["repr"])


def raise_recorded(raised: dict[str, Any]) -> None:
    if raised["not_implemented"]:
        raise NotImplementedError(raised["message"])
    base = ValueError if raised["value_error"] else Exception
    raise _named_class(raised["type"], base)(raised["message"])


# ---------------------------------------------------------------------------------------------
# the grader's side: proxies, the session, the driver
# ---------------------------------------------------------------------------------------------


def validate_answer(meta: dict[str, Any], arrays: Mapping[int, np.ndarray],
                     chunk: Sequence[tuple[tuple, dict]]) -> list[dict[str, Any]]:
    results = meta.get("results")
    expect(isinstance(results, list) and len(results) == len(chunk), "the answer does not have one result per call")
    seen: set[int] = set()  # each array of the answer is one value or one change, never several
    for entry, (args, kwargs) in zip(results, chunk):
        expect(isinstance(entry, dict) and type(entry.get("touched")) is bool and isinstance(entry.get("changed"), dict)
                and isinstance(entry.get("rng"), dict), "a recorded call is malformed")
        expect(("raised" in entry) != ("value" in entry), "a recorded call has neither or both of a value and an exception")
        if "raised" in entry:
            check_raised(entry["raised"])
        else:
            check_value(entry["value"], arrays, seen=seen)
        sent = dict(array_args(args, kwargs))
        changed = {}
        for key, a in entry["changed"].items():
            expect(isinstance(key, str) and key in sent and not isinstance(sent[key], SpyArray) and type(a) is int
                    and a in arrays and a not in seen and arrays[a].shape == sent[key].shape,
                    "a recorded change of an argument does not fit it")
            seen.add(a)
            changed[key] = arrays[a]
        entry["changed"] = changed
        gens = dict(generator_args(args, kwargs))
        states = {}
        for key, text in entry["rng"].items():
            expect(isinstance(key, str) and key in gens and isinstance(text, str) and len(text) < 2000,
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
