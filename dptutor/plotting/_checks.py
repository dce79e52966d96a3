"""Input checks and limits shared by the figure modules of :mod:`dptutor.plotting`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dptutor._validate import (
    check_float_array,
)

__all__ = ["MAX_BINS", "MAX_PANELS", "MAX_DRAWN"]

#: Most histogram bins, grid points, panels or dimensions a figure draws (more is a mistake).
MAX_BINS: int = 100_000
MAX_PANELS: int = 64
#: Largest magnitude of a location or scale drawn: the grids around them must stay finite.
MAX_DRAWN: float = 1e100


def samples_array(values: object, name: str) -> np.ndarray:
    """Samples to histogram, flattened; NaN and inf allowed (they are counted, not drawn)."""
    return check_float_array(values, name, allow_nan=True, min_size=1).reshape(-1)


def losses_array(values: object, name: str) -> np.ndarray:
    """A 1-D array of losses: each >= 0 or +inf, never NaN."""
    return check_float_array(values, name, min_size=1, low=0.0).reshape(-1)


def curve_values(fn: Callable, grid: np.ndarray, name: str) -> np.ndarray:
    """``fn(grid)`` as float64 values, one per grid point (a user function's output, checked by name)."""
    values = check_float_array(fn(grid), f"{name}(x)", allow_nan=True)
    if values.shape != grid.shape:
        raise ValueError(f"{name} must return one value per point of its input, got shape {values.shape}")
    return values


def positive_array(values: object, name: str, size: int | None = None, *, positive: bool = False) -> np.ndarray:
    from dptutor._validate import check_float_array

    arr = check_float_array(values, name, ndim=1, min_size=1, allow_nan=False)
    if size is not None and arr.size != size:
        raise ValueError(f"{name} must have {size} values, got {arr.size}")
    if positive and not np.all(arr > 0):
        raise ValueError(f"{name} must be positive")
    return arr

