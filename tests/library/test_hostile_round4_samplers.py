"""Round-4 fuzz findings in the Laplace/DPText samplers, ``floating`` and ``snapping`` (helper52's repros)."""

from __future__ import annotations

import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dptutor import floating, snapping
from dptutor.distributions import (
    laplace_cdf,
    laplace_pdf,
    laplace_ppf,
    laplace_ppf_centered,
    laplace_ppf_piecewise,
    sample_laplace,
    standard_laplace_fill,
)
from dptutor.dptext import dptext_cdf, dptext_pdf, sample_dptext

BIG = 1.7e308


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


# 1. (x - mu) / b: NaN (inf - inf) and a RuntimeWarning for legal finite inputs ----------------------


def test_standardize_overflow_gives_the_limit_not_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert laplace_cdf(1e300, 1e299, 1e-10) == 1.0
        assert laplace_cdf(1e299, 1e300, 1e-10) == 0.0
        assert laplace_pdf(0.3, 0.1, 1e-310) == 0.0
        assert dptext_pdf(0.3, 1e-12, 5e-324) == 0.0
        assert dptext_cdf(0.3, 1e-12, 5e-324) == 1.0
        # x - mu overflows but the quotient does not: computed exactly
        assert laplace_cdf(1e308, -1e308, 1e308) == 1.0 - 0.5 * np.exp(-2.0)
        grid = laplace_cdf(np.array([1e308, 1.0]), np.array([[-1e308], [1e308]]), 5e-324)
    assert grid.tolist() == [[1.0, 1.0], [0.5, 0.0]]


def _mp_cdf(x: float, mu: float, b: float) -> float:
    with mpmath.workdps(60):
        z = (mpmath.mpf(x) - mpmath.mpf(mu)) / mpmath.mpf(b)
        return float(mpmath.exp(z) / 2 if z < 0 else 1 - mpmath.exp(-z) / 2)


def _mp_pdf(x: float, mu: float, b: float) -> float:
    with mpmath.workdps(60):
        z = abs(mpmath.mpf(x) - mpmath.mpf(mu)) / mpmath.mpf(b)
        return float(mpmath.exp(-z) / (2 * mpmath.mpf(b)))


