"""dptutor.pld rounds outward at every step: a pessimistic PLD's tails (so its delta, before and after
composition) are never below the exact ones, an optimistic PLD's never above them.  Exact values are
computed in mpmath (the Gaussian's tails) or in rational arithmetic (convolutions, sums of masses)."""
from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import special

from dptutor import pld as pld_module
from dptutor.approximate_dp import gaussian_delta
from dptutor.pld import PrivacyLossDistribution, pld_gaussian


def _mp(x: Fraction | float) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def _exact_tail(level: Fraction, sigma: float, q: float, direction: str) -> mpmath.mpf:
    """P[L > level] under the first distribution of the Gaussian pair (see ``pld_gaussian``)."""
    s, q, level = _mp(sigma), _mp(q), _mp(level)
    if q == 1:
        return mpmath.ncdf(-(s * level - 1 / (2 * s)))
    v = mpmath.exp(level if direction == "remove" else -level) - (1 - q)
    if v <= 0:
        return mpmath.mpf(1 if direction == "remove" else 0)
    y = mpmath.mpf(0.5) + s**2 * mpmath.log(v / q)
    if direction == "remove":
        return (1 - q) * mpmath.ncdf(-y / s) + q * mpmath.ncdf(-(y - 1) / s)
    return mpmath.ncdf(y / s)


def _tails(pld: PrivacyLossDistribution) -> list[Fraction]:
    """tails[j]: the exact mass at indices >= j, plus the infinity mass."""
    out = [Fraction(pld.infinity_mass)]
    for p in reversed(pld.pmf.tolist()):
        out.append(out[-1] + Fraction(p))
    return out[::-1]


@pytest.mark.parametrize(("sigma", "q", "direction", "grid"), [
    (1.0, 1.0, "remove", 1e-2), (0.3, 1.0, "add", 3e-2), (2.0, 0.3, "add", 1e-2), (1.0, 0.1, "remove", 1e-2)])
def test_gaussian_pld_tails_are_outward(sigma, q, direction, grid):
    """The masses were differences of scipy's CDF, cut at m * grid rounded to nearest and then rescaled to
    sum to 1: the pessimistic PLD's mass above a loss fell below the exact one by up to 1e-13 relative
    (-1.7e-14 at (1, 1), -9.7e-14 at (2, 0.3, "add")) and the optimistic one's rose above it by up to 1.5e-12."""
    h = Fraction(grid)
    with mpmath.workdps(40):
        upper = pld_gaussian(sigma, sampling_probability=q, direction=direction, grid=grid)
        tails = _tails(upper)
        for j in range(upper.pmf.size):  # a loss at (offset + j) h or above: the mass at indices > j
            assert _mp(tails[j + 1]) >= _exact_tail((upper.offset + j) * h, sigma, q, direction)
        lower = pld_gaussian(sigma, sampling_probability=q, direction=direction, grid=grid, pessimistic=False)
        tails = _tails(lower)
        for j in range(lower.pmf.size - 1):  # a loss below (offset + j + 1) h: the mass at indices > j
            assert _mp(tails[j + 1]) <= _exact_tail((lower.offset + j + 1) * h, sigma, q, direction)


def _geometric_pair() -> tuple[np.ndarray, list[Fraction]]:
    w = 10.0 ** -np.arange(40)
    pmf = w / w.sum()
    fr = [Fraction(p) for p in pmf.tolist()]
    conv = [sum((fr[i] * fr[n - i] for i in range(max(0, n - 39), min(n, 39) + 1)), Fraction(0)) for n in range(79)]
    return pmf, conv


@pytest.mark.parametrize("pessimistic", [True, False])
def test_composition_bounds_the_fft_round_off(pessimistic):
    """Masses from 1 down to 1e-39, composed twice: the FFT's round-off (about 1e-17 a cell) was clamped and
    ignored, so the pessimistic delta(38.75) was 0 for an exact 1.8e-79, and the optimistic delta(8) was
    4.4e-16 for an exact 6.9e-17."""
    pmf, conv = _geometric_pair()
    composed = PrivacyLossDistribution(0.5, 0, pmf, pessimistic=pessimistic).compose(2, tail=0.0)
    with mpmath.workdps(60):
        for eps in np.arange(0.0, 39.5, 0.25):
            exact = sum(_mp(p) * -mpmath.expm1(eps - mpmath.mpf(n) / 2) for n, p in enumerate(conv) if n / 2 > eps)
            got = _mp(composed.delta(float(eps)))
            assert got >= exact if pessimistic else got <= exact, eps
    if pessimistic:
        assert composed.infinity_mass < 1e-15  # the bound in extended precision is small


