"""Composition and privacy accounting: what k releases cost together.

Basic, advanced (Dwork, Rothblum and Vadhan 2010) and optimal (Kairouz, Oh and Viswanath 2015)
composition of (epsilon, delta)-DP mechanisms; the trade-off curve of (epsilon, delta)-DP; Renyi DP
(Mironov 2017) of the Gaussian and of the Poisson-subsampled Gaussian (Mironov, Talwar and Zhang
2019), its conversion to (epsilon, delta); zero-concentrated DP (Bun and Steinke 2016); privacy-loss
distributions (PLD) discretised pessimistically and composed by FFT; group privacy.  Labels
(``acc-eq-...``, ``thm-...``) refer to the chapter "Composition and accounting" (book/accounting.md).

Every function works in log space where a naive formula would overflow, and returns ``math.inf``
(never NaN) when a bound is infinite.  Renyi and zero-concentrated DP live in :mod:`dptutor.renyi`,
privacy-loss distributions in :mod:`dptutor.pld`; their names are importable from here too.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dptutor._validate import check_float_array, check_int, check_real, checked_toward
from dptutor._validate.rounding import add_rounded, mul_rounded
from dptutor.pld import (  # MAX_PLD_K and MAX_ORDER: still importable from here
    MAX_PLD_K,  # noqa: F401 (re-exported: importable from dptutor.accounting as before the split)
    PrivacyLossDistribution,
    gaussian_composition_epsilon,
    pld_gaussian,
    smallest_epsilon,
)
from dptutor.renyi import (
    MAX_ORDER,  # noqa: F401 (re-exported: importable from dptutor.accounting as before the split)
    ORDERS,
    rdp_gaussian,
    rdp_subsampled_gaussian,
    rdp_to_dp,
    zcdp_gaussian,
    zcdp_to_dp,
)

__all__ = [
    "basic_composition",
    "advanced_composition",
    "optimal_composition_delta",
    "optimal_composition_epsilon",
    "tradeoff_beta",
    "group_privacy",
    "rdp_gaussian",
    "rdp_subsampled_gaussian",
    "rdp_to_dp",
    "zcdp_gaussian",
    "zcdp_to_dp",
    "PrivacyLossDistribution",
    "pld_gaussian",
    "gaussian_composition_epsilon",
    "ORDERS",
]

#: The most releases :func:`optimal_composition_delta` sums over (its cost is linear in k).
MAX_OPTIMAL_K: int = 10**5

_EPS = 2.0**-52  # one unit in the last place of 1


def _k(k: object, maximum: int | None = None) -> int:
    return check_int(k, "k", minimum=1, maximum=maximum)


def _out(x: float, ulps: float) -> float:
    """``x >= 0`` raised by ``ulps`` units of 2^-52 relative and one step more (an upper bound on a value
    computed to within that relative error); 0 stays 0."""
    if x == 0.0 or x == math.inf:
        return x
    return math.nextafter(x * (1.0 + ulps * _EPS), math.inf)


def _up(x: float, up: float) -> float:
    """``x * up`` (``up`` > 1 covers x's relative error), two ulps up near the subnormals (where 5e-324 is no relative step)."""
    v = x * up
    return math.nextafter(math.nextafter(v, math.inf), math.inf) if v < 1e-300 else v


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


# ---------------------------------------------------------------------------------------------
# composition theorems for (epsilon, delta)-DP
# ---------------------------------------------------------------------------------------------


def basic_composition(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """``(k epsilon, k delta)``: k releases of an (epsilon, delta)-DP mechanism (sequential composition, the book's
    composition chapter, in its (epsilon, delta) form).

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    delta : float
        In [0, 1].
    k : int
        Number of releases, ``>= 1``.

    Returns
    -------
    tuple of float
        ``(epsilon_total, delta_total)``, ``epsilon_total`` possibly ``inf``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).
    """
    eps = checked_toward(epsilon, "epsilon", check_real, up=True, low=0.0)
    dlt = checked_toward(delta, "delta", check_real, up=True, low=0.0, high=1.0)
    k = _k(k)
    return mul_rounded(k, eps), min(1.0, mul_rounded(k, dlt))


def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float) -> tuple[float, float]:
    """Dwork, Rothblum and Vadhan (2010), Theorem III.3 (``acc-eq-advanced``): k releases of an (epsilon, delta)-DP
    mechanism are ``(epsilon sqrt(2 k ln(1/delta')) + k epsilon (e^epsilon - 1), k delta + delta')``-DP.

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    delta : float
        In [0, 1].
    k : int
        Number of releases, ``>= 1``.
    delta_prime : float
        The extra delta, in (0, 1).

    Returns
    -------
    tuple of float
        ``(epsilon_total, delta_total)``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).
    """
    eps = checked_toward(epsilon, "epsilon", check_real, up=True, low=0.0)
    dlt = checked_toward(delta, "delta", check_real, up=True, low=0.0, high=1.0)
    k = _k(k)
    dp = check_real(delta_prime, "delta_prime", low=0.0, high=1.0, low_open=True, high_open=True)
    two_log = -2.0 * math.log(dp)  # not 2 ln(1 / dp): 1 / 1e-310 overflows
    if k < 10**300:
        root, ulps = math.sqrt(two_log * k), 8.0
    else:  # in logs: the exponent's rounding error is relative to its size
        half_log = 0.5 * (math.log(two_log) + math.log(k))
        root, ulps = _exp(half_log), 8.0 + 2.0 * abs(half_log)
    first = mul_rounded(eps, root)
    second = mul_rounded(mul_rounded(k, eps), math.expm1(eps) if eps < 709.78 else math.inf)  # e^709.78 is near the largest double
    # the log, square root and expm1 are each within an ulp or two: ``ulps`` more covers them (never too small)
    return _out(add_rounded(first, second), ulps), min(1.0, add_rounded(mul_rounded(k, dlt), dp))


def _first_positive_term(k: int, epsilon: float, epsilon_total: float) -> int:
    """The smallest i in [0, k + 1] with ``(2 i - k) epsilon > epsilon_total`` (``k + 1``: none), decided exactly."""
    if epsilon == 0.0 or epsilon_total / epsilon > 2.0 * k + 2.0:  # the ratio may be inf: no term
        return k + 1

    def positive(i: int) -> bool:
        return (2 * i - k) * Fraction(epsilon) > Fraction(epsilon_total)

    i = min(k + 1, max(0, int(0.5 * (k + epsilon_total / epsilon)) + 1))
    while i > 0 and positive(i - 1):
        i -= 1
    while i <= k and not positive(i):
        i += 1
    return i


def _hockey_stick_upper(k: int, epsilon: float, epsilon_total: float) -> float:
    """``sum_i P(i) (1 - e^{epsilon_total - (2 i - k) epsilon})_+`` rounded UP: which terms count is decided
    exactly, each log term is raised by a bound on its rounding error, and 0 only when the sum is exactly 0."""
    start = _first_positive_term(k, epsilon, epsilon_total)
    if start > k:
        return 0.0
    i = np.arange(start, k + 1, dtype=np.float64)
    g_k, g_i, g_rest = special.gammaln(k + 1.0), special.gammaln(i + 1.0), special.gammaln(k - i + 1.0)
    log_norm = k * float(np.logaddexp(0.0, epsilon))
    log_p = g_k - g_i - g_rest + i * epsilon - log_norm  # ln P(i), P the k-fold randomized response's law
    slack = 4.0 * _EPS * (g_k + g_i + g_rest + i * epsilon + log_norm + 1.0)  # its rounding error, at most
    reach = (2.0 * i - k) * epsilon  # > epsilon_total exactly; the gap's rounding error is at most 2^-52 reach
    gap = (reach - epsilon_total) * (1.0 + 2.0 * _EPS) + 2.0 * _EPS * reach + 5e-324
    exact_gap = (2 * start - k) * Fraction(epsilon) - Fraction(epsilon_total)  # the first may be an ulp: exactly
    gap[0] = min(gap[0], math.nextafter(float(exact_gap), math.inf))
    log_factor = np.log(-np.expm1(-gap))  # ln(1 - e^-gap) < 0, with gap > 0 a little above the true one
    log_terms = log_p + slack + log_factor * (1.0 - 4.0 * _EPS) + 2.0 * _EPS
    total = float(special.logsumexp(log_terms))
    total += 4.0 * _EPS * abs(total) + (k + 4.0) * _EPS  # logsumexp's own error (a sum of at most k + 1 terms)
    return min(1.0, math.nextafter(_exp(total), math.inf))


def optimal_composition_delta(epsilon: float, k: int, epsilon_total: float, delta: float = 0.0) -> float:
    """The smallest delta_total such that k releases of any (epsilon, delta)-DP mechanism are
    (epsilon_total, delta_total)-DP (Kairouz, Oh and Viswanath 2015, Theorem 3.3; ``acc-eq-optimal``):

        1 - (1 - delta)^k (1 - sum_i P(i) (1 - e^{epsilon_total} Q(i) / P(i))_+)

    with P, Q the laws of the number of ones in k randomized responses.  Each term is computed in log
    space and the result is rounded UP (outward) by a bound on its rounding error (a few ulps for small k,
    up to about 2e-9 relative at k = 10^5), so it is never below the exact delta_total; it is 0 exactly when
    the exact value is 0 (which terms count is decided in exact rational arithmetic).

    Parameters
    ----------
    epsilon : float
        Per release, 0 to 1e4.
    k : int
        Number of releases, 1 to 10^5.
    epsilon_total : float
        ``>= 0`` (``inf`` allowed).
    delta : float, optional
        Per release, in [0, 1] (default 0).

    Returns
    -------
    float
        ``delta_total`` in [0, 1].

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).
    """
    eps = checked_toward(epsilon, "epsilon", check_real, up=True, low=0.0, high=1e4)
    k = _k(k, MAX_OPTIMAL_K)
    # the target rounded down: the delta at a smaller epsilon_total is the larger (the safe side)
    eps_t = checked_toward(epsilon_total, "epsilon_total", check_real, up=False, low=0.0, allow_inf=True)
    dlt = checked_toward(delta, "delta", check_real, up=True, low=0.0, high=1.0)
    hockey = 0.0 if eps_t == math.inf else _hockey_stick_upper(k, eps, eps_t)
    if dlt == 0.0 or hockey == 1.0:
        return hockey
    if dlt == 1.0:
        return 1.0
    # 1 - (1 - delta)^k (1 - hockey) = -expm1(k ln(1 - delta) + ln(1 - hockey)), free of cancellation (the form
    # 1 - survive (1 - hockey) gave 0 for delta = 1e-20); the exponent is pushed down by more than its error
    exponent = (k * math.log1p(-dlt) + math.log1p(-hockey)) * (1.0 + 4.0 * _EPS)
    return min(1.0, math.nextafter(-math.expm1(exponent), math.inf))


def optimal_composition_epsilon(epsilon: float, k: int, delta_total: float, delta: float = 0.0) -> float:
    """The smallest epsilon_total with :func:`optimal_composition_delta` <= ``delta_total``, by
    bisection on [0, k epsilon] to 1e-12 relative (``math.inf`` if even ``k epsilon`` does not do).

    Parameters
    ----------
    epsilon : float
        Per release, 0 to 1e4.
    k : int
        Number of releases, 1 to 10^5.
    delta_total : float
        The target, in [0, 1].
    delta : float, optional
        Per release, in [0, 1] (default 0).

    Returns
    -------
    float
        ``epsilon_total``, possibly ``inf``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).
    """
    eps = checked_toward(epsilon, "epsilon", check_real, up=True, low=0.0, high=1e4)
    k = _k(k, MAX_OPTIMAL_K)
    # the target rounded down: the epsilon at a smaller delta_total is the larger (the safe side)
    target = checked_toward(delta_total, "delta_total", check_real, up=False, low=0.0, high=1.0)
    dlt = checked_toward(delta, "delta", check_real, up=True, low=0.0, high=1.0)
    hi = mul_rounded(k, eps)  # rounded up: at hi >= k epsilon the hockey stick is exactly 0
    if optimal_composition_delta(eps, k, hi, dlt) > target:
        return math.inf
    if optimal_composition_delta(eps, k, 0.0, dlt) <= target:
        return 0.0
    return smallest_epsilon(lambda e: optimal_composition_delta(eps, k, e, dlt), target, hi)


def tradeoff_beta(alpha: Any, epsilon: float, delta: float = 0.0) -> NDArray[np.float64]:
    """The smallest type II error beta of any test at type I error ``alpha`` against an
    (epsilon, delta)-DP mechanism (Kairouz, Oh and Viswanath 2015, Theorem 2.1; ``acc-eq-tradeoff``):

        beta >= max(0, 1 - delta - e^epsilon alpha, e^-epsilon (1 - delta - alpha)).

    Every step is rounded DOWN (outward for a lower bound on the attacker's error), so the result is never
    above the exact value; it is exact where no rounding happens (epsilon = 0, or alpha = 0).

    Parameters
    ----------
    alpha : array_like
        Type I errors, finite.
    epsilon : float
        ``>= 0`` (``inf`` allowed).
    delta : float, optional
        In [0, 1] (default 0).

    Returns
    -------
    numpy.ndarray of float64
        The smallest beta, shaped like ``alpha``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).
    """
    a = check_float_array(alpha, "alpha", finite=True)
    if np.any((a < 0) | (a > 1)):
        raise ValueError("alpha must lie in [0, 1]")
    eps = checked_toward(epsilon, "epsilon", check_real, up=True, low=0.0, allow_inf=True)
    dlt = checked_toward(delta, "delta", check_real, up=True, low=0.0, high=1.0)
    keep = 1.0 - dlt  # 1 - delta rounded DOWN: every step below errs low (a beta too small is the safe side)
    if Fraction(keep) > 1 - Fraction(dlt):
        keep = math.nextafter(keep, -math.inf)
    grow, shrink = _exp(eps), _exp(-eps)  # e^eps up, e^-eps down (exp is within an ulp); exact at eps = 0
    if eps > 0.0:
        grow, shrink = math.nextafter(grow, math.inf), math.nextafter(shrink, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.where(a == 0, 0.0, grow * a)
        if grow != 1.0:  # e^eps alpha rounded up (0 stays 0: alpha = 0 is exact)
            scaled = np.where(scaled > 0.0, np.nextafter(scaled, math.inf), scaled)
        first = _minus_down(np.full_like(a, keep), scaled)
        inner = np.maximum(0.0, _minus_down(np.full_like(a, keep), a))
        second = shrink * inner if shrink == 1.0 else np.nextafter(shrink * inner, 0.0)
    return np.maximum(0.0, np.maximum(first, second))


def _minus_down(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64]:
    """``x - y`` rounded DOWN (Knuth's two-sum gives the rounding error's sign exactly; ``inf - inf`` is ``-inf``)."""
    with np.errstate(over="ignore", invalid="ignore"):
        s = x - y
        back = s - x
        err = (x - (s - back)) + (-y - back)  # the exact x - y is s + err (for finite s)
    low = np.where(np.isfinite(s) & (err < 0), np.nextafter(s, -np.inf), s)
    return np.where(np.isnan(low), -np.inf, low)


def group_privacy(epsilon: float, k: int, delta: float = 0.0) -> tuple[float, float]:
    """Datasets that differ in k records: ``(k epsilon, delta (e^{k epsilon} - 1) / (e^epsilon - 1))``,
    the second at most ``k e^{(k-1) epsilon} delta`` (the group privacy theorem of the book's selection chapter).

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    k : int
        Number of records that differ, ``>= 1``.
    delta : float, optional
        In [0, 1] (default 0).

    Returns
    -------
    tuple of float
        ``(epsilon_group, delta_group)``.

    Raises
    ------
    TypeError, ValueError
        For an argument of the wrong type or out of range (the message names it).

    Examples
    --------
    >>> group_privacy(0.5, 3)
    (1.5, 0.0)
    """
    eps = checked_toward(epsilon, "epsilon", check_real, up=True, low=0.0)
    k = _k(k)
    dlt = checked_toward(delta, "delta", check_real, up=True, low=0.0, high=1.0)
    if dlt == 0.0:
        return mul_rounded(k, eps), 0.0
    if eps == 0.0 or k == 1:
        return mul_rounded(k, eps), min(1.0, mul_rounded(k, dlt))
    # delta * sum_{i<k} e^{i eps} (>= k delta), rounded UP by more than its rounding error (never too small a delta)
    k_eps = mul_rounded(k, eps)
    up = 1.0 + 2.0**-50 * (4.0 + min(k_eps, 1e4) - math.log(dlt))
    ratio = math.expm1(k_eps) / math.expm1(eps) if k_eps < 700.0 else math.inf  # no overflow: inf at worst
    if ratio < 1e300:  # directly, to a few ulps: (e^{k eps} - 1) / (e^eps - 1) (k may be an int beyond the floats)
        return k_eps, min(1.0, _up(max(mul_rounded(dlt, k), mul_rounded(dlt, ratio)), up))
    # in log space: ln delta + ln(e^{k eps} - 1) - ln(e^eps - 1)
    log_num = k_eps + math.log(-math.expm1(-k_eps)) if k_eps != math.inf else math.inf
    log_den = eps + math.log(-math.expm1(-eps))
    log_total = math.log(dlt) + log_num - log_den
    return k_eps, min(1.0, _up(_exp(log_total), up)) if log_total < 1.0 else 1.0
