"""Tests for dptutor.exact: the Canonne-Kamath-Steinke discrete Laplace sampler and granular Laplace."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dptutor import _cks as cks
from dptutor import _exact_fast as exact_fast
from dptutor import _lazy_bits as lazy_bits
from dptutor import exact
from dptutor.exact import (
    check_scale,
    granular_loss,
    granular_parameters,
    granular_round,
    sample_discrete_laplace,
    sample_discrete_laplace_python,
)

# False-alarm rate of each chi-square goodness-of-fit test below: a correct sampler fails it with
# probability ALPHA (the tests are seeded, so each run is deterministic anyway).
ALPHA = 1e-3


def _chi2_test(draws: np.ndarray, scale, alpha: float = ALPHA) -> tuple[float, float]:
    """Chi-square statistic of integer ``draws`` against ``scipy.stats.dlaplace(1 / scale)`` and its
    threshold ``chi2.ppf(1 - alpha, df)``.

    Cells: every integer whose expected count is at least 5 (the usual validity rule of the chi-square
    approximation), plus the two pooled tails.  Under the null the statistic is approximately
    chi-square with ``cells - 1`` degrees of freedom, so it exceeds the threshold with probability
    about ``alpha``: the threshold is derived from the sample size through the expected counts.
    """
    n = draws.size
    law = stats.dlaplace(1.0 / float(scale))
    k_max = 0
    while n * law.pmf(k_max + 1) >= 5:
        k_max += 1
    ks = np.arange(-k_max, k_max + 1)
    expected = np.concatenate([[n * law.cdf(-k_max - 1)], n * law.pmf(ks), [n * law.sf(k_max)]])
    observed = np.concatenate(
        [[np.sum(draws < -k_max)], [np.sum(draws == k) for k in ks], [np.sum(draws > k_max)]]
    )
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    return statistic, float(stats.chi2.ppf(1 - alpha, expected.size - 1))


@pytest.mark.parametrize("scale", [1, 10, Fraction(7, 3), Fraction(1, 2)])
def test_matches_scipy_dlaplace(scale):
    draws = sample_discrete_laplace(scale, 200_000, np.random.default_rng(11))
    assert draws.dtype == np.int64
    statistic, threshold = _chi2_test(draws, scale)
    assert statistic < threshold


def test_chi2_test_rejects_a_wrong_scale():
    """The test has power: draws of scale 10 are rejected as scale 10.5 (5% off)."""
    draws = sample_discrete_laplace(10, 200_000, np.random.default_rng(12))
    statistic, threshold = _chi2_test(draws, Fraction(21, 2))
    assert statistic > threshold


def test_chi2_false_alarm_rate_is_alpha():
    """At alpha = 0.05, 200 independent correct samples are rejected about 10 times: the count must
    lie in the central 99.9% of Binomial(200, 0.05), i.e. the test is calibrated, neither lax nor harsh."""
    rng = np.random.default_rng(13)
    alpha, repeats = 0.05, 200
    rejections = 0
    for _ in range(repeats):
        statistic, threshold = _chi2_test(sample_discrete_laplace(3, 5_000, rng), 3, alpha)
        rejections += statistic > threshold
    low, high = stats.binom.ppf([0.0005, 0.9995], repeats, alpha)
    assert low <= rejections <= high


def test_python_reference_has_the_same_law():
    draws = sample_discrete_laplace_python(Fraction(5, 2), 20_000, np.random.default_rng(14))
    statistic, threshold = _chi2_test(draws, Fraction(5, 2))
    assert statistic < threshold


def test_bernoulli_exp_frequency_matches_exp_minus_gamma():
    """Step 1 alone: for gamma = 3/7 the frequency of ones is exp(-3/7) within 4.5 standard errors."""
    m = 400_000
    ones = cks.bernoulli_exp(np.full(m, 3, dtype=np.int64), 7, np.random.default_rng(15)).mean()
    p = math.exp(-3 / 7)
    assert abs(ones - p) < 4.5 * math.sqrt(p * (1 - p) / m)


def test_merged_rounds_have_probability_one_over_k_factorial():
    """The merged draw is exact: P(R < 12!/k!) = (12!/k!) / 12! = 1/k! as Fractions, for every k <= 12."""
    thresholds = cks._THRESHOLDS[::-1]  # k = 1 .. 12
    for k, t in enumerate(thresholds.tolist(), start=1):
        assert Fraction(t, cks._FACT) == Fraction(1, math.factorial(k))
    ones = cks.bernoulli_exp_neg_one(400_000, np.random.default_rng(16)).mean()
    assert abs(ones - math.exp(-1)) < 4.5 * math.sqrt(math.exp(-1) * (1 - math.exp(-1)) / 400_000)


class _IntegersOnly(np.random.Generator):
    """A Generator that fails on every floating-point method and counts calls to ``integers``."""

    calls = 0

    def integers(self, *args, **kwargs):
        type(self).calls += 1
        return super().integers(*args, **kwargs)

    def _refuse(self, *args, **kwargs):
        raise AssertionError("a floating-point random method was called")

    random = standard_normal = standard_exponential = uniform = exponential = geometric = _refuse
    laplace = binomial = poisson = normal = choice = _refuse


@pytest.mark.parametrize("sampler", [sample_discrete_laplace, sample_discrete_laplace_python])
def test_randomness_comes_only_from_integers(sampler):
    rng = _IntegersOnly(np.random.PCG64(1))
    _IntegersOnly.calls = 0
    sampler(Fraction(7, 3), 500, rng)
    assert _IntegersOnly.calls > 0


def test_seed_reproduces_the_draws_and_shape():
    a = sample_discrete_laplace(10, (30, 4), np.random.default_rng(5))
    b = sample_discrete_laplace(10, (30, 4), np.random.default_rng(5))
    assert a.shape == (30, 4)
    np.testing.assert_array_equal(a, b)
    assert sample_discrete_laplace(10, 0, np.random.default_rng(5)).shape == (0,)


def test_huge_scale_stays_in_int64():
    draws = sample_discrete_laplace(2**52 + 1, 10_000, np.random.default_rng(6))
    assert draws.dtype == np.int64
    # E|Z| = 2 e^{-1/t} / (1 - e^{-2/t}) ~ t for large t; a factor-2 band is about 70 standard errors wide
    assert 0.5 * 2**52 < np.abs(draws).mean() < 2 * 2**52


@pytest.mark.parametrize(
    ("scale", "exc", "word"),
    [(0, ValueError, "scale"), (-3, ValueError, "scale"), (Fraction(-1, 2), ValueError, "scale"),
     (-1.5, ValueError, "scale"), (0.0, ValueError, "scale"), (True, TypeError, "scale"), ("2", TypeError, "scale"),
     (float("nan"), ValueError, "scale"), (float("inf"), ValueError, "scale"), (None, TypeError, "scale"),
     (2**60, ValueError, "scale"), (1e20, ValueError, "scale")],
)
def test_bad_scale(scale, exc, word):
    with pytest.raises(exc, match=word):
        sample_discrete_laplace(scale, 3, np.random.default_rng(0))
    with pytest.raises(exc, match=word):
        sample_discrete_laplace_python(scale, 3, np.random.default_rng(0))


@pytest.mark.parametrize(("size", "exc"), [(2.0, TypeError), (-1, ValueError), ("3", TypeError), (True, TypeError)])
def test_bad_size(size, exc):
    with pytest.raises(exc, match="size"):
        sample_discrete_laplace(3, size, np.random.default_rng(0))


def test_bad_rng():
    with pytest.raises(TypeError, match="rng"):
        sample_discrete_laplace(3, 3, 42)


def test_check_scale_is_exact():
    assert check_scale(np.int64(4)) == Fraction(4)
    assert check_scale(Fraction(6, 4)) == Fraction(3, 2)


@pytest.mark.parametrize("value", [0.1, 1.5, 2.0, 1e-300, 5e-324, 3.0e15, np.float64(0.7), np.float32(0.3)])
def test_check_scale_converts_a_float_exactly(value):
    """A finite positive float becomes the exact rational it holds (as OpenDP converts it), so 0.1 is
    3602879701896397 / 2^55, not 1/10; the samplers accept it and draw the same as from that Fraction."""
    t = check_scale(value)
    assert t == Fraction(float(value)) and float(t) == float(value)
    if value == 0.1:
        assert t == Fraction(3602879701896397, 2**55)
    if t.numerator < 2**24 and 1 <= t:
        a = sample_discrete_laplace(value, 50, np.random.default_rng(7))
        b = sample_discrete_laplace(t, 50, np.random.default_rng(7))
        assert np.array_equal(a, b)


def test_float_scale_draws_have_the_law_of_its_exact_value():
    """A float scale with a long binary expansion (2.3 = 2589569785738035 / 2^50) samples the discrete
    Laplace of that exact value (chi-square), and the discrete Gaussian accepts a float sigma too."""
    draws = sample_discrete_laplace(2.3, 60_000, np.random.default_rng(48))
    statistic, threshold = _chi2_test(draws, Fraction(2.3))
    assert statistic < threshold
    assert np.array_equal(exact.sample_discrete_gaussian(1.5, 40, np.random.default_rng(2)),
                          exact.sample_discrete_gaussian(Fraction(3, 2), 40, np.random.default_rng(2)))
    # 2.3 squared has a denominator of 2^100: every acceptance test runs on Python integers, still exact
    gauss = exact.sample_discrete_gaussian(2.3, 20_000, np.random.default_rng(49))
    statistic, threshold = _dg_chi2(gauss, Fraction(2.3))
    assert statistic < threshold
    # 1e-300 and 2^-100 have denominators beyond int64: P(Y != 0) is below 2 exp(-2^100), and every draw is 0
    for tiny in (1e-300, Fraction(1, 2**100)):
        assert not sample_discrete_laplace(tiny, 200, np.random.default_rng(3)).any()
        assert not sample_discrete_laplace_python(tiny, 20, np.random.default_rng(3)).any()


# ---------------------------------------------------------------------------------------------
# granular Laplace
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("n", [1, 4, 128])
def test_granular_loss_is_at_most_epsilon(epsilon, n):
    """Exact privacy loss (a Fraction) between zeros and ones never exceeds the float epsilon's exact value."""
    params = granular_parameters(epsilon, n)
    assert math.log2(params.r).is_integer()
    loss = granular_loss(params)
    assert loss <= Fraction(epsilon)
    assert loss > Fraction(epsilon) * Fraction(99, 100)  # and it is not wasteful


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6),
    st.lists(st.floats(0.0, 1.0), min_size=6, max_size=6),
    st.sampled_from([0.1, 1.0, 7.5]),
)
def test_rounded_neighbours_are_within_the_accounted_steps(x, y, epsilon):
    """The proof's step: for any x, x' in [0, 1]^n, sum |round(x/r) - round(x'/r)| <= n/r + n."""
    n = len(x)
    params = granular_parameters(epsilon, n)
    m0 = granular_round(np.array(x), params)
    m1 = granular_round(np.array(y[:n]), params)
    assert Fraction(int(np.abs(m0 - m1).sum())) <= Fraction(n) / Fraction(params.r) + n


