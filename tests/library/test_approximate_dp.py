"""Approximate DP and the Gaussian mechanism (dptutor.approximate_dp) and the claims of
book/approximate_dp.md, which these tests recompute with the chapter's parameters and seeds.

Monte Carlo tolerances are 5 standard errors of the estimate (computed from the samples or from the
binomial variance), so a correct implementation fails a seeded check with probability < 1e-6.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from scipy import stats

from dptutor.approximate_dp import (
    CALIBRATIONS,
    GaussianRelease,
    delta_from_losses,
    gaussian_epsilon,
    gaussian_privacy_loss,
    gaussian_release,
    gaussian_tradeoff,
    name_and_shame,
)
from dptutor.audit import audit_pair
from dptutor.mechanisms import gaussian_delta, gaussian_sigma_analytic, gaussian_sigma_classic

# The chapter's audit setting: a mean of N = 100 values in [0, 1], answers 0 and 1/N.
EPS, DELTA, SENS = 1.0, 1e-3, 0.01


# ---------------------------------------------------------------------------------------------
# the privacy-loss random variable
# ---------------------------------------------------------------------------------------------


def test_gaussian_privacy_loss_law_by_simulation():
    rng = np.random.default_rng(2018)
    sigma, gap, n = 2.0, 1.0, 400_000
    y = GaussianRelease(sigma)(0.0, n, rng)
    losses = stats.norm.logpdf(y, 0.0, sigma) - stats.norm.logpdf(y, gap, sigma)
    law = gaussian_privacy_loss(sigma, gap)
    assert law.mean() == pytest.approx(0.125) and law.var() == pytest.approx(0.25)
    se_mean = math.sqrt(law.var() / n)
    assert abs(losses.mean() - law.mean()) < 5 * se_mean
    # variance of a sample variance of a normal: 2 sigma^4 / n
    assert abs(losses.var() - law.var()) < 5 * math.sqrt(2 * law.var() ** 2 / n)
    for eps in (0.25, 0.5, 1.0):
        terms = np.where(losses > eps, -np.expm1(eps - losses), 0.0)
        se = terms.std() / math.sqrt(n)
        assert abs(delta_from_losses(losses, eps) - gaussian_delta(eps, sigma, gap)) < 5 * se
        assert gaussian_delta(eps, sigma, gap) < law.sf(eps)  # the lemma's inequality


def test_privacy_loss_depends_only_on_the_l2_distance():
    # Proof step 1 of the classic bound: in n dimensions the loss is N(mu^2/2, mu^2) with
    # mu = ||f(X) - f(X')||_2 / sigma, whatever the direction of the difference.
    rng = np.random.default_rng(1)
    sigma, n, trials = 1.5, 5, 200_000
    for direction in (np.ones(n), np.eye(n)[0], rng.normal(size=n)):
        d = direction / np.linalg.norm(direction) * 2.0  # ||d||_2 = 2
        y = sigma * rng.standard_normal((trials, n))  # outputs on X, f(X) = 0
        loss = (np.sum((y - d) ** 2, axis=1) - np.sum(y**2, axis=1)) / (2 * sigma**2)
        law = gaussian_privacy_loss(sigma, 2.0)
        assert abs(loss.mean() - law.mean()) < 5 * law.std() / math.sqrt(trials)
        assert stats.kstest(loss, law.cdf).pvalue > 1e-4


def test_k_gaussian_releases_compose_like_one_with_sqrt_k_mu():
    # Exercise "Composing Gaussian releases": the loss of k releases is a sum of k iid
    # N(mu^2/2, mu^2), i.e. N(k mu^2/2, k mu^2), the law of one release with sigma / sqrt(k).
    sigma, k = 3.7, 10
    one = gaussian_privacy_loss(sigma)
    combined = gaussian_privacy_loss(sigma / math.sqrt(k))
    assert combined.mean() == pytest.approx(k * one.mean()) and combined.var() == pytest.approx(k * one.var())
    sigma_1 = gaussian_sigma_analytic(1.0, 1e-5, 1.0)
    eps_k = gaussian_epsilon(1e-5, sigma_1 / math.sqrt(k))
    assert 3.0 < eps_k < 4.0  # the chapter's 3.62: far below k * eps = 10
    assert gaussian_delta(eps_k, sigma_1 / math.sqrt(k)) == pytest.approx(1e-5, rel=1e-9)


def test_gaussian_epsilon_inverts_the_profile():
    for sigma in (0.3, 1.0, 3.7, 20.0):
        for delta in (1e-10, 1e-5, 1e-3, 0.1):
            eps = gaussian_epsilon(delta, sigma)
            if eps > 0:
                assert gaussian_delta(eps, sigma) == pytest.approx(delta, rel=1e-8)
    assert gaussian_epsilon(1e-3, gaussian_sigma_analytic(1.0, 1e-3, 0.01), 0.01) == pytest.approx(1.0, rel=1e-9)
    # a delta above the total variation distance needs no epsilon at all
    assert gaussian_epsilon(0.9, 1.0) == 0.0


def test_name_and_shame_is_zero_delta_dp_and_leaks_with_delta_one_over_n():
    rng = np.random.default_rng(2018)
    n, runs = 1_000, 10_000
    records = rng.normal(size=(n, 3))
    leaked = np.mean([len(name_and_shame(records, 1 / n, rng)) > 0 for _ in range(runs)])
    exact = 1 - (1 - 1 / n) ** n
    assert abs(leaked - exact) < 5 * math.sqrt(exact * (1 - exact) / runs)
    assert exact == pytest.approx(1 - math.exp(-1), abs=2e-4)
    # (0, delta)-DP: a given record is published with probability delta (binomial check)
    hits = sum(records[0] in name_and_shame(records, 0.01, rng) for _ in range(20_000))
    assert abs(hits / 20_000 - 0.01) < 5 * math.sqrt(0.01 * 0.99 / 20_000)


# ---------------------------------------------------------------------------------------------
# calibrations: the chapter's claims
# ---------------------------------------------------------------------------------------------


def test_classic_tail_is_below_delta_on_the_chapters_grid():
    grid = [(e, d) for e in np.linspace(0.05, 0.95, 19) for d in (1e-2, 1e-5, 1e-8, 1e-12)]
    ratios = [gaussian_privacy_loss(gaussian_sigma_classic(e, d, 1.0)).sf(e) / d for e, d in grid]
    assert len(grid) == 76 and max(ratios) < 1.0


def test_classic_formula_fails_at_epsilon_20():
    sigma = math.sqrt(2 * math.log(1.25 / 1e-5)) / 20.0
    assert gaussian_delta(20.0, sigma) / 1e-5 > 100


def test_classic_wastes_noise_and_less_as_epsilon_grows():
    ratios = [gaussian_sigma_classic(e, 1e-5, 1.0) / gaussian_sigma_analytic(e, 1e-5, 1.0) for e in (0.1, 0.5, 0.9)]
    assert all(r > 1.25 for r in ratios) and ratios[0] > ratios[1] > ratios[2]
    assert ratios[0] == pytest.approx(1.5756, abs=1e-4)


def test_gaussian_release_calibrations():
    analytic = gaussian_sigma_analytic(EPS, DELTA, SENS)
    assert gaussian_release(EPS, DELTA, SENS).sigma == analytic
    assert gaussian_release(EPS, DELTA, SENS, "laplace_rule").sigma == SENS / EPS
    assert gaussian_release(EPS, DELTA, SENS, "dropped_sqrt").sigma == analytic**2
    assert gaussian_release(0.5, DELTA, SENS, "classic").sigma == gaussian_sigma_classic(0.5, DELTA, SENS)
    assert set(CALIBRATIONS) == {"analytic", "classic", "laplace_rule", "dropped_sqrt"}
    with pytest.raises(ValueError, match="calibration"):
        gaussian_release(EPS, DELTA, SENS, "exact")
    with pytest.raises(ValueError, match="delta"):
        gaussian_release(EPS, 0.0, SENS)
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_release(1.5, DELTA, SENS, "classic")


def test_gaussian_release_interface():
    mech = GaussianRelease(0.5)
    rng = np.random.default_rng(0)
    assert mech(1.0, 7, rng).shape == (7,)
    assert mech(np.zeros(3), 7, rng).shape == (7, 3)
    assert pickle.loads(pickle.dumps(mech)) == mech
    with pytest.raises(ValueError, match="sigma"):
        GaussianRelease(0.0)
    with pytest.raises(ValueError, match="data"):
        mech(math.nan, 3, rng)
    with pytest.raises(ValueError, match="data"):
        mech(np.zeros((2, 2)), 3, rng)
    with pytest.raises(ValueError, match="size"):
        mech(0.0, -1, rng)
    with pytest.raises(TypeError, match="rng"):
        mech(0.0, 3, 42)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: gaussian_privacy_loss(0.0), "sigma"),
        (lambda: gaussian_privacy_loss(1.0, -1.0), "sensitivity"),
        (lambda: gaussian_privacy_loss(1e-300, 1e300), "sensitivity"),
        (lambda: delta_from_losses([], 1.0), "losses"),
        (lambda: delta_from_losses([0.1, math.nan], 1.0), "losses"),
        (lambda: delta_from_losses([0.1], 0.0), "epsilon"),
        (lambda: gaussian_epsilon(0.0, 1.0), "delta"),
        (lambda: gaussian_epsilon(1e-5, -1.0), "sigma"),
        (lambda: gaussian_epsilon(1e-300, 1e-300), "delta"),
        (lambda: gaussian_tradeoff([0.5, 1.5], 1.0), "alpha"),
        (lambda: gaussian_tradeoff(0.5, -1.0), "mu"),
        (lambda: name_and_shame(np.zeros((3, 2)), 1.0, np.random.default_rng(0)), "delta"),
        (lambda: name_and_shame(np.zeros((3, 2, 2)), 0.1, np.random.default_rng(0)), "records"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_tradeoff_curve():
    alpha = np.linspace(0, 1, 101)
    g = gaussian_tradeoff(alpha, 0.7)
    np.testing.assert_allclose(g, stats.norm.cdf(stats.norm.ppf(1 - alpha) - 0.7), atol=1e-15)
    assert g[0] == 1.0 and g[-1] == 0.0 and np.all(np.diff(g) <= 0) and np.all(g <= 1 - alpha + 1e-15)


# ---------------------------------------------------------------------------------------------
# audits (issue 15's acceptance: sound on the correct mechanism, flags both bugs at 10^6)
# ---------------------------------------------------------------------------------------------


def test_pure_epsilon_bound_climbs_and_delta_bound_stays_below():
    correct = gaussian_release(EPS, DELTA, SENS)
    trials = [10**3, 10**5, 10**6, 10**7]
    pure = [audit_pair(correct, 0.0, SENS, epsilon=EPS, trials=t, rng=3).lower_bound for t in trials]
    with_delta = [audit_pair(correct, 0.0, SENS, epsilon=EPS, trials=t, rng=3, delta=DELTA).lower_bound
                  for t in trials]
    assert pure[0] < 0.5 < pure[1] < EPS < pure[2] < pure[3]  # not 1-DP: a proof with error <= 5%
    assert max(with_delta) <= EPS


def test_audit_is_sound_on_the_correct_gaussian_over_100_seeds():
    # Boundary case: the analytic sigma makes delta(eps) = delta exactly for the threshold event at
    # the optimum, so the bound is as close to a violation as a correct mechanism gets.  Each audit
    # errs with probability <= 5%; we check the false-violation count over 100 seeds is consistent
    # with a rate <= 5% (one-sided exact binomial test at level 1e-3) and report the chapter's claim
    # (Clopper-Pearson upper end <= 5%) at 10^5 trials with the chapter's seeds.
    correct = gaussian_release(EPS, DELTA, SENS)
    runs = [audit_pair(correct, 0.0, SENS, epsilon=EPS, delta=DELTA, trials=10**6, rng=1000 + s) for s in range(100)]
    false = sum(r.is_violation() for r in runs)
    assert stats.binomtest(false, 100, 0.05, alternative="greater").pvalue > 1e-3
    assert max(r.lower_bound for r in runs) > 0.8  # the audit does get close to epsilon
    chapter = [audit_pair(correct, 0.0, SENS, epsilon=EPS, delta=DELTA, trials=10**5, rng=s) for s in range(100)]
    chapter_false = sum(r.is_violation() for r in chapter)
    upper = stats.binomtest(chapter_false, 100).proportion_ci(0.95, method="exact").high
    assert upper <= 0.05


@pytest.mark.parametrize("calibration", ["laplace_rule", "dropped_sqrt"])
@pytest.mark.parametrize("seed", [11, 12, 13])
def test_audit_flags_both_buggy_calibrations_at_a_million_samples(calibration, seed):
    mech = gaussian_release(EPS, DELTA, SENS, calibration)
    assert gaussian_epsilon(DELTA, mech.sigma, SENS) > 3 * EPS  # the truth: clearly not (1, 1e-3)-DP
    audit = audit_pair(mech, 0.0, SENS, epsilon=EPS, delta=DELTA, trials=10**6, rng=seed)
    assert audit.is_violation()
    assert audit.lower_bound <= gaussian_epsilon(DELTA, mech.sigma, SENS)  # and never above the truth


def test_empirical_tradeoff_points_lie_on_or_above_the_gdp_curve():
    correct = gaussian_release(EPS, DELTA, SENS)
    audit = audit_pair(correct, 0.0, SENS, epsilon=EPS, delta=DELTA, trials=10**6, rng=7)
    alpha, beta = audit.tradeoff()
    mu = SENS / correct.sigma
    n = audit.estimation_trials
    # plug-in alpha and beta each have binomial error; 5 of their combined standard errors,
    # union over the ~10^4 tests: a false failure has probability < 1e4 * 3e-7.
    se = np.sqrt((alpha * (1 - alpha) + beta * (1 - beta)) / n) + 1 / n
    assert np.all(beta - gaussian_tradeoff(alpha, mu) > -5 * se)
    # and the tests trace the curve: the best ones are within 5 standard errors of it
    assert np.min((beta - gaussian_tradeoff(alpha, mu)) / se) < 5


def test_bug_hunt_exercise_variance_as_scale():
    # Exercise "Bug hunt: a Gaussian mechanism for a mean": N = 1000, eps = 0.5, delta = 1e-6.
    n, eps, delta = 1000, 0.5, 1e-6
    sens = 1 / n
    variance = 2 * np.log(1.25 / delta) * sens**2 / eps**2
    sigma = math.sqrt(variance)
    assert sigma == pytest.approx(gaussian_sigma_classic(eps, delta, sens), rel=1e-12)
    assert 80 < gaussian_epsilon(delta, variance, sens) < 82  # the solution prints 81
    buggy = audit_pair(GaussianRelease(variance), 0.0, sens, epsilon=eps, delta=delta, trials=10**6, rng=5)
    fixed = audit_pair(GaussianRelease(sigma), 0.0, sens, epsilon=eps, delta=delta, trials=10**6, rng=5)
    assert buggy.is_violation() and not fixed.is_violation()


# ---------------------------------------------------------------------------------------------
# the discrete Gaussian mechanism
# ---------------------------------------------------------------------------------------------

from fractions import Fraction  # noqa: E402

from dptutor.approximate_dp import (  # noqa: E402
    DiscreteGaussianRelease,
    discrete_gaussian_delta,
    discrete_gaussian_epsilon,
    discrete_gaussian_release,
    discrete_gaussian_sigma,
)


def _brute_delta(epsilon, sigma, steps, dps=50):
    """sum_x max(0, p0(x) - e^eps p1(x)) over the integers, in mpmath at ``dps`` digits (the definition)."""
    import mpmath

    mpmath.mp.dps = dps
    sig = Fraction(sigma)
    var = mpmath.mpf(sig.numerator) ** 2 / mpmath.mpf(sig.denominator) ** 2
    half = int(40 * float(sig)) + steps + 5
    w = {x: mpmath.exp(-mpmath.mpf(x) ** 2 / (2 * var)) for x in range(-half - steps, half + steps + 1)}
    norm = mpmath.fsum(w[x] for x in range(-half, half + 1))
    e = mpmath.exp(mpmath.mpf(Fraction(epsilon).numerator) / Fraction(epsilon).denominator)
    return mpmath.fsum(max(0, w[x] - e * w[x - steps]) for x in range(-half, half + 1)) / norm


@pytest.mark.parametrize("sigma,steps", [(1, 1), (Fraction(3, 2), 1), (2, 3), (5, 1), (Fraction(27, 4), 2)])
@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0, 2.5])
def test_discrete_gaussian_delta_matches_the_definition(sigma, steps, epsilon):
    exact = float(_brute_delta(epsilon, sigma, steps))
    ours = discrete_gaussian_delta(epsilon, sigma, steps)
    assert ours >= exact  # rounded up: never below the truth
    assert ours - exact <= 1e-9 * exact + 1e-250


def test_discrete_gaussian_delta_differs_from_the_continuous_one():
    """The discrete law's profile is not the continuous one: at sigma = 2 it is larger at eps = 0.5."""
    assert discrete_gaussian_delta(0.5, 2, 1) > gaussian_delta(0.5, 2.0, 1.0) * 1.02
    assert discrete_gaussian_delta(0.1, 2, 1) < gaussian_delta(0.1, 2.0, 1.0)


