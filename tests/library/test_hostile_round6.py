"""Round 6 of the hostile sweep: auditors and accountants fed inputs at their edges (helper-63).

Each test failed on the module as it was before its fix.
"""

from __future__ import annotations

import concurrent.futures
import math
import warnings
from fractions import Fraction

import pytest

import numpy as np

from dptutor.audit import audit_one_run, audit_pair, estimate_loss, nearest_pair, one_run_p_value, reach_probability
from dptutor.composition import Budget, parallel_epsilon, sequential_epsilon
from dptutor.selection import max_log_ratio


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _exact_all_correct(r: int, epsilon: int) -> Fraction:
    """P[Binomial(r, p) >= r] = p^r at p = e^epsilon / (1 + e^epsilon), to 40 digits (e^-epsilon as a Fraction)."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = 60
        p = Fraction(1) / (1 + Fraction(Decimal(-epsilon).exp()))
    return p ** r


@pytest.mark.parametrize("epsilon", [40.0, 1e308, math.inf])
def test_one_run_p_value_above_the_cap_is_still_an_upper_bound(epsilon):
    # Old: the p-value was computed at min(epsilon, 36), 0.9999999999999778 for 100 of 100 guesses at any
    # larger epsilon, below the exact value (0.99999999999999957... at 40, 1 at infinity).
    exact = _exact_all_correct(100, 40) if epsilon == 40.0 else Fraction(1)
    for delta in (0.0, 1e-6):
        assert Fraction(one_run_p_value(100, 100, 1000, epsilon, delta=delta)) >= exact


def test_nearest_pair_of_laws_with_a_far_outcome_stays_positive():
    # Old: the projection a - (a - k b) a / (a + k^2 b) rounded to a negative entry where k b is far below a,
    # and both functions raised "p must hold values >= 0" for these valid laws (an inner check's name).
    p = [7.218376221486415e-07, 5.975944030692671e-05, 0.9816272506350134, 0.012014360994307268, 0.006297907092750165]
    q = [0.9999180956953324, 2.426016780893386e-07, 8.166170298950113e-05, 1e-300, 1e-300]
    u, v = nearest_pair(p, q, 1.0)
    assert np.all(u > 0) and np.all(v > 0) and max_log_ratio(u, v) <= 1.0
    assert u.sum() == pytest.approx(1.0) and v.sum() == pytest.approx(1.0)
    assert 0.05 <= reach_probability(p, q, 100, 1.0) <= 1.0


def _exact(value) -> Fraction:
    return Fraction(*value.as_integer_ratio()) if hasattr(value, "as_integer_ratio") else Fraction(value)


@pytest.mark.parametrize("value", [Fraction(1, 3), np.longdouble(1) + np.longdouble(2.0) ** -60, 2**53 + 1])
def test_sequential_and_parallel_epsilon_of_exact_inputs_are_never_below_them(value):
    # Old: each epsilon became its nearest double, below 1/3, below 1 + 2^-60 (1.0) and below 2^53 + 1, so the
    # "never below the exact sum" budget was below it.
    assert Fraction(sequential_epsilon([value])) >= _exact(value)
    assert Fraction(sequential_epsilon([value, value])) >= 2 * _exact(value)
    assert Fraction(parallel_epsilon([0.5, value])) >= _exact(value)


def test_budget_refuses_exact_releases_that_overdraw_it():
    # Old: 1/2 + 10^-30 became 0.5, so two such releases passed a total of 1 (overdrawn by 2e-30); a total of
    # Fraction(1, 10) became the double 0.1, above 1/10, which the release 0.1 then overdrew.
    release = Fraction(1, 2) + Fraction(1, 10**30)
    with pytest.raises(ValueError, match="epsilon"):
        Budget(1.0).spend(release).spend(release)
    with pytest.raises(ValueError, match="spent"):
        Budget(1.0, (release, release))
    with pytest.raises(ValueError, match="epsilon"):
        Budget(Fraction(1, 10)).spend(0.1)
    assert Fraction(Budget(Fraction(1, 10)).total) <= Fraction(1, 10)
    assert Budget(1.0).spend(0.25).spend(Fraction(3, 4)).remaining == 0.0  # exact doubles are unchanged
    with pytest.raises(ValueError, match="total"):
        Budget(Fraction(3, 10**324))  # between 0 and the smallest double: no double at most it is positive


class _NoRunExecutor(concurrent.futures.Executor):
    """An executor that never runs the block: every future holds ``result``."""

    def __init__(self, result):
        self.result = result

    def submit(self, fn, /, *args, **kwargs):
        future = concurrent.futures.Future()
        future.set_result(self.result)
        return future


def _laplace_pair(data, size, rng):
    return data + rng.laplace(0.0, 1.0, size)


def _laplace_sanity(x, epsilon, rng):
    return x + rng.laplace(0.0, 1.0 / epsilon, np.shape(x))


@pytest.mark.parametrize("result", [None, np.zeros((2, 3), dtype=np.int64), [{}, {}]])
def test_an_executor_that_returns_no_counts_is_named(result):
    # Old: None made numpy's "Cannot cast ufunc 'add' output from dtype('O') to dtype('int64')", naming nothing;
    # counts of the wrong shape or total were added as if the block had run.
    with pytest.raises(TypeError, match="executor"):
        audit_pair(_laplace_pair, 0.0, 1.0, epsilon=1.0, trials=60_000, rng=0, executor=_NoRunExecutor(result))
    with pytest.raises(TypeError, match="executor"):
        estimate_loss(_laplace_sanity, 4, 1.0, 60_000, rng=0, executor=_NoRunExecutor(result))


@pytest.mark.parametrize(("correct", "guesses", "level"), [(263, 358, 0.999999), (986, 1335, 0.99), (1531, 2501, 0.5)])
def test_audit_one_run_without_delta_is_never_above_its_exact_crossing(correct, guesses, level):
    # Old: the Clopper-Pearson limit and its log-odds rounded to nearest gave a bound whose exact p-value
    # P[Binomial(r, p) >= v] was above 1 - level (1.0000000000287635e-06 > 1.0000000000287557e-06 for the first).
    import mpmath

    bound = audit_one_run(correct, guesses, guesses, confidence_level=level)
    with mpmath.workdps(40):
        p = mpmath.e ** mpmath.mpf(bound) / (1 + mpmath.e ** mpmath.mpf(bound))
        p_value = mpmath.betainc(correct, guesses - correct + 1, 0, p, regularized=True)
        assert p_value <= 1 - mpmath.mpf(level)


def test_accountants_round_exact_inputs_to_the_safe_side() -> None:
    # A Fraction (or long double) epsilon or delta was rounded to the nearest double, below 1/3, so the composed
    # bound lay below the exact one; a target was rounded to nearest too, where a smaller one is the safe side.
    from dptutor.accounting import (advanced_composition, basic_composition, group_privacy,
                                    optimal_composition_delta, optimal_composition_epsilon, tradeoff_beta)

    third = Fraction(1, 3)
    assert float(third) < third  # the nearest double is below it
    eps, dlt = basic_composition(third, third, 1)
    assert Fraction(eps) >= third and Fraction(dlt) >= third
    eps, dlt = group_privacy(third, 1, third)
    assert Fraction(eps) >= third and Fraction(dlt) >= third
    assert advanced_composition(third, third, 1, 0.5)[1] >= advanced_composition(float(third), float(third), 1, 0.5)[1]
    assert advanced_composition(third, 0.0, 4, 0.5)[0] > advanced_composition(float(third), 0.0, 4, 0.5)[0]
    # Targets go down: 0.1's nearest double is above 1/10, so the target is the double below it.
    below = math.nextafter(0.1, 0.0)
    assert optimal_composition_delta(0.05, 10, Fraction(1, 10)) == optimal_composition_delta(0.05, 10, below)
    assert optimal_composition_epsilon(0.05, 10, Fraction(1, 10), 0.0) == optimal_composition_epsilon(0.05, 10, below)
    assert tradeoff_beta(0.2, third, 0.0) <= tradeoff_beta(0.2, float(third), 0.0)
    # Plain doubles are taken as they are.
    assert basic_composition(0.1, 0.01, 3) == (0.30000000000000004, 0.030000000000000002)
    with pytest.raises(ValueError, match="epsilon must be representable"):
        basic_composition(2**1024, 0.0, 1)
