"""The paired difference bound (``dptutor.audit.paired``) and how ``bounds="joint"`` uses it for frequent events.

The module docstring's proof is checked step by step (the variance and third-moment inequalities in exact
arithmetic, the Berry-Esseen step on exact laws), the bound's error rate at the boundary over seeds, its value
against an independent high-precision solution of the rejection's boundary, and its use inside ``audit_pair``.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import special, stats

from dptutor.audit import PairAudit, audit_pair
from dptutor.audit.paired import BERRY_ESSEEN_C, NUISANCE_SHARE, paired_projection, paired_ratio_bound
from dptutor.zoo import laplace_count

GRID_A = [Fraction(1), Fraction(11, 10), Fraction(3, 2), Fraction(2), Fraction(3)]


def _law(a: Fraction, q: Fraction) -> dict[Fraction, Fraction]:
    """The law of d = B - a B' with B ~ Bernoulli(a q), B' ~ Bernoulli(q), exactly."""
    p = a * q
    law: dict[Fraction, Fraction] = {}
    for value, prob in ((Fraction(1), p * (1 - q)), (-a, (1 - p) * q), (1 - a, p * q), (Fraction(0), (1 - p) * (1 - q))):
        law[value] = law.get(value, Fraction(0)) + prob
    return law


@pytest.mark.parametrize("a", GRID_A)
def test_variance_and_third_moment_steps(a: Fraction) -> None:
    """Steps 1-3: mean 0, q (1 - q) <= v <= a (1 + a) q (1 - q), and E|d|^3 <= a v, for q up to 1 / a."""
    for q in [Fraction(k, 40) / a for k in range(1, 41)]:
        law = _law(a, q)
        assert sum(law.values()) == 1
        assert sum(x * w for x, w in law.items()) == 0
        v = sum(x * x * w for x, w in law.items())
        assert v == a * q * (1 - a * q) + a * a * q * (1 - q)
        assert q * (1 - q) <= v <= a * (1 + a) * q * (1 - q)
        assert sum(abs(x) ** 3 * w for x, w in law.items()) <= a * v


@pytest.mark.parametrize(("n", "a", "q"), [(20, 1.0, 0.5), (40, 1.5, 0.3), (60, 2.0, 0.1), (80, 1.1, 0.45)])
def test_berry_esseen_step_on_exact_laws(n: int, a: float, q: float) -> None:
    """Step 4: the exact upper tail of D = K - a K' (two binomials enumerated) stays under 1 - Phi(t) + b*."""
    p = a * q
    k = np.arange(n + 1)
    joint = np.outer(stats.binom.pmf(k, n, p), stats.binom.pmf(k, n, q))
    d = k[:, None] - a * k[None, :]
    v = p * (1 - p) + a * a * q * (1 - q)
    allowance = BERRY_ESSEEN_C * a / math.sqrt(n * q * (1 - q))
    worst = -1.0
    for t in np.linspace(-3.0, 4.0, 141):
        tail = float(joint[d >= t * math.sqrt(n * v) - 1e-12].sum())
        worst = max(worst, tail - (stats.norm.sf(t) + allowance))
    assert worst <= 0.0


@pytest.mark.parametrize(("n", "p", "q"), [(100_000, 0.5, 0.5 * math.exp(-0.1)), (20_000, 0.3, 0.2),
                                          (1_000_000, 0.02, 0.02 * math.exp(-0.05)), (50_000, 0.4, 0.4)])
def test_error_rate_at_the_boundary(n: int, p: float, q: float) -> None:
    """Over 3,000 seeds the bound exceeds the true ln(p / q) (or 0) at a rate consistent with at most 5%: the count
    stays under the binomial 99% quantile of 5%."""
    rng = np.random.default_rng(20261128)
    seeds = 3_000
    k_num, k_den = rng.binomial(n, p, seeds), rng.binomial(n, q, seeds)
    truth = max(0.0, math.log(p / q))
    above = sum(paired_ratio_bound(int(a), int(b), n) > truth for a, b in zip(k_num, k_den))
    assert above <= stats.binom.ppf(0.99, seeds, 0.05)