def test_granular_log_ratio_bound_in_sympy():
    """The proof's other step: (|j - m1| - |j - m0|) / t <= |m0 - m1| / t for all integers, with
    equality far out on either side (so the bound is the loss)."""
    j, m0, m1 = sp.symbols("j m0 m1", integer=True)
    t = sp.Symbol("t", positive=True)
    gap = (sp.Abs(j - m1) - sp.Abs(j - m0) - sp.Abs(m0 - m1)) / t
    # Check on every ordering of j, m0, m1 by substituting j = m0 + a, m1 = m0 + b on a grid of signs.
    for a in range(-3, 4):
        for b in range(-3, 4):
            assert sp.simplify(gap.subs({j: m0 + a, m1: m0 + b})) <= 0
    far = (sp.Abs(j - m1) - sp.Abs(j - m0)).subs({j: -100, m0: 0, m1: 3})
    assert far == 3


def test_granular_parameters_bad_input():
    with pytest.raises(ValueError, match="epsilon"):
        granular_parameters(0.0)
    with pytest.raises(TypeError, match="n"):
        granular_parameters(1.0, 1.5)
    with pytest.raises(ValueError, match="bits"):
        granular_parameters(1.0, 1, 60)


def test_discrete_laplace_privacy_from_its_exact_pmf():
    """x + Z on integers x, x' with |x - x'| <= 1: the exact pmf ratio is e^{(|k - x'| - |k - x|)/t},
    at most e^{1/t}, attained; and every integer has positive mass (no impossible output)."""
    k = sp.Symbol("k", integer=True)
    t = sp.Rational(7, 3)
    c = (1 - sp.exp(-1 / t)) / (1 + sp.exp(-1 / t))  # normalising constant of dlaplace
    pmf = lambda x: c * sp.exp(-sp.Abs(k - x) / t)  # noqa: E731
    assert sp.simplify(sp.summation(c * sp.exp(-k / t), (k, 1, sp.oo)) * 2 + c - 1) == 0
    ratios = [sp.simplify(sp.log(pmf(0) / pmf(1)).subs(k, v)) for v in range(-6, 7)]
    assert max(ratios) == 1 / t and min(ratios) == -1 / t
    # scipy evaluates tanh(a/2) exp(-a|k|) in doubles: two library calls and a product, each within
    # a couple of ulps, so 16 ulps (16 * 2.2e-16) bounds the relative error.
    for v in range(-6, 7):
        exact_value = float(pmf(0).subs(k, v).evalf(30))
        assert float(stats.dlaplace(float(1 / t)).pmf(v)) == pytest.approx(exact_value, rel=16 * np.finfo(float).eps)


