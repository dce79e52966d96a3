"""The Gaussian mechanism and its two calibrations (dptutor.mechanisms, issue 15).

Reference values come from scipy.stats.norm (the condition of Balle and Wang 2018, Theorem 8,
evaluated directly) and from mpmath at 60 digits where doubles would overflow.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dptutor.mechanisms import (
    gaussian_delta,
    gaussian_mechanism,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
)

EPSILONS = [0.01, 0.1, 0.5, 0.9, 1.0, 2.0, 5.0, 10.0, 50.0]
DELTAS = [1e-12, 1e-10, 1e-6, 1e-5, 1e-3, 0.01, 0.1, 0.5]


def _condition_scipy(epsilon: float, sigma: float, sensitivity: float) -> float:
    """Balle and Wang's Theorem 8, written as in the paper with scipy.stats.norm.cdf."""
    a = sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    b = -sensitivity / (2 * sigma) - epsilon * sigma / sensitivity
    return float(stats.norm.cdf(a) - math.exp(epsilon) * stats.norm.cdf(b))


def _condition_mpmath(epsilon: float, sigma: float, sensitivity: float) -> mpmath.mpf:
    with mpmath.workdps(60):
        e, s = mpmath.mpf(epsilon), mpmath.mpf(sigma) / mpmath.mpf(sensitivity)
        return mpmath.ncdf(1 / (2 * s) - e * s) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * s) - e * s)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_analytic_sigma_solves_balle_wang_condition_to_1e_9(epsilon, delta):
    sigma = gaussian_sigma_analytic(epsilon, delta, 1.0)
    # scipy, term by term: the two CDF terms are O(1) at most, so double rounding is ~1e-16.
    assert abs(_condition_scipy(epsilon, sigma, 1.0) - delta) <= 1e-9
    # and relative to delta, against 60-digit arithmetic
    assert abs(float(_condition_mpmath(epsilon, sigma, 1.0)) / delta - 1.0) <= 1e-9


@pytest.mark.parametrize("epsilon", [100.0, 500.0, 2000.0])
def test_analytic_sigma_is_stable_for_large_epsilon(epsilon):
    # e^2000 overflows a double; the log-space solution must still satisfy the condition.
    sigma = gaussian_sigma_analytic(epsilon, 1e-6, 1.0)
    assert abs(float(_condition_mpmath(epsilon, sigma, 1.0)) / 1e-6 - 1.0) <= 1e-9
    assert math.isclose(gaussian_delta(epsilon, sigma, 1.0), 1e-6, rel_tol=1e-9)


@pytest.mark.parametrize("sensitivity", [1e-3, 0.5, 1.0, 7.0, 1e4])
def test_sigma_scales_with_sensitivity(sensitivity):
    base = gaussian_sigma_analytic(0.7, 1e-5, 1.0)
    assert math.isclose(gaussian_sigma_analytic(0.7, 1e-5, sensitivity), sensitivity * base, rel_tol=1e-12)
    assert math.isclose(gaussian_sigma_classic(0.7, 1e-5, sensitivity),
                        sensitivity * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.7, rel_tol=1e-14)


@settings(max_examples=300, deadline=None)
@given(epsilon=st.floats(1e-2, 1.0, exclude_max=True), log10_delta=st.floats(-15.0, -1e-3),
       sensitivity=st.floats(1e-3, 1e3))
def test_analytic_never_exceeds_classic_where_classic_applies(epsilon, log10_delta, sensitivity):
    delta = 10.0**log10_delta
    classic = gaussian_sigma_classic(epsilon, delta, sensitivity)
    analytic = gaussian_sigma_analytic(epsilon, delta, sensitivity)
    assert analytic <= classic
    # the classic sigma is indeed (epsilon, delta)-DP (Dwork and Roth's Theorem A.1)
    assert gaussian_delta(epsilon, classic, sensitivity) <= delta


def test_profile_is_decreasing_in_sigma_and_in_epsilon():
    sigmas = np.geomspace(0.2, 20, 200)  # delta(1, 20) ~ 1e-88: no underflow to 0
    deltas = [gaussian_delta(1.0, s) for s in sigmas]
    assert all(a > b for a, b in zip(deltas, deltas[1:]))
    by_eps = [gaussian_delta(e, 2.0) for e in np.linspace(0.05, 5, 100)]
    assert all(a > b for a, b in zip(by_eps, by_eps[1:]))


def test_classic_refuses_epsilon_at_least_one_and_the_formula_fails_there():
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_sigma_classic(1.0, 1e-5, 1.0)
    # Why: at epsilon = 20 the formula's sigma is far from (epsilon, delta)-DP.
    sigma = math.sqrt(2 * math.log(1.25 / 1e-5)) / 20.0
    assert gaussian_delta(20.0, sigma) > 100 * 1e-5


