"""Auditing in one run: a lower bound on epsilon from guesses about many canaries.

Steinke, Nasr and Jagielski ("Privacy auditing with one (1) training run", NeurIPS 2023) put m
canaries into one run of a mechanism, each independently with probability 1/2.  An auditor looks at
the output and guesses, for some ``r`` of the canaries, whether each was in or out; let ``v`` be the
number of correct guesses.  Their main theorem (Theorem 3.1 of the arXiv version, 2305.08846) bounds
how often an (epsilon, delta)-DP mechanism lets the auditor be right: for every v,

    P[V >= v] <= f(v) + 2 m delta max_{i = 1..m} (f(v - i) - f(v)) / i,

with ``f(v) = P[Binomial(r, p) >= v]`` and ``p = e^epsilon / (1 + e^epsilon)``, the accuracy of
epsilon-randomized response.  For delta = 0 this says the number of correct guesses is stochastically
dominated by Binomial(r, p): the canaries behave at best like r answers of randomized response.

The right-hand side is a p-value for the hypothesis "the mechanism is (epsilon, delta)-DP"; every
epsilon whose p-value is below ``1 - confidence_level`` is rejected, and the reported lower bound is
the largest epsilon rejected.  The guarantee holds only if ``r`` (and the rule that picks the guesses)
is fixed before the output is seen: choosing r after looking is a multiple test (see the chapter on
private learning, and correct it with a Bonferroni split of the error).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from dptutor._validate import check_count, check_int, check_real
from dptutor.renyi import nudge_down, nudge_up

__all__ = ["one_run_p_value", "audit_one_run"]

#: Bisection steps for delta > 0 (the bracket [0, 64] shrinks below 1e-10).
BISECTION_STEPS: int = 40

#: The delta > 0 p-value sums the binomial pmf only within this many sqrt(guesses) of its mean: beyond,
#: Hoeffding's bound exp(-2 t^2 / r) with t = 20 sqrt(r) makes each term at most e^-800, 0 in float64.
_WINDOW: float = 20.0

#: The largest epsilon the bound reports (beyond it, randomized response's accuracy is 1 in float64).
EPSILON_CAP: float = 36.0


def _counts(correct: object, guesses: object, canaries: object) -> tuple[int, int, int]:
    m = check_int(canaries, "canaries", minimum=1, maximum=10**8)
    r = check_count(guesses, "guesses", at_most=m, bound_name="canaries")
    v = check_count(correct, "correct", at_most=r, bound_name="guesses")
    return v, r, m


def _p_value(v: int, r: int, m: int, epsilon: float, delta: float) -> float:
    """The theorem's right-hand side, capped at 1 (arguments already checked)."""
    from scipy import stats  # imported here: scipy.stats costs a student's kernel about 1.5 s at import

    if v == 0:
        return 1.0
    p = special.expit(epsilon)
    tail = float(stats.binom.sf(v - 1, r, p))  # f(v) = P[Binomial(r, p) >= v]
    if delta == 0.0:
        return min(1.0, tail)
    # f(v - i) - f(v) = P[v - i <= Binomial < v]: the pmf at v-1, v-2, ..., 0, summed; i > v adds nothing.
    # Only the pmf at k in [low, high] is summed: outside, P[Binomial = k] <= e^-800 (Hoeffding), which is 0 in
    # float64 (below half the smallest subnormal), so the sums and their maximum are the ones over all k.
    spread = math.ceil(_WINDOW * math.sqrt(r))
    low, high = max(0, math.floor(r * p) - spread), min(v - 1, math.ceil(r * p) + spread)
    if low > high:  # every pmf in 0 .. v-1 is 0 in float64
        return min(1.0, tail)
    ks = np.arange(high, low - 1, -1)
    below = np.cumsum(stats.binom.pmf(ks, r, p))  # i = v - k runs from v - high; smaller i sum only zeros
    worst = float(np.max(below / (v - ks)))  # i > v - low: the same sum over a larger i, smaller
    return min(1.0, tail + 2.0 * m * delta * worst)


