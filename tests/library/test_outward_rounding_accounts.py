"""Privacy bounds of dptutor.renyi, dptutor.amplification and dptutor.pld never come out below their exact
value in real arithmetic (each float input taken as the rational it exactly equals): RDP, zCDP, epsilons,
deltas and infinity masses are rounded UP.  References: ``fractions.Fraction`` where the value is rational,
``mpmath`` at 40 digits otherwise."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from dptutor.amplification import subsampled_delta, subsampled_epsilon
from dptutor.pld import PrivacyLossDistribution, pld_gaussian
from dptutor.renyi import rdp_gaussian, rdp_subsampled_gaussian, rdp_to_dp, zcdp_gaussian, zcdp_to_dp

pytestmark = pytest.mark.filterwarnings("error")

SIGMAS = st.floats(min_value=1e-3, max_value=1e3, allow_nan=False, allow_infinity=False)
ORDERS_ = st.floats(min_value=1.0 + 2.0**-40, max_value=1e4, allow_nan=False, allow_infinity=False)
DELTAS = st.floats(min_value=1e-300, max_value=0.5, allow_nan=False, allow_infinity=False)
RATES = st.floats(min_value=1e-12, max_value=1.0, exclude_max=True, allow_nan=False, allow_infinity=False)


def _rounded_up(got: float, exact: Fraction) -> bool:
    """``got`` is the smallest double at least ``exact``."""
    return Fraction(got) >= exact and Fraction(math.nextafter(got, -math.inf)) < exact


def _mp(x: float) -> mpmath.mpf:
    return mpmath.mpf(x)  # exact: 40 digits hold any double


def _above(got: float, exact: mpmath.mpf, rel: float) -> bool:
    """``exact <= got <= exact (1 + rel)`` (``got`` compared as the rational it is)."""
    return exact <= _mp(got) <= exact * (1 + mpmath.mpf(rel))


# ---------------------------------------------------------------------------------------------
# renyi: the Gaussian's RDP and zCDP, rational: rounded up exactly
# ---------------------------------------------------------------------------------------------


@seed(20240701)
@settings(max_examples=200, deadline=None)
@given(ORDERS_, SIGMAS, st.floats(min_value=1e-3, max_value=1e3))
def test_rdp_gaussian_and_zcdp_gaussian_round_up(order, sigma, sensitivity):
    """order Delta^2 / (2 sigma^2) was rounded to nearest: an ulp low for about half the inputs."""
    rho = Fraction(sensitivity) ** 2 / (2 * Fraction(sigma) ** 2)
    assert _rounded_up(rdp_gaussian(order, sigma, sensitivity), Fraction(order) * rho)
    assert _rounded_up(zcdp_gaussian(sigma, sensitivity), rho)


def test_rdp_gaussian_examples_that_were_low_or_zero():
    assert Fraction(rdp_gaussian(3.0, 0.7)) >= 3 / (2 * Fraction(0.7) ** 2)  # was 3.0612244897959187, an ulp low
    assert rdp_gaussian(2.0, 1e200) == zcdp_gaussian(1e200) == 5e-324  # were 0.0: the exact value is 1e-400
    assert zcdp_gaussian(1e-300) == math.inf  # beyond the doubles: inf, never a finite value below it
    assert rdp_gaussian(2.0, 1.0) == 1.0  # exact values are unchanged


# ---------------------------------------------------------------------------------------------
# renyi: conversions to (epsilon, delta)
# ---------------------------------------------------------------------------------------------


def _zcdp_exact(rho: float, delta: float) -> mpmath.mpf:
    return _mp(rho) + 2 * mpmath.sqrt(_mp(rho) * -mpmath.log(_mp(delta)))


@seed(20240702)
@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1e3), DELTAS)
def test_zcdp_to_dp_is_never_below_the_exact_epsilon(rho, delta):
    with mpmath.workdps(40):
        assert _above(zcdp_to_dp(rho, delta), _zcdp_exact(rho, delta), 2e-15)


def test_zcdp_to_dp_subnormal_rho_keeps_its_digits():
    """rho ln(1/delta) was rounded as a subnormal: 4% low at rho = 5e-324."""
    with mpmath.workdps(40):
        for rho in (5e-324, 3e-322, 1e-310):
            assert _above(zcdp_to_dp(rho, 1e-5), _zcdp_exact(rho, 1e-5), 1e-15)
    assert zcdp_to_dp(0.0, 1e-5) == 0.0


def _conversion_exact(order: float, rdp: float, delta: float, method: str) -> mpmath.mpf:
    a, r, d = _mp(order), _mp(rdp), _mp(delta)
    if method == "classic":
        return r - mpmath.log(d) / (a - 1)
    return r + mpmath.log(1 - 1 / a) - (mpmath.log(d) + mpmath.log(a)) / (a - 1)


@seed(20240703)
@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(ORDERS_, st.floats(min_value=0.0, max_value=100.0)), min_size=1, max_size=4),
       DELTAS, st.sampled_from(["classic", "improved"]))
def test_rdp_to_dp_is_never_below_the_exact_epsilon_at_its_order(pairs, delta, method):
    orders, rdp = [a for a, _ in pairs], [r for _, r in pairs]
    eps, order = rdp_to_dp(orders, rdp, delta, method=method)
    with mpmath.workdps(40):
        at = [max(mpmath.mpf(0), _conversion_exact(a, r, delta, method)) for a, r in pairs]
        exact = min(e for e, a in zip(at, orders) if a == order)
        assert min(at) <= exact <= _mp(eps)  # never below the exact epsilon of the order it reports
        r = max(rdp)  # above it by a few ulps of the terms it sums (which may cancel)
        assert _mp(eps) <= exact + mpmath.mpf(1e-14) * (1 + r + (math.log(order / delta) + 1) / (order - 1))


def test_rdp_to_dp_examples_that_were_an_ulp_low():
    with mpmath.workdps(40):
        eps, _ = rdp_to_dp([2.0], [0.1], 1e-5, method="classic")
        assert _mp(eps) >= _conversion_exact(2.0, 0.1, 1e-5, "classic")
        eps, _ = rdp_to_dp([3.0], [0.3], 1e-6)
        assert _mp(eps) >= _conversion_exact(3.0, 0.3, 1e-6, "improved")


# ---------------------------------------------------------------------------------------------
# renyi: the subsampled Gaussian
# ---------------------------------------------------------------------------------------------


def _subsampled_exact(order: int, sigma: float, q: float) -> mpmath.mpf:
    s, p = _mp(sigma), _mp(q)
    total = mpmath.fsum(mpmath.binomial(order, j) * (1 - p) ** (order - j) * p**j * mpmath.expm1((j * j - j) / (2 * s * s))
                        for j in range(2, order + 1))
    return mpmath.log1p(total) / (order - 1)


@seed(20240704)
@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=2, max_value=64), st.floats(min_value=0.3, max_value=1e4), RATES)
def test_rdp_subsampled_gaussian_is_never_below_the_exact_value(order, sigma, q):
    with mpmath.workdps(40):
        assert _above(rdp_subsampled_gaussian(order, sigma, q), _subsampled_exact(order, sigma, q), 1e-12)


@pytest.mark.parametrize(("order", "sigma", "q"), [(2, 1e200, 0.5), (10, 1e160, 1e-100), (5, 1e155, 0.3)])
def test_rdp_subsampled_gaussian_huge_sigma_is_never_zero(order, sigma, q):
    """(j^2 - j) / (2 sigma^2) underflowed to 0 and the RDP came out 0: it is tiny but positive."""
    assert rdp_subsampled_gaussian(order, sigma, q) > 0.0


def test_rdp_subsampled_gaussian_examples_that_were_low():
    with mpmath.workdps(40):
        for order, sigma, q in [(2, 1.0, 0.01), (8, 1.0, 0.05), (5, 1e5, 1e-3), (3, 1e150, 0.5)]:
            assert _mp(rdp_subsampled_gaussian(order, sigma, q)) >= _subsampled_exact(order, sigma, q)


# ---------------------------------------------------------------------------------------------
# amplification
# ---------------------------------------------------------------------------------------------


def _amplified_exact(eps: float, theta: float) -> mpmath.mpf:
    return mpmath.log1p(_mp(theta) * mpmath.expm1(_mp(eps)))


@seed(20240705)
@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-300, max_value=800.0), st.floats(min_value=5e-324, max_value=1.0, exclude_max=True))
def test_subsampled_epsilon_is_never_below_the_exact_value(eps, theta):
    with mpmath.workdps(40):
        exact = _amplified_exact(eps, theta)
        got = subsampled_epsilon(eps, theta)
        assert exact <= _mp(got) <= exact * (1 + mpmath.mpf(1e-12)) + mpmath.mpf(2e-323)
        assert got <= eps


def test_subsampled_epsilon_tiny_product_is_never_zero():
    """theta (e^eps - 1) underflowed: 0 for an exact value of 1e-330; and a few ulps low otherwise."""
    assert subsampled_epsilon(1e-300, 1e-30) == 5e-324
    with mpmath.workdps(40):
        assert _mp(subsampled_epsilon(0.1, 0.3)) >= _amplified_exact(0.1, 0.3)
        assert _mp(subsampled_epsilon(1.0, 0.01)) >= _amplified_exact(1.0, 0.01)


@seed(20240706)
@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=1.0))
def test_subsampled_delta_rounds_up(delta, theta):
    got, exact = subsampled_delta(delta, theta), Fraction(theta) * Fraction(delta)
    assert _rounded_up(got, exact) if exact else got == 0.0


def test_subsampled_delta_examples():
    assert Fraction(subsampled_delta(1e-5, 0.3)) >= Fraction(0.3) * Fraction(1e-5)  # was an ulp low
    assert subsampled_delta(5e-324, 0.3) == 5e-324  # was 0.0
    assert subsampled_delta(1e-5, 0.5) == 5e-06  # exact products are unchanged


# ---------------------------------------------------------------------------------------------
# pld
# ---------------------------------------------------------------------------------------------


def _pld_delta_exact(pld: PrivacyLossDistribution, eps: float) -> mpmath.mpf:
    """The delta of the discrete PLD, its losses (offset + m) grid taken in real arithmetic."""
    total = _mp(pld.infinity_mass)
    for m, p in enumerate(pld.pmf):
        loss = (pld.offset + m) * _mp(pld.grid)
        if loss > eps:
            total += _mp(p) * -mpmath.expm1(_mp(eps) - loss)
    return total


def test_pld_delta_counts_a_loss_an_ulp_above_epsilon():
    """5 * 0.1 is 0.5 in floats but 0.5 + 2.8e-17 exactly: delta(0.5) was 0, and epsilon(0) was 0.5."""
    pld = PrivacyLossDistribution(0.1, 5, np.array([1.0]))
    with mpmath.workdps(40):
        assert _mp(pld.delta(0.5)) >= _pld_delta_exact(pld, 0.5) > 0
        eps = pld.epsilon(0.0)
        assert _pld_delta_exact(pld, eps) == 0
    assert PrivacyLossDistribution(0.1, 5, np.array([1.0]), pessimistic=False).delta(0.5) == 0.0


@seed(20240707)
@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=8),
       st.floats(min_value=1e-3, max_value=0.5), st.integers(min_value=-20, max_value=20),
       st.floats(min_value=-2.0, max_value=5.0))
def test_pld_delta_is_an_upper_bound_and_the_optimistic_one_a_lower_bound(weights, grid, offset, eps):
    total = sum(weights)
    pmf = np.array(weights) / total if total > 0 else np.ones(len(weights)) / len(weights)
    with mpmath.workdps(40):
        upper = PrivacyLossDistribution(grid, offset, pmf)
        lower = PrivacyLossDistribution(grid, offset, pmf, pessimistic=False)
        exact = _pld_delta_exact(upper, eps)
        assert _mp(lower.delta(eps)) <= exact <= _mp(upper.delta(eps))


def test_composed_infinity_mass_does_not_cancel():
    """1 - (1 - a)(1 - b) was 0 for a = b = 1e-20: the infinite losses vanished from the composition."""
    pld = PrivacyLossDistribution(0.5, 0, np.array([0.5, 0.5 - 1e-20]), 1e-20)
    composed = pld.compose(2, tail=0.0)
    exact = 2 * Fraction(1e-20) - Fraction(1e-20) ** 2
    assert Fraction(composed.infinity_mass) >= exact
    assert composed.delta(10.0) >= 2e-20


def test_pld_gaussian_upper_tail_goes_to_infinity():
    """The mass above the last kept loss was taken as total - cumsum (it said 4e-16 for a true 1.5e-14), and
    the difference vanished from the PLD; the infinity mass must hold at least the exact tail above it."""
    sigma = 5.0
    pld = pld_gaussian(sigma, grid=1e-4)
    with mpmath.workdps(40):
        top = pld.offset + pld.pmf.size - 1
        y = 0.5 + sigma**2 * top * _mp(pld.grid)  # L > top grid  <=>  Y > y, with Y ~ N(1, sigma^2)
        tail = mpmath.ncdf(-(y - 1) / sigma)
        assert _mp(pld.infinity_mass) >= tail * (1 - mpmath.mpf(1e-9))


@pytest.mark.parametrize("claimed", [0.5, 2.0, 3.3])
def test_a_text_release_states_an_epsilon_never_below_its_exact_value(claimed):
    """A Laplace release's ``epsilon`` (``Delta_1 / t``, exact rationals) was rounded to nearest: with the wrong
    sensitivity at 7 steps in 10 dimensions, an ulp below the exact ratio at these three claims."""
    from dptutor.text_privacy import wrong_sensitivity_release

    release = wrong_sensitivity_release(bound=1.0, steps=7, dimension=10, epsilon=claimed)
    exact = Fraction(release.true_sensitivity) / release.scale
    assert Fraction(float(exact)) < exact  # the case the old code got wrong
    assert Fraction(release.epsilon) >= exact
    assert Fraction(math.nextafter(release.epsilon, 0.0)) < exact  # and the smallest such double
