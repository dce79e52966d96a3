"""Hostile inputs to the accounting modules: extreme but legal parameters that once overflowed, warned,
returned inf or NaN where the answer is finite, or raised an exception that names no parameter."""

import math

import numpy as np
import pytest

from dptutor.accounting import advanced_composition, basic_composition, group_privacy
from dptutor.approximate_dp import GaussianRelease, delta_from_losses
from dptutor.composition import majority_vote_loss, repeated_laplace_box_loss
from dptutor.epsilon import posterior_bound
from dptutor.renyi import rdp_to_dp, zcdp_to_dp
from dptutor.selection import above_threshold_probabilities, max_log_ratio, report_noisy_max_probabilities

pytestmark = pytest.mark.filterwarnings("error")

HUGE_K = 10**400  # an int that no float can hold


def test_compositions_accept_a_number_of_releases_beyond_the_floats():
    assert basic_composition(1.0, 0.0, HUGE_K) == (math.inf, 0.0)
    assert basic_composition(1e-300, 1e-310, HUGE_K) == (pytest.approx(1e100, rel=1e-12), 1.0)
    assert group_privacy(1.0, HUGE_K) == (math.inf, 0.0)
    assert group_privacy(1.0, HUGE_K, 1e-5) == (math.inf, 1.0)
    eps, dlt = advanced_composition(1e-300, 0.0, HUGE_K, 1e-5)
    assert eps == pytest.approx(1e-300 * math.sqrt(2.0 * math.log(1e5)) * 1e200, rel=1e-12)
    assert dlt == 1e-5


def test_subnormal_deltas_give_finite_epsilons():
    dp = 1e-310  # 1 / dp overflows, ln(1 / dp) = 713.8 does not
    eps, _ = advanced_composition(0.1, 0.0, 10, dp)
    assert eps == pytest.approx(0.1 * math.sqrt(20 * -math.log(dp)) + 10 * 0.1 * math.expm1(0.1), rel=1e-12)
    assert rdp_to_dp([2.0], [1.0], dp, method="classic") == (pytest.approx(1.0 - math.log(dp), rel=1e-12), 2.0)
    assert zcdp_to_dp(1.0, dp) == pytest.approx(1.0 + 2.0 * math.sqrt(-math.log(dp)), rel=1e-12)


def test_zcdp_to_dp_huge_rho_is_finite():
    assert zcdp_to_dp(1e306, 1e-300) == pytest.approx(1e306, rel=1e-12)  # rho ln(1/delta) overflows


@pytest.mark.parametrize("k, epsilon", [(1, 2000.0), (3, 1000.0), (10**6, 50.0)])
def test_majority_vote_loss_stays_finite_and_below_k_epsilon(k, epsilon):
    loss = majority_vote_loss(k, epsilon)
    assert math.isfinite(loss) and 0.0 < loss <= k * epsilon


def test_majority_vote_loss_exact_where_its_tails_underflow():
    # k = 1: the vote is the rounded release, loss |ln p0 - ln(1 - p0)| with ln p0 = -eps / 2 - ln 2.
    assert majority_vote_loss(1, 2000.0) == pytest.approx(1000.0 + math.log(2.0), rel=1e-14)
    # k = 3: P(two or more ones | X) = 3 p0^2 (1 - p0) + p0^3, about 1 under X'.
    assert majority_vote_loss(3, 1000.0) == pytest.approx(1000.0 + 2 * math.log(2.0) - math.log(3.0), rel=1e-14)
    # It grows with epsilon across the switch to the log-space sums.
    losses = [majority_vote_loss(100, e) for e in (20.0, 30.0, 40.0, 80.0)]
    assert all(math.isfinite(x) for x in losses) and losses == sorted(losses)


def test_repeated_laplace_box_loss_between_the_answers_with_a_large_epsilon():
    # For 0 < t <= 1: F(t - 1) = e^((t - 1) eps) / 2, whose log underflowed to -inf in scipy.
    loss, _ = repeated_laplace_box_loss(3, 1e6, 0.5)
    assert loss == pytest.approx(3 * (0.5e6 + math.log(2.0)), rel=1e-14)
    assert loss <= 3 * 1e6


def test_delta_from_losses_does_not_warn_when_the_gap_overflows():
    assert delta_from_losses([-1e308, math.inf], 1e308) == 0.5


@pytest.mark.parametrize("size", [(2, 3), ()])
def test_gaussian_release_size_must_be_one_number(size):
    with pytest.raises(ValueError, match="size"):
        GaussianRelease(1.0)(0.0, size, np.random.default_rng(0))


def test_posterior_bound_with_a_subnormal_prior():
    assert posterior_bound(800.0, prior=1e-320) == 1.0
    assert posterior_bound(0.0, prior=1e-320) == 1e-320  # epsilon 0: the prior, not 0
    assert 5e-324 < posterior_bound(3.0, prior=5e-324) <= 1e-320


def test_report_noisy_max_probabilities_extreme_inputs():
    with pytest.raises(ValueError, match="answers"):
        report_noisy_max_probabilities([-1e308, 1e308], 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        report_noisy_max_probabilities([0.0, 1.0], 1.0, sensitivity=1e307)
    near = report_noisy_max_probabilities([0.0, 1.0, 3.0], 1.0)
    for offset, unit in ((1e15, 1.0), (2.0**56, 16.0)):  # far from 0 the quadrature nodes used to collapse
        far = report_noisy_max_probabilities([offset, offset + unit, offset + 3 * unit], 1.0, sensitivity=unit)
        assert far == pytest.approx(near, abs=1e-12)
    assert report_noisy_max_probabilities([1.7e308, 1.7e308], 1.0) == pytest.approx([0.5, 0.5], abs=1e-12)


def test_above_threshold_probabilities_extreme_inputs():
    with pytest.raises(ValueError, match="threshold"):
        above_threshold_probabilities([1e308], -1e308, 1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        above_threshold_probabilities([0.0, 1.0], 0.5, 1.0, sensitivity=1e306)
    near = above_threshold_probabilities([0.0, 1.0], 0.5, 1.0)
    assert near.sum() == pytest.approx(1.0, abs=1e-12)
    far = above_threshold_probabilities([1e16, 1e16 + 2.0], 1e16 + 4.0, 1.0)  # spacing 2 there: all exact
    assert far.sum() == pytest.approx(1.0, abs=1e-12)
    assert far == pytest.approx(above_threshold_probabilities([0.0, 2.0], 4.0, 1.0), abs=1e-12)


def test_max_log_ratio_of_huge_weights_does_not_warn():
    assert max_log_ratio([1e308, 1e308], [1.0, 1.0]) == pytest.approx(math.log(1e308), rel=1e-14)
