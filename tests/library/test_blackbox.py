"""Tests for the black-box auditor: discrete-mode event order, the learned statistic, pair search, and
DP-Sniper's benchmark (its mechanisms, their exact epsilons on their pairs, checked against Monte Carlo).

Every statistical test is seeded.  Monte Carlo frequencies are compared with exact probabilities within
5 standard errors (sqrt(p (1 - p) / m)) per cell: with a few dozen cells, a false failure has probability
below 1e-5.  Soundness checks compare 95% lower bounds with exact epsilons at sample sizes where the
bound sits many standard errors below the exact value, so only an unsound bound can fail them.
"""

from __future__ import annotations

import functools
import math
import pickle

import numpy as np
import pytest

from dptutor.audit import (
    AUTO_CANDIDATES,
    AdditiveMap,
    LearnedStatistic,
    PairAudit,
    audit_pair,
    candidate_pairs,
    fit_additive_map,
    fit_statistic,
    search_pairs,
)
from dptutor.audit import _pair_cells
from dptutor.dpsniper import (
    PUBLISHED,
    benchmark,
    bloom_bits,
    rnm_index_probabilities,
    svt_pattern_probabilities,
    truncated_geometric,
    truncated_geometric_pmf,
)
from dptutor.zoo import ZOO, report_noisy_max, report_noisy_max_value, svt


@pytest.fixture(scope="module")
def bench():
    return benchmark()


# ---------------------------------------------------------------------------------------------
# discrete mode: values never seen in the selection half are never in the event
# ---------------------------------------------------------------------------------------------


def test_values_never_seen_in_the_selection_half_come_last():
    # (selection x, selection x', estimation x, estimation x')
    table = {
        0: np.array([10, 50, 11, 49]),  # ratio far below 0: seen, would sort after an unseen value of ratio 0
        1: np.array([50, 10, 48, 12]),
        7: np.array([0, 0, 900, 0]),  # never seen when choosing: only in the estimation half
        -3: np.array([0, 0, 0, 5]),
        2: np.array([5, 5, 5, 5]),
    }
    keys, sel, est = _pair_cells.discrete_order(table)
    assert keys[:3] == [1, 2, 0] and set(keys[3:]) == {7, -3}
    assert sel[:, 3:].sum() == 0 and est[0, keys.index(7)] == 900


def rare_values(data, size, rng):
    """0/1 with a bias, and one time in fifty a value from a huge range (nearly always new)."""
    out = (rng.random(size) < (0.3 if data == 0 else 0.6)).astype(np.int64)
    rare = rng.random(size) < 0.02
    out[rare] = rng.integers(100, 10**12, rare.sum())
    return out


def test_an_event_never_holds_a_value_seen_only_in_the_estimation_half():
    result = audit_pair(rare_values, 0, 1, epsilon=0.1, trials=4000, rng=5)
    # Every candidate prefix is made of values seen in the selection half; the rare values seen only in
    # the estimation half fall in the complement.  The event shown is S or S^c: never a set of unseen values.
    assert result.lower_bound > 0.1
    if "in {" in result.event:
        shown = result.event.split("{")[1].split("}")[0].split(", ")
        assert all(int(v) < 100 for v in shown[:8] if not v.endswith("...")) or "set of" in result.event


# ---------------------------------------------------------------------------------------------
# the learned statistic
# ---------------------------------------------------------------------------------------------


def test_fit_statistic_models_and_picklable():
    rng = np.random.default_rng(0)
    a = rng.laplace(0.0, 1.0, (2000, 3))
    b = rng.laplace(0.0, 1.0, (2000, 3)) + np.array([1.0, 0.0, 0.0])
    for model in ("logistic", "additive", "boosting", "auto"):
        stat = fit_statistic(a, b, model=model, rng=1)
        values = stat(np.concatenate([a, b]))
        assert values.shape == (4000,) and np.isfinite(values).all()
        assert values[2000:].mean() > values[:2000].mean()  # higher log-odds for the second dataset
        again = pickle.loads(pickle.dumps(stat))
        np.testing.assert_array_equal(again(a), stat(a))
    # "auto" chooses by cross-validation among logistic regression and the additive model, never boosting.
    assert fit_statistic(a, b).kind in {m for m, _, _ in AUTO_CANDIDATES}
    with_atoms = np.where(rng.random((2000, 3)) < 0.3, -np.inf, a)
    assert fit_statistic(with_atoms, b).kind in {m for m, _, _ in AUTO_CANDIDATES}
    constant = fit_statistic(np.zeros((5, 2)), np.zeros((5, 2)))
    np.testing.assert_array_equal(constant(np.ones((3, 2))), 0.0)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(outputs_x=None), TypeError, "outputs_x"),
        (dict(outputs_x=np.array([])), ValueError, "outputs_x"),
        (dict(outputs_x=np.array([np.nan, 1.0])), ValueError, "outputs_x"),
        (dict(outputs_x_prime=np.zeros((4, 3))), ValueError, "outputs_x_prime"),
        (dict(model="forest"), ValueError, "model"),
        (dict(knots=1), ValueError, "knots"),
        (dict(knots=2.5), TypeError, "knots"),
        (dict(tails="curved"), ValueError, "tails"),
        (dict(rng=-1), ValueError, "rng"),
    ],
)
def test_fit_statistic_names_bad_parameters(kwargs, error, name):
    args = dict(outputs_x=np.zeros((4, 2)), outputs_x_prime=np.ones((4, 2)))
    args.update(kwargs)
    with pytest.raises(error, match=name):
        fit_statistic(**args)


