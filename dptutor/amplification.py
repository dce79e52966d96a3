"""Privacy amplification by Poisson subsampling, for pure and approximate DP.

A mechanism ``M`` that is (epsilon, delta)-DP for add/remove neighbours (datasets that differ by one
record added or removed), run on a Poisson subsample of its input (each record kept independently with
probability ``sampling_rate``, theta below), is (epsilon', delta')-DP for the same neighbours with

    epsilon' = ln(1 + theta (e^epsilon - 1)),    delta' = theta delta.

The statement and its proof are in the chapter "Composition and accounting" (its theorem
"Amplification by Poisson subsampling"); see also Balle, Barthe and Gaboardi (2018), "Privacy amplification
by subsampling: tight analyses via couplings and divergences".  The bound is tight: randomized response
on the parity of the subsample's size attains it on the pair of the empty dataset and a single record,
which is what the tests check in exact arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction

from dptutor._validate import check_probability, check_real
from dptutor.renyi import nudge_up, round_up

__all__ = ["subsampled_epsilon", "subsampled_delta", "subsampled_dp"]

#: Above this epsilon, ``e^epsilon`` would overflow a double; the formula is then rewritten as the
#: log-sum-exp ``ln((1 - theta) + e^(ln theta + epsilon))``, which is the same number in real arithmetic.
_LARGE_EPSILON = 700.0


def subsampled_epsilon(epsilon: float, sampling_rate: float) -> float:
    """The epsilon of an epsilon-DP mechanism run on a Poisson subsample.

    Parameters
    ----------
    epsilon : float
        The mechanism's epsilon for add/remove neighbours, finite and ``>= 0``.
    sampling_rate : float
        The probability theta with which each record joins the subsample, in ``[0, 1]``.

    Returns
    -------
    float
        ``ln(1 + theta (e^epsilon - 1))``: at most ``epsilon``, about ``theta (e^epsilon - 1)`` when that
        is small, and ``0`` when ``theta = 0``.  Rounded up: never below the exact value, above it by a few
        ulps (never 0 when the exact value is positive: then at least the smallest positive double); above
        ``epsilon = 700`` (the log-sum-exp form) by up to about 1e-13 relative when ``theta`` is tiny, the
        error of ``ln(theta)``.

    Raises
    ------
    TypeError
        If a parameter is not a real number (booleans included).
    ValueError
        If ``epsilon`` is negative, infinite or NaN, or ``sampling_rate`` lies outside ``[0, 1]``.

    Examples
    --------
    >>> round(subsampled_epsilon(1.0, 0.01), 6)
    0.017037
    >>> subsampled_epsilon(2.0, 1.0)
    2.0
    """
    eps = check_real(epsilon, "epsilon", low=0.0)
    theta = check_probability(sampling_rate, "sampling_rate", closed=True)
    if theta == 0.0 or eps == 0.0:
        return 0.0
    if theta == 1.0:
        return eps
    # Every step is rounded up (each libm result moved two doubles up, the rest exact): rounded to nearest the
    # result was an ulp or two low, and 0 when theta (e^eps - 1) underflowed (eps = 1e-300, theta = 1e-30).
    # The exact value is at most eps, and at most theta (e^eps - 1).
    if eps <= _LARGE_EPSILON:
        x = round_up(Fraction(theta) * Fraction(nudge_up(math.expm1(eps))))  # >= theta (e^eps - 1)
        return min(eps, x, nudge_up(math.log1p(x)))
    # ln((1 - theta) + theta e^eps) as a log-sum-exp: eps + ln(theta + (1 - theta) e^-eps) cancelled to 0 for a
    # tiny theta (5e-324 at eps = 700.1 gave 0, not 5e-20)
    a = nudge_up(math.log1p(-theta))  # >= ln(1 - theta)
    b = round_up(Fraction(nudge_up(math.log(theta))) + Fraction(eps))  # >= ln(theta) + eps
    hi, lo = max(a, b), min(a, b)
    tail = nudge_up(math.log1p(nudge_up(math.exp(round_up(Fraction(lo) - Fraction(hi))))))
    return min(eps, round_up(Fraction(hi) + Fraction(tail)))


def subsampled_delta(delta: float, sampling_rate: float) -> float:
    """The delta of an (epsilon, delta)-DP mechanism run on a Poisson subsample: ``theta * delta``.

    Parameters
    ----------
    delta : float
        The mechanism's delta for add/remove neighbours, in ``[0, 1]``.
    sampling_rate : float
        The probability theta with which each record joins the subsample, in ``[0, 1]``.

    Returns
    -------
    float
        ``theta * delta`` rounded up (the smallest double at least the exact product; 0 only when it is 0);
        it goes with the epsilon of :func:`subsampled_epsilon`.

    Raises
    ------
    TypeError
        If a parameter is not a real number (booleans included).
    ValueError
        If a parameter lies outside ``[0, 1]`` or is NaN.

    Examples
    --------
    >>> subsampled_delta(1e-5, 0.5)
    5e-06
    """
    dlt = check_probability(delta, "delta", closed=True)
    theta = check_probability(sampling_rate, "sampling_rate", closed=True)
    return round_up(Fraction(theta) * Fraction(dlt))  # rounded to nearest it was an ulp low half the time, or 0


def subsampled_dp(epsilon: float, delta: float, sampling_rate: float) -> tuple[float, float]:
    """Both parameters at once: ``(subsampled_epsilon(epsilon, theta), subsampled_delta(delta, theta))``.

    Parameters
    ----------
    epsilon : float
        The mechanism's epsilon for add/remove neighbours, finite and ``>= 0``.
    delta : float
        The mechanism's delta, in ``[0, 1]``.
    sampling_rate : float
        The probability theta with which each record joins the subsample, in ``[0, 1]``.

    Returns
    -------
    tuple of float
        ``(epsilon', delta')`` of the mechanism run on the Poisson subsample.

    Raises
    ------
    TypeError
        If a parameter is not a real number (booleans included).
    ValueError
        If a parameter is out of range or NaN.

    Examples
    --------
    >>> eps, dlt = subsampled_dp(1.0, 1e-5, 0.5)
    >>> round(eps, 6), dlt
    (0.620115, 5e-06)
    """
    return subsampled_epsilon(epsilon, sampling_rate), subsampled_delta(delta, sampling_rate)
