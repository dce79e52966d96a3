"""Noise is never smaller than its real-arithmetic statement, and a release's steps are never undercounted.

1. ``z * sigma`` in doubles rounds to nearest: about half the products were a hair (up to half an ulp) below
   ``|z| sigma`` in magnitude, and ``0.1 * 5e-324`` was 0.0 (no noise at all).  ``dptutor.gaussian.scale_noise``
   rounds each product away from zero; ``gaussian_mechanism`` and ``GaussianRelease`` draw their noise with it.
   Each check compares with the exact product in ``Fraction``s, and also that the result is the LEAST such
   double (one ulp more than round-to-nearest at most, so seeded outputs move by the rounding step only).
2. ``DiscreteGaussianRelease.steps`` rounded an exact answer (a ``Fraction``, a long double) through its nearest
   double: 1/2 + 2^-54 became 0.5 and went to 0, 3/2 - 2^-53 became 1.5 and went to 2.  Two answers at distance
   below 1 then sat 2 steps apart, where the calibration for sensitivity ``1 - 2^-53`` assumes 1.  It also took
   ``3 + 2^-60`` for an integer.  The sensitivity's own rounding (its nearest double, in
   ``discrete_gaussian_release``) was already safe: a guard test checks it.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import dptutor.discrete_gaussian as dg
from dptutor.approximate_dp import GaussianRelease
from dptutor.discrete_gaussian import DiscreteGaussianRelease
from dptutor.gaussian import gaussian_mechanism, gaussian_sigma_analytic, scale_noise

_LARGEST = Fraction(1.7976931348623157e308)


def _assert_least_away(z: np.ndarray, sigma: float, out: np.ndarray) -> None:
    """Each ``out`` is the double of least magnitude at or beyond the exact ``z sigma``, with its sign."""
    for zi, oi in zip(np.ravel(z).tolist(), np.ravel(out).tolist()):
        exact = Fraction(zi) * Fraction(sigma)
        if math.isinf(oi):
            assert abs(exact) > _LARGEST and math.copysign(1.0, oi) == math.copysign(1.0, zi)
            continue
        got = Fraction(oi)
        assert abs(got) >= abs(exact), (zi, sigma, oi)
        assert got == 0 or (got > 0) == (exact > 0), (zi, sigma, oi)
        if got != 0:  # the least: one step toward zero is short of the exact product
            assert abs(Fraction(math.nextafter(oi, 0.0))) < abs(exact), (zi, sigma, oi)


def _short(z: np.ndarray, sigma: float) -> int:
    """How many round-to-nearest products ``z * sigma`` fall below the exact one in magnitude (the old noise)."""
    with np.errstate(all="ignore"):
        nearest = np.ravel(z * sigma).tolist()
    return sum(abs(Fraction(p)) < abs(Fraction(zi) * Fraction(sigma)) for zi, p in zip(np.ravel(z).tolist(), nearest))


@pytest.mark.parametrize("sigma", [0.3, 1.0 / 3.0, 7.123e-5, 123456.789, 1e300, 1e-300, 2.5e-310, 5e-324])
def test_scale_noise_is_the_least_double_at_least_the_exact_product(sigma: float) -> None:
    z = np.random.default_rng(20261128).standard_normal(1500)
    assert _short(z, sigma) > 300  # round to nearest fell short for many of these draws (the old noise)
    _assert_least_away(z, sigma, scale_noise(z, sigma))


def test_scale_noise_edge_values_and_ranges() -> None:
    special = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-310, 2.0**-1022, 3.0, -0.5, 1e308, -1.7976931348623157e308])
    rng = np.random.default_rng(7)
    for sigma in (1.0, 0.3, 2.0**-1022, 3.7e-320, 1.7e308):
        _assert_least_away(special, sigma, scale_noise(special, sigma))
    for _ in range(40):  # products from the subnormals to beyond the largest double
        sigma = float(np.exp(rng.uniform(-744.0, 709.0)))
        z = rng.standard_normal(50) * np.exp(rng.uniform(-744.0, 709.0, 50))
        _assert_least_away(z, sigma, scale_noise(z, sigma))


def test_scale_noise_keeps_tiny_noise_that_round_to_nearest_dropped() -> None:
    with np.errstate(under="ignore"):
        assert 0.1 * 5e-324 == 0.0  # the old product: no noise at all
    assert scale_noise(0.1, 5e-324) == 5e-324 and scale_noise(-0.1, 5e-324) == -5e-324
    assert Fraction(float(scale_noise(0.1, 0.3))) >= Fraction(0.1) * Fraction(0.3) > Fraction(0.1 * 0.3)


def test_scale_noise_shapes_blocks_exact_sigma_and_errors() -> None:
    z = np.random.default_rng(3).standard_normal((40_000, 2))  # more than one block of 2^15 elements
    out = scale_noise(z, 0.3)
    assert out.shape == z.shape and out is not z
    with np.errstate(all="ignore"):
        nearest = z * 0.3
    moved = out != nearest
    assert 0.3 < moved.mean() < 0.7  # about half the products move ...
    assert np.all(np.abs(out[moved]) == np.abs(np.nextafter(nearest[moved], np.copysign(np.inf, z[moved]))))  # ... one ulp
    assert scale_noise(np.zeros((0, 3)), 2.0).shape == (0, 3)
    assert scale_noise(0.25, 2.0).shape == () and scale_noise(0.25, 2.0) == 0.5
    third = float(scale_noise(0.1, Fraction(1, 3)))  # an exact sigma rounded up first
    assert Fraction(third) >= Fraction(0.1) / 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scale_noise(np.array([1e308, -1e308]), 10.0).tolist() == [math.inf, -math.inf]
    for bad, name in [(np.array([1.0, math.inf]), "z"), (np.array([math.nan]), "z"), ("abc", "z"),
                      (0.0, "sigma"), (-1.0, "sigma"), (math.nan, "sigma"), ("1", "sigma")]:
        with pytest.raises((TypeError, ValueError), match=name):
            scale_noise(bad, 1.0) if name == "z" else scale_noise(1.0, bad)


def test_gaussian_mechanism_noise_not_shrunk_by_rounding() -> None:
    x = np.zeros((300, 4))
    out = gaussian_mechanism(x, 1.0, 1e-5, np.random.default_rng(11))  # x = 0: the output is the noise itself
    z = np.random.default_rng(11).standard_normal(x.shape)
    sigma = gaussian_sigma_analytic(1.0, 1e-5, 2.0)  # the default sensitivity sqrt(4)
    assert _short(z, sigma) > 200
    _assert_least_away(z, sigma, out)


def test_gaussian_mechanism_moves_only_by_the_rounding_step() -> None:
    x = np.random.default_rng(5).uniform(0.0, 1.0, (200, 3))
    out = gaussian_mechanism(x, 0.5, 1e-6, np.random.default_rng(12), sensitivity=1.5, calibration="classic")
    z = np.random.default_rng(12).standard_normal(x.shape)
    from dptutor.gaussian import gaussian_sigma_classic

    sigma = gaussian_sigma_classic(0.5, 1e-6, 1.5)
    noise, nearest = scale_noise(z, sigma), z * sigma
    assert np.array_equal(out, noise + x)  # the sum still rounds to nearest (documented), the noise does not
    old = nearest + x  # the old output: it moves by the noise's rounding step and the sum's rounding only
    bound = np.spacing(np.abs(nearest)) + np.spacing(np.maximum(np.abs(out), np.abs(old)))
    assert np.all(np.abs(out - old) <= bound) and np.any(out != old)


@pytest.mark.parametrize("sigma", [0.3, Fraction(1, 3), 2.5e-310])
def test_gaussian_release_noise_not_shrunk_by_rounding(sigma: object) -> None:
    mech = GaussianRelease(sigma)
    out = mech(0.0, 1500, np.random.default_rng(13))
    z = np.random.default_rng(13).standard_normal(1500)
    assert mech.sigma >= sigma and _short(z, mech.sigma) > 300
    _assert_least_away(z, mech.sigma, out)
    vec = mech(np.zeros(3), 100, np.random.default_rng(14))
    _assert_least_away(np.random.default_rng(14).standard_normal((100, 3)), mech.sigma, vec)


def test_discrete_release_rounds_exact_answers_exactly() -> None:
    sens = math.nextafter(1.0, 0.0)  # 1 - 2^-53: the calibration counts floor(sens / 1) + 1 = 1 step
    a, b = Fraction(1, 2) + Fraction(1, 2**54), Fraction(3, 2) - Fraction(1, 2**53)
    assert b - a <= Fraction(sens)  # neighbours' answers
    mech = DiscreteGaussianRelease(Fraction(3, 2), granularity=1.0)
    assert (mech.steps(a), mech.steps(b)) == (1, 1)  # the old code: (0, 2), two steps apart
    assert abs(mech.steps(b) - mech.steps(a)) <= math.floor(Fraction(sens)) + 1
    fine = DiscreteGaussianRelease(Fraction(3, 2), granularity=2.0**-3)  # the same, scaled by the granularity
    assert (fine.steps(a / 8), fine.steps(b / 8)) == (1, 1)
    assert mech.steps(Fraction(5, 2)) == 2 and mech.steps(Fraction(7, 2)) == 4  # ties to even, as np.rint
    assert mech.steps(0.5) == 0 and mech.steps(2.75) == 3  # doubles as before
    out = mech(a, 5, np.random.default_rng(0))
    assert np.array_equal(out, mech(1.0, 5, np.random.default_rng(0)))


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is a double here")
def test_discrete_release_rounds_long_doubles_exactly() -> None:
    a = np.longdouble(0.5) + np.longdouble(2.0) ** -60  # its nearest double is the midpoint 0.5
    assert float(a) == 0.5
    assert DiscreteGaussianRelease(Fraction(3, 2), granularity=1.0).steps(a) == 1


def test_integer_query_refuses_exact_non_integers() -> None:
    mech = DiscreteGaussianRelease(2)
    with pytest.raises(ValueError, match="data"):
        mech.steps(Fraction(3) + Fraction(1, 2**60))  # its nearest double is 3.0: the old code took it for 3
    with pytest.raises(ValueError, match="data"):
        mech.steps(Fraction(7, 2))
    assert mech.steps(Fraction(3)) == 3 and mech.steps(2**40) == 2**40
    with pytest.raises(ValueError, match="too large"):
        mech.steps(2**53 + 1)


def test_guard_exact_sensitivity_steps_never_undercounted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard (no defect found): the steps calibrated for are at least floor(exact sensitivity / r) + 1."""
    seen: list[int] = []
    monkeypatch.setattr(dg, "discrete_gaussian_sigma", lambda eps, dlt, steps: seen.append(steps) or Fraction(3, 2))
    rng = np.random.default_rng(8)
    for _ in range(150):
        r = 2.0 ** int(rng.integers(-30, 10))
        k = int(rng.integers(1, 2 ** int(rng.integers(1, 39))))
        for sign in (1, -1):
            sens = Fraction(k) * Fraction(r) * (1 + sign * Fraction(1, 2 ** int(rng.integers(40, 120))))
            seen.clear()
            dg.discrete_gaussian_release(1.0, 1e-5, sens, granularity=r)
            assert seen[0] >= math.floor(sens / Fraction(r)) + 1, (sens, r, seen)
