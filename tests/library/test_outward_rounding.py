"""Privacy bounds never come out below their exact value in real arithmetic (each float input taken as the
rational it exactly equals): epsilons, deltas and losses are rounded UP, lower bounds on an attacker's
error DOWN.  References: ``fractions.Fraction`` where the value is rational, 60-digit ``mpmath`` otherwise."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from dptutor.accounting import (
    advanced_composition,
    basic_composition,
    group_privacy,
    optimal_composition_delta,
    optimal_composition_epsilon,
    tradeoff_beta,
)
from dptutor.composition import Budget, majority_vote_loss, repeated_laplace_box_loss, sequential_epsilon

pytestmark = pytest.mark.filterwarnings("error")

EPSILONS = st.floats(min_value=1e-300, max_value=50.0, allow_nan=False, allow_infinity=False)
DELTAS = st.floats(min_value=0.0, max_value=1e-3, allow_nan=False, allow_infinity=False)
KS = st.integers(min_value=2, max_value=10**6)


def _rounded_up(got: float, exact: Fraction) -> bool:
    """``got`` is the smallest double at least ``exact``."""
    return Fraction(got) >= exact and Fraction(math.nextafter(got, -math.inf)) < exact


# ---------------------------------------------------------------------------------------------
# k * epsilon: basic composition and group privacy
# ---------------------------------------------------------------------------------------------


@seed(20240601)
@settings(max_examples=300, deadline=None)
@given(EPSILONS, DELTAS, KS)
def test_basic_composition_rounds_k_epsilon_and_k_delta_up(eps, dlt, k):
    total_eps, total_delta = basic_composition(eps, dlt, k)
    assert _rounded_up(total_eps, k * Fraction(eps))
    if k * Fraction(dlt) < 1:
        assert _rounded_up(total_delta, k * Fraction(dlt)) if dlt > 0 else total_delta == 0.0


def test_basic_composition_examples_that_were_an_ulp_low():
    assert Fraction(basic_composition(0.7, 0.0, 3)[0]) >= 3 * Fraction(0.7)  # was 2.0999999999999996
    assert Fraction(basic_composition(0.0, 1e-7, 3)[1]) >= 3 * Fraction(1e-7)
    assert basic_composition(0.25, 1e-7, 8)[0] == 2.0  # exact products are unchanged


@seed(20240602)
@settings(max_examples=200, deadline=None)
@given(EPSILONS, KS)
def test_group_privacy_rounds_k_epsilon_up(eps, k):
    assert _rounded_up(group_privacy(eps, k)[0], k * Fraction(eps))
    assert _rounded_up(group_privacy(eps, k, 1e-9)[0], k * Fraction(eps))


def test_group_privacy_with_more_records_than_floats_and_a_subnormal_epsilon():
    """k = 10^320 (no float holds it), epsilon = delta = 5e-324: float(k) raised OverflowError."""
    eps_group, delta_group = group_privacy(5e-324, 10**320, 5e-324)
    assert _rounded_up(eps_group, 10**320 * Fraction(5e-324))
    with mpmath.workdps(60):
        e = mpmath.mpf(5e-324)
        exact = e * mpmath.expm1(10**320 * e) / mpmath.expm1(e)
        assert exact <= delta_group <= exact * (1 + 1e-12)


# ---------------------------------------------------------------------------------------------
# advanced composition
# ---------------------------------------------------------------------------------------------


def _advanced_exact(eps: float, k: int, dp: float) -> mpmath.mpf:
    with mpmath.workdps(60):
        e = mpmath.mpf(eps)
        return e * mpmath.sqrt(2 * k * -mpmath.log(mpmath.mpf(dp))) + k * e * mpmath.expm1(e)


@seed(20240603)
@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-6, max_value=5.0), st.integers(min_value=1, max_value=10**4),
       st.floats(min_value=1e-12, max_value=0.5), DELTAS)
def test_advanced_composition_is_never_below_its_exact_value(eps, k, dp, dlt):
    total_eps, total_delta = advanced_composition(eps, dlt, k, dp)
    exact = _advanced_exact(eps, k, dp)
    assert exact <= total_eps <= exact * (1 + 1e-14)
    assert Fraction(total_delta) >= min(1, k * Fraction(dlt) + Fraction(dp))


def test_advanced_composition_examples_that_were_an_ulp_low():
    for eps, k, dp in [(0.1, 100, 1e-6), (1.0, 3, 0.1), (0.5, 7, 1e-5), (2.0, 10, 1e-9)]:
        assert advanced_composition(eps, 0.0, k, dp)[0] >= _advanced_exact(eps, k, dp)
    assert Fraction(advanced_composition(1.0, 0.3, 1, 0.1)[1]) >= Fraction(0.3) + Fraction(0.1)
    assert advanced_composition(0.0, 0.0, 5, 0.1) == (0.0, 0.1)


# ---------------------------------------------------------------------------------------------
# optimal composition (Kairouz, Oh and Viswanath)
# ---------------------------------------------------------------------------------------------


def _optimal_exact(eps: float, k: int, eps_t: float, dlt: float = 0.0) -> mpmath.mpf:
    """The hockey stick of the k-fold randomized response at eps_t, term by term in 60 digits."""
    with mpmath.workdps(60):
        e, t = mpmath.mpf(eps), mpmath.mpf(eps_t)
        log_q = -mpmath.log1p(mpmath.exp(e))
        hockey = mpmath.mpf(0)
        for i in range(k, -1, -1):
            m = 2 * i - k
            if not m * Fraction(eps) > Fraction(eps_t):
                break
            log_p = mpmath.log(mpmath.binomial(k, i)) + i * (e + log_q) + (k - i) * log_q
            hockey += mpmath.exp(log_p) * -mpmath.expm1(t - m * e)
        if dlt == 0.0:
            return hockey
        return -mpmath.expm1(k * mpmath.log1p(-mpmath.mpf(dlt)) + mpmath.log1p(-hockey))


@pytest.mark.parametrize(("eps", "k", "eps_t", "dlt", "was"), [
    (math.log(2.0), 3, 3 * math.log(2.0), 0.0, 0.0),  # 3 * ln 2 rounds below 3 eps: the last term counts
    (math.log(5.0), 3, 3 * math.log(5.0), 0.0, 0.0),
    (1.0, 1, 1.0, 1e-20, 0.0),  # 1 - (1 - delta)^k (1 - hockey) cancelled to 0
    (0.01, 10**5, 999.0, 0.0, 0.0),  # the one positive term underflowed
    (0.1, 200, 3.0, 0.0, 0.030980328520913605),  # log-space cancellation: 6e-14 low
    (0.001, 10**5, 1.0, 0.0, 0.00010979545839108883),  # 1.5e-10 low
    (3.0, 50, 20.0, 0.0, 0.9999999999999897),
])
def test_optimal_composition_delta_examples_that_were_low(eps, k, eps_t, dlt, was):
    exact = _optimal_exact(eps, k, eps_t, dlt)
    assert was < exact
    got = optimal_composition_delta(eps, k, eps_t, dlt)
    assert exact <= got <= max(exact * (1 + 1e-8), 5e-324)  # 5e-324: the exact value is 8e-29707


@seed(20240604)
@settings(max_examples=120, deadline=None)
@given(st.floats(min_value=1e-3, max_value=5.0), st.integers(min_value=1, max_value=60),
       st.floats(min_value=0.0, max_value=1.0), st.sampled_from([0.0, 1e-300, 1e-20, 1e-9, 1e-3]))
def test_optimal_composition_delta_is_never_below_its_exact_value(eps, k, fraction, dlt):
    eps_t = fraction * k * eps
    exact = _optimal_exact(eps, k, eps_t, dlt)
    got = optimal_composition_delta(eps, k, eps_t, dlt)
    assert exact <= got
    assert got <= exact * (1 + 1e-11) or got == 1.0 or got == math.nextafter(float(exact), math.inf)
    assert (got == 0.0) == (exact == 0)


def test_optimal_composition_epsilon_meets_its_target_exactly():
    """At delta_total = 0 the answer is k eps: it was k eps rounded to nearest, below k eps for eps = ln 2.
    The delta is 0 exactly where the exact value is (which terms count is decided exactly)."""
    assert optimal_composition_delta(0.7, 1, 0.7) == 0.0
    assert optimal_composition_delta(0.4, 3, 3 * 0.4) == 0.0  # 3 * 0.4 rounds above 3 eps
    assert optimal_composition_delta(0.0, 5, 0.0) == 0.0
    for eps, k in [(math.log(2.0), 3), (math.log(5.0), 3), (0.7, 3)]:
        got = optimal_composition_epsilon(eps, k, 0.0)
        assert got >= k * Fraction(eps)
        assert _optimal_exact(eps, k, got) == 0
    got = optimal_composition_epsilon(0.1, 50, 1e-6)
    assert _optimal_exact(0.1, 50, got) <= 1e-6


# ---------------------------------------------------------------------------------------------
# the trade-off curve: a lower bound on beta, so rounded DOWN
# ---------------------------------------------------------------------------------------------


def _beta_exact(alpha: float, eps: float, dlt: float) -> mpmath.mpf:
    with mpmath.workdps(60):
        a, e, d = mpmath.mpf(alpha), mpmath.mpf(eps), mpmath.mpf(dlt)
        return max(mpmath.mpf(0), 1 - d - mpmath.exp(e) * a, mpmath.exp(-e) * (1 - d - a))


@seed(20240605)
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=8),
       st.floats(min_value=0.0, max_value=20.0), st.floats(min_value=0.0, max_value=0.5))
def test_tradeoff_beta_is_never_above_its_exact_value(alpha, eps, dlt):
    got = tradeoff_beta(alpha, eps, dlt)
    for a, b in zip(alpha, got):
        exact = _beta_exact(a, eps, dlt)
        assert b <= exact
        assert b >= exact - 4e-16 * (1 + math.exp(min(eps, 700.0)) * a)


def test_tradeoff_beta_examples_that_were_an_ulp_high():
    for a, eps, dlt in [(0.1, 1.0, 0.01), (0.3, 0.5, 0.0), (0.2, 0.1, 0.3), (0.7, 2.0, 0.1)]:
        assert tradeoff_beta(a, eps, dlt)[()] <= _beta_exact(a, eps, dlt)
    assert np.array_equal(tradeoff_beta([0.0, 0.25, 1.0], 0.0), [1.0, 0.75, 0.0])  # exact stays exact


# ---------------------------------------------------------------------------------------------
# composition.py: sums, the budget, the events' losses
# ---------------------------------------------------------------------------------------------


@seed(20240606)
@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=1e-300, max_value=1e3), min_size=1, max_size=20))
def test_sequential_epsilon_and_budget_used_round_up(epsilons):
    exact = sum((Fraction(e) for e in epsilons), Fraction(0))
    assert _rounded_up(sequential_epsilon(epsilons), exact)
    assert _rounded_up(Budget(2e4, tuple(epsilons)).used, exact)


def test_sequential_epsilon_example_that_was_low():
    assert sequential_epsilon([1.0, 2.0**-60]) > 1.0  # was 1.0: the exact sum is above it
    assert Budget(10.0, (1.0, 2.0**-60)).used > 1.0
    assert sequential_epsilon([0.3, 0.5]) == 0.8  # already above the exact sum: unchanged


@seed(20240607)
@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=10**6), EPSILONS)
def test_repeated_laplace_box_loss_rounds_k_epsilon_up(k, eps):
    assert _rounded_up(repeated_laplace_box_loss(k, eps)[0], k * Fraction(eps))


def _box_loss_exact(k: int, eps: float, t: float) -> mpmath.mpf:
    with mpmath.workdps(80 + int(0.5 * t * eps)):  # the loss is about e^(-t eps): that many digits cancel
        e, t = mpmath.mpf(eps), mpmath.mpf(t)

        def cdf(x: mpmath.mpf) -> mpmath.mpf:
            return mpmath.exp(x * e) / 2 if x <= 0 else 1 - mpmath.exp(-x * e) / 2

        return k * (mpmath.log(cdf(t)) - mpmath.log(cdf(t - 1)))


@seed(20240608)
@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=1000), st.floats(min_value=1e-3, max_value=30.0),
       st.floats(min_value=1e-3, max_value=20.0))
def test_repeated_laplace_box_loss_between_and_beyond_the_answers_is_never_low(k, eps, t):
    exact = _box_loss_exact(k, eps, t)
    got = repeated_laplace_box_loss(k, eps, t)[0]
    assert exact <= got <= exact * (1 + 1e-12)


def _vote_loss_exact(k: int, eps: float) -> mpmath.mpf:
    """Both binomial tails summed term by term, under X (p0) and X' (1 - p0), in enough digits."""
    with mpmath.workdps(800 if eps < 1e-30 else 80 + int(0.25 * eps)):  # 1 - p0 keeps p0 = e^(-eps/2) / 2
        p0 = mpmath.exp(-mpmath.mpf(eps) / 2) / 2
        cut = k // 2

        def tails(p: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
            terms = [mpmath.binomial(k, i) * p**i * (1 - p) ** (k - i) for i in range(k + 1)]
            return mpmath.fsum(terms[cut + 1:]), mpmath.fsum(terms[:cut + 1])

        (one0, zero0), (one1, zero1) = tails(p0), tails(1 - p0)
        return max(abs(mpmath.log(one1 / one0)), abs(mpmath.log(zero1 / zero0)))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 101, 1000])
