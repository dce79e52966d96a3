"""More calibrations that must not err on the unsafe side in real arithmetic (each float input taken as the
rational it exactly equals): the f-DP trade-off curve ``G_mu`` is never above its exact value (a larger type II
error claims more privacy); the snapping mechanism's scale ``lambda`` is never below ``n (1 + 2^-49 B) /
epsilon`` and its clamp ``B`` meets Mironov's condition ``lambda < B < 2^46 lambda`` exactly; the granular
Laplace mechanism's ``r`` and ``t`` are what their documentation says.  References: ``fractions.Fraction``
where the value is rational, 60-digit ``mpmath`` otherwise."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st
from scipy import special

from dptutor.approximate_dp import gaussian_tradeoff
from dptutor.granular import granular_parameters
from dptutor.snapping import snapping_parameters

pytestmark = pytest.mark.filterwarnings("error")

FAST = settings(max_examples=40, deadline=None)


def _exact_tradeoff(alpha: float, mu: float) -> mpmath.mpf:
    """``Phi(Phi^-1(1 - alpha) - mu)`` at 60 digits: Newton on ``ln Phi`` for ``Phi^-1(min(alpha, 1 - alpha))``."""
    with mpmath.workdps(60):
        if alpha in (0.0, 1.0):
            return mpmath.mpf(1.0 - alpha)
        p = alpha if alpha <= 0.5 else 1.0 - alpha  # exact
        y = mpmath.mpf(float(special.ndtri(p)))
        for _ in range(12):
            cdf = mpmath.ncdf(y)
            y -= (mpmath.log(cdf) - mpmath.log(p)) * cdf / mpmath.npdf(y)
        t = (-y if alpha <= 0.5 else y) - mpmath.mpf(mu)
        return mpmath.mpf(0) if t < -60 else mpmath.ncdf(t)


def _ulps_below(got: float, exact: mpmath.mpf) -> int:
    """How many doubles lie strictly between ``got`` and the largest double at most ``exact``."""
    steps = 0
    while mpmath.mpf(math.nextafter(got, math.inf)) <= exact and steps < 50:
        got, steps = math.nextafter(got, math.inf), steps + 1
    return steps


# ---------------------------------------------------------------------------------------------
# the Gaussian trade-off curve G_mu(alpha): a lower bound on beta
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("alpha", "mu"), [(0.05, 1.0), (0.3, 1.0), (0.5, 1.0), (0.9, 3.0), (0.2, 0.7)])
def test_gaussian_tradeoff_known_cases_not_above(alpha, mu):
    # scipy's ndtr(-ndtri(alpha) - mu), rounded to nearest, was above the exact curve at each of these
    exact = _exact_tradeoff(alpha, mu)
    got = float(gaussian_tradeoff(np.array([alpha]), mu)[0])
    assert mpmath.mpf(got) <= exact
    assert _ulps_below(got, exact) <= 1


@seed(20261128)
@FAST
@given(log_alpha=st.floats(-320.0, 0.0), mu=st.floats(0.0, 80.0), complement=st.booleans())
def test_gaussian_tradeoff_never_above_and_within_an_ulp(log_alpha, mu, complement):
    alpha = 10.0**log_alpha
    if complement:
        alpha = 1.0 - alpha  # alpha near 1: G is tiny, computed from the exact 1 - alpha
    exact = _exact_tradeoff(alpha, mu)
    got = float(gaussian_tradeoff(np.array([alpha]), mu)[0])
    assert 0.0 <= got <= 1.0
    assert mpmath.mpf(got) <= exact
    assert _ulps_below(got, exact) <= 2


def test_gaussian_tradeoff_exact_ends_and_perfect_privacy():
    alpha = np.array([0.0, 1.0, 0.25, 0.1, 5e-324, 1.0 - 2.0**-53])
    got = gaussian_tradeoff(alpha, 0.0)  # G_0(alpha) = 1 - alpha, rounded down
    expected = [1.0, 0.0, 0.75, math.nextafter(0.9, 0.0), math.nextafter(1.0, 0.0), 2.0**-53]  # 1 - 0.1 < 0.9
    assert got.tolist() == expected
    assert gaussian_tradeoff(np.array([0.0, 1.0]), 1e300).tolist() == [1.0, 0.0]
    assert gaussian_tradeoff(np.array([1e-300, 0.5]), 1e300).tolist() == [0.0, 0.0]


def test_gaussian_tradeoff_shapes_and_repeats():
    alpha = np.array([[0.1, 0.2, 0.1], [0.2, 0.1, 0.9]])
    got = gaussian_tradeoff(alpha, 1.5)
    assert got.shape == (2, 3) and got.dtype == np.float64
    assert got[0, 0] == got[0, 2] == got[1, 1] and got[0, 1] == got[1, 0]
    scalar = gaussian_tradeoff(0.3, 1.0)
    assert np.ndim(scalar) == 0 and float(scalar) == float(gaussian_tradeoff([0.3], 1.0)[0])
    assert gaussian_tradeoff([], 1.0).shape == (0,)


def test_gaussian_tradeoff_speed_on_an_array():
    alpha = np.random.default_rng(3).random(500)
    start = time.perf_counter()
    got = gaussian_tradeoff(alpha, 1.0)
    elapsed = time.perf_counter() - start
    assert np.all(np.diff(got[np.argsort(alpha)]) <= 0.0)  # still non-increasing in alpha
    assert elapsed < 1.5  # 0.1 to 0.4 ms per distinct alpha


# ---------------------------------------------------------------------------------------------
# snapping: lambda, Lambda and Mironov's condition on B
# ---------------------------------------------------------------------------------------------


def _exact_lambda(epsilon: float, n: int, bound: float) -> Fraction:
    return Fraction(n) * (1 + Fraction(bound) / 2**49) / Fraction(epsilon)


@pytest.mark.parametrize(("epsilon", "n", "bound"), [(3.0, 1, None), (1.0, 3, None), (0.7, 1, 5.0), (2.0, 1, None)])
def test_snapping_lambda_rounded_up(epsilon, n, bound):
    # n (1 + 2^-49 B) / epsilon rounded to nearest was below the exact scale: 0.33333333333333964 for epsilon = 3
    params = snapping_parameters(epsilon, n, bound)
    exact = _exact_lambda(epsilon, n, params.bound)
    assert Fraction(params.lam) >= exact
    assert Fraction(math.nextafter(params.lam, 0.0)) < exact  # the smallest such double
    assert n * (1 + Fraction(params.bound) / 2**49) / Fraction(params.lam) <= Fraction(epsilon)  # the guarantee


@pytest.mark.parametrize("epsilon", [1e-15, 2.0**-49])
def test_snapping_default_bound_below_lambda_is_refused(epsilon):
    # B = 32 / epsilon and lambda = (1 + 2^-49 B) / epsilon: lambda > B once epsilon < 1 / (31 2^44) (old: no check)
    with pytest.raises(ValueError, match=r"^epsilon .*lambda < B < 2\*\*46 lambda"):
        snapping_parameters(epsilon)
    assert snapping_parameters(2.0**-48).bound > snapping_parameters(2.0**-48).lam  # the documented range


@pytest.mark.parametrize("bound", [5e-324, 0.5, 1.0, 1e14, 1e300])
def test_snapping_bound_outside_mironovs_condition_is_refused(bound):
    # epsilon = 1: lambda ~ 1, so B <= 1 is below lambda and B >= 1e14 is above 2^46 lambda
    with pytest.raises(ValueError, match=r"^bound .*lambda < B < 2\*\*46 lambda"):
        snapping_parameters(1.0, 1, bound)


def test_snapping_huge_bound_blames_bound():
    # the message said "epsilon is too small ...: the default bound 32 n / epsilon overflows"
    with pytest.raises(ValueError, match=r"^bound is too large"):
        snapping_parameters(1.0, 1, 1.7e308)
    with pytest.raises(ValueError, match=r"^epsilon is too small"):
        snapping_parameters(1e-310)


@seed(20261128)
@FAST
@given(log_eps=st.floats(-16.0, 308.0), n=st.integers(1, 5000), log_bound=st.one_of(st.none(), st.floats(-320.0, 308.0)))
def test_snapping_parameters_exact(log_eps, n, log_bound):
    eps = 10.0**log_eps
    bound = None if log_bound is None else 10.0**log_bound
    try:
        params = snapping_parameters(eps, n, bound)
    except ValueError as exc:
        assert str(exc).startswith(("epsilon", "bound"))
        return
    lam, big_b = Fraction(params.lam), Fraction(params.bound)
    assert lam >= _exact_lambda(eps, n, params.bound)
    assert lam < big_b < 2**46 * lam
    grid = Fraction(params.grid)
    assert grid >= lam and grid / 2 < lam and math.frexp(params.grid)[0] == 0.5


# ---------------------------------------------------------------------------------------------
# granular Laplace: r and t
# ---------------------------------------------------------------------------------------------


def _power_of_two_at_least(exact: Fraction) -> Fraction:
    k = 0
    while Fraction(2) ** k < exact:
        k += 1
    while Fraction(2) ** (k - 1) >= exact:
        k -= 1
    return Fraction(2) ** k


@pytest.mark.parametrize(("epsilon", "bits"), [(1.6e308, 48), (1.7976931348623157e308, 48), (1e308, 40)])
def test_granular_r_is_the_smallest_power_of_two_above_the_scale(epsilon, bits):
    # n / epsilon 2^-bits underflowed into the subnormals and rounded down: r = 2e-323 below 1 / 1.6e308 2^-48
    params = granular_parameters(epsilon, 1, bits)
    assert Fraction(params.r) == _power_of_two_at_least(Fraction(1) / Fraction(epsilon) / 2**bits)


@seed(20261128)
@FAST
@given(log_eps=st.floats(-14.0, 308.25), n=st.integers(1, 5000), bits=st.integers(0, 48))
def test_granular_parameters_exact(log_eps, n, bits):
    eps = 10.0**log_eps
    try:
        params = granular_parameters(eps, n, bits)
    except ValueError as exc:
        assert "epsilon" in str(exc)
        return
    assert Fraction(params.r) == _power_of_two_at_least(Fraction(n) / Fraction(eps) / 2**bits)
    steps = Fraction(n) / Fraction(params.r) + n
    assert params.t == math.ceil(steps / Fraction(eps))
    assert n * (1 / Fraction(params.r) + 1) / params.t <= Fraction(eps)  # the loss bound it is calibrated for
