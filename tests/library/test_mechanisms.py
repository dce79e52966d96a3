"""Tests for dptutor.mechanisms: the six mechanisms of the paper's Section 4 / Figure 2."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from scipy import stats

from dptutor.audit import rounding_probabilities
from dptutor.mechanisms import (
    AUTHORS_NAMES,
    MECHANISMS,
    adept_mechanism,
    copy_input_mechanism,
    dptext_mechanism,
    laplace_mechanism,
    random_output_mechanism,
    wrong_sensitivity_mechanism,
)

# Significance level of each goodness-of-fit test below: a correct mechanism fails one with
# probability 1e-3 (all tests are seeded, so a run is deterministic anyway).
ALPHA = 1e-3


def _readonly(shape, value):
    x = np.full(shape, float(value))
    x.setflags(write=False)
    return x


def test_registry_has_exactly_the_six_mechanisms():
    assert list(MECHANISMS) == ["laplace", "adept", "dptext", "wrong_sensitivity", "copy_input", "random_output"]
    assert set(AUTHORS_NAMES) == set(MECHANISMS)
    assert MECHANISMS["laplace"] is laplace_mechanism
    assert MECHANISMS["random_output"] is random_output_mechanism


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_shape_dtype_and_input_untouched(name):
    x = _readonly((7, 5), 1.0)  # read-only: a mechanism writing into x would raise
    out = MECHANISMS[name](x, 1.0, np.random.default_rng(0))
    assert out.shape == (7, 5)
    assert out.dtype == np.float64
    assert out is not x
    assert np.all(x == 1.0)


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_same_seed_same_output(name):
    x = np.zeros((20, 3))
    a = MECHANISMS[name](x, 0.5, np.random.default_rng(42))
    b = MECHANISMS[name](x, 0.5, np.random.default_rng(42))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "fn, scale_of_n, factor",
    [
        (laplace_mechanism, lambda n: n, 1.0),
        (adept_mechanism, lambda n: 1, 1.0),
        (wrong_sensitivity_mechanism, lambda n: n, 0.5),
    ],
)
@pytest.mark.parametrize("n, epsilon", [(1, 1.0), (4, 0.5), (32, 2.0)])
def test_laplace_family_noise_law(fn, scale_of_n, factor, n, epsilon):
    """out / factor - x must be Lap(0, b) with b = sensitivity / epsilon: KS test at level ALPHA."""
    rng = np.random.default_rng(1000 + n)
    x = np.zeros((20_000 // n, n))
    x[::2] = 1.0  # both datasets' values present
    noise = fn(x, epsilon, rng) / factor - x
    b = scale_of_n(n) / epsilon
    assert stats.kstest(noise.ravel(), stats.laplace(scale=b).cdf).pvalue > ALPHA


@pytest.mark.parametrize("n, epsilon", [(1, 1.0), (8, 0.5)])
def test_dptext_noise_law(n, epsilon):
    """DPText noise (Eq. 9 with v ~ U(0, 1), NaN -> 0): never negative, an atom of mass 1/2 at 0,
    and an Exponential(b) law on the positive part, b = n / epsilon."""
    rng = np.random.default_rng(7 + n)
    x = np.zeros((40_000 // n, n))
    noise = dptext_mechanism(x, epsilon, rng) - x
    assert np.all(noise >= 0)
    zero = noise == 0
    total = noise.size
    # The zero count is Binomial(total, 1/2): accept within the two-sided ALPHA quantiles.
    lo, hi = stats.binom.ppf([ALPHA / 2, 1 - ALPHA / 2], total, 0.5)
    assert lo <= zero.sum() <= hi
    b = n / epsilon
    assert stats.kstest(noise[~zero], stats.expon(scale=b).cdf).pvalue > ALPHA


def test_dptext_output_never_below_input():
    """Theorem 3.2's argument: from D' = ones no output is below 1."""
    out = dptext_mechanism(np.ones((1000, 4)), 0.1, np.random.default_rng(3))
    assert out.min() >= 1.0


def test_copy_input_is_a_copy():
    x = np.random.default_rng(0).random((5, 3))
    out = copy_input_mechanism(x, 1.0, np.random.default_rng(1))
    np.testing.assert_array_equal(out, x)
    out[0, 0] = 99.0
    assert x[0, 0] != 99.0


def test_random_output_ignores_input_and_is_fair():
    zeros, ones = np.zeros((5000, 4)), np.ones((5000, 4))
    a = random_output_mechanism(zeros, 1.0, np.random.default_rng(5))
    b = random_output_mechanism(ones, 1.0, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)  # same randomness -> same output, whatever the input
    assert set(np.unique(a)) <= {0.0, 1.0}
    lo, hi = stats.binom.ppf([ALPHA / 2, 1 - ALPHA / 2], a.size, 0.5)
    assert lo <= a.sum() <= hi


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize("n, epsilon", [(1, 0.5), (3, 2.0)])
def test_per_coordinate_rounding_probability(name, n, epsilon):
    """The fraction of output coordinates >= 0.5 matches rounding_probabilities (used by exact_loss).

    The count is Binomial(size, p_d); accept when the exact two-sided Clopper-Pearson interval at
    level 1 - ALPHA contains p_d (degenerate p_d in {0, 1} must be hit exactly).
    """
    rng = np.random.default_rng([zlib.crc32(name.encode()), n])  # str hash() is salted per process
    probs = rounding_probabilities(name, n, epsilon)
    for d in (0, 1):
        x = np.full((20_000, n), float(d))
        k = int((MECHANISMS[name](x, epsilon, rng) >= 0.5).sum())
        p, q = probs[d]
        assert math.isclose(p + q, 1.0, rel_tol=1e-15)
        if p in (0.0, 1.0):
            assert k == p * x.size
        else:
            ci = stats.binomtest(k, x.size).proportion_ci(confidence_level=1 - ALPHA, method="exact")
            assert ci.low <= p <= ci.high, (name, d, k / x.size, p)


@pytest.mark.parametrize("name", list(MECHANISMS))
@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_bad_epsilon(name, bad):
    with pytest.raises(ValueError, match="epsilon"):
        MECHANISMS[name](np.zeros((2, 2)), bad, np.random.default_rng(0))


@pytest.mark.parametrize("name", list(MECHANISMS))
def test_bad_epsilon_type_x_and_rng(name):
    fn = MECHANISMS[name]
    with pytest.raises(TypeError, match="epsilon"):
        fn(np.zeros((2, 2)), "1", np.random.default_rng(0))
    with pytest.raises(TypeError, match="epsilon"):
        fn(np.zeros((2, 2)), True, np.random.default_rng(0))
    with pytest.raises(ValueError, match="x"):
        fn(np.zeros(4), 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="x"):
        fn(np.zeros((2, 2, 2)), 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="x"):
        fn([[0.0, 1.0]], 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        fn(np.zeros((2, 2)), 1.0, np.random.RandomState(0))


def test_dptext_is_x_plus_the_distributions_sampler():
    """dptext_mechanism = x + sample_dptext(nan="zero") with b = n / epsilon (rounded up), draw for draw."""
    from fractions import Fraction

    from dptutor.distributions import sample_dptext
    from dptutor.renyi import round_up

    x = np.zeros((50, 4))
    x[::3] = 1.0
    a = dptext_mechanism(x, 0.7, np.random.default_rng(9))
    b = x + sample_dptext(x.shape, 0.0, round_up(Fraction(4) / Fraction(0.7)), rng=np.random.default_rng(9), nan="zero")
    np.testing.assert_array_equal(a, b)
