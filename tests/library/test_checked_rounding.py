"""``checked_toward``: an input check and the step to the safe side of an exact input, in one call.

The helper replaced about thirty call sites of the shape ``toward(value, check_X(value, name, ...), name, up=...)``
(``toward_positive`` for some) in accounting, approximate_dp, composition, discrete_gaussian, gaussian and pld.
The first tests pin the helper itself; the last ones show that call sites still round exact inputs (``Fraction``s)
to the safe side and still refuse bad input with the same messages.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dptutor import _validate
from dptutor._validate import check_positive, check_probability, check_real, checked_toward, rounding
from dptutor.accounting import basic_composition, group_privacy
from dptutor.approximate_dp import GaussianRelease, gaussian_epsilon
from dptutor.composition import Budget, sequential_epsilon
from dptutor.discrete_gaussian import discrete_gaussian_delta
from dptutor.gaussian import calibration_targets, gaussian_delta
from dptutor.pld import pld_gaussian

THIRD = Fraction(1, 3)  # its nearest double, 0.3333333333333333, is below it
TENTH = Fraction(1, 10)  # its nearest double, 0.1000000000000000055..., is above it
UP_THIRD = math.nextafter(1 / 3, 1.0)
DOWN_TENTH = math.nextafter(0.1, 0.0)
SUBNORMAL_THIRD = Fraction(3, 2**1076)  # 3/4 of the smallest positive double: nearest 5e-324, rounded down 0.0
MAX = 1.7976931348623157e308
ABOVE_MAX = 2**1024 - 2**970 - 1  # an int above MAX whose nearest double is MAX (below half way to 2**1024)


def _outcome(fn, *args, **kwargs):
    try:
        out = fn(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return float, out.hex(), math.copysign(1.0, out)


# ---------------------------------------------------------------------------------------------
# the helper
# ---------------------------------------------------------------------------------------------


def test_exported_from_validate_like_the_other_checks():
    assert _validate.checked_toward is rounding.checked_toward
    assert "checked_toward" in _validate.__all__ and "checked_toward" in rounding.__all__


@pytest.mark.parametrize("check, kwargs", [(check_real, {}), (check_real, {"low": 0.0, "high": 1.0}),
                                           (check_positive, {}), (check_probability, {})])
def test_exact_fractions_round_the_stated_way(check, kwargs):
    assert checked_toward(THIRD, "x", check, up=True, **kwargs) == UP_THIRD  # the nearest double was below
    assert checked_toward(THIRD, "x", check, up=False, **kwargs) == 1 / 3
    assert checked_toward(TENTH, "x", check, up=True, **kwargs) == 0.1
    assert checked_toward(TENTH, "x", check, up=False, **kwargs) == DOWN_TENTH  # the nearest double was above
    for value in (THIRD, TENTH, Fraction(2, 3), Fraction(10**20 + 1, 10**21)):
        assert Fraction(checked_toward(value, "x", check, up=True, **kwargs)) >= value
        assert Fraction(checked_toward(value, "x", check, up=False, **kwargs)) <= value


def test_exact_ints_and_long_doubles_round_the_stated_way():
    big = 2**53 + 1  # between two doubles
    assert checked_toward(big, "k", check_positive, up=True) == 2.0**53 + 2
    assert checked_toward(big, "k", check_positive, up=False) == 2.0**53
    assert checked_toward(-big, "k", check_real, up=True) == -(2.0**53)
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("long double is a double on this platform")
    one_plus = np.longdouble(1) + np.longdouble(2) ** -60  # its nearest double, 1.0, is below it
    assert checked_toward(one_plus, "sigma", check_positive, up=True) == math.nextafter(1.0, 2.0)
    assert checked_toward(one_plus, "sigma", check_positive, up=False) == 1.0


def test_plain_doubles_and_infinities_are_returned_as_checked():
    for x in (0.1, 1 / 3, 5e-324, 1e300, MAX):
        assert checked_toward(x, "x", check_positive, up=True) == x
        assert checked_toward(x, "x", check_positive, up=False, positive=True) == x
    assert math.copysign(1.0, checked_toward(-0.0, "x", check_real, up=True)) == -1.0
    assert checked_toward(math.inf, "epsilon", check_real, up=False, low=0.0, allow_inf=True) == math.inf
    assert checked_toward(np.float32(0.1), "x", check_real, up=False) == float(np.float32(0.1))  # exact already


def test_check_options_are_passed_to_the_check():
    assert checked_toward(0, "delta", check_probability, up=True, closed=True) == 0.0
    assert checked_toward(1, "delta", check_probability, up=False, closed=True) == 1.0
    with pytest.raises(ValueError, match=r"^delta must lie in \(0, 1\), got 1$"):
        checked_toward(1, "delta", check_probability, up=False)
    with pytest.raises(ValueError, match=r"^epsilon must lie in \[0, 10000\], got Fraction\(20001, 2\)$"):
        checked_toward(Fraction(20001, 2), "epsilon", check_real, up=True, low=0.0, high=1e4)
    with pytest.raises(ValueError, match="^epsilon must be finite, got inf$"):
        checked_toward(math.inf, "epsilon", check_real, up=True, low=0.0)


@pytest.mark.parametrize("bad, exc, message", [
    (True, TypeError, "sigma must be a real number, got bool"),
    (np.bool_(False), TypeError, "sigma must be a real number, got bool"),
    ("1", TypeError, "sigma must be a real number, got str"),
    (None, TypeError, "sigma must be a real number, got NoneType"),
    (np.array([0.5]), TypeError, "sigma must be a real number, got ndarray"),
    (math.nan, ValueError, "sigma must not be NaN"),
    (Fraction(-1, 3), ValueError, "sigma must lie in (0, inf], got Fraction(-1, 3)"),
    (Fraction(10**400), ValueError, "sigma must be representable as a float, got Fraction("),
])
def test_bad_values_give_the_checks_errors_naming_the_parameter(bad, exc, message):
    with pytest.raises(exc) as info:
        checked_toward(bad, "sigma", check_positive, up=True)
    assert str(info.value).startswith(message)


def test_a_value_beyond_the_largest_double_is_refused_when_rounded_outward():
    assert checked_toward(ABOVE_MAX, "x", check_real, up=False) == MAX
    with pytest.raises(ValueError, match="^x must be representable as a float, got a value above the largest double$"):
        checked_toward(ABOVE_MAX, "x", check_real, up=True)
    with pytest.raises(ValueError, match="^x must be representable as a float, got a value below the smallest double$"):
        checked_toward(-ABOVE_MAX, "x", check_real, up=False)


def test_positive_refuses_a_positive_value_rounded_down_to_zero():
    assert checked_toward(SUBNORMAL_THIRD, "sigma", check_positive, up=True, positive=True) == 5e-324
    assert checked_toward(SUBNORMAL_THIRD, "sigma", check_positive, up=False) == 0.0  # toward: no complaint
    with pytest.raises(ValueError, match="^sigma must be representable as a positive float, got a Fraction below the "
                                         "smallest positive double$"):
        checked_toward(SUBNORMAL_THIRD, "sigma", check_positive, up=False, positive=True)
    assert checked_toward(0, "epsilon", check_real, up=False, positive=True, low=0.0) == 0.0  # 0 stays allowed


VALUES = [0.5, 0.0, -0.0, 2.0, -1.0, 1e-320, math.inf, math.nan, True, np.bool_(True), "x", None, THIRD, TENTH,
          SUBNORMAL_THIRD, Fraction(1, 2**1080), Fraction(-1, 3), Fraction(10**400), ABOVE_MAX, 2**53 + 1,
          np.float32(0.1), np.array(0.25), np.longdouble(1) / 3]
OPTIONS = [(check_real, {}), (check_real, {"low": 0.0}), (check_real, {"low": 0.0, "high": 1.0}),
           (check_real, {"allow_inf": True}), (check_positive, {}), (check_probability, {}),
           (check_probability, {"closed": True})]


@pytest.mark.parametrize("check, kwargs", OPTIONS)
@pytest.mark.parametrize("up", [True, False])
@pytest.mark.parametrize("positive", [True, False])
def test_same_as_the_check_then_toward_it_replaced(check, kwargs, up, positive):
    step = rounding.toward_positive if positive else rounding.toward
    for value in VALUES:
        old = _outcome(lambda: step(value, check(value, "p", **kwargs), "p", up=up))
        assert _outcome(checked_toward, value, "p", check, up=up, positive=positive, **kwargs) == old, value


# ---------------------------------------------------------------------------------------------
# call sites: exact inputs still rounded to the safe side, bad ones refused as before
# ---------------------------------------------------------------------------------------------


def test_gaussian_release_sigma_of_a_third_still_rounds_up():
    assert GaussianRelease(THIRD).sigma == UP_THIRD
    assert GaussianRelease(0.25).sigma == 0.25
    with pytest.raises(TypeError, match="^sigma must be a real number, got bool$"):
        GaussianRelease(True)


def test_calibration_targets_still_round_down():
    assert calibration_targets(TENTH, TENTH) == (DOWN_TENTH, DOWN_TENTH)
    with pytest.raises(ValueError, match="^delta must be representable as a positive float, got a Fraction below"):
        calibration_targets(1.0, SUBNORMAL_THIRD)
    with pytest.raises(ValueError, match=r"^delta must lie in \(0, 1\), got 1.0$"):
        calibration_targets(1.0, 1.0)


def test_gaussian_delta_and_epsilon_take_exact_inputs_on_the_safe_side():
    # sigma and epsilon rounded down, the sensitivity up: a larger delta, and the same as those doubles give
    assert gaussian_delta(TENTH, Fraction(11, 10), THIRD) == gaussian_delta(DOWN_TENTH, math.nextafter(1.1, 0.0),
                                                                                UP_THIRD)
    assert gaussian_epsilon(TENTH, Fraction(11, 10), THIRD) == gaussian_epsilon(DOWN_TENTH, math.nextafter(1.1, 0.0),
                                                                                    UP_THIRD)
    with pytest.raises(TypeError, match="^epsilon must be a real number, got bool$"):
        gaussian_delta(True, 1.0)
    with pytest.raises(ValueError, match="^sigma must be representable as a positive float, got a Fraction below"):
        gaussian_epsilon(0.1, SUBNORMAL_THIRD)


def test_accounting_rounds_epsilon_and_delta_up():
    eps, dlt = basic_composition(THIRD, TENTH, 3)
    assert eps == basic_composition(UP_THIRD, 0.1, 3)[0] and Fraction(eps) >= 1
    assert Fraction(dlt) >= Fraction(3, 10)
    assert group_privacy(THIRD, 3)[0] == group_privacy(UP_THIRD, 3)[0]
    with pytest.raises(TypeError, match="^delta must be a real number, got bool$"):
        basic_composition(1.0, True, 3)
    with pytest.raises(ValueError, match=r"^epsilon must lie in \[0, inf\], got -1.0$"):
        basic_composition(-1.0, 0.0, 3)


def test_composition_rounds_spent_budgets_up_and_totals_down():
    assert Fraction(sequential_epsilon([THIRD] * 3)) >= 1
    assert Budget(TENTH).total == DOWN_TENTH and Budget(1.0, (THIRD,)).spent == (UP_THIRD,)
    assert Budget(1.0, (SUBNORMAL_THIRD,)).spent == (5e-324,)  # rounded up: positive
    # a total rounded down to 0.0: the composition module's own message, after checked_toward gave 0.0
    with pytest.raises(ValueError, match=r"^total must be representable as a positive float, got Fraction\(3, .*\(below "
                                         r"the smallest positive double\)$"):
        Budget(SUBNORMAL_THIRD)
    with pytest.raises(TypeError, match=r"^epsilons\[1\] must be a real number, got bool$"):
        sequential_epsilon([1.0, True])


def test_discrete_gaussian_delta_takes_a_tenth_rounded_down():
    assert discrete_gaussian_delta(TENTH, 2) == discrete_gaussian_delta(DOWN_TENTH, 2)
    with pytest.raises(ValueError, match=r"^epsilon must lie in \[0, inf\], got Fraction\(-1, 3\)$"):
        discrete_gaussian_delta(Fraction(-1, 3), 2)


def test_pld_epsilon_and_delta_take_exact_inputs_on_the_safe_side():
    pessimistic = pld_gaussian(1.0, grid=1e-2)
    optimistic = pld_gaussian(1.0, grid=1e-2, pessimistic=False)
    assert pessimistic.epsilon(TENTH) == pessimistic.epsilon(DOWN_TENTH)  # a smaller target: a larger epsilon
    assert optimistic.epsilon(TENTH) == optimistic.epsilon(0.1)
    assert pessimistic.delta(TENTH) == pessimistic.delta(DOWN_TENTH)  # a smaller epsilon: a larger delta
    with pytest.raises(ValueError, match=r"^delta must lie in \[0, 1\], got 2$"):
        pessimistic.epsilon(2)
