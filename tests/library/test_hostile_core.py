"""Hostile inputs for the core modules: mechanisms, selection, accounting, attacks and the DP-SGD variants.

Each test pins one defect found by probing at the float limits and at huge sizes: a NaN probability, a
biased sampler (noise overflowing to inf, so that ties at inf go to the first index), a delta rounded below
its exact value, a parameter-less error message, or a request for gigabytes that was not refused.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest

from dptutor.accounting import advanced_composition, group_privacy
from dptutor.attacks import subset_queries, subset_sum_answers
from dptutor.learning_variants import dp_sgd_variant, released_sums
from dptutor.mechanisms import dptext_mechanism, granular_laplace_mechanism, snapping_mechanism
from dptutor.selection import (
    above_threshold,
    above_threshold_probabilities,
    exponential_mechanism,
    exponential_mechanism_exact,
    exponential_mechanism_probabilities,
    report_noisy_max,
    report_noisy_max_probabilities,
    sparse_vector,
)


pytestmark = pytest.mark.filterwarnings("error")  # every warning is an error here: none may reach a user


# ---------------------------------------------------------------------------------------------
# selection
# ---------------------------------------------------------------------------------------------


def test_exponential_probabilities_of_far_scores_at_a_subnormal_epsilon_are_not_nan():
    # eps / 2 underflowed to 0 and the gap 1e308 - (-1e308) overflowed to -inf: 0 * -inf = NaN
    p = exponential_mechanism_probabilities([1e308, -1e308], 5e-324)
    assert p.tolist() == pytest.approx([0.5, 0.5], abs=1e-15)
    p = exponential_mechanism_probabilities([1e308, -1e308], 1.0, sensitivity=1e308)
    assert np.isfinite(p).all() and p.sum() == pytest.approx(1.0)
    draws = exponential_mechanism([1e308, -1e308], 5e-324, np.random.default_rng(0), size=2000)
    assert 0.4 < draws.mean() < 0.6


def _exact_reference(scores, base):
    low = min(scores)
    weights = [Fraction(base) ** (u - low) for u in scores]
    total = sum(weights)
    return [w / total for w in weights]


@pytest.mark.parametrize(("scores", "base"), [
    ([0, 1, 1], Fraction(3, 2)), ([2, 2, 5, -3], Fraction(6, 4)), ([7], 5), ([0, 0, 0, 0], 2),
    ([1000, -1000], Fraction(2**64 - 1, 2**63 + 1)), ([4, -4, 0, 0, 4, 1], Fraction(9, 4)), ([3, 1, 2], Fraction(2**63 + 1, 3)),
])
def test_exponential_mechanism_exact_matches_fraction_arithmetic(scores, base):
    got = exponential_mechanism_exact(scores, base)
    expected = _exact_reference(scores, base)
    assert got == expected
    assert [(f.numerator, f.denominator) for f in got] == [(f.numerator, f.denominator) for f in expected]
    assert [hash(f) for f in got] == [hash(f) for f in expected] and sum(got) == 1


def test_exponential_mechanism_exact_takes_a_numpy_integer_base():
    got = exponential_mechanism_exact([0, 1, 5], np.uint64(2**63))  # its powers must not be uint64 (overflow)
    assert got == exponential_mechanism_exact([0, 1, 5], 2**63)
    assert all(type(f.numerator) is int and type(f.denominator) is int for f in got)


def test_exponential_mechanism_exact_at_its_documented_limits_is_fast():
    # 1000 distinct scores in [-1000, 1000] with a 64-bit base: half a minute of Fraction sums before
    num, den = 2**64 - 1, 2**63 + 1
    start = time.perf_counter()
    p = exponential_mechanism_exact(list(range(-1000, 1000, 2)), Fraction(num, den))
    assert time.perf_counter() - start < 5.0
    # checked in integers (summing 1000 such Fractions would itself take half a minute): one common denominator
    assert len({f.denominator for f in p}) == 1 and sum(f.numerator for f in p) == p[0].denominator
    assert p[1].numerator * den**2 == p[0].numerator * num**2


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
@pytest.mark.parametrize("answer", [1e308, -1e308])
def test_report_noisy_max_with_a_noise_scale_near_the_float_limit_is_unbiased(noise, answer):
    # scale 1.8e308: many draws overflowed to +-inf and argmax gave every tie at inf to index 0
    out = report_noisy_max([answer, answer], 1e-10, np.random.default_rng(3), noise=noise, sensitivity=8.9e297,
                           size=20000)
    assert abs(out.mean() - 0.5) < 0.02


def test_sparse_vector_with_a_noise_scale_near_the_float_limit_is_unbiased():
    rows = sparse_vector([-1e308, -1e308], -1e308, 1e-10, np.random.default_rng(3), sensitivity=4.4e297, size=20000)
    assert abs((rows[:, 0] == 1).mean() - 0.5) < 0.02
    first = above_threshold([1e308], 1e308, 1e-10, np.random.default_rng(3), sensitivity=4.4e297, size=20000)
    assert abs((first == 0).mean() - 0.5) < 0.02


def test_the_integrated_output_laws_of_50_answers_are_quick():
    # one quadrature per answer (50 products of 50 CDFs each) took seconds; now all columns at once
    report_noisy_max_probabilities([0.0, 1.0], 1.0)  # scipy.stats imported outside the timing
    start = time.perf_counter()
    p = report_noisy_max_probabilities(np.linspace(0, 199, 50), 2.0)
    a = above_threshold_probabilities(np.linspace(-199, 199, 50), 0.0, 1.0)
    assert time.perf_counter() - start < 2.5
    assert p.sum() == pytest.approx(1.0, abs=1e-12) and a.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.diff(p) > 0)  # larger answers win more often


# ---------------------------------------------------------------------------------------------
# accounting
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [5e-324, 1e-16, 0.1, 1.0, 3.0, 50.0, 1000.0])
@pytest.mark.parametrize("delta", [5e-324, 1e-300, 1e-10, 0.3])
def test_group_privacy_delta_is_never_below_its_exact_value(eps, delta):
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    assert group_privacy(eps, 1, delta) == (eps, delta)  # was 9.999999999999818e-11 for (1000.0, 1, 1e-10)
    for k in (2, 3, 10, 1000):
        got = group_privacy(eps, k, delta)[1]
        exact = min(1, mpmath.mpf(delta) * mpmath.expm1(k * mpmath.mpf(eps)) / mpmath.expm1(mpmath.mpf(eps)))
        assert got >= exact and got >= min(1.0, k * delta)
        if exact > 1e-290:
            assert got <= exact * (1 + 1e-11)


def test_advanced_composition_is_finite_where_its_formula_is():
    # e^700 - 1 is 1e304, not inf: the cut-off was 700 instead of the float limit (709.78)
    for eps in (700.0, 705.0):
        total, _ = advanced_composition(eps, 0.0, 2, 1e-5)
        expected = eps * math.sqrt(-4.0 * math.log(1e-5)) + 2 * eps * math.expm1(eps)
        assert total == pytest.approx(expected, rel=1e-14)
    assert advanced_composition(699.9, 0.0, 2, 1e-5)[0] < advanced_composition(700.0, 0.0, 2, 1e-5)[0]
    assert advanced_composition(709.0, 0.0, 2, 1e-5)[0] == math.inf


# ---------------------------------------------------------------------------------------------
# attacks and DP-SGD variants: huge requests refused cheaply, no silent inf
# ---------------------------------------------------------------------------------------------


def test_subset_queries_refuses_a_matrix_of_gigabytes_by_name():
    with pytest.raises(ValueError, match="queries"):
        subset_queries(5000, 100000, np.random.default_rng(0))  # 5e8 doubles: 4 GB, allocated before


def test_subset_queries_draws_as_before():
    a = subset_queries(300, 5000, np.random.default_rng(5))
    assert np.array_equal(a, (np.random.default_rng(5).random((5000, 300)) < 0.5).astype(np.float64))


@pytest.mark.parametrize("eps", [5e-324, 1e-310])
def test_subset_sum_answers_refuses_an_epsilon_whose_noise_overflows(eps):
    with pytest.raises(ValueError, match="epsilon"):  # was an answer of -inf or inf
        subset_sum_answers([0, 1], [[1, 1]], rng=np.random.default_rng(0), epsilon=eps)


@pytest.mark.parametrize("batching", ["poisson", "shuffle"])
def test_released_sums_refuses_huge_memberships_by_name(batching):
    with pytest.raises(ValueError, match="steps"):  # 1e10 memberships per run: 80 GB
        released_sums(np.ones((100000, 1)), noise_multiplier=1.0, steps=100000, sampling_rate=1.0, clip=1.0,
                      rng=np.random.default_rng(0), batching=batching)


@pytest.mark.parametrize("batching", ["poisson", "shuffle"])
def test_dp_sgd_variant_refuses_a_schedule_of_gigabytes_by_name(batching):
    x, y = np.zeros((100000, 1)), np.arange(100000) % 2
    with pytest.raises(ValueError, match="steps"):  # 1e10 batch indices held at once
        dp_sgd_variant(x, y, noise_multiplier=1.0, steps=100000, sampling_rate=1.0, clip=1.0,
                       rng=np.random.default_rng(0), batching=batching)


# ---------------------------------------------------------------------------------------------
# mechanisms: a batch with no columns
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", [dptext_mechanism, snapping_mechanism, granular_laplace_mechanism])
def test_mechanisms_release_an_empty_batch_of_no_columns(mechanism):
    # was "b (the Laplace scale) must be > 0" or "n must be >= 1": no parameter of the mechanism
    out = mechanism(np.zeros((3, 0)), 1.0, np.random.default_rng(0))
    assert out.shape == (3, 0) and out.dtype == np.float64


def test_an_empty_batch_still_checks_the_other_arguments():
    with pytest.raises(ValueError, match="bound"):
        snapping_mechanism(np.zeros((3, 0)), 1.0, np.random.default_rng(0), bound=-1.0)
    with pytest.raises(ValueError, match="bits"):
        granular_laplace_mechanism(np.zeros((3, 0)), 1.0, np.random.default_rng(0), bits=49)
    with pytest.raises(ValueError, match="epsilon"):
        dptext_mechanism(np.zeros((3, 0)), math.nan, np.random.default_rng(0))
