"""Composition (dptutor.composition) and the claims of the chapter book/composition.md."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dptutor.audit import estimate_loss, exact_loss
from dptutor.composition import (
    Budget,
    parallel_epsilon,
    repeated_laplace_box_loss,
    sequential_composition_proof,
    sequential_epsilon,
)
from dptutor.mechanisms import adept_mechanism, laplace_mechanism


def test_sympy_checks_the_proof_steps():
    proof = sequential_composition_proof()
    assert proof.factorizes  # steps 1-2: joint loss = L1 + L2
    assert proof.bounded  # step 4: eps1 + eps2 - (L1 + L2) = g1 + g2 >= 0
    assert str(proof.bound_gap) == "g1 + g2"


def test_joint_loss_is_the_sum_of_losses_numerically():
    # Steps 1-2 at random points, with scipy's Laplace log-density (independent of sympy).
    rng = np.random.default_rng(0)
    y = rng.normal(0, 4, size=(10_000, 2))
    b1, b2 = 1 / 0.3, 1 / 0.5
    lp = stats.laplace.logpdf
    joint = (lp(y[:, 0], 0, b1) + lp(y[:, 1], 0, b2)) - (lp(y[:, 0], 1, b1) + lp(y[:, 1], 1, b2))
    single = (lp(y[:, 0], 0, b1) - lp(y[:, 0], 1, b1)) + (lp(y[:, 1], 0, b2) - lp(y[:, 1], 1, b2))
    np.testing.assert_allclose(joint, single, atol=1e-12)
    # steps 3-4: never above eps1 + eps2 (up to rounding of the logs, |values| <= ~20)
    assert joint.max() <= 0.8 + 1e-12


@pytest.mark.parametrize("eps1, eps2", [(0.3, 0.5), (1.0, 2.0), (0.05, 0.05)])
def test_sequential_bound_holds_on_sets_and_is_attained(eps1, eps2):
    # All quadrants {y1 <= t1, y2 <= t2} and their complements: exact probabilities from CDFs.
    t = np.linspace(-8, 8, 161)
    t1, t2 = np.meshgrid(t, t)
    p = stats.laplace.cdf(t1, 0, 1 / eps1) * stats.laplace.cdf(t2, 0, 1 / eps2)
    q = stats.laplace.cdf(t1, 1, 1 / eps1) * stats.laplace.cdf(t2, 1, 1 / eps2)
    bound = math.exp(eps1 + eps2)
    assert np.all(p <= bound * q * (1 + 1e-12))
    assert np.all((1 - q) <= bound * (1 - p) * (1 + 1e-12))
    assert math.isclose(float((p / q).max()), bound, rel_tol=1e-12)  # attained for t1, t2 <= 0


def test_sequential_and_parallel_epsilon():
    assert sequential_epsilon([0.1] * 128) == pytest.approx(12.8, rel=1e-15)
    assert sequential_epsilon([0.3, 0.5]) == 0.8
    assert parallel_epsilon([0.1, 0.7, 0.2]) == 0.7
    for fn in (sequential_epsilon, parallel_epsilon):
        with pytest.raises(ValueError, match="epsilons"):
            fn([])
        with pytest.raises(ValueError, match=r"epsilons\[1\]"):
            fn([0.1, -1.0])
        with pytest.raises(ValueError, match=r"epsilons\[0\]"):
            fn([math.nan])
        with pytest.raises(TypeError, match="epsilons"):
            fn(0.5)
        with pytest.raises(TypeError, match="epsilons"):
            fn("0.5")
        with pytest.raises(TypeError, match=r"epsilons\[0\]"):
            fn([True])
    with pytest.raises(ValueError, match="epsilons"):
        sequential_epsilon([1e308, 1e308])


def test_budget_is_spent_and_refuses_to_overdraw():
    budget = Budget(1.0)
    for _ in range(10):
        budget = budget.spend(0.1)  # ten times total/10: rounding must not refuse the last one
    assert budget.remaining == 0.0 and budget.used == pytest.approx(1.0)
    with pytest.raises(ValueError, match="epsilon"):
        budget.spend(0.01)
    b = Budget(1.0).spend(0.3).spend(0.3).spend(0.3)
    assert b.remaining == pytest.approx(0.1)
    with pytest.raises(ValueError, match="epsilon"):
        b.spend(0.3)
    with pytest.raises(ValueError, match="total"):
        Budget(0.0)
    with pytest.raises(ValueError, match="spent"):
        Budget(1.0, (0.6, 0.6))
    with pytest.raises(TypeError, match="epsilon"):
        Budget(1.0).spend("0.1")
    with pytest.raises(AttributeError):
        b.total = 5.0  # frozen


@pytest.mark.parametrize("k", [1, 2, 8, 64, 1000])
@pytest.mark.parametrize("epsilon", [0.1, 0.5, 3.0])
def test_box_event_attains_k_epsilon(k, epsilon):
    loss, log_prob = repeated_laplace_box_loss(k, epsilon)
    assert loss == pytest.approx(k * epsilon, rel=1e-12)
    assert log_prob == pytest.approx(-k * math.log(2), rel=1e-12)
    loss_half, _ = repeated_laplace_box_loss(k, epsilon, 0.5)  # between the answers: below k eps
    assert 0 < loss_half < k * epsilon
    with pytest.raises(ValueError, match="k"):
        repeated_laplace_box_loss(0, epsilon)
    with pytest.raises(ValueError, match="t"):
        repeated_laplace_box_loss(k, epsilon, math.nan)


def test_box_event_frequency_matches_by_simulation():
    # k = 4, eps = 0.5: P_D = 1/16, P_D' = e^-2/16; 200k trials each give >= 1.6k hits on D',
    # so the log-ratio's sd is about sqrt(1/1.7k + 1/12.5k) ~ 0.026: 5 sd = 0.13.
    rng = np.random.default_rng(4)
    k, eps, trials = 4, 0.5, 200_000
    p = np.mean(np.all(adept_mechanism(np.zeros((trials, k)), eps, rng) <= 0, axis=1))
    q = np.mean(np.all(adept_mechanism(np.ones((trials, k)), eps, rng) <= 0, axis=1))
    assert abs(math.log(p / q) - k * eps) < 0.13
    assert abs(p - 1 / 16) < 5 * math.sqrt(1 / 16 * 15 / 16 / trials)


def test_chapter_claims_about_the_sanity_check():
    # The chapter's cell: eps = 0.5, 200k trials, seed = k.  Each estimate must lie within its
    # confidence interval of the exact loss (a 95% interval: all 7 hold at these seeds), grow
    # with k, and stay below k * eps; k = 2 takes most of 2 eps.
    eps, trials = 0.5, 200_000
    ks = [1, 2, 4, 8, 16, 32, 64]
    audits = [estimate_loss(adept_mechanism, k, eps, trials, seed=k) for k in ks]
    exact = [exact_loss("adept", k, eps) for k in ks]
    for a, ex, k in zip(audits, exact, ks):
        lo, hi = a.confidence_interval(0.95)
        assert lo <= ex <= hi
        assert ex < k * eps + 1e-12
    assert all(x < y for x, y in zip(exact, exact[1:]))
    assert all(x.loss < y.loss for x, y in zip(audits, audits[1:]))
    assert exact[1] > 0.8 * 2 * eps
    assert exact[-1] < 0.15 * ks[-1] * eps


def test_bug_hunt_fix_passes_and_bug_is_flagged():
    buggy = estimate_loss(adept_mechanism, 16, 1.0, 100_000, seed=1)
    fixed = estimate_loss(laplace_mechanism, 16, 1.0, 100_000, seed=1)
    assert buggy.is_violation() and not fixed.is_violation()


def test_histogram_removing_one_record_changes_exactly_one_bin():
    # The chapter's parallel-composition example (seeded as in the chapter's cell order is not
    # needed: the claim holds for every dataset and every removed record).
    rng = np.random.default_rng(2009)
    ages = rng.integers(18, 90, size=1_000)
    bins = np.arange(18, 91, 10)
    counts = np.histogram(ages, bins)[0]
    for i in rng.choice(ages.size, 50, replace=False):
        without = np.histogram(np.delete(ages, i), bins)[0]
        assert np.count_nonzero(counts != without) == 1
        assert np.abs(counts - without).sum() == 1
    assert parallel_epsilon([0.1] * len(counts)) == 0.1