# ---------------------------------------------------------------------------------------------
# the discrete Gaussian (Canonne, Kamath and Steinke 2020, Algorithm 3)
# ---------------------------------------------------------------------------------------------


def _dg_chi2(draws: np.ndarray, sigma, alpha: float = ALPHA) -> tuple[float, float]:
    """Chi-square statistic of ``draws`` against the exact discrete Gaussian law (its pmf from the
    normaliser, :func:`exact.discrete_gaussian_pmf`) and the threshold ``chi2.ppf(1 - alpha, df)``.
    Cells: each integer with expected count >= 5, and the two pooled tails (by symmetry, equal)."""
    n = draws.size
    grid = exact.discrete_gaussian_pmf(np.arange(0, math.ceil(10 * float(sigma)) + 2), sigma)
    k_max = int(np.flatnonzero(n * grid >= 5).max())
    ks = np.arange(-k_max, k_max + 1)
    pmf = exact.discrete_gaussian_pmf(ks, sigma)
    tail = max((1.0 - pmf.sum()) / 2.0, 0.0)
    expected = np.concatenate([[n * tail], n * pmf, [n * tail]])
    observed = np.concatenate([[np.sum(draws < -k_max)], np.bincount(draws[np.abs(draws) <= k_max] + k_max,
                                                                       minlength=ks.size), [np.sum(draws > k_max)]])
    keep = expected > 0
    statistic = float(np.sum((observed[keep] - expected[keep]) ** 2 / expected[keep]))
    return statistic, float(stats.chi2.ppf(1 - alpha, keep.sum() - 1))


