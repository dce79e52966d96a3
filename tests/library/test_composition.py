"""Composition (dptutor.composition) and the claims of the chapter book/composition.md."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dptutor.audit import exact_loss
from fractions import Fraction

import sympy as sp

from dptutor.composition import (
    Budget,
    majority_vote_loss,
    parallel_epsilon,
    repeated_laplace_box_loss,
    sequential_composition_proof,
    sequential_epsilon,
)
from dptutor.mechanisms import adept_mechanism


def test_sympy_checks_the_proof_steps():
    proof = sequential_composition_proof()
    assert proof.factorizes  # steps 1-2: joint loss = L1 + L2
    assert proof.bounded and len(proof.region_gaps) == 36  # steps 3-4 on every pair of regions
    w1, w2, g1, g2 = (sp.Symbol(n, nonnegative=True) for n in ("w1", "w2", "g1", "g2"))
    b1, b2 = sp.symbols("b1 b2", positive=True)
    assert sp.simplify(proof.bound_gap - ((2 * w1 + g1) / b1 + (2 * w2 + g2) / b2)) == 0
    # Not a tautology: the gaps depend on where the outputs are, not only on the slacks g_i ...
    slack_only = g1 / b1 + g2 / b2
    assert any(sp.simplify(gap - slack_only) != 0 for gap in proof.region_gaps)
    # ... they vanish exactly where the bound is attained (both outputs outside the two answers, g = 0) ...
    assert any(sp.simplify(gap - slack_only) == 0 for gap in proof.region_gaps)
    # ... and numerically every gap is >= 0 at random non-negative offsets and positive scales.
    rng = np.random.default_rng(5)
    for gap in proof.region_gaps:
        for _ in range(20):
            values = {sym: float(rng.exponential()) + (1e-3 if sym.is_positive else 0.0) for sym in gap.free_symbols}
            assert float(gap.subs(values)) >= 0


def test_the_check_would_catch_a_loss_above_its_budget():
    # The same check fails for a mechanism whose loss exceeds eps: double a region's loss.
    from dptutor.symbolic import laplace_mechanism_privacy_loss

    b, g = sp.Symbol("b", positive=True), sp.Symbol("g", nonnegative=True)
    reg = [r for r in laplace_mechanism_privacy_loss().regions if r.region == "y below both"][0]
    honest = sp.expand(reg.delta + g - reg.loss * b) / b
    doubled = sp.expand(reg.delta + g - 2 * reg.loss * b) / b
    assert honest.is_nonnegative is True
    assert doubled.is_nonnegative is not True


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
    # The double 0.1 exceeds 1/10, so ten of them overdraw a total of 1: exact arithmetic refuses the tenth
    # (a relative slack of 1e-12 used to let it, and any release up to 1e-12 too many, through).
    budget = Budget(1.0)
    for _ in range(9):
        budget = budget.spend(0.1)
    with pytest.raises(ValueError, match="epsilon"):
        budget.spend(0.1)
    assert Fraction(0.1) * 10 > 1
    # split hands out shares that fit exactly, and spending them all leaves a non-negative remainder
    for total, k in [(1.0, 10), (0.3, 7), (2.5, 3), (1e-300, 9), (1.0, 1)]:
        acct = Budget(total)
        shares = acct.split(k)
        assert len(shares) == k and sum(map(Fraction, shares)) <= Fraction(total)
        for share in shares:
            acct = acct.spend(share)
        assert acct.remaining_exactly >= 0 and acct.remaining >= 0.0
        assert acct.remaining_exactly < Fraction(total) * Fraction(k, 2**50)   # nothing much wasted
        with pytest.raises(ValueError, match="epsilon"):
            acct.spend(acct.remaining + total)
    # remaining is rounded down: spending exactly it never overdraws
    acct = Budget(1.0).spend(0.3).spend(0.3).spend(0.3)
    assert acct.spend(acct.remaining).remaining_exactly >= 0
    budget = Budget(1.0)
    for _ in range(10):
        budget = budget.spend(0.0625)                  # exact in binary: the whole budget is spent
    with pytest.raises(ValueError, match="epsilon"):
        budget.spend(0.375 + 2**-52)
    assert budget.spend(0.375).remaining == 0.0
    with pytest.raises(ValueError, match="k"):
        Budget(1.0).split(0)
    with pytest.raises(ValueError, match="epsilon"):
        budget.spend(0.01 + 0.375)
    b = Budget(1.0).spend(0.3).spend(0.3).spend(0.3)
    assert b.remaining == pytest.approx(0.1)
    with pytest.raises(ValueError, match="epsilon"):
        b.spend(0.3)
    with pytest.raises(ValueError, match="total"):
        Budget(0.0)
    with pytest.raises(ValueError, match="spent"):
        Budget(1.0, (0.6, 0.6))
    with pytest.raises(ValueError, match="spent"):
        Budget(1.0, (0.1,) * 10)                      # exactly more than 1
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


def test_majority_vote_loss_is_exact():
    # The chapter's exact curve: the closed form agrees with the sanity check's closed form for ADePT
    # (Part II computes it independently), grows with k, and stays below k * eps; k = 2 takes most of 2 eps.
    eps = 0.5
    ks = [1, 2, 4, 8, 16, 32, 64]
    losses = [majority_vote_loss(k, eps) for k in ks]
    for k, loss in zip(ks, losses):
        assert loss == pytest.approx(exact_loss("adept", k, eps), rel=1e-12)
        assert loss < k * eps
    assert all(x < y for x, y in zip(losses, losses[1:]))
    assert losses[1] > 0.8 * 2 * eps and losses[-1] < 0.15 * ks[-1] * eps
    # k = 1: one release, rounded: P(guess 1 | X) = e^(-eps/2)/2, P(guess 1 | X') = 1 - that.
    p0 = 0.5 * math.exp(-eps / 2)
    expected = max(abs(math.log(p0) - math.log(1 - p0)), abs(math.log(1 - p0) - math.log(p0)))
    assert losses[0] == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="k"):
        majority_vote_loss(0, eps)
    with pytest.raises(ValueError, match="epsilon"):
        majority_vote_loss(3, -1.0)


def test_majority_vote_loss_matches_simulation():
    # k = 5, eps = 0.5: P(guess 1 | X) is a binomial tail; 200k trials estimate it to ~0.1%.
    rng = np.random.default_rng(8)
    k, eps, trials = 5, 0.5, 200_000
    guesses = [(np.sum(adept_mechanism(np.full((trials, k), float(d)), eps, rng) >= 0.5, axis=1) > k / 2).mean()
               for d in (0, 1)]
    p0 = 0.5 * math.exp(-eps / 2)
    exact = [stats.binom.sf(k // 2, k, p) for p in (p0, 1 - p0)]
    for g, e in zip(guesses, exact):
        assert abs(g - e) < 5 * math.sqrt(e * (1 - e) / trials)


def test_bug_hunt_fix_is_exactly_within_budget():
    k, epsilon = 16, 1.0
    assert repeated_laplace_box_loss(k, epsilon)[0] == pytest.approx(16.0)
    assert repeated_laplace_box_loss(k, Budget(epsilon).split(k)[0])[0] <= epsilon


def test_histogram_bins_hold_every_record_and_parallel_composition_holds():
    # The chapter's parallel-composition example: ages 18..89 all land in a bin (89 included), removing a
    # record changes exactly one count by 1, replacing it changes at most two counts by 1 each.
    rng = np.random.default_rng(2009)
    ages = rng.integers(18, 90, size=1_000)
    bins = np.arange(18, 99, 10)
    counts = np.histogram(ages, bins)[0]
    assert counts.sum() == ages.size
    assert np.histogram(np.arange(18, 90), bins)[0].sum() == 72
    for i in rng.choice(ages.size, 50, replace=False):
        without = np.histogram(np.delete(ages, i), bins)[0]
        assert np.count_nonzero(counts != without) == 1
        assert np.abs(counts - without).sum() == 1
        for new_age in (18, 55, 89):
            replaced = np.histogram(np.r_[np.delete(ages, i), new_age], bins)[0]
            assert np.abs(counts - replaced).sum() <= 2
    assert parallel_epsilon([0.1] * len(counts)) == 0.1
    # The bins of the old chapter dropped age 89: the bug this test guards against.
    assert np.histogram([89], np.arange(18, 91, 10))[0].sum() == 0
