"""Checks and shape helpers shared by the Laplace and DPText functions (:mod:`dptutor.distributions`,
:mod:`dptutor.dptext`): finite arrays, a positive scale, open intervals, broadcasting that names the
parameter, and numpy scalars for scalar input."""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import check_broadcast, check_float_array

__all__ = [
    "SamplerMethod",
    "NanPolicy",
    "finite",
    "location_scale",
    "open_unit",
    "broadcast_together",
    "broadcast_to_size",
    "standardize",
    "scalar_or_array",
]

SamplerMethod = Literal["inverse_cdf", "fast"]
NanPolicy = Literal["keep", "zero", "discard"]


def finite(value: ArrayLike, name: str) -> NDArray[np.float64]:
    return check_float_array(value, name, finite=True)


def location_scale(mu: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    mu_arr = finite(mu, "mu")
    b_arr = finite(b, "b")
    if b_arr.ndim == 0:
        if not float(b_arr) > 0:
            raise ValueError("b (the Laplace scale) must be > 0")
    elif not (b_arr > 0).all():
        raise ValueError("b (the Laplace scale) must be > 0")
    return mu_arr, b_arr


def open_unit(u: ArrayLike, name: str, low: float, high: float) -> NDArray[np.float64]:
    arr = check_float_array(u, name)
    if not ((arr > low) & (arr < high)).all():
        raise ValueError(f"{name} must lie in the open interval ({low}, {high})")
    return arr


def broadcast_together(**arrays: np.ndarray) -> None:
    """Refuse inputs that do not broadcast together, naming them (instead of numpy's message)."""
    if any(a.ndim for a in arrays.values()):
        check_broadcast(arrays)


def broadcast_to_size(shape: tuple[int, ...], mu: np.ndarray, b: np.ndarray) -> None:
    """Array ``mu``/``b`` must broadcast to the sampler's ``size`` (not the other way round)."""
    arrays = {k: a for k, a in (("mu", mu), ("b", b)) if a.ndim}
    if arrays:
        check_broadcast(arrays, shape)


def standardize(x: np.ndarray, mu: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(x - mu) / b``, also where ``x - mu`` overflows but the quotient does not (x = 1e308, mu = -1e308,
    b = 1e308: z = 2, not inf): there x and mu have opposite signs, and ``x / b - mu / b`` has no
    cancellation. Overflow of the quotient itself to +-inf is the right answer for every use, so not a warning."""
    with np.errstate(over="ignore"):
        z = np.asarray((x - mu) / b)
        return np.asarray(np.where(np.isinf(z), x / b - mu / b, z)) if np.isinf(z).any() else z


def scalar_or_array(arr: np.ndarray):
    """Return a numpy scalar for 0-d results, the array otherwise."""
    return arr[()] if arr.ndim == 0 else arr