@pytest.mark.parametrize("sigma", [1, Fraction(3, 2), 10, Fraction(7, 3), Fraction(1, 3), 1000])
def test_discrete_gaussian_matches_its_exact_law(sigma):
    draws = exact.sample_discrete_gaussian(sigma, 200_000, np.random.default_rng(22))
    assert draws.dtype == np.int64 and draws.shape == (200_000,)
    statistic, threshold = _dg_chi2(draws, sigma)
    assert statistic < threshold


@pytest.mark.parametrize("sigma", [2, Fraction(5, 4)])
def test_discrete_gaussian_python_reference_matches_its_exact_law(sigma):
    draws = exact.sample_discrete_gaussian_python(sigma, 8_000, np.random.default_rng(23))
    statistic, threshold = _dg_chi2(draws, sigma)
    assert statistic < threshold


def test_discrete_gaussian_big_parameters_take_the_exact_python_path():
    """sigma = 200000: the fast path's table would be too long, and 2 p q t^2 is above 2^56, so the proposal
    runs Algorithm 2 on arrays and every acceptance runs on Python integers."""
    sigma = 200_000
    p, q, t = exact._gauss_parameters(Fraction(sigma))
    assert exact_fast.gauss_table(p, q, t) is None
    assert 2 * p * q * t * t >= cks._MAX_GAUSS_DEN
    draws = exact.sample_discrete_gaussian(sigma, 2_000, np.random.default_rng(5))
    # mean 0, sd sigma: 5 standard errors
    assert abs(draws.mean()) < 5 * sigma / math.sqrt(draws.size)
    assert abs(draws.std() / sigma - 1) < 5 * math.sqrt(0.5 / draws.size)


def test_discrete_gaussian_pmf_sums_to_one_and_matches_mpmath():
    import mpmath

    mpmath.mp.dps = 40
    for sigma in (1, Fraction(3, 2), 10):
        s2 = mpmath.mpf(Fraction(sigma).numerator) ** 2 / mpmath.mpf(Fraction(sigma).denominator) ** 2
        norm = mpmath.nsum(lambda k: mpmath.exp(-k * k / (2 * s2)), [-mpmath.inf, mpmath.inf])
        for k in (0, 1, 3, 7):
            assert float(exact.discrete_gaussian_pmf(k, sigma)) == pytest.approx(
                float(mpmath.exp(-k * k / (2 * s2)) / norm), rel=1e-12)


