"""What no audit can reach: a Neyman-Pearson limit on lower confidence bounds for epsilon.

A lower bound ``L`` on epsilon, valid at confidence ``1 - gamma``, satisfies ``P_Q[L > eps(Q)] <= gamma`` for
*every* pair of output laws ``Q`` of the two datasets.  Take a pair ``Q`` whose epsilon is below ``b``: then
``{L >= b}`` is a test of ``Q`` against the true laws ``P`` at level ``gamma``, so by the Neyman-Pearson lemma
``P_P[L >= b]`` is at most the power of the most powerful such test.  The closer ``Q`` is to ``P``, the
smaller that power; :func:`nearest_pair` builds a close one, and :func:`reach_probability` evaluates the
power, which bounds the chance that *any* valid audit, however it chooses its events, reaches ``b``.

The outputs must be discrete (or reduced to a discrete sufficient summary), with every outcome possible under
both datasets, so that the pair's epsilon is finite.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_float_array, check_int, check_positive, check_probability, renamed_parameters
from dptutor.selection import max_log_ratio

__all__ = ["nearest_pair", "reach_probability", "reach_count_probability"]

#: The most reach probabilities :func:`reach_count_probability` combines (10^4 take ~0.2 s, 10^5 ~10 s).
MAX_LIMITS = 10_000


def _laws(p: object, q: object) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two probability vectors over the same outcomes, every entry positive, each summing to 1."""
    arrays = []
    for name, value in (("p", p), ("q", q)):
        a = check_float_array(value, name, finite=True, ndim=1, min_size=2)
        if np.any(a <= 0):
            raise ValueError(f"{name} must be positive for every outcome (the pair's epsilon must be finite)")
        if np.any(a > 1):  # before the sum, which overflowed (with a warning) for entries near 1e308
            raise ValueError(f"{name} must hold probabilities in (0, 1], got a largest entry of {float(a.max())!r}")
        total = float(a.sum())
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"{name} must sum to 1, got {total!r}")
        arrays.append(a / total)
    if arrays[0].shape != arrays[1].shape:
        raise ValueError(f"p and q must list the same outcomes, got {arrays[0].size} and {arrays[1].size} entries")
    return arrays[0], arrays[1]