def test_discrete_gaussian_epsilon_inverts_delta():
    for sigma, steps, dlt in [(48, 1, 1e-5), (Fraction(123, 4), 1, 1e-5), (10, 3, 1e-3)]:
        eps = discrete_gaussian_epsilon(dlt, sigma, steps)
        assert discrete_gaussian_delta(eps, sigma, steps) <= dlt
        assert discrete_gaussian_delta(eps - 1e-6, sigma, steps) > dlt


@pytest.mark.parametrize("epsilon,delta,steps", [(1.0, 1e-3, 12), (0.1, 1e-5, 1), (1.0, 1e-5, 1), (5.0, 1e-6, 3)])
def test_discrete_gaussian_sigma_is_the_smallest_on_its_grid(epsilon, delta, steps):
    sig = discrete_gaussian_sigma(epsilon, delta, steps)
    assert isinstance(sig, Fraction)
    assert discrete_gaussian_delta(epsilon, sig, steps) <= delta
    # one step below fails (the grid's step, or a multiple of it when the fraction reduced)
    step = Fraction(1, sig.denominator)
    assert discrete_gaussian_delta(epsilon, sig - step, steps) > delta
    # and it is close to the continuous analytic sigma
    assert abs(float(sig) / gaussian_sigma_analytic(epsilon, delta, steps) - 1) < 0.01