def test_learned_statistic_names_bad_outputs():
    stat = fit_statistic(np.zeros((4, 2)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="outputs"):
        stat(np.zeros((4, 3)))
    with pytest.raises(TypeError, match="outputs"):
        stat("abc")
    with pytest.raises(ValueError, match="kind"):
        LearnedStatistic(model=stat.model, kind="forest", width=2, infinite=np.zeros(2, dtype=bool))


# ---------------------------------------------------------------------------------------------
# the additive model's feature map
# ---------------------------------------------------------------------------------------------


def _mixed_sample(rng: np.random.Generator, n: int) -> np.ndarray:
    """Three output values: Laplace; Laplace with a sentinel 0 in 30% of outputs and -inf in 10%; bits."""
    out = rng.laplace(0.0, 1.0, (n, 3))
    u = rng.random(n)
    out[:, 1] = np.where(u < 0.3, 0.0, np.where(u < 0.4, -np.inf, out[:, 1]))
    out[:, 2] = (rng.random(n) < 0.5).astype(float)
    return out


@pytest.mark.parametrize("tails", ["flat", "linear"])
def test_additive_score_is_the_logistic_regression_on_the_feature_map(tails):
    # The fitted additive model scores raw outputs with np.interp and atom tests; it must give the logistic
    # regression's own score on the feature map: intercept + transform(outputs) . coefficients. The fourth
    # output value takes six values (six atoms: the lookup path), the second two atoms and -inf (direct tests).
    rng = np.random.default_rng(12)

    def sample(n, shift):
        out = _mixed_sample(rng, n)
        out[:, 0] += shift
        return np.column_stack([out, rng.integers(0, 6, n) + (rng.random(n) < shift)])

    stat = fit_statistic(sample(4000, 0.0), sample(4000, 0.3), model="additive", knots=6, tails=tails, rng=1)
    score = stat.model
    fmap = score.feature_map
    coef = []
    for j, knots in enumerate(fmap.knots):
        linear = [score.linear_weights[j]] if fmap.linear and knots.size else []
        coef += list(score.knot_weights[j]) + linear + list(score.atom_weights[j])
    assert fmap.atoms[3].size == 7 and fmap.atoms[1].size == 2
    fresh = sample(3000, 0.15)
    fresh[:5, 0] = [np.inf, -np.inf, 1e300, -1e300, -0.0]  # beyond the knots: the linear term clips
    want = fmap.transform(fresh) @ np.array(coef) + score.intercept
    np.testing.assert_allclose(stat(fresh), want, rtol=1e-9, atol=1e-9)


def test_additive_map_knots_atoms_and_shapes():
    rng = np.random.default_rng(11)
    sample = _mixed_sample(rng, 5000)
    fmap = fit_additive_map(sample, knots=5, tails="linear")
    levels = (np.arange(5) + 0.5) / 5
    np.testing.assert_array_equal(fmap.knots[0], np.quantile(sample[:, 0], levels))
    assert fmap.atoms[0].size == 0
    # The sentinel and -inf are atoms of the second value; its knots are quantiles of the other values only.
    np.testing.assert_array_equal(fmap.atoms[1], [-np.inf, 0.0])
    rest = sample[:, 1][np.isfinite(sample[:, 1]) & (sample[:, 1] != 0.0)]
    np.testing.assert_array_equal(fmap.knots[1], np.quantile(rest, levels))
    # Bits: two atoms, no knots.
    assert fmap.knots[2].size == 0 and fmap.atoms[2].tolist() == [0.0, 1.0]
    # Columns: 5 hats and a linear term; 5 hats, a linear term and 2 atoms; 2 atoms.
    assert fmap.width == 3 and fmap.n_features == (5 + 1) + (5 + 1 + 2) + 2
    fresh = _mixed_sample(rng, 300)
    fresh[0, 0], fresh[1, 0] = 1e5, -1e5  # beyond the outer knots: the hats clip, the linear term does not
    features = fmap.transform(fresh).toarray()
    assert features.shape == (300, fmap.n_features)
    hats_and_atoms = np.r_[0:5, 6:11, 12:16]
    assert (features[:, hats_and_atoms] >= 0).all()
    # Per output value the hat and atom weights sum to 1 (two neighbouring hats, or one atom indicator).
    for block in (np.r_[0:5], np.r_[6:11, 12:14], np.r_[14:16]):
        np.testing.assert_allclose(features[:, block].sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert ((features[:, block] > 0).sum(axis=1) <= 2).all()
    assert features[0, 4] == 1.0 and features[1, 0] == 1.0
    # The linear term: (v - centre) / half-width of the knots' range, and 0 on an atom.
    k0, k1 = fmap.knots[0][0], fmap.knots[0][-1]
    np.testing.assert_allclose(features[:, 5], (fresh[:, 0] - (k0 + k1) / 2) / ((k1 - k0) / 2), rtol=1e-12)
    on_atom = ~np.isfinite(fresh[:, 1]) | (fresh[:, 1] == 0.0)
    assert on_atom.any() and (features[on_atom, 11] == 0.0).all()


def test_additive_map_is_a_function_of_the_fitting_sample_only():
    rng = np.random.default_rng(12)
    a, b = _mixed_sample(rng, 3000), _mixed_sample(rng, 3000) + np.array([1.0, 0.0, 0.0])
    stat = fit_statistic(a, b, model="additive", knots=6)
    fmap = fit_additive_map(np.concatenate([a, b]), knots=6)
    for got, want in zip(stat.model.feature_map.knots + stat.model.feature_map.atoms, fmap.knots + fmap.atoms):
        np.testing.assert_array_equal(got, want)
    # Scoring other outputs changes nothing: the same scores before and after.
    before = stat(a[:100])
    stat(_mixed_sample(np.random.default_rng(13), 5000) * 50.0)
    np.testing.assert_array_equal(stat(a[:100]), before)


def test_additive_score_is_piecewise_linear_between_the_knots():
    rng = np.random.default_rng(14)
    a, b = _mixed_sample(rng, 4000), _mixed_sample(rng, 4000) + np.array([1.0, 0.5, 0.0])
    stat = fit_statistic(a, b, model="additive", knots=8, tails="linear")
    knots = stat.model.feature_map.knots[0]
    base = np.array([0.0, 0.5, 1.0])
    rows = np.tile(base, (5, 1))
    rows[:, 0] = [knots[2], knots[3], 0.25 * knots[2] + 0.75 * knots[3], knots[-1] + 100.0, knots[-1] + 200.0]
    s = stat(rows)
    assert s[2] == pytest.approx(0.25 * s[0] + 0.75 * s[1], rel=0, abs=1e-12)
    # Beyond the outer knot only the linear term moves: linear again, with the slope of that term.
    end = stat(np.array([[knots[-1], 0.5, 1.0]]))[0]
    assert s[4] - s[3] == pytest.approx(s[3] - end, rel=1e-9, abs=1e-12)
    slope = stat.model.linear_weights[0] / (0.5 * (knots[-1] - knots[0]))
    assert s[3] - end == pytest.approx(100.0 * slope, rel=1e-9, abs=1e-12)
    # With flat tails the score is constant beyond the outer knots.
    flat = fit_statistic(a, b, model="additive", knots=8, tails="flat")
    far = flat(np.array([[knots[-1], 0.5, 1.0], [knots[-1] + 100.0, 0.5, 1.0], [knots[0] - 1e6, 0.5, 1.0],
                         [knots[0], 0.5, 1.0]]))
    assert far[0] == far[1] and far[2] == far[3]
    assert fit_additive_map(a, knots=8, tails="flat").n_features == fit_additive_map(a, knots=8, tails="linear").n_features - 2
    # An atom has its own value, whatever the knots around it say.
    sentinel = stat(np.array([[0.0, 0.0, 1.0], [0.0, 1e-9, 1.0]]))
    assert sentinel[0] != pytest.approx(sentinel[1], abs=1e-6)


def test_additive_model_recovers_a_clipped_linear_log_ratio():
    # Two coordinates of Lap(0, 1) noise, x' shifted by 1 in both: the log-likelihood ratio
    # sum_j (|o_j| - |o_j - 1|) is clipped linear in each coordinate, which the additive model can
    # represent and a linear score cannot.  On fresh outputs, compare mean log-losses (lower is better):
    # the additive model's must be below logistic regression's by more than 5 standard errors of the
    # paired per-output difference, and close at least 90% of logistic regression's gap to the exact
    # log-likelihood ratio's loss (it closes about 99% at this size).
    rng = np.random.default_rng(15)
    n, m = 20_000, 50_000
    a, b = rng.laplace(0.0, 1.0, (n, 2)), rng.laplace(0.0, 1.0, (n, 2)) + 1.0
    ta, tb = rng.laplace(0.0, 1.0, (m, 2)), rng.laplace(0.0, 1.0, (m, 2)) + 1.0

    def loss(score_a, score_b):
        return np.concatenate([np.logaddexp(0.0, score_a), np.logaddexp(0.0, -score_b)])

    def llr(o):
        return (np.abs(o) - np.abs(o - 1.0)).sum(axis=1)

    linear = fit_statistic(a, b, model="logistic")
    additive = fit_statistic(a, b, model="additive")
    l_lin, l_add, l_exact = loss(linear(ta), linear(tb)), loss(additive(ta), additive(tb)), loss(llr(ta), llr(tb))
    diff = l_lin - l_add
    assert diff.mean() > 5 * diff.std() / math.sqrt(diff.size)
    assert diff.mean() >= 0.9 * (l_lin.mean() - l_exact.mean())
    # "auto" cross-validates its way to the additive model here.
    assert fit_statistic(a, b).kind == "additive"


def test_additive_model_on_degenerate_samples():
    bits = (np.random.default_rng(16).random((400, 4)) < 0.5).astype(float)
    fmap = fit_additive_map(bits)
    assert all(k.size == 0 for k in fmap.knots) and fmap.n_features == 8
    one = fit_additive_map(np.array([[1.0, 2.0]]))
    assert one.n_features == 0 and one.transform(np.zeros((3, 2))).shape == (3, 0)
    stat = fit_statistic(np.array([[1.0], [3.0]]), np.array([[2.0], [5.0]]), model="additive")
    values = stat(np.array([[0.0], [np.inf], [-np.inf], [4.0]]))
    assert np.isfinite(values).all()


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(knots=(np.array([1.0]),)), ValueError, "knots"),
        (dict(knots=(np.array([2.0, 1.0]),)), ValueError, "knots"),
        (dict(knots=(np.array([0.0, np.inf]),)), ValueError, "knots"),
        (dict(knots=(np.array([0.0, np.nan]),)), ValueError, "knots"),
        (dict(knots=np.array([0.0, 1.0])), TypeError, "knots"),
        (dict(atoms=(np.array([1.0, 1.0]),)), ValueError, "atoms"),
        (dict(atoms=(np.zeros((2, 2)),)), ValueError, "atoms"),
        (dict(atoms=()), ValueError, "atoms"),
        (dict(atoms=(np.array(["a"]),)), TypeError, "atoms"),
        (dict(tails="curved"), ValueError, "tails"),
    ],
)
def test_additive_map_names_bad_parameters(kwargs, error, name):
    args = dict(knots=(np.array([0.0, 1.0]),), atoms=(np.empty(0),))
    args.update(kwargs)
    with pytest.raises(error, match=name):
        AdditiveMap(**args)


