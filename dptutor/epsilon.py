"""What a privacy budget epsilon means: for an attacker, and for the analyst who reads the release.

- :func:`tpr_bound`: the largest true-positive rate that any test of "this person's record is in the data"
  can have at a given false-positive rate against an (epsilon, delta)-DP mechanism.
- :func:`posterior_bound`: the largest posterior probability an attacker can reach from a given prior after
  one output of an epsilon-DP mechanism (the odds grow by at most ``exp(epsilon)``).
- :func:`laplace_interval`: the half-width of the interval around a Laplace release that holds the exact
  answer with a given probability (a quantile of ``|Lap(0, b)|``, ``b = sensitivity / epsilon``).
- :func:`clamped_mean_bias`: the exact bias that clamping values to ``[0, bound]`` adds to their mean.

All four compute in real arithmetic (float64 stands in for the reals); none of them draws random numbers.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dptutor._validate import check_float_array, check_positive, check_probability

__all__ = ["tpr_bound", "posterior_bound", "laplace_interval", "clamped_mean_bias"]


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
        rates, eps = np.broadcast_arrays(rates, eps)
    except ValueError as exc:
        raise ValueError(f"fpr and epsilon do not broadcast: shapes {rates.shape} and {eps.shape}") from exc
    # exp(epsilon) overflows to inf beyond epsilon ~ 709; inf * 0 would be NaN, but a test that never says
    # "in" on X' (fpr = 0) can say it on X with probability at most delta, whatever epsilon is.
    with np.errstate(over="ignore", invalid="ignore"):
        direct = np.where(rates > 0, np.exp(eps) * rates, 0.0) + slack
    complement = 1.0 - np.exp(-eps) * (1.0 - slack - rates)
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
    # exp(eps) p / (exp(eps) p + 1 - p) = 1 / (1 + exp(-eps) (1 - p) / p): no overflow for a large epsilon.
    return _scalar_or_array(1.0 / (1.0 + np.exp(-eps) * ((1.0 - p) / p)))


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
        half_width = (delta_f / eps) * -math.log1p(-level)
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