def test_tighter_than_the_poisson_share_on_a_frequent_event() -> None:
    """At p = 1/2 the paired bound's mean gap to the truth is below the share bound's normal-theory gap
    z sqrt((1/p + 1/q) / n) / 1, and close to the binomial one z sqrt(((1-p)/p + (1-q)/q) / n)."""
    n, p = 4_900_000, 0.5
    q = p * math.exp(-0.1)
    rng = np.random.default_rng(7)
    bounds = [paired_ratio_bound(int(a), int(b), n) for a, b in zip(rng.binomial(n, p, 200), rng.binomial(n, q, 200))]
    gap = 0.1 - float(np.mean(bounds))
    z = stats.norm.isf(0.05)
    share_gap = z * math.sqrt((1 / p + 1 / q) / n)
    binomial_gap = z * math.sqrt(((1 - p) / p + (1 - q) / q) / n)
    se = float(np.std(bounds)) / math.sqrt(200)
    assert gap < share_gap - 4 * se
    assert gap < 1.15 * binomial_gap


@pytest.mark.parametrize(("k_num", "k_den", "n", "level"), [(2_500_000, 2_262_000, 5_000_000, 0.95),
                                                            (30_000, 24_000, 100_000, 0.9), (52_000, 40_000, 200_000, 0.99),
                                                            (2**59 + 12_345, 521_000_000_000_000_001, 2**60, 0.95)])
def test_matches_a_high_precision_solution(k_num: int, k_den: int, n: int, level: float) -> None:
    """The double returned is at most the boundary solved at 40 digits, and within 1e-7 of it (also with counts beyond
    2^53, where the difference of the counts in doubles would lose units)."""
    gamma = 1 - level
    beta = NUISANCE_SHARE * gamma
    low = stats.beta.ppf(beta / 2, k_den, n - k_den + 1)
    high = stats.beta.isf(beta / 2, k_den + 1, n - k_den)
    most = 0.25 if low <= 0.5 <= high else max(low * (1 - low), high * (1 - high))
    least = min(low * (1 - low), high * (1 - high))
    mpmath.mp.dps = 40

    def gap(eps: mpmath.mpf) -> mpmath.mpf:
        a = mpmath.e ** eps
        allowance = BERRY_ESSEEN_C * a / mpmath.sqrt(n * mpmath.mpf(least))
        z = -mpmath.sqrt(2) * mpmath.erfinv(2 * (gamma - beta - allowance) - 1)
        return k_num - a * k_den - z * mpmath.sqrt(n * a * (1 + a) * mpmath.mpf(most))

    root = float(mpmath.findroot(gap, (mpmath.mpf(0), mpmath.log(mpmath.mpf(k_num) / k_den)), solver="anderson"))
    got = paired_ratio_bound(k_num, k_den, n, level)
    assert got <= root
    assert root - got < 1e-7


def test_monotone_in_the_counts() -> None:
    n = 200_000
    ups = [paired_ratio_bound(k, 80_000, n) for k in range(80_000, 100_001, 2_000)]
    downs = [paired_ratio_bound(100_000, k, n) for k in range(70_000, 100_001, 2_000)]
    assert ups == sorted(ups) and ups[-1] > 0
    assert downs == sorted(downs, reverse=True) and downs[-1] == 0.0


def test_zero_where_the_allowance_eats_the_error() -> None:
    """A ratio of 7 from 1,000 runs: the Berry-Esseen allowance (C a / sqrt(n q (1 - q))) exceeds the error at
    every ratio above 1.3, and the bound is small or 0; the share bound is the one for such events."""
    assert paired_ratio_bound(700, 100, 1_000) < 0.3
    assert paired_ratio_bound(5, 1, 10) == 0.0
    assert paired_ratio_bound(0, 0, 10) == 0.0
    assert paired_ratio_bound(10, 10, 10) == 0.0


@pytest.mark.parametrize(("kwargs", "error", "name"), [
    ({"k_num": 11, "k_den": 1, "n": 10}, ValueError, "k_num"),
    ({"k_num": 5, "k_den": -1, "n": 10}, ValueError, "k_den"),
    ({"k_num": True, "k_den": 1, "n": 10}, TypeError, "k_num"),
    ({"k_num": 5.0, "k_den": 1, "n": 10}, TypeError, "k_num"),
    ({"k_num": 5, "k_den": 1, "n": 0}, ValueError, "n"),
    ({"k_num": 5, "k_den": 1, "n": 2**62 + 1}, ValueError, "n"),
    ({"k_num": 5, "k_den": 1, "n": 10, "confidence_level": 1.0}, ValueError, "confidence_level"),
    ({"k_num": 5, "k_den": 1, "n": 10, "confidence_level": float("nan")}, ValueError, "confidence_level"),
])
def test_bad_input_is_refused(kwargs: dict, error: type, name: str) -> None:
    with pytest.raises(error, match=name):
        paired_ratio_bound(**kwargs)