def test_additive_map_names_bad_outputs():
    with pytest.raises(ValueError, match="knots"):
        fit_additive_map(np.zeros((4, 2)), knots=1)
    with pytest.raises(ValueError, match="outputs"):
        fit_additive_map(np.array([np.nan, 1.0]))
    fmap = fit_additive_map(np.arange(8.0).reshape(4, 2))
    with pytest.raises(ValueError, match="outputs"):
        fmap.transform(np.zeros((4, 3)))
    with pytest.raises(TypeError, match="outputs"):
        fmap.transform("abc")


def test_statistic_must_be_callable_or_learned():
    with pytest.raises(ValueError, match="statistic"):
        audit_pair(report_noisy_max, (1.0,) * 3, (0.0,) * 3, epsilon=0.1, trials=100, statistic="magic")


# ---------------------------------------------------------------------------------------------
# the two-bound variant and the selection fraction
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error",
    [(dict(selection=0.0), ValueError), (dict(selection=1.0), ValueError), (dict(selection=float("nan")), ValueError),
     (dict(selection="half"), TypeError), (dict(bounds="three"), ValueError), (dict(bounds=2), TypeError)],
)
def test_selection_and_bounds_are_checked(kwargs, error):
    name = next(iter(kwargs))
    with pytest.raises(error, match=name):
        audit_pair(report_noisy_max, (1.0,) * 3, (0.0,) * 3, epsilon=0.1, trials=100, **kwargs)


