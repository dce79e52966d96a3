"""Checks and shape helpers shared by the Laplace and DPText functions (:mod:`dptutor.distributions`,
:mod:`dptutor.dptext`): finite arrays, a positive scale, open intervals, broadcasting that names the
parameter, numpy scalars for scalar input, an overflow-free ``(x - mu) / b``, and the refusal of scales
with which a draw or a quantile would overflow to +-inf."""

from __future__ import annotations

import math
from fractions import Fraction
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
    "GRID_MAX",
    "FAST_MAX",
    "check_draws",
    "finite_quantiles",
]

SamplerMethod = Literal["inverse_cdf", "fast"]
NanPolicy = Literal["keep", "zero", "discard"]

#: The largest ``|standard draw|`` of every sampler fed ``u = k 2^-53``, ``0 < k < 2^53`` (Eq. 4, Eq. 5, numpy's
#: ``laplace``, DPText's finite draws): the log's argument is at least ``2^-52``, so ``|draw| <= 52 ln 2 ~ 36.04``.
GRID_MAX: float = max(-math.log(2.0**-52), -float(np.log(2.0**-52)), -float(np.log1p(-1.0 + 2.0**-52)))
#: The same for numpy's ziggurat exponential (``method="fast"``): its tail returns ``r - log1p(-u)`` with
#: ``r = 7.69711747013104972`` and ``u <= 1 - 2^-53``, at most ``r + 53 ln 2 ~ 44.434`` (rounded up here).
FAST_MAX: float = (7.69711747013104972 - math.log1p(-1.0 + 2.0**-53)) * (1.0 + 1e-12)


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
    """``(x - mu) / b`` in float64, +-inf where the quotient overflows (the right limit for every use).

    Where ``x - mu`` is finite it is rounded once and one rounded division follows.  Where it overflows
    (x = 1e308, mu = -1e308, b = 1e308: z = 2, not inf) the quotient is computed exactly with fractions (rare:
    ``|x|`` and ``|mu|`` near the float max).  (The former ``x / b - mu / b`` gave inf - inf = NaN for a tiny b.)"""
    with np.errstate(over="ignore"):
        diff = x - mu
        z = np.asarray(diff / b)
    if not np.isinf(diff).any():
        return z
    shape = np.broadcast_shapes(x.shape, mu.shape, b.shape)
    z = np.array(np.broadcast_to(z, shape), dtype=np.float64)
    flat = z.reshape(-1)  # a view: z is a fresh C-contiguous array
    xs, ms, bs, ds = (np.broadcast_to(a, shape).reshape(-1) for a in (x, mu, b, diff))
    for i in np.flatnonzero(np.isinf(ds)):
        exact = (Fraction(float(xs[i])) - Fraction(float(ms[i]))) / Fraction(float(bs[i]))
        try:
            flat[i] = float(exact)
        except OverflowError:
            flat[i] = math.inf if exact > 0 else -math.inf
    return z


def check_draws(mu: np.ndarray, b: np.ndarray, bound: float, mu_name: str = "mu", b_name: str = "b") -> None:
    """Refuse a scale for which a draw ``mu + b * s``, ``|s| <= bound``, can overflow to +-inf.

    Rounding is monotone, so every draw is finite exactly when ``|mu| + b * bound`` computed in float64 is."""
    with np.errstate(over="ignore"):
        ok = np.isfinite(np.abs(mu) + b * bound).all()
    if not ok:
        raise ValueError(f"{b_name} is too large: a draw {mu_name} + {b_name} * s with |s| up to {bound:.6g} overflows "
                         f"float64; {b_name} must keep |{mu_name}| + {b_name} * {bound:.6g} finite (so {b_name} < "
                         f"{np.finfo(np.float64).max / bound:.4g} for {mu_name} = 0)")


def finite_quantiles(res: np.ndarray) -> np.ndarray:
    """``res``, refusing quantiles that overflowed: a finite distribution has no infinite quantile."""
    if not np.isfinite(res).all():
        raise ValueError("b is too large for u and mu: the quantile mu - b ln(...) overflows float64 "
                         "(|mu| + b |ln(2 min(u, 1 - u))| must stay below 1.797e308)")
    return res


def scalar_or_array(arr: np.ndarray):
    """Return a numpy scalar for 0-d results, the array otherwise."""
    return arr[()] if arr.ndim == 0 else arr