def test_majority_vote_loss_is_never_zero_nor_low_for_a_tiny_epsilon(k):
    """majority_vote_loss(3, 5e-324) was 0.0 (and 1e-320, 1e-310 lost digits); the loss is linear in epsilon."""
    for eps in (5e-324, 1e-320, 1e-310, 1e-300):
        got = majority_vote_loss(k, eps)
        assert got > 0.0
        assert got >= _vote_loss_exact(k, eps)
        assert Fraction(got) <= k * Fraction(eps) or got == math.nextafter(float(k * Fraction(eps)), math.inf)


@pytest.mark.parametrize(("k", "eps", "was"), [
    (101, 0.0007153212214832793, 0.005749094330181004),  # scipy's tails: 8e-13 low
    (300, 0.0006342871970601607, 0.009179532705719695),
    (3, 0.0018936151833307986, 0.002839079591797966),
    (3, 5e-324, 0.0),
])
def test_majority_vote_loss_examples_that_were_low(k, eps, was):
    exact = _vote_loss_exact(k, eps)
    assert was < exact <= majority_vote_loss(k, eps)


@seed(20240609)
@settings(max_examples=120, deadline=None)
@given(st.sampled_from([1, 2, 3, 4, 5, 7, 10, 11, 20, 64, 101, 300]), st.floats(min_value=-7.0, max_value=3.3))
def test_majority_vote_loss_is_never_below_its_exact_value(k, log10_eps):
    eps = 10.0**log10_eps
    exact = _vote_loss_exact(k, eps)
    got = majority_vote_loss(k, eps)
    assert exact <= got <= exact * (1 + 1e-10)
    assert Fraction(got) <= k * Fraction(eps) or got == math.nextafter(float(k * Fraction(eps)), math.inf)