def test_two_bounds_are_one_sided_clopper_pearson_at_half_the_error():
    from scipy import stats

    rr = ZOO["randomized_response"]
    mech = functools.partial(rr.mechanism, epsilon=1.0)
    r = audit_pair(mech, 1, 0, epsilon=1.0, trials=10_000, rng=3, selection=0.2, bounds="two")
    assert r.selection_trials == 2_000 and r.estimation_trials == 8_000
    n = r.estimation_trials
    (k_num, _), (k_den, _) = r.counts.tolist()
    low = stats.beta.ppf(0.025, k_num, n - k_num + 1)
    high = stats.beta.isf(0.025, k_den + 1, n - k_den)
    assert r.lower_bound == pytest.approx(max(0.0, math.log(low / high)), rel=1e-12)
    # The same counts under the default four bounds (gamma/4 each) give a smaller bound.
    four = max(0.0, math.log(stats.beta.ppf(0.0125, k_num, n - k_num + 1) / stats.beta.isf(0.0125, k_den + 1, n - k_den)))
    assert four < r.lower_bound


def test_bound_at_recomputes_the_last_step_only():
    from scipy import stats

    rr = ZOO["randomized_response"]
    mech = functools.partial(rr.mechanism, epsilon=1.0)
    for bounds in ("four", "two", "joint"):
        r = audit_pair(mech, 1, 0, epsilon=1.0, trials=20_000, rng=5, selection=0.3, bounds=bounds)
        assert r.bounds == bounds and r.lower_bound > 0
        assert r.bound_at(0.95) == pytest.approx(r.lower_bound, rel=1e-12)
        levels = [r.bound_at(c) for c in (0.99, 0.95, 0.9, 0.5)]
        assert levels == sorted(levels) and levels[0] < levels[-1]  # a lower level, a higher bound
    # "two" at 90%: the same counts, each one-sided bound at 5%
    two = audit_pair(mech, 1, 0, epsilon=1.0, trials=20_000, rng=5, selection=0.3, bounds="two")
    n = two.estimation_trials
    (k_num, _), (k_den, _) = two.counts.tolist()
    expected = math.log(stats.beta.ppf(0.05, k_num, n - k_num + 1) / stats.beta.isf(0.05, k_den + 1, n - k_den))
    assert two.bound_at(0.9) == pytest.approx(expected, rel=1e-12)
    for bad, error in ((1.0, ValueError), (0.0, ValueError), (float("nan"), ValueError), ("0.9", TypeError)):
        with pytest.raises(error, match="confidence_level"):
            two.bound_at(bad)
    with pytest.raises(ValueError, match="bounds"):
        PairAudit(lower_bound=0.1, estimate=0.2, event="S", counts=[[1, 1], [1, 1]], trials=2, epsilon=1.0, bounds="six")


def test_the_default_split_is_unchanged_by_the_new_options():
    entry = ZOO["randomized_response"]
    mech = functools.partial(entry.mechanism, epsilon=1.0)
    a = audit_pair(mech, 1, 0, epsilon=1.0, trials=4_000, rng=9)
    b = audit_pair(mech, 1, 0, epsilon=1.0, trials=4_000, rng=9, selection=0.5, bounds="four")
    assert a.lower_bound == b.lower_bound and a.counts.tolist() == b.counts.tolist()
    assert a.selection_trials == 2_000


def _joint_exceedance(p_num: float, p_den: float, n_est: int, gamma: float) -> float:
    """The exact probability that bounds='joint' exceeds ln(p_num / p_den) on a fixed event: the kept counts
    are Poisson with mean (n_est - 6 sqrt(n_est)) p, the share's Clopper-Pearson bound exceeds eta exactly
    when k_num is above the binomial (1 - gamma)-quantile given m (P[N > n_est] ~ 1e-9 is left out)."""
    from scipy import stats

    lam = n_est - 6.0 * math.sqrt(n_est)
    mean = lam * (p_num + p_den)
    m = np.arange(max(1, int(mean - 12 * math.sqrt(mean))), int(mean + 12 * math.sqrt(mean)))
    eta = p_num / (p_num + p_den)
    tail = stats.binom.sf(stats.binom.ppf(1 - gamma, m, eta), m, eta)
    return float(np.sum(stats.poisson.pmf(m, mean) * tail))