def test_pdf_and_cdf_match_mpmath_on_extreme_values():
    rng = np.random.default_rng(53)
    def extreme(n):  # noqa: E306
        return rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-320, 308.2, n)
    x, mu, b = extreme(400), extreme(400), np.abs(extreme(400))
    sign = rng.choice([-1.0, 1.0], 200)  # x - mu overflows: opposite signs near the float max
    x = np.concatenate([x, sign * rng.uniform(0.5, 1.79, 200) * 1e308])
    mu = np.concatenate([mu, -sign * rng.uniform(0.5, 1.79, 200) * 1e308])
    b = np.concatenate([b, 10.0 ** rng.uniform(-323, 308.2, 200)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cdf, pdf = laplace_cdf(x, mu, b), laplace_pdf(x, mu, b)
    assert not np.isnan(cdf).any() and not np.isnan(pdf).any()
    for i in range(x.size):
        assert cdf[i] == pytest.approx(_mp_cdf(x[i], mu[i], b[i]), rel=1e-12, abs=1e-300)
        expected = _mp_pdf(x[i], mu[i], b[i])
        assert pdf[i] == pytest.approx(expected, rel=1e-12, abs=1e-300) or (expected > 1.7e308 and pdf[i] == np.inf)


# 2. ragged input: numpy's message without the parameter's name --------------------------------------


def test_ragged_input_names_the_parameter():
    with pytest.raises((TypeError, ValueError), match=r"^k must"):
        floating.laplace_from_index([[1], [1, 2]], 0.0, 1.0)
    params = snapping.snapping_parameters(1.0)
    with pytest.raises((TypeError, ValueError), match=r"^negative must"):
        snapping.snap(np.zeros(2), np.full(2, 0.5), negative=[[True], [True, False]], params=params)


# 3. messages that print a 5000-digit integer -------------------------------------------------------


def test_log_ratio_message_survives_a_huge_integer():
    with pytest.raises(ValueError, match=r"^p must be >= 0, got an int too long to print"):
        snapping.log_ratio(-10**5000, Fraction(1, 4))
    with pytest.raises(ValueError, match=r"^q must be >= 0"):
        snapping.log_ratio(Fraction(1, 4), Fraction(-10**5000, 3))


# 4. samplers and quantiles that returned +-inf for a finite scale -----------------------------------


@pytest.mark.parametrize("call, name", [
    (lambda: sample_laplace(5, b=BIG, rng=_rng()), "b"),
    (lambda: sample_laplace(5, b=BIG, rng=_rng(), method="fast"), "b"),
    (lambda: sample_laplace(5, mu=1.5e308, b=2e306, rng=_rng()), "b"),
    (lambda: sample_laplace(4, mu=np.zeros(4), b=np.array([1.0, 1.0, 1.0, 5e306]), rng=_rng()), "b"),
    (lambda: sample_dptext(5, b=BIG, rng=_rng()), "b"),
    (lambda: sample_dptext(5, b=BIG, rng=_rng(), nan="discard"), "b"),
    (lambda: floating.sample_floating_laplace(5, scale=BIG, rng=_rng()), "scale"),
    (lambda: floating.sample_floating_laplace(5, scale=BIG, rng=_rng(), sampler="textbook"), "scale"),
    (lambda: floating.sample_floating_laplace(5, scale=4.5e306, rng=_rng(), sampler="fast"), "scale"),
    (lambda: floating.laplace_from_index(np.array([1, 2, 3]), 0.0, BIG), "scale"),
    (lambda: floating.reachable([1.0], 0.0, BIG, sampler="textbook"), "scale"),
    (lambda: laplace_ppf(1e-300, b=BIG), "b"),
    (lambda: laplace_ppf(np.array([0.5, 1e-300]), 0.0, BIG), "b"),
    (lambda: laplace_ppf_piecewise(1 - 1e-16, 0.0, 1e307), "b"),
    (lambda: laplace_ppf_centered(0.5 - 2.0**-54, 0.0, 1e307), "b"),
])
def test_overflowing_scale_is_refused(call, name):
    with pytest.raises(ValueError, match=rf"^{name} is too large"):
        call()


def test_the_threshold_is_sharp_and_valid_calls_are_unchanged():
    limit = np.finfo(np.float64).max / 36.04365338911715  # 52 ln 2: the largest |standard draw|
    below = float(np.nextafter(limit, 0.0)) * (1 - 1e-15)
    for method in ("inverse_cdf", "fast"):
        seed_draws = sample_laplace(1000, rng=np.random.default_rng(5), method=method)
        scaled = sample_laplace(1000, 0.0, 3.0, rng=np.random.default_rng(5), method=method)
        assert scaled.tobytes() == (seed_draws * 3.0).tobytes()
    x = sample_laplace(10_000, 0.0, below, rng=_rng())
    assert np.isfinite(x).all()
    with pytest.raises(ValueError, match="^b is too large"):
        sample_laplace(10, 0.0, limit * (1 + 1e-12), rng=_rng())
    assert np.isfinite(floating.laplace_from_index(np.array([1, floating.K_MAX]), 0.0, below, "textbook")).all()
    assert np.isfinite(laplace_ppf(5e-324, 0.0, 1e305))  # 744 * 1e305: finite, kept
    assert laplace_ppf(0.25, 1.0, 2.0) == laplace_ppf(np.array([0.25]), 1.0, 2.0)[0]


# 5. masked / subclassed out --------------------------------------------------------------------------


def test_standard_laplace_fill_refuses_a_masked_array_naming_out():
    with pytest.raises(TypeError, match=r"^out must"):
        standard_laplace_fill(np.ma.array([1.0, 2.0], mask=[0, 1]), rng=_rng())
    with pytest.raises(TypeError, match=r"^out must"):
        standard_laplace_fill(np.empty(3).view(type("Sub", (np.ndarray,), {})), rng=_rng())
    with pytest.raises(ValueError, match=r"^out must"):
        standard_laplace_fill(np.empty(4, dtype=">f8"), rng=_rng())
    with pytest.raises(ValueError, match=r"^out must"):
        standard_laplace_fill(np.empty((4, 4))[:, 1], rng=_rng())
    out = np.empty(7)
    assert standard_laplace_fill(out, rng=_rng()) is out and np.isfinite(out).all()
