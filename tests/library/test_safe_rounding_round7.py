"""Exact inputs (Fractions, long doubles) round to the safe side in approximate_dp and pld, as in accounting.

Each test names the wrong output the old code gave: it took the nearest double of an exact input, which can lie
on the unsafe side (a smaller noise scale or sensitivity, a larger target).  The references are computed in
mpmath at 60 digits, or read off the function's own contract.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dptutor._validate import rounding
from dptutor.approximate_dp import (
    GaussianRelease,
    delta_from_losses,
    gaussian_epsilon,
    gaussian_privacy_loss,
    gaussian_release,
    gaussian_tradeoff,
    name_and_shame,
)
from dptutor.pld import PrivacyLossDistribution, gaussian_composition_epsilon, pld_gaussian
from dptutor.renyi import round_down, round_up

THIRD = Fraction(1, 3)  # its nearest double, 0.3333333333333333, is below it
TENTH = Fraction(1, 10)  # its nearest double, 0.1000000000000000055..., is above it


def _mp(x: Fraction) -> mpmath.mpf:
    return mpmath.mpf(x.numerator) / x.denominator


def test_privacy_loss_scale_is_never_below_the_exact_ratio():
    # old: std 0.3333333333333333 < 1/3 (the sensitivity's nearest double, below it)
    assert Fraction(gaussian_privacy_loss(1.0, THIRD).std()) >= THIRD
    assert Fraction(gaussian_privacy_loss(TENTH, Fraction(1, 30)).std()) >= THIRD  # sigma rounded down too


def test_gaussian_release_noise_is_never_below_the_stated_sigma():
    # old: GaussianRelease(Fraction(1, 3)).sigma = 0.3333333333333333, less noise than stated
    assert Fraction(GaussianRelease(THIRD).sigma) >= THIRD
    assert GaussianRelease(THIRD).sigma == round_up(THIRD)
    assert GaussianRelease(0.25).sigma == 0.25  # a double is kept


def test_classic_calibration_is_never_below_the_exact_sigma():
    # old: 4.314977470085188, below the exact 4.31497747008518853...
    sigma = gaussian_release(0.5, 1e-9, THIRD, "classic").sigma
    with mpmath.workdps(60):
        exact = _mp(THIRD) * mpmath.sqrt(2 * mpmath.log(mpmath.mpf(1.25) / mpmath.mpf(1e-9))) / mpmath.mpf(0.5)
        assert mpmath.mpf(sigma) >= exact
    # the targets round down: a Fraction epsilon above its nearest double's exact value gives at least its sigma
    assert gaussian_release(TENTH, 1e-9, 1.0, "classic").sigma >= gaussian_release(0.1, 1e-9, 1.0, "classic").sigma
    assert gaussian_release(TENTH, 1e-9, 1.0).sigma == gaussian_release(round_down(TENTH), 1e-9, 1.0).sigma


def test_gaussian_epsilon_is_not_zero_below_the_total_variation():
    # delta just below delta(0+) = 2 Phi(1/4) - 1 (sigma 2): epsilon 0 does not suffice; old: 0.0
    with mpmath.workdps(60):
        man, exp = (2 * mpmath.ncdf(mpmath.mpf(0.25)) - 1 - mpmath.mpf(10) ** -40).man_exp
    delta = Fraction(int(man)) * Fraction(2) ** int(exp)
    assert gaussian_epsilon(delta, 2.0) > 0.0
    assert gaussian_epsilon(delta, 2.0) == gaussian_epsilon(round_down(delta), 2.0)
    assert gaussian_epsilon(1e-5, TENTH * 10) == gaussian_epsilon(1e-5, 1.0)


def test_delta_from_losses_is_not_below_the_exact_mean():
    # loss 0.1 (double) above epsilon = 1/10: the term 1 - e^(1/10 - 0.1) > 0; old: 0.0
    assert delta_from_losses([0.1], TENTH) > 0.0
    assert delta_from_losses([0.1], TENTH) == delta_from_losses([0.1], round_down(TENTH))


def test_tradeoff_is_never_above_the_exact_curve():
    # old: G_{1/3}(0.2) = 0.6943742728426238 > the exact 0.69437427284262376...
    value = float(gaussian_tradeoff(0.2, THIRD))
    with mpmath.workdps(60):
        exact = mpmath.ncdf(mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * mpmath.mpf(0.2)) - _mp(THIRD))
        assert mpmath.mpf(value) <= exact
    assert value == float(gaussian_tradeoff(0.2, round_up(THIRD)))


class _FixedUniform(np.random.Generator):
    """A Generator whose ``random`` gives one fixed value (numpy's draws are multiples of 2^-53)."""

    def __init__(self, value: float) -> None:
        super().__init__(np.random.PCG64(0))
        self.value = value

    def random(self, size=None, dtype=np.float64, out=None):  # noqa: ARG002
        return np.full(size, self.value)


def test_name_and_shame_publishes_with_probability_at_most_delta():
    # numpy's uniforms are k 2^-53; publishing when U < 0.1 takes k = 0 .. 900719925474099, a probability of
    # 900719925474100 / 2^53 = 0.10000000000000000888 > 0.1.  Old: the draw k = 900719925474099 was published.
    k = math.floor(0.1 * 2**53)
    assert (k + 1) * Fraction(1, 2**53) > Fraction(0.1)
    assert name_and_shame([[1.0]], 0.1, _FixedUniform(k * 2.0**-53)).shape == (0, 1)
    assert name_and_shame([[1.0]], 0.1, _FixedUniform((k - 1) * 2.0**-53)).shape == (1, 1)
    # a Fraction is rounded down first: 1/10 gives the same threshold
    assert name_and_shame([[1.0]], TENTH, _FixedUniform(k * 2.0**-53)).shape == (0, 1)


def test_pld_epsilon_target_rounds_down():
    pld = PrivacyLossDistribution(1.0, 0, [0.5, 0.25], 0.25)
    # below the infinity mass no finite epsilon exists; old: 1.000000000000001
    assert pld.epsilon(Fraction(1, 4) - Fraction(1, 2**80)) == math.inf
    # just below delta(0): epsilon 0 is not enough; old: 0.0 (with delta(0.0) above the target)
    target = Fraction(pld.delta(0.0)) - Fraction(1, 2**80)
    eps = pld.epsilon(target)
    assert eps > 0.0 and Fraction(pld.delta(eps)) <= target
    optimistic = PrivacyLossDistribution(1.0, 0, [0.5, 0.25], 0.25, pessimistic=False)
    assert optimistic.epsilon(Fraction(1, 4) - Fraction(1, 2**80)) == optimistic.epsilon(0.25)


def test_pld_delta_epsilon_rounds_to_the_safe_side():
    pld = PrivacyLossDistribution(1e-3, 0, [0.5, 0.5])
    assert pld.delta(Fraction(1, 1000)) == pld.delta(round_down(Fraction(1, 1000)))
    optimistic = PrivacyLossDistribution(1e-3, 0, [0.5, 0.5], pessimistic=False)
    assert optimistic.delta(Fraction(1, 1000)) == optimistic.delta(round_up(Fraction(1, 1000)))


def test_pld_gaussian_uses_the_safe_side_sigma_and_sampling_probability():
    # old: built at the nearest doubles (sigma 0.1000000000000000055 > 1/10, more noise than given)
    assert np.array_equal(pld_gaussian(TENTH, grid=1e-3).pmf, pld_gaussian(round_down(TENTH), grid=1e-3).pmf)
    assert np.array_equal(pld_gaussian(2.0, sampling_probability=THIRD, grid=1e-3).pmf,
                          pld_gaussian(2.0, sampling_probability=round_up(THIRD), grid=1e-3).pmf)
    lower = pld_gaussian(TENTH, grid=1e-3, pessimistic=False)
    assert np.array_equal(lower.pmf, pld_gaussian(round_up(TENTH), grid=1e-3, pessimistic=False).pmf)


def test_composition_epsilon_uses_the_safe_side_inputs():
    # old (rdp): 310.1266311038504 at the nearest double of sigma = 1/10, 310.1266311038505 now
    got = gaussian_composition_epsilon(TENTH, 3, Fraction(1, 10**5), method="rdp")
    assert got == gaussian_composition_epsilon(round_down(TENTH), 3, round_down(Fraction(1, 10**5)), method="rdp")
    assert got >= gaussian_composition_epsilon(0.1, 3, 1e-5, method="rdp")
    pld = gaussian_composition_epsilon(Fraction(7, 10), 2, Fraction(1, 10**5), sampling_probability=THIRD, grid=1e-3)
    assert pld == gaussian_composition_epsilon(round_down(Fraction(7, 10)), 2, round_down(Fraction(1, 10**5)),
                                               sampling_probability=round_up(THIRD), grid=1e-3)


def test_tiny_positive_inputs_that_round_down_to_zero_are_refused():
    tiny = Fraction(3, 2**1076)  # above half the smallest subnormal: its nearest double is 5e-324
    with pytest.raises(ValueError, match="sigma"):
        gaussian_privacy_loss(tiny, 1e-320)
    with pytest.raises(ValueError, match="delta"):
        gaussian_epsilon(tiny, 1.0)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="numpy's long double is a double here")
