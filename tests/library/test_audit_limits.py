"""The Neyman-Pearson limit on what a valid audit can report (dptutor.audit.limits)."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dptutor.audit import audit_pair, nearest_pair, reach_count_probability, reach_probability
from dptutor.dpsniper import benchmark, bloom_bits, exact_output_laws, svt_pattern_probabilities
from dptutor.selection import max_log_ratio
from dptutor.zoo import ZOO

E = math.e
RR = (np.array([E / (1 + E), 1 / (1 + E)]), np.array([1 / (1 + E), E / (1 + E)]))  # randomized response, eps = 1


@pytest.mark.parametrize("epsilon", [0.999, 0.9, 0.5, 0.1, 1e-6])
def test_the_nearest_pair_is_within_epsilon_and_close(epsilon):
    u, v = nearest_pair(*RR, epsilon)
    assert max_log_ratio(u, v) <= epsilon
    assert u.sum() == pytest.approx(1.0) and v.sum() == pytest.approx(1.0)
    # For two outcomes the closest pair within epsilon (in chi-squared) is randomized response at epsilon.
    assert u[0] == pytest.approx(math.exp(epsilon) / (1 + math.exp(epsilon)), rel=1e-9)


def test_the_nearest_pair_of_a_pair_already_within_epsilon_is_itself():
    u, v = nearest_pair(*RR, 2.0)
    assert np.array_equal(u, RR[0]) and np.array_equal(v, RR[1])


def test_the_nearest_pair_of_the_sparse_vector_technique_is_within_the_bound():
    entry = benchmark()["SVT2"]
    opts = dict(entry.options)
    laws = [svt_pattern_probabilities(d, epsilon=entry.epsilon, algorithm=opts["algorithm"], threshold=opts["threshold"])
            for d in (entry.x, entry.x_prime)]
    p, q = (np.array([law[k] for k in laws[0]]) for law in laws)
    u, v = nearest_pair(p, q, entry.dpsniper)
    assert max_log_ratio(u, v) <= entry.dpsniper < max_log_ratio(p, q)
    assert np.max(np.abs(u - p) / p) < 0.01  # a small move: the outcomes' ratios were close to the bound


def test_above_the_pairs_epsilon_only_the_error_remains():
    assert reach_probability(*RR, 10**6, 1.01) == pytest.approx(0.05)
    assert reach_probability(*RR, 10**6, 1.01, confidence_level=0.99) == pytest.approx(0.01)


def test_reach_probability_grows_with_runs_and_falls_with_the_bound():
    by_runs = [reach_probability(*RR, n, 0.95) for n in (100, 1_000, 10_000, 100_000)]
    assert by_runs == sorted(by_runs) and by_runs[0] < 0.3 and by_runs[-1] > 0.99
    by_bound = [reach_probability(*RR, 4_000, b) for b in (0.8, 0.9, 0.95, 0.99)]
    assert by_bound == sorted(by_bound, reverse=True)


def test_reach_probability_matches_the_exact_power_for_two_outcomes():
    # With two outcomes the likelihood ratio of n runs per dataset depends only on the two counts of the
    # first outcome, whose exact laws are binomial: compute the most powerful test's power exactly (a
    # randomised test at exactly the level) and compare with the normal approximation.
    n, bound = 2_000, 0.9
    u, v = nearest_pair(*RR, bound * (1 - 1e-12))
    k = np.arange(n + 1)
    # log dP/dQ of the counts (k0 of the first outcome under x, k1 under x'), separable in k0 and k1.
    l0 = k * math.log(RR[0][0] / u[0]) + (n - k) * math.log(RR[0][1] / u[1])
    l1 = k * math.log(RR[1][0] / v[0]) + (n - k) * math.log(RR[1][1] / v[1])
    llr = (l0[:, None] + l1[None, :]).ravel()
    under_q = np.outer(stats.binom.pmf(k, n, u[0]), stats.binom.pmf(k, n, v[0])).ravel()
    under_p = np.outer(stats.binom.pmf(k, n, RR[0][0]), stats.binom.pmf(k, n, RR[1][0])).ravel()
    order = np.argsort(-llr, kind="stable")
    size_q, power_p = np.cumsum(under_q[order]), np.cumsum(under_p[order])
    i = int(np.searchsorted(size_q, 0.05))  # the first outcome that would take the size above 5%
    fraction = (0.05 - (size_q[i - 1] if i else 0.0)) / under_q[order][i]
    exact = (power_p[i - 1] if i else 0.0) + fraction * under_p[order][i]
    approx = reach_probability(*RR, n, bound)
    assert 0.1 < exact < 0.9
    assert approx == pytest.approx(exact, abs=0.02)


def test_no_valid_audit_reaches_more_often_than_the_limit():
    # audit_pair's joint bound is valid, so its frequency of reaching b cannot exceed the limit beyond
    # sampling error.  It stays well below it: it measures one event on 70% of the runs, while the limit's
    # test uses every run.  (Bound 0.95 at 4,000 runs: limit 0.63, audit about 0.28.)
    mech = functools.partial(ZOO["randomized_response"].mechanism, epsilon=1.0)
    seeds, trials, bound = 1_000, 4_000, 0.95
    reached = np.mean([audit_pair(mech, 1, 0, epsilon=1.0, trials=trials, rng=s, selection=0.3, bounds="joint").lower_bound
                       >= bound for s in range(seeds)])
    limit = reach_probability(*RR, trials, bound)
    assert 0.3 < limit < 0.9
    assert 0.1 < reached <= limit + 3 * math.sqrt(limit * (1 - limit) / seeds)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [(dict(p=[0.5, 0.5, 0.0]), ValueError, "p"), (dict(q=[0.5, 0.6]), ValueError, "q"), (dict(q=[1.0]), ValueError, "q"),
     (dict(p="ab"), TypeError, "p"), (dict(p=[0.5, float("nan")]), ValueError, "p"), (dict(q=[0.2, 0.3, 0.5]), ValueError, "q"),
     (dict(trials=0), ValueError, "trials"), (dict(trials=2.5), TypeError, "trials"), (dict(bound=-0.1), ValueError, "bound"),
     (dict(bound=float("nan")), ValueError, "bound"), (dict(confidence_level=1.0), ValueError, "confidence_level")],
)
def test_bad_values_name_the_parameter(kwargs, error, name):
    args = dict(p=RR[0], q=RR[1], trials=100, bound=0.5) | kwargs
    with pytest.raises(error, match=name):
        reach_probability(**args)


# ---------------------------------------------------------------------------------------------
# the benchmark's exact output laws, which the limits are computed from
# ---------------------------------------------------------------------------------------------

WITH_LAWS = ["LaplaceMechanism", "TruncatedGeometric", "NoisyHist1", "NoisyHist2", "ReportNoisyMax1", "ReportNoisyMax2",
             "ReportNoisyMax3", "SVT1", "SVT2", "SVT4", "Rappor", "OneTimeRappor"]


@pytest.mark.parametrize("name", WITH_LAWS)
def test_exact_output_laws_give_the_entrys_exact_epsilon(name):
    p, q = exact_output_laws(name)
    assert p.shape == q.shape and p.size >= 2
    assert p.sum() == pytest.approx(1.0, abs=1e-9) and q.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.all(p > 0) and np.all(q > 0)
    assert max_log_ratio(p, q) == pytest.approx(benchmark()[name].true_epsilon, rel=1e-9)


def test_exact_output_laws_of_rappor_match_its_runs():
    # The summary (how many of the bits set for x only report 1, how many set for x' only report 0) from
    # simulated runs of the mechanism, against the exact law: a chi-squared test, seeded.
    entry = benchmark()["OneTimeRappor"]
    p, _ = exact_output_laws("OneTimeRappor")
    only_x = sorted(set(bloom_bits(1)) - set(bloom_bits(0)))
    only_xp = sorted(set(bloom_bits(0)) - set(bloom_bits(1)))
    out = np.asarray(entry.mechanism(entry.x, 200_000, np.random.default_rng(11)))
    cells = out[:, only_x].sum(axis=1) * (len(only_xp) + 1) + (1 - out[:, only_xp]).sum(axis=1)
    counts = np.bincount(cells.astype(int), minlength=p.size)
    assert stats.chisquare(counts, p * counts.sum()).pvalue > 1e-3


def test_exact_output_laws_are_none_where_not_computed_and_refuse_unknown_names():
    assert exact_output_laws("SVT3") is None
    for name in ("NoisyHist1", "NoisyHist2"):  # two bins change
        assert exact_output_laws(name, (0.0, 0.0, 1.0, 1.0, 1.0), (1.0,) * 5) is None
    with pytest.raises(ValueError, match="name"):
        exact_output_laws("NoSuchMechanism")
    with pytest.raises(ValueError, match="together"):
        exact_output_laws("ReportNoisyMax3", (0.0,) * 5)
    with pytest.raises(ValueError, match="same length"):
        exact_output_laws("SVT1", (0.0,) * 5, (1.0,) * 4)
    with pytest.raises(ValueError, match="x_prime"):
        exact_output_laws("TruncatedGeometric", 2, 9)


def test_exact_output_laws_on_other_pairs():
    # Swapping the pair swaps the laws; report-noisy-max's are its index probabilities; RAPPOR's epsilon is
    # the number of bits set in one filter only times the cost of one bit; a shift of 3 costs 3 epsilon.
    for name in ("SVT1", "ReportNoisyMax3", "Rappor"):
        e = benchmark()[name]
        p, q = exact_output_laws(name, e.x_prime, e.x)
        p0, q0 = exact_output_laws(name)
        if name == "Rappor":  # the summary's cells are listed in another order
            p, q, p0, q0 = (np.sort(v) for v in (p, q, p0, q0))
        assert np.allclose(p, q0, rtol=1e-12, atol=0) and np.allclose(q, p0, rtol=1e-12, atol=0)
    x, xp = (3.0, 1.0, 0.0, 2.0), (2.0, 2.0, 1.0, 1.0)
    p, q = exact_output_laws("ReportNoisyMax1", x, xp)
    assert np.array_equal(p, svt_free_rnm(x)) and np.array_equal(q, svt_free_rnm(xp))
    differ = len(set(bloom_bits(5)) ^ set(bloom_bits(7)))
    assert max_log_ratio(*exact_output_laws("OneTimeRappor", 5, 7)) == pytest.approx(differ * math.log(0.525 / 0.475), rel=1e-12)
    assert max_log_ratio(*exact_output_laws("LaplaceMechanism", 4.0, 1.0)) == pytest.approx(0.3, rel=1e-9)
    # one bin changed by 2: NoisyHist1's noise Lap(1/epsilon) makes it cost 2 epsilon, NoisyHist2's Lap(epsilon) 2 / epsilon
    one_bin = ((1.0,) * 5, (1.0, 1.0, 3.0, 1.0, 1.0))
    assert max_log_ratio(*exact_output_laws("NoisyHist1", *one_bin)) == pytest.approx(0.2, rel=1e-9)
    assert max_log_ratio(*exact_output_laws("NoisyHist2", *one_bin)) == pytest.approx(20.0, rel=1e-9)


def svt_free_rnm(data):
    from dptutor.dpsniper import rnm_index_probabilities

    return rnm_index_probabilities(data, epsilon=0.1, noise="laplace")


@pytest.mark.parametrize("name", ["ReportNoisyMax3", "LaplaceMechanism"])
def test_binned_laws_match_the_mechanisms_runs(name):
    # 2 x 10^5 seeded runs, put in 25 groups of cells of equal exact probability: a chi-squared test.
    e = benchmark()[name]
    p, _ = exact_output_laws(name)
    from dptutor import dpsniper

    span = dpsniper.BINNED_TAIL * (2.0 if name == "ReportNoisyMax3" else 1.0) / e.epsilon
    xs = np.atleast_1d(np.asarray(e.x, dtype=float))
    xps = np.atleast_1d(np.asarray(e.x_prime, dtype=float))
    edges = np.linspace(min(xs.min(), xps.min()) - span, max(xs.max(), xps.max()) + span, dpsniper.BINNED_CELLS - 1)
    out = np.asarray(e.release()(e.x, 200_000, np.random.default_rng(21)), dtype=float).reshape(-1)
    cell = np.searchsorted(edges, out, side="right")  # cell i holds [edges[i-1], edges[i])
    group = np.minimum((np.cumsum(p) - p / 2) * 25, 24).astype(int)  # 25 groups by the cells' cumulative mass
    counts = np.bincount(group[cell], minlength=25)
    expected = np.bincount(group, weights=p, minlength=25) * out.size
    assert stats.chisquare(counts, expected).pvalue > 1e-3


@pytest.mark.parametrize("name", ["ReportNoisyMax3", "NoisyHist1"])
def test_binned_limits_barely_move_with_coarser_cells(name, monkeypatch):
    from dptutor import dpsniper

    e = benchmark()[name]
    fine = reach_probability(*exact_output_laws(name), 10**7, e.dpsniper)
    monkeypatch.setattr(dpsniper, "BINNED_CELLS", dpsniper.BINNED_CELLS // 10)
    coarse = reach_probability(*exact_output_laws(name), 10**7, e.dpsniper)
    assert abs(fine - coarse) < 1e-3 and 0.01 < fine < 1.0


# ---------------------------------------------------------------------------------------------
# how many of several independent audits reach their targets
# ---------------------------------------------------------------------------------------------


def test_reach_count_probability_is_the_tail_over_every_outcome():
    # Against a sum over all 2^5 outcomes of five independent audits, with two more always reached.
    limits = [0.8, 0.2, 0.5, 0.9, 0.05]
    for k in range(0, 9):
        exact = 0.0
        for hits in itertools.product([0, 1], repeat=5):
            if sum(hits) + 2 >= k:
                exact += math.prod(p if h else 1 - p for p, h in zip(limits, hits))
        assert reach_count_probability(limits, k, unlimited=2) == pytest.approx(min(1.0, exact), abs=1e-12)
    assert reach_count_probability([], 0) == 1.0 and reach_count_probability([], 1) == 0.0
    assert reach_count_probability([0.3], 3, unlimited=1) == 0.0  # more than there are


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(limits=[0.5, 1.5]), ValueError, "limits"),
        (dict(limits=[-0.1]), ValueError, "limits"),
        (dict(limits=[[0.5]]), ValueError, "limits"),
        (dict(limits=[math.nan]), ValueError, "limits"),
        (dict(limits="abc"), TypeError, "limits"),
        (dict(at_least=-1), ValueError, "at_least"),
        (dict(at_least=1.5), TypeError, "at_least"),
        (dict(unlimited=-2), ValueError, "unlimited"),
    ],
)
def test_reach_count_probability_refuses_bad_values_by_name(kwargs, error, name):
    args = dict(limits=[0.5, 0.2], at_least=1) | kwargs
    with pytest.raises(error, match=name):
        reach_count_probability(**args)
