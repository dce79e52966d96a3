"""A lower confidence bound on the ratio of two event probabilities from paired runs, for frequent events.

``audit_pair(..., bounds="joint")`` spends its whole error on one statement about the chosen event E.  Its first
way, the numerator's *share* of the event's runs after a Poisson thinning (``_pair_bounds``), is exact, but a
Poisson count varies more than a binomial count by the factor ``1 / (1 - p)``: about 2 for an event of probability
one half.  This module's way keeps the binomial counts.

The statement.  The event's counts are ``K ~ Binomial(n, p)`` under the numerator's input and ``K' ~ Binomial(n, q)``
under the other, independent.  For a ratio ``a = e^eps >= 1`` write ``D_a = K - a K'``; the bound rejects ``eps`` when

    ``D_a >= z(a) sqrt(n a (1 + a) m)``,   ``z(a) = Phi^-1(1 - gamma' + b(a))``,   ``b(a) = C a / sqrt(n s)``,

where ``[q_lo, q_hi]`` is a two-sided Clopper-Pearson interval for ``q`` from ``K'`` at error ``beta`` (half on each
side), ``m`` and ``s`` are the largest and the smallest of ``u (1 - u)`` over it, ``gamma' = gamma - beta``,
``beta = NUISANCE_SHARE * gamma`` and ``C = BERRY_ESSEEN_C``; no ``eps`` is rejected when ``b(a) >= gamma'``.  The
bound is the largest ``eps >= 0`` rejected (0 if none is).

Why it holds (at the true ratio ``a = p / q >= 1``; below it, or for ``a`` below 1, see the last step):

1. Pair run i of one input with run i of the other: ``D_a`` is a sum of ``n`` independent copies of
   ``d = B - a B'`` with ``B ~ Bernoulli(p)``, ``B' ~ Bernoulli(q)``, whose mean ``p - a q`` is 0.
2. Its variance is ``v = p (1 - p) + a^2 q (1 - q) = a q (1 - a q) + a^2 q (1 - q) <= a (1 + a) q (1 - q)``, because
   ``a q >= q``; and ``v >= a^2 q (1 - q) >= q (1 - q)``, because ``a q = p <= 1``.
3. ``|d|`` is one of 0, 1, ``a - 1`` and ``a``, all at most ``a``, so ``E|d|^3 <= a v``, and
   ``E|d|^3 / v^(3/2) <= a / sqrt(v) <= a / sqrt(q (1 - q))``.
4. Berry-Esseen, with Shevtsova's constant ``C = 0.4748`` for identically distributed summands: for every ``t``,
   ``P[D_a >= t sqrt(n v)] <= 1 - Phi(t) + C E|d|^3 / (v^(3/2) sqrt(n)) <= 1 - Phi(t) + b*``, with
   ``b* = C a / sqrt(n q (1 - q))``.
5. With probability at least ``1 - beta`` the interval holds ``q``.  Then ``m >= q (1 - q)``, so by step 2 the
   threshold's root is at least ``sqrt(n v)``; and ``s <= q (1 - q)``, so ``b(a) >= b*`` and ``z(a) >= z* =
   Phi^-1(1 - gamma' + b*)``.  Rejecting the true ``eps`` then needs ``D_a >= z* sqrt(n v)``, which by step 4 has
   probability at most ``(gamma' - b*) + b* = gamma'`` (none at all when ``b* >= gamma'``).
6. Adding the interval's error, the true ``eps`` is rejected with probability at most ``gamma' + beta = gamma``.
7. The rejected set is an interval from 0: ``D_a`` falls as ``a`` grows and the threshold rises (``b``, hence ``z``,
   and ``a (1 + a)`` grow).  So the bound exceeds the true ``eps`` only when the true ``eps`` is rejected.  If
   ``p <= q``, a bound above 0 needs ``eps = 0`` rejected; the threshold depends on ``K'`` alone and ``K`` only grows
   with ``p``, so that has probability at most its value at ``p = q``, at most ``gamma`` by steps 1-6.

In floating point every comparison leans toward not rejecting (``_SLACK``), and the counts' difference is exact
(a ``Fraction``), so the double returned is at most the bound in real arithmetic.  The Clopper-Pearson ends come
from scipy's beta quantiles, widened by the same slack.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from dptutor._validate import check_float_array, check_int, check_probability, check_real
from dptutor.audit._binomial import exact_interval

__all__ = ["BERRY_ESSEEN_C", "MAX_RUNS", "NUISANCE_SHARE", "paired_ratio_bound", "paired_projection"]

#: Shevtsova's (2011) constant in the Berry-Esseen inequality for sums of identically distributed summands.
BERRY_ESSEEN_C: float = 0.4748
#: The share of the error spent on the interval for the denominator's probability (``beta`` in the module docstring).
NUISANCE_SHARE: float = 0.02
#: The most runs per input ``n`` may give (far beyond any audit; the bound's doubles stay finite up to it).
MAX_RUNS: int = 1 << 62
#: Relative slack on every quantity the rejection compares, far above the few ulps of error in each.
_SLACK = 1e-9
_BISECTIONS = 64
#: The largest normal quantile a double can ask for (``Phi^-1(1 - 1e-308)`` is about 37.5).
_MAX_Z = 40.0


def _interval(k: int, n: int, error: float) -> tuple[float, float]:
    """The two-sided Clopper-Pearson interval for ``k`` successes in ``n`` at ``error`` (half per side), widened by
    the slack and clipped to [0, 1]."""
    low, high = exact_interval(k, n, error / 2.0)
    return max(0.0, low * (1.0 - _SLACK)), min(1.0, high * (1.0 + _SLACK))


def _spread(low: float, high: float) -> tuple[float, float]:
    """``(m, s)``: the largest and the smallest of ``u (1 - u)`` for ``u`` in ``[low, high]`` (a concave function, so
    its least value is at an end)."""
    ends = [low * (1.0 - low), high * (1.0 - high)]
    most = 0.25 if low <= 0.5 <= high else max(ends)
    return most * (1.0 + _SLACK), min(ends) * (1.0 - _SLACK)


def paired_ratio_bound(k_num: int, k_den: int, n: int, confidence_level: float = 0.95) -> float:
    """A lower confidence bound on ``ln(p / q)`` from an event's counts ``k_num ~ Binomial(n, p)`` and
    ``k_den ~ Binomial(n, q)``, independent, by the paired difference test of the module docstring.

    Tighter than a bound on the numerator's share after a Poisson thinning when the event is frequent (its variance
    is smaller by about the factor ``1 - p``); worthless when the event is rare, since the Berry-Esseen allowance
    grows like ``1 / sqrt(n q)``.

    Parameters
    ----------
    k_num, k_den : int
        The event's counts among ``n`` runs of the numerator's input and of the other input.
    n : int
        Runs of each input, at least 1.
    confidence_level : float, optional
        The probability, in (0, 1), with which the bound holds.

    Returns
    -------
    float
        A lower bound, at ``confidence_level``, on ``ln(p / q)`` where that is positive (0 otherwise): never
        negative, never NaN.

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter (a count above ``n`` included).

    Examples
    --------
    >>> round(paired_ratio_bound(2_500_000, 2_262_000, 5_000_000), 4)  # ln of the counts' ratio: 0.1000
    0.0989
    """
    n = check_int(n, "n", minimum=1, maximum=MAX_RUNS)
    k_num = check_int(k_num, "k_num", minimum=0, maximum=n)
    k_den = check_int(k_den, "k_den", minimum=0, maximum=n)
    gamma = 1.0 - check_probability(confidence_level, "confidence_level")
    from scipy import special

    beta = NUISANCE_SHARE * gamma
    most, least = _spread(*_interval(k_den, n, beta))
    if k_num <= k_den or least <= 0.0:
        return 0.0

    def rejected(eps: float) -> bool:
        a = math.exp(eps) * (1.0 + _SLACK)
        allowance = BERRY_ESSEEN_C * a / math.sqrt(n * least) * (1.0 + _SLACK)
        left = (gamma - beta) * (1.0 - _SLACK) - allowance  # the error left for the normal tail, a hair small
        if left <= 0.0:
            return False
        z = -float(special.ndtri(left)) * (1.0 + _SLACK)  # Phi^-1(1 - x) = -Phi^-1(x), exact in the tails
        threshold = z * math.sqrt(n * a * (1.0 + a) * most) * (1.0 + _SLACK)
        # The difference exactly: in doubles, k_num - a k_den loses units once the counts pass 2^53 / a.
        return Fraction(k_num) - Fraction(a) * k_den >= Fraction(threshold)

    if not rejected(0.0):
        return 0.0
    low, high = 0.0, math.log(k_num / k_den)  # k_den > 0 here (else least = 0); no ratio above it is rejected
    for _ in range(_BISECTIONS):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if rejected(middle) else (low, middle)
    return low


def paired_projection(p_num: NDArray[np.float64], p_den: NDArray[np.float64], n: int, z: float,
                      error: float) -> NDArray[np.float64]:
    """The bound :func:`paired_ratio_bound` projects for events with probabilities ``p_num`` and ``p_den`` (arrays)
    measured on ``n`` runs of each input: how ``audit_pair`` scores an event for this bound on its selection half.

    ``z`` is the normal quantile the score would use for a bound at ``error`` with nothing else to pay (it may include
    a caution for the selection's own noise); the projection adds what this bound pays on top (the interval's share
    of the error and the Berry-Esseen allowance) and solves the rejection's boundary at the plug-in probabilities.

    Parameters
    ----------
    p_num, p_den : array_like of float
        The events' probabilities under the numerator's input and the other, in [0, 1], of the same shape.
    n : int
        Runs of each input the bound will have.
    z : float
        The normal quantile of the score (finite).
    error : float
        The bound's error, in (0, 1).

    Returns
    -------
    numpy.ndarray
        The projected bounds, ``-inf`` where the bound could not be positive (never NaN).

    Raises
    ------
    TypeError, ValueError
        Naming the bad parameter.
    """
    from scipy import special

    p = check_float_array(p_num, "p_num", finite=True, low=0.0)
    q = check_float_array(p_den, "p_den", finite=True, low=0.0)
    for name, arr in (("p_num", p), ("p_den", q)):
        if np.any(arr > 1.0):
            raise ValueError(f"{name} must hold probabilities in [0, 1], got a largest entry of {float(arr.max())!r}")
    if p.shape != q.shape:
        raise ValueError(f"p_num and p_den must have the same shape, got {p.shape} and {q.shape}")
    n = check_int(n, "n", minimum=1, maximum=MAX_RUNS)
    z = check_real(z, "z", low=-_MAX_Z, high=_MAX_Z)
    error = check_probability(error, "error")
    out = np.full(p.shape, -np.inf)
    ok = (q > 0.0) & (q < 1.0) & (p > q)
    if not np.any(ok):
        return out
    p, q = p[ok], q[ok]
    spread = q * (1.0 - q)
    payable = (1.0 - NUISANCE_SHARE) * error - BERRY_ESSEEN_C * (p / q) / np.sqrt(n * spread)
    z_all = z - special.ndtri(np.maximum(payable, 1e-300)) + special.ndtri(error)
    a = p / q
    for _ in range(4):  # the boundary p - a q = z sqrt(a (1 + a) q (1 - q) / n), solved for a by a fixed point
        a = np.maximum((p - z_all * np.sqrt(a * (1.0 + a) * spread / n)) / q, 1e-300)
    score = np.log(a)
    score[payable <= 0.0] = -np.inf
    out[ok] = score
    return out