def test_round_up_takes_a_long_double_at_its_exact_value():
    # old: renyi.round_up(1 + 2^-60 as a long double) = 1.0, below it (float() rounded it first)
    x = np.longdouble(1) + np.longdouble(2) ** -60
    assert round_up(x) == math.nextafter(1.0, 2.0)
    assert round_down(x) == 1.0
    assert rounding.toward(x, float(x), "x", up=True) == math.nextafter(1.0, 2.0)
    assert gaussian_privacy_loss(1.0, x).std() == math.nextafter(1.0, 2.0)


def test_toward_uses_the_shared_core():
    assert rounding.toward(THIRD, float(THIRD), "x", up=True) == rounding.round_up(THIRD) == round_up(THIRD)
    assert rounding.toward(TENTH, 0.1, "x", up=False) == rounding.round_down(TENTH) == round_down(TENTH)
    assert math.copysign(1.0, rounding.toward(-0.0, -0.0, "x", up=True)) == -1.0  # a double is kept as it is
    with pytest.raises(ValueError, match="x must be representable"):
        rounding.toward(2**1024 - 2**969, 1.7976931348623157e308, "x", up=True)
    with pytest.raises(TypeError, match="exact must be"):
        rounding.round_up(True)
    with pytest.raises(ValueError, match="exact must be finite"):
        rounding.round_up(math.nan)