@pytest.mark.parametrize("epsilon,delta,steps", [(1.0, 1e-5, 1), (0.1, 1e-9, 3), (3.0, 1e-3, 1)])
def test_discrete_gaussian_sigma_stops_when_the_grid_point_is_fixed(monkeypatch, epsilon, delta, steps):
    """The bisection stops once no grid point lies between its two ends (about 10 halvings of a relative
    width of 0.2 down to the grid's 2^-10), instead of running 60 times: at most 30 evaluations of delta
    in all (bracketing included), and the answer is the smallest sigma on the grid that meets delta."""
    import dptutor.discrete_gaussian as adp

    calls = []
    original = adp.discrete_gaussian_delta
    monkeypatch.setattr(adp, "discrete_gaussian_delta", lambda *args: calls.append(args) or original(*args))
    sig = discrete_gaussian_sigma(epsilon, delta, steps)
    assert len(calls) <= 30
    assert original(epsilon, sig, steps) <= delta < original(epsilon, sig - Fraction(1, sig.denominator), steps)


def test_discrete_gaussian_release_outputs_and_privacy():
    rng = np.random.default_rng(4)
    integer = discrete_gaussian_release(1.0, 1e-5, 1)
    out = integer(7, 1000, rng)
    assert out.dtype == np.int64 and out.shape == (1000,)
    with pytest.raises(ValueError, match="data"):
        integer(0.5, 10, rng)
    gran = discrete_gaussian_release(1.0, 1e-3, 0.01, granularity=2.0**-10)
    y = gran(0.01, 1000, rng)
    assert y.dtype == np.float64 and np.all(y * 2**10 == np.round(y * 2**10))
    # steps: floor(0.01 * 1024) + 1 = 11, and rounding moves each answer by at most half a step
    assert discrete_gaussian_delta(1.0, gran.sigma, 11) <= 1e-3
    assert pickle.loads(pickle.dumps(gran)) == gran


