"""Hostile inputs to the learned statistic and the one-run audit (helper-59).

Each test failed before its fix (the old behaviour is in the comment above it).
"""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
from scipy import special, stats

from dptutor.audit import audit_mechanism, audit_one_run, audit_pair, fit_statistic, one_run_p_value
from dptutor.audit.learned import LearnedStatistic


def _laplace_pair(n: int = 1000, width: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    return r.laplace(size=(n, width)), r.laplace(size=(n, width)) + 1.0


# --- 1. outputs far from 1 in magnitude -------------------------------------------------------------


@pytest.mark.parametrize("model", ["logistic", "additive", "auto"])
@pytest.mark.parametrize("power", [-1000, -700, 700, "top"])
def test_a_rescaled_sample_fits_the_same_statistic(model, power):
    # Old: at 2**-700 and 2**-1000 the features' std underflowed to 0 and the statistic was the constant of
    # "every output identical"; at the top of the float range (largest |value| in [2**1023, 2**1024)) the
    # additive model (and "auto", which tries it) raised "span more than the float range".
    a, b = _laplace_pair()
    unit = fit_statistic(a, b, model=model, rng=0)
    if power == "top":
        power = 1024 - int(np.frexp(np.abs(np.concatenate([a, b])).max())[1])
    scaled = fit_statistic(np.ldexp(a, power), np.ldexp(b, power), model=model, rng=0)
    probe = np.concatenate([a, b])
    assert np.unique(scaled(np.ldexp(probe, power))).size > 100
    np.testing.assert_array_equal(scaled(np.ldexp(probe, power)), unit(probe))


def test_tiny_outputs_are_not_a_constant_statistic():
    # Old: np.unique(s(a)).size == 1 at scale 1e-200.
    a, b = _laplace_pair(2000)
    s = fit_statistic(1e-200 * a, 1e-200 * b, rng=0)
    assert np.unique(s(1e-200 * a)).size > 100
    assert np.mean(s(1e-200 * b)) - np.mean(s(1e-200 * a)) > 1.0


@pytest.mark.parametrize(("low", "high"), [(-1e308, 1e308), (0.0, 5e-324), (-5e-324, 5e-324), (1e308, 1.7e308)])
def test_perfectly_separated_extreme_outputs_separate(low, high):
    # Old: a constant statistic (0 on both) for +-1e308 and for 0 vs 5e-324.
    s = fit_statistic(np.full((200, 1), low), np.full((200, 1), high), rng=0)
    assert np.all(s(np.full((3, 1), high)) > s(np.full((3, 1), low)) + 1.0)


def test_audit_pair_on_tiny_outputs_finds_the_same_bound():
    # Old: lower_bound 0.0 at scale 1e-300 (1.69 at scale 1).
    def mech(x, size, r):
        return 1e-300 * (float(np.sum(x)) + r.laplace(size=(size, 2)))

    result = audit_pair(mech, np.array([0.0]), np.array([1.0]), epsilon=1, trials=4000, rng=1)
    assert result.lower_bound > 1.2


def test_audit_pair_on_huge_vector_outputs_runs_without_a_warning():
    # Old: ValueError "outputs: the values of output value 0 (atoms aside) span more than the float range",
    # raised by the learned statistic, naming neither the mechanism nor a parameter.
    def mech(x, size, r):
        return 1e308 * np.clip(r.laplace(size=(size, 2)) + float(np.sum(x)), -1.75, 1.75)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = audit_pair(mech, np.array([0.0]), np.array([1.0]), epsilon=1, trials=4000, rng=1)
    assert result.lower_bound > 1.0


def test_learned_statistic_checks_its_exponents_and_pickles():
    a, b = _laplace_pair(200)
    s = fit_statistic(np.ldexp(a, -900), np.ldexp(b, -900), model="logistic")
    assert s.exponents.tolist() == np.frexp(np.abs(np.ldexp(np.concatenate([a, b]), -900)).max(axis=0))[1].tolist()
    again = pickle.loads(pickle.dumps(s))
    np.testing.assert_array_equal(again(np.ldexp(a, -900)), s(np.ldexp(a, -900)))
    with pytest.raises(ValueError, match="exponents"):
        LearnedStatistic(model=s.model, kind="logistic", width=2, infinite=np.zeros(2, dtype=bool), exponents=[1.5, 2])
    with pytest.raises(ValueError, match="exponents"):
        LearnedStatistic(model=s.model, kind="logistic", width=2, infinite=np.zeros(2, dtype=bool), exponents=[1])


# --- 2. bool outputs --------------------------------------------------------------------------------


def _rr(x, size, r):
    return r.random(size) < (0.75 if np.sum(x) else 0.25)


def test_fit_statistic_accepts_bool_outputs():
    # Old: TypeError "outputs_x must hold real numbers, got dtype bool".
    r = np.random.default_rng(0)
    s = fit_statistic(r.random(200) < 0.3, r.random(200) < 0.7, rng=0)
    score = s(np.array([True, False]))
    assert score[0] > score[1]
    np.testing.assert_array_equal(s([True, False]), score)
    np.testing.assert_array_equal(s(np.array([1.0, 0.0])), score)


def test_audit_pair_learned_on_bool_outputs():
    # Old: ValueError ... outputs must hold real numbers, got dtype bool.
    result = audit_pair(_rr, np.array([0.0]), np.array([1.0]), epsilon=1, trials=2000, statistic="learned", rng=1)
    assert result.lower_bound > 0.5


def test_audit_mechanism_on_randomized_response_with_bool_output():
    # Old: the pilot switched to statistic="learned" and raised ValueError (dtype bool).
    result = audit_mechanism(_rr, epsilon=1, runs=40000, length=1, rng=1)
    assert 0.7 < result.best.lower_bound <= math.log(3) + 0.1


# --- 3. the one-run audit at many canaries ------------------------------------------------------------


def _old_p_value(v: int, r: int, m: int, epsilon: float, delta: float) -> float:
    """The p-value as computed before the fix: every pmf from 0 to v - 1."""
    if v == 0:
        return 1.0
    p = special.expit(epsilon)
    tail = float(stats.binom.sf(v - 1, r, p))
    below = np.cumsum(stats.binom.pmf(np.arange(v - 1, -1, -1), r, p))
    return min(1.0, tail + 2.0 * m * delta * float(np.max(below / np.arange(1, v + 1))))


def test_one_run_p_value_is_unchanged_by_the_window():
    rng = np.random.default_rng(5)
    for _ in range(400):
        m = int(rng.integers(1, 20000))
        r = int(rng.integers(0, m + 1))
        v = int(rng.integers(0, r + 1)) if rng.random() < 0.5 else min(r, int(r * rng.uniform(0.5, 1.0)))
        eps = float(rng.choice([0.0, rng.uniform(0, 5), rng.uniform(0, 36)]))
        delta = float(rng.choice([1e-12, 1e-5, 1e-2, 0.3]))
        assert one_run_p_value(v, r, m, eps, delta=delta) == _old_p_value(v, r, m, eps, delta)


def test_one_run_at_ten_million_canaries_works_in_a_window_and_is_unchanged():
    # Old: arrays of length v at each bisection step, 520 MB at 10**7 canaries (and 43 to 66 s; 10**8 did
    # not finish in 300 s).  Now a window of about 40 sqrt(r) terms: the peak allocation (numpy reports to
    # tracemalloc) stays small, and the bound is the old one to the last bit.  (Times: benchmarks/README.md.)
    import tracemalloc

    tracemalloc.start()
    try:
        bound = audit_one_run(6 * 10**6, 10**7, 10**7, delta=1e-5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20, peak
    assert bound == 0.4040817953646183
