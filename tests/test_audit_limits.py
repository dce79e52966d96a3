"""The Neyman-Pearson limit on what a valid audit can report (dptutor.audit.limits)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import stats

from dptutor.audit import audit_pair, nearest_pair, reach_probability
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
    assert reach_probability(*RR, 10**6, 1.01, confidence=0.99) == pytest.approx(0.01)


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
    reached = np.mean([audit_pair(mech, 1, 0, epsilon=1.0, trials=trials, seed=s, selection=0.3, bounds="joint").lower_bound
                       >= bound for s in range(seeds)])
    limit = reach_probability(*RR, trials, bound)
    assert 0.3 < limit < 0.9
    assert 0.1 < reached <= limit + 3 * math.sqrt(limit * (1 - limit) / seeds)


@pytest.mark.parametrize(
    "kwargs, error, name",
    [(dict(p=[0.5, 0.5, 0.0]), ValueError, "p"), (dict(q=[0.5, 0.6]), ValueError, "q"), (dict(q=[1.0]), ValueError, "q"),
     (dict(p="ab"), TypeError, "p"), (dict(p=[0.5, float("nan")]), ValueError, "p"), (dict(q=[0.2, 0.3, 0.5]), ValueError, "q"),
     (dict(trials=0), ValueError, "trials"), (dict(trials=2.5), TypeError, "trials"), (dict(bound=-0.1), ValueError, "bound"),
     (dict(bound=float("nan")), ValueError, "bound"), (dict(confidence=1.0), ValueError, "confidence")],
)
def test_bad_values_name_the_parameter(kwargs, error, name):
    args = dict(p=RR[0], q=RR[1], trials=100, bound=0.5) | kwargs
    with pytest.raises(error, match=name):
        reach_probability(**args)


# ---------------------------------------------------------------------------------------------
# the benchmark's exact output laws, which the limits are computed from
# ---------------------------------------------------------------------------------------------

WITH_LAWS = ["TruncatedGeometric", "ReportNoisyMax1", "ReportNoisyMax2", "SVT1", "SVT2", "SVT4", "Rappor", "OneTimeRappor"]


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
    assert exact_output_laws("LaplaceMechanism") is None
    with pytest.raises(ValueError, match="name"):
        exact_output_laws("NoSuchMechanism")