@pytest.mark.parametrize("fn", [gaussian_sigma_classic, gaussian_sigma_analytic])
@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"epsilon": 0.0}, "epsilon"), ({"epsilon": -1.0}, "epsilon"), ({"epsilon": math.nan}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"), ({"delta": -0.1}, "delta"),
        ({"delta": 1.5}, "delta"), ({"delta": math.nan}, "delta"),
        ({"sensitivity": 0.0}, "sensitivity"), ({"sensitivity": -2.0}, "sensitivity"),
        ({"sensitivity": math.inf}, "sensitivity"), ({"sensitivity": math.nan}, "sensitivity"),
    ],
)
def test_bad_values_raise_value_error_naming_the_parameter(fn, kwargs, name):
    args = {"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0} | kwargs
    with pytest.raises(ValueError, match=name):
        fn(**args)
    if name != "sensitivity":
        with pytest.raises(ValueError, match=name):
            gaussian_mechanism(np.zeros((2, 2)), args["epsilon"], args["delta"], np.random.default_rng(0))
    else:
        with pytest.raises(ValueError, match=name):
            gaussian_mechanism(np.zeros((2, 2)), 0.5, 1e-5, np.random.default_rng(0),
                               sensitivity=args["sensitivity"])


@pytest.mark.parametrize("value", ["1", None, True, np.array([0.5, 0.5]), 1j])
@pytest.mark.parametrize("name", ["epsilon", "delta", "sensitivity"])
def test_wrong_types_raise_type_error_naming_the_parameter(name, value):
    args = {"epsilon": 0.5, "delta": 1e-5, "sensitivity": 1.0} | {name: value}
    for fn in (gaussian_sigma_classic, gaussian_sigma_analytic):
        with pytest.raises(TypeError, match=name):
            fn(**args)


@pytest.mark.parametrize("epsilon, delta", [(1e-6, 1e-12), (1e300, 1e-5), (5e-324, 0.5), (0.5, 5e-324)])
def test_extremes_raise_instead_of_returning_an_inaccurate_sigma(epsilon, delta):
    # Beyond double precision the calibration says so (and names epsilon) rather than guess.
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_sigma_analytic(epsilon, delta, 1.0)


def test_mechanism_adds_gaussian_noise_with_the_calibrated_sigma():
    rng = np.random.default_rng(15)
    n, trials = 4, 50_000
    x = np.full((trials, n), 0.25)
    x.setflags(write=False)
    out = gaussian_mechanism(x, 0.8, 1e-5, rng)
    sigma = gaussian_sigma_analytic(0.8, 1e-5, math.sqrt(n))  # default: l2 sensitivity sqrt(n)
    # KS test at level 1e-3: a correct sampler fails with probability 1e-3 (seeded, deterministic)
    assert stats.kstest((out - 0.25).ravel(), "norm", args=(0.0, sigma)).pvalue > 1e-3
    assert np.all(x == 0.25)
    out_classic = gaussian_mechanism(x, 0.8, 1e-5, np.random.default_rng(1), sensitivity=2.0,
                                     calibration="classic")
    sigma_c = gaussian_sigma_classic(0.8, 1e-5, 2.0)
    assert stats.kstest((out_classic - 0.25).ravel(), "norm", args=(0.0, sigma_c)).pvalue > 1e-3


def test_mechanism_is_reproducible_and_checks_its_inputs():
    x = np.zeros((3, 5))
    a = gaussian_mechanism(x, 1.0, 1e-6, np.random.default_rng(7))
    b = gaussian_mechanism(x, 1.0, 1e-6, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="x"):
        gaussian_mechanism(np.array([[np.nan]]), 1.0, 1e-6, np.random.default_rng(0))
    with pytest.raises(ValueError, match="x"):
        gaussian_mechanism(np.zeros(3), 1.0, 1e-6, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        gaussian_mechanism(x, 1.0, 1e-6, 0)
    with pytest.raises(ValueError, match="calibration"):
        gaussian_mechanism(x, 1.0, 1e-6, np.random.default_rng(0), calibration="exact")
    with pytest.raises(ValueError, match="epsilon"):  # classic at epsilon >= 1
        gaussian_mechanism(x, 1.0, 1e-6, np.random.default_rng(0), calibration="classic")
    with pytest.raises(ValueError, match="x"):
        gaussian_mechanism(np.full((1000, 1), 1.797e308), 0.01, 1e-6, np.random.default_rng(0), sensitivity=1e303)


def test_tiny_delta_and_empty_rows_are_handled():
    # 1.25 / 1e-320 overflows a double; the classic sigma must not
    sigma = gaussian_sigma_classic(0.5, 1e-320, 1.0)
    assert math.isfinite(sigma) and sigma == pytest.approx(math.sqrt(2 * (math.log(1.25) + 320 * math.log(10))) / 0.5)
    with pytest.raises(ValueError, match="x"):
        gaussian_mechanism(np.zeros((3, 0)), 0.5, 1e-5, np.random.default_rng(0))
    assert gaussian_mechanism(np.zeros((0, 2)), 0.5, 1e-5, np.random.default_rng(0)).shape == (0, 2)
