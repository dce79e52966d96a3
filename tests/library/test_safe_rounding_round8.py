"""Exact inputs (Fractions, ints beyond 2**53) round to the safe side in gaussian, discrete_gaussian and pld_gaussian.

Each test names the wrong output the old code gave: it took the nearest double of an exact input, which can lie
on the unsafe side (a larger epsilon or target delta, a smaller sigma or sensitivity).  The references are
computed in mpmath at 60 digits, or read off the function's own contract.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dptutor.discrete_gaussian import (
    DiscreteGaussianRelease,
    discrete_gaussian_delta,
    discrete_gaussian_epsilon,
    discrete_gaussian_release,
    discrete_gaussian_sigma,
)
from dptutor.gaussian import (gaussian_delta, gaussian_mechanism, gaussian_sigma_analytic, gaussian_sigma_classic,
                              scale_noise)
from dptutor.pld import pld_gaussian
from dptutor.renyi import round_down, round_up

THIRD = Fraction(1, 3)  # its nearest double, 0.3333333333333333, is below it
BIG = 2**53 + 1  # its nearest double, 2**53, is below it


def _mp(x: object) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def _exact_delta(epsilon: object, sigma: object, sensitivity: object) -> mpmath.mpf:
    e, r = _mp(epsilon), _mp(sigma) / _mp(sensitivity)
    return mpmath.ncdf(1 / (2 * r) - e * r) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * r) - e * r)


def _exact_classic(epsilon: object, delta: object, sensitivity: object) -> mpmath.mpf:
    return _mp(sensitivity) * mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1.25) / _mp(delta))) / _mp(epsilon)


@pytest.mark.parametrize(("args", "old"), [
    ((1.0, Fraction(11, 10), 1.0), 0.09614553598374445),  # sigma's nearest double is above it
    ((1.0, 1.0, THIRD), 0.000207512202052736),  # the sensitivity's is below it
    ((Fraction(4, 5), 2.0, 1.0), 0.016941773001448713),  # epsilon's is above it
    ((1.0, 2.0**53, BIG), 0.12693673750664397),  # an int beyond 2**53
])
def test_gaussian_delta_is_never_below_the_exact_profile(args, old):
    with mpmath.workdps(60):
        exact = _exact_delta(*args)
        assert mpmath.mpf(old) < exact  # what the old code returned
        assert mpmath.mpf(gaussian_delta(*args)) >= exact


def test_gaussian_delta_refuses_a_sigma_that_rounds_down_to_zero():
    with pytest.raises(ValueError, match="sigma"):
        gaussian_delta(1.0, Fraction(3, 2**1076), 1e-320)


@pytest.mark.parametrize(("args", "old"), [
    ((0.5, 1e-9, THIRD), 4.314977470085188),
    ((Fraction(1, 10), 1e-5, 1.0), 48.448052626053894),
    ((0.5, Fraction(9, 10**5), 1.0), 8.73560275605443),
    ((0.5, 1e-5, BIG), 8.727625270140901e16),
])
def test_classic_sigma_is_never_below_the_exact_formula(args, old):
    with mpmath.workdps(60):
        exact = _exact_classic(*args)
        assert mpmath.mpf(old) < exact
        assert mpmath.mpf(gaussian_sigma_classic(*args)) >= exact


def test_classic_accepts_an_epsilon_whose_exact_value_is_below_one():
    # 1 - 2^-60 rounds to the double 1.0; old: ValueError "epsilon must be < 1"
    eps = Fraction(2**60 - 1, 2**60)
    assert gaussian_sigma_classic(eps, 1e-5, 1.0) == gaussian_sigma_classic(math.nextafter(1.0, 0.0), 1e-5, 1.0)
    with pytest.raises(ValueError, match="epsilon must be < 1"):
        gaussian_sigma_classic(Fraction(2**60 + 1, 2**60), 1e-5, 1.0)


def test_analytic_sigma_uses_the_safe_side_inputs():
    # old: 1.243543878272014 (at the sensitivity 1/3 rounded down), 4.5727617477738125 (at epsilon 4/5 rounded up)
    assert gaussian_sigma_analytic(1.0, 1e-5, THIRD) == gaussian_sigma_analytic(1.0, 1e-5, round_up(THIRD))
    assert gaussian_sigma_analytic(1.0, 1e-5, THIRD) > gaussian_sigma_analytic(1.0, 1e-5, float(THIRD))
    eps = Fraction(4, 5)
    assert gaussian_sigma_analytic(eps, 1e-5, 1.0) == gaussian_sigma_analytic(round_down(eps), 1e-5, 1.0)
    with mpmath.workdps(60):
        assert _exact_delta(eps, gaussian_sigma_analytic(eps, 1e-5, THIRD), THIRD) <= mpmath.mpf(1e-5)


def test_gaussian_mechanism_default_sensitivity_is_sqrt_n_rounded_up():
    # math.sqrt(3) = 1.7320508075688772 is below sqrt(3): old sigma 16.782897735219223, below the exact calibration
    sens = math.nextafter(math.sqrt(3), math.inf)
    assert Fraction(sens) ** 2 > 3 > Fraction(math.sqrt(3)) ** 2
    sigma = gaussian_sigma_classic(0.5, 1e-5, sens)
    with mpmath.workdps(60):
        assert mpmath.mpf(sigma) >= _exact_classic(0.5, 1e-5, 1) * mpmath.sqrt(3)
    out = gaussian_mechanism(np.zeros((2, 3)), 0.5, 1e-5, np.random.default_rng(1), calibration="classic")
    assert np.array_equal(out, scale_noise(np.random.default_rng(1).standard_normal((2, 3)), sigma))
    # a square n is exact
    out4 = gaussian_mechanism(np.zeros((1, 4)), 0.5, 1e-5, np.random.default_rng(1), calibration="classic")
    assert np.array_equal(out4, scale_noise(np.random.default_rng(1).standard_normal((1, 4)),
                                          gaussian_sigma_classic(0.5, 1e-5, 2)))


def _exact_discrete_delta(epsilon: object, sigma: object) -> mpmath.mpf:
    """The discrete Gaussian's delta (sensitivity 1), summed over |x| <= 60 (enough for sigma <= 1/2)."""
    var, e = _mp(sigma) ** 2, _mp(epsilon)
    weights = {x: mpmath.exp(-mpmath.mpf(x) ** 2 / (2 * var)) for x in range(-60, 61)}
    total = mpmath.mpf(0)
    for x, w in weights.items():
        loss = (1 - 2 * x) / (2 * var)
        if loss > e:
            total += w * (1 - mpmath.exp(e - loss))
    return total / sum(weights.values())