def test_discrete_gaussian_release_audit_is_not_flagged():
    mech = discrete_gaussian_release(EPS, DELTA, SENS, granularity=2.0**-10)
    r = audit_pair(mech, 0.0, SENS, epsilon=EPS, delta=DELTA, trials=200_000, rng=3)
    assert not r.is_violation()


def test_discrete_gaussian_bad_input():
    for call, name in [(lambda: discrete_gaussian_delta(-1.0, 2, 1), "epsilon"),
                       (lambda: discrete_gaussian_delta(1.0, float("nan"), 1), "sigma"),
                       (lambda: discrete_gaussian_delta(1.0, 2, 0), "sensitivity"),
                       (lambda: discrete_gaussian_epsilon(0.0, 2, 1), "delta"),
                       (lambda: discrete_gaussian_sigma(0.0, 1e-5, 1), "epsilon"),
                       (lambda: discrete_gaussian_sigma(1.0, 1.5, 1), "delta"),
                       (lambda: discrete_gaussian_release(1.0, 1e-5, 0.01, granularity=0.3), "granularity"),
                       (lambda: discrete_gaussian_release(1.0, 1e-5, 1.5), "sensitivity"),
                       (lambda: DiscreteGaussianRelease(-0.5), "sigma"),
                       (lambda: DiscreteGaussianRelease(2, granularity=-1.0), "granularity")]:
        with pytest.raises((TypeError, ValueError), match=name):
            call()