def _onto(a: NDArray[np.float64], b: NDArray[np.float64], k: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The least chi-squared move of outcomes with ``a > k b`` onto the ratio k: ``(k v, v)`` with
    ``v = a b (1 + k) / (a + k^2 b)``, written with ``w = k b / a`` in (0, 1) so that both stay positive (the
    form ``a - (a - k b) a / (a + k^2 b)`` rounded to a negative ``u`` where ``k b`` is far below ``a``)."""
    w = k * b / a
    kw = k * w
    share = np.where(kw <= 1.0, w * (1.0 + k) / (1.0 + kw), 1.0 - (1.0 - w) / (1.0 + kw))  # u / a, in (w, 1)
    return a * share, b * (1.0 + k) / (1.0 + kw)


def _project(a: NDArray[np.float64], b: NDArray[np.float64], level: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Move every outcome whose ratio exceeds ``e^level`` onto that ratio by the least chi-squared change
    (``a - u = D a / (a + e^{2 level} b)``, ``v - b = D e^level b / (a + e^{2 level} b)`` with
    ``D = a - e^level b``, and the mirror image), then renormalise both laws.  A level above 709 projects
    onto e^709 (still within the level; ``math.exp`` overflows beyond)."""
    k = math.exp(min(level, 709.0))
    u, v = a.copy(), b.copy()
    over = a > k * b  # too likely under the first law
    u[over], v[over] = _onto(a[over], b[over], k)
    under = b > k * a  # too likely under the second
    v[under], u[under] = _onto(b[under], a[under], k)
    return u / u.sum(), v / v.sum()


def nearest_pair(p: object, q: object, epsilon: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A pair of laws ``(u, v)`` with ``max_log_ratio(u, v) <= epsilon`` (``dptutor.selection.max_log_ratio``),
    close to ``(p, q)`` in chi-squared.

    Each outcome whose ratio exceeds ``e^level`` is moved onto it by the smallest chi-squared change, both
    laws are renormalised, and ``level`` is the largest (found by bisection, 60 steps) for which the
    renormalised pair is within ``epsilon``.  If ``(p, q)`` already is, it is returned unchanged.

    Parameters
    ----------
    p, q : array_like
        The output laws of the two datasets over the same discrete outcomes (positive, each summing to 1).
    epsilon : float
        The target epsilon, positive.

    Returns
    -------
    tuple of numpy.ndarray
        ``(u, v)``, two probability vectors over the same outcomes.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    a, b = _laws(p, q)
    eps = check_positive(epsilon, "epsilon")
    if max_log_ratio(a, b) <= eps:
        return a, b
    limit = eps * (1.0 - 1e-12)  # room for the rounding of a later renormalisation
    low, high = 0.0, eps
    for _ in range(60):
        mid = 0.5 * (low + high)
        u, v = _project(a, b, mid)
        if max_log_ratio(u, v) <= limit:
            low = mid
        else:
            high = mid
    u, v = _project(a, b, low)
    if max_log_ratio(u, v) > limit:  # epsilon below renormalisation's rounding
        u = v = 0.5 * (a + b)
    return u, v


@renamed_parameters(confidence="confidence_level")
def reach_probability(p: object, q: object, trials: int, bound: float, confidence_level: float = 0.95) -> float:
    """The probability that a valid audit reports at least ``bound``, in the normal approximation.

    An audit whose lower bound is valid at ``confidence_level`` reports at least ``bound`` (from ``trials``
    runs on each dataset, whose outputs follow ``p`` and ``q``) only if its event ``{L >= bound}`` rejects
    the pair of :func:`nearest_pair` at level ``gamma = 1 - confidence_level``; by the Neyman-Pearson lemma
    no such test is more powerful than the likelihood-ratio test.  This function returns that test's
    power, the reach probability, with the log-likelihood ratio's sum over the ``2 trials`` runs replaced
    by its normal approximation (the central limit theorem).  It is therefore an approximation of the
    limit, not a guaranteed upper bound: accurate when every outcome is expected many times (a Monte Carlo
    of the exact test agrees within about 0.003 on the black-box benchmark's pairs).  If
    ``bound`` exceeds the pair's epsilon, validity itself caps the probability at ``gamma``, which is
    returned.

    Parameters
    ----------
    p, q : array_like
        The output laws of the two datasets over the same discrete outcomes (positive, each summing to 1).
    trials : int
        Runs per dataset.
    bound : float
        The reported lower bound to reach, positive.
    confidence_level : float, optional
        The audit's confidence level, in (0, 1).  (Deprecated alias: ``confidence``.)

    Returns
    -------
    float
        The (approximate) reach probability, at least ``1 - confidence_level``.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.

    Examples
    --------
    >>> p, q = [0.5, 0.5], [0.25, 0.75]
    >>> 0.05 <= reach_probability(p, q, 1000, 0.2) <= 1.0
    True
    """
    from scipy import stats

    a, b = _laws(p, q)
    n = check_int(trials, "trials", minimum=1, maximum=10**15)
    target = check_positive(bound, "bound")
    level = check_probability(confidence_level, "confidence_level")
    gamma = 1.0 - level
    if target > max_log_ratio(a, b):
        return gamma
    u, v = nearest_pair(a, b, target * (1.0 - 1e-12))
    # log dP/dQ of one run of each dataset, and its mean and variance under P and under Q (both datasets).
    llr = [np.log(a) - np.log(u), np.log(b) - np.log(v)]
    mean_p = sum(float(np.dot(w, l)) for w, l in zip((a, b), llr))
    mean_q = sum(float(np.dot(w, l)) for w, l in zip((u, v), llr))
    var_p = sum(float(np.dot(w, (l - np.dot(w, l)) ** 2)) for w, l in zip((a, b), llr))
    var_q = sum(float(np.dot(w, (l - np.dot(w, l)) ** 2)) for w, l in zip((u, v), llr))
    if var_p <= 0.0 or var_q <= 0.0:  # Q equals P: no test beats its level
        return gamma
    critical = n * mean_q + float(stats.norm.isf(gamma)) * math.sqrt(n * var_q)
    power = float(stats.norm.sf((critical - n * mean_p) / math.sqrt(n * var_p)))
    return max(gamma, power)


def reach_count_probability(limits: object, at_least: int, *, unlimited: int = 0) -> float:
    """An upper bound on the probability that an audit reaches its target on at least ``at_least`` of
    several mechanisms audited on independent runs, from each one's :func:`reach_probability` (``limits``)
    and ``unlimited`` more mechanisms without a computed limit, counted as reached every time.

    The number reached is Poisson-binomial (independent trials, unequal chances), and its tail only grows
    with each chance, so the tail at the limits bounds it (``scipy.stats.poisson_binom``).

    Parameters
    ----------
    limits : array_like
        Each mechanism's reach probability, in [0, 1]; at most ``MAX_LIMITS`` of them.
    at_least : int
        The number of mechanisms reached, non-negative.
    unlimited : int, optional
        Mechanisms without a computed limit, counted as reached.

    Returns
    -------
    float
        The upper bound, in [0, 1].

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    from scipy import stats

    chances = check_float_array(limits, "limits", finite=True, ndim=1, low=0.0)
    if chances.size > MAX_LIMITS:  # the Poisson-binomial tail costs the square of their number
        raise ValueError(f"limits must hold at most {MAX_LIMITS:,} probabilities, got {chances.size:,}")
    if chances.size and chances.max() > 1.0:
        raise ValueError(f"limits must be probabilities in [0, 1], got a largest value of {chances.max()!r}")
    free = check_int(unlimited, "unlimited", minimum=0)
    k = check_int(at_least, "at_least", minimum=0)
    if k <= free:
        return 1.0
    if k > free + chances.size:
        return 0.0
    return min(1.0, float(stats.poisson_binom.sf(k - 1 - free, chances)))