def test_fft_error_bound_covers_the_actual_error():
    rng = np.random.default_rng(20261128)
    x = rng.random(120) * 10.0 ** -rng.uniform(0, 30, 120)
    y = rng.random(90) * 10.0 ** -rng.uniform(0, 30, 90)
    fx, fy = [Fraction(v) for v in x.tolist()], [Fraction(v) for v in y.tolist()]
    exact = [Fraction(0)] * (x.size + y.size - 1)
    for i, a in enumerate(fx):
        for j, b in enumerate(fy):
            exact[i + j] += a * b
    for up in (True, False):
        out, bound = pld_module._fft_convolve(x, y, up)
        assert sum(abs(Fraction(v) - e) for v, e in zip(out.tolist(), exact)) <= Fraction(bound)
        assert all((Fraction(v) >= e) if up else (Fraction(v) <= e) for v, e in zip(out.tolist(), exact)
                   if abs(Fraction(v) - e) > Fraction(bound))  # vacuous unless the bound is broken


def test_scipy_ndtr_is_within_the_allowance():
    """The PLD allows scipy's normal CDF a relative error of 16 (4 + x^2) units of roundoff at x <= 0 (64 above)."""
    rng = np.random.default_rng(7)
    xs = np.concatenate([rng.uniform(-37.5, 8.0, 300), [-37.0, -20.0, -8.0, -1.0, 0.0, 1.0, 5.0]])
    with mpmath.workdps(40):
        for x, v in zip(xs, special.ndtr(xs)):
            exact = mpmath.ncdf(mpmath.mpf(float(x)))
            allowance = 16 * 2.0**-53 * (4 + min(x, 0.0) ** 2)
            assert abs(_mp(float(v)) - exact) <= allowance * exact, x


def test_missing_mass_counts_as_an_infinite_loss():
    """A pmf summing to 1 - 1e-7 was accepted and its missing mass vanished: delta(inf) was 0."""
    pld = PrivacyLossDistribution(0.5, 0, np.array([0.5, 0.5 - 1e-7]))
    exact_missing = 1 - Fraction(0.5) - Fraction(0.5 - 1e-7)
    assert Fraction(pld.infinity_mass) >= exact_missing
    assert Fraction(pld.delta(math.inf)) >= exact_missing and pld.epsilon(1e-8) == math.inf
    exact = PrivacyLossDistribution(0.5, 0, np.array([0.5, 0.5]))  # sums to 1: nothing added
    assert exact.infinity_mass == 0.0 and exact.delta(0.6) == 0.0


def test_optimistic_pld_with_excess_mass_is_scaled_down():
    """An optimistic pmf summing to 1 + 1e-7 gave a delta above that of its normalised law."""
    pmf = np.array([0.5, 0.5 + 1e-7])
    lower = PrivacyLossDistribution(0.5, 1, pmf, pessimistic=False)
    total = sum(Fraction(p) for p in pmf.tolist())
    with mpmath.workdps(40):
        exact = sum(_mp(Fraction(p) / total) * -mpmath.expm1(-mpmath.mpf(m + 1) / 2) for m, p in enumerate(pmf))
        assert _mp(lower.delta(0.0)) <= exact


def test_optimistic_epsilon_is_the_lower_end_of_its_bracket():
    """epsilon() returned the upper end of its bisection bracket for an optimistic PLD too (above the
    exact epsilon of its own delta)."""
    lower = PrivacyLossDistribution(0.5, 2, np.array([0.5, 0.5]), pessimistic=False)
    upper = PrivacyLossDistribution(0.5, 2, np.array([0.5, 0.5]))
    with mpmath.workdps(40):
        for target in (0.1, 0.2, 0.3):
            exact = lambda e: sum(0.5 * max(0, -mpmath.expm1(e - loss)) for loss in (1, 1.5)) - target  # noqa: E731
            root = mpmath.findroot(exact, (mpmath.mpf(0), mpmath.mpf(1.5)), solver="anderson")
            assert lower.epsilon(target) <= root <= upper.epsilon(target)


@pytest.mark.parametrize("k", [1, 10])
def test_composed_gaussian_is_above_the_exact_delta_and_tight(k):
    """k Gaussian releases are one with sigma / sqrt(k): the pessimistic PLD's delta is above the exact one
    and within 0.5% of it at grid 1e-3 (about k * grid / 2 in epsilon)."""
    sigma, h = 1.0, 1e-3
    composed = pld_gaussian(sigma, grid=h).compose(k)
    lower = pld_gaussian(sigma, grid=h, pessimistic=False).compose(k)
    for eps in (0.5, 1.0, 2.0, 4.0):
        exact = gaussian_delta(eps, sigma / math.sqrt(k))  # rounded up: compared with a margin of 1e-15
        assert exact * (1 - 1e-15) <= composed.delta(eps) <= exact * (1 + 5e-3 * k)
        assert lower.delta(eps) <= exact
