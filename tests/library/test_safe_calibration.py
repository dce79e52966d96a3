"""Noise scales and privacy parameters never err on the unsafe side in real arithmetic (each float input taken
as the rational it exactly equals): a noise scale or a sigma needed is never below its exact value, an epsilon,
a delta or an attacker's best rate never below, an interval's half-width never below.  References:
``fractions.Fraction`` where the value is rational, 60-digit ``mpmath`` otherwise."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

import dptutor.learning as learning
from dptutor.approximate_dp import gaussian_epsilon
from dptutor.distributions import standard_laplace_fill
from dptutor.epsilon import laplace_interval, posterior_bound, rappor_epsilon, tpr_bound
from dptutor.gaussian import gaussian_delta, gaussian_sigma_classic
from dptutor.mechanisms import adept_mechanism, laplace_mechanism, numpy_laplace_mechanism
from dptutor.renyi import round_up

pytestmark = pytest.mark.filterwarnings("error")

FAST = settings(max_examples=60, deadline=None)


def _mp(x: float) -> mpmath.mpf:
    return mpmath.mpf(x)  # exact: a double fits in mpmath's 60 digits


def _exact_delta(eps: float, sigma: float, sens: float = 1.0) -> mpmath.mpf:
    with mpmath.workdps(80):
        e, r = _mp(eps), _mp(sigma) / _mp(sens)
        return mpmath.ncdf(1 / (2 * r) - e * r) - mpmath.exp(e) * mpmath.ncdf(-1 / (2 * r) - e * r)


# ---------------------------------------------------------------------------------------------
# Laplace scales n / epsilon (1 / 3 rounds down to nearest)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mechanism", "n"), [(laplace_mechanism, 1), (laplace_mechanism, 2), (adept_mechanism, 5)])
def test_laplace_scale_rounded_up(mechanism, n):
    eps = 3.0
    numerator = 1 if mechanism is adept_mechanism else n
    assert Fraction(numerator / eps) < Fraction(numerator) / Fraction(eps)  # the case: nearest is too small
    b = round_up(Fraction(numerator) / Fraction(eps))
    out = mechanism(np.zeros((200, n)), eps, np.random.default_rng(11))
    noise = np.empty((200, n))
    standard_laplace_fill(noise, rng=np.random.default_rng(11))  # the same draws, the scale moved up
    np.testing.assert_array_equal(out, noise * b)


def test_numpy_laplace_scale_rounded_up():
    b = round_up(Fraction(1) / Fraction(3.0))
    out = numpy_laplace_mechanism(np.zeros((300, 1)), 3.0, np.random.default_rng(5))
    np.testing.assert_array_equal(out, np.random.default_rng(5).laplace(0.0, b, size=(300, 1)))


# ---------------------------------------------------------------------------------------------
# the Gaussian mechanism: delta and the classic sigma
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "sigma"), [(1.0, 4.0), (1e-12, 1e5), (0.0, 2.0), (0.3, 0.7)])
def test_gaussian_delta_known_cases(eps, sigma):
    exact = _exact_delta(eps, sigma)
    got = gaussian_delta(eps, sigma)
    assert _mp(got) >= exact
    assert _mp(got) <= exact * (1 + mpmath.mpf(2) ** -51)  # at most about an ulp above


@seed(20261128)
@FAST
@given(eps=st.floats(0.0, 20.0), sigma=st.floats(0.05, 50.0), sens=st.floats(0.1, 10.0))
def test_gaussian_delta_never_below(eps, sigma, sens):
    assert _mp(gaussian_delta(eps, sigma, sens)) >= _exact_delta(eps, sigma, sens)


@seed(20261128)
@FAST
@given(eps=st.floats(1e-6, 0.999), delta=st.floats(1e-300, 0.9), sens=st.floats(1e-3, 1e3))
def test_gaussian_sigma_classic_never_below(eps, delta, sens):
    sigma = gaussian_sigma_classic(eps, delta, sens)
    with mpmath.workdps(60):
        exact = _mp(sens) * mpmath.sqrt(2 * mpmath.log(_mp(1.25) / _mp(delta))) / _mp(eps)
        assert _mp(sigma) >= exact
        assert _mp(math.nextafter(sigma, 0.0)) < exact  # the smallest such double


def test_gaussian_sigma_classic_known_case():
    # found by search: the double-arithmetic formula returned a sigma below the exact value here
    eps, delta, sens = 0.5, 1e-3, 1.0
    sigma = gaussian_sigma_classic(eps, delta, sens)
    with mpmath.workdps(60):
        exact = _mp(sens) * mpmath.sqrt(2 * mpmath.log(_mp(1.25) / _mp(delta))) / _mp(eps)
    assert _mp(sigma) >= exact


@pytest.mark.parametrize("sigma", [1.0, 4.0, 30.0])
def test_gaussian_epsilon_not_zero_below_the_total_variation(sigma):
    # delta just below the exact total variation distance delta(0): epsilon = 0 does not meet it
    tv = _exact_delta(0.0, sigma)
    delta = float(tv)
    if _mp(delta) >= tv:
        delta = math.nextafter(delta, 0.0)
    eps = gaussian_epsilon(delta, sigma)
    assert eps > 0.0
    assert _exact_delta(eps, sigma) <= _mp(delta)


# ---------------------------------------------------------------------------------------------
# what epsilon means: tpr, posterior, interval, RAPPOR
# ---------------------------------------------------------------------------------------------


@seed(20261128)
@FAST
@given(fpr=st.floats(0.0, 1.0), eps=st.floats(0.0, 30.0), delta=st.floats(0.0, 0.1))
def test_tpr_bound_never_below(fpr, eps, delta):
    got = tpr_bound(fpr, eps, delta)
    with mpmath.workdps(60):
        e, f, d = _mp(eps), _mp(fpr), _mp(delta)
        exact = min(1, mpmath.exp(e) * f + d, 1 - mpmath.exp(-e) * (1 - d - f))
    assert _mp(got) >= exact


def test_tpr_bound_known_case():
    got = tpr_bound(0.6, 0.1)  # 1 - e^-0.1 * 0.4 to nearest is below the exact bound
    with mpmath.workdps(60):
        exact = 1 - mpmath.exp(-_mp(0.1)) * (1 - _mp(0.6))
    assert _mp(got) >= exact


@seed(20261128)
@FAST
@given(eps=st.floats(0.0, 40.0), prior=st.floats(1e-310, 0.999))
def test_posterior_bound_never_below(eps, prior):
    got = posterior_bound(eps, prior)
    with mpmath.workdps(60):
        ratio, p = mpmath.exp(_mp(eps)), _mp(prior)
        exact = ratio * p / (ratio * p + 1 - p)
    assert _mp(got) >= exact
    assert posterior_bound(0.0, prior) == prior


@seed(20261128)
@FAST
@given(sens=st.floats(1e-3, 1e3), eps=st.floats(1e-3, 10.0), level=st.floats(0.01, 0.999))
def test_laplace_interval_never_too_narrow(sens, eps, level):
    got = laplace_interval(sens, eps, level)
    with mpmath.workdps(60):
        exact = _mp(sens) / _mp(eps) * -mpmath.log(1 - _mp(level))
    assert _mp(got) >= exact


def test_laplace_interval_known_case():
    with mpmath.workdps(60):
        exact = -2 * mpmath.log(1 - _mp(0.95))
    assert _mp(laplace_interval(1.0, 0.5)) >= exact  # 5.99146454710798 to nearest is below it


def _exact_rappor(f: float, p: float, q: float, h: int) -> tuple[mpmath.mpf, mpmath.mpf]:
    with mpmath.workdps(60):
        fake, p_, q_ = _mp(f) / 2, _mp(p), _mp(q)
        keep = 1 - fake
        pairs = [(keep * q_ + fake * p_, fake * q_ + keep * p_),
                 (keep * (1 - q_) + fake * (1 - p_), fake * (1 - q_) + keep * (1 - p_))]
        ratio = max(abs(mpmath.log(a) - mpmath.log(b)) for a, b in pairs)
        return 2 * h * mpmath.log(keep / fake), 2 * h * ratio


@seed(20261128)
@FAST
@given(f=st.floats(1e-6, 1.0), p=st.floats(0.01, 0.99), q=st.floats(0.01, 0.99), h=st.integers(1, 64))
def test_rappor_epsilon_never_below(f, p, q, h):
    budget = rappor_epsilon(f, p, q, h)
    lifetime, one_report = _exact_rappor(f, p, q, h)
    assert _mp(budget.lifetime) >= lifetime
    assert _mp(budget.one_report) >= one_report


def test_rappor_epsilon_known_case():
    budget = rappor_epsilon(0.5, 0.25, 0.75, 2)  # Chrome's parameters: both epsilons were an ulp low
    lifetime, one_report = _exact_rappor(0.5, 0.25, 0.75, 2)
    assert _mp(budget.lifetime) >= lifetime and _mp(budget.one_report) >= one_report


# ---------------------------------------------------------------------------------------------
# DP-SGD: the noise's standard deviation sigma C
# ---------------------------------------------------------------------------------------------


def test_dp_sgd_noise_std_rounded_up(monkeypatch):
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 2
    kwargs = dict(epsilon=2.0, delta=1e-5, epochs=1.0, sampling_rate=0.5)
    sigma = learning.noise_multiplier(2.0, 1e-5, 2, 0.5)
    clip = next(c for c in (0.1, 0.3, 0.7, 1.1, 1.3, 1.7, 2.9, 3.3)
                if Fraction(sigma * c) < Fraction(sigma) * Fraction(c))
    seen = []

    def fake_train(start, x, index, steps, q, lr, gradient, batch_rng):
        seen.append(gradient([(np.zeros((4, 3)), np.zeros((4, 5)))]))
        return start

    monkeypatch.setattr(learning, "_train", fake_train)
    monkeypatch.setattr(learning, "_generators", lambda rng: tuple(np.random.default_rng(i) for i in (1, 2, 3)))
    learning.dp_sgd(X, y, clip=clip, rng=np.random.default_rng(0), **kwargs)
    (noise,) = seen[0]
    std = round_up(Fraction(sigma) * Fraction(clip))
    np.testing.assert_array_equal(noise, std * np.random.default_rng(3).standard_normal((3, 5)))


@pytest.mark.parametrize("factor,sensitivity,epsilon", [(2.0, 1.0, 3.0), (2.0, 0.7, 0.3), (4.0 * 3, 1.0, 0.7),
                                                        (2.0, 1e-300, 1e10)])
def test_the_selection_samplers_noise_scale_is_rounded_up(factor, sensitivity, epsilon):
    """report-noisy-max's and sparse vector's scale ``factor * Delta / epsilon`` was rounded to nearest: below the
    exact quotient about half the time (less noise than the budget asks for)."""
    from dptutor._selection_args import noise_scale

    exact = Fraction(factor) * Fraction(sensitivity) / Fraction(epsilon)
    scale = noise_scale(factor, sensitivity, epsilon)
    assert Fraction(scale) >= exact and Fraction(math.nextafter(scale, 0.0)) < exact