def test_the_joint_bound_errs_upward_at_its_exact_rate_on_a_boundary_event():
    # Randomized response at epsilon = 1: both candidate events ({1} under x, {0} under x') have ratio
    # exactly e, with the same two probabilities, so the rate at which the bound exceeds 1 is the same
    # whichever the selection half picks, and is computable exactly.
    rr = ZOO["randomized_response"]
    mech = functools.partial(rr.mechanism, epsilon=1.0)
    seeds, trials = 2_000, 4_000
    results = [audit_pair(mech, 1, 0, epsilon=1.0, trials=trials, rng=s, selection=0.3, bounds="joint") for s in range(seeds)]
    n_est = results[0].estimation_trials
    rate = float(np.mean([r.lower_bound > 1.0 for r in results]))
    exact = _joint_exceedance(math.e / (1 + math.e), 1 / (1 + math.e), n_est, 0.05)
    assert 0.02 < exact <= 0.05
    assert abs(rate - exact) <= 3.5 * math.sqrt(exact * (1 - exact) / seeds)
    # The two-bound variant on the same runs errs far less often (it pays gamma/2 twice).
    paired = 500
    two = [audit_pair(mech, 1, 0, epsilon=1.0, trials=trials, rng=s, selection=0.3, bounds="two") for s in range(paired)]
    assert float(np.mean([r.lower_bound > 1.0 for r in two])) < exact / 3
    # ... and its bounds are lower: the paired differences are positive on average by many standard errors.
    diff = np.array([a.lower_bound - b.lower_bound for a, b in zip(results, two)])
    assert diff.mean() > 5 * diff.std(ddof=1) / math.sqrt(paired)


def test_the_joint_bound_is_reproducible_and_refuses_delta():
    mech = functools.partial(ZOO["randomized_response"].mechanism, epsilon=1.0)
    a = audit_pair(mech, 1, 0, epsilon=1.0, trials=5_000, rng=4, bounds="joint")
    b = audit_pair(mech, 1, 0, epsilon=1.0, trials=5_000, rng=4, bounds="joint", workers=2)
    assert a.lower_bound == b.lower_bound > 0 and a.counts.tolist() == b.counts.tolist()
    with pytest.raises(ValueError, match="bounds"):
        audit_pair(mech, 1, 0, epsilon=1.0, trials=1_000, rng=4, bounds="joint", delta=1e-3)


@pytest.mark.parametrize("name", ["LaplaceMechanism", "TruncatedGeometric", "NoisyHist1", "ReportNoisyMax2", "SVT4"])
def test_the_two_bound_variant_never_exceeds_the_exact_epsilon(bench, name):
    # Sound whatever the split: at 2*10^5 runs the bound sits several standard errors below a boundary
    # event's exact loss, so only an unsound bound (e.g. an event chosen on the estimation half) can fail.
    entry = bench[name]
    for seed in range(3):
        result = entry.audit(200_000, rng=seed, selection=0.2, bounds="two")
        assert result.selection_trials + result.estimation_trials == 200_000
        assert result.lower_bound <= entry.true_epsilon


#: Entries with a known exact epsilon whose outputs need a learned statistic (real or wide bit vectors).
LEARNED_KNOWN = ["NoisyHist1", "NoisyHist2", "PrefixSum", "LaplaceParallel", "OneTimeRappor", "Rappor"]


@pytest.mark.parametrize("name", LEARNED_KNOWN)
def test_the_learned_bound_never_exceeds_the_exact_epsilon(bench, name):
    entry = bench[name]
    for seed in range(4):
        result = entry.audit(20_000, rng=seed)
        assert result.selection_trials == 10_000 and result.estimation_trials == 10_000
        assert result.event.startswith("learned_")
        assert result.lower_bound <= entry.true_epsilon, (name, seed, result)


@pytest.mark.parametrize(
    "entry, trials",
    [(ZOO["adept_vector"], 20_000), (ZOO["dptext_vector"], 20_000), ("NoisyHist2", 4_000), ("PrefixSum", 100_000)],
)
def test_the_learned_statistic_finds_the_classic_bugs(bench, entry, trials):
    entry = bench[entry] if isinstance(entry, str) else entry
    if entry.statistic is not None:  # the zoo's own rows carry a hand-written statistic: drop it
        result = audit_pair(entry.release(), entry.x, entry.x_prime, epsilon=entry.epsilon, trials=trials, rng=3)
    else:
        result = entry.audit(trials, rng=3)
    assert result.is_violation(), result
    assert entry.true_epsilon is None or result.lower_bound <= entry.true_epsilon


def test_learned_statistic_is_forced_and_reproducible():
    mech = functools.partial(svt, epsilon=0.1, algorithm=4, c=1)
    a = audit_pair(mech, (1.0,) * 10, (2.0,) * 5 + (0.0,) * 5, epsilon=0.1, trials=4000, rng=9, statistic="learned")
    b = audit_pair(mech, (1.0,) * 10, (2.0,) * 5 + (0.0,) * 5, epsilon=0.1, trials=4000, rng=9, statistic="learned")
    assert a.event.startswith("learned_") and a.lower_bound == b.lower_bound and a.event == b.event


# ---------------------------------------------------------------------------------------------
# pair search
# ---------------------------------------------------------------------------------------------


def test_candidate_pairs_are_statdps_patterns():
    pairs = candidate_pairs(4)
    assert ((1.0,) * 4, (0.0, 1.0, 1.0, 1.0)) in pairs and ((0.0, 1.0, 1.0, 1.0), (1.0,) * 4) in pairs
    assert ((1.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 1.0)) in pairs  # the X shape
    assert len(pairs) == 16 and len(set(pairs)) == 16
    assert len(candidate_pairs(4, componentwise=False)) == 4
    for k, exc in ((0, ValueError), (1.5, TypeError)):
        with pytest.raises(exc, match="k"):
            candidate_pairs(k)
    with pytest.raises(TypeError, match="componentwise"):
        candidate_pairs(3, componentwise=1)


