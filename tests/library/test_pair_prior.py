"""Tests for the counts that one audit of a pair hands to a later one: :attr:`PairAudit.tallies`, ``audit_pair``'s
``prior``, and the input search's confirmation, which chooses its event with the pilot's counts.

Every test is seeded.  The soundness test uses an event whose likelihood ratio is exactly ``e^epsilon`` and a
prior that points at it exactly (the most a prior can help), with the joint bound, which then errs upward in up to
5% of the audits; the count over the seeds is compared with the binomial quantile at error 0.001.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dptutor.audit import PairAudit, audit_mechanism, audit_pair, pair_search

#: P(output 2) under x = 0 and x = 1; outputs 0 and 1 share the rest equally.
P2 = (0.1, 0.2)
#: The exact epsilon of the pair (0, 1): output 2's ratio, 2 (outputs 0 and 1 have 0.45 / 0.4).
EXACT = math.log(2.0)


def three_way(data, size, rng):
    """Outputs 0, 1 or 2; 2 is twice as likely under 1 as under 0."""
    p2 = P2[int(data)]
    u = rng.random(size)
    return np.where(u < p2, 2, np.where(u < p2 + (1.0 - p2) / 2.0, 0, 1)).astype(np.int64)


def laplace_count(data, size, rng):
    return data + rng.laplace(0.0, 1.0, size)


def exact_counts(n: int) -> dict:
    """``n`` runs of each input split exactly in proportion to the output probabilities."""
    return {v: tuple(round(n * (p if v == 2 else (1.0 - p) / 2.0)) for p in P2) for v in (0, 1, 2)}


def test_tallies_count_every_run_of_discrete_outputs():
    result = audit_pair(three_way, 0, 1, epsilon=1.0, trials=5_000, rng=1, selection=0.3)
    assert set(result.tallies) <= {0, 1, 2}
    assert sum(a for a, _ in result.tallies.values()) == 5_000
    assert sum(b for _, b in result.tallies.values()) == 5_000
    # output 2 comes out about twice as often under 1: its share is within 5 standard errors of 0.1 and 0.2
    for d, p in enumerate(P2):
        share = result.tallies[2][d] / 5_000
        assert abs(share - p) < 5.0 * math.sqrt(p * (1.0 - p) / 5_000)
    assert audit_pair(laplace_count, 0.0, 1.0, epsilon=1.0, trials=2_000, rng=1).tallies is None


@pytest.mark.parametrize("bounds", ["four", "two", "joint"])
def test_prior_chooses_the_event(bounds):
    """Twenty selection runs cannot find output 2; a prior that counts it can, and the event follows it."""
    result = audit_pair(three_way, 0, 1, epsilon=1.0, trials=2_000, rng=3, selection=0.01, bounds=bounds,
                        prior=exact_counts(10_000))
    assert result.event.startswith("output in {2}") and "more likely under x_prime" in result.event


def test_prior_never_changes_the_runs():
    """The same seed makes the same runs with or without a prior: the prior only moves the event."""
    hostile = {0: (900, 0), 1: (0, 900), 7: (100, 100)}  # wrong counts, and a value the mechanism never outputs
    plain = audit_pair(three_way, 0, 1, epsilon=1.0, trials=3_000, rng=4, selection=0.2, bounds="joint")
    moved = audit_pair(three_way, 0, 1, epsilon=1.0, trials=3_000, rng=4, selection=0.2, bounds="joint", prior=hostile)
    assert moved.tallies == plain.tallies
    assert (moved.selection_trials, moved.estimation_trials) == (plain.selection_trials, plain.estimation_trials)
    assert 0.0 <= moved.lower_bound <= EXACT + 1.0


def test_prior_is_ignored_for_real_outputs():
    plain = audit_pair(laplace_count, 0.0, 1.0, epsilon=1.0, trials=4_000, rng=5)
    given = audit_pair(laplace_count, 0.0, 1.0, epsilon=1.0, trials=4_000, rng=5, prior={0: (10, 10)})
    assert given.lower_bound == plain.lower_bound and given.event == plain.event


def test_a_perfect_prior_keeps_the_bound_sound():
    """The prior fixes the best event ({2}, whose ratio is exactly 2); over 300 seeds the 95% joint bound lies above
    ln 2 no more often than the binomial quantile of 5% at error 0.001."""
    seeds = 300
    above = 0
    for seed in range(seeds):
        result = audit_pair(three_way, 0, 1, epsilon=1.0, trials=4_000, rng=seed, selection=0.01, bounds="joint",
                            prior=exact_counts(100_000))
        assert result.event.startswith("output in {2}")
        above += result.lower_bound > EXACT
    assert above <= stats.binom.ppf(0.999, seeds, 0.05)
    assert above >= 1  # the bound is tight: it does reach its level now and then


@pytest.mark.parametrize(("prior", "error"), [
    ([(0, 1)], TypeError),
    ({"a": (1, 1)}, TypeError),
    ({0.5: (1, 1)}, TypeError),
    ({0: (1,)}, TypeError),
    ({0: "ab"}, TypeError),
    ({0: (1.0, 1.0)}, TypeError),
    ({0: (True, True)}, TypeError),
    ({0: (-1, -1)}, ValueError),
    ({0: (2, 1)}, ValueError),
    ({0: (10**14, 10**14)}, ValueError),
])
def test_bad_prior_is_refused_naming_it(prior, error):
    with pytest.raises(error, match="prior"):
        audit_pair(three_way, 0, 1, epsilon=1.0, trials=100, rng=1, prior=prior)


def test_pair_audit_checks_its_tallies():
    fields = dict(lower_bound=0.1, estimate=0.2, event="e", counts=np.array([[5, 5], [3, 7]]), trials=20, epsilon=1.0)
    assert PairAudit(**fields, tallies={(1, 0): (2, 2)}).tallies == {(1, 0): (2, 2)}
    with pytest.raises(ValueError, match="tallies"):
        PairAudit(**fields, tallies={0: (2, 1)})
    with pytest.raises(TypeError, match="tallies"):
        PairAudit(**fields, tallies=[1, 2])


def test_the_pilot_pools_each_pairs_counts_over_its_rounds():
    pilot = pair_search._Pilot(three_way, {"epsilon": 1.0}, 10_000, np.random.SeedSequence(2))
    pilot.audit([(0, 1), (1, 0)], 1_000)
    pilot.audit([(0, 1)], 3_000)
    pooled = pilot.tallies[(repr(0), repr(1))]
    assert sum(a for a, _ in pooled.values()) == 4_000 and sum(b for _, b in pooled.values()) == 4_000
    reverse = pilot.tallies[(repr(1), repr(0))]  # a reversed pair is pooled apart: its columns are swapped
    assert sum(a for a, _ in reverse.values()) == 1_000


def test_confirmation_options_with_and_without_counts():
    options = {"epsilon": 1.0, "selection": 0.3, "bounds": "joint"}
    assert pair_search._confirm_options(options, None) is options
    assert pair_search._confirm_options(options, {}) is options
    given = pair_search._confirm_options(options, {0: (5, 5)})
    assert given == {**options, "prior": {0: (5, 5)}, "selection": pair_search._PRIOR_SELECTION}
    small = pair_search._confirm_options({**options, "selection": 0.02}, {0: (5, 5)})
    assert small["selection"] == 0.02  # a share asked smaller than the rule's stays


def test_search_confirms_with_the_pilots_counts():
    """On discrete outputs the confirmation chooses its event on the pilot's counts and a small share of its own
    runs; its bound stays below the exact epsilon of the pair found (here every pair's epsilon is at most ln 2)."""
    found = audit_mechanism(three_way, epsilon=1.0, runs=200_000, values=[0, 1], rng=6, selection=0.3, bounds="joint")
    best = found.best
    assert best.selection_trials == max(1, int(best.trials * pair_search._PRIOR_SELECTION))
    assert 0.0 < found.lower_bound <= EXACT


def graded(data, size, rng):
    """Output 2 with probability 0.1 + 0.05 * data, else 0 or 1 equally: the pair (0, 3) leaks most."""
    p2 = 0.1 + 0.05 * int(data)
    u = rng.random(size)
    return np.where(u < p2, 2, np.where(u < p2 + (1.0 - p2) / 2.0, 0, 1)).astype(np.int64)


def test_the_pilot_keeps_counts_only_of_the_pairs_still_in_the_rounds():
    pool = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    pilot = pair_search._Pilot(graded, {"epsilon": 1.0}, 10_000, np.random.SeedSequence(3))
    chosen = pair_search._halving(pilot, pool, 60_000, 0, 3, 8, 1, None, "componentwise", np.random.default_rng(3))
    last = max(pilot.stages)
    in_last = {(repr(p[0]), repr(p[1])) for p, stage in zip(pilot.pairs, pilot.stages) if stage == last}
    assert set(pilot.tallies) == in_last and len(in_last) < len(pool)
    assert (repr(chosen[0][0]), repr(chosen[0][1])) in pilot.tallies


def test_pooled_rates_order_the_values_by_their_ratio():
    a, b, n = pair_search._pooled_rates({0: (10, 30), 1: (30, 10)})
    assert n == 40
    np.testing.assert_allclose(a, [0.75, 1.0, 0.25, 0.0])  # P[M(x) in E]: {1}, {1, 0}, then the complements
    np.testing.assert_allclose(b, [0.25, 1.0, 0.75, 0.0])


def test_the_pilot_score_reads_the_pooled_counts():
    """A pair whose own last audit shows nothing scores by the counts pooled over its rounds, unless they hold too many
    values to rank (then the last audit's estimation half, as before)."""
    flat = audit_pair(lambda d, s, r: r.integers(0, 2, s), 0, 1, epsilon=1.0, trials=2_000, rng=1, selection=0.3)
    alone = pair_search._score(flat, 10**6)
    leak = {0: (6_000, 3_000), 1: (4_000, 7_000)}  # ln(6 / 3) on {0}
    pooled = pair_search._score(flat, 10**6, leak)
    assert alone < 0.2 < pooled < math.log(2.0)
    many = {v: (1, 1) for v in range(pair_search._MANY_POINTS)}
    assert pair_search._score(flat, 10**6, many) == alone


def test_the_docstrings_state_the_constants_they_describe():
    """The module and audit_mechanism's docstrings give the private constants' values in words: they must match."""
    doc = " ".join((pair_search.__doc__ + pair_search.audit_mechanism.__doc__).split())
    assert f"on {pair_search._PRIOR_SELECTION:.0%} of its own runs" in doc
    assert f"fewer than {pair_search._PILOT_RUNS_PER_VALUE:,} times on average" in doc
    assert f"fewer than {pair_search._PILOT_TEMPLATE_TRIALS:,} runs per input" in doc
    assert doc.count(f"{pair_search._PRIOR_SELECTION:.0%} of its own runs") == 2
