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
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dptutor._validate import check_float_array, check_int, check_real
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


def _k(k: object, maximum: int | None = None) -> int:
    return check_int(k, "k", minimum=1, maximum=maximum)


def _mul(a: float, b: float) -> float:
    """``a * b`` for a, b >= 0, ``inf`` on overflow (no warning), 0 when either is 0."""
    if a == 0.0 or b == 0.0:
        return 0.0
    if max(a, b) > 1.7976931348623157e308:  # e.g. k = 10**400, an int too large for a float: in logs
        return _exp(math.log(a) + math.log(b))
    with np.errstate(over="ignore"):
        return float(np.float64(a) * np.float64(b))


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
    eps = check_real(epsilon, "epsilon", low=0.0)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    k = _k(k)
    return _mul(k, eps), min(1.0, _mul(k, dlt))


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
    eps = check_real(epsilon, "epsilon", low=0.0)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    k = _k(k)
    dp = check_real(delta_prime, "delta_prime", low=0.0, high=1.0, low_open=True, high_open=True)
    two_log = -2.0 * math.log(dp)  # not 2 ln(1 / dp): 1 / 1e-310 overflows
    first = _mul(eps, math.sqrt(two_log * k) if k < 10**300 else _exp(0.5 * (math.log(two_log) + math.log(k))))
    second = _mul(_mul(k, eps), math.expm1(eps) if eps < 709.78 else math.inf)  # e^709.78 is near the largest double
    return first + second, min(1.0, _mul(k, dlt) + dp)


def _log_binomial_pmf_terms(k: int, epsilon: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For the k-fold randomized response at epsilon: ``ln P(i)`` and ``ln Q(i)``, i = 0..k ones."""
    i = np.arange(k + 1, dtype=np.float64)
    log_comb = special.gammaln(k + 1.0) - special.gammaln(i + 1.0) - special.gammaln(k - i + 1.0)
    log_norm = k * np.logaddexp(0.0, epsilon)
    return log_comb + i * epsilon - log_norm, log_comb + (k - i) * epsilon - log_norm


def optimal_composition_delta(epsilon: float, k: int, epsilon_total: float, delta: float = 0.0) -> float:
    """The smallest delta_total such that k releases of any (epsilon, delta)-DP mechanism are
    (epsilon_total, delta_total)-DP (Kairouz, Oh and Viswanath 2015, Theorem 3.3; ``acc-eq-optimal``):

        1 - (1 - delta)^k (1 - sum_i P(i) (1 - e^{epsilon_total} Q(i) / P(i))_+)

    with P, Q the laws of the number of ones in k randomized responses.  Exact up to rounding (each
    term in log space).

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
    eps = check_real(epsilon, "epsilon", low=0.0, high=1e4)
    k = _k(k, MAX_OPTIMAL_K)
    eps_t = check_real(epsilon_total, "epsilon_total", low=0.0, allow_inf=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    if eps_t == math.inf:
        hockey = 0.0
    else:
        log_p, log_q = _log_binomial_pmf_terms(k, eps)
        gap = log_q + eps_t - log_p  # ln(e^{eps_t} Q / P) <= 0 where the term is positive
        keep = gap < 0
        with np.errstate(under="ignore"):
            terms = np.exp(log_p[keep]) * -np.expm1(gap[keep])
        hockey = float(min(1.0, terms.sum()))
    if dlt == 0.0:
        return hockey
    survive = _exp(k * math.log1p(-dlt)) if dlt < 1.0 else 0.0
    return float(min(1.0, max(0.0, 1.0 - survive * (1.0 - hockey))))


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
    eps = check_real(epsilon, "epsilon", low=0.0, high=1e4)
    k = _k(k, MAX_OPTIMAL_K)
    target = check_real(delta_total, "delta_total", low=0.0, high=1.0)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    hi = k * eps
    if optimal_composition_delta(eps, k, hi, dlt) > target:
        return math.inf
    if optimal_composition_delta(eps, k, 0.0, dlt) <= target:
        return 0.0
    return smallest_epsilon(lambda e: optimal_composition_delta(eps, k, e, dlt), target, hi)


def tradeoff_beta(alpha: Any, epsilon: float, delta: float = 0.0) -> NDArray[np.float64]:
    """The smallest type II error beta of any test at type I error ``alpha`` against an
    (epsilon, delta)-DP mechanism (Kairouz, Oh and Viswanath 2015, Theorem 2.1; ``acc-eq-tradeoff``):

        beta >= max(0, 1 - delta - e^epsilon alpha, e^-epsilon (1 - delta - alpha)).

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
    eps = check_real(epsilon, "epsilon", low=0.0, allow_inf=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        first = 1.0 - dlt - np.where(a == 0, 0.0, _exp(eps) * a)
        second = _exp(-eps) * (1.0 - dlt - a)
    return np.maximum(0.0, np.maximum(first, second))


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
    eps = check_real(epsilon, "epsilon", low=0.0)
    k = _k(k)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    if dlt == 0.0:
        return _mul(k, eps), 0.0
    if eps == 0.0 or k == 1:
        return _mul(k, eps), min(1.0, _mul(k, dlt))
    # delta * sum_{i<k} e^{i eps} (>= k delta), rounded UP by more than its rounding error (never too small a delta)
    k_eps = _mul(k, eps)
    up = 1.0 + 2.0**-50 * (4.0 + min(k_eps, 1e4) - math.log(dlt))
    if k_eps < 700.0:  # directly, to a few ulps: (e^{k eps} - 1) / (e^eps - 1)
        return k_eps, min(1.0, _up(_mul(dlt, max(float(k), math.expm1(k_eps) / math.expm1(eps))), up))
    # in log space: ln delta + ln(e^{k eps} - 1) - ln(e^eps - 1)
    log_num = k_eps + math.log(-math.expm1(-k_eps)) if k_eps != math.inf else math.inf
    log_den = eps + math.log(-math.expm1(-eps))
    log_total = math.log(dlt) + log_num - log_den
    return k_eps, min(1.0, _up(_exp(log_total), up)) if log_total < 1.0 else 1.0