def test_search_finds_the_violating_pair_and_corrects_for_confirming_several():
    mech = functools.partial(report_noisy_max_value, epsilon=0.1)
    dull = ((1.0,) * 5, (0.0,) + (1.0,) * 4)  # one answer moves: loss at most 0.05
    sharp = ((0.0,) * 5, (1.0,) * 5)  # every answer moves: exact epsilon 0.25
    found = search_pairs(mech, [dull, sharp], epsilon=0.1, trials=200_000, pilot_trials=50_000, confirm=2, rng=4)
    assert found.index == 1 and found.pair == sharp
    assert found.best.confidence == pytest.approx(0.975) and len(found.confirmed) == 2
    assert 0.1 < found.lower_bound <= 0.25
    assert found.pilot_bounds.shape == (2,) and not found.pilot_bounds.flags.writeable
    assert "confirmed" in found.summary()


def test_successive_halving_keeps_the_best_pair_and_spends_the_pilot_budget_on_it():
    mech = functools.partial(report_noisy_max_value, epsilon=0.1)
    dull = [((1.0,) * 5, (0.0,) + (1.0,) * 4), ((0.0,) + (1.0,) * 4, (1.0,) * 5)]  # one answer moves down
    sharp = ((0.0,) * 5, (1.0,) * 5)  # every answer moves: exact epsilon 0.25
    calls = []

    def counted(data, size, rng):
        calls.append((tuple(data), size))
        return mech(data, size, rng)

    found = search_pairs(counted, [*dull, sharp], epsilon=0.1, trials=200_000, pilot_trials=100_000, rounds=2, rng=4)
    assert found.pair == sharp and found.index == 2 and 0.1 < found.lower_bound <= 0.25
    # Round 1: three candidates at 300,000 / (2 * 3) = 50,000 runs each; round 2: the better two at 75,000;
    # then 200,000 to confirm.  The all-zero input belongs to the sharp pair only.
    assert sum(size for data, size in calls if data == sharp[0]) == 50_000 + 75_000 + 200_000
    assert sum(size for _, size in calls) == 2 * (3 * 50_000 + 2 * 75_000 + 200_000)
    # One round is the plain pilot: the same ranking and result as without the parameter.
    plain = search_pairs(mech, [*dull, sharp], epsilon=0.1, trials=20_000, pilot_trials=5_000, rng=4)
    one = search_pairs(mech, [*dull, sharp], epsilon=0.1, trials=20_000, pilot_trials=5_000, rng=4, rounds=1)
    assert plain.lower_bound == one.lower_bound and np.array_equal(plain.pilot_bounds, one.pilot_bounds)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(rounds=0), ValueError, "rounds"),
        (dict(rounds=1.5), TypeError, "rounds"),
        (dict(candidates=[]), ValueError, "candidates"),
        (dict(candidates=[(1.0,)]), TypeError, "candidates"),
        (dict(candidates=[("a", "b")]), TypeError, "candidates"),
        (dict(trials=2), ValueError, "trials"),
        (dict(pilot_trials=0), ValueError, "pilot_trials"),
        (dict(confirm=2), ValueError, "confirm"),
        (dict(confidence_level=1.0), ValueError, "confidence_level"),
        (dict(epsilon=0.0), ValueError, "epsilon"),
        (dict(mechanism=None), TypeError, "mechanism"),
    ],
)
def test_search_pairs_names_bad_parameters(kwargs, error, name):
    args = dict(mechanism=functools.partial(report_noisy_max, epsilon=0.1), candidates=[((1.0, 0.0), (0.0, 1.0))],
                epsilon=0.1, trials=100, rng=0)
    args.update(kwargs)
    with pytest.raises(error, match=name):
        search_pairs(**args)


# ---------------------------------------------------------------------------------------------
# DP-Sniper's benchmark: settings, exact epsilons, published values
# ---------------------------------------------------------------------------------------------


def test_the_benchmark_has_dpsnipers_twenty_mechanisms(bench):
    assert len(bench) == 20 and set(bench) == set(PUBLISHED)
    for entry in bench.values():
        assert entry.epsilon == 0.1 and entry.dpsniper == PUBLISHED[entry.name] and entry.source == "bichsel2021dpsniper"
        out = entry.release()(entry.x, 7, np.random.default_rng(0))
        assert out.shape[0] == 7
    svt_c = {name: dict(bench[name].options).get("c") for name in ("SVT1", "SVT2", "SVT3", "SVT4", "SVT5", "SVT6")}
    assert set(svt_c.values()) == {1}
    assert dict(bench["SVT1"].options)["threshold"] == 0.5
    assert dict(bench["SVT34Parallel"].options)["c"] == 2 and dict(bench["NumericalSVT"].options)["c"] == 2
    assert bench["SVT34Parallel"].release()(bench["SVT34Parallel"].x, 3, np.random.default_rng(0)).shape == (3, 20)
    assert {n for n, e in bench.items() if e.true_epsilon is None} == {"SVT3", "SVT34Parallel", "NumericalSVT"}


def test_truncated_geometric_is_exactly_what_balcer_and_vadhan_prove(bench):
    # Their Theorem 4.7: ln(1 + 2^-k)-DP with k = ceil(ln(2 / epsilon)); the pair attains it.
    k = math.ceil(math.log(2 / 0.1))
    assert bench["TruncatedGeometric"].true_epsilon == pytest.approx(math.log1p(2.0**-k), rel=1e-12)
    for count in range(6):
        pmf = truncated_geometric_pmf(count, epsilon=0.1)
        assert sum(pmf) == 1 and all(p > 0 for p in pmf)
    m = 400_000
    draws = truncated_geometric(2, m, np.random.default_rng(11), epsilon=0.1)
    freq = np.bincount(draws, minlength=6) / m
    exact = np.array([float(p) for p in truncated_geometric_pmf(2, epsilon=0.1)])
    assert np.all(np.abs(freq - exact) <= 5 * np.sqrt(exact * (1 - exact) / m))


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_report_noisy_max_probabilities_match_monte_carlo(noise):
    q = (0.0, 2.0, 2.0, 2.0, 2.0)
    exact = rnm_index_probabilities(q, epsilon=0.1, noise=noise)
    assert exact.sum() == pytest.approx(1.0, abs=1e-9)
    m = 400_000
    freq = np.bincount(report_noisy_max(q, m, np.random.default_rng(3), epsilon=0.1, noise=noise), minlength=5) / m
    assert np.all(np.abs(freq - exact) <= 5 * np.sqrt(exact * (1 - exact) / m))