def test_shared_sum_and_product_round_outward_exactly():
    big = 2**60 + 1  # not a double: its product is taken exactly, as accounting's was
    assert rounding.mul_rounded(big, 0.5) == round_up(Fraction(big, 2))
    assert rounding.mul_rounded(big, 0.5, up=False) == round_down(Fraction(big, 2))
    assert rounding.mul_rounded(10**400, 1.0) == math.inf and rounding.mul_rounded(0, math.inf) == 0.0
    assert rounding.add_rounded(0.1, 0.2) == round_up(Fraction(0.1) + Fraction(0.2))
    assert rounding.add_rounded(1.7976931348623157e308, 1e292, up=False) == 1.7976931348623157e308
    # arrays give the same doubles as scalars, near the ends of the range too (an exact product is not moved)
    xs = np.array([0.1, 1e-300, 3.0, 1e200, 0.0, math.inf])
    ys = np.array([0.7, 1.0, 1e-150, 1e200, math.inf, 2.0])
    for up in (True, False):
        got = rounding.mul_rounded(xs, ys, up)
        assert isinstance(got, np.ndarray)
        assert got.tolist() == [rounding.mul_rounded(float(x), float(y), up) for x, y in zip(xs, ys)]
        assert rounding.add_rounded(xs, ys, up).tolist() == [rounding.add_rounded(float(x), float(y), up)
                                                             for x, y in zip(xs, ys)]
    assert rounding.mul_rounded(np.array([1e-300]), 1.0).tolist() == [1e-300]