def test_discrete_gaussian_accepts_a_float_sigma_exactly():
    """A float sigma is its exact rational value (as OpenDP converts it): same delta, same release."""
    assert discrete_gaussian_delta(1.0, 2.5, 1) == discrete_gaussian_delta(1.0, Fraction(5, 2), 1)
    assert DiscreteGaussianRelease(2.5).sigma == Fraction(5, 2)


# ---------------------------------------------------------------------------------------------
# the chapter's floating-point leak and the exact mechanism's grid test (issue 22)
# ---------------------------------------------------------------------------------------------


def _off_grid_statistic(outputs):
    from dptutor.floating import off_grid

    return off_grid(np.asarray(outputs, dtype=float).ravel(), SENS).astype(float)


def test_float_gaussian_leaks_through_the_grid():
    """About 8% of the float mechanism's outputs on 0 are off the grid of 0.01 (impossible there: the
    grid lemma), none of its outputs on 0.01 are, and the grid audit flags it at the claimed delta."""
    from dptutor.floating import off_grid

    mech = gaussian_release(EPS, DELTA, SENS)
    rng = np.random.default_rng(2018)
    n = 100_000
    k = int(off_grid(mech(0.0, n, rng), SENS).sum())
    ci = stats.binomtest(k, n).proportion_ci(0.999, method="exact")
    assert ci.low > 0.07 and ci.high < 0.09  # the 8.1%
    assert not off_grid(mech(SENS, n, rng), SENS).any()
    r = audit_pair(mech, 0.0, SENS, epsilon=EPS, delta=DELTA, trials=10**5, rng=4, statistic=_off_grid_statistic)
    assert r.is_violation() and r.lower_bound > 3


