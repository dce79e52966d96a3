"""Input checks and limits shared by the figure modules of :mod:`dptutor.plotting`."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dptutor._validate import check_float_array, check_interval

__all__ = ["MAX_BINS", "MAX_PANELS", "MAX_DRAWN", "MIN_LOG_DRAWN"]

#: Most histogram bins, grid points, panels or dimensions a figure draws (more is a mistake).
MAX_BINS: int = 100_000
MAX_PANELS: int = 64
#: Largest magnitude of a location or scale drawn: the grids around them must stay finite.
MAX_DRAWN: float = 1e100
#: Smallest positive value drawn on a log axis: below it the decades to tick (and matplotlib's arithmetic
#: on them) overflow.
MIN_LOG_DRAWN: float = 1.0 / MAX_DRAWN


def samples_array(values: object, name: str, *, some_finite: bool = True) -> np.ndarray:
    """Samples to histogram, flattened; NaN and inf allowed (they are counted, not drawn), but with
    ``some_finite`` at least one finite sample (else there is nothing to draw)."""
    arr = check_float_array(values, name, allow_nan=True, min_size=1).reshape(-1)
    if some_finite and not np.isfinite(arr).any():
        raise ValueError(f"{name} must hold at least one finite value to draw, got only NaN or infinities")
    return arr


def losses_array(values: object, name: str) -> np.ndarray:
    """A 1-D array of losses: each >= 0 or +inf, never NaN."""
    return check_float_array(values, name, min_size=1, low=0.0).reshape(-1)


def curve_values(fn: Callable, grid: np.ndarray, name: str) -> np.ndarray:
    """``fn(grid)`` as float64 values, one per grid point (a user function's output, checked by name): finite
    or NaN (not drawn), not all NaN, and drawable; an exception ``fn`` raises becomes one naming it."""
    values = check_float_array(user_call(fn, grid, name), f"{name}(x)", allow_nan=True, finite=True)
    if values.shape != grid.shape:
        raise ValueError(f"{name} must return one value per point of its input, got shape {values.shape}")
    if np.isnan(values).all():
        raise ValueError(f"{name} must return at least one value that is not NaN")
    return drawn_values(values, f"{name}(x)")


def user_call(fn: Callable, arg: object, name: str) -> object:
    """``fn(arg)``; any exception becomes a ``TypeError`` (if it was one) or a ``ValueError`` naming ``name``."""
    try:
        return fn(arg)
    except Exception as exc:
        kind = TypeError if isinstance(exc, TypeError) else ValueError
        raise kind(f"{name} raised {type(exc).__name__}: {exc}") from exc


def positive_array(
    values: object, name: str, like: tuple[str, int] | None = None, *, positive: bool = False, log: bool = False
) -> np.ndarray:
    """A 1-D array of finite values that can be drawn (see :func:`drawn_values`), each > 0 if ``positive``, and
    with one value per entry of the parameter ``like = (its name, its length)`` if given."""
    arr = check_float_array(values, name, ndim=1, min_size=1, finite=True)
    if like is not None and arr.size != like[1]:
        raise ValueError(f"{name} must have one value per entry of {like[0]} ({like[1]}), got {arr.size}")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be positive")
    return drawn_values(arr, name, log=log)


def drawn_values(arr: np.ndarray, name: str, *, log: bool = False) -> np.ndarray:
    """``arr`` (float64) if its finite values can be drawn: at most ``MAX_DRAWN`` in magnitude and, on a
    log axis (``log``), positive ones at least ``MIN_LOG_DRAWN``; else a ValueError naming ``name``.
    NaN, infinite and (on a log axis) non-positive values are left to the caller, which draws or drops them."""
    finite = arr[np.isfinite(arr)]
    if finite.size and float(np.abs(finite).max()) > MAX_DRAWN:
        raise ValueError(f"{name} must lie within [-{MAX_DRAWN:g}, {MAX_DRAWN:g}] to be drawn, got {float(np.abs(finite).max())!r}")
    tiny = finite[(finite > 0) & (finite < MIN_LOG_DRAWN)] if log else finite[:0]
    if tiny.size:
        raise ValueError(f"{name} must be 0 or at least {MIN_LOG_DRAWN:g} to be drawn on a log axis, got {float(tiny.min())!r}")
    return arr


def drawn_interval(value: object, name: str, *, low: float = -math.inf, low_open: bool = False) -> tuple[float, float]:
    """``(low, high)`` checked (:func:`dptutor._validate.check_interval`) and drawable: within
    ``+-MAX_DRAWN`` and at least ``1e-9`` of their magnitude apart (else the axis ticks overflow or vanish)."""
    lo, hi = check_interval(value, name, low=low, low_open=low_open)
    if max(abs(lo), abs(hi)) > MAX_DRAWN or hi - lo < 1e-9 * max(1.0, abs(lo), abs(hi)):
        raise ValueError(
            f"{name} must lie within [-{MAX_DRAWN:g}, {MAX_DRAWN:g}] and span at least 1e-9 of their magnitude, "
            f"got {(lo, hi)}"
        )
    return lo, hi