def test_projection_agrees_with_the_bound_and_refuses_bad_input() -> None:
    n, level = 5_000_000, 0.95
    p = np.array([0.5, 0.3, 0.05])
    q = p * math.exp(-0.1)
    projected = paired_projection(p, q, n, float(stats.norm.isf(1 - level)), 1 - level)
    realised = [paired_ratio_bound(round(n * a), round(n * b), n, level) for a, b in zip(p, q)]
    assert np.allclose(projected, realised, atol=2e-4)
    assert paired_projection(np.array([0.2]), np.array([0.3]), n, 1.6, 0.05)[0] == -np.inf
    with pytest.raises(ValueError, match="p_num"):
        paired_projection(np.array([1.5]), np.array([0.3]), n, 1.6, 0.05)
    with pytest.raises(ValueError, match="same shape"):
        paired_projection(np.array([0.5, 0.4]), np.array([0.3]), n, 1.6, 0.05)
    with pytest.raises(ValueError, match="z"):
        paired_projection(np.array([0.5]), np.array([0.3]), n, 1e308, 0.05)
    assert special.ndtri(0.5) == 0.0  # the projection's quantiles come from ndtri


def test_joint_audits_use_it_for_frequent_events_only() -> None:
    """On a Laplace count the chosen event has probability about 0.4 and the joint audit bounds it by the paired
    difference, closer to epsilon = 1 than two bounds at the same budget; on a thin tail it keeps the share."""
    lap = functools.partial(laplace_count, epsilon=1.0)
    joint = audit_pair(lap, 0.0, 1.0, epsilon=1.0, trials=10**6, rng=2022, selection=0.3, bounds="joint")
    two = audit_pair(lap, 0.0, 1.0, epsilon=1.0, trials=10**6, rng=2022, selection=0.3, bounds="two")
    assert joint.paired == (True,) and joint.candidates is None
    assert two.paired is None
    assert two.lower_bound < joint.lower_bound <= 1.0
    assert joint.bound_at(joint.confidence) == joint.lower_bound
    assert joint.bound_at(0.9) > joint.lower_bound
    rare = audit_pair(lap, 0.0, 1.0, epsilon=1.0, trials=3_000, rng=5, selection=0.3, bounds="joint")
    assert rare.paired is not None and not any(rare.paired)


def test_pair_audit_checks_the_paired_field() -> None:
    base = dict(lower_bound=0.5, estimate=0.6, event="E", counts=np.array([[60, 40], [40, 60]]), trials=200,
                epsilon=1.0, estimation_trials=100, bounds="joint")
    assert PairAudit(**base, paired=(True,)).paired == (True,)
    with pytest.raises(TypeError, match="paired"):
        PairAudit(**base, paired=(1,))
    with pytest.raises(TypeError, match="paired"):
        PairAudit(**base, paired=[True])
    with pytest.raises(ValueError, match="paired"):
        PairAudit(**base, paired=(True, False))
    with pytest.raises(ValueError, match="paired"):
        PairAudit(**{**base, "bounds": "two"}, paired=(True,))


def test_joint_audits_at_the_boundary_err_within_the_level() -> None:
    """The whole joint audit, choosing between the two bounds on its selection half: on the Laplace count at epsilon = 1
    (exact discrete noise, so the events y >= t, t >= 1, have loss exactly epsilon) most audits choose the paired bound,
    and over 400 seeds the bound exceeds epsilon at a rate consistent with at most 5%."""
    lap = functools.partial(laplace_count, epsilon=1.0)
    runs = [audit_pair(lap, 0.0, 1.0, epsilon=1.0, trials=50_000, rng=(20261128, s), selection=0.3, bounds="joint")
            for s in range(400)]
    assert sum(r.paired[0] for r in runs) >= 300
    assert sum(r.lower_bound > 1.0 for r in runs) <= stats.binom.ppf(0.99, 400, 0.05)