def test_exact_gaussian_has_no_impossible_outputs_and_is_not_flagged():
    from dptutor.floating import off_grid

    mech = discrete_gaussian_release(EPS, DELTA, SENS, granularity=2.0**-10)
    out = mech(0.0, 100_000, np.random.default_rng(2018))
    assert int(off_grid(out, SENS).sum()) == 0
    r = audit_pair(mech, 0.0, SENS, epsilon=EPS, delta=DELTA, trials=10**5, rng=4, statistic=_off_grid_statistic)
    assert not r.is_violation()


def test_composition_with_delta_on_ten_discrete_gaussian_releases():
    """The chapter's check of the (epsilon, delta) composition theorem: ten releases, each (1, 1e-5)-DP,
    have an exact delta at epsilon = 10 (convolution of the loss laws) below 10 * 1e-5; and the theorem's
    proof step 2 (DP extends to [0, 1]-valued functions) holds on the discrete Gaussian pair."""
    from dptutor.exact import discrete_gaussian_pmf

    sigma = discrete_gaussian_sigma(1.0, 1e-5, 1)
    support = np.arange(-60 * math.ceil(sigma), 60 * math.ceil(sigma) + 1)
    pmf = discrete_gaussian_pmf(support, sigma)
    pk = pmf
    for _ in range(9):
        pk = np.convolve(pk, pmf)
    sums = np.arange(pk.size) + 10 * support[0]
    loss = (10 - 2 * sums) / (2 * float(sigma) ** 2)
    delta_k = float(np.sum(pk * -np.expm1(np.minimum(10.0 - loss, 0.0))))
    assert delta_k <= 1e-4
    # step 2: E[g(M(X))] <= e^eps E[g(M(X'))] + delta for random [0, 1]-valued g
    rng = np.random.default_rng(1)
    d1 = discrete_gaussian_delta(1.0, sigma, 1)
    shifted = np.concatenate([[0.0], pmf[:-1]])  # the law of the output on X' (answer 1)
    for _ in range(200):
        g = rng.random(support.size) ** rng.uniform(0.1, 10)
        assert float(pmf @ g) <= math.e * float(shifted @ g) + d1 + 1e-12
