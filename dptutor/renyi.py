"""Renyi DP and zero-concentrated DP of the Gaussian mechanism, and their conversion to (epsilon, delta).

Renyi DP (Mironov 2017) of the Gaussian and of the Poisson-subsampled Gaussian (Mironov, Talwar and
Zhang 2019), its conversion to (epsilon, delta)-DP, and zero-concentrated DP (Bun and Steinke 2016).
Labels refer to the chapter "Composition and accounting".  The names are also importable from
:mod:`dptutor.accounting`.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from dptutor._validate import check_choice, check_float_array, check_int, check_positive, check_real, rounding

__all__ = [
    "ORDERS",
    "round_up",
    "round_down",
    "nudge_up",
    "nudge_down",
    "rdp_gaussian",
    "rdp_subsampled_gaussian",
    "rdp_to_dp",
    "zcdp_gaussian",
    "zcdp_to_dp",
]

#: The integer Renyi orders an accountant tries by default (as in dp-accounting, integers only).
ORDERS: tuple[int, ...] = tuple(range(2, 65)) + (80, 96, 128, 160, 192, 256)

#: The largest Renyi order accepted (the subsampled-Gaussian sum has order + 1 terms).
MAX_ORDER: int = 10**4

_U = 2.0**-53  # the unit roundoff: a correctly rounded operation is within a factor 1 +- _U of its exact value


def round_up(exact: Fraction) -> float:
    """The smallest double at least ``exact``: a bound computed in exact rational arithmetic, rounded outward.

    Parameters
    ----------
    exact : fractions.Fraction or int or float
        The exact value (a float or a numpy number is taken at its exact value; it must be finite).

    Returns
    -------
    float
        The smallest double ``>= exact``: ``exact`` itself when it is a double, ``0.0`` only for 0, ``inf``
        above the largest double, and the most negative double below it.

    Raises
    ------
    TypeError
        If ``exact`` is not a rational number or a float (a bool included).
    ValueError
        If ``exact`` is a NaN or an infinite float.

    Examples
    --------
    >>> from fractions import Fraction
    >>> round_up(Fraction(1, 3))  # the nearest double, 0.3333333333333333, is below one third
    0.33333333333333337
    >>> round_up(Fraction(1, 4)), round_up(0)
    (0.25, 0.0)
    >>> round_up(Fraction(10**400))
    inf
    """
    return rounding.round_up(exact)


def round_down(exact: Fraction) -> float:
    """The largest double at most ``exact``: ``round_up``'s mirror, for bounds that must not be too high.

    Parameters
    ----------
    exact : fractions.Fraction or int or float
        The exact value (a float or a numpy number is taken at its exact value; it must be finite).

    Returns
    -------
    float
        The largest double ``<= exact``: ``exact`` itself when it is a double, ``0.0`` (never ``-0.0``) for
        0, ``-inf`` below the most negative double, and the largest double above it.

    Raises
    ------
    TypeError, ValueError
        As ``round_up``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> round_down(Fraction(2, 3))  # the nearest double, 0.6666666666666666, is below two thirds already
    0.6666666666666666
    >>> round_down(Fraction(1, 3))
    0.3333333333333333
    """
    return rounding.round_down(exact)


_MAX_STEPS = 1 << 16  # the most doubles nudge_up and nudge_down move a value by


def nudge_up(x: ArrayLike, steps: int = 2) -> float | NDArray[np.float64]:
    """``x`` moved ``steps`` doubles towards ``+inf``: above the exact value of a computation that returned ``x``.

    Two steps (the default) bound the exact value of a libm function (``log``, ``exp``, ``log1p``, ``expm1``:
    within one unit in the last place) that returned ``x``; one step bounds a correctly rounded operation's.

    Parameters
    ----------
    x : float or array_like
        A real number or an array of them (``inf`` allowed, NaN refused).
    steps : int, optional
        How many doubles to move, 0 to 65536 (default 2).

    Returns
    -------
    float or numpy.ndarray
        A Python float for a scalar ``x`` (a 0-d array included), else a new float64 array of the same
        shape.  ``inf`` stays ``inf``, the largest double becomes ``inf``, ``-inf`` becomes the most
        negative double, and ``0.0`` and ``-0.0`` become the smallest positive (subnormal) double.

    Raises
    ------
    TypeError, ValueError
        If ``x`` is not real, holds a NaN or too many elements, or ``steps`` is not an integer in range
        (the message names the parameter).

    Examples
    --------
    >>> nudge_up(1.0) - 1.0 == 2 * 2.0**-52
    True
    >>> nudge_up(0.0, 1)
    5e-324
    >>> nudge_up([0.0, 1.0, float("inf")], 1).tolist()
    [5e-324, 1.0000000000000002, inf]
    """
    return _nudge(x, steps, math.inf)


def nudge_down(x: ArrayLike, steps: int = 2) -> float | NDArray[np.float64]:
    """``x`` moved ``steps`` doubles towards ``-inf``: a lower bound, as ``nudge_up`` gives an upper one.

    Parameters
    ----------
    x : float or array_like
        A real number or an array of them (``-inf`` allowed, NaN refused).
    steps : int, optional
        How many doubles to move, 0 to 65536 (default 2).

    Returns
    -------
    float or numpy.ndarray
        A Python float for a scalar ``x`` (a 0-d array included), else a new float64 array of the same
        shape.  ``-inf`` stays ``-inf``, ``inf`` becomes the largest double, and ``0.0`` becomes the
        negative subnormal ``-5e-324``.

    Raises
    ------
    TypeError, ValueError
        As ``nudge_up``.

    Examples
    --------
    >>> 1.0 - nudge_down(1.0) == 2 * 2.0**-53
    True
    >>> nudge_down(5e-324, 1), nudge_down(float("inf"), 1)
    (0.0, 1.7976931348623157e+308)
    """
    return _nudge(x, steps, -math.inf)


def _nudge(x: ArrayLike, steps: int, direction: float) -> float | NDArray[np.float64]:
    """``x`` moved ``steps`` doubles towards ``direction`` (``+-inf``), checked: see ``nudge_up``."""
    if type(steps) is not int or not 0 <= steps <= _MAX_STEPS:
        steps = check_int(steps, "steps", minimum=0, maximum=_MAX_STEPS)
    if isinstance(x, float) and x == x:  # the common case first (a NaN is not equal to itself)
        value = float(x)
    elif isinstance(x, numbers.Real):  # int, Fraction, numpy scalars (bools refused)
        value = check_real(x, "x", allow_inf=True)
    else:
        arr = check_float_array(x, "x")
        if arr.ndim == 0:
            value = float(arr)
        else:
            out = arr.copy()  # a new array even for 0 steps
            with np.errstate(over="ignore", under="ignore"):  # the largest double to inf, a subnormal: as intended
                for _ in range(steps):
                    out = np.nextafter(out, direction)
            return out
    for _ in range(steps):
        value = math.nextafter(value, direction)
    return value


def _gaussian_rdp_up(order: float, sigma: float, sensitivity: float) -> float:
    """``order sensitivity^2 / (2 sigma^2)`` in exact rational arithmetic, rounded up: a finite sigma never gives 0."""
    return round_up(Fraction(order) * Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2))


def rdp_gaussian(order: float, sigma: float, sensitivity: float = 1.0) -> float:
    """The Renyi divergence of order ``order`` between ``N(0, sigma^2)`` and ``N(Delta_2, sigma^2)``:
    ``order Delta_2^2 / (2 sigma^2)`` (Mironov 2017, Proposition 7; ``acc-eq-rdp-gaussian``).

    Parameters
    ----------
    order : float
        ``> 1``.
    sigma : float
        The noise's standard deviation, ``> 0``.
    sensitivity : float, optional
        The l2 sensitivity ``Delta_2 > 0`` (default 1).

    Returns
    -------
    float
        The RDP at ``order``, rounded up: the smallest double at least the exact value (so never 0 for a
        finite ``sigma``: the smallest positive double when the exact value is below it), ``inf`` above the
        largest double.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).

    Examples
    --------
    >>> rdp_gaussian(2.0, 1.0)
    1.0
    """
    a = check_real(order, "order", low=1.0, low_open=True)
    s = check_positive(sigma, "sigma")
    d = check_positive(sensitivity, "sensitivity")
    return _gaussian_rdp_up(a, s, d)  # rounding to nearest was an ulp low about half the time, and 0 at sigma 1e200


def rdp_subsampled_gaussian(order: int, sigma: float, sampling_probability: float) -> float:
    """RDP of the Poisson-subsampled Gaussian mechanism at an integer ``order`` >= 2 (Mironov, Talwar
    and Zhang 2019, Section 3.3; ``acc-eq-subsampled``), for a query of l2 sensitivity 1 and noise ``N(0, sigma^2)``:

        (1 / (order - 1)) ln sum_{j=0}^{order} C(order, j) (1 - q)^{order - j} q^j exp((j^2 - j) / (2 sigma^2)),

    the divergence ``D_order((1 - q) N(0, sigma^2) + q N(1, sigma^2) || N(0, sigma^2))``, summed in log space.

    Parameters
    ----------
    order : int
        2 to 10^4.
    sigma : float
        The noise's standard deviation, ``> 0``.
    sampling_probability : float
        ``q`` in (0, 1].

    Returns
    -------
    float
        The RDP at ``order``, rounded up by a bound on its rounding error (``ln Gamma`` and the log-space sum):
        never below the exact value, never 0 (the smallest positive double when the exact value is below it),
        and above it by up to about 1e-12 relative at orders up to 256 and 1e-10 at order 10^4.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).
    """
    a = check_int(order, "order", minimum=2, maximum=MAX_ORDER)
    s = check_positive(sigma, "sigma")
    q = check_real(sampling_probability, "sampling_probability", low=0.0, high=1.0, low_open=True)
    if q == 1.0:
        return rdp_gaussian(a, s)
    # The binomial weights sum to 1, so the sum is 1 + S with S = sum_{j >= 2} C(order, j) (1 - q)^{order - j}
    # q^j expm1((j^2 - j) / (2 sigma^2)), all terms positive: ln(1 + S) from ln S has no cancellation
    # (summing the order + 1 terms directly lost most digits when the RDP is tiny, and could round it down).
    terms, errors = _subsampled_log_terms(a, s, q)
    if np.any(np.isnan(terms)) or np.any(terms == np.inf):
        return math.inf
    return _log1p_exp_up(_log_sum_up(terms, errors), a - 1)


def _subsampled_log_terms(a: int, s: float, q: float) -> tuple[np.ndarray, np.ndarray]:
    """The logarithms of the terms of S (see :func:`rdp_subsampled_gaussian`), j = 2..a, and a bound on the
    absolute error of each (scipy's ``gammaln`` is within 2.6 units of roundoff, relative above 1)."""
    j = np.arange(2, a + 1, dtype=np.float64)
    g_a, g_j, g_r = special.gammaln(a + 1.0), special.gammaln(j + 1.0), special.gammaln(a - j + 1.0)
    half = 0.5 * (j * j - j)  # exact
    inv = 1.0 / s
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        x = half * (inv * inv)  # (j^2 - j) / (2 sigma^2) within 4 units of roundoff where it is above 1e-10
        log_x = np.log(half) - 2.0 * math.log(s)  # for a tiny x (it underflowed to 0 from sigma ~1e160: RDP 0)
        small = np.where(x < 1e-10, log_x + 0.5 * x, np.log(np.expm1(np.clip(x, 1e-10, 30.0))))
        log_expm1 = np.where(x > 30.0, x + np.log1p(-np.exp(-x)), small)  # ln(e^x - 1) <= ln x + x / 2 + x^2 / 24
        lin_a, lin_j = (a - j) * math.log1p(-q), j * math.log(q)
        terms = g_a - g_j - g_r + lin_a + lin_j + log_expm1
        parts = abs(g_a) + np.abs(g_j) + np.abs(g_r) + np.abs(lin_a) + np.abs(lin_j) + np.abs(log_expm1)
        tiny_error = np.where(x < 1e-10, x * x + 8.0 * _U * (np.log(half) + 2.0 * abs(math.log(s))), 0.0)
        errors = _U * (8.0 * parts + 8.0 * (1.0 + x) + 24.0) + tiny_error
    return terms, errors


def _log_sum_up(terms: np.ndarray, errors: np.ndarray) -> float:
    """An upper bound on ``ln sum_j e^{t_j}`` for true values ``t_j`` within ``errors`` of ``terms``
    (finite, at least one): the log-sum-exp's own rounding included, each term's error weighted by its share."""
    m = float(np.max(terms))
    d = m - terms
    w = np.exp(-d)  # within (2 + d) units of roundoff of e^{t_j - m}
    total = float(np.sum(w))  # numpy's pairwise summation: within (log2(n) + 19) units of roundoff
    with np.errstate(over="ignore"):
        share = float(np.sum(w * np.expm1(np.minimum(errors + _U * (d + 3.0), 700.0)))) / total * 1.01  # w = 0 past 700
    log_total = math.log(total)
    log_s = m + log_total
    slack = share + _U * (math.log2(terms.size) + 24.0 + 3.0 * (abs(log_total) + abs(log_s)))
    return nudge_up(log_s + slack, 1)


def _log1p_exp_up(log_s: float, divisor: int) -> float:
    """An upper bound on ``ln(1 + e^log_s) / divisor`` (a positive int): within about 8 units of roundoff above
    it, and never 0 (the smallest positive double when it is below that)."""
    if log_s == math.inf:
        return math.inf
    if log_s < -700.0:  # ln(1 + S) <= S = e^log_s, and exp's argument taken above its rounding error
        z = log_s + nudge_up(-math.log(divisor))
        return nudge_up(math.exp(z + 2.0 * _U * abs(z)))
    if log_s > 0.0:
        inner = log_s + math.log1p(math.exp(-log_s))
    else:
        inner = math.log1p(math.exp(log_s))
    return nudge_up(inner / divisor * (1.0 + 8.0 * _U), 1)


def rdp_to_dp(orders: Any, rdp: Any, delta: float, *, method: str = "improved") -> tuple[float, float]:
    """``(epsilon, order)``: the smallest epsilon over the orders for which RDP gives (epsilon, delta)-DP.

    ``"classic"``: Mironov (2017), Proposition 3, ``epsilon = rdp + ln(1/delta) / (order - 1)`` (``acc-eq-rdp-classic``).
    ``"improved"``: Canonne, Kamath and Steinke (2020), Proposition 12 (also Asoodeh et al. 2021),
    ``epsilon = rdp + ln(1 - 1/order) - (ln delta + ln order) / (order - 1)`` (``acc-eq-rdp-improved``), the conversion
    dp-accounting uses.  Orders at or below 1 are refused.

    Parameters
    ----------
    orders : array_like
        Renyi orders, 1-D, finite, all ``> 1``.
    rdp : array_like
        The RDP at each order, same length (``inf`` allowed).
    delta : float
        In (0, 1).
    method : {"improved", "classic"}, optional
        The conversion (default ``"improved"``).

    Returns
    -------
    tuple of float
        ``(epsilon, order)``: the best epsilon and the order that attains it.  The epsilon is rounded up
        (never below the exact value of the formula at that order, above it by at most a few ulps: the
        logarithms are taken two doubles outward, the rest is exact).

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range, or lengths that differ.
    """
    a = check_float_array(orders, "orders", finite=True, ndim=1, min_size=1)
    r = check_float_array(rdp, "rdp", ndim=1, min_size=1)
    if a.shape != r.shape:
        raise ValueError(f"orders and rdp must have the same length, got {a.size} and {r.size}")
    if np.any(a <= 1.0):
        raise ValueError("orders must all be > 1")
    if np.any(r < 0) or np.any(r == -np.inf):
        raise ValueError("rdp must hold non-negative values (inf allowed)")
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    method = check_choice(method, "method", ("classic", "improved"))
    with np.errstate(over="ignore", invalid="ignore"):
        if method == "classic":
            eps = r - math.log(dlt) / (a - 1.0)  # not ln(1 / delta): 1 / 1e-310 overflows
        else:
            eps = r + np.log1p(-1.0 / a) - (math.log(dlt) + np.log(a)) / (a - 1.0)
    eps = np.where(np.isfinite(r), eps, np.inf)
    best = int(np.argmin(eps))  # the order is chosen in floats; its epsilon is then bounded above rigorously
    if not math.isfinite(eps[best]):
        return math.inf, float(a[best])
    return max(0.0, _conversion_up(float(a[best]), float(r[best]), dlt, method)), float(a[best])


def _conversion_up(order: float, rdp: float, delta: float, method: str) -> float:
    """:func:`rdp_to_dp`'s epsilon at one order, rounded up: each logarithm is moved two doubles outward (libm
    is within an ulp) and the rest is exact rational arithmetic (the float formula was up to a few ulps low)."""
    log_inv = nudge_up(-math.log(delta))  # >= ln(1 / delta)
    a = Fraction(order)
    if method == "classic":
        return round_up(Fraction(rdp) + Fraction(log_inv) / (a - 1))
    inv = 1.0 / order
    if Fraction(inv) > 1 / a:  # 1 / order rounded down: ln(1 - inv) >= ln(1 - 1 / order)
        inv = math.nextafter(inv, 0.0)
    log_keep = nudge_up(math.log1p(-inv))  # >= ln(1 - 1 / order)
    log_order = nudge_down(math.log(order))  # <= ln(order)
    return round_up(Fraction(rdp) + Fraction(log_keep) + (Fraction(log_inv) - Fraction(log_order)) / (a - 1))


def _sqrt_up(square: Fraction, guess: float) -> float:
    """The smallest double whose square is at least ``square > 0``, from a ``guess`` within a few ulps of it."""
    x = guess
    while Fraction(x) ** 2 < square:
        x = math.nextafter(x, math.inf)
    while x > 0.0 and Fraction(math.nextafter(x, 0.0)) ** 2 >= square:
        x = math.nextafter(x, 0.0)
    return x


def zcdp_gaussian(sigma: float, sensitivity: float = 1.0) -> float:
    """The Gaussian mechanism is rho-zCDP with ``rho = Delta_2^2 / (2 sigma^2)`` (Bun and Steinke 2016,
    Proposition 1.6): its RDP curve divided by the order.

    Parameters
    ----------
    sigma : float
        The noise's standard deviation, ``> 0``.
    sensitivity : float, optional
        The l2 sensitivity, ``> 0`` (default 1).

    Returns
    -------
    float
        ``rho``, rounded up: the smallest double at least the exact value (never 0 for a finite ``sigma``).

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range.
    """
    s = check_positive(sigma, "sigma")
    d = check_positive(sensitivity, "sensitivity")
    return _gaussian_rdp_up(1.0, s, d)  # not rdp_gaussian(2) / 2: halving a subnormal rounds (5e-324 / 2 is 0)


def zcdp_to_dp(rho: float, delta: float) -> float:
    """rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP (Bun and Steinke 2016, Proposition 1.3;
    ``acc-eq-zcdp``).

    Parameters
    ----------
    rho : float
        ``>= 0`` (``inf`` allowed).
    delta : float
        In (0, 1).

    Returns
    -------
    float
        ``epsilon`` (``inf`` for an infinite ``rho``), rounded up: never below the exact value, above it by at
        most a few ulps (the logarithm is taken two doubles up, the rest is exact).

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range.
    """
    r = check_real(rho, "rho", low=0.0, allow_inf=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0, low_open=True, high_open=True)
    if r == math.inf:
        return math.inf
    if r == 0.0:
        return 0.0
    log_inv = nudge_up(-math.log(dlt))  # >= ln(1 / delta) (libm is within an ulp); not 1 / delta: 1 / 1e-310 overflows
    # rounded to nearest, the sum was an ulp or two low, and r ln(1 / delta) lost its digits for a subnormal r
    root = _sqrt_up(Fraction(r) * Fraction(log_inv), math.sqrt(r) * math.sqrt(log_inv))
    return round_up(Fraction(r) + 2 * Fraction(root))