@pytest.mark.parametrize("sigma", [1, Fraction(3, 2), Fraction(7, 3), 10, Fraction(1001, 1000)])
def test_discrete_gaussian_rejection_exponent_is_exact(sigma):
    """The integers the sampler compares are the exact exponent of Algorithm 3: for every proposal y,
    (q t |y| - p)^2 / (2 p q t^2) equals (|y| - sigma^2 / t)^2 / (2 sigma^2) in Fraction arithmetic, and
    Lap_t(y) exp(-that) is proportional to exp(-y^2 / 2 sigma^2) with a constant that does not depend on y."""
    sig = Fraction(sigma)
    var = sig * sig
    p, q, t = exact._gauss_parameters(sig)
    assert Fraction(p, q) == var and t == math.floor(sig) + 1
    for y in range(-40, 41):
        gamma = (abs(y) - var / t) ** 2 / (2 * var)
        assert Fraction((q * t * abs(y) - p) ** 2, 2 * p * q * t * t) == gamma
        # log of Lap(y) * exp(-gamma) + y^2 / (2 sigma^2) = -sigma^2 / (2 t^2), for every y
        assert -Fraction(abs(y), t) - gamma + Fraction(y * y) / (2 * var) == -var / (2 * t * t)


def test_discrete_gaussian_acceptance_rate_per_proposal():
    """``gauss_accept`` keeps each proposal y with probability exp(-gamma(y)) (binomial, 5 standard errors)."""
    sig = Fraction(5, 2)
    p, q, t = exact._gauss_parameters(sig)
    rng = np.random.default_rng(9)
    n = 100_000
    for y in (0, 1, 3, 6, 12):
        kept = cks.gauss_accept(np.full(n, y, dtype=np.int64), p, q, t, rng).mean()
        prob = math.exp(-float(Fraction((q * t * y - p) ** 2, 2 * p * q * t * t)))
        assert abs(kept - prob) <= 5 * math.sqrt(prob * (1 - prob) / n) + 1e-12


def test_discrete_gaussian_acceptance_slow_lanes_agree():
    """Lanes beyond the int64 range go through Python integers: same probabilities."""
    sig = Fraction(5, 2)
    p, q, t = exact._gauss_parameters(sig)
    rng = np.random.default_rng(10)
    ys = np.array([1, 2, 4], dtype=np.int64)
    n = 4_000
    for y in ys:
        kept = np.mean([cks.bernoulli_exp_big_python((q * t * int(y) - p) ** 2, 2 * p * q * t * t, rng)
                        for _ in range(n)])
        prob = math.exp(-float(Fraction((q * t * int(y) - p) ** 2, 2 * p * q * t * t)))
        assert abs(kept - prob) <= 5 * math.sqrt(prob * (1 - prob) / n)


def test_discrete_gaussian_reproducible_and_shaped():
    a = exact.sample_discrete_gaussian(3, (4, 5), np.random.default_rng(1))
    b = exact.sample_discrete_gaussian(3, (4, 5), np.random.default_rng(1))
    assert a.shape == (4, 5) and np.array_equal(a, b)
    assert exact.sample_discrete_gaussian(3, 0, np.random.default_rng(1)).shape == (0,)
    assert exact.sample_discrete_gaussian_python(3, (2, 3), np.random.default_rng(1)).shape == (2, 3)


@pytest.mark.parametrize("fn", [exact.sample_discrete_gaussian, exact.sample_discrete_gaussian_python])
def test_discrete_gaussian_bad_input(fn):
    rng = np.random.default_rng(0)
    for bad, err in [(float("nan"), ValueError), (-1.5, ValueError), (float("inf"), ValueError), (True, TypeError), ("2", TypeError),
                     (0, ValueError), (-2, ValueError),
                     (Fraction(-1, 2), ValueError), (Fraction(2**53, 1), ValueError), (None, TypeError)]:
        with pytest.raises(err, match="sigma"):
            fn(bad, 10, rng)
    with pytest.raises(ValueError, match="size"):
        fn(2, -1, rng)
    with pytest.raises(TypeError, match="size"):
        fn(2, 1.5, rng)
    with pytest.raises(TypeError, match="rng"):
        fn(2, 10, 42)
    with pytest.raises(ValueError, match="sigma"):
        fn(Fraction(1, 2**40), 10, rng)  # sigma^2's denominator 2^80
    with pytest.raises(ValueError, match="k"):
        exact.discrete_gaussian_pmf(0.5, 2)
    with pytest.raises(ValueError, match="sigma"):
        exact.discrete_gaussian_pmf(0, float("nan"))


def test_discrete_gaussian_with_a_huge_denominator_is_exact():
    """sigma = 1 + 2^-30: sigma^2's denominator is 2^60, so the acceptance step needs uniform integers
    beyond int64 (drawn from random bytes): the draws still follow the exact law."""
    sigma = Fraction(2**30 + 1, 2**30)
    draws = exact.sample_discrete_gaussian(sigma, 20_000, np.random.default_rng(12))
    statistic, threshold = _dg_chi2(draws, sigma)
    assert statistic < threshold


