"""Tests for dptutor.distributions: formulas against scipy, samplers against exact laws.

Statistical conventions used throughout (all seeds fixed, so every test is deterministic):

* Goodness of fit uses ``scipy.stats.kstest`` on 10**6 draws.  A correct sampler gives a p-value
  that is uniform on (0, 1) over seeds, so "accept if p > 1e-3" would fail for a random seed with
  probability 1e-3.  A wrong law at n = 10**6 has a KS distance of order 0.1 here, which gives p-values
  of essentially 0 (the KS statistic's null scale is 1/sqrt(n) = 1e-3), so "reject if p < 1e-6" has
  a huge margin.
* Moments are compared with their closed forms within 5 standard errors (two-sided false-alarm
  probability 5.7e-7 under the normal approximation, which is excellent at n = 10**6).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dptutor.distributions import (
    CHUNK,
    dptext_cdf,
    dptext_pdf,
    dptext_transform,
    laplace_cdf,
    laplace_pdf,
    laplace_ppf,
    laplace_ppf_centered,
    laplace_ppf_piecewise,
    sample_dptext,
    sample_laplace,
    standard_laplace_fill,
)

EPS = np.finfo(np.float64).eps
N_KS = 1_000_000
P_ACCEPT = 1e-3  # correct law: fail only if p <= 1e-3 (probability 1e-3 for a random seed)
P_REJECT = 1e-6  # wrong law: must give p < 1e-6
PARAMS = [(0.0, 1.0), (1.5, 0.5), (-3.0, 4.0)]
METHODS = ["inverse_cdf", "fast"]


# ---------------------------------------------------------------------------------------------
# closed forms against scipy.stats.laplace
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mu,b", PARAMS)
def test_pdf_cdf_match_scipy(mu: float, b: float) -> None:
    x = np.linspace(mu - 40 * b, mu + 40 * b, 2001)
    # Both sides evaluate exp of the same float argument; a few ulps of relative error at most.
    np.testing.assert_allclose(laplace_pdf(x, mu, b), stats.laplace.pdf(x, mu, b), rtol=1e-13, atol=0)
    np.testing.assert_allclose(laplace_cdf(x, mu, b), stats.laplace.cdf(x, mu, b), rtol=1e-13, atol=0)


@pytest.mark.parametrize("mu,b", PARAMS)
@pytest.mark.parametrize("ppf", [laplace_ppf, laplace_ppf_piecewise])
def test_ppf_matches_scipy(ppf, mu: float, b: float) -> None:
    u = np.concatenate([[2.0**-53, 1e-300, 1e-10, 0.25, 0.5, 0.75, 1 - 1e-10, 1 - 2.0**-53], np.linspace(0.001, 0.999, 999)])
    expected = stats.laplace.ppf(u, mu, b)
    # Both compute mu + b * (log of an exactly representable number): error <= a few ulps of
    # |mu| + b |z|; 8 eps of that scale is a safe bound.
    scale = abs(mu) + b * np.abs((expected - mu) / b) + b
    assert np.all(np.abs(ppf(u, mu, b) - expected) <= 8 * EPS * scale)


@pytest.mark.parametrize("mu,b", PARAMS)
def test_centered_ppf_matches_scipy_on_exact_grid(mu: float, b: float) -> None:
    # u = k 2^-53 and v = u - 1/2 are both exact floats, so Eq. 7 at v must equal Eq. 4 at u.
    k = np.array([1, 2, 3, 2**40, 2**51, 2**52 - 1, 2**52, 2**52 + 1, 2**53 - 2, 2**53 - 1], dtype=np.int64)
    u = k * 2.0**-53
    v = (k - 2**52) * 2.0**-53
    assert np.array_equal(u - 0.5, v)
    expected = stats.laplace.ppf(u, mu, b)
    scale = abs(mu) + np.abs(expected - mu) + b
    assert np.all(np.abs(laplace_ppf_centered(v, mu, b) - expected) <= 8 * EPS * scale)


def test_eq4_is_accurate_for_tiny_u() -> None:
    # Naive 1 - 2|u - 1/2| is 0 for u < 2^-54 (u - 1/2 rounds to -1/2); Eq. 4 as implemented is exact.
    u = np.array([1e-300, 1e-30, 2.0**-60])
    np.testing.assert_allclose(laplace_ppf(u), np.log(2 * u), rtol=4 * EPS)


def test_eq4_is_exactly_antisymmetric_on_the_uniform_grid() -> None:
    # For u = k 2^-53, 1 - u is exact, so F^-1(u) = -F^-1(1 - u) must hold bit for bit (mu = 0).
    rng = np.random.default_rng(11)
    k = rng.integers(1, 2**53, size=10_000, dtype=np.int64)
    u = k * 2.0**-53
    assert np.array_equal(laplace_ppf(u), -laplace_ppf(1.0 - u))


def test_scalar_in_gives_0d_out() -> None:
    for value in (laplace_pdf(0.3), laplace_cdf(0.3), laplace_ppf(0.3), laplace_ppf_piecewise(0.3),
                  laplace_ppf_centered(0.3), dptext_transform(0.3), dptext_cdf(0.3), dptext_pdf(0.3)):
        assert np.ndim(value) == 0 and isinstance(value, np.floating)
    assert laplace_cdf(0.0) == 0.5 and laplace_ppf(0.5) == 0.0 and laplace_pdf(0.0, b=2.0) == 0.25


# ---------------------------------------------------------------------------------------------
# hypothesis properties of the three inverse CDFs
# ---------------------------------------------------------------------------------------------

unit_open = st.floats(min_value=0.0, max_value=1.0, exclude_min=True, exclude_max=True)
mus = st.floats(min_value=-100.0, max_value=100.0)
scales = st.floats(min_value=1e-2, max_value=1e2)
grid_k = st.integers(min_value=1, max_value=2**53 - 1)  # u = k 2^-53: exactly the values rng.random() yields (k > 0)


@settings(max_examples=300, deadline=None)
@given(u=unit_open, mu=mus, b=scales)
def test_cdf_of_ppf_is_identity(u: float, mu: float, b: float) -> None:
    # Error analysis (Theorem A.1 numerically): x = mu + b z carries an absolute error of a few ulps
    # of |mu| + b|z|, i.e. an error in z of ~eps (|mu|/b + |z|); exp() turns that into a *relative*
    # error of the tail probability min(u, 1 - u).  For u > 1/2 the final 1 - t/2 adds eps/2 absolute.
    x = laplace_ppf(u, mu, b)
    z = (x - mu) / b
    back = laplace_cdf(x, mu, b)
    tail = min(u, 1.0 - u)
    tol = EPS + 8 * EPS * (1.0 + abs(mu) / b + abs(z)) * tail
    assert abs(back - u) <= tol


@settings(max_examples=300, deadline=None)
@given(u1=unit_open, u2=unit_open, mu=mus, b=scales)
def test_ppfs_are_monotone(u1: float, u2: float, mu: float, b: float) -> None:
    lo, hi = min(u1, u2), max(u1, u2)
    assert laplace_ppf(lo, mu, b) <= laplace_ppf(hi, mu, b)
    assert laplace_ppf_piecewise(lo, mu, b) <= laplace_ppf_piecewise(hi, mu, b)
    v_lo, v_hi = lo - 0.5, hi - 0.5  # rounding is monotone, so v_lo <= v_hi still holds
    if v_lo > -0.5 and v_hi < 0.5:
        assert laplace_ppf_centered(v_lo, mu, b) <= laplace_ppf_centered(v_hi, mu, b)


@settings(max_examples=300, deadline=None)
@given(k=grid_k, mu=mus, b=scales)
def test_three_ppf_forms_agree(k: int, mu: float, b: float) -> None:
    u = k * 2.0**-53
    v = (k - 2**52) * 2.0**-53  # == u - 1/2 exactly
    eq4 = laplace_ppf(u, mu, b)
    eq5 = laplace_ppf_piecewise(u, mu, b)
    eq7 = laplace_ppf_centered(v, mu, b)
    # All three are mu -/+ b * log(exactly representable argument); the logs agree to ~1 ulp, so
    # the results agree to a few ulps of |mu| + |x - mu|.
    tol = 8 * EPS * (abs(mu) + abs(eq4 - mu) + b)
    assert abs(eq4 - eq5) <= tol
    assert abs(eq4 - eq7) <= tol


# ---------------------------------------------------------------------------------------------
# DPText's transform (Eq. 9)
# ---------------------------------------------------------------------------------------------


def test_dptext_transform_values_and_special_points() -> None:
    out = dptext_transform(np.array([0.0, 0.25, 0.5, 0.75, 0.999]), mu=1.0, b=2.0)
    assert out[0] == 1.0  # sgn(0) = 0: exactly mu
    assert out[1] == pytest.approx(1.0 + 2.0 * math.log(2.0), rel=4 * EPS)  # -b ln(1/2)
    assert out[2] == math.inf  # documented: v = 1/2 gives ln(0) = -inf, hence +inf
    assert np.isnan(out[3]) and np.isnan(out[4])  # log of a negative number
    # (pytest turns RuntimeWarning into errors, so reaching here also shows no warning escaped.)


def test_dptext_lower_half_is_the_upper_half_of_the_laplace_quantiles() -> None:
    # On [0, 1/2), Eq. 9 with v equals Eq. 4 with u = v + 1/2: DPText only ever produces the upper
    # half of the Laplace quantile function, so its outputs are >= mu.
    k = np.arange(0, 2**52, 2**40, dtype=np.int64)
    v = k * 2.0**-53
    np.testing.assert_allclose(dptext_transform(v, 0.5, 3.0), laplace_ppf(v + 0.5, 0.5, 3.0), rtol=4 * EPS, atol=4 * EPS)
    assert np.all(dptext_transform(v, 0.5, 3.0) >= 0.5)


# ---------------------------------------------------------------------------------------------
# samplers: exact laws (KS), moments, independence, reproducibility
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("mu,b", PARAMS)
def test_sample_laplace_ks_accepts(method: str, mu: float, b: float) -> None:
    seed = 1000 + 10 * PARAMS.index((mu, b)) + METHODS.index(method)
    x = sample_laplace(N_KS, mu, b, rng=np.random.default_rng(seed), method=method)
    assert x.shape == (N_KS,) and x.dtype == np.float64
    assert stats.kstest(x, stats.laplace(mu, b).cdf).pvalue > P_ACCEPT


def test_standard_laplace_fill_ks_2d_buffer_with_partial_chunk() -> None:
    # 1000 x 1001 elements: not a multiple of CHUNK, so the last chunk is partial.
    out = np.empty((1000, 1001))
    assert out.size % CHUNK != 0
    ret = standard_laplace_fill(out, rng=np.random.default_rng(7))
    assert ret is out
    assert stats.kstest(out.ravel(), stats.laplace.cdf).pvalue > P_ACCEPT


def test_fast_signs_are_fair_and_independent_of_magnitudes_and_neighbours() -> None:
    x = standard_laplace_fill(np.empty(N_KS), rng=np.random.default_rng(8))
    neg = x < 0
    # Sign vs magnitude: chi-square test of independence on the 2x2 table (sign, |x| > ln 2), where
    # ln 2 is the median of |x| ~ Exp(1).  Accept if p > 1e-3.
    big = np.abs(x) > math.log(2.0)
    table = np.array([[np.sum(neg & big), np.sum(neg & ~big)], [np.sum(~neg & big), np.sum(~neg & ~big)]])
    assert stats.chi2_contingency(table).pvalue > P_ACCEPT
    # Fair sign: binomial test, accept if p > 1e-3.
    assert stats.binomtest(int(neg.sum()), neg.size, 0.5).pvalue > P_ACCEPT
    # Neighbours, including across a chunk boundary: s_i s_{i+lag} (s = +-1) has mean 0 and sd 1 per
    # term under independence, so their average has sd 1/sqrt(n - lag); require |z| < 4 (p ~ 6e-5).
    s = np.where(neg, -1.0, 1.0)
    for lag in (1, 8, 64, CHUNK):
        prod = s[:-lag] * s[lag:]
        assert abs(prod.mean()) * math.sqrt(prod.size) < 4.0


@pytest.mark.parametrize("method", METHODS)
def test_sample_laplace_moments(method: str) -> None:
    mu, b, n = 1.5, 2.0, N_KS
    x = sample_laplace(n, mu, b, rng=np.random.default_rng(31 + METHODS.index(method)), method=method)
    # Mean: Var X = 2 b^2, so SE = sqrt(2) b / sqrt(n).
    assert abs(x.mean() - mu) < 5 * math.sqrt(2.0) * b / math.sqrt(n)
    # Variance: the sample variance has Var ~ (mu4 - sigma^4)/n with mu4 = 24 b^4 (excess kurtosis 3)
    # and sigma^4 = 4 b^4, so SE = sqrt(20) b^2 / sqrt(n).
    assert abs(x.var() - 2 * b**2) < 5 * math.sqrt(20.0) * b**2 / math.sqrt(n)
    # Mean absolute deviation: |X - mu| ~ Exp(scale b): mean b, SE b / sqrt(n).
    assert abs(np.abs(x - mu).mean() - b) < 5 * b / math.sqrt(n)


def test_sample_laplace_broadcasts_array_mu() -> None:
    mu = np.array([-5.0, 0.0, 5.0])
    x = sample_laplace((200_000, 3), mu, 1.0, rng=np.random.default_rng(5), method="fast")
    # Column means: SE = sqrt(2)/sqrt(200000); 5 SE.
    assert np.all(np.abs(x.mean(axis=0) - mu) < 5 * math.sqrt(2.0 / 200_000))


@pytest.mark.parametrize("method", METHODS)
def test_samplers_are_reproducible(method: str) -> None:
    a = sample_laplace((3, 4), 1.0, 2.0, rng=np.random.default_rng(99), method=method)
    c = sample_laplace((3, 4), 1.0, 2.0, rng=np.random.default_rng(99), method=method)
    assert a.shape == (3, 4) and np.array_equal(a, c)
    assert sample_laplace(0, rng=np.random.default_rng(0), method=method).shape == (0,)


class _ZeroFirstGenerator(np.random.Generator):
    """A Generator whose first ``random`` call returns some exact zeros, to exercise the redraw."""

    def __init__(self, seed: int, zeros: int) -> None:
        super().__init__(np.random.PCG64(seed))
        self.zeros = zeros
        self.calls = 0

    def random(self, size=None, dtype=np.float64, out=None):  # type: ignore[override]
        self.calls += 1
        u = np.asarray(super().random(size), dtype=np.float64)
        if self.zeros:
            u.flat[: self.zeros] = 0.0
            self.zeros = 0
        return u


def test_inverse_cdf_redraws_exact_zeros() -> None:
    rng = _ZeroFirstGenerator(3, zeros=5)
    x = sample_laplace(10, rng=rng, method="inverse_cdf")
    assert np.all(np.isfinite(x)) and rng.calls >= 2


@pytest.mark.parametrize("nan", ["keep", "zero", "discard"])
def test_dptext_sampler_is_rejected_as_laplace(nan: str) -> None:
    mu, b = 0.0, 1.0
    x = sample_dptext(N_KS, mu, b, rng=np.random.default_rng(40 + len(nan)), nan=nan)
    finite = x[np.isfinite(x)]
    assert np.all(finite >= mu)  # Theorem 3.1: never below mu
    if nan == "keep":
        # About half NaN (a Laplace sampler gives none) and the finite half is not Laplace either.
        assert stats.binomtest(int(np.isnan(x).sum()), x.size, 0.5).pvalue > P_ACCEPT
    else:
        assert finite.size == x.size
    assert stats.kstest(finite, stats.laplace(mu, b).cdf).pvalue < P_REJECT


@pytest.mark.parametrize("mu,b", [(0.5, 2.0), (0.0, 1.0)])
@pytest.mark.parametrize("nan", ["keep", "zero"])
def test_dptext_sampler_is_eq9_draw_for_draw(nan: str, mu: float, b: float) -> None:
    # The sampler's fast path must be exactly Eq. 9 (dptext_transform) on the same uniforms, with the
    # NaN policy applied afterwards; no statistics involved, so equality is exact.  With mu = 0, b = 1
    # the final mu + b * noise is exact, so the standard noise itself is compared value for value
    # (a 1-ulp difference could round away under mu = 0.5, b = 2).
    seed = 61
    got = sample_dptext(10_000, mu, b, rng=np.random.default_rng(seed), nan=nan)
    v = np.random.default_rng(seed).random(10_000)  # the same uniforms (edge points: next test)
    want = mu + b * np.asarray(dptext_transform(v))
    if nan == "zero":
        want = np.where(np.isnan(want), mu, want)
    assert np.array_equal(got, want, equal_nan=True)


def test_dptext_sampler_edge_uniforms() -> None:
    class Fixed(np.random.Generator):
        def random(self, size=None, dtype=np.float64, out=None):
            return np.array([0.0, 0.5, 0.5 + 2**-53, 0.25])[: int(np.prod(size))].reshape(size)

    rng = Fixed(np.random.PCG64(0))
    keep = sample_dptext(4, rng=rng, nan="keep")
    assert keep[0] == 0.0 and keep[1] == np.inf and np.isnan(keep[2])
    assert keep[3] == dptext_transform(0.25)
    zero = sample_dptext(4, rng=rng, nan="zero")
    assert zero[0] == 0.0 and zero[1] == np.inf and zero[2] == 0.0


@pytest.mark.parametrize("mu,b", [(0.0, 1.0), (1.0, 0.25)])
def test_dptext_sampler_matches_its_exact_law(mu: float, b: float) -> None:
    rng = np.random.default_rng(50 + int(4 * b))
    # discard: a continuous law, direct KS against dptext_cdf.
    d = sample_dptext(N_KS, mu, b, rng=rng, nan="discard")
    assert stats.kstest(d, lambda t: dptext_cdf(t, mu, b, nan="discard")).pvalue > P_ACCEPT
    # keep: NaN fraction 1/2 (binomial test), finite part has the defective CDF normalised by 1/2.
    k = sample_dptext(N_KS, mu, b, rng=rng, nan="keep")
    finite = k[~np.isnan(k)]
    assert stats.binomtest(int(k.size - finite.size), k.size, 0.5).pvalue > P_ACCEPT
    assert stats.kstest(finite, lambda t: dptext_cdf(t, mu, b, nan="keep") / 0.5).pvalue > P_ACCEPT
    # zero: the law has an atom (KS assumes continuity), so test its two parts: the atom at mu has
    # mass dptext_cdf(mu) = 1/2 (binomial test), and given > mu the law is (F - 1/2) / (1/2).
    z = sample_dptext(N_KS, mu, b, rng=rng, nan="zero")
    atom = dptext_cdf(mu, mu, b, nan="zero")
    assert atom == 0.5
    at_mu = z == mu
    assert stats.binomtest(int(at_mu.sum()), z.size, atom).pvalue > P_ACCEPT
    above = z[~at_mu]
    assert stats.kstest(above, lambda t: (dptext_cdf(t, mu, b, nan="zero") - atom) / (1 - atom)).pvalue > P_ACCEPT


@pytest.mark.parametrize("nan,mean,var", [("discard", 1.0, 1.0), ("zero", 0.5, 0.75)])
def test_dptext_moments(nan: str, mean: float, var: float) -> None:
    # Noise N (mu = 0, b = 1): discard -> Exp(1): mean 1, var 1, E N^k = k!.
    # zero -> N = 0 w.p. 1/2 else Exp(1): E N^k = k!/2 (k >= 1), so E N = 1/2, Var = 1 - 1/4 = 3/4.
    # SE of the mean = sqrt(var / n); SE of the sample variance ~ sqrt((m4 - var^2)/n) with the fourth
    # central moment m4 = E(N - mean)^4 expanded binomially from the raw moments E N^k: 9 (discard)
    # and 117/16 (zero).
    b, n = 1.0, N_KS
    x = sample_dptext(n, 0.0, b, rng=np.random.default_rng(60 + len(nan)), nan=nan)
    raw = [1.0] + [math.factorial(k) * (1.0 if nan == "discard" else 0.5) for k in range(1, 5)]
    m4 = sum(math.comb(4, k) * raw[k] * (-mean) ** (4 - k) for k in range(5))
    assert raw[1] == mean and raw[2] - mean**2 == var  # the parametrised moments agree with E N^k
    assert abs(x.mean() - mean * b) < 5 * math.sqrt(var / n)
    assert abs(x.var() - var * b**2) < 5 * math.sqrt((m4 - var**2) / n)


def test_dptext_pdf_integrates_to_cdf() -> None:
    # Continuous part: the integral of dptext_pdf from mu to t equals F(t) - F(mu) for each policy.
    from scipy.integrate import quad

    for nan in ("keep", "zero", "discard"):
        for t in (0.3, 2.0, 7.0):
            integral, err = quad(lambda s: float(dptext_pdf(s, 1.0, 0.5, nan=nan)), 1.0, 1.0 + t)
            expected = dptext_cdf(1.0 + t, 1.0, 0.5, nan=nan) - dptext_cdf(1.0, 1.0, 0.5, nan=nan)
            # quad's own error bound, plus a few ulps for rounding in the CDF difference.
            assert abs(integral - expected) <= err + 4 * EPS * expected
        assert dptext_pdf(0.99, 1.0, 0.5, nan=nan) == 0.0 and dptext_cdf(0.99, 1.0, 0.5, nan=nan) == 0.0


# ---------------------------------------------------------------------------------------------
# bad input: ValueError / TypeError naming the parameter
# ---------------------------------------------------------------------------------------------

PDF_LIKE = [laplace_pdf, laplace_cdf, dptext_cdf, dptext_pdf]


@pytest.mark.parametrize("fn", PDF_LIKE)
@pytest.mark.parametrize("kwargs,name", [
    ({"b": 0.0}, "b"), ({"b": -1.0}, "b"), ({"b": np.nan}, "b"), ({"b": np.inf}, "b"), ({"b": [1.0, 0.0]}, "b"),
    ({"mu": np.nan}, "mu"), ({"mu": -np.inf}, "mu"),
    ({"x": np.nan}, "x"), ({"x": np.inf}, "x"), ({"x": [0.0, np.nan]}, "x"),
])
def test_pdf_cdf_bad_input(fn, kwargs: dict, name: str) -> None:
    args = {"x": 0.5, **kwargs}
    with pytest.raises(ValueError, match=name):
        fn(**args)


@pytest.mark.parametrize("fn,var", [(laplace_ppf, "u"), (laplace_ppf_piecewise, "u"), (laplace_ppf_centered, "v")])
def test_ppf_bad_input(fn, var: str) -> None:
    lo, hi = (0.0, 1.0) if var == "u" else (-0.5, 0.5)
    for bad in (lo, hi, lo - 0.1, hi + 0.1, np.nan, [0.5 * (lo + hi), hi]):
        with pytest.raises(ValueError, match=var):
            fn(bad)
    good = 0.5 * (lo + hi) + 0.1
    with pytest.raises(ValueError, match="b"):
        fn(good, 0.0, 0.0)
    with pytest.raises(ValueError, match="mu"):
        fn(good, np.nan, 1.0)
    with pytest.raises(TypeError, match=var):
        fn("0.3")


def test_ppf_of_a_float_is_the_array_value_bit_for_bit() -> None:
    """laplace_ppf's fast path for float scalars (a student's loop) returns exactly the array path's
    element, as a numpy float64, for ordinary, tiny, near-1 and half-way u and extreme mu and b."""
    rng = np.random.default_rng(7)
    us = np.concatenate([rng.random(2000), np.ldexp(rng.random(500), -rng.integers(1, 1070, 500)),
                         1.0 - np.ldexp(rng.random(500), -rng.integers(1, 53, 500)),
                         [5e-324, np.nextafter(1.0, 0.0), 0.5, np.nextafter(0.5, 0.0), np.nextafter(0.5, 1.0)]])
    us = us[(us > 0.0) & (us < 1.0)]
    for mu, b in [(0.0, 1.0), (-0.0, 0.5), (1.5, 3.7), (-3e300, 1e298), (1e308, 1e-300), (7.0, 5e-324)]:
        with np.errstate(over="ignore"):
            expected = laplace_ppf(us, mu, b)
        for cast in (float, np.float64):
            got = [laplace_ppf(cast(u), cast(mu), cast(b)) for u in us]
            assert all(type(g) is np.float64 for g in got)
            assert np.array(got).tobytes() == expected.tobytes(), (mu, b)


def test_dptext_transform_bad_input() -> None:
    for bad in (-0.1, 1.0, 1.5, np.nan, [0.2, -1e-12]):
        with pytest.raises(ValueError, match="v"):
            dptext_transform(bad)
    with pytest.raises(ValueError, match="b"):
        dptext_transform(0.2, b=-1.0)
    with pytest.raises(ValueError, match="mu"):
        dptext_transform(0.2, mu=np.inf)


@pytest.mark.parametrize("fn", [dptext_cdf, dptext_pdf])
def test_dptext_law_bad_policy(fn) -> None:
    with pytest.raises(ValueError, match="nan"):
        fn(0.0, nan="drop")


def test_sampler_bad_input() -> None:
    rng = np.random.default_rng(0)
    for sampler in (sample_laplace, sample_dptext):
        with pytest.raises(ValueError, match="size"):
            sampler(-1, rng=rng)
        with pytest.raises(TypeError, match="size"):
            sampler(1.5, rng=rng)
        with pytest.raises(TypeError, match="size"):
            sampler("3", rng=rng)
        with pytest.raises(ValueError, match="b"):
            sampler(3, 0.0, 0.0, rng=rng)
        with pytest.raises(ValueError, match="b"):
            sampler(3, 0.0, np.inf, rng=rng)
        with pytest.raises(ValueError, match="mu"):
            sampler(3, np.nan, 1.0, rng=rng)
        with pytest.raises(ValueError, match="mu"):
            sampler(3, np.zeros(4), 1.0, rng=rng)  # does not broadcast to size
        with pytest.raises(TypeError, match="rng"):
            sampler(3, rng=np.random.RandomState(0))
        with pytest.raises(TypeError, match="rng"):
            sampler(3, rng=None)
    with pytest.raises(ValueError, match="method"):
        sample_laplace(3, rng=rng, method="ziggurat")
    with pytest.raises(ValueError, match="nan"):
        sample_dptext(3, rng=rng, nan="drop")


def test_standard_laplace_fill_bad_input() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="out"):
        standard_laplace_fill([0.0, 1.0], rng=rng)
    with pytest.raises(ValueError, match="out"):
        standard_laplace_fill(np.empty(4, dtype=np.float32), rng=rng)
    with pytest.raises(ValueError, match="out"):
        standard_laplace_fill(np.empty((4, 4))[:, 1], rng=rng)  # not contiguous
    ro = np.empty(4)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        standard_laplace_fill(ro, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        standard_laplace_fill(np.empty(4), rng=np.random.RandomState(0))


def test_extreme_parameters_overflow_quietly_to_the_right_limit() -> None:
    # (x - mu) / b overflows to inf: the density is 0 and the CDF is 0 or 1, with no RuntimeWarning
    # (pytest is configured to turn RuntimeWarning into errors).
    assert laplace_pdf(1e308, -1e308) == 0.0
    assert laplace_cdf(1e308, -1e308) == 1.0 and laplace_cdf(-1e308, 1e308) == 0.0
    assert dptext_cdf(1e308, -1e308, nan="zero") == 1.0 and dptext_pdf(1e308, -1e308) == 0.0
    # A quantile or a draw beyond the float range is refused (a finite law has no infinite quantile), not
    # returned as +-inf or NaN.
    with pytest.raises(ValueError, match="^b is too large"):
        laplace_ppf(1e-300, 0.0, 1e307)
    with pytest.raises(ValueError, match="^b is too large"):
        laplace_ppf_piecewise(1 - 1e-16, 0.0, 1e307)
    with pytest.raises(ValueError, match="^b is too large"):
        sample_laplace(1000, 0.0, 1e308, rng=np.random.default_rng(1), method="fast")
