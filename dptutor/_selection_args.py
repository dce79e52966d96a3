"""The selection mechanisms' shared argument checks (:mod:`dptutor.selection`): answers, noise scales, draw shapes.

Private to the package by convention: its names are public to the modules of :mod:`dptutor.selection`'s
samplers and exact laws, which both check their arguments the same way.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_float_array, check_size
from dptutor.renyi import round_up

__all__ = ["MAX_CANDIDATES", "NOISES", "answer_array", "noise_scale", "draw_shape"]

#: The most candidates or queries a call accepts (the exact integrals cost one quadrature each).
MAX_CANDIDATES: int = 10**6

#: The noises of report-noisy-max.
NOISES = ("laplace", "exponential")


def answer_array(values: object, name: str) -> NDArray[np.float64]:
    """``values`` as a finite 1-d float array of 1 to ``MAX_CANDIDATES`` entries, else an error naming ``name``."""
    arr = check_float_array(values, name, finite=True, ndim=1, min_size=1)
    if arr.size > MAX_CANDIDATES:
        raise ValueError(f"{name} has {arr.size:,} entries, more than the limit of {MAX_CANDIDATES:,}")
    return arr


def draw_shape(size: object, n: int) -> tuple[int, ...]:
    """``()`` for ``size=None``, else ``(size,)``; ``size * n`` elements at most MAX_ELEMENTS."""
    if size is None:
        return ()
    shape = check_size(size, "size")
    if len(shape) != 1:
        raise ValueError(f"size must be None or an int, got {size!r}")
    check_size((shape[0], n), "size")  # the noise array has size * n entries
    return shape


def noise_scale(factor: float, sensitivity: float, epsilon: float, name: str = "epsilon") -> float:
    """``factor * sensitivity / epsilon`` rounded up (never less noise than the exact quotient asks for),
    finite and positive, else a ValueError naming ``name``."""
    scale = round_up(Fraction(factor) * Fraction(sensitivity) / Fraction(epsilon))
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"{name} and sensitivity give a noise scale {scale!r} that is not a positive float")
    return scale