@pytest.mark.parametrize(("epsilon", "sigma", "old"), [
    # epsilon just below the loss at x = -1 (24): its nearest double, 24.0, drops that term (2.4e-5 of delta)
    (Fraction(24) - Fraction(1, 2**50), Fraction(1, 4), 1.265567311325967e-14),
    (Fraction(10) - Fraction(1, 2**51), Fraction(1, 2), 1.1760054504994478e-08),
])
def test_discrete_gaussian_delta_is_never_below_the_exact_profile(epsilon, sigma, old):
    with mpmath.workdps(60):
        exact = _exact_discrete_delta(epsilon, sigma)
        assert mpmath.mpf(old) < exact
        assert mpmath.mpf(discrete_gaussian_delta(epsilon, sigma)) >= exact
    assert discrete_gaussian_delta(epsilon, sigma) == discrete_gaussian_delta(round_down(epsilon), sigma)


def test_discrete_gaussian_delta_rounds_epsilon_down():
    # old: 0.0039633604598153915, the delta at 11/10 rounded up (the 1e-12 margin hid it, the rule did not)
    eps = Fraction(11, 10)
    assert discrete_gaussian_delta(eps, 2) == discrete_gaussian_delta(round_down(eps), 2)
    assert discrete_gaussian_delta(eps, 2) != discrete_gaussian_delta(round_up(eps), 2)


def test_discrete_gaussian_epsilon_is_not_zero_below_delta_at_zero():
    # a target just below delta(0): epsilon 0 does not meet it; old: 0.0
    target = Fraction(discrete_gaussian_delta(0.0, 2)) - Fraction(1, 2**80)
    eps = discrete_gaussian_epsilon(target, 2)
    assert eps > 0.0 and Fraction(discrete_gaussian_delta(eps, 2)) <= target


def test_discrete_gaussian_sigma_meets_the_exact_target():
    # a target just below the delta of the grid point 479/128; old: 479/128 itself, whose delta is above it
    grid_point = discrete_gaussian_sigma(1.0, 1e-5)
    target = Fraction(discrete_gaussian_delta(1.0, grid_point)) - Fraction(1, 2**200)
    sigma = discrete_gaussian_sigma(1.0, target)
    assert sigma > grid_point and Fraction(discrete_gaussian_delta(1.0, sigma)) <= target
    assert discrete_gaussian_release(1.0, target, 1).sigma == sigma
    assert discrete_gaussian_release(1.0, target, 0.5, granularity=1.0).sigma == sigma


def test_granularity_must_be_exactly_a_power_of_two():
    # 1/2 + 2^-61 rounds to the double 0.5; old: accepted as granularity 0.5
    with pytest.raises(ValueError, match="granularity must be a power of two"):
        DiscreteGaussianRelease(1, granularity=Fraction(2**60 + 1, 2**61))
    assert DiscreteGaussianRelease(1, granularity=Fraction(1, 2)).granularity == 0.5
    assert DiscreteGaussianRelease(1, granularity=np.longdouble(0.25)).granularity == 0.25


def test_pld_gaussian_sigma_range_is_the_exact_one():
    # 1/1000 is in [1e-3, 1e6] (the documented range, exactly); it is used rounded down, below the double 1e-3
    exact = pld_gaussian(Fraction(1, 1000), grid=1.0)
    assert exact.delta(1000.0) >= pld_gaussian(1e-3, grid=1.0).delta(1000.0)
    # exact values outside the range whose nearest doubles are its ends; old: accepted
    for sigma in (Fraction(1, 1000) - Fraction(1, 2**80), Fraction(10**6) + Fraction(1, 2**40)):
        assert float(sigma) in (1e-3, 1e6)
        with pytest.raises(ValueError, match=r"sigma must lie in \[0.001, 1e\+06\]"):
            pld_gaussian(sigma, grid=1.0)
    with pytest.raises(ValueError, match="sigma must lie in"):
        pld_gaussian(math.nextafter(1e-3, 0.0), grid=1.0)
