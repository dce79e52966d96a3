"""Array checks of ``dptutor._validate`` that need none of its other helpers (re-exported there).

Import them from ``dptutor._validate`` as before (``from dptutor._validate import check_batch``); this
module imports nothing from the package, so ``_validate`` can re-export it without an import cycle.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping

import numpy as np

__all__ = ["MAX_ELEMENTS", "check_broadcast", "check_batch", "immutable_finite_array"]

#: The largest array (in elements) that a function allocates on a caller's behalf: 2**28 float64 is
#: 2 GiB, a tenth of this project's 24 GB machines.  Larger requests get a ValueError naming the
#: parameter instead of a MemoryError (or a swap storm) halfway through.
MAX_ELEMENTS: int = 1 << 28


def check_broadcast(arrays: Mapping[str, np.ndarray], shape: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """The common broadcast shape of ``arrays`` (name -> array); ``ValueError`` naming them if none.

    With ``shape``, every array must broadcast *to* ``shape`` (e.g. a sampler's ``size``).
    """
    shapes = {k: np.shape(a) for k, a in arrays.items()}
    names = ", ".join(shapes)
    try:
        out = np.broadcast_shapes(*shapes.values(), *(() if shape is None else (shape,)))
    except ValueError:
        out = None
    if out is None or (shape is not None and out != shape):
        detail = ", ".join(f"{k} {s}" for k, s in shapes.items())
        target = "each other" if shape is None else f"size {shape}"
        raise ValueError(f"{names} must broadcast to {target}, got shapes {detail}")
    if math.prod(out) > MAX_ELEMENTS:
        raise ValueError(f"{names} broadcast to {math.prod(out):,} elements, more than the limit of {MAX_ELEMENTS:,}")
    return out


def check_batch(value: object, name: str = "x") -> np.ndarray:
    """A mechanism's input: a 2-D real ``numpy.ndarray`` of shape ``(trials, n)`` with finite values.

    Returned as is (no copy).  Finiteness costs one pass: the sum of finite values is finite unless it
    overflows, and only then are the values looked at one by one.
    """
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of shape (trials, n), got {type(value).__name__}")
    if value.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (trials, n), got shape {value.shape}")
    if value.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be real-valued, got dtype {value.dtype}")
    if value.dtype.kind == "f" and value.size and not _known_finite(value):
        with np.errstate(over="ignore", invalid="ignore"):
            total = value.sum()
        if not math.isfinite(total) and not np.isfinite(value).all():
            raise ValueError(f"{name} must be finite (no NaN or inf)")
    return value


#: id -> weak reference of the arrays made by ``immutable_finite_array`` (ndarrays are unhashable).
_IMMUTABLE_FINITE: dict[int, weakref.ref] = {}


def immutable_finite_array(values: np.ndarray) -> np.ndarray:
    """A read-only float64 copy of ``values`` (all finite) whose memory is an immutable ``bytes``.

    Nothing can make it, or a view of it, writeable (``setflags(write=True)`` raises), so it stays
    finite: ``check_batch`` recognises it and its views by identity and skips their finiteness
    pass.  The auditor's datasets are made this way.
    """
    arr = np.asarray(values)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"values must hold real numbers, got dtype {arr.dtype}")
    if arr.size > MAX_ELEMENTS:
        raise ValueError(f"values has {arr.size:,} elements, more than the limit of {MAX_ELEMENTS:,}")
    with np.errstate(over="ignore"):  # float128 or huge ints overflowing to inf is caught below
        arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        raise ValueError("values must be finite")
    owner = np.frombuffer(np.ascontiguousarray(arr).tobytes(), dtype=np.float64)
    _IMMUTABLE_FINITE[id(owner)] = weakref.ref(owner, lambda ref, key=id(owner): _IMMUTABLE_FINITE.pop(key, None))
    return owner.reshape(arr.shape)


def _known_finite(value: np.ndarray) -> bool:
    owner = value if value.base is None else value.base
    ref = _IMMUTABLE_FINITE.get(id(owner))
    return ref is not None and ref() is owner