def test_uniform_below_is_uniform_beyond_int64():
    rng = np.random.default_rng(3)
    n = 3 * 2**70
    draws = [cks.uniform_below(n, rng) for _ in range(30_000)]
    assert min(draws) >= 0 and max(draws) < n
    thirds = np.bincount([d // 2**70 for d in draws], minlength=3)
    assert stats.chisquare(thirds).pvalue > ALPHA


# ---------------------------------------------------------------------------------------------
# the fast path: lazy comparison of random bits with float bounds, exact integer fallback
# ---------------------------------------------------------------------------------------------


def _mp_exp_neg(num: int, den: int, dps: int = 80):
    import mpmath

    with mpmath.workdps(dps):
        return mpmath.exp(-mpmath.mpf(num) / den)


@pytest.mark.parametrize("bits", [0, 10, 53, 117])
def test_exp_neg_bounds_bracket_the_exact_value(bits):
    """lo <= exp(-num/den) 2^bits <= hi (mpmath at 80 digits), and the bracket is a few units wide."""
    import mpmath

    rng = np.random.default_rng(40 + bits)
    cases = [(0, 1), (1, 1), (1, 2**60), (2**60 - 1, 2**60), (700, 1), (5, 7)]
    cases += [(int(rng.integers(0, 10**6)), int(rng.integers(1, 10**5))) for _ in range(300)]
    for num, den in cases:
        lo, hi = lazy_bits.exp_neg_bounds(num, den, bits)
        with mpmath.workdps(80):
            scaled = _mp_exp_neg(num, den) * mpmath.mpf(2) ** bits
            assert lo <= scaled <= hi, (num, den, bits)
        assert 0 <= hi - lo <= 6


@pytest.mark.parametrize("s, d", [(1, 1), (11, 1), (1001, 1), (7, 3), (30001, 1), (2**24, 1)])
def test_magnitude_table_brackets_exp_minus_k_over_t(s, d):
    """lo(k) <= exp(-k d / s) 2^62 <= hi(k) (mpmath at 80 digits) over the whole table, flat or two-level,
    and the bracket is a few units wide."""
    import mpmath

    table = lazy_bits.magnitude_table(s, d)
    rng = np.random.default_rng(49)
    ks = np.unique(np.concatenate([[0, 1, 2, table.kcap - 1, table.kcap], rng.integers(0, table.kcap + 1, 300)]))
    lo, hi = table.bounds(ks, 0), table.bounds(ks, 1)
    with mpmath.workdps(80):
        for k, a, b in zip(ks.tolist(), lo.tolist(), hi.tolist()):
            exact_value = _mp_exp_neg(k * d, s) * mpmath.mpf(2) ** 62
            assert a <= exact_value <= b, (s, d, k)
            assert b - a <= 8
    assert table.kcap * d >= 53 * math.log(2) * s  # every nonzero 53-bit prefix has its magnitude inside


@pytest.mark.parametrize("sigma", [Fraction(1, 3), 1, Fraction(3, 2), 10, Fraction(1001, 1000), 1000])
def test_gauss_table_brackets_exp_minus_gamma(sigma):
    """Every entry of the fast table is a proven bracket: lower[x] <= exp(-gamma(x)) 2^63 <= upper[x] (the exact
    integer bounds of exp_neg_bounds, which mpmath checks above), a few units wide; the first stage's
    thresholds bracket exp(-gamma(x)) 2^10 within width; (negative, 0) is never kept."""
    p, q, t = exact._gauss_parameters(Fraction(sigma))
    table = exact_fast.gauss_table(p, q, t)
    den = 2 * p * q * t * t
    xs = range(table.lower.size) if table.lower.size < 3000 else range(0, table.lower.size, 7)
    for x in xs:
        lo, hi = lazy_bits.exp_neg_bounds((q * t * x - p) ** 2, den, 63)
        lower, upper = int(table.lower[x]), int(table.upper[x])
        assert lower <= lo + 6 and hi - 6 <= upper and lower <= hi and lo <= upper and upper - lower <= 8
        first = int(table.first[2 * x])
        assert first << 53 <= lo and hi <= (first + table.width) << 53
    assert table.first[1] < 0 and table.width <= 2


def test_lazy_uniform_is_a_bernoulli_exp_minus_gamma():
    """From zero known bits every call extends (the first 0 bits decide nothing): the frequency of yes is
    exp(-gamma) within 5 standard errors, for gamma below and above 1."""
    rng = np.random.default_rng(42)
    n = 20_000
    for num, den in [(3, 7), (5, 2), (1, 1)]:
        ones = np.mean([lazy_bits.LazyUniform(0, 0, rng).below_exp_neg(num, den) for _ in range(n)])
        p = math.exp(-num / den)
        assert abs(ones - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_lazy_uniform_settles_a_straddling_prefix_by_its_later_bits():
    """A 53-bit prefix that contains exp(-3/7) is settled by the next 64 bits, as mpmath says."""
    import mpmath

    e = _mp_exp_neg(3, 7)
    prefix = int(mpmath.floor(e * 2**53))  # [prefix, prefix + 1) / 2^53 contains exp(-3/7)
    for seed in range(20):
        u = lazy_bits.LazyUniform(prefix, 53, np.random.default_rng(seed))
        answer = u.below_exp_neg(3, 7)
        assert u.bits >= 117
        with mpmath.workdps(80):
            assert answer == (mpmath.mpf(u.prefix + 1) / mpmath.mpf(2) ** u.bits <= e)
            assert answer != (mpmath.mpf(u.prefix) / mpmath.mpf(2) ** u.bits >= e)


@pytest.mark.parametrize("s, d", [(1, 1), (11, 1), (1001, 1), (7, 3), (2**24, 1)])
def test_geometric_exact_is_certified_by_its_bits(s, d):
    """_geometric_exact returns x with exp(-(x+1) d/s) < U <= exp(-x d/s) for the whole cell of the bits it
    drew (mpmath), that is X = floor(t E) for every U with those bits, including the prefix 0."""
    import mpmath

    rng = np.random.default_rng(43)
    prefixes = [0, 1, 2, 2**53 - 1] + rng.integers(0, 2**53, 40).tolist()
    for v in prefixes:
        u = lazy_bits.LazyUniform(int(v), 53, rng)
        x = lazy_bits.geometric_exact(u, s, d)
        with mpmath.workdps(80):
            cell_lo = mpmath.mpf(u.prefix) / mpmath.mpf(2) ** u.bits
            cell_hi = mpmath.mpf(u.prefix + 1) / mpmath.mpf(2) ** u.bits
            assert _mp_exp_neg((x + 1) * d, s) <= cell_lo and cell_hi <= _mp_exp_neg(x * d, s)


@pytest.mark.parametrize("t", [1, 11, 1001, Fraction(7, 3), 30001, 2**24])
def test_certified_magnitudes_are_the_exact_ones(t):
    """Wherever the integer bounds certify a proposal, it is the exact X of the 53-bit cell (geometric_exact
    from the same prefix); almost every lane is certified, and v = 0 never is."""
    rng = np.random.default_rng(44)
    t = Fraction(t)
    s, d = t.numerator, t.denominator
    v = np.concatenate([[0, 1, 2, 2**53 - 1], rng.integers(0, 2**53, 4_000)]).astype(np.int64)
    x = lazy_bits.propose_magnitudes(v, s / d)
    ok = lazy_bits.certify_magnitudes(v, x, lazy_bits.magnitude_table(s, d))
    assert not ok[0]
    for i in range(v.size):
        if ok[i]:
            assert x[i] == lazy_bits.geometric_exact(lazy_bits.LazyUniform(int(v[i]), 53, rng), s, d)
    assert ok[4:].mean() > 0.99
    wrong = x + np.where(np.arange(x.size) % 2 == 0, 1, -1)  # a proposal off by one is never certified
    assert not lazy_bits.certify_magnitudes(v, wrong, lazy_bits.magnitude_table(s, d)).any()


class _Counting:
    """Wraps an exact fallback of the samplers and counts its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


class _SkewedFloats:
    """Stands for ``numpy`` or ``math`` in a module, with ``log`` and ``exp`` off by a relative ``rel``
    (alternately up and down along an array), every other name passed through."""

    def __init__(self, module, rel: float):
        self._module, self._rel = module, rel

    def __getattr__(self, name):
        return getattr(self._module, name)

    def _skew(self, y):
        if isinstance(y, np.ndarray):
            y *= np.where(np.arange(y.size).reshape(y.shape) % 2 == 0, 1.0 + self._rel, 1.0 - self._rel)
            return y
        return y * (1.0 + self._rel)

    def log(self, *args, **kwargs):
        return self._skew(self._module.log(*args, **kwargs))

    def exp(self, *args, **kwargs):
        return self._skew(self._module.exp(*args, **kwargs))


def _skew_fast_path(monkeypatch, rel: float) -> None:
    """Make every float log and exp of the fast path (the modules lazy_bits and exact_fast) off by ``rel``."""
    for module in (lazy_bits, exact_fast):
        monkeypatch.setattr(module, "np", _SkewedFloats(np, rel))
        monkeypatch.setattr(module, "math", _SkewedFloats(math, rel))


@pytest.mark.parametrize(("rel", "kind", "scale", "n", "wrong"), [
    (2.0**-30, "laplace", 2**20, 100_000, 10), (2.0**-30, "gauss", 30_000, 200_000, 1),
    (2.0**-30, "laplace", 10, 200_000, 0), (2.0**-30, "gauss", 1000, 200_000, 0),
    (2.0**-10, "laplace", 10, 4_000, 10), (2.0**-10, "laplace", Fraction(7, 3), 4_000, 10),
    (2.0**-10, "gauss", 10, 3_000, 10), (2.0**-10, "gauss", Fraction(3, 2), 3_000, 10),
])
def test_draws_do_not_depend_on_the_float_log_and_exp(monkeypatch, rel, kind, scale, n, wrong):
    """With the fast path's float log and exp off by a relative 2^-30 (or 2^-10), the seeded draws are
    bit-identical to those with numpy's own: floats only propose, integers decide.  At least ``wrong``
    proposals were wrong and went to the exact fallback (a version whose floats decided lanes changes
    draws there: at 2^-30, about 2^-10 of them at scale 2^20 and a few per 10^5 at sigma 30000)."""
    sample = sample_discrete_laplace if kind == "laplace" else exact.sample_discrete_gaussian
    expected = sample(scale, n, np.random.default_rng(50))
    fallbacks = _Counting(lazy_bits.geometric_exact)
    monkeypatch.setattr(lazy_bits, "geometric_exact", fallbacks)
    _skew_fast_path(monkeypatch, rel)
    assert np.array_equal(sample(scale, n, np.random.default_rng(50)), expected)
    assert fallbacks.calls >= wrong, fallbacks.calls  # the skewed proposals that were wrong were caught


def test_fast_discrete_gaussian_rarely_falls_back(monkeypatch):
    """With numpy's own log a lane reaches the Python fallback with probability below 2^-40 t per proposal
    (magnitude) and about 2^-60 per test that its first 10 bits leave open, plus the proposals beyond the
    table (about e^-10 of them, of which 2^-9 are open): over 10^6 draws at sigma = 1000 the expected number
    is about 0.1, so more than 3 would be a defect (Poisson tail below 1e-5)."""
    geometric = _Counting(lazy_bits.geometric_exact)
    test = _Counting(exact_fast.gauss_test_exact)
    monkeypatch.setattr(lazy_bits, "geometric_exact", geometric)
    monkeypatch.setattr(exact_fast, "gauss_test_exact", test)
    exact.sample_discrete_gaussian(1000, 1_000_000, np.random.default_rng(45))
    assert geometric.calls + test.calls <= 3


@pytest.mark.parametrize("sigma", [Fraction(3, 2), 10])
def test_fast_discrete_gaussian_with_forced_fallbacks_has_the_exact_law(monkeypatch, sigma):
    """A float log off by 2^-7, a 2-bit first stage and second-stage bounds loosened by 2^-7 send many lanes
    through stage 2 and both exact Python fallbacks (counted); the draws still pass the chi-square test."""
    monkeypatch.setattr(exact, "gauss_table", functools.partial(exact_fast.gauss_table, test_bits=2, loosen=7))
    _skew_fast_path(monkeypatch, 2.0**-7)
    geometric = _Counting(lazy_bits.geometric_exact)
    test = _Counting(exact_fast.gauss_test_exact)
    monkeypatch.setattr(lazy_bits, "geometric_exact", geometric)
    monkeypatch.setattr(exact_fast, "gauss_test_exact", test)
    draws = exact.sample_discrete_gaussian(sigma, 60_000, np.random.default_rng(46))
    assert geometric.calls > 500 and test.calls > 500
    statistic, threshold = _dg_chi2(draws, sigma)
    assert statistic < threshold


@pytest.mark.parametrize("scale", [1, Fraction(7, 3), 10])
def test_fast_discrete_laplace_with_forced_fallbacks_has_the_exact_law(monkeypatch, scale):
    _skew_fast_path(monkeypatch, 2.0**-7)
    geometric = _Counting(lazy_bits.geometric_exact)
    monkeypatch.setattr(lazy_bits, "geometric_exact", geometric)
    draws = sample_discrete_laplace(scale, 60_000, np.random.default_rng(47))
    assert geometric.calls > 100
    statistic, threshold = _chi2_test(draws, scale)
    assert statistic < threshold


def test_discrete_gaussian_randomness_comes_only_from_integers():
    rng = _IntegersOnly(np.random.PCG64(2))
    _IntegersOnly.calls = 0
    exact.sample_discrete_gaussian(Fraction(7, 3), 500, rng)
    assert _IntegersOnly.calls > 0
