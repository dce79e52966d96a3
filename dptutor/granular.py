"""Google's granular Laplace: round to a multiple of ``r = 2^k``, add ``r`` times discrete Laplace noise.

The noise is exact (:func:`dptutor.exact.sample_discrete_laplace`); rounding to a power of two is exact in
floating point, so the released values, their privacy loss (:func:`granular_loss`) and the set of
outputs (:func:`granular_reachable`) are known exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import MAX_ELEMENTS, check_float_array, check_int, check_positive, check_real
from dptutor._lazy_bits import MAX_SCALE_NUMERATOR

__all__ = [
    "GranularParameters",
    "granular_parameters",
    "granular_round",
    "granular_loss",
    "granular_reachable",
]


@dataclass(frozen=True)
class GranularParameters:
    """Parameters of the granular Laplace mechanism for the identity on [0, 1]^n (l1 sensitivity n).

    ``r`` is the granularity, the smallest power of two ``>= (n / epsilon) 2^-bits``; ``t`` the integer
    scale of the discrete Laplace noise, ``t >= (n / r + n) / epsilon``.  Rounding moves each
    coordinate by at most ``r / 2``, so neighbours' rounded values differ by at most ``n + n r`` in
    l1, that is ``n / r + n`` steps of ``r``: Google's accounting (sensitivity ``Delta + r``), with one
    ``r`` per coordinate.

    Parameters
    ----------
    epsilon : float
        The privacy budget, ``> 0``.
    n : int
        The dimension, ``>= 1``.
    r : float
        The granularity, a power of two.
    t : int
        The noise's integer scale, ``1 <= t < 2^53``.

    Raises
    ------
    TypeError, ValueError
        For a field out of range (the message names it).
    """

    epsilon: float
    n: int
    r: float
    t: int

    def __post_init__(self) -> None:
        check_positive(self.epsilon, "epsilon")
        check_int(self.n, "n", minimum=1)
        r = check_positive(self.r, "r")
        if math.frexp(r)[0] != 0.5:
            raise ValueError(f"r must be a power of two, got {r!r}")
        check_int(self.t, "t", minimum=1, maximum=MAX_SCALE_NUMERATOR - 1)


def granular_parameters(epsilon: float, n: int = 1, bits: int = 40) -> GranularParameters:
    """The granular Laplace mechanism's parameters (``bits = 40`` as in Google's libraries).

    Parameters
    ----------
    epsilon : float
        The privacy budget, ``> 0``.
    n : int, optional
        The dimension, ``>= 1`` (default 1).
    bits : int, optional
        Bits of resolution below ``n / epsilon``, 0 to 48 (default 40).

    Returns
    -------
    GranularParameters
        ``r`` and ``t`` for these settings.

    Raises
    ------
    TypeError, ValueError
        For a bad ``epsilon``, ``n`` or ``bits``, or a scale that overflows.

    Examples
    --------
    >>> granular_parameters(1.0, bits=10).r
    0.0009765625
    """
    eps = check_positive(epsilon, "epsilon")
    n = check_int(n, "n", minimum=1, maximum=MAX_ELEMENTS)
    bits = check_int(bits, "bits", minimum=0, maximum=48)
    lam = n / eps
    if not (math.isfinite(lam) and lam < 2.0**1000):
        raise ValueError(f"epsilon is too small for n = {n}: the scale n / epsilon overflows")
    r = _power_of_two_at_least(Fraction(n) / Fraction(eps) / 2**bits)  # in floats, n / eps 2^-bits can round below
    steps = Fraction(n) / Fraction(r) + n  # l1 distance of the rounded neighbours, in units of r
    t = math.ceil(steps / Fraction(eps))  # Fraction(eps) is the exact value of the float epsilon
    if t >= MAX_SCALE_NUMERATOR:
        hint = "a larger epsilon or fewer bits" if bits else "a larger epsilon"  # bits = 0 cannot be lowered
        raise ValueError(f"epsilon = {eps:g} with bits = {bits} makes the noise scale t reach 2**53; use {hint}")
    return GranularParameters(epsilon=eps, n=n, r=r, t=t)


def _power_of_two_at_least(exact: Fraction) -> float:
    """The smallest power of two ``>= exact > 0``, for ``exact`` between ``2^-1074`` and ``2^1000``."""
    k = exact.numerator.bit_length() - exact.denominator.bit_length()  # 2^(k-1) < exact < 2^(k+1)
    if Fraction(2) ** k < exact:
        k += 1
    return math.ldexp(1.0, max(k, -1074))


def _check_granular(params: object) -> GranularParameters:
    if not isinstance(params, GranularParameters):
        raise TypeError(f"params must be GranularParameters (from granular_parameters), got {type(params).__name__}")
    return params


def granular_round(x: ArrayLike, params: GranularParameters) -> NDArray[np.int64]:
    """``x / r`` rounded to the nearest integer (ties to even); exact, since ``r`` is a power of two.

    Parameters
    ----------
    x : array_like
        Values, finite.
    params : GranularParameters
        The mechanism's parameters.

    Returns
    -------
    numpy.ndarray of int64
        The multiples of ``r``, as integers ``round(x / r)``.

    Raises
    ------
    TypeError, ValueError
        For a bad ``x`` or ``params``, or ``|x| / r`` of ``2^62`` or more.
    """
    params = _check_granular(params)
    return _granular_steps(check_float_array(x, "x", finite=True), params, "x")


def _granular_steps(x: NDArray[np.float64], params: GranularParameters, name: str) -> NDArray[np.int64]:
    with np.errstate(over="ignore"):  # a quotient overflowing to inf is refused just below
        steps = np.rint(x / params.r)
    if not (np.abs(steps) < 2.0**62).all():
        raise ValueError(f"{name} is too large for this granularity ({name} / r must stay below 2**62)")
    return steps.astype(np.int64)


def granular_loss(params: GranularParameters, x0: float = 0.0, x1: float = 1.0) -> Fraction:
    """Exact privacy loss between the datasets ``(x0, ..., x0)`` and ``(x1, ..., x1)`` in [0, 1]^n.

    The output is ``r (m + Z)`` with ``m = round(x / r)`` and ``Z`` discrete Laplace of scale ``t``, so
    ``ln P(r j | x0) / P(r j | x1) = (|j - m1| - |j - m0|) / t`` per coordinate, at most
    ``|m0 - m1| / t`` (attained for ``j`` beyond both): the loss is ``n |m0 - m1| / t``, a Fraction.

    Parameters
    ----------
    params : GranularParameters
        The mechanism's parameters.
    x0, x1 : float, optional
        The two datasets' common coordinate (defaults 0 and 1).

    Returns
    -------
    fractions.Fraction
        The exact loss.

    Raises
    ------
    TypeError, ValueError
        For a bad ``params``, ``x0`` or ``x1``.
    """
    params = _check_granular(params)
    m0 = int(_granular_steps(np.array(check_real(x0, "x0")), params, "x0"))
    m1 = int(_granular_steps(np.array(check_real(x1, "x1")), params, "x1"))
    return Fraction(params.n * abs(m0 - m1), params.t)


def granular_reachable(y: ArrayLike, params: GranularParameters) -> NDArray[np.bool_]:
    """Exactly: can a coordinate of the granular Laplace mechanism output ``y``, from any input?

    The noise ``Z`` puts positive mass on every integer, so the outputs are all multiples ``r j``
    with ``|j| < 2^53`` (those convert to doubles exactly), whatever the input.

    Parameters
    ----------
    y : array_like
        Candidate outputs.
    params : GranularParameters
        The mechanism's parameters.

    Returns
    -------
    numpy.ndarray of bool
        True where ``y`` can be output.

    Raises
    ------
    TypeError, ValueError
        For a bad ``y`` or ``params``.
    """
    y_arr = check_float_array(y, "y")
    params = _check_granular(params)
    with np.errstate(over="ignore", under="ignore"):  # |y| / r beyond the float range: inf, refused below
        steps = y_arr / params.r  # exact (r is a power of two) unless it underflows: to 0 for a y of 5e-324, r >= 2
    return np.isfinite(steps) & (np.abs(steps) < 2.0**53) & (steps == np.round(steps)) & ((steps != 0) | (y_arr == 0))
