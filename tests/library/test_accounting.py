"""Composition and accounting (dptutor.accounting): closed forms, brute force in exact arithmetic,
numerical integration, the PLD's sandwich around the exact Gaussian, and the agreement with Google's
dp-accounting (an optional extra: skipped with a reason when it is missing; CI installs it)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from dptutor.accounting import (
    ORDERS,
    PrivacyLossDistribution,
    advanced_composition,
    basic_composition,
    gaussian_composition_epsilon,
    group_privacy,
    optimal_composition_delta,
    optimal_composition_epsilon,
    pld_gaussian,
    rdp_gaussian,
    rdp_subsampled_gaussian,
    rdp_to_dp,
    tradeoff_beta,
    zcdp_gaussian,
    zcdp_to_dp,
)
from dptutor.approximate_dp import gaussian_delta


# ---------------------------------------------------------------------------------------------
# composition theorems
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "delta", "k", "dp", "expected"), [
    (0.1, 1e-6, 100, 1e-6, (0.1 * math.sqrt(200 * math.log(1e6)) + 10 * math.expm1(0.1), 100e-6 + 1e-6)),
    (1.0, 0.0, 1, 0.5, (math.sqrt(2 * math.log(2)) + math.expm1(1.0), 0.5)),
])
def test_advanced_composition_table(eps, delta, k, dp, expected):
    got = advanced_composition(eps, delta, k, dp)
    assert got == pytest.approx(expected, rel=1e-14)


def test_basic_composition_table():
    assert basic_composition(0.25, 1e-7, 8) == pytest.approx((2.0, 8e-7), rel=1e-15)
    assert basic_composition(1.0, 0.5, 4)[1] == 1.0  # a delta above 1 says nothing


def _brute_force_delta(base: Fraction, k: int, total: Fraction) -> Fraction:
    """delta(eps_total) of k randomized responses (P[1] = b/(1+b) on x, 1/(1+b) on x'), in exact
    arithmetic, by enumerating all 2^k output sequences: sum over outputs of (P - e^{eps_total} Q)_+."""
    p1, q1 = base / (1 + base), 1 / (1 + base)
    out = Fraction(0)
    for seq in itertools.product((0, 1), repeat=k):
        ones = sum(seq)
        p = p1**ones * (1 - p1) ** (k - ones)
        q = q1**ones * (1 - q1) ** (k - ones)
        out += max(Fraction(0), p - total * q)
    return out


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("base", [Fraction(3, 2), Fraction(2), Fraction(5)])
def test_optimal_composition_matches_brute_force(k, base):
    """KOV's formula (float, log space) against 2^k-outcome enumeration in Fractions, with e^eps and
    e^{eps_total} rational: agreement to 1e-12 relative at every eps_total = j eps."""
    eps = math.log(base)
    for j in range(0, k + 1):
        exact = _brute_force_delta(base, k, base**j)
        got = optimal_composition_delta(eps, k, j * eps)
        # The function sees the floats eps and j * eps, a few 1e-16 away (relatively) from ln(base) and
        # j ln(base): where the exact delta is 0 (j = k), theirs is up to a few 1e-16 (and rounded up).
        assert got == pytest.approx(float(exact), rel=1e-12, abs=1e-15)
        assert got >= 0.0


def test_optimal_composition_ordering_and_inverse():
    """Optimal <= advanced <= basic at the same delta (for many releases), and the inverse is exact."""
    eps, k, delta = 0.1, 200, 1e-6
    opt = optimal_composition_epsilon(eps, k, delta)
    adv = advanced_composition(eps, 0.0, k, delta)[0]
    assert opt < adv < basic_composition(eps, 0.0, k)[0]
    assert optimal_composition_delta(eps, k, opt) <= delta
    assert optimal_composition_delta(eps, k, opt * (1 - 1e-9)) > delta
    # with delta per release: 1 - (1 - delta)^k (1 - hockey)
    d = optimal_composition_delta(eps, k, opt, delta=1e-8)
    assert d == pytest.approx(1 - (1 - 1e-8) ** k * (1 - optimal_composition_delta(eps, k, opt)), rel=1e-12)


def test_optimal_composition_one_release():
    eps = 0.7
    assert optimal_composition_delta(eps, 1, eps) == 0.0
    # at eps_total = 0 the hockey stick is the total variation distance of randomized response
    assert optimal_composition_delta(eps, 1, 0.0) == pytest.approx(math.tanh(eps / 2), rel=1e-14)


# ---------------------------------------------------------------------------------------------
# the trade-off curve and group privacy
# ---------------------------------------------------------------------------------------------


def test_tradeoff_beta_table_and_randomized_response():
    eps, delta = 1.0, 0.01
    a = np.array([0.0, 0.1, 0.5, 1.0])
    expected = np.maximum.reduce([np.zeros(4), 1 - delta - math.e * a, (1 - delta - a) / math.e])
    assert np.allclose(tradeoff_beta(a, eps, delta), expected, rtol=1e-15)
    # randomized response attains the corner: alpha = beta = 1 / (1 + e^eps)
    corner = 1 / (1 + math.e)
    assert tradeoff_beta(corner, eps)[()] == pytest.approx(corner, rel=1e-14)


def test_tradeoff_beta_no_nan_at_infinite_epsilon():
    assert np.array_equal(tradeoff_beta([0.0, 0.5], math.inf), [1.0, 0.0])


@pytest.mark.parametrize(("eps", "k", "delta", "expected"), [
    (0.5, 3, 0.0, (1.5, 0.0)),
    (0.5, 3, 1e-6, (1.5, 1e-6 * (1 + math.exp(0.5) + math.exp(1.0)))),
    (1.0, 1, 1e-5, (1.0, 1e-5)),
    (0.0, 4, 1e-3, (0.0, 4e-3)),
])
def test_group_privacy_table(eps, k, delta, expected):
    got = group_privacy(eps, k, delta)
    assert got == pytest.approx(expected, rel=1e-13)
    assert got[1] <= k * math.exp((k - 1) * eps) * delta * (1 + 1e-15)


def test_group_privacy_chain_on_randomized_response():
    """The proof's chain, on randomized response over k flipped records (k-fold): the exact delta of
    group size k at k*eps is 0 and at (k-1)*eps positive, as pure group privacy says."""
    eps, k = 0.4, 3
    assert optimal_composition_delta(eps, k, k * eps) == 0.0
    assert optimal_composition_delta(eps, k, (k - 1) * eps) > 0.0


# ---------------------------------------------------------------------------------------------
# Renyi DP and zCDP
# ---------------------------------------------------------------------------------------------


def _renyi_numerical(order, log_p, log_q, lo=-60, hi=60):
    """D_order(P || Q) = ln(integral p^order q^(1 - order)) / (order - 1), by quadrature."""
    value = integrate.quad(lambda y: math.exp(order * log_p(y) + (1 - order) * log_q(y)), lo, hi, limit=400,
                           epsabs=0, epsrel=1e-12)[0]
    return math.log(value) / (order - 1)


@pytest.mark.parametrize(("order", "sigma"), [(2, 1.0), (3.5, 2.0), (10, 4.0), (1.5, 0.8)])
def test_rdp_gaussian_closed_form_vs_integration(order, sigma):
    got = rdp_gaussian(order, sigma)
    numerical = _renyi_numerical(order, stats.norm(0, sigma).logpdf, stats.norm(1, sigma).logpdf)
    assert got == pytest.approx(order / (2 * sigma**2), rel=1e-15)
    assert got == pytest.approx(numerical, rel=1e-8)


@pytest.mark.parametrize(("order", "sigma", "q"), [(2, 1.0, 0.01), (8, 1.0, 0.05), (20, 2.0, 0.1), (4, 0.7, 0.5)])
def test_rdp_subsampled_gaussian_vs_integration(order, sigma, q):
    """Mironov-Talwar-Zhang's binomial sum against the defining integral of the mixture's divergence."""
    mix = lambda y: np.logaddexp(math.log1p(-q) + stats.norm(0, sigma).logpdf(y), math.log(q) + stats.norm(1, sigma).logpdf(y))
    numerical = _renyi_numerical(order, mix, stats.norm(0, sigma).logpdf)
    assert rdp_subsampled_gaussian(order, sigma, q) == pytest.approx(numerical, rel=1e-8)


def test_rdp_subsampled_gaussian_limits():
    assert rdp_subsampled_gaussian(5, 1.3, 1.0) == pytest.approx(rdp_gaussian(5, 1.3), rel=1e-15)
    # small q: about q^2 order / sigma^2 (the leading term of the sum)
    small = rdp_subsampled_gaussian(2, 1.0, 1e-4)
    assert small == pytest.approx(math.log1p(1e-8 * math.expm1(1.0)), rel=1e-9)
    # monotone in q
    values = [rdp_subsampled_gaussian(8, 1.0, q) for q in (0.01, 0.1, 0.5, 1.0)]
    assert values == sorted(values)


def test_rdp_to_dp_classic_and_improved():
    rho = 0.02
    orders = np.array(ORDERS, dtype=float)
    eps_c, a_c = rdp_to_dp(orders, rho * orders, 1e-5, method="classic")
    expected = np.min(rho * orders + math.log(1e5) / (orders - 1))
    assert eps_c == pytest.approx(expected, rel=1e-15)
    eps_i, _ = rdp_to_dp(orders, rho * orders, 1e-5)
    assert eps_i < eps_c
    # both are upper bounds on the exact epsilon of this Gaussian (rho = 1 / (2 sigma^2))
    sigma = math.sqrt(1 / (2 * rho))
    from dptutor.approximate_dp import gaussian_epsilon

    assert gaussian_epsilon(1e-5, sigma) < eps_i


def test_zcdp():
    rho = zcdp_gaussian(2.0)
    assert rho == pytest.approx(1 / 8, rel=1e-15)
    assert zcdp_to_dp(rho, 1e-5) == pytest.approx(1 / 8 + 2 * math.sqrt(math.log(1e5) / 8), rel=1e-15)
    assert zcdp_to_dp(math.inf, 1e-5) == math.inf


# ---------------------------------------------------------------------------------------------
# privacy-loss distributions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sigma", "k"), [(1.0, 1), (5.0, 25), (10.0, 100)])
def test_pld_sandwiches_the_exact_gaussian(sigma, k):
    """k Gaussian releases are one Gaussian release with sigma / sqrt(k) (exact delta: Balle-Wang).
    The pessimistic PLD is above it and below its value k*h earlier; the optimistic one below it."""
    h = 1e-4
    upper = pld_gaussian(sigma, grid=h).compose(k)
    lower = pld_gaussian(sigma, grid=h, pessimistic=False).compose(k)
    for eps in (0.1, 0.5, 1.0, 2.0):
        exact = gaussian_delta(eps, sigma / math.sqrt(k))
        assert exact <= upper.delta(eps) + 1e-14
        assert upper.delta(eps) <= gaussian_delta(max(0.0, eps - k * h), sigma / math.sqrt(k)) + 1e-12
        assert lower.delta(eps) <= exact + 1e-12
    assert upper.epsilon(1e-5) - lower.epsilon(1e-5) == pytest.approx(k * h, rel=1e-6)


def test_pld_subsampled_single_step_vs_integration():
    """One subsampled-Gaussian step: the PLD's delta against the hockey-stick integral."""
    sigma, q, h = 1.0, 0.1, 1e-4
    mix = lambda y: (1 - q) * stats.norm.pdf(y, 0, sigma) + q * stats.norm.pdf(y, 1, sigma)
    for eps in (0.05, 0.2, 0.5):
        exact = integrate.quad(lambda y: max(0.0, mix(y) - math.exp(eps) * stats.norm.pdf(y, 0, sigma)), -40, 40,
                               limit=400, epsabs=1e-14)[0]
        hi = pld_gaussian(sigma, sampling_probability=q, grid=h).delta(eps)
        lo = pld_gaussian(sigma, sampling_probability=q, grid=h, pessimistic=False).delta(eps)
        assert lo - 1e-12 <= exact <= hi + 1e-12
        assert hi - lo < 1e-3


def test_pld_composition_is_a_distribution_and_pessimistic_tails():
    pld = pld_gaussian(2.0, sampling_probability=0.3, direction="add").compose(17)
    assert pld.pmf.sum() + pld.infinity_mass == pytest.approx(1.0, abs=1e-12)
    assert pld.infinity_mass <= 1e-13
    with pytest.raises(ValueError, match="pmf"):
        PrivacyLossDistribution(1e-3, 0, np.array([0.5]), 0.0)


def test_rdp_is_looser_than_pld_for_dp_sgd():
    """The subsampled Gaussian over many steps: RDP's epsilon is above the PLD's upper bound."""
    args = dict(sigma=1.0, k=300, delta=1e-5, sampling_probability=0.02)
    pld_hi = gaussian_composition_epsilon(**args)
    pld_lo = gaussian_composition_epsilon(**args, pessimistic=False)
    rdp = gaussian_composition_epsilon(**args, method="rdp")
    assert pld_lo < pld_hi < rdp


# ---------------------------------------------------------------------------------------------
# agreement with Google's dp-accounting (optional extra: pip install 'dptutor[accounting]')
# ---------------------------------------------------------------------------------------------

#: DP-SGD-like settings (sigma, sampling probability, steps) for the agreement test.
AGREEMENT_CASES = [(1.0, 0.01, 1000), (0.8, 0.05, 200), (2.0, 0.1, 500), (1.0, 1.0, 10)]

#: Relative agreement of the RDP epsilons at the same integer orders (the same formula; differences
#: are rounding in the two log-space sums).
RDP_TOLERANCE = 1e-9


@pytest.mark.parametrize(("sigma", "q", "steps"), AGREEMENT_CASES)
def test_agreement_with_dp_accounting(sigma, q, steps):
    dp_accounting = pytest.importorskip(
        "dp_accounting", reason="optional extra dp-accounting not installed (pip install 'dptutor[accounting]')")
    from dp_accounting import pld, rdp

    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    delta = 1e-5
    # RDP: same integer orders, same (improved) conversion
    theirs = rdp.RdpAccountant(orders=list(ORDERS))
    theirs.compose(event)
    their_eps, their_order = theirs.get_epsilon_and_optimal_order(delta)
    ours = np.array([rdp_subsampled_gaussian(a, sigma, q) for a in ORDERS]) * steps
    our_eps, our_order = rdp_to_dp(ORDERS, ours, delta)
    assert our_eps == pytest.approx(their_eps, rel=RDP_TOLERANCE)
    assert our_order == their_order
    # PLD: their (connect-the-dots) epsilon inside our [optimistic, pessimistic] interval
    h = 1e-4
    pld_acc = pld.PLDAccountant(value_discretization_interval=h)
    pld_acc.compose(event)
    their_pld = pld_acc.get_epsilon(delta)
    lo = gaussian_composition_epsilon(sigma, steps, delta, sampling_probability=q, grid=h, pessimistic=False)
    hi = gaussian_composition_epsilon(sigma, steps, delta, sampling_probability=q, grid=h)
    assert lo - 1e-6 <= their_pld <= hi + 1e-6