@pytest.mark.parametrize("algorithm, threshold", [(1, 0.5), (2, 1.0), (4, 1.0)])
def test_svt_pattern_probabilities_match_monte_carlo(algorithm, threshold):
    q = (1.0,) * 10 if algorithm == 4 else (0.0,) * 5 + (1.0,) * 5
    exact = svt_pattern_probabilities(q, epsilon=0.1, algorithm=algorithm, threshold=threshold)
    assert sum(exact.values()) == pytest.approx(1.0, abs=1e-9)
    m = 200_000
    out = svt(q, m, np.random.default_rng(algorithm), epsilon=0.1, algorithm=algorithm, c=1, threshold=threshold)
    rows, counts = np.unique(out, axis=0, return_counts=True)
    seen = {tuple(r): c / m for r, c in zip(rows.tolist(), counts)}
    assert set(seen) <= set(exact)
    for pattern, p in exact.items():
        assert abs(seen.get(pattern, 0.0) - p) <= 5 * math.sqrt(p * (1 - p) / m) + 1e-12, pattern


def test_rappor_hashes_like_murmur3_and_dpsnipers_filter():
    from dptutor.dpsniper.mechanisms import _murmur3_32

    # MurmurHash3 x86_32 reference values (as mmh3.hash returns them, signed).
    assert _murmur3_32(b"foo", 0) == -156908512 and _murmur3_32(b"foo", 42) == -1322301282
    assert _murmur3_32(b"", 0) == 0 and _murmur3_32(b"hello", 0) == 613153351
    # The bits that differ between the values 1 and 0: the six with non-zero weight in DP-Sniper's
    # published classifier for RAPPOR.
    assert sorted(set(bloom_bits(1)) ^ set(bloom_bits(0))) == [0, 3, 10, 11, 13, 18]


def test_the_published_values_are_below_the_exact_epsilons(bench):
    # A published 90% lower bound above the exact epsilon of its pair would mean a wrong pair or setting.
    for entry in bench.values():
        if entry.true_epsilon is not None:
            assert entry.dpsniper <= entry.true_epsilon, entry.name


def test_noise_template_is_the_laplace_log_likelihood_ratio_and_auto_picks_it():
    # Twenty noisy copies of one count (DP-Sniper's LaplaceParallel shape, scale 20): the template is the
    # exact log-likelihood ratio up to scale, so it ties the same order of fresh outputs as the exact ratio, and "auto" chooses it
    # over every fitted model, at a fitting size where logistic regression's 20 weights are still noisy.
    rng = np.random.default_rng(41)
    n, m, b = 4000, 50_000, 20.0
    a, c = rng.laplace(0.0, b, (n, 20)), rng.laplace(1.0, b, (n, 20))
    stat = fit_statistic(a, c, inputs=(0.0, 1.0))
    assert stat.kind == "template"
    ta = rng.laplace(0.0, b, (m, 20))
    exact = lambda o: (np.abs(o) - np.abs(o - 1.0)).sum(axis=1) / b  # noqa: E731
    order = np.argsort(exact(ta), kind="stable")
    assert np.all(np.diff(stat(ta)[order]) >= -1e-9)  # the same order as the exact ratio (a monotone map of it)
    # a vector input as long as the output: the one changed coordinate, clipped on either side of it
    one = fit_statistic(a[:, :5], c[:, :5], model="template", inputs=(np.zeros(5), np.eye(5)[2]))
    values = one(np.array([[0, 0, -5.0, 0, 0], [9, 9, 0.25, 9, 9], [0, 0, 7.0, 0, 0], [0, 0, np.inf, 0, -np.inf]]))
    assert values[2] == values[3] and values[0] < values[1] < values[2] and np.isfinite(values).all()
    assert pickle.loads(pickle.dumps(one))(np.zeros((2, 5))).tolist() == one(np.zeros((2, 5))).tolist()


def test_noise_template_only_where_it_applies():
    rng = np.random.default_rng(42)
    a, c = rng.normal(0.0, 1.0, (2000, 3)), rng.normal(0.5, 1.0, (2000, 3))
    # inputs that do not fit the outputs (another length, categories, equal) leave "auto" to the fitted models
    for inputs in ((np.zeros(4), np.ones(4)), ("u", "v"), (1.0, 1.0), (np.zeros(3), np.ones(2)), (10**400, 1)):
        assert fit_statistic(a, c, inputs=inputs).kind in {mod for mod, _, _ in AUTO_CANDIDATES}
    with pytest.raises(ValueError, match="inputs"):
        fit_statistic(a, c, model="template")
    with pytest.raises(ValueError, match="inputs"):
        fit_statistic(a, c, model="template", inputs=(np.zeros(4), np.ones(4)))
    with pytest.raises(TypeError, match="inputs"):
        fit_statistic(a, c, inputs=[0.0, 1.0, 2.0])
    # outputs on one level of the template (every value beyond the interval): a constant, finite score
    flat = fit_statistic(np.full((50, 3), 9.0), np.full((50, 3), 9.0), model="template", inputs=(0.0, 1.0))
    assert np.unique(flat(np.full((4, 3), 9.0))).size == 1



