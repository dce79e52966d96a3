"""What epsilon means (dptutor.epsilon) and the claims of the chapter book/epsilon.md."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from dptutor.distributions import sample_laplace
from dptutor.dpsniper import bloom_bits, rappor
from dptutor.epsilon import clamped_mean_bias, laplace_interval, posterior_bound, rappor_epsilon, tpr_bound

# Monte Carlo tolerances: this many standard errors of the estimate (a two-sided miss of 1 in ~150,000).
Z = 4.5


# --- posterior_bound --------------------------------------------------------------------------------

def test_posterior_bound_exact_values():
    e = math.e
    assert posterior_bound(1.0) == pytest.approx(e / (1 + e), rel=1e-15)
    assert posterior_bound(0.1) == pytest.approx(math.exp(0.1) / (1 + math.exp(0.1)), rel=1e-15)
    assert posterior_bound(0.0, prior=0.3) == pytest.approx(0.3, rel=1e-15)     # epsilon 0: nothing learned
    odds = math.exp(3.0) * 0.01 / 0.99
    assert posterior_bound(3.0, prior=0.01) == pytest.approx(odds / (1 + odds), rel=1e-14)
    grid = posterior_bound(np.array([0.1, 1.0, 3.0, 10.0]))
    assert isinstance(grid, np.ndarray) and grid.shape == (4,)
    assert np.all(np.diff(grid) > 0) and grid[-1] == pytest.approx(1 / (1 + math.exp(-10.0)), rel=1e-15)


def test_posterior_bound_is_attained_by_randomized_response():
    # Randomized response that tells the truth with probability e^eps / (1 + e^eps) is exactly eps-DP; an
    # attacker with a 50 % prior who sees the report "1" ends exactly at the bound (Bayes' rule by hand).
    for eps in (0.1, 1.0, 3.0):
        p = math.exp(eps) / (1 + math.exp(eps))
        posterior = p * 0.5 / (p * 0.5 + (1 - p) * 0.5)
        assert posterior == pytest.approx(posterior_bound(eps), rel=1e-14)


def test_posterior_bound_large_epsilon_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert posterior_bound(1000.0) == 1.0
        assert posterior_bound(800.0, prior=1e-300) > 0.0


# --- tpr_bound ---------------------------------------------------------------------------------------

def test_tpr_bound_both_pieces_and_the_kink():
    eps = 1.0
    assert tpr_bound(0.01, eps) == pytest.approx(math.e * 0.01, rel=1e-15)             # direct bound
    assert tpr_bound(0.9, eps) == pytest.approx(1 - math.exp(-1) * 0.1, rel=1e-15)     # complement bound
    kink = 1 / (1 + math.e)                                                           # where they meet
    assert tpr_bound(kink, eps) == pytest.approx(math.e / (1 + math.e), rel=1e-14)
    assert tpr_bound(0.0, eps) == 0.0 and tpr_bound(1.0, eps) == 1.0
    assert tpr_bound(0.3, 0.0) == pytest.approx(0.3, rel=1e-15)      # epsilon 0: no test beats guessing


def test_tpr_bound_with_delta():
    assert tpr_bound(0.0, 1.0, delta=1e-5) == pytest.approx(1e-5, rel=1e-12)
    assert tpr_bound(0.01, 1.0, delta=0.001) == pytest.approx(math.e * 0.01 + 0.001, rel=1e-14)
    assert tpr_bound(0.5, 2.0, delta=1.0) == 1.0


def test_tpr_bound_vectorised_and_large_epsilon():
    fpr = np.linspace(0, 1, 11)
    out = tpr_bound(fpr, 3.0)
    assert out.shape == (11,) and np.all(np.diff(out) >= 0) and np.all(out >= fpr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tpr_bound(0.0, 1000.0) == 0.0 and tpr_bound(1e-9, 1000.0) == 1.0
    grid = tpr_bound(np.array([[0.01], [0.05]]), np.array([0.1, 1.0, 3.0]))
    assert grid.shape == (2, 3) and grid[0, 1] == pytest.approx(0.01 * math.e, rel=1e-15)


def test_tpr_bound_attained_by_randomized_response_monte_carlo():
    """Seeded simulation of randomized response and the test "say in when the report is 1"."""
    rng = np.random.default_rng(37)
    eps, trials = 1.0, 200_000
    p = math.exp(eps) / (1 + math.exp(eps))
    with_record = rng.random(trials) < p          # the report is 1 (truthful) when the record is in
    without = rng.random(trials) >= p             # the report is 1 (a lie) when it is not
    tpr, fpr = with_record.mean(), without.mean()
    se = math.sqrt(p * (1 - p) / trials)
    assert abs(tpr - p) < Z * se and abs(fpr - (1 - p)) < Z * se
    assert tpr_bound(1 - p, eps) == pytest.approx(p, rel=1e-14)     # exactly on the curve


def test_laplace_threshold_tests_obey_the_bound_and_a_buggy_scale_breaks_it():
    # A count with sensitivity 1: with the record the answer is 1, without it 0. The test "release > t".
    eps = 1.0
    for scale, private in ((1.0 / eps, True), (eps / 4.0, False)):       # the second: too little noise
        t = np.linspace(-3, 4, 71)
        tpr = stats.laplace.sf(t, loc=1.0, scale=scale)
        fpr = stats.laplace.sf(t, loc=0.0, scale=scale)
        excess = tpr - tpr_bound(fpr, eps)
        if private:
            assert excess.max() < 1e-12
            beyond = t >= 1.0                                          # both tails decreasing: attained
            assert np.allclose(tpr[beyond], math.e * fpr[beyond], rtol=1e-12)
        else:
            assert excess.max() > 0.1


# --- laplace_interval --------------------------------------------------------------------------------

def test_laplace_interval_exact():
    assert laplace_interval(1.0, 0.5) == pytest.approx(2.0 * math.log(20), rel=1e-14)
    assert laplace_interval(2.0, 1.0, 0.99) == pytest.approx(2.0 * math.log(100), rel=1e-14)
    widths = laplace_interval(1.0, np.array([0.1, 1.0, 10.0]))
    assert widths.shape == (3,) and widths[0] == pytest.approx(100 * widths[2], rel=1e-14)
    # The same quantile from scipy: Pr(|Z| <= t) = 0.95.
    t = laplace_interval(1.0, 1.0)
    assert stats.laplace.cdf(t) - stats.laplace.cdf(-t) == pytest.approx(0.95, rel=1e-14)


def test_laplace_interval_coverage_monte_carlo():
    rng = np.random.default_rng(2020)
    trials, level = 400_000, 0.9
    for eps in (0.1, 1.0):
        noise = sample_laplace(trials, 0.0, 1.0 / eps, rng=rng)
        covered = np.mean(np.abs(noise) <= laplace_interval(1.0, eps, level))
        assert abs(covered - level) < Z * math.sqrt(level * (1 - level) / trials)


# --- clamped_mean_bias --------------------------------------------------------------------------------

def test_clamped_mean_bias_exact():
    assert clamped_mean_bias([0.0, 1.0, 5.0], 2.0) == pytest.approx(-1.0, rel=1e-15)
    assert clamped_mean_bias([-1.0, 1.0], 1.0) == pytest.approx(0.5, rel=1e-15)
    assert clamped_mean_bias(np.linspace(0, 1, 11), 1.0) == 0.0


def test_clamped_mean_release_is_biased_by_exactly_that_monte_carlo():
    rng = np.random.default_rng(11)
    values = rng.exponential(1.0, 1_000)
    bound, eps, trials = 2.0, 1.0, 200_000
    b = bound / values.size / eps
    releases = np.clip(values, 0.0, bound).mean() + sample_laplace(trials, 0.0, b, rng=rng)
    observed = releases.mean() - values.mean()
    bias = clamped_mean_bias(values, bound)
    assert bias < -0.05                                        # not a vacuous check: a real bias
    assert abs(observed - bias) < Z * math.sqrt(2.0) * b / math.sqrt(trials)


# --- bad input ----------------------------------------------------------------------------------------

# --- rappor_epsilon ----------------------------------------------------------------------------------

def test_rappor_epsilon_closed_forms():
    # Chrome's noise level: a kept bit 3:1, a report's bit 0.625 against 0.375; two values differ in 4 bits.
    budget = rappor_epsilon(0.5, 0.25, 0.75, 2)
    assert budget.lifetime == pytest.approx(4 * math.log(3.0), rel=1e-14)
    assert budget.one_report == pytest.approx(4 * math.log(5 / 3), rel=1e-14)
    assert (budget.set_bit, budget.clear_bit) == pytest.approx((0.625, 0.375), rel=1e-15)
    # Without an instantaneous step (p = 0, q = 1) a report is the permanent filter: one budget.
    once = rappor_epsilon(0.95, 0.0, 1.0, 4)
    assert once.one_report == pytest.approx(once.lifetime, rel=1e-14)
    # p = q makes every report independent of the value.
    assert rappor_epsilon(0.5, 0.4, 0.4, 3).one_report == 0.0


def test_rappor_epsilon_is_dpsnipers_exact_epsilon_on_disjoint_values():
    """DP-Sniper's two RAPPOR entries: on two values with no Bloom bit in common, the exact epsilon of the
    pair (each of the 2h differing bits independent) is the budget of one report."""
    a, b = set(bloom_bits(3)), set(bloom_bits(4))
    assert not a & b and len(a) == len(b) == 4
    for f, p, q, keep in ((0.75, 0.45, 0.55, 0.5125), (0.95, 0.0, 1.0, 0.525)):
        budget = rappor_epsilon(f, p, q, 4)
        assert budget.set_bit == pytest.approx(keep, rel=1e-14)
        per_bit = math.log(keep / (1 - keep))  # p* = 1 - q* here, so both outcomes give this ratio
        assert budget.one_report == pytest.approx(8 * per_bit, rel=1e-12)


def test_rappor_epsilon_bit_laws_match_the_mechanism():
    """Monte Carlo: RAPPOR's reports at Chrome's parameters send 1 for a set bit with probability q* and for
    a clear bit with probability p*."""
    budget = rappor_epsilon(0.5, 0.25, 0.75, 2)
    reports = rappor(3, 200_000, np.random.default_rng(20261126), f=0.5, p=0.25, q=0.75, hashes=2, bits=32)
    on = list(bloom_bits(3, hashes=2, bits=32))
    off = [i for i in range(32) if i not in on]
    for cols, prob in ((on, budget.set_bit), (off, budget.clear_bit)):
        draws = reports[:, cols].size
        se = math.sqrt(prob * (1 - prob) / draws)
        assert abs(reports[:, cols].mean() - prob) < Z * se


BAD = [
    (lambda: posterior_bound(-0.1), "epsilon", ValueError),
    (lambda: posterior_bound(math.inf), "epsilon", ValueError),
    (lambda: posterior_bound(True), "epsilon", TypeError),
    (lambda: posterior_bound(1.0, prior=1.0), "prior", ValueError),
    (lambda: posterior_bound(1.0, prior="half"), "prior", TypeError),
    (lambda: tpr_bound(1.5, 1.0), "fpr", ValueError),
    (lambda: tpr_bound(-0.1, 1.0), "fpr", ValueError),
    (lambda: tpr_bound(math.nan, 1.0), "fpr", ValueError),
    (lambda: tpr_bound(0.1, -1.0), "epsilon", ValueError),
    (lambda: tpr_bound(0.1, 1.0, delta=2.0), "delta", ValueError),
    (lambda: tpr_bound([0.1, 0.2], [1.0, 2.0, 3.0]), "fpr and epsilon", ValueError),
    (lambda: laplace_interval(0.0, 1.0), "sensitivity", ValueError),
    (lambda: laplace_interval(1.0, 0.0), "epsilon", ValueError),
    (lambda: laplace_interval(1.0, [1.0, 0.0]), "epsilon", ValueError),
    (lambda: laplace_interval(1.0, 1.0, confidence_level=1.0), "confidence_level", ValueError),
    (lambda: laplace_interval(1e308, 1e-308), "sensitivity / epsilon", ValueError),
    (lambda: laplace_interval("1", 1.0), "sensitivity", TypeError),
    (lambda: clamped_mean_bias([], 1.0), "values", ValueError),
    (lambda: clamped_mean_bias([[1.0]], 1.0), "values", ValueError),
    (lambda: clamped_mean_bias([1.0, math.inf], 1.0), "values", ValueError),
    (lambda: clamped_mean_bias([1.0], 0.0), "bound", ValueError),
    (lambda: clamped_mean_bias(["a"], 1.0), "values", TypeError),
    (lambda: clamped_mean_bias([1.7e308, 1.7e308], 1.0), "values", ValueError),
    (lambda: rappor_epsilon(0.0, 0.25, 0.75, 2), "f", ValueError),
    (lambda: rappor_epsilon(1.5, 0.25, 0.75, 2), "f", ValueError),
    (lambda: rappor_epsilon(0.5, -0.1, 0.75, 2), "p", ValueError),
    (lambda: rappor_epsilon(0.5, 0.25, math.nan, 2), "q", ValueError),
    (lambda: rappor_epsilon(0.5, 0.25, 0.75, 0), "hashes", ValueError),
    (lambda: rappor_epsilon(0.5, 0.25, 0.75, 2.0), "hashes", TypeError),
    (lambda: rappor_epsilon("0.5", 0.25, 0.75, 2), "f", TypeError),
]


@pytest.mark.parametrize("call,name,error", BAD)
def test_bad_input_names_the_parameter(call, name, error):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error, match=name):
            call()