def one_run_p_value(correct: int, guesses: int, canaries: int, epsilon: float, *, delta: float = 0.0) -> float:
    """An upper bound on the probability that an (``epsilon``, ``delta``)-DP mechanism lets an auditor
    make at least ``correct`` correct guesses out of ``guesses`` about ``canaries`` canaries (the
    paper's Theorem 3.1; see the module docstring).

    Parameters
    ----------
    correct, guesses, canaries : int
        v, r and m with ``0 <= v <= r <= m``, ``m >= 1``.
    epsilon : float
        The hypothesised epsilon, >= 0.
    delta : float
        The hypothesised delta in [0, 1].
    """
    v, r, m = _counts(correct, guesses, canaries)
    eps = check_real(epsilon, "epsilon", low=0.0, allow_inf=True)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    # Not capped at EPSILON_CAP: the p-value at 36 is below the one at a larger epsilon (0.99999999999997 for
    # 100 of 100 guesses where the exact value at 40 is 0.9999999999999996), which is no upper bound there.
    return _p_value(v, r, m, eps, dlt)


def audit_one_run(
    correct: int, guesses: int, canaries: int, *, delta: float = 0.0, confidence_level: float = 0.95
) -> float:
    """The one-run lower bound on epsilon (Steinke, Nasr and Jagielski 2023).

    Parameters
    ----------
    correct : int
        v, the number of correct guesses.
    guesses : int
        r, the number of guesses made (canaries on which the auditor abstains do not count); it must
        be chosen before the output is seen.
    canaries : int
        m, the number of canaries, each included independently with probability 1/2.
    delta : float
        The delta of the guarantee under test, in [0, 1]; 0 audits pure epsilon-DP.
    confidence_level : float
        In (0, 1): with probability at least this, over the canaries and the mechanism, the bound
        does not exceed the true epsilon of an (epsilon, delta)-DP mechanism.

    Returns
    -------
    float
        The largest epsilon (at most :data:`EPSILON_CAP`) whose p-value
        (:func:`one_run_p_value`) is below ``1 - confidence_level``; 0 when none is.

    Notes
    -----
    With ``delta = 0`` the p-value is ``P[Binomial(r, p) >= v]``, increasing in p, so the bound is
    exact: p is the Clopper-Pearson lower limit ``betaincinv(v, r - v + 1, alpha)`` and epsilon its
    log-odds.  With ``delta > 0`` it is found by bisection on epsilon, as in the paper's appendix code,
    and is a lower bound on the crossing to within 1e-10.  Each p-value sums the binomial pmf only within
    ``20 sqrt(guesses)`` of its mean (beyond, every term is below e^-800 and so 0 in float64: the same
    value as the full sum), so that a million canaries take well under a second.
    """
    v, r, m = _counts(correct, guesses, canaries)
    dlt = check_real(delta, "delta", low=0.0, high=1.0)
    level = check_real(confidence_level, "confidence_level", low=0.0, high=1.0, low_open=True, high_open=True)
    alpha = 1.0 - level
    if v == 0 or _p_value(v, r, m, 0.0, dlt) >= alpha:
        return 0.0
    if dlt == 0.0:
        # Rounded down (a lower bound): betaincinv was up to 3 ulps above the exact limit, and the log-odds to
        # nearest then a few units of 1e-14 above the exact crossing in about half of the cases tried.
        p = nudge_down(float(special.betaincinv(v, r - v + 1, alpha)), 8)
        if p >= 1.0:
            return EPSILON_CAP
        log_odds = nudge_down(nudge_down(math.log(p), 2) - nudge_up(math.log1p(-p), 2), 1) if p > 0.0 else 0.0
        return min(EPSILON_CAP, max(0.0, log_odds))
    lo, hi = 0.0, EPSILON_CAP  # p-value(lo) < alpha throughout
    if _p_value(v, r, m, hi, dlt) < alpha:
        return EPSILON_CAP
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _p_value(v, r, m, mid, dlt) < alpha else (lo, mid)
    return lo