def test_the_template_repeats_a_vector_input_over_outputs_that_release_it_several_times():
    from dptutor.audit.template import template_of

    # Two releases of the same three queries side by side (as SVT34Parallel releases them): the template of
    # (x, x_prime) is that of the inputs tiled, so each copy counts; a width the length does not divide has none.
    x, xp = np.zeros(3), np.array([0.0, 2.0, -2.0])
    once, twice = template_of((x, xp), 3), template_of((x, xp), 6)
    rows = np.array([xp, x, [5.0, 1.0, -1.0]])  # the last: every changed answer at its midpoint
    assert once(rows).tolist() == [2.0, -2.0, 0.0]
    assert twice(np.tile(rows, 2)).tolist() == [4.0, -4.0, 0.0]
    assert twice(np.hstack([rows[:1], rows[1:2]])).tolist() == [0.0]  # one copy says x_prime, the other x
    assert template_of((x, xp), 4) is None and template_of((x, xp), 2) is None

def test_running_template_reads_prefix_sums_and_auto_picks_it():
    # Prefix sums of ten noisy answers (DP-Sniper's PrefixSum shape, scale 10): every coordinate moves, and
    # they are correlated, so no sum of one function per coordinate is the log-likelihood ratio; the running
    # template, the noise template on first differences, is (up to scale), and "auto" chooses it.
    rng = np.random.default_rng(44)
    n, m, b = 4000, 50_000, 10.0
    x, xp = np.ones(10), np.zeros(10)
    a, c = (np.cumsum(v + rng.laplace(0.0, b, (n, 10)), axis=1) for v in (x, xp))
    stat = fit_statistic(a, c, inputs=(x, xp))
    assert stat.kind == "running"
    ta = np.cumsum(x + rng.laplace(0.0, b, (m, 10)), axis=1)
    d = np.diff(ta, axis=1, prepend=0.0)
    exact = (np.abs(d - 1.0) - np.abs(d)).sum(axis=1) / b  # ln p_x'(o) / p_x(o)
    order = np.argsort(exact, kind="stable")
    assert np.all(np.diff(stat(ta)[order]) >= -1e-9)  # the same order as the exact ratio
    # the copy template on the same outputs orders them otherwise (it reads the totals as copies)
    copy = fit_statistic(a, c, model="template", inputs=(x, xp))
    assert np.any(np.diff(copy(ta)[order]) < -1e-6)
    # infinities in a total difference to NaN or infinity: a finite score; pickled, the same scores
    edge = stat(np.array([[np.inf] * 10, [-np.inf] + [np.inf] * 9, [0.0] * 10]))
    assert np.isfinite(edge).all()
    assert pickle.loads(pickle.dumps(stat))(ta[:5]).tolist() == stat(ta[:5]).tolist()
    # one value per output: its first difference is itself, so "auto" does not try it twice
    assert fit_statistic(a[:, :1], c[:, :1], inputs=(1.0, 0.0)).kind != "running"
    with pytest.raises(ValueError, match="inputs"):
        fit_statistic(a, c, model="running")


@pytest.mark.parametrize("model", ["auto", "logistic", "additive", "template", "running"])
def test_outputs_near_the_float_range_fit_without_overflow(model):
    # Values of 10^300: their squares overflow, so a spread or a standardisation computed naively is
    # infinite or NaN. Every model fits, scores finitely, and no warning escapes (warnings are errors here).
    rng = np.random.default_rng(46)
    a, c = rng.normal(0.0, 1.0, (300, 4)) * 1e300, rng.normal(0.5, 1.0, (300, 4)) * 1e300
    stat = fit_statistic(a, c, model=model, inputs=(np.zeros(4), np.full(4, 1e300)))
    scores = stat(np.vstack([a[:5], c[:5], np.full((1, 4), np.inf)]))
    assert np.isfinite(scores).all()
    assert scores[5:10].mean() > scores[:5].mean()  # it learned the direction: c sits 0.5e300 above a


def test_audit_pair_uses_the_template_for_noisy_copies():
    # LaplaceParallel's shape at a small budget: the audit learns its statistic with the inputs in hand, and
    # the bound stays below the exact epsilon (20 copies at scale 200: 0.1).
    def copies(data, size, rng):
        return data + rng.laplace(0.0, 200.0, (size, 20))

    # At 2*10^6 runs the bound is near 0.03 (0.025 to 0.035 over seeds 43-45, sampling error about 0.005).
    result = audit_pair(copies, 0.0, 1.0, epsilon=0.1, trials=2_000_000, rng=43, selection=0.3, bounds="two")
    assert 0.015 < result.lower_bound <= 0.1


def test_values_at_the_ends_of_the_float_range_fit_without_warnings():
    # Atoms at -1e308 and 1e308 are increasing; checking it by subtraction overflowed (a RuntimeWarning).
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fmap = AdditiveMap(knots=(np.empty(0),), atoms=(np.array([-1.7e308, 1.7e308]),))
        assert fmap.n_features == 2
        stat = fit_statistic(np.full((50, 2), 1e308), np.full((50, 2), -1e308))
        assert np.isfinite(stat(np.array([[1.0, 1.0], [1e308, -1e308]]))).all()


def test_prefix_sums_refuse_answers_whose_totals_overflow():
    # Ten answers of 1e308 have finite values but an infinite running total (an overflow warning before).
    import warnings

    from dptutor.dpsniper.mechanisms import prefix_sum

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="data"):
            prefix_sum(np.full(10, 1e308), 5, np.random.default_rng(0), epsilon=0.1)
        out = prefix_sum(np.full(10, 1e305), 5, np.random.default_rng(0), epsilon=0.1)
    assert np.isfinite(out).all() and out[0, -1] == pytest.approx(1e306)
