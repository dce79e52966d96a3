"""What a privacy budget epsilon means: for an attacker, and for the analyst who reads the release.

- :func:`tpr_bound`: the largest true-positive rate that any test of "this person's record is in the data"
  can have at a given false-positive rate against an (epsilon, delta)-DP mechanism.
- :func:`posterior_bound`: the largest posterior probability an attacker can reach from a given prior after
  one output of an epsilon-DP mechanism (the odds grow by at most ``exp(epsilon)``).
- :func:`laplace_interval`: the half-width of the interval around a Laplace release that holds the exact
  answer with a given probability (a quantile of ``|Lap(0, b)|``, ``b = sensitivity / epsilon``).
- :func:`clamped_mean_bias`: the exact bias that clamping values to ``[0, bound]`` adds to their mean.
- :func:`rappor_epsilon`: the two budgets of a RAPPOR deployment (Erlingsson, Pihur and Korolova, CCS 2014),
  from its public parameters: one value over a client's lifetime, and one report.

All five compute in real arithmetic (float64 stands in for the reals); none of them draws random numbers.
Every bound an attacker or an analyst relies on is rounded outward: the true-positive rate, the posterior, the
interval's half-width and the RAPPOR epsilons are never below their exact values for the float inputs (a few
ulps above at most).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import (MAX_ELEMENTS, check_float_array, check_int, check_positive, check_probability,
                                check_real)
from dptutor._validate.rounding import add_rounded, mul_rounded
from dptutor.renyi import nudge_down, nudge_up, round_up

__all__ = ["tpr_bound", "posterior_bound", "laplace_interval", "clamped_mean_bias", "rappor_epsilon", "RapporBudget"]


def _scalar_or_array(arr: NDArray[np.float64]) -> float | NDArray[np.float64]:
    return float(arr) if arr.ndim == 0 else arr


def _epsilons(epsilon: ArrayLike, *, positive: bool) -> NDArray[np.float64]:
    """``epsilon`` as a float array of finite values >= 0 (> 0 when ``positive``)."""
    eps = check_float_array(epsilon, "epsilon", finite=True, low=0.0)
    if positive and (eps <= 0).any():
        raise ValueError("epsilon must be > 0 (a release with epsilon = 0 carries no information)")
    return eps


def tpr_bound(fpr: ArrayLike, epsilon: ArrayLike, delta: float = 0.0) -> float | NDArray[np.float64]:
    """The largest true-positive rate of any test against an (epsilon, delta)-DP mechanism.

    A test looks at one output and says "in" (the data are ``X``, which holds the person's record) or "out"
    (the data are the neighbour ``X'``). Its true-positive rate is ``Pr[says in | X]``, its false-positive
    rate ``fpr = Pr[says in | X']``. The definition of DP, applied to the set of outputs on which the test
    says "in" and to its complement, gives two bounds, and the tighter one is returned:

    ``tpr <= min(1, exp(epsilon) * fpr + delta, 1 - exp(-epsilon) * (1 - delta - fpr))``.

    Both are attained: randomized response with ``Pr[truth] = exp(epsilon) / (1 + exp(epsilon))`` (and a
    coin for the test) reaches the whole curve for ``delta = 0``.

    Parameters
    ----------
    fpr : float or array_like
        False-positive rates, each in ``[0, 1]``.
    epsilon : float or array_like
        Privacy parameters, finite and ``>= 0``; broadcast against ``fpr``.
    delta : float, optional
        The slack of (epsilon, delta)-DP, in ``[0, 1]``; 0 (pure DP) by default.

    Returns
    -------
    float or numpy.ndarray
        The bound, in ``[0, 1]``; a float when both ``fpr`` and ``epsilon`` are scalars.

    Raises
    ------
    ValueError, TypeError
        If a rate lies outside ``[0, 1]``, ``epsilon`` is negative or not finite, or ``delta`` is outside
        ``[0, 1]``; the message names the parameter.
    """
    rates = check_float_array(fpr, "fpr", finite=True, low=0.0)
    if (rates > 1).any():
        raise ValueError("fpr must hold rates in [0, 1]")
    eps = _epsilons(epsilon, positive=False)
    slack = check_probability(delta, "delta", closed=True)
    try:
        shape = np.broadcast_shapes(rates.shape, eps.shape)
    except ValueError as exc:
        raise ValueError(f"fpr and epsilon do not broadcast: shapes {rates.shape} and {eps.shape}") from exc
    if math.prod(shape) > MAX_ELEMENTS:  # two inputs of 2**15 values made 2**30 rates: "Unable to allocate 8 GiB"
        raise ValueError(f"fpr and epsilon broadcast to {math.prod(shape):,} values, more than the limit of {MAX_ELEMENTS:,}")
    rates, eps = np.broadcast_arrays(rates, eps)
    # exp(epsilon) overflows to inf beyond epsilon ~ 709; inf * 0 would be NaN, but a test that never says
    # "in" on X' (fpr = 0) can say it on X with probability at most delta, whatever epsilon is.
    # Every step rounded outward, so the bound is never below its exact value: 1 - e^-eps (1 - delta - fpr) is
    # summed as (1 - e^-eps) + e^-eps (delta + fpr), with no cancellation.
    # (e^eps and e^-eps moved two doubles, except at eps = 0 where they are exact.)
    with np.errstate(over="ignore", invalid="ignore"):
        growth = np.where(eps > 0, nudge_up(np.exp(eps), 2), 1.0)
        shrink = np.where(eps > 0, nudge_up(np.exp(-eps), 2), 1.0)
        direct = add_rounded(np.where(rates > 0, mul_rounded(growth, rates), 0.0), slack)
        complement = add_rounded(np.where(eps > 0, nudge_up(-np.expm1(-eps), 2), 0.0),
                                 mul_rounded(shrink, add_rounded(slack, rates)))
    return _scalar_or_array(np.clip(np.minimum(direct, complement), 0.0, 1.0))


def posterior_bound(epsilon: ArrayLike, prior: float = 0.5) -> float | NDArray[np.float64]:
    """The largest posterior probability an attacker can give the true dataset after one epsilon-DP output.

    By Bayes' rule the posterior odds are the prior odds times the ratio of the output's probabilities on
    the two neighbours, at most ``exp(epsilon)``; so a prior ``p`` becomes at most
    ``exp(epsilon) p / (exp(epsilon) p + 1 - p)``, which is ``exp(epsilon) / (1 + exp(epsilon))`` for
    ``p = 1/2``.

    Parameters
    ----------
    epsilon : float or array_like
        Privacy parameters, finite and ``>= 0`` (0 leaves the prior unchanged).
    prior : float, optional
        The attacker's prior probability of the true dataset, in ``(0, 1)``; 1/2 by default.

    Returns
    -------
    float or numpy.ndarray
        The bound, in ``[prior, 1]``; a float for a scalar ``epsilon``.

    Raises
    ------
    ValueError, TypeError
        If ``epsilon`` is negative or not finite, or ``prior`` is not in ``(0, 1)``.
    """
    eps = _epsilons(epsilon, positive=False)
    p = check_probability(prior, "prior")
    # exp(eps) p / (exp(eps) p + 1 - p) = 1 / (1 + exp(-eps) (1 - p) / p): no overflow for a large epsilon;
    # for a prior below 1e-300, (1 - p) / p overflows: then the logistic function of the log odds instead.
    # Rounded outward step by step (the denominator down, the quotient up): never below the exact bound.
    if p >= 1e-300:
        odds_against = nudge_down(nudge_down(1.0 - p, 1) / p, 1)
        shrink = np.where(eps > 0, np.maximum(nudge_down(np.exp(-eps), 2), 0.0), 1.0)
        bound = np.minimum(1.0, nudge_up(1.0 / add_rounded(1.0, mul_rounded(shrink, odds_against, up=False), up=False), 1))
        return _scalar_or_array(np.where(eps > 0, bound, p))  # epsilon = 0: the prior, exactly
    log_odds = nudge_up(eps + nudge_up(nudge_up(math.log(p)) - nudge_down(math.log1p(-p), 2), 1), 1)
    # logaddexp taken as accurate to 4 ulps, exp to 2; exp overflows to inf (a bound of 1) for an epsilon ~1e300,
    # whose 4 ulps of slack exceed 709: it warned
    with np.errstate(under="ignore", over="ignore"):
        exponent = nudge_up(log_odds - nudge_down(np.logaddexp(0.0, log_odds), 4), 1)
        bound = np.minimum(1.0, np.maximum(p, nudge_up(np.exp(exponent), 2)))  # subnormal rounding
        return _scalar_or_array(np.where(eps > 0, bound, p))


def laplace_interval(sensitivity: float, epsilon: ArrayLike,
                     confidence_level: float = 0.95) -> float | NDArray[np.float64]:
    """Half-width ``t`` of the interval ``release +- t`` that holds the exact answer with a given probability.

    The Laplace mechanism releases ``f(X) + Z`` with ``Z ~ Lap(0, b)``, ``b = sensitivity / epsilon``, and
    ``Pr(|Z| > t) = exp(-t / b)``. Setting this to ``1 - confidence_level`` gives
    ``t = b ln(1 / (1 - confidence_level))``: over the mechanism's noise, the interval covers the exact
    answer with probability ``confidence_level`` exactly (in real arithmetic). The interval needs nothing
    but the public ``sensitivity`` and ``epsilon``, so publishing it costs no privacy.

    Parameters
    ----------
    sensitivity : float
        The global l1 sensitivity of the released query, ``> 0``.
    epsilon : float or array_like
        Privacy parameters, finite and ``> 0``.
    confidence_level : float, optional
        The probability that the interval covers the exact answer, in ``(0, 1)``; 0.95 by default.

    Returns
    -------
    float or numpy.ndarray
        The half-width ``t``; a float for a scalar ``epsilon``.

    Raises
    ------
    ValueError, TypeError
        If ``sensitivity`` is not a positive finite number, ``epsilon`` holds a value ``<= 0`` or a
        non-finite one, or ``confidence_level`` is not in ``(0, 1)``.
    """
    delta_f = check_positive(sensitivity, "sensitivity")
    eps = _epsilons(epsilon, positive=True)
    level = check_probability(confidence_level, "confidence_level")
    with np.errstate(over="ignore"):           # an overflow to inf is refused just below
        half_width = np.asarray(mul_rounded(nudge_up(delta_f / eps, 1), nudge_up(-math.log1p(-level))))  # never too narrow
    if not np.isfinite(half_width).all():
        raise ValueError("sensitivity / epsilon is too large: the interval's half-width overflows")
    return _scalar_or_array(half_width)


def clamped_mean_bias(values: ArrayLike, bound: float) -> float:
    """The bias of the mean of ``values`` after clamping each one to ``[0, bound]``: clamped mean minus mean.

    Clamping bounds the sensitivity of the mean of ``N`` values to ``bound / N`` (for a public ``N``), so a
    Laplace release of the clamped mean is private; but the released number then estimates the clamped mean,
    not the mean. The difference is this bias: negative when values above ``bound`` are cut down, positive
    when negative values are raised to 0, zero when every value lies in ``[0, bound]``. It depends on the
    data, so the curator cannot publish it without spending privacy budget.

    Parameters
    ----------
    values : array_like
        The data, a non-empty one-dimensional array of finite real numbers.
    bound : float
        The clamp bound ``B > 0``: values are clamped to ``[0, B]``.

    Returns
    -------
    float
        ``mean(clip(values, 0, bound)) - mean(values)``.

    Raises
    ------
    ValueError, TypeError
        If ``values`` is empty, not one-dimensional or holds a non-finite value, or ``bound`` is not a
        positive finite number.
    """
    data = check_float_array(values, "values", finite=True, ndim=1, min_size=1)
    b = check_positive(bound, "bound")
    with np.errstate(over="ignore", invalid="ignore"):     # |values| near the float limit: caught below
        bias = float(np.mean(np.clip(data, 0.0, b) - data))
    if not math.isfinite(bias):
        raise ValueError("values are too large to average in float64")
    return bias


@dataclass(frozen=True)
class RapporBudget:
    """The two budgets of one RAPPOR configuration (see :func:`rappor_epsilon`).

    Parameters
    ----------
    lifetime : float
        The epsilon of the permanent randomized response: it bounds what every report of one value, however
        many, reveals about that value.
    one_report : float
        The epsilon of a single report (permanent and instantaneous randomized response together).
    set_bit : float
        The probability that a bit set in the client's Bloom filter is reported as 1 (``q*`` in the paper).
    clear_bit : float
        The probability that a clear bit is reported as 1 (``p*`` in the paper).

    Raises
    ------
    ValueError, TypeError
        If an epsilon is negative or a probability is outside ``[0, 1]`` (the message names it).
    """

    lifetime: float
    one_report: float
    set_bit: float
    clear_bit: float

    def __post_init__(self) -> None:
        for name in ("lifetime", "one_report"):
            object.__setattr__(self, name, check_real(getattr(self, name), name, low=0.0))
        for name in ("set_bit", "clear_bit"):
            object.__setattr__(self, name, check_real(getattr(self, name), name, low=0.0, high=1.0))


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _log_add(a: float, b: float) -> float:
    """``log(exp(a) + exp(b))`` without overflow or underflow (either may be ``-inf``)."""
    if a == -math.inf or b == -math.inf:
        return max(a, b)
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def rappor_epsilon(f: float, p: float, q: float, hashes: int) -> RapporBudget:
    """The budgets of RAPPOR with parameters ``f``, ``p``, ``q`` and ``hashes`` hash functions per value.

    A client encodes its value as a Bloom filter with at most ``hashes`` bits set.  The permanent
    randomized response replaces each bit, once and for all, by a fair coin with probability ``f``, so a
    set bit stays 1 with probability ``1 - f/2`` and a clear bit becomes 1 with probability ``f/2``.  Each
    report then sends 1 with probability ``q`` for a 1 and ``p`` for a 0 of the permanent filter.  Two
    values differ in at most ``2 * hashes`` bits and the bits are independent, so each budget is
    ``2 * hashes`` times the largest log-ratio of one bit's two laws: ``(1 - f/2) / (f/2)`` for the
    permanent step, and ``q* = (1 - f/2) q + (f/2) p`` against ``p* = (f/2) q + (1 - f/2) p`` for a
    report.  The RAPPOR paper derives both bounds the same way; they hold in real arithmetic, and two values
    whose filters share no bit reach them.

    Parameters
    ----------
    f : float
        The probability that the permanent randomized response replaces a bit, in ``(0, 1]``.
    p : float
        The probability of reporting 1 for a 0 of the permanent filter, in ``[0, 1]``.
    q : float
        The probability of reporting 1 for a 1 of the permanent filter, in ``[0, 1]``.
    hashes : int
        The number of hash functions (bits set per value), in ``[1, 64]``.

    Returns
    -------
    RapporBudget
        ``lifetime`` and ``one_report`` epsilons and the report's bit probabilities ``set_bit`` (``q*``)
        and ``clear_bit`` (``p*``).

    Raises
    ------
    ValueError, TypeError
        If a parameter is out of range or not a real number (the message names it).

    Examples
    --------
    Chrome's parameters (``f = 0.5``, ``p = 0.25``, ``q = 0.75``, two hash functions):

    >>> budget = rappor_epsilon(0.5, 0.25, 0.75, 2)
    >>> round(budget.lifetime, 4), round(budget.one_report, 4)
    (4.3944, 2.0433)
    """
    f = check_real(f, "f", low=0.0, high=1.0, low_open=True)
    p = check_real(p, "p", low=0.0, high=1.0)
    q = check_real(q, "q", low=0.0, high=1.0)
    hashes = check_int(hashes, "hashes", minimum=1, maximum=64)
    # In logs: for a tiny f the probability f/2 of a faked bit underflows, but its logarithm does not.
    log_keep, log_fake = math.log1p(-0.5 * f), math.log(f) - math.log(2.0)
    log_one = [_log_add(log_keep + _log(q), log_fake + _log(p)), _log_add(log_fake + _log(q), log_keep + _log(p))]
    lifetime, one_report = _rappor_budgets_up(f, p, q, hashes)
    return RapporBudget(lifetime=lifetime, one_report=one_report,
                        set_bit=math.exp(log_one[0]), clear_bit=math.exp(log_one[1]))


def _rappor_budgets_up(f: float, p: float, q: float, hashes: int) -> tuple[float, float]:
    """RAPPOR's two epsilons in mpmath at 50 digits, moved past their error and rounded up to doubles (in
    doubles, a dozen roundings and libm calls leave them below the exact values about half the time)."""
    import mpmath

    def up(x: object) -> float:
        if x == mpmath.inf:
            return math.inf
        man, exp = mpmath.mpf(x * (1 + mpmath.mpf(10) ** -40)).man_exp
        return round_up(Fraction(int(man)) * Fraction(2) ** int(exp)) if man else 0.0

    def log_ratio(a: object, b: object) -> object:
        return 0 if a == b else (mpmath.inf if a == 0 or b == 0 else abs(mpmath.log(a) - mpmath.log(b)))

    with mpmath.workdps(50):
        fake, p_, q_ = mpmath.mpf(f) / 2, mpmath.mpf(p), mpmath.mpf(q)
        keep = 1 - fake
        one = (keep * q_ + fake * p_, fake * q_ + keep * p_)
        zero = (keep * (1 - q_) + fake * (1 - p_), fake * (1 - q_) + keep * (1 - p_))
        per_report = max(log_ratio(*one), log_ratio(*zero))
        return up(2 * hashes * mpmath.log(keep / fake)), up(2 * hashes * per_report)
